#!/usr/bin/env bash
# vramtrace benchmarks, side by side with heaptrack. NOT part of the test
# suite; docs/internals/PERFORMANCE.md gives its latest figures and the method,
# docs/internals/performance-history.md every earlier run and why each figure moved.
#
#   scripts/bench.sh [--quick] [--rounds N] [--only LIST] [--out DIR]
#
#   --quick      smaller parameters (about 3 minutes instead of about 10)
#   --rounds N   alternating rounds per timed configuration (default 5, quick 3)
#   --only LIST  comma list of parts: cost,callgrind,size,analyzer,snapshots
#   --out DIR    where traces and results go (default build-bench/bench-out)
#
# It builds a release tree in build-bench (meson, -Dbuildtype=release), the
# bench programs (bench/*.c, compiled here: the top meson.build does not
# know bench/), installs heaptrack and valgrind if missing, and ends with
# markdown tables on stdout (also in DIR/results.md).
#
# Wall times are medians of alternating runs (A B C A B C ...), so that a
# burst of load from other processes hits every configuration alike;
# ratios are taken inside one round, then their median is reported.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

quick=0
rounds=
only=cost,callgrind,size,analyzer,snapshots
out=$root/build-bench/bench-out
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --rounds) rounds=$2; shift ;;
    --only) only=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--quick] [--rounds N] [--only LIST] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done
want() { [[ ",$only," == *",$1,"* ]]; }

if [ $quick = 1 ]; then
    : "${rounds:=3}"
    cost_pairs=50000; cg_pairs=2000; size_events=1000000
    analyzer_sizes="1000000 10000000"; heaptrack_sizes="1000000"
else
    : "${rounds:=5}"
    cost_pairs=100000; cg_pairs=4000; size_events=4000000
    analyzer_sizes="1000000 10000000 100000000"; heaptrack_sizes="1000000 10000000"
fi

# ---------------------------------------------------------------- install
need=()
command -v heaptrack >/dev/null || need+=(heaptrack)
command -v valgrind >/dev/null || need+=(valgrind)
[ -x /usr/bin/time ] || need+=(time)
command -v zstd >/dev/null || need+=(zstd)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "bench: installing ${need[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
ht_preload=/usr/lib/heaptrack/libheaptrack_preload.so
[ -f "$ht_preload" ] || ht_preload=$(dpkg -L libheaptrack 2>/dev/null | grep 'libheaptrack_preload.so$' | head -1)

# ------------------------------------------------------------------ build
build=$root/build-bench
if [ ! -d "$build" ]; then
    meson setup "$build" -Dbuildtype=release -Dtracer=enabled >/dev/null   # the benchmarks run the tracer
fi
meson compile -C "$build" >/dev/null
bin=$build/bench
mkdir -p "$out"
sim=$build/tests/simdriver

export LD_LIBRARY_PATH=$sim:$sim/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
vt_lib=$build/preload/libvramtrace.so
vramtrace=$build/analyzer/vramtrace
results=$out/results.md
: >"$results"

