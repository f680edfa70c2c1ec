#!/usr/bin/env python3
"""Python frames in the tracer's stacks, end to end, for one interpreter.

Runs py_client.py under `vramtrace run` with the given Python on the
simulated GPU, then compares `vramtrace report --json` (and --no-symbols,
and `dump --json`) with the truth the client took with Python's own
sys._getframe at each cudaMalloc line:
  - each allocation site's stack in the peak breakdown: native frames from
    the runtime down to where the interpreter was entered, then exactly the
    client's Python frames (function, file, line), innermost first, and
    nothing after them;
  - a threading.Thread shows its own Python stack;
  - the helper's native thread keeps a native stack, no Python frame;
  - the helper's function that Python called stays in the JSON's native
    frames, and the text report's row shows the Python frames alone;
  - the ledger of the simulated driver holds each allocation the client
    logged (pointer and size).
Exit 77 when the interpreter is absent (a skipped test).

With --expect-native (an interpreter the tracer does not read, such as a
free-threaded build it has no reading for): the tracer must say so once on
stderr ("stacks stay native"), every site keeps its native stack with
cudaMalloc innermost and no Python frame, the ledger still holds each
allocation, and the trace has no py_code record.

    check_frames.py --python PY --build BUILD_DIR --src SOURCE_DIR
                    --native-lib LIB [--preload-first LIBS] [--tamper]
                    [--expect-native]

--tamper expects a wrong line for one frame (with --expect-native, a wrong
size): the check must then fail.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="")
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--native-lib", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--tamper", action="store_true")
    ap.add_argument("--expect-native", action="store_true")
    return ap.parse_args()


def ledger_allocs(path):
    live = {}
    with open(path) as f:
        for line in f:
            e = dict(x.split("=", 1) for x in line.rstrip("\n").split("\t") if "=" in x)
            if e.get("op") == "alloc":
                live[int(e["addr"], 0)] = int(e["size"], 0)
    return live


def main():
    args = parse_args()
    if not args.python or not os.access(args.python, os.X_OK):
        print("skip: no interpreter %r" % args.python)
        sys.exit(77)
    build = os.path.abspath(args.build)
    here = os.path.dirname(os.path.abspath(__file__))
    vramtrace = os.path.join(build, "analyzer", "vramtrace")
    sim = os.path.join(build, "tests", "simdriver")
    tmp = tempfile.mkdtemp(prefix="vt-pyframes-")
    out = os.path.join(tmp, "traces")
    os.mkdir(out)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VTSIM_", "VRAMTRACE_", "PYTHON"))}
    env["LD_LIBRARY_PATH"] = sim + ":" + os.path.join(sim, "runtime")
    env["VTSIM_LEDGER"] = os.path.join(tmp, "ledger.txt")
    env["VTPY_FACTS"] = os.path.join(tmp, "facts.json")
    env["VTPY_NATIVE_LIB"] = os.path.abspath(args.native_lib)
    env.pop("LD_PRELOAD", None)
    if args.preload_first:
        env["LD_PRELOAD"] = args.preload_first
    client = os.path.join(here, "py_client.py")
    proc = subprocess.run([vramtrace, "run", "-o", os.path.join(out, "t.%p.vtrace"), "--",
                           args.python, client], env=env, capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != 0:
        print(proc.stdout + proc.stderr, file=sys.stderr)
        print("FAIL: the client exited %d" % proc.returncode, file=sys.stderr)
        sys.exit(1)
    failures = []
    said = [l for l in proc.stderr.splitlines() if "stacks stay native" in l]
    if args.expect_native and len(said) != 1:
        failures.append("the tracer must say once that stacks stay native; it said:\n" +
                        proc.stderr.strip())
    elif said and not args.expect_native:
        failures.append("the tracer refused this Python: " + proc.stderr.strip())
    with open(env["VTPY_FACTS"]) as f:
        truth = json.load(f)
    facts = truth["facts"]
    if args.tamper and args.expect_native:
        facts[0]["bytes"] += 1  # no Python line to get wrong: a size, then
    elif args.tamper:
        facts[0]["python"][0]["line"] += 1

    ledger = ledger_allocs(env["VTSIM_LEDGER"])
    for fact in facts:
        if ledger.get(fact["ptr"]) != fact["bytes"]:
            failures.append("%s: the ledger has no allocation of %d bytes at %s"
                            % (fact["site"], fact["bytes"], fact["ptr"]))

    def report(*extra):
        r = subprocess.run([vramtrace, "report", "--json", "--top", "50"] + list(extra) + [out],
                           env=env, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            print("FAIL: vramtrace report exited %d" % r.returncode, file=sys.stderr)
            sys.exit(1)
        rep = json.loads(r.stdout)
        procs = [p for p in rep["processes"] if p["devices"]]
        if len(procs) != 1:
            failures.append("expected one process with device memory, got %d" % len(procs))
            return []
        dev = [d for d in procs[0]["devices"] if d["kind"] == "device"][0]
        return dev["peak_breakdown"]

    def check_site(fact, site, symbols):
        name = "%s (%s)" % (fact["site"], "symbols" if symbols else "--no-symbols")
        if site is None:
            failures.append("%s: no peak breakdown row of %d bytes" % (name, fact["bytes"]))
            return
        frames = site["frames"]
        py = [i for i, f in enumerate(frames) if f["module"] == "python"]
        got = [{"function": frames[i]["function"], "file": frames[i]["file"],
                "line": frames[i]["line"]} for i in py]
        if got != fact["python"]:
            failures.append("%s: Python frames\n  report: %s\n  truth:  %s"
                            % (name, got, fact["python"]))
        if py and py != list(range(py[0], len(frames))):
            failures.append("%s: frames after the Python ones (the native frames below the "
                            "interpreter must be dropped): %s" % (name, frames[py[0]:]))
        native = frames[:py[0]] if py else frames
        if not native:
            failures.append("%s: no native frame above the Python ones" % name)
        if symbols:
            names = [f["function"] or "" for f in native]
            if not names or names[0] != "cudaMalloc":
                failures.append("%s: the innermost frame is %r, not cudaMalloc"
                                % (name, names[:1]))
            if any(n.startswith("_PyEval_EvalFrame") for n in names) and py:
                failures.append("%s: interpreter frames kept above the Python ones: %s"
                                % (name, names))
            if fact["site"] == "native_call" and "vtpy_alloc_from_python" not in names:
                failures.append("%s: the function Python called is missing: %s" % (name, names))
            if fact["site"] == "native" and "vtpy_native_thread_main" not in names:
                failures.append("%s: the native thread's own function is missing: %s"
                                % (name, names))

    def check_native(rows, symbols):
        """Native stacks: sites that share one (every call through the same
        interpreter path) share a row, so the rows are checked together:
        each all native, cudaMalloc innermost, and between them exactly the
        client's allocations."""
        how = "symbols" if symbols else "--no-symbols"
        for site in rows:
            frames = site["frames"]
            if any(f["module"] == "python" for f in frames):
                failures.append("%s: a row has Python frames where native stacks were "
                                "expected: %s" % (how, frames))
            if not frames:
                failures.append("%s: a row of %d bytes has no frame" % (how, site["bytes"]))
            elif symbols and (frames[0]["function"] or "") != "cudaMalloc":
                failures.append("%s: the innermost frame is %r, not cudaMalloc"
                                % (how, frames[0]["function"]))
        got = (sum(r["bytes"] for r in rows), sum(r["count"] for r in rows))
        want = (sum(f["bytes"] for f in facts), len(facts))
        if got != want:
            failures.append("%s: the peak holds %d bytes in %d allocations, the client made %d "
                            "in %d" % ((how,) + got + want))
        if symbols and not any("vtpy_native_thread_main" in [f["function"] for f in r["frames"]]
                               for r in rows):
            failures.append("the native thread's own function is missing")

    for symbols in (True, False):
        rows = report() if symbols else report("--no-symbols")
        if args.expect_native:
            check_native(rows, symbols)
            continue
        by_bytes = {s["bytes"]: s for s in rows}
        for fact in facts:
            check_site(fact, by_bytes.get(fact["bytes"]), symbols)

    # The text report shows each Python site as what the user wrote: its
    # Python frames, innermost first, then the API they called ("via
    # cudaMalloc"); the runtime's and the interpreter's frames are left out
    # (docs/user/REPORT.md, "Stacks"); so is the program's own native code
    # where the stack has Python frames (native_call's helper function).
    # Every frame, at any width:
    text = "" if args.expect_native else subprocess.run([vramtrace, "report", "--top", "50", "--frames", "0", "--width", "0",
                           out], env=env, capture_output=True, text=True, timeout=60).stdout
    for fact in facts:
        if not fact["python"] or args.expect_native:
            continue
        py = " <- ".join("%s (%s:%d)" % (f["function"], os.path.basename(f["file"]), f["line"])
                         for f in fact["python"])
        if not any(("  %s  via cudaMalloc" % py) in l for l in text.splitlines()):
            failures.append("%s: the text report has no row %r then via cudaMalloc"
                            % (fact["site"], py))

    # The sites the client must have had, with the stacks the test is about.
    sites = {f["site"]: f for f in facts}
    for want in ("layer0", "layer1", "latin1", "ucs2", "recursive", "thread", "native",
                 "native_call"):
        if want not in sites:
            failures.append("the client did not log site %s" % want)
    if "thread" in sites and not any(f["function"] == "worker" for f in sites["thread"]["python"]):
        failures.append("the worker thread's truth lacks worker(): the client changed")
    if "thread" in sites and any(f["function"] == "main" for f in sites["thread"]["python"]):
        failures.append("the worker thread's truth has main(): the client changed")

    # The trace describes each Python code before a stack node uses it.
    dump = subprocess.run([vramtrace, "dump", "--json"] +
                          [os.path.join(out, n) for n in sorted(os.listdir(out))],
                          env=env, capture_output=True, text=True, timeout=60)
    described = set()
    for line in dump.stdout.splitlines():
        rec = json.loads(line)
        if rec["type"] == "py_code":
            described.add(rec["id"])
        elif rec["type"] == "stack_node" and "py_code" in rec and rec["py_code"] not in described:
            failures.append("stack node %d uses Python code %d before its record"
                            % (rec["id"], rec["py_code"]))
    if args.expect_native and described:
        failures.append("the trace has py_code records where native stacks were expected")
    elif not described and not args.expect_native:
        failures.append("the trace has no py_code record")

    if failures:
        for f in failures:
            print("FAIL: " + f, file=sys.stderr)
        if args.tamper:  # it fails on purpose
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("(files kept in %s)" % tmp, file=sys.stderr)
        sys.exit(1)
    shutil.rmtree(tmp, ignore_errors=True)
    if args.expect_native:
        print("ok: Python %d.%d: %d allocation sites, native stacks, said once: %s"
              % (truth["version"][0], truth["version"][1], len(facts), said[0]))
        return
    print("ok: Python %d.%d: %d allocation sites, every Python frame as Python itself saw it"
          % (truth["version"][0], truth["version"][1], len(facts)))


if __name__ == "__main__":
    main()
