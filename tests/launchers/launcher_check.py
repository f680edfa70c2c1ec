"""What the launcher checks (check_launchers.py, check_jobs.py,
check_summaries.py) share: their options, the build's paths and the list
of failed checks. Importing it also puts tests/examples (ledger_truth) and
tests/schema (report_schema) on the module path."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "schema"))

failures = []


def parser(tamper=False):
    """--build and --preload-first (and --tamper) for a check to add to."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    if tamper:
        ap.add_argument("--tamper", action="store_true")
    ap.add_argument("--preload-first", default="",
                    help="sanitizer runtimes to load before the tracer (sanitized builds)")
    return ap


class Paths:
    """The build tree's programs."""

    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.vramtrace = os.path.join(self.build, "analyzer", "vramtrace")
        self.lib = os.path.join(self.build, "preload", "libvramtrace.so")
        self.worker = os.path.join(self.build, "tests", "launchers", "lw_worker")


def fail(msg):
    failures.append(msg)


def equal(what, got, want):
    if got != want:
        fail("%s: got %r, want %r" % (what, got, want))
