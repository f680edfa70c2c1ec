"""`vramtrace simulate` on every example's traces (docs/user/SNAPSHOTS.md,
"vramtrace trace"): the recorded run replays the trace's device allocations
and the frees that end them, so its allocated peak must be the device's
peak as `report --json` gives it and as the simulated driver's ledger gives
it, and it must count the frees the ledger shows.

Called by example_harness.Run.finish: every example check runs it on the
traces its example wrote (processes the example does not trace, such as
example 2's other GPU holders, have no trace to simulate)."""
import json
import subprocess


def check_simulate(run):
    """Every device on which the ledger shows a traced process allocating."""
    for p in run.report["processes"]:
        pid = p["pid"]
        for dev in sorted(k[1] for k in run.ledger.peaks if k[0] == pid and k[2] == "device"):
            d = run.device(pid, dev)
            what = "simulate pid %d device %d: " % (pid, dev)
            sim = subprocess.run([run.vramtrace, "simulate", "--json", "--samples", "0",
                                  "--device", str(dev), p["file"]],
                                 env=run.env, capture_output=True, text=True, timeout=60)
            if sim.returncode != 0:
                run.fail(what + "exited %d: %s" % (sim.returncode, sim.stderr.strip()))
                continue
            out = json.loads(sim.stdout)
            recorded = out["runs"][0]
            checks = [  # (figure, simulate's, the truth's, whose truth)
                ("the run", [recorded["allocator"], recorded["verdict"]], ["recorded", "ok"],
                 "the default unlimited run"),
                ("peak_allocated_bytes", recorded["peak_allocated_bytes"], d["peak_bytes"],
                 "report --json"),
                ("peak_allocated_bytes", recorded["peak_allocated_bytes"],
                 run.ledger.peak(pid, dev), "the ledger"),
                ("frees", out["frees"], run.ledger.free_count(pid, dev), "the ledger"),
                ("allocations", out["allocations"], run.ledger.alloc_count(pid, dev), "the ledger"),
                ("unmatched_frees", recorded["unmatched_frees"], 0, "every free matched"),
            ]
            for figure, got, want, source in checks:
                if got != want:
                    run.fail("%s%s: simulate says %r, %s says %r" % (what, figure, got, source, want))
