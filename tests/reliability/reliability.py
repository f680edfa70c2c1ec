#!/usr/bin/env python3
"""The tracer survives what kills the job: the reliability scenarios.

    reliability.py --vramtrace BIN --lib LIB --simdir DIR --client EXE
                   --check EXE [--preload-first PATHS] SCENARIO [ARGS...]

Every scenario runs rel_client (or other programs) under libvramtrace.so on
the simulated driver and checks the result against independent truth: the
driver's ledger (VTSIM_LEDGER), the client's own sequence numbers, or the
same program run without the tracer. docs/internals/RELIABILITY.md says which
guarantee each scenario proves. Python 3 standard library only.
"""
import argparse
import glob
import json
import os
import random
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

A = None          # parsed arguments
TIMEOUT = 30      # no run may take longer: a hang is a failure, not a stall


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def traced_env(tmp, ledger=True, flush_ms=None, output=None, extra=None):
    env = dict(os.environ)
    preload = [p for p in A.preload_first.split(":") if p] + [A.lib]
    env["LD_PRELOAD"] = ":".join(preload)
    env["LD_LIBRARY_PATH"] = A.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
    env["VRAMTRACE_OUTPUT"] = output or os.path.join(tmp, "trace.%p.vtrace")
    if ledger:
        env["VTSIM_LEDGER"] = os.path.join(tmp, "ledger.txt")
    if flush_ms:
        env["VRAMTRACE_FLUSH_MS"] = str(flush_ms)
    env.update(extra or {})
    return env


