#!/usr/bin/env python3
"""docs/report.schema.json is a valid JSON Schema, accepts what the report
writes for a trace, a snapshot and both together, and rejects documents
broken the ways a careless change would break them (so the validations the
other tests run can fail).

    check_schema.py VRAMTRACE MAKE_TRACES SNAPSHOT

MAKE_TRACES (tests/analyzer) writes a trace with a failure, phases, two
devices and pinned memory."""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

from report_schema import schema_errors

vramtrace, make_traces, snapshot = sys.argv[1:4]
tmp = tempfile.mkdtemp(prefix="vt-schema-")
subprocess.run([make_traces, tmp], check=True, capture_output=True)
trace = os.path.join(tmp, "good.vtrace")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


docs = {}
for name, args in {"trace": [trace], "snapshot": [snapshot], "both": [trace, snapshot]}.items():
    p = subprocess.run([vramtrace, "report", "--json", "--no-symbols"] + args,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "%s: report exit %d: %s" % (name, p.returncode, p.stderr))
    docs[name] = json.loads(p.stdout) if p.returncode == 0 else {}
    errors = schema_errors(docs[name])
    check(errors == [], "%s: the report breaks the schema: %s" % (name, errors))

both = docs["both"]
broken = {
    "an old version": lambda d: d.update(vramtrace_report=1),
    "no snapshots key": lambda d: d.pop("snapshots"),
    "an unknown verdict": lambda d: d["processes"][0]["devices"][0]["ooms"][0].update(
        verdict="bad luck") if d["processes"][0]["devices"][0]["ooms"] else
    d["processes"][0]["devices"][0].update(peak_bytes="big"),
    "a negative byte count": lambda d: d["processes"][0]["devices"][0].update(peak_bytes=-1),
    "a frame without its function": lambda d: d["snapshots"][0]["devices"][0][
        "peak_breakdown"][0]["frames"][0].pop("function"),
    "a string where bytes go": lambda d: d["gpus"][0].update(peak_bytes="1 GiB"),
}
for what, breaks in broken.items():
    d = copy.deepcopy(both)
    try:
        breaks(d)
    except (IndexError, KeyError) as e:
        check(False, "cannot make %s: the input has no %s" % (what, e))
        continue
    check(schema_errors(d) != [], "the schema accepts %s" % what)

print("%d failure(s)" % len(failures))
if not failures:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures else 0)
