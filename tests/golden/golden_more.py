"""Golden scenarios 4-7 and the extras (stream-ordered frees, VMM physical
memory); run by golden_check.py."""
import os
import signal
import subprocess
import time

from golden_lib import (MIB, change_of, client_pid, expect, expect_eq, expect_time_of, floor_to_unit,
                        innermost_function, peak_of, phase_peaks, phase_windows, pid_entries,
                        report_ledger, report_process, running)


def scenario_phases(h):
    """Scenario 4: each phase's peak = the ledger's largest total within the
    phase's windows, counting the total the phase opened with."""
    out = h.run([h.client("gold_phases")], extra={"NVTX_INJECTION64_PATH": h.lib}).stdout
    entries = h.ledger_entries()
    pid = client_pid(entries)
    series = running(entries, {pid})
    truth = phase_peaks(series, phase_windows(out))
    overall = peak_of(series)[1]
    expect(all(b[0] < overall for b, _ in truth.values()) and
           len({b[0] for b, _ in truth.values()}) == len(truth),
           "scenario broken: phase peaks should differ from each other and from the peak")

    proc = report_process(h.report(h.traces()), pid)
    unit = proc["time_unit_ns"]
    dev = report_ledger(proc)
    expect_eq(dev["peak_bytes"], overall, "peak_bytes")
    got = {p["name"]: p for p in dev["phases"]}
    expect_eq(sorted(got), sorted(truth), "phase names")
    for name, ((total, entry, t0), opened) in truth.items():
        p = got[name]
        expect_eq(p["peak_bytes"], total, "phase %s peak_bytes" % name)
        expect_eq(p["opened"], opened, "phase %s opened" % name)
        if entry is not None:
            expect_time_of(p["peak_time_ns"], entries, entry, "phase %s peak_time_ns" % name, unit)
        else:  # the opening total: between the client's clock and its next call
            first = min(e["ns"] for e in entries if e["pid"] == pid and e["ns"] > t0)
            expect(floor_to_unit(t0, unit) <= p["peak_time_ns"] < first,
                   "phase %s peak_time_ns %d is not its opening (%d..%d)"
                   % (name, p["peak_time_ns"], t0, first))
    return ", ".join("%s %d" % (n, t[0][0]) for n, t in sorted(truth.items()))


def _closings(h, mode, extra=None):
    """The client's run; the ledger's live bytes at each closing of "step"
    and each function's allocations still live then, from the ledger."""
    before = {e["pid"] for e in h.ledger_entries()} if os.path.exists(h.ledger) else set()
    out = h.run([h.client("gold_growth"), mode], extra=extra).stdout
    entries = h.ledger_entries()
    pids = {e["pid"] for e in entries if change_of(e) is not None} - before
    expect(len(pids) == 1, "expected one new process in the ledger, found %s" % sorted(pids))
    pid = pids.pop()
    return pid, _closings_of(entries, pid, out)


def _closings_of(entries, pid, out):
    series = running(entries, {pid})
    owner = {}
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["alloc"]:
            owner[int(parts[2], 16)] = parts[1]
    closings = []
    for t0, t1 in phase_windows(out)["step"]:
        before = [total for e, total in series if e["ns"] < t1]
        by_fn, live = {}, {}
        for e in entries:
            if e["pid"] != pid or e["ns"] >= t1:
                continue
            if e["op"] == "alloc" and e["result"] == 0 and e.get("kind") == "device":
                live[e["addr"]] = e["size"]
            elif e["op"] == "free" and e["result"] == 0:
                live.pop(e["addr"], None)
        for addr, size in live.items():
            fn = owner.get(addr, "?")
            by_fn[fn] = by_fn.get(fn, 0) + size
        closings.append((before[-1] if before else 0, by_fn))
    return closings


def _growth_truth(closings):
    """The rule of docs/user/REPORT.md, on the ledger's closings: the rises in a
    row up to the last closing; growth when there are at least three."""
    rises = 0
    for k in range(len(closings) - 1, 0, -1):
        if closings[k][0] > closings[k - 1][0]:
            rises += 1
        else:
            break
    return rises


