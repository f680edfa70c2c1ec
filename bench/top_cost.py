#!/usr/bin/env python3
"""What `vramtrace top -b -d 1` costs while it follows a job: N ranks
(default 64) writing E events per second in total (default 100,000), each
rank a traced bench/follow_writer on the simulated driver. After a warm-up
(the first refresh reads every trace from its start; later ones only what
was appended), top's own CPU time (utime + stime, /proc/PID/stat) over a
measured span of wall time, its peak RSS (VmHWM), the events the ranks
wrote (their own counts), and how old the newest event of rank 0 is when a
frame is made (a second top with -p, its detail line says).
docs/internals/PERFORMANCE.md, "vramtrace top".

    bench/top_cost.py --build BUILD [--ranks 64] [--rate 100000] [--warmup 10] [--measure 30]
"""
import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--ranks", type=int, default=64)
ap.add_argument("--rate", type=float, default=100000, help="events per second, all ranks together")
ap.add_argument("--warmup", type=float, default=10)
ap.add_argument("--measure", type=float, default=30)
A = ap.parse_args()

build = os.path.abspath(A.build)
vramtrace = os.path.join(build, "analyzer", "vramtrace")
writer = os.path.join(build, "bench", "follow_writer")
sim = os.path.join(build, "tests", "simdriver")
tmp = tempfile.mkdtemp(prefix="vt-top-cost-")
traces = os.path.join(tmp, "traces")
seconds = A.warmup + A.measure + 5
env = {k: v for k, v in os.environ.items() if not k.startswith(("VTSIM_", "VRAMTRACE_"))}
env.update(LD_LIBRARY_PATH=sim, VTSIM_DEVICES="8", VTSIM_MEMORY="80GiB")
job = " ".join("RANK=%d %s --rate %.1f --seconds %.1f &" % (r, writer, A.rate / A.ranks, seconds)
               for r in range(A.ranks)) + " wait"
run = subprocess.Popen([vramtrace, "run", "-q", "-o", os.path.join(traces, "rank%r.%p.vtrace"),
                        "--", "sh", "-c", job], env=env, stdout=subprocess.PIPE, text=True)
time.sleep(2)
frames = open(os.path.join(tmp, "frames.txt"), "w")
top = subprocess.Popen([vramtrace, "top", "-b", "-d", "1", traces], stdout=frames,
                       stderr=subprocess.DEVNULL)
tick = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick  # utime, stime


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return 0


time.sleep(A.warmup)
# Freshness, by a second top that opens rank 0: each frame says how long
# before it the newest event it read happened (not counted in the CPU).
rank0 = next(int(m.group(1)) for m in (re.match(r"rank0\.(\d+)\.vtrace$", f)
                                       for f in os.listdir(traces)) if m)
fresh_out = open(os.path.join(tmp, "fresh.txt"), "w")  # a file: a full pipe would stall it
fresh = subprocess.Popen([vramtrace, "top", "-b", "-d", "1", "-p", str(rank0), traces],
                         stdout=fresh_out, stderr=subprocess.DEVNULL)
c0, w0 = cpu_s(top.pid), time.monotonic()
time.sleep(A.measure)
c1, w1 = cpu_s(top.pid), time.monotonic()
hwm, rss = status(top.pid, "VmHWM"), status(top.pid, "VmRSS")
top.terminate()
top.wait()
fresh.terminate()
fresh.wait()
fresh_out.close()
ages = sorted(float(a) for a in re.findall(r"newest event (\d+\.\d+) s before this frame",
                                          open(os.path.join(tmp, "fresh.txt")).read()))[1:]
out = run.communicate()[0]
frames.close()
events = sum(int(m) for m in re.findall(r"follow_writer: (\d+) events", out))
last = open(os.path.join(tmp, "frames.txt")).read().split("vramtrace top - ")[-2]
rows = sum(1 for l in last.splitlines() if l.endswith("follow_writer --rate %.1f --seconds %.1f"
                                                     % (A.rate / A.ranks, seconds)))
size = sum(os.path.getsize(os.path.join(traces, f)) for f in os.listdir(traces))
print("ranks %d, events written %d in %.0f s (%.0f/s), traces %.1f MiB" %
      (A.ranks, events, seconds, events / seconds, size / 2**20))
print("top -b -d 1: CPU %.2f%% of one core over %.0f s (after %.0f s of warm-up); "
      "peak RSS %.1f MiB, RSS at the end %.1f MiB; rows in a frame %d" %
      (100 * (c1 - c0) / (w1 - w0), w1 - w0, A.warmup, hwm / 1024, rss / 1024, rows))
if ages:
    print("freshness (rank 0, %d frames): the newest event read was %.3f s (median), %.3f s "
          "(90th percentile), %.3f s (largest) before its frame; flush interval 0.100 s" %
          (len(ages), ages[len(ages) // 2], ages[len(ages) * 9 // 10], ages[-1]))
shutil.rmtree(tmp, ignore_errors=True)