say() { echo "$*" | tee -a "$results"; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
# Runs a command, prints "seconds maxrss_kib".
timed() { /usr/bin/time -f "%e %M" -o "$out/.time" "$@" >/dev/null 2>"$out/.stderr" || {
    cat "$out/.stderr" >&2; return 1; }; tail -1 "$out/.time"; }

say "# vramtrace benchmarks"
say ""
say "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') (+ working tree)"
say "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
say "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
say "- heaptrack $(dpkg-query -W -f='${Version}' heaptrack 2>/dev/null), valgrind $(valgrind --version 2>/dev/null | sed 's/valgrind-//')"
say "- command: scripts/bench.sh $([ $quick = 1 ] && echo --quick) (rounds=$rounds)"
say ""

# --------------------------------------------------- 1. cost per event
# One traced run. Prints the loop's ns per pair.
cost_run() { # mode depth pairs
    local mode=$1 depth=$2 pairs=$3 trace=$out/cost.vtrace ht=$out/cost.heaptrack
    rm -f "$trace" "$ht"*
    local prog=("$bin/event_cost" --pairs "$pairs" --depth "$depth")
    case $mode in
    cuda) "${prog[@]}" --api cuda ;;
    vt0) VRAMTRACE_OUTPUT=$trace VRAMTRACE_STACK_DEPTH=0 LD_PRELOAD=$vt_lib "${prog[@]}" --api cuda ;;
    vt) VRAMTRACE_OUTPUT=$trace VRAMTRACE_STACK_DEPTH=64 LD_PRELOAD=$vt_lib "${prog[@]}" --api cuda ;;
    malloc) "${prog[@]}" --api malloc --size 64 ;;
    # heaptrack's recording library alone, writing its raw stream to a
    # file (no interpreter): the cheapest heaptrack can be in-process.
    htraw) LD_PRELOAD=$ht_preload DUMP_HEAPTRACK_OUTPUT=$ht "${prog[@]}" --api malloc --size 64 ;;
    # heaptrack as people run it: the interpreter and zstd in other processes.
    ht) heaptrack -o "$ht" "${prog[@]}" --api malloc --size 64 2>/dev/null | grep '^event_cost' ;;
    esac | sed -n 's/.*ns_per_pair=//p'
}

if want cost; then
    say "## 1. Tracer cost per intercepted event (wall time, medians of $rounds alternating rounds, $cost_pairs alloc/free pairs per run)"
    say ""
    say "Columns are ns per EVENT (a pair is two events). 'driver' is the simulated driver's own cost (untraced); tracer columns are the traced time minus the untraced time of the same backend. ratio = vramtrace with stacks / heaptrack, per round, median."
    say ""
    say "| depth | driver ns/event | vt no stacks | vt stacks | malloc ns/event | heaptrack (preload only) | heaptrack (full) | ratio vs preload only | ratio vs full |"
    say "|---|---|---|---|---|---|---|---|---|"
    for depth in 8 32 64; do
        modes=(cuda vt0 vt malloc htraw ht)
        : >"$out/cost.$depth"
        for ((r = 0; r < rounds; r++)); do
            line=""
            for m in "${modes[@]}"; do line+="$(cost_run $m $depth $cost_pairs) "; done
            echo "$line" >>"$out/cost.$depth"
        done
        # Per round: fields cuda vt0 vt malloc htraw ht (ns per pair).
        col() { awk -v c="$1" '{print $c}' "$out/cost.$depth" | median; }
        over() { awk -v a="$1" -v b="$2" '{printf "%.1f\n", ($a-$b)/2}' "$out/cost.$depth" | median; }
        ratio() { awk -v a="$1" -v b="$2" '{printf "%.3f\n", ($3-$1)/($a-$b)}' "$out/cost.$depth" | median; }
        say "| $depth | $(awk "BEGIN{printf \"%.1f\", $(col 1)/2}") | $(over 2 1) | $(over 3 1) | $(awk "BEGIN{printf \"%.1f\", $(col 4)/2}") | $(over 5 4) | $(over 6 4) | $(ratio 5 4) | $(ratio 6 4) |"
    done
    say ""
    say "Raw ns per pair per round (cuda vt0 vt malloc htraw ht): $out/cost.{8,32,64}"
    say ""
fi

