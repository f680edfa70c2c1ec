#!/usr/bin/env python3
"""The real-torch suite: vramtrace's Python bootstrap against a real PyTorch
(Debian 13's CPU build, 2.6, Python 3.13), run by scripts/real-torch.sh
inside the root it makes (docs/user/PYTORCH.md "Tests"). Each test compares
what vramtrace wrote with independent truth: what the program did and what
PyTorch itself says of its tensors (cpu_model.py, ddp_train.py write it),
the same program run without vramtrace, PyTorch's own memory_viz reading
vramtrace's files, Python's pickle.

    suite.py --build BUILD --simdriver DIR --log TESTLOG [--tamper] [TEST...]

BUILD holds analyzer/vramtrace, preload/libvramtrace.so, preload/python;
DIR the simulated driver (libcuda.so, runtime/libsimcudart.so). TESTLOG gets
one JSON line per test in meson's format ({"name", "result"}), which
scripts/count-tests.py counts. --tamper falsifies each test's truth: every
test must then fail (the suite's own check that it can).
"""
import argparse
import glob
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PYTORCH_TESTS = os.path.dirname(HERE)
STANDIN = os.path.join(PYTORCH_TESTS, "standin", "site-packages")
PY = sys.executable
MODES = ("adamw", "sgd_accum", "adam_foreach_autocast", "checkpoint", "checkpoint_reentrant",
         "train_override", "compile")
PART_NAMES = {1: "parameters", 2: "buffers", 3: "gradients", 4: "optimizer_state"}


class Failed(Exception):
    pass


class Suite(object):
    def __init__(self, args):
        self.args = args
        self.vramtrace = os.path.join(args.build, "analyzer", "vramtrace")
        self.tmp = tempfile.mkdtemp(prefix="vt-real-")
        self.results = []
        self.failures = []
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("VRAMTRACE_", "VTSIM_", "PYTHON", "VT_"))}
        base.pop("LD_PRELOAD", None)
        self.env = base

    # ---- checks ----
    def fail(self, msg):
        self.failures.append(msg)

    def equal(self, what, got, want):
        if self.args.tamper:
            want = ("tampered", want)
        if got != want:
            self.fail("%s: got %r, want %r" % (what, got, want))

    def need(self, cond, msg):
        if not cond:
            raise Failed(msg)

    # ---- running ----
    def scratch(self, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        return d

    def run(self, argv, out=None, env=None, options=(), timeout=300, cwd=None):
        """argv, under `vramtrace run` writing into out when out is set."""
        e = dict(self.env)
        e.update(env or {})
        cmd = list(argv)
        if out:
            cmd = [self.vramtrace, "run", "-q", "-o", os.path.join(out, "t.%p.vtrace")] + \
                list(options) + ["--"] + cmd
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout,
                              cwd=cwd or self.tmp)

    def vt(self, *args):
        r = subprocess.run([self.vramtrace] + list(args), capture_output=True, text=True,
                           timeout=120)
        self.need(r.returncode == 0, "vramtrace %s: exit %d: %s"
                  % (" ".join(args), r.returncode, r.stderr.strip()[-800:]))
        return r.stdout

    def dump(self, trace):
        return [json.loads(l) for l in self.vt("dump", "--json", trace).splitlines() if l.strip()]

    def untouched(self, what, plain, traced, sort_lines=False):
        """The program's output and exit as without vramtrace; no line of
        the bootstrap's on stderr."""
        def lines(s):
            x = s.splitlines()
            return sorted(x) if sort_lines else x
        self.need(plain.returncode == 0, "%s failed without vramtrace: %s"
                  % (what, plain.stderr[-1500:]))
        self.equal("%s: stdout under vramtrace" % what, lines(traced.stdout), lines(plain.stdout))
        self.equal("%s: exit status under vramtrace" % what, traced.returncode, plain.returncode)
        self.equal("%s: stderr under vramtrace" % what, lines(traced.stderr), lines(plain.stderr))

    # ---- the test runner ----
    def test(self, name, fn, *args):
        self.failures = []
        start = time.time()
        try:
            fn(self, *args)
        except Failed as e:
            self.failures.append(str(e))
        except Exception:
            self.failures.append(traceback.format_exc())
        ok = not self.failures
        result = "OK" if ok else "FAIL"
        self.results.append({"name": name, "result": result,
                             "duration": round(time.time() - start, 2)})
        print("%-4s %s (%.1f s)" % ("ok" if ok else "FAIL", name, time.time() - start),
              flush=True)
        for f in self.failures:
            print("     " + f.replace("\n", "\n     "), flush=True)


