#!/usr/bin/env python3
"""Example 6: a Python program marks its own phases for vramtrace.

A Python training script without NVTX, using CUDA through ctypes (here the
simulated runtime, libsimcudart.so, found on LD_LIBRARY_PATH), labels its
phases with the snippet documented in include/vramtrace/vramtrace.h. Without
the tracer the calls do nothing.

    vramtrace run -- python3 examples/python_phases.py

Phases: "load" (the weights), "train" (three steps: activations, then
gradients; the activations go before the gradients arrive) and "eval" (a
larger batch, no gradients, but the logits of the whole validation set are
collected on the GPU): eval peaks highest.
"""
import ctypes
import os
import threading
import time

MiB = 1 << 20

# --- the snippet of include/vramtrace/vramtrace.h ---------------------------
vt = ctypes.CDLL(None)   # the process's global scope
push = getattr(vt, "vramtrace_phase_push", None)
pop = getattr(vt, "vramtrace_phase_pop", None)

# --- ground truth for the example's golden test (see example_phases.h) ---
_phase_log = os.environ.get("VTEXAMPLE_PHASE_LOG")


def _log(line):
    if _phase_log:
        with open(_phase_log, "a") as f:
            f.write(line + "\n")


class phase:
    """with phase("train"): ..."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        _log("push %s %d %d" % (self.name, time.monotonic_ns(), threading.get_native_id()))
        if push:
            push(self.name.encode())

    def __exit__(self, *exc):
        if pop:
            pop()
        _log("pop %d %d" % (time.monotonic_ns(), threading.get_native_id()))


# --- CUDA through ctypes -----------------------------------------------------
cudart = ctypes.CDLL(os.environ.get("EXAMPLE_CUDART", "libsimcudart.so"))
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart.cudaFree.argtypes = [ctypes.c_void_p]
cudart.cudaSetDevice.argtypes = [ctypes.c_int]


def empty(nbytes):
    """torch.empty(...) on the GPU"""
    p = ctypes.c_void_p()
    err = cudart.cudaMalloc(ctypes.byref(p), nbytes)
    if err != 0:
        raise MemoryError("cudaMalloc(%d MiB) failed: error %d" % (nbytes // MiB, err))
    return p.value


def free(p):
    cudart.cudaFree(p)


def main():
    if cudart.cudaSetDevice(0) != 0:
        raise SystemExit("python_phases: no CUDA device")
    with phase("load"):
        weights = [empty(256 * MiB) for _ in range(8)]
    for step in range(3):
        with phase("train"):
            acts = [empty(192 * MiB) for _ in range(8)]
            grads = []
            for a in reversed(acts):
                grads.append(empty(256 * MiB))
                free(a)
            for g in grads:
                free(g)
    with phase("eval"):
        logits = []
        for batch in range(6):
            act = empty(1024 * MiB)
            logits.append(empty(256 * MiB))
            free(act)
        for l in logits:
            free(l)
    for w in weights:
        free(w)
    print("python_phases: done")


if __name__ == "__main__":
    main()
