#!/usr/bin/env python3
"""What the bootstrap's allocator samples cost (docs/user/PYTORCH.md,
"Allocator samples"): one sample is torch._C._cuda_memoryStats (or
torch.cuda.memory_stats) and one VT_REC_PART record through the tracer.

    vramtrace run -q -- python3 bench/torch_samples.py

Under the tracer (it must be preloaded), with whatever torch is on the path
(the stand-in of tests/pytorch/standin on the simulated GPU, or a real one on
a GPU): microseconds a sample, split into the statistics call and the record,
best of 5 rounds of N (default 20000). A step samples three times (forward,
backward, optimizer closings): the cost a step is three samples.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from torch_cost import best_of  # noqa: E402


def main():
    import torch

    sys.path.insert(0, os.path.join(HERE, "..", "preload", "python"))
    import _vramtrace_torch as vt

    tracer = vt._tracer()
    if tracer is None or tracer.part_fn is None:
        sys.exit("run it under vramtrace run (the tracer must be preloaded)")
    torch.empty(1 << 20, device="cuda")  # CUDA initialised: the allocator exists
    n = int(os.environ.get("N", "20000"))
    s = vt._Samples(torch, tracer, vt._Said(lambda m: None))
    stats = (lambda: s.nested(0)) if s.nested is not None else (lambda: s.flat(0))
    record = (lambda: tracer.part_fn(0, vt.PART_ALLOCATOR_SAMPLE, 0, 1, 2, 3, b"forward", b"0"))
    whole = best_of(5, n, lambda: s.take("forward"))
    print("torch %s: a sample %.2f us (statistics %.2f us, record %.2f us); a step of three "
          "samples %.2f us" % (torch.__version__, whole * 1e6, best_of(5, n, stats) * 1e6,
                               best_of(5, n, record) * 1e6, 3 * whole * 1e6))


if __name__ == "__main__":
    main()
