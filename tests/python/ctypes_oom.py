#!/usr/bin/env python3
"""A program that reaches the driver through ctypes and fails: 3 GiB kept,
then a request larger than the device. Each cuMemAlloc_v2 call prints
"alloc LINE SIZE RESULT" with the line Python itself saw, the truth the
report's stack is checked against (check_ctypes_oom.py)."""
import ctypes
import sys

cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuInit(0)
ctx = ctypes.c_void_p()
cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
cuda.cuCtxSetCurrent(ctx)


def grab(n):
    p = ctypes.c_ulonglong()
    line = sys._getframe().f_lineno + 1
    result = cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n))
    print("alloc %d %d %d" % (line, n, result), flush=True)
    return p


keep = [grab(1 << 30) for _ in range(3)]
grab(40 << 30)
