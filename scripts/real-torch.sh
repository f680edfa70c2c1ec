#!/usr/bin/env bash
# The real-torch suite (tests/pytorch/real/, docs/user/PYTORCH.md "Tests"):
# vramtrace's Python bootstrap against a real PyTorch 2.6 - Debian 13's
# CPU build of python3-torch, Python 3.13 - in a root made with debootstrap,
# since Debian 12 has only torch 1.13. No GPU is needed: the bootstrap's CPU
# self-check (VRAMTRACE_TORCH_CPU=1) and the simulated GPU run inside.
#
# Usage: scripts/real-torch.sh [BUILD [TEST...]]   (BUILD: a plain build, default
#        build; TEST: only these of tests/pytorch/real/suite.py)
#
# The root is made once, with Debian's packages (about 1.5 GB, a few
# minutes), under $VRAMTRACE_REAL_TORCH_ROOT (default
# /var/cache/vramtrace/real-torch-trixie), and reused. Each run copies the
# build's analyzer, tracer, bootstrap and simulated driver and the suite into
# a scratch directory of the root's /tmp, runs the suite there with the
# root's /proc mounted in a mount namespace of its own (so no mount outlives
# the run, whatever happens to it), and removes the scratch directory.
#
# Results go to BUILD/real-torch/testlog.json in meson's test-log format, so
# scripts/count-tests.py counts them in test.sh's last line. Where the root
# cannot be had (not root, no debootstrap, no network, no mount namespaces)
# it says so in one line, logs one skipped test and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -eq 0 ] || shift
root=${VRAMTRACE_REAL_TORCH_ROOT:-/var/cache/vramtrace/real-torch-trixie}
packages=python3-torch,python3-numpy,libunwind8,libzstd1,libdw1t64,libjansson4,libncursesw6
out="$build/real-torch"
log="$out/testlog.json"

mkdir -p "$out" || exit 1
rm -f "$log"

skip() {
    echo "real-torch: skipped: $*"
    printf '{"name": "real_torch_suite", "result": "SKIP"}\n' > "$log"
    exit 0
}

for f in analyzer/vramtrace preload/libvramtrace.so preload/python/sitecustomize.py \
         tests/simdriver/libcuda.so tests/simdriver/runtime/libsimcudart.so; do
    [ -e "$build/$f" ] || { echo "real-torch: $build/$f missing: build first" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || skip "not root (debootstrap, chroot and mount need it)"
unshare --mount --propagation private true 2>/dev/null ||
    skip "no mount namespace (unshare --mount): the root's /proc could not be mounted privately"

# One run at a time per root: the root is made and used under this lock.
mkdir -p "$(dirname "$root")" || skip "cannot create $(dirname "$root")"
exec 9>"$root.lock" || skip "cannot lock $root.lock"
flock 9

# A root is complete when its marker is there: a run cut off while making it
# leaves only the .partial directory, made again next time.
if [ ! -e "$root/.vramtrace-complete" ]; then
    command -v debootstrap >/dev/null || skip "no debootstrap (apt-get install debootstrap)"
    echo "real-torch: making $root (Debian 13 with python3-torch; about 1.5 GB, a few minutes, once)"
    rm -rf "$root" "$root.partial"
    if ! debootstrap --variant=minbase --include="$packages" trixie "$root.partial" \
            > "$out/debootstrap.log" 2>&1; then
        rm -rf "$root.partial"
        skip "debootstrap failed (no network?): $(tail -1 "$out/debootstrap.log")"
    fi
    date -u +%FT%TZ > "$root.partial/.vramtrace-complete"
    mv "$root.partial" "$root" || skip "cannot move the root into $root"
fi

work=$(mktemp -d "$root/tmp/vramtrace-real.XXXXXX") || skip "cannot write into $root/tmp"
trap 'rm -rf "$work"' EXIT
inside=${work#"$root"}

# What the suite uses, in the build tree's layout (analyzer/install_paths.c
# finds the tracer and the bootstrap beside the analyzer).
mkdir -p "$work/build/analyzer" "$work/build/preload" "$work/src/tests" || exit 1
cp "$build/analyzer/vramtrace" "$work/build/analyzer/" &&
    cp "$build/preload/libvramtrace.so" "$work/build/preload/" &&
    cp -r "$build/preload/python" "$work/build/preload/" &&
    cp -r "$build/tests/simdriver" "$work/build/tests-simdriver" &&
    cp -r tests/pytorch "$work/src/tests/" || exit 1
find "$work/build/tests-simdriver" -name '*.p' -prune -exec rm -rf {} + 2>/dev/null

start=$(date +%s)
timeout -k 10 900 unshare --mount --propagation private -- /bin/sh -c '
    root=$1 work=$2
    shift 2
    mount -t proc proc "$root/proc" || exit 1
    exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 TORCHINDUCTOR_CACHE_DIR="$work/inductor" \
        /usr/bin/python3 "$work/src/tests/pytorch/real/suite.py" --build "$work/build" \
        --simdriver "$work/build/tests-simdriver" --log "$work/testlog.json" "$@"
' sh "$root" "$inside" "$@"
rc=$?
if [ -s "$work/testlog.json" ]; then
    cp "$work/testlog.json" "$log"
else
    printf '{"name": "real_torch_suite", "result": "FAIL"}\n' > "$log"
fi
echo "real-torch: the suite took $(( $(date +%s) - start )) s (exit $rc)"
[ "$rc" -eq 0 ] || echo "real-torch: a failed test's files are kept under $root/tmp"
[ "$rc" -eq 0 ]
