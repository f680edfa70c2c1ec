#!/usr/bin/env python3
"""`vramtrace simulate`, end to end.

1. Golden check on every real snapshot: replaying its alloc/free stream
   through the allocator model with the snapshot's own allocator settings
   must reproduce its recorded segment behaviour. The truth (reserved peak,
   segment_alloc/segment_free counts, segments at the end) is computed
   here independently from the snapshot's segment events
   (../snapshot/snapshot_truth.py); tolerance: reserved
   peak within 2%; segment counts within 5%.
2. What-if runs: capacities below the live peak fail; the smallest capacity
   found runs and 2 MiB less does not.
3. A tensor-level vramtrace trace, worked by hand (make_sim_trace.c).
4. Which allocation each free of a trace ends (make_sim_trace --frees): the
   allocated bytes after every event of the stream, worked by hand, and the
   peak `report --json` gives for the same trace.
5. Bad usage exits 2.

usage: check_simulate.py VRAMTRACE MAKE_SIM_TRACE DIR [DIR...]"""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "snapshot"))
import oom_snapshot  # noqa: E402
import snapshot_truth as T  # noqa: E402

VRAMTRACE, MAKE_TRACE = sys.argv[1], sys.argv[2]
MiB = 1 << 20
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def simulate(*args):
    p = subprocess.run([VRAMTRACE, "simulate", *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def within(model, truth, pct, slack=0):
    return abs(model - truth) <= max(truth * pct / 100.0, slack)


files = sorted(p for d in sys.argv[3:] for p in glob.glob(os.path.join(d, "*.pickle")))
check(len(files) >= 4, "fixtures found")
for path in files:
    name = os.path.basename(path)
    snap = T.load(path)
    dev = next(d for d in T.devices(snap) if T.Timeline(snap, d).ev)
    tl = T.Timeline(snap, dev)
    pk = tl.peaks()
    rc, out, err = simulate("--json", "--samples", "0", path)
    check(rc == 0, "%s: exit 0 (%s)" % (name, err))
    if rc:
        continue
    j = json.loads(out)
    rec, run = j["recorded"], j["runs"][0]
    seg_allocs = pk["counts"].get("segment_alloc", 0)
    seg_frees = pk["counts"].get("segment_free", 0)
    check(rec["peak_reserved_bytes"] == pk["peak_reserved"], name + ": recorded reserved peak")
    check(rec["segment_allocs"] == seg_allocs and rec["segment_frees"] == seg_frees,
          name + ": recorded segment events")
    check(rec["final_segments"] == tl.final_segments, name + ": recorded final segments")
    check(j["allocations"] == pk["counts"].get("alloc", 0), name + ": every alloc replayed")
    check(run["verdict"] == "ok", name + ": unlimited run succeeds")
    check(run["unmatched_frees"] == 0 and run["seed_failures"] == 0, name + ": stream consistent")
    check(within(run["peak_reserved_bytes"], pk["peak_reserved"], 2.0),
          "%s: reserved peak %d vs recorded %d (2%%)" % (name, run["peak_reserved_bytes"], pk["peak_reserved"]))
    check(within(run["cuda_mallocs"], seg_allocs, 5.0, 2),
          "%s: cudaMalloc %d vs segment_alloc %d" % (name, run["cuda_mallocs"], seg_allocs))
    check(within(run["cuda_frees"], seg_frees, 5.0, 2),
          "%s: cudaFree %d vs segment_free %d" % (name, run["cuda_frees"], seg_frees))
    check(within(run["final_segments"], tl.final_segments, 5.0, 2),
          "%s: segments at end %d vs %d" % (name, run["final_segments"], tl.final_segments))
    check(run["peak_allocated_bytes"] == pk["peak_allocated"], name + ": allocated peak")
    check(run["placements_matching"] >= 0.99 * pk["counts"].get("alloc", 0),
          "%s: allocations placed where PyTorch put them: %d of %d"
          % (name, run["placements_matching"], pk["counts"].get("alloc", 0)))
    sizes = [e["size"] for e in tl.ev if e["action"] == "segment_alloc"]
    check(run["segment_sizes_matching"] >= 0.95 * len(sizes),
          "%s: segment sizes in order %d of %d" % (name, run["segment_sizes_matching"], len(sizes)))
    print("%s: reserved peak model %d recorded %d; cudaMalloc %d/%d; cudaFree %d/%d"
          % (name, run["peak_reserved_bytes"], pk["peak_reserved"], run["cuda_mallocs"], seg_allocs,
             run["cuda_frees"], seg_frees))

# What-if on the smallest fixture: half the live peak cannot work; the
# searched capacity works and 2 MiB less does not.
small = min(files, key=os.path.getsize)
snap = T.load(small)
pk = T.Timeline(snap, 0).peaks()
half = pk["peak_allocated"] // 2
rc, out, err = simulate("--json", "--samples", "0", "-m", "-c", str(half), "-a", "recorded",
                        "-a", "pytorch:max_split_size_mb:20", small)
check(rc == 0, "what-if exit 0 (%s)" % err)
if rc == 0:
    runs = json.loads(out)["runs"]
    check(len(runs) == 2, "two runs side by side")
    for r in runs:
        check(r["verdict"] in ("exhausted", "fragmented", "start_too_big"), "half capacity fails: " + r["verdict"])
        check(r["failure"] is not None, "failure described")
    mc = runs[0]["min_capacity_bytes"]
    check(mc is not None and mc >= pk["peak_allocated"], "min capacity >= live peak")
    rc, out, err = simulate("--json", "--samples", "0", "-c", str(mc), "-c", str(mc - 2 * MiB), small)
    r_ok, r_less = json.loads(out)["runs"]
    check(r_ok["verdict"] == "ok", "runs at the minimum capacity")
    check(r_less["verdict"] != "ok", "fails 2 MiB below it")

# A tensor-level trace, by hand: 4 x 5 MiB fill one 20 MiB segment; freeing
# the 2nd and 4th leaves two 5 MiB holes (10 MiB free). 8 MiB on a 20 MiB
# device: no new segment fits, the flush finds no whole segment -> fails,
# fragmented, largest free block 5 MiB. On 40 MiB it runs: a second 20 MiB
# segment, reserved peak 40 MiB; allocated peak 20 MiB (the four, before the frees).
with tempfile.TemporaryDirectory() as d:
    trace = os.path.join(d, "tensors.vtrace")
    subprocess.run([MAKE_TRACE, trace], check=True)
    rc, out, err = simulate("--json", "-c", "20MiB", "-c", "40MiB", trace)
    check(rc == 0, "trace input: exit 0 (%s)" % err)
    if rc == 0:
        j = json.loads(out)
        check(j["kind"] == "trace" and j["allocations"] == 5 and j["frees"] == 2, "trace stream")
        f20, f40 = j["runs"]
        check(f20["verdict"] == "fragmented", "20 MiB: fragmented (%s)" % f20["verdict"])
        fail = f20["failure"] or {}
        check(fail.get("largest_free_block_bytes") == 5 * MiB, "20 MiB: largest free 5 MiB")
        check(fail.get("free_cached_bytes") == 10 * MiB, "20 MiB: 10 MiB free in cache")
        check(fail.get("requested_bytes") == 8 * MiB and fail.get("segment_bytes") == 20 * MiB,
              "20 MiB: request and segment")
        check(f40["verdict"] == "ok" and f40["peak_reserved_bytes"] == 40 * MiB, "40 MiB: runs, reserved 40 MiB")
        check(f40["peak_allocated_bytes"] == 20 * MiB, "40 MiB: allocated peak 20 MiB")
    rc, out, err = simulate("-c", "20MiB", trace)
    check(rc == 0 and "fragmented" in out and "largest free block 5.00 MiB" in out, "trace text output")

# Frees in a driver-level trace end the allocation they name whatever
# device they carry (-1 for cuMemFree), a retained or mapped VMM handle ends
# with its last reference, graph memory freed as plain device memory ends,
# failed calls change nothing (make_sim_trace.c, free_rules: the allocated
# bytes after each of device 0's 10 events). The peaks are the report's.
with tempfile.TemporaryDirectory() as d:
    trace = os.path.join(d, "frees.vtrace")
    subprocess.run([MAKE_TRACE, "--frees", trace], check=True)
    rep = subprocess.run([VRAMTRACE, "report", "--json", trace], capture_output=True, text=True,
                         timeout=60)
    check(rep.returncode == 0, "frees: report exits 0 (%s)" % rep.stderr)
    peaks = {d["device"]: d["peak_bytes"] for p in json.loads(rep.stdout or "{}").get("processes", [])
             for d in p["devices"] if d["kind"] == "device"}
    check(peaks == {0: 16 * MiB, 1: 5 * MiB}, "frees: the report's peaks %s" % peaks)
    for dev, want in ((0, (5, 5, 16, [10, 0, 4, 16, 12, 14, 12, 0, 3, 0])), (1, (1, 1, 5, [5, 0]))):
        rc, out, err = simulate("--json", "--samples", "200", "-d", str(dev), trace)
        check(rc == 0, "frees: device %d: exit 0 (%s)" % (dev, err))
        if rc == 0:
            j = json.loads(out)
            r = j["runs"][0]
            got = (j["allocations"], j["frees"], r["peak_allocated_bytes"] // MiB,
                   [s[1] // MiB for s in r["timeline"]])
            check(got == want, "frees: device %d: allocations, frees, allocated peak and after each "
                  "event (MiB) %s, expected %s" % (dev, got, want))
            check(r["peak_allocated_bytes"] == peaks.get(dev), "frees: device %d: the report's peak" % dev)
            check(r["unmatched_frees"] == 0, "frees: device %d: every free matched" % dev)

# The request that failed when recorded (a snapshot's oom entry) is tried
# in every run: PyTorch's fragmented OOM (../snapshot/oom_snapshot.py: 8 MiB
# live in a 20 MiB segment, 16 MiB asked with 4 MiB free on the device) -
# fails again under the recorded settings on that device (24 MiB), and is
# served on a larger one.
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "oom.pickle")
    oom_snapshot.write(path)
    rc, out, err = simulate("--json", "--samples", "0", "-c", str(24 * MiB), "-c", str(64 * MiB),
                            path)
    check(rc == 0, "failed request: exit 0 (%s)" % err)
    if rc == 0:
        j = json.loads(out)
        check(j["failed_requests"] == 1, "failed request: counted (%s)" % j["failed_requests"])
        runs = {(r["allocator"], r["capacity_bytes"]): r for r in j["runs"]}
        rec24 = runs.get(("recorded", 24 * MiB), {})
        check(rec24.get("verdict") == "fragmented" and rec24.get("failure", {}).get(
            "requested_bytes") == 16 * MiB, "failed request: fails again as recorded on 24 MiB "
              "(%s)" % rec24.get("verdict"))
        rec64 = runs.get(("recorded", 64 * MiB), {})
        check(rec64.get("verdict") == "ok" and rec64.get("failed_requests_served") == 1 and
              rec64.get("peak_allocated_bytes") == 24 * MiB,
              "failed request: served on 64 MiB, counted in the peak while held (%s)" %
              rec64.get("peak_allocated_bytes"))

# Bad usage.
for args, word in ((["-c", "lots", files[0]], "capacity"),
                   (["-a", "pytorch:max_split_size_mb:10", files[0]], "max_split_size_mb"),
                   (["-a", "tcmalloc", files[0]], "pytorch"),
                   ([], "no input"),
                   (["/nonexistent.pickle"], "nonexistent")):
    rc, out, err = simulate(*args)
    check(rc == 2 and word in err, "bad usage %s: exit 2 mentioning %s (%r)" % (args, word, err))

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("simulate: ok")
