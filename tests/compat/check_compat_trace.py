#!/usr/bin/env python3
"""Today's analyzer on a trace of an earlier format version N (1 to 6).

vN_trace.vtrace was written by the tracer of the last commit that wrote
format N (v1: commit eed6128, times in nanoseconds; v2: commit f977377,
times in microseconds; v3: commit 515ea7a, the dt column); README.md has
the recipe. Its truth is the
simulated driver's ledger of that same run (vN_ledger.txt) and the client's
own notes (vN_client.out: which function made each allocation, when each
phase opened and closed). vN_expected.json holds the figures derived from
those two files alone, never from the analyzer; this script re-derives them
first, so the committed figures cannot drift from the ledger.

    check_compat_trace.py --version N --vramtrace BIN [--write-expected]

Checks `vramtrace dump --json` (version N, its time unit, every memory and
range record's time inside the ledger's window for it, rounded down to the
unit) and `vramtrace report --json` (peak, live allocations and sites at the
peak, allocation and free counts, the failure's figures, phases, every time
in nanoseconds, a known 100 ms duration). The stacks point to binaries of
the scratch build that made the file: the report must show them as bare
addresses of their module, and nothing checked here depends on symbols."""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
from golden_lib import (Harness, client_pid, expect, expect_eq, peak_of,  # noqa: E402
                        phase_peaks, phase_windows, pid_entries, read_ledger, report_ledger,
                        report_process, run_check, running)

# version -> the time unit (ns) its tracer wrote by default (v1: always 1;
# v2, v3: VRAMTRACE_TIME_UNIT_NS unset, VT_TIME_UNIT_NS_DEFAULT)
TIME_UNIT_NS = {1: 1, 2: 1000, 3: 1000, 4: 1000, 5: 1000, 6: 1000}
SLEEP_NS = 100 * 10**6   # v1_client.c SLEEP_MS: evaluate()'s peak is held this long

# set by main() from --version
VERSION = TRACE = LEDGER = CLIENT_OUT = EXPECTED = CLIENT = UNIT = None


def use_version(n):
    global VERSION, TRACE, LEDGER, CLIENT_OUT, EXPECTED, CLIENT, UNIT
    VERSION, UNIT = n, TIME_UNIT_NS[n]
    TRACE = os.path.join(HERE, "v%d_trace.vtrace" % n)
    LEDGER = os.path.join(HERE, "v%d_ledger.txt" % n)
    CLIENT_OUT = os.path.join(HERE, "v%d_client.out" % n)
    EXPECTED = os.path.join(HERE, "v%d_expected.json" % n)
    CLIENT = "v%d_client" % n  # the traced program's file name (the module of its frames)


def down(ns):
    """A ledger time as the tracer of the unit writes it: rounded down."""
    return ns - ns % UNIT


# ---- the truth: ledger and client notes only -------------------------------

def window(mine, entry):
    """[lo, hi) in ns in which the tracer stamped its record of a ledger
    line: after the driver's call, before the program's next call (the
    tracer's own cuMemGetInfo after a failure, a `getinfo` line, comes
    before the stamp)."""
    later = [e["ns"] for e in mine if e["line"] > entry["line"] and e["op"] != "getinfo"]
    return [down(entry["ns"]), min(later)]


