#!/usr/bin/env bash
# The tracer's cost per intercepted event, the two ways docs/internals/PERFORMANCE.md
# ("Where every target stands", runs B and C) and docs/internals/performance-history.md
# (section 1) report it: callgrind instruction counts (repeatable on a busy
# machine) and wall-time medians of alternating runs. NOT part of the suite.
#
#   bench/tracer_cost.sh [--build DIR] [--rounds N] [--depth D] [--pairs N]
#                        [--only wall,callgrind] [LIB ...]
#
# LIB: libvramtrace.so builds to compare (default: DIR/preload/libvramtrace.so;
# pass a saved copy of an older build first to get before/after columns).
# DIR defaults to build-tperf (a release build: meson setup DIR
# -Dbuildtype=release). heaptrack's preload library is measured beside them
# when installed.
#
# callgrind: instructions of the traced thread per event,
# (Ir(2N pairs) - Ir(N pairs)) / 2N, minus the same for the untraced run;
# the writer thread's instructions are reported apart (--separate-threads).
# wall: ns per event, traced minus untraced, median over rounds that run
# every configuration in turn (a burst of load hits all alike).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-tperf
rounds=7
depth=32
pairs=100000
cg_pairs=2000
only=wall,callgrind
libs=()
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --depth) depth=$2; shift ;;
    --pairs) pairs=$2; shift ;;
    --only) only=$2; shift ;;
    -*) echo "usage: $0 [--build DIR] [--rounds N] [--depth D] [--pairs N] [--only wall,callgrind] [LIB ...]" >&2; exit 2 ;;
    *) libs+=("$1") ;;
    esac
    shift
done
[ ${#libs[@]} -gt 0 ] || libs=("$build/preload/libvramtrace.so")
want() { [[ ",$only," == *",$1,"* ]]; }

bin=$build/bench
sim=$build/tests/simdriver
meson compile -C "$build" >/dev/null # bench/meson.build: event_cost and the simulated driver
export LD_LIBRARY_PATH=$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ht=/usr/lib/heaptrack/libheaptrack_preload.so
[ -f "$ht" ] || ht=

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "# tracer cost per event, depth $depth ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg))"

# ------------------------------------------------------------ callgrind
cg_ir() { # pairs lib stackdepth -> "traced-thread-Ir writer-Ir"
    rm -f "$tmp"/cg.* "$tmp"/t.vtrace*
    if [ "$2" = none ]; then
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.%p" \
            "$bin/event_cost" --api cuda --pairs "$1" --depth "$depth" >/dev/null 2>&1
    else
        # LD_PRELOAD through env: set on valgrind itself it would trace the launcher
        valgrind --tool=callgrind --separate-threads=yes --trace-children=yes \
            --callgrind-out-file="$tmp/cg.%p" env LD_PRELOAD="$2" VRAMTRACE_OUTPUT="$tmp/t.vtrace" \
            VRAMTRACE_STACK_DEPTH="$3" "$bin/event_cost" --api cuda --pairs "$1" --depth "$depth" \
            >/dev/null 2>&1
    fi
    local main=0 other=0 f ir
    for f in "$tmp"/cg.*-*; do
        ir=$(awk '/^summary:|^totals:/ {print $2; exit}' "$f")
        case $f in *-01) main=$((main + ir)) ;; *) other=$((other + ir)) ;; esac
    done
    echo "$main $other"
}
if want callgrind; then
    read -r a _ < <(cg_ir $cg_pairs none 0)
    read -r b _ < <(cg_ir $((2 * cg_pairs)) none 0)
    base=$(( (b - a) / (2 * cg_pairs) ))
    echo
    echo "callgrind: simulated driver alone $base instructions/event"
    echo
    echo "| library | stack depth | traced thread instr/event (tracer only) | writer thread instr/event |"
    echo "|---|---|---|---|"
    for lib in "${libs[@]}"; do
        for sd in 0 "$depth"; do
            read -r a1 a2 < <(cg_ir $cg_pairs "$lib" "$sd")
            read -r b1 b2 < <(cg_ir $((2 * cg_pairs)) "$lib" "$sd")
            echo "| $lib | $sd | $(( (b1 - a1) / (2 * cg_pairs) - base )) | $(( (b2 - a2) / (2 * cg_pairs) )) |"
        done
    done
