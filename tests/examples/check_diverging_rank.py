#!/usr/bin/env python3
"""Example 7 (examples/diverging_rank.c): the job's divergence
(docs/user/REPORT.md, "Divergence") against the simulated driver's ledger
and the example's phase log, on one simulated GPU a rank.

1. Four ranks, one of which keeps 24 MiB at every step from step 5: the
   report names that rank and only it - its pid, the site (the line of
   cache_batch's cudaMalloc in the source), the bytes above the median
   rank's at its peak, the step the growth began at and the rate - in
   jobs[].divergence and in the text. The truth: each rank's allocations
   made inside a step (the phase log's push/pop, its thread's) and still
   live after it (the ledger), per step; at the rank's peak (the ledger's),
   the bytes of those kept ones; the median over the ranks.
2. Five ranks, none keeping anything, sizes within +-2% of each other (the
   ledger shows the peaks differ): no divergence.
3. The traces of run 1 split over two "nodes": `report --summary` on each
   and `report` over both summaries say what the traces say (jobs[].divergence
   and the text's lines).
`vramtrace top -b -n 1` over runs 1 and 2 marks the rows of the ranks that
diverge ("*2"), and only those.
"""
import json
import os
import re
import shutil
import subprocess

from example_harness import format_bytes, parse_args, run_example
from ledger_truth import parse_line
from report_schema import SUMMARY_SCHEMA, schema_errors

args = parse_args()
MiB = 1 << 20
SRC = os.path.join(os.path.abspath(args.src), "examples", "diverging_rank.c")


def ranks_of(run):
    return {int(m.group(2)): int(m.group(1))
            for m in re.finditer(r"diverging_rank: rank (\d+) pid (\d+)", run.proc.stdout)}


def site_truth(function="static void *cache_batch(", call="MALLOC_OR_EXIT", name="cache_batch"):
    """cache_batch's cudaMalloc line in the source: the site's name."""
    lines = open(SRC).read().split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith(function))
    line = next(i for i in range(start, len(lines)) if call in lines[i]) + 1
    return "%s (diverging_rank.c:%d)" % (name, line)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) // 2


def kept_truth(run, ranks):
    """Per pid: the bytes kept at each step's end (allocated inside the
    step, live after it), and the kept bytes live at the rank's peak."""
    steps = {}
    for l in open(run.phase_log):
        f = l.split()
        tid = int(f[-1])
        if f[0] == "push" and f[1] == "step":
            steps.setdefault(tid, []).append([int(f[2]), None])
        elif f[0] == "pop" and steps.get(tid) and steps[tid][-1][1] is None:
            steps[tid][-1][1] = int(f[1])
    led = run.ledger
    out = {}
    for pid, rank in ranks.items():
        allocs = {}  # addr -> [line, ns, size, freed line or None]
        for i, e in enumerate(led.lines):
            if int(e["pid"]) != pid or int(e["result"]) != 0 or e.get("kind") != "device":
                continue
            if e["op"] == "alloc":
                allocs[e["addr"] + "@%d" % i] = [i, int(e["ns"]), int(e["size"]), None, e["addr"]]
            elif e["op"] == "free":
                for a in allocs.values():
                    if a[4] == e["addr"] and a[3] is None:
                        a[3] = i
        ns_of = [int(e["ns"]) for e in led.lines]
        per_step, kept = [], []
        for push, pop in steps.get(pid, []):
            k = [a for a in allocs.values() if push <= a[1] <= pop and
                 (a[3] is None or ns_of[a[3]] > pop)]
            per_step.append(sum(a[2] for a in k))
            kept += k
        peak_line = led.peaks[(pid, rank, "device")][1]
        at_peak = sum(a[2] for a in kept if a[0] <= peak_line and (a[3] is None or a[3] > peak_line))
        out[pid] = (per_step, at_peak)
    return out