def derive():
    """Every figure the test compares, from vN_ledger.txt and vN_client.out."""
    entries = read_ledger(LEDGER)
    with open(CLIENT_OUT) as f:
        out = f.read()
    pid = client_pid(entries)
    mine = pid_entries(entries, pid)
    series = running(entries, {pid})
    peak_entry, peak = peak_of(series)

    # which function made each allocation ("alloc FUNCTION ADDRESS", in order)
    notes = [l.split() for l in out.splitlines() if l.startswith("alloc ")]
    allocs = [e for e in mine if e["op"] == "alloc" and e["result"] == 0]
    expect(len(allocs) == len(notes), "ledger and client notes disagree on the allocations")
    site_of, live, sites = {}, {}, {}
    for e, (_, function, addr) in zip(allocs, notes):
        expect(e["addr"] == int(addr, 16), "ledger line %d is not the client's %s" % (e["line"], addr))
        site_of[e["line"]] = function
    for e in mine[:mine.index(peak_entry) + 1]:
        if e["op"] == "alloc" and e["result"] == 0:
            live[e["addr"]] = (site_of[e["line"]], e["size"])
        elif e["op"] == "free" and e["result"] == 0:
            del live[e["addr"]]
    for function, size in live.values():
        row = sites.setdefault(function, [0, 0])
        row[0] += size
        row[1] += 1

    windows = phase_windows(out)
    phases = {}
    for name, ((total, entry, t0), opened) in phase_peaks(series, windows).items():
        expect(entry is not None, "scenario broken: phase %s peaks at its opening" % name)
        phases[name] = {"opened": opened, "peak_bytes": total,
                        "peak_time_window_ns": window(mine, entry)}

    failed = [e for e in mine if e["op"] == "alloc" and e["result"] != 0]
    expect(len(failed) == 1, "scenario broken: %d failed allocations" % len(failed))
    failed = failed[0]
    info = mine[mine.index(failed) + 1]
    expect(info["op"] == "getinfo", "the tracer did not ask cuMemGetInfo right after the failure")
    held = running(entries, {pid}, upto=failed["line"])[-1][1]
    released = [e for e in mine if e["line"] > failed["line"] and e["op"] == "free" and
                e["result"] == 0 and e["ns"] <= failed["ns"] + 10**9]
    in_phase = [n for n, ws in windows.items() if any(t0 < failed["ns"] < t1 for t0, t1 in ws)]

    device_lines = [e for e in mine if e["op"] in ("alloc", "free") and e.get("kind") == "device"]
    expect(failed["ns"] - peak_entry["ns"] >= SLEEP_NS, "scenario broken: no 100 ms at the peak")
    return {
        "derived_from": "v%d_ledger.txt and v%d_client.out by check_compat_trace.py --write-expected"
                        % (VERSION, VERSION),
        "format_version": VERSION,
        "time_unit_ns": UNIT,
        "pid": pid,
        "device": peak_entry["dev"],
        "total_bytes": info["total"],
        "peak_bytes": peak,
        "peak_count": len(live),
        "peak_time_window_ns": window(mine, peak_entry),
        "peak_sites": dict(sorted(sites.items())),
        "allocations": len(allocs),
        "frees": sum(1 for e in mine if e["op"] == "free" and e["result"] == 0),
        "failed_allocations": 1,
        "final_bytes": series[-1][1],
        "oom": {
            "function": [l.split()[1] for l in out.splitlines() if l.startswith("failed ")][0],
            "requested_bytes": failed["size"],
            "free_bytes": info["free"],
            "total_bytes": info["total"],
            "process_bytes": held,
            "outside_bytes": info["total"] - info["free"] - held,
            "released_after_bytes": sum(e["size"] for e in released),
            "released_after_count": len(released),
            "phase": in_phase[-1] if in_phase else None,
            "time_window_ns": window(mine, failed),
        },
        "peak_to_oom_ns": failed["ns"] - peak_entry["ns"],
        "phases": dict(sorted(phases.items())),
        # [op, address, size (0 for a free: the trace has none), result, [lo, hi)]
        "memory_records": [[e["op"], e["addr"], e["size"] if e["op"] == "alloc" else 0,
                            e["result"], window(mine, e)] for e in device_lines],
        # [NAME of a push | null for a pop, [lo, hi)]
        "ranges": [[p[1] if p[0] == "push" else None] + range_window(mine, p[0], int(p[2]))
                   for p in (l.split() for l in out.splitlines())
                   if p[0] in ("push", "pop")],
    }


def range_window(mine, kind, ns):
    """[[lo, hi)] of a phase's push record (from the client's clock before
    opening to its next driver call) or pop record (from its last driver
    call to its clock after closing)."""
    if kind == "push":
        return [[down(ns), min(e["ns"] for e in mine if e["ns"] > ns)]]
    return [[down(max(e["ns"] for e in mine if e["ns"] < ns)), ns + 1]]


