#!/usr/bin/env python3
"""The exports' default caps (docs/internals/REPORT_INTERNALS.md "Exports and diff"),
on a long synthetic trace (bench/synth_trace: 250,000 events, an NVTX step
and an epoch range every 1,000, a failed allocation every 5,000), against
what the generator says it wrote (its peak, its final live bytes, its
ranges and failures), read the way the viewers read the files:

  - perfetto, by default: far fewer counter samples than changes (at most
    two a column, plus the start and end), json.load parses it, the
    trace-event rules hold, the counter's maximum is the generator's peak
    and its last value the final bytes, every range (B/E, b/e) and every
    failure is there, and otherData says what was left out; --all: one
    sample per change, nothing left out, the size said first on stderr;
  - memory-viz, by default: pickle.load reads it, exactly the latest
    100,000 entries of the --all file's, the same segments (the live set at
    the end: the generator's count and bytes), and its `vramtrace` key says
    how many entries there were; --all: every entry, every failure;
    --until: no entry after the window's end, and the segments are the
    allocations the --all file's entries leave live then; --at peak: the
    segments hold the generator's peak; --at oom:3: nothing after the
    third failure, and three failures; with two devices each device's
    list is the end of its --all list, 100,000 entries in all.

    check_export_caps.py --build BUILD_DIR [--src DIR] [--preload-first LIBS] [--tamper]

--tamper expects the wrong peak (one byte more): the check must fail.
"""
import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import memory_viz_problems, replay_device_trace  # noqa: E402
from trace_event_rules import trace_event_problems  # noqa: E402

EVENTS, PHASE_EVERY, FAIL_EVERY = 250000, 1000, 5000  # past 200,000 samples: capped
COLUMNS_MAX = 10000        # export_perfetto.c: VT_PERFETTO_COLUMNS_MAX
MEMVIZ_DEFAULT = 100000    # PyTorch's own default history
PID, TID = 4242, 4242      # bench/synth_trace.c's process and its one thread
START_REALTIME_NS = 1700000000000000000  # and its start: time_us counts from it

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--src")
ap.add_argument("--preload-first")
ap.add_argument("--tamper", action="store_true")
args = ap.parse_args()
VRAMTRACE = os.path.join(args.build, "analyzer", "vramtrace")
SYNTH = os.path.join(args.build, "bench", "synth_trace")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def equal(what, got, want):
    if got != want:
        fail("%s: %r, want %r" % (what, got, want))


