#!/usr/bin/env bash
# Makes the relocatable tarball, vramtrace-VERSION-linux-ARCH.tar.gz (bin/,
# lib/, include/, share/): unpack it anywhere and run bin/vramtrace, no root
# needed (docs/user/INSTALL.md). Built with -Dstatic-deps=true; the libraries
# that cannot be linked statically travel in lib/ under private names
# (scripts/packaging/bundle_libs.py).
#
#   scripts/make-tarball.sh [OUTDIR]     (default: dist/)
#
# The build directory is build-tarball/ (VRAMTRACE_TARBALL_BUILD to change).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
build="${VRAMTRACE_TARBALL_BUILD:-$root/build-tarball}"
python="$(command -v python3)"

# The prefix is only a name here: nothing in the tarball depends on it.
options=(--prefix=/opt/vramtrace --libdir=lib -Dstatic-deps=true -Dtests=disabled
         -Dtracer=enabled -Dpkgconfig.relocatable=true -Dwerror=true)
if [ -f "$build/build.ninja" ]; then
    meson setup --reconfigure "$build" "$root" "${options[@]}" >/dev/null
else
    meson setup "$build" "$root" "${options[@]}" >/dev/null
fi
meson compile -C "$build" >/dev/null

version="$(meson introspect --projectinfo "$build" |
           "$python" -c 'import json, sys; print(json.load(sys.stdin)["version"])')"
name="vramtrace-$version-linux-$(uname -m)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --no-rebuild --destdir "$stage" >/dev/null
mv "$stage/opt/vramtrace" "$stage/$name"
"$python" "$root/scripts/packaging/bundle_libs.py" "$stage/$name" lib
"$python" "$root/scripts/packaging/elf_deps.py" "$stage/$name" >/dev/null || {
    "$python" "$root/scripts/packaging/elf_deps.py" "$stage/$name" >&2
    echo "make-tarball: a file needs a library the tarball does not carry" >&2
    exit 1
}
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
