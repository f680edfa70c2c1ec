#!/usr/bin/env python3
"""`vramtrace report --html` at the command line, without a browser: a page
is written whole (through a temporary name: nothing else is left in its
directory), replaces an old one, and forbids requests; an unwritable path
or --html with --json fails with status 2 and writes nothing. With
--no-charts (a build without node_modules) --html must fail saying how to
install the libraries.

    check_html_cli.py VRAMTRACE SNAPSHOT [--no-charts]
"""
import os
import subprocess
import sys
import tempfile

vramtrace, snapshot = sys.argv[1], sys.argv[2]
no_charts = "--no-charts" in sys.argv
failures = []


def report(*args):
    return subprocess.run([vramtrace, "report", *args], capture_output=True, text=True, timeout=120)


with tempfile.TemporaryDirectory(prefix="vt-html-cli-") as tmp:
    page = os.path.join(tmp, "report.html")
    r = report("--html", page, snapshot)
    if no_charts:
        if r.returncode != 2 or "npm ci" not in r.stderr or os.path.exists(page):
            failures.append("without chart libraries: status %d, stderr %r" % (r.returncode, r.stderr))
    else:
        if r.returncode != 0:
            failures.append("--html exited %d: %s" % (r.returncode, r.stderr))
        elif os.listdir(tmp) != ["report.html"]:
            failures.append("left beside the page: %s" % os.listdir(tmp))
        else:
            html = open(page, encoding="utf-8").read()
            for want in ("<!DOCTYPE html>", "default-src 'none'", 'id="vt-report"',
                         'id="vt-timeline"', "uPlot", "flamegraph", "</html>"):
                if want not in html:
                    failures.append("the page lacks %r" % want)
            # an older page is replaced whole
            with open(page, "w") as f:
                f.write("old")
            r = report("--html", page, snapshot)
            if r.returncode != 0 or open(page).read(15) != "<!DOCTYPE html>":
                failures.append("an existing page was not replaced (status %d)" % r.returncode)
    bad = os.path.join(tmp, "no-such-dir", "report.html")
    r = report("--html", bad, snapshot)
    if r.returncode != 2 or not r.stderr.strip() or os.path.exists(os.path.dirname(bad)):
        failures.append("unwritable path: status %d, stderr %r" % (r.returncode, r.stderr))
    elif not no_charts and "no-such-dir" not in r.stderr:
        failures.append("unwritable path not named: %r" % r.stderr)
    r = report("--html", page, "--json", snapshot)
    if r.returncode != 2 or "choose one" not in r.stderr:
        failures.append("--html with --json: status %d, stderr %r" % (r.returncode, r.stderr))

for f in failures:
    print("FAIL: " + f)
print("%d passed, %d failed" % (0 if failures else 1, len(failures)))
sys.exit(1 if failures else 0)
