"""A model trained and evaluated on a real PyTorch's CPU, in one of several
ways (MODE), for the real-torch suite (suite.py). It prints its losses (the
same with and without vramtrace) and, where VT_TRUTH names a file, writes
there what it did and what PyTorch itself says its parts were:

  phases   the phases it went through, in order, as the bootstrap is to
           name them (train/eval at the model's own switch; forward,
           backward, optimizer as many as ran)
  census   right after the first optimizer step: the parameters by dtype
           (count, bytes), the buffers', gradients' and optimizer state's
           bytes (the state by key), from torch's own tensors

    python3 cpu_model.py MODE
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.utils.checkpoint as ckpt

MODES = ("adamw", "sgd_accum", "adam_foreach_autocast", "checkpoint", "checkpoint_reentrant",
         "train_override", "compile")
phases = []


def nbytes(t):
    return t.numel() * t.element_size()


def census(model, opt):
    params = {}
    seen = set()
    for p in model.parameters():
        d = str(p.dtype).replace("torch.", "")
        c = params.setdefault(d, [0, 0])
        c[0] += p.numel()
        c[1] += nbytes(p)
        seen.add(id(p))
    state = {}
    for p, st in opt.state.items():
        for k, v in st.items():
            if torch.is_tensor(v):
                state[k] = state.get(k, 0) + nbytes(v)
    return {"parameters": params,
            "buffers": sum(nbytes(b) for b in model.buffers() if b.numel()),
            "gradients": sum(nbytes(p.grad) for p in model.parameters() if p.grad is not None),
            "optimizer_state": state,
            "optimizer": type(opt).__name__}


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return torch.relu(self.norm(self.lin(x)))


class Net(nn.Module):
    """float32 layers, a BatchNorm (buffers: running stats and an int64
    counter) and a bfloat16 side layer (the count by dtype)."""

    def __init__(self, checkpointing=None):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.bn = nn.BatchNorm1d(32)
        self.blocks = nn.ModuleList([Block(32) for _ in range(2)])
        self.out = nn.Linear(32, 4)
        self.side = nn.Linear(16, 4, dtype=torch.bfloat16)
        self.checkpointing = checkpointing

    def forward(self, x):
        h = self.bn(self.inp(x))
        for b in self.blocks:
            if self.checkpointing is None:
                h = b(h)
            else:
                h = ckpt.checkpoint(b, h, use_reentrant=self.checkpointing == "reentrant")
        return self.out(h) + self.side(x.to(torch.bfloat16)).float()


class Student(Net):
    """A model that overrides train(): its teacher stays in eval whatever
    the model is switched to (a frozen part switching is not the phase)."""

    def __init__(self):
        super().__init__()
        self.teacher = nn.Linear(16, 4)
        self.teacher.requires_grad_(False)

    def train(self, mode=True):
        super().train(mode)
        self.teacher.eval()
        return self

    def forward(self, x):
        with torch.no_grad():
            t = self.teacher(x)
        return super().forward(x) + 0 * t


def main():
    mode = sys.argv[1]
    if mode not in MODES:
        sys.exit("cpu_model.py: MODE is one of " + ", ".join(MODES))
    torch.manual_seed(0)
    model = Student() if mode == "train_override" else \
        Net({"checkpoint": "plain", "checkpoint_reentrant": "reentrant"}.get(mode))
    run = model
    if mode == "compile":
        # Debian's build: no C++ compiler in the root, so inductor cannot
        # build its kernels; aot_eager traces forward and backward graphs
        # (dynamo and AOTAutograd) without one.
        run = torch.compile(model, backend="aot_eager")
    if mode == "sgd_accum":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    elif mode == "adam_foreach_autocast":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    micro = 2 if mode == "sgd_accum" else 1
    x = torch.randn(8, 16)
    y = torch.randn(8, 4)
    truth = {"mode": mode}

    model.train()
    phases.append("train")
    for step in range(2):
        opt.zero_grad()
        for _ in range(micro):
            if mode == "adam_foreach_autocast":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    out = run(x)
                loss = (out.float() - y).pow(2).mean() / micro
            else:
                loss = (run(x) - y).pow(2).mean() / micro
            loss.backward()
            phases.extend(["forward", "backward"])
        opt.step()
        phases.append("optimizer")
        if step == 0:
            truth["census"] = census(model, opt)
        print(step, "%.5f" % loss.item())

    model.eval()
    phases.append("eval")
    with torch.no_grad():
        print("eval %.5f" % run(x).sum().item())
    phases.append("forward")
    if mode == "train_override":
        print("teacher training:", model.teacher.training)
        model.train()
        phases.append("train")
        loss = (run(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
        phases.extend(["forward", "backward", "optimizer"])
        print("teacher training:", model.teacher.training)
    truth["phases"] = phases
    if os.environ.get("VT_TRUTH"):
        with open(os.environ["VT_TRUTH"], "w") as f:
            json.dump(truth, f)


if __name__ == "__main__":
    main()