# ------------------------------------ 1b. instruction counts (callgrind)
# Here callgrind counts the simulated driver's own cost per event
# (the figure subtracted in part 1) and the analyzer's instructions per
# event, from runs of N and 2N events (the difference cancels start-up).
# The tracer's own instructions per event are counted by bench/tracer_cost.sh
# (heaptrack records nothing under valgrind).
cg_total() { # name command... -> total Ir of all threads
    local cgout=$out/callgrind.$1; shift
    rm -f "$cgout"
    valgrind --tool=callgrind --callgrind-out-file="$cgout" "$@" >/dev/null 2>&1
    awk '/^summary:|^totals:/ {print $2; exit}' "$cgout"
}
if want callgrind; then
    say "## 1b. Instruction counts (valgrind --tool=callgrind; per event = (Ir(2N) - Ir(N)) / N events)"
    say ""
    a=$(cg_total driver.1 "$bin/event_cost" --api cuda --pairs "$cg_pairs" --depth 32)
    b=$(cg_total driver.2 "$bin/event_cost" --api cuda --pairs $((2 * cg_pairs)) --depth 32)
    say "- simulated driver, untraced, depth 32: $(awk -v a="$a" -v b="$b" -v n="$cg_pairs" 'BEGIN{printf "%.0f", (b-a)/(2*n)}') instructions per event"
    cg_events=200000
    for n in $cg_events $((2 * cg_events)); do
        [ -f "$out/synth.cg.$n.vtrace" ] || "$bin/synth_trace" --events $n --out "$out/synth.cg.$n.vtrace" >/dev/null
    done
    a=$(cg_total report.1 "$vramtrace" report --no-symbols "$out/synth.cg.$cg_events.vtrace")
    b=$(cg_total report.2 "$vramtrace" report --no-symbols "$out/synth.cg.$((2 * cg_events)).vtrace")
    say "- vramtrace report --no-symbols, synthetic trace: $(awk -v a="$a" -v b="$b" -v n="$cg_events" 'BEGIN{printf "%.0f", (b-a)/n}') instructions per event"
    say ""
    say "Top functions of the analyzer ($((2 * cg_events)) events, self instructions, share of total):"
    say ""
    say '```'
    callgrind_annotate "$out/callgrind.report.2" 2>/dev/null | awk '/^-+$/ {sep++} sep >= 3 && NF' |
        grep -v '^-' | head -14 | tee -a "$results"
    say '```'
    say ""
fi

