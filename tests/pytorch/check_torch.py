#!/usr/bin/env python3
"""vramtrace's Python bootstrap with PyTorch (docs/user/PYTORCH.md), checked
without a GPU: programs importing the stand-in torch (tests/pytorch/standin)
run on the simulated GPU under `vramtrace run`, and what vramtrace wrote is
compared with independent truth - the simulated driver's ledger, the
stand-in's own view, the same program run without vramtrace.

    check_torch.py --build BUILD --case CASE [--python EXE] [--preload-first LIBS] [--tamper]

Cases:
  oom          train_oom.py dies of a fragmented OOM: the allocator's
               snapshot beside the trace (0600, protocol 4, the segments the
               ledger holds), the trace's mark tying it to the failure
               (device, the segment size asked, the driver's free bytes),
               phases from the model's hooks, and the program's output,
               stderr and exit status exactly as without vramtrace
  history      --torch-history=N: the snapshot holds the allocator's history
               with the program's Python frames and the OOM entry
  no_phases    --no-torch-phases: no ranges in the trace
  sitecustomize  the user's own sitecustomize (on PYTHONPATH) still runs,
               sys.path is the program's, sys.meta_path too once torch is
               imported (the bootstrap's finder has left), output identical
  no_torch     a program without torch: sys.path, sys.meta_path (but for
               the bootstrap's finder, waiting for torch), sys.modules (but
               for sitecustomize), sys.path_importer_cache, no name in
               sitecustomize, and output identical to a run without vramtrace
  missing_api  a torch without the observer / _snapshot / _lazy_call, or
               older than 2.1: output and status unchanged, at most one line
               of ours on stderr, no snapshot
  unwritable   the trace cannot be written (a directory nobody may create
               in): output and status unchanged, no file anywhere
  hostile_modules  hostile_modules.py: a 600-deep model, 10,000 modules
               frozen one by one (the modules children() yields to the
               bootstrap stay linear in the model's size), a train() that raises (the
               traceback is the program's), an optimizer whose state is a
               list: output, stderr and status exactly as without vramtrace
  real_torch   Debian's CPU-only python3-torch computes identically under
               vramtrace run (77 when it is not installed)

--tamper falsifies the truth (the ledger's free bytes, or the expected
output), so the case must fail.
"""
import argparse
import glob
import json
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from ledger_truth import format_bytes  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "schema"))
from report_schema import schema_errors  # noqa: E402
from check_story import STORY_CASES  # noqa: E402
from growth_truth import growth_rule  # noqa: E402
STANDIN = os.path.join(HERE, "standin", "site-packages")
MiB = 1 << 20


