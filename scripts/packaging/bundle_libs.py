"""Carries the shared libraries an installed vramtrace needs beyond glibc
inside it, as auditwheel does for manylinux wheels: each is copied from the
system into the tree's library directory under a name of its own
(libunwind.so.8 -> libunwind-vramtrace.so.8, its SONAME too), the files that
need it name the copy, and find it through an $ORIGIN-relative RUNPATH.

A private name, so that the traced program's own libunwind, if it has one,
and ours never stand in for each other. Today that is libunwind.so.8 and
its liblzma.so.5 (why not statically: meson.build). Needs patchelf.

    python3 bundle_libs.py ROOT LIBDIR    # LIBDIR relative to ROOT
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elf_deps  # noqa: E402

SUFFIX = "-vramtrace"


def private_name(name):
    """libunwind.so.8 -> libunwind-vramtrace.so.8"""
    stem, dot, rest = name.partition(".so")
    return stem + SUFFIX + dot + rest


def system_path(path, name):
    """Where the loader finds `name` for `path` on this machine (ldd)."""
    out = subprocess.run(["ldd", path], check=True, capture_output=True, text=True).stdout
    m = re.search(r"^\s*" + re.escape(name) + r" => (\S+)", out, re.M)
    if not m or not os.path.isfile(m.group(1)):
        raise SystemExit("bundle_libs: %s needs %s, which this machine does not have" % (path, name))
    return m.group(1)


def patchelf(*args):
    subprocess.run(["patchelf"] + list(args), check=True)


def bundle(root, libdir):
    libdir_abs = os.path.join(root, libdir)
    carried = {}  # system name -> private name
    work = elf_deps.elf_files(root)
    while work:
        path = work.pop(0)
        for name in elf_deps.needed(path):
            if name in elf_deps.SYSTEM_LIBRARIES or SUFFIX + ".so" in name:
                continue
            if os.path.exists(os.path.join(os.path.dirname(path), name)):
                continue  # one of ours, beside it (libvramtrace.so)
            if name not in carried:
                source = system_path(path, name)
                carried[name] = private_name(name)
                copy = os.path.join(libdir_abs, carried[name])
                os.makedirs(libdir_abs, exist_ok=True)
                shutil.copyfile(source, copy)
                os.chmod(copy, 0o755)
                patchelf("--set-soname", carried[name], copy)
                work.append(copy)
            patchelf("--replace-needed", name, carried[name], path)
            origin = os.path.relpath(libdir_abs, os.path.dirname(path))
            patchelf("--set-rpath", "$ORIGIN" if origin == "." else "$ORIGIN/" + origin, path)
    return carried


def main(argv):
    if len(argv) != 3 or not os.path.isdir(argv[1]):
        sys.stderr.write("usage: bundle_libs.py ROOT LIBDIR\n")
        return 2
    for name, private in sorted(bundle(argv[1], argv[2]).items()):
        print("bundle_libs: carrying %s as %s/%s" % (name, argv[2], private))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
