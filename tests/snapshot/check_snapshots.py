#!/usr/bin/env python3
"""`vramtrace report SNAPSHOT.pickle --json` on every real snapshot in
tests/data/pytorch-snapshots, against figures computed independently by
snapshot_truth.py (Python's pickle with a find_class that refuses all).

usage: check_snapshots.py VRAMTRACE DIR [DIR...]"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_truth as T  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schema"))
from report_schema import schema_errors  # noqa: E402

VRAMTRACE = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol


def backward(frames):
    return any(f["name"].startswith("torch::autograd::Engine::") for f in frames or [])


def phases(tl, snap, dev):
    """Allocated peak of 'backward' / 'main thread' (at each alloc) and of
    each record_function name (while a range is open, from its start)."""
    out = {}
    alloc = sum(v[0] for v in tl.initial_live.values())
    ann = sorted((a for a in snap.get("external_annotations", []) or []
                  if a.get("device", dev) in (dev, -1) and "time_us" in a),
                 key=lambda a: a["time_us"])
    timed = tl.ev and all("time_us" in e for e in tl.ev)
    if not timed:
        ann = []
    opened, k = {}, 0
    for i in range(len(tl.ev) + 1):
        while k < len(ann) and (i == len(tl.ev) or ann[k]["time_us"] <= tl.ev[i]["time_us"]):
            a = ann[k]
            k += 1
            name = a["name"]
            opened.setdefault(name, 0)
            if a["stage"] == "START":
                opened[name] += 1
                out[name] = max(out.get(name, 0), alloc)
            elif opened[name]:
                opened[name] -= 1
        if i == len(tl.ev):
            break
        e = tl.ev[i]
        if e["action"] == "alloc":
            alloc += e["size"]
            name = "backward" if backward(e.get("frames")) else "main thread"
            out[name] = max(out.get(name, 0), alloc)
            for n, c in opened.items():
                if c:
                    out[n] = max(out.get(n, 0), alloc)
        elif e["action"] == tl.free_action:
            alloc -= e["size"]
    return out


def check_map(label, got, want):
    check(got["free_bytes"] == want["free"], "%s free %d != %d" % (label, got["free_bytes"], want["free"]))
    check(got["largest_free_block_bytes"] == want["largest"],
          "%s largest free %d != %d" % (label, got["largest_free_block_bytes"], want["largest"]))
    check(close(got["fragmentation"], want["fragmentation"], 1e-6),
          "%s fragmentation %f != %f" % (label, got["fragmentation"], want["fragmentation"]))


files = sorted(p for d in sys.argv[2:] for p in glob.glob(os.path.join(d, "*.pickle")))
check(len(files) >= 4, "fixtures found (%d)" % len(files))
for path in files:
    name = os.path.basename(path)
    snap = T.load(path)
    max_split, div = T.settings(snap)
    p = subprocess.run([VRAMTRACE, "report", "--json", "--top", "1000", path],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "%s: exit %d: %s" % (name, p.returncode, p.stderr))
    if p.returncode != 0:
        continue
    doc = json.loads(p.stdout)
    check(doc["vramtrace_report"] == 2 and doc["processes"] == [] and len(doc["snapshots"]) == 1, name + ": one schema")
    errors = schema_errors(doc)
    check(errors == [], name + ": against docs/report.schema.json: %s" % errors)
    rep = doc["snapshots"][0]
    check(rep["segment_count"] == len(snap["segments"]), name + ": segment count")
    got_devs = {d["device"]: d for d in rep["devices"]}
    for dev in T.devices(snap):
        label = "%s dev %d" % (name, dev)
        check(dev in got_devs, label + ": device reported")
        if dev not in got_devs:
            continue
        g = got_devs[dev]
        tl = T.Timeline(snap, dev)
        pk = tl.peaks()
        check(g["trace_entries"] == len(tl.ev), label + ": trace entries")
        check(g["actions"] == pk["counts"], label + ": action counts %s != %s" % (g["actions"], pk["counts"]))
        check(g["inconsistencies"] == 0, label + ": no inconsistencies")
        check(g["initial_allocated_bytes"] == sum(v[0] for v in tl.initial_live.values()),
              label + ": initial allocated")
        check(g["initial_reserved_bytes"] == tl.initial_reserved, label + ": initial reserved")
        check(g["final_allocated_bytes"] == tl.final_allocated, label + ": final allocated")
        check(g["final_reserved_bytes"] == tl.final_reserved, label + ": final reserved")
        for k in ("peak_allocated", "peak_allocated_index", "peak_reserved", "peak_reserved_index"):
            gk = k + ("_bytes" if not k.endswith("index") else "")
            check(g[gk] == pk[k], "%s: %s %d != %d" % (label, k, g[gk], pk[k]))
        # the state at the peak: who is live, and the layout of the segments
        live, segs, reserved = tl.replay(pk["peak_allocated_index"])
        check(g["peak_live_blocks"] == len(live), label + ": live blocks at peak")
        rows = g["peak_breakdown"]
        check(sum(r["bytes"] for r in rows) == pk["peak_allocated"], label + ": breakdown adds up to the peak")
        check(sum(r["count"] for r in rows) == len(live), label + ": breakdown counts add up")
        check(all(rows[i]["bytes"] >= rows[i + 1]["bytes"] for i in range(len(rows) - 1)),
              label + ": breakdown sorted")
        sp = g["segments_at_peak"]
        check(sp["segment_count"] == len(segs), label + ": segments at peak")
        check(sp["reserved_bytes"] == reserved, label + ": reserved at peak")
        check_map(label + " at peak", sp, T.layout(live, segs, max_split, div))
        # at the end the reconstruction must agree with PyTorch's own blocks
        check_map(label + " at end (vs the snapshot's blocks)", g["segments_at_end"],
                  T.real_final_layout(snap, dev))
        want_ph = phases(tl, snap, dev)
        got_ph = {ph["name"]: ph["peak_bytes"] for ph in g["phases"]}
        check(got_ph == want_ph, "%s: phases %s != %s" % (label, got_ph, want_ph))
        check(len(g["ooms"]) == pk["counts"].get("oom", 0), label + ": every oom diagnosed")
    # the text report says the same peak
    t = subprocess.run([VRAMTRACE, "report", path], capture_output=True, text=True, timeout=60)
    check(t.returncode == 0 and "allocated peak" in t.stdout and "largest free block" in t.stdout,
          name + ": text report")
    print("checked", name)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("all snapshot figures agree")
