#!/usr/bin/env python3
"""Offline symbolization: the report made on "another machine", where the
traced binary is not at its recorded path, found through --sysroot (the
binary under the sysroot at its absolute path) or --debug-dir (separate
debug info by build-id for a stripped binary; or the binary itself by its
file name), and what the report shows when neither finds it.

    check_offline_symbols.py --vramtrace BIN --lib LIBVRAMTRACE --simdir DIR
        --client SYM_CLIENT --source SYM_CLIENT_C --objcopy P --strip P --readelf P
        [--preload-first PATHS]

The expected frames are independent of the analyzer: function names from
sym_client.c's structure, line numbers from its "@site NAME" markers, the
build-id from `readelf -n`, the sizes live at the peak from the simulated
driver's ledger. tests/analyzer/test_symbolize.c covers the symbolizer on a
binary at its own path (lines, inlining, a build-id mismatch); this covers
finding the file."""
import argparse
import os
import re
import shutil
import subprocess
import sys

TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [os.path.join(TESTS, "golden"), os.path.join(TESTS, "examples")]
from golden_lib import (Harness, client_pid, expect, expect_eq, report_ledger,  # noqa: E402
                        report_process, run_check)
from ledger_truth import Ledger  # noqa: E402

MIB = 1 << 20
NAME = "sym_client"
# sym_client.c: each site's frames, innermost first, as (function, marker
# of the line shown, inlined), and the MiB it allocates.
SITES = {
    24: [("reserve", "reserve", True), ("fill_layer", "fill_layer", False),
         ("build_model", "build_model", False), ("main", "main>build_model", False)],
    8: [("scratch_buffer", "scratch_buffer", False), ("main", "main>scratch_buffer", False)],
}


def marker_lines(source):
    """{marker: line number} of the "@site NAME" comments."""
    lines = {}
    with open(source) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"/\* @site (\S+) \*/", text)
            if m:
                expect(m.group(1) not in lines, "marker %s twice" % m.group(1))
                lines[m.group(1)] = number
    return lines