def scenario_growth_leak(h):
    """A loop that keeps 64 MiB per step: 64 MiB per opening from the
    second, at keep_step_output, as the ledger's closings say."""
    pid, closings = _closings(h, "leak")
    rises = _growth_truth(closings)
    expect(rises == len(closings) - 1 and rises >= 3, "scenario broken: the ledger's closings "
           "do not rise at every step: %r" % [c[0] for c in closings])
    first, last = closings[-1 - rises], closings[-1]
    per_opening = (last[0] - first[0]) // rises
    site = (last[1].get("keep_step_output", 0) - first[1].get("keep_step_output", 0)) // rises
    expect(per_opening == 64 * MIB and site == 64 * MIB,
           "scenario broken: the ledger grows %d per step, keep_step_output %d" % (per_opening, site))
    dev = report_ledger(report_process(h.report(h.traces()), pid))
    step = [p for p in dev["phases"] if p["name"] == "step"]
    expect(len(step) == 1, "no phase 'step' in the report")
    g = step[0].get("growth")
    expect(g is not None, "the report sees no growth of 'step'")
    expect_eq(step[0]["closings"], len(closings), "closings of step")
    expect_eq(g["per_opening_bytes"], per_opening, "growth per opening")
    expect_eq(g["from_opening"], len(closings) - rises + 1, "growth from opening")
    expect_eq(g["openings"], rises, "openings that grew")
    expect_eq((g["first_bytes"], g["last_bytes"]), (first[0], last[0]), "live at the run's ends")
    sites = g["sites"]
    expect(sites, "the growth names no site")
    expect_eq(innermost_function(sites[0]["frames"]), "keep_step_output", "the site that grows")
    expect_eq(sites[0]["bytes"], site, "keep_step_output's growth per opening")
    text = h.report_text(h.traces())
    want = "+64.00 MiB per opening from opening 2"
    expect(want in text and "keep_step_output" in text.split(want, 1)[1],
           "the text report does not say %r with its site:\n%s" % (want, text))
    return "+%d MiB per opening from opening %d" % (per_opening >> 20, g["from_opening"])


def scenario_growth_ranks(h):
    """Two ranks, one steady and one leaking: the job overview (over the
    traces, and over their node's summary) names the leaking rank, its
    phase and its growth per opening, as that rank's closings in the ledger
    say."""
    ranks = {}
    for rank, mode in ((0, "steady"), (1, "leak")):
        pid, closings = _closings(h, mode, {"RANK": str(rank), "LOCAL_RANK": str(rank),
                                            "WORLD_SIZE": "2"})
        rises = _growth_truth(closings)
        ranks[rank] = (pid, rises and (closings[-1][0] - closings[-1 - rises][0]) // rises,
                       len(closings) - rises + 1)
    expect(ranks[1][1] == 64 * MIB and not ranks[0][1],
           "scenario broken: the ledger's growth per rank %r" % ranks)
    want = [(1, ranks[1][0], "step", ranks[1][1], ranks[1][2])]
    summary = os.path.join(h.tmp, "node.summary.json")
    proc = subprocess.run([h.vramtrace, "report", "--summary", summary, h.tracedir],
                          capture_output=True, text=True, timeout=30)
    expect(proc.returncode == 0, "report --summary exited %d: %s" % (proc.returncode, proc.stderr))
    for what, paths in (("traces", h.traces()), ("summary", [summary])):
        jobs = h.report(paths).get("jobs", [])
        got = [(g["rank"], g["pid"], g["phase"], g["per_opening_bytes"], g["from_opening"])
               for j in jobs for g in j.get("growth", [])]
        expect_eq(got, want, "jobs[].growth over the " + what)
        text = h.report_text(paths)
        line = "rank 1, pid %d: step +64.00 MiB per opening from opening %d" % (ranks[1][0],
                                                                               ranks[1][2])
        expect(line in text, "the overview over the %s does not say %r:\n%s" % (what, line, text))
    return "rank 1: +64 MiB per opening"


