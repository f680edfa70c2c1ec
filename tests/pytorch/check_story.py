"""The failures a new PyTorch user meets first (story_train.py), told by the
report from the allocator's samples (docs/user/PYTORCH.md, "Allocator
samples"), checked against independent truth: what the stand-in's caching
allocator itself said (the program's own lines), the step the same leak
really fails at, the simulated driver's view in the program (mem_get_info).
Cases of check_torch.py:

  story_leak       a leak through 20 MiB segments: its rate, first step,
                   site and fill step (the report's and top's GROWTH/STEP); the driver's own phase growth null
                   (segments: never three rising closings in a row); the
                   same leak run into its OOM: the failure names the growth
                   first; a steady run with a warm-up: no growth, and the
                   largest sample's reserved bytes are the stand-in's
  story_neighbour  two ranks on one GPU (VTSIM_SHARED), rank 1 leaking,
                   rank 0 failing: contended, naming rank 1, its pid, its
                   bytes and its growth
  story_nccl       libnccl.so.2's own cuMemAlloc fails after training
                   filled PyTorch's cache: starved_by_cache, its next step
"""
import os
import re
import subprocess

import growth_truth
from ledger_truth import format_bytes
from report_schema import schema_errors

MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "standin", "site-packages")
PROGRAM = os.path.join(HERE, "story_train.py")


def steps_of(stdout):
    """The stand-in allocator's own figures after each optimizer step."""
    out = []
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 6 and f[0] == "step" and f[2] == "allocated":
            out.append((int(f[3]), int(f[5])))
    return out


def growth_rule(values):
    """The rule (growth_truth.py) as the device's growth names its figures."""
    g = growth_truth.growth_rule(values)
    return g and {"per_step_bytes": g["per_opening_bytes"], "from_step": g["from_opening"]}


def run_story(c, name, mode, steps=None, env=None, options=()):
    out = c.fresh(name)
    e = {"PYTHONPATH": STANDIN, "VTSIM_CONTEXT_BYTES": "0"}
    e.update(env or {})
    argv = [c.args.python, PROGRAM, mode] + ([str(steps)] if steps else [])
    r = c.run(argv, True, env=e, options=options)
    return r, sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".vtrace"))


def device(rep, pid=None):
    for p in rep.get("processes", []):
        if pid is None or p.get("pid") == pid:
            for d in p.get("devices", []):
                if d.get("kind") == "device":
                    return d
    return {}


def text_of(c, trace):
    return subprocess.run([c.vramtrace, "report", trace], capture_output=True, text=True,
                          timeout=60).stdout


def leak_run(c, name, options=()):
    """story_train.py leak 12: the growth rule on the stand-in's own
    figures, the trace, its JSON report (checked against the schema);
    None when the scenario broke."""
    r, traces = run_story(c, name, "leak", 12, options=options)
    want = growth_rule([a for a, _ in steps_of(r.stdout)])
    if len(traces) != 1 or not want or want["per_step_bytes"] != 8 * MiB:
        c.fail("scenario broken: %d traces, the allocator's figures give %r" % (len(traces), want))
        return None
    rep = c.report(traces[0])
    for e in schema_errors(rep)[:3]:
        c.fail("%s: the report's JSON against docs/report.schema.json: %s" % (name, e))
    return want, traces[0], device(rep)


