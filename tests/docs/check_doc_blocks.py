"""Runs every transcript of README.md and docs/user/EXAMPLES.md and compares
the figures the docs show with what the program prints today.

    check_doc_blocks.py --build BUILD_DIR --src SOURCE_DIR [--doc FILE ...]
                        [--preload-first LIBS] [--tamper] [--show]

Which blocks run. A fenced block is a transcript when its info string is
empty (or `console`/`text`) and it has lines starting with `$ `: each such
line is a command, the lines up to the next one are its output as the docs
show it (`...` where they leave lines out). Skipped, and why:
  - blocks marked `sh`, `python` (or any other language): commands to type
    or code to read, with no output to compare (installs, `meson setup`,
    a program of your own such as my_prog.c, snippets);
  - blocks without a `$ ` line: an output excerpt that does not say which
    command printed it (a PyTorch message quoted alone, the one line said
    on a terminal at exit), or a listing (the source tree's layout);
  - blocks with a command run in the background (`... &`): what the next
    command shows depends on when it runs (README's `vramtrace top` frame
    of a running job; the follow suite checks top's frames against the
    ledger).

How they run. The blocks under one heading share one fresh
temporary directory W, in order, as a reader runs them: the run of one block
writes the traces the next block's `report` reads. Each command runs under
bash in W as docs/user/EXAMPLES.md sets up the shell: `vramtrace` is the build's
CLI, the simulated driver is on LD_LIBRARY_PATH, and
  - `build` is the build directory and `examples/`, `scripts/`, `tests/`
    the source tree's (symlinks in W, so that the report's command column
    reads as in the docs);
  - the docs' temporary paths are in W (`/tmp/out` is W/out, the same
    directory for every block under the heading), so a block that reports
    a directory its run did not write fails as it would for a reader; the
    placeholder DIR is W;
  - a bare script the docs run from its own directory (`python3
    train_oom.py`) is copied into W, with what it needs (SCRIPTS below).

What is compared (the figures). In each output line the docs show: byte
figures (`11.63 GiB`, `28.25 MiB`, `512 B`), the other numbers (count
columns, `456 allocations`, `1 process`) and verdict words (`fragmented`,
`exhausted`, ...). What varies from run to run is left out first: pids
(`pid N`, `(pid N)`, `NAME.N.vtrace`, the pid column, any number of five
digits or more without a unit), times (`+0.002s`, clock times `22:17:13`),
paths, addresses, source line numbers (`main:222`, `file.py:47`) and how
many frames a stack line folded (`... 2 more`). A doc line's kind is its
first word once those are gone (`train`, `verdict`, `driver`,
`device_alloc`); the doc's lines of one kind must appear, with the same
figures, in the same order among the program's lines of that kind. Lines the
program prints and the docs leave out, and lines without figures, are not
compared, so that rewording a line does not break this test - changing a
figure does. A mismatch fails with the doc's file:line and the first figure
that differs. A `vramtrace` command other than `run` must also exit 0 (`run`
exits as the program it ran, which may die of an out-of-memory error), and
no command may be missing, killed by a signal or run past 60 s.

--tamper changes one figure of a copy of the docs (the first byte figure of
the first transcript's output): the check must then fail at that line, which
the `docs_blocks_tamper` test asserts. Under --tamper any other outcome (a
run that breaks, a failure elsewhere only) exits 0, so that the tamper test
cannot pass by accident. --show prints each command's real output (W for
the run's directory), from which a stale block is regenerated.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

DOCS = ["README.md", "docs/user/EXAMPLES.md"]

# Scripts the docs run by bare name from their own directory: where the
# file is in the source tree, and the environment the docs' prose gives it.
SCRIPTS = {
    # README, "PyTorch out of memory": the stand-in torch on PYTHONPATH
    "train_oom.py": ("tests/pytorch/train_oom.py",
                     {"PYTHONPATH": "{src}/tests/pytorch/standin/site-packages"}),
}

# the source tree's folders a command may name (`examples/shared_gpu_oom.sh`)
SOURCE_TOPS = ("examples", "scripts", "tests")

COMMAND_TIMEOUT_S = 60
TIMED_OUT = 1000   # a status no shell returns

# `vramtrace report`, `export`, ... exit 0 when they work (`run` exits as the
# program it ran, which may be an out-of-memory death)
MUST_SUCCEED_RE = re.compile(r"(\w+=\S*\s+)*vramtrace\s+(?!run\b)")

VERDICTS = ("larger_than_device", "fragmented", "contended", "oversized", "exhausted")
BYTE_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?(B|KiB|MiB|GiB|TiB)\b")
NUMBER_RE = re.compile(r"(?<![\w.+-])(\d+(?:\.\d+)?)(?![\w.]*\w)")
VERDICT_RE = re.compile(r"\b(%s)\b" % "|".join(VERDICTS))
KIND_RE = re.compile(r"[A-Za-z_][\w.]*")


# ---- the docs --------------------------------------------------------------

class Block:
    def __init__(self, doc, line, info, lines, section):
        self.doc, self.line, self.info, self.lines, self.section = doc, line, info, lines, section

    def transcript(self):
        """[(command, command's file line, [(file line, output line)])]"""
        steps = []
        for i, text in enumerate(self.lines):
            lineno = self.line + 1 + i
            if text.startswith("$ "):
                steps.append((text[2:], lineno, []))
            elif steps:
                steps[-1][2].append((lineno, text))
        return steps


def parse_blocks(doc, text):
    blocks, section, fence, start, info, body = [], "", None, 0, "", []
    for i, line in enumerate(text.split("\n"), 1):
        if fence is None:
            m = re.match(r"^(`{3,}|~{3,})\s*(\S*)", line)
            if m:
                fence, start, info, body = m.group(1), i, m.group(2), []
            elif re.match(r"#{1,6} ", line):
                section = line.lstrip("#").strip()
        elif line.startswith(fence) and not line.strip(fence[0]).strip():
            blocks.append(Block(doc, start, info, body, section))
            fence = None
        else:
            body.append(line)
    return blocks


def runnable(block):
    """Why the block is skipped, or None when it is a transcript to run."""
    if block.info not in ("", "console", "text"):
        return "a `%s` block: commands or code without output" % block.info
    if not any(line.startswith("$ ") for line in block.lines):
        return "no `$ ` line: output without its command, or a listing"
    if any(line.startswith("$ ") and line.rstrip().endswith("&") for line in block.lines):
        return ("a command in the background: what the next one shows depends on when it runs "
                "(vramtrace top's frame of a running job: tests/follow checks it)")
    return None


# ---- figures ---------------------------------------------------------------

def pids_of(lines):
    pids = set()
    for line in lines:
        pids.update(re.findall(r"\bpid (\d+)", line))
        pids.update(re.findall(r"\.(\d+)\.vtrace", line))
    return pids


def mask(line, pids):
    """The line without what varies from run to run."""
    line = re.sub(r"\S*/\S*", " ", line)                     # paths
    line = re.sub(r"\S+\.(vtrace|pickle)\S*", " ", line)     # trace files
    line = re.sub(r"[+-]?\d+(\.\d+)?s\b", " ", line)         # times
    line = re.sub(r"\b\d\d:\d\d:\d\d\b", " ", line)          # clock times (top's frames)
    line = re.sub(r"(?<![\w.])\d{5,}(?! ?(B|KiB|MiB|GiB|TiB)\b)(?![\w.]*\w)", " ", line)  # pids
    line = re.sub(r"\b0x[0-9a-fA-F]+\b", " ", line)          # addresses
    line = re.sub(r":\d+\b", " ", line)                      # source lines
    line = re.sub(r"\.\.\. \d+ more", " ", line)             # folded frames
    for pid in pids:
        line = re.sub(r"(?<![\w.])%s(?![\w.]*\w)" % pid, " ", line)
    return line


def figures(line, pids):
    """(kind, [figures in order]) of one output line; figures may be empty."""
    m = mask(line, pids)
    found = []
    for rx in (BYTE_RE, VERDICT_RE):
        for f in rx.finditer(m):
            found.append((f.start(), f.group(0)))
        m = rx.sub(lambda f: " " * len(f.group(0)), m)
    for f in NUMBER_RE.finditer(m):
        found.append((f.start(), f.group(1)))
    found.sort()
    words = KIND_RE.findall(m)
    return (words[0] if words else ""), [f for _, f in found]


def canonical_bytes(fig):
    """'556MiB' and '556 MiB' are the same figure."""
    b = BYTE_RE.fullmatch(fig)
    return "%s %s" % (b.group(1), b.group(2)) if b else fig


def compare(doc_lines, real_output):
    """None when every doc figure is in the real output in order per kind,
    else (doc line number, message)."""
    real_lines = real_output.split("\n")
    doc_pids = pids_of(t for _, t in doc_lines)
    real_pids = pids_of(real_lines)
    by_kind = {}
    for text in real_lines:
        kind, figs = figures(text, real_pids)
        if figs:
            by_kind.setdefault(kind, []).append(([canonical_bytes(f) for f in figs], text))
    pos = {}
    for lineno, text in doc_lines:
        kind, figs = figures(text, doc_pids)
        if not figs:
            continue
        figs = [canonical_bytes(f) for f in figs]
        cands = by_kind.get(kind, [])
        start = pos.get(kind, 0)
        for i in range(start, len(cands)):
            if cands[i][0] == figs:
                pos[kind] = i + 1
                break
        else:
            if start >= len(cands):
                tail = "\n".join("      | " + t for t in real_output.rstrip().split("\n")[-3:])
                return lineno, ("the docs show %r (figures %s); the program prints no further "
                                "line of kind %r; its output ends:\n%s"
                                % (text.strip(), figs, kind, tail))
            got, real = cands[start]
            for k, want in enumerate(figs):
                have = got[k] if k < len(got) else "nothing"
                if have != want:
                    break
            else:
                want, have = "nothing", got[len(figs)]
            return lineno, ("first differing figure: the docs say %s, the program %s\n"
                            "      docs:    %s\n      program: %s" % (want, have, text.strip(),
                                                                      real.strip()))
    return None


# ---- running a section -----------------------------------------------------

class Runner:
    def __init__(self, args):
        self.build = os.path.abspath(args.build)
        self.src = os.path.abspath(args.src)
        self.args = args
        self.root = tempfile.mkdtemp(prefix="vt-docs-")
        sim = os.path.join(self.build, "tests", "simdriver")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("VTSIM_", "VRAMTRACE_", "NVTX_", "VTEXAMPLE_", "PYTHON"))}
        env.pop("COLUMNS", None)
        env["LD_LIBRARY_PATH"] = sim + ":" + os.path.join(sim, "runtime")
        env["TMPDIR"] = self.root   # what a script makes with mktemp goes when the test ends
        if args.preload_first:
            env["LD_PRELOAD"] = args.preload_first
        else:
            env.pop("LD_PRELOAD", None)
        self.env = env
        self.workdirs = {}

    def workdir(self, block):
        key = (block.doc, block.section)
        if key not in self.workdirs:
            w = tempfile.mkdtemp(dir=self.root, prefix="section-")
            # the source tree as the reader's shell sees it (`vramtrace report
            # W` does not follow symlinks: only the traces are read)
            os.symlink(self.build, os.path.join(w, "build"))
            for top in SOURCE_TOPS:
                os.symlink(os.path.join(self.src, top), os.path.join(w, top))
            self.workdirs[key] = w
        return self.workdirs[key]

    def rewrite(self, command, w):
        c = re.sub(r"/tmp/(?=[^/\s'\"])", w + "/", command)
        c = re.sub(r"\bDIR\b", w, c)
        return c

    def run(self, command, w):
        env = dict(self.env)
        for name, (path, extra) in SCRIPTS.items():
            if re.search(r"(?<![\w/.])%s\b" % re.escape(name), command):
                shutil.copy(os.path.join(self.src, path), os.path.join(w, name))
                env.update({k: v.format(src=self.src) for k, v in extra.items()})
        vt = os.path.join(self.build, "analyzer", "vramtrace")
        script = "vramtrace() { %s \"$@\"; }\n%s\n" % (shlex.quote(vt), self.rewrite(command, w))
        try:
            r = subprocess.run(["bash", "-c", script], cwd=w, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            out = e.stdout or b""
            return TIMED_OUT, out.decode(errors="replace") if isinstance(out, bytes) else out
        return r.returncode, r.stdout


def tamper(text):
    """(the docs with the first byte figure of the first transcript's output
    changed, a figure the program does not print there; that line's number)"""
    blocks = [b for b in parse_blocks("", text) if runnable(b) is None]
    for b in blocks:
        for _, _, out in b.transcript():
            for lineno, line in out:
                f = BYTE_RE.search(line)
                if f:
                    value = f.group(1)
                    bumped = str(float(value) + 1).rstrip("0").rstrip(".") if "." not in value \
                        else "%.*f" % (len(value.split(".")[1]), float(value) + 0.01)
                    lines = text.split("\n")
                    lines[lineno - 1] = line[:f.start(1)] + bumped + line[f.end(1):]
                    print("tamper: line %d: %s -> %s" % (lineno, value, bumped))
                    return "\n".join(lines), lineno
    return text, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--doc", action="append", help="only these docs (paths in the source tree)")
    ap.add_argument("--preload-first", default="")
    ap.add_argument("--tamper", action="store_true")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    runner = Runner(args)
    failures, ran, skipped, compared = [], 0, 0, 0
    broken = False
    tampered = None   # "doc:line" of the changed figure
    try:
        for doc in args.doc or DOCS:
            with open(os.path.join(runner.src, doc)) as f:
                text = f.read()
            if args.tamper and doc == (args.doc or DOCS)[0]:
                text, lineno = tamper(text)
                tampered = "%s:%s:" % (doc, lineno)
            for block in parse_blocks(doc, text):
                why = runnable(block)
                if why:
                    skipped += 1
                    print("skip %s:%d (%s)" % (doc, block.line, why))
                    continue
                ran += 1
                w = runner.workdir(block)
                for command, cmd_line, out in block.transcript():
                    status, real = runner.run(command, w)
                    if args.show:
                        print("---- %s:%d $ %s (exit %d)\n%s" % (doc, cmd_line, command, status,
                                                              real.replace(w, "W")))
                    if status in (126, 127) or status > 128:   # not found, killed, timed out
                        broken = True
                        failures.append("%s:%d: `$ %s` could not run or crashed (exit %d):\n%s"
                                        % (doc, cmd_line, command, status, real[-2000:]))
                        continue
                    if status != 0 and MUST_SUCCEED_RE.match(command):
                        failures.append("%s:%d: `$ %s` exited %d:\n%s"
                                        % (doc, cmd_line, command, status, real[-2000:]))
                        continue
                    if not [t for _, t in out if figures(t, set())[1]]:
                        continue
                    compared += 1
                    diff = compare(out, real)
                    if diff:
                        failures.append("%s:%d: `$ %s` (block at %s:%d):\n    %s:%d: %s"
                                        % (doc, cmd_line, command, doc, block.line,
                                           doc, diff[0], diff[1]))
    finally:
        if not failures or args.tamper:   # a real failure keeps its runs to look at
            shutil.rmtree(runner.root, ignore_errors=True)
    print("%d transcript blocks run, %d command outputs compared, %d blocks skipped"
          % (ran, compared, skipped))
    if failures:
        for f in failures:
            print("FAIL: " + f, file=sys.stderr)
        if not args.tamper:
            print("(the runs are in %s)" % runner.root, file=sys.stderr)
        if args.tamper and (broken or not any(tampered in f for f in failures)):
            print("(--tamper: the check did not fail at the changed figure, %s)" % tampered,
                  file=sys.stderr)
            sys.exit(0)
        sys.exit(1)
    if ran == 0 or compared == 0:
        print("FAIL: no transcript was compared", file=sys.stderr)
        sys.exit(0 if args.tamper else 1)
    print("ok: every figure the docs show is what the program prints")


if __name__ == "__main__":
    main()