def scenario_growth_steady(h):
    """A steady loop whose warm-up rises at three closings: no growth."""
    pid, closings = _closings(h, "steady")
    values = [c[0] for c in closings]
    expect(_growth_truth(closings) == 0 and
           sum(1 for a, b in zip(values, values[1:]) if b > a) >= 3,
           "scenario broken: the ledger's closings %r" % values)
    dev = report_ledger(report_process(h.report(h.traces()), pid))
    step = [p for p in dev["phases"] if p["name"] == "step"]
    expect(len(step) == 1, "no phase 'step' in the report")
    expect_eq(step[0].get("growth"), None, "growth of a steady loop")
    text = h.report_text(h.traces())
    expect("growth across openings: none" in text,
           "the text report does not say the loop is steady:\n%s" % text)
    return "steady after a warm-up of %d rises" % sum(
        1 for a, b in zip(values, values[1:]) if b > a)


# (process, command): two processes on one GPU, interleaved in this order.
# The combined peak (step 5) is neither process's own peak.
TWO_PROCESS_SCRIPT = [
    (0, "alloc 1024"), (1, "alloc 1024"), (1, "alloc 2048"), (1, "free 2048"),
    (0, "alloc 2560"), (0, "free 2560"), (0, "free 1024"), (1, "alloc 3072"),
    (1, "free 3072"), (0, "alloc 512"),
]


def scenario_two_processes(h):
    """Scenario 5: two traced processes share a simulated GPU; the combined
    peak and what each held then, and each process's own peak."""
    name = "gold-%d" % os.getpid()
    extra = {"VTSIM_SHARED": name}
    procs = [h.popen([h.client("gold_steps")], extra=extra) for _ in range(2)]
    try:
        for who, command in TWO_PROCESS_SCRIPT:
            procs[who].stdin.write(command + "\n")
            expect(procs[who].stdout.readline() == "ok\n", "step %r failed" % command)
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=10)
        if os.path.exists("/dev/shm/vtsim-" + name):
            os.unlink("/dev/shm/vtsim-" + name)
    expect(all(p.returncode == 0 for p in procs), "a step process failed")
    pids = [p.pid for p in procs]
    entries = h.ledger_entries()
    peak_entry, peak = peak_of(running(entries, set(pids)))
    at_peak = {pid: running(entries, {pid}, upto=peak_entry["line"] + 1)[-1][1] for pid in pids}
    own = {pid: peak_of(running(entries, {pid}))[1] for pid in pids}
    expect(peak < sum(own.values()) and peak > max(own.values()),
           "scenario broken: the combined peak should be neither the sum nor one process's")

    report = h.report(h.traces())
    gpus = [g for g in report["gpus"] if {p["pid"] for p in g["processes"]} & set(pids)]
    expect(len(gpus) == 1, "the two processes are on %d GPUs in the report" % len(gpus))
    gpu = gpus[0]
    expect_eq(gpu["peak_bytes"], peak, "gpus[].peak_bytes")
    expect_eq({p["pid"]: p["bytes_at_peak"] for p in gpu["processes"]}, at_peak,
              "gpus[].processes[].bytes_at_peak")
    later = [e["ns"] for e in entries if e["line"] > peak_entry["line"]]
    unit = max(p["time_unit_ns"] for p in report["processes"])
    expect(floor_to_unit(peak_entry["ns"], unit) <= gpu["peak_time_ns"] < min(later + [float("inf")]),
           "gpus[].peak_time_ns is not the time of ledger line %d" % peak_entry["line"])
    for pid in pids:
        dev = report_ledger(report_process(report, pid))
        expect_eq(dev["peak_bytes"], own[pid], "pid %d peak_bytes" % pid)
    return "combined peak %d, at peak %s, own peaks %s" % (peak, at_peak, own)


