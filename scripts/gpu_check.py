#!/usr/bin/env python3
"""The checks of scripts/gpu-check.sh: PyTorch workloads traced by
`vramtrace run`, vramtrace's figures against PyTorch's own
(torch.cuda.memory_stats(), torch.cuda.mem_get_info(), the OOM snapshot),
printed as a pass/fail table. Exit status 1 if any check fails.

    gpu_check.py --build BUILD [--python PY] [--simulated]

--simulated: the stand-in torch (tests/pytorch/standin) on the simulated GPU
(tests/simdriver); otherwise the real torch on the real GPU.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20

# The workload: one process, one mode. It prints one JSON line of
# PyTorch's own figures (the truth the trace is compared with).
WORKLOAD = r'''
import json, sys
import torch
mode = sys.argv[1]
dev = torch.device("cuda") if hasattr(torch, "device") else "cuda"
if mode == "train":
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)]).to(dev)
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(2):
        loss = model(torch.randn(4096, 1024, device=dev)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
else:
    keep = []
    try:
        while True:
            keep.append(torch.randn(16 * 1024 * 1024, device=dev))  # 64 MiB
    except torch.cuda.OutOfMemoryError:
        pass
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
free, total = torch.cuda.mem_get_info()
print("TRUTH " + json.dumps({"reserved_peak": s["reserved_bytes.all.peak"], "free": free,
                             "total": total}))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--simulated", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    vramtrace = os.path.join(build, "analyzer", "vramtrace")
    tmp = tempfile.mkdtemp(prefix="vt-gpucheck-")
    prog = os.path.join(tmp, "workload.py")
    with open(prog, "w") as f:
        f.write(WORKLOAD)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMTRACE_", "VTSIM_"))}
    # (tests: a sanitized build's runtimes, which must be loaded first)
    if os.environ.get("VRAMTRACE_GPU_CHECK_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["VRAMTRACE_GPU_CHECK_PRELOAD"]
    if args.simulated:
        sim = os.path.join(build, "tests", "simdriver")
        env["LD_LIBRARY_PATH"] = sim + ":" + os.path.join(sim, "runtime")
        env["PYTHONPATH"] = os.path.join(ROOT, "tests", "pytorch", "standin")
        env["VTSIM_MEMORY"] = "2GiB"
    rows = []

    def check(name, ok, detail):
        rows.append((name, "pass" if ok else "FAIL", detail))

    runs = [("train", "train", {}), ("oom", "oom", {}),
            ("oom, expandable segments", "oom",
             {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})]
    for label, mode, extra in runs:
        out = os.path.join(tmp, mode + str(len(rows)))
        os.mkdir(out)
        e = dict(env, **extra)
        r = subprocess.run([vramtrace, "run", "-q", "-o", os.path.join(out, "t.%p.vtrace"), "--",
                            args.python, prog, mode], env=e, capture_output=True, text=True,
                           timeout=600)
        truth = [json.loads(l[6:]) for l in r.stdout.splitlines() if l.startswith("TRUTH ")]
        if r.returncode != 0 or not truth:
            check(label + ": workload ran", False, (r.stderr.strip().splitlines() or ["?"])[-1])
            continue
        truth = truth[0]
        traces = glob.glob(os.path.join(out, "*.vtrace"))
        rep = json.loads(subprocess.run([vramtrace, "report", "--json"] + traces,
                                        capture_output=True, text=True).stdout or "{}")
        peak = 0
        for p in rep.get("processes", []):
            for d in p.get("devices", []):
                if d.get("kind") == "device":
                    peak = max(peak, d.get("peak_bytes") or 0)
        # The native caching allocator's reserved bytes are its segments:
        # cudaMalloc'd memory, which is what the trace counts (expandable
        # segments: mapped pages, which the trace counts as VMM memory).
        if "expandable" not in label:
            check(label + ": trace peak = PyTorch's reserved peak", peak == truth["reserved_peak"],
                  "%d MiB vs %d MiB" % (peak // MiB, truth["reserved_peak"] // MiB))
        if mode == "oom":
            snaps = glob.glob(os.path.join(out, "*.oom*.pickle"))
            check(label + ": OOM snapshot beside the trace", len(snaps) >= 1,
                  "%d snapshot(s)" % len(snaps))
            text = subprocess.run([vramtrace, "report", "--width", "0"] + traces,
                                  capture_output=True, text=True).stdout
            check(label + ": report tells the failure with the allocator's numbers",
                  "PyTorch's allocator at this failure" in text, "")
    print("%-58s %-5s %s" % ("check", "", "figures"))
    for name, st, detail in rows:
        print("%-58s %-5s %s" % (name, st, detail))
    failed = [r for r in rows if r[1] != "pass"]
    print("%d checks, %d failed (%s)" % (len(rows), len(failed),
                                         "simulated GPU, stand-in torch" if args.simulated
                                         else "real GPU"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
