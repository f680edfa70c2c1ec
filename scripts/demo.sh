#!/usr/bin/env bash
# The README demo: on a fresh Debian/Ubuntu machine, installs what is
# missing, builds vramtrace, traces example 1 (a training loop with train and
# eval phases, examples/train_eval_phases.c) on the simulated GPU, and
# prints the report. No GPU or NVIDIA driver needed.
#
#     scripts/demo.sh [OUT_DIR]     (the trace goes to OUT_DIR, default a new temporary directory)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

build=${VRAMTRACE_BUILD:-build}
if [ ! -f "$build/build.ninja" ]; then
    cuda_opt=()
    [ -n "${CUDA_INCLUDE:-}" ] && cuda_opt=(-Dcuda-include="$CUDA_INCLUDE")
    # the demo needs the tracer: missing CUDA headers are an error here
    log=$(meson setup "$build" "${cuda_opt[@]}" -Dtracer=enabled 2>&1) || { echo "$log" >&2; exit 1; }
fi
meson compile -C "$build" >/dev/null
if [ ! -f "$build/preload/libvramtrace.so" ]; then
    echo "demo: $build has no tracer (configured without the CUDA headers):" \
         "meson configure $build -Dcuda-include=DIR -Dtracer=enabled" >&2
    exit 1
fi

out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/vramtrace-demo.XXXXXX")}
mkdir -p "$out"
sim="$build/tests/simdriver"
echo "\$ vramtrace run -o $out/vramtrace.%p.vtrace -- $build/examples/train_eval_phases      # on a simulated 24 GiB GPU"
LD_LIBRARY_PATH="$sim:$sim/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$build/analyzer/vramtrace" run -o "$out/vramtrace.%p.vtrace" -- "$build/examples/train_eval_phases"
echo
echo "\$ vramtrace report $out"
"$build/analyzer/vramtrace" report "$out"
echo
echo "\$ vramtrace report --html $out/report.html $out"
if "$build/analyzer/vramtrace" report --html "$out/report.html" "$out"; then
    echo "open $out/report.html in a browser (one file, works offline)"
fi
