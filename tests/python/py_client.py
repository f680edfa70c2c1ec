# -*- coding: utf-8 -*-
"""A Python program with known functions and lines that allocates device
memory through ctypes (the simulated runtime, libsimcudart.so), run under
the tracer by check_frames.py.

Every allocation stays live to the end (so that each is in the report's
peak breakdown), has a size of its own, and is logged with the truth about
its Python stack, taken by Python itself at the very line of the
cudaMalloc call (sys._getframe, same line): function (co_qualname, or
co_name before 3.11), file and line of each frame, innermost first.

VTPY_FACTS: where the facts go (JSON). VTPY_NATIVE_LIB: the helper library
whose own thread (no Python at all) allocates.
"""
import ctypes
import json
import os
import sys
import threading

MiB = 1 << 20
# RTLD_LOCAL (ctypes' default), as Python loads extension modules: the
# helper library's cudaMalloc reaches the tracer's runtime label hook, which
# finds the runtime in the helper's own dependency tree (docs/internals/HOOKS.md).
cudart = ctypes.CDLL("libsimcudart.so")
cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cudart.cudaSetDevice.argtypes = [ctypes.c_int]
facts = []


def python_stack(frame):
    out = []
    while frame is not None:
        code = frame.f_code
        out.append({"function": getattr(code, "co_qualname", code.co_name),
                    "file": code.co_filename, "line": frame.f_lineno})
        frame = frame.f_back
    return out


def device_alloc(nbytes, site):
    p = ctypes.c_void_p()
    err = cudart.cudaMalloc(ctypes.byref(p), nbytes); here = python_stack(sys._getframe())
    if err != 0:
        raise MemoryError("cudaMalloc failed: %d" % err)
    facts.append({"site": site, "bytes": nbytes, "ptr": p.value,
                  "thread": threading.current_thread().name, "python": here})
    return p.value


class Model:
    def forward(self):
        first = self.layer(0)
        second = self.layer(1)
        return first, second

    def layer(self, i):
        return device_alloc((16 + i) * MiB, "layer%d" % i)


def größe_berechnen():          # a latin-1 name (1 byte per character)
    return device_alloc(40 * MiB, "latin1")


def 分配显存():                   # a name outside latin-1 (2 bytes per character)
    return device_alloc(41 * MiB, "ucs2")


def nested(depth):
    if depth == 0:
        return device_alloc(42 * MiB, "recursive")
    return nested(depth - 1)


def worker():
    device_alloc(43 * MiB, "thread")


def native_thread():
    lib = ctypes.CDLL(os.environ["VTPY_NATIVE_LIB"])
    lib.vtpy_alloc_on_native_thread.argtypes = [ctypes.c_size_t]
    lib.vtpy_alloc_on_native_thread.restype = ctypes.c_void_p
    nbytes = 44 * MiB
    ptr = lib.vtpy_alloc_on_native_thread(nbytes)
    facts.append({"site": "native", "bytes": nbytes, "ptr": ptr, "thread": "native",
                  "python": []})


def native_call():
    lib = ctypes.CDLL(os.environ["VTPY_NATIVE_LIB"])
    lib.vtpy_alloc_from_python.argtypes = [ctypes.c_size_t]
    lib.vtpy_alloc_from_python.restype = ctypes.c_void_p
    nbytes = 45 * MiB
    ptr = lib.vtpy_alloc_from_python(nbytes); here = python_stack(sys._getframe())
    facts.append({"site": "native_call", "bytes": nbytes, "ptr": ptr,
                  "thread": threading.current_thread().name, "python": here})


def main():
    if cudart.cudaSetDevice(0) != 0:
        raise SystemExit("py_client: no CUDA device")
    Model().forward()
    größe_berechnen()
    分配显存()
    nested(3)
    t = threading.Thread(target=worker, name="py-worker")
    t.start()
    t.join()
    native_thread()
    native_call()
    with open(os.environ["VTPY_FACTS"], "w") as f:
        json.dump({"version": list(sys.version_info[:2]), "facts": facts}, f)


if __name__ == "__main__":
    main()
