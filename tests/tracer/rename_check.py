#!/usr/bin/env python3
"""Runs client_rename under libvramtrace.so and checks, in the decoded trace
(vramtrace dump --json, records in file order), that the allocation after
each rename carries the new name: 1 MiB "by-setname", 2 MiB "by-prctl",
3 MiB "by-other". Independent truth: the names the client
gave, each followed by an allocation of a known size."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

MIB = 1 << 20
WANT = {1 * MIB: "by-setname", 2 * MIB: "by-prctl", 3 * MIB: "by-other"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("client", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    client = a.client[1:] if a.client[:1] == ["--"] else a.client
    with tempfile.TemporaryDirectory(prefix="vt-rename-") as tmp:
        trace = os.path.join(tmp, "t.vtrace")
        env = dict(os.environ, VRAMTRACE_OUTPUT=trace,
                   LD_LIBRARY_PATH=a.simdir + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
        env["LD_PRELOAD"] = ":".join(p for p in (os.environ.get("LD_PRELOAD", ""), a.lib) if p)
        proc = subprocess.run(client, env=env, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            fail("client exited %d: %s" % (proc.returncode, proc.stderr))
        dump = subprocess.run([a.vramtrace, "dump", "--json", trace], capture_output=True,
                              text=True)
        if dump.returncode != 0:
            fail("vramtrace dump: %s" % dump.stderr)
    names, seen = {}, {}
    for line in dump.stdout.splitlines():
        rec = json.loads(line)
        if rec["type"] == "thread":
            names[rec["id"]] = rec.get("name", "")
        elif rec["type"] == "mem" and rec.get("op") == "alloc":
            name = names.get(rec["thread"], "")
            if rec.get("size") in WANT:
                seen[rec["size"]] = name
    for size, want in sorted(WANT.items()):
        if size not in seen:
            fail("no allocation of %d bytes in the trace" % size)
        if seen[size] != want:
            fail("the %d MiB allocation is under thread name %r, expected %r"
                 % (size // MIB, seen[size], want))
    print("ok: %s" % ", ".join("%d MiB under %s" % (s // MIB, seen[s]) for s in sorted(seen)))


if __name__ == "__main__":
    main()