# ---- the checks ----------------------------------------------------------------

def within(t, lohi, what):
    expect(lohi[0] <= t < lohi[1], "%s: %r ns is not in the ledger's window [%d, %d)"
           % (what, t, lohi[0], lohi[1]))


def check_dump(h, want):
    records = h.dump(TRACE)
    proc = [r for r in records if r["type"] == "process"]
    expect(len(proc) == 1, "dump has %d process records" % len(proc))
    expect_eq(proc[0]["format_version"], want["format_version"], "dump format_version")
    expect_eq(proc[0]["time_unit_ns"], want["time_unit_ns"], "dump time_unit_ns")
    expect_eq(proc[0]["pid"], want["pid"], "dump pid")
    mem = [r for r in records if r["type"] == "mem" and r["kind"] == "device"]
    expect_eq(len(mem), len(want["memory_records"]), "number of device memory records")
    for i, (r, (op, addr, size, result, lohi)) in enumerate(zip(mem, want["memory_records"])):
        expect_eq([r["op"], r["size"], r["result"]], [op, size, result], "memory record %d" % i)
        if op == "alloc" and result == 0:
            expect_eq(r["addr"], addr, "memory record %d address" % i)
        if op == "free" and VERSION >= 5:
            # version 5: a free is timed at its call, its duration to its
            # return; the ledger stamps the driver's work in between
            expect("duration_ns" in r, "memory record %d (free) has no duration" % i)
            expect(r["time_ns"] <= lohi[0] + UNIT,
                   "memory record %d (free) called after the driver freed" % i)
            within(r["time_ns"] + r.get("duration_ns", 0), [lohi[0], lohi[1] + UNIT],
                   "memory record %d (free) return" % i)
        else:
            within(r["time_ns"], lohi, "memory record %d (%s) time" % (i, op))
            # versions 1-4: a free is timed at its return and has no duration
            expect("duration_ns" not in r, "memory record %d has a duration" % i)
    ranges = [r for r in records if r["type"] in ("range_push", "range_pop")]
    expect_eq(len(ranges), len(want["ranges"]), "number of range records")
    for r, (name, lohi) in zip(ranges, want["ranges"]):
        expect_eq(r.get("name"), name, "range record name")
        within(r["time_ns"], lohi, "%s %s time" % (r["type"], name or ""))
    return records


def check_frames(frames, modules, symbols, what):
    """Frames of binaries that are not on this machine (the scratch build's)
    are bare addresses in their module; with symbols off, every frame is."""
    expect(frames, "%s: no frames" % what)
    for f in frames:
        m = [m for m in modules if m["start"] <= f["ip"] - 1 < m["end"]]
        expect(len(m) == 1, "%s: ip 0x%x is in %d recorded modules" % (what, f["ip"], len(m)))
        expect_eq(f["module"], os.path.basename(m[0]["path"]), "%s: module of 0x%x" % (what, f["ip"]))
        if not symbols or not os.path.exists(m[0]["path"]):
            expect_eq([f["function"], f["file"], f["line"]], [None, None, None],
                      "%s: frame in the absent %s" % (what, m[0]["path"]))
    expect_eq(frames[0]["module"], CLIENT, "%s: innermost frame's module" % what)


