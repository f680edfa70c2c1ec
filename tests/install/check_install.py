#!/usr/bin/env python3
"""vramtrace installed as its users install it (docs/user/INSTALL.md), checked
with only the installed files: no build tree on PATH, LD_LIBRARY_PATH or
PYTHONPATH.

1. The wheel: `pip wheel --no-deps --no-build-isolation` from the source
   tree, installed with --no-index into a fresh venv, and with --user into a
   fresh user base. Its ELF files need nothing beyond glibc and libgcc_s
   (every NEEDED entry is listed), and its platform tag names the newest
   glibc symbol version they use.
2. The tarball (scripts/make-tarball.sh), unpacked in another directory,
   and that directory moved elsewhere.

In each: `vramtrace --version` says the version and commit; a Python job
(module_job.py) that labels its phases with the `vramtrace` module runs
under `vramtrace run`, and its report (text, JSON, HTML) is checked against
the simulated driver's ledger and the job's phase log; the module's marks
are the C API's records; without the tracer the module does nothing and a
phase costs about what an empty context manager does.

The GPU is the simulated driver, copied out of the build tree into a
directory of its own (as a system's driver would be).

    check_install.py --src SRC --build BUILD [--python PY] [--keep DIR]

Exit 77 (skipped) only where a Python with meson-python, venv and pip, or
patchelf, does not exist on the machine (scripts/install-deps.sh installs
them).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "schema"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "packaging"))
from ledger_truth import Ledger, format_bytes  # noqa: E402
from report_schema import schema_errors  # noqa: E402
import elf_deps  # noqa: E402

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def run(argv, env=None, timeout=600, check=True, **kw):
    t = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        print(r.stdout + r.stderr, file=sys.stderr)
        raise SystemExit("FAIL: %s exited %d" % (" ".join(argv), r.returncode))
    r.seconds = time.monotonic() - t
    return r


def find_python(wanted):
    """A Python with meson-python, venv and pip: the one asked for, Debian's
    (python3-mesonpy is for /usr/bin/python3), then python3 on PATH."""
    probe = "import mesonpy, venv, ensurepip, pip"
    tried = []
    for py in [wanted, "/usr/bin/python3", shutil.which("python3")]:
        if py and py not in tried:
            tried.append(py)
            if os.path.exists(py) and subprocess.run([py, "-c", probe],
                                                     capture_output=True).returncode == 0:
                return py
    skip("no Python with meson-python, venv and pip (tried %s; Debian: python3-mesonpy "
         "python3-venv python3-pip)" % ", ".join(tried))


def clean_env(extra_path=(), **more):
    """The environment of a user who has only the installed files."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONHOME",
                      "PYTHONUSERBASE", "VIRTUAL_ENV")
         and not k.startswith(("VTSIM_", "VRAMTRACE_", "NVTX_", "VTEXAMPLE_", "VTINSTALL_"))}
    e["PATH"] = ":".join(list(extra_path) + ["/usr/bin", "/bin"])
    e.update(more)
    return e


def commit_of(src):
    r = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def project_version(src):
    with open(os.path.join(src, "meson.build")) as f:
        return re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)


# ---- the checks, the same for every installation ---------------------------

def check_elf(name, files):
    """Every NEEDED entry listed; nothing but glibc, libgcc_s and what the
    installation carries. Returns the glibc floor."""
    carried = {elf_deps.soname(p) or os.path.basename(p) for p in files}
    for p in files:
        vs = elf_deps.glibc_versions(p)
        print("  %s: NEEDED %s; newest GLIBC_%s" % (os.path.basename(p),
              " ".join(elf_deps.needed(p)), vs[-1] if vs else "-"))
    for p, extra in elf_deps.outside(files, carried).items():
        fail("%s: %s needs %s from the system" % (name, os.path.basename(p), " ".join(extra)))
    floor = elf_deps.glibc_floor(files)
    print("  glibc floor: %d.%d" % floor)
    return floor


def check_version(name, vramtrace, env, src):
    out = run([vramtrace, "--version"], env=env).stdout
    want_commit = commit_of(src)
    if project_version(src) not in out:
        fail("%s: --version says %r, not the version %s" % (name, out, project_version(src)))
    if want_commit and want_commit[:12] not in out:  # git describe: HASH or TAG-N-gHASH
        fail("%s: --version says %r, not the commit %s" % (name, out, want_commit[:12]))
    if not want_commit and "commit unknown" not in out:
        fail("%s: --version outside git says %r" % (name, out))


