"""What the export checks share: running `vramtrace export` on an example's
traces, and reading its files the way their viewers do (independently of
the analyzer: Python's json and pickle, the opcodes memory_viz accepts)."""
import os
import pickle
import pickletools
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from example_harness import parse_args, passed, run_example, format_bytes  # noqa: E402,F401

# The opcodes torch/utils/viz/MemoryViz.js's `unpickle` accepts; any other
# makes it throw "UNKNOWN OPCODE".
MEMORY_VIZ_OPCODES = {
    "PROTO", "FRAME", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET", "MARK",
    "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "DICT", "LIST", "TUPLE", "TUPLE1", "TUPLE2",
    "TUPLE3", "SETITEM", "SETITEMS", "APPEND", "APPENDS", "BININT", "BININT1", "BININT2",
    "LONG1", "SHORT_BINUNICODE", "BINUNICODE", "NEWTRUE", "NEWFALSE", "NONE", "BINFLOAT",
    "STOP"}


def export(run, fmt, *args, output=None, inputs=None):
    """`vramtrace export --format fmt args... inputs` (default: the run's
    traces); returns the CompletedProcess."""
    argv = [run.vramtrace, "export", "--format", fmt] + list(args)
    if output:
        argv += ["-o", output]
    argv += inputs if inputs is not None else [os.path.join(run.tmp, "traces")]
    return subprocess.run(argv, env=run.env, capture_output=True, text=True, timeout=60)


def exported(run, fmt, name, *args):
    """Exports to a file in the run's directory; its path, or None (a
    failure is recorded on the run)."""
    path = os.path.join(run.tmp, name)
    p = export(run, fmt, *args, output=path)
    if p.returncode != 0:
        run.fail("export --format %s %s exited %d: %s" % (fmt, " ".join(args), p.returncode,
                                                          p.stderr.strip()))
        return None
    return path


def folded_sum(run, *args):
    """The bytes of `export --format folded args` lines, summed; None when
    it failed."""
    p = export(run, "folded", *args)
    if p.returncode != 0:
        run.fail("export --format folded %s exited %d: %s" % (" ".join(args), p.returncode,
                                                              p.stderr.strip()))
        return None
    total = 0
    for line in p.stdout.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            run.fail("folded: not 'frames bytes': %r" % line)
            continue
        total += int(count)
    return total


def memory_viz_problems(path):
    """Opcodes memory_viz's unpickler would refuse, and integers wider than
    8 bytes (which it turns into BigInts)."""
    with open(path, "rb") as f:
        data = f.read()
    bad = set()
    for op, arg, _ in pickletools.genops(data):
        if op.name not in MEMORY_VIZ_OPCODES:
            bad.add(op.name)
        if op.name == "PROTO" and not 2 <= arg <= 4:
            bad.add("PROTO %d" % arg)
        if op.name == "LONG1" and not -(1 << 63) <= arg < (1 << 63):
            bad.add("LONG1 wider than 8 bytes")
    return sorted(bad)


def load_pickle(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def replay_device_trace(trace):
    """memory_viz's "Active Memory Timeline": alloc adds its size, the
    matching free_completed removes it. Returns (peak, final)."""
    live, total, peak = {}, 0, 0
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            total += e["size"]
            peak = max(peak, total)
        elif e["action"] == "free_completed":
            total -= live.pop(e["addr"], 0)
    return peak, total


def perfetto_counter_max(events, pid, track):
    samples = [e["args"]["bytes"] for e in events
               if e.get("ph") == "C" and e.get("pid") == pid and e.get("name") == track]
    return max(samples) if samples else None
