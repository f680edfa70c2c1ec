#!/usr/bin/env python3
"""Cuts the real PyTorch snapshots of tests/data/pytorch-snapshots/ down to
small fuzzing seeds (corpus/snapshot/*.pickle, each < 64 KiB): the first
segments and trace entries, stacks shortened, pickled again with the
protocol of the original. Loading uses an Unpickler that refuses every
global, so nothing in a snapshot can run.
    make_snapshot_seeds.py SNAPSHOT_DIR OUT_DIR"""
import io
import os
import pickle
import sys

MAX_BYTES = 64 * 1024


class DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused global %s.%s" % (module, name))


def short_frames(frames, keep):
    if not isinstance(frames, list):
        return frames
    py = [f for f in frames if str(f.get("filename", "")).endswith(".py")]
    return (py + [f for f in frames if f not in py])[:keep]


def cut(snap, nseg, nblocks, nevents, keep):
    if isinstance(snap, list):  # the old format: a bare list of segments
        snap = {"segments": snap}
    out = dict(snap)
    segs = []
    for s in snap.get("segments", [])[:nseg]:
        s = dict(s)
        s["frames"] = short_frames(s.get("frames", []), keep)
        s["blocks"] = [dict(b, frames=short_frames(b.get("frames", []), keep))
                       for b in s.get("blocks", [])[:nblocks]]
        segs.append(s)
    out["segments"] = segs
    if "device_traces" in snap:
        out["device_traces"] = [[dict(e, frames=short_frames(e.get("frames", []), keep))
                                 for e in t[:nevents]] for t in snap["device_traces"]]
    if isinstance(snap.get("external_annotations"), list):
        out["external_annotations"] = snap["external_annotations"][:20]
    return out


def with_oom(snap):
    """The same cut, ending in an out-of-memory entry as the allocator writes
    one (no real snapshot here has one)."""
    snap = dict(snap)
    traces = [list(t) for t in snap.get("device_traces", [])]
    if traces and traces[0]:
        last = traces[0][-1]
        traces[0].append({"action": "oom", "addr": 0, "size": 1 << 30, "stream": 0,
                          "time_us": last.get("time_us", 0) + 1, "device_free": 1 << 20,
                          "frames": last.get("frames", [])})
    snap["device_traces"] = traces
    return snap


def memo_repeats(n):
    """One segment repeated n times, its blocks one block n times,
    its frames one frame n times; pickle writes each repeat as a memo
    reference, so a few bytes per level expand to n^3 elements."""
    frame = {"filename": "train.py", "line": 7, "name": "step"}
    block = {"address": 0, "size": 512, "requested_size": 512, "state": "active_allocated",
             "frames": [frame] * n}
    segment = {"device": 0, "address": 0, "total_size": 512 * n, "stream": 0,
               "segment_type": "large", "is_expandable": False, "frames": [],
               "blocks": [block] * n}
    return {"segments": [segment] * n, "device_traces": [[]], "allocator_settings": {}}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    # Under the element budget (60^3: read and reported) and over it (120^3:
    # refused): the fuzzer mutates both sides of the limit.
    for n in (60, 120):
        out = os.path.join(dst, "memo-repeats-%d.pickle" % n)
        open(out, "wb").write(pickle.dumps(memo_repeats(n), protocol=4))
        print("%s: %d elements" % (out, n + n * n * (n + 1)))
    for name in sorted(os.listdir(src)):
        if not name.endswith(".pickle"):
            continue
        data = open(os.path.join(src, name), "rb").read()
        proto = data[1] if data[:1] == b"\x80" else 2
        snap = DataOnly(io.BytesIO(data)).load()
        for nseg, nblocks, nevents, keep in ((4, 4, 80, 6), (2, 2, 30, 3), (1, 1, 8, 2)):
            blob = pickle.dumps(cut(snap, nseg, nblocks, nevents, keep), protocol=proto)
            if len(blob) <= MAX_BYTES:
                out = os.path.join(dst, name.replace(".pickle", "-cut.pickle"))
                open(out, "wb").write(blob)
                print("%s: %d bytes (%d segments, %d events)" % (out, len(blob), nseg, nevents))
                if name.startswith("eor"):
                    blob = pickle.dumps(with_oom(cut(snap, nseg, nblocks, nevents, keep)),
                                        protocol=proto)
                    open(out.replace("-cut", "-cut-oom"), "wb").write(blob)
                break


if __name__ == "__main__":
    main()
