#!/usr/bin/env python3
"""A model, its gradients and AdamW's state of known sizes, for the parts
of the report (docs/user/PYTORCH.md, "Parts"). Written against PyTorch's
API, with no line of vramtrace in it; the tests run it on the stand-in
torch (tests/pytorch/standin) and the simulated GPU.

Parameters: two float32 Linear layers of 1024 x 4096 (16 MiB each) and a
bfloat16 one of 1024 x 4096 (8 MiB): 12,582,912 parameters, 40 MiB. A
12 MiB float32 buffer. Gradients: 40 MiB. AdamW: two states of each
parameter's dtype, 80 MiB.

    python3 parts_train.py MODE

full          one training step (the peak: AdamW's state made), then a
              request too large for the GPU, caught (an OOM with every
              part live)
train         the training step alone
clean         the training step with its activations (24 MiB) held to
              its end, where the program prints what the stand-in's
              allocator holds ("peak allocated A reserved R": the peak);
              then everything freed, no failure
mixed         as full, with an fp32 master copy of every parameter put in
              the optimizer's state after the step (as mixed-precision
              wrappers keep one): 48 MiB more state than AdamW's
no_optimizer  forward and backward, no optimizer
inference     forward only, under no_grad
no_model      AdamW over bare tensors whose .grad the program sets: no
              module is ever called
fail_early    a forward, then an OOM before the first step (uncaught)
"""
import sys

import torch

MiB = 1 << 20


class Net(torch.nn.Module):
    def __init__(self):
        torch.nn.Module.__init__(self)
        self.body = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                        torch.nn.Linear(4096, 1024))
        self.head = torch.nn.Linear(1024, 4096, dtype=torch.bfloat16)
        self.register_buffer("running_stat", torch.empty(12 * MiB, device="cuda"))

    def forward(self, x):
        return self.head(self.body(x))


def batch():
    x = torch.empty(8 * 1024 * 4, device="cuda")
    x.batch = 8
    return x


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "full"
    if mode == "no_model":
        params = [torch.empty(16 * MiB, device="cuda", requires_grad=True) for _ in range(2)]
        opt = torch.optim.AdamW(params)
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
        print("no_model: one step")
        return
    model = Net()
    if mode == "inference":
        model.eval()
        with torch.no_grad():
            out = model(batch())
        print("inference: %d bytes out" % out.nbytes)
        return
    opt = torch.optim.AdamW(model.parameters()) \
        if mode in ("full", "train", "mixed", "fail_early", "clean") else None
    model.train()
    out = model(batch())
    held = torch.empty(24 * MiB, device="cuda") if mode == "clean" else None
    loss = out.sum()
    if mode == "fail_early":
        torch.empty(4096 * MiB, device="cuda")  # OutOfMemoryError, before any step
    loss.backward()
    if opt is None:
        print("no_optimizer: gradients made")
        return
    opt.step()
    print("step done")
    if mode == "train":
        return
    if mode == "clean":
        print("peak allocated %d reserved %d" % (torch.cuda.memory_allocated(),
                                                 torch.cuda.memory_reserved()))
        del out, held, loss
        return
    if mode == "mixed":
        for p in model.parameters():
            opt.state[p]["master_param"] = torch.empty(p.numel() * 4, device="cuda")
    try:
        torch.empty(4096 * MiB, device="cuda")
    except torch.cuda.OutOfMemoryError:
        print("out of memory, caught")


if __name__ == "__main__":
    main()