def divergence_truth(run, ranks, site, tamper=0):
    """jobs[].divergence as the ledger and the phase log say it."""
    truth = kept_truth(run, ranks)
    at_peak = {pid: t[1] + (tamper if t[1] else 0) for pid, t in truth.items()}
    med = median(at_peak.values())
    rates, first_step = {}, {}
    for pid, (per_step, kept) in truth.items():
        growing = [k for k, b in enumerate(per_step) if b]
        rates[pid] = per_step[growing[0]] if growing else 0
        if growing:
            first = first_step[pid] = growing[0]
            run.equal("rank %d keeps the same bytes at every step from step %d to the last" % (
                ranks[pid], first + 1), per_step[first:], [per_step[first]] * (len(per_step) - first))
    med_rate = median(rates.values())
    return [{"rank": ranks[pid], "pid": pid, "site": site,
             "bytes_above_median": at_peak[pid] - med, "from_step": first_step[pid] + 1,
             "bytes_per_step": rates[pid] - med_rate} for pid in sorted(first_step, key=ranks.get)]


# ---- 1. one rank diverges ----
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/diverging_rank", "4"], phase_log=True)
ranks = ranks_of(run)
run.equal("ranks started", sorted(ranks.values()), [0, 1, 2, 3])
# --tamper: a phantom 1 MiB kept with the batches of the rank that keeps them
want = divergence_truth(run, ranks, site_truth(), MiB if args.tamper else 0)
run.equal("ranks that keep bytes across steps (the ledger)", [w["rank"] for w in want], [2])
jobs = run.report.get("jobs", [])
run.equal("jobs", len(jobs), 1)
got = jobs[0].get("divergence") if jobs else None
run.equal("jobs[0].divergence", got, want)
for w in want:
    run.says("rank %d (pid %d) diverges: +%s a step from step %d at %s, %s above the median rank "
             "at its peak" % (w["rank"], w["pid"], format_bytes(w["bytes_per_step"]),
                              w["from_step"], w["site"], format_bytes(w["bytes_above_median"])))
run.says("more than 10% above it, and at least 2% of the median device peak")
run.equal("lines that say a rank diverges", run.text.count(" diverges: "), len(want))
# the schema holds every key of an entry
if got:
    broken = json.loads(json.dumps(run.report))
    broken["jobs"][0]["divergence"][0].pop("site")
    run.equal("the schema refuses a divergence without its site", schema_errors(broken) != [], True)



def top_marks(r):
    """`vramtrace top -b -n 1` over the finished job's traces: the ranks
    whose rows carry the mark of a rank that diverges (\"*2\")."""
    t = subprocess.run([r.vramtrace, "top", "-b", "-n", "1", r.traces], env=r.env,
                       capture_output=True, text=True, timeout=60)
    r.equal("top exit status (%s)" % t.stderr.strip(), t.returncode, 0)
    rows = t.stdout.split(" RANK LOCAL", 1)[-1].split("\n")[1:]
    return sorted(int(l.split()[0][1:]) for l in rows if l.split() and l.split()[0].startswith("*"))


run.equal("top: the rows marked as diverging", top_marks(run), [w["rank"] for w in want])

# ---- 3. the same from the summaries of two nodes ----
nodes = os.path.join(run.tmp, "nodes")
summaries = []
for node, members in {"node-a": (0, 3), "node-b": (1, 2)}.items():
    d = os.path.join(nodes, node)
    os.makedirs(d)
    for pid, rank in ranks.items():
        if rank in members:
            shutil.copy(os.path.join(run.traces, "trace.%d.vtrace" % pid), d)
    s = os.path.join(nodes, node + ".summary.json")
    r = subprocess.run([run.vramtrace, "report", "--summary", s, d], env=run.env,
                       capture_output=True, text=True, timeout=60)
    run.equal("report --summary %s exit status (%s)" % (node, r.stderr.strip()), r.returncode, 0)
    summaries.append(s)
    if r.returncode == 0:
        errors = schema_errors(json.load(open(s)), SUMMARY_SCHEMA)
        run.equal("%s's summary against docs/summary.schema.json" % node, errors, [])
