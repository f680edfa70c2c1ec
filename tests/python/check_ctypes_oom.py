#!/usr/bin/env python3
"""A failure through ctypes is told as the program's own Python line, via
the driver call it made (docs/user/REPORT.md, "Stacks"): never `ffi_call`, a
libffi address or the interpreter's C frames. Runs ctypes_oom.py under
`vramtrace run` on the simulated GPU; truth: the lines Python itself saw
at each call (the client's output) and the simulated driver's ledger.

    check_ctypes_oom.py --build BUILD --src SRC [--preload-first LIBS] [--tamper]

Exit 77 when the system Python's frames are not read (docs/internals/PYTHON.md)."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--src", required=True)
ap.add_argument("--tamper", action="store_true")
ap.add_argument("--preload-first", default="")
args = ap.parse_args()
if not (3, 10) <= sys.version_info[:2] <= (3, 15):
    print("SKIP: Python %d.%d: frames not read" % sys.version_info[:2])
    sys.exit(77)

build = os.path.abspath(args.build)
vramtrace = os.path.join(build, "analyzer", "vramtrace")
client = os.path.join(os.path.abspath(args.src), "tests", "python", "ctypes_oom.py")
tmp = tempfile.mkdtemp(prefix="vt-ctypes-")
env = {k: v for k, v in os.environ.items() if not k.startswith(("VTSIM_", "VRAMTRACE_"))}
env["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "simdriver")
env["VTSIM_MEMORY"] = "16GiB"
env["VTSIM_LEDGER"] = os.path.join(tmp, "ledger.txt")
env.pop("LD_PRELOAD", None)
if args.preload_first:  # a sanitized build's runtime, before the tracer
    env["LD_PRELOAD"] = args.preload_first
run = subprocess.run([vramtrace, "run", "-o", os.path.join(tmp, "t.%p.vtrace"), "--",
                      sys.executable, client], env=env, capture_output=True, text=True, timeout=60)
failures = []
if run.returncode != 0:
    failures.append("the client exited %d: %s" % (run.returncode, run.stderr))
calls = [tuple(int(x) for x in l.split()[1:]) for l in run.stdout.splitlines()
         if l.startswith("alloc ")]
failed = [c for c in calls if c[2] != 0]
ledger_failed = []
with open(env["VTSIM_LEDGER"]) as f:
    for line in f:
        e = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t"))
        if e["op"] == "alloc" and e["result"] != "0":
            ledger_failed.append(int(e["size"]))
if len(failed) != 1 or ledger_failed[:1] != [failed[0][1]]:
    failures.append("scenario broken: client %r, ledger %r" % (failed, ledger_failed))
else:
    line = failed[0][0] + (1 if args.tamper else 0)
    text = subprocess.run([vramtrace, "report", "--width", "0", tmp], env=env,
                          capture_output=True, text=True, timeout=60).stdout
    at = [l.strip() for l in text.splitlines() if l.strip().startswith("at: ")]
    want = "at: grab (ctypes_oom.py:%d) <- <module> (ctypes_oom.py:25)  via cuMemAlloc_v2" % line
    if at != [want]:
        failures.append("the failure's stack reads %r, want %r" % (at, want))
    nxt = [l.strip() for l in text.splitlines() if l.strip().startswith("next: ")]
    if not nxt or "grab (ctypes_oom.py:%d)" % line not in nxt[0]:
        failures.append("the advice does not name the program's line: %r" % nxt)
    if re.search(r"ffi_call|libffi|_ctypes|_PyEval", text):
        failures.append("a foreign-function or interpreter frame in the report:\n" + text)
for f in failures:
    print("FAIL: " + f)
if failures and not args.tamper:  # a tamper run fails on purpose
    print("files kept in %s" % tmp)
else:
    shutil.rmtree(tmp, ignore_errors=True)
    if not failures:
        print("ok: a ctypes failure at the program's line")
sys.exit(1 if failures else 0)
