#!/usr/bin/env python3
"""Models and optimizers shaped as no test of ours had them, each ending as
it does without vramtrace (docs/internals/RELIABILITY.md). Written against
PyTorch's API, with no line of vramtrace in it.

    python3 hostile_modules.py CASE

deep        a chain of 600 nested modules (train() and eval() recurse
            through each level): no RecursionError
freeze      10,000 modules frozen one by one (.eval() on each) after a
            forward; the modules children() yields are counted into
            $COUNT_FILE
raises      a module whose train() raises: the traceback is the program's
state_list  optimizers whose state is a list, or holds a list: a step runs
"""
import os
import sys

import torch


class Nest(torch.nn.Module):
    def __init__(self, inner=None):
        torch.nn.Module.__init__(self)
        if inner is not None:
            self.inner = inner

    def forward(self, x):
        return self.inner(x) if "inner" in self._modules else x


def deep():
    torch.empty(1024, device="cuda")
    model = Nest()
    for _ in range(600):
        model = Nest(model)
    model.train()
    model.eval()
    print("600 levels: training", model.training)


def freeze():
    calls = [0]
    children = torch.nn.Module.children

    def counted(self):
        for m in children(self):
            calls[0] += 1
            yield m

    torch.nn.Module.children = counted
    model = torch.nn.Sequential(*[torch.nn.Sequential() for _ in range(10000)])
    x = torch.empty(1024, device="cuda")
    model(x)
    for m in list(model.children()):
        m.eval()
    print("frozen:", sum(1 for m in model.children() if not m.training))
    with open(os.environ["COUNT_FILE"], "w") as f:
        f.write("%d\n" % calls[0])


class Refuses(torch.nn.Module):
    def forward(self, x):
        return x

    def train(self, mode=True):
        raise RuntimeError("this module stays as it is")


def raises():
    model = torch.nn.Sequential(Refuses())
    model(torch.empty(1024, device="cuda"))
    model.train()


class ListState(torch.optim.Optimizer):
    def __init__(self, params, inner):
        torch.optim.Optimizer.__init__(self, params)
        self.state = [] if inner is None else {params[0]: [inner]}

    def _step(self):
        return None


def state_list():
    p = torch.empty(4096, device="cuda", requires_grad=True)
    model = torch.nn.Linear(16, 16)
    model(torch.empty(1024, device="cuda"))
    for opt in (ListState([p], None), ListState([p], torch.empty(4096, device="cuda"))):
        opt.step()
    print("stepped")


if __name__ == "__main__":
    {"deep": deep, "freeze": freeze, "raises": raises, "state_list": state_list}[sys.argv[1]]()
