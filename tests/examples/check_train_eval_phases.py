#!/usr/bin/env python3
"""Example 1 (examples/train_eval_phases.c): the report shows each phase's
peak (train, forward, backward, optimizer, eval) as the ledger and the
example's phase log give it, eval peaking above train, and which stacks made
the eval peak: the key/value cache (grow_kv_cache) holds what the ledger's
live 16 MiB allocations hold at that instant."""
from example_harness import parse_args, run_example, format_bytes

MiB = 1 << 20
args = parse_args()
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/train_eval_phases"], phase_log=True)
led = run.ledger
pid = run.traced_pids()[0] if run.traced_pids() else 0
dev = run.device(pid)
run.equal("device peak_bytes", dev["peak_bytes"], led.peak(pid))
run.equal("final_bytes", dev.get("final_bytes"), led.final(pid))
run.says_row("device 0", format_bytes(led.peak(pid)))

truth = led.phase_peaks(pid, run.phase_log)
got = {p["name"]: p for p in dev["phases"]}
run.equal("phases", sorted(got), sorted(truth))
for name, (peak, _) in truth.items():
    if name in got:
        run.equal("phase %s peak_bytes" % name, got[name]["peak_bytes"], peak)
        run.says_row(name, format_bytes(peak))
        breakdown = got[name].get("peak_breakdown") or []
        run.equal("phase %s breakdown adds up" % name, sum(r["bytes"] for r in breakdown), peak)

if truth["eval"][0] <= truth["train"][0]:
    run.fail("the ledger says eval does not peak above train: the example changed")
if got.get("eval", {}).get("peak_bytes", 0) <= got.get("train", {}).get("peak_bytes", 0):
    run.fail("the report does not show eval peaking above train")

# Which stacks made the eval peak: the key/value cache is every live 16 MiB
# allocation (kv_per_token) at that instant.
eval_peak, at = truth["eval"]
kv = sum(s for s in led.live_sizes_at(at, pid) if s == 16 * MiB)
rows = got.get("eval", {}).get("peak_breakdown") or []
kv_rows = [r for r in rows if any(f.get("function") == "grow_kv_cache" for f in r["frames"])]
run.equal("eval: bytes allocated by grow_kv_cache at the peak", sum(r["bytes"] for r in kv_rows), kv)
if rows and rows[0] not in kv_rows:
    run.fail("eval: the largest stack at the peak is not the key/value cache")
# The tracer's own frames are left out of every stack (docs/user/REPORT.md).
for name, ph in got.items():
    for r in ph.get("peak_breakdown") or []:
        if any((f.get("module") or "").startswith("libvramtrace") for f in r["frames"]):
            run.fail("phase %s: a stack shows the tracer's own frames" % name)
run.finish()
