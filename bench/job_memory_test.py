"""More threads, not more memory: a job's groups run one at a time.

A job of 4 hosts (16 traces each, 50,000 events a trace) from synth_trace's
job form, reported with VRAMTRACE_ANALYZER_THREADS=1 and 4. A group big
enough for a crew takes every thread (analysis.c, crew_size and the threads
gate), so memory holds one group's chunks and notes with 4 threads as with
one: the 4-thread run's max RSS (wait4) stays within a quarter of the
one-thread run's. Groups side by side, each on a thread of its own, held
one group's buffers per thread: 2.4x (123 MiB against 52), which fails
here. The reports are the same byte for byte.

    job_memory_test.py VRAMTRACE SYNTH_TRACE
"""
import os
import subprocess
import sys
import tempfile

VRAMTRACE, SYNTH = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def report(d, threads):
    """The report's text and the process's max RSS in MiB."""
    env = dict(os.environ, VRAMTRACE_ANALYZER_THREADS=str(threads))
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen([VRAMTRACE, "report", "--no-symbols", d], stdout=out,
                             stderr=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        check(os.waitstatus_to_exitcode(status) == 0, "report with %d threads exits 0" % threads)
        out.seek(0)
        return out.read(), ru.ru_maxrss / 1024.0


with tempfile.TemporaryDirectory() as d:
    subprocess.run([SYNTH, "--ranks", "64", "--gpus", "32", "--events", "50000", "--dir", d],
                   check=True, capture_output=True)
    one, rss1 = report(d, 1)
    four, rss4 = report(d, 4)
    print("max RSS: 1 thread %.1f MiB, 4 threads %.1f MiB (%.2fx)" % (rss1, rss4, rss4 / rss1))
    check(b"on 32 GPUs of 4 hosts" in one, "the job line names 4 hosts")
    check(four == one, "the 4-thread report is the one-thread report")
    check(rss4 <= 1.25 * rss1,
          "4 threads hold one group at a time: %.1f MiB <= 1.25 x %.1f MiB" % (rss4, rss1))

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
