#!/usr/bin/env python3
"""The `vramtrace` command line, end to end: dump, report (text and JSON),
errors and exit codes, and `run`. Expected figures come from make_traces
(chosen by hand there), never from vramtrace itself."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schema"))
from report_schema import schema_errors  # noqa: E402

VRAMTRACE, MAKE_TRACES = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, env=None):
    p = subprocess.run([VRAMTRACE, *args], capture_output=True, text=True, env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


with tempfile.TemporaryDirectory() as d:
    facts = {}
    out = subprocess.run([MAKE_TRACES, d], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        k, v = line.split()
        facts[k] = int(v)
    good, cut, corrupt = (os.path.join(d, n) for n in ("good.vtrace", "cut.vtrace", "corrupt.vtrace"))

    rc, out, err = run("--help")
    check(rc == 0 and "report" in out and "run" in out, "--help")
    rc, out, err = run("--version")
    check(rc == 0 and "vramtrace" in out, "--version")
    rc, out, err = run("report", "--bogus", good)
    check(rc == 2 and err == "vramtrace report: unknown option '--bogus' (vramtrace report --help)\n",
          "bad option: one line and where to look, exit 2")
    rc, out, err = run("report", "--top", "x", good)
    check(rc == 2 and "--top" in err, "bad --top value exits 2")
    rc, out, err = run("frobnicate")
    check(rc == 2 and err == "vramtrace: unknown command 'frobnicate' (vramtrace --help)\n",
          "unknown command: one line, exit 2")

    # dump: every record, text and JSON lines
    rc, out, err = run("dump", good)
    check(rc == 0, "dump exit 0")
    check(sum(1 for l in out.splitlines() if l.startswith("mem ")) == facts["mem_records"], "dump mem lines")
    rc, out, err = run("dump", "--json", good)
    recs = [json.loads(l) for l in out.splitlines()]
    check(rc == 0 and recs[0]["type"] == "process" and recs[0]["pid"] == facts["pid"], "dump --json process")
    check(any(r["type"] == "string" and r["text"] == 'train\n"step"' for r in recs), "escaped string round trip")
    check(recs[-1]["type"] == "trailer", "dump ends with the trailer")

    # report --json: the contract keys and the hand-made figures
    rc, out, err = run("report", "--json", good)
    check(rc == 0, "report --json exit 0")
    rep = json.loads(out)
    check(rep["vramtrace_report"] == 2 and rep["snapshots"] == [] and [i["kind"] for i in rep["inputs"]] == ["trace"], "report version key, one schema")
    p = rep["processes"][0]
    for k in ("pid", "rank", "command", "truncated", "lost_events", "devices"):
        check(k in p, "process key " + k)
    check(p["pid"] == facts["pid"] and p["rank"] == 0 and p["truncated"] is False, "process facts")
    dev = [x for x in p["devices"] if x["kind"] == "device"][0]
    for k in ("device", "uuid", "kind", "total_bytes", "peak_bytes", "peak_time_ns", "peak_breakdown", "phases", "ooms"):
        check(k in dev, "device key " + k)
    check(dev["peak_bytes"] == facts["device_peak"], "device peak")
    check(dev["peak_time_ns"] == facts["device_peak_time"], "device peak time")
    bd = dev["peak_breakdown"]
    check([b["bytes"] for b in bd] == [300 << 20, 200 << 20], "breakdown at the peak instant")
    check(bd[0]["thread"] == "pt_autograd_0" and bd[1]["thread"] == "main", "breakdown threads")
    check(all(set(f) >= {"function", "file", "line", "module"} for b in bd for f in b["frames"]), "frame keys")
    check(dev["phases"][0]["name"] == 'train\n"step"' and dev["phases"][0]["peak_bytes"] == facts["phase_peak"], "phase peak")
    oom = dev["ooms"][0]
    for k in ("time_ns", "requested_bytes", "free_bytes", "total_bytes", "process_bytes",
              "largest_free_block_bytes", "verdict", "frames"):
        check(k in oom, "oom key " + k)
    check(oom["requested_bytes"] == facts["requested"] and oom["verdict"] == "oversized"
          and oom["largest_free_block_bytes"] is None and oom["process_bytes"] == 200 << 20, "oom figures")
    pinned = [x for x in p["devices"] if x["kind"] == "host_pinned"][0]
    check(pinned["peak_bytes"] == facts["pinned_peak"], "pinned peak")
    check(rep["gpus"][0]["peak_bytes"] == facts["device_peak"], "gpu peak")

    # text report: the story on the first lines
    rc, out, err = run("report", good)
    check(rc == 0 and "500.00 MiB" in out and "oversized" in out and "[backward]" in out, "text report")
    check("live at exit on pid %d device 0: 200.00 MiB in 1 allocation (never freed)" % facts["pid"]
          in out, "leaks in the text report")
    check(out.count("the same as at the peak") == 1, "a leak table equal to the peak's is not repeated")
    live = dev["live_at_exit"]
    check(sum(r["bytes"] for r in live) == dev["final_bytes"] == 200 << 20, "leaks in JSON")
    rc, out, err = run("report", "--phase", 'train\n"step"', good)
    check(rc == 0 and "500.00 MiB" in out, "report --phase")
    rc, out, err = run("report", "--device", "5", "--json", good)
    check(rc == 2 and out == "" and "no device 5; devices: 0" in err,
          "report --device that matches nothing says what exists")
    rc, out, err = run("report", "--device", "0", "--json", good)
    check(rc == 0 and [d["device"] for d in json.loads(out)["processes"][0]["devices"]
                       if d["kind"] == "device"] == [0], "report --device filters")
    rc, out, err = run("report", "--pid", "4242", good)
    check(rc == 2 and out == "" and "no pid 4242; pids: " in err, "report --pid that matches nothing")
    rc, out, err = run("report", "--phase", "nope", good)
    check(rc == 2 and 'no phase "nope"; phases: train' in err, "report --phase that matches nothing")

    # names that carry terminal escapes (make_traces: a thread, a phase, a
    # mark, a census, a Python frame): no control character but the newline
    # on any text output, '?' in their place; JSON keeps them exactly
    hostile = os.path.join(d, "hostile.vtrace")
    hostile_summary = os.path.join(d, "hostile.summary.json")
    control = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
    rc, out, err = run("report", "--summary", hostile_summary, hostile)
    check(rc == 0, "a summary of names with escapes")
    for args in (["report", hostile], ["report", "--at", "0.000002s", hostile],
                 ["report", "--full-stacks", hostile], ["report", hostile_summary],
                 ["diff", good, hostile], ["export", "--format", "folded", hostile],
                 ["report", "--phase", "nope", hostile]):
        rc, out, err = run(*args)
        bad = [l for l in (out + err).splitlines() if control.search(l)]
        check(rc in (0, 2) and out + err and not bad,
              "%s: no control characters on text output (%d lines have: %r)"
              % (" ".join(args[:-1]), len(bad), bad[:2]))
    rc, out, err = run("report", hostile)
    check("[thread ?]0;PWN??[2J]" in out and "?[31mtrain " in out and "?[31msaved " in out
          and "(?[31mfirst-step," in out and "?[31mforward (?[31mtrain.py:7)" in out,
          "a trace's names with '?' for their control characters")
    rc, out, err = run("report", "--json", hostile)
    dev = json.loads(out)["processes"][0]["devices"][0] if rc == 0 else {}
    check(dev.get("peak_breakdown", [{}])[0].get("thread") == "\x1b]0;PWN\x07\x1b[2J"
          and dev["phases"][0]["name"] == "\x1b[31mtrain", "JSON keeps a trace's names exactly")

    # the same input named twice counts once, said once on stderr: a file
    # named and in a directory named, a copy of a trace (the same process:
    # host, pid, start time), a summary and its copy
    twice = os.path.join(d, "twice")
    os.mkdir(twice)
    shutil.copy(good, os.path.join(twice, "a.vtrace"))
    for what, args in (("a file named twice", [twice, os.path.join(twice, "a.vtrace")]),
                       ("a trace and its copy", [twice, good])):
        rc, out, err = run("report", *args)
        check(rc == 0 and out.startswith("vramtrace report: 1 process,")
              and out.count("followed by") == 0 and err.count("read once") == 1,
              "%s: one process, said once (%r)" % (what, err))
    sums = os.path.join(d, "sums")
    os.mkdir(sums)
    rc, out, err = run("report", "--summary", os.path.join(sums, "a.summary.json"), good)
    shutil.copy(os.path.join(sums, "a.summary.json"), os.path.join(sums, "b.summary.json"))
    rc, out, err = run("report", sums)
    check(rc == 0 and "job: 1 process," in out and out.count(" 777\n") == 1
          and err.count("read once") == 1, "a summary and its copy: one process (%r)" % err)

    # a cut trace is readable up to its last whole chunk; a corrupt one is an error
    rc, out, err = run("report", "--json", cut)
    check(rc == 0 and json.loads(out)["processes"][0]["truncated"] is True, "cut trace reported")
    check("byte %d" % facts["cut_end"] in err, "cut trace names where it ends")
    rc, out, err = run("report", corrupt)
    check(rc == 3 and "corrupt.vtrace: byte " in err, "corrupt trace exits 3 with an offset")
    check(out.startswith("vramtrace report: 1 process"), "a corrupt trace is reported up to its error")
    check(str(facts["corrupt_chunk"]) in err, "corrupt trace names the chunk's offset")
    junk = os.path.join(d, "junk.vtrace")
    with open(junk, "wb") as f:
        f.write(b"\x00" * 100)
    rc, out, err = run("report", junk)
    check(rc == 2 and "junk.vtrace: byte 0" in err, "not a trace exits 2")
    rc, out, err = run("dump", corrupt)
    check(rc == 2 and "corrupt chunk" in err, "dump of a corrupt trace exits 2")

    # a short flag means one thing in every command, and every --help ends
    # with an example
    letters = {}
    for cmd in ("run", "report", "dump", "simulate", "export", "diff"):
        rc, out, err = run(cmd, "--help")
        check(rc == 0, cmd + " --help exits 0")
        for letter, name in re.findall(r"^\s+-(\w), --([a-z-]+)", out, re.M):
            letters.setdefault(letter, set()).add(name)
        tail = out.rstrip("\n").splitlines()[-3:]
        check(any(l.startswith("  vramtrace " + cmd) for l in tail) and
              any(l.startswith("example") for l in out.splitlines()),
              cmd + " --help ends with an example")
    clashes = {k: v for k, v in letters.items() if len(v) > 1}
    check(not clashes, "short flags with two meanings across commands: %s" % clashes)

    # any mix of traces, snapshots and directories in one call: one document
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                            "pytorch-snapshots")
    snap_a = os.path.join(fixtures, "eor.pickle")
    snap_b = os.path.join(fixtures, "selectn_04d383c.pickle")
    rc, out, err = run("report", "--json", good, snap_a)
    doc = json.loads(out) if rc == 0 else {}
    check(schema_errors(doc) == [], "the mixed document meets docs/report.schema.json")
    check(rc == 0 and [i["kind"] for i in doc["inputs"]] == ["trace", "snapshot"]
          and len(doc["processes"]) == 1 and len(doc["snapshots"]) == 1
          and doc["snapshots"][0]["file"] == snap_a, "a trace and a snapshot together")
    rc, out, err = run("report", "--json", snap_a, snap_b)
    doc = json.loads(out) if rc == 0 else {}
    check(rc == 0 and doc["processes"] == [] and
          [x["file"] for x in doc["snapshots"]] == [snap_a, snap_b], "two snapshots together")
    mixed = os.path.join(d, "mixed")
    os.mkdir(mixed)
    shutil.copy(good, os.path.join(mixed, "a.vtrace"))
    shutil.copy(snap_a, os.path.join(mixed, "b.pickle"))
    rc, out, err = run("report", mixed)
    check(rc == 0 and out.startswith("vramtrace report: 1 process") and
          "PyTorch memory snapshot " + os.path.join(mixed, "b.pickle") in out,
          "a directory of a trace and a snapshot, in text")

    # run: exit status passes through; no trace when no CUDA is used.
    # Only if the preload library lets a plain program start in this build
    # (a problem there is the preload's to fix, and its own tests show it).
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(VRAMTRACE), "..", "preload", "libvramtrace.so")
    probe_env = dict(env, LD_PRELOAD=":".join(x for x in (env.get("LD_PRELOAD", ""), lib) if x))
    if not os.path.exists(lib):  # built without the CUDA headers: no tracer
        skip = "%s not built" % lib
    else:
        probe = subprocess.run(["sh", "-c", "exit 0"], env=probe_env, capture_output=True)
        skip = probe.returncode and "sh with %s preloaded exits %d" % (lib, probe.returncode)
    if skip:
        print("SKIP run checks: " + skip)
        print("%d failure(s)" % len(failures))
        sys.exit(1 if failures else 0)
    rc, out, err = run("run", "-o", os.path.join(d, "r.%p.vtrace"), "--", "sh", "-c", "exit 3", env=env)
    check(rc == 3, "run passes the exit status (got %d: %s)" % (rc, err))
    rc, out, err = run("run", "--", "sh", "-c", "kill -TERM $$", env=env)
    check(rc == -15, "run dies of the signal that killed the command (got %d)" % rc)
    rc, out, err = run("run", "--", "sh", "-c", "kill -KILL $$", env=env)
    check(rc == -9, "run dies of SIGKILL when the command did (got %d)" % rc)
    rc, out, err = run("run", "-o", os.path.join(good, "sub", "x.%p.vtrace"), "--", "true", env=env)
    check(rc == 0 and "cannot make the trace directory" in err and "runs untraced" in err,
          "run says when -o's directory cannot be made, and runs the command anyway")
    rc, out, err = run("run", "--", "/nonexistent/cmd", env=env)
    check(rc == 127, "run of a missing command exits 127")
    rc, out, err = run("run", "--", "sh", "-c", 'printf "%s" "$LD_PRELOAD"', env=env)
    check("libvramtrace.so" in out, "run sets LD_PRELOAD")
    rc, out, err = run("run", "--stack-depth", "999", "--", "true")
    check(rc == 2, "run rejects a bad --stack-depth")

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
