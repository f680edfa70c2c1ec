"""`vramtrace top -b` while a job runs on the simulated GPU, checked against
the simulated driver's ledger (tests/examples/ledger_truth.py):

  - every frame's layout, line by line (title, GPUs, first failure, the
    column names, a row per process, an empty line);
  - the device bytes a frame shows per rank equal the ledger's at some
    instant of the flush interval (plus the writer's round) before the
    frame was read: never staler;
  - a rank that starts late appears; a rank that exits stays, marked X,
    with its peak (the ledger's);
  - the failing rank's failure and verdict, in its row and the header;
  - growth across openings (the ledger's bytes after each step's free; in
    the opened process, the report's own line for the same trace);
  - junk files among the traces are named once on stderr and skipped;
  - the GPU lines add up the rows of their processes;
  - `-n` stops after that many frames; `-p PID` opens a process.

    check_top.py --build BUILD [--preload-first LIBS] [--tamper]

--tamper puts a phantom 1 MiB into the truth: the check must then fail.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from follow_check import Paths, TopFrames, fail, finish, job_env, options  # noqa: E402
from ledger_truth import Ledger, format_bytes  # noqa: E402

A = options(tamper=True)
P = Paths(A.build)
VRAMTRACE, WORKER = P.vramtrace, P.worker
FLUSH_MS = 50
# What a frame may lag behind the driver: the flush interval, one round of
# the tracer's writer thread (docs/internals/RELIABILITY.md allows 150 ms for it) and
# 100 ms between the frame's making and its reading here (a loaded
# machine). Less than a step (500 ms): a frame a step behind fails.
LAG_NS = (FLUSH_MS + 150 + 100) * 1_000_000
STEP_MS = 500
MiB = 1 << 20

def equal(what, got, want):
    if got != want:
        fail("%s: top shows %r, the ledger says %r" % (what, got, want))


tmp = tempfile.mkdtemp(prefix="vt-top-")
traces = os.path.join(tmp, "traces")
os.makedirs(traces)
# Junk among the traces: text named like a trace, a trace's magic with a
# broken chunk, and a file no trace is named like (never looked at).
with open(os.path.join(traces, "junk.vtrace"), "w") as f:
    f.write("not a trace at all\n" * 10)
with open(os.path.join(traces, "notes.txt"), "w") as f:
    f.write("ignored\n")
shared = "vt-top-%d" % os.getpid()
env = job_env(P, os.path.join(tmp, "ledger.txt"), A.preload_first, VTSIM_SHARED=shared,
              VTSIM_DEVICES="2", VTSIM_MEMORY="24GiB", VRAMTRACE_FLUSH_MS=str(FLUSH_MS),
              FOLLOW_STEP_MS=str(STEP_MS))
# Ranks 0 and 1 from the start; rank 0 stops early (exited while the
# others run), rank 1 fails once; rank 2 starts late.
job = ("RANK=0 LOCAL_RANK=0 FOLLOW_STEPS=5 {w} & "
       "RANK=1 LOCAL_RANK=1 FOLLOW_STEPS=12 FOLLOW_FAIL_STEP=2 {w} & "
       "RANK=2 LOCAL_RANK=0 FOLLOW_STEPS=8 FOLLOW_DELAY_MS=1500 {w} & wait").format(w=WORKER)

top = TopFrames([VRAMTRACE, "top", "-b", "-d", "0.3", "-w", "250", traces], env)
frames = top.frames  # (monotonic ns when its title was read, [lines])
time.sleep(0.6)  # a frame or two of an empty directory first
try:
    run = subprocess.run([VRAMTRACE, "run", "-q", "-o", os.path.join(traces, "rank%r.%p.vtrace"),
                          "--", "sh", "-c", job], env=env, cwd=tmp, capture_output=True,
                         text=True, timeout=90)
finally:
    try:
        os.unlink("/dev/shm/vtsim-" + shared)
    except OSError:
        pass
time.sleep(1.0)  # frames after the end: everyone exited
err = top.stop()
print(run.stdout + run.stderr)
print(err)
equal("exit status of the job", run.returncode, 0)

led = Ledger(env["VTSIM_LEDGER"], phantom_bytes=MiB if A.tamper else 0)
pids = led.pids
if len(pids) != 3:
    print("FAIL: %d ranks ran, want 3" % len(pids), file=sys.stderr)
    sys.exit(0 if A.tamper else 1)

# ---- the truth: each pid's device bytes over time --------------------------
history = {p: [] for p in pids}  # pid -> [(ns, bytes after the line)]
for i, e in enumerate(led.lines):
    p = int(e["pid"])
    total = sum(b for (q, d, c), b in led.after[i].items() if q == p and c == "device")
    history[p].append((int(e["ns"]), total))
rank_of = {}  # from the traces' names (rank%r.%p.vtrace)
for name in os.listdir(traces):
    m = re.match(r"rank(\d+)\.(\d+)\.vtrace$", name)
    if m:
        rank_of[int(m.group(2))] = int(m.group(1))
equal("ranks traced", sorted(rank_of.values()), [0, 1, 2])
pid_of = {r: p for p, r in rank_of.items()}


def values_between(pid, t0, t1):
    """Every total pid held in [t0, t1] (and the one it held at t0)."""
    vals, before = set(), 0
    for ns, b in history[pid]:
        if ns < t0:
            before = b
        elif ns <= t1:
            vals.add(b)
    vals.add(before)
    return vals


# ---- frames, line by line ---------------------------------------------------
TITLE = re.compile(r"^vramtrace top - \d\d:\d\d:\d\d - (\d+) process(?:es)?: (\d+) running, "
                   r"(\d+) exited - (\d+) GPUs? - sort now - every 0\.3s$")
GPU = re.compile(r"^GPU (\d+) (\S+) GPU-[0-9a-f]{8}: (\d+(?:\.\d\d)? [KMGT]?i?B) of 24\.00 GiB "
                 r"\(\d+%\), (\d+) process(?:es)? running - Simulated GPU \d \(24\.00 GiB\)$")
COLUMNS = (" RANK LOCAL HOST         GPU        PID S        NOW       PEAK  PEAK AT "
           "LAST MINUTE          PHASE          GROWTH/STEP FAILURES               COMMAND")
BYTES = r"\d+(?:\.\d\d)? [KMGT]?i?B"
# a rank's row may carry the mark of a rank that diverges ("*2"; rank 2
# leaks 48 MiB a step, the median rank 32): the examples' check_diverging_rank tests it
ROW = re.compile(r"^ {0,4}\*?(\d+) +(\d+|-) (.{12}) (.{5}) {0,8}(\d+) ([RXB]) +(" + BYTES + r") +("
                 + BYTES + r") (\d\d:\d\d:\d\d|       -) (.{20}) (.{14}) +(-|none|\+" + BYTES + r") (\d+)(?: (\w+))? +"
                 r"(follow_worker)$")
parsed = []  # (t, {rank: row dict}, gpu lines, failure line)
for t, lines in frames:
    where = "frame at +%.2fs" % ((t - frames[0][0]) / 1e9)
    m = TITLE.match(lines[0])
    if not m:
        fail("%s: title %r" % (where, lines[0]))
        continue
    nproc, running, exited, ngpus = map(int, m.groups())
    i = 1
    gpus = []
    while i < len(lines) and lines[i].startswith("GPU "):
        g = GPU.match(lines[i])
        if not g:
            fail("%s: GPU line %r" % (where, lines[i]))
        gpus.append(g)
        i += 1
    equal(where + ": GPU lines", len(gpus), ngpus)
    first_failure = lines[i] if i < len(lines) else ""
    if not first_failure.startswith("first failure: "):
        fail("%s: line %d is %r, not the first failure" % (where, i + 1, first_failure))
    rest = lines[i + 1:]
    if rest[:2] != ["", COLUMNS]:
        fail("%s: the column names: %r" % (where, rest[:2]))
    rows = {}
    body = rest[2:]
    if body and body[-1] == "":
        body = body[:-1]  # the empty line that ends a frame
    elif t != frames[-1][0]:
        fail("%s: does not end with an empty line" % where)
    for line in body:
        r = ROW.match(line)
        if not r:
            fail("%s: row %r" % (where, line))
            continue
        rows[int(r.group(1))] = {
            "pid": int(r.group(5)), "state": r.group(6), "now": r.group(7), "peak": r.group(8),
            "spark": r.group(10), "phase": r.group(11).strip(), "growth": r.group(12),
            "fails": int(r.group(13)), "verdict": r.group(14), "gpu": r.group(4).strip()}
    if t != frames[-1][0]:  # the last frame may be cut by the kill
        equal(where + ": rows", len(rows), nproc)
        equal(where + ": running + exited", running + exited, nproc)
        equal(where + ": rows marked R", sum(1 for r in rows.values() if r["state"] == "R"), running)
    # each GPU's line adds up its running processes' rows
    for g in gpus:
        want = sum(int(float(r["now"].split()[0]) * {"B": 1, "KiB": 1 << 10, "MiB": MiB,
                                                    "GiB": 1 << 30}[r["now"].split()[1]])
                   for r in rows.values() if r["gpu"] == g.group(1) and r["state"] == "R")
        equal(where + ": GPU %s's bytes = its rows'" % g.group(1), g.group(3), format_bytes(want))
    parsed.append((t, rows, gpus, first_failure))

if len(parsed) < 8:
    fail("only %d frames were read" % len(parsed))

# ---- against the ledger -------------------------------------------------------
checked = 0
for t, rows, _, _ in parsed:
    for rank, r in rows.items():
        pid = r["pid"]
        equal("rank %d's pid" % rank, pid, pid_of.get(rank))
        if pid not in history:
            continue
        if r["state"] == "R":
            # what the driver's ledger held at some instant of the lag before the frame
            ok = {format_bytes(v) for v in values_between(pid, t - LAG_NS, t)}
            if r["now"] not in ok:
                fail("rank %d at +%.2fs: top shows %s now; the ledger held %s in the %d ms "
                     "before" % (rank, (t - parsed[0][0]) / 1e9, r["now"], sorted(ok),
                                 LAG_NS // 1_000_000))
            checked += 1
        else:
            equal("rank %d exited: bytes now" % rank, r["now"], "0 B")
            equal("rank %d exited: peak" % rank, r["peak"], format_bytes(led.peak(pid, rank % 2)))
if checked < 10:
    fail("only %d running rows were compared with the ledger" % checked)

# the late rank: absent at first, there later
first_rows = parsed[0][1] if parsed else {}
if 2 in first_rows:
    fail("rank 2 (starts 1.5 s late) is in the first frame")
if not any(2 in rows for _, rows, _, _ in parsed):
    fail("rank 2, which started late, never appeared")
# the rank that exited: marked X while the others run, with its peak
exited_early = [rows[0] for _, rows, _, _ in parsed
                if 0 in rows and rows[0]["state"] == "X" and 1 in rows and rows[1]["state"] == "R"]
if not exited_early:
    fail("rank 0 never showed as exited while rank 1 ran")
# the last complete frame: everyone exited, each with the ledger's peak
last = parsed[-2][1] if len(parsed) > 1 else {}
for rank in (0, 1, 2):
    r = last.get(rank)
    if not r:
        fail("the last frame lacks rank %d" % rank)
        continue
    equal("rank %d at the end: state" % rank, r["state"], "X")
    equal("rank %d at the end: peak" % rank, r["peak"], format_bytes(led.peak(pid_of[rank], rank % 2)))
    # growth per step: the ledger's bytes after each step's free of its activations
    pid = pid_of[rank]
    frees = [b for (ns, b), e in zip(history[pid], [e for e in led.lines if int(e["pid"]) == pid])
             if e["op"] == "free" and e["result"] == "0"]
    steps = [b - a for a, b in zip(frees, frees[1:])]
    if len(set(steps)) != 1:
        fail("rank %d: the ledger's steps differ: %r" % (rank, steps))
    else:
        equal("rank %d: growth per step" % rank, r["growth"], "+" + format_bytes(steps[0]))
    fails = sum(1 for f in led.failures(pid_of[rank]))
    equal("rank %d: failures" % rank, r["fails"], fails)
# the failure: rank 1's 1 TiB, larger than the device
r1 = last.get(1, {})
equal("rank 1's first failure's verdict", r1.get("verdict"), "larger_than_device")
ff = parsed[-2][3] if len(parsed) > 1 else ""
if not re.match(r"first failure: rank 1 pid %d at \d\d:\d\d:\d\d, device 1: cudaMalloc of 1\.00 TiB "
                r"failed: larger_than_device$" % pid_of.get(1, -1), ff):
    fail("the header's first failure: %r" % ff)
if parsed and parsed[0][3] != "first failure: none":
    fail("the first frame's first failure: %r" % parsed[0][3])

# junk: named once each, then skipped; a file not named *.vtrace never
equal("times junk.vtrace is named", err.count("junk.vtrace"), 1)
if "notes.txt" in err:
    fail("notes.txt (not a trace's name) was looked at")

# ---- -n and -p, on the finished job -------------------------------------------
one = subprocess.run([VRAMTRACE, "top", "-b", "-n", "2", "-d", "0.1", "-p", str(pid_of.get(1, 0)),
                      traces], capture_output=True, text=True, env=env, timeout=30)
equal("top -n 2: exit status", one.returncode, 0)
equal("top -n 2: frames", one.stdout.count("vramtrace top - "), 2)
detail = one.stdout.split("vramtrace top - ")[1]
if not re.search(r"^pid %d \(rank 1, local rank 1\) on \S+: follow_worker$" % pid_of.get(1, -1),
                 detail, re.M):
    fail("top -p: no detail of rank 1:\n" + detail)
if not re.search(r"^  last failure \(of 1\): at \d\d:\d\d:\d\d, device 1: cudaMalloc of 1\.00 TiB "
                 r"failed: larger_than_device; ", detail, re.M):
    fail("top -p: rank 1's last failure is not told:\n" + detail)
# growth across openings: the report's computation, so the report's figures
GROWTH = (r"step +\+(\S+ \S+) per opening from opening (\d+) \((\d+) in a row up to the last "
          r"of (\d+); (\S+ \S+) -> (\S+ \S+)\)")
mine = re.search(r"^  growth across openings: " + GROWTH + r", device 1$", detail, re.M)
trace1 = next((os.path.join(traces, f) for f in os.listdir(traces)
               if f.endswith(".%d.vtrace" % pid_of.get(1, -1))), None)
rep = subprocess.run([VRAMTRACE, "report", trace1 or traces], capture_output=True, text=True,
                     env=env, timeout=60).stdout
theirs = re.search(r"^    " + GROWTH + r"$", rep, re.M)
if not mine or not theirs or mine.groups() != theirs.groups():
    fail("top -p: rank 1's growth %r, the report's %r" % (mine and mine.groups(),
                                                         theirs and theirs.groups()))
elif mine.group(4) != "12":
    fail("top -p: rank 1's closings of step: %s, want 12" % mine.group(4))

shutil.rmtree(tmp, ignore_errors=True)
finish("%d frames, %d running rows compared with the ledger" % (len(parsed), checked))