class Check(object):
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.vramtrace = os.path.join(self.build, "analyzer", "vramtrace")
        sim = os.path.join(self.build, "tests", "simdriver")
        self.tmp = tempfile.mkdtemp(prefix="vt-torch-")
        self.failures = []
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("VTSIM_", "VRAMTRACE_", "PYTHON", "VTSTANDIN_"))}
        env["LD_LIBRARY_PATH"] = sim + ":" + os.path.join(sim, "runtime")
        env.pop("LD_PRELOAD", None)
        if args.preload_first:
            env["LD_PRELOAD"] = args.preload_first
        env["VTSIM_MEMORY"] = "940MiB"
        self.env = env

    def fail(self, msg):
        self.failures.append(msg)

    def equal(self, what, got, want):
        if got != want:
            self.fail("%s: got %r, want %r" % (what, got, want))

    def run(self, argv, traced, env=None, options=(), cwd=None):
        e = dict(self.env)
        e.update(env or {})
        cmd = list(argv)
        if traced:
            cmd = [self.vramtrace, "run", "-q", "-o", os.path.join(self.out, "t.%p.vtrace")] + \
                list(options) + ["--"] + cmd
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120,
                              cwd=cwd or self.tmp)

    def program(self, name, text):
        """A program of the case's own, written into the scratch directory."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def fresh(self, name):
        self.out = os.path.join(self.tmp, name)
        os.mkdir(self.out)
        return self.out

    def traces(self):
        return sorted(glob.glob(os.path.join(self.out, "*.vtrace")))

    def dump(self, trace):
        r = subprocess.run([self.vramtrace, "dump", "--json", trace], capture_output=True,
                           text=True, timeout=60)
        if r.returncode != 0:
            self.fail("vramtrace dump %s: %s" % (trace, r.stderr.strip()))
            return []
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def report(self, *paths):
        r = subprocess.run([self.vramtrace, "report", "--json"] + list(paths),
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            self.fail("vramtrace report --json: %s" % r.stderr.strip())
            return {}
        return json.loads(r.stdout)

    def same_as_untraced(self, argv, env=None, options=(), stderr_extra=0, what="program"):
        """The program's stdout and exit status are those of a run without
        vramtrace; its stderr too, but for stderr_extra lines of ours."""
        plain = self.run(argv, False, env)
        traced = self.run(argv, True, env, options)
        want_out = plain.stdout + ("tampered\n" if self.args.tamper else "")
        self.equal("%s: stdout under vramtrace" % what, traced.stdout, want_out)
        self.equal("%s: exit status under vramtrace" % what, traced.returncode, plain.returncode)
        ours = [l for l in traced.stderr.splitlines() if l.startswith("vramtrace: python bootstrap")]
        # The tracer's own note on an interpreter it reads no frames of
        # (docs/internals/PYTHON.md) is not the bootstrap's.
        rest = [l for l in traced.stderr.splitlines()
                if not l.startswith("vramtrace: python bootstrap") and
                not re.match(r"vramtrace: Python 3\.\d+: version not supported", l)]
        self.equal("%s: stderr under vramtrace, but for the bootstrap's lines" % what, rest,
                   plain.stderr.splitlines())
        if len(ours) > stderr_extra:
            self.fail("%s: %d lines of the bootstrap on stderr (at most %d): %r"
                      % (what, len(ours), stderr_extra, ours))
        return plain, traced, ours

    # ---- truth from the ledger ----
    @staticmethod
    def ledger(path):
        rows = []
        with open(path) as f:
            for line in f:
                rows.append(dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t")))
        return rows


def torch_marks(records):
    out = []
    for r in records:
        if r.get("type") == "mark" and r.get("domain") == "vramtrace.torch":
            fields = dict(kv.split("=", 1) for kv in r["name"].split()[1:])
            out.append((r["name"].split()[0], fields, r))
    return out


def case_oom(c, options=(), history=False):
    c.options = list(options)
    out = c.fresh("oom")
    ledger = os.path.join(c.tmp, "ledger.txt")
    env = {"VTSIM_LEDGER": ledger}
    argv = [c.args.python, os.path.join(HERE, "train_oom.py")]
    env_py = {"PYTHONPATH": STANDIN}
    env.update(env_py)
    plain, traced, ours = c.same_as_untraced(argv, env=env, options=options, what="train_oom.py")
    if "OutOfMemoryError" not in plain.stderr:
        c.fail("train_oom.py did not run out of memory: %s" % plain.stderr[-400:])
    traces = c.traces()
    if len(traces) != 1:
        c.fail("want one trace, found %r" % os.listdir(out))
        return
    trace = traces[0]
    pickles = sorted(glob.glob(trace + ".oom*.pickle"))
    c.equal("snapshots beside the trace", [os.path.basename(p) for p in pickles],
            [os.path.basename(trace) + ".oom0.pickle"])
    # with the history, the snapshot at exit too (written as the OOM's)
    exits = [os.path.basename(trace) + ".exit.pickle"] if history else []
    c.equal("files in the trace directory", sorted(os.listdir(out)),
            sorted([os.path.basename(trace)] + [os.path.basename(p) for p in pickles] + exits))
    if not pickles:
        return
    st = os.lstat(pickles[0])
    c.equal("snapshot mode", (stat.S_ISREG(st.st_mode), stat.S_IMODE(st.st_mode)), (True, 0o600))
    with open(pickles[0], "rb") as f:
        data = f.read()
    c.equal("pickle protocol", data[:2], b"\x80\x04")
    snap = pickle.loads(data)  # our own file, written by the bootstrap

    # The traced run's own ledger lines (the untraced run wrote first).
    rows = c.ledger(ledger)
    pids = [r["pid"] for r in rows]
    pid = pids[-1]
    mine = [r for r in rows if r["pid"] == pid]
    held = 0
    for r in mine:
        if r["op"] in ("alloc", "free") and r.get("kind") == "device":
            held += int(r["delta"])
    seg_total = sum(s["total_size"] for s in snap["segments"])
    c.equal("snapshot's segments vs the device memory the ledger says the process held",
            seg_total, held)
    # The failed cudaMalloc: the last failed alloc of the ledger.
    failed = [r for r in mine if r["op"] == "alloc" and r["result"] != "0"]
    if not failed:
        c.fail("the ledger has no failed allocation")
        return
    infos = [r for r in mine if r["op"] == "getinfo"]
    want_free = int(infos[-1]["free"]) if infos else -1
    if c.args.tamper:
        want_free += MiB

    marks = torch_marks(c.dump(trace))
    c.equal("torch marks in the trace", [m[0] for m in marks], ["oom"] + (["exit"] if history else []))
    if marks:
        f = marks[0][1]
        c.equal("mark: device", f.get("device"), failed[-1]["dev"])
        c.equal("mark: alloc (the segment size the allocator asked cudaMalloc for)",
                int(f.get("alloc", -1)), int(failed[-1]["size"]))
        c.equal("mark: device_free (the driver's free bytes)", int(f.get("device_free", -1)),
                want_free)
        c.equal("mark: snapshot", f.get("snapshot"), os.path.basename(pickles[0]))
        c.equal("mark: device_allocated (what the allocator had reserved)",
                int(f.get("device_allocated", -1)), seg_total)
    # free blocks in the snapshot: the allocator's own picture of the failure
    free_blocks = [b["size"] for s in snap["segments"] for b in s["blocks"] if b["state"] == "inactive"]
    c.equal("largest free block in the snapshot < request", max(free_blocks or [0]) < 40 * MiB, True)
    c.equal("free in cached segments", sum(free_blocks), 5 * 24 * MiB)
    check_report_merge(c, trace, snap, pickles[0], history, want_free)
    check_allocator_view(c, trace, snap, pickles[0], history, failed[-1], want_free)
    return trace, snap


def simulate_json(c, pickle_path, allocator, capacity):
    """`vramtrace simulate --json` run by the test itself: its one run."""
    r = subprocess.run([c.vramtrace, "simulate", "--json", "-a", allocator, "-c", str(capacity),
                        pickle_path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        c.fail("vramtrace simulate -a %s: %s" % (allocator, r.stderr.strip()))
        return {}
    return json.loads(r.stdout)["runs"][0]


def check_perfetto_verdict(c, trace, verdict):
    """The Perfetto export names each failure with the verdict the
    allocator's state decides (the report's headline), not the trace's."""
    path = os.path.join(c.tmp, "oom.perfetto.json")
    r = subprocess.run([c.vramtrace, "export", "--format", "perfetto", "-o", path, trace],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        c.fail("vramtrace export --format perfetto: %s" % r.stderr.strip())
        return
    with open(path) as f:
        failed = [e for e in json.load(f)["traceEvents"]
                  if e.get("name", "").startswith("allocation failed")]
    if not failed:
        c.fail("the Perfetto export has no failure")
    for e in failed:
        c.equal("Perfetto failure's name ends with the verdict", e["name"].rsplit(" (", 1)[-1],
                verdict + ")")
        c.equal("Perfetto failure's args.verdict", e["args"].get("verdict"), verdict)


def check_allocator_view(c, trace, snap, pickle_path, history, failed, device_free):
    """The JSON report's allocator_view of the failure: the stand-in's own
    snapshot and the ledger's figures, and simulate's answer as the test
    gets it by running `vramtrace simulate` itself."""
    doc = c.report(trace)
    errors = schema_errors(doc) if doc else []
    c.equal("the report (with allocator_view) against docs/report.schema.json", errors, [])
    ooms = [o for p in doc.get("processes", []) for d in p.get("devices", [])
            for o in d.get("ooms", [])]
    views = [o["allocator_view"] for o in ooms if o.get("allocator_view")]
    c.equal("failures with an allocator_view (the request's first)", len(views), 1)
    if not views:
        return
    v = views[0]
    # ... and the schema knows the object: a broken one is rejected
    for what, broken in (("a verdict it does not know", {"verdict": "bad luck"}),
                         ("a string where bytes go", {"reserved_bytes": "552 MiB"}),
                         ("no figures but no error", {"error": None, "reserved_bytes": None})):
        bad = json.loads(json.dumps(doc))
        bv = [o["allocator_view"] for p in bad["processes"] for d in p["devices"]
              for o in d["ooms"] if o.get("allocator_view")][0]
        bv.update(broken)
        if broken.get("reserved_bytes", 0) is None:
            del bv["reserved_bytes"]
        if not schema_errors(bad):
            c.fail("the schema accepts an allocator_view with %s" % what)
    blocks = [b for s in snap["segments"] for b in s["blocks"]]
    free = [b["size"] for b in blocks if b["state"] == "inactive"]
    reserved = sum(s["total_size"] for s in snap["segments"])
    allocated = sum(b["size"] for b in blocks if b["state"] != "inactive")
    partly = sum(1 for s in snap["segments"]
                 if any(b["state"] == "inactive" for b in s["blocks"]) and
                 any(b["state"] != "inactive" for b in s["blocks"]))
    # the request: the history's oom entry (the rounded request), else the
    # segment size the ledger's failed cudaMalloc asked for
    oom_entries = [e for e in (snap["device_traces"] or [[]])[0] if e["action"] == "oom"]
    request = oom_entries[-1]["size"] if history else int(failed["size"])
    verdict = ("fragmented" if sum(free) + device_free >= request and max(free) < request
               else "exhausted")
    want = {"snapshot": pickle_path, "error": None, "device": int(failed["dev"]),
            "segment_bytes": int(failed["size"]), "device_free_bytes": device_free,
            "reserved_bytes": reserved, "allocated_bytes": allocated,
            "reserved_unallocated_bytes": sum(free), "partly_used_segments": partly,
            "largest_free_block_bytes": max(free), "request_bytes": request,
            "request_known": history, "verdict": verdict, "stacks_recorded": history}
    for k, w in sorted(want.items()):
        c.equal("allocator_view." + k, v.get(k), w)
    # One verdict: the allocator's state decides the failure's own (every
    # failure of the request, retries too), the trace's own kept second.
    for o in ooms:
        c.equal("failure verdict (the allocator's)", o.get("verdict"), verdict)
        c.equal("failure verdict_source", o.get("verdict_source"), "allocator")
        c.equal("failure largest_free_block_bytes (the allocator's)",
                o.get("largest_free_block_bytes"), max(free))
        if not (o.get("next_step") or "").startswith(v.get("advice") or "?"):
            c.fail("failure next_step is not the allocator's advice: %r" % o.get("next_step"))
        tv = o.get("trace_verdict") or {}
        if tv.get("verdict") != verdict and not tv.get("set_aside_because"):
            c.fail("trace_verdict %r differs without a reason: %r" % (tv.get("verdict"), tv))
    check_perfetto_verdict(c, trace, verdict)
    if "expandable_segments:True" not in v.get("advice_settings", []):
        c.fail("allocator_view.advice_settings: no expandable_segments:True: %r"
               % v.get("advice_settings"))
    if history:
        # live blocks grouped by their Python stack, as the stand-in recorded it
        groups = {}
        for b in blocks:
            if b["state"] != "inactive":
                key = tuple((f["filename"], f["line"], f["name"]) for f in b["frames"])
                g = groups.setdefault(key, [0, 0])
                g[0] += b["requested_size"]
                g[1] += 1
        top = sorted(groups.values(), reverse=True)
        got = [[t["bytes"], t["count"]] for t in v.get("top_stacks", [])]
        c.equal("allocator_view.top_stacks (bytes, count)", sorted(got, reverse=True),
                top[:len(got)])
        first = v["top_stacks"][0]["frames"] if v.get("top_stacks") else []
        if not any(f["file"].endswith("train_oom.py") and f["line"] == 47 for f in first):
            c.fail("allocator_view.top_stacks[0]: no frame train_oom.py:47: %r" % first)
    sim = v.get("simulate") or {}
    if not history:
        c.equal("allocator_view.simulate without history: ran", sim.get("ran"), False)
        if "--torch-history" not in (sim.get("not_run") or ""):
            c.fail("allocator_view.simulate.not_run does not name --torch-history: %r" % sim)
        return
    # The device as the process had it: its segments plus the driver's free
    # bytes, from the snapshot and the ledger.
    capacity = reserved + device_free
    c.equal("allocator_view.simulate.capacity_bytes", sim.get("capacity_bytes"), capacity)
    runs = {r["allocator"]: r for r in sim.get("runs", [])}
    for allocator in ("recorded", "pytorch:expandable_segments:True"):
        mine = simulate_json(c, pickle_path, allocator, capacity)
        theirs = runs.get(allocator, {})
        for k in ("verdict", "failed_requests_served", "peak_reserved_bytes"):
            c.equal("simulate -a %s: %s, the report vs the CLI" % (allocator, k), theirs.get(k),
                    mine.get(k))
        if allocator == "recorded":
            # the control: the recorded settings fail again, at the request
            c.equal("simulate -a recorded fails at the recorded failure",
                    (mine.get("verdict"), mine.get("failed_requests_served"),
                     theirs.get("fails_at_recorded_failure")), ("fragmented", 0, True))
        else:
            fits = mine.get("verdict") == "ok" and mine.get("failed_requests_served") == 1
            c.equal("allocator_view.simulate.fits_with_expandable_segments",
                    sim.get("fits_with_expandable_segments"), fits)
            # the stand-in's fragmented OOM: live tensors and the request
            # fit the device together, so expandable segments serve it
            c.equal("with expandable segments the request fits (live %d + %d <= %d)"
                    % (allocated, request, capacity), fits, allocated + request <= capacity)


def python_frames_read(c):
    """Whether the tracer reads this interpreter's frames (docs/internals/PYTHON.md:
    3.10 to 3.15; older and newer stay native)."""
    r = subprocess.run([c.args.python or sys.executable, "-c",
                        "import sys; print('%d %d' % sys.version_info[:2])"],
                       capture_output=True, text=True, timeout=30)
    major, minor = (int(x) for x in r.stdout.split())
    return major == 3 and 10 <= minor <= 15


def check_report_merge(c, trace, snap, pickle_path, history, device_free):
    """The text report tells the trace's failure with the allocator's
    figures, as the snapshot itself (the stand-in's own view) has them."""
    r = subprocess.run([c.vramtrace, "report", "--width", "0", trace], capture_output=True,
                       text=True, timeout=60)
    text = r.stdout
    blocks = [b for s in snap["segments"] for b in s["blocks"]]
    free = sum(b["size"] for b in blocks if b["state"] == "inactive")
    largest = max([b["size"] for b in blocks if b["state"] == "inactive"] or [0])
    if c.args.tamper:
        largest += MiB
    reserved = sum(s["total_size"] for s in snap["segments"])
    allocated = sum(b["size"] for b in blocks if b["state"] != "inactive")
    partly = sum(1 for s in snap["segments"]
                 if any(b["state"] == "inactive" for b in s["blocks"]) and
                 any(b["state"] != "inactive" for b in s["blocks"]))
    want = [
        "PyTorch's allocator at this failure (snapshot %s):" % pickle_path,
        "reserved %s, allocated %s, reserved but unallocated %s (in %d partly used segments)"
        % (format_bytes(reserved), format_bytes(allocated), format_bytes(free), partly),
        "verdict (PyTorch's allocator at the failure): fragmented - %s free in cached segments"
        " and %s on the device, largest free block %s < %s"
        % (format_bytes(free), format_bytes(device_free), format_bytes(largest),
           format_bytes(40 * MiB)),
        "next: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "(the trace alone would say exhausted: the driver sees whole segments",
        # the bootstrap's mark, in words
        "PyTorch out of memory #1 on device 0: a %s segment asked, %s free on the device; "
        "snapshot %s" % (format_bytes(40 * MiB), format_bytes(device_free),
                         os.path.basename(pickle_path)),
    ]
    if python_frames_read(c):
        # the stand-in is installed as torch is (site-packages/torch): its
        # frames fold, and the failure is told at the program's line
        want.append("at: main (train_oom.py:47) <- <module> (train_oom.py:52)  via cudaMalloc")
    if "--no-torch-phases" not in c.options:
        # the model was switched to eval (model.eval()) before the batch
        # whose forward failed
        want.append("in phase forward (within eval)")
    # One verdict of the first rank: the trace's is never a headline.
    if "verdict: exhausted" in text:
        c.fail("the report heads the failure with the trace's verdict:\n%s" % text)
    if history:
        want.append("live tensors then, by Python stack:")
        want.append("main (train_oom.py:47)")
        oom = [e for e in snap["device_traces"][0] if e["action"] == "oom"][-1]
        want.append("-c %dMiB --device 0 %s" % ((reserved + oom["device_free"]) >> 20, pickle_path))
        want.append("fails again at the request (fragmented), as it did")
        want.append("expandable_segments:True: the %s request fits" % format_bytes(40 * MiB))
    else:
        want.append("live tensors' stacks: not recorded (`vramtrace run --torch-history`")
    for w in want:
        if w not in text:
            c.fail("the report does not say %r:\n%s" % (w, text))


def case_oom_phases(c):
    res = case_oom(c)
    if not res:
        return
    trace, snap = res
    records = c.dump(trace)
    starts = {}
    threads = {}
    for r in records:
        if r.get("type") == "thread":
            threads[r["id"]] = r.get("name", "")
        if r.get("type") == "range_start":
            starts.setdefault(r["name"], []).append(r)
    c.equal("phases from the model", sorted(starts),
            ["backward", "eval", "forward", "optimizer", "train"])
    c.equal("train/backward/optimizer opened per step",
            [len(starts.get(n, [])) for n in ("train", "backward", "optimizer", "eval")],
            [1, 2, 2, 1])
    main = {r["thread"] for r in starts.get("train", [])}
    bthreads = {r["thread"] for r in starts.get("backward", [])}
    c.equal("backward opened on autograd's threads, not the main one",
            (len(bthreads), bool(bthreads & main)), (2, False))
    rep = c.report(trace)
    for p in rep.get("processes", []):
        for d in p.get("devices", []):
            names = sorted(ph["name"] for ph in d.get("phases", []))
            c.equal("phases in the report", names,
                    ["backward", "eval", "forward", "optimizer", "train"])


def case_eval_switch(c):
    """eval_switch.py: phases follow model.train()/model.eval() on the
    whole model (not a frozen part of it), before any forward: the KV
    cache allocated after model.eval() and the failure after it are eval's.
    Truth: the ledger's live bytes when the cache was allocated."""
    c.options = []
    out = c.fresh("eval_switch")
    ledger = os.path.join(c.tmp, "ledger-eval.txt")
    env = {"VTSIM_LEDGER": ledger, "PYTHONPATH": STANDIN}
    argv = [c.args.python, os.path.join(HERE, "eval_switch.py")]
    c.same_as_untraced(argv, env=env, what="eval_switch.py")
    traces = c.traces()
    if len(traces) != 1:
        c.fail("eval_switch: %d traces in %s" % (len(traces), out))
        return
    pid = os.path.basename(traces[0]).split(".")[1]
    rows = [r for r in c.ledger(ledger) if r.get("pid") == pid]
    live, after_kv = 0, None
    for r in rows:
        if r["op"] == "alloc" and r["result"] == "0" and r.get("kind") == "device":
            live += int(r["size"])
            if int(r["size"]) == 24 * MiB:
                after_kv = live
        elif r["op"] == "free" and r["result"] == "0" and r.get("kind") == "device":
            live -= int(r["size"])
    if after_kv is None:
        c.fail("the ledger has no 24 MiB allocation (the KV cache)")
        return
    if c.args.tamper:
        after_kv += MiB
    records = c.dump(traces[0])
    starts = [r for r in records if r.get("type") == "range_start"]
    names = [r["name"] for r in starts]
    c.equal("eval opened once, after the last training step (a frozen layer's .eval() is "
            "not a phase)", (names.count("eval"), names[-1:] if names else None), (1, ["eval"]))
    rep = c.report(traces[0])
    devs = [d for p in rep.get("processes", []) for d in p.get("devices", [])]
    phases = {ph["name"]: ph for d in devs for ph in d.get("phases", [])}
    c.equal("eval's peak: the ledger's live bytes with the KV cache",
            phases.get("eval", {}).get("peak_bytes"), after_kv)
    ooms = [o for d in devs for o in d.get("ooms", [])]
    c.equal("the failure's phases (innermost, outermost)",
            sorted({(o.get("phase"), o.get("outer_phase")) for o in ooms}), [("eval", "eval")])


def case_diff(c):
    """`vramtrace diff` of a run that fits (2 eval batches) against the one
    that dies of the fragmented OOM, directory against directory: the OOM
    snapshot beside the failing run's trace belongs to its process (one
    unit each side, paired, both ways round, with the ledgers' peaks); the
    new failed request carries the one verdict - the allocator's
    fragmented, as `report --json` says it, not the trace's exhausted - and
    its size is the ledger's."""
    c.options = []
    runs = {}
    for name, batches in (("before", "2"), ("after", "8")):
        out = c.fresh("diff-" + name)
        ledger = os.path.join(c.tmp, "ledger-%s.txt" % name)
        env = dict(c.env, VTSIM_LEDGER=ledger, PYTHONPATH=STANDIN)
        subprocess.run([c.vramtrace, "run", "-o", os.path.join(out, "t.%p.vtrace"), "--",
                        c.args.python, os.path.join(HERE, "train_oom.py"), batches],
                       env=env, capture_output=True, text=True, timeout=120)
        runs[name] = (out, c.ledger(ledger))
    failed = [r for r in runs["after"][1] if r["op"] == "alloc" and r["result"] != "0"]
    want_size = int(failed[0]["size"]) + (MiB if c.args.tamper else 0) if failed else None
    rep = c.report(runs["after"][0])
    verdicts = [o["verdict"] for p in rep.get("processes", []) for d in p.get("devices", [])
                for o in d.get("ooms", []) if not o.get("retry_of_previous")]
    c.equal("the report's verdict of the failed request", verdicts, ["fragmented"])
    # the directories: the failing run's also holds its OOM snapshot, which
    # belongs to the trace's process (one unit, paired with the good run's)
    sides = [runs[k][0] for k in ("before", "after")]
    if len(glob.glob(os.path.join(sides[1], "*.oom0.pickle"))) != 1:
        c.fail("the failing run left no OOM snapshot: %r" % os.listdir(sides[1]))
    r = subprocess.run([c.vramtrace, "diff", "--json"] + sides,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        c.fail("vramtrace diff exited %d: %s" % (r.returncode, r.stderr))
        return
    units = json.loads(r.stdout).get("units", [])
    got = [(u.get("failures_before"), u.get("failures_after")) for u in units]
    c.equal("diff's failed requests (before, after)", got,
            [([], [{"verdict": "fragmented", "requested_bytes": want_size}])])
    text = subprocess.run([c.vramtrace, "diff"] + sides,
                          capture_output=True, text=True, timeout=60).stdout
    want = "failed requests: none -> 1 (fragmented %s)" % format_bytes(want_size or 0)
    if want not in text:
        c.fail("diff does not say %r:\n%s" % (want, text))
    # the failed run first, under --fail-above: one process on each side,
    # paired, with the ledgers' peaks (the good run's is the lower)
    peaks = [ledger_peak(c, os.path.join(c.tmp, "ledger-%s.txt" % k)) for k in ("after", "before")]
    r = subprocess.run([c.vramtrace, "diff", "--json", "--fail-above", "5%"] + sides[::-1],
                       capture_output=True, text=True, timeout=60)
    units = json.loads(r.stdout).get("units", []) if r.stdout else []
    c.equal("diff FAILED GOOD: units (name, peaks, failures before, after)",
            [(u.get("name"), u.get("before_peak_bytes"), u.get("after_peak_bytes"),
              len(u.get("failures_before") or []), len(u.get("failures_after") or []))
             for u in units],
            [("device 0", peaks[0], peaks[1], 1, 0)])
    c.equal("diff FAILED GOOD --fail-above 5%: exit status", r.returncode,
            1 if peaks[1] > peaks[0] * 1.05 else 0)
    text = subprocess.run([c.vramtrace, "diff"] + sides[::-1],
                          capture_output=True, text=True, timeout=60).stdout
    if "absent" in text or "input 2" in text:
        c.fail("diff FAILED GOOD: a side absent:\n%s" % text)


def case_slow_leak(c):
    """slow_leak.py under --torch-history: 1 MiB kept a step, which the
    driver does not see at every step (segments), the tensors do. The
    optimizer phase's tensor_growth equals the rule applied to what the
    stand-in's allocator said after each optimizer step (the program's own
    output), and its driver-level growth is null."""
    c.options = []
    out = c.fresh("slow_leak")
    env = {"VTSIM_LEDGER": os.path.join(c.tmp, "ledger-leak.txt"), "PYTHONPATH": STANDIN}
    argv = [c.args.python, os.path.join(HERE, "slow_leak.py")]
    plain, traced, ours = c.same_as_untraced(argv, env=env, options=["--torch-history"],
                                             what="slow_leak.py")
    values = [int(l.split()[-1]) for l in plain.stdout.splitlines()
              if l.startswith("optimizer step ")]
    want = growth_rule(values)
    if not want or want["per_opening_bytes"] != MiB:
        c.fail("scenario broken: the allocator's own figures %r give %r" % (values, want))
        return
    if c.args.tamper:
        want["last_bytes"] += MiB
    traces = c.traces()
    if len(traces) != 1:
        c.fail("slow_leak: %d traces in %s" % (len(traces), out))
        return
    rep = c.report(traces[0])
    phases = {ph["name"]: ph for p in rep.get("processes", []) for d in p.get("devices", [])
              for ph in d.get("phases", [])}
    opt = phases.get("optimizer", {})
    tg = opt.get("tensor_growth") or {}
    got = {k: tg.get(k) for k in want}
    c.equal("optimizer's tensor growth (the allocator's history)", got, want)
    c.equal("optimizer's tensor closings", tg.get("closings"), len(values))
    c.equal("optimizer's growth in driver bytes (segments: not at every step)",
            opt.get("growth"), None)
    text = subprocess.run([c.vramtrace, "report", traces[0]], capture_output=True, text=True,
                          timeout=60).stdout
    # one rate a step (the samples'), its site the allocator's: the
    # history gives no rate of its own, and no other phase one
    c.equal("the tensors' growth of phases other than the step",
            sorted(n for n, ph in phases.items() if ph.get("tensor_growth")), ["optimizer"])
    line = "+1.00 MiB a step since step 2"
    if line not in text or not re.search(r"\n +1\.00 MiB +main \(slow_leak\.py:\d+\)", text) or \
            "per opening" in text:
        c.fail("the text report does not say %r with its site alone:\n%s" % (line, text))


def case_history(c):
    res = case_oom(c, options=["--torch-history=5000"], history=True)
    if not res:
        return
    trace, snap = res
    entries = snap["device_traces"][0] if snap["device_traces"] else []
    actions = {e["action"] for e in entries}
    for a in ("alloc", "free_requested", "segment_alloc", "oom"):
        if a not in actions:
            c.fail("history has no %r entry (%r)" % (a, sorted(actions)))
    ours = [e for e in entries if e["action"] == "alloc" and
            any(f["filename"].endswith("train_oom.py") for f in e["frames"])]
    if not ours:
        c.fail("no alloc in the history has a frame of train_oom.py")
    oom = [e for e in entries if e["action"] == "oom"]
    if oom:
        c.equal("history's oom entry: the rounded request", oom[-1]["size"], 40 * MiB)


def case_no_phases(c):
    res = case_oom(c, options=["--no-torch-phases"])
    if not res:
        return
    ranges = [r for r in c.dump(res[0]) if r.get("type", "").startswith("range")]
    c.equal("ranges with --no-torch-phases", len(ranges), 0)


def case_sitecustomize(c):
    user = os.path.join(c.tmp, "user")
    os.mkdir(user)
    marker = os.path.join(c.tmp, "user-sitecustomize-ran")
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import os\nUSER_SETTING = 42\nopen(%r, 'a').write('ran\\n')\n" % marker)
    prog = c.program("prog.py", "import sys, sitecustomize\n"
                     "print(sitecustomize.__file__, sitecustomize.USER_SETTING)\n"
                     "print([p for p in sys.path])\n"
                     "import torch\n"
                     "t = torch.empty(1 << 20)\n"
                     "print('torch', torch.__version__)\n"
                     "print([type(f).__name__ for f in sys.meta_path])\n")
    c.fresh("site")
    env = {"PYTHONPATH": user + os.pathsep + STANDIN}
    plain, traced, ours = c.same_as_untraced([c.args.python, prog], env=env, what="prog.py")
    with open(marker) as f:
        c.equal("the user's sitecustomize ran (once per run)", f.read(), "ran\nran\n")
    if str(plain.stdout).find(user) < 0:
        c.fail("the program did not see the user's sitecustomize: %r" % plain.stdout)
    if not c.traces():
        c.fail("no trace: the program did not allocate under the tracer")


def case_no_torch(c):
    prog = c.program("plain.py", "import sys, os\n"
                     "print(sys.path)\n"
                     "print([type(f).__name__ for f in sys.meta_path\n"
                     "       if type(f).__name__ != 'VramtraceTorchImportHook'])\n"
                     "print('torch' in sys.modules, os.environ.get('VRAMTRACE_TORCH'))\n"
                     "print(sorted(m for m in sys.modules if m != 'sitecustomize'))\n"
                     "print(sorted(str(k) for k in sys.path_importer_cache))\n"
                     "site = sys.modules.get('sitecustomize')\n"
                     "print(sorted(k for k in vars(site) if not k.startswith('__'))\n"
                     "      if site else [])\n"
                     "import json; print(json.dumps({'a': 1}))\n")
    c.fresh("plain")
    c.same_as_untraced([c.args.python, prog], env={"PYTHONPATH": STANDIN}, what="plain.py")
    c.equal("files written", os.listdir(c.out), [])


def case_missing_api(c):
    argv = [c.args.python, os.path.join(HERE, "train_oom.py")]
    for missing, version, lines in (("_cuda_attach_out_of_memory_observer", None, 1),
                                    ("_snapshot", None, 1),
                                    ("_lazy_call", None, 0),
                                    ("register_module_forward_pre_hook", None, 1),
                                    ("register_optimizer_step_pre_hook,queue_callback", None, 0),
                                    ("", "2.0.1", 1)):
        c.fresh("missing-%s%s" % (missing.replace(",", "-"), version or ""))
        env = {"PYTHONPATH": STANDIN, "VTSTANDIN_MISSING": missing}
        if version:
            env["VTSTANDIN_TORCH_VERSION"] = version
        what = "torch without %s" % (missing or "2.1 (version %s)" % version)
        plain, traced, ours = c.same_as_untraced(argv, env=env, stderr_extra=lines, what=what)
        c.equal("%s: bootstrap lines" % what, len(ours), lines)
        snaps = glob.glob(os.path.join(c.out, "*.pickle"))
        want = 1 if missing in ("register_module_forward_pre_hook",
                                "register_optimizer_step_pre_hook,queue_callback") else 0
        c.equal("%s: snapshots" % what, len(snaps), want)


def case_unwritable(c):
    argv = [c.args.python, os.path.join(HERE, "train_oom.py")]
    before = set(os.listdir(c.tmp))
    c.out = "/proc/vramtrace-no-such-dir"  # nobody, root included, creates a file there
    env = {"PYTHONPATH": STANDIN}
    plain = c.run(argv, False, env)
    traced = c.run(argv, True, env)
    c.equal("stdout with an unwritable trace directory", traced.stdout,
            plain.stdout + ("tampered\n" if c.args.tamper else ""))
    c.equal("exit status with an unwritable trace directory", traced.returncode, plain.returncode)
    ours = [l for l in traced.stderr.splitlines() if l.startswith("vramtrace: python bootstrap")]
    if len(ours) > 1:
        c.fail("more than one line of the bootstrap: %r" % ours)
    c.equal("files left in the working directory", set(os.listdir(c.tmp)), before)


def case_real_torch(c):
    py = c.args.real_python
    if c.args.preload_first:
        # A sanitizer runtime preloaded into Debian's libtorch proves nothing
        # about vramtrace and takes minutes: the plain build runs this case.
        print("skip: sanitized build (the plain build runs real_torch)")
        sys.exit(77)
    probe = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, env=dict(c.env))
    if probe.returncode != 0:
        print("skip: %s cannot import torch (Debian's python3-torch not installed)" % py)
        sys.exit(77)
    prog = c.program("cpu.py", "import torch\n"
                "torch.manual_seed(0)\n"
                "m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(inplace=True),\n"
                "                        torch.nn.Linear(32, 4))\n"
                "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                "x = torch.randn(8, 16)\n"
                "for i in range(3):\n"
                "    loss = m(x).pow(2).mean()\n"
                "    opt.zero_grad(); loss.backward(); opt.step()\n"
                "    print(i, '%.6f' % loss.item())\n"
                "m.eval()\n"
                "with torch.no_grad():\n"
                "    print(m(x).sum().item())\n"
                "print(torch.__version__, torch.cuda.is_available())\n")
    c.fresh("real")
    plain, traced, ours = c.same_as_untraced([py, prog], what="CPU-only torch %s"
                                             % probe.stdout.strip())
    c.equal("bootstrap lines for a CPU-only torch", ours, [])
    c.equal("files written", os.listdir(c.out), [])


# parts_train.py's sizes (its docstring): the truth the split must give.
PARTS_PARAMS = {"float32": 2 * 1024 * 4096, "bfloat16": 1024 * 4096}
PARTS_BYTES = {"parameters": 40 * MiB, "buffers": 12 * MiB, "gradients": 40 * MiB,
               "optimizer_state": 80 * MiB}


def ledger_peak(c, ledger):
    """The traced run's peak of device bytes, from the simulated driver's
    ledger (the traced run wrote last)."""
    rows = c.ledger(ledger)
    pid = rows[-1]["pid"]
    held = peak = 0
    for r in rows:
        if r["pid"] == pid and r["op"] in ("alloc", "free") and r.get("kind") == "device":
            held += int(r["delta"])
            peak = max(peak, held)
    return peak


def parts_run(c, mode, options=(), tag=""):
    """parts_train.py MODE, traced (with options) and not: the same output
    and exit; its report (JSON, text) and the ledger's peak."""
    c.fresh("parts_" + mode + tag)
    ledger = os.path.join(c.tmp, "ledger-%s.txt" % mode)
    env = {"VTSIM_LEDGER": ledger, "PYTHONPATH": STANDIN}
    argv = [c.args.python, os.path.join(HERE, "parts_train.py"), mode]
    _, traced, _ = c.same_as_untraced(argv, env=env, options=options,
                                      what="parts_train.py " + mode)
    c.last_stdout = traced.stdout
    traces = c.traces()
    if len(traces) != 1:
        c.fail("%s: want one trace, found %r" % (mode, os.listdir(c.out)))
        return None, "", 0
    rep = c.report(traces[0])
    errs = schema_errors(rep) if rep else []
    if errs:
        c.fail("%s: the report breaks its schema: %s" % (mode, errs[:3]))
    text = subprocess.run([c.vramtrace, "report", traces[0]], capture_output=True, text=True,
                          timeout=60).stdout
    devs = [d for p in rep.get("processes", []) for d in p.get("devices", [])
            if d.get("kind") == "device"]
    return (devs[0] if devs else None), text, ledger_peak(c, ledger)


def check_split_sums(c, what, split):
    """The shown rows (less the context, outside the total) add up to it."""
    rows = {k: v for k, v in split["bytes"].items() if v is not None and k != "context"}
    c.equal("%s: the parts add up to the total" % what, sum(rows.values()), split["total_bytes"])


def case_parts(c):
    """parts_train.py (a model, gradients and AdamW of known sizes): at the
    peak (segment level) and at a caught OOM (tensor level, the allocator's
    own blocks in its snapshot) each part is the known bytes, the parameter
    count is exact; without an optimizer, without a model, in inference
    and at a failure before the first step the report says what it knows
    and what not."""
    dev, text, peak = parts_run(c, "full")
    if not dev:
        return
    want = dict(PARTS_BYTES)
    if c.args.tamper:
        want["optimizer_state"] += MiB
    at = (dev.get("parts") or {}).get("at_peak") or {}
    c.equal("full: level at the peak", at.get("level"), "segment")
    c.equal("full: total at the peak = the ledger's peak", at.get("total_bytes"), peak)
    c.equal("full: the census at the peak", (at.get("census") or {}).get("why"), "first-step")
    got = at.get("bytes") or {}
    c.equal("full: parts at the peak", {k: got.get(k) for k in want}, want)
    if at:
        check_split_sums(c, "full at the peak", at)
    th = (dev.get("parts") or {}).get("theory") or {}
    c.equal("full: parameter count", th.get("parameter_count"), sum(PARTS_PARAMS.values()))
    c.equal("full: parameters by dtype",
            {d["dtype"]: d["count"] for d in th.get("parameters_by_dtype", [])}, PARTS_PARAMS)
    c.equal("full: optimizer", th.get("optimizer"), "AdamW")
    n = sum(PARTS_PARAMS.values())
    c.equal("full: AdamW bytes per parameter (8 for float32, 4 for bfloat16), 4 decimals",
            round(th.get("optimizer_state_bytes_per_parameter") or 0, 4), round(80 * MiB / n, 4))
    c.equal("full: by hand = observed", (th.get("by_hand") or {}).get("optimizer_state_bytes"),
            th.get("optimizer_state_bytes"))
    if "beside the theory" not in text or "float32 8388608, bfloat16 4194304" not in text:
        c.fail("full: the text report has no theory with the count by dtype:\n" + text)
    ooms = dev.get("ooms") or []
    fp = (ooms[0].get("parts") if ooms else None) or {}
    c.equal("full: the OOM's level", fp.get("level"), "tensor")
    got = fp.get("bytes") or {}
    c.equal("full: parts at the OOM (tensor level)", {k: got.get(k) for k in want}, want)
    pickles = glob.glob(os.path.join(c.out, "*.oom0.pickle"))
    if pickles and fp:
        with open(pickles[0], "rb") as f:
            snap = pickle.load(f)
        live = sum(b["requested_size"] for s in snap["segments"] for b in s["blocks"]
                   if b["state"] == "active_allocated")
        c.equal("full: activations at the OOM = the snapshot's live blocks less the parts",
                got.get("activations"), live - sum(PARTS_BYTES.values()))
        check_split_sums(c, "full at the OOM", fp)

    dev, text, peak = parts_run(c, "no_optimizer")
    at = ((dev or {}).get("parts") or {}).get("at_peak") or {}
    got = at.get("bytes") or {}
    c.equal("no_optimizer: parts at the peak",
            {k: got.get(k) for k in PARTS_BYTES},
            dict(PARTS_BYTES, optimizer_state=0))
    c.equal("no_optimizer: optimizer seen", (at.get("census") or {}).get("saw_optimizer"), False)
    if "no optimizer seen" not in text:
        c.fail("no_optimizer: the text does not say no optimizer was seen:\n" + text)

    dev, text, peak = parts_run(c, "inference")
    at = ((dev or {}).get("parts") or {}).get("at_peak") or {}
    got = at.get("bytes") or {}
    c.equal("inference: parts at the peak", {k: got.get(k) for k in PARTS_BYTES},
            dict(PARTS_BYTES, gradients=0, optimizer_state=0))
    c.equal("inference: total = the ledger's peak", at.get("total_bytes"), peak)
    if "no gradients then" not in text:
        c.fail("inference: the text does not say there were no gradients:\n" + text)

    dev, text, peak = parts_run(c, "no_model")
    at = ((dev or {}).get("parts") or {}).get("at_peak") or {}
    got = at.get("bytes") or {}
    c.equal("no_model: parts at the peak", {k: got.get(k) for k in PARTS_BYTES},
            {"parameters": 32 * MiB, "buffers": 0, "gradients": 32 * MiB,
             "optimizer_state": 64 * MiB})
    c.equal("no_model: model seen", (at.get("census") or {}).get("saw_model"), False)
    if "no model seen" not in text:
        c.fail("no_model: the text does not say no model was seen:\n" + text)

    # With the allocator's history the peak is told at the tensor level:
    # its blocks replayed to the peak.
    dev, text, peak = parts_run(c, "full", options=["--torch-history"], tag="_history")
    at = ((dev or {}).get("parts") or {}).get("at_peak") or {}
    c.equal("full, history: level at the peak", at.get("level"), "tensor")
    got = at.get("bytes") or {}
    c.equal("full, history: parts at the peak (tensor level)", {k: got.get(k) for k in want}, want)
    if at:
        check_split_sums(c, "full, history, at the peak", at)

    # A run that never fails: the snapshot the bootstrap writes at exit
    # (--torch-history) splits its peak at the tensor level, activations
    # apart from the cache, as the stand-in's allocator said at the peak
    # (the program's "peak allocated A reserved R").
    dev, text, peak = parts_run(c, "clean", options=["--torch-history"], tag="_history")
    said = [l.split() for l in c.last_stdout.splitlines() if l.startswith("peak allocated ")]
    exits = glob.glob(os.path.join(c.out, "*.vtrace.exit.pickle"))
    if not said or len(exits) != 1:
        c.fail("clean: scenario broken: %r, exit snapshots %r" % (said, os.listdir(c.out)))
    else:
        allocated, reserved = int(said[0][2]), int(said[0][4])
        with open(exits[0], "rb") as f:
            snap = pickle.load(f)  # Python's own pickle: a snapshot PyTorch's tools read
        if not snap.get("device_traces") or not snap["device_traces"][0]:
            c.fail("clean: the exit snapshot has no history")
        if stat.S_IMODE(os.stat(exits[0]).st_mode) != 0o600:
            c.fail("clean: the exit snapshot is not 0600")
        at = ((dev or {}).get("parts") or {}).get("at_peak") or {}
        got = at.get("bytes") or {}
        c.equal("clean: level at the peak (the exit snapshot's history)", at.get("level"), "tensor")
        c.equal("clean: parts at the peak", {k: got.get(k) for k in want}, want)
        c.equal("clean: activations at the peak = the stand-in's allocated less the parts",
                got.get("activations"), allocated - sum(PARTS_BYTES.values()))
        c.equal("clean: cached at the peak = the stand-in's reserved less allocated",
                got.get("cached_unallocated"), reserved - allocated)
        if at:
            check_split_sums(c, "clean at the peak", at)
        name = os.path.basename(exits[0])
        if "from the history in %s" % name not in text:
            c.fail("clean: the text does not name the exit snapshot:\n" + text)
        if "PyTorch's allocator at exit (with its history): snapshot %s" % name not in text:
            c.fail("clean: the marks do not say the exit snapshot:\n" + text)

    # fp32 master weights kept in the optimizer's state: the theory names
    # the difference and its likely cause.
    dev, text, peak = parts_run(c, "mixed")
    th = ((dev or {}).get("parts") or {}).get("theory") or {}
    c.equal("mixed: optimizer state observed (AdamW's 80 MiB + 48 MiB of fp32 copies)",
            th.get("optimizer_state_bytes"), want["optimizer_state"] + 48 * MiB)
    c.equal("mixed: optimizer state by hand", (th.get("by_hand") or {}).get("optimizer_state_bytes"),
            80 * MiB)
    if "largest difference from the hand arithmetic: optimizer state" not in text or \
            "fp32 master weights" not in text:
        c.fail("mixed: the text does not name the difference and its cause:\n" + text)

    # Two ranks of one job: each rank's peak split, in the job view from
    # the traces and from a node's summary.
    c.fresh("parts_job")
    prog = os.path.join(HERE, "parts_train.py")
    job = "RANK=0 WORLD_SIZE=2 %s %s full & RANK=1 WORLD_SIZE=2 %s %s no_model & wait" % (
        c.args.python, prog, c.args.python, prog)
    c.run(["bash", "-c", job], True, env={"PYTHONPATH": STANDIN, "VTSIM_MEMORY": "2GiB"})
    want_ranks = {0: dict(PARTS_BYTES),
                  1: {"parameters": 32 * MiB, "buffers": 0, "gradients": 32 * MiB,
                      "optimizer_state": 64 * MiB}}
    if c.args.tamper:
        want_ranks[1]["parameters"] += MiB
    rep = c.report(*c.traces())
    jobs = rep.get("jobs") or [{}]
    c.equal("job: each rank's parts at its peak",
            {x["rank"]: x["parts"] for x in jobs[0].get("parts", [])}, want_ranks)
    summary = os.path.join(c.tmp, "node.summary.json")
    r = subprocess.run([c.vramtrace, "report", "--summary", summary] + c.traces(),
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        c.fail("report --summary: %s" % r.stderr.strip())
    else:
        rep = c.report(summary)
        jobs = rep.get("jobs") or [{}]
        c.equal("job from a summary: each rank's parts",
                {x["rank"]: x["parts"] for x in jobs[0].get("parts", [])}, want_ranks)

    # diff: which part grew from no_optimizer to full (AdamW's state).
    before = glob.glob(os.path.join(c.tmp, "parts_no_optimizer", "*.vtrace"))
    after = glob.glob(os.path.join(c.tmp, "parts_full", "*.vtrace"))
    r = subprocess.run([c.vramtrace, "diff", "--json"] + before + after, capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0 or len(before) != 1 or len(after) != 1:
        c.fail("diff --json: %s" % r.stderr.strip())
    else:
        units = json.loads(r.stdout).get("units") or [{}]
        grew = {x["part"]: x["change_bytes"] for x in units[0].get("parts") or []}
        c.equal("diff: what each part changed by", {k: grew.get(k) for k in PARTS_BYTES},
                {"parameters": 0, "buffers": 0, "gradients": 0,
                 "optimizer_state": want["optimizer_state"]})
        text = subprocess.run([c.vramtrace, "diff"] + before + after, capture_output=True,
                              text=True, timeout=60).stdout
        if "the part that grew most: optimizer state, +80.00 MiB" not in text:
            c.fail("diff does not name the part that grew:\n" + text)

    dev, text, peak = parts_run(c, "fail_early")
    ooms = (dev or {}).get("ooms") or []
    fp = (ooms[0].get("parts") if ooms else None) or {}
    cen = fp.get("census") or {}
    c.equal("fail_early: the failure's census",
            (cen.get("why"), cen.get("optimizer_steps"), cen.get("saw_optimizer")),
            ("oom", 0, False))
    got = fp.get("bytes") or {}
    c.equal("fail_early: parts at the failure", {k: got.get(k) for k in PARTS_BYTES},
            dict(PARTS_BYTES, gradients=0, optimizer_state=0))


def case_hostile_modules(c):
    prog = os.path.join(HERE, "hostile_modules.py")
    for name in ("deep", "freeze", "raises", "state_list"):
        c.fresh("hostile_" + name)
        counts = os.path.join(c.tmp, "children_" + name)
        env = {"PYTHONPATH": STANDIN, "COUNT_FILE": counts}
        plain, traced, ours = c.same_as_untraced([c.args.python, prog, name], env=env,
                                                 what="hostile_modules.py " + name)
        if name == "deep" and "600 levels" not in plain.stdout:
            c.fail("deep: the untraced run did not finish: %s" % plain.stderr[-400:])
        if name == "raises" and "stays as it is" not in plain.stderr:
            c.fail("raises: the untraced run did not raise: %s" % plain.stderr[-400:])
        if name == "freeze":
            # The untraced run wrote first, the traced one second: the
            # bootstrap walks the model (10,001 modules) about once, not
            # once per frozen module.
            with open(counts) as f:
                traced_calls = int(f.read())
            c.run([c.args.python, prog, name], False, env)
            with open(counts) as f:
                plain_calls = int(f.read())
            if traced_calls - plain_calls > 3 * 10001:
                c.fail("freeze: children() yielded %d modules traced, %d untraced"
                       % (traced_calls, plain_calls))
        if not c.traces():
            c.fail("%s: no trace: the program did not allocate under the tracer" % name)


CASES = {"parts": case_parts, "oom": case_oom_phases, "eval_switch": case_eval_switch, "diff": case_diff,
         "slow_leak": case_slow_leak, "history": case_history, "no_phases": case_no_phases,
         "sitecustomize": case_sitecustomize, "no_torch": case_no_torch,
         "missing_api": case_missing_api, "unwritable": case_unwritable,
         "real_torch": case_real_torch, "hostile_modules": case_hostile_modules}
CASES.update(STORY_CASES)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--real-python", default="/usr/bin/python3")
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--tamper", action="store_true")
    args = ap.parse_args()
    if not shutil.which(args.python) and not os.path.exists(args.python):
        print("skip: no interpreter %r" % args.python)
        sys.exit(77)
    c = Check(args)
    try:
        CASES[args.case](c)
    finally:
        if not c.failures or args.tamper:  # a tamper run fails on purpose
            shutil.rmtree(c.tmp, ignore_errors=True)
    if c.failures:
        for f in c.failures:
            print("FAIL: " + f, file=sys.stderr)
        if not args.tamper:
            print("(files kept in %s)" % c.tmp, file=sys.stderr)
        sys.exit(1)
    print("ok: %s" % args.case)


if __name__ == "__main__":
    main()
