#!/usr/bin/env bash
# A CPython built from its public source, for the python test suite
# (docs/internals/PYTHON.md, "Tests"): the upstream tarball as Debian's source
# package carries it (pythonX.Y_X.Y.Z.orig.tar.xz), or, where this machine's
# Debian mirror does not serve it, Ubuntu's source package of the same
# name (Ubuntu takes its python packages from Debian), then configured,
# built and installed into scratch directories: a GIL build and a
# free-threaded one (--disable-gil). No PGO, no LTO.
#
#   scripts/cpython-from-source.sh [VERSION [SCRATCH [PREFIX]]]
#       default: 3.14 /tmp/cpy-src /tmp/cpy314  (free-threaded: PREFIXt)
#   JOBS=2             make -j
#   FREE_THREADED=0    the GIL build only
#   FREE_THREADED=only the free-threaded build only (half the time)
#   UBUNTU_SUITES="resolute questing"   where to look after Debian's sid
#
# Downloads go through apt (apt-get source --download-only) with private
# list directories under SCRATCH/apt: apt checks each signed index with its
# archive's keyring (Debian's, from the system; Ubuntu's, from Debian's
# ubuntu-keyring package, unpacked under SCRATCH) and the tarball against
# the index's hashes. The system's apt configuration is not touched, and
# nothing is installed but the build dependencies named below, if missing.
# The tarball must be upstream's: one top directory Python-X.Y.Z, no
# debian/ in it. Then, with both installed:
#   export VRAMTRACE_TEST_PYTHONS=PREFIX/bin/pythonVERSION:PREFIXt/bin/pythonVERSIONt
#   meson setup --reconfigure BUILD && meson test -C BUILD --suite python
# (exported: meson re-runs its configuration by itself when a meson.build
# changes, and tests/python/find_pythons.py reads the variable each time).
set -euo pipefail
ver=${1:-3.14}
scratch=${2:-/tmp/cpy-src}
prefix=${3:-/tmp/cpy${ver/./}}
jobs=${JOBS:-2}
suites=${UBUNTU_SUITES:-resolute questing}
pkg=python$ver

deps=(gcc make pkg-config libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev
      libsqlite3-dev libreadline-dev uuid-dev xz-utils)
missing=()
for d in "${deps[@]}"; do
    dpkg -s "$d" >/dev/null 2>&1 || missing+=("$d")
done
[ ${#missing[@]} -eq 0 ] || apt-get install -y "${missing[@]}" >/dev/null

mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' \
        /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$mirror" ] || { echo "no Debian mirror in the system's apt sources" >&2; exit 1; }

mkdir -p "$scratch/apt/cache" "$scratch/dl"
scratch=$(cd "$scratch" && pwd)
# apt_in NAME LIST-LINE: opts, apt's options for a private list directory
# holding only that line.
opts=()
apt_in() {
    mkdir -p "$scratch/apt/$1/lists/partial"
    echo "$2" > "$scratch/apt/$1/sources.list"
    opts=(-o Dir::Etc::SourceList="$scratch/apt/$1/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$scratch/apt/$1/lists" -o Dir::Cache="$scratch/apt/cache")
}
# fetch NAME LIST-LINE: the orig tarball of $pkg from that archive into dl/;
# the .dsc and the packaging may be missing from a partial mirror: only the
# tarball is needed, and apt checks it against the signed index.
fetch() {
    apt_in "$1" "$2"
    apt-get "${opts[@]}" update >/dev/null 2>&1 || return 1
    (cd "$scratch/dl" && { apt-get "${opts[@]}" source --download-only "$pkg" 2>&1 || true; }) |
        { grep -v '^W:' || true; } | sed "s/^/  $1: /" >&2
    apt-get "${opts[@]}" source --print-uris "$pkg" 2>/dev/null |
        awk -v src="$1" '/orig\.tar\./ { gsub(/\x27/, "", $1); print src, $1, $2, $4 }' |
        head -1 > "$scratch/dl/origin.txt"
    local tarball
    tarball=$(awk '{print $3}' "$scratch/dl/origin.txt")
    [ -n "$tarball" ] && [ -s "$scratch/dl/$tarball" ]
}

if ! fetch debian-sid \
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main"; then
    echo "Debian's mirror has no $pkg orig tarball; trying Ubuntu's source package" >&2
    keyring=$scratch/ubuntu-keyring/usr/share/keyrings/ubuntu-archive-keyring.gpg
    if [ ! -s "$keyring" ]; then
        apt_in debian-sid-bin \
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main"
        apt-get "${opts[@]}" update >/dev/null
        (cd "$scratch/dl" && apt-get "${opts[@]}" download ubuntu-keyring >/dev/null 2>&1)
        dpkg-deb -x "$scratch"/dl/ubuntu-keyring_*.deb "$scratch/ubuntu-keyring"
    fi
    found=
    for suite in $suites; do
        if fetch "ubuntu-$suite" \
                "deb-src [signed-by=$keyring] http://archive.ubuntu.com/ubuntu $suite main"; then
            found=1
            break
        fi
    done
    [ -n "$found" ] || { echo "no $pkg orig tarball found" >&2; exit 1; }
fi
read -r origin uri tarball sha < "$scratch/dl/origin.txt"
top=$(tar -tJf "$scratch/dl/$tarball" | awk -F/ '{print $1}' | sort -u)
case $top in
    Python-$ver.*) ;;
    *) echo "$tarball: top directory '$top', not upstream's Python-$ver.*" >&2; exit 1 ;;
esac
if tar -tJf "$scratch/dl/$tarball" | grep -q "^$top/debian/"; then
    echo "$tarball holds debian/: not the upstream tarball" >&2
    exit 1
fi
echo "$origin: $uri"
echo "  $sha (checked by apt against the signed index)"
rm -rf "${scratch:?}/$top"
tar -xJf "$scratch/dl/$tarball" -C "$scratch"

# build DIR PREFIX [CONFIGURE ARGS...]: out of the source tree, so that
# both builds share one.
build() {
    local dir=$scratch/$1 pre=$2
    shift 2
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "building $top in $dir: configure --prefix=$pre $*"
    (cd "$dir" && "../$top/configure" --prefix="$pre" "$@" > configure.log 2>&1 &&
        make -j"$jobs" > make.log 2>&1 && make install > install.log 2>&1) ||
        { echo "failed: see $dir/*.log" >&2; exit 1; }
}
if [ "${FREE_THREADED:-1}" != only ]; then
    build "build-${ver/./}" "$prefix"
    "$prefix/bin/python$ver" -VV
fi
if [ "${FREE_THREADED:-1}" != 0 ]; then
    build "build-${ver/./}t" "${prefix}t" --disable-gil
    "${prefix}t/bin/python${ver}t" -VV
fi
