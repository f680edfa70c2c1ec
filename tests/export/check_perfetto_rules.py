#!/usr/bin/env python3
"""`vramtrace export --format perfetto` keeps the trace-event rules
(trace_event_rules.py) on the examples, with the threads each process had
taken from the simulated driver's ledger and the examples' phase logs:
  - example 3 (examples/deepspeed_init_oom.c) dies inside
    deepspeed.initialize: the range still open at exit ends with its own
    name, on its own thread, at the process's last event; ts is in
    microseconds of the ledger's clock (the failure's instant);
  - example 1 (examples/train_eval_phases.c): every phase a B and an E, on
    the thread that pushed it;
  - example 5 (examples/launch_ranks.c): four processes in one file.
"""
import json

from export_common import parse_args, run_example, exported
from trace_event_rules import trace_event_problems

args = parse_args()
MONOTONIC = {"VRAMTRACE_CLOCK": "monotonic"}  # the ledger's clock: ts against its ns


def phase_log(run):
    """[(kind, name, ns, tid)] in the order written."""
    out = []
    with open(run.phase_log) as f:
        for line in f:
            w = line.split()
            if w[0] == "push":
                out.append(("push", w[1], int(w[2]), int(w[3])))
            else:
                out.append(("pop", None, int(w[1]), int(w[2])))
    return out


def threads_of(run, log=()):
    """{pid: tids} from the ledger and the phase log (a phase log has no
    pid: its threads belong to the one traced process)."""
    threads = {}
    for e in run.ledger.lines:
        if "tid" in e:
            threads.setdefault(int(e["pid"]), set()).add(int(e["tid"]))
    pids = run.traced_pids()
    for _, _, _, tid in log:
        threads.setdefault(pids[0], set()).add(tid)
    return threads


def open_at_exit(log):
    """{tid: [names]} pushed and never popped, innermost last."""
    stacks = {}
    for kind, name, _, tid in log:
        if kind == "push":
            stacks.setdefault(tid, []).append(name)
        elif stacks.get(tid):
            stacks[tid].pop()
    return {t: s for t, s in stacks.items() if s}


def perfetto(run, name):
    path = exported(run, "perfetto", name)
    if not path:
        return None
    with open(path) as f:
        return json.load(f)


def check_rules(run, doc, threads):
    for problem in trace_event_problems(doc, threads):
        run.fail("perfetto: " + problem)


def check_slices(run, events, pid, log):
    """The B slices per thread are the phase log's pushes per thread."""
    got, want = {}, {}
    for e in events:
        if e.get("ph") == "B" and e.get("pid") == pid:
            got.setdefault(e["tid"], []).append(e["name"])
    for kind, name, _, tid in log:
        if kind == "push":
            want.setdefault(tid, []).append(name)
    run.equal("perfetto: slices begun per thread", got, want)


# ---- example 3: a range open when the process dies ----------------------
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/deepspeed_init_oom"],
                  env=dict(MONOTONIC, VTSIM_MEMORY="31.50GiB"), expect_status=1, phase_log=True)
doc = perfetto(run, "trace.json")
pid = run.traced_pids()[0] if run.traced_pids() else 0
log = phase_log(run)
still_open = open_at_exit(log)
run.equal("ranges open at exit in the phase log", sorted(n for s in still_open.values() for n in s),
          ["deepspeed.initialize"])
if doc:
    events = doc["traceEvents"]
    check_rules(run, doc, threads_of(run, log))
    check_slices(run, events, pid, log)
    mine = [e for e in events if e.get("pid") == pid and "ts" in e]
    last_ledger_us = max(int(e["ns"]) for e in run.ledger.lines if int(e["pid"]) == pid) / 1000
    for tid, names in still_open.items():
        ends = [e for e in mine if e["ph"] == "E" and e["tid"] == tid]
        run.equal("perfetto: the open ranges' ends on thread %d" % tid,
                  [e["name"] for e in ends[-len(names):]], names[::-1])
        for e in ends[-len(names):]:
            # The process's last event: after the ledger's last line for it
            # (the tracer stamps after the driver returns) and no earlier
            # than anything else the export shows of the process.
            if e["ts"] < last_ledger_us or e["ts"] < max(x["ts"] for x in mine):
                run.fail("perfetto: %r ends at %s us, before the process's last event "
                         "(ledger %s us, export %s us)" % (e["name"], e["ts"], last_ledger_us,
                                                           max(x["ts"] for x in mine)))
    # Units: the failure's instant, in microseconds, is the ledger's failed
    # line (ns, the same clock) give or take the tracer's own work.
    fails = [e for e in mine if e["ph"] == "i" and e["name"].startswith("allocation failed")]
    truth = run.ledger.failures(pid)
    if len(fails) != 1 or len(truth) != 1:
        run.fail("perfetto: %d failure instants, ledger %d" % (len(fails), len(truth)))
    else:
        ledger_ns = int(run.ledger.lines[truth[0]["index"]]["ns"])
        late_ns = fails[0]["ts"] * 1000 - ledger_ns
        if not 0 <= late_ns < 1e9:
            run.fail("perfetto: the failure at ts %s us is %s ns from the ledger's %d ns: "
                     "ts is not microseconds of CLOCK_MONOTONIC" % (fails[0]["ts"], late_ns,
                                                                   ledger_ns))
run.finish()

# ---- example 1: phases that all close -----------------------------------
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/train_eval_phases"], env=MONOTONIC, phase_log=True)
doc = perfetto(run, "trace.json")
log = phase_log(run)
run.equal("ranges open at exit in the phase log", open_at_exit(log), {})
if doc:
    check_rules(run, doc, threads_of(run, log))
    check_slices(run, doc["traceEvents"], run.traced_pids()[0], log)
run.finish()

# ---- example 5: four processes ------------------------------------------
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/launch_ranks", "4"], env=MONOTONIC)
doc = perfetto(run, "job.json")
if doc:
    check_rules(run, doc, threads_of(run))
    pids = {e["pid"] for e in doc["traceEvents"]}
    run.equal("perfetto: processes", sorted(pids), sorted(run.ledger.pids))
run.finish()
