#!/usr/bin/env python3
"""The line a process traced with a plain LD_PRELOAD says when it exits
(preload/record/writer/exit_line.h), under a pseudo-terminal (Python's pty) and
without one, against the simulated driver's ledger:
  - example 1 on a terminal: exactly one line, naming the trace it wrote,
    the ledger's device peak (11.625 GiB: "11.63 GiB") and the command
    that reads it; the program's stdout and exit status as without it;
  - example 3 (one 6.93 GiB request fails): the failure counted, exit
    status 1 kept;
  - stderr not a terminal (a pipe): nothing; VRAMTRACE_QUIET=1: nothing;
  - example 5 (a launcher forks and execs four ranks that allocate; it
    allocates nothing itself): nothing from the children;
  - under `vramtrace run` (a session): run's own lines, not this one;
  - the line's peaks and failures are the report's (`vramtrace report
    --json` on the trace it names): examples 1 and 3, example 2's
    allocator alone on a smaller GPU (a cache flush frees, two calls
    fail), and gold_vmm (a VMM handle released while mapped holds its
    memory until the unmap: 48 MiB, not 32).

    exit_line_check.py --vramtrace V --lib LIB --simdir DIR --build BUILD --src SRC
"""
import argparse
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from ledger_truth import Ledger, format_bytes  # noqa: E402

ap = argparse.ArgumentParser()
for a in ("--vramtrace", "--lib", "--simdir", "--build", "--src"):
    ap.add_argument(a, required=True)
ap.add_argument("--preload-first", default="")
args = ap.parse_args()
args.vramtrace, args.lib, args.simdir = map(os.path.abspath, (args.vramtrace, args.lib, args.simdir))
failures = []
made = []  # the runs' directories: kept only where a check failed
LINE = re.compile(r"^vramtrace: trace (\S+): (.*); read it: vramtrace report (\S+)\r?$", re.M)


