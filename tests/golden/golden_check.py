#!/usr/bin/env python3
"""Golden end-to-end tests: run small clients under libvramtrace.so on the
simulated GPU, then compare `vramtrace report --json` with figures computed
independently from the simulated driver's ledger (golden_lib.py).

    golden_check.py --vramtrace BIN --lib LIBVRAMTRACE --simdir DIR --bindir DIR
                    [--preload-first PATHS] SCENARIO

Scenarios 1-3 are below, the others in golden_more.py."""
import argparse
import os
import sys

from golden_lib import (Harness, client_pid, expect, expect_eq, expect_time_of, floor_to_unit,
                        innermost_function, peak_of, pid_entries, report_ledger, report_process,
                        run_check, running)
import golden_more

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from ledger_truth import verdict_rule  # noqa: E402


def scenario_peak_stacks(h):
    """Scenario 1: the peak, when, and which three stacks held it."""
    out = h.run([h.client("gold_peak_stacks")]).stdout
    notes = [l.split() for l in out.splitlines() if l.startswith("alloc ")]
    entries = h.ledger_entries()
    pid = client_pid(entries)
    mine = pid_entries(entries, pid)
    allocs = [e for e in mine if e["op"] == "alloc" and e["result"] == 0]
    expect(len(allocs) == len(notes), "%d allocations in the ledger, the client noted %d"
           % (len(allocs), len(notes)))
    site_of = {}
    for e, (_, function, addr) in zip(allocs, notes):
        expect(e["addr"] == int(addr, 16), "ledger line %d is not the client's %s" % (e["line"], addr))
        site_of[e["line"]] = function

    peak_entry, peak = peak_of(running(entries, {pid}))
    live = {}
    for e in mine:
        if e["line"] > peak_entry["line"]:
            break
        if e["op"] == "alloc" and e["result"] == 0:
            live[e["addr"]] = (site_of[e["line"]], e["size"])
        elif e["op"] == "free" and e["result"] == 0:
            del live[e["addr"]]
    want = {}
    for function, size in live.values():
        row = want.setdefault(function, [0, 0])
        row[0] += size
        row[1] += 1
    expect(len(want) == 3 and sum(r[0] for r in want.values()) == peak,
           "scenario broken: the ledger's peak is not three sites: %s" % want)

    proc = report_process(h.report(h.traces()), pid)
    dev = report_ledger(proc)
    expect_eq(dev["peak_bytes"], peak, "peak_bytes")
    expect_time_of(dev["peak_time_ns"], entries, peak_entry, "peak_time_ns", proc["time_unit_ns"])
    expect_eq(dev["peak_count"], len(live), "peak_count")
    got = {}
    for row in dev["peak_breakdown"]:
        function = innermost_function(row["frames"])
        expect(function not in got, "two breakdown rows for %s" % function)
        got[function] = [row["bytes"], row["count"]]
    expect_eq(got, want, "peak_breakdown {function: [bytes, count]}")
    for row in dev["peak_breakdown"]:
        expect(row["frames"][1]["function"] == "main",
               "%s is not called from main: %s" % (row["frames"][0]["function"], row["frames"][:3]))
    return "peak %d bytes at ledger line %d, 3 sites" % (peak, peak_entry["line"])


