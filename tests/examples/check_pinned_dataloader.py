#!/usr/bin/env python3
"""Example 4 (examples/pinned_dataloader.c): the report shows the pinned
host ledger beside the device one: both peaks as the ledger gives them
(cudaHostAlloc lines for pinned memory), the pinned peak made by the loader
thread's pin_batch, and the device half used."""
from example_harness import parse_args, run_example, format_bytes

args = parse_args()
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/pinned_dataloader"])
led = run.ledger
pid = run.traced_pids()[0] if run.traced_pids() else 0
dev = run.device(pid)
host = run.device(pid, dev=None, kind="host_pinned")  # pinned memory has no device
run.equal("device peak_bytes", dev["peak_bytes"], led.peak(pid))
run.equal("pinned host peak_bytes", host["peak_bytes"], led.peak(pid, -1, "host_pinned"))
run.equal("pinned host final_bytes", host.get("final_bytes"), led.final(pid, -1, "host_pinned"))
if led.peak(pid, -1, "host_pinned") == 0:
    run.fail("the ledger has no pinned host memory: the example changed")
run.says_row("device 0", format_bytes(led.peak(pid)))
run.says_row("pinned host", format_bytes(led.peak(pid, -1, "host_pinned")))
rows = host.get("peak_breakdown") or []
if not rows or rows[0].get("thread") != "pin_memory" or \
        not any(f.get("function") == "pin_batch" for f in rows[0]["frames"]):
    run.fail("the pinned peak is not attributed to pin_batch on the pin_memory thread")
# "half used": the device peak is below the capacity, well above nothing
total = dev.get("total_bytes") or 0
if not 0.4 * total < led.peak(pid) < 0.7 * total:
    run.fail("the ledger's device peak is not about half the device")
run.finish()
