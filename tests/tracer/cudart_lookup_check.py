#!/usr/bin/env python3
"""Run client_real_cudart under libvramtrace.so against the simulated driver
and check the real runtime's look-up phase: the driver answered its
look-ups (the simulated driver's look-up log), and no pointer the runtime
kept for a hooked variant is the driver's own function, and it kept at least
one distinct wrapper per hooked variant it looked up.

    cudart_lookup_check.py --lib LIB --simdir DIR --hooks driver_hooks.def
                           [--preload-first PATHS] -- CLIENT ARGS...
Python 3 standard library only.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--hooks", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("client", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    client = a.client[1:] if a.client[:1] == ["--"] else a.client
    with open(a.hooks) as f:
        hooked = set(re.findall(r"^VT_HOOK\((\w+),", f.read(), re.M))
    if len(hooked) < 40:
        fail("only %d hooked variants read from %s" % (len(hooked), a.hooks))
    with tempfile.TemporaryDirectory(prefix="vt-cudart-") as tmp:
        log = os.path.join(tmp, "lookups.txt")
        env = dict(os.environ)
        env.update({
            "LD_PRELOAD": ":".join([p for p in a.preload_first.split(":") if p] + [a.lib]),
            "LD_LIBRARY_PATH": a.simdir + ":" + env.get("LD_LIBRARY_PATH", ""),
            "VTSIM_LOOKUP_LOG": log,
            "VRAMTRACE_OUTPUT": os.path.join(tmp, "trace.%p.vtrace"),
        })
        proc = subprocess.run(client, env=env, capture_output=True, text=True, timeout=60)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            fail("client exited %d" % proc.returncode)
        # symbols the driver handed out for the runtime's look-ups
        answered = set()
        with open(log) as f:
            lookups = f.read().splitlines()
        for line in lookups:
            m = re.search(r"symbol=(\S+)", line)
            if m and m.group(1) != "-":
                answered.add(m.group(1))
    if len(lookups) < 300:
        fail("the runtime made only %d look-ups" % len(lookups))
    kept_wrapped, escaped = set(), set()
    for line in proc.stdout.splitlines():
        kind, _, name = line.partition(" ")
        if kind == "WRAP":
            kept_wrapped.add(name)   # an address
        elif kind == "DRV" and name in hooked:
            escaped.add(name)
    if escaped:
        fail("the runtime kept the driver's own %s" % sorted(escaped))
    expected = answered & hooked
    if len(expected) < 30:
        fail("only %d hooked variants were looked up" % len(expected))
    # Each hooked variant has its own wrapper, so the runtime must keep at
    # least as many distinct pointers into libvramtrace as it looked up
    # hooked variants (our wrappers are not in the dynamic symbol table, so
    # they are counted, not named; the escape check above names them).
    if len(kept_wrapped) < len(expected):
        fail("the runtime kept %d distinct wrappers for %d hooked variants it looked up"
             % (len(kept_wrapped), len(expected)))
    print("ok: %d look-ups, %d hooked variants kept as wrappers, none escaped"
          % (len(lookups), len(kept_wrapped)))


if __name__ == "__main__":
    main()
