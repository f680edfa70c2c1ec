"""The merged pass gives the same report on any number of threads.

A small job from synth_trace's job form (4 hosts, 8 GPUs a host, 2 ranks a
GPU: 64 traces), reported with VRAMTRACE_ANALYZER_THREADS=1, 2 and 5: the
text and the JSON are the same byte for byte, and the job's figures are
those the traces were made with (ranks, GPUs, hosts, world size).
"""
import json
import os
import subprocess
import sys
import tempfile

VRAMTRACE, SYNTH = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def report(d, threads, *args):
    env = dict(os.environ, VRAMTRACE_ANALYZER_THREADS=str(threads))
    p = subprocess.run([VRAMTRACE, "report", *args, d], capture_output=True, text=True, env=env,
                       timeout=120)
    check(p.returncode == 0, "report with %d threads exits 0 (%s)" % (threads, p.stderr))
    return p.stdout


with tempfile.TemporaryDirectory() as d:
    subprocess.run([SYNTH, "--ranks", "64", "--gpus", "32", "--events", "3000", "--live", "50",
                    "--dir", d], check=True, capture_output=True)
    one = report(d, 1)
    check("job: 64 processes, 64 with a rank (world size 64), on 32 GPUs of 4 hosts" in one,
          "the job line: " + one.splitlines()[2] if len(one.splitlines()) > 2 else one)
    for t in (2, 5):
        check(report(d, t) == one, "text report with %d threads is the one-thread report" % t)
    js = report(d, 1, "--json")
    for t in (2, 5):
        check(report(d, t, "--json") == js, "JSON report with %d threads is the one-thread one" % t)
    doc = json.loads(js)
    check(len(doc.get("jobs", [])) == 1, "one job")

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