# --------------------------------------------------------- 2. trace size
size_row() { # label events vt_bytes ht_bytes
    awk -v l="$1" -v n="$2" -v v="$3" -v h="$4" 'BEGIN {
        printf "| %s | %d | %d | %.3f | %s | %s |\n", l, n, v, v/n,
            (h == "" ? "-" : h), (h == "" ? "-" : sprintf("%.3f", h/n)) }'
}
if want size; then
    say "## 2. Trace size ($size_events events per workload; bytes on disk)"
    say ""
    say "| workload | events | vramtrace bytes | vramtrace B/event | heaptrack .zst bytes | heaptrack B/event |"
    say "|---|---|---|---|---|---|"
    # default time unit (1 us) with and without stacks; then the unit alone
    # changed: 1 ns (exact) and 10 ms (the resolution of heaptrack's times);
    # then the default unit with a time slack of 1 ms and 10 ms
    # (pattern.depth.unit[.slack us])
    for run in train.64.1000 train.0.1000 train.64.1 train.64.10000000 \
               train.64.1000.1000 train.64.1000.10000 \
               random.64.1000 random.0.1000 random.64.1 random.64.10000000 \
               random.64.1000.1000; do
        IFS=. read -r pattern depth unit slack <<<"$run"
        slack=${slack:-0}
        extra=(); [ $pattern = random ] && extra=(--live 1024)
        {
            trace=$out/size.$run.vtrace; rm -f "$trace"
            n=$(VRAMTRACE_OUTPUT=$trace VRAMTRACE_STACK_DEPTH=$depth VRAMTRACE_TIME_UNIT_NS=$unit \
                VRAMTRACE_TIME_SLACK_US=$slack \
                LD_PRELOAD=$vt_lib \
                "$bin/alloc_pattern" --api cuda --pattern $pattern --events "$size_events" "${extra[@]}" |
                sed -n 's/.*events=\([0-9]*\).*/\1/p')
            htb=""
            if [ $depth = 64 ] && [ $unit = 1000 ] && [ $slack = 0 ]; then
                rm -f "$out/size.$pattern.heaptrack"*
                heaptrack -o "$out/size.$pattern.heaptrack" "$bin/alloc_pattern" --api malloc \
                    --pattern $pattern --events "$size_events" "${extra[@]}" >/dev/null 2>&1
                htb=$(stat -c %s "$out/size.$pattern.heaptrack".*)
            fi
            label="$pattern, stacks=$depth, time unit ${unit} ns"
            [ $slack = 0 ] || label+=", slack $slack us"
            say "$(size_row "$label" "$n" "$(stat -c %s "$trace")" "$htb")"
        }
    done
    # bench/event_cost's loop (one site, alloc/free pairs, depth 32): the
    # cost benchmark's pattern, recorded in ns (for trace_recode) and at
    # the default unit, and by heaptrack.
    for run in 1 1000 1000.1000 1000.10000; do
        IFS=. read -r unit slack <<<"$run"
        slack=${slack:-0}
        trace=$out/size.pairs.64.$run.vtrace; rm -f "$trace"
        VRAMTRACE_OUTPUT=$trace VRAMTRACE_STACK_DEPTH=64 VRAMTRACE_TIME_UNIT_NS=$unit \
            VRAMTRACE_TIME_SLACK_US=$slack LD_PRELOAD=$vt_lib \
            "$bin/event_cost" --api cuda --pairs $((size_events / 2)) --depth 32 >/dev/null
        htb=""
        if [ $unit = 1000 ] && [ $slack = 0 ]; then
            rm -f "$out/size.pairs.heaptrack"*
            heaptrack -o "$out/size.pairs.heaptrack" "$bin/event_cost" --api malloc --size 64 \
                --pairs $((size_events / 2)) --depth 32 >/dev/null 2>&1
            htb=$(stat -c %s "$out/size.pairs.heaptrack".*)
        fi
        label="event_cost pairs, depth 32, stacks=64, time unit ${unit} ns"
        [ $slack = 0 ] || label+=", slack $slack us"
        say "$(size_row "$label" "$size_events" "$(stat -c %s "$trace")" "$htb")"
    done
    # The example itself (runtime + NVTX), through the simulated runtime.
    if [ -x "$build/examples/train_eval_phases" ]; then
        steps=$((size_events / 620))
        trace=$out/size.example.vtrace; rm -f "$trace"
        VRAMTRACE_OUTPUT=$trace LD_PRELOAD=$vt_lib "$build/examples/train_eval_phases" \
            --scale 0.001 --steps $steps >/dev/null
        n=$("$vramtrace" dump "$trace" | grep -c '^mem ' || true)
        say "$(size_row "examples/train_eval_phases --steps $steps (runtime+NVTX)" "$n" "$(stat -c %s "$trace")" "")"
    fi
    say ""
    say "What the bytes are (stacks=64, recorded in ns, re-encoded by bench/trace_recode from the same records; variants: the comment at the top of bench/trace_recode.c; compress ns/event: the thread CPU time of zstd alone):"
    say ""
    say "| workload | variant | bytes | B/event | compress ns/event |"
    say "|---|---|---|---|---|"
    for pattern in train random pairs; do
        "$bin/trace_recode" "$out/size.$pattern.64.1.vtrace" | while read -r label bytes events cns; do
            say "$(awk -v p="$pattern" -v l="$label" -v b="$bytes" -v n="$events" -v c="$cns" \
                'BEGIN{printf "| %s | %s | %d | %.3f | %s |", p, l, b, b/n, c}')"
        done
    done
    say ""
fi