def check_traced_job(name, vramtrace, python, env, driver, work):
    failed_before = len(failures)
    out = os.path.join(work, "traces")
    os.makedirs(out)
    led_path, log, facts_path = (os.path.join(work, f) for f in
                                 ("ledger.txt", "phases.txt", "facts.json"))
    job_env = dict(env, LD_LIBRARY_PATH=driver, VTSIM_LEDGER=led_path,
                   VTEXAMPLE_PHASE_LOG=log, VTINSTALL_FACTS=facts_path)
    r = run([vramtrace, "run", "-o", out + "/job.%p.vtrace", "--", python,
             os.path.join(HERE, "module_job.py")], env=job_env, check=False, timeout=120)
    if r.returncode != 0:
        fail("%s: the traced job exited %d: %s" % (name, r.returncode, r.stderr.strip()))
        return
    with open(facts_path) as f:
        facts = json.load(f)
    traces = glob.glob(os.path.join(out, "*.vtrace"))
    if facts["trace_path"] not in traces:
        fail("%s: vramtrace.trace_path() said %r; the traces are %s"
             % (name, facts["trace_path"], traces))
    if len(facts.get("refused", [])) != 3:
        fail("%s: the module took bad names: %s" % (name, facts.get("accepted")))

    js = run([vramtrace, "report", "--json", out], env=env).stdout
    text = run([vramtrace, "report", out], env=env).stdout
    html = os.path.join(work, "report.html")
    run([vramtrace, "report", "--html", html, out], env=env)
    report = json.loads(js)
    errors = schema_errors(report)
    if errors:
        fail("%s: report --json breaks the schema: %s" % (name, errors))
    led = Ledger(led_path)
    pids = [p["pid"] for p in report["processes"] if led.peak(p["pid"])]
    if len(pids) != 1:
        fail("%s: %d traced processes allocated, expected 1" % (name, len(pids)))
        return
    pid = pids[0]
    dev = next((d for p in report["processes"] if p["pid"] == pid
                for d in p["devices"] if d["device"] == 0 and d["kind"] == "device"), None)
    if dev is None:
        fail("%s: no device ledger for pid %d" % (name, pid))
        return
    if dev["peak_bytes"] != led.peak(pid):
        fail("%s: device peak %r, ledger %r" % (name, dev["peak_bytes"], led.peak(pid)))
    truth = led.phase_peaks(pid, log)
    got = {p["name"]: p["peak_bytes"] for p in dev["phases"]}
    want = {k: v[0] for k, v in truth.items()}
    if got != want or set(want) != {"train", "eval", "checkpoint"}:
        fail("%s: phases %r, the ledger and the phase log say %r" % (name, got, want))
    for phase, peak in want.items():
        if not re.search(r"(^|\s)%s\s+%s(\s|$)" % (re.escape(phase), re.escape(format_bytes(peak))),
                         text, re.M):
            fail("%s: the text report has no row %s %s" % (name, phase, format_bytes(peak)))
    with open(html, encoding="utf-8") as f:
        page = f.read()
    if not page.lstrip().lower().startswith("<!doctype html") or not all(
            ('"%s"' % ph) in page for ph in want):
        fail("%s: report --html wrote no page with the phases %s" % (name, sorted(want)))

    # the module's marks and the C API's: the same record, but for the time
    dump = run([vramtrace, "dump", facts["trace_path"]], env=env).stdout
    marks = [re.sub(r"time_ns=\d+ ", "", l) for l in dump.splitlines()
             if l.startswith("mark ") and "epoch 1 done" in l]
    if len(marks) != 2 or marks[0] != marks[1]:
        fail("%s: the module's mark and the C API's differ: %r" % (name, marks))
    print("  %s: traced job %s: peak %s, phases %s" % (
          name, "ok" if len(failures) == failed_before else "FAILED", format_bytes(led.peak(pid)),
          ", ".join("%s %s" % (k, format_bytes(v)) for k, v in sorted(want.items()))))


