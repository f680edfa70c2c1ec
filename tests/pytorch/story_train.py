#!/usr/bin/env python3
"""The failures a new PyTorch user meets first, on the stand-in torch and
the simulated GPU (docs/user/PYTORCH.md, "Allocator samples"). Written
against PyTorch's API, with no line of vramtrace in it. After each
optimizer step the program prints what PyTorch's allocator holds
("step N allocated A reserved R"), the truth the report is checked
against.

    python3 story_train.py MODE [STEPS]

leak        keeps each step's 8 MiB output "for metrics": through the
            caching allocator's 20 MiB segments the driver sees a new
            segment every two or three steps, never three rising closings
            in a row; STEPS steps (default 12), no failure
leak_oom    the same leak until the device is full: the uncaught OOM
steady      a warm-up (the optimizer's state made at the first step, a
            cache grown over the first steps) then nothing kept: no growth
nccl        trains STEPS steps with a large activation (the cache keeps it
            reserved), then a communication library's own cuMemAlloc
            (libnccl.so.2 of the tests, through ctypes: NCCL_LIB) asks for
            the free bytes and half the cache and fails: prints "nccl init
            failed"
leak_hold   (rank 1 of two sharing one GPU) leaks STEPS steps, then writes
            the file STORY_READY and holds its memory until STORY_DONE exists
neighbour   (rank 0) waits for STORY_READY, then asks for 32 MiB more than
            the device has free: the uncaught OOM; writes STORY_DONE
"""
import ctypes
import os
import sys
import time

import torch

MiB = 1 << 20
WIDTH = 1024


def keep_for_metrics(out, kept):
    kept.append(torch.empty(8 * MiB, device="cuda"))  # the step's output, kept


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def neighbour():
    try:
        wait_for(os.environ["STORY_READY"])
        free, total = torch.cuda.mem_get_info()
        print("asks %d free %d" % (free + 32 * MiB, free), flush=True)
        torch.empty(free + 32 * MiB, device="cuda")
    finally:
        open(os.environ["STORY_DONE"], "w").close()


def main():
    mode = sys.argv[1]
    if mode == "neighbour":
        return neighbour()
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters())
    kept = []
    step = 0
    while mode == "leak_oom" or step < steps:
        x = torch.empty((96 if mode == "nccl" else 4) * MiB, device="cuda")
        x.batch = 64
        out = model(x)
        if mode == "nccl":
            del x  # the activation freed: its segment stays in PyTorch's cache
            x = None
        loss = loss_fn(out)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if mode in ("leak", "leak_oom", "leak_hold"):
            keep_for_metrics(out, kept)
        del loss, x, out
        step += 1
        print("step %d allocated %d reserved %d" % (step, torch.cuda.memory_allocated(),
                                                     torch.cuda.memory_reserved()), flush=True)
    if mode == "leak_hold":
        open(os.environ["STORY_READY"], "w").close()
        wait_for(os.environ["STORY_DONE"])
    if mode == "nccl":
        # More than is free, less than free and PyTorch's cache together.
        free, total = torch.cuda.mem_get_info()
        cache = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        ask = free + cache // 2
        print("nccl asks %d free %d cache %d" % (ask, free, cache), flush=True)
        nccl = ctypes.CDLL(os.environ["NCCL_LIB"])
        if nccl.ncclCommInitRank(ctypes.c_size_t(ask)):
            print("nccl init failed", flush=True)


if __name__ == "__main__":
    main()
