#!/usr/bin/env python3
"""The numbers behind an out-of-memory verdict, against the simulated
driver's ledger (never the analyzer):

  - the tracer's context sizes (preload/hooks/context_size.c): each context
    the client made is recorded with exactly what the ledger charged for it
    when it was measurable, else 0 (unknown);
  - for both failures of oom_contexts on device 1: free, total, this
    process's bytes, its contexts, the other processes' bytes, the cache
    released between the failure and its retry, the retry's outcome, the
    verdict by the documented rule (docs/user/REPORT.md) and the one-line
    narrative, word for word.

    check_oom.py --vramtrace V --lib L --simdir D --bindir B SCENARIO [--tamper]

--tamper makes the truth wrong on purpose (1 MiB more per measured context):
the check must then fail."""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from golden_lib import (GoldenFailure, Harness, expect, expect_eq, read_ledger,  # noqa: E402
                        report_ledger, report_process, running)
from ledger_truth import format_bytes, verdict_rule  # noqa: E402

MIB = 1 << 20
DEV = 1
# scenario: (other process's MiB or None, this process's MiB held, request, flushed)
SCENARIOS = {
    "contended": (1024, 1024, 1536, 512),   # 896 free + 512 cache < 1536: others hold 1.38 GiB
    "exhausted": (None, 2048, 1536, 0),     # 1280 free, nothing cached, no other process
    "fragmented": (None, 2048, 1536, 512),  # 1280 free + 512 cache >= 1536: the retry fits
}


def narrative(req, free, process, cached, prev_cached, ctx, nctx, others, retry, is_retry):
    s = "%s requested; %s free on the device; this process held %s reserved, " % (
        format_bytes(req), format_bytes(free), format_bytes(process))
    if cached is not None:
        s += "of which %s cached but unusable" % format_bytes(cached)
    elif is_retry:
        s += "after releasing %s cached but unusable" % format_bytes(prev_cached)
    else:
        s += "cached part unknown (no flush and retry followed)"
    s += " (largest free block not visible in a trace)"
    s += "; its CUDA context%s %s; other processes held %s" % (
        "s" if nctx > 1 else "", format_bytes(ctx), format_bytes(others))
    if retry == "succeeded":
        s += "; the retry after the flush succeeded"
    elif retry == "failed":
        s += "; the retry after the flush failed"
    elif is_retry:
        s += "; this was that retry"
    return s


def check_context_sizes(h, entries, pid, out, tamper):
    """Every context record of the trace carries what the ledger charged
    for it when measurable, else 0."""
    notes = [l.split() for l in out.splitlines() if l.startswith("ctx ")]
    made = [e for e in entries if e["pid"] == pid and e["op"] in ("ctx_retain", "ctx_create")
            and e["result"] == 0]
    expect_eq(len(made), len(notes), "context creations/retains in the ledger vs the client")
    trace = [r for r in h.dump(h.traces()[0])
             if r.get("type") == "mem" and r.get("kind") == "context" and r.get("op") == "alloc"
             and r.get("result") == 0]
    expect_eq(len(trace), len(made), "context records in the trace")
    measured = 0
    for n, (note, e, r) in enumerate(zip(notes, made, trace)):
        expect_eq(int(r["addr"], 16) if isinstance(r["addr"], str) else r["addr"], e["ctx"],
                  "context %d address" % n)
        want = e["delta"] + (MIB if tamper else 0) if note[4] == "1" else 0
        measured += note[4] == "1" and e["delta"] > 0
        expect_eq(r["size"], want, "context %d (%s, measurable %s) size" % (n, note[1], note[4]))
    expect(measured == 3, "scenario broken: %d measurable context creations, want 3" % measured)


