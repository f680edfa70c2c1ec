#!/usr/bin/env python3
"""Configure time: the interpreters the 'torch' suite runs the stand-in
under, one line each: NAME PATH ('-' when absent: the test skips, 77).
pyenv's newest 3.9 .. 3.14 (under $PYENV_ROOT or ~/.pyenv) and the
system's /usr/bin/python3."""
import glob
import os
import re

root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def patch_of(path):
    m = re.search(r"/3\.\d+\.(\d+)/", path)
    return int(m.group(1)) if m else -1


for minor in range(9, 15):
    found = sorted((f for f in glob.glob(os.path.join(root, "versions", "3.%d.*" % minor,
                                                      "bin", "python3"))
                    if re.search(r"/3\.%d\.\d+/" % minor, f)), key=patch_of)
    exe = found[-1] if found and os.access(found[-1], os.X_OK) else "-"
    print("3.%d %s" % (minor, exe))
print("system %s" % ("/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "-"))
