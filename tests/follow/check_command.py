#!/usr/bin/env python3
"""`vramtrace top -b`'s COMMAND column names a Python program by its script,
not the interpreter's path, and a batch on a terminal uses the terminal's
width:

  - python3 runs a script at a long path with a long argument, holding
    1 MiB of the simulated GPU; piped, top's row (200 columns) names it
    "wal_train.py --config ...", with no "python" in it;
  - on a terminal of 300 columns (a pty), top -b without -w shows the whole
    command line, the argument to its end.

    check_command.py --build BUILD [--preload-first LIBS]
"""
import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time

from follow_check import Paths, fail, finish, job_env, options  # noqa: E402

A = options()
P = Paths(A.build)
ARG = "x" * 120
SCRIPT = r"""
import ctypes, os, sys, time
rt = ctypes.CDLL("libsimcudart.so")
p = ctypes.c_void_p()
if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) != 0:
    sys.exit(3)
stop = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stop")
deadline = time.time() + 60
while not os.path.exists(stop) and time.time() < deadline:
    time.sleep(0.05)
"""


def top_on_pty(argv, env, columns):
    """top's output on a pty of that many columns."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 20)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the pty's other end closed
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=20)
    os.close(master)
    return out.decode(errors="replace").replace("\r\n", "\n")


tmp = tempfile.mkdtemp(prefix="vt-top-command-")
try:
    where = os.path.join(tmp, "a-long-directory-name", "of-the-project", "scripts")
    os.makedirs(where)
    script = os.path.join(where, "wal_train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    traces = os.path.join(tmp, "traces")
    env = job_env(P, os.path.join(tmp, "ledger.txt"), A.preload_first,
                  VTSIM_SHARED="vt-top-cmd-%d" % os.getpid(), VRAMTRACE_FLUSH_MS="50")
    job = subprocess.Popen([P.vramtrace, "run", "-q", "-o", os.path.join(traces, "t.%p.vtrace"),
                            "--", sys.executable, script, "--config", ARG], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while time.time() < deadline and not (os.path.isdir(traces) and os.listdir(traces)):
        time.sleep(0.1)
    time.sleep(1.0)  # the allocation flushed
    top = [P.vramtrace, "top", "-b", "-n", "1", traces]
    piped = subprocess.run(top, env=env, capture_output=True, text=True, timeout=30).stdout
    wide = top_on_pty(top, env, 300)
    open(os.path.join(where, "stop"), "w").close()
    out, err = job.communicate(timeout=60)
    if job.returncode != 0:
        fail("the traced script exited %d: %s" % (job.returncode, err))
    for what, text, want in (("piped (200 columns)", piped, "wal_train.py --config xxxx"),
                             ("on a 300-column terminal", wide,
                              "wal_train.py --config " + ARG)):
        rows = [ln for ln in text.splitlines() if "wal_train.py" in ln or "python" in ln]
        if len(rows) != 1:
            fail("%s: want one row naming the script, got %r" % (what, text))
            continue
        if "python" in rows[0]:
            fail("%s: the row names the interpreter: %r" % (what, rows[0]))
        if not rows[0].rstrip().endswith(want) and want not in rows[0]:
            fail("%s: the COMMAND column is not %r...: %r" % (what, want, rows[0]))
        if what.startswith("on a") and not rows[0].rstrip().endswith(ARG):
            fail("%s: the command is cut: %r" % (what, rows[0]))
finally:
    try:
        os.unlink("/dev/shm/vtsim-vt-top-cmd-%d" % os.getpid())
    except OSError:
        pass
    shutil.rmtree(tmp, ignore_errors=True)
finish("top's COMMAND column names the script; -b on a terminal takes its width")
