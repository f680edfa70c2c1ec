"""`vramtrace fit` checked against the truth: fit_prog (sizes that follow
known laws of its value) is traced at a few values, and fit's answer is
compared with the largest value that really fits, found by running every
value untraced on the simulated GPU until one fails. The prediction may be
one less than the truth (a conservative rounding), never more.
Python 3 stdlib only."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schema"))
from report_schema import DOCS, schema_errors  # noqa: E402

FIT_SCHEMA = os.path.join(DOCS, "fit.schema.json")

MIB = 1 << 20
GIB = 1 << 30
MEMORY = 8 * GIB
CONTEXT = 384 * MIB


class Failure(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


class Harness:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.preload = [p for p in args.preload_first.split(":") if p] + [args.lib]

    def env(self, traced, tracedir=None, extra=None):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env["LD_LIBRARY_PATH"] = ":".join([self.args.simdir, self.args.runtime_dir,
                                           os.environ.get("LD_LIBRARY_PATH", "")])
        env["VTSIM_MEMORY"] = "%dB" % MEMORY
        env["VTSIM_CONTEXT_BYTES"] = "%dB" % CONTEXT
        if traced:
            env["LD_PRELOAD"] = ":".join(self.preload)
            env["VRAMTRACE_OUTPUT"] = os.path.join(tracedir, "trace.%p.vtrace")
        env.update(extra or {})
        return env

    def run_prog(self, scenario, value, traced=False, extra=None):
        """The program's exit status (0 fits, 3 an allocation failed) and
        its trace directory when traced. Scenario frag: fit_frag."""
        tracedir = None
        if traced:
            tracedir = tempfile.mkdtemp(prefix="%s-%d-" % (scenario, value), dir=self.tmp)
        argv = [self.args.frag, str(value)] if scenario == "frag" else \
            [self.args.prog, scenario, str(value)]
        proc = subprocess.run(argv,
                              env=self.env(traced, tracedir, extra), capture_output=True,
                              text=True, timeout=30)
        expect(proc.returncode in (0, 3), "fit_prog %s %d exited %d: %s"
               % (scenario, value, proc.returncode, proc.stderr))
        return proc.returncode, tracedir

    def truth(self, scenario, extra=None):
        """The largest value that fits, run untraced: 1, 2, ... until one fails."""
        v = 0
        while True:
            rc, _ = self.run_prog(scenario, v + 1, extra=extra)
            if rc != 0:
                return v
            v += 1
            expect(v < 1000, "%s fits at every value up to 1000" % scenario)

    def fit(self, scenario, values, options=(), extra=None, expect_status=0):
        """fit's JSON for traced runs at values."""
        runs = []
        for v in values:
            rc, d = self.run_prog(scenario, v, traced=True, extra=extra)
            expect(rc == 0, "the traced run at %d did not fit" % v)
            runs.append("batch=%d:%s" % (v, d))
        cmd = [self.args.vramtrace, "fit", "--json"] + list(options) + runs
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        expect(proc.returncode == expect_status, "%s exited %d (wanted %d): %s"
               % (cmd, proc.returncode, expect_status, proc.stderr))
        if proc.returncode != 0:
            return proc
        doc = json.loads(proc.stdout)
        errors = schema_errors(doc, FIT_SCHEMA)
        expect(not errors, "docs/fit.schema.json: %s" % "; ".join(errors))
        return doc


def capacity_option():
    # What the process had: the device less its context (which the tracer
    # could not measure at the process's first retain).
    return ["--capacity", "%dB" % (MEMORY - CONTEXT)]


def check_prediction(h, scenario, values=(1, 2, 4), options=None, extra=None):
    out = h.fit(scenario, values, capacity_option() if options is None else options, extra)
    truth = h.truth(scenario, extra)
    pred = out["max_fits"]
    print("%s: truth %d, predicted %d (%s)" % (scenario, truth, pred, out["confidence"]["level"]))
    expect(pred <= truth, "%s: predicted %d fits, but only %d does" % (scenario, pred, truth))
    expect(pred >= truth - 1, "%s: predicted %d, the truth is %d" % (scenario, pred, truth))
    expect(out["at_next"]["fits"] is False and out["at_max"]["fits"] is True,
           "%s: max+1 should fail and max fit" % scenario)
    return out, truth


