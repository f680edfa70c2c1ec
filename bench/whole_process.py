#!/usr/bin/env python3
"""Whole-process cost of a tracer, beside the traced thread's own cost.

    bench/whole_process.py [--build DIR] [--rounds N] [--depth D] [--pairs N]

Runs bench/event_cost (N alloc/free pairs from D frames of recursion) in
rounds that alternate every configuration (a burst of load hits all alike):
  cuda        untraced, simulated driver
  malloc      untraced, malloc/free of 64 bytes
  vramtrace   LD_PRELOAD=libvramtrace.so, cuda, VRAMTRACE_STACK_DEPTH=D
  ht-preload  heaptrack's preload library alone (DUMP_HEAPTRACK_OUTPUT: no
              heaptrack_interpret), malloc
  before      (--before LIB) another libvramtrace.so, as vramtrace
  heaptrack   full heaptrack (the heaptrack script: preload, interpret,
              compression), malloc
and for each run takes, from wait4() of the process (all its threads and
the children it waited for): wall seconds, user+sys CPU seconds, peak RSS;
and from event_cost's own line the calling thread's CPU per pair.
Per event (a pair is two events), against the untraced run of the same
API in the same round: whole-process CPU, wall, and the calling thread's
CPU; the difference of the first and the last is what the tracer's other
threads (vramtrace's writer) and its start/exit cost. Ratios are taken
inside each round, then their median is printed. Not part of the suite.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build-bench")
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--depth", type=int, default=32)
ap.add_argument("--pairs", type=int, default=200000)
ap.add_argument("--no-full-heaptrack", action="store_true")
ap.add_argument("--before", default="", help="another libvramtrace.so, run beside as 'before'")
args = ap.parse_args()

build = os.path.abspath(args.build)
ev = os.path.join(build, "bench", "event_cost")
lib = os.path.join(build, "preload", "libvramtrace.so")
sim = os.path.join(build, "tests", "simdriver")
ht_lib = "/usr/lib/heaptrack/libheaptrack_preload.so"
ht_bin = shutil.which("heaptrack")
tmp = tempfile.mkdtemp(prefix="vt-whole-")
base_env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMTRACE_", "LD_PRELOAD"))}
base_env["LD_LIBRARY_PATH"] = sim + (":" + os.environ["LD_LIBRARY_PATH"]
                                     if os.environ.get("LD_LIBRARY_PATH") else "")
D, N = str(args.depth), str(args.pairs)
cuda = [ev, "--api", "cuda", "--pairs", N, "--depth", D]
mall = [ev, "--api", "malloc", "--size", "64", "--pairs", N, "--depth", D]

configs = [("cuda", cuda, {}), ("malloc", mall, {})]
configs.append(("vramtrace", cuda, {"LD_PRELOAD": lib, "VRAMTRACE_STACK_DEPTH": D,
                                    "VRAMTRACE_OUTPUT": os.path.join(tmp, "t.vtrace")}))
if args.before:
    configs.append(("before", cuda, {"LD_PRELOAD": os.path.abspath(args.before),
                                     "VRAMTRACE_STACK_DEPTH": D,
                                     "VRAMTRACE_OUTPUT": os.path.join(tmp, "t.vtrace")}))
if os.path.exists(ht_lib):
    configs.append(("ht-preload", mall, {"LD_PRELOAD": ht_lib,
                                         "DUMP_HEAPTRACK_OUTPUT": os.path.join(tmp, "ht.raw")}))
if ht_bin and not args.no_full_heaptrack:
    configs.append(("heaptrack", [ht_bin, "-o", os.path.join(tmp, "full")] + mall, {}))


def run(cmd, extra):
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    env = dict(base_env, **extra)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit("%s exited %d" % (cmd, status))
    m = re.search(r"cpu_ns_per_pair=([\d.]+)", out)
    size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss,
            "thread": float(m.group(1)) if m else float("nan"), "bytes": size}


rows = {name: [] for name, _, _ in configs}
for r in range(args.rounds):
    for name, cmd, extra in configs:
        rows[name].append(run(cmd, extra))

ev2 = 2 * args.pairs
base = {"vramtrace": "cuda", "before": "cuda", "ht-preload": "malloc", "heaptrack": "malloc"}


def per_event(name, key, i):
    b = base[name]
    d = rows[name][i][key] - rows[b][i][key]
    return d / ev2 * (1e9 if key in ("wall", "cpu") else 1) if key != "thread" else d / 2


def med(xs):
    return statistics.median(xs)


R = range(args.rounds)
print("# whole-process cost, depth %s, %d pairs, %d rounds (%s, load %s)" % (
    D, args.pairs, args.rounds, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    " ".join(open("/proc/loadavg").read().split()[:3])))
print("| configuration | whole-process CPU ns/event | wall ns/event | calling thread CPU ns/event "
      "| other threads + start/exit ns/event | peak RSS KiB (untraced) |")
print("|---|---|---|---|---|---|")
for name in base:
    if name not in rows:
        continue
    cpu = med([per_event(name, "cpu", i) for i in R])
    wall = med([per_event(name, "wall", i) for i in R])
    th = med([per_event(name, "thread", i) for i in R])
    other = med([per_event(name, "cpu", i) - per_event(name, "thread", i) for i in R])
    rss = med([rows[name][i]["rss"] for i in R])
    rss0 = med([rows[base[name]][i]["rss"] for i in R])
    print("| %s | %.0f | %.0f | %.0f | %.0f | %d (%d) |" % (name, cpu, wall, th, other, rss, rss0))
for other in ("before", "ht-preload", "heaptrack"):
    if other not in rows:
        continue
    rc = med([per_event("vramtrace", "cpu", i) / per_event(other, "cpu", i) for i in R])
    rw = med([per_event("vramtrace", "wall", i) / per_event(other, "wall", i) for i in R])
    rt = med([per_event("vramtrace", "thread", i) / per_event(other, "thread", i) for i in R])
    print("vramtrace / %s: whole-process CPU %.2fx, wall %.2fx, calling thread CPU %.2fx "
          "(medians of per-round ratios)" % (other, rc, rw, rt))
shutil.rmtree(tmp)