# ---- what a trace says ----
def phases_of(records):
    """The bootstrap's phases, in the order they opened."""
    return [r["name"] for r in records if r.get("type") == "range_start"]


def census_of(records, why):
    """The first census of that reason: parameters by dtype [count, bytes],
    the other parts' bytes, the optimizer state's bytes by key, the
    optimizers named, the devices its tensors were told on."""
    parts = [r for r in records if r.get("type") == "part"]
    numbers = [r["census"] for r in parts if r["part"] == 0 and r["name"] == why]
    if not numbers:
        return None
    mine = [r for r in parts if r["census"] == numbers[0]]
    head = [r for r in mine if r["part"] == 0][0]
    out = {"parameters": {}, "buffers": 0, "gradients": 0, "optimizer_state": {},
           "optimizer": head.get("dtype") or "", "devices": sorted({r["device"] for r in mine
                                                                   if r["part"]})}
    for r in mine:
        kind = PART_NAMES.get(r["part"])
        if kind == "parameters":
            c = out["parameters"].setdefault(r["dtype"], [0, 0])
            c[0] += r["elements"]
            c[1] += r["bytes"]
        elif kind == "optimizer_state":
            key = r["name"].rsplit(".", 1)[-1]
            out["optimizer_state"][key] = out["optimizer_state"].get(key, 0) + r["bytes"]
        elif kind:
            out[kind] += r["bytes"]
    return out


def check_census(s, what, records, truth):
    got = census_of(records, "first-step")
    s.need(got is not None, "%s: no census at the first optimizer step" % what)
    s.equal("%s: census devices (CPU tensors told as device 0)" % what, got.pop("devices"), [0])
    s.equal("%s: census at the first step vs PyTorch's own tensors" % what, got,
            truth["census"])


# ---- the tests ----
def t_version(s):
    import torch

    s.equal("the torch checked", (torch.__version__.split("+")[0][:3], sys.version_info[:2],
                                  torch.cuda.is_available(), torch.version.cuda),
            ("2.6", (3, 13), False, None))


def t_untouched_without_check(s):
    """A CPU-only torch without VRAMTRACE_TORCH_CPU: nothing happens - no
    file, no line, the same output (CUDA never initialises)."""
    out = s.scratch("no_check")
    argv = [PY, os.path.join(HERE, "cpu_model.py"), "adamw"]
    s.untouched("cpu_model.py adamw", s.run(argv), s.run(argv, out))
    s.equal("files written without the CPU self-check", os.listdir(out), [])


def t_mode(s, mode):
    out = s.scratch(mode)
    argv = [PY, os.path.join(HERE, "cpu_model.py"), mode]
    truth_path = os.path.join(out, "..", mode + ".truth.json")
    plain = s.run(argv, env={"VT_TRUTH": truth_path + ".plain"})
    traced = s.run(argv, out, env={"VT_TRUTH": truth_path, "VRAMTRACE_TORCH_CPU": "1"})
    s.untouched("cpu_model.py " + mode, plain, traced)
    with open(truth_path) as f:
        truth = json.load(f)
    traces = glob.glob(os.path.join(out, "*.vtrace"))
    s.need(len(traces) == 1, "%s: want one trace, found %r" % (mode, os.listdir(out)))
    records = s.dump(traces[0])
    s.equal("%s: phases" % mode, phases_of(records), truth["phases"])
    check_census(s, mode, records, truth)