def check_oom(h, out, verdict):
    """The failure of gold_oom against the ledger; `verdict` is what the
    scenario was built for (also derived from the ledger by the documented
    rule, so a scenario that does not produce it fails)."""
    entries = h.ledger_entries()
    failed = [e for e in entries if e["op"] == "alloc" and e["result"] != 0]
    expect(len(failed) == 1, "expected one failed allocation in the ledger, found %d" % len(failed))
    failed = failed[0]
    pid = failed["pid"]
    after = [e for e in pid_entries(entries, pid) if e["line"] > failed["line"]]
    expect(after and after[0]["op"] == "getinfo",
           "the tracer did not ask cuMemGetInfo right after the failure")
    info = after[0]
    series = running(entries, {pid}, upto=failed["line"])
    held = series[-1][1] if series else 0
    used = info["total"] - info["free"]
    outside = used - held
    rule = verdict_rule(failed["size"], info["free"], info["total"], held)
    expect(rule == verdict, "scenario broken: the ledger's figures make it %s" % rule)
    failing_function = [l.split()[1] for l in out.splitlines() if l.startswith("failed ")]

    proc = report_process(h.report(h.traces()), pid)
    dev = report_ledger(proc)
    expect(len(dev["ooms"]) == 1, "report has %d failures" % len(dev["ooms"]))
    o = dev["ooms"][0]
    expect_eq(o["requested_bytes"], failed["size"], "requested_bytes")
    expect_eq(o["free_bytes"], info["free"], "free_bytes")
    expect_eq(o["total_bytes"], info["total"], "total_bytes")
    expect_eq(o["process_bytes"], held, "process_bytes")
    expect_eq(o["outside_bytes"], outside, "outside_bytes")
    expect_eq(o["verdict"], verdict, "verdict")
    expect(o["largest_free_block_bytes"] is None, "largest_free_block_bytes is not null")
    expect_eq(innermost_function(o["frames"]), failing_function[0], "failing call's function")
    # what this process held then, by site: keep_model() made all of it
    notes = [l.split() for l in out.splitlines() if l.startswith("alloc ")]
    expect_eq({innermost_function(r["frames"]): [r["bytes"], r["count"]] for r in o["top_stacks"]},
              {notes[0][1]: [held, len(notes)]}, "top_stacks at the failure")
    # gold_oom frees everything right after the failure: the 1 s window
    window = [e for e in after if e["op"] == "free" and e["result"] == 0 and
              e["ns"] <= failed["ns"] + 10**9]
    expect_eq([o["released_after_bytes"], o["released_after_count"]],
              [sum(e["size"] for e in window), len(window)], "released_after bytes, count")
    lo, hi = floor_to_unit(failed["ns"], proc["time_unit_ns"]), min([e["ns"] for e in after if e["op"] != "getinfo"] + [float("inf")])
    expect(lo <= o["time_ns"] < hi, "failure time %d not within ledger %d..%s" % (o["time_ns"], lo, hi))
    return "%s: asked %d, free %d of %d, process %d" % (verdict, failed["size"], info["free"],
                                                        info["total"], held)


def scenario_oom_contended(h):
    """Scenario 2: another process holds 60% of the device."""
    name = "gold-%d" % os.getpid()
    extra = {"VTSIM_SHARED": name, "VTSIM_MEMORY": "4GiB"}
    holder = h.popen([h.client("gold_holder"), str(4096 * 6 // 10)], traced=False, extra=extra)
    try:
        expect(holder.stdout.readline() == "held\n", "the holder did not start")
        out = h.run([h.client("gold_oom"), "512", "1536"], extra=extra).stdout
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
        if os.path.exists("/dev/shm/vtsim-" + name):
            os.unlink("/dev/shm/vtsim-" + name)
    expect(holder.returncode == 0, "the holder exited %d" % holder.returncode)
    return check_oom(h, out, "contended")


def scenario_oom_exhausted(h):
    """Scenario 3: this process's own allocations fill the device."""
    out = h.run([h.client("gold_oom"), "1536", "1024"], extra={"VTSIM_MEMORY": "2GiB"}).stdout
    return check_oom(h, out, "exhausted")


SCENARIOS = {
    "peak_stacks": scenario_peak_stacks,
    "oom_contended": scenario_oom_contended,
    "oom_exhausted": scenario_oom_exhausted,
}
SCENARIOS.update(golden_more.SCENARIOS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    return run_check("vt-golden-", lambda tmp: SCENARIOS[args.scenario](Harness(args, tmp)),
                     args.scenario)


if __name__ == "__main__":
    sys.exit(main())
