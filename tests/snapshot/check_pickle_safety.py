#!/usr/bin/env python3
"""The snapshot reader never runs code and never crashes on bad input.

Hostile pickles are written here byte by byte (never produced by running
anything), then fed to `vramtrace report`: each must be refused with exit
status 2 and a message naming the opcode or problem and the byte offset.
A hand-made snapshot with out-of-memory entries checks the OOM diagnosis
against numbers worked out by hand.

usage: check_pickle_safety.py VRAMTRACE FIXTURE_DIR"""
import glob
import json
import os
import pickle
import random
import struct
import subprocess
import sys
import tempfile

VRAMTRACE, FIXTURES = sys.argv[1], sys.argv[2]
failures = []
MiB = 1 << 20


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def report(path, *extra):
    p = subprocess.run([VRAMTRACE, "report", *extra, path], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def su(s):  # SHORT_BINUNICODE
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


PROTO = b"\x80\x04"
tmp = tempfile.mkdtemp()
marker = os.path.join(tmp, "pwned")

# Opcodes that would make Python import or call something, each in a
# minimal stream; the offset is where the opcode sits.
hostile = {
    # os.system("touch marker") the protocol-0 way: GLOBAL + REDUCE
    "GLOBAL": (PROTO + b"cos\nsystem\n" + su("touch " + marker) + b"\x85R.", 2),
    "STACK_GLOBAL": (PROTO + su("os") + su("system") + b"\x93" + su("touch " + marker) + b"\x85R.",
                     2 + len(su("os")) + len(su("system"))),
    "REDUCE": (PROTO + b"N)R.", 4),
    "BUILD": (PROTO + b"}}b.", 4),
    "INST": (PROTO + b"(ios\nsystem\n.", 3),
    "OBJ": (PROTO + b"(N)o.", 5),
    "NEWOBJ": (PROTO + b"N)\x81.", 4),
    "NEWOBJ_EX": (PROTO + b"N)}\x92.", 5),
    "EXT1": (PROTO + b"\x82\x01.", 2),
    "EXT2": (PROTO + b"\x83\x01\x00.", 2),
    "EXT4": (PROTO + b"\x84\x01\x00\x00\x00.", 2),
    "PERSID": (PROTO + b"Pid\n.", 2),
    "BINPERSID": (PROTO + b"N\x51.", 3),
}
for name, (data, offset) in hostile.items():
    path = os.path.join(tmp, name + ".pickle")
    with open(path, "wb") as f:
        f.write(data)
    rc, out, err = report(path)
    check(rc == 2, "%s: exit 2 (got %d)" % (name, rc))
    check(name in err and "byte %d" % offset in err and path in err,
          "%s: message names opcode, file and byte %d: %r" % (name, offset, err))
    check("refused" in err, "%s: says refused: %r" % (name, err))
check(not os.path.exists(marker), "nothing was executed")

# The same GLOBAL+REDUCE buried inside a real snapshot's structure.
inner = PROTO + b"}" + su("segments") + b"]" + su("x") + b"cos\nsystem\n" + su("true") + b"\x85R" + b"\x87s."
path = os.path.join(tmp, "buried.pickle")
open(path, "wb").write(inner)
rc, out, err = report(path)
check(rc == 2 and "GLOBAL" in err, "buried GLOBAL refused: %r" % err)

# Malformed data: each a clear error with exit 2.
malformed = {
    "memo": (PROTO + b"h\x05.", "memo"),
    "memo_far_put": (PROTO + b"Nr\xff\xff\xff\x7f.", "memo"),
    "deep_marks": (PROTO + b"(" * 5000 + b".", "deeper"),
    "huge_string": (PROTO + b"X\xff\xff\xff\xff" + b"ab.", "past the end"),
    "huge_frame": (PROTO + b"\x95" + struct.pack("<Q", 1 << 62) + b"N.", "past the end"),
    "no_stop": (PROTO + b"}", "without STOP"),
    "empty": (b"", None),
    "stop_empty": (PROTO + b".", "STOP"),
    "setitems_on_list": (PROTO + b"](NNu.", "not a dict"),
    "append_on_dict": (PROTO + b"}Na.", "not a list"),
    "unknown_opcode": (PROTO + b"\xff.", "not a pickle opcode"),
    "not_snapshot": (PROTO + b"K\x05.", "not a memory snapshot"),
    "bad_segment": (PROTO + b"}" + su("segments") + b"]K\x01as.", "segment"),
    "protocol_9": (b"\x80\x09N.", "protocol"),
    "set": (PROTO + b"\x8f.", "EMPTY_SET"),
}
for name, (data, word) in malformed.items():
    path = os.path.join(tmp, name + ".pickle")
    open(path, "wb").write(data)
    rc, out, err = report(path)
    check(rc == 2, "%s: exit 2 (got %d, %r)" % (name, rc, err))
    check("byte" in err and (word is None or word in err), "%s: clear message: %r" % (name, err))

# Real snapshots cut short and garbled: exit 0 or 2, never a crash.
fixture = sorted(glob.glob(os.path.join(FIXTURES, "*.pickle")), key=os.path.getsize)[0]
data = open(fixture, "rb").read()
for cut in (1, 2, 11, 100, 4096, len(data) // 3, len(data) // 2, len(data) - 1):
    path = os.path.join(tmp, "cut.pickle")
    open(path, "wb").write(data[:cut])
    rc, out, err = report(path)
    check(rc == 2 and "byte" in err, "cut at %d: exit 2 with offset (%d, %r)" % (cut, rc, err[:200]))
rng = random.Random(1529)
for trial in range(12):
    b = bytearray(data)
    for _ in range(rng.choice((1, 4, 32))):
        b[rng.randrange(2, len(b))] = rng.randrange(256)
    path = os.path.join(tmp, "garbled.pickle")
    open(path, "wb").write(bytes(b))
    rc, out, err = report(path, "--json")
    check(rc in (0, 2), "garbled #%d: exit 0 or 2, got %d: %r" % (trial, rc, err[-300:]))
    if rc == 0:
        json.loads(out)

# A hand-made snapshot with two OOMs. Segment S (20 MiB) holds four 5 MiB
# tensors; the 2nd and 4th are freed: 10 MiB free in two 5 MiB pieces.
# oom 1: 8 MiB with 2 MiB free on the device: 2 + 10 >= 8 but no piece of
#        8 MiB -> fragmented, largest free 5 MiB, fragmentation 1 - 5/10.
# oom 2: 100 MiB: 2 + 10 < 100 -> exhausted.
S = 0x7f0000000000
fr = [{"filename": "train.py", "line": 42, "name": "step"}]
blocks = [{"address": S + i * 5 * MiB, "size": 5 * MiB, "requested_size": 5 * MiB,
           "state": "active_allocated" if i % 2 == 0 else "inactive", "frames": fr} for i in range(4)]
seg = {"device": 0, "address": S, "total_size": 20 * MiB, "allocated_size": 10 * MiB,
       "active_size": 10 * MiB, "requested_size": 10 * MiB, "stream": 0, "segment_type": "large",
       "segment_pool_id": (0, 0), "is_expandable": False, "frames": fr, "blocks": blocks}
trace = [{"action": "segment_alloc", "addr": S, "size": 20 * MiB, "stream": 0, "time_us": 1, "frames": fr}]
for i in range(4):
    trace.append({"action": "alloc", "addr": S + i * 5 * MiB, "size": 5 * MiB, "stream": 0,
                  "time_us": 2 + i, "frames": fr})
for i in (1, 3):
    for act in ("free_requested", "free_completed"):
        trace.append({"action": act, "addr": S + i * 5 * MiB, "size": 5 * MiB, "stream": 0,
                      "time_us": 10 + i, "frames": fr})
trace.append({"action": "oom", "size": 8 * MiB, "device_free": 2 * MiB, "stream": 0, "time_us": 20, "frames": fr})
trace.append({"action": "oom", "size": 100 * MiB, "device_free": 2 * MiB, "stream": 0, "time_us": 21, "frames": fr})
snap = {"segments": [seg], "device_traces": [trace],
        "allocator_settings": {"max_split_size": -1, "roundup_power2_divisions": {}},
        "external_annotations": []}
path = os.path.join(tmp, "oom.pickle")
open(path, "wb").write(pickle.dumps(snap, protocol=4))
rc, out, err = report(path, "--json")
check(rc == 0, "oom snapshot: exit 0 (%r)" % err)
if rc == 0:
    d = json.loads(out)["snapshots"][0]["devices"][0]
    check(d["peak_allocated_bytes"] == 20 * MiB, "oom snapshot: peak 20 MiB")
    check(len(d["ooms"]) == 2, "oom snapshot: two ooms")
    o1, o2 = d["ooms"]
    check(o1["verdict"] == "fragmented", "oom 1 fragmented: %s" % o1["verdict"])
    check(o1["largest_free_block_bytes"] == 5 * MiB, "oom 1 largest free 5 MiB")
    check(o1["free_cached_bytes"] == 10 * MiB, "oom 1 free cached 10 MiB")
    check(abs(o1["fragmentation"] - 0.5) < 1e-9, "oom 1 fragmentation 0.5")
    check(o1["segment_bytes"] == 20 * MiB, "oom 1 would have been a 20 MiB segment")
    check(o1["allocated_bytes"] == 10 * MiB and o1["reserved_bytes"] == 20 * MiB, "oom 1 state")
    check([b["state"] for b in o1["segment_map"]["segments"][0]["blocks"]] ==
          ["allocated", "free", "allocated", "free"], "oom 1 segment map")
    check(o1["frames"][0]["file"] == "train.py", "oom 1 stack")
    check(o2["verdict"] == "exhausted", "oom 2 exhausted: %s" % o2["verdict"])
rc, out, err = report(path)
check(rc == 0 and "fragmented" in out and "largest free block 5.00 MiB" in out, "oom text report")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("pickle safety and OOM diagnosis: ok")
