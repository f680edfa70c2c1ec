#!/usr/bin/env python3
"""Configure time: the interpreters the 'python' suite tests, one line each:
NAME PATH INCLUDE_DIR ('-' for what is absent). NAME is 3.10 .. 3.13
(pyenv's newest patch release of that version, under $PYENV_ROOT or
~/.pyenv) and system-3.11 (/usr/bin/python3.11). Tests of an absent one
are skipped (exit 77)."""
import glob
import os
import re

root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def patch_of(path):
    m = re.search(r"/3\.\d+\.(\d+)/", path)
    return int(m.group(1)) if m else -1


def show(name, exe, include):
    ok = exe and os.access(exe, os.X_OK)
    inc = include if ok and include and os.path.isfile(os.path.join(include, "Python.h")) else "-"
    print(name, exe if ok else "-", inc)


for minor in (10, 11, 12, 13):
    found = sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor, "bin", "python3")),
                   key=patch_of)
    found = [f for f in found if re.search(r"/3\.%d\.\d+/" % minor, f)]  # no 3.13t, no -dev
    exe = found[-1] if found else ""
    inc = os.path.join(os.path.dirname(os.path.dirname(exe)), "include", "python3.%d" % minor) \
        if exe else ""
    show("3.%d" % minor, exe, inc)
show("system-3.11", "/usr/bin/python3.11", "/usr/include/python3.11")
