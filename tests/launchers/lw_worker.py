#!/usr/bin/env python3
"""A rank of the launcher stand-ins in Python: what lw_worker.c does, through
ctypes and the simulated runtime (libsimcudart.so on LD_LIBRARY_PATH), as a
PyTorch rank reaches the driver through its runtime. Run as a program (the
rank from the environment) or called as work(rank, local) by a
multiprocessing launcher (which sets RANK and LOCAL_RANK first, as scripts
started by mp.spawn do before init_process_group)."""
import ctypes
import os
import sys
import time

MiB = 1 << 20


def work(rank=None, local=None):
    if rank is not None:
        os.environ["RANK"] = str(rank)
        os.environ["LOCAL_RANK"] = str(local if local is not None else rank)
    env = os.environ
    rank = int(next((env[k] for k in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
                     if env.get(k)), 0))
    local = int(next((env[k] for k in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")
                      if env.get(k)), rank))
    rt = ctypes.CDLL("libsimcudart.so")
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaFree.argtypes = [ctypes.c_void_p]
    rt.cudaSetDevice.argtypes = [ctypes.c_int]
    count = ctypes.c_int(0)
    if rt.cudaGetDeviceCount(ctypes.byref(count)) != 0 or count.value < 1:
        sys.stderr.write("lw_worker.py rank %d: no device\n" % rank)
        return 3
    dev = 0 if "CUDA_VISIBLE_DEVICES" in env else local % count.value
    attempt = int(env.get("TORCHELASTIC_RESTART_COUNT", "0") or 0)
    if env.get("LW_LOG"):
        with open(env["LW_LOG"], "a") as f:
            f.write("pid=%d\trank=%d\tlocal=%d\tdev=%d\tvisible=%s\tattempt=%d\n" % (
                os.getpid(), rank, local, dev, env.get("CUDA_VISIBLE_DEVICES", "-"), attempt))
    a, b, c = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    if (rt.cudaSetDevice(dev) or rt.cudaMalloc(ctypes.byref(a), 256 * MiB * (rank + 1))
            or rt.cudaMalloc(ctypes.byref(b), 64 * MiB) or rt.cudaFree(b)
            or rt.cudaMalloc(ctypes.byref(c), 32 * MiB * (rank + 1))):
        sys.stderr.write("lw_worker.py rank %d: allocation failed\n" % rank)
        return 4
    if env.get("LW_FAIL_RANK") == str(rank) and attempt == 0:
        return 1
    if env.get("LW_HOLD_MS"):
        print("ready rank=%d pid=%d" % (rank, os.getpid()), flush=True)
        time.sleep(int(env["LW_HOLD_MS"]) / 1000.0)
    rt.cudaFree(c)
    rt.cudaFree(a)
    return 0


if __name__ == "__main__":
    sys.exit(work())
