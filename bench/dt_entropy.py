#!/usr/bin/env python3
"""The entropy floor of a trace's time deltas: what any coder of per-event
times at a given unit must spend, whatever else it does. Reads the output of
`vramtrace dump` of a trace recorded with VRAMTRACE_TIME_UNIT_NS=1.

    vramtrace dump TRACE > trace.dump
    bench/dt_entropy.py trace.dump [UNIT_NS]      # default 1000 (1 us)

Prints the distribution of the deltas and their order-0 entropy, and the
entropy given the previous delta and given the event's stack (bits/event and
B/event). docs/internals/PERFORMANCE.md, "Trace size against heaptrack".
"""
import collections
import math
import re
import sys


def entropy(counts, n, conditional):
    if not conditional:
        return -sum(v / n * math.log2(v / n) for v in counts.values())
    margin = collections.Counter()
    for (ctx, _), v in counts.items():
        margin[ctx] += v
    return -sum(v / n * math.log2(v / margin[ctx]) for (ctx, _), v in counts.items())


def main():
    unit = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    last = prev = None
    c0, c_prev, c_stack = collections.Counter(), collections.Counter(), collections.Counter()
    n = 0
    for line in open(sys.argv[1]):
        if not line.startswith("mem "):
            continue
        t = int(line.split(" ", 2)[1][len("time_ns="):]) // unit
        stack = re.search(r" stack=(\d+)", line).group(1)
        if last is None:
            last = t
            continue
        d = min(t - last, 255)
        last = t
        c0[d] += 1
        c_prev[(prev, d)] += 1
        c_stack[(stack, d)] += 1
        n += 1
        prev = d
    print("deltas", n, "most common (delta, count):", c0.most_common(6))
    for name, counts, cond in (("H(dt)", c0, False), ("H(dt | previous dt)", c_prev, True),
                               ("H(dt | stack)", c_stack, True)):
        h = entropy(counts, n, cond)
        print("%-20s %.3f bits/event  %.4f B/event" % (name, h, h / 8))


if __name__ == "__main__":
    main()
