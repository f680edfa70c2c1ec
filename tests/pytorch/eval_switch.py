#!/usr/bin/env python3
"""A model switched to eval before any forward runs in it: the phases must
follow the switch (docs/user/PYTORCH.md, "Phases"), not wait for a forward.

Three training steps, each first freezing the model's first layer
(`.eval()` on a part of the model: not a phase); then `model.eval()`, a
key/value cache allocated (it belongs to eval), and a request larger than
the device, caught. Written against PyTorch's API, no line of vramtrace."""
import torch

WIDTH = 1024
KV_SIZE = 24 << 20  # the stand-in sizes tensors in bytes
HUGE_SIZE = 1 << 30


def main():
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(2)])
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters())
    model.train()
    for step in range(3):
        list(model.children())[0].eval()  # frozen: its own mode, not the model's
        x = torch.empty(256 * WIDTH, device="cuda")
        x.batch = 256
        loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        opt.zero_grad()
        del loss, x
    model.eval()
    kv = torch.empty(KV_SIZE, device="cuda")
    try:
        torch.empty(HUGE_SIZE, device="cuda")
    except torch.cuda.OutOfMemoryError:
        print("out of memory, caught")
    print("kv cache ready", kv is not None)


if __name__ == "__main__":
    main()
