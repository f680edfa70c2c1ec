#!/usr/bin/env python3
"""One voice in every view: the sites at the peak of three
examples on the simulated GPU - examples/deepspeed_init_oom.c (a failed
allocation), examples/python_phases.py (CUDA through ctypes: libffi and
CPython's native frames under the program's Python) and
examples/train_eval_phases.c at two sizes (for `diff`) - are named by the
same frame, the program's own innermost one ("tensor
(deepspeed_init_oom.c:47)", "empty (python_phases.py:65)"), in

  - the text report's site rows and its failure's "at:" line (--width 0),
  - `vramtrace diff`'s rows (the site of each row as its --json names it),
  - the HTML page's labels: report.js's siteLabel/ownFrames rule applied to
    the JSON embedded in the page (its "folded" flags),
  - the summary's failures' user_frame (report --summary),
  - the folded export's tip frame (root first, the site's frame last),
  - the Perfetto export's failure "site" and peak "top_site" args;

and no view names a site by a folded frame: the name is never a frame the
report flags folded (runtime, ffi_call, _PyEval...), and its file is the
example's own source.

    check_one_naming.py --build BUILD --src SRC [--preload-first LIBS] [--tamper]

--tamper breaks one view on purpose (the folded export's tip made the
runtime's cudaMalloc again, as a view once did): the check must then
fail (its `_tamper` test).
"""
import collections
import json
import os
import re
import subprocess
import sys

from export_common import parse_args, passed, run_example, export, format_bytes

args = parse_args()
failures = []

# "name (file:line)": the first one on a row is the site's name there.
FRAME = re.compile(r"([^\s()<][^\s()]*|<module>) \(([^\s()]+:\d+)\)")
# Frames that may never name a site, whatever the classifier says.
FOREIGN = re.compile(r"^(ffi_call|libffi|_ctypes|PyCFuncPtr|_PyObject|_PyEval|PyEval|cuda|cu[A-Z]"
                     r"|malloc_async|__libc|_start|start_thread)")


def fail(msg):
    failures.append(msg)


def same(what, got, want):
    if got != want:
        fail("%s: %r, but %r" % (what, got, want))


def frame_name(f):
    """report.js's frameName."""
    name = f.get("function") or ("%s+0x%x" % (f["module"], f.get("ip") or 0) if f.get("module")
                                 else "0x%x" % (f.get("ip") or 0))
    if f.get("file"):
        name += " (%s%s)" % (f["file"].split("/")[-1], ":%d" % f["line"] if f.get("line") else "")
    return name


def page_site_name(frames):
    """report.js's siteLabel, its first frame: ownFrames (not folded; the
    Python frames only where the stack has any)."""
    py = any(f.get("module") == "python" for f in frames)
    own = [f for f in frames if not f.get("folded") and (not py or f.get("module") == "python")]
    return frame_name(own[0]) if own else None


def first_frame(text):
    m = FRAME.search(text)
    return "%s (%s)" % (m.group(1), m.group(2)) if m else None


