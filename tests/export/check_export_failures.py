#!/usr/bin/env python3
"""`vramtrace export` where allocations fail and where several processes
share GPUs, against the simulated driver's ledger:
  - example 3 (examples/deepspeed_init_oom.c, one 6.93 GiB request fails):
    Perfetto's failure instant carries the ledger's numbers, memory-viz has
    the oom entry (request, the driver's free bytes), folded --at oom:1 adds
    up to what the process held when it failed;
  - example 5 (examples/launch_ranks.c, four ranks on two GPUs): Perfetto
    has one process per rank, named with its rank and host, each with the
    ledger's peak on its GPU; folded lines start with the process and
    device and add up per rank; memory-viz asks which process (--pid) and
    then holds that rank's peak.
"""
import json
import os
import re
import subprocess

from export_common import (parse_args, run_example, export, exported, folded_sum, load_pickle,
                           replay_device_trace, perfetto_counter_max, memory_viz_problems,
                           format_bytes)

args = parse_args()

# ---- example 3: a failed allocation ------------------------------------
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/deepspeed_init_oom"],
                  env={"VTSIM_MEMORY": "31.50GiB"}, expect_status=1)
led = run.ledger
pid = run.traced_pids()[0] if run.traced_pids() else 0
truth = led.failures(pid)
run.equal("failed allocations in the ledger", len(truth), 1)
t = truth[0] if truth else {}

path = exported(run, "perfetto", "trace.json")
if path:
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    fails = [e for e in events if e.get("ph") == "i" and e["name"].startswith("allocation failed")]
    run.equal("perfetto: failure instants", len(fails), len(truth))
    if fails and t:
        a = fails[0]["args"]
        run.equal("perfetto: requested_bytes", a.get("requested_bytes"), t["requested"])
        run.equal("perfetto: free_bytes", a.get("free_bytes"), t["free"])
        run.equal("perfetto: total_bytes", a.get("total_bytes"), t["total"])
        run.equal("perfetto: process_bytes", a.get("process_bytes"), t["process_bytes"])
        run.equal("perfetto: verdict", a.get("verdict"), "exhausted")
    run.equal("perfetto: device 0 counter maximum", perfetto_counter_max(events, pid, "device 0"),
              led.peak(pid))

path = exported(run, "memory-viz", "snapshot.pickle")
if path:
    bad = memory_viz_problems(path)
    if bad:
        run.fail("memory-viz: opcodes memory_viz refuses: %s" % bad)
    trace = load_pickle(path)["device_traces"][0]
    ooms = [e for e in trace if e["action"] == "oom"]
    run.equal("memory-viz: oom entries", len(ooms), len(truth))
    if ooms and t:
        run.equal("memory-viz: oom size", ooms[0]["size"], t["requested"])
        run.equal("memory-viz: oom device_free", ooms[0]["device_free"], t["free"])
    run.equal("memory-viz: replayed peak", replay_device_trace(trace)[0], led.peak(pid))

if t:
    run.equal("folded --at oom:1: bytes", folded_sum(run, "--at", "oom:1"), t["process_bytes"])
    # report --at oom:1: what the process held then, as the text tells it
    text = run.text_report("--at", "oom:1")
    want = "pid %d device 0 at failure 1 (" % pid
    line = next((l for l in text.splitlines() if l.startswith(want)), "")
    if not line.endswith(": %s held; top stacks then:" % format_bytes(t["process_bytes"])) or \
            "%s requested" % format_bytes(t["requested"]) not in line:
        run.fail("report --at oom:1: %r, want %s... %s requested ... %s held" % (
            line, want, format_bytes(t["requested"]), format_bytes(t["process_bytes"])))
r = subprocess.run([run.vramtrace, "report", "--at", "oom:2", run.traces], env=run.env,
                   capture_output=True, text=True, timeout=60)
if r.returncode != 2 or "no failure 2; the most of one process: 1" not in r.stderr:
    run.fail("report --at oom:2 (one failure): exit %d, %r" % (r.returncode, r.stderr))
# The export keeps the report's rule: no failure N is an error, not an
# empty file.
p = export(run, "folded", "--at", "oom:2")
if p.returncode != 2 or p.stdout or "no failure 2; the most of one process: 1" not in p.stderr:
    run.fail("folded --at oom:2 (there is one failure): exit %d, %r, %r"
             % (p.returncode, p.stdout[:80], p.stderr))
run.finish()

# ---- example 5: four ranks on two GPUs ----------------------------------
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/launch_ranks", "4"])
led = run.ledger
ranks = {int(m.group(2)): int(m.group(1))
         for m in re.finditer(r"launch_ranks: rank (\d+) pid (\d+)", run.proc.stdout)}
run.equal("ranks started", sorted(ranks.values()), [0, 1, 2, 3])
path = exported(run, "perfetto", "job.json")
if path:
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    host = run.report["processes"][0]["hostname"]
    for pid, rank in sorted(ranks.items()):
        dev = rank % 2
        want = "pid %d, rank %d, host %s" % (pid, rank, host)
        if want not in names.get(pid, ""):
            run.fail("perfetto: process %d is named %r, not with %r" % (pid, names.get(pid), want))
        run.equal("perfetto: rank %d device %d counter maximum" % (rank, dev),
                  perfetto_counter_max(events, pid, "device %d" % dev), led.peak(pid, dev))

# No allocation failed: --at oom:1 is an error in the report and the
# export alike, and the export leaves no file behind.
nothing = os.path.join(run.tmp, "oom1.folded")
for what, p in (("report", subprocess.run([run.vramtrace, "report", "--at", "oom:1", run.traces],
                                          env=run.env, capture_output=True, text=True,
                                          timeout=60)),
                ("export --format folded", export(run, "folded", "--at", "oom:1",
                                                  output=nothing))):
    if p.returncode != 2 or "no failure 1; no allocation failed" not in p.stderr:
        run.fail("%s --at oom:1 (no failure): exit %d, %r" % (what, p.returncode, p.stderr))
if os.path.exists(nothing):
    run.fail("export --at oom:1 (no failure) left %s behind" % nothing)

p = export(run, "folded")
if p.returncode != 0:
    run.fail("folded exited %d: %s" % (p.returncode, p.stderr))
sums = {}
for line in p.stdout.splitlines():
    stack, _, count = line.rpartition(" ")
    root = stack.split(";")[0]
    sums[root] = sums.get(root, 0) + int(count)
run.equal("folded: one root per rank and device",
          sorted(sums), sorted("pid %d device %d" % (pid, rank % 2) for pid, rank in ranks.items()))
for pid, rank in sorted(ranks.items()):
    run.equal("folded: rank %d at its peak" % rank, sums.get("pid %d device %d" % (pid, rank % 2)),
              led.peak(pid, rank % 2))

p = export(run, "memory-viz", output=run.tmp + "/ambiguous.pickle")
if p.returncode != 2 or "--pid" not in p.stderr:
    run.fail("memory-viz of four processes without --pid: exit %d, %r" % (p.returncode, p.stderr))
pid = next((p for p, r in ranks.items() if r == 1), 0)
path = exported(run, "memory-viz", "rank1.pickle", "--pid", str(pid))
if path:
    traces = load_pickle(path)["device_traces"]
    run.equal("memory-viz --pid (rank 1): devices", len(traces), 2)
    run.equal("memory-viz --pid (rank 1): device 1 peak",
              replay_device_trace(traces[1] if len(traces) > 1 else [])[0], led.peak(pid, 1))
run.finish()
