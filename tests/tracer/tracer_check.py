#!/usr/bin/env python3
"""Run one client program under libvramtrace.so against the simulated driver
and compare the decoded trace with the driver's ground-truth ledger.

    tracer_check.py --vramtrace BIN --lib LIBVRAMTRACE --simdir DIR
                    [--preload-first PATHS] [--preload-after PATHS]
                    [--label FN=LABEL ...] [--min N] [--ranges]
                    [--expect-pids N] -- CLIENT [ARGS...]

For every process the client ran (one trace file per pid), the memory
operations of the ledger and of the trace must be the same, thread by thread,
in the same order: same entry point, address (or handle), requested size and
result. Nothing missing, nothing doubled. --label checks which runtime entry
point the trace says led to a driver call ("none": no label). --ranges
compares NVTX/phase records with the JSON lines the client printed on stdout.
Python 3 standard library only.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

# ledger op -> trace op and kind (None: any kind; the entry point decides)
LEDGER_OPS = {
    "alloc": ("alloc", None),
    "free": ("free", None),
    "host_alloc": ("alloc", "host_pinned"),
    "host_free": ("free", "host_pinned"),
    "host_register": ("alloc", "host_registered"),
    "host_unregister": ("free", "host_registered"),
    "vmm_reserve": ("alloc", "va_reserve"),
    "vmm_address_free": ("free", "va_reserve"),
    "vmm_create": ("alloc", "vmm_physical"),
    "vmm_release": ("free", "vmm_physical"),
    "vmm_retain": ("alloc", "vmm_physical"),
    "vmm_map": ("alloc", "va_map"),
    "vmm_unmap": ("free", "va_map"),
    "ctx_retain": ("alloc", "context"),
    "ctx_release": ("free", "context"),
    "ctx_create": ("alloc", "context"),
    "ctx_destroy": ("free", "context"),
}
# ledger kind of a device allocation -> trace kind
LEDGER_KINDS = {"device": "device", "pitch": "device", "managed": "managed",
                "async": "device", "array": "array"}
# ledger ops without an entry-point name: the trace's must start with this
CTX_API = {"ctx_retain": "cuDevicePrimaryCtxRetain",
           "ctx_release": "cuDevicePrimaryCtxRelease",
           "ctx_create": "cuCtxCreate", "ctx_destroy": "cuCtxDestroy"}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def num(text):
    if text in (None, "(nil)", ""):
        return 0
    return int(text, 16) if text.startswith("0x") else int(text)


def read_ledger(path):
    """{pid: {tid: [entry]}} of the memory operations, in order."""
    out = {}
    with open(path) as f:
        for line in f:
            fields = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t") if "=" in kv)
            op = fields.get("op")
            if op not in LEDGER_OPS:
                continue
            top, kind = LEDGER_OPS[op]
            if op == "alloc":
                kind = LEDGER_KINDS.get(fields.get("kind"), fields.get("kind"))
            key = "handle" if op in ("vmm_create", "vmm_release", "vmm_retain") else \
                  "ctx" if op.startswith("ctx_") else "addr"
            entry = {
                "ledger_op": op, "op": top, "kind": kind,
                "api": fields.get("fn") or CTX_API[op],
                "addr": num(fields.get(key)), "size": num(fields.get("size")),
                "result": int(fields["result"]),
            }
            # a failed call the driver refused before touching anything has
            # no address; a retain's size is a reference, not memory
            if top == "free" or op in ("vmm_retain", "ctx_retain", "ctx_create"):
                entry["size"] = None
            out.setdefault(int(fields["pid"]), {}).setdefault(int(fields["tid"]), []).append(entry)
    return out


def read_trace(vramtrace, path):
    proc = subprocess.run([vramtrace, "dump", "--json", path], capture_output=True, text=True)
    if proc.returncode != 0:
        fail("vramtrace dump %s: exit %d: %s" % (path, proc.returncode, proc.stderr))
    pid, tids, events, ranges = None, {}, {}, []
    for line in proc.stdout.splitlines():
        rec = json.loads(line)
        t = rec["type"]
        if t == "process":
            pid = rec["pid"]
        elif t == "thread":
            tids[rec["id"]] = rec["tid"]
        elif t == "mem":
            events.setdefault(tids[rec["thread"]], []).append(rec)
        elif t.startswith("range") or t == "mark":
            ranges.append(rec)
        elif t == "lost" and rec.get("count"):
            fail("%s: %d events lost" % (path, rec["count"]))
    return pid, events, ranges


def same(entry, ev):
    if ev["op"] != entry["op"] or ev["result"] != entry["result"]:
        return False
    if entry["ledger_op"] in CTX_API:
        if not ev["api"].startswith(entry["api"]):
            return False
    elif ev["api"] != entry["api"]:
        return False
    if entry["kind"] and ev["kind"] != entry["kind"]:
        return False
    if entry["result"] == 0 and ev["addr"] != entry["addr"]:
        return False
    return entry["size"] is None or ev["size"] == entry["size"]


def compare(pid, ledger_threads, trace_threads, labels):
    compared = 0
    for tid in sorted(set(ledger_threads) | set(trace_threads)):
        want = ledger_threads.get(tid, [])
        got = trace_threads.get(tid, [])
        for i in range(max(len(want), len(got))):
            w = want[i] if i < len(want) else None
            g = got[i] if i < len(got) else None
            if w is None or g is None or not same(w, g):
                fail("pid %d tid %d event %d: ledger %s, trace %s" % (pid, tid, i, w, g))
            if g["api"] in labels:
                expect = labels[g["api"]]
                have = g.get("label") or "none"
                if have != expect:
                    fail("pid %d tid %d event %d (%s): label %s, expected %s"
                         % (pid, tid, i, g["api"], have, expect))
            compared += 1
    return compared


def compare_ranges(expected_lines, ranges):
    want = [json.loads(l) for l in expected_lines if l.startswith("{")]
    got = []
    for r in ranges:
        item = {"type": r["type"]}
        for k in ("domain", "name"):
            if k in r:
                item[k] = r[k]
        got.append(item)
    if len(want) == 0:
        fail("client printed no expected ranges")
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w is None or g is None or any(g.get(k) != v for k, v in w.items()):
            fail("range %d: expected %s, trace %s" % (i, w, g))
    return len(want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--preload-after", default="")
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--min", type=int, default=1)
    ap.add_argument("--expect-pids", type=int, default=1)
    ap.add_argument("--ranges", action="store_true")
    ap.add_argument("client", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    client = a.client[1:] if a.client[:1] == ["--"] else a.client
    labels = dict(l.split("=", 1) for l in a.label)

    with tempfile.TemporaryDirectory(prefix="vt-tracer-") as tmp:
        ledger = os.path.join(tmp, "ledger.txt")
        env = dict(os.environ)
        preload = [p for p in a.preload_first.split(":") if p] + [a.lib] + \
                  [p for p in a.preload_after.split(":") if p]
        env.update({
            "LD_PRELOAD": ":".join(preload),
            "LD_LIBRARY_PATH": a.simdir + ":" + env.get("LD_LIBRARY_PATH", ""),
            "VTSIM_LEDGER": ledger,
            "VRAMTRACE_OUTPUT": os.path.join(tmp, "trace.%p.vtrace"),
            "VRAMTRACE_LIB": a.lib,
        })
        proc = subprocess.run(client, env=env, capture_output=True, text=True, timeout=60)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            fail("client %s exited %d\n%s" % (client, proc.returncode, proc.stdout))
        if os.path.exists(ledger):
            truth = read_ledger(ledger)
        elif a.min > 0:
            fail("the simulated driver wrote no ledger")
        else:
            truth = {}  # a client that never touched the driver
        traces = sorted(glob.glob(os.path.join(tmp, "trace.*.vtrace")))
        if len(traces) != a.expect_pids:
            fail("%d trace files, expected %d" % (len(traces), a.expect_pids))
        total = 0
        all_ranges = []
        for path in traces:
            pid, events, ranges = read_trace(a.vramtrace, path)
            total += compare(pid, truth.pop(pid, {}), events, labels)
            all_ranges += ranges
        if truth:
            fail("ledger has operations of processes without a trace: %s" % sorted(truth))
        if total < a.min:
            fail("only %d operations compared, expected at least %d" % (total, a.min))
        if a.ranges:
            n = compare_ranges(proc.stdout.splitlines(), all_ranges)
            print("ok: %d ranges" % n)
        print("ok: %d operations in %d process(es) match the ledger" % (total, len(traces)))


if __name__ == "__main__":
    main()