def case_story_leak(c):
    tamper = MiB if c.args.tamper else 0
    run = leak_run(c, "leak")
    if not run:
        return
    want, trace, d = run
    traces = [trace]
    g = d.get("growth") or {}
    c.equal("the leak's level", g.get("level"), "allocated")
    c.equal("the leak's rate and first step",
            {k: g.get(k) for k in want}, dict(want, per_step_bytes=want["per_step_bytes"] + tamper))
    c.equal("the leak's step phase", g.get("step_phase"), "optimizer")
    top = [f.get("function") for f in (g.get("sites") or [{}])[0].get("frames", [])]
    if "keep_for_metrics" not in top:
        c.fail("the growing site is not keep_for_metrics: %r" % top)
    opt = [p for p in d.get("phases", []) if p.get("name") == "optimizer"]
    c.equal("the driver's own growth of optimizer (segments, not every step)",
            opt and opt[0].get("growth"), None)
    text = text_of(c, traces[0])
    line = "+%s a step since step %d" % (format_bytes(want["per_step_bytes"] + tamper),
                                        want["from_step"])
    if line not in text:
        c.fail("the text report does not say %r" % line)
    if "growth across openings: none" in text:
        c.fail("the text report says 'growth across openings: none' beside a growth")
    top = subprocess.run([c.vramtrace, "top", "-b", "-n", "1", traces[0]], capture_output=True,
                         text=True, timeout=60).stdout.splitlines()
    head = [l for l in top if "GROWTH/STEP" in l]
    rows = top[top.index(head[0]) + 1:top.index(head[0]) + 2] if head else []
    step = "+%s" % format_bytes(want["per_step_bytes"] + tamper)
    if not rows or " %s " % step not in rows[0]:
        c.fail("top's GROWTH/STEP is not %s: %r" % (step, rows))

    # With the allocator's history (--torch-history): still one leak, one
    # rate, one site - the allocator's own, the 8 MiB the program keeps
    # each step - in the text and the JSON (the page: html_torch_leak).
    run = leak_run(c, "leak_history", options=["--torch-history"])
    if not run:
        return
    want4, trace4, d4 = run
    c.equal("history: the stand-in's own growth", want4, want)
    g4 = d4.get("growth") or {}
    c.equal("history: the leak's rate and first step", {k: g4.get(k) for k in want}, want)
    c.equal("history: the growth's sites are the allocator's", g4.get("sites_level"), "tensors")
    sites4 = g4.get("sites") or []
    c.equal("history: one site, 8 MiB a step (what keep_for_metrics keeps)",
            [s4.get("bytes") for s4 in sites4], [8 * MiB + tamper])
    if sites4 and "keep_for_metrics" not in [f.get("function") for f in sites4[0].get("frames", [])]:
        c.fail("history: the site is not keep_for_metrics: %r" % sites4[0])
    told = [(p.get("name"), (p.get("tensor_growth") or {}).get("per_opening_bytes"))
            for p in d4.get("phases", []) if p.get("tensor_growth")]
    c.equal("history: the tensors' growth, at the step phase only", told,
            [("optimizer", want["per_step_bytes"])])
    text4 = text_of(c, trace4)
    rates = sorted(set(re.findall(r"\+(\S+ \S*B) (?:a step|per opening)", text4)))
    c.equal("history: the rates the text tells", rates, [format_bytes(want["per_step_bytes"])])
    if not re.search(r"\n +%s +keep_for_metrics \(story_train\.py:\d+\)"
                     % re.escape(format_bytes(8 * MiB + tamper)), text4):
        c.fail("history: the text does not name keep_for_metrics at 8 MiB a step:\n" + text4)

    # The same leak to its failure: the step it fails at is the truth of
    # the forecast; the failure names the growth first.
    r2, traces2 = run_story(c, "leak_oom", "leak_oom")
    failed_at = len(steps_of(r2.stdout)) + 1
    fill = g.get("fills_device_at_step")
    if fill is None or abs(fill - failed_at) > failed_at * 15 // 100 or c.args.tamper:
        c.fail("the forecast fill step %r, the leak failed at step %d (15%% allowed)"
               % (fill, failed_at))
    if len(traces2) != 1:
        c.fail("leak_oom: %d traces" % len(traces2))
        return
    ooms = device(c.report(traces2[0])).get("ooms", [])
    nxt = ooms[0].get("next_step", "") if ooms else ""
    lead = "8.00 MiB a step since step %d at keep_for_metrics" % want["from_step"]
    if not nxt.startswith(lead) or "the request would fit without it" not in nxt:
        c.fail("the leak's failure does not lead with its growth %r: %r" % (lead, nxt))

    # A warm-up, then nothing kept: no growth.
    r3, traces3 = run_story(c, "steady", "steady", 12)
    if growth_rule([a for a, _ in steps_of(r3.stdout)]) is not None or len(traces3) != 1:
        c.fail("scenario broken: the steady run grows, or %d traces" % len(traces3))
        return
    d3 = device(c.report(traces3[0]))
    c.equal("the steady run's growth", d3.get("growth"), None)
    # Its cache never shrinks (no empty_cache): the largest reserved sampled
    # is the stand-in's reserved at the end.
    c.equal("the steady run's largest sample's reserved bytes",
            (d3.get("allocator_largest_sample") or {}).get("reserved_bytes"),
            steps_of(r3.stdout)[-1][1] + tamper)
    if "growth (PyTorch's allocator" in text_of(c, traces3[0]):
        c.fail("the steady run's text report tells a growth")


