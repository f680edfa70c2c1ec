#!/usr/bin/env python3
"""README.md's install commands, run as written, and a build that lacks
the HTML report's chart libraries (docs/user/INSTALL.md).

In a copy of the source tree (its tracked and untracked files, no build
directory, no node_modules/), in a shell of its own with nothing of the
caller's Python on PATH:

1. Without node_modules/, the README's block up to its `pip wheel` must
   fail, saying that the chart libraries are missing, how to get them
   (npm ci) and how to build without them (-Dhtml=disabled): a wheel never
   lacks the page unnoticed.
2. With node_modules/, the README's block, every line as written but the
   first (scripts/install-deps.sh: apt-get and npm ci, root and network;
   CI has run it already), must succeed in a fresh venv: the wheel built,
   installed, `vramtrace --version` saying the page is built in, and the
   installed command writing a page.
3. A build asked to leave the page out (-Dhtml=disabled) configures
   without node_modules/; its `vramtrace --version` says the page is not
   built, and `report --html` fails with status 2, naming `report --json`
   and no path of the machine that built it, writing nothing.

    check_readme_install.py --src SRC [--keep DIR]

Exit 77 (skipped, one line) where Debian's Python lacks meson-python or
venv, or patchelf is missing (scripts/install-deps.sh installs them).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def readme_block(src):
    """The shell block under README.md's "## Install", its lines."""
    text = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    m = re.search(r"^## Install\n.*?^```sh\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise SystemExit("FAIL: README.md has no ```sh block under \"## Install\"")
    return m.group(1).splitlines()


def copy_tree(src, dst):
    """The source tree as git sees it (tracked and untracked, not ignored)."""
    r = subprocess.run(["git", "-C", src, "ls-files", "-z", "-co", "--exclude-standard"],
                       capture_output=True, check=True)
    for rel in r.stdout.decode().split("\0"):
        if not rel or not os.path.lexists(os.path.join(src, rel)):
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(src, rel), os.path.join(dst, rel), follow_symlinks=False)


def fresh_env(home):
    """A user's shell on a fresh machine: the system's PATH, no venv, no
    PYTHONPATH, nothing of the test's environment."""
    keep = ("LANG", "LC_ALL", "TERM", "TMPDIR")
    e = {k: os.environ[k] for k in keep if k in os.environ}
    e.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME=home)
    return e


def sh(script, cwd, env, timeout=900):
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    src = os.path.abspath(args.src)
    probe = subprocess.run(["/usr/bin/python3", "-c", "import mesonpy, venv, ensurepip"],
                           capture_output=True) if os.path.exists("/usr/bin/python3") else None
    if not probe or probe.returncode != 0:
        print("SKIP: /usr/bin/python3 lacks meson-python or venv (Debian: python3-mesonpy python3-venv)")
        return 77
    if not shutil.which("patchelf"):
        print("SKIP: patchelf is missing (Debian: patchelf), which the wheel's build needs")
        return 77
    node_modules = os.path.realpath(os.path.join(src, "node_modules"))
    if not os.path.isfile(os.path.join(node_modules, "uplot", "package.json")):
        print("SKIP: no node_modules/ in the source tree to build the page with (npm ci)")
        return 77

    lines = readme_block(src)
    deps = [k for k, l in enumerate(lines) if l.startswith("scripts/install-deps.sh")]
    wheel = [k for k, l in enumerate(lines) if l.startswith("pip wheel ")]
    if deps != [0] or len(wheel) != 1:
        raise SystemExit("FAIL: README's install block does not begin with scripts/install-deps.sh "
                         "or has not one `pip wheel` line: %r" % lines)
    print("README's install block, run from its second line:\n  " + "\n  ".join(lines))

    work = args.keep or tempfile.mkdtemp(prefix="vt-readme-install-")
    os.makedirs(work, exist_ok=True)
    tree = os.path.join(work, "vramtrace")
    copy_tree(src, tree)
    env = fresh_env(os.path.join(work, "home"))
    os.makedirs(env["HOME"])
    try:
        # 1. no chart libraries: the wheel's build stops, saying so
        r = sh("\n".join(lines[1:wheel[0] + 1]), tree, env)
        said = r.stdout + r.stderr
        if r.returncode == 0:
            fail("a wheel was built without the chart libraries (node_modules/)")
        for want in ("chart libraries", "npm ci", "-Dhtml=disabled"):
            if want not in said:
                fail("the build without node_modules/ does not say %r: ...%s" % (want, said[-800:]))
        shutil.rmtree(os.path.join(tree, ".venv"), ignore_errors=True)
        shutil.rmtree(os.path.join(tree, "dist"), ignore_errors=True)

        # 2. the README, as written
        os.symlink(node_modules, os.path.join(tree, "node_modules"))
        script = "\n".join(lines[1:] + ["vramtrace report --html page.html "
                                        "tests/data/pytorch-snapshots/eor.pickle"])
        r = sh(script, tree, env)
        if r.returncode != 0:
            fail("README's install block failed (status %d): ...%s" % (r.returncode, (r.stdout + r.stderr)[-1500:]))
        else:
            if not re.search(r"^vramtrace \d+\.\d+\.\d+ \(commit ", r.stdout, re.M):
                fail("README's `vramtrace --version` said %r" % r.stdout)
            if "HTML report (report --html): built in" not in r.stdout:
                fail("the wheel's `vramtrace --version` does not say its page is built in: %r" % r.stdout)
            if not os.path.isfile(os.path.join(tree, "page.html")):
                fail("the installed vramtrace wrote no page: %s" % r.stderr)
            print("README's install block: ok")
        os.unlink(os.path.join(tree, "node_modules"))

        # 3. the page left out on purpose
        build = os.path.join(work, "build-nohtml")
        r = sh("meson setup %s . -Dhtml=disabled -Dtests=disabled -Dtracer=disabled && "
               "meson compile -C %s analyzer/vramtrace" % (build, build), tree, env)
        if r.returncode != 0:
            fail("-Dhtml=disabled without node_modules/ did not build: ...%s" % (r.stdout + r.stderr)[-1500:])
        else:
            exe = os.path.join(build, "analyzer", "vramtrace")
            v = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env)
            if "HTML report (report --html): not built" not in v.stdout:
                fail("-Dhtml=disabled: --version says %r" % v.stdout)
            page = os.path.join(work, "nohtml.html")
            h = subprocess.run([exe, "report", "--html", page,
                                os.path.join(src, "tests/data/pytorch-snapshots/eor.pickle")],
                               capture_output=True, text=True, env=env)
            if h.returncode != 2 or os.path.exists(page) or "report --json" not in h.stderr:
                fail("-Dhtml=disabled: report --html exited %d, stderr %r, page written: %s"
                     % (h.returncode, h.stderr, os.path.exists(page)))
            for leak in (work, src, "node_modules", "meson"):
                if leak in h.stderr:
                    fail("-Dhtml=disabled: report --html names %r: %r" % (leak, h.stderr))
    finally:
        if not args.keep and not failures:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d failures; the files are in %s" % (len(failures), work), file=sys.stderr)
        return 1
    print("ok: README's install commands work as written; no build lacks the page unnoticed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
