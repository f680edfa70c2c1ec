"""What the ELF files of an installed vramtrace need from the system
(docs/user/INSTALL.md, "What the wheel needs"): each file's NEEDED entries, and
the newest glibc symbol version it uses, which is the oldest glibc it runs on.

Used by the wheel's build backend (the platform tag), the bundler and
tests/install. Reads with binutils' readelf, which comes with the compiler.

    python3 elf_deps.py DIR    # every ELF file under DIR; exit 1 if one needs
                               # a library that is neither glibc's nor in DIR
"""
import os
import re
import subprocess
import sys

# What a manylinux wheel may need of the system (PEP 600; auditwheel's
# policy, without its X11/GL and libstdc++ entries, which we do not use).
SYSTEM_LIBRARIES = frozenset([
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
    "libresolv.so.2", "libutil.so.1", "ld-linux-x86-64.so.2", "libgcc_s.so.1",
])


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(root):
    """Every regular ELF file under root, sorted."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(d, name)
            if os.path.isfile(p) and not os.path.islink(p) and is_elf(p):
                out.append(p)
    return out


def _readelf(args, path):
    return subprocess.run(["readelf", "-W"] + args + [path], check=True,
                          capture_output=True, text=True).stdout


def needed(path):
    """The NEEDED entries, in order."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _readelf(["-d"], path))


def soname(path):
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", _readelf(["-d"], path))
    return m.group(1) if m else None


def runpath(path):
    m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]",
                  _readelf(["-d"], path))
    return m.group(1) if m else None


def _version_key(v):
    return tuple(int(x) for x in v.split("."))


def glibc_versions(path):
    """The GLIBC_x.y versions the file's undefined symbols ask for."""
    out = _readelf(["-V"], path)
    # only the version needs (.gnu.version_r), not what the file defines
    part = out.split(".gnu.version_r", 1)[1] if ".gnu.version_r" in out else ""
    return sorted(set(re.findall(r"Name: GLIBC_([0-9]+(?:\.[0-9]+)+)", part)), key=_version_key)


def glibc_floor(paths):
    """The newest glibc version any of the files uses, as (major, minor)."""
    newest = (2, 0)
    for p in paths:
        for v in glibc_versions(p):
            newest = max(newest, _version_key(v)[:2])
    return newest


def outside(paths, carried=()):
    """{file: [NEEDED entries neither glibc's nor carried]}."""
    carried = set(carried)
    bad = {}
    for p in paths:
        extra = [n for n in needed(p) if n not in SYSTEM_LIBRARIES and n not in carried]
        if extra:
            bad[p] = extra
    return bad


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.stderr.write("usage: elf_deps.py DIR\n")
        return 2
    files = elf_files(argv[1])
    carried = {soname(p) or os.path.basename(p) for p in files}
    for p in files:
        vs = glibc_versions(p)
        print("%s: NEEDED %s; newest GLIBC_%s" % (os.path.relpath(p, argv[1]),
              " ".join(needed(p)) or "-", vs[-1] if vs else "-"))
    floor = glibc_floor(files)
    print("glibc floor: %d.%d" % floor)
    bad = outside(files, carried)
    for p, extra in bad.items():
        print("NEEDS FROM THE SYSTEM: %s: %s" % (os.path.relpath(p, argv[1]), " ".join(extra)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
