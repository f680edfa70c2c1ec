#!/usr/bin/env python3
"""`vramtrace export` on example 1 (examples/train_eval_phases.c), every
figure against the simulated driver's ledger:
  - perfetto: Chrome trace-event JSON; its device counter's maximum is the
    ledger's peak (and the report's), its phase slices the example's phases;
  - memory-viz: a pickle Python loads, with only opcodes memory_viz accepts;
    replaying its device trace gives the ledger's peak and final bytes, and
    `vramtrace report` reads it back to the same peak;
  - folded: the lines add up to the live bytes at the peak, at each phase's
    peak, and at a moment between two ledger events (--at TIME).

    check_exports.py --build BUILD --src SRC [--preload-first LIBS] [--tamper]
"""
import json
import subprocess
import time

from export_common import (parse_args, run_example, exported, folded_sum, load_pickle,
                           memory_viz_problems, replay_device_trace, perfetto_counter_max,
                           format_bytes)

args = parse_args()
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/train_eval_phases"], phase_log=True,
                  env={"VRAMTRACE_CLOCK": "monotonic"})  # the ledger's clock: --at TIME below
led = run.ledger
pid = run.traced_pids()[0] if run.traced_pids() else 0
dev = run.device(pid)
peak = led.peak(pid)
run.equal("report peak_bytes", dev["peak_bytes"], peak)
phases = led.phase_peaks(pid, run.phase_log)

