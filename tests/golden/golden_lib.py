"""What the golden tests share: running clients under libvramtrace.so on the
simulated GPU, reading `vramtrace report --json` / `dump --json`, and the
independent truth: figures computed from the simulated driver's ledger
(docs/user/SIMULATED_GPU.md), never from the analyzer. Python 3 stdlib only."""
import glob
import json
import os
import subprocess
import sys
import tempfile

MIB = 1 << 20


class GoldenFailure(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise GoldenFailure(msg)


def expect_eq(got, want, what):
    expect(got == want, "%s: report says %r, ledger says %r" % (what, got, want))


# ---- the ledger -----------------------------------------------------------

def _num(text):
    if text in ("(nil)", ""):
        return 0
    try:
        return int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        return text


def read_ledger(path):
    """Every ledger line as a dict, numbers converted, in file order (the
    order of the state changes), with 'line' = its index."""
    out = []
    with open(path) as f:
        for i, line in enumerate(f):
            entry = {k: _num(v) if k not in ("op", "fn", "kind") else v
                     for k, v in (kv.split("=", 1) for kv in line.rstrip("\n").split("\t"))}
            entry["line"] = i
            out.append(entry)
    return out


# ledger kind of an `alloc`/`free` line -> report category
DEVICE_KIND_CATEGORY = {"device": "device", "pitch": "device", "async": "device",
                        "array": "device", "managed": "managed"}


def change_of(e):
    """(category, device, bytes) by which a ledger line changes what the
    process holds, counted in the sizes the program asked for (what the
    report counts), or None. VMM physical memory counts from cuMemCreate to
    the moment the driver really returns it (vmm_phys_free)."""
    if e.get("result") != 0:
        return None
    op = e["op"]
    if op in ("alloc", "free") and e.get("kind") in DEVICE_KIND_CATEGORY:
        sign = 1 if op == "alloc" else -1
        return DEVICE_KIND_CATEGORY[e["kind"]], e["dev"], sign * e["size"]
    if op in ("host_alloc", "host_register"):
        return "host_pinned", -1, e["size"]
    if op in ("host_free", "host_unregister"):
        return "host_pinned", -1, -e["size"]
    if op == "vmm_create":
        return "device", e["dev"], e["size"]
    if op == "vmm_phys_free":
        return "device", e["dev"], -e["size"]
    return None


def running(entries, pids=None, category="device", device=0, upto=None):
    """[(entry, total)] after every change of the category on the device,
    summed over pids (all if None), in ledger order; entries past index
    `upto` (exclusive, a position in `entries`) are left out."""
    total, out = 0, []
    for e in entries[:upto]:
        if pids is not None and e["pid"] not in pids:
            continue
        c = change_of(e)
        if c is None or c[0] != category or c[1] != device:
            continue
        total += c[2]
        out.append((e, total))
    return out


def peak_of(series):
    """(entry, total) where the running total first reached its maximum;
    (None, 0) if nothing was ever held."""
    best = (None, 0)
    for e, total in series:
        if total > best[1]:
            best = (e, total)
    return best


def phase_windows(out):
    """{name: [(open_ns, close_ns)]} from a client's "push NAME NS" /
    "pop NAME NS" lines (CLOCK_MONOTONIC, the ledger's clock)."""
    windows, stack = {}, []
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["push"]:
            stack.append((parts[1], int(parts[2])))
        elif parts[:1] == ["pop"]:
            name, t0 = stack.pop()
            expect(name == parts[1], "client pops %s inside %s" % (parts[1], name))
            windows.setdefault(name, []).append((t0, int(parts[2])))
    expect(not stack and windows, "the client printed no complete phases")
    return windows


def phase_peaks(series, windows):
    """{name: ((total, entry, open_ns), opened)}: a phase's peak is the
    largest running total (a `running` series) within its windows, counting
    the total it opened with (entry None: that opening, at open_ns)."""
    truth = {}
    for name, wins in windows.items():
        best = None
        for t0, t1 in wins:
            before = [total for e, total in series if e["ns"] < t0]
            candidates = [(before[-1] if before else 0, None)] + \
                         [(total, e) for e, total in series if t0 < e["ns"] < t1]
            for total, e in candidates:
                if best is None or total > best[0]:
                    best = (total, e, t0)
        truth[name] = (best, len(wins))
    return truth


def pid_entries(entries, pid):
    return [e for e in entries if e["pid"] == pid]


def next_ns(entries, entry):
    """The time of the ledger line after `entry` in the same process (the
    report's time of an event is taken after the driver's, before the
    process's next call), or infinity."""
    later = [e["ns"] for e in entries if e["pid"] == entry["pid"] and e["line"] > entry["line"]]
    return min(later) if later else float("inf")


def floor_to_unit(ns, unit):
    """A moment as a trace records it: rounded down to the process's time
    unit (report processes[].time_unit_ns)."""
    return ns - ns % unit


def expect_time_of(t, entries, entry, what, unit):
    lo, hi = floor_to_unit(entry["ns"], unit), next_ns(entries, entry)
    expect(lo <= t < hi, "%s: report time %d is not that of ledger line %d (%d..%s, unit %d ns)"
           % (what, t, entry["line"], lo, hi, unit))


# ---- running things ----------------------------------------------------------

class Harness:
    """One test's temporary directory, environment and tools."""

    def __init__(self, args, tmp):
        self.vramtrace = args.vramtrace
        self.lib = args.lib
        self.bindir = args.bindir
        self.preload_first = [p for p in args.preload_first.split(":") if p]
        self.tmp = tmp
        self.ledger = os.path.join(tmp, "ledger.txt")
        self.tracedir = os.path.join(tmp, "traces")
        os.makedirs(self.tracedir)
        self.base_env = dict(os.environ)
        self.base_env.update({
            "LD_LIBRARY_PATH": args.simdir + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
            "VTSIM_LEDGER": self.ledger,
            "VRAMTRACE_OUTPUT": os.path.join(self.tracedir, "trace.%p.vtrace"),
            "VRAMTRACE_LIB": self.lib,
        })
        self.base_env.pop("LD_PRELOAD", None)

    def client(self, name):
        return os.path.join(self.bindir, name)

    def env(self, traced=True, extra=None):
        env = dict(self.base_env)
        if traced:
            env["LD_PRELOAD"] = ":".join(self.preload_first + [self.lib])
        env.update(extra or {})
        return env

    def run(self, argv, traced=True, extra=None):
        proc = subprocess.run(argv, env=self.env(traced, extra), capture_output=True,
                              text=True, timeout=30)
        sys.stderr.write(proc.stderr)
        expect(proc.returncode == 0, "%s exited %d" % (argv, proc.returncode))
        return proc

    def popen(self, argv, traced=True, extra=None):
        return subprocess.Popen(argv, env=self.env(traced, extra), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, bufsize=1)

    def traces(self):
        return sorted(glob.glob(os.path.join(self.tracedir, "*.vtrace")))

    def ledger_entries(self):
        expect(os.path.exists(self.ledger), "the simulated driver wrote no ledger")
        return read_ledger(self.ledger)

    def report(self, paths, extra_args=()):
        proc = subprocess.run([self.vramtrace, "report", "--json"] + list(extra_args) + list(paths),
                              capture_output=True, text=True, timeout=30)
        sys.stderr.write(proc.stderr)
        expect(proc.returncode == 0, "vramtrace report exited %d" % proc.returncode)
        return json.loads(proc.stdout)

    def report_text(self, paths, extra_args=()):
        proc = subprocess.run([self.vramtrace, "report", "--width", "0"] + list(extra_args) +
                              list(paths), capture_output=True, text=True, timeout=30)
        sys.stderr.write(proc.stderr)
        expect(proc.returncode == 0, "vramtrace report exited %d" % proc.returncode)
        return proc.stdout

    def dump(self, path, check=True):
        """The records of a trace; with check=False, [] for a file that is
        not readable (yet)."""
        proc = subprocess.run([self.vramtrace, "dump", "--json", path],
                              capture_output=True, text=True, timeout=30)
        if not check and proc.returncode != 0:
            return []
        sys.stderr.write(proc.stderr)
        expect(proc.returncode == 0, "vramtrace dump %s exited %d" % (path, proc.returncode))
        return [json.loads(l) for l in proc.stdout.splitlines()]


# ---- reading the report -----------------------------------------------------

def report_process(report, pid):
    found = [p for p in report["processes"] if p["pid"] == pid]
    expect(len(found) == 1, "report has %d processes with pid %d" % (len(found), pid))
    return found[0]


def report_ledger(proc, kind="device", device=0):
    """The report's entry for (category, device); None if absent."""
    found = [d for d in proc["devices"] if d["kind"] == kind and
             (d["device"] == device or (device == -1 and d["device"] is None))]
    expect(len(found) <= 1, "report has %d %s ledgers for device %s" % (len(found), kind, device))
    return found[0] if found else None


def innermost_function(frames):
    return frames[0]["function"] if frames else None


def client_pid(entries):
    """The one pid that ran allocations in a single-process scenario."""
    pids = {e["pid"] for e in entries if change_of(e) is not None}
    expect(len(pids) == 1, "expected one process in the ledger, found %s" % sorted(pids))
    return pids.pop()


def run_check(prefix, check, name=None):
    """A check script's exit status: check(tmp) in a fresh temporary
    directory, "ok: " + what it returns on stdout, or the failure on stderr."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        try:
            print("ok: " + check(tmp))
        except (GoldenFailure, subprocess.TimeoutExpired) as e:
            print("FAIL: %s%s" % (name + ": " if name else "", e), file=sys.stderr)
            return 1
    return 0