def t_ddp(s):
    out = s.scratch("ddp")
    argv = [PY, os.path.join(HERE, "ddp_train.py")]
    truth_path = os.path.join(s.tmp, "ddp.truth")
    plain = s.run(argv, env={"VT_TRUTH": truth_path + ".plain"})
    traced = s.run(argv, out, env={"VT_TRUTH": truth_path, "VRAMTRACE_TORCH_CPU": "1"})
    s.untouched("ddp_train.py (two ranks)", plain, traced, sort_lines=True)
    traces = sorted(glob.glob(os.path.join(out, "*.vtrace")))
    s.need(len(traces) == 2, "ddp: want a trace per rank, found %r" % os.listdir(out))
    seen = {}
    for t in traces:
        records = s.dump(t)
        proc = [r for r in records if r.get("type") == "process"][0]
        rank = int((proc.get("env") or {}).get("RANK", proc.get("RANK", -1)))
        with open("%s.%d" % (truth_path, rank)) as f:
            truth = json.load(f)
        seen[rank] = phases_of(records) == truth["phases"]
        s.equal("ddp rank %d: phases" % rank, phases_of(records), truth["phases"])
        check_census(s, "ddp rank %d" % rank, records, truth)
    s.equal("ddp: the ranks traced", sorted(seen), [0, 1])
    doc = json.loads(s.vt("report", "--json", *traces))
    s.equal("ddp: the report's ranks and world size",
            sorted((p.get("rank"), p.get("world_size")) for p in doc.get("processes", [])),
            [(0, 2), (1, 2)])


def markers(path):
    with open(path) as f:
        return {m.group(1): n for n, line in enumerate(f, 1)
                for m in [re.search(r"# marker: (\w+)", line)] if m}


def sim_env(s):
    sim = s.args.simdriver
    return {"LD_LIBRARY_PATH": sim + ":" + os.path.join(sim, "runtime"),
            "VTSIM_MEMORY": "940MiB"}


def t_frames(s):
    """Python 3.13's frames, with a real torch imported, name the script's
    lines: the report's site of the allocations."""
    out = s.scratch("frames")
    prog = os.path.join(HERE, "frames.py")
    plain = s.run([PY, prog], env=sim_env(s))
    traced = s.run([PY, prog], out, env=sim_env(s))
    s.untouched("frames.py", plain, traced)
    traces = glob.glob(os.path.join(out, "*.vtrace"))
    s.need(len(traces) == 1, "frames: want one trace, found %r" % os.listdir(out))
    text = s.vt("report", "--width", "0", traces[0])
    m = markers(prog)
    # (3.12 and later inline the list comprehension: no frame of its own)
    want = "grow (frames.py:%d) <- main (frames.py:%d) <- <module> (frames.py:%d)" % (
        m["grow"], m["main"], m["module"])
    found = want in text
    s.equal("frames: the report names the script's lines", found, True)
    if not found:
        s.fail("the report does not say %r:\n%s" % (want, text))


