#!/usr/bin/env python3
"""`vramtrace diff` of a program against itself after a refactor, and a
gate on a phase's peak (tests/export/diff_prog.c, built three times: as
written, with its lines moved, with a function and a file renamed; the
same allocations, byte for byte).

- Lines moved: the diff reads clean - no site new, gone, grown or shrunk,
  exit status 0 under --fail-above 0% - each site shown at its new line;
  every site's bytes add up to the driver's ledger's peak on both sides.
- Renamed: every site is paired with its old self and said renamed
  (function load_weights -> fetch_weights, file diff_prog.c ->
  diff_prog_io.c); none new or gone.
- A phase that grows while the process's peak does not (step: 2 GiB +
  1024 MiB -> 2 GiB + 1496 MiB, the process's 4 GiB in load unchanged):
  --fail-above just under the phase's growth exits 1 and names the phase,
  just over it exits 0, as a share and as a size.
- In a 100-column pipe no new or gone row reads like another row."""
import json
import os
import re
import subprocess

from export_common import parse_args, run_example, format_bytes

args = parse_args()
MiB = 1 << 20


def traced(prog, step_mib):
    return run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                              "{build}/tests/export/" + prog, str(step_mib)])


base, moved, renamed, grown = (traced("diff_prog", 1024), traced("diff_prog_moved", 1024),
                               traced("diff_prog_renamed", 1024), traced("diff_prog", 1496))
run = base  # failures are collected here


def diff(*argv):
    return subprocess.run([run.vramtrace, "diff"] + list(argv), env=run.env,
                          capture_output=True, text=True, timeout=60)


def peak(r):
    pids = r.traced_pids()
    return r.ledger.peak(pids[0]) if pids else None


def diff_json(what, a, b, *opts):
    d = diff("--json", "--top", "0", *opts, a.traces, b.traces)
    if d.returncode not in (0, 1):
        run.fail("%s: diff --json exited %d: %s" % (what, d.returncode, d.stderr))
        return {"units": []}, d.returncode
    return json.loads(d.stdout), d.returncode


def one_unit(what, doc, a, b):
    units = doc["units"]
    run.equal("%s: units" % what, [u["name"] for u in units], ["device 0"])
    u = units[0] if units else {"sites": [], "phases": []}
    run.equal("%s: peaks" % what, (u.get("before_peak_bytes"), u.get("after_peak_bytes")),
              (peak(a), peak(b)))
    run.equal("%s: sites' before bytes add up" % what,
              sum(s["before_bytes"] for s in u["sites"]), peak(a))
    run.equal("%s: sites' after bytes add up" % what,
              sum(s["after_bytes"] for s in u["sites"]), peak(b))
    return u


def rows_alike(what, text):
    """Site rows whose stack reads like another row's, in a 100-column pipe."""
    rows = [l for l in text.splitlines()
            if re.match(r"^\s+[-+ ][\d.]+ [KMGT]?i?B\s", l) and " via " in l]
    stacks = [re.split(r"\s(?:new|gone|grew|shrank|same)\s+", l, maxsplit=1)[-1] for l in rows]
    for i, s in enumerate(stacks):
        if (" new " in rows[i] or " gone " in rows[i]) and stacks.count(s) > 1:
            run.fail("%s: a new or gone row reads like another in 100 columns:\n%s"
                     % (what, "\n".join(rows)))
            return


# Lines moved: clean.
doc, status = diff_json("moved", base, moved, "--fail-above", "0%")
run.equal("moved: exit status under --fail-above 0%", status, 0)
u = one_unit("moved", doc, base, moved)
run.equal("moved: sites not the same", [(s["status"], s["frames"]) for s in u["sites"]
                                        if s["status"] != "same"], [])
run.equal("moved: sites", sorted(s["after_bytes"] for s in u["sites"]),
          [512 * MiB, 1536 * MiB, 2048 * MiB])