# ------------------------------------------------------- 3. analyzer
if want analyzer; then
    say "## 3. Analyzer throughput and memory (one run each; wall time, peak RSS from /usr/bin/time)"
    say ""
    say "Synthetic traces (bench/synth_trace: flat live set of 1000, 512 stacks of 24 frames, skewed). heaptrack_print reads heaptrack's trace of bench/alloc_pattern --pattern random --live 1024 --api malloc with the same number of events."
    say ""
    say "| events | trace MiB | vramtrace report s | M events/s | peak RSS MiB | heaptrack trace MiB | heaptrack_print s | M events/s | peak RSS MiB | speed ratio |"
    say "|---|---|---|---|---|---|---|---|---|---|"
    for n in $analyzer_sizes; do
        trace=$out/synth.$n.vtrace
        [ -f "$trace" ] || "$bin/synth_trace" --events "$n" --out "$trace" >/dev/null
        read -r vs vr < <(timed "$vramtrace" report --no-symbols "$trace")
        hcols="- | - | - | - | -"
        if [[ " $heaptrack_sizes " == *" $n "* ]]; then
            ht=$out/analyzer.$n.heaptrack
            if ! ls "$ht".* >/dev/null 2>&1; then
                heaptrack -o "$ht" "$bin/alloc_pattern" --api malloc --pattern random \
                    --live 1024 --events "$n" >/dev/null 2>&1
            fi
            read -r hs hr < <(timed heaptrack_print "$ht".*)
            hcols=$(awk -v n="$n" -v s="$hs" -v r="$hr" -v b="$(stat -c %s "$ht".*)" -v v="$vs" \
                'BEGIN{printf "%.1f | %.2f | %.2f | %.0f | %.2fx", b/1048576, s, n/s/1e6, r/1024, s/v}')
        fi
        say "$(awk -v n="$n" -v s="$vs" -v r="$vr" -v b="$(stat -c %s "$trace")" \
            'BEGIN{printf "| %d | %.1f | %.2f | %.2f | %.0f |", n, b/1048576, s, n/s/1e6, r/1024}') $hcols |"
    done
    say ""
    say "Same program recorded by both tools (random pattern, 1M events):"
    trace=$out/analyzer.rec.vtrace; rm -f "$trace"
    VRAMTRACE_OUTPUT=$trace LD_PRELOAD=$vt_lib "$bin/alloc_pattern" --api cuda --pattern random \
        --live 1024 --events 1000000 >/dev/null
    read -r vs vr < <(timed "$vramtrace" report "$trace")
    ht=$out/analyzer.1000000.heaptrack
    [ -n "$(ls "$ht".* 2>/dev/null)" ] || heaptrack -o "$ht" "$bin/alloc_pattern" --api malloc \
        --pattern random --live 1024 --events 1000000 >/dev/null 2>&1
    read -r hs hr < <(timed heaptrack_print "$ht".*)
    say "vramtrace report (with symbols) ${vs} s, ${vr} KiB peak RSS; heaptrack_print ${hs} s, ${hr} KiB."
    say ""
fi

# -------------------------------------------------- 4. snapshots
if want snapshots; then
    say "## 4. Reading PyTorch snapshots (vramtrace report FILE.pickle; median of 3)"
    say ""
    snaps=(tests/data/pytorch-snapshots/*.pickle)
    [ -d /work/shared/corpus/pytorch-snapshots ] && snaps+=(/work/shared/corpus/pytorch-snapshots/*.pickle)
    say "| snapshot | KiB | s | peak RSS MiB | exit |"
    say "|---|---|---|---|---|"
    for f in "${snaps[@]}"; do
        [ -f "$f" ] || continue
        times=(); rss=0; rc=0
        for i in 1 2 3; do
            if /usr/bin/time -f "%e %M" -o "$out/.time" "$vramtrace" report "$f" >/dev/null 2>"$out/.stderr"; then
                rc=0
            else
                rc=$?
            fi
            read -r s r <"$out/.time" || true
            times+=("${s:-nan}"); rss=${r:-0}
        done
        say "| $(basename "$f") | $(( $(stat -c %s "$f") / 1024 )) | $(printf '%s\n' "${times[@]}" | median) | $((rss / 1024)) | $rc |"
    done
    say ""
fi

echo "results: $results" >&2
