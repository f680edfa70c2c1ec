#!/usr/bin/env python3
"""A rank on another rank's GPU: four ranks on four simulated GPUs under a
torchrun stand-in; rank 3 loads a checkpoint on GPU 0 first (a context left
there, its first: its cost from the NVML double), rank 1 stages a buffer on
GPU 0 through cuMemCreate (no context of its own there), rank 0 then fails
on GPU 0. The job view names both, with cost, stack and life, and rank 0's
failure counts them; every figure against the simulated driver's ledger
(stray_worker.c says who does what).

    check_foreign.py --build BUILD --nvml-dir DIR [--tamper no_nvml|no_foreign|no_alloc] [--out DIR]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from launcher_check import HERE, Paths, equal, fail, failures, parser
from ledger_truth import Ledger, format_bytes
from report_schema import SCHEMA, SUMMARY_SCHEMA, schema_errors

ap = parser()
ap.add_argument("--nvml-dir", required=True)
ap.add_argument("--tamper", default="")
ap.add_argument("--out", default="")  # where the job's traces go (the HTML test reads them)
A = ap.parse_args()
paths = Paths(A.build)
WORKER = os.path.join(paths.build, "tests", "launchers", "stray_worker")
SRC = os.path.join(HERE, "stray_worker.c")

tmp = A.out or tempfile.mkdtemp(prefix="vt-foreign-")
os.makedirs(tmp, exist_ok=True)
out = os.path.join(tmp, "traces")
sim = os.path.join(paths.build, "tests", "simdriver")
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("VTSIM_", "VRAMTRACE_", "STRAY_", "CUDA_VISIBLE"))}
env.pop("LD_PRELOAD", None)
if A.preload_first:
    env["LD_PRELOAD"] = A.preload_first
libpath = [sim, os.path.join(sim, "runtime")]
if A.tamper != "no_nvml":  # the NVML double: a first context's cost
    libpath.append(A.nvml_dir)
shared = "vt-foreign-%d" % os.getpid()
env.update(LD_LIBRARY_PATH=":".join(libpath), VTSIM_DEVICES="4", VTSIM_SHARED=shared,
           VTSIM_LEDGER=os.path.join(tmp, "ledger.txt"), STRAY_OOM_RANK="0",
           STRAY_HOLD_MS="1500")  # every rank on its GPUs before rank 0 fails, however loaded
if A.tamper != "no_foreign":
    env["STRAY_CONTEXT_RANK"] = "3"
if A.tamper != "no_alloc":
    env["STRAY_ALLOC_RANK"] = "1"
env["STRAY_LATE_RANK"] = "2"  # a context made where it already holds a buffer
try:
    r = subprocess.run([paths.vramtrace, "run", "-o", os.path.join(out, "rank%r.%p.vtrace"), "--",
                        sys.executable, os.path.join(HERE, "agent.py"), "--nproc", "4", WORKER],
                       env=env, capture_output=True, text=True, timeout=90)
    equal("run exit status", r.returncode, 0)
finally:
    try:
        os.unlink("/dev/shm/vtsim-" + shared)
    except OSError:
        pass
led = Ledger(env["VTSIM_LEDGER"])


def source_line(needle):
    with open(SRC) as f:
        for n, line in enumerate(f, 1):
            if needle in line:
                return n
    raise SystemExit("no %r in %s" % (needle, SRC))


js = subprocess.run([paths.vramtrace, "report", "--json", out], capture_output=True, text=True,
                    timeout=60)
doc = json.loads(js.stdout)
for e in schema_errors(doc, SCHEMA) or []:
    fail("report --json: docs/report.schema.json: %s" % e)
rank_pid = {p["rank"]: p["pid"] for p in doc["processes"] if p.get("rank") is not None}
equal("ranks traced", sorted(rank_pid), [0, 1, 2, 3])
job = doc["jobs"][0]
found = {(x["rank"], x["what"]): x for x in job["foreign"]}
# rank 3's checkpoint bytes on GPU 0 (freed again) are an allocation there too
equal("findings (rank, what)", sorted(found),
      [(1, "allocation"), (2, "allocation"), (2, "context"), (3, "allocation"), (3, "context")])

# The stray context: the ledger's context on GPU 0 of rank 3's pid.
pid3 = rank_pid.get(3)
ctx = [e for e in led.lines if e["op"] == "ctx_retain" and int(e["pid"]) == pid3
       and e["dev"] == "0" and int(e["delta"]) > 0]
c = found.get((3, "context"))
if c and len(ctx) == 1:
    equal("context device / own", (c["device"], c["own_device"], c["gpu"], c["own_gpu"]), (0, 3, 0, 3))
    equal("context bytes (ledger's charge)", c["bytes"], int(ctx[0]["size"]))
    equal("context cost from", c["cost"], "NVML")
    equal("context site", c["site"],
          "load_checkpoint (stray_worker.c:%d)" % source_line("cudaSetDevice(0)"))
    equal("context lives to exit", c["end_ns"], None)
else:
    fail("no context finding for rank 3 / ledger contexts %r" % ctx)

ck = found.get((3, "allocation"))
ckpt = [e for e in led.lines if e["op"] == "alloc" and int(e["pid"]) == pid3 and e["dev"] == "0"]
if ck and len(ckpt) == 1:
    equal("checkpoint bytes on GPU 0", ck["bytes"], int(ckpt[0]["size"]))
    equal("checkpoint site", ck["site"],
          "load_checkpoint (stray_worker.c:%d)" % source_line("cudaMalloc(&p, 64 * MIB)"))
else:
    fail("no allocation finding for rank 3's checkpoint / ledger %r" % ckpt)

# Every context of every rank, on the ledger with its cost: each rank's
# first context is unmeasurable by the free-memory drop (no current
# context), so every cost here is NVML's less the rank's own allocations.
for p in doc["processes"]:
    if p.get("rank") is None:
        continue
    want = sorted((int(e["dev"]), int(e["size"])) for e in led.lines
                  if e["op"] == "ctx_retain" and int(e["pid"]) == p["pid"] and int(e["delta"]) > 0)
    got = sorted((x["device"], x["bytes"]) for x in p.get("contexts", []))
    equal("rank %d contexts (device, bytes)" % p["rank"], got, want)
    for x in p.get("contexts", []):
        equal("rank %d context on %d: cost from" % (p["rank"], x["device"]), x["cost"], "NVML")
        if x["free_after_bytes"] is None:
            fail("rank %d context on %d: no free bytes once it existed" % (p["rank"], x["device"]))

# Every device peak counts the contexts, as the driver held them: the
# ledger's charge (allocations and contexts) at its largest; each peak says
# what of it its contexts were.
peaks = {}
for p in doc["processes"]:
    for d in p["devices"]:
        if d["kind"] != "device":
            continue
        want = led.charged_peak(p["pid"], d["device"])
        peaks[p["pid"]] = max(peaks.get(p["pid"], 0), want)
        equal("pid %d device %d peak (ledger: allocations + contexts)" % (p["pid"], d["device"]),
              d["peak_bytes"], want)
        equal("pid %d device %d contexts of the peak" % (p["pid"], d["device"]),
              d.get("contexts_bytes", 0), led.context_bytes(p["pid"], d["device"]))
equal("the job's largest device peak", job["device_peaks"]["largest_bytes"],
      max(peaks.values(), default=0))
# rank 0's failure: the other processes on its GPU then, their contexts counted
pid0 = rank_pid.get(0)
f0 = led.failures(pid0) if pid0 else []
oom = [o for p in doc["processes"] if p["pid"] == pid0 for d in p["devices"] for o in d["ooms"]]
if len(oom) == 1 and len(f0) == 1:
    equal("rank 0's failure: other traced processes then (ledger: allocations + contexts)",
          {o["pid"]: o["bytes"] for o in oom[0]["other_traced_processes"]}, f0[0]["others"])
else:
    fail("rank 0's failures %d / ledger %r" % (len(oom), f0))

# Rank 2's context on GPU 0, made while it held a buffer there: NVML counts
# both, the cost is NVML's figure less the buffer - the ledger's charge.
pid2 = rank_pid.get(2)
late = [(i, e) for i, e in enumerate(led.lines) if int(e["pid"]) == pid2 and e.get("dev") == "0"
        and e["op"] in ("vmm_create", "ctx_retain")]
c2 = found.get((2, "context"))
if c2 and [e["op"] for _, e in late] == ["vmm_create", "ctx_retain"]:
    equal("rank 2's context on GPU 0 (made holding %s there): cost" % late[0][1]["size"],
          (c2["bytes"], c2["cost"]), (int(late[1][1]["size"]), "NVML"))
else:
    fail("rank 2: no context made over its buffer on GPU 0 / ledger %r" % [e for _, e in late])

# The staged buffer: the ledger's cuMemCreate on GPU 0 of rank 1's pid.
pid1 = rank_pid.get(1)
vmm = [e for e in led.lines if e["op"] == "vmm_create" and int(e["pid"]) == pid1 and e["dev"] == "0"]
a = found.get((1, "allocation"))
if a and len(vmm) == 1:
    equal("allocation device / own", (a["device"], a["own_device"]), (0, 1))
    equal("allocation bytes", a["bytes"], int(vmm[0]["size"]))
    equal("allocation site", a["site"],
          "stage_buffer (stray_worker.c:%d)" % source_line("cuMemCreate(&h"))
    if any(e["op"] == "ctx_retain" and int(e["pid"]) == pid1 and e["dev"] == "0" for e in led.lines):
        fail("rank 1 made a context on GPU 0: the case wants an allocation without one")
else:
    fail("no allocation finding for rank 1 / ledger vmm %r" % vmm)

text = subprocess.run([paths.vramtrace, "report", out], capture_output=True, text=True,
                      timeout=60).stdout
if c:
    want = ("rank 3 (pid %d) made a context on GPU 0, not its own GPU 3: %s from " %
            (pid3, format_bytes(c["bytes"] or 0)))
    if want not in text:
        fail("text lacks %r" % want)
    if "to exit, at load_checkpoint (stray_worker.c:" not in text:
        fail("text does not say the context lives to exit and where it was made")
if "next step: torch.cuda.set_device(local_rank) before anything touches CUDA" not in text:
    fail("text gives no next step")
# rank 0 fails on GPU 0: its story counts what the others held there
if c and not re.search(r"on that GPU then: rank 3 \(pid %d\)'s context, %s" %
                       (pid3, re.escape(format_bytes(c["bytes"] or 0))), text):
    fail("rank 0's failure does not count rank 3's context on its GPU")
if a and ("on that GPU: rank 1 (pid %d)'s allocations, %s at their peak" %
          (pid1, format_bytes(a["bytes"]))) not in text:
    fail("rank 0's failure does not count rank 1's allocation on its GPU")

# The same from node summaries: ranks 0, 3 on one "node", 1, 2 on the other.
summaries = os.path.join(tmp, "summaries")
os.makedirs(summaries)
for node, ranks in (("node-a", (0, 3)), ("node-b", (1, 2))):
    d = os.path.join(tmp, node)
    os.makedirs(d)
    for name in os.listdir(out):
        if any(name.startswith("rank%d." % k) for k in ranks):
            os.link(os.path.join(out, name), os.path.join(d, name))
    path = os.path.join(summaries, node + ".summary.json")
    r = subprocess.run([paths.vramtrace, "report", "--summary", path, d], capture_output=True,
                       text=True, timeout=60)
    equal("%s summary exit status (%s)" % (node, r.stderr.strip()[-200:]), r.returncode, 0)
    with open(path) as f:
        for e in schema_errors(json.load(f), SUMMARY_SCHEMA) or []:
            fail("%s: docs/summary.schema.json: %s" % (node, e))
js2 = subprocess.run([paths.vramtrace, "report", "--json", summaries], capture_output=True,
                     text=True, timeout=60)
doc2 = json.loads(js2.stdout)
equal("jobs[].foreign from summaries", doc2["jobs"][0]["foreign"], job["foreign"])
text2 = subprocess.run([paths.vramtrace, "report", summaries], capture_output=True, text=True,
                       timeout=60).stdout
for line in text.splitlines():
    if ("not its own GPU" in line or "on that GPU" in line) and line not in text2:
        fail("the report from summaries lacks %r" % line)

if failures:
    print("\n".join(failures))
    print("--- report ---\n" + text)
    sys.exit(1)
print("ok: foreign context and allocation named, costs and sites exact")
