#!/usr/bin/env python3
"""A training loop that keeps 1 MiB a step (a list of per-step tensors, the
classic "loss history" leak), too little for the driver to see at every
step (the caching allocator cuts it from a cached segment), then a request
larger than the device, caught: its OOM snapshot carries the allocator's
history (run with --torch-history). After each optimizer step the program
prints what PyTorch's allocator holds, the truth of the tensors' growth.
Written against PyTorch's API, no line of vramtrace."""
import torch

WIDTH = 1024
STEPS = 12


def main():
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters())
    kept = []
    for step in range(STEPS):
        x = torch.empty(64 * WIDTH * 4, device="cuda")
        x.batch = 64
        loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        print("optimizer step %d allocated %d" % (step, torch.cuda.memory_allocated()), flush=True)
        opt.zero_grad()
        kept.append(torch.empty(1 << 20, device="cuda"))
        del loss, x
    try:
        torch.empty(1 << 40, device="cuda")
    except torch.cuda.OutOfMemoryError:
        print("out of memory, caught")


if __name__ == "__main__":
    main()
