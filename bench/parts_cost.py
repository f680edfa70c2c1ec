#!/usr/bin/env python3
"""What the bootstrap's census of parts costs (docs/user/PYTORCH.md,
"Parts"): a training loop of S steps over a model of L Linear layers with
AdamW, on the stand-in torch and the simulated GPU, under `vramtrace run`,
timed by the program itself with a census at every step
(--torch-parts-every 1) and with none after the first (0). The difference
per step is one census of 4 L tensors (parameter, gradient, AdamW's two
states); at the default (every 100 steps) a step pays a hundredth of it.
Best of R rounds each.

    bench/parts_cost.py --build BUILD [--layers 200] [--steps 200] [--rounds 3]
"""
import argparse
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "..", "tests", "pytorch", "standin", "site-packages")

PROGRAM = """
import sys, time
import torch
L, S = int(sys.argv[1]), int(sys.argv[2])
model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(L)])
opt = torch.optim.AdamW(model.parameters())
x = torch.empty(8 * 64 * 4, device="cuda")
x.batch = 8
def step():
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
step()  # the first step's census and AdamW's state: not timed
t = time.perf_counter()
for _ in range(S):
    step()
print(time.perf_counter() - t)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--layers", type=int, default=200)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sim = os.path.join(build, "tests", "simdriver")
    tmp = tempfile.mkdtemp(prefix="vt-parts-cost-")
    prog = os.path.join(tmp, "loop.py")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VTSIM_", "VRAMTRACE_"))}
    env.update(LD_LIBRARY_PATH=sim + ":" + os.path.join(sim, "runtime"), PYTHONPATH=STANDIN,
               VTSIM_MEMORY="8GiB")

    def run(every):
        best = None
        for r in range(a.rounds):
            out = subprocess.run(
                [os.path.join(build, "analyzer", "vramtrace"), "run", "-q", "-o",
                 os.path.join(tmp, "t%d.%d.%%p.vtrace" % (every, r)), "--torch-parts-every",
                 str(every), "--", "python3", prog, str(a.layers), str(a.steps)],
                env=env, capture_output=True, text=True, check=True).stdout
            s = float(out.split()[-1]) / a.steps
            best = s if best is None else min(best, s)
        return best

    base, every = run(0), run(1)
    census = every - base
    tensors = 4 * a.layers
    print("layers %d (%d tensors a census), %d steps, best of %d" % (a.layers, tensors, a.steps,
                                                                     a.rounds))
    print("step without a census: %.1f us" % (base * 1e6))
    print("step with a census:    %.1f us" % (every * 1e6))
    print("one census: %.1f us, %.2f us a tensor" % (census * 1e6, census * 1e6 / tensors))
    print("at the default (every 100 steps): %.2f us a step, %.2f%% of this step"
          % (census * 1e6 / 100, 100 * census / 100 / base))


if __name__ == "__main__":
    main()
