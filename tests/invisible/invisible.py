#!/usr/bin/env python3
"""The tracer is invisible (docs/internals/RELIABILITY.md, "Invisible").

    invisible.py --lib LIB --simdir DIR --probe EXE --pyprobe PY --check EXE
                 --vramtrace BIN [--preload-first PATHS] SCENARIO [ARGS...]

Each scenario runs the same program without and with libvramtrace.so and
compares what the program shows byte for byte: stdout, stderr, exit status
or signal of death, and a report the program writes of what it sees from
inside (open descriptors, the next descriptor number, every signal's
disposition by sigaction, signal(), sysv_signal(), siginterrupt(), sigset()
and Python's signal module). Where events are recorded, the trace must hold
every one of them, checked against the simulated driver's ledger with
rel_check. Python 3 standard library only.

Scenarios:
  fds LANG             c, python, shell: over the launch shapes (plain,
                       stdin closed, stdout closed, all three closed, fds
                       3-5 inherited from the parent)
  end LANG HOW         one ending (inv_probe.c / inv_probe.py ENDING): same
                       behaviour, and no event lost (flush interval 60 s:
                       only the ending itself can have written them)
  two_copies           two copies of the library in LD_PRELOAD: one trace
  disk_full_start      the trace cannot start: one line, no file left
  quiet                a bad option: said once, by the process that traces
  analyzer_fifo        report/dump of a FIFO (and a directory holding one)
  run_messages         `vramtrace run -- -o x`: only the real error
  address_space        under `ulimit -v 12000` the writer thread cannot start:
                       one line at the first driver call, the program unchanged
  floods               5,000 junk inputs, unknown options: a few lines, not
                       thousands; every error in JSON
  pickle_bomb          a 120 KB snapshot repeating shared objects N^3 times:
                       refused within a second; real snapshots still read
  unsafe_dirs          outputs through another user's link or directory in
                       a world-writable one: refused, one line (root only)
"""
import argparse
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

A = None
TIMEOUT = 20
FAILED = []
SHAPES = {
    "plain": 'exec "$@"',
    "no_stdin": 'exec "$@" <&-',
    "no_stdout": 'exec "$@" >&-',
    "no_stdio": 'exec "$@" <&- >&- 2>&-',
    "inherited": 'exec "$@" 3</dev/null 4>>"$INV_FILE" 5<&0',
}
# The shell probe: the shell's own descriptors (glob expanded by the shell
# itself), its traps, and a read from stdin (with stdin closed, a tracer's
# pipe on fd 0 would be read instead, and a loop never end).
SHELL_PROBE = ('printf "fds:"; for f in /proc/$$/fd/*; do printf " %s" "${f##*/}"; done; echo; trap; '
               'if read -r line 2>/dev/null; then echo "read [$line]"; else echo "read failed"; fi; '
               'echo done')


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    FAILED.append(msg)


def sanitizer_quiet(env):
    # A sanitizer's own handlers on the fatal signals would print reports
    # that differ run to run: leave those signals to the program.
    sig = "handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigill=0:handle_sigfpe=0"
    # Two instrumented copies of the library (two_copies) define the same
    # exported claim: ASan calls that an ODR violation; it is the point.
    env["ASAN_OPTIONS"] = "detect_leaks=0:verify_asan_link_order=0:detect_odr_violation=0:" + sig
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:" + sig
    return env


def base_env(tmp):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for k in list(env):
        if k.startswith("VRAMTRACE_") or k.startswith("VTSIM_"):
            env.pop(k)
    env["LD_LIBRARY_PATH"] = A.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
    env["INV_FILE"] = os.path.join(tmp, "inherited.txt")
    return sanitizer_quiet(env)


