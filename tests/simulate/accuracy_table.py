#!/usr/bin/env python3
"""Prints docs/internals/ACCURACY.md's table: each snapshot replayed through the
allocator model with its own settings (unlimited capacity), against the
snapshot's recorded segment events. Truth from snapshot_truth.py.

usage: accuracy_table.py VRAMTRACE DIR [DIR...]"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "snapshot"))
import snapshot_truth as T  # noqa: E402

GiB = float(1 << 30)
print("| file | allocs | recorded reserved peak | model | deviation | segment_alloc recorded / model"
      " (same size, same position) | segment_free recorded / model | segments at end recorded / model"
      " | allocs placed exactly | same, model's own segment addresses: placed exactly / reserved peak deviation |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for path in sorted(p for d in sys.argv[2:] for p in glob.glob(os.path.join(d, "*.pickle"))):
    snap = T.load(path)
    dev = next(d for d in T.devices(snap) if T.Timeline(snap, d).ev)
    tl = T.Timeline(snap, dev)
    pk = tl.peaks()
    out = subprocess.run([sys.argv[1], "simulate", "--json", "--samples", "0", path],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out)["runs"][0]
    out2 = subprocess.run([sys.argv[1], "simulate", "--json", "--samples", "0", "--model-addresses", path],
                          capture_output=True, text=True, check=True).stdout
    r2 = json.loads(out2)["runs"][0]
    truth = pk["peak_reserved"]
    dev_pct = 100.0 * (r["peak_reserved_bytes"] - truth) / truth if truth else 0.0
    dev2 = 100.0 * (r2["peak_reserved_bytes"] - truth) / truth if truth else 0.0
    print("| %s | %d | %.3f GiB | %.3f GiB | %+.2f%% | %d / %d (%d) | %d / %d | %d / %d | %d | %d / %+.2f%% |" % (
        os.path.basename(path), pk["counts"].get("alloc", 0), truth / GiB, r["peak_reserved_bytes"] / GiB,
        dev_pct, pk["counts"].get("segment_alloc", 0), r["cuda_mallocs"], r["segment_sizes_matching"],
        pk["counts"].get("segment_free", 0), r["cuda_frees"], tl.final_segments, r["final_segments"],
        r["placements_matching"], r2["placements_matching"], dev2))
