#!/usr/bin/env python3
"""Two `vramtrace run` sessions writing into one directory, plus files that
are not traces: the report says each job apart (never one GPU timeline across
sessions), names every file it skipped with the reason, reports the rest and
exits 3; --rank filters, and names the ranks that exist when it matches
nothing. Figures against the simulated driver's ledger.

    check_jobs.py --build BUILD
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from launcher_check import HERE, Paths, equal, failures, parser
from ledger_truth import Ledger

A = parser().parse_args()
paths = Paths(A.build)
BUILD, VRAMTRACE, CW = paths.build, paths.vramtrace, paths.worker


tmp = tempfile.mkdtemp(prefix="vt-jobs-")
out = os.path.join(tmp, "traces")
sim = os.path.join(BUILD, "tests", "simdriver")
env = {k: v for k, v in os.environ.items() if not k.startswith(("VTSIM_", "VRAMTRACE_", "LW_"))}
env.pop("LD_PRELOAD", None)
if A.preload_first:  # sanitized builds: their runtimes first, vramtrace run keeps them so
    env["LD_PRELOAD"] = A.preload_first
shared = "vt-jobs-%d" % os.getpid()
env.update(LD_LIBRARY_PATH=sim + ":" + os.path.join(sim, "runtime"), VTSIM_DEVICES="2",
           VTSIM_SHARED=shared, VTSIM_LEDGER=os.path.join(tmp, "ledger.txt"))
sessions = []
try:
    for k in range(2):
        r = subprocess.run([VRAMTRACE, "run", "-o", os.path.join(out, "rank%r.%p.vtrace"), "--",
                            sys.executable, os.path.join(HERE, "agent.py"), "--nproc", "2", CW],
                           env=env, capture_output=True, text=True, timeout=60)
        equal("run %d exit status" % k, r.returncode, 0)
finally:
    try:
        os.unlink("/dev/shm/vtsim-" + shared)
    except OSError:
        pass
led = Ledger(env["VTSIM_LEDGER"])
open(os.path.join(out, "empty.vtrace"), "w").close()
with open(os.path.join(out, "junk.vtrace"), "wb") as f:
    f.write(b"not a trace at all" * 10)
good = sorted(f for f in os.listdir(out) if f.startswith("rank"))
with open(os.path.join(out, good[0]), "rb") as f:
    head = f.read()
with open(os.path.join(out, "corrupt.vtrace"), "wb") as f:
    f.write(head[:40] + bytes(b ^ 0x5a for b in head[40:80]) + head[80:])

js = subprocess.run([VRAMTRACE, "report", "--json", out], capture_output=True, text=True, timeout=60)
equal("report exit status with skipped files", js.returncode, 3)
for name in ("empty.vtrace", "junk.vtrace", "corrupt.vtrace"):
    if not re.search(re.escape(name) + r": (byte \d+: )?\S", js.stderr):
        failures.append("stderr does not name %s with a reason: %r" % (name, js.stderr))
if "could not be read in full" not in js.stderr:
    failures.append("stderr does not say the report is partial")
doc = json.loads(js.stdout)
ok = [p for p in doc["processes"] if p["error"] is None]
equal("processes reported (2 sessions x 2 ranks)", len(ok), 4)
equal("jobs", len(doc["jobs"]), 2)
equal("processes (the corrupt file had none to show)", len(doc["processes"]), 4)
sessions = {p["session"] for p in ok}
equal("sessions", len(sessions), 2)
pids = {p["pid"]: p for p in ok}
for g in doc["gpus"]:
    s = {pids[x["pid"]]["session"] for x in g["processes"] if x["pid"] in pids}
    if len(s) > 1:
        failures.append("GPU %s merges two sessions" % g["uuid"])
for pid, p in pids.items():
    dev = [d for d in p["devices"] if d["kind"] == "device"][0]
    equal("pid %d peak_bytes" % pid, dev["peak_bytes"], led.peak(pid, dev["device"]))

text = subprocess.run([VRAMTRACE, "report", out], capture_output=True, text=True, timeout=60)
for s in sessions:
    if not re.search(r"=== job \d of \d: session %s on " % re.escape(s), text.stdout):
        failures.append("the text report has no job header for session %s" % s)

one = subprocess.run([VRAMTRACE, "report", "--json", "--rank", "1", out], capture_output=True,
                     text=True, timeout=60)
equal("--rank 1 exit status", one.returncode, 3)
if one.stdout:
    equal("--rank 1 ranks", sorted(p["rank"] for p in json.loads(one.stdout)["processes"]
                                   if p["error"] is None), [1, 1])
none = subprocess.run([VRAMTRACE, "report", "--rank", "9", out], capture_output=True, text=True,
                      timeout=60)
equal("--rank 9 exit status", none.returncode, 2)
if "no rank 9; ranks: 0, 1" not in none.stderr:
    failures.append("--rank 9 does not name the ranks: %r" % none.stderr)

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print(text.stdout + js.stderr, file=sys.stderr)
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    sys.exit(1)
print("ok: two sessions reported apart, 3 bad files skipped and named, exit 3, --rank")