def traced_env(tmp, libs=None, extra=None):
    env = base_env(tmp)
    preload = [p for p in A.preload_first.split(":") if p] + (libs or [A.lib])
    env["LD_PRELOAD"] = ":".join(preload)
    env["VRAMTRACE_OUTPUT"] = os.path.join(tmp, "trace.%p.vtrace")
    env.update(extra or {})
    return env


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(cmd, env, tmp, shape="plain", preexec=no_core):
    """Runs cmd under a shell that shapes its descriptors; returns what
    the program showed: (status, stdout, stderr, report)."""
    report = os.path.join(tmp, "report.txt")
    for f in (report, env["INV_FILE"]):
        if os.path.exists(f):
            os.unlink(f)
    with open(env["INV_FILE"], "w") as f:
        f.write("inherited\n")
    full = ["/bin/sh", "-c", SHAPES[shape], "sh"] + [c.replace("REPORT", report) for c in cmd]
    try:
        p = subprocess.run(full, env=env, cwd=tmp, input=b"typed line\n", capture_output=True,
                           timeout=TIMEOUT, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        return ("hung", b"", b"", "")
    text = open(report).read() if os.path.exists(report) else "(no report)"
    # what differs from run to run anyway: addresses (faulthandler's thread)
    err = re.sub(rb"0x[0-9a-f]{8,}", b"0xADDR", p.stderr)
    return (p.returncode, p.stdout, err, text)


def same(name, plain, traced):
    if plain[3] == "(no report)" and not name.startswith("shell"):
        fail("%s: the untraced program wrote no report: exit %s, %r" % (name, plain[0], plain[2]))
        return False
    labels = ("exit status", "stdout", "stderr", "report")
    for label, a, b in zip(labels, plain, traced):
        if a != b:
            fail("%s: %s differs: untraced %r, traced %r" % (name, label, a, b))
            return False
    return True


def program(lang, how, cuda=1):
    if lang == "c":
        return [A.probe, "REPORT", how, str(cuda)]
    if lang == "python":
        return [sys.executable, A.pyprobe, "REPORT", how, str(cuda)]
    return ["/bin/sh", "-c", SHELL_PROBE]


def traces(tmp):
    return sorted(glob.glob(os.path.join(tmp, "*.vtrace")))


def every_event_in(name, tmp, ledger):
    found = traces(tmp)
    if len(found) != 1:
        fail("%s: %d traces, expected 1: %s" % (name, len(found), found))
        return None
    p = subprocess.run([A.check, "ledger", found[0], ledger, "--before", str(1 << 62)],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        fail("%s: events lost: %s%s" % (name, p.stdout, p.stderr))
        return None
    return p.stdout.strip()


# ---- scenarios ----

def scenario_fds(lang):
    for shape in SHAPES:
        with tempfile.TemporaryDirectory(prefix="vt-inv-fds-") as tmp:
            cmd = program(lang, "exit")
            plain = run(cmd, base_env(tmp), tmp, shape)
            traced = run(cmd, traced_env(tmp), tmp, shape)
            if same("%s %s" % (lang, shape), plain, traced):
                print("ok: %-6s %-9s exit %s, %d+%d bytes out/err, %d report bytes identical" %
                      (lang, shape, plain[0], len(plain[1]), len(plain[2]), len(plain[3])))


def scenario_end(lang, how):
    with tempfile.TemporaryDirectory(prefix="vt-inv-end-") as tmp:
        ledger = os.path.join(tmp, "ledger.txt")
        # Only the ending itself can write the events: no round before it.
        extra = {"VTSIM_LEDGER": ledger, "VRAMTRACE_FLUSH_MS": "60000",
                 "VRAMTRACE_BUFFER_KB": "4096"}
        cmd = program(lang, how)
        plain = run(cmd, base_env(tmp), tmp)
        traced = run(cmd, traced_env(tmp, extra=extra), tmp)
        name = "%s %s" % (lang, how)
        ok = same(name, plain, traced)
        line = every_event_in(name, tmp, ledger)
        if ok and line:
            print("ok: %s: exit %s, output identical; %s" % (name, plain[0], line))


def scenario_two_copies():
    with tempfile.TemporaryDirectory(prefix="vt-inv-two-") as tmp:
        other = os.path.join(tmp, "other", "libvramtrace.so")
        os.makedirs(os.path.dirname(other))
        shutil.copy(A.lib, other)
        ledger = os.path.join(tmp, "ledger.txt")
        cmd = program("c", "exit")
        plain = run(cmd, base_env(tmp), tmp)
        env = traced_env(tmp, libs=[A.lib, other], extra={"VTSIM_LEDGER": ledger})
        env["NVTX_INJECTION64_PATH"] = other
        traced = run(cmd, env, tmp)
        ok = same("two copies", plain, traced)
        line = every_event_in("two copies", tmp, ledger)
        if ok and line:
            print("ok: two copies in LD_PRELOAD: one trace, output identical; " + line)


def scenario_disk_full_start():
    """Cases: a file size limit of 0 (EFBIG on the first write), and a full
    filesystem (ENOSPC; a tmpfs in a private mount namespace, root only)."""
    with tempfile.TemporaryDirectory(prefix="vt-inv-disk-") as tmp:
        cmd = program("c", "exit")
        cmd[1] = "-"  # the report on stdout: the program writes no file itself

        def fsize0():
            no_core()
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
        plain = run(cmd, base_env(tmp), tmp, preexec=fsize0)
        traced = run(cmd, traced_env(tmp), tmp, preexec=fsize0)
        check_unstarted("file size limit 0", tmp, plain, traced, "File too large")
    with tempfile.TemporaryDirectory(prefix="vt-inv-disk-") as tmp:
        full = os.path.join(tmp, "full")
        os.mkdir(full)
        probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
        if probe.returncode != 0:
            print("skipped: a full filesystem (no private mount namespace here)")
            return
        fill = ('mount -t tmpfs -o size=64k tmpfs "$FULL" && '
                'dd if=/dev/zero of="$FULL/fill" bs=4k 2>/dev/null; exec "$@"')
        cmd = ["unshare", "-m", "/bin/sh", "-c", fill, "sh"] + program("c", "exit")
        env = traced_env(tmp, extra={"FULL": full,
                                     "VRAMTRACE_OUTPUT": os.path.join(full, "t.%p.vtrace")})
        penv = dict(base_env(tmp), FULL=full)
        plain = run(cmd, penv, tmp)
        # the tmpfs is gone with the namespace: look inside it before
        cmd_ls = cmd[:4] + [fill.replace('exec "$@"', '"$@"; s=$?; ls -A "$FULL" >&2; exit $s'),
                            "sh"] + program("c", "exit")
        traced = run(cmd_ls, env, tmp)
        left = [l for l in traced[2].decode().splitlines() if l.endswith(".vtrace")]
        traced = (traced[0], traced[1], b"\n".join(l for l in traced[2].splitlines()
                                                   if l != b"fill" and not l.endswith(b".vtrace"))
                  + (b"\n" if traced[2] else b""), traced[3])
        if left:
            fail("full filesystem: left behind %s" % left)
        check_unstarted("full filesystem", tmp, plain, traced, "No space left")


def check_unstarted(name, tmp, plain, traced, what):
    ours = [l for l in traced[2].decode().splitlines() if l.startswith("vramtrace")]
    theirs = b"".join(l + b"\n" for l in traced[2].splitlines() if not l.startswith(b"vramtrace"))
    if (plain[0], plain[1], plain[3], plain[2]) != (traced[0], traced[1], traced[3], theirs):
        fail("%s: the program's behaviour changed: %r vs %r" % (name, traced, plain))
    elif len(ours) != 1 or what not in ours[0]:
        fail("%s: expected one line about %r, got %r" % (name, what, ours))
    elif traces(tmp):
        fail("%s: left behind %s" % (name, [(t, os.path.getsize(t)) for t in traces(tmp)]))
    else:
        print("ok: %s: exit %s unchanged, nothing left behind, said: %s" % (name, plain[0], ours[0]))


def scenario_quiet():
    with tempfile.TemporaryDirectory(prefix="vt-inv-quiet-") as tmp:
        bad = {"VRAMTRACE_STACK_DEPTH": "banana"}
        pipeline = ["/bin/sh", "-c", "true | cat; timeout 5 true; sh -c 'echo $((1+1))'"]
        plain = run(pipeline, base_env(tmp), tmp)
        traced = run(pipeline, traced_env(tmp, extra=bad), tmp)
        if same("shell pipeline without CUDA (quiet)", plain, traced):
            print("ok: a pipeline of sh, cat, timeout that never use CUDA says nothing")
        cmd = program("c", "exit")
        traced = run(cmd, traced_env(tmp, extra=bad), tmp)
        said = [l for l in traced[2].decode().splitlines() if "VRAMTRACE_STACK_DEPTH" in l]
        if len(said) != 1:
            fail("quiet: the process that traces said %r, expected one line" % said)
        else:
            print("ok: the process that traces says it once: " + said[0])


def scenario_analyzer_fifo():
    with tempfile.TemporaryDirectory(prefix="vt-inv-fifo-") as tmp:
        fifo = os.path.join(tmp, "fifo.vtrace")
        os.mkfifo(fifo)
        for args in (["report", fifo], ["dump", fifo], ["report", "--json", fifo],
                     ["report", tmp]):
            try:
                p = subprocess.run([A.vramtrace] + args, capture_output=True, text=True,
                                   timeout=5, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                fail("vramtrace %s blocked on a FIFO" % " ".join(args))
                continue
            if p.returncode != 2 or "not a regular file" not in p.stderr:
                fail("vramtrace %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
            else:
                print("ok: vramtrace %s: exit 2, %s" % (" ".join(args), p.stderr.strip()))


def scenario_run_messages():
    with tempfile.TemporaryDirectory(prefix="vt-inv-run-") as tmp:
        env = base_env(tmp)
        if A.preload_first:
            env["LD_PRELOAD"] = A.preload_first.rstrip(":")
        p = subprocess.run([A.vramtrace, "run", "--", "-o", "x"], capture_output=True, text=True,
                           timeout=TIMEOUT, cwd=tmp, env=env)
        lines = p.stderr.splitlines()
        if p.returncode != 127 or lines != ["vramtrace run: cannot run -o: No such file or directory"]:
            fail("run -- -o x: exit %d, said %r" % (p.returncode, lines))
        else:
            print("ok: vramtrace run -- -o x: exit 127, one line: " + lines[0])


def scenario_address_space():
    """Under a small address-space limit the writer thread's stack cannot
    be mapped, so no event is ever recorded: the untraced run is said in
    one line at the first driver call, not held for a first event that
    never comes; a process that never calls the driver (sh) still says
    nothing."""
    if A.preload_first:
        print("skipped: a sanitizer's runtime needs far more address space than the limit")
        sys.exit(77)
    kib = 12000

    def limited():
        no_core()
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))
    with tempfile.TemporaryDirectory(prefix="vt-inv-as-") as tmp:
        cmd = program("c", "exit")
        cmd[1] = "-"
        plain = run(cmd, base_env(tmp), tmp, preexec=limited)
        if plain[0] != 5:
            print("skipped: the untraced probe does not run under %d KiB here: %r" % (kib, plain))
            sys.exit(77)
        for extra in ({}, {"VRAMTRACE_VERBOSE": "1"}):
            traced = run(cmd, traced_env(tmp, extra=extra), tmp, preexec=limited)
            ours = [l for l in traced[2].decode().splitlines() if l.startswith("vramtrace")]
            theirs = b"".join(l + b"\n" for l in traced[2].splitlines()
                              if not l.startswith(b"vramtrace"))
            said = [l for l in ours if "cannot start the trace writer" in l]
            name = "ulimit -v %d%s" % (kib, " VRAMTRACE_VERBOSE=1" if extra else "")
            if (plain[0], plain[1], plain[2], plain[3]) != (traced[0], traced[1], theirs, traced[3]):
                fail("%s: the program's behaviour changed: %r vs %r" % (name, traced, plain))
            elif len(said) != 1 or "ulimit -v" not in said[0] or (not extra and len(ours) != 1):
                fail("%s: expected one line on the writer, got %r" % (name, ours))
            elif traces(tmp):
                fail("%s: a trace appeared: %s" % (name, traces(tmp)))
            else:
                print("ok: %s: exit %s unchanged, %d line(s), said: %s" %
                      (name, plain[0], len(ours), said[0]))
        quiet = run(["/bin/sh", "-c", "echo shell"], traced_env(tmp), tmp, preexec=limited)
        if quiet[2] or quiet[1] != b"shell\n":
            fail("ulimit -v %d: a shell that never calls the driver said %r" % (kib, quiet))
        else:
            print("ok: ulimit -v %d: a shell that never calls the driver says nothing" % kib)


def scenario_floods():
    """A directory of 5,000 junk traces: a few errors named, then one line
    that counts the rest (every one in report --json's "input_errors"), not
    5,000 lines; an unknown option one line and where to look, not the
    whole usage."""
    named = 5
    with tempfile.TemporaryDirectory(prefix="vt-inv-flood-") as tmp:
        junk = os.path.join(tmp, "junk")
        os.mkdir(junk)
        for i in range(5000):
            with open(os.path.join(junk, "j%04d.vtrace" % i), "w") as f:
                f.write("junk %d\n" % i)
        # junk that is recognised by its head as a snapshot, and as a summary
        heads = {".pickle": b"\x80\x04junk", ".summary.json": b'{"vramtrace_summary": junk'}
        for i in range(20):
            for suffix, head in heads.items():
                with open(os.path.join(junk, "s%02d%s" % (i, suffix)), "wb") as f:
                    f.write(head)
        env = base_env(tmp)
        if A.preload_first:
            env["LD_PRELOAD"] = A.preload_first.rstrip(":")

        def vt(*args):
            return subprocess.run([A.vramtrace] + list(args), capture_output=True, text=True,
                                  timeout=60, cwd=tmp, env=env)
        # a good trace beside the junk: the report is written, partial (3)
        cmd = program("c", "exit")
        cmd[1] = "-"
        run(cmd, traced_env(tmp, extra={"VRAMTRACE_OUTPUT": os.path.join(junk, "good.%p.vtrace")}),
            tmp)
        good = glob.glob(os.path.join(junk, "good.*.vtrace"))
        traces_only = os.path.join(tmp, "traces")
        os.mkdir(traces_only)
        for f in glob.glob(os.path.join(junk, "*.vtrace")):
            os.link(f, os.path.join(traces_only, os.path.basename(f)))
        if len(good) != 1:
            fail("floods: no good trace was written: %s" % good)
            return
        p = vt("report", traces_only)
        lines = p.stderr.splitlines()
        errs = [l for l in lines if "bad magic" in l]
        counted = [l for l in lines if "and 4995 more input errors" in l]
        if p.returncode != 3 or len(errs) != named or len(counted) != 1 or len(lines) > named + 3:
            fail("report of 5000 junk traces: exit %d, %d lines: %r" %
                 (p.returncode, len(lines), lines[:12]))
        else:
            print("ok: report of 5,000 junk traces and a good one: exit 3, %d lines on stderr: %s" %
                  (len(lines), counted[0]))
        p = vt("report", "--json", traces_only)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {}
        every = doc.get("input_errors", [])
        named_files = {e.split(":")[0] for e in every}
        want = {os.path.join(traces_only, "j%04d.vtrace" % i) for i in range(5000)}
        if p.returncode != 3 or len(every) != 5000 or named_files != want or \
                len(p.stderr.splitlines()) > named + 3:
            fail("report --json of 5000 junk traces: exit %d, %d input_errors, %d stderr lines" %
                 (p.returncode, len(every), len(p.stderr.splitlines())))
        else:
            print("ok: report --json: exit 3, input_errors names all 5,000 files, %d stderr lines" %
                  len(p.stderr.splitlines()))
        for what, sub in (("snapshots", "*.pickle"), ("summaries", "*.summary.json")):
            d = os.path.join(tmp, what)
            os.mkdir(d)
            for f in glob.glob(os.path.join(junk, sub)):
                os.link(f, os.path.join(d, os.path.basename(f)))
            p = vt("report", d)
            lines = p.stderr.splitlines()
            if p.returncode != 2 or len(lines) > named + 2 or "bad magic" in p.stderr or \
                    not any("and 15 more input errors" in l for l in lines):
                fail("report of 20 junk %s: exit %d, %d lines: %r" %
                     (what, p.returncode, len(lines), lines))
            else:
                print("ok: report of 20 junk %s: exit 2, %d lines" % (what, len(lines)))
        for args in (["report", "--x", good[0]], ["report", "--top"], ["report", "-z", good[0]],
                     ["dump", "--bogus", good[0]], ["export", "--x"], ["simulate", "--x"],
                     ["diff", "--x"], ["run", "--x", "true"]):
            p = vt(*args)
            lines = p.stderr.splitlines()
            hint = "(vramtrace %s --help)" % args[0]
            if p.returncode != 2 or len(lines) != 1 or hint not in lines[0] or \
                    args[1].split("=")[0] not in lines[0] or p.stdout:
                fail("vramtrace %s: exit %d, %d lines: %r" %
                     (" ".join(args[:2]), p.returncode, len(lines), lines[:3]))
            else:
                print("ok: vramtrace %s: exit 2, one line: %s" % (" ".join(args[:2]), lines[0]))
        p = vt("frobnicate")
        if p.returncode != 2 or p.stderr.splitlines() != [
                "vramtrace: unknown command 'frobnicate' (vramtrace --help)"]:
            fail("vramtrace frobnicate: exit %d: %r" % (p.returncode, p.stderr))
        else:
            print("ok: vramtrace frobnicate: exit 2, one line")


def hostile_snapshot(n):
    """Segments that repeat one segment n times, whose blocks repeat one
    block n times, whose frames repeat one frame n times: Python's pickle
    writes each repeat as a memo reference (a few bytes), the reader shares
    the object, and walking it all is n^3 elements."""
    import pickle
    frame = {"filename": "train.py", "line": 7, "name": "step"}
    block = {"address": 0, "size": 512, "requested_size": 512, "state": "active_allocated",
             "frames": [frame] * n}
    segment = {"device": 0, "address": 0, "total_size": 512 * n, "allocated_size": 512 * n,
               "active_size": 512 * n, "requested_size": 512 * n, "stream": 0,
               "segment_type": "large", "is_expandable": False, "frames": [],
               "blocks": [block] * n}
    return pickle.dumps({"segments": [segment] * n, "device_traces": [[]],
                         "allocator_settings": {}}, protocol=4)


def scenario_pickle_bomb():
    """A snapshot whose memo repeats expand to N^3 elements (N = 20,000:
    minutes of work in small memory) is refused within a second, in one
    line naming the file and a byte offset; the real snapshots of
    tests/data are still read."""
    import time
    with tempfile.TemporaryDirectory(prefix="vt-inv-pickle-") as tmp:
        bomb = os.path.join(tmp, "bomb.pickle")
        with open(bomb, "wb") as f:
            f.write(hostile_snapshot(20000))
        size = os.path.getsize(bomb)
        for args in (["report", bomb], ["report", "--json", bomb], ["simulate", bomb]):
            t0 = time.monotonic()
            try:
                p = subprocess.run([A.vramtrace] + args, capture_output=True, text=True, timeout=30)
            except subprocess.TimeoutExpired:
                fail("vramtrace %s of a %d-byte pickle: still running after 30 s" %
                     (" ".join(args[:-1]), size))
                continue
            took = time.monotonic() - t0
            lines = p.stderr.splitlines()
            if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith(
                    "vramtrace: %s: byte " % bomb) or "refused" not in lines[0] or p.stdout:
                fail("vramtrace %s: exit %d, %r" % (" ".join(args[:-1]), p.returncode, lines))
            elif took > 5:
                fail("vramtrace %s: %.1f s for a %d-byte pickle" % (" ".join(args[:-1]), took, size))
            else:
                print("ok: vramtrace %s of a %d-byte pickle (N = 20,000): exit 2 in %.2f s: %s" %
                      (" ".join(args[:-1]), size, took, lines[0]))
        real = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "data", "pytorch-snapshots", "*.pickle")))
        for snap in real:
            p = subprocess.run([A.vramtrace, "report", snap], capture_output=True, text=True,
                               timeout=60)
            if p.returncode != 0 or "refused" in p.stderr:
                fail("real snapshot %s: exit %d: %s" % (snap, p.returncode, p.stderr[:300]))
        if not real:
            fail("no real snapshots found beside the tests")
        else:
            print("ok: %d real snapshots still reported (exit 0)" % len(real))


