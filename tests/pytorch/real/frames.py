"""Python frames under Python 3.13 with a real torch imported: device
memory asked for from this script's own lines (the simulated CUDA runtime
through ctypes; the real torch is CPU-only), so the report must name them.
The suite (suite.py) reads the line numbers from the markers below."""
import ctypes

import torch


def grow(rt, n):
    ptr = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(n << 20))  # marker: grow
    return ptr, rc


def main():
    rt = ctypes.CDLL("libsimcudart.so")  # the simulated runtime
    held = [grow(rt, 64) for _ in range(3)]  # marker: main
    x = torch.ones(4, 4)
    print("torch %s computes %.1f with %d blocks held" % (torch.__version__, x.sum().item(),
                                                       sum(1 for _, rc in held if rc == 0)))


main()  # marker: module
