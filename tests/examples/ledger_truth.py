"""The ground truth of an example run, from the simulated driver's ledger
(docs/user/SIMULATED_GPU.md) and, for phases, from the example's own phase log
(examples/example_phases.h). Nothing here reads a trace or asks the analyzer.

Figures follow docs/user/REPORT.md's definitions: a process's bytes in a ledger
(pid, device, category) are the requested sizes of its live allocations;
peaks are checked after every successful allocation.
"""

DEVICE_KINDS = {"device": "device", "pitch": "device", "async": "device",
                "array": "device", "managed": "managed"}
MiB = 1 << 20


def parse_line(line):
    return dict(f.split("=", 1) for f in line.rstrip("\n").split("\t") if "=" in f)


def format_bytes(n):
    """The report's own unit convention ("28.25 MiB"), written independently:
    two decimals, a half rounded away from zero on the exact value (Python's
    "%.2f" would round 11.625 to even, "11.62"; the report says "11.63")."""
    if n < 1024:
        return "%d B" % n
    units, u, div = ["KiB", "MiB", "GiB", "TiB", "PiB"], 0, 1024
    while n >= div * 1024 and u < 4:
        div *= 1024
        u += 1
    hundredths = (n * 200 + div) // (2 * div)  # floor(n * 100 / div + 1/2), exactly
    return "%d.%02d %s" % (hundredths // 100, hundredths % 100, units[u])


class Ledger:
    """Replays the ledger in file order (the order of the state changes)."""

    def __init__(self, path, phantom_bytes=0):
        with open(path) as f:
            self.lines = [parse_line(l) for l in f if l.strip()]
        # --tamper: a phantom allocation every process holds from its first
        # line on. A golden test run against it must fail.
        self.phantom = phantom_bytes
        self.pids = []
        for e in self.lines:
            if int(e["pid"]) not in self.pids:
                self.pids.append(int(e["pid"]))
        self._replay()

    @staticmethod
    def ledger_key(e):
        """(device, category) of an allocation/free line, or None."""
        op = e["op"]
        if op in ("alloc", "free"):
            cat = DEVICE_KINDS.get(e.get("kind"))
            return (int(e["dev"]), cat) if cat else None
        if op in ("host_alloc", "host_free", "host_register", "host_unregister"):
            return (-1, "host_pinned")
        return None

    def _replay(self):
        live = {}          # (pid, addr) -> (key, size)
        totals = {}        # (pid, dev, cat) -> bytes
        self.peaks = {}    # (pid, dev, cat) -> (bytes, line index)
        self.after = []    # totals after each line (copy only where changed)
        self.charged = {}  # (pid, dev) -> driver bytes (sum of delta, contexts too)
        self.charged_after = []
        self.counts = {}   # (pid, dev, cat, op) -> successful allocations / frees that ended one
        seen = set()
        for i, e in enumerate(self.lines):
            pid = int(e["pid"])
            if pid not in seen and self.phantom:
                seen.add(pid)
                k = (pid, 0, "device")
                totals[k] = totals.get(k, 0) + self.phantom
            if "delta" in e and e.get("dev", "-1") != "-1":
                ck = (pid, int(e["dev"]))
                self.charged[ck] = self.charged.get(ck, 0) + int(e["delta"])
            key = self.ledger_key(e)
            if key and int(e["result"]) == 0:
                full = (pid,) + key
                if e["op"] in ("alloc", "host_alloc", "host_register"):
                    live[(pid, e["addr"])] = (full, int(e["size"]))
                    totals[full] = totals.get(full, 0) + int(e["size"])
                    self.counts[full + ("alloc",)] = self.counts.get(full + ("alloc",), 0) + 1
                    if totals[full] > self.peaks.get(full, (-1, 0))[0]:
                        self.peaks[full] = (totals[full], i)
                else:
                    old = live.pop((pid, e["addr"]), None)
                    if old:
                        totals[old[0]] -= old[1]
                        self.counts[old[0] + ("free",)] = self.counts.get(old[0] + ("free",), 0) + 1
            self.after.append(dict(totals))
            self.charged_after.append(dict(self.charged))

    # ---- figures ------------------------------------------------------

    def peak(self, pid, dev=0, cat="device"):
        return self.peaks.get((pid, dev, cat), (0, None))[0]

    def alloc_count(self, pid, dev=0, cat="device"):
        return self.counts.get((pid, dev, cat, "alloc"), 0)

    def free_count(self, pid, dev=0, cat="device"):
        """Frees that ended a live allocation of pid in (dev, cat)."""
        return self.counts.get((pid, dev, cat, "free"), 0)

    def total_at(self, i, pid, dev=0, cat="device"):
        return self.after[i].get((pid, dev, cat), 0)

    def final(self, pid, dev=0, cat="device"):
        return self.after[-1].get((pid, dev, cat), 0) if self.after else 0

    def charged_peak(self, pid, dev=0):
        """The largest of what the driver held for pid on dev, allocations
        and contexts together (what nvidia-smi shows), in ledger order."""
        return max((c.get((pid, dev), 0) for c in self.charged_after), default=0)

    def context_bytes(self, pid, dev=0):
        return sum(int(e["delta"]) for e in self.lines
                   if int(e["pid"]) == pid and e["op"].startswith("ctx_") and int(e["dev"]) == dev)

    def failures(self, pid):
        """Each failed device allocation of pid, with what the driver said
        right after it (the tracer's cuMemGetInfo is the next getinfo line
        of that thread) and what the ledger says everybody held."""
        out = []
        for i, e in enumerate(self.lines):
            if int(e["pid"]) != pid or e["op"] != "alloc" or int(e["result"]) == 0:
                continue
            dev = int(e["dev"])
            info = next((g for g in self.lines[i + 1:] if g["op"] == "getinfo" and
                         g["pid"] == e["pid"] and g["tid"] == e["tid"]), None)
            charged = self.charged_after[i]
            others = {p: b for (p, d), b in charged.items() if d == dev and p != pid and b}
            ns = int(e["ns"])
            later = [g for g in self.lines[i + 1:] if int(g["ns"]) - ns <= 1_000_000_000
                     and int(g["pid"]) == pid and self.ledger_key(g) == (dev, "device")]
            released = [g for g in later if g["op"] == "free" and int(g["result"]) == 0]
            retry = next((g for g in later if g["op"] == "alloc" and g["size"] == e["size"]), None)
            out.append({
                "index": i,
                "requested": int(e["size"]),
                "free": int(info["free"]) if info else None,
                "total": int(info["total"]) if info else None,
                "process_bytes": self.total_at(i, pid, dev),
                "others": others,
                "context": self.context_bytes(pid, dev),
                "released": sum(int(g["size"]) for g in released),
                "released_count": len(released),
                "retry": "not_seen" if retry is None else
                         ("succeeded" if int(retry["result"]) == 0 else "failed"),
            })
        return out

    def combined_peak(self, dev, pids):
        """The largest sum of the pids' device bytes on dev, in ledger order,
        and what each held then."""
        best, at = -1, None
        for i, t in enumerate(self.after):
            s = sum(t.get((p, dev, "device"), 0) for p in pids)
            if s > best:
                best, at = s, i
        return best, {p: self.after[at].get((p, dev, "device"), 0) for p in pids}

    def phase_peaks(self, pid, phase_log, dev=0, cat="device"):
        """{name: (peak bytes, ledger line)} while a range of that name was open, from the
        example's phase log (push/pop per thread, CLOCK_MONOTONIC ns)."""
        events = []
        with open(phase_log) as f:
            for line in f:
                w = line.split()
                if w[0] == "push":
                    events.append((int(w[2]), "push", w[1], w[3]))
                else:
                    events.append((int(w[1]), "pop", None, w[2]))
        events.sort(key=lambda x: x[0])
        mine = [(int(e["ns"]), i) for i, e in enumerate(self.lines) if int(e["pid"]) == pid]
        stacks, open_count, peaks = {}, {}, {}
        li = 0
        current, at = 0, None

        def raise_peak(n):
            if current > peaks.get(n, (-1, None))[0]:
                peaks[n] = (current, at)

        for ns, kind, name, tid in events:
            # ledger lines before this phase event
            while li < len(mine) and mine[li][0] < ns:
                at = mine[li][1]
                current = self.total_at(at, pid, dev, cat)
                for n, c in open_count.items():
                    if c:
                        raise_peak(n)
                li += 1
            if kind == "push":
                stacks.setdefault(tid, []).append(name)
                open_count[name] = open_count.get(name, 0) + 1
                raise_peak(name)
            elif stacks.get(tid):
                n = stacks[tid].pop()
                open_count[n] -= 1
        return peaks

    def live_sizes_at(self, i, pid, dev=0, cat="device"):
        """Sizes of pid's live allocations right after ledger line i."""
        live = {}
        for e in self.lines[:i + 1]:
            if int(e["pid"]) != pid or self.ledger_key(e) != (dev, cat) or int(e["result"]):
                continue
            if e["op"] in ("alloc", "host_alloc", "host_register"):
                live[e["addr"]] = int(e["size"])
            else:
                live.pop(e["addr"], None)
        return sorted(live.values())


def verdict_rule(requested, free, total, process, cached=0, context=0):
    """docs/internals/REPORT_INTERNALS.md's decision table ("Verdicts"), written independently
    of the analyzer: the first row that holds. `process` is this process's
    bytes on the device (live and cached), `cached` the part its allocator
    released before retrying (0: unknown), `context` its measured contexts
    (0: unknown; they then count with the others)."""
    cached = min(cached, process)
    others = max(total - free - process - context, 0)
    shortfall = requested - free - cached
    if requested > total:
        return "larger_than_device"
    if shortfall <= 0:
        return "fragmented"
    if others >= shortfall and others > process - cached:
        return "contended"
    if requested > process + context:
        return "oversized"
    return "exhausted"
