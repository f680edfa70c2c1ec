#!/usr/bin/env bash
# A real CPython newer than the system's, for the python and pytorch test
# suites (docs/internals/PYTHON.md, "Tests"), without touching the system: Debian
# unstable's own build of it, unpacked into a scratch directory.
#
#   scripts/debian-python.sh [VERSION [DEST]]     # default: 3.14 /tmp/py314
#
# Downloads (apt-get download, with the system's mirror and keyring and a
# private list directory: the system's apt configuration is left as it is)
# the interpreter's packages and the newer C library and libraries they
# need, unpacks them under DEST/root, points the interpreter at that C
# library (patchelf: its loader and an rpath), and links
# DEST/bin/pythonVERSION and DEST/include/pythonVERSION, where
# tests/python/find_pythons.py looks. Then reconfigure the build:
#   meson setup --reconfigure BUILD && meson test -C BUILD --suite python
# Nothing is installed on the system but patchelf (if missing).
set -euo pipefail
ver=${1:-3.14}
dest=${2:-/tmp/py${ver/./}}
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' \
        /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$mirror" ] || { echo "no Debian mirror in the system's apt sources" >&2; exit 1; }
command -v patchelf >/dev/null || apt-get install -y patchelf >/dev/null

apt_dir=$dest/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache" "$dest/debs" "$dest/root" "$dest/bin" \
    "$dest/include"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" \
    > "$apt_dir/sid.list"
apt=(-o Dir::Etc::SourceList="$apt_dir/sid.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache")
apt-get "${apt[@]}" update >/dev/null
# The interpreter (statically linked with libpython), its standard library
# and headers; and what its binaries need newer than bookworm has.
(cd "$dest/debs" && apt-get "${apt[@]}" download \
    "python$ver" "python$ver-minimal" "libpython$ver-minimal" "libpython$ver-stdlib" \
    "libpython$ver" "libpython$ver-dev" \
    libc6 libexpat1 libssl3t64 libzstd1 libffi8 zlib1g libsqlite3-0 libbz2-1.0 liblzma5 \
    >/dev/null)
for deb in "$dest"/debs/*.deb; do
    dpkg-deb -x "$deb" "$dest/root"
done
libs=$dest/root/usr/lib/x86_64-linux-gnu
exe=$dest/root/usr/bin/python$ver
# --force-rpath: DT_RPATH, which (unlike RUNPATH) also applies to the
# extension modules' libraries, so that none of the system's is mixed in.
patchelf --set-interpreter "$libs/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$libs" "$exe"
ln -sfn "$exe" "$dest/bin/python$ver"
ln -sfn "$dest/root/usr/include/python$ver" "$dest/include/python$ver"
"$dest/bin/python$ver" -c 'import ctypes, sys, sysconfig
print(sys.version.split()[0], sys.executable, sysconfig.get_config_var("CC"))'
