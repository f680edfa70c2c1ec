"""`vramtrace top`'s full-screen view, driven in a real terminal: tmux runs
it in a detached session of its own (a private server socket), keys are
sent with send-keys and the screen is read with capture-pane.

Two ranks run on the simulated GPU and then hold their memory; rank 1 has
failed once. While they hold, the screen must show each rank's bytes as
the driver's ledger has them; r and p sort by rank and by peak (the order
of the rows changes accordingly); Enter opens the chosen process (its
live call sites, its phase, its last failure) and closes it; ? shows the
keys; q quits with status 0. In a terminal of 8 lines the table scrolls to
the chosen row; on a terminal ncurses does not know, top says so and exits 2.

    check_screen.py --build BUILD [--preload-first LIBS]
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
TMUX = shutil.which("tmux")
if not TMUX:
    print("SKIP: no tmux")
    raise SystemExit(77)

tmp = tempfile.mkdtemp(prefix="vt-screen-")
traces = os.path.join(tmp, "traces")
socket = "vt-screen-%d" % os.getpid()
shared = "vt-screen-%d" % os.getpid()
env = job_env(P, os.path.join(tmp, "ledger.txt"), A.preload_first, VTSIM_SHARED=shared,
              VTSIM_DEVICES="2", VRAMTRACE_FLUSH_MS="50", FOLLOW_STEPS="4", FOLLOW_STEP_MS="100",
              FOLLOW_HOLD_MS="8000")
job = ("RANK=0 LOCAL_RANK=0 {w} & RANK=1 LOCAL_RANK=1 FOLLOW_FAIL_STEP=1 {w} & wait"
       .format(w=P.worker))


def tmux(*args):
    return subprocess.run([TMUX, "-L", socket] + list(args), capture_output=True, text=True,
                          timeout=10)


target = "top"  # the tmux session read


def screen():
    lines = tmux("capture-pane", "-p", "-t", target).stdout.split("\n")
    while lines and not lines[-1]:
        lines.pop()  # capture-pane ends with the pane's empty last lines
    return lines


def wait_for(what, test, seconds=10):
    """The screen once test(lines) holds; fails after seconds."""
    deadline = time.monotonic() + seconds
    while True:
        lines = screen()
        try:
            if test(lines):
                return lines
        except IndexError:
            pass  # an empty screen, not drawn yet
        if time.monotonic() > deadline:
            fail("%s: never on the screen:\n%s" % (what, "\n".join(lines)))
            return lines
        time.sleep(0.1)


def rows(lines):
    """(rank, pid, bytes now, peak) of each row, top to bottom."""
    out = []
    for l in lines:
        m = re.match(r"^ +(\d+) +(\d+|-) \S+ +(\S+) +(\d+) ([RXB]) +(\S+ \S+) +(\S+ \S+) ", l)
        if m:
            out.append((int(m.group(1)), int(m.group(4)), m.group(6), m.group(7)))
    return out


run = subprocess.Popen([P.vramtrace, "run", "-q", "-o", os.path.join(traces, "rank%r.%p.vtrace"),
                        "--", "sh", "-c", job], env=env, cwd=tmp,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
try:
    time.sleep(0.3)
    os.makedirs(traces, exist_ok=True)
    top_env = " ".join("%s='%s'" % (k, env[k]) for k in ("LD_LIBRARY_PATH",))
    r = tmux("new-session", "-d", "-s", "top", "-x", "200", "-y", "50",
             "env LANG=C.UTF-8 LC_ALL=C.UTF-8 %s %s top -d 0.3 %s; echo top exited $?; sleep 60"
             % (top_env, P.vramtrace, traces))
    if r.returncode != 0:
        fail("tmux new-session: %s" % r.stderr)

    # both ranks, holding: the ledger's bytes (the last line of each is its hold)
    wait_for("two ranks running", lambda l: len(rows(l)) == 2, seconds=15)
    time.sleep(1.5)  # their 4 steps of 100 ms done, and read (flush 50 ms, refresh 0.3 s)
    led = Ledger(env["VTSIM_LEDGER"])
    lines = screen()
    for rank, pid, now, peak in rows(lines):
        if now != format_bytes(led.final(pid, rank)):
            fail("rank %d: the screen shows %s now, the ledger %s" % (rank, now,
                                                                    format_bytes(led.final(pid, rank))))
        if peak != format_bytes(led.peak(pid, rank)):
            fail("rank %d: the screen shows peak %s, the ledger %s" % (rank, peak,
                                                                     format_bytes(led.peak(pid, rank))))
    if not any("\u2581" in l or "\u2588" in l for l in lines):
        fail("no block characters in the last minute's column (a UTF-8 terminal)")
    if not any(l.startswith("first failure: rank 1 ") for l in lines):
        fail("the header does not name rank 1's failure")

    # sort by rank, then by peak (rank 1's is larger)
    tmux("send-keys", "-t", "top", "r")
    lines = wait_for("sort rank", lambda l: "sort rank" in l[0])
    if [r[0] for r in rows(lines)] != [0, 1]:
        fail("sorted by rank: rows %r" % rows(lines))
    tmux("send-keys", "-t", "top", "p")
    lines = wait_for("sort peak", lambda l: "sort peak" in l[0])
    if [r[0] for r in rows(lines)] != [1, 0]:
        fail("sorted by peak: rows %r" % rows(lines))

    # open the first row (rank 1 by peak): its call sites and its last failure
    tmux("send-keys", "-t", "top", "Enter")
    lines = wait_for("rank 1 opened", lambda l: any(x.startswith("pid ") for x in l))
    text = "\n".join(lines)
    if not re.search(r"^pid \d+ \(rank 1, local rank 1\) on \S+: follow_worker$", text, re.M):
        fail("opened: not rank 1:\n" + text)
    if not re.search(r"^  live call sites on device 1 \(\d+ shown\):$", text, re.M):
        fail("opened: no live call sites:\n" + text)
    pid1 = rows(lines)[0][1]
    if not re.search(r"^ +%s +4  main \(follow_worker\.c:\d+\)  via cudaMalloc$"
                     % re.escape(format_bytes(led.final(pid1, 1))), text, re.M):
        fail("opened: rank 1's leak (32 MiB a step, 4 steps, at main) not listed:\n" + text)
    if not re.search(r"^  last failure \(of 1\): .*cudaMalloc of 1\.00 TiB failed: "
                     r"larger_than_device;", text, re.M):
        fail("opened: rank 1's last failure not told:\n" + text)
    tmux("send-keys", "-t", "top", "Enter")
    wait_for("closed again", lambda l: not any(x.startswith("pid ") for x in l))
    # down to rank 0, open, Esc closes
    tmux("send-keys", "-t", "top", "Down")
    tmux("send-keys", "-t", "top", "Enter")
    lines = wait_for("rank 0 opened", lambda l: any(x.startswith("pid ") for x in l))
    if not any(re.match(r"^pid \d+ \(rank 0, local rank 0\)", x) for x in lines):
        fail("Down, Enter: rank 0 not opened:\n" + "\n".join(lines))
    if not any(x == "  no failed allocation" for x in lines):
        fail("rank 0 opened: 'no failed allocation' missing")
    tmux("send-keys", "-t", "top", "Escape")
    wait_for("Esc closes", lambda l: not any(x.startswith("pid ") for x in l))

    # help, then any key back
    tmux("send-keys", "-t", "top", "?")
    wait_for("help", lambda l: l[0] == "vramtrace top - keys")
    tmux("send-keys", "-t", "top", "x")
    wait_for("back from help", lambda l: l[0].startswith("vramtrace top - ") and "keys" not in l[0])

    # q quits, status 0 (the shell after it says)
    tmux("send-keys", "-t", "top", "q")
    wait_for("q: top exited 0", lambda l: "top exited 0" in l)

    # a terminal of 8 lines: room for one row; the table scrolls to the chosen one
    target = "small"
    tmux("new-session", "-d", "-s", "small", "-x", "200", "-y", "8",
         "env LANG=C.UTF-8 %s %s top -d 0.3 -s rank %s; sleep 60" % (top_env, P.vramtrace, traces))
    lines = wait_for("8 lines: the first row", lambda l: bool(l) and "rows 1-1 of 2" in l[-1])
    if [r[0] for r in rows(lines)] != [0]:
        fail("8 lines: rows %r, want rank 0 alone" % rows(lines))
    tmux("send-keys", "-t", "small", "Down")  # rank 0 chosen
    tmux("send-keys", "-t", "small", "Down")  # rank 1: out of sight until scrolled
    lines = wait_for("8 lines: scrolled to rank 1", lambda l: bool(l) and "rows 2-2 of 2" in l[-1])
    if [r[0] for r in rows(lines)] != [1]:
        fail("8 lines, scrolled: rows %r, want rank 1 alone" % rows(lines))

    # a terminal ncurses does not know: said, exit status 2, never a crash
    target = "unknown"
    tmux("new-session", "-d", "-s", "unknown", "-x", "120", "-y", "10",
         "env TERM=no-such-terminal %s %s top %s; echo top exited $?; sleep 60"
         % (top_env, P.vramtrace, traces))
    lines = wait_for("an unknown terminal", lambda l: any("top exited" in x for x in l))
    if not any("cannot drive this terminal (TERM=no-such-terminal)" in x for x in lines) or \
            not any(x == "top exited 2" for x in lines):
        fail("an unknown terminal: %r" % lines)
finally:
    tmux("kill-server")
    run.kill()
    run.wait()
    try:
        os.unlink("/dev/shm/vtsim-" + shared)
    except OSError:
        pass
shutil.rmtree(tmp, ignore_errors=True)
finish("the screen against the ledger; sort, open, close, help and quit by keys")
