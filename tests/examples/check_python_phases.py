#!/usr/bin/env python3
"""Example 6 (examples/python_phases.py): a Python program marks phases with
the ctypes snippet of include/vramtrace/vramtrace.h. The report shows the
process, its device peak and each phase's peak as the ledger and the
script's phase log give them."""
import sys

from example_harness import parse_args, run_example, format_bytes

args = parse_args()
# sys.executable: the interpreter itself, not a wrapper script around it
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         sys.executable, "{src}/examples/python_phases.py"], phase_log=True)
led = run.ledger
pids = [p for p in run.traced_pids() if led.peak(p)]
run.equal("processes that allocated", len(pids), 1)
pid = pids[0] if pids else 0
dev = run.device(pid)
run.equal("device peak_bytes", dev["peak_bytes"], led.peak(pid))
truth = led.phase_peaks(pid, run.phase_log)
got = {p["name"]: p for p in dev["phases"]}
run.equal("phases", sorted(got), sorted(truth))
for name, (peak, _) in truth.items():
    if name in got:
        run.equal("phase %s peak_bytes" % name, got[name]["peak_bytes"], peak)
        run.says_row(name, format_bytes(peak))
if truth.get("eval", (0,))[0] <= truth.get("train", (0,))[0]:
    run.fail("the ledger says eval does not peak above train: the example changed")
run.finish()
