#!/usr/bin/env python3
"""The checks of scripts/gpu-check.sh: PyTorch workloads traced by
`vramtrace run`, vramtrace's figures against PyTorch's own
(torch.cuda.memory_stats(), torch.cuda.mem_get_info(), the OOM snapshot),
printed as a pass/fail table. Exit status 1 if any check fails.

    gpu_check.py --build BUILD [--python PY] [--simulated]

--simulated: the stand-in torch (tests/pytorch/standin) on the simulated GPU
(tests/simdriver); otherwise the real torch on the real GPU.

Workloads and what each is compared with:
  train        the trace's peak = PyTorch's reserved peak (memory_stats)
  oom          the same; the OOM snapshot beside the trace; the report tells
               the failure with the allocator's numbers (also with
               expandable_segments:True)
  cuBLAS       CUBLAS_WORKSPACE_CONFIG=:4096:8: the workspace PyTorch takes
               from its allocator (allocated bytes clearCublasWorkspaces
               frees) is 32 MiB; the trace's bytes at the matmul's line =
               PyTorch's reserved growth there (simulated: equal; real GPU:
               at least, the rest is cuBLAS's own memory, printed)
  two processes  two processes hold tensors on one GPU at once (simulated:
               VTSIM_SHARED): the report has one GPU with both, its peak =
               the sum of their reserved bytes, each process's bytes at that
               peak = its reserved; mem_get_info's used bytes minus the
               traced ones = the contexts (simulated: the driver ledger's
               context charges; real GPU: the same for both processes)
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20

# The workload: one process, one mode. It prints one JSON line of
# PyTorch's own figures per process (the truth the trace is compared with).
WORKLOAD = r"""
import json, os, sys, time
import torch
MiB = 1 << 20
mode = sys.argv[1]
dev = torch.device("cuda") if hasattr(torch, "device") else "cuda"


def stats():
    torch.cuda.synchronize()
    s = torch.cuda.memory_stats()
    free, total = torch.cuda.mem_get_info()
    return {"reserved_peak": s["reserved_bytes.all.peak"],
            "reserved": s["reserved_bytes.all.current"],
            "allocated": s["allocated_bytes.all.current"], "free": free, "total": total,
            "pid": os.getpid()}


def say_truth(truth):
    # one write(2) per line: the two processes of "share" print at the same
    # moment into one pipe, and print() may split a line into two writes
    # (unbuffered stdout, PYTHONUNBUFFERED), interleaving them
    os.write(1, ("TRUTH " + json.dumps(truth) + "\n").encode())


def wait_for(directory, prefix, n):
    end = time.time() + 120
    while len([f for f in os.listdir(directory) if f.startswith(prefix)]) < n:
        if time.time() > end:
            sys.exit("gpu-check workload: the other process never came")
        time.sleep(0.01)


