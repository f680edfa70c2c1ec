"""`vramtrace top` without arguments: the newest `vramtrace run` session of
this host that still runs, found from its processes' environments, and its
traces under the run's output template - not the other traces in the same
directory (an earlier session's, left there on purpose).

Two ranks run under `vramtrace run` (relative output template, so the
directory is found through the ranks' working directory) and hold their
memory; `top -b -n 1` with no argument must name that session and show
exactly its two ranks, with the driver's ledger's bytes. A session started
on this host after ours (another test) is newer: then top must have picked
one that started later (its START checked), and is asked again, up to 40
times; if newer sessions ran all along the test is skipped (77).

    check_session.py --build BUILD [--preload-first LIBS]
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

from follow_check import Paths, fail, finish, job_env, options  # noqa: E402
from ledger_truth import Ledger, format_bytes  # noqa: E402

A = options()
P = Paths(A.build)
tmp = tempfile.mkdtemp(prefix="vt-session-")
env = job_env(P, os.path.join(tmp, "ledger.txt"), A.preload_first, VRAMTRACE_FLUSH_MS="50",
              FOLLOW_STEPS="2", FOLLOW_STEP_MS="50", FOLLOW_HOLD_MS="4000")
template = "traces/rank%r.%p.vtrace"

# an earlier session's trace in the same directory: not this view's
early = subprocess.run([P.vramtrace, "run", "-q", "-o", template, "--", P.worker],
                       env=dict(env, FOLLOW_HOLD_MS="0", RANK="7",
                                VTSIM_LEDGER=os.path.join(tmp, "early.txt")), cwd=tmp,
                       capture_output=True,
                       text=True, timeout=60)
if early.returncode != 0:
    fail("the earlier session: %s" % early.stderr)

def session_start(pid):
    """VRAMTRACE_SESSION_START of a process, None if it cannot be read."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(b"VRAMTRACE_SESSION_START="):
                    return int(kv.split(b"=", 1)[1])
    except (OSError, ValueError):
        return None
    return None


job = "RANK=0 {w} & RANK=1 {w} & wait".format(w=P.worker)
run = subprocess.Popen([P.vramtrace, "run", "-q", "-o", template, "--", "sh", "-c", job],
                       env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    time.sleep(1.0)  # both ranks started, their steps done and flushed
    led = Ledger(env["VTSIM_LEDGER"])
    ours = session_start(led.pids[0])
    if ours is None:
        fail("this test's session: no VRAMTRACE_SESSION_START in pid %d's environment"
             % led.pids[0])
    got, newer = None, 0
    for attempt in range(40):
        top = subprocess.run([P.vramtrace, "top", "-b", "-n", "1"], env=env, capture_output=True,
                             text=True, timeout=30)
        m = re.search(r"session (\S+) \(pid (\d+) among its processes\), traces under (\S+)",
                      top.stderr)
        if m and os.path.realpath(m.group(3)) == os.path.realpath(os.path.join(tmp, "traces")):
            got = top
            break
        # another session: right only if it started after ours (and still runs)
        other = session_start(int(m.group(2))) if m else None
        if other is not None and ours is not None and other > ours:
            newer += 1
        elif other is not None:
            fail("top picked session %s, which started before this test's" % m.group(1))
            break
        time.sleep(0.1)
    if not got and newer == 40:
        print("SKIP: newer sessions (other tests on this host) ran all along")
        run.wait(timeout=60)
        raise SystemExit(77)
    if not got:
        fail("top without arguments never picked this test's session: %r" % top.stderr)
    else:
        rows = re.findall(r"^ +(\d+) +\S+ \S+ +\S+ +(\d+) ([RXB]) +(\S+ \S+) ", got.stdout, re.M)
        ranks = sorted(int(r[0]) for r in rows)
        if ranks != [0, 1]:
            fail("top without arguments shows ranks %r, want [0, 1] (not the earlier session's 7):\n%s"
                 % (ranks, got.stdout))
        led = Ledger(env["VTSIM_LEDGER"])
        for rank, pid, state, now in rows:
            if int(pid) in led.pids and now != format_bytes(led.final(int(pid))):
                fail("rank %s: top shows %s, the ledger %s" % (rank, now,
                                                             format_bytes(led.final(int(pid)))))
            if state != "R":
                fail("rank %s is %s, not running" % (rank, state))
finally:
    run.wait(timeout=60)
nothing = subprocess.run([P.vramtrace, "top", "-b", "-n", "1", os.path.join(tmp, "none")],
                         env=env, capture_output=True, text=True, timeout=30)
if nothing.returncode != 0 or "0 processes" not in nothing.stdout:
    fail("top on a directory that does not exist (yet): %d %r" % (nothing.returncode,
                                                                  nothing.stdout + nothing.stderr))
shutil.rmtree(tmp, ignore_errors=True)
finish("top without arguments found this session and its ranks")