def memory_viz(s, what, path, snap):
    """PyTorch's own torch.cuda._memory_viz reads the file: stats, trace,
    trace_plot and segment_plot; what stats and trace print is the file's
    as Python's pickle reads it."""
    from torch.cuda._memory_viz import Bytes

    def viz(*args):
        r = subprocess.run([PY, "-m", "torch.cuda._memory_viz"] + list(args),
                           capture_output=True, text=True, timeout=120, env=s.env)
        s.need(r.returncode == 0, "%s: _memory_viz %s: exit %d: %s"
               % (what, args[0], r.returncode, r.stderr.strip()[-1500:]))
        return r.stdout
    segments = snap["segments"]
    stats = viz("stats", path)
    s.equal("%s: stats' segments and reserved bytes" % what,
            [l for l in stats.splitlines() if l.startswith(("segments:", "total_reserved:"))],
            ["segments: %d" % len(segments),
             "total_reserved: %s" % Bytes(sum(seg["total_size"] for seg in segments))])
    trace = viz("trace", path)
    entries = snap["device_traces"][0]
    count = {a: sum(1 for e in entries if e["action"] == a)
             for a in ("alloc", "segment_alloc", "free_requested", "oom")}
    s.need(count["alloc"] + count["segment_alloc"] > 0, "%s: no allocations" % what)
    printed = {"alloc": len(re.findall(r"(?m)^\w+ = \w+\[\d+:", trace)),
               "segment_alloc": len(re.findall(r"(?m)^\w+ = cudaMalloc\(", trace)),
               "free_requested": len(re.findall(r"(?m)^del ", trace)),
               "oom": len(re.findall(r"(?m)^raise OutOfMemoryError", trace))}
    s.equal("%s: trace's entries" % what, trace.splitlines()[1:2],
            ["%d entries" % len(entries)])
    s.equal("%s: trace's allocations, frees and OOMs" % what, printed, count)
    for kind in ("trace_plot", "segment_plot"):
        html = os.path.join(s.tmp, "%s.%s.html" % (os.path.basename(path), kind))
        viz(kind, path, "-o", html)
        with open(html) as f:
            page = f.read()
        s.equal("%s: %s wrote a page" % (what, kind), len(page) > 1000 and "<html" in page, True)


def t_memory_viz(s):
    """The stand-in's OOM snapshot (with the allocator's history) and
    vramtrace's memory_viz export of the same run, read by PyTorch's own
    _memory_viz."""
    out = s.scratch("viz")
    env = dict(sim_env(s), PYTHONPATH=STANDIN)
    r = s.run([PY, os.path.join(PYTORCH_TESTS, "train_oom.py")], out, env=env,
              options=["--torch-history"])
    s.need("OutOfMemoryError" in r.stderr, "train_oom.py did not fail: %s" % r.stderr[-800:])
    traces = glob.glob(os.path.join(out, "*.vtrace"))
    pickles = glob.glob(os.path.join(out, "*.oom0.pickle"))
    s.need(len(traces) == 1 and len(pickles) == 1, "viz: files %r" % os.listdir(out))
    with open(pickles[0], "rb") as f:
        snap = pickle.load(f)  # the stand-in's, written by the bootstrap
    memory_viz(s, "the OOM snapshot", pickles[0], snap)
    export = os.path.join(out, "export.pickle")
    s.vt("export", "--format", "memory-viz", "-o", export, traces[0])
    with open(export, "rb") as f:
        snap = pickle.load(f)  # vramtrace's export
    memory_viz(s, "vramtrace's export", export, snap)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--simdriver", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--tamper", action="store_true")
    ap.add_argument("tests", nargs="*")
    args = ap.parse_args()
    s = Suite(args)
    tests = [("real_torch_version", t_version, ()),
             ("real_torch_untouched_without_check", t_untouched_without_check, ())]
    tests += [("real_torch_" + m, t_mode, (m,)) for m in MODES]
    tests += [("real_torch_ddp_gloo", t_ddp, ()), ("real_torch_frames_py313", t_frames, ()),
              ("real_torch_memory_viz", t_memory_viz, ())]
    try:
        for name, fn, a in tests:
            if not args.tests or name in args.tests:
                s.test(name, fn, *a)
    finally:
        if not any(r["result"] == "FAIL" for r in s.results) or args.tamper:
            shutil.rmtree(s.tmp, ignore_errors=True)
        else:
            print("(files kept in %s)" % s.tmp)
    with open(args.log, "w") as f:
        for r in s.results:
            if args.tamper:  # a tamper run passes when every test failed
                r = dict(r, result="EXPECTEDFAIL" if r["result"] == "FAIL" else "UNEXPECTEDPASS")
            f.write(json.dumps(r) + "\n")
    bad = [r for r in s.results if (r["result"] == "FAIL") != bool(args.tamper)]
    print("real-torch suite: %d tests, %d failed%s" % (len(s.results), len(bad),
                                                       " (tamper run)" if args.tamper else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
