#!/bin/sh
# Example 2: "23.52 GiB total, 28.25 MiB free, tried to allocate 32 MiB".
#
# One simulated 23.52 GiB GPU shared by three processes: two other jobs
# (untraced, as other people's jobs are) holding 3.80 GiB and 11.44 GiB, and
# a training job traced by vramtrace whose caching allocator runs out
# (cache_flush_oom.c). Prints vramtrace's report of the training job.
#
#     examples/shared_gpu_oom.sh [BUILD_DIR [OUT_DIR]]
#
# BUILD_DIR defaults to build; OUT_DIR (where the trace goes) to a new
# temporary directory. VTSIM_LEDGER, if set, receives the simulated driver's
# ledger of all three processes.
set -eu
build=$(cd "${1:-build}" && pwd)
out=${2:-$(mktemp -d "${TMPDIR:-/tmp}/vramtrace-example2.XXXXXX")}
mkdir -p "$out"

sim="$build/tests/simdriver"
export LD_LIBRARY_PATH="$sim:$sim/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VTSIM_MEMORY=23.52GiB
export VTSIM_SHARED="vramtrace-example2-$$"   # the three processes share the device
unset VTSIM_DEVICES

holders=""
cleanup() {
    for pid in $holders; do kill "$pid" 2>/dev/null || true; done
    for pid in $holders; do wait "$pid" 2>/dev/null || true; done
    rm -f "/dev/shm/vtsim-$VTSIM_SHARED"
}
trap cleanup EXIT INT TERM

# Each holder also pays for its CUDA context (384 MiB on the simulated GPU),
# so nvidia-smi would show 3.80 GiB and 11.44 GiB for them.
start_holder() {
    "$build/examples/gpu_holder" "$1" >"$out/holder.$2.out" &
    holders="$holders $!"
    tries=0
    until grep -q ready "$out/holder.$2.out" 2>/dev/null; do
        tries=$((tries + 1))
        if [ $tries -gt 200 ] || ! kill -0 "$!" 2>/dev/null; then
            echo "shared_gpu_oom: the other process $2 did not start" >&2
            exit 1
        fi
        sleep 0.05
    done
}
start_holder 3678058496 1     # 3.43 GiB + context = 3.80 GiB
start_holder 11880953344 2    # 11.06 GiB + context = 11.44 GiB

status=0
"$build/analyzer/vramtrace" run -o "$out/train.%p.vtrace" -- "$build/examples/cache_flush_oom" || status=$?
echo
"$build/analyzer/vramtrace" report "$out"
exit $status