def plain_env(tmp, extra=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("VRAMTRACE_OUTPUT", None)
    env["LD_LIBRARY_PATH"] = A.simdir + ":" + env.get("LD_LIBRARY_PATH", "")
    env.update(extra or {})
    return env


def traces(tmp, pattern="trace.*.vtrace"):
    return sorted(glob.glob(os.path.join(tmp, pattern)))


def check(*args):
    """rel_check; returns its summary line, fails the test on a mismatch."""
    p = subprocess.run([A.check] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if p.returncode != 0:
        fail("rel_check %s: %s%s" % (" ".join(map(str, args)), p.stdout, p.stderr))
    return p.stdout.strip()


def summary_field(line, key):
    """'... required 12, ...' -> 12"""
    words = line.replace(",", "").replace(":", "").split()
    return int(words[words.index(key) + 1])


def analyzer_reads(path):
    """vramtrace dump and report both accept the trace (exit 0)."""
    for cmd in (["dump", path], ["report", path]):
        p = subprocess.run([A.vramtrace] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
        if p.returncode != 0:
            fail("vramtrace %s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr))


def one_trace(tmp):
    found = traces(tmp)
    if len(found) != 1:
        fail("%d trace files, expected 1: %s" % (len(found), found))
    return found[0]


def start_spinner(tmp, env, args):
    p = subprocess.Popen([A.client, "spin"] + [str(a) for a in args], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("ready"):
        p.kill()
        fail("client did not start: %r %s" % (line, p.stderr.read()))
    return p


# ---- killed: SIGKILL at random moments ----

def scenario_kill(runs, seed):
    """Every ledger event older than the flush interval (plus a margin for
    the writer's own round) is in the trace, whatever the moment of death;
    the trace is always readable."""
    rng = random.Random(seed)
    flush_ms, margin_ms = 20, A.margin_ms
    required = present = 0
    truncated = 0
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="vt-rel-kill-") as tmp:
            env = traced_env(tmp, flush_ms=flush_ms)
            p = start_spinner(tmp, env, [4])
            # from "nothing is old enough yet" to well past the lag
            time.sleep(rng.uniform(0.05, 0.45 + (flush_ms + margin_ms) / 1000))
            t_kill = time.monotonic_ns()
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=TIMEOUT)
            p.stdout.close()
            p.stderr.close()
            if p.returncode != -signal.SIGKILL:
                fail("run %d: client exited %d before the kill" % (run, p.returncode))
            path = one_trace(tmp)
            before = t_kill - (flush_ms + margin_ms) * 1000000
            line = check("ledger", path, os.path.join(tmp, "ledger.txt"), "--before", before)
            required += summary_field(line, "required")
            present += summary_field(line, "trace")
            truncated += "truncated yes" in line or "trailer no" in line
            analyzer_reads(path)
    if required == 0:
        fail("no run had an event old enough to be required: the test proved nothing")
    print("ok: %d SIGKILLs (seed %d): %d required events all present, %d events checked, "
          "%d unclosed traces all readable" % (runs, seed, required, present, truncated))


# ---- crashes and exits ----

def scenario_end(how, seed):
    """segv / abort: everything up to the crash (fatal-signal flush).
    exit (from a thread): a closed trace with everything up to the exit.
    _exit: no destructor runs: like SIGKILL, the flush interval is lost."""
    rng = random.Random(seed)
    flush_ms = 20
    with tempfile.TemporaryDirectory(prefix="vt-rel-end-") as tmp:
        env = traced_env(tmp, flush_ms=flush_ms)
        # _exit loses the last flush interval + round: run longer than that
        ms = rng.randint(100, 400) + (flush_ms + A.margin_ms if how == "_exit" else 0)
        # The status must be the one the program has without the tracer
        # (-11, -6, 7; under ASan its own SEGV report exits 1 - the
        # tracer's handler chains to it).
        expect = subprocess.run([A.client, "spin", "4", "50", how], env=plain_env(tmp),
                                capture_output=True, text=True, timeout=TIMEOUT).returncode
        if how in ("exit", "_exit") and expect != 7:
            fail("untraced %s: exit %d" % (how, expect))
        p = subprocess.run([A.client, "spin", "4", str(ms), how], env=env, capture_output=True,
                           text=True, timeout=TIMEOUT)
        if p.returncode != expect:
            fail("%s: exit %d, expected %d: %s" % (how, p.returncode, expect, p.stderr))
        end = [int(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("end ")]
        if not end:
            fail("%s: the client printed no end time" % how)
        # Between the driver's ledger line and the hook's append a thread can
        # be preempted (2 cores, 5 threads): A.crash_margin_ms covers that.
        lag_ms = A.crash_margin_ms if how in ("segv", "abort", "exit") else \
            flush_ms + A.margin_ms
        path = one_trace(tmp)
        line = check("ledger", path, os.path.join(tmp, "ledger.txt"),
                     "--before", end[0] - lag_ms * 1000000)
        if summary_field(line, "required") == 0:
            fail("%s: nothing was required: the test proved nothing" % how)
        if how == "exit" and "trailer yes" not in line:
            fail("exit from a thread: the trace was not closed: " + line)
        analyzer_reads(path)
        print("ok: %s after %d ms: %s" % (how, ms, line))


# ---- disk full, unwritable, missing, file size limit ----

def run_pair(cmd, tmp, env_traced, preexec=None):
    plain = subprocess.run(cmd, env=plain_env(tmp), capture_output=True, text=True,
                           timeout=TIMEOUT, preexec_fn=preexec)
    t0 = time.monotonic()
    traced = subprocess.run(cmd, env=env_traced, capture_output=True, text=True,
                            timeout=TIMEOUT, preexec_fn=preexec)
    return plain, traced, time.monotonic() - t0


def expect_one_line(name, plain, traced, what):
    if (plain.returncode, plain.stdout) != (traced.returncode, traced.stdout):
        fail("%s: traced run differs: exit %d vs %d, stdout %r vs %r" %
             (name, traced.returncode, plain.returncode, traced.stdout, plain.stdout))
    ours = [l for l in traced.stderr.splitlines() if l.startswith("vramtrace")]
    theirs_plain = plain.stderr.splitlines()
    theirs_traced = [l for l in traced.stderr.splitlines() if not l.startswith("vramtrace")]
    if len(ours) != 1 or "cannot write trace" not in ours[0] or what not in ours[0]:
        fail("%s: expected one line about %r, got %r" % (name, what, ours))
    if theirs_plain != theirs_traced:
        fail("%s: the program's own stderr changed: %r vs %r" % (name, theirs_traced,
                                                                 theirs_plain))
    return ours[0]


def scenario_disk():
    # enough events that the trace outgrows the 8 KiB file size limit below
    # however its chunks fall (20000 pairs made 8-11 KB traces: too close)
    cmd = [A.client, "load", "2", "100000"]
    with tempfile.TemporaryDirectory(prefix="vt-rel-disk-") as tmp:
        with open(os.path.join(tmp, "afile"), "w"):
            pass
        cases = [("dev_full", "/dev/full", "File exists", None),
                 ("file_for_dir", os.path.join(tmp, "afile", "such", "t.%p.vtrace"),
                  "Not a directory", None)]
        if os.geteuid() == 0:
            # root writes through directory permissions: sysfs refuses it
            cases.append(("read_only_dir", "/sys/vt-cannot-be-here.%p.vtrace",
                          "Permission denied", None))
        else:
            ro = os.path.join(tmp, "ro")
            os.mkdir(ro, 0o500)
            cases.append(("read_only_dir", os.path.join(ro, "t.%p.vtrace"),
                          "Permission denied", None))

        def small_fsize():
            resource.setrlimit(resource.RLIMIT_FSIZE, (8192, resource.RLIM_INFINITY))
        cases.append(("file_size_limit", os.path.join(tmp, "small.%p.vtrace"),
                      "File too large", small_fsize))
        for name, output, what, preexec in cases:
            env = traced_env(tmp, ledger=False, output=output, flush_ms=10)
            plain, traced, secs = run_pair(cmd, tmp, env, preexec)
            line = expect_one_line(name, plain, traced, what)
            print("ok: %s: exit %d and stdout unchanged, %.1f s, said: %s" %
                  (name, traced.returncode, secs, line))
            if name == "file_size_limit":
                for path in traces(tmp, "small.*.vtrace"):
                    if os.path.getsize(path) > 8192:
                        fail("file size limit: %s is larger than the limit" % path)
                    analyzer_reads(path)


# ---- load ----

def scenario_load(threads, pairs):
    with tempfile.TemporaryDirectory(prefix="vt-rel-load-") as tmp:
        env = traced_env(tmp, ledger=False, extra={"VTSIM_MEMORY": "64GiB"})
        t0 = time.monotonic()
        p = subprocess.run([A.client, "load", str(threads), str(pairs)], env=env,
                           capture_output=True, text=True, timeout=120)
        secs = time.monotonic() - t0
        if p.returncode != 0:
            fail("load client exit %d: %s" % (p.returncode, p.stderr))
        path = one_trace(tmp)
        line = check("seq", path, threads, pairs)
        print("%s (client %.1f s, trace %d bytes)" % (line, secs, os.path.getsize(path)))


# ---- a free that stays in the driver ----

def scenario_slowfree(pairs, slow_ms):
    """Two frees the driver holds for slow_ms (tests/simdriver/slow_free.c, preloaded after
    the tracer) hold the writer back for at most the flush interval: the
    pairs another thread makes meanwhile are on disk a flush interval, the
    hold and a round after (the trace is read while the frees still wait);
    the frees are written when they return, and the whole trace is the
    ledger's."""
    flush_ms = 100
    with tempfile.TemporaryDirectory(prefix="vt-rel-slowfree-") as tmp:
        env = traced_env(tmp, flush_ms=flush_ms, extra={"REL_SLOW_FREE_MS": str(slow_ms)})
        env["LD_PRELOAD"] += ":" + A.slow_free_lib
        p = subprocess.Popen([A.client, "slowfree", str(pairs)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        if not line.startswith("pairs done"):
            p.kill()
            fail("slowfree client said %r: %s" % (line, p.communicate()[1]))
        time.sleep((3 * flush_ms + A.margin_ms) / 1000)
        waiting = p.poll() is None
        path = one_trace(tmp)
        dump = subprocess.run([A.vramtrace, "dump", "--json", path], capture_output=True,
                              text=True, timeout=TIMEOUT)
        mem = [json.loads(l) for l in dump.stdout.splitlines() if '"type":"mem"' in l]
        on_disk = sum(1 for r in mem if r["api"] == "cuMemAlloc_v2" and r["op"] == "alloc")
        out, err = p.communicate(timeout=TIMEOUT)
        if p.returncode != 0:
            fail("slowfree client exit %d: %s" % (p.returncode, err))
        if not waiting:
            fail("the slow frees returned before the trace was read (%d ms): nothing shown"
                 % slow_ms)
        if on_disk < pairs + 2:
            fail("while two frees stayed in the driver, %d of the %d allocations made before "
                 "and beside them were on disk %d ms after the last: the writer held them back"
                 % (on_disk, pairs + 2, 3 * flush_ms + A.margin_ms))
        line = check("ledger", path, os.path.join(tmp, "ledger.txt"), "--complete")
        print("ok: %d allocations on disk while two frees stayed %d ms in the driver; %s"
              % (on_disk, slow_ms, line))


# ---- processes ----

def check_all_complete(tmp, expect):
    found = traces(tmp)
    if len(found) != expect:
        fail("%d traces, expected %d (one per process that recorded)" % (len(found), expect))
    pids = set()
    for path in found:
        line = check("ledger", path, os.path.join(tmp, "ledger.txt"), "--complete")
        pids.add(summary_field(line, "pid"))
    if len(pids) != expect:
        fail("traces of %d distinct pids, expected %d" % (len(pids), expect))
    return len(found)


def scenario_procs(what):
    with tempfile.TemporaryDirectory(prefix="vt-rel-proc-") as tmp:
        env = traced_env(tmp)
        if what == "forkstorm":
            args, expect = ["forkstorm", "100"], 101
        elif what == "chain":
            args, expect = ["chain", "3"], 3
        else:
            args, expect = ["forkbusy", "30"], 1 + 30 + 15
        t0 = time.monotonic()
        p = subprocess.run([A.client] + args, env=env, capture_output=True, text=True,
                           timeout=TIMEOUT)
        if p.returncode != 0:
            fail("%s: exit %d: %s %s" % (what, p.returncode, p.stdout, p.stderr))
        n = check_all_complete(tmp, expect)
        print("ok: %s: %d processes, %d complete traces matching the ledger, %.1f s" %
              (what, expect, n, time.monotonic() - t0))


def scenario_fork_pool_full():
    """Forks while two threads allocate as fast as they can, with no ledger
    to slow them: the hooks outrun the writer and wait for buffer blocks.
    A fork waits for the hooks to leave the tracer (fork_guard.h), and a
    hook waiting for a block must not hold it up while the fork keeps the
    writer, which would give the block back, out: with a 2 s wait inside
    the guard at the pool's lending bound every run had a fork of 2.00 s.
    (Now the hook steps out of the guard, and waits 10 ms at that bound;
    either alone passes.) Every process still exits 0."""
    with tempfile.TemporaryDirectory(prefix="vt-rel-forkwait-") as tmp:
        env = traced_env(tmp, ledger=False)
        p = subprocess.run([A.client, "forkbusy", "30"], env=env, capture_output=True,
                           text=True, timeout=TIMEOUT)
        if p.returncode != 0:
            fail("forkwait: exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
        m = re.search(r"worst_fork_s ([\d.]+)", p.stdout)
        if not m:
            fail("forkwait: no worst_fork_s in %r" % p.stdout)
        if float(m.group(1)) >= 1.0:
            fail("forkwait: a fork took %s s (a hook waiting for a block held it)" % m.group(1))
        print("ok: forkwait: %s" % p.stdout.strip().splitlines()[-1])


def scenario_wrapper():
    """A shell script that execs the real program (a pyenv shim): the shell
    records nothing and leaves no file; the program's trace is there, under
    the same pid, and `vramtrace run` lists it."""
    with tempfile.TemporaryDirectory(prefix="vt-rel-wrap-") as tmp:
        script = os.path.join(tmp, "shim.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\nexec \"%s\" chain 1 \"$@\"\n" % A.client)
        os.chmod(script, 0o755)
        env = traced_env(tmp)
        env.pop("LD_PRELOAD")
        # vramtrace run puts the sanitizer runtimes first itself
        if A.preload_first:
            env["LD_PRELOAD"] = A.preload_first.rstrip(":")
        tmpl = os.path.join(tmp, "trace.%p.vtrace")
        p = subprocess.run([A.vramtrace, "run", "-o", tmpl, "--", script], env=env,
                           capture_output=True, text=True, timeout=TIMEOUT)
        if p.returncode != 0:
            fail("vramtrace run shim: exit %d: %s" % (p.returncode, p.stderr))
        path = one_trace(tmp)
        line = check("ledger", path, os.path.join(tmp, "ledger.txt"), "--complete")
        if path not in p.stderr:
            fail("vramtrace run did not list %s: %s" % (path, p.stderr))
        print("ok: wrapper script + exec: one trace, listed: " + line)


# ---- exec right after recording ----

EXEC_PAIRS = 300


def scenario_exec(variants):
    """For each exec function: PAIRS allocations, a failing exec, one more
    pair, then at once a real exec of the client itself, which allocates
    again. The flush interval is 60 s, so only the exec hook can have
    written the first image's events: its trace (trace.PID.vtrace) must
    hold every ledger operation before the exec; the new image's trace
    (same pid: trace.PID.1.vtrace) everything after, closed. The failing
    exec's result and errno, and all of stdout, are those of the untraced
    run. 'vfork': a vfork child execs; the parent's trace is complete."""
    for how in variants:
        with tempfile.TemporaryDirectory(prefix="vt-rel-exec-") as tmp:
            big = {"VRAMTRACE_BUFFER_KB": "4096"}  # no block fills: no early round
            env = traced_env(tmp, flush_ms=60000, extra=big)
            args = ["vfork", "100"] if how == "vfork" else ["exec", how, str(EXEC_PAIRS)]
            plain, traced, secs = run_pair([A.client] + args, tmp, env)
            if traced.returncode != 0 or (plain.returncode, plain.stdout) != \
                    (traced.returncode, traced.stdout):
                fail("%s: traced exit %d stdout %r, untraced exit %d stdout %r; stderr %s" %
                     (how, traced.returncode, traced.stdout, plain.returncode, plain.stdout,
                      traced.stderr))
            ledger = os.path.join(tmp, "ledger.txt")
            if how == "vfork":
                line = check("ledger", one_trace(tmp), ledger, "--complete")
                print("ok: vfork+exec: %.2f s, the parent's trace is complete: %s" % (secs, line))
                continue
            at = [int(l.split()[1]) for l in traced.stderr.splitlines()
                  if l.startswith("exec-at ")]
            found = traces(tmp)
            second = [f for f in found if f.endswith(".1.vtrace")]
            first = [f for f in found if f not in second]
            if len(at) != 1 or len(first) != 1 or len(second) != 1:
                fail("%s: exec-at %s, traces %s (expected the image before the exec, and "
                     "the one after it under the numbered name)" % (how, at, found))
            line1 = check("ledger", first[0], ledger, "--before", at[0])
            want = 2 * (EXEC_PAIRS + 1)
            if summary_field(line1, "required") != want or summary_field(line1, "trace") != want:
                fail("%s: the image before the exec: %s (expected %d operations)" %
                     (how, line1, want))
            line2 = check("ledger", second[0], ledger, "--after", at[0], "--complete")
            if summary_field(line2, "required") != 2 * EXEC_PAIRS:
                fail("%s: the image after the exec: %s" % (how, line2))
            analyzer_reads(first[0])
            print("ok: %-8s %.2f s; before the exec: %s; after: %s" % (how, secs, line1, line2))


# ---- signals ----

def scenario_alarms(pairs):
    with tempfile.TemporaryDirectory(prefix="vt-rel-alarm-") as tmp:
        cmd = [A.client, "alarms", str(pairs)]
        plain, traced, secs = run_pair(cmd, tmp, traced_env(tmp))
        if plain.returncode != 0 or traced.returncode != 0:
            fail("alarms: exit %d / %d: %s" % (plain.returncode, traced.returncode,
                                              traced.stderr))
        if plain.stdout != traced.stdout or "interrupted yes" not in traced.stdout:
            fail("alarms: stdout %r vs %r" % (traced.stdout, plain.stdout))
        if any(l.startswith("vramtrace") for l in traced.stderr.splitlines()):
            fail("alarms: the tracer complained: " + traced.stderr)
        # the untraced run wrote no ledger (no VTSIM_LEDGER): only the traced one
        path = one_trace(tmp)
        line = check("ledger", path, os.path.join(tmp, "ledger.txt"), "--complete")
        print("ok: SIGALRM storm: %s; %s" % (traced.stderr.strip(), line))


# ---- unchanged behaviour ----

def scenario_unchanged(cases):
    """Each case 'name|exe|arg ...[|disabled,unordered]': stdout and exit status
    identical with and without the tracer. 'disabled': the program checks
    that the tracer's hooks are there (a tracer test client), so its
    baseline is the library loaded with VRAMTRACE_DISABLE=1 (hooks pass
    through, nothing is recorded)."""
    n = 0
    for case in cases:
        name, exe, *rest = case.split("|")
        args = rest[0].split() if rest and rest[0] else []
        flags = rest[1].split(",") if len(rest) > 1 else []
        baseline_disabled = "disabled" in flags
        # 'unordered': processes print in the order they finish and name
        # their pids (a launcher): compare the sorted lines, pids masked
        unordered = "unordered" in flags
        with tempfile.TemporaryDirectory(prefix="vt-rel-same-") as tmp:
            extra = {"LD_LIBRARY_PATH": A.simdir + ":" + os.path.join(A.simdir, "runtime")}
            env = traced_env(tmp, ledger=False, extra=dict(extra))
            env["NVTX_INJECTION64_PATH"] = A.lib
            base_env = plain_env(tmp, extra)
            if baseline_disabled:
                base_env = dict(env, VRAMTRACE_DISABLE="1")
            plain = subprocess.run([exe] + args, env=base_env, cwd=tmp,
                                   capture_output=True, text=True, timeout=TIMEOUT)
            traced = subprocess.run([exe] + args, env=env, cwd=tmp, capture_output=True,
                                    text=True, timeout=TIMEOUT)
            def norm(out):
                if not unordered:
                    return out
                return sorted(re.sub(r"pid \d+", "pid N", l) for l in out.splitlines())
            if (plain.returncode, norm(plain.stdout)) != (traced.returncode, norm(traced.stdout)):
                fail("%s: with the tracer exit %d stdout %r; without exit %d stdout %r" %
                     (name, traced.returncode, traced.stdout[:400], plain.returncode,
                      plain.stdout[:400]))
            if not traces(tmp, "trace.*.vtrace") and plain.returncode == 0:
                fail("%s: the traced run wrote no trace" % name)
            print("ok: %-28s exit %d, %d stdout bytes identical (baseline: %s)" %
                  (name, plain.returncode, len(plain.stdout),
                   "tracer disabled" if baseline_disabled else "no tracer"))
            n += 1
    print("ok: %d programs behave the same with and without the tracer" % n)


# ---- security ----

def dump_json(path):
    p = subprocess.run([A.vramtrace, "dump", "--json", path], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if p.returncode != 0:
        fail("dump %s: %s" % (path, p.stderr))
    return [json.loads(l) for l in p.stdout.splitlines()]


def expect_private_file(path):
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o600:
        fail("%s: mode %o, expected a regular file 0600" % (path, st.st_mode))


def scenario_security():
    with tempfile.TemporaryDirectory(prefix="vt-rel-sec-") as tmp:
        # format directives in the output template and in names
        tmpl = os.path.join(tmp, "%n%s%x.%p.vtrace")
        env = traced_env(tmp, output=tmpl)
        p = subprocess.run([A.client, "names"], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT)
        if p.returncode != 0 or p.stdout != "names done\n":
            fail("names client: exit %d %r %s" % (p.returncode, p.stdout, p.stderr))
        found = glob.glob(os.path.join(glob.escape(tmp), "%n%s%x.*.vtrace"))
        if len(found) != 1:
            fail("no trace under the literal template name: %s" % os.listdir(tmp))
        expect_private_file(found[0])
        recs = dump_json(found[0])
        threads = [r.get("name") for r in recs if r["type"] == "thread"]
        texts = json.dumps(recs)
        for want in ("%n%s%n%s phase", "%x%p%n mark"):
            if want not in texts:
                fail("%r is not in the trace verbatim" % want)
        if "%n%s%n%s" not in threads:
            fail("thread name not verbatim: %s" % threads)
        print("ok: '%n%s' in the template, thread, phase and mark names kept verbatim")

        # a planted symlink, an existing file: never followed, never touched
        victim = os.path.join(tmp, "victim")
        with open(victim, "w") as f:
            f.write("victim")
        link = os.path.join(tmp, "fixed.vtrace")
        os.symlink(victim, link)
        existing = os.path.join(tmp, "existing.vtrace")
        with open(existing, "w") as f:
            f.write("precious")
        for name, output in (("symlink", link), ("existing file", existing)):
            env = traced_env(tmp, output=output)
            p = subprocess.run([A.client, "names"], env=env, capture_output=True, text=True,
                               timeout=TIMEOUT)
            if p.returncode != 0 or "vramtrace" in p.stderr:
                fail("%s: exit %d, stderr %s" % (name, p.returncode, p.stderr))
            alt = output[:-len(".vtrace")] + ".1.vtrace"
            expect_private_file(alt)
            dump_json(alt)
            print("ok: %s: trace went to %s (0600, readable)" % (name, os.path.basename(alt)))
        if open(victim).read() != "victim" or open(existing).read() != "precious":
            fail("an existing file was changed")
        if not os.path.islink(link):
            fail("the planted symlink was replaced")
        # vramtrace run lists the numbered file
        env = plain_env(tmp, {"VTSIM_LEDGER": os.path.join(tmp, "ledger.txt")})
        if A.preload_first:
            env["LD_PRELOAD"] = A.preload_first.rstrip(":")
        p = subprocess.run([A.vramtrace, "run", "-o", existing, "--", A.client, "names"],
                           env=env, capture_output=True, text=True, timeout=TIMEOUT)
        alt2 = existing[:-len(".vtrace")] + ".2.vtrace"
        if p.returncode != 0 or ("trace " + alt2) not in p.stderr:
            fail("vramtrace run did not list %s: %s" % (alt2, p.stderr))
        print("ok: victim and existing file untouched; vramtrace run lists %s" %
              os.path.basename(alt2))


def scenario_clonevm():
    """A known limit, pinned (docs/internals/RELIABILITY.md, "Limits"): a
    child made by a raw clone(CLONE_VM | SIGCHLD) runs no fork
    handlers and shares the parent's memory, so its events are filed under
    the parent's pid and thread, in the parent's trace. Checked against the
    simulated driver's ledger, which knows the child's real pid."""
    with tempfile.TemporaryDirectory(prefix="vt-rel-clone-") as tmp:
        env = traced_env(tmp)
        p = subprocess.run([A.client, "clonevm"], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT)
        words = p.stdout.split()
        if p.returncode != 0 or len(words) < 4 or p.stderr:
            fail("clonevm client: exit %d %r %r" % (p.returncode, p.stdout, p.stderr))
            return
        parent, child = int(words[1].rstrip(",")), int(words[4])
        ledger = {}
        for line in open(os.path.join(tmp, "ledger.txt")):
            f = dict(kv.split("=", 1) for kv in line.split("\t") if "=" in kv)
            if f.get("op") == "alloc":
                ledger[int(f["size"])] = int(f["pid"])
        if ledger != {1 << 20: parent, 2 << 20: child, 3 << 20: parent}:
            fail("ledger: allocations by pid %s (parent %d, child %d)" % (ledger, parent, child))
            return
        found = traces(tmp)
        if found != [os.path.join(tmp, "trace.%d.vtrace" % parent)]:
            fail("traces %s, expected only the parent's" % found)
            return
        recs = dump_json(found[0])
        proc = [r for r in recs if r["type"] == "process"]
        allocs = [r for r in recs if r["type"] == "mem" and r["op"] == "alloc" and
                  r["kind"] == "device"]
        if [r["pid"] for r in proc] != [parent] or [r["size"] for r in allocs] != \
                [1 << 20, 2 << 20, 3 << 20] or len({r["thread"] for r in allocs}) != 1:
            fail("the parent's trace: processes %s, device allocations %s" %
                 ([r["pid"] for r in proc], [(r["size"], r["thread"]) for r in allocs]))
            return
        print("ok: the raw clone(CLONE_VM) child %d's 2 MiB allocation is in the trace of its "
              "parent %d, on the parent's thread; no trace of its own (the documented limit)" %
              (child, parent))


# ---- the program's own file on the tracer's descriptor number ----

def scenario_dup2own(runs, rounds, prefix=()):
    """A program that puts its own file on every descriptor number (dup2),
    the tracer's included, while the writer writes a chunk every
    millisecond: its file holds only its own lines, its
    stderr has no line of ours, and the trace is complete against the
    driver's ledger. The client checks its file; this checks the rest.
    prefix: a launcher to run the client under (refuse_syscalls)."""
    bad = []
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="vt-rel-dup2-") as tmp:
            env = traced_env(tmp, flush_ms=1)
            own = os.path.join(tmp, "own.txt")
            p = subprocess.run(list(prefix) + [A.client, "dup2own", own, str(rounds)], env=env,
                               capture_output=True, text=True, timeout=TIMEOUT)
            if p.returncode != 0 or p.stderr or not p.stdout.startswith("dup2own "):
                bad.append("run %d: exit %d, stdout %r, stderr %r" %
                           (run, p.returncode, p.stdout, p.stderr))
                continue
            found = traces(tmp)
            if len(found) != 1:
                bad.append("run %d: %d trace files" % (run, len(found)))
                continue
            r = subprocess.run([A.check, "ledger", found[0], os.path.join(tmp, "ledger.txt"),
                                "--complete"], capture_output=True, text=True, timeout=TIMEOUT)
            if r.returncode != 0:
                bad.append("run %d: trace incomplete: %s%s" % (run, r.stdout, r.stderr))
                continue
            print("ok: run %d: %s; %s" % (run, p.stdout.strip(), r.stdout.strip()))
    if bad:
        fail("%d of %d runs:\n  %s" % (len(bad), runs, "\n  ".join(bad)))


def scenario_refused():
    """Under seccomp profiles. close_range refused (kernels before 5.9,
    older container profiles): the keeper unshares its table and closes the
    copies by /proc's list - the program's file still never gets a byte.
    close_range and unshare refused (Docker's default profile refuses
    unshare): the trace goes through a descriptor of the program's, as
    before the keeper, complete, and VRAMTRACE_VERBOSE says so."""
    scenario_dup2own(3, 300, [A.refuse, "close_range"])
    print("ok: close_range refused: the file is the program's alone, the traces complete")
    # the copies unshare made are let go: a pipe the program closes ends
    # for its reader then, not when the process exits
    with tempfile.TemporaryDirectory(prefix="vt-rel-refused-") as tmp:
        p = subprocess.Popen([A.refuse, "close_range", A.client, "closeout", "1500"],
                             env=traced_env(tmp, ledger=False), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        out = p.stdout.read()
        t_eof = time.monotonic()
        p.wait(timeout=TIMEOUT)
        t_exit = time.monotonic()
        err = p.stderr.read()
        if p.returncode != 0 or out != b"closing\n" or err:
            fail("closeout: exit %d, stdout %r, stderr %r" % (p.returncode, out, err))
        if t_exit - t_eof < 0.75:
            fail("close_range refused: the program's closed stdout ended only %.2f s before "
                 "it exited (1.5 s expected): a copy of it was held" % (t_exit - t_eof))
        print("ok: close_range refused: the program's closed stdout ended %.2f s before it "
              "exited" % (t_exit - t_eof))
    with tempfile.TemporaryDirectory(prefix="vt-rel-refused-") as tmp:
        for refused, shared in (("close_range,unshare", True), ("unshare", False)):
            env = traced_env(tmp, ledger=False, extra={"VRAMTRACE_VERBOSE": "1"})
            p = subprocess.run([A.refuse, refused, A.client, "load", "2", "20000"], env=env,
                               capture_output=True, text=True, timeout=TIMEOUT)
            if p.returncode != 0:
                fail("%s refused: exit %d: %s" % (refused, p.returncode, p.stderr))
            said = [l for l in p.stderr.splitlines() if " writing " in l]
            if len(said) != 1 or ("descriptor of the program's" in said[0]) != shared:
                fail("%s refused: VRAMTRACE_VERBOSE said %r" % (refused, said))
            line = check("seq", one_trace(tmp), 2, 20000)
            for path in traces(tmp):
                os.unlink(path)
            print("ok: %s refused: %s; said: %s" % (refused, line, said[0]))


def scenario_seccompkill():
    """A seccomp filter that kills (the process or the thread) or traps the
    close_range and unshare the program never calls: set by the program for
    every thread before or after its first CUDA call, or before a forked
    child allocates, or by a launcher before exec. The keeper's calls are
    probed in a child first: the program ends as untraced (exit 0, "done",
    its own SIGSYS handler never run), each process leaves its trace, and
    VRAMTRACE_VERBOSE says once that the trace goes through the program's
    table."""
    for action in ("kill", "trap", "kill_thread"):
        for when in ("before", "after", "fork"):
            with tempfile.TemporaryDirectory(prefix="vt-rel-seccomp-") as tmp:
                argv = [A.seccomp_client, action, when]
                plain = subprocess.run(argv, env=plain_env(tmp), capture_output=True,
                                       text=True, timeout=TIMEOUT)
                if plain.returncode != 0 or plain.stdout != "done\n":
                    fail("%s %s untraced: exit %d, %r %r" % (action, when, plain.returncode,
                                                             plain.stdout, plain.stderr))
                    continue
                verbose = when == "before"
                env = traced_env(tmp, ledger=False,
                                 extra={"VRAMTRACE_VERBOSE": "1"} if verbose else None)
                try:
                    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=20)
                except subprocess.TimeoutExpired:
                    fail("%s %s traced: still running after 20 s" % (action, when))
                    continue
                said = [l for l in p.stderr.splitlines() if "seccomp filter" in l]
                if (p.returncode, p.stdout) != (0, "done\n") or \
                        (not verbose and p.stderr) or (verbose and len(said) != 1):
                    fail("%s %s traced: exit %d, stdout %r, stderr %r" %
                         (action, when, p.returncode, p.stdout, p.stderr))
                    continue
                want = 2 if when == "fork" else 1
                if len(traces(tmp)) != want:
                    fail("%s %s traced: %d traces, want %d" % (action, when, len(traces(tmp)),
                                                               want))
                    continue
                print("ok: filter %s set %s: exit 0, %d trace(s)%s" %
                      (action, "before a forked child allocates" if when == "fork" else
                       when + " the first CUDA call", want, "; said: " + said[0] if said else ""))
    with tempfile.TemporaryDirectory(prefix="vt-rel-seccomp-") as tmp:
        p = subprocess.run([A.refuse, "--kill", "close_range,unshare", A.client, "load", "2",
                            "2000"], env=traced_env(tmp, ledger=False), capture_output=True,
                           text=True, timeout=TIMEOUT)
        if p.returncode != 0 or p.stderr:
            fail("launcher's kill filter: exit %d: %s" % (p.returncode, p.stderr))
        else:
            print("ok: a launcher's killing filter: %s" % check("seq", one_trace(tmp), 2, 2000))


def scenario_userns():
    """User namespaces, which the kernel lets only a process of one thread
    enter: no thread of the tracer's before the first CUDA call (the
    program reads Threads: 1, as untraced), so `unshare -U true` and a
    program's unshare(CLONE_NEWUSER) before that call work as untraced;
    after it, unshare and setns stop the tracer's threads for the call and
    start them again (clone with CLONE_NEWUSER needs nothing; with a thread
    of the program's own the kernel refuses, as untraced). Same exit,
    stdout (results, errno, uid, descriptor count) and stderr; the trace
    complete against the simulated driver's ledger, in one file."""
    with tempfile.TemporaryDirectory(prefix="vt-rel-userns-") as tmp:
        probe = subprocess.run([A.userns_client, "before"], env=plain_env(tmp),
                               capture_output=True, text=True, timeout=TIMEOUT)
    allowed = "\nunshare 0\n" in probe.stdout
    if not allowed:
        print("skipped: the namespace part: this machine refuses an unprivileged user "
              "namespace (untraced: %r); only the thread count is checked" %
              probe.stdout.splitlines()[1:2])
    cases = [["before"], ["after"], ["fails"], ["setns", "user"], ["setns", "0"], ["clone"]]
    for case in cases if allowed else [["before"]]:
        name = " ".join(case)
        with tempfile.TemporaryDirectory(prefix="vt-rel-userns-") as tmp:
            cmd = [A.userns_client] + case
            # the simulated driver's ledger is a descriptor of the program's: both have it
            plain = subprocess.run(cmd, env=plain_env(tmp, {"VTSIM_LEDGER": os.path.join(
                tmp, "plain-ledger.txt")}), capture_output=True, text=True, timeout=TIMEOUT)
            traced = subprocess.run(cmd, env=traced_env(tmp, flush_ms=20), capture_output=True,
                                    text=True, timeout=TIMEOUT)
            if plain.returncode != 0 or not plain.stdout.startswith("threads at start 1\n"):
                fail("%s untraced: exit %d, %r %r" % (name, plain.returncode, plain.stdout,
                                                      plain.stderr))
            if (traced.returncode, traced.stdout) != (plain.returncode, plain.stdout):
                fail("%s traced: exit %d, stdout %r; untraced: exit %d, stdout %r (stderr %r)" %
                     (name, traced.returncode, traced.stdout, plain.returncode, plain.stdout,
                      traced.stderr))
            m = re.fullmatch(r"threads before the call (\d+)\n", traced.stderr)
            # the program's (two in "fails"), plus, after its first CUDA call, the
            # writer and the keeper
            want_threads = 1 if case[0] == "before" else 4 if case[0] == "fails" else 3
            if not m or int(m.group(1)) != want_threads:
                fail("%s traced: stderr %r, want the thread count %d only" %
                     (name, traced.stderr, want_threads))
            if not allowed:
                print("ok: %s: Threads: 1 at start, as untraced" % name)
                continue
            line = check("ledger", one_trace(tmp), os.path.join(tmp, "ledger.txt"),
                         "--complete")
            result = [l for l in traced.stdout.splitlines()
                      if l.split()[0] in ("unshare", "setns", "clone")]
            print("ok: %s: as untraced (%s, %s); %s" % (name, result[0], m.group(0).strip(),
                                                         line))
    unshare = shutil.which("unshare")
    if not allowed or not unshare:
        if allowed:
            print("skipped: no unshare(1) here")
        return
    with tempfile.TemporaryDirectory(prefix="vt-rel-userns-") as tmp:
        cmd = [unshare, "-U", "true"]
        plain, traced, _ = run_pair(cmd, tmp, traced_env(tmp))
        got = (traced.returncode, traced.stdout, traced.stderr)
        if got != (plain.returncode, plain.stdout, plain.stderr) or plain.returncode != 0:
            fail("unshare -U true traced: %r; untraced: %r" %
                 (got, (plain.returncode, plain.stdout, plain.stderr)))
        if traces(tmp):
            fail("unshare -U true left a trace: %s" % traces(tmp))
        print("ok: unshare -U true: exit 0 as untraced, no trace")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--check", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--refuse", default="", help="refuse_syscalls: a seccomp launcher")
    ap.add_argument("--seccomp-client", default="",
                    help="seccomp_client: a program with a killing filter of its own")
    ap.add_argument("--userns-client", default="",
                    help="userns_client: a program entering a user namespace")
    ap.add_argument("--slow-free-lib", default="",
                    help="slow_free.c's library (the slowfree scenario)")
    ap.add_argument("--margin-ms", type=int, default=150,
                    help="time a writer round may take beyond the flush interval")
    ap.add_argument("--crash-margin-ms", type=int, default=50,
                    help="time a hook may be preempted between the driver's ledger line "
                         "and its append")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("scenario")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    A = ap.parse_args()
    seed = A.seed if A.seed is not None else random.randrange(1 << 30)
    s, args = A.scenario, A.args
    if s == "kill":
        scenario_kill(int(args[0]), seed)
    elif s == "end":
        scenario_end(args[0], seed)
    elif s == "disk":
        scenario_disk()
    elif s == "load":
        scenario_load(int(args[0]), int(args[1]))
    elif s == "procs":
        scenario_procs(args[0])
    elif s == "forkwait":
        scenario_fork_pool_full()
    elif s == "wrapper":
        scenario_wrapper()
    elif s == "alarms":
        scenario_alarms(int(args[0]))
    elif s == "unchanged":
        scenario_unchanged(args)
    elif s == "clonevm":
        scenario_clonevm()
    elif s == "security":
        scenario_security()
    elif s == "exec":
        scenario_exec(args)
    elif s == "dup2own":
        scenario_dup2own(int(args[0]), int(args[1]))
    elif s == "seccompkill":
        scenario_seccompkill()
    elif s == "refused":
        scenario_refused()
    elif s == "userns":
        scenario_userns()
    elif s == "slowfree":
        scenario_slowfree(int(args[0]), int(args[1]))
    else:
        fail("unknown scenario " + s)


if __name__ == "__main__":
    main()
