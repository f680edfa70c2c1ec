#!/usr/bin/env python3
"""The job replay's cost (docs/internals/PERFORMANCE.md, "A job").

For each case RANKSxEVENTS: bench/synth_trace writes a job of RANKS traces
of EVENTS events each (8 ranks a GPU, 8 GPUs a host: a host of 64 ranks
is one group of the merged replay), and a single trace of the same total
events (at most --single-max) for the per-event figure beside it. Then
`vramtrace report --no-symbols` and `report --summary` run in alternating
rounds under each thread setting: 1 (VRAMTRACE_ANALYZER_THREADS=1), 2, and
the default (unset: the analysis chooses from the free CPUs and the work's
size, analyzer/run/thread_count.h). Each run's wall time, CPU time
(user + system of the whole process, wait4's rusage) and max RSS; the
medians, CPU ns per event, and the speed-up of 2 threads and of the
default over 1 thread (wall). The load average before and after each
case is printed: on a loaded machine CPU ratios are the figures to trust.
NOT part of the suite (1024x100000: 513 MB of traces, minutes).

    bench/job_cost.py [--build DIR] [--against DIR] [--dir SCRATCH] [--rounds R]
                      [--settings 1,2,default] [--what report,summary,single]
                      [CASE ...]   (default CASE: 64x20000 1024x100000)

--against DIR: another build's vramtrace (main's, say) in the same rounds,
its ratios to this build's beside its lines.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--against", help="another build, measured in the same rounds")
ap.add_argument("--dir", default="/tmp/vt-job-cost")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--single-max", type=int, default=10000000)
ap.add_argument("--settings", default="1,2,default", help="thread settings, comma-separated")
ap.add_argument("--what", default="report,summary,single",
                help="which of report, summary (report --summary) and single (one trace) to run")
ap.add_argument("cases", nargs="*", default=["64x20000", "1024x100000"])
A = ap.parse_args()
vt = os.path.join(A.build, "analyzer", "vramtrace")
synth = os.path.join(A.build, "bench", "synth_trace")
os.makedirs(A.dir, exist_ok=True)


def run(cmd, threads):
    env = dict(os.environ)
    env.pop("VRAMTRACE_ANALYZER_THREADS", None)
    if threads != "default":
        env["VRAMTRACE_ANALYZER_THREADS"] = threads
    t = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    if os.waitstatus_to_exitcode(status) not in (0,):
        raise SystemExit("failed (%s): %s" % (status, " ".join(cmd)))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def measure(label, cmd, events, settings):
    """cmd: the command after the vramtrace binary; each build and setting once a round."""
    builds = [vt] + ([os.path.join(A.against, "analyzer", "vramtrace")] if A.against else [])
    keys = [(b, s) for b in builds for s in settings]
    runs = {k: [] for k in keys}
    for _ in range(A.rounds):
        for k in keys:  # alternating: each round runs every build and setting once
            runs[k].append(run([k[0]] + cmd, k[1]))
    med = {k: tuple(statistics.median(r[i] for r in runs[k]) for i in range(3)) for k in keys}
    for b, s in keys:
        wall, cpu, rss = med[(b, s)]
        base = med.get((b, "1"))
        extra = ""
        if base and s != "1":
            extra = ", %.2fx one thread (wall), CPU %.2fx" % (base[0] / wall, cpu / base[1])
        if b != vt:
            mine = med[(vt, s)]
            extra += "; this build: CPU %.2fx, wall %.2fx of it" % (mine[1] / cpu, mine[0] / wall)
        print("  %-24s %-6s threads %-7s wall %7.2f s  CPU %7.2f s (%5.1f ns/event)  max RSS %6.0f "
              "MiB%s" % (label, "" if b == vt else "other", s, wall, cpu, cpu * 1e9 / events, rss,
                         extra))


settings = A.settings.split(",")
for case in A.cases:
    ranks, events = (int(x) for x in case.split("x"))
    total = ranks * events
    job = os.path.join(A.dir, "job%dx%d" % (ranks, events))
    if not os.path.isdir(job):
        os.makedirs(job + ".tmp", exist_ok=True)
        subprocess.run([synth, "--ranks", str(ranks), "--gpus", str(max(1, ranks // 8)),
                        "--events", str(events), "--dir", job + ".tmp"], check=True,
                       stdout=subprocess.DEVNULL)
        os.rename(job + ".tmp", job)
    single_events = min(total, A.single_max)
    single = os.path.join(A.dir, "single%d.vtrace" % single_events)
    if not os.path.exists(single):
        subprocess.run([synth, "--events", str(single_events), "--out", single], check=True,
                       stdout=subprocess.DEVNULL)
    summary = os.path.join(A.dir, "node.summary.json")
    print("%s: %d ranks x %d events (%d events, %.0f MB of traces); load %s"
          % (case, ranks, events, total,
             sum(os.path.getsize(os.path.join(job, f)) for f in os.listdir(job)) / 1e6, load()))
    what = A.what.split(",")
    if "report" in what:
        measure("report", ["report", "--no-symbols", job], total, settings)
    if "summary" in what:
        measure("report --summary", ["report", "--summary", summary, job], total, settings)
    if "single" in what:
        measure("one trace, report", ["report", "--no-symbols", single], single_events, settings)
    print("  (one trace: %d events; load after: %s)" % (single_events, load()))