def run_scenario(h, name, tamper):
    other_mib, hold, request, flush = SCENARIOS[name]
    extra = {"VTSIM_MEMORY": "4GiB", "VTSIM_DEVICES": "2"}
    holder = None
    if other_mib:
        extra["VTSIM_SHARED"] = "vt-oom-%d" % os.getpid()
        holder = h.popen([h.client("oom_contexts"), "hold", str(other_mib)], traced=False,
                         extra=extra)
    try:
        if holder:
            expect(holder.stdout.readline() == "held\n", "the other process did not start")
        out = h.run([h.client("oom_contexts"), "run", str(hold), str(request), str(flush)],
                    extra=extra).stdout
    finally:
        if holder:
            holder.stdin.close()
            holder.wait(timeout=10)
            shm = "/dev/shm/vtsim-" + extra["VTSIM_SHARED"]
            if os.path.exists(shm):
                os.unlink(shm)
    entries = h.ledger_entries()
    pid = next(e["pid"] for e in entries if e["op"] == "ctx_create")
    check_context_sizes(h, entries, pid, out, tamper)

    failed = [e for e in entries if e["pid"] == pid and e["op"] == "alloc" and e["result"] != 0]
    retry = [e for e in entries if e["pid"] == pid and e["op"] == "alloc" and
             e["size"] == request * MIB and e["result"] == 0]
    expect_eq(len(failed), 1 if name == "fragmented" else 2, "failures in the ledger")
    dev = report_ledger(report_process(h.report(h.traces()), pid), device=DEV)
    expect(dev is not None, "the report has no device %d ledger" % DEV)
    expect_eq(len(dev["ooms"]), len(failed), "failures in the report")
    prev_cached = None
    for k, (e, o) in enumerate(zip(failed, dev["ooms"])):
        what = "failure %d " % (k + 1)
        info = next(g for g in entries if g["line"] > e["line"] and g["pid"] == pid and
                    g["op"] == "getinfo")
        upto = e["line"]
        series = running(entries, {pid}, device=DEV, upto=upto)
        process = series[-1][1] if series else 0
        ctx_lines = [g for g in entries[:upto] if g["pid"] == pid and g["op"].startswith("ctx_")
                     and g["dev"] == DEV]
        ctx = sum(g["delta"] for g in ctx_lines) + (2 * MIB if tamper else 0)
        nctx = sum(1 for g in ctx_lines if g["delta"] > 0) - sum(1 for g in ctx_lines
                                                                  if g["delta"] < 0)
        others = sum(g.get("delta", 0) for g in entries[:upto]
                     if g["pid"] != pid and g.get("dev") == DEV and "delta" in g)
        nxt = failed[k + 1] if k + 1 < len(failed) else (retry[0] if retry else None)
        retry_state = ("not_seen" if nxt is None else
                       "failed" if nxt["result"] != 0 else "succeeded")
        is_retry = k > 0
        if retry_state != "not_seen":
            cached = sum(g["size"] for g in entries[e["line"]:nxt["line"]]
                         if g["pid"] == pid and g["op"] == "free" and g["result"] == 0)
        else:
            cached = None
        expect_eq(o["requested_bytes"], request * MIB, what + "requested_bytes")
        expect_eq(o["free_bytes"], info["free"], what + "free_bytes")
        expect_eq(o["total_bytes"], info["total"], what + "total_bytes")
        expect_eq(o["process_bytes"], process, what + "process_bytes")
        expect_eq(o["contexts"], nctx, what + "contexts")
        expect_eq(o["context_bytes"], ctx, what + "context_bytes")
        expect_eq(o["other_processes_bytes"], others, what + "other_processes_bytes")
        expect_eq(info["total"] - info["free"], process + ctx + others - (2 * MIB if tamper else 0),
                  what + "ledger balance (scenario broken?)")
        expect_eq(o["cached_bytes"], cached, what + "cached_bytes")
        expect_eq(o["retry"], retry_state, what + "retry")
        expect_eq(o["retry_succeeded"], None if retry_state == "not_seen" else
                  retry_state == "succeeded", what + "retry_succeeded")
        expect_eq(o["retry_of_previous"], is_retry, what + "retry_of_previous")
        expect_eq(o["largest_free_block_bytes"], None, what + "largest_free_block_bytes")
        want = verdict_rule(request * MIB, info["free"], info["total"], process, cached or 0, ctx)
        expect_eq(o["verdict"], want, what + "verdict")
        expect_eq(o["narrative"], narrative(request * MIB, info["free"], process, cached,
                                            prev_cached, ctx, nctx, others, retry_state,
                                            is_retry), what + "narrative")
        prev_cached = cached
    want = dev["ooms"][0]["verdict"]
    expect_eq(want, name, "scenario's verdict (scenario broken?)")
    text = subprocess.run([h.vramtrace, "report", h.traces()[0]], capture_output=True,
                          text=True, timeout=30).stdout
    for o in dev["ooms"]:
        if o["retry_of_previous"]:  # folded into its request: one line of its own
            line = ": %s free, this process held %s: failed again" % (
                format_bytes(o["free_bytes"]), format_bytes(o["process_bytes"]))
            expect(line in text, "the text report does not say %r" % line)
        else:
            expect(o["narrative"] in text, "the text report does not say %r" % o["narrative"])
    requests = sum(1 for o in dev["ooms"] if not o["retry_of_previous"])
    expect_eq(dev["failed_requests"], requests if dev["ooms"][-1]["retry"] != "succeeded" else
              requests - 1, "failed_requests")
    return "%s: %s" % (name, dev["ooms"][0]["narrative"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--tamper", action="store_true")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vt-oom-") as tmp:
        try:
            print("ok: " + run_scenario(Harness(args, tmp), args.scenario, args.tamper))
        except (GoldenFailure, subprocess.TimeoutExpired, StopIteration) as e:
            print("FAIL: %s: %s" % (args.scenario, e), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
