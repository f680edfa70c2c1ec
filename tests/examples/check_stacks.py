#!/usr/bin/env python3
"""Stacks a person reads (docs/user/REPORT.md, "Stacks"), on four examples run as
docs/user/EXAMPLES.md documents them: cudaMallocAsync through the simulated
runtime (1), pinned memory on a thread of its own (4), a library carrying a
private copy of the runtime and a failed allocation (3), Python (6).

The truth is the examples' source, never the analyzer: each line that calls
a runtime allocation function (cudaMalloc*, cudaHostAlloc), or a library
function that ends in one (privrt_user_alloc), names the user's function and
line that must come first in a stack line, and the API its "via" tag names.

  - text, piped: every stack line starts with such a frame (in any of its
    forms: "f (file.c:60)", "f:60", or "f" alone where nothing more fits),
    ends with "via API" of that call (then a thread tag), and fits in 100
    columns;
  - text on a terminal (a pty 72 columns wide): every stack line fits,
    unless it shows only its first frame by name, or its first frame and
    the one where it parts from a row that would read alike (the
    documented exceptions);
  - --full-stacks: every row's line is exactly its JSON frames, runtime and
    libc start-up frames included;
  - JSON: "folded"/"folded_as" set exactly on the frames of the simulated
    runtime (the sources of libsimcudart, tests/simdriver/runtime/
    meson.build), of libc's start-up, of the foreign-function layers
    (libffi, _ctypes) and of CPython's own native frames, never on others.

--tamper moves every truth line down by one: the check must then fail.
"""
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

from example_harness import parse_args, run_example

ALLOC_API = re.compile(r"\b(cudaMalloc\w*|cudaHostAlloc|cudaMallocHost)\s*\(")
C_DEF = re.compile(r"^[A-Za-z_][^(;=]*?\b(\w+)\s*\([^;]*$")
PY_DEF = re.compile(r"^\s*def (\w+)\(")
STRING = re.compile(r'"(\\.|[^"\\])*"')

args = parse_args()
src = os.path.abspath(args.src)


def calls(path):
    """[(function, line, api, tail_call)] of the allocation calls in a C or
    Python source, with the function they are in."""
    out, fn = [], None
    with open(path) as f:
        for i, text in enumerate(f, 1):
            code = STRING.sub('""', text)
            d = (PY_DEF if path.endswith(".py") else C_DEF).match(code)
            if d:
                fn = d.group(1)
            m = ALLOC_API.search(code)
            if m and fn:
                out.append((fn, i, m.group(1), code.strip().startswith("return")))
    return out


def truth_of(sources):
    """{(function, line): (file basename, api)}: the frames a stack line may
    start with. A function that returns an allocation call's result is
    left by a tail call: its callers' lines count too."""
    truth, tails = {}, {}
    for path in sources:
        for fn, line, api, tail in calls(path):
            truth[(fn, line)] = (os.path.basename(path), api)
            if tail:
                tails[fn] = api
    for path in sources:
        fn = None
        with open(path) as f:
            for i, text in enumerate(f, 1):
                d = C_DEF.match(STRING.sub('""', text))
                if d:
                    fn = d.group(1)
                for wrapper, api in tails.items():
                    if fn and fn != wrapper and re.search(r"\b%s\s*\(" % wrapper, text):
                        truth[(fn, i)] = (os.path.basename(path), api)
    if args.tamper:
        truth = {(fn, line + 1): v for (fn, line), v in truth.items()}
    return truth


def runtime_sources():
    """The simulated runtime's source files, as its build names them."""
    with open(os.path.join(src, "tests", "simdriver", "runtime", "meson.build")) as f:
        m = re.search(r"simcudart_sources = files\(([^)]*)\)", f.read())
    return set(re.findall(r"'([^']+)'", m.group(1)))


RUNTIME = runtime_sources()
ROW = re.compile(r"^\s+\d+(?:\.\d+)? [KMGT]?i?B\s+\d+  (?P<stack>.*)$")
AT = re.compile(r", at: (?P<stack>.*)$")
STACK = re.compile(r"^(?P<first>.+?)(?P<rest> <- .*?)?  via (?P<api>\S+)(?P<tag>  \[[^\]]*\])?$")
# " <- ... 2 more <- create_fp32_partitions:70 <- ... 1 more": a row shown
# by its first frame and the frame where it parts from a row like it.
PARTED = re.compile(r"(?: <- \.\.\. \d+ more)? <- (?P<part>\S+(?: \([^)]*\))?)(?: <- \.\.\. \d+ more)?")
FIRST = re.compile(r"^(?P<fn>\S+?)(?: \((?P<file>[^:()]+):(?P<line>\d+)\)|:(?P<short>\d+))?$")


def stacks(text):
    """The stack part of every line that holds one."""
    out = []
    for line in text.splitlines():
        m = ROW.match(line) or AT.search(line)
        if m:
            out.append((line, m.group("stack")))
    return out