def case_story_neighbour(c):
    name = "story-%d" % os.getpid()
    ready, done = os.path.join(c.tmp, "ready"), os.path.join(c.tmp, "done")
    env = {"PYTHONPATH": STANDIN, "VTSIM_SHARED": name, "VTSIM_MEMORY": "2GiB",
           "STORY_READY": ready, "STORY_DONE": done}
    c.fresh("neighbour")
    job = ("RANK=1 %s %s leak_hold 60 > %s & RANK=0 %s %s neighbour; wait"
           % (c.args.python, PROGRAM, os.path.join(c.tmp, "rank1.out"), c.args.python, PROGRAM))
    try:
        c.run(["bash", "-c", job], True, env=env)
    finally:
        if os.path.exists("/dev/shm/vtsim-" + name):
            os.unlink("/dev/shm/vtsim-" + name)
    rep = c.report(*c.traces())
    by_rank = {p.get("rank"): p for p in rep.get("processes", [])}
    if set(by_rank) != {0, 1}:
        c.fail("scenario broken: ranks %r" % sorted(by_rank, key=str))
        return
    leaker = by_rank[1]["pid"] + (1 if c.args.tamper else 0)
    ooms = device(rep, by_rank[0]["pid"]).get("ooms", [])
    if not ooms:
        c.fail("rank 0 did not fail")
        return
    o = ooms[0]
    c.equal("rank 0's verdict", o.get("verdict"), "contended")
    others = o.get("other_traced_processes", [])
    held = others[0].get("bytes") if others else None
    want = "rank 1 (pid %d) held %s then, growing +8.00 MiB a step since step 2 at " \
           "keep_for_metrics" % (leaker, format_bytes(held or 0))
    if want not in o.get("verdict_story", ""):
        c.fail("rank 0's story does not name its neighbour %r: %r" % (want, o.get("verdict_story")))


def case_story_nccl(c):
    lib = os.path.join(c.build, "tests", "pytorch", "libnccl.so.2")
    r, traces = run_story(c, "nccl", "nccl", 3, env={"NCCL_LIB": lib, "VTSIM_CONTEXT_BYTES": "384MiB"})
    asked = [l.split() for l in r.stdout.splitlines() if l.startswith("nccl asks ")]
    if "nccl init failed" not in r.stdout or not asked or len(traces) != 1:
        c.fail("scenario broken: %r" % r.stdout[-400:])
        return
    ask, free, cache = int(asked[0][2]), int(asked[0][4]), int(asked[0][6])
    if not free < ask <= free + cache:
        c.fail("scenario broken: asks %d, %d free, %d cached" % (ask, free, cache))
    rep = c.report(traces[0])
    for e in schema_errors(rep)[:3]:
        c.fail("the report's JSON against docs/report.schema.json: %s" % e)
    ooms = device(rep).get("ooms", [])
    if not ooms:
        c.fail("the library's failure is not in the report")
        return
    o = ooms[0]
    c.equal("the library's request", o.get("requested_bytes"), ask)
    c.equal("the library's verdict", o.get("verdict"),
            "exhausted" if c.args.tamper else "starved_by_cache")
    c.equal("its source", o.get("verdict_source"), "allocator_samples")
    story, nxt = o.get("verdict_story", ""), o.get("next_step", "")
    if not story.startswith("NCCL (libnccl.so.2) asked for %s" % format_bytes(ask)):
        c.fail("the story does not name the library: %r" % story)
    for want in ("torch.cuda.empty_cache()", "set_per_process_memory_fraction", "NCCL_BUFFSIZE"):
        if want not in nxt:
            c.fail("the next step lacks %r: %r" % (want, nxt))


STORY_CASES = {"story_leak": case_story_leak, "story_neighbour": case_story_neighbour,
               "story_nccl": case_story_nccl}
