#!/usr/bin/env python3
"""The real libcudart.so.13 under libvramtrace.so, against the simulated driver.

Runs client_real_cudart with lookup_spy.so preloaded before libvramtrace.so.
Two independent logs are compared:
  - the simulated driver's look-up log (VTSIM_LOOKUP_LOG): which exact
    variant the driver answered for each (name, version, flags);
  - the spy's log: where the pointer the runtime finally received lives.
Passes when the runtime made its whole look-up phase (every look-up of
tests/data/cudart13-driver-lookups.txt, in that order), and every look-up
the driver answered with a hooked variant reached the runtime as a
libvramtrace wrapper, while every other one reached it as the driver's own
function (unknown functions pass through untouched).

    cudart_lookup_check.py --lib LIB --spy SPY --simdir DIR --hooks driver_hooks.def
                           --expected LOOKUPS [--preload-first PATHS] -- CLIENT ARGS...
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


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def lookup_key(line):
    """(name, version, flags) of a look-up line "<name> <version> <flags> ...";
    the runtime's probe has an empty name, written "-"."""
    name, version, flags = line.split(" ")[:3]
    return (name or "-", version, flags)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--spy", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--hooks", required=True)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("client", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    client = a.client[1:] if a.client[:1] == ["--"] else a.client
    with open(a.hooks, encoding="utf-8") as f:
        hooked = set(re.findall(r"^VT_HOOK\((\w+),", f.read(), re.M))
    if len(hooked) < 40:
        fail("only %d hooked variants read from %s" % (len(hooked), a.hooks))

    with tempfile.TemporaryDirectory(prefix="vt-cudart-") as tmp:
        driver_log = os.path.join(tmp, "driver-lookups.txt")
        spy_log = os.path.join(tmp, "spy-lookups.txt")
        env = dict(os.environ)
        env.update({
            "LD_PRELOAD": ":".join([p for p in a.preload_first.split(":") if p] + [a.spy, a.lib]),
            "LD_LIBRARY_PATH": a.simdir + ":" + env.get("LD_LIBRARY_PATH", ""),
            "VTSIM_LOOKUP_LOG": driver_log,
            "LOOKUP_SPY_LOG": spy_log,
            "VRAMTRACE_OUTPUT": os.path.join(tmp, "trace.%p.vtrace"),
        })
        proc = subprocess.run(client, env=env, capture_output=True, text=True, timeout=60)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            fail("client exited %d" % proc.returncode)
        driver = read_lines(driver_log)
        spy = read_lines(spy_log)

    # 1. The whole look-up phase happened, in the real runtime's order.
    expected = [lookup_key(line) for line in read_lines(a.expected)]
    asked = [lookup_key(line) for line in spy if not line.startswith("dlsym:")]
    missing = [e for e in expected if e not in asked]
    if missing:
        fail("%d look-ups of the real runtime never reached the spy, e.g. %s"
             % (len(missing), missing[:3]))
    remaining = iter(asked)
    if not all(e in remaining for e in expected):   # a subsequence, in order
        fail("the runtime's look-ups reached the spy out of their real order")
    if not any(line.startswith("dlsym:cuGetProcAddress_v2 ") for line in spy):
        fail("the runtime's dlsym of cuGetProcAddress_v2 did not reach the spy")

    # 2. What the driver answered with, per (name, version, flags).
    answered = {}
    for line in driver:
        m = re.search(r"symbol=(\S+)", line)
        if m:
            answered[lookup_key(line)] = m.group(1)

    # 3. Where each pointer the runtime received lives.
    wrapped = passed = 0
    for line in spy:
        if line.startswith("dlsym:"):
            continue
        name, version, flags, rc, obj = line.split()
        if rc != "0":
            continue
        variant = answered.get((name, version, flags))
        if variant is None:
            fail("the driver has no record of answering %s %s %s" % (name, version, flags))
        if name == "cuGetProcAddress":
            want = "vramtrace"   # the spy swaps it afterwards, but it received ours
        elif variant in hooked:
            want = "vramtrace"
        else:
            want = "driver"
        if obj != want:
            fail("%s %s %s (driver variant %s) reached the runtime from %s, not %s"
                 % (name, version, flags, variant, obj, want))
        if want == "vramtrace":
            wrapped += 1
        else:
            passed += 1
    if wrapped < 30:
        fail("only %d hooked variants were looked up" % wrapped)
    print("ok: %d look-ups; %d reached the runtime as libvramtrace wrappers, "
          "%d as the driver's own functions" % (len(asked), wrapped, passed))


if __name__ == "__main__":
    main()
