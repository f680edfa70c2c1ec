#!/usr/bin/env python3
"""Configure time: the interpreters the 'torch' suite runs the stand-in
under, one line each: NAME PATH ('-' when absent: the test skips, 77).
pyenv's newest 3.9 (under $PYENV_ROOT or ~/.pyenv), then what the python
suite's finder (tests/python/find_pythons.py) lists for 3.10 .. 3.15:
pyenv's, a scratch build at /tmp/py3MM/bin/python3.MM, or one named in
$VRAMTRACE_TEST_PYTHONS (free-threaded ones left out: they record native
stacks only), and the system's /usr/bin/python3."""
import glob
import os
import re
import subprocess
import sys

root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def patch_of(path):
    m = re.search(r"/3\.\d+\.(\d+)/", path)
    return int(m.group(1)) if m else -1


found = sorted((f for f in glob.glob(os.path.join(root, "versions", "3.9.*", "bin", "python3"))
                if re.search(r"/3\.9\.\d+/", f)), key=patch_of)
print("3.9 %s" % (found[-1] if found and os.access(found[-1], os.X_OK) else "-"))
finder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "find_pythons.py")
rows = subprocess.run([sys.executable, finder], capture_output=True, text=True,
                      check=True).stdout.splitlines()
for row in rows:
    name, exe = row.split()[:2]
    if re.fullmatch(r"3\.\d+", name):
        print("%s %s" % (name, exe))
print("system %s" % ("/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else "-"))