def law_of(out, function, phase):
    for law in out["laws"]:
        if function in law["site"] and law["phase"] == phase:
            return law
    raise Failure("no law for %s in %s" % (function, phase))


def scenario_linear(h):
    out, _ = check_prediction(h, "linear")
    expect(law_of(out, "activation", "train")["bytes"]["kind"] == "linear", "activations: linear")
    expect(law_of(out, "parameters", None)["bytes"]["kind"] == "constant", "parameters: constant")
    expect(out["limited_by"]["phase"] == "train", "train sets the limit: %r" % out["limited_by"])


def scenario_quadratic(h):
    out, _ = check_prediction(h, "quadratic")
    expect(law_of(out, "attention_scores", "train")["bytes"]["kind"] == "quadratic",
           "scores: quadratic")


def scenario_eval(h):
    out, _ = check_prediction(h, "eval")
    lim = out["limited_by"]
    expect(lim["phase"] == "eval" and "kv_cache" in lim["site"],
           "eval's KV cache sets the limit, not %r" % lim)


def scenario_library_and_lazy(h):
    # The optimizer state (first step) and the library buffer (second
    # step) are constant; both count at the limit.
    out, _ = check_prediction(h, "linear")
    names = [p["site"] for p in out["at_max"].get("parts", [])] or \
            [law["site"] for law in out["laws"]]
    for fn in ("optimizer_state", "library_workspace"):
        law = law_of(out, fn, "train")
        expect(law["bytes"]["kind"] == "constant" and law["runs_seen"] == 3,
               "%s: constant, in every run: %r" % (fn, law))
    expect(any("library_workspace" in n for n in names), "the library buffer is a part")


def scenario_layers(h):
    # The count of activations per step grows with the value (layers), not
    # their size: the count follows a law, and the run at a value has as
    # many as it says.
    out, _ = check_prediction(h, "layers")
    law = law_of(out, "activation", "train")
    expect(not law["same_count"] and law["count"]["kind"] == "linear",
           "activations: a linear count, %r" % law)


def scenario_buckets(h):
    # Sizes rounded up to powers of two follow no polynomial: four runs
    # show it, and the answer says so instead of being confidently wrong.
    out = h.fit("buckets", (1, 2, 3, 5), capacity_option())
    level = out["confidence"]["level"]
    print("buckets: predicted %d, confidence %s (%s)"
          % (out["max_fits"], level, out["confidence"]["why"]))
    expect(level == "low", "power-of-two buckets: confidence %s, not low" % level)
    expect(law_of(out, "activation", "train")["residual"] > 0.01, "a residual is reported")


def ledger_peak(h, scenario, value):
    """The device peak of one untraced run, from the simulated driver's ledger."""
    ledger = os.path.join(h.tmp, "ledger-%s-%d.txt" % (scenario, value))
    rc, _ = h.run_prog(scenario, value, extra={"VTSIM_LEDGER": ledger})
    expect(rc == 0, "the run at %d should fit" % value)
    total = peak = 0
    with open(ledger) as f:
        for line in f:
            e = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t"))
            if e.get("op") not in ("alloc", "free") or e.get("kind") != "device" \
                    or e.get("result") != "0":
                continue
            total += int(e["size"]) * (1 if e["op"] == "alloc" else -1)
            peak = max(peak, total)
    return peak


def scenario_at(h):
    out = h.fit("quadratic", (1, 2, 4), capacity_option() + ["--at", "10"])
    want = ledger_peak(h, "quadratic", 10)
    got = out["at"]["peak_bytes"]
    print("at 10: predicted peak %d, the ledger's %d" % (got, want))
    expect(got == want, "--at 10: peak %d, the ledger says %d" % (got, want))
    expect(out["at"]["fits"], "10 fits")
    expect(sum(p["bytes"] for p in out["at"]["parts"]) == got, "the parts add up to the peak")


