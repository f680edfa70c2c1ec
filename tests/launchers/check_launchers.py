#!/usr/bin/env python3
"""Launcher stand-ins under `vramtrace run`, checked against the simulated
driver's ledger (docs/user/LAUNCHERS.md names the test of each recipe).

    check_launchers.py --build BUILD --src SRC --case CASE [--tamper]

Each case runs one launcher of this folder as `vramtrace run -o
'OUT/job/%h/rank%r.l%l.%p.vtrace' -- LAUNCHER ...` in a fresh directory
(neither OUT/job nor the host directory exist: run and the tracer make them),
on two simulated GPUs shared by every rank, and checks:
  - the exit status is the launcher's;
  - one trace per process that allocated (the ledger's pids), no other;
  - run's listing names every one of them (or says how many, past 8);
  - each process's rank and local rank (the workers' own log) and device;
  - each process's device peak, exactly as the ledger has it;
  - each physical GPU's processes merged into one timeline, whatever
    ordinal CUDA_VISIBLE_DEVICES gave it, and its combined peak;
  - one session, one job.
--tamper puts a phantom 1 MiB in every process's ledger: the check must fail.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from launcher_check import HERE, Paths, equal, fail, failures, parser
from ledger_truth import Ledger
from report_schema import schema_errors

ap = parser(tamper=True)
ap.add_argument("--src", required=True)
ap.add_argument("--case", required=True)
A = ap.parse_args()

paths = Paths(A.build)
BUILD, VRAMTRACE, LIB, CW = paths.build, paths.vramtrace, paths.lib, paths.worker
PYW = os.path.join(HERE, "lw_worker.py")
PY = sys.executable


# case -> (launcher argv, extra env, expected exit status, ranks started)
CASES = {
    "torchrun_c": ([PY, os.path.join(HERE, "agent.py"), "--nproc", "4", CW], {}, 0),
    "torchrun_py": ([PY, os.path.join(HERE, "agent.py"), "--nproc", "2", PYW], {}, 0),
    "visible_devices": ([PY, os.path.join(HERE, "agent.py"), "--nproc", "4", "--visible", CW], {}, 0),
    "elastic_restart": ([PY, os.path.join(HERE, "agent.py"), "--nproc", "3", "--restart", CW],
                        {"LW_FAIL_RANK": "1"}, 0),
    "rank_sigkill": ([PY, os.path.join(HERE, "agent.py"), "--nproc", "3", "--kill-rank", "2", CW],
                     {"LW_HOLD_MS": "1500"}, 1),
    "daemon_agent": ([PY, os.path.join(HERE, "agent.py"), "--daemon", "--nproc", "2", CW], {}, 0),
    "mp_spawn": ([PY, os.path.join(HERE, "mp_launcher.py"), "spawn", "3"], {}, 0),
    "mp_fork": ([PY, os.path.join(HERE, "mp_launcher.py"), "fork", "3"], {}, 0),
    "reexec": ([PY, os.path.join(HERE, "reexec_launcher.py"), "--num_processes", "2", PYW], {}, 0),
    "env_file": ([PY, os.path.join(HERE, "envfile_launcher.py"), "--nproc", "2", CW], {}, 0),
    "first_failure": ([PY, os.path.join(HERE, "agent.py"), "--nproc", "4", CW],
                      {"LW_OOM_RANKS": "2,0,3"}, 0),
    "many_ranks": ([PY, os.path.join(HERE, "agent.py"), "--nproc", "12", CW], {}, 0),
}

if A.case not in CASES:
    sys.exit("unknown case %s" % A.case)
argv, extra, want_status = CASES[A.case]

tmp = tempfile.mkdtemp(prefix="vt-launch-")
out = os.path.join(tmp, "out")
os.mkdir(out)
template = os.path.join(out, "job", "%h", "rank%r.l%l.%p.vtrace")
sim = os.path.join(BUILD, "tests", "simdriver")
shared = "vt-launch-%d" % os.getpid()
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("VTSIM_", "VRAMTRACE_", "NVTX_", "LW_", "RANK", "LOCAL_RANK",
                            "WORLD_SIZE", "CUDA_VISIBLE"))}
env.pop("LD_PRELOAD", None)
if A.preload_first:  # vramtrace run keeps them first, before the tracer
    env["LD_PRELOAD"] = A.preload_first
env.update(LD_LIBRARY_PATH=sim + ":" + os.path.join(sim, "runtime"),
           VTSIM_LEDGER=os.path.join(tmp, "ledger.txt"), VTSIM_SHARED=shared,
           VTSIM_DEVICES="2", VTSIM_MEMORY="24GiB", LW_LOG=os.path.join(tmp, "workers.txt"))
env.update(extra)
if A.case == "env_file":
    # What a DeepSpeed user writes: the session joined by hand, the tracer
    # and its output in .deepspeed_env (pdsh passes nothing else but
    # EXPORT_ENVS prefixes).
    env["VRAMTRACE_SESSION"] = "envfile-%d" % os.getpid()
    with open(os.path.join(tmp, ".deepspeed_env"), "w") as f:
        for k in ("LD_LIBRARY_PATH", "VTSIM_LEDGER", "VTSIM_SHARED", "VTSIM_DEVICES",
                  "VTSIM_MEMORY", "LW_LOG", "VRAMTRACE_SESSION"):
            f.write("%s=%s\n" % (k, env[k]))
        f.write("LD_PRELOAD=%s%s\nVRAMTRACE_OUTPUT=%s\n" % (A.preload_first, os.path.realpath(LIB),
                                                         template))

try:
    run = subprocess.run([VRAMTRACE, "run", "-o", template, "--"] + argv, env=env, cwd=tmp,
                         capture_output=True, text=True, timeout=120)
finally:
    try:
        os.unlink("/dev/shm/vtsim-" + shared)
    except OSError:
        pass
print(run.stdout + run.stderr)
equal("exit status of vramtrace run", run.returncode, want_status)

workers = []
if os.path.exists(env["LW_LOG"]):
    with open(env["LW_LOG"]) as f:
        workers = [dict(kv.split("=", 1) for kv in l.strip().split("\t")) for l in f if l.strip()]
by_pid = {int(w["pid"]): w for w in workers}
if not workers:
    print("FAIL: no worker ran", file=sys.stderr)
    sys.exit(0 if A.tamper else 1)

led = Ledger(env["VTSIM_LEDGER"], phantom_bytes=(1 << 20) if A.tamper else 0)
allocating = sorted({int(e["pid"]) for e in led.lines if e["op"] == "alloc" and e["result"] == "0"})
traces = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(out, "job"))
                for f in fs if f.endswith(".vtrace"))
equal("pids that allocated = pids of the workers", allocating, sorted(by_pid))
equal("traces written (one per allocating process)", len(traces), len(allocating))
for t in traces:
    if not re.search(r"/job/[^/]+/rank\d+\.l\d+\.\d+\.vtrace$", t):
        fail("trace name %s does not follow the template" % t)

# the listing: every trace, or the count past 8
listed = {int(m.group(2)) for m in re.finditer(r"vramtrace: trace (\S+) \(pid (\d+)", run.stderr)}
summary = re.search(r"vramtrace: session (\S+): (\d+) traces", run.stderr)
if summary:
    equal("traces counted by run's summary line", int(summary.group(2)), len(allocating))
    if len(allocating) <= 8:
        fail("run summarised %d traces (only past 8)" % len(allocating))
else:
    equal("pids listed by run", sorted(listed), allocating)

rep = subprocess.run([VRAMTRACE, "report", "--json", os.path.join(out, "job")],
                     capture_output=True, text=True, env=env, timeout=60)
text = subprocess.run([VRAMTRACE, "report", os.path.join(out, "job")],
                      capture_output=True, text=True, env=env, timeout=60)
if rep.returncode or text.returncode:
    print(rep.stderr + text.stderr, file=sys.stderr)
    print("FAIL: report exited %d/%d" % (rep.returncode, text.returncode), file=sys.stderr)
    sys.exit(0 if A.tamper else 1)
doc = json.loads(rep.stdout)
for e in schema_errors(doc):
    fail("schema: " + e)
procs = {p["pid"]: p for p in doc["processes"]}
equal("processes in the report", sorted(procs), allocating)
equal("jobs", len(doc["jobs"]), 1)
equal("sessions", sorted({p["session"] for p in doc["processes"]}),
      [env["VRAMTRACE_SESSION"]] if "VRAMTRACE_SESSION" in env else sorted({p["session"] for p in doc["processes"]}))
if any(p["session"] is None for p in doc["processes"]):
    fail("a trace carries no session id")


def merged_peak_bounds(files):
    """The device bytes live at the peak of several traces merged by their
    recorded times (frees matched to allocations by address, per trace):
    the lowest and highest peak over the orders of events with equal times
    (frees first, allocations first)."""
    events = []
    for path in files:
        dump = subprocess.run([VRAMTRACE, "dump", "--json", path], capture_output=True,
                              text=True, env=env, timeout=60)
        live = {}
        for line in dump.stdout.splitlines():
            r = json.loads(line)
            if r.get("type") != "mem" or r.get("kind") != "device" or r.get("result"):
                continue
            if r["op"] == "alloc":
                live[r["addr"]] = r["size"]
                events.append((r["time_ns"], r["size"]))
            elif r["addr"] in live:  # a free counts until it returned (format version 5)
                events.append((r["time_ns"] + r.get("duration_ns", 0), -live.pop(r["addr"])))
    bounds = []
    for frees_first in (True, False):
        total = peak = 0
        for _, delta in sorted(events, key=lambda e: (e[0], (e[1] > 0) == frees_first)):
            total += delta
            peak = max(peak, total)
        bounds.append(peak)
    return min(bounds), max(bounds)


def physical(pid):
    w = by_pid.get(pid)
    if w is None:
        return None
    return int(w["visible"]) if w["visible"] != "-" else int(w["dev"])


for pid in allocating:
    p = procs.get(pid)
    w = by_pid.get(pid)
    if not p or not w:
        continue
    equal("pid %d rank" % pid, p["rank"], int(w["rank"]))
    equal("pid %d local_rank" % pid, p["local_rank"], int(w["local"]))
    devs = [d for d in p["devices"] if d["kind"] == "device"]
    equal("pid %d devices" % pid, [d["device"] for d in devs], [int(w["dev"])])
    if devs:
        equal("pid %d rank %s peak_bytes" % (pid, w["rank"]), devs[0]["peak_bytes"],
              led.peak(pid, int(w["dev"])))
    if A.case == "rank_sigkill" and w["rank"] == "2":
        equal("the killed rank's trace is cut short", p["truncated"], True)

# GPUs: one per physical device, its processes merged whatever their ordinal
groups = {}
for pid in allocating:
    if physical(pid) is not None:
        groups.setdefault(physical(pid), []).append(pid)
for phys, pids in sorted(groups.items()):
    gs = [g for g in doc["gpus"] if sorted(x["pid"] for x in g["processes"]) == sorted(pids)]
    equal("GPU %d found once, with pids %s" % (phys, sorted(pids)), len(gs), 1)
    peak = 0
    for after in led.after:
        peak = max(peak, sum(after.get((pid, int(by_pid[pid]["dev"]), "device"), 0) for pid in pids))
    if gs and gs[0]["peak_bytes"] != peak:
        # The report merges the processes of a GPU by their recorded times.
        # A hook stamps after the driver returned: under load a process
        # descheduled in between stamps late, and two processes' events can
        # cross against the ledger's order (docs/internals/FORMAT.md, "Why times have
        # a unit"). Then the truth is the merge in the recorded order, taken
        # here from the traces themselves, each tie of times either way.
        low, high = merged_peak_bounds([procs[q]["file"] for q in pids])
        if low <= gs[0]["peak_bytes"] <= high:
            print("note: GPU %d combined peak %d differs from the ledger's order (%d): the "
                  "processes' stamps crossed; in recorded order it is %d..%d"
                  % (phys, gs[0]["peak_bytes"], peak, low, high))
        else:
            equal("GPU %d combined peak_bytes" % phys, gs[0]["peak_bytes"], peak)
equal("GPUs in the report", len(doc["gpus"]), len(groups))

# the job's first lines
if "job: %d processes" % len(allocating) not in text.stdout:
    fail("the text report does not start with the job")
ranks = sorted(int(w["rank"]) for w in workers)
if A.case == "first_failure":
    job = doc["jobs"][0]
    ff = job["first_failure"]
    equal("first failure's rank", ff and ff["rank"], 2)
    equal("ranks that failed after it", [f["rank"] for f in job["following_failures"]], [0, 3])
    if not re.search(r"first failure: rank 2, pid \d+, at", text.stdout):
        fail("the text report does not name rank 2 as the first failure")
    if not re.search(r"followed by: rank 0, pid \d+ \+\d\.\d+s, rank 3, pid \d+ \+", text.stdout):
        fail("the text report does not list ranks 0 and 3 as following")
else:
    equal("first failure", doc["jobs"][0]["first_failure"], None)

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print(text.stdout, file=sys.stderr)
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    sys.exit(1)
print("ok: %s: %d ranks, %d traces, every figure matches the ledger" % (A.case, len(ranks), len(traces)))
