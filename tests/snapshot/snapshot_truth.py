"""Independent figures for PyTorch memory snapshots, computed with Python's
own pickle (an Unpickler whose find_class refuses everything: the files are
data only) from the rules in /work/shared/brief/pytorch.md. Standard
library only. Shared by check_snapshots.py and ../simulate/check_simulate.py.
"""
import pickle

MiB = 1 << 20


class DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused global %s.%s" % (module, name))


def load(path):
    with open(path, "rb") as f:
        data = DataOnly(f).load()
    if isinstance(data, list):
        return {"segments": data, "device_traces": []}
    return data


def settings(snap):
    """max_split_size (bytes or None) and the 16 roundup divisions."""
    a = snap.get("allocator_settings") or {}
    msz = a.get("max_split_size", -1)
    div = [0] * 16
    for k, v in (a.get("roundup_power2_divisions") or {}).items():
        mb = int(k)
        if mb & (mb - 1) == 0 and mb.bit_length() - 1 < 16:
            div[mb.bit_length() - 1] = v
    return (msz if msz and msz > 0 else None), div


def round_size(size, div):
    if size < 512:
        return 512
    idx = min(max(size.bit_length() - 1 - 20, 0), 15)
    d = div[idx]
    if d > 1 and size > 512 * d:
        if size & (size - 1) == 0:
            return size
        floor2 = 1 << (size.bit_length() - 1)
        step = floor2 >> (d.bit_length() - 1)
        if step == 0:
            return floor2 << 1
        down = size & ~(step - 1)
        return size if down == size else down + step
    return (size + 511) // 512 * 512


def devices(snap):
    devs = list(range(len(snap.get("device_traces", []))))
    for s in snap["segments"]:
        if s["device"] not in devs:
            devs.append(s["device"])
    return devs


class Timeline:
    """One device: the trace, the reconstructed start, and replays."""

    def __init__(self, snap, dev):
        traces = snap.get("device_traces", [])
        self.ev = traces[dev] if dev < len(traces) else []
        has_completed = any(e["action"] == "free_completed" for e in self.ev)
        self.free_action = "free_completed" if has_completed else "free_requested"
        live, segs, reserved = {}, {}, 0
        for s in snap["segments"]:
            if s["device"] != dev:
                continue
            segs[s["address"]] = (s["total_size"], s["segment_type"] == "small", s["stream"])
            reserved += s["total_size"]
            for b in s["blocks"]:
                if b["state"] != "inactive":
                    live[b["address"]] = (b["requested_size"], b.get("frames"))
        self.final_allocated = sum(v[0] for v in live.values())
        self.final_reserved = reserved
        self.final_segments = len(segs)
        # backwards: undo every delta of the trace
        for e in reversed(self.ev):
            a = e["action"]
            if a == "alloc":
                live.pop(e["addr"])
            elif a == self.free_action:
                live[e["addr"]] = (e["size"], None)
            elif a == "segment_alloc":
                segs.pop(e["addr"])
                reserved -= e["size"]
            elif a == "segment_free":
                segs[e["addr"]] = (e["size"], e["size"] <= 2 * MiB, e["stream"])
                reserved += e["size"]
            elif a == "segment_map":
                reserved -= e["size"]
            elif a == "segment_unmap":
                reserved += e["size"]
        self.initial_live, self.initial_segs, self.initial_reserved = live, segs, reserved

    def replay(self, upto):
        live, segs = dict(self.initial_live), dict(self.initial_segs)
        reserved = self.initial_reserved
        for e in self.ev[:upto]:
            a = e["action"]
            if a == "alloc":
                live[e["addr"]] = (e["size"], e.get("frames"))
            elif a == self.free_action:
                live.pop(e["addr"], None)
            elif a == "segment_alloc":
                segs[e["addr"]] = (e["size"], e["size"] <= 2 * MiB, e["stream"])
                reserved += e["size"]
            elif a == "segment_free":
                segs.pop(e["addr"], None)
                reserved -= e["size"]
            elif a == "segment_map":
                reserved += e["size"]
            elif a == "segment_unmap":
                reserved -= e["size"]
        return live, segs, reserved

    def peaks(self):
        alloc = sum(v[0] for v in self.initial_live.values())
        reserved = self.initial_reserved
        pa, pai, pr, pri = alloc, 0, reserved, 0
        counts = {}
        for i, e in enumerate(self.ev):
            a = e["action"]
            counts[a] = counts.get(a, 0) + 1
            if a == "alloc":
                alloc += e["size"]
                if alloc > pa:
                    pa, pai = alloc, i + 1
            elif a == self.free_action:
                alloc -= e["size"]
            elif a in ("segment_alloc", "segment_map"):
                reserved += e["size"]
                if reserved > pr:
                    pr, pri = reserved, i + 1
            elif a in ("segment_free", "segment_unmap"):
                reserved -= e["size"]
        return dict(peak_allocated=pa, peak_allocated_index=pai, peak_reserved=pr,
                    peak_reserved_index=pri, counts=counts)


def layout(live, segs, max_split, div):
    """Free pieces per segment from live blocks (address, requested) and the
    split rules: a live block occupies its rounded size, plus the rest of
    the gap when the allocator would not split it off."""
    free = []
    small_l = large_l = 0
    addrs = sorted(live)
    j = 0
    for base in sorted(segs):
        size, small, _ = segs[base]
        end, at = base + size, base
        while j < len(addrs) and addrs[j] < base:
            j += 1
        inside = []
        while j < len(addrs) and addrs[j] < end:
            inside.append(addrs[j])
            j += 1
        for k, a in enumerate(inside):
            if a > at:
                free.append((a - at, small))
            nxt = inside[k + 1] if k + 1 < len(inside) else end
            start = max(a, at)
            room = nxt - start
            r = round_size(live[a][0], div)
            if r >= room:
                occ = room
            elif small:
                occ = r
            elif max_split is not None and r >= max_split:
                occ = room if room - r < 20 * MiB else r
            else:
                occ = r if room - r > MiB else room
            at = start + occ
        if at < end:
            free.append((end - at, small))
    total = sum(s for s, _ in free)
    largest = max([s for s, _ in free] or [0])
    for s, small in free:
        if small:
            small_l = max(small_l, s)
        else:
            large_l = max(large_l, s)
    return dict(free=total, largest=largest, small=small_l, large=large_l,
                fragmentation=(1 - largest / total) if total else 0.0)


def real_final_layout(snap, dev):
    """Free space at the end as PyTorch itself recorded it (inactive blocks)."""
    free = [b["size"] for s in snap["segments"] if s["device"] == dev
            for b in s["blocks"] if b["state"] == "inactive"]
    total = sum(free)
    largest = max(free or [0])
    return dict(free=total, largest=largest,
                fragmentation=(1 - largest / total) if total else 0.0)
