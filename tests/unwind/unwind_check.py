#!/usr/bin/env python3
"""Run unwind_client under libvramtrace.so and compare every recorded
allocation stack with the one the client printed for it (libunwind's
unw_step loop on flushed caches).

    unwind_check.py --vramtrace BIN --lib LIBVRAMTRACE --simdir DIR
                    [--preload-first PATHS] [--fast 0|1] -- CLIENT

With --fast 0 (libunwind for every stack) the allocation made through the
replaced library ("swap-b") is not compared: unw_backtrace answers it from
a cache libunwind never invalidates. Python 3 standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--fast", default="1")
    ap.add_argument("client", nargs="+")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.vtrace")
        env = dict(os.environ)
        env.update({
            "LD_PRELOAD": a.preload_first + a.lib,
            "LD_LIBRARY_PATH": a.simdir,
            "VRAMTRACE_OUTPUT": trace,
            "VRAMTRACE_STACK_DEPTH": "256",
            "VRAMTRACE_FAST_UNWIND": a.fast,
        })
        run = subprocess.run(a.client, env=env, stdout=subprocess.PIPE, text=True, timeout=120)
        if run.returncode != 0:
            fail("client exited with %d" % run.returncode)
        dump = subprocess.run([a.vramtrace, "dump", "--json", trace], stdout=subprocess.PIPE,
                              text=True, check=True, timeout=120).stdout

    expected, same_address = [], None
    for line in run.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "expect":
            expected.append((parts[1], [int(x, 16) for x in parts[2:]]))
        elif parts and parts[0] == "same_address":
            same_address = parts[1] == "1"
    if same_address is not True:
        fail("the second library was not loaded where the first was: scenario not exercised")

    nodes, stacks = {}, []
    for line in dump.splitlines():
        rec = json.loads(line)
        if rec["type"] == "stack_node":
            nodes[rec["id"]] = (rec["parent"], rec["ip"])
        elif rec["type"] == "mem" and rec["op"] == "alloc" and rec["api"] == "cuMemAlloc_v2":
            ips, node = [], rec["stack"]
            while node:
                parent, ip = nodes[node]
                ips.append(ip)
                node = parent
            stacks.append(ips)  # innermost first
    if len(stacks) != len(expected):
        fail("%d allocations recorded, the client made %d" % (len(stacks), len(expected)))
    compared = 0
    for (tag, want), got in zip(expected, stacks):
        if tag == "swap-b" and a.fast != "1":
            continue
        if got[1:] != want:
            fail("%s: recorded stack differs from libunwind's:\n  recorded %s\n  expected %s" %
                 (tag, [hex(x) for x in got[1:]], [hex(x) for x in want]))
        compared += 1
    print("%d recorded stacks equal to libunwind's" % compared)


if __name__ == "__main__":
    main()