def vt(run, *argv):
    p = subprocess.run([run.vramtrace] + list(argv), env=run.env, capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail("vramtrace %s exited %d: %s" % (" ".join(argv), p.returncode, p.stderr.strip()))
    return p.stdout


def page_report(run):
    """The report JSON embedded in `report --html`'s page. A build without
    the chart libraries writes no page ("npm ci"): then `report --json`,
    the document the page embeds unchanged."""
    page = os.path.join(run.tmp, "page.html")
    p = subprocess.run([run.vramtrace, "report", "--top", "1000", "--html", page, run.traces],
                       env=run.env, capture_output=True, text=True, timeout=120)
    if p.returncode == 2 and "npm ci" in p.stderr:
        print("note: no chart libraries in this build: the page's JSON from report --json")
        return json.loads(vt(run, "report", "--top", "1000", "--json", run.traces) or "{}")
    if p.returncode != 0:
        fail("report --html exited %d: %s" % (p.returncode, p.stderr.strip()))
    try:
        with open(page) as f:
            m = re.search(r'id="vt-report">(.*?)</script>', f.read(), re.S)
        return json.loads(m.group(1))
    except (OSError, AttributeError, ValueError) as e:
        fail("the page's report JSON: %s" % e)
        return {"processes": []}


def text_rows(text):
    """(bytes, site name) of the text report's rows at the peak."""
    rows, inside = [], False
    for line in text.splitlines():
        if "top stacks then:" in line:
            inside = True
            continue
        if inside:
            m = re.match(r"^\s+([\d.]+ [KMGT]?i?B)\s+\d+\s+(.*)$", line)
            if m:
                rows.append((m.group(1), first_frame(m.group(2))))
            elif "bytes" not in line:
                inside = False
    return rows


def check_name(where, name, folded, source):
    """A site's name: not a folded frame, in the example's own source."""
    if name is None:
        fail("%s: no name" % where)
        return
    fn, _, loc = name.partition(" (")
    if name in folded or FOREIGN.match(fn):
        fail("%s: named by a folded frame %r" % (where, name))
    if not loc.startswith(source + ":"):
        fail("%s: %r is not in the example's %s" % (where, name, source))


def check(run, source):
    """Every view of run's traces names its sites at the peak alike."""
    rep = page_report(run)
    folded_labels = set()
    page, page_fail = collections.Counter(), []
    for p in rep["processes"]:
        for d in p["devices"]:
            if d["kind"] != "device":
                continue
            for row in d.get("peak_breakdown", []):
                folded_labels |= {frame_name(f) for f in row["frames"] if f.get("folded")}
                page[(row["bytes"], page_site_name(row["frames"]))] += 1
            for o in d.get("ooms", []):
                if o.get("frames"):
                    page_fail.append(page_site_name(o["frames"]))
    if not page:
        fail("%s: the page lists no site at the peak" % source)
    for (_, name) in page:
        check_name("%s: the page" % source, name, folded_labels, source)

    # The text report, whole lines.
    text = vt(run, "report", "--top", "1000", "--width", "0", run.traces)
    same("%s: the text report's rows (bytes, name) vs the page's" % source,
         sorted(collections.Counter(text_rows(text)).items()),
         sorted(collections.Counter({(format_bytes(b), n): c for (b, n), c in page.items()})
                .items()))
    text_fail = [first_frame(l) for l in text.splitlines() if l.strip().startswith("at: ")]

    # The folded export at the peak: its tip names the site.
    out = export(run, "folded")
    if out.returncode != 0:
        fail("%s: export --format folded exited %d" % (source, out.returncode))
    lines = out.stdout.splitlines()
    if args.tamper:  # the tip as it was: the runtime's frame
        lines = [re.sub(r" (\d+)$", r";cudaMalloc (simcudart_api.c:52) \1", l) for l in lines]
    folded = collections.Counter()
    for l in lines:
        stack, _, count = l.rpartition(" ")
        folded[(int(count), stack.split(";")[-1])] += 1
    same("%s: the folded export's (bytes, tip) vs the page's (bytes, name)" % source,
         sorted(folded.items()), sorted(page.items()))

    # Perfetto: the peak's top site, each failure's site.
    pf = export(run, "perfetto")
    events = json.loads(pf.stdout).get("traceEvents", []) if pf.returncode == 0 else []
    peaks = [e["args"] for e in events if e.get("ph") == "i" and e["name"].startswith("peak ")]
    top = max((b for b, _ in page), default=0)
    tops = {n for b, n in page if b == top}
    if not peaks or any(a.get("top_site") not in tops or a.get("top_site_bytes") != top
                        for a in peaks):
        fail("%s: Perfetto's peak names %r, the page's largest sites are %r (%d bytes)"
             % (source, [(a.get("top_site"), a.get("top_site_bytes")) for a in peaks], tops, top))
    pf_fail = [e["args"].get("site") for e in events
               if e.get("ph") == "i" and e["name"].startswith("allocation failed")]

    # The summary's failures.
    summary = os.path.join(run.tmp, "node.summary.json")
    vt(run, "report", "--summary", summary, run.traces)
    try:
        with open(summary) as f:
            jobs = json.load(f).get("jobs", [])
    except (OSError, ValueError) as e:
        fail("%s: the summary: %s" % (source, e))
        jobs = []
    sum_fail = [x.get("user_frame") for j in jobs for x in j.get("failures", [])]
    same("%s: failures named by the summaries' user_frame vs the text report's 'at:'" % source,
         sum_fail, text_fail)
    same("%s: failures named by Perfetto's 'site' vs the text report's 'at:'" % source,
         pf_fail, text_fail)
    if page_fail:
        same("%s: failures named by the page vs the text report's 'at:'" % source,
             page_fail, text_fail)
    for name in text_fail:
        check_name("%s: a failure" % source, name, folded_labels, source)
    return folded_labels, {n for _, n in page}, len(text_fail)


# Example 3: one failed allocation; the sites through one helper, tensor().
ds = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                        "{build}/examples/deepspeed_init_oom"], expect_status=1)
_, ds_names, ds_failures = check(ds, "deepspeed_init_oom.c")
same("deepspeed_init_oom: failures seen in the text report", ds_failures, 1)
same("deepspeed_init_oom: the sites' name", ds_names, {"tensor (deepspeed_init_oom.c:47)"})

# Example 6: Python through ctypes; its own Python frame names the site.
py = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                        sys.executable, "{src}/examples/python_phases.py"], phase_log=True)
_, py_names, _ = check(py, "python_phases.py")
same("python_phases: the sites' name", py_names, {"empty (python_phases.py:65)"})

# Example 1 at two sizes: `diff` names each row's site as the rest do.
small, big = [run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                                 "{build}/examples/train_eval_phases", "--scale", s],
                          phase_log=True) for s in ("1.0", "1.2")]
folded_labels, _ = check(small, "train_eval_phases.c")[:2]
labels, big_names, _ = check(big, "train_eval_phases.c")
folded_labels |= labels
dirs = [small.traces, big.traces]
d = json.loads(vt(big, "diff", "--json", "--top", "0", *dirs) or "{}")
want = []
for u in d.get("units", []):
    for s in u["sites"]:
        if s["status"] == "same":
            continue
        frames = s["frames"].split(" <- ")
        want.append(next((f for f in frames if f not in folded_labels), None))
got = []
for line in vt(big, "diff", "--top", "0", "--width", "0", *dirs).splitlines():
    if re.match(r"^\s+[-+][\d.]+ [KMGT]?i?B\s", line) and " via " in line:
        got.append(first_frame(line))
if not want:
    fail("diff: no site changed between --scale 1.0 and 1.2")
same("diff: each row's name vs the first of its frames the report does not fold", got, want)
for name in got:
    check_name("diff", name, folded_labels, "train_eval_phases.c")
if not set(got) <= big_names:
    fail("diff names %r, the report %r" % (set(got), big_names))

if failures:
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    sys.exit(1)
passed()
print("ok: every view names the sites alike")
