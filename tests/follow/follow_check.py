"""What the checks of `vramtrace top` (check_top.py, check_follow.py,
check_screen.py) share: their options, the build's programs, the
environment of a job on the simulated GPU, and `vramtrace top -b` run
beside a test. Options and the failure list are the launcher checks'
(tests/launchers/launcher_check.py); importing it puts tests/examples
(ledger_truth) on the module path."""
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# the launcher checks' options and failure list (and through them
# tests/examples, ledger_truth, on the module path)
sys.path.insert(0, os.path.join(HERE, "..", "launchers"))
from launcher_check import fail, failures, parser  # noqa: E402,F401


def options(tamper=False):
    """--build, --preload-first (and --tamper), parsed."""
    return parser(tamper).parse_args()


class Paths:
    """The build tree's programs."""

    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.vramtrace = os.path.join(self.build, "analyzer", "vramtrace")
        self.worker = os.path.join(self.build, "tests", "follow", "follow_worker")
        self.sim = os.path.join(self.build, "tests", "simdriver")


def job_env(paths, ledger, preload_first, **extra):
    """This environment without the simulation's, the tracer's or the
    worker's variables, then the simulated GPU's (its ledger at ledger)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VTSIM_", "VRAMTRACE_", "FOLLOW_"))}
    if preload_first:
        env["LD_PRELOAD"] = preload_first
    env.update(LD_LIBRARY_PATH=paths.sim + ":" + os.path.join(paths.sim, "runtime"),
               VTSIM_LEDGER=ledger)
    env.update(extra)
    return env


def finish(what):
    """Exits 1 naming every failed check, else 0 saying what was checked."""
    if failures:
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        sys.exit(1)
    print("ok: " + what)


class TopFrames:
    """`vramtrace top -b` run beside a test: its frames collected as they
    come, each with the monotonic time (CLOCK_MONOTONIC, the clock of the
    simulated driver's ledger) at which its first line was read."""

    def __init__(self, argv, env, clock=time.monotonic_ns):
        self.frames = []  # (time read, [lines])
        self.clock = clock
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        current = None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("vramtrace top - "):
                current = (self.clock(), [line])
                self.frames.append(current)
            elif current is not None:
                current[1].append(line)

    def stop(self):
        """Ends top; returns what it wrote on stderr."""
        self.proc.terminate()
        err = self.proc.stderr.read()
        self.proc.wait(timeout=10)
        self.reader.join(timeout=10)
        return err
