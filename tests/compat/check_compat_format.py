#!/usr/bin/env python3
"""The format's version and what readers do with it (docs/internals/FORMAT.md,
"Versioning").

    check_compat_format.py --vramtrace BIN --case samples|newer

samples  v5_samples.vtrace: a version 5 trace written before the version
         was bumped for PyTorch's allocator samples (part 16), by the tracer
         of main at 6dbaf30 under `vramtrace run` of tests/pytorch/
         story_train.py leak 8 on the stand-in torch. Today's analyzer still
         reads its samples: the growth it tells equals the growth rule
         (tests/pytorch/growth_truth.py) on what the stand-in's allocator
         printed after each step (v5_samples.out), the truth.
newer    v5_trace.vtrace with its preamble's version set to one above what
         this vramtrace writes (`vramtrace --version`): every command that
         reads it refuses it in one line naming the file as written by a
         newer vramtrace and both versions, exit status 2 (an input error), no crash.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
from growth_truth import growth_rule  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    return 1


def case_samples(vt):
    allocated = []
    with open(os.path.join(HERE, "v5_samples.out")) as f:
        for line in f:
            w = line.split()
            if len(w) == 6 and w[0] == "step" and w[2] == "allocated":
                allocated.append(int(w[3]))
    want = growth_rule(allocated)
    if not want:
        return fail("scenario broken: the stand-in's figures do not grow")
    trace = os.path.join(HERE, "v5_samples.vtrace")
    r = subprocess.run([vt, "dump", "--json", trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return fail("dump: %s" % r.stderr.strip())
    recs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    if recs[0].get("format_version") != 5:
        return fail("the fixture is not of format version 5: %r" % recs[0].get("format_version"))
    r = subprocess.run([vt, "report", "--json", trace], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return fail("report: %s" % r.stderr.strip())
    rep = json.loads(r.stdout)
    g = None
    for p in rep.get("processes", []):
        for d in p.get("devices", []):
            if d.get("kind") == "device" and d.get("growth"):
                g = d["growth"]
    got = g and (g.get("level"), g.get("per_step_bytes"), g.get("from_step"))
    exp = ("allocated", want["per_opening_bytes"], want["from_opening"])
    if got != exp:
        return fail("the samples' growth %r, the stand-in's figures give %r" % (got, exp))
    print("ok: version 5 samples read, +%d bytes a step from step %d" % exp[1:])
    return 0


def case_newer(vt):
    r = subprocess.run([vt, "--version"], capture_output=True, text=True, timeout=30)
    m = re.search(r"trace format (\d+)", r.stdout)
    if not m:
        return fail("no trace format in %r" % r.stdout)
    newer = int(m.group(1)) + 1
    tmp = tempfile.mkdtemp(prefix="vt-compat-newer-")
    try:
        path = os.path.join(tmp, "newer.vtrace")
        shutil.copyfile(os.path.join(HERE, "v5_trace.vtrace"), path)
        with open(path, "r+b") as f:
            f.seek(8)
            f.write(bytes([newer & 0xff, newer >> 8]))
        bad = 0
        for argv in (["report"], ["report", "--json"], ["dump", "--json"], ["export", "--format",
                     "perfetto", "-o", os.path.join(tmp, "p.json")]):
            r = subprocess.run([vt] + argv + [path], capture_output=True, text=True, timeout=60)
            said = "written by a newer vramtrace: format version %d, this vramtrace reads " \
                   "versions 1 to %d" % (newer, newer - 1)
            if r.returncode != 2 or said not in r.stderr or "newer.vtrace" not in r.stderr:
                bad += fail("%s: status %d, stderr %r (wanted status 2 and %r)"
                            % (" ".join(argv), r.returncode, r.stderr.strip()[-300:], said))
        if not bad:
            print("ok: format %d refused as newer by every reader" % newer)
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--case", required=True, choices=["samples", "newer"])
    a = ap.parse_args()
    return (case_samples if a.case == "samples" else case_newer)(a.vramtrace)


if __name__ == "__main__":
    sys.exit(main())