# ---- perfetto -----------------------------------------------------------
path = exported(run, "perfetto", "trace.json")
if path:
    with open(path) as f:
        doc = json.load(f)
    events = doc.get("traceEvents", [])
    run.equal("perfetto: device 0 counter maximum", perfetto_counter_max(events, pid, "device 0"),
              peak)
    last = [e["args"]["bytes"] for e in events if e.get("ph") == "C" and e["name"] == "device 0"]
    run.equal("perfetto: device 0 counter at the end", last[-1] if last else None, led.final(pid))
    names = [e for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
    if not names or "pid %d" % pid not in names[0]["args"]["name"]:
        run.fail("perfetto: no process_name naming pid %d: %s" % (pid, names))
    slices = {e["name"] for e in events if e.get("ph") == "B" and e.get("pid") == pid}
    run.equal("perfetto: phase slices", sorted(slices), sorted(phases))
    ends = sum(1 for e in events if e.get("ph") == "E")
    run.equal("perfetto: every slice ends", ends, sum(1 for e in events if e.get("ph") == "B"))
    peaks = [e for e in events if e.get("ph") == "i" and e["name"].startswith("peak device 0")]
    run.equal("perfetto: the peak instant's bytes",
              peaks[0]["args"]["peak_bytes"] if peaks else None, peak)
    # its label rounds as every view does (example 1's 11.625 GiB: "11.63 GiB")
    run.equal("perfetto: the peak instant's name", peaks[0]["name"] if peaks else None,
              "peak device 0: " + format_bytes(peak))

# ---- memory-viz ---------------------------------------------------------
path = exported(run, "memory-viz", "snapshot.pickle")
if path:
    bad = memory_viz_problems(path)
    if bad:
        run.fail("memory-viz: opcodes memory_viz refuses: %s" % bad)
    snap = load_pickle(path)
    traces = snap.get("device_traces", [])
    run.equal("memory-viz: devices", len(traces), 1)
    got_peak, got_final = replay_device_trace(traces[0] if traces else [])
    run.equal("memory-viz: replayed device_traces peak", got_peak, peak)
    run.equal("memory-viz: replayed device_traces end", got_final, led.final(pid))
    run.equal("memory-viz: final segments", sum(s["total_size"] for s in snap["segments"]),
              led.final(pid))
    actions = {e["action"] for e in traces[0]} if traces else set()
    run.equal("memory-viz: actions", sorted(actions),
              sorted(["alloc", "free_requested", "free_completed", "segment_alloc",
                      "segment_free"]))
    if traces and not all("time_us" in e and isinstance(e.get("frames"), list) for e in traces[0]):
        run.fail("memory-viz: an entry without time_us or frames")
    # time_us is wall-clock time, as PyTorch writes it (memory_viz shows it
    # as a date): within the last ten minutes by this machine's clock
    now_us = time.time() * 1e6
    late = [e["time_us"] for e in (traces[0] if traces else [])
            if not now_us - 600e6 <= e.get("time_us", 0) <= now_us]
    if late:
        run.fail("memory-viz: time_us not wall-clock now: %s" % late[:3])
    names = {f["name"] for e in traces[0] for f in e["frames"]} if traces else set()
    if "grow_kv_cache" not in names:
        run.fail("memory-viz: no frame names grow_kv_cache")
    # Our own snapshot reader reads it back to the same figures.
    rep = subprocess.run([run.vramtrace, "report", "--json", path], env=run.env,
                         capture_output=True, text=True, timeout=60)
    if rep.returncode != 0:
        run.fail("report on the exported pickle exited %d: %s" % (rep.returncode, rep.stderr))
    else:
        sd = json.loads(rep.stdout)["snapshots"][0]["devices"][0]
        run.equal("report of the pickle: peak_allocated_bytes", sd["peak_allocated_bytes"], peak)
        run.equal("report of the pickle: peak_reserved_bytes", sd["peak_reserved_bytes"], peak)
        run.equal("report of the pickle: final_allocated_bytes", sd["final_allocated_bytes"],
                  led.final(pid))

# ---- folded -------------------------------------------------------------
run.equal("folded at the peak: bytes", folded_sum(run), peak)
run.equal("folded --at peak: bytes", folded_sum(run, "--at", "peak"), peak)
for name, (phase_peak, _) in sorted(phases.items()):
    run.equal("folded --phase %s: bytes" % name, folded_sum(run, "--phase", name), phase_peak)
# --at TIME: halfway across a pause between two of the process's ledger
# events, counted from the process's start as the report counts. The
# tracer stamps CLOCK_MONOTONIC right after the driver returns, so a thread
# preempted in between stamps late: a pause is used only if no record of
# the trace is stamped inside it (20 us after its first event on). A free
# is stamped when it was called and lasts its duration (format version 5):
# one preempted before the driver freed spans the pause from its start,
# and the pause is not used either.
dump = subprocess.run([run.vramtrace, "dump", "--json", run.report["processes"][0]["file"]],
                      env=run.env, capture_output=True, text=True, timeout=60)
recs = [json.loads(line) for line in dump.stdout.splitlines()]
start = next((r["start_mono_ns"] for r in recs if r["type"] == "process"), None)
spans = [(r["time_ns"], r["time_ns"] + r.get("duration_ns", 0)) for r in recs if r["type"] == "mem"]
mine = [(int(e["ns"]), i) for i, e in enumerate(led.lines) if int(e["pid"]) == pid]


def quiet(a, b):
    return not any(t < b and a + 20_000 <= end for t, end in spans)


gap = max(((a, b, i) for (a, i), (b, _) in zip(mine, mine[1:])
           if b - a > 60_000 and led.total_at(i, pid) > 0 and quiet(a, b)),
          key=lambda g: g[1] - g[0], default=None)
if start is None or gap is None:
    run.fail("no process start in the trace, or no quiet pause between ledger events")
else:
    at = (gap[0] + 20_000 + gap[1]) // 2 - start
    run.equal("folded --at %dns: bytes" % at, folded_sum(run, "--at", "%dns" % at),
              led.total_at(gap[2], pid))
    # report --at: the same instant, told as the peak is
    live = led.live_sizes_at(gap[2], pid)
    text = run.text_report("--at", "%dns" % at)
    want = "pid %d device 0 at +%d.%03ds: %s live in %d allocation%s; top stacks then:" % (
        pid, (at + 500_000) // 10**9, (at + 500_000) // 10**6 % 1000, format_bytes(sum(live)),
        len(live), "" if len(live) == 1 else "s")
    if want not in text:
        run.fail("report --at %dns does not say %r:\n%s" % (at, want, text))
    rows = sum(1 for line in text.splitlines() if "via cudaMallocAsync" in line)
    if not rows or "peak 11.63 GiB at" in text.split("OOMs")[-1]:
        run.fail("report --at %dns: no stack rows, or the peak's section instead:\n%s" % (at, text))
# A bare phase name is --phase; a name that is none says which there are.
run.equal("report --at eval is --phase eval", run.text_report("--at", "eval"),
          run.text_report("--phase", "eval"))
bad = subprocess.run([run.vramtrace, "report", "--at", "1.5x", run.traces], env=run.env,
                     capture_output=True, text=True, timeout=60)
if bad.returncode != 2 or 'no phase "1.5x"; phases: ' not in bad.stderr:
    run.fail("report --at 1.5x: exit %d, %r" % (bad.returncode, bad.stderr))
run.finish()
