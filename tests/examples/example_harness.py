"""Runs one example exactly as docs/user/EXAMPLES.md documents it, on the
simulated GPU, with the driver's ledger and the example's phase log in a
fresh directory; then asks `vramtrace report` (text and --json) about the
traces. A check script compares the report with ledger_truth.

    check_X.py --build BUILD_DIR --src SOURCE_DIR [--preload-first LIBS] [--tamper]

--tamper makes the truth wrong on purpose (a phantom 1 MiB held by every
process): the check must then fail, which its `_tamper` test asserts. So
that a tamper test cannot "fail" for another reason, a run that breaks
before the figures are compared exits 0 under --tamper (the tamper test then
reports an unexpected pass).
"""
import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_truth import Ledger, format_bytes  # noqa: E402,F401
from simulate_check import check_simulate  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schema"))
from report_schema import schema_errors  # noqa: E402

# The runs' directories go at exit once the check passed, or in a tamper
# run (it fails on purpose); any other end keeps them to look at. Each run
# used to leave its directory in /tmp.
_dirs = {"made": [], "passed": False, "tamper": False}


@atexit.register
def _remove_dirs():
    if not (_dirs["passed"] or _dirs["tamper"]):
        if _dirs["made"]:
            print("(files kept in %s)" % " ".join(_dirs["made"]), file=sys.stderr)
        return
    for d in _dirs["made"]:
        shutil.rmtree(d, ignore_errors=True)


def passed():
    """The check passed: its runs' directories go at exit."""
    _dirs["passed"] = True


class Run:
    def __init__(self, tmp, ledger, report, text, proc):
        self.tmp, self.ledger, self.report, self.text, self.proc = tmp, ledger, report, text, proc
        self.failures = []

    # ---- what the report says -----------------------------------------

    def process(self, pid):
        for p in self.report["processes"]:
            if p["pid"] == pid:
                return p
        self.fail("the report has no process %d" % pid)
        return {"devices": []}

    def device(self, pid, dev=0, kind="device"):
        for d in self.process(pid)["devices"]:
            if d["device"] == dev and d["kind"] == kind:
                return d
        self.fail("the report has no %s ledger for pid %d device %d" % (kind, pid, dev))
        return {"ooms": [], "phases": [], "peak_bytes": None}

    def text_report(self, *options):
        """`vramtrace report OPTIONS` on the traces, as text (a pipe: 100
        columns unless --width says otherwise)."""
        r = subprocess.run([self.vramtrace, "report", *options, self.traces], env=self.env,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            self.fail("vramtrace report %s exited %d: %s" % (" ".join(options), r.returncode,
                                                             r.stderr.strip()))
        return r.stdout

    def traced_pids(self):
        return [p["pid"] for p in self.report["processes"]]

    # ---- checks ---------------------------------------------------------

    def fail(self, msg):
        self.failures.append(msg)

    def equal(self, what, got, want):
        if got != want:
            self.fail("%s: report says %r, ledger says %r" % (what, got, want))

    def says(self, text):
        """The text report (what a person reads) contains text."""
        if text not in self.text:
            self.fail("the text report does not say %r" % text)

    def says_row(self, *cells):
        """The text report has a line with these cells in order, separated
        only by blanks (a table row: "eval   11.63 GiB")."""
        pattern = r"(^|\s)" + r"\s+".join(re.escape(c) for c in cells) + r"(\s|$)"
        if not re.search(pattern, self.text, re.M):
            self.fail("the text report has no row %r" % (cells,))

    def finish(self):
        check_simulate(self)
        if self.failures:
            print("--- text report ---\n" + self.text, file=sys.stderr)
            for f in self.failures:
                print("FAIL: " + f, file=sys.stderr)
            _dirs["passed"] = False  # a run checked before passed: all are kept
            sys.exit(1)
        passed()
        print("ok: every figure checked matches the ledger")


def broken(args, msg):
    """The run itself went wrong: nothing was compared."""
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(0 if args.tamper else 1)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--tamper", action="store_true")
    return ap.parse_args()


def run_example(args, command, env=None, expect_status=0, phase_log=False):
    """command: argv; the strings {vramtrace}, {build}, {src}, {out} are
    replaced. Returns a Run (the temporary directory lives until exit)."""
    build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="vt-example-")
    _dirs["made"].append(tmp)
    _dirs["tamper"] = args.tamper
    out = os.path.join(tmp, "traces")
    os.mkdir(out)
    vramtrace = os.path.join(build, "analyzer", "vramtrace")
    subst = {"vramtrace": vramtrace, "build": build, "src": os.path.abspath(args.src), "out": out}
    argv = [a.format(**subst) for a in command]
    sim = os.path.join(build, "tests", "simdriver")
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("VTSIM_", "VRAMTRACE_", "NVTX_", "VTEXAMPLE_"))}
    e["LD_LIBRARY_PATH"] = sim + ":" + os.path.join(sim, "runtime")
    e["VTSIM_LEDGER"] = os.path.join(tmp, "ledger.txt")
    if phase_log:
        e["VTEXAMPLE_PHASE_LOG"] = os.path.join(tmp, "phases.txt")
    if args.preload_first:
        e["LD_PRELOAD"] = args.preload_first
    else:
        e.pop("LD_PRELOAD", None)
    e.update(env or {})
    proc = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=120)
    if proc.returncode != expect_status:
        print(proc.stdout + proc.stderr, file=sys.stderr)
        broken(args, "%s exited %d, expected %d" % (argv, proc.returncode, expect_status))
    rep_env = {k: v for k, v in e.items() if k != "VTEXAMPLE_PHASE_LOG"}
    js = subprocess.run([vramtrace, "report", "--json", out], env=rep_env,
                        capture_output=True, text=True, timeout=60)
    text = subprocess.run([vramtrace, "report", out], env=rep_env,
                          capture_output=True, text=True, timeout=60)
    if js.returncode != 0 or text.returncode != 0:
        print(js.stderr + text.stderr, file=sys.stderr)
        broken(args, "vramtrace report exited %d/%d" % (js.returncode, text.returncode))
    ledger = Ledger(e["VTSIM_LEDGER"], phantom_bytes=(1 << 20) if args.tamper else 0)
    run = Run(tmp, ledger, json.loads(js.stdout), text.stdout, proc)
    run.phase_log = e.get("VTEXAMPLE_PHASE_LOG")
    run.vramtrace, run.traces, run.env = vramtrace, out, rep_env
    errors = schema_errors(run.report)
    if errors:
        run.fail("report --json breaks docs/report.schema.json: %s" % errors)
    return run
