"""A Python training loop that labels its phases with the `vramtrace`
module, allocating device memory through ctypes (the simulated runtime,
libsimcudart.so, on LD_LIBRARY_PATH). Run by check_install.py with and
without the tracer, from an installed vramtrace only.

It logs its phases the way examples/example_phases.h does (VTEXAMPLE_PHASE_LOG:
the ground truth of tests/examples/ledger_truth.py), marks once through the
module and once through the C API directly (the two must be the same
record), and writes what the module said to VTINSTALL_FACTS (JSON).
"""
import ctypes
import json
import os
import sys
import threading
import time

import vramtrace

MiB = 1 << 20
_phase_log = os.environ["VTEXAMPLE_PHASE_LOG"]


def log(line):
    with open(_phase_log, "a") as f:
        f.write(line + "\n")


class logged_phase(object):
    """vramtrace.phase, with the truth written around it."""

    def __init__(self, name):
        self.inner = vramtrace.phase(name)
        self.name = name

    def __enter__(self):
        log("push %s %d %d" % (self.name, time.monotonic_ns(), threading.get_native_id()))
        self.inner.__enter__()

    def __exit__(self, *exc):
        self.inner.__exit__(*exc)
        log("pop %d %d" % (time.monotonic_ns(), threading.get_native_id()))


cudart = ctypes.CDLL("libsimcudart.so")
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart.cudaFree.argtypes = [ctypes.c_void_p]
cudart.cudaSetDevice.argtypes = [ctypes.c_int]


def alloc(nbytes):
    p = ctypes.c_void_p()
    if cudart.cudaMalloc(ctypes.byref(p), nbytes) != 0:
        raise MemoryError("cudaMalloc(%d) failed" % nbytes)
    return p.value


def train_step(i):
    acts = [alloc((8 + i) * MiB) for _ in range(3)]
    for a in acts:
        cudart.cudaFree(a)


def evaluate():
    logits = [alloc(24 * MiB) for _ in range(2)]
    for a in logits:
        cudart.cudaFree(a)


# the decorator form, on a function of the loop
@vramtrace.phase("checkpoint")
def checkpoint():
    buf = alloc(5 * MiB)
    cudart.cudaFree(buf)


cudart.cudaSetDevice(0)
weights = alloc(64 * MiB)
for epoch in range(2):
    with logged_phase("train"):
        for i in range(3):
            train_step(i)
    with logged_phase("eval"):
        evaluate()
    log("push checkpoint %d %d" % (time.monotonic_ns(), threading.get_native_id()))
    checkpoint()
    log("pop %d %d" % (time.monotonic_ns(), threading.get_native_id()))
    vramtrace.mark("epoch %d done" % epoch)

# the C API's own mark, for comparison with the module's
c_mark = getattr(ctypes.CDLL(None), "vramtrace_mark", None)
if c_mark:
    c_mark(b"epoch 1 done")

facts = {"trace_path": vramtrace.trace_path()}
for bad in (None, 3, "nul\0inside"):
    try:
        vramtrace.phase(bad)
        facts.setdefault("accepted", []).append(repr(bad))
    except (TypeError, ValueError) as e:
        facts.setdefault("refused", []).append(str(e))

# what a phase costs without the tracer, against a context manager that does
# nothing at all (best of 5 rounds, to be robust against a busy machine)
if facts["trace_path"] is None:
    import contextlib
    import timeit
    ph, null = vramtrace.phase("x"), contextlib.nullcontext()

    def best(cm):
        return min(timeit.repeat(lambda: (cm.__enter__(), cm.__exit__(None, None, None)),
                                 number=20000, repeat=5))
    facts["phase_cost_ratio"] = best(ph) / best(null)
    facts["mark_ns"] = min(timeit.repeat(lambda: vramtrace.mark("m"), number=20000,
                                         repeat=5)) / 20000 * 1e9
cudart.cudaFree(weights)
with open(os.environ["VTINSTALL_FACTS"], "w") as f:
    json.dump(facts, f)
sys.exit(0)