def check_text(run, name, text, truth, width):
    rows = stacks(text)
    if not rows:
        run.fail("%s: the text report has no stack line" % name)
    for line, stack in rows:
        m = STACK.match(stack)
        if not m:
            run.fail("%s: a stack line without a 'via' tag: %r" % (name, line))
            continue
        f = FIRST.match(m.group("first"))
        fn, line_no = f.group("fn"), f.group("line") or f.group("short")
        known = [k for k in truth if k[0] == fn and (line_no is None or k[1] == int(line_no))]
        if not known:
            run.fail("%s: the first frame is not a call site of the source: %r" % (name, line))
            continue
        base, api = truth[known[0]]
        if f.group("file") and f.group("file") != base:
            run.fail("%s: the first frame's file is not %s: %r" % (name, base, line))
        if m.group("api") != api:
            run.fail("%s: the tag says via %s, the source calls %s: %r"
                     % (name, m.group("api"), api, line))
        # Too long only if it shows one frame, by name alone, or where it
        # parts from a row that would read alike: its first frame, then the
        # frame that tells the two apart, and another row with the same
        # first frame parting at another.
        alone = line_no is None and re.fullmatch(r"( <- \.\.\. \d+ more)?", m.group("rest") or "")
        part = PARTED.fullmatch(m.group("rest") or "")
        twins = part and [o for o, ost in rows if o != line and STACK.match(ost) and
                          STACK.match(ost).group("first") == m.group("first") and
                          PARTED.fullmatch(STACK.match(ost).group("rest") or "") and
                          PARTED.fullmatch(STACK.match(ost).group("rest")).group("part") !=
                          part.group("part")]
        if len(line) > width and not alone and not twins:
            run.fail("%s: a stack line of %d columns, more than %d: %r"
                     % (name, len(line), width, line))


def frame_text(f):
    """The frame as the text report writes it; a regular expression (the
    text gives a nameless frame's offset in its module, JSON its address)."""
    if f["function"]:
        name = re.escape(f["function"])
    elif f["module"]:
        name = re.escape(f["module"]) + r"\+0x[0-9a-f]+"
    else:
        name = "0x%x" % f["ip"]
    if f["file"]:
        base = os.path.basename(f["file"])
        name += re.escape(" (%s:%d)" % (base, f["line"]) if f["line"] else " (%s)" % base)
    return name


def json_stacks(report):
    """Every frames list of the report, as (where, frames)."""
    for p in report["processes"]:
        for d in p["devices"]:
            for r in d["peak_breakdown"]:
                yield "peak", r["frames"]
            for o in d["ooms"]:
                yield "failure", o["frames"]
                for r in o["top_stacks"]:
                    yield "holder", r["frames"]


def folded_truth(f):
    base = os.path.basename(f["file"] or "")
    if f["module"] == "libsimcudart.so" or base in RUNTIME:
        return "cuda runtime"
    if (f["module"] or "").startswith("libc.so") or f["function"] == "_start":
        return "libc start-up"
    module = f["module"] or ""
    if (module.startswith(("libffi.so", "_ctypes", "_cffi_backend")) or
            (f["function"] or "").startswith("ffi_call")):
        return "foreign-function call"
    if module.startswith("libpython3") or (
            module.startswith("python3") and
            re.match(r"(_?Py|method_vectorcall|cfunction_|slot_tp_|run_|pymain_|main$)",
                     f["function"] or "")):
        return "python interpreter"
    return None


def terminal_text(run, columns):
    """`vramtrace report` on a terminal `columns` wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    p = subprocess.Popen([run.vramtrace, "report", run.traces], env=run.env, stdout=slave,
                         stderr=subprocess.DEVNULL, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    p.wait(timeout=60)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def check(name, command, sources, env=None, expect_status=0):
    run = run_example(args, command, env=env, expect_status=expect_status)
    run.env.pop("COLUMNS", None)
    truth = truth_of([os.path.join(src, s) for s in sources])
    if not truth:
        run.fail("%s: no allocation call found in %s: the test is out of date" % (name, sources))
    check_text(run, name + " (piped)", run.text_report(), truth, 100)
    check_text(run, name + " (terminal)", terminal_text(run, 72), truth, 72)

    full = run.text_report("--full-stacks").splitlines()
    for where, frames in json_stacks(run.report):
        want = re.compile("(  |: )" + " <- ".join(frame_text(f) for f in frames) + r"(  \[.*\])?$")
        if not any(want.search(line) for line in full):
            run.fail("%s: --full-stacks has no line with the %s stack %r"
                     % (name, where, want.pattern))
        for f in frames:
            if (f["module"] or "").startswith("libvramtrace"):
                run.fail("%s: the tracer's own frame in a stack: %r" % (name, f))
            want_as = folded_truth(f)
            if f.get("folded") is not (want_as is not None) or f.get("folded_as") != want_as:
                run.fail("%s: %s frame %s: folded %r as %r, should be %r as %r"
                         % (name, where, f["function"] or f["module"], f.get("folded"), f.get("folded_as"),
                            want_as is not None, want_as))
    if not any("(simcudart_api.c:" in line for line in full):
        run.fail("%s: --full-stacks shows no runtime frame" % name)
    return run


runs = [
    check("train_eval_phases", ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                                "{build}/examples/train_eval_phases"],
          ["examples/train_eval_phases.c"]),
    check("pinned_dataloader", ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                                "{build}/examples/pinned_dataloader"],
          ["examples/pinned_dataloader.c"]),
    check("deepspeed_init_oom", ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                                 "{build}/examples/deepspeed_init_oom"],
          ["examples/deepspeed_init_oom.c", "tests/simdriver/runtime/privrt_user.c"],
          env={"VTSIM_MEMORY": "31.50GiB"}, expect_status=1),
    check("python_phases", ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                            sys.executable, "{src}/examples/python_phases.py"],
          ["examples/python_phases.py"]),
]
failures = [f for r in runs for f in r.failures]
runs[0].failures = failures
runs[0].finish()
