#!/usr/bin/env bash
# Builds vramtrace twice (plain, and with AddressSanitizer + UBSan) and runs
# the whole test suite in both, the real-torch suite with the plain build
# (scripts/real-torch.sh), runs the reliability suite under
# ThreadSanitizer, then fuzzes the analyzer briefly (clang).
# Ends with the line "N passed, N failed".
# Usage: scripts/test.sh [extra meson test args...]
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1

cuda_opt=()
[ -n "${CUDA_INCLUDE:-}" ] && cuda_opt=(-Dcuda-include="$CUDA_INCLUDE")

# setup DIR [MESON OPTIONS...]: every build here treats warnings as errors
# (the default for people building from source is off, meson.build) and
# must build the tracer (missing CUDA headers fail, rather than leaving out
# every test that runs on the simulated GPU); a build directory that exists
# already is switched to both.
ci_opt=(-Dwerror=true -Dtracer=enabled)
setup() {
    local dir=$1; shift
    # A stale result must not count: the log is the run's own or none.
    rm -f "$dir/meson-logs/testlog.json"
    if [ ! -d "$dir" ]; then
        meson setup "$dir" "${cuda_opt[@]}" "${ci_opt[@]}" "$@" >/dev/null
    else
        # --reconfigure also takes options the directory's meson never saw
        meson setup --reconfigure "$dir" "${cuda_opt[@]}" "${ci_opt[@]}" "$@" >/dev/null
    fi
}

status=0
run_suite() {
    local dir=$1; shift
    setup "$dir" "$@" || return 1
    meson compile -C "$dir" || return 1
    meson test -C "$dir" --print-errorlogs --num-processes 2 ${TEST_ARGS:-}
}

run_suite build || status=1
# The bootstrap against a real PyTorch 2.6 (Debian 13's CPU build, in a root
# made once with debootstrap): BUILD/real-torch/testlog.json, counted below;
# where the root cannot be had it skips in one line.
scripts/real-torch.sh build || status=1
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false || status=1

# ThreadSanitizer over the tracer's reliability suite (threads, forks,
# signals, load). Only that suite: the others add nothing TSan can see, and
# libunwind's per-thread cache crashes inside TSan (docs/internals/RELIABILITY.md).
run_tsan() {
    setup build-tsan -Db_sanitize=thread || return 1
    meson compile -C build-tsan || return 1
    meson test -C build-tsan --print-errorlogs --num-processes 2 --suite reliability
}
run_tsan || status=1

# A third build, clang with libFuzzer: each harness of tests/fuzz/ fuzzes for
# VT_FUZZ_SECONDS (default 20) over its corpus (suite 'fuzz'). Everything is
# instrumented, only the harnesses are built.
run_fuzz() {
    CC=clang setup build-fuzz -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args=-fsanitize=fuzzer-no-link || return 1
    meson compile -C build-fuzz fuzzers || return 1
    meson test -C build-fuzz --no-rebuild --print-errorlogs --suite fuzz
}
run_fuzz || status=1

python3 scripts/count-tests.py build/meson-logs/testlog.json build/real-torch/testlog.json \
    build-asan/meson-logs/testlog.json build-tsan/meson-logs/testlog.json \
    build-fuzz/meson-logs/testlog.json || status=1
exit $status