lines = {}  # each site's caller's line, before and after
for s in u["sites"]:
    for side in ("before_frames", "frames"):
        m = re.search(r"(?:load_weights|stage_inputs) \(diff_prog\.c:(\d+)\)", s.get(side) or "")
        lines.setdefault(s["after_bytes"], []).append(int(m.group(1)) if m else None)
shifts = {b: (l[1] - l[0]) if None not in l else None for b, l in lines.items()}
# every line moved down; from the second allocation of load_weights on
# (stage_inputs is defined last), further
if not (shifts.get(1536 * MiB) and (shifts.get(512 * MiB) or 0) > shifts[1536 * MiB] and
        shifts.get(2048 * MiB) == shifts[512 * MiB]):
    run.fail("moved: each site's line before and after (before_frames, frames): %r" % lines)
text = diff("--fail-above", "0%", base.traces, moved.traces)
if "call sites at the peak: no change" not in text.stdout or text.returncode != 0:
    run.fail("moved: the text is not clean (exit %d):\n%s" % (text.returncode, text.stdout))
rows_alike("moved", text.stdout)

# Renamed: paired, said as renamed.
doc, status = diff_json("renamed", base, renamed)
u = one_unit("renamed", doc, base, renamed)
got = sorted((s["after_bytes"], s["status"], [(r["what"], r["before"], r["after"])
                                              for r in s.get("renamed") or []])
             for s in u["sites"])
run.equal("renamed: sites, their status and renames", got,
          [(512 * MiB, "same", [("function", "load_weights", "fetch_weights")]),
           (1536 * MiB, "same", [("function", "load_weights", "fetch_weights")]),
           (2048 * MiB, "same", [("file", "diff_prog.c", "diff_prog_io.c")])])
text = diff(base.traces, renamed.traces).stdout
for words in ("renamed: function load_weights -> fetch_weights",
              "renamed: file diff_prog.c -> diff_prog_io.c"):
    if words not in text:
        run.fail("renamed: the text does not say %r:\n%s" % (words, text))
if re.search(r"\s(new|gone)\s", text):
    run.fail("renamed: rows new or gone:\n%s" % text)
rows_alike("renamed", text)

# A phase's growth under the process's unchanged peak.
step_before, step_after = 2048 * MiB + 1024 * MiB, 2048 * MiB + 1496 * MiB
doc, status = diff_json("phase", base, grown, "--fail-above", "5%")
u = one_unit("phase", doc, base, grown)
run.equal("phase: the process's peak did not move", u.get("change_bytes"), 0)
steps = [p for p in u.get("phases", []) if p["name"] == "step"]
run.equal("phase: step's peaks", [(p["before_peak_bytes"], p["after_peak_bytes"], p.get("above_limit"))
                                  for p in steps], [(step_before, step_after, True)])
run.equal("phase: --fail-above 5%: exit status", status, 1)
run.equal("phase: what failed", doc.get("fail_above", {}).get("failed"),
          [{"unit": "device 0", "phase": "step", "before_peak_bytes": step_before,
            "after_peak_bytes": step_after}])
grow = step_after - step_before
pct = grow * 100.0 / step_before
for limit, want in [("%.3f%%" % (pct - 0.01), 1), ("%.3f%%" % (pct + 0.01), 0),
                    ("%dB" % (grow - 1), 1), ("%dB" % grow, 0)]:
    r = diff("--fail-above", limit, base.traces, grown.traces)
    run.equal("phase: --fail-above %s: exit status (step grew %d bytes, %.3f%%)"
              % (limit, grow, pct), r.returncode, want)
text = diff("--fail-above", "5%", base.traces, grown.traces).stdout
want = "device 0 phase step: %s -> %s" % (format_bytes(step_before), format_bytes(step_after))
if want not in text or not re.search(r"^\s+step\s.*\*\* above --fail-above \*\*", text, re.M):
    run.fail("phase: the text does not name the phase that failed (%r):\n%s" % (want, text))
run.finish()  # the figures first: under --tamper they must fail
for r in (moved, renamed, grown):
    r.finish()
