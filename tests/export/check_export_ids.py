#!/usr/bin/env python3
"""`vramtrace export --format perfetto` writes async ids a JSON reader
keeps exact: a program opens 64 phases at once through the phase API
(vramtrace_range_start, whose ids have the top bit set: 2^63 + n), and
node's JSON.parse - what chrome://tracing and the Perfetto UI read with -
must see the same ids as Python's json (exact integers), one distinct id
for each phase, each e with its own b's id.
"""
import json
import os
import shutil
import subprocess
import sys

from export_common import parse_args, run_example, exported

args = parse_args()
PHASES = 64
PROGRAM = r"""
import ctypes, sys
rt = ctypes.CDLL("libsimcudart.so")
me = ctypes.CDLL(None)
start, end = me.vramtrace_range_start, me.vramtrace_range_end
start.restype, start.argtypes = ctypes.c_ulonglong, [ctypes.c_char_p]
end.argtypes = [ctypes.c_ulonglong]
ids = [start(b"phase%d" % i) for i in range(PHASES)]
p = ctypes.c_void_p()
if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) != 0:
    sys.exit(3)
for i in ids:
    end(i)
""".replace("PHASES", str(PHASES))
NODE = r"""
const fs = require("fs");
const events = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).traceEvents;
const out = events.filter(e => e.ph === "b" || e.ph === "e")
                  .map(e => [e.ph, e.name, String(e.id)]);
process.stdout.write(JSON.stringify(out));
"""

node = shutil.which("node")
if node is None:
    print("node is not installed: JSON.parse cannot be checked", file=sys.stderr)
    sys.exit(77)
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         sys.executable, "-c", PROGRAM])
path = exported(run, "perfetto", "ids.json")
if path:
    with open(path) as f:
        exact = [[e["ph"], e["name"], str(e["id"])] for e in json.load(f)["traceEvents"]
                 if e.get("ph") in ("b", "e")]
    p = subprocess.run([node, "-e", NODE, path], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        run.fail("node could not read the export: %s" % p.stderr.strip())
    else:
        seen = json.loads(p.stdout)
        wrong = [(n, e) for n, e in zip(seen, exact) if n != e]
        if len(seen) != len(exact) or wrong:
            run.fail("node's JSON.parse reads %d events, Python's exact json %d; "
                     "differing (node, exact): %s" % (len(seen), len(exact), wrong[:3]))
        begins = {name: i for ph, name, i in exact if ph == "b"}
        run.equal("phases the export opened", len(begins), PHASES)
        run.equal("distinct ids node reads for them",
                  len({i for ph, _, i in seen if ph == "b"}), PHASES)
        for ph, name, i in exact:
            if ph == "e" and begins.get(name) != i:
                run.fail("%s ends with id %s, opened with %s" % (name, i, begins.get(name)))
run.finish()