truth = {}
if mode == "train":
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)]).to(dev)
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(2):
        loss = model(torch.randn(4096, 1024, device=dev)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
elif mode == "oom":
    keep = []
    try:
        while True:
            keep.append(torch.randn(16 * 1024 * 1024, device=dev))  # 64 MiB
    except torch.cuda.OutOfMemoryError:
        pass
elif mode == "cublas":
    # cuBLAS's workspace: PyTorch takes it from its caching allocator at the
    # first matmul of a thread and keeps it until clearCublasWorkspaces.
    a = torch.randn(2048, 2048, device=dev)
    b = torch.randn(2048, 2048, device=dev)
    before = stats()
    c = a @ b  # CUBLAS_LINE
    after = stats()
    torch._C._cuda_clearCublasWorkspaces()
    cleared = stats()
    truth = {"matmul_reserved": after["reserved"] - before["reserved"],
             "workspace": after["allocated"] - cleared["allocated"]}
elif mode == "share-parent":
    # two processes on one GPU: each holds its tensors until both have
    # measured; this parent never touches CUDA
    import subprocess
    procs = [subprocess.Popen([sys.executable, sys.argv[0], "share", sys.argv[2], str(i),
                               str(mib)]) for i, mib in enumerate((256, 384))]
    sys.exit(max(p.wait() for p in procs))
elif mode == "share":
    directory, index, mib = sys.argv[2], sys.argv[3], int(sys.argv[4])
    keep = [torch.randn(mib * MiB // 4, device=dev)]
    open(os.path.join(directory, "ready." + index), "w").close()
    wait_for(directory, "ready.", 2)
    truth = stats()
    truth["share"] = True
    say_truth(truth)
    open(os.path.join(directory, "done." + index), "w").close()
    wait_for(directory, "done.", 2)
    sys.exit(0)
truth.update({k: v for k, v in stats().items() if k not in truth})
say_truth(truth)
"""
CUBLAS_WORKSPACE_CONFIG = ":4096:8"  # 32 MiB, whatever the GPU's default
CUBLAS_WORKSPACE = 4096 * 1024 * 8


def bytes_at_line(rep, path, line):
    """The device bytes live at exit whose stack has path:line (the report's
    Python frames), summed over the processes."""
    total = 0
    for p in rep.get("processes", []):
        for d in p.get("devices", []):
            if d.get("kind") != "device":
                continue
            for site in d.get("live_at_exit", []):
                if any((f.get("file") or "") == path and f.get("line") == line
                       for f in site.get("frames", [])):
                    total += site["bytes"]
    return total


def context_bytes(ledger):
    """Per pid, the device memory the simulated driver charged for contexts."""
    held = {}
    if not ledger or not os.path.exists(ledger):
        return held
    with open(ledger) as f:
        for line in f:
            r = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t"))
            if r["op"].startswith("ctx_"):
                held[int(r["pid"])] = held.get(int(r["pid"]), 0) + int(r["delta"])
    return held


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
        env["PYTHONPATH"] = os.path.join(ROOT, "tests", "pytorch", "standin", "site-packages")
        env["VTSIM_MEMORY"] = "2GiB"
    rows = []

    def check(name, ok, detail):
        rows.append((name, "pass" if ok else "FAIL", detail))

    runs = [("train", "train", {}), ("oom", "oom", {}),
            ("oom, expandable segments", "oom",
             {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
            ("cuBLAS", "cublas", {"CUBLAS_WORKSPACE_CONFIG": CUBLAS_WORKSPACE_CONFIG}),
            ("two processes, one GPU", "share-parent", {})]
    cublas_line = [i + 1 for i, l in enumerate(WORKLOAD.splitlines())
                   if "# CUBLAS_LINE" in l][0]
    for label, mode, extra in runs:
        out = os.path.join(tmp, mode + str(len(rows)))
        os.mkdir(out)
        e = dict(env, **extra)
        argv = [args.python, prog, mode]
        ledger = None
        if mode == "share-parent":
            argv.append(out)
            if args.simulated:
                # one simulated GPU that both processes share, and its ledger
                shared = "gpucheck-%d" % os.getpid()
                ledger = os.path.join(tmp, "share.ledger")
                e.update(VTSIM_SHARED=shared, VTSIM_LEDGER=ledger)
        try:
            r = subprocess.run([vramtrace, "run", "-q", "-o", os.path.join(out, "t.%p.vtrace"),
                                "--"] + argv, env=e, capture_output=True, text=True, timeout=600)
        finally:
            if mode == "share-parent" and args.simulated and \
                    os.path.exists("/dev/shm/vtsim-" + shared):
                os.unlink("/dev/shm/vtsim-" + shared)
        truths = [json.loads(l[6:]) for l in r.stdout.splitlines() if l.startswith("TRUTH ")]
        if r.returncode != 0 or not truths:
            check(label + ": workload ran", False, (r.stderr.strip().splitlines() or ["?"])[-1])
            continue
        truth = truths[0]
        traces = glob.glob(os.path.join(out, "*.vtrace"))
        rep = json.loads(subprocess.run([vramtrace, "report", "--json"] + traces,
                                        capture_output=True, text=True).stdout or "{}")
        peak = 0
        for p in rep.get("processes", []):
            for d in p.get("devices", []):
                if d.get("kind") == "device":
                    peak = max(peak, d.get("peak_bytes") or 0)
        if mode == "cublas":
            check(label + ": workspace PyTorch reports = CUBLAS_WORKSPACE_CONFIG " +
                  CUBLAS_WORKSPACE_CONFIG, truth["workspace"] == CUBLAS_WORKSPACE,
                  "%.3f MiB (allocated bytes freed by clearCublasWorkspaces) vs %d MiB"
                  % (truth["workspace"] / MiB, CUBLAS_WORKSPACE // MiB))
            at_line = bytes_at_line(rep, prog, cublas_line)
            # The trace sees the segments the matmul made PyTorch reserve,
            # plus whatever cuBLAS itself allocates there (its handle;
            # none on the stand-in).
            ok = at_line == truth["matmul_reserved"] if args.simulated else \
                at_line >= truth["matmul_reserved"]
            check(label + ": trace at the matmul line = PyTorch's reserved growth there", ok,
                  "%.2f MiB vs %.2f MiB (%.2f MiB outside PyTorch's allocator)"
                  % (at_line / MiB, truth["matmul_reserved"] / MiB,
                     (at_line - truth["matmul_reserved"]) / MiB))
            continue
        if mode == "share-parent":
            share = [t for t in truths if t.get("share")]
            gpus = rep.get("gpus", [])
            check(label + ": both traced, one GPU in the report",
                  len(share) == 2 and len(traces) == 2 and len(gpus) == 1 and
                  len(gpus[0].get("processes", [])) == 2,
                  "%d traces, %d GPUs" % (len(traces), len(gpus)))
            if len(share) != 2 or len(gpus) != 1:
                continue
            g = gpus[0]
            reserved = sum(t["reserved"] for t in share)
            check(label + ": GPU peak = both processes' PyTorch reserved", g["peak_bytes"] == reserved,
                  "%d MiB vs %d + %d MiB" % (g["peak_bytes"] // MiB, share[0]["reserved"] // MiB,
                                             share[1]["reserved"] // MiB))
            mine = {p["pid"]: p.get("bytes_at_peak") for p in g["processes"]}
            check(label + ": each process's bytes at the GPU peak = its reserved",
                  all(mine.get(t["pid"]) == t["reserved"] for t in share),
                  ", ".join("pid %d %s vs %d MiB" % (t["pid"], (mine.get(t["pid"]) or 0) // MiB,
                                                     t["reserved"] // MiB) for t in share))
            # What each saw used on the device (mem_get_info) is both
            # processes' traced bytes plus what no allocation shows: the
            # contexts (the simulated driver's ledger has them; on a real
            # GPU: contexts and any untraced process).
            used = [t["total"] - t["free"] for t in share]
            outside = [u - g["peak_bytes"] for u in used]
            if args.simulated:
                ctx = sum(context_bytes(ledger).get(t["pid"], 0) for t in share)
                ok = outside == [ctx, ctx]
                what = "the ledger's contexts %d MiB" % (ctx // MiB)
            else:
                ok = outside[0] == outside[1] and outside[0] >= 0
                what = "contexts and untraced"
            check(label + ": mem_get_info's used - traced = " + what, ok,
                  "%s MiB" % " / ".join(str(o // MiB) for o in outside))
            continue
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
    width = max(len(r[0]) for r in rows) if rows else 5
    print("%-*s %-5s %s" % (width, "check", "", "figures"))
    for name, st, detail in rows:
        print("%-*s %-5s %s" % (width, name, st, detail))
    failed = [r for r in rows if r[1] != "pass"]
    print("%d checks, %d failed (%s)" % (len(rows), len(failed),
                                         "simulated GPU, stand-in torch" if args.simulated
                                         else "real GPU"))
    if failed:
        print("(files kept in %s)" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
