#!/usr/bin/env bash
# The exports at length (docs/internals/PERFORMANCE.md, "Exports"): for each
# N, a bench/synth_trace trace of N events exported to each format, by
# default and with --all, with GNU time's wall, user CPU and max RSS and the
# file's size; then each Perfetto file parsed in headless Chromium
# (bench/chromium_json_parse.mjs: fetch, text, JSON.parse) and each pickle
# read by Python's pickle.load. NOT part of the suite (10M events: minutes,
# 2.5 GB of files with --all).
#
#   bench/export_cost.sh [--build DIR] [--dir SCRATCH] [N ...]   (default N: 1000000 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
dir=/tmp/vt-export-cost
sizes=()
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) sizes+=("$1"); shift ;;
    esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
mkdir -p "$dir"
vt=$build/analyzer/vramtrace
for n in "${sizes[@]}"; do
    trace=$dir/synth$n.vtrace
    "$build/bench/synth_trace" --events "$n" --out "$trace" >/dev/null
    for fmt in perfetto memory-viz; do
        for all in "" --all; do
            out=$dir/synth$n.$fmt${all:+.all}
            /usr/bin/time -f "$n events, $fmt ${all:-default}: %e s wall, %U s user, %M KB max RSS" \
                "$vt" export --format "$fmt" $all -o "$out" "$trace" 2>&1 | grep -v '^vramtrace export:' || true
            echo "    $(stat -c %s "$out") bytes: $out"
        done
    done
done
if command -v node >/dev/null && [ -x /usr/bin/chromium ]; then
    node bench/chromium_json_parse.mjs "$dir"/synth*.perfetto "$dir"/synth*.perfetto.all || true
fi
for f in "$dir"/synth*.memory-viz "$dir"/synth*.memory-viz.all; do
    python3 -c 'import pickle, resource, sys, time
t = time.time(); s = pickle.load(open(sys.argv[1], "rb"))
print("%s: pickle.load %.2f s, %d MiB max RSS, %d entries" % (sys.argv[1], time.time() - t,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
      sum(len(d) for d in s["device_traces"])))' "$f"
done