def check_report(h, want, modules, symbols):
    report = h.report([TRACE], [] if symbols else ["--no-symbols"])
    proc = report_process(report, want["pid"])
    expect_eq(proc["time_unit_ns"], want["time_unit_ns"], "time_unit_ns")
    expect(not proc["truncated"] and proc["lost_events"] == 0, "trace read as truncated or lossy")
    dev = report_ledger(proc, "device", want["device"])
    for key in ("total_bytes", "peak_bytes", "peak_count", "allocations", "frees",
                "failed_allocations", "final_bytes"):
        expect_eq(dev[key], want[key], key)
    within(dev["peak_time_ns"], want["peak_time_window_ns"], "peak_time_ns")

    # sites at the peak: the innermost return address stands for the
    # function that called the driver (no symbols needed)
    by_ip = {}
    for row in dev["peak_breakdown"]:
        check_frames(row["frames"], modules, symbols, "peak breakdown")
        got = by_ip.setdefault(row["frames"][0]["ip"], [0, 0])
        got[0] += row["bytes"]
        got[1] += row["count"]
    expect_eq(sorted(by_ip.values()), sorted(want["peak_sites"].values()),
              "peak sites [bytes, count] (report grouped by innermost ip, ledger by function)")

    expect_eq(len(dev["ooms"]), 1, "number of failures")
    o, w = dev["ooms"][0], want["oom"]
    for key in ("requested_bytes", "free_bytes", "total_bytes", "process_bytes",
                "outside_bytes", "released_after_bytes", "released_after_count", "phase"):
        expect_eq(o[key], w[key], "ooms[0].%s" % key)
    within(o["time_ns"], w["time_window_ns"], "ooms[0].time_ns")
    check_frames(o["frames"], modules, symbols, "failure")
    expect(o["frames"][0]["ip"] not in by_ip, "the failing call has the ip of an allocation site")

    # a known duration: evaluate()'s 100 ms at the peak, in nanoseconds
    # (each end rounded down to the unit: at most one unit shorter)
    held = o["time_ns"] - dev["peak_time_ns"]
    expect(SLEEP_NS - want["time_unit_ns"] < held < SLEEP_NS + 10**9 and abs(held - want["peak_to_oom_ns"]) < 10**6,
           "peak to failure: report %d ns, ledger %d ns (the client slept %d ns)"
           % (held, want["peak_to_oom_ns"], SLEEP_NS))
    expect(0 < dev["peak_time_ns"] - proc["start_mono_ns"] < 10**9,
           "peak %d ns after the start: not within the run's first second" %
           (dev["peak_time_ns"] - proc["start_mono_ns"]))

    got = {p["name"]: p for p in dev["phases"]}
    expect_eq(sorted(got), sorted(want["phases"]), "phase names")
    for name, w in want["phases"].items():
        expect_eq([got[name]["opened"], got[name]["peak_bytes"]], [w["opened"], w["peak_bytes"]],
                  "phase %s [opened, peak_bytes]" % name)
        within(got[name]["peak_time_ns"], w["peak_time_window_ns"], "phase %s peak_time_ns" % name)
    return "peak %d bytes, %d phases, failure of %d bytes" % (dev["peak_bytes"], len(got),
                                                                 o["requested_bytes"])


def to_json(figures):
    """One key a line; the records of a list of records one a line."""
    def value(v):
        if isinstance(v, list) and v and isinstance(v[0], list):
            return "[\n  " + ",\n  ".join(json.dumps(x) for x in v) + "\n ]"
        return json.dumps(v)
    return "{\n" + ",\n".join(" %s: %s" % (json.dumps(k), value(v))
                               for k, v in figures.items()) + "\n}\n"


def check(args, tmp):
    want = derive()
    with open(EXPECTED) as f:
        expect(json.load(f) == want, "%s is not what %s and %s give (--write-expected "
               "rewrites it)" % tuple(os.path.basename(p) for p in (EXPECTED, LEDGER, CLIENT_OUT)))
    h = Harness(argparse.Namespace(vramtrace=args.vramtrace, lib="", bindir="", simdir="",
                                   preload_first=""), tmp)
    modules = [r for r in check_dump(h, want) if r["type"] == "module"]
    check_report(h, want, modules, symbols=False)
    return check_report(h, want, modules, symbols=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", type=int, required=True, choices=sorted(TIME_UNIT_NS),
                    help="the format version of the fixture: vN_*")
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--write-expected", action="store_true",
                    help="(re)write vN_expected.json from the ledger and the client's notes")
    args = ap.parse_args()
    use_version(args.version)
    if args.write_expected:
        with open(EXPECTED, "w") as f:
            f.write(to_json(derive()))
        return 0
    return run_check("vt-compat-", lambda tmp: check(args, tmp))


if __name__ == "__main__":
    sys.exit(main())
