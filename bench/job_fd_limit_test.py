"""A job's report under a low limit of open files.

The analyzer opens a trace's file only while its host-and-session group is
replayed, so the files open follow the groups in flight, not the traces:

- 320 ranks on 10 hosts (groups of 32) under `ulimit -n 64` (soft and hard):
  the JSON report on 1, 2 and 5 threads is the unrestricted run's, byte for
  byte, and it exits 0 (five groups of 32 never fit at once: they wait).
- 96 ranks on one host (one group of 96) under `ulimit -n 64`: not
  replayable; the report says so once, naming the limit and `ulimit -n`,
  and exits 2 (nothing read), without a crash; with another host's 32
  traces beside them, those are reported and it exits 3.
- the same with only the soft limit at 64 and room under the hard one: the
  analyzer raises its soft limit and the report is the unrestricted one.
"""
import json
import os
import resource
import subprocess
import sys
import tempfile

VRAMTRACE, SYNTH = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def limited(soft, hard):
    def f():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return f


def report(d, threads=None, limit=None):
    env = dict(os.environ)
    if threads:
        env["VRAMTRACE_ANALYZER_THREADS"] = str(threads)
    return subprocess.run([VRAMTRACE, "report", "--json", d], capture_output=True, text=True,
                          env=env, timeout=120, preexec_fn=limited(*limit) if limit else None)


soft0, hard0 = resource.getrlimit(resource.RLIMIT_NOFILE)
with tempfile.TemporaryDirectory() as tmp:
    job = os.path.join(tmp, "job")
    one_host = os.path.join(tmp, "one_host")
    os.mkdir(job)
    os.mkdir(one_host)
    subprocess.run([SYNTH, "--ranks", "320", "--gpus", "80", "--events", "1500", "--live", "40",
                    "--dir", job], check=True, capture_output=True)
    subprocess.run([SYNTH, "--ranks", "96", "--gpus", "8", "--events", "500", "--live", "20",
                    "--dir", one_host], check=True, capture_output=True)

    free = report(job)
    check(free.returncode == 0, "unrestricted report exits 0 (%s)" % free.stderr)
    jobs = json.loads(free.stdout)["jobs"] if free.returncode == 0 else []
    check([(j["processes"], j["ranks"], j["hosts"], j["gpus"]) for j in jobs] == [(320, 320, 10, 80)],
          "the unrestricted report: one job of 320 ranks on 80 GPUs of 10 hosts (%s)"
          % [(j["processes"], j["ranks"], j["hosts"], j["gpus"]) for j in jobs])
    for t in (1, 2, 5):
        r = report(job, t, (64, 64))
        check(r.returncode == 0 and r.stderr == "",
              "ulimit -n 64, %d thread(s): exit 0, nothing on stderr (%d: %s)"
              % (t, r.returncode, r.stderr[:400]))
        check(r.stdout == free.stdout,
              "ulimit -n 64, %d thread(s): the JSON is the unrestricted run's" % t)

    r = report(one_host, 2, (64, 64))
    print(r.stderr)
    check(r.returncode == 2, "one group of 96 under ulimit -n 64: exit 2 (got %d)" % r.returncode)
    lines = r.stderr.splitlines()
    check(len(lines) == 1, "one line on stderr (%d)" % len(lines))
    check("96 traces of host node000" in r.stderr and "`ulimit -n`: 64" in r.stderr
          and "`ulimit -n " in r.stderr.replace("`ulimit -n`", ""),
          "the line names the group, the limit and the ulimit -n to use")
    check(r.stdout == "", "no report")

    # with another host's traces: those are reported (exit 3, as for a skipped file)
    node001 = [os.path.join(job, "job.rank%04d.vtrace" % r) for r in range(32, 64)]
    r = subprocess.run([VRAMTRACE, "report", "--json", one_host] + node001, capture_output=True,
                       text=True, timeout=120, preexec_fn=limited(64, 64))
    check(r.returncode == 3, "the group of 96 and 32 traces of another host: exit 3 (got %d: %s)"
          % (r.returncode, r.stderr[:400]))
    check("96 traces of host node000" in r.stderr
          and "96 of 128 trace files could not be read in full" in r.stderr,
          "the group's line, then 96 of 128 files not read (%s)" % r.stderr[-300:])
    procs = json.loads(r.stdout)["processes"] if r.returncode == 3 else []
    check(len(procs) == 32 and {p["hostname"] for p in procs} == {"node001"},
          "the other host's 32 processes are reported (%d)" % len(procs))

    full = report(one_host)
    check(full.returncode == 0, "one group of 96 without a limit: exit 0")
    if hard0 == resource.RLIM_INFINITY or hard0 >= 256:
        r = report(one_host, 2, (64, hard0))
        check(r.returncode == 0 and r.stdout == full.stdout,
              "soft limit 64 under a hard %s: raised, the unrestricted report (%d: %s)"
              % (hard0, r.returncode, r.stderr[:400]))
    else:
        print("SKIP: the hard limit (%d) leaves no room to raise the soft one" % hard0)

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
