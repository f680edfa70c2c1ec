#!/usr/bin/env python3
"""Configure time: the interpreters the 'python' suite tests, one line each:
NAME PATH INCLUDE_DIR ('-' for what is absent). NAME is 3.10 .. 3.15
(pyenv's newest release of that version, under $PYENV_ROOT or ~/.pyenv,
or the one at /tmp/py3MM/bin/python3.MM, where docs/internals/PYTHON.md builds one
from source), system-3.11 (/usr/bin/python3.11), and each interpreter
named in $VRAMTRACE_TEST_PYTHONS (colon-separated paths): 3.MM, or 3.MMt
for a free-threaded build, or, when that name is taken already (a pyenv
or /tmp/py3MM one), its full version 3.MM.PP[t], so that a second build
of the same minor (Debian's and one built from source, say) is tested
beside the first. Tests of an absent one are skipped (exit 77)."""
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
    """(minor, micro, free_threaded, include dir) of an interpreter, or None."""
    try:
        out = subprocess.run([exe, "-c", "import sys, sysconfig; print(sys.version_info[1], "
                              "sys.version_info[2], "
                              "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))), "
                              "sysconfig.get_paths()['include'])"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        return int(out[0]), int(out[1]), out[2] == "1", out[3]
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


shown = set()  # the names given
seen = {os.path.realpath("/usr/bin/python3.11")}  # the interpreters given, system-3.11's too
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
        shown.add("3.%d" % minor)
        seen.add(os.path.realpath(exe))
for exe in filter(None, os.environ.get("VRAMTRACE_TEST_PYTHONS", "").split(":")):
    facts = interpreter_facts(exe) if os.path.realpath(exe) not in seen else None
    if not facts:
        continue
    seen.add(os.path.realpath(exe))
    minor, micro, free_threaded, include = facts
    t = "t" if free_threaded else ""
    for name in ("3.%d%s" % (minor, t), "3.%d.%d%s" % (minor, micro, t)):
        if name not in shown:
            shown.add(name)
            show(name, exe, include)
            break
show("system-3.11", "/usr/bin/python3.11", "/usr/include/python3.11")