fi

# ----------------------------------------------------------------- wall
run() { # what lib stackdepth -> "cpu_ns_per_pair wall_ns_per_pair"
    rm -f "$tmp"/w.vtrace* "$tmp"/ht.*
    case $1 in
    cuda) "$bin/event_cost" --api cuda --pairs "$pairs" --depth "$depth" ;;
    malloc) "$bin/event_cost" --api malloc --size 64 --pairs "$pairs" --depth "$depth" ;;
    vt) VRAMTRACE_OUTPUT="$tmp/w.vtrace" VRAMTRACE_STACK_DEPTH=$3 LD_PRELOAD=$2 \
        "$bin/event_cost" --api cuda --pairs "$pairs" --depth "$depth" ;;
    ht) LD_PRELOAD=$ht DUMP_HEAPTRACK_OUTPUT="$tmp/ht.out" \
        "$bin/event_cost" --api malloc --size 64 --pairs "$pairs" --depth "$depth" ;;
    esac | sed -n 's/.*cpu_ns_per_pair=\([0-9.]*\) ns_per_pair=\([0-9.]*\).*/\1 \2/p'
}
if want wall; then
    # one line per round; configurations in this order, each "cpu wall"
    configs=(cuda malloc)
    [ -z "$ht" ] || configs+=(ht)
    for lib in "${libs[@]}"; do configs+=("vt:$lib:0" "vt:$lib:$depth"); done
    : >"$tmp/times"
    for ((r = 0; r < rounds; r++)); do
        line=""
        for c in "${configs[@]}"; do
            IFS=: read -r what lib sd <<<"$c"
            line+=" $(run "$what" "$lib" "$sd")"
        done
        echo "$line" >>"$tmp/times"
    done
    # field of configuration i (0-based), measure m (0 cpu, 1 wall)
    f() { echo $((2 * $1 + $2 + 1)); }
    over() { # config base measure -> median of (config - base) / 2 per round
        awk -v a="$(f "$1" "$3")" -v b="$(f "$2" "$3")" '{printf "%.1f\n", ($a - $b) / 2}' "$tmp/times" | median
    }
    ratio() { # config measure -> median of vt/heaptrack per round
        awk -v a="$(f "$1" "$2")" -v b="$(f 0 "$2")" -v h="$(f 2 "$2")" -v m="$(f 1 "$2")" \
            '{printf "%.3f\n", ($a - $b) / ($h - $m)}' "$tmp/times" | median
    }
    echo
    echo "$rounds alternating rounds of $pairs pairs; ns/event = (traced - untraced) / 2, median;"
    echo "cpu = the calling thread's CPU time (the tracer's writer thread is not in it), wall = elapsed"
    echo
    echo "| configuration | cpu ns/event | wall ns/event | ratio to heaptrack (cpu / wall) |"
    echo "|---|---|---|---|"
    for m in 0 1; do
        u[$m]=$(awk -v a="$(f 0 $m)" '{print $a / 2}' "$tmp/times" | median)
        um[$m]=$(awk -v a="$(f 1 $m)" '{print $a / 2}' "$tmp/times" | median)
    done
    echo "| simulated driver, untraced (absolute) | ${u[0]} | ${u[1]} | |"
    echo "| malloc, untraced (absolute) | ${um[0]} | ${um[1]} | |"
    i=2
    if [ -n "$ht" ]; then
        echo "| heaptrack preload only, malloc, depth $depth | $(over 2 1 0) | $(over 2 1 1) | |"
        i=3
    fi
    for lib in "${libs[@]}"; do
        for sd in 0 "$depth"; do
            r="-"
            [ -z "$ht" ] || [ "$sd" = 0 ] || r="$(ratio $i 0) / $(ratio $i 1)"
            echo "| $lib, stacks $sd | $(over $i 0 0) | $(over $i 0 1) | $r |"
            i=$((i + 1))
        done
    done
    echo
    echo "raw ns per pair per round, \"cpu wall\" for: ${configs[*]}"
    cat "$tmp/times"
fi
