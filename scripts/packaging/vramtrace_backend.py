"""The wheel's build backend (pyproject.toml): meson-python, then two steps
meson-python does not take (docs/user/INSTALL.md):

1. the shared libraries the files need beyond glibc are carried inside the
   wheel, under private names (bundle_libs.py);
2. the platform tag says the oldest glibc the wheel runs on: the newest
   glibc symbol version any of its ELF files uses (elf_deps.py), as
   manylinux_2_N_x86_64 when every file needs only glibc's libraries,
   libgcc_s and what the wheel carries (PEP 600); linux_x86_64 otherwise.

Everything else is meson-python's own hooks, unchanged.
"""
import base64
import hashlib
import os
import platform
import re
import shutil
import sys
import tempfile
import zipfile

import mesonpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle_libs  # noqa: E402
import elf_deps  # noqa: E402

for _hook in ("get_requires_for_build_sdist", "build_sdist", "get_requires_for_build_wheel",
              "prepare_metadata_for_build_wheel"):
    if hasattr(mesonpy, _hook):
        globals()[_hook] = getattr(mesonpy, _hook)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = mesonpy.build_wheel(wheel_directory, config_settings, metadata_directory)
    return finish_wheel(os.path.join(wheel_directory, name))


def platform_tag(root):
    """manylinux_2_N_<arch> if the files under root conform, else linux_<arch>."""
    files = elf_deps.elf_files(root)
    carried = {elf_deps.soname(p) or os.path.basename(p) for p in files}
    arch = platform.machine()
    if elf_deps.outside(files, carried) or arch != "x86_64":
        return "linux_" + arch
    return "manylinux_%d_%d_%s" % (elf_deps.glibc_floor(files) + (arch,))


def _record_line(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        data = f.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (rel, digest, len(data))


def finish_wheel(path):
    work = tempfile.mkdtemp(prefix="vramtrace-wheel-")
    try:
        with zipfile.ZipFile(path) as z:
            members = [i.filename for i in z.infolist() if not i.is_dir()]
            for info in z.infolist():
                z.extract(info, work)
                mode = info.external_attr >> 16
                if mode:
                    os.chmod(os.path.join(work, info.filename), mode & 0o7777)
        dist_info = next(m.split("/")[0] for m in members if m.endswith(".dist-info/WHEEL"))
        package = next(os.path.dirname(os.path.dirname(m)) for m in members
                       if m.endswith("/vramtrace/lib/libvramtrace.so"))
        bundle_libs.bundle(work, package + "/lib")

        tag = platform_tag(work)
        wheel_meta = os.path.join(work, dist_info, "WHEEL")
        with open(wheel_meta) as f:
            text = f.read()
        old_tag = re.search(r"^Tag: (\S+)$", text, re.M).group(1)
        new_tag = old_tag.rsplit("-", 1)[0] + "-" + tag
        with open(wheel_meta, "w") as f:
            f.write(text.replace("Tag: " + old_tag, "Tag: " + new_tag))

        files = []
        for d, dirs, names in os.walk(work):
            dirs.sort()
            files += [os.path.relpath(os.path.join(d, n), work) for n in sorted(names)]
        record = dist_info + "/RECORD"
        lines = [_record_line(work, f) for f in files if f != record] + [record + ",,"]
        with open(os.path.join(work, record), "w") as f:
            f.write("\n".join(lines) + "\n")

        new_path = os.path.join(os.path.dirname(path),
                                os.path.basename(path).replace(old_tag, new_tag))
        tmp = new_path + ".part"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for rel in sorted(f for f in files if f != record) + [record]:
                full = os.path.join(work, rel)
                info = zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (os.stat(full).st_mode & 0xFFFF) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(full, "rb") as f:
                    z.writestr(info, f.read())
        os.remove(path)
        os.replace(tmp, new_path)
        print("vramtrace: wheel tagged %s (%s)" % (new_tag, os.path.basename(new_path)))
        return os.path.basename(new_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