def check_untraced_job(name, python, env, driver, work):
    failed_before = len(failures)
    os.makedirs(work)
    facts_path = os.path.join(work, "facts.json")
    r = run([python, os.path.join(HERE, "module_job.py")], check=False, timeout=120,
            env=dict(env, LD_LIBRARY_PATH=driver, VTEXAMPLE_PHASE_LOG=os.path.join(work, "p.txt"),
                     VTINSTALL_FACTS=facts_path))
    if r.returncode != 0:
        fail("%s: the job without the tracer exited %d: %s" % (name, r.returncode, r.stderr))
        return
    with open(facts_path) as f:
        facts = json.load(f)
    if facts["trace_path"] is not None:
        fail("%s: untraced, vramtrace.trace_path() said %r" % (name, facts["trace_path"]))
    if glob.glob(os.path.join(work, "*.vtrace")) or glob.glob("vramtrace.*.vtrace"):
        fail("%s: untraced, a trace appeared" % name)
    # nothing measurable: about an empty context manager (contextlib.nullcontext)
    if facts["phase_cost_ratio"] > 3.0:
        fail("%s: untraced, a phase costs %.1f times an empty context manager"
             % (name, facts["phase_cost_ratio"]))
    print("  %s: untraced job %s: a phase costs %.2fx contextlib.nullcontext, a mark %.0f ns"
          % (name, "ok" if len(failures) == failed_before else "FAILED",
             facts["phase_cost_ratio"], facts["mark_ns"]))