def scenario_pinned(h):
    """Scenario 6: pinned host memory has its own peak beside the device's
    (and managed memory's)."""
    h.run([h.client("gold_pinned")])
    entries = h.ledger_entries()
    pid = client_pid(entries)
    proc = report_process(h.report(h.traces()), pid)
    found = []
    for category, device in (("host_pinned", -1), ("device", 0), ("managed", 0)):
        peak_entry, peak = peak_of(running(entries, {pid}, category, device))
        expect(peak > 0, "scenario broken: no %s memory in the ledger" % category)
        led = report_ledger(proc, category, device)
        expect(led is not None, "report has no %s entry" % category)
        expect_eq(led["peak_bytes"], peak, "%s peak_bytes" % category)
        expect_time_of(led["peak_time_ns"], entries, peak_entry, "%s peak_time_ns" % category,
                       proc["time_unit_ns"])
        found.append("%s %d" % (category, peak))
    return ", ".join(found)


# ledger op -> the trace record's op: one memory record each, in the same
# order (what tests/tracer/tracer_check.py establishes)
TRACED_OPS = {"alloc": "alloc", "free": "free", "ctx_retain": "alloc", "ctx_release": "free",
              "ctx_create": "alloc", "ctx_destroy": "free", "host_alloc": "alloc",
              "host_free": "free", "host_register": "alloc", "host_unregister": "free",
              "vmm_reserve": "alloc", "vmm_address_free": "free", "vmm_create": "alloc",
              "vmm_release": "free", "vmm_retain": "alloc", "vmm_map": "alloc",
              "vmm_unmap": "free"}


def _check_prefix(h, entries, pid, path, whole_peak, least=1):
    """The report of a cut trace equals the ledger restricted to the memory
    records the readable prefix holds (at least `least` of them)."""
    report = h.report([path])
    proc = report_process(report, pid)
    expect(proc["truncated"] is True, "report does not say truncated")
    mem = [r for r in h.dump(path) if r["type"] == "mem"]
    traced = [e for e in pid_entries(entries, pid) if e["op"] in TRACED_OPS]
    expect(len(mem) <= len(traced), "the trace has more records than the ledger")
    expect(len(mem) >= least, "the readable prefix has %d memory records, expected at least %d"
           % (len(mem), least))
    for rec, e in zip(mem, traced):
        expect(rec["op"] == TRACED_OPS[e["op"]] and rec["result"] == e["result"],
               "trace record %s is not ledger line %d" % (rec, e["line"]))
        if e["op"] in ("alloc", "free") and e["result"] == 0:
            expect(rec["addr"] == e["addr"], "trace record %s is not ledger line %d"
                   % (rec, e["line"]))
    last = traced[len(mem) - 1]
    series = running(entries, {pid}, upto=last["line"] + 1)
    peak_entry, peak = peak_of(series)
    expect(whole_peak is None or peak < whole_peak,
           "scenario broken: the prefix already holds the whole run's peak")
    dev = report_ledger(proc)
    expect_eq(dev["peak_bytes"], peak, "truncated peak_bytes")
    expect_time_of(dev["peak_time_ns"], entries, peak_entry, "truncated peak_time_ns",
                   proc["time_unit_ns"])
    expect_eq(dev["final_bytes"], series[-1][1], "truncated final_bytes")
    expect_eq(dev["allocations"],
              sum(1 for e, _ in series if e["op"] == "alloc"), "truncated allocations")
    return len(mem), len(traced), peak


