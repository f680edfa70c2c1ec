#!/usr/bin/env python3
"""A PyTorch training script that dies of "CUDA out of memory" while the
allocator's cache holds three times the request: fragmentation.

Written against PyTorch's API, with no line of vramtrace in it; the tests
run it on the stand-in torch (tests/pytorch/standin) and the simulated GPU.
Train: two steps of a 4-layer model (AdamW) on batches of 8192 rows, whose
64 MiB activations the caching allocator keeps once freed (the optimizer's
state is then cut out of them). Eval: batches of 5120 rows, each layer's
40 MiB output cut out of a cached 64 MiB block (the 24 MiB rest stays free
in that segment), each batch's logits kept. At the fifth batch a 40 MiB
output finds 5 x 24 MiB free in the cache, no block of 40 MiB, and 4 MiB
free on the device: OutOfMemoryError.

    VTSIM_MEMORY=940MiB vramtrace run -- python3 train_oom.py
"""
import sys

import torch

ROWS_TRAIN, ROWS_EVAL, WIDTH = 8192, 5120, 2048


def batch(rows):
    x = torch.empty(rows * WIDTH * 4, device="cuda")
    x.batch = rows
    return x


def main():
    eval_batches = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(4)])
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters())
    model.train()
    for step in range(2):
        loss = loss_fn(model(batch(ROWS_TRAIN)))
        loss.backward()
        opt.step()
        opt.zero_grad()
        del loss
        print("step %d done" % step)
    model.eval()
    logits = []
    with torch.no_grad():
        for _ in range(eval_batches):
            logits.append(model(batch(ROWS_EVAL)))
    print("eval: %d batches" % len(logits))


if __name__ == "__main__":
    main()