def scenario_capacity_default(h):
    # Without --capacity: what the device had free once the process's first
    # context on it existed (the tracer records it): the device's total less
    # the context's charge, which the trace could not measure as a cost (a
    # first context), and the prediction against the untraced truth.
    context = 384 << 20
    extra = {"VTSIM_CONTEXT_BYTES": str(context)}
    out, _ = check_prediction(h, "eval", options=[], extra=extra)
    cap = out["capacity"]
    expect(cap["source"] == "free_at_first_context" and cap["bytes"] == MEMORY - context
           and cap["free_at_first_context_bytes"] == MEMORY - context,
           "capacity from the free bytes at the first context: %r" % cap)


def scenario_unmatched(h):
    rc, d1 = h.run_prog("linear", 1, traced=True)
    rc, d2 = h.run_prog("linear", 2, traced=True)
    rc, d3 = h.run_prog("other", 3, traced=True)
    bad = os.path.join(h.tmp, "bad.vtrace")
    with open(bad, "wb") as f:
        f.write(b"not a trace, " * 100)
    truncated = os.path.join(h.tmp, "truncated.vtrace")
    whole = os.path.join(d2, sorted(os.listdir(d2))[0])
    with open(whole, "rb") as f, open(truncated, "wb") as g:
        g.write(f.read()[:200])
    # Read whole, then wrong: its allocations were counted before the error.
    tail = os.path.join(h.tmp, "tail.vtrace")
    with open(whole, "rb") as f, open(tail, "wb") as g:
        g.write(f.read() + b"data after the trailer")
    cases = [
        (["batch=1:" + d1, "batch=2:" + bad], "bad.vtrace"),
        (["batch=1:" + d1, "batch=2:" + tail], "data after the trailer"),
        (["batch=1:" + d1, "batch=2:" + truncated], "truncated.vtrace"),
        (["batch=1:" + d1, "batch=2:" + os.path.join(h.tmp, "nowhere")], "nowhere"),
        (["batch=1:" + d1], "two or more runs"),
        (["batch=1:" + d1, "batch=1:" + d2], "must differ"),
        (["batch=1:" + d1, "layers=2:" + d2], "two parameters"),
        (["batch=1:" + d1, "batch=3:" + d3], "not the same program"),
        (["batch=1:" + d1, d2], "NAME=VALUE:TRACES"),
    ]
    for runs, words in cases:
        proc = subprocess.run([h.args.vramtrace, "fit"] + runs, capture_output=True, text=True,
                              timeout=30)
        lines = proc.stderr.strip().splitlines()
        expect(proc.returncode == 2, "%s: exit %d, not 2" % (runs, proc.returncode))
        expect(lines and words in lines[0], "%s: said %r, not %r" % (runs, proc.stderr, words))
        expect(proc.stdout == "", "%s: wrote to stdout" % runs)


def scenario_fragmentation(h):
    # Under the caching allocator the limit is lower than the tensors'
    # arithmetic: the model, fed the tensor-level traces, predicts it.
    truth = h.truth("frag", extra={"FIT_CACHING": "1"})
    arithmetic = h.fit("frag", (1, 2, 4), capacity_option())["max_fits"]
    out = h.fit("frag", (1, 2, 4), capacity_option() + ["--allocator", "pytorch"])
    pred = out["max_fits"]
    print("fragmentation: truth %d, the model %d, the arithmetic %d" % (truth, pred, arithmetic))
    expect(truth < arithmetic, "the scenario should fragment: truth %d, arithmetic %d"
           % (truth, arithmetic))
    expect(truth - 1 <= pred <= truth, "the model predicts %d, the truth is %d" % (pred, truth))
    expect(out["at_max"]["peak_bytes"] > out["at_max"]["peak_allocated_bytes"],
           "reserved above allocated at the limit")
    # PyTorch traced with its cache off: the model by default, with the
    # recorded settings.
    tensors = h.fit("frag", (1, 2, 4), capacity_option(),
                    extra={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    expect(tensors["traced"] == "pytorch_tensors" and tensors["allocator"] is not None,
           "traced with the cache off: through the model, %r" % tensors["allocator"])
    expect(tensors["max_fits"] == pred, "the model by default: %d, not %d"
           % (tensors["max_fits"], pred))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--frag", required=True)
    ap.add_argument("--runtime-dir", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("scenario")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vt-fit-")
    try:
        globals()["scenario_" + args.scenario](Harness(args, tmp))
    except Failure as e:
        print("FAIL: %s (files kept in %s)" % (e, tmp))
        return 1
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
