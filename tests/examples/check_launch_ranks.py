#!/usr/bin/env python3
"""Example 5 (examples/launch_ranks.c): four ranks started with fork + exec
on two simulated GPUs, two ranks per GPU. The report's per-rank table (each
rank's device peak, as the ledger gives it for that rank's pid), the
imbalance line (largest, smallest, mean, spread) and each GPU's combined
peak with what each rank held then (the ledger replayed across processes)."""
import re

from example_harness import parse_args, run_example, format_bytes

args = parse_args()
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/launch_ranks", "4"])
led = run.ledger
# Which pid is which rank: what the launcher started (its own output).
ranks = {int(m.group(2)): int(m.group(1))
         for m in re.finditer(r"launch_ranks: rank (\d+) pid (\d+)", run.proc.stdout)}
run.equal("ranks started", sorted(ranks.values()), [0, 1, 2, 3])
peaks = {}
for pid, rank in ranks.items():
    p = run.process(pid)
    run.equal("pid %d rank" % pid, p.get("rank"), rank)
    devs = [d for d in p.get("devices", []) if d["kind"] == "device"]
    run.equal("rank %d devices" % rank, [d["device"] for d in devs], [rank % 2])
    peaks[pid] = led.peak(pid, rank % 2)
    if devs:
        run.equal("rank %d peak_bytes" % rank, devs[0]["peak_bytes"], peaks[pid])
    # pid, rank, local rank (LOCAL_RANK: the same on one node)
    run.says_row(str(pid), str(rank), str(rank), "device %d" % (rank % 2), format_bytes(peaks[pid]))

if len(set(peaks.values())) < 2:
    run.fail("the ledger shows no imbalance: the example changed")
# Imbalance over the processes that hold device memory (the launcher holds none).
vals = sorted(peaks.values())
big = max(peaks, key=peaks.get)
small = min(peaks, key=peaks.get)
holders = [p for p in run.report["processes"] if any(d["kind"] == "device" for d in p["devices"])]
run.equal("processes with device memory", sorted(p["pid"] for p in holders), sorted(ranks))
run.says("largest device peak %s (pid %d), smallest %s (pid %d), mean %s; spread %.1f%% of the largest" % (
    format_bytes(vals[-1]), big, format_bytes(vals[0]), small,
    format_bytes(sum(vals) // len(vals)), 100.0 * (vals[-1] - vals[0]) / vals[-1]))

# Each GPU: the two ranks on it, combined on one timeline.
for dev in (0, 1):
    pids = [p for p, r in ranks.items() if r % 2 == dev]
    peak, held = led.combined_peak(dev, pids)
    gpus = [g for g in run.report.get("gpus", [])
            if sorted(x["pid"] for x in g["processes"]) == sorted(pids)]
    run.equal("GPU %d found once in the report" % dev, len(gpus), 1)
    if gpus:
        run.equal("GPU %d combined peak_bytes" % dev, gpus[0]["peak_bytes"], peak)
        run.equal("GPU %d bytes each rank held at the combined peak" % dev,
                  {x["pid"]: x["bytes_at_peak"] for x in gpus[0]["processes"]}, held)
        run.says("combined peak %s" % format_bytes(peak))
run.finish()
