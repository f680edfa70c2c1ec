#!/usr/bin/env python3
"""`vramtrace diff` of two runs of example 1 (examples/train_eval_phases.c,
--scale 1.0 and --scale 1.2), against both runs' ledgers: the peak and
every phase's peak before and after, the call sites at the peak (they add
up to each run's peak; the key/value cache grew most), and --fail-above at
both sides of the ledger's growth, as a share and as a size. Then a
snapshot against itself, and bad arguments."""
import json
import os
import subprocess

from export_common import parse_args, run_example, format_bytes

args = parse_args()


def example(scale):
    return run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                              "{build}/examples/train_eval_phases", "--scale", scale],
                       phase_log=True)


small, big = example("1.0"), example("1.2")
run = big  # failures are collected here
dirs = [os.path.join(r.tmp, "traces") for r in (small, big)]


def diff(*argv):
    return subprocess.run([run.vramtrace, "diff"] + list(argv), env=run.env,
                          capture_output=True, text=True, timeout=60)


def truth(r):
    pid = r.traced_pids()[0] if r.traced_pids() else 0
    return r.ledger.peak(pid), {n: p for n, (p, _) in r.ledger.phase_peaks(pid, r.phase_log).items()}


(p1, ph1), (p2, ph2) = truth(small), truth(big)
if p2 <= p1:
    run.fail("the ledger says --scale 1.2 does not peak higher: the example changed")

d = diff("--json", "--top", "0", *dirs)
if d.returncode != 0:
    run.fail("diff --json exited %d: %s" % (d.returncode, d.stderr))
    doc = {"units": []}
else:
    doc = json.loads(d.stdout)
units = {u["name"]: u for u in doc["units"]}
run.equal("diff: units", sorted(units), ["device 0"])
u = units.get("device 0", {"phases": [], "sites": []})
run.equal("diff: before_peak_bytes", u.get("before_peak_bytes"), p1)
run.equal("diff: after_peak_bytes", u.get("after_peak_bytes"), p2)
run.equal("diff: change_bytes", u.get("change_bytes"), p2 - p1)
got = {p["name"]: (p["before_peak_bytes"], p["after_peak_bytes"]) for p in u["phases"]}
run.equal("diff: phases", got, {n: (ph1.get(n), ph2.get(n)) for n in set(ph1) | set(ph2)})
sites = u["sites"]
run.equal("diff: sites' before bytes add up", sum(s["before_bytes"] for s in sites), p1)
run.equal("diff: sites' after bytes add up", sum(s["after_bytes"] for s in sites), p2)
if not sites or "grow_kv_cache" not in sites[0]["frames"] or sites[0]["status"] != "grew":
    run.fail("diff: the biggest change is not the key/value cache growing: %s" % sites[:1])
changes = [abs(s["change_bytes"]) for s in sites]
run.equal("diff: biggest change first", changes, sorted(changes, reverse=True))

text = diff(*dirs)
want = "device 0: peak %s -> %s" % (format_bytes(p1), format_bytes(p2))
if want not in text.stdout:
    run.fail("diff text does not say %r:\n%s" % (want, text.stdout))

# Sites named as the text report names them (report/stack_where.c): the
# key/value cache's row, whole lines on both sides (--width 0), and every
# frame with --full-stacks; --width fits the rows.
rep_rows = [l for l in big.text_report("--width", "0").splitlines() if "grow_kv_cache" in l]
diff_rows = [l for l in diff("--width", "0", *dirs).stdout.splitlines() if "grow_kv_cache" in l]
if not rep_rows or not diff_rows or not diff_rows[0].endswith(
        rep_rows[0][rep_rows[0].index("device_alloc"):]):
    run.fail("diff names the kv cache's site %r, the report %r" % (diff_rows[:1], rep_rows[:1]))
full = diff("--full-stacks", *dirs).stdout
if "cudaMallocAsync (simcudart_api.c:" not in full or "_start" not in full:
    run.fail("diff --full-stacks: no runtime or start-up frame:\n%s" % full)
narrow = [l for l in diff("--width", "110", *dirs).stdout.splitlines() if " via " in l]
if not any(" more " in l for l in narrow) or len(set(narrow)) != len(narrow):
    run.fail("diff --width 110: rows not cut, or two alike: %r" % narrow)
if any(len(l) > 110 for l in narrow if l.count(" <- ") < 2):  # a parted row may be longer
    run.fail("diff --width 110: rows longer than 110: %r" % narrow)

# --fail-above on both sides of the ledger's growth.
grow = p2 - p1
pct = grow * 100.0 / p1
for limit, status in [("%.3f%%" % (pct - 0.01), 1), ("%.3f%%" % (pct + 0.01), 0),
                      ("%dB" % (grow - 1), 1), ("%dB" % grow, 0), ("5%", 1), ("256MiB", 1)]:
    r = diff("--fail-above", limit, *dirs)
    run.equal("diff --fail-above %s: exit status (growth %d bytes, %.3f%%)" % (limit, grow, pct),
              r.returncode, status)
r = diff("--fail-above", "5%", dirs[1], dirs[0])
run.equal("diff --fail-above 5% AFTER BEFORE (the peak shrank): exit status", r.returncode, 0)

# A snapshot against itself: no change, its peak as the report reads it.
snap = os.path.join(args.src, "tests", "data", "pytorch-snapshots", "eor.pickle")
rep = json.loads(subprocess.run([run.vramtrace, "report", "--json", snap], env=run.env,
                                capture_output=True, text=True, timeout=60).stdout)
r = diff("--json", "--fail-above", "0%", snap, snap)
run.equal("diff of a snapshot with itself: exit status", r.returncode, 0)
if r.returncode == 0:
    su = json.loads(r.stdout)["units"]
    run.equal("diff of a snapshot with itself: peaks",
              [(x["before_peak_bytes"], x["after_peak_bytes"]) for x in su],
              [(dv["peak_allocated_bytes"],) * 2 for dv in rep["snapshots"][0]["devices"]])
    run.equal("diff of a snapshot with itself: changed sites",
              [s for x in su for s in x["sites"] if s["status"] != "same"], [])

# Bad arguments: exit status 2 and a message.
for argv, words in [([dirs[0]], "two runs"),
                    ([dirs[0], "/nonexistent/run.vtrace"], "/nonexistent/run.vtrace"),
                    (["--fail-above", "5 percent", *dirs], "--fail-above wants"),
                    # a bare number: a share or bytes? (it was taken as 5 bytes)
                    (["--fail-above", "5", *dirs], "write 5% for a share, or a size with its unit")]:
    r = diff(*argv)
    if r.returncode != 2 or words not in r.stderr:
        run.fail("diff %s: exit %d, %r" % (argv, r.returncode, r.stderr))
run.finish()  # the diff's figures first: under --tamper they must fail
small.finish()
