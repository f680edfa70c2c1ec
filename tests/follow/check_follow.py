"""`vramtrace top` following a trace that grows in pieces cut anywhere -
inside the preamble, a chunk's header, a chunk's compressed bytes - as a
writer killed or descheduled mid-write leaves it, and a broken trace
beside it.

A real trace is recorded first (a rank on the simulated GPU, the driver's
ledger kept). Then it is written again, piece by piece, into a file that
`vramtrace top -b` follows. After each piece, the frames must show what
`vramtrace report --json` reads in a copy of that prefix (the peak), never
an error and never a broken trace (a cut chunk is waited for); once it is
all there, the ledger's peak and growth per step. The broken trace (a
preamble and a chunk that does not decode) is named once on stderr and
skipped.

    check_follow.py --build BUILD [--preload-first LIBS]
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from follow_check import Paths, TopFrames, fail, finish, job_env, options  # noqa: E402
from ledger_truth import Ledger, format_bytes  # noqa: E402

A = options()
P = Paths(A.build)
VRAMTRACE, WORKER = P.vramtrace, P.worker
PREAMBLE, HEADER = 16, 12  # include/vramtrace/trace_format.h
SETTLE = 0.35              # more than two refreshes of 0.1 s

tmp = tempfile.mkdtemp(prefix="vt-follow-")
env = job_env(P, os.path.join(tmp, "ledger.txt"), A.preload_first, VRAMTRACE_FLUSH_MS="10",
              RANK="0", FOLLOW_STEPS="6", FOLLOW_STEP_MS="30")
rec = subprocess.run([VRAMTRACE, "run", "-q", "-o", os.path.join(tmp, "rec", "t.%p.vtrace"), "--",
                      WORKER], env=env, capture_output=True, text=True, timeout=60)
if rec.returncode != 0:
    print(rec.stdout + rec.stderr, file=sys.stderr)
    sys.exit(1)
src = os.path.join(tmp, "rec", os.listdir(os.path.join(tmp, "rec"))[0])
data = open(src, "rb").read()
led = Ledger(env["VTSIM_LEDGER"])
pid = led.pids[0]

# chunk boundaries, and cuts inside each part of a chunk
chunks, off = [], PREAMBLE
while off + HEADER <= len(data):
    csize = struct.unpack_from("<I", data, off + 4)[0]
    chunks.append((off, off + HEADER + csize))
    off += HEADER + csize
if len(chunks) < 3:
    fail("the recorded trace has %d chunks; the test wants 3 or more" % len(chunks))
cuts = [5, PREAMBLE]
for start, end in chunks:
    cuts += [start + 2, start + HEADER - 1, start + HEADER + (end - start - HEADER) // 2, end]
cuts = sorted(set(c for c in cuts if 0 < c <= len(data)))
if cuts[-1] != len(data):
    cuts.append(len(data))

follow = os.path.join(tmp, "follow")
os.makedirs(follow)
# a broken trace: a real preamble, then a chunk whose bytes are not zstd
with open(os.path.join(follow, "bad.vtrace"), "wb") as f:
    f.write(data[:PREAMBLE] + b"VTCK" + struct.pack("<II", 64, 256) + b"\x55" * 64)
growing = os.path.join(follow, "growing.vtrace")
open(growing, "wb").close()  # empty, as the tracer makes it

top = TopFrames([VRAMTRACE, "top", "-b", "-d", "0.1", "-w", "250", follow], env,
                clock=time.monotonic)
frames = top.frames
time.sleep(SETTLE)
marks = []  # (cut, when written)
with open(growing, "ab") as f:
    written = 0
    for c in cuts:
        f.write(data[written:c])
        f.flush()
        written = c
        when = time.monotonic()
        marks.append((c, when))
        # two frames begun after it (on a loaded machine it may take longer)
        deadline = when + 10
        while sum(1 for t, _ in frames if t >= when + 0.25) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
time.sleep(SETTLE)
err = top.stop()
print(err)

ROW = re.compile(r"^ +(\d+|-) +(\d+|-) .{12} .{5} +(\d+) ([RXB]) +(\S+ \S+) +(\S+ \S+) .*"
                 r" (-|\+\S+ \S+) (\d+)(?: \w+)? +follow_worker$")


def row_of(lines):
    rows = [ROW.match(l) for l in lines if l.endswith("follow_worker")]
    return rows[0] if rows else None


def report_peak(prefix):
    """The peak `vramtrace report` reads in a copy of the first prefix bytes."""
    cut = os.path.join(tmp, "prefix.%d.vtrace" % prefix)
    with open(cut, "wb") as f:
        f.write(data[:prefix])
    r = subprocess.run([VRAMTRACE, "report", "--json", cut], capture_output=True, text=True,
                       env=env, timeout=60)
    os.unlink(cut)
    if r.returncode not in (0, 3) or not r.stdout.strip():
        return None, False
    doc = json.loads(r.stdout)
    procs = doc.get("processes", [])
    if not procs:
        return None, False
    peaks = [d["peak_bytes"] for d in procs[0]["devices"] if d["kind"] == "device"]
    return (max(peaks) if peaks else 0), True


checked = 0
for k, (cut, when) in enumerate(marks):
    end = marks[k + 1][1] if k + 1 < len(marks) else float("inf")
    # the first frame read after the piece may have been begun before it
    settled = [lines for t, lines in frames if when + 0.25 <= t < end][1:]
    if not settled:
        fail("no frame settled after the cut at byte %d" % cut)
        continue
    peak, has_process = report_peak(cut)
    for lines in settled:
        r = row_of(lines)
        if not has_process:
            if r:
                fail("byte %d: a row before the process record is complete: %r" % (cut, r.group(0)))
            continue
        if not r:
            fail("byte %d (report reads the process): no row in %r" % (cut, lines))
            continue
        if r.group(4) == "B":
            fail("byte %d: the trace shows as broken: %r" % (cut, r.group(0)))
        if r.group(6) != format_bytes(peak):
            fail("byte %d: top's peak %s, report's on the same bytes %s" % (cut, r.group(6),
                                                                          format_bytes(peak)))
        checked += 1

last = row_of(frames[-1][1]) if frames else None
if not last:
    fail("no row in the last frame")
else:
    if last.group(6) != format_bytes(led.peak(pid)):
        fail("all read: top's peak %s, the ledger's %s" % (last.group(6), format_bytes(led.peak(pid))))
    if last.group(7) != "+" + format_bytes(16 << 20):
        fail("all read: growth per step %s, want +16.00 MiB (the leak of a step)" % last.group(7))
    if int(last.group(3)) != pid:
        fail("all read: pid %s, the ledger's %d" % (last.group(3), pid))
if err.count("bad.vtrace") != 1:
    fail("bad.vtrace named %d times on stderr, want once" % err.count("bad.vtrace"))
if "growing.vtrace" in err:
    fail("the growing trace was named on stderr: %r" % err)
if checked < len(chunks):
    fail("only %d frames compared over %d cuts" % (checked, len(cuts)))

shutil.rmtree(tmp, ignore_errors=True)
finish("%d cuts, %d frames compared with report on the same bytes" % (len(cuts), checked))
