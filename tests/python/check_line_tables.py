#!/usr/bin/env python3
"""check_line_tables.py PYTHON HELPER [--tamper]: runs line_tables.py under
PYTHON and feeds its output to the C helper. Exit 77 if PYTHON is absent."""
import os
import subprocess
import sys

python, helper = sys.argv[1], sys.argv[2]
if python in ("", "-") or not os.access(python, os.X_OK):
    print("skip: no interpreter %r" % python)
    sys.exit(77)
here = os.path.dirname(os.path.abspath(__file__))
env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LD_PRELOAD"))}
data = subprocess.run([python, os.path.join(here, "line_tables.py")], env=env,
                      capture_output=True, check=True, timeout=60).stdout
res = subprocess.run([helper] + sys.argv[3:], input=data, capture_output=True, timeout=60)
sys.stdout.write(res.stdout.decode())
sys.stderr.write(res.stderr.decode())
sys.exit(res.returncode)