def check_pkg_config(name, prefix_dir, env, work):
    """The header and the library, through the pkg-config file."""
    pc_env = dict(env, PKG_CONFIG_PATH=os.path.join(prefix_dir, "lib", "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "vramtrace"], env=pc_env).stdout.split()
    prog = os.path.join(work, "phases.c")
    with open(prog, "w") as f:
        f.write('#include <vramtrace/vramtrace.h>\n'
                'int main(void) { vramtrace_phase_push("x"); vramtrace_phase_pop(); return 0; }\n')
    r = run(["cc", prog, "-o", prog[:-2]] + flags, env=pc_env, check=False)
    if r.returncode != 0:
        fail("%s: a program built with `pkg-config vramtrace` did not build: %s"
             % (name, r.stderr.strip()))


def check_install(name, vramtrace, python, env, driver, work, src):
    print("%s: %s" % (name, vramtrace))
    check_version(name, vramtrace, env, src)
    check_traced_job(name, vramtrace, python, env, driver, os.path.join(work, name + "-traced"))
    check_untraced_job(name, python, env, driver, os.path.join(work, name + "-untraced"))


# ---- the installations -----------------------------------------------------

def wheel(src, python, work, driver):
    dist = os.path.join(work, "dist")
    build_env = {k: v for k, v in os.environ.items()
                 if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    r = run([python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
             "-w", dist, src], env=build_env)
    wheels = glob.glob(os.path.join(dist, "vramtrace-*.whl"))
    print("wheel: built %s in %.0f s" % ([os.path.basename(w) for w in wheels], r.seconds))
    if len(wheels) != 1:
        raise SystemExit("FAIL: pip wheel made %s" % wheels)
    whl = wheels[0]

    # a fresh venv, --no-index
    venv = os.path.join(work, "venv")
    run([python, "-m", "venv", venv])
    vpy = os.path.join(venv, "bin", "python")
    run([vpy, "-m", "pip", "install", "--no-index", "--no-deps", whl], env=clean_env())
    site = run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               env=clean_env()).stdout.strip()
    pkg = os.path.join(site, "vramtrace")
    venv_cmd = os.path.join(venv, "bin", "vramtrace")
    for f in [venv_cmd, pkg + "/__init__.py", pkg + "/lib/libvramtrace.so",
              pkg + "/share/vramtrace/python/sitecustomize.py",
              pkg + "/include/vramtrace/vramtrace.h", pkg + "/lib/pkgconfig/vramtrace.pc"]:
        if not os.path.isfile(f):
            fail("wheel: %s is not installed" % os.path.relpath(f, venv))
    files = elf_deps.elf_files(pkg) + [venv_cmd]
    floor = check_elf("wheel", files)
    tag = os.path.basename(whl)[:-4].split("-")[-1]
    want = "manylinux_%d_%d_x86_64" % floor
    if tag != want:
        fail("wheel: platform tag %s, but its files need glibc %d.%d (%s)"
             % (tag, floor[0], floor[1], want))
    # the command on the venv's PATH, the module without PYTHONPATH
    env = clean_env([os.path.join(venv, "bin")])
    if shutil.which("vramtrace", path=env["PATH"]) != venv_cmd:
        fail("wheel: vramtrace is not on the venv's PATH")
    check_install("venv", "vramtrace", vpy, env, driver, work, src)
    check_pkg_config("venv", pkg, env, work)

    # --user, into a user base of its own
    userbase = os.path.join(work, "userbase")
    uenv = clean_env(PYTHONUSERBASE=userbase)
    run([python, "-m", "pip", "install", "--user", "--no-index", "--no-deps",
         "--break-system-packages", whl], env=uenv)
    check_install("user", os.path.join(userbase, "bin", "vramtrace"), python,
                  clean_env([os.path.join(userbase, "bin")], PYTHONUSERBASE=userbase),
                  driver, work, src)


def tarball(src, python, work, driver):
    out = os.path.join(work, "tarball-out")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["VRAMTRACE_TARBALL_BUILD"] = os.path.join(work, "build-tarball")
    r = run([os.path.join(src, "scripts", "make-tarball.sh"), out], env=env)
    tgz = r.stdout.strip().splitlines()[-1]
    want = "vramtrace-%s-linux-x86_64.tar.gz" % project_version(src)
    print("tarball: made %s in %.0f s" % (os.path.basename(tgz), r.seconds))
    if os.path.basename(tgz) != want:
        fail("tarball: named %s, not %s" % (os.path.basename(tgz), want))
    unpacked = os.path.join(work, "elsewhere", "opt")
    os.makedirs(unpacked)
    with tarfile.open(tgz) as t:
        t.extractall(unpacked)
    top = os.path.join(unpacked, want[:-len(".tar.gz")])
    for d in ("bin", "lib", "include", "share"):
        if not os.path.isdir(os.path.join(top, d)):
            fail("tarball: no %s/" % d)
    check_elf("tarball", elf_deps.elf_files(top))
    env = clean_env([os.path.join(top, "bin")], PYTHONPATH=os.path.join(top, "lib", "python"))
    check_install("tarball", "vramtrace", python, env, driver, work, src)
    check_pkg_config("tarball", top, env, work)
    # moved after unpacking: a prefix that is not where it was
    moved = os.path.join(work, "moved")
    shutil.move(top, moved)
    check_install("tarball-moved", os.path.join(moved, "bin", "vramtrace"), python,
                  clean_env(PYTHONPATH=os.path.join(moved, "lib", "python")), driver, work, src)
    # a path LD_PRELOAD cannot carry: said, not a silently untraced job
    spaced = os.path.join(work, "with space")
    shutil.move(moved, spaced)
    r = run([os.path.join(spaced, "bin", "vramtrace"), "run", "--", "true"], env=clean_env(),
            check=False)
    if r.returncode != 2 or "space or a colon" not in r.stderr:
        fail("tarball in a path with a space: run exited %d: %r" % (r.returncode, r.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", default="")
    ap.add_argument("--keep", help="work in this (new) directory and keep it")
    args = ap.parse_args()
    src, build = os.path.abspath(args.src), os.path.abspath(args.build)
    python = find_python(args.python)
    if not shutil.which("patchelf"):
        skip("patchelf is missing (Debian: patchelf), which the wheel's build needs")
    work = args.keep or tempfile.mkdtemp(prefix="vt-install-")
    os.makedirs(work, exist_ok=True)
    # the simulated GPU, out of the build tree: a driver directory of its own
    driver = os.path.join(work, "driver")
    os.makedirs(driver)
    sim = os.path.join(build, "tests", "simdriver")
    for lib in (os.path.join(sim, "libcuda.so.1"), os.path.join(sim, "runtime", "libsimcudart.so")):
        shutil.copy(lib, driver)
    t0 = time.monotonic()
    try:
        wheel(src, python, work, driver)
        tarball(src, python, work, driver)
    finally:
        if not args.keep and not failures:
            shutil.rmtree(work, ignore_errors=True)
    print("install checks: %.0f s" % (time.monotonic() - t0))
    if failures:
        print("%d failures; the files are in %s" % (len(failures), work), file=sys.stderr)
        return 1
    print("ok: the wheel and the tarball work from their installed files alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