def unsafe_tree(tmp):
    """A sticky world-writable directory shared/ (like /tmp) where another
    user (uid 65534) made a link traces -> an 0777 directory of theirs, and
    a directory of theirs, bob/ (0777); mine/ is ours. Returns the paths."""
    other = 65534
    shared = os.path.join(tmp, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    target = os.path.join(tmp, "target")
    os.mkdir(target)
    os.chmod(target, 0o777)
    os.chown(target, other, other)
    link = os.path.join(shared, "traces")
    os.symlink(target, link)
    os.lchown(link, other, other)
    bob = os.path.join(shared, "bob")
    os.mkdir(bob)
    os.chmod(bob, 0o777)
    os.chown(bob, other, other)
    return shared, target, link, bob


def files_under(*dirs):
    return sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d))


def scenario_unsafe_dirs():
    """Root's output must not land where another user
    steers it: through their link in a sticky world-writable directory, into
    their directory there, or into their 0777 directory. Each refusal is one
    line and the program goes on unchanged; our own directory there works."""
    if os.geteuid() != 0:
        print("skipped: needs root, to give a directory to another uid")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="vt-inv-unsafe-") as tmp:
        shared, target, link, bob = unsafe_tree(tmp)
        cmd = program("c", "exit")
        cmd[1] = "-"  # the report on stdout: the program writes no file itself
        plain = run(cmd, base_env(tmp), tmp)
        cases = [("another user's link in a sticky directory", link, "a symbolic link owned by uid 65534"),
                 ("another user's directory in a sticky directory", bob, "a directory owned by uid 65534"),
                 ("another user's 0777 directory", target, "writable by every user, not sticky"),
                 ("a directory made below another user's link", os.path.join(link, "run1"),
                  "a symbolic link owned by uid 65534")]
        for name, where, what in cases:
            out = os.path.join(where, "t.%p.vtrace")
            traced = run(cmd, traced_env(tmp, extra={"VRAMTRACE_OUTPUT": out}), tmp)
            ours = [l for l in traced[2].decode().splitlines() if l.startswith("vramtrace")]
            theirs = b"".join(l + b"\n" for l in traced[2].splitlines()
                              if not l.startswith(b"vramtrace"))
            left = files_under(target, bob)
            if (plain[0], plain[1], plain[2], plain[3]) != (traced[0], traced[1], theirs, traced[3]):
                fail("%s: the program's behaviour changed: %r vs %r" % (name, traced, plain))
            elif len(ours) != 1 or what not in ours[0] or "tracing disabled" not in ours[0]:
                fail("%s: expected one line saying %r, got %r" % (name, what, ours))
            elif left:
                fail("%s: written through: %s" % (name, left))
            else:
                print("ok: %s: refused, exit %s unchanged, said: %s" % (name, plain[0], ours[0]))
        # Ours, in the same sticky directory (made now, and through a link
        # of ours): traced as ever.
        mine = os.path.join(shared, "mine")
        os.symlink(os.path.join(tmp, "real"), os.path.join(shared, "mylink"))
        os.mkdir(os.path.join(tmp, "real"))
        for where in (mine, os.path.join(shared, "mylink")):
            traced = run(cmd, traced_env(tmp, extra={"VRAMTRACE_OUTPUT": os.path.join(where, "t.%p.vtrace")}), tmp)
            got = glob.glob(os.path.join(where, "*.vtrace"))
            if traced[2] or len(got) != 1:
                fail("our own %s: said %r, traces %s" % (where, traced[2], got))
            else:
                print("ok: our own %s in the sticky directory: traced, nothing said" % where)
        trace = glob.glob(os.path.join(mine, "*.vtrace"))[0]
        # vramtrace run -o: one line (run's own), the command untraced and unchanged.
        env = base_env(tmp)
        if A.preload_first:
            env["LD_PRELOAD"] = A.preload_first.rstrip(":")
        env["INV_FILE"] = base_env(tmp)["INV_FILE"]
        traced = run([A.vramtrace, "run", "-o", os.path.join(link, "t.%p.vtrace"), "--"] + cmd,
                     env, tmp)
        ours = [l for l in traced[2].decode().splitlines() if l.startswith("vramtrace")]
        if (traced[0], traced[1]) != (plain[0], plain[1]) or len(ours) != 1 or \
                "symbolic link owned by uid 65534" not in ours[0] or files_under(target, bob):
            fail("run -o through the link: exit %s, said %r, left %s" %
                 (traced[0], ours, files_under(target, bob)))
        else:
            print("ok: vramtrace run -o through the link: exit %s, stdout unchanged, one line: %s" %
                  (traced[0], ours[0]))
        # The analyzer's outputs: exit 2, one line, nothing written there.
        for args in (["report", "--html", os.path.join(link, "r.html"), trace],
                     ["report", "--summary", os.path.join(bob, "n.summary.json"), trace],
                     ["export", "--format", "perfetto", "-o", os.path.join(link, "p.json"), trace],
                     ["export", "--format", "folded", "-o", os.path.join(target, "f.txt"), trace]):
            p = subprocess.run([A.vramtrace] + args, capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=tmp, env=env)
            lines = p.stderr.splitlines()
            if p.returncode != 2 or len(lines) != 1 or "uid 65534" not in lines[0] or \
                    files_under(target, bob):
                fail("vramtrace %s: exit %d, said %r, left %s" %
                     (" ".join(args[:3]), p.returncode, lines, files_under(target, bob)))
            else:
                print("ok: vramtrace %s: exit 2, %s" % (" ".join(args[:3]), lines[0]))


def main():
    global A
    ap = argparse.ArgumentParser()
    for opt in ("--lib", "--simdir", "--probe", "--pyprobe", "--check", "--vramtrace"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("scenario")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    A = ap.parse_args()
    A.pyprobe = os.path.abspath(A.pyprobe)
    s, args = A.scenario, A.args
    if s == "fds":
        scenario_fds(args[0])
    elif s == "end":
        scenario_end(args[0], args[1])
    elif s in ("two_copies", "disk_full_start", "quiet", "analyzer_fifo", "run_messages",
               "unsafe_dirs", "address_space", "floods", "pickle_bomb"):
        globals()["scenario_" + s]()
    else:
        fail("unknown scenario " + s)
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
