#!/usr/bin/env python3
"""A job of four ranks whose traces stay on two "nodes" (two directories):
`vramtrace report --summary` on each node, then `vramtrace report` over the
two summaries must give the job report of the traces themselves - the same
`jobs` JSON, the same overview text, with --rank too - and both must agree
with the simulated driver's ledger (each rank's peak, its failed requests,
the first failure in time) and with the worker's own sizes (phase peaks).
A truncated summary is named with the reason, the rest reported, exit 3;
summaries of two timeline resolutions are refused by name.

    check_summaries.py --build BUILD [--tamper]

--tamper adds 1 MiB to one rank's peak in one summary: the check must fail.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from launcher_check import HERE, Paths, equal, failures, parser
from ledger_truth import Ledger
from report_schema import SUMMARY_SCHEMA, schema_errors

A = parser(tamper=True).parse_args()
paths = Paths(A.build)
BUILD, VRAMTRACE, CW = paths.build, paths.vramtrace, paths.worker
MiB = 1 << 20


def vt(*args, ok=(0,)):
    r = subprocess.run([VRAMTRACE] + list(args), capture_output=True, text=True, timeout=120)
    if r.returncode not in ok:
        failures.append("vramtrace %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                       r.stderr.strip()))
    return r


def overview(text):
    """The job block of a text report: from "job:" to the blank line after it."""
    m = re.search(r"^job:.*?(?=^\s*$)", text, re.S | re.M)
    return m.group(0) if m else None


tmp = tempfile.mkdtemp(prefix="vt-summaries-")
r = subprocess.run([sys.executable, os.path.join(HERE, "make_job.py"), "--build", BUILD,
                    "--out", tmp] + (["--preload-first", A.preload_first] if A.preload_first else []),
                   capture_output=True, text=True, timeout=300)
equal("make_job.py exit status (%s)" % r.stderr.strip()[-300:], r.returncode, 0)
traces = os.path.join(tmp, "traces")
summaries = os.path.join(tmp, "summaries")
nodes = {"node-a": (0, 3), "node-b": (1, 2)}  # as make_job.py splits them

workers = {}
for line in open(os.path.join(tmp, "ranks.log")):
    w = dict(kv.split("=", 1) for kv in line.strip().split("\t"))
    workers[int(w["rank"])] = w
equal("ranks started", sorted(workers), [0, 1, 2, 3])
led = Ledger(os.path.join(tmp, "ledger.txt"))

summary = {}
for node in nodes:
    with open(os.path.join(summaries, node + ".summary.json")) as f:
        summary[node] = json.load(f)
for node, doc in summary.items():
    for e in schema_errors(doc, SUMMARY_SCHEMA):
        failures.append("%s's summary: docs/summary.schema.json: %s" % (node, e))
if A.tamper:
    p = summary["node-b"]["jobs"][0]["processes"][0]
    p["devices"][0]["peak_bytes"] += MiB
    with open(os.path.join(summaries, "node-b.summary.json"), "w") as f:
        json.dump(summary["node-b"], f)

# Each summary against the ledger and the worker's sizes.
for node, ranks in nodes.items():
    doc = summary[node]
    equal(node + " version", doc.get("vramtrace_summary"), 1)
    jobs = doc.get("jobs", [])
    equal(node + " jobs", len(jobs), 1)
    procs = {p["rank"]: p for p in jobs[0]["processes"]} if jobs else {}
    equal(node + " ranks", sorted(procs), sorted(ranks))
    for rank, p in procs.items():
        pid = int(workers[rank]["pid"])
        dev = int(workers[rank]["dev"])
        equal("rank %d pid" % rank, p["pid"], pid)
        equal("rank %d devices" % rank, [d["device"] for d in p["devices"]], [dev])
        equal("rank %d peak_bytes (ledger)" % rank, p["devices"][0]["peak_bytes"], led.peak(pid, dev))
        equal("rank %d failed_requests (ledger)" % rank, p["devices"][0]["failed_requests"],
              len(led.failures(pid)))
        equal("rank %d phases (the worker's sizes)" % rank,
              {ph["name"]: ph["peak_bytes"] for ph in p["phases"]},
              {"forward": 256 * MiB * (rank + 1) + 64 * MiB, "optimizer": 288 * MiB * (rank + 1)})
        tl = p.get("timeline") or {}
        equal("rank %d timeline's largest column = its peak" % rank,
              max(tl.get("max_bytes") or [0]), led.peak(pid, dev))
    for f in jobs[0]["failures"] if jobs else []:
        proc = jobs[0]["processes"][f["process"]]
        equal("failure of rank %d requested" % proc["rank"], f["requested_bytes"], 1 << 40)
        equal("failure of rank %d user frame" % proc["rank"], (f.get("user_frame") or "").split(" ")[0],
              "main")

# The job report both ways: the same jobs JSON, the same overview text.
by_traces = vt("report", "--json", traces)
by_summaries = vt("report", "--json", summaries)
doc_t = json.loads(by_traces.stdout or "{}")
doc_s = json.loads(by_summaries.stdout or "{}")
for what, doc in (("traces", doc_t), ("summaries", doc_s)):
    for e in schema_errors(doc):
        failures.append("report --json over the %s: schema: %s" % (what, e))
jt = doc_t.get("jobs")
js = doc_s.get("jobs")
equal("jobs JSON, summaries vs traces", js, jt)
job = (jt or [{}])[0]
first = job.get("first_failure") or {}
equal("first failure's rank (LW_OOM_RANKS=2,0: rank 2 first)", first.get("rank"), 2)
equal("following failures' ranks", [f["rank"] for f in job.get("following_failures", [])], [0])
peaks = sorted(led.peak(int(w["pid"]), int(w["dev"])) for w in workers.values())
equal("device_peaks largest (ledger)", (job.get("device_peaks") or {}).get("largest_bytes"), peaks[-1])
equal("device_peaks smallest (ledger)", (job.get("device_peaks") or {}).get("smallest_bytes"), peaks[0])
equal("timeline's largest column (ledger)",
      max((job.get("timeline") or {}).get("largest_process_bytes") or [0]), peaks[-1])
equal("phase peaks", {p["name"]: (p["processes"], p["largest_bytes"], p["largest_rank"])
                      for p in job.get("phase_peaks", [])},
      {"forward": (4, 256 * MiB * 4 + 64 * MiB, 3), "optimizer": (4, 288 * MiB * 4, 3)})
text_t = overview(vt("report", traces).stdout)
text_s = overview(vt("report", summaries).stdout)
equal("overview text, summaries vs traces", text_s, text_t)
if text_t and "phase peaks across processes" not in text_t:
    failures.append("the overview has no phase peaks:\n" + text_t)
for rank in (0, 3):
    equal("--rank %d jobs JSON, summaries vs traces" % rank,
          json.loads(vt("report", "--json", "--rank", str(rank), summaries).stdout or "{}").get("jobs"),
          json.loads(vt("report", "--json", "--rank", str(rank), traces).stdout or "{}").get("jobs"))
for flag, value in (("--device", "1"), ("--pid", workers[2]["pid"])):
    equal("%s %s jobs JSON, summaries vs traces" % (flag, value),
          json.loads(vt("report", "--json", flag, value, summaries).stdout or "{}").get("jobs"),
          json.loads(vt("report", "--json", flag, value, traces).stdout or "{}").get("jobs"))
by_device = json.loads(vt("report", "--json", "--device", "1", summaries).stdout or "{}").get("jobs")
equal("--device 1: the processes on device 1 only", (by_device or [{}])[0].get("processes"),
      sum(1 for w in workers.values() if w["dev"] == "1"))
r = vt("report", "--rank", "9", summaries, ok=(2,))
if "no rank 9" not in r.stderr or "ranks from 0 to 3" not in r.stderr:
    failures.append("--rank 9 does not say which ranks exist: " + r.stderr)

# A truncated summary: named with the reason, the rest reported, exit 3.
cut = os.path.join(tmp, "cut")
shutil.copytree(summaries, cut)
path = os.path.join(cut, "node-b.summary.json")
data = open(path).read()
open(path, "w").write(data[:len(data) // 2])
r = vt("report", cut, ok=(3,))
if "node-b.summary.json" not in r.stderr:
    failures.append("the truncated summary is not named: " + r.stderr)
if "job: 2 processes, 2 with a rank" not in r.stdout:
    failures.append("the readable summary is not reported:\n" + r.stdout)
# A summary of another resolution: refused by name.
other = os.path.join(tmp, "node-c.summary.json")
vt("report", "--summary", other, "--resolution", "100ms", os.path.join(tmp, "node-a"))
r = vt("report", os.path.join(summaries, "node-b.summary.json"), other, ok=(3,))
if "resolution" not in r.stderr or "node-c.summary.json" not in r.stderr:
    failures.append("mixed resolutions are not named: " + r.stderr)
# Summaries with traces: refused.
vt("report", summaries, traces, ok=(2,))

shutil.rmtree(tmp, ignore_errors=True)
for f in failures:
    print("FAIL:", f)
print("%d checks failed" % len(failures) if failures else "summaries: all checks passed")
sys.exit(1 if failures else 0)