def tool(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    expect(proc.returncode == 0, "%s exited %d: %s" % (argv, proc.returncode, proc.stderr))
    return proc.stdout


class Case:
    def __init__(self, args, h, source):
        self.args, self.h = args, h
        lines = marker_lines(source)
        base = os.path.basename(source)
        self.want = {mib * MIB: [(fn, base, lines[marker], inlined) for fn, marker, inlined in frames]
                     for mib, frames in SITES.items()}

    def client_frames(self, report):
        """{bytes: the peak breakdown row's leading frames in the client}."""
        proc = report_process(report, self.pid)
        rows = report_ledger(proc)["peak_breakdown"]
        got = {}
        for row in rows:
            expect(row["count"] == 1 and row["bytes"] not in got, "breakdown rows: %s" % rows)
            frames = []
            for f in row["frames"]:
                if f["module"] != NAME:
                    break
                frames.append(f)
            got[row["bytes"]] = frames
        return got

    def symbolized(self, what, extra):
        got = {b: [(f["function"], f["file"] and os.path.basename(f["file"]), f["line"],
                    f["inlined"]) for f in frames]
               for b, frames in self.client_frames(self.h.report([self.trace], extra)).items()}
        expect(got == self.want, "%s: {bytes: [(function, file, line, inlined)]}: report says "
               "%r, sym_client.c says %r" % (what, got, self.want))

    def unsymbolized(self, what, extra):
        """Each frame in the client a bare address of module sym_client
        (JSON nulls, `sym_client+0xOFFSET` in the text report)."""
        got = self.client_frames(self.h.report([self.trace], extra))
        expect_eq(sorted(got), sorted(self.want), "%s: bytes of the breakdown rows" % what)
        proc = subprocess.run([self.args.vramtrace, "report"] + extra + [self.trace],
                              capture_output=True, text=True, timeout=30)
        expect(proc.returncode == 0, "%s: text report exited %d" % (what, proc.returncode))
        for b, frames in got.items():
            # inlining is not known without debug info: one frame per address
            expect_eq(len(frames), len(self.want[b]) - sum(w[3] for w in self.want[b]),
                      "%s: number of client frames of the %d-byte site" % (what, b))
            for f in frames:
                expect(self.module["start"] <= f["ip"] - 1 < self.module["end"],
                       "%s: ip 0x%x is not in %s" % (what, f["ip"], NAME))
                expect_eq([f["function"], f["file"], f["line"], f["inlined"]],
                          [None, None, None, False], "%s: frame 0x%x" % (what, f["ip"]))
                where = "%s+0x%x" % (NAME, f["ip"] - self.module["load_bias"])
                expect(where in proc.stdout, "%s: the text report does not say %s" % (what, where))

    def run(self, tmp):
        a, h = self.args, self.h
        run_dir = os.path.join(tmp, "run")
        os.makedirs(run_dir)
        binary = os.path.join(run_dir, NAME)
        shutil.copy2(a.client, binary)
        h.run([binary])
        traces = h.traces()
        expect(len(traces) == 1, "%d traces" % len(traces))
        self.trace = traces[0]

        self.pid = client_pid(h.ledger_entries())
        ledger = Ledger(h.ledger)
        expect_eq(ledger.live_sizes_at(ledger.peaks[(self.pid, 0, "device")][1], self.pid),
                  sorted(self.want), "scenario: sizes live at the peak")

        notes = tool([a.readelf, "-n", binary])
        m = re.search(r"Build ID: ([0-9a-f]+)", notes)
        expect(m, "%s has no build-id" % binary)
        build_id = m.group(1)
        modules = [r for r in h.dump(self.trace) if r["type"] == "module" and r["path"] == binary]
        expect(len(modules) == 1, "the trace has %d module records of %s" % (len(modules), binary))
        self.module = modules[0]
        expect_eq(self.module["build_id"], build_id, "recorded build-id")

        self.symbolized("at the recorded path", [])

        # another machine, (a): the binary only under a sysroot
        sysroot = os.path.join(tmp, "sysroot")
        moved = sysroot + binary
        os.makedirs(os.path.dirname(moved))
        shutil.move(binary, moved)
        expect(not os.path.exists(binary), "the recorded binary is still there")
        self.unsymbolized("binary absent, no options", [])
        self.symbolized("--sysroot", ["--sysroot", sysroot])

        # (b): a stripped binary at the recorded path, its debug info by build-id
        debug_dir = os.path.join(tmp, "debug")
        debug_file = os.path.join(debug_dir, ".build-id", build_id[:2], build_id[2:] + ".debug")
        os.makedirs(os.path.dirname(debug_file))
        tool([a.objcopy, "--only-keep-debug", moved, debug_file])
        shutil.copy2(moved, binary)
        tool([a.strip, "--strip-all", binary])
        sections = tool([a.readelf, "-S", "-W", binary])
        expect(".debug_info" not in sections and ".symtab" not in sections,
               "strip left debug info or a symbol table")
        expect(".debug_info" in tool([a.readelf, "-S", "-W", debug_file]), "no debug info kept")
        shutil.rmtree(sysroot)
        self.unsymbolized("stripped binary, no options", [])
        self.unsymbolized("stripped binary, --sysroot of nothing", ["--sysroot", sysroot])
        self.symbolized("stripped binary, --debug-dir", ["--debug-dir", debug_dir])
        self.symbolized("stripped binary, two --debug-dir",
                        ["--debug-dir", os.path.join(tmp, "nothing"), "--debug-dir", debug_dir])

        # (c): no binary at the recorded path; an unstripped one by file name
        os.unlink(binary)
        flat = os.path.join(tmp, "flat")
        os.makedirs(flat)
        shutil.copy2(a.client, os.path.join(flat, NAME))
        self.unsymbolized("binary absent, --debug-dir without it", ["--debug-dir", debug_dir])
        self.symbolized("--debug-dir holding the binary", ["--debug-dir", flat])
        return "frames of 2 sites found by --sysroot and by --debug-dir (build-id %s)" % build_id


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--vramtrace", "--lib", "--simdir", "--client", "--source", "--objcopy",
                "--strip", "--readelf"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--preload-first", default="")
    args = ap.parse_args()
    os.environ.pop("DEBUGINFOD_URLS", None)  # never ask the network for debug info
    args.bindir = os.path.dirname(args.client)
    return run_check("vt-symbols-", lambda tmp: Case(args, Harness(args, tmp), args.source).run(tmp))


if __name__ == "__main__":
    sys.exit(main())