r = subprocess.run([run.vramtrace, "report", "--json"] + summaries, env=run.env,
                   capture_output=True, text=True, timeout=60)
from_summaries = json.loads(r.stdout).get("jobs", [{}]) if r.returncode == 0 else [{}]
run.equal("jobs[0].divergence from the summaries", from_summaries[0].get("divergence"), got)
text = subprocess.run([run.vramtrace, "report"] + summaries, env=run.env,
                      capture_output=True, text=True, timeout=60).stdout
# a summary that names each site of a rank twice (written by hand, or
# broken): each counts once, nothing crashes
doubled = os.path.join(nodes, "doubled.summary.json")
if summaries and os.path.exists(summaries[-1]):
    doc = json.load(open(summaries[-1]))
    for p in doc["jobs"][0]["processes"]:
        p["sites"] = p.get("sites", []) * 2
    json.dump(doc, open(doubled, "w"))
    r = subprocess.run([run.vramtrace, "report", "--json", summaries[0], doubled], env=run.env,
                       capture_output=True, text=True, timeout=60)
    run.equal("report over a summary naming sites twice: exit status (%s)" % r.stderr.strip()[-200:],
              r.returncode, 0)
    run.equal("jobs[0].divergence from a summary naming sites twice",
              json.loads(r.stdout).get("jobs", [{}])[0].get("divergence") if r.returncode == 0 else None,
              got)


def divergence_lines(t):
    return [l for l in t.split("\n") if " diverges: " in l or "diverging from the median" in l]


run.equal("the text's divergence from the summaries", divergence_lines(text),
          divergence_lines(run.text))

# ---- 4. the kept batch in 40 pieces from 40 stacks of one site, each
# stack far under 0.5% of the rank's peak: the site is summed whole ----
spr = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                            "{build}/examples/diverging_rank", "4"],
                     env={"EXAMPLE_DIVERGE_SPREAD": "1"}, phase_log=True)
pranks = ranks_of(spr)
spr.equal("ranks started", sorted(pranks.values()), [0, 1, 2, 3])
pwant = divergence_truth(spr, pranks, site_truth("static void cache_batch_spread(",
                                                    "KEEP_8_PIECES()", "cache_batch_spread"))
pieces = [e for e in spr.ledger.lines if e["op"] == "alloc" and e.get("size") == str(600 << 10)]
spr.equal("pieces of 600 KiB the rank kept (the ledger)", len(pieces), 40 * 8)
pjobs = spr.report.get("jobs", [])
spr.equal("jobs[0].divergence of a site spread over 40 stacks",
             pjobs[0].get("divergence") if pjobs else None, pwant)

# ---- 2. a steady job, sizes within 2% of each other ----
steady = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                            "{build}/examples/diverging_rank", "5"],
                     env={"EXAMPLE_DIVERGE_RANK": "-1"}, phase_log=True)
sranks = ranks_of(steady)
steady.equal("ranks started", sorted(sranks.values()), [0, 1, 2, 3, 4])
peaks = [steady.ledger.peak(pid, rank) for pid, rank in sranks.items()]
spread = (max(peaks) - min(peaks)) / max(peaks) if peaks else 0
steady.equal("the ledger's peaks differ by 3 to 5% (the jitter is there)", 0.03 < spread < 0.05, True)
kept = kept_truth(steady, sranks)
steady.equal("bytes kept across steps (the ledger)", sum(sum(k[0]) for k in kept.values()), 0)
sjobs = steady.report.get("jobs", [])
steady.equal("steady jobs[0].divergence", sjobs[0].get("divergence") if sjobs else None, [])
steady.equal("lines that say a rank diverges", steady.text.count(" diverges: "), 0)
steady.equal("top: the rows marked as diverging", top_marks(steady), [])

steady.failures = run.failures + spr.failures + steady.failures
steady.finish()
