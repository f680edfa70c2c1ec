#!/usr/bin/env python3
"""What the Python bootstrap costs (docs/user/PYTORCH.md, "Cost").

    vramtrace run -q -- python3 bench/torch_cost.py phases   # with a real torch (CPU is enough)
    python3 bench/torch_cost.py startup BUILD                # interpreter start-up, with and without

phases: a CPU model of L Linear layers (tiny: the cost is the hooks', not
the math), forward passes timed without and then with the bootstrap's
phase hooks (python/_vramtrace_torch.py's _Phases, talking to the real
tracer, which must be preloaded), and the same with grad (the backward
watch); prints microseconds per forward and per module call added.

startup: `python3 -c pass` N times with and without the bootstrap on
PYTHONPATH (no torch imported: the import hook waits), best of 5 rounds.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def best_of(rounds, n, body):
    """Seconds per call of body(), the best of rounds rounds of n calls."""
    best = None
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            body()
        dt = (time.perf_counter() - t) / n
        best = dt if best is None else min(best, dt)
    return best


def phases():
    import torch

    sys.path.insert(0, os.path.join(HERE, "..", "preload", "python"))
    import _vramtrace_torch as vt

    tracer = vt._tracer()
    if tracer is None:
        sys.exit("run it under vramtrace run (the tracer must be preloaded)")
    layers = int(os.environ.get("LAYERS", "8"))
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(layers)])
    x = torch.randn(1, 8)
    n = 3000

    def forward_no_grad():
        with torch.no_grad():
            model(x)

    def timed(grad):
        return best_of(5, n, (lambda: model(x)) if grad else forward_no_grad)

    base = {g: timed(g) for g in (False, True)}
    vt._Phases(torch, tracer, vt._Said(lambda m: None)).install()
    hooked = {g: timed(g) for g in (False, True)}
    calls = layers + 1
    print("torch %s, %d modules per forward" % (torch.__version__, calls))
    for g in (False, True):
        d = hooked[g] - base[g]
        print("  %-9s forward %.1f us -> %.1f us: +%.2f us per forward, +%.2f us per module call"
              % ("grad" if g else "no_grad", base[g] * 1e6, hooked[g] * 1e6, d * 1e6,
                 d * 1e6 / calls))


def startup(build):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    boot = dict(env, PYTHONPATH=os.path.join(build, "preload", "python"))
    n = 40

    def run(e):
        return best_of(5, n, lambda: subprocess.run([sys.executable, "-c", "pass"], env=e,
                                                    check=True))

    a, b = run(env), run(boot)
    print("python start-up %.2f ms -> %.2f ms with the bootstrap (+%.2f ms)"
          % (a * 1e3, b * 1e3, (b - a) * 1e3))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "startup":
        startup(sys.argv[2] if len(sys.argv) > 2 else "build")
    else:
        phases()