def scenario_truncated(h):
    """Scenario 7: a finished trace cut to half its size."""
    h.run([h.client("gold_batches"), "10"], extra={"VRAMTRACE_FLUSH_MS": "10"})
    entries = h.ledger_entries()
    pid = client_pid(entries)
    whole = peak_of(running(entries, {pid}))[1]
    (full,) = h.traces()
    dev = report_ledger(report_process(h.report([full]), pid))
    expect_eq(dev["peak_bytes"], whole, "whole trace peak_bytes")
    with open(full, "rb") as f:
        data = f.read()
    # Half of the part that holds events: the definitions before them (the
    # module map: larger under a sanitizer) are not what is being cut.
    first = min(r["chunk_offset"] for r in h.dump(full) if r["type"] == "mem")
    size = (first + len(data)) // 2
    cut = os.path.join(h.tmp, "cut.vtrace")
    with open(cut, "wb") as f:
        f.write(data[:size])
    kept, total, peak = _check_prefix(h, entries, pid, cut, whole)
    return "cut at %d of %d bytes: %d of %d records, peak %d of %d" % (
        size, len(data), kept, total, peak, whole)


def scenario_killed(h):
    """Scenario 7b: the client SIGKILLed mid-run, once the trace holds the
    batches it said it finished (the writer flushes every 10 ms; waiting
    for the file instead of sleeping keeps a loaded machine from failing
    the test)."""
    done = 4
    least = 1 + 3 * done   # ctx_retain, then 3 records a batch
    client = h.popen([h.client("gold_batches"), "10"], extra={"VRAMTRACE_FLUSH_MS": "10"})
    try:
        while client.stdout.readline() != "batch %d\n" % (done - 1):
            expect(client.poll() is None, "the client ended early")
        deadline = time.monotonic() + 5
        while True:
            paths = h.traces()
            if paths and sum(1 for r in h.dump(paths[0], False) if r["type"] == "mem") >= least:
                break
            expect(time.monotonic() < deadline, "the first %d records never reached the trace"
                   % least)
            time.sleep(0.01)
    finally:
        client.kill()
        client.wait(timeout=10)
    expect(client.returncode == -signal.SIGKILL, "the client was not killed")
    entries = h.ledger_entries()
    pid = client.pid
    (path,) = h.traces()
    kept, total, peak = _check_prefix(h, entries, pid, path, None, least)
    return "killed after batch %d: %d of %d records readable, peak %d" % (done - 1, kept, total,
                                                                          peak)


def scenario_async(h):
    """Stream-ordered frees count when issued; the pool's cache is not the
    program's."""
    h.run([h.client("gold_async")])
    entries = h.ledger_entries()
    pid = client_pid(entries)
    peak_entry, peak = peak_of(running(entries, {pid}))
    proc = report_process(h.report(h.traces()), pid)
    dev = report_ledger(proc)
    expect_eq(dev["peak_bytes"], peak, "peak_bytes")
    expect_time_of(dev["peak_time_ns"], entries, peak_entry, "peak_time_ns", proc["time_unit_ns"])
    expect_eq(dev["final_bytes"], 0, "final_bytes")
    return "peak %d" % peak


def scenario_vmm(h):
    """VMM: physical memory counts from cuMemCreate until the driver really
    returns it (last release and last unmap)."""
    h.run([h.client("gold_vmm")])
    entries = h.ledger_entries()
    pid = client_pid(entries)
    series = running(entries, {pid})
    peak_entry, peak = peak_of(series)
    proc = report_process(h.report(h.traces()), pid)
    dev = report_ledger(proc)
    expect_eq(dev["peak_bytes"], peak, "peak_bytes (physical)")
    expect_time_of(dev["peak_time_ns"], entries, peak_entry, "peak_time_ns", proc["time_unit_ns"])
    expect_eq(dev["final_bytes"], series[-1][1], "final_bytes")
    return "physical peak %d MiB" % (peak // MIB)


SCENARIOS = {
    "phases": scenario_phases,
    "two_processes": scenario_two_processes,
    "pinned": scenario_pinned,
    "truncated": scenario_truncated,
    "killed": scenario_killed,
    "async": scenario_async,
    "vmm": scenario_vmm,
    "growth_leak": scenario_growth_leak,
    "growth_steady": scenario_growth_steady,
    "growth_ranks": scenario_growth_ranks,
}
