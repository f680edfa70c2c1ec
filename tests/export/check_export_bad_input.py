#!/usr/bin/env python3
"""`vramtrace export` on bad input and bad output: a clear error and no file
left behind, or a valid empty file and a note - never a half-written file
(docs/user/REPORT.md, "Exports and diff"). The traces are example 1's
(examples/train_eval_phases.c), whose device peak is checked against the
ledger first, so that "empty" below means the filter, not a broken run."""
import json
import os
import pickle
import stat
import threading

from export_common import parse_args, run_example, export, exported, load_pickle

args = parse_args()
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/train_eval_phases", "--steps", "2"])
pid = run.traced_pids()[0] if run.traced_pids() else 0
run.equal("report peak_bytes", run.device(pid)["peak_bytes"], run.ledger.peak(pid))
out_dir = os.path.join(run.tmp, "out")
os.mkdir(out_dir)


def expect_error(what, proc, words, output=None):
    if proc.returncode != 2:
        run.fail("%s: exit %d, expected 2" % (what, proc.returncode))
    for w in words:
        if w not in proc.stderr:
            run.fail("%s: stderr does not say %r: %r" % (what, w, proc.stderr))
    if output and os.path.exists(output):
        run.fail("%s: %s was written" % (what, output))


# An unknown format: the error lists the formats; nothing is written.
target = os.path.join(out_dir, "x.json")
p = export(run, "chrome", output=target)
expect_error("unknown format", p, ["unknown format 'chrome'", "perfetto", "memory-viz", "folded"],
             target)

# An output that cannot be written: its directory is a file.
blocker = os.path.join(out_dir, "a-file")
with open(blocker, "w") as f:
    f.write("x")
p = export(run, "perfetto", output=os.path.join(blocker, "x.json"))
expect_error("output under a file", p, [os.path.join(blocker, "x.json")])

# An input that is not a trace, over an existing output: the old file stays
# whole and no temporary file is left beside it.
target = os.path.join(out_dir, "keep.json")
with open(target, "w") as f:
    f.write("old contents\n")
junk = os.path.join(run.tmp, "junk.vtrace")
with open(junk, "w") as f:
    f.write("this is not a trace\n")
for fmt in ("perfetto", "memory-viz", "folded"):
    p = export(run, fmt, output=target, inputs=[junk])
    expect_error("%s of a file that is not a trace" % fmt, p, [junk])
    with open(target) as f:
        run.equal("%s: the existing output after a failed export" % fmt, f.read(), "old contents\n")
run.equal("files in the output directory", sorted(os.listdir(out_dir)), ["a-file", "keep.json"])

# An output that is not an ordinary file (a FIFO here; /dev/null is the
# common one) is written where it is, not replaced by a file renamed over
# it: what comes out of the FIFO is the export itself (as written to
# standard output), and the FIFO is still one afterwards.
fifo = os.path.join(run.tmp, "pipe")
os.mkfifo(fifo)
got = []
reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
reader.start()
p = export(run, "folded", output=fifo)
reader.join(30)
run.equal("folded into a FIFO: exit", p.returncode, 0)
run.equal("folded into a FIFO: still a FIFO", stat.S_ISFIFO(os.stat(fifo).st_mode), True)
want = export(run, "folded").stdout.encode()
run.equal("folded into a FIFO: what the FIFO gave", got[0] if got else None, want)
if not want:
    run.fail("folded to standard output: nothing (the FIFO's check compares nothing)")
run.equal("files beside the FIFO", sorted(f for f in os.listdir(run.tmp) if f.startswith("pipe")),
          ["pipe"])

# A snapshot is not a trace.
snap = os.path.join(args.src, "tests", "data", "pytorch-snapshots", "eor.pickle")
p = export(run, "perfetto", inputs=[snap])
expect_error("a snapshot given to export", p, ["PyTorch memory snapshot"])

# --at and --phase belong to folded; bad --at values.
expect_error("--at with perfetto", export(run, "perfetto", "--at", "peak"), ["--at"])
expect_error("--at nonsense", export(run, "folded", "--at", "soon"), ["--at wants"])
expect_error("--at oom:0", export(run, "folded", "--at", "oom:0"), ["--at wants"])
expect_error("--phase that never opened", export(run, "folded", "--phase", "evl"),
             ['no phase "evl"'])

# No device memory (a device the process never used): valid, empty, a note.
path = exported(run, "perfetto", "empty.json", "--device", "5")
if path:
    with open(path) as f:
        doc = json.load(f)
    run.equal("perfetto --device 5: counter samples",
              sum(1 for e in doc["traceEvents"] if e.get("ph") == "C"), 0)
p = export(run, "perfetto", "--device", "5", output=os.path.join(out_dir, "e.json"))
if "no memory on that device" not in p.stderr:
    run.fail("perfetto --device 5: no note on stderr: %r" % p.stderr)
path = exported(run, "memory-viz", "empty.pickle", "--device", "5")
if path:
    snap = load_pickle(path)
    run.equal("memory-viz --device 5", [snap.get("segments"), snap.get("device_traces")], [[], []])
p = export(run, "folded", "--device", "5")
run.equal("folded --device 5: exit", p.returncode, 0)
run.equal("folded --device 5: output", p.stdout, "")
if "no device memory" not in p.stderr:
    run.fail("folded --device 5: no note on stderr: %r" % p.stderr)
run.finish()
