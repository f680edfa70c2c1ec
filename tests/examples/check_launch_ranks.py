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
# A rank that fails in its train step (14 GiB GPUs: the model states of two
# ranks, 12 GiB and their contexts, fit; their activations do not) stops
# the others, as torchrun's agent does: the launcher ends with that rank's
# status instead of hanging at the next barrier; every rank's trace is
# whole (the ones stopped by SIGTERM flush their last interval), and the job
# report names a rank that failed first.
bad = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/launch_ranks", "4"],
                  env={"VTSIM_MEMORY": "14GiB"}, expect_status=1)
m = re.search(r"launch_ranks: rank (\d+) failed \((\d+)\); stopping the others", bad.proc.stderr)
if not m:
    run.fail("the launcher did not say which rank failed: " + bad.proc.stderr[-300:])
else:
    franks = {int(x.group(2)): int(x.group(1))
              for x in re.finditer(r"launch_ranks: rank (\d+) pid (\d+)", bad.proc.stdout)}
    fpid = next(p for p, r in franks.items() if r == int(m.group(1)))
    run.equal("the failed rank's failures (ledger)", len(bad.ledger.failures(fpid)) > 0, True)
    job = (bad.report.get("jobs") or [{}])[0]
    first = job.get("first_failure") or {}
    # The first failure in time may be another rank's whose exit came later.
    failed_pids = {p for p in franks if bad.ledger.failures(p)}
    run.equal("first failure is a rank that failed (ledger)", first.get("pid") in failed_pids, True)
    run.equal("first failure's rank", first.get("rank"), franks.get(first.get("pid")))
run.finish()
