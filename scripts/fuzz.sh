#!/usr/bin/env bash
# A long fuzzing session of the analyzer's harnesses (docs/internals/RELIABILITY.md).
#   scripts/fuzz.sh [SECONDS_PER_HARNESS] [HARNESS...]
# Default: 1200 s for each harness of tests/fuzz/meson.build, one after the
# other on one core. Builds build-fuzz (clang, -Dfuzzing=true) if needed.
# Findings are kept going (-fork=1 -ignore_crashes=1) and land in
# build-fuzz/tests/fuzz/work-NAME/crash-*; the grown corpus in .../corpus.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-1200}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(trace_records snapshot trace_file)

if [ ! -d build-fuzz ]; then
    CC=clang meson setup build-fuzz -Dfuzzing=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link >/dev/null || exit 1
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("tests/fuzz/fuzz_$h"); done
meson compile -C build-fuzz "${targets[@]}" >/dev/null || exit 1

status=0
for h in "${harnesses[@]}"; do
    work=build-fuzz/tests/fuzz/work-$h
    extra=()
    [ "$h" = snapshot ] && extra=(tests/data/pytorch-snapshots)
    echo "== $h: $seconds s"
    VT_FUZZ_SECONDS=$seconds VT_FUZZ_ARGS="-fork=1 -ignore_crashes=1 ${VT_FUZZ_ARGS:-}" \
        tests/fuzz/run_fuzzer.sh "build-fuzz/tests/fuzz/fuzz_$h" "$h" "tests/fuzz/corpus/$h" \
        "$work" "${extra[@]}" > "$work.log" 2>&1 || status=1
    # Fork mode's progress lines: "#EXECUTIONS: cov: .. corp: N .. time: Ss"
    grep -E '^#[0-9]+: ' "$work.log" | tail -1
    grep -E 'INFO: exiting|ERROR|deadly signal' "$work.log" | tail -3
    echo "   corpus: $(ls "$work/corpus" | wc -l) inputs, $(du -sh "$work/corpus" | cut -f1); findings: $(ls "$work" | grep -cE '^(crash|leak|timeout|oom)-')"
done
exit $status
