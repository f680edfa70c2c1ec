#!/usr/bin/env python3
"""A job of four ranks whose traces stay on two "nodes", for the summary
test (check_summaries.py) and the HTML report's job section
(tests/html/check_html.mjs): torchrun's stand-in (agent.py) starts four
lw_worker ranks on two simulated GPUs under `vramtrace run`; ranks 2 and 0
fail an allocation (LW_OOM_RANKS, rank 2 first). The traces go to
OUT/traces, each node's copies to OUT/node-a (ranks 0 and 3) and OUT/node-b
(ranks 1 and 2), and OUT/summaries/NODE.summary.json is `vramtrace report
--summary` of each node. The truth: OUT/ledger.txt (the simulated driver's
ledger) and OUT/ranks.log (each worker's pid, rank and device).

    make_job.py --build BUILD --out OUT [--preload-first LIBS]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--preload-first", default="")
ap.add_argument("--nproc", type=int, default=4)         # ranks: node-a holds r % 4 in (0, 3)
ap.add_argument("--oom-ranks", default="2,0")           # LW_OOM_RANKS: these fail, in this order
A = ap.parse_args()
build = os.path.abspath(A.build)
vramtrace = os.path.join(build, "analyzer", "vramtrace")
worker = os.path.join(build, "tests", "launchers", "lw_worker")
sim = os.path.join(build, "tests", "simdriver")
traces = os.path.join(A.out, "traces")
summaries = os.path.join(A.out, "summaries")
os.makedirs(summaries)

env = {k: v for k, v in os.environ.items() if not k.startswith(("VTSIM_", "VRAMTRACE_", "LW_"))}
env.pop("LD_PRELOAD", None)
if A.preload_first:
    env["LD_PRELOAD"] = A.preload_first
shared = "vt-html-job-%d" % os.getpid()
env.update(LD_LIBRARY_PATH=sim + ":" + os.path.join(sim, "runtime"), VTSIM_DEVICES="2",
           VTSIM_SHARED=shared, VTSIM_LEDGER=os.path.join(A.out, "ledger.txt"),
           LW_OOM_RANKS=A.oom_ranks, LW_LOG=os.path.join(A.out, "ranks.log"))
try:
    r = subprocess.run([vramtrace, "run", "-q", "-o", os.path.join(traces, "rank%r.%p.vtrace"), "--",
                        sys.executable, os.path.join(HERE, "agent.py"),
                        "--nproc", str(A.nproc), worker],
                       env=env, capture_output=True, text=True, timeout=120)
finally:
    try:
        os.unlink("/dev/shm/vtsim-" + shared)
    except OSError:
        pass
if r.returncode != 0:
    sys.exit("vramtrace run exited %d: %s" % (r.returncode, r.stderr))

report_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
for node, ranks in {"node-a": [r for r in range(A.nproc) if r % 4 in (0, 3)],
                    "node-b": [r for r in range(A.nproc) if r % 4 in (1, 2)]}.items():
    d = os.path.join(A.out, node)
    os.mkdir(d)
    for f in os.listdir(traces):
        m = re.match(r"rank(\d+)\.", f)
        if m and int(m.group(1)) in ranks:
            shutil.copy(os.path.join(traces, f), d)
    r = subprocess.run([vramtrace, "report", "--summary",
                        os.path.join(summaries, node + ".summary.json"), d],
                       env=report_env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit("report --summary exited %d: %s" % (r.returncode, r.stderr))
