#!/usr/bin/env python3
"""Whole-process cost of a tracer, beside the traced thread's own cost.

    bench/whole_process.py [--build DIR] [--rounds N] [--depth D] [--pairs N]
                           [--pattern fixed|sizes]

Runs bench/event_cost (N alloc/free pairs from D frames of recursion) in
rounds that alternate every configuration (a burst of load hits all alike).
--pattern fixed (bench/'s own): one size, VRAMTRACE_STACK_DEPTH=D;
--pattern sizes (one unlike it): 8 sizes cycled, the tracer's default
settings (stack depth 64: the whole stack, D frames and main's callers).
  cuda        untraced, simulated driver
  malloc      untraced, malloc/free of 64 bytes
  vramtrace   LD_PRELOAD=libvramtrace.so, cuda, VRAMTRACE_STACK_DEPTH=D
  ht-preload  heaptrack's preload library alone (DUMP_HEAPTRACK_OUTPUT: no
              heaptrack_interpret), malloc
  before      (--before LIB) another libvramtrace.so, as vramtrace
  heaptrack   full heaptrack (the heaptrack script: preload, interpret,
              compression), malloc
and for each run takes, from wait4() of the process (all its threads and
the children it waited for): wall seconds, user+sys CPU seconds, system
CPU seconds, minor page faults, peak RSS;
and from event_cost's own line the calling thread's CPU per pair, and the
system part and the minor page faults of its timed loop
(getrusage(RUSAGE_THREAD)).
Per event (a pair is two events), against the untraced run of the same
API in the same round: whole-process CPU, wall, and the calling thread's
CPU; the difference of the first and the last is what the tracer's other
threads (vramtrace's writer) and its start/exit cost; of the first, the
system (kernel) part, whole process and calling thread; and the page
faults added over the untraced run (counts: load does not change them),
whole process and in the calling thread's loop. Ratios are taken inside each round,
then their median is printed, with the range over the rounds in brackets.
Not part of the suite.
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
ap.add_argument("--pattern", choices=("fixed", "sizes"), default="fixed")
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
sizes = ["--sizes", "8"] if args.pattern == "sizes" else []
cuda = [ev, "--api", "cuda", "--pairs", N, "--depth", D] + sizes
mall = [ev, "--api", "malloc", "--size", "64", "--pairs", N, "--depth", D] + sizes
# the fixed pattern records D frames; the other keeps the tracer's default
vt_depth = {"VRAMTRACE_STACK_DEPTH": D} if args.pattern == "fixed" else {}

configs = [("cuda", cuda, {}), ("malloc", mall, {})]
configs.append(("vramtrace", cuda, dict(vt_depth, LD_PRELOAD=lib,
                                         VRAMTRACE_OUTPUT=os.path.join(tmp, "t.vtrace"))))
if args.before:
    configs.append(("before", cuda, dict(vt_depth, LD_PRELOAD=os.path.abspath(args.before),
                                         VRAMTRACE_OUTPUT=os.path.join(tmp, "t.vtrace"))))
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
    ms = re.search(r"sys_ns_per_pair=([\d.]+) minflt=(\d+)", out)
    size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "sys": ru.ru_stime,
            "faults": ru.ru_minflt, "rss": ru.ru_maxrss,
            "thread": float(m.group(1)) if m else float("nan"),
            "thread_sys": float(ms.group(1)) if ms else float("nan"),
            "thread_faults": int(ms.group(2)) if ms else 0, "bytes": size}


rows = {name: [] for name, _, _ in configs}
for r in range(args.rounds):
    for name, cmd, extra in configs:
        rows[name].append(run(cmd, extra))

ev2 = 2 * args.pairs
base = {"vramtrace": "cuda", "before": "cuda", "ht-preload": "malloc", "heaptrack": "malloc"}


def per_event(name, key, i):
    b = base[name]
    d = rows[name][i][key] - rows[b][i][key]
    if key in ("thread", "thread_sys"):
        return d / 2
    return d / ev2 * 1e9 if key in ("wall", "cpu", "sys") else d


def med(xs):
    return statistics.median(xs)


def med_range(xs, fmt="%.0f"):
    return (fmt + " [" + fmt + "-" + fmt + "]") % (med(xs), min(xs), max(xs))


R = range(args.rounds)
print("# whole-process cost, pattern %s, depth %s, %d pairs, %d rounds (%s, %d cores, load %s)" % (
    args.pattern, D, args.pairs, args.rounds,
    time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count(),
    " ".join(open("/proc/loadavg").read().split()[:3])))
print("| configuration | whole-process CPU ns/event | of it system | wall ns/event "
      "| calling thread CPU ns/event | of it system | other threads + start/exit ns/event "
      "| minor faults added | of them calling thread's loop | peak RSS KiB (untraced) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in base:
    if name not in rows:
        continue
    cpu = med_range([per_event(name, "cpu", i) for i in R])
    system = med_range([per_event(name, "sys", i) for i in R])
    wall = med_range([per_event(name, "wall", i) for i in R])
    th = med_range([per_event(name, "thread", i) for i in R])
    other = med_range([per_event(name, "cpu", i) - per_event(name, "thread", i) for i in R])
    th_sys = med_range([per_event(name, "thread_sys", i) for i in R])
    faults = med_range([per_event(name, "faults", i) for i in R])
    th_faults = med_range([per_event(name, "thread_faults", i) for i in R])
    rss = med([rows[name][i]["rss"] for i in R])
    rss0 = med([rows[base[name]][i]["rss"] for i in R])
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d (%d) |" % (
        name, cpu, system, wall, th, th_sys, other, faults, th_faults, rss, rss0))
for other in ("before", "ht-preload", "heaptrack"):
    if other not in rows:
        continue
    rc = med_range([per_event("vramtrace", "cpu", i) / per_event(other, "cpu", i) for i in R], "%.2f")
    rw = med_range([per_event("vramtrace", "wall", i) / per_event(other, "wall", i) for i in R], "%.2f")
    rt = med_range([per_event("vramtrace", "thread", i) / per_event(other, "thread", i) for i in R],
                   "%.2f")
    print("vramtrace / %s: whole-process CPU %sx, wall %sx, calling thread CPU %sx "
          "(medians of per-round ratios [range])" % (other, rc, rw, rt))
shutil.rmtree(tmp)
