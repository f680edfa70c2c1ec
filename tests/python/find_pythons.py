#!/usr/bin/env python3
"""Configure time: the interpreters the 'python' suite tests, one line each:
NAME PATH INCLUDE_DIR ('-' for what is absent). NAME is 3.10 .. 3.15
(pyenv's newest release of that version, under $PYENV_ROOT or ~/.pyenv,
or the one at /tmp/py3MM/bin/python3.MM, where docs/PYTHON.md builds one
from source), system-3.11 (/usr/bin/python3.11), and each interpreter
named in $VRAMTRACE_TEST_PYTHONS (colon-separated paths) whose version is
not one of these already. Tests of an absent one are skipped (exit 77)."""
import glob
import os
import re
import subprocess

root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def patch_of(path):
    m = re.search(r"/3\.\d+\.(\d+)/", path)
    return int(m.group(1)) if m else -1


def show(name, exe, include):
    ok = exe and os.access(exe, os.X_OK)
    inc = include if ok and include and os.path.isfile(os.path.join(include, "Python.h")) else "-"
    print(name, exe if ok else "-", inc)


def interpreter_facts(exe):
    """(minor, free_threaded, include dir) of an interpreter, or None."""
    try:
        out = subprocess.run([exe, "-c", "import sys, sysconfig; print(sys.version_info[1], "
                              "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))), "
                              "sysconfig.get_paths()['include'])"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        return int(out[0]), out[1] == "1", out[2]
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


shown = set()
for minor in (10, 11, 12, 13, 14, 15):
    found = sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor, "bin", "python3")),
                   key=patch_of)
    found = [f for f in found if re.search(r"/3\.%d\.\d+\w*/" % minor, f)
             and not re.search(r"/3\.%d\.\d+\w*t/" % minor, f)]  # no 3.13t, no -dev
    scratch = "/tmp/py3%d/bin/python3.%d" % (minor, minor)
    if not found and os.access(scratch, os.X_OK):
        found = [scratch]
    exe = found[-1] if found else ""
    inc = os.path.join(os.path.dirname(os.path.dirname(exe)), "include", "python3.%d" % minor) \
        if exe else ""
    show("3.%d" % minor, exe, inc)
    if exe:
        shown.add((minor, False))
for exe in filter(None, os.environ.get("VRAMTRACE_TEST_PYTHONS", "").split(":")):
    facts = interpreter_facts(exe)
    if facts and (facts[0], facts[1]) not in shown:
        shown.add((facts[0], facts[1]))
        show("3.%d%s" % (facts[0], "t" if facts[1] else ""), exe, facts[2])
show("system-3.11", "/usr/bin/python3.11", "/usr/include/python3.11")
