#!/usr/bin/env bash
# Runs one libFuzzer harness for a bounded time (the meson test suite
# 'fuzz', and scripts/fuzz.sh for long sessions).
#   run_fuzzer.sh FUZZER NAME SEED_DIR WORK_DIR [EXTRA_CORPUS_DIR...]
# New inputs go to WORK_DIR/corpus (the committed SEED_DIR is only read);
# a crash is saved as WORK_DIR/crash-* and the run fails.
# VT_FUZZ_SECONDS (default 20), VT_FUZZ_JOBS_ARGS: extra libFuzzer flags.
set -uo pipefail
fuzzer=$1 name=$2 seeds=$3 work=$4
shift 4
mkdir -p "$work/corpus"
dict="$(dirname "$0")/$name.dict"
dict_arg=()
[ -f "$dict" ] && dict_arg=(-dict="$dict")
# -close_fd_mask=3: the analyzer's own messages about bad files would
# flood the log; libFuzzer and the sanitizers keep a copy of stderr.
"$fuzzer" -max_total_time="${VT_FUZZ_SECONDS:-20}" -rss_limit_mb=512 -timeout=5 \
    -max_len=65536 -close_fd_mask=3 -print_final_stats=1 \
    -artifact_prefix="$work/" "${dict_arg[@]}" ${VT_FUZZ_ARGS:-} \
    "$work/corpus" "$seeds" "$@"
status=$?
if [ $status -ne 0 ]; then
    echo "run_fuzzer: $name found a problem; the input is $work/crash-* (or leak-/timeout-/oom-)." >&2
    echo "  Reproduce: $fuzzer FILE; keep it as a regression test: copy it to tests/fuzz/crashes/$name/" >&2
fi
exit $status