def run(argv, tty, extra=None):
    """Runs argv under the tracer in a fresh directory; stderr a pseudo-
    terminal (tty) or a pipe. Returns (status, stdout, stderr, dir, ledger)."""
    d = tempfile.mkdtemp(prefix="vt-exit-line-")
    made.append(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMTRACE_", "VTSIM_"))}
    env["LD_LIBRARY_PATH"] = args.simdir + ":" + os.path.join(args.simdir, "runtime")
    env["LD_PRELOAD"] = ((args.preload_first + ":") if args.preload_first else "") + args.lib
    env["VTSIM_LEDGER"] = os.path.join(d, "ledger.txt")
    env.update(extra or {})
    if not tty:
        p = subprocess.run(argv, env=env, cwd=d, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr, d
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, env=env, cwd=d, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    out = p.stdout.read().decode()
    return p.wait(timeout=60), out, err.decode(errors="replace"), d


def fail(msg):
    failures.append(msg)


def said_is_reported(name, err, d):
    """The line's device peaks and failed calls against the report's JSON
    on the trace the line names (the live-set rule is one implementation,
    common/live_rule.c; this checks that both sides really follow it)."""
    lines = LINE.findall(err)
    if len(lines) != 1:
        fail("%s: want one line to compare with the report, got %r" % (name, err))
        return
    path, what, _ = lines[0]
    rep = subprocess.run([args.vramtrace, "report", "--json", os.path.join(d, path)],
                         capture_output=True, text=True, timeout=120)
    if rep.returncode not in (0, 1):
        fail("%s: report --json exit %d: %s" % (name, rep.returncode, rep.stderr))
        return
    devices = [v for p in json.loads(rep.stdout)["processes"] for v in p["devices"]
               if v["kind"] == "device"]
    want = "; ".join("device %d peak %s" % (v["device"], format_bytes(v["peak_bytes"]))
                     for v in sorted(devices, key=lambda v: v["device"]))
    failed = sum(v["failed_allocations"] for v in devices)
    if failed:
        want += "; %d allocation call%s failed" % (failed, "" if failed == 1 else "s")
    if what != want:
        fail("%s: the line says %r, the report %r" % (name, what, want))


example = lambda name: os.path.join(os.path.abspath(args.build), "examples", name)  # noqa: E731

# ---- example 1 on a terminal --------------------------------------------
plain = subprocess.run([example("train_eval_phases")], capture_output=True, text=True,
                       env=dict(os.environ, LD_LIBRARY_PATH=args.simdir + ":" +
                                os.path.join(args.simdir, "runtime")), timeout=120)
status, out, err, d = run([example("train_eval_phases")], tty=True)
lines = LINE.findall(err)
ledger = Ledger(os.path.join(d, "ledger.txt"))
traces = sorted(f for f in os.listdir(d) if f.endswith(".vtrace"))
if len(lines) != 1 or err.count("vramtrace:") != 1:
    fail("example 1 on a terminal: want one line, got %r" % err)
else:
    path, what, again = lines[0]
    pid = ledger.pids[0]
    if [path] != traces or again != path:
        fail("example 1: the line names %r (and %r), the directory holds %r" % (path, again, traces))
    want = "device 0 peak %s" % format_bytes(ledger.peak(pid))
    if what != want:
        fail("example 1: the line says %r, the ledger's peak is %r" % (what, want))
    if what != "device 0 peak 11.63 GiB":
        fail("example 1: 11.625 GiB said as %r" % what)
    said_is_reported("example 1", err, d)
if (status, out) != (plain.returncode, plain.stdout):
    fail("example 1: status/stdout %r/%r, without the tracer %r/%r" % (status, out[:80],
                                                                       plain.returncode,
                                                                       plain.stdout[:80]))

# ---- example 3: a failure -----------------------------------------------
status, out, err, d = run([example("deepspeed_init_oom")], tty=True,
                          extra={"VTSIM_MEMORY": "31.50GiB"})
ledger = Ledger(os.path.join(d, "ledger.txt"))
lines = LINE.findall(err)
calls = sum(1 for e in ledger.lines if e["op"] == "alloc" and int(e["result"]) != 0)
want = "device 0 peak %s; %d allocation call%s failed" % (
    format_bytes(ledger.peak(ledger.pids[0])), calls, "" if calls == 1 else "s")
if status != 1:
    fail("example 3: exit status %d, want 1 (the program's own)" % status)
if len(lines) != 1 or lines[0][1] != want:
    fail("example 3: want one line saying %r, got %r" % (want, err))
said_is_reported("example 3", err, d)

# ---- frees, failures and a VMM mapping: the report's figures -------------
status, out, err, d = run([example("cache_flush_oom")], tty=True,
                          extra={"VTSIM_MEMORY": "8.28GiB"})
ledger = Ledger(os.path.join(d, "ledger.txt"))
frees = ledger.free_count(ledger.pids[0])
failed = sum(1 for e in ledger.lines if e["op"] == "alloc" and int(e["result"]) != 0)
if frees < 1 or failed < 2:
    fail("example 2's allocator at 8.28 GiB: %d frees, %d failed calls (want the flush's free "
         "and two failures)" % (frees, failed))
said_is_reported("example 2's allocator", err, d)
status, out, err, d = run([os.path.join(os.path.abspath(args.build), "tests", "golden",
                                        "gold_vmm")], tty=True)
said_is_reported("gold_vmm", err, d)
if "device 0 peak 48.00 MiB" not in err:
    fail("gold_vmm: the physical peak holds a released handle still mapped: want 48.00 MiB, "
         "got %r" % err)

# ---- no terminal, or quiet: nothing --------------------------------------
status, out, err, d = run([example("train_eval_phases")], tty=False)
if "vramtrace" in err or status != 0:
    fail("stderr a pipe: status %d, stderr %r (want nothing)" % (status, err))
status, out, err, d = run([example("train_eval_phases")], tty=True, extra={"VRAMTRACE_QUIET": "1"})
if "vramtrace" in err or status != 0:
    fail("VRAMTRACE_QUIET=1: status %d, tty %r (want nothing)" % (status, err))

# ---- children say nothing ----------------------------------------------
status, out, err, d = run([example("launch_ranks"), "4"], tty=True)
ranks = sorted(f for f in os.listdir(d) if f.endswith(".vtrace"))
if status != 0 or len(ranks) != 4 or "vramtrace" in err:
    fail("launch_ranks 4: status %d, %d traces, tty %r (want 4 traces, nothing said)"
         % (status, len(ranks), err))

# ---- under `vramtrace run`: run's lines only ----------------------------
status, out, err, d = run([args.vramtrace, "run", "--", example("train_eval_phases")], tty=True)
if status != 0 or LINE.search(err) or "vramtrace: trace " not in err:
    fail("under vramtrace run: status %d, tty %r (want run's lines, not the exit line)"
         % (status, err))

for f in failures:
    print("FAIL: " + f, file=sys.stderr)
if failures:
    print("(files kept in %s)" % " ".join(made), file=sys.stderr)
else:
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
sys.exit(1 if failures else 0)
