#!/usr/bin/env python3
"""`vramtrace report --html` at the command line, without a browser: a page
is written whole (through a temporary name: nothing else is left in its
directory), replaces an old one, and forbids requests; an unwritable path
or --html with --json fails with status 2 and writes nothing. A page of
summaries whose timelines are longer than a page draws keeps each
column's largest value (and the failure in its column). The
snapshot's allocated and reserved series in the page are checked against
a replay of its trace by Python's own pickle: every point is the state
after some entry, every column's maxima are there, and the maxima are the
report's peaks. With --no-charts (a build with -Dhtml=disabled) --html
must fail saying where the same figures are (report --json).

    check_html_cli.py VRAMTRACE SNAPSHOT [--no-charts]
"""
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from ledger_truth import format_bytes  # noqa: E402

vramtrace, snapshot = sys.argv[1], sys.argv[2]
no_charts = "--no-charts" in sys.argv
failures = []


def report(*args):
    return subprocess.run([vramtrace, "report", *args], capture_output=True, text=True, timeout=120)


def check_snapshot_series(html):
    """The page's series of device 0 against Python's replay of the trace."""
    m = re.search(r'id="vt-timeline">(.*?)</script>', html, re.S)
    tl = json.loads(m.group(1)) if m else {}
    sd = next((d for s in tl.get("snapshots", []) for d in s["devices"] if d["device"] == 0), None)
    r = report("--json", snapshot)
    dev = json.loads(r.stdout)["snapshots"][0]["devices"][0]
    if sd is None:
        failures.append("the page has no snapshot series")
        return
    with open(snapshot, "rb") as f:
        trace = pickle.load(f)["device_traces"][0]
    times = [e.get("time_us") for e in trace]
    timed = all(t is not None and t >= 0 for t in times) and times == sorted(times)
    free = "free_completed" if any(e["action"] == "free_completed" for e in trace) else "free_requested"
    a, res = dev["initial_allocated_bytes"], dev["initial_reserved_bytes"]
    x0 = times[0] if timed else 0
    states = [(0, a, res)]  # x since x0, allocated, reserved: after each entry
    for i, e in enumerate(trace):
        size = e.get("size", 0)
        if e["action"] == "alloc":
            a += size
        elif e["action"] == free:
            a = max(0, a - size)
        elif e["action"] in ("segment_alloc", "segment_map"):
            res += size
        elif e["action"] in ("segment_free", "segment_unmap"):
            res = max(0, res - size)
        states.append(((times[i] - x0) if timed else i + 1, a, res))
    points = list(zip(sd["x"], sd["allocated"], sd["reserved"]))
    if sd["axis"] != ("time_us" if timed else "entry") or sd["x0"] != x0:
        failures.append("snapshot series axis %s x0 %s" % (sd["axis"], sd["x0"]))
    known = set(states)
    stray = [p for p in points if p not in known]
    if stray:
        failures.append("snapshot series: %d points are no state of the trace, first %s" % (len(stray), stray[0]))
    if len(points) > 4 * tl["buckets"] + 8 or sd["x"] != sorted(sd["x"]):
        failures.append("snapshot series: %d points, sorted %s" % (len(points), sd["x"] == sorted(sd["x"])))
    # every column's maxima, at their first instant, are points
    cols = {}
    for x, a, res in states[1:]:
        c = cols.setdefault(x // sd["column_width"], [None, None])
        if c[0] is None or a > c[0][1]:
            c[0] = (x, a, res)
        if c[1] is None or res > c[1][2]:
            c[1] = (x, a, res)
    missing = [m for c in cols.values() for m in c if m not in set(points)]
    if missing:
        failures.append("snapshot series: %d column maxima missing, first %s" % (len(missing), missing[0]))
    if max(sd["allocated"]) != dev["peak_allocated_bytes"] or max(sd["reserved"]) != dev["peak_reserved_bytes"]:
        failures.append("snapshot series maxima %d, %d; report's peaks %d, %d" % (
            max(sd["allocated"]), max(sd["reserved"]), dev["peak_allocated_bytes"], dev["peak_reserved_bytes"]))


def check_long_summary(tmp):
    """A page of summaries whose timelines are longer than a page draws:
    each column of the page's job block is the largest of `merge` columns
    of the timeline, counted from the job's first; a failure is marked in
    the page's column of its time."""
    import random
    rnd = random.Random(7)
    res, first = 1000000, 1000
    procs = []
    for r in range(3):
        n = 3000 - 7 * r
        tl = [rnd.randrange(1 << 30) for _ in range(n)]
        procs.append({"pid": 100 + r, "rank": r, "local_rank": r, "world_size": 3, "host": "h%d" % (r // 2),
                      "command": "x", "devices": [{"device": 0, "gpu_uuid": "%032x" % (r + 1), "gpu_name": "G",
                                                   "capacity_bytes": 1 << 34, "peak_bytes": max(tl),
                                                   "failed_requests": int(r == 1)}],
                      "phases": [], "timeline": {"first_column": first + 5 * r, "max_bytes": tl}})
    fail_col = first + 5 + 1500  # rank 1's timeline column 1500
    failure = {"process": 1, "device": 0, "gpu_uuid": "%032x" % 2, "time_ns": 10, "since_start_ns": 10,
               "wall_ns": fail_col * res + 5, "api": "cudaMalloc", "requested_bytes": 1 << 40,
               "verdict": "larger_than_device", "user_frame": None, "frames": []}
    doc = {"vramtrace_summary": 1, "resolution_ns": res,
           "jobs": [{"session": "s", "session_start_unix_ns": None, "session_host": None,
                     "session_command": None, "processes": procs, "failures": [failure]}]}
    path = os.path.join(tmp, "long.summary.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    page = os.path.join(tmp, "long.html")
    r = report("--html", page, path)
    if no_charts:
        if r.returncode != 2 or "report --json" not in r.stderr:
            failures.append("summaries without chart libraries: status %d, stderr %r" % (r.returncode, r.stderr))
        return
    if r.returncode != 0:
        failures.append("--html over a summary exited %d: %s" % (r.returncode, r.stderr))
        return
    html = open(page, encoding="utf-8").read()
    m = re.search(r'id="vt-job">(.*?)</script>', html, re.S)
    job = json.loads(m.group(1))["jobs"][0] if m else {}
    ncols = max(p["timeline"]["first_column"] + len(p["timeline"]["max_bytes"]) for p in procs) - first
    merge = -(-ncols // 1200)
    if job.get("merge") != merge or job.get("columns") != -(-ncols // merge) or job["columns"] > 1200:
        failures.append("long summary: merge %r, columns %r; want %d, %d" % (
            job.get("merge"), job.get("columns"), merge, -(-ncols // merge)))
        return
    for r, (p, row) in enumerate(zip(procs, job["rows"])):
        tl, off = p["timeline"]["max_bytes"], p["timeline"]["first_column"] - first
        want = {}
        for k, v in enumerate(tl):
            c = (off + k) // merge
            want[c] = max(want.get(c, 0), v)
        got = {row["first"] + k: v for k, v in enumerate(row["bytes"])}
        if got != want:
            failures.append("long summary: rank %d's columns are not the largest of each %d" % (r, merge))
    marks = job.get("marks", [])
    if [(m["row"], m["column"]) for m in marks] != [(1, (fail_col - first) // merge)]:
        failures.append("long summary: marks %r, want rank 1's row in column %d" % (marks, (fail_col - first) // merge))
    rj = report("--json", path)
    largest = json.loads(rj.stdout)["jobs"][0]["device_peaks"]["largest_bytes"] if rj.returncode == 0 else None
    if max(v for row in job["rows"] for v in row["bytes"]) != largest:
        failures.append("long summary: the page's largest cell is not the job's largest peak %r" % largest)


with tempfile.TemporaryDirectory(prefix="vt-html-cli-long-") as tmp:
    check_long_summary(tmp)
with tempfile.TemporaryDirectory(prefix="vt-html-cli-") as tmp:
    page = os.path.join(tmp, "report.html")
    r = report("--html", page, snapshot)
    if no_charts:
        if r.returncode != 2 or "report --json" not in r.stderr or os.path.exists(page):
            failures.append("without chart libraries: status %d, stderr %r" % (r.returncode, r.stderr))
    else:
        if r.returncode != 0:
            failures.append("--html exited %d: %s" % (r.returncode, r.stderr))
        elif r.stderr != "vramtrace report: wrote %s (%s); open it in a browser\n" % (
                page, format_bytes(os.path.getsize(page))) or r.stdout:
            failures.append("--html does not say where it wrote (one line on stderr): %r, "
                            "stdout %r" % (r.stderr, r.stdout[:80]))
        elif os.listdir(tmp) != ["report.html"]:
            failures.append("left beside the page: %s" % os.listdir(tmp))
        else:
            html = open(page, encoding="utf-8").read()
            for want in ("<!DOCTYPE html>", "default-src 'none'", 'id="vt-report"',
                         'id="vt-timeline"', "uPlot", "flamegraph", "</html>"):
                if want not in html:
                    failures.append("the page lacks %r" % want)
            check_snapshot_series(html)
            # an older page is replaced whole
            with open(page, "w") as f:
                f.write("old")
            r = report("--html", page, snapshot)
            if r.returncode != 0 or open(page).read(15) != "<!DOCTYPE html>":
                failures.append("an existing page was not replaced (status %d)" % r.returncode)
    bad = os.path.join(tmp, "no-such-dir", "report.html")
    r = report("--html", bad, snapshot)
    if r.returncode != 2 or not r.stderr.strip() or os.path.exists(os.path.dirname(bad)):
        failures.append("unwritable path: status %d, stderr %r" % (r.returncode, r.stderr))
    elif not no_charts and "no-such-dir" not in r.stderr:
        failures.append("unwritable path not named: %r" % r.stderr)
    r = report("--html", page, "--json", snapshot)
    if r.returncode != 2 or "choose one" not in r.stderr:
        failures.append("--html with --json: status %d, stderr %r" % (r.returncode, r.stderr))

for f in failures:
    print("FAIL: " + f)
print("%d passed, %d failed" % (0 if failures else 1, len(failures)))
sys.exit(1 if failures else 0)