def export(fmt, out, *options):
    p = subprocess.run([VRAMTRACE, "export", "--format", fmt, "-o", out, *options, TRACE],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("export --format %s %s exited %d: %s" % (fmt, " ".join(options), p.returncode,
                                                      p.stderr.strip()))
    return p.stderr


tmp = tempfile.mkdtemp(prefix="vt-export-caps-")
TRACE = os.path.join(tmp, "long.vtrace")
gen = subprocess.run([SYNTH, "--events", str(EVENTS), "--out", TRACE, "--phase-every",
                      str(PHASE_EVERY), "--fail-every", str(FAIL_EVERY)],
                     capture_output=True, text=True, timeout=120, check=True)
truth = dict(w.split("=") for w in gen.stdout.split() if "=" in w)
truth = {k: int(v) for k, v in truth.items()}
peak = truth["peak_bytes"] + (1 if args.tamper else 0)
if truth["failures"] < 40 or truth["pushes"] < 200:
    fail("the generator wrote too few phases or failures to test: %s" % gen.stdout)


def perfetto_checks(path, capped):
    size = os.path.getsize(path)
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    other = doc.get("otherData", {})
    problems = trace_event_problems(doc, {PID: {TID}})
    if problems:
        fail("perfetto %s: trace-event rules: %s" % (path, problems[:5]))
    counter = [e["args"]["bytes"] for e in events if e["ph"] == "C" and e["name"] == "device 0"]
    equal("perfetto %s: counter maximum (the peak)" % path, max(counter), peak)
    equal("perfetto %s: counter's last value" % path, counter[-1], truth["final_bytes"])
    count = {ph: sum(1 for e in events if e["ph"] == ph) for ph in "BEbe"}
    for ph, want in (("B", truth["pushes"]), ("E", truth["pushes"]), ("b", truth["starts"]),
                     ("e", truth["starts"])):
        equal("perfetto %s: %r events (every range)" % (path, ph), count[ph], want)
    fails = [e for e in events if e["ph"] == "i" and e["name"].startswith("allocation failed")]
    equal("perfetto %s: failures" % path, len(fails), truth["failures"])
    equal("perfetto %s: otherData counter_samples_written" % path,
          other.get("counter_samples_written"), len(counter))
    if capped:
        if len(counter) > 2 * COLUMNS_MAX + 2:
            fail("perfetto default: %d counter samples, more than %d columns hold"
                 % (len(counter), COLUMNS_MAX))
        if size > 5 * 10**6:
            fail("perfetto default: %d bytes for %d events, not capped" % (size, EVENTS))
        if "counter" not in other.get("left_out", "") or "--all" not in other["left_out"]:
            fail("perfetto default: otherData does not say what was left out: %r" % other)
        if not other.get("counter_samples", 0) > len(counter):
            fail("perfetto default: otherData counter_samples %r not above the %d written"
                 % (other.get("counter_samples"), len(counter)))
    else:
        equal("perfetto --all: left_out", other.get("left_out"), "nothing")
        equal("perfetto --all: every sample", other.get("counter_samples"), len(counter))
        # every change of a synthetic trace is at its own instant: one sample each
        if len(counter) < EVENTS - truth["failures"]:
            fail("perfetto --all: %d samples for %d changes" % (len(counter), EVENTS))
    return size


export("perfetto", os.path.join(tmp, "capped.json"))
capped_size = perfetto_checks(os.path.join(tmp, "capped.json"), True)
err = export("perfetto", os.path.join(tmp, "all.json"), "--all")
if "--all" not in err or "MB" not in err:
    fail("perfetto --all: its size is not said first: %r" % err)
all_size = perfetto_checks(os.path.join(tmp, "all.json"), False)
if not all_size > 10 * capped_size:
    fail("perfetto: --all (%d bytes) not much larger than the default (%d)"
         % (all_size, capped_size))


def load(path):
    problems = memory_viz_problems(path)
    if problems:
        fail("memory-viz %s: opcodes memory_viz refuses: %s" % (path, problems))
    with open(path, "rb") as f:
        return pickle.load(f)


def live_after(entries):
    """The allocations entries leave live: {addr: size} (memory_viz's view)."""
    live = {}
    for e in entries:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    return live


export("memory-viz", os.path.join(tmp, "capped.pickle"))
export("memory-viz", os.path.join(tmp, "all.pickle"), "--all")
capped, full = load(os.path.join(tmp, "capped.pickle")), load(os.path.join(tmp, "all.pickle"))
ctrace, ftrace = capped["device_traces"][0], full["device_traces"][0]
equal("memory-viz default: entries (the cap)", len(ctrace), MEMVIZ_DEFAULT)
if ctrace != ftrace[-MEMVIZ_DEFAULT:]:
    fail("memory-viz default: not the latest %d entries of --all's" % MEMVIZ_DEFAULT)
equal("memory-viz: entries said", capped["vramtrace"].get("entries"), len(ftrace))
if "oldest" not in capped["vramtrace"].get("left_out", ""):
    fail("memory-viz default: the vramtrace key does not say what was left out: %r"
         % capped["vramtrace"])
equal("memory-viz --all: left_out", full["vramtrace"].get("left_out"), "nothing")
equal("memory-viz --all: failures", sum(1 for e in ftrace if e["action"] == "oom"),
      truth["failures"])
for name, snap in (("default", capped), ("--all", full)):
    equal("memory-viz %s: segments (live at the end)" % name, len(snap["segments"]),
          truth["live"])
    equal("memory-viz %s: segment bytes" % name,
          sum(s["total_size"] for s in snap["segments"]), truth["final_bytes"])
peak_all, _ = replay_device_trace(ftrace)
equal("memory-viz --all: replayed peak", peak_all, peak)

# A window: --until 0.3s (after the process started) keeps nothing later,
# and its segments are what the full history leaves live then.
start_us = START_REALTIME_NS // 1000
export("memory-viz", os.path.join(tmp, "until.pickle"), "--until", "300ms", "--all")
until = load(os.path.join(tmp, "until.pickle"))
utrace = until["device_traces"][0]
end_us = start_us + 300000
if not utrace or max(e["time_us"] for e in utrace) > end_us:
    fail("memory-viz --until 300ms: entries after the window's end")
want = live_after(e for e in ftrace if e["time_us"] <= end_us and e["action"] != "oom")
equal("memory-viz --until 300ms: segments (live at the window's end)",
      sorted((s["address"], s["total_size"]) for s in until["segments"]), sorted(want.items()))

# --at peak: the window ends at the peak's first instant; its segments hold
# the generator's peak. --at oom:3: nothing after the third failure.
export("memory-viz", os.path.join(tmp, "peak.pickle"), "--at", "peak")
at_peak = load(os.path.join(tmp, "peak.pickle"))
equal("memory-viz --at peak: segment bytes (the peak)",
      sum(s["total_size"] for s in at_peak["segments"]), peak)
export("memory-viz", os.path.join(tmp, "oom3.pickle"), "--at", "oom:3", "--all")
oom3 = load(os.path.join(tmp, "oom3.pickle"))["device_traces"][0]
third_us = [e["time_us"] for e in ftrace if e["action"] == "oom"][2]
if max(e["time_us"] for e in oom3) > third_us:
    fail("memory-viz --at oom:3: entries after the third failure")
equal("memory-viz --at oom:3: failures", sum(1 for e in oom3 if e["action"] == "oom"), 3)

# Two devices (slot k on device k % 2): the ring holds the latest entries of
# both together, so each device's list by default is the end of its --all
# list, 100,000 in all; --all (one replay a device) has the same segments.
TRACE = os.path.join(tmp, "two.vtrace")
subprocess.run([SYNTH, "--events", "100000", "--out", TRACE, "--devices", "2"],
               capture_output=True, check=True, timeout=120)
export("memory-viz", os.path.join(tmp, "two.pickle"))
export("memory-viz", os.path.join(tmp, "two_all.pickle"), "--all")
two, two_all = load(os.path.join(tmp, "two.pickle")), load(os.path.join(tmp, "two_all.pickle"))
equal("memory-viz, 2 devices: device traces", len(two["device_traces"]), 2)
equal("memory-viz, 2 devices: --all's device traces", len(two_all["device_traces"]), 2)
equal("memory-viz, 2 devices: --all's entries, as said",
      sum(len(d) for d in two_all["device_traces"]), two_all["vramtrace"].get("entries"))
equal("memory-viz, 2 devices: entries in all", sum(len(d) for d in two["device_traces"]),
      MEMVIZ_DEFAULT)
for d, (kept, every) in enumerate(zip(two["device_traces"], two_all["device_traces"])):
    if not kept or every[len(every) - len(kept):] != kept:
        fail("memory-viz, 2 devices: device %d's entries are not the end of --all's" % d)
equal("memory-viz, 2 devices: segments", two["segments"], two_all["segments"])

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    sys.exit(1)
print("ok: perfetto %d bytes capped, %d with --all; memory-viz %d of %d entries"
      % (capped_size, all_size, len(ctrace), len(ftrace)))
