"""The merged replay against the truth of the events as they were written.

synth_trace writes a job of 24 ranks on 3 GPUs of one host, each rank on
two devices (6 GPUs in all: notes merged across GPUs), and again on one
(GPU by GPU: group_merge.c, merge_window), failing an allocation every 1499 events, one
rank 8 times as busy as the others (many events in one microsecond, a
queue that fills before the others': group_merge.h), and with --truth the
combined peak of every GPU, what each rank held then and the other ranks'
bytes at every failure, computed from the events it wrote (merged by time,
then rank, then file order); and a job of ranks that only allocate, whose
GPUs peak at their ranks' last allocations (group_merge.c, hand_rising).
The report's JSON on 1 and 2 threads must say
the same: each GPU's peak_bytes, peak_time_ns and bytes_at_peak per rank,
and each failure's other_traced_processes.

    job_merge_truth_test.py VRAMTRACE SYNTH_TRACE [--tamper]

--tamper: one GPU's truth is changed, so the check must fail.
"""
import json
import os
import subprocess
import sys
import tempfile

VRAMTRACE, SYNTH = sys.argv[1], sys.argv[2]
TAMPER = "--tamper" in sys.argv[3:]
PID0 = 10000  # synth_trace: pid = 10000 + rank
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        if len(failures) <= 10:
            print("FAIL:", what)


def report(d, threads):
    env = dict(os.environ, VRAMTRACE_ANALYZER_THREADS=str(threads))
    p = subprocess.run([VRAMTRACE, "report", "--json", "--no-symbols", d], capture_output=True,
                       text=True, env=env, timeout=240)
    check(p.returncode == 0, "report with %d threads exits 0 (%s)" % (threads, p.stderr[-300:]))
    return json.loads(p.stdout)


def check_job(d, devices, growing=False):
    """growing: each rank only allocates (200 of room for 400), no failure:
    every GPU reaches its peak at its ranks' last allocations, in slices
    whose notes only raise its total (group_merge.c, hand_rising)."""
    name = "%d%s" % (devices, "g" if growing else "")
    truth_path = os.path.join(d, "truth%s.json" % name)
    traces = os.path.join(d, "traces%s" % name)
    os.mkdir(traces)
    shape = (["--events", "200", "--live", "400"] if growing else
             ["--events", "12000", "--live", "200", "--fail-every", "1499", "--dense-rank", "5"])
    subprocess.run([SYNTH, "--ranks", "24", "--gpus", "3", "--devices", str(devices)] + shape +
                   ["--dir", traces, "--truth", truth_path], check=True, capture_output=True)
    with open(truth_path) as f:
        truth = json.load(f)
    if TAMPER:
        truth["gpus"][1]["peak_bytes"] += 512
    check(len(truth["gpus"]) == 3 * devices and
          (len(truth["failures"]) == 0 if growing else len(truth["failures"]) > 100),
          "the truth has %d GPUs and failures (%d, %d)" % (3 * devices, len(truth["gpus"]),
                                                           len(truth["failures"])))
    for threads in (1, 2):
        who = "%d devices a rank%s, %d threads" % (devices, ", growing" if growing else "",
                                                   threads)
        doc = report(traces, threads)
        gpus = {g["uuid"]: g for g in doc["gpus"]}
        check(len(gpus) == len(truth["gpus"]), "%s: %d GPUs" % (who, len(gpus)))
        for t in truth["gpus"]:
            g = gpus.get(t["uuid"])
            if not g:
                check(False, "%s: GPU %s reported" % (who, t["uuid"]))
                continue
            check(g["peak_bytes"] == t["peak_bytes"] and g["peak_time_ns"] == t["peak_time_ns"],
                  "%s: GPU %s peak %d at %d, truth %d at %d" % (
                      who, t["uuid"], g["peak_bytes"], g["peak_time_ns"], t["peak_bytes"],
                      t["peak_time_ns"]))
            at_peak = {str(p["pid"] - PID0): p["bytes_at_peak"] for p in g["processes"]
                       if p["bytes_at_peak"]}
            check(at_peak == t["bytes_at_peak"], "%s: GPU %s bytes at its peak per rank"
                  % (who, t["uuid"]))
        seen = {}
        for p in doc["processes"]:
            rank = p["pid"] - PID0
            for dev in p["devices"]:
                for o in dev["ooms"]:
                    seen[(rank, o["time_ns"])] = [[q["pid"] - PID0, q["bytes"]]
                                                  for q in o["other_traced_processes"]]
        check(len(seen) == len(truth["failures"]),
              "%s: %d failures, truth %d" % (who, len(seen), len(truth["failures"])))
        wrong = [f for f in truth["failures"] if seen.get((f["rank"], f["time_ns"])) != f["others"]]
        check(not wrong, "%s: the other ranks' bytes at %d of %d failures (first: %s)" % (
            who, len(wrong), len(truth["failures"]), wrong[:1]))


with tempfile.TemporaryDirectory() as d:
    check_job(d, 2)  # two GPUs a rank: its notes are merged across the group's GPUs
    check_job(d, 1)  # one GPU a rank: GPU by GPU
    check_job(d, 1, growing=True)

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
