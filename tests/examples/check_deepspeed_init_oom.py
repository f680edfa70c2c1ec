#!/usr/bin/env python3
"""Example 3 (examples/deepspeed_init_oom.c): one 6.93 GiB request fails
with 6.80 GiB free on a 31.50 GiB device. The report names that single
allocation (its stack: flatten_dense_tensors_aligned), its size, the
driver's free bytes, what this process held then and what filled the device
before it (the largest holders, adding up to what the ledger says was live,
NCCL's private-runtime buffers included), and says it is exhausted: this
process's own allocations fill the device."""
from example_harness import parse_args, run_example, format_bytes

MiB = 1 << 20
args = parse_args()
run = run_example(args, ["{vramtrace}", "run", "-o", "{out}/trace.%p.vtrace", "--",
                         "{build}/examples/deepspeed_init_oom"],
                  env={"VTSIM_MEMORY": "31.50GiB"}, expect_status=1, phase_log=True)
led = run.ledger
pid = run.traced_pids()[0] if run.traced_pids() else 0
ooms = run.device(pid)["ooms"]
truth = led.failures(pid)
run.equal("failed allocations", len(ooms), len(truth))
run.equal("failed allocations in the ledger", len(truth), 1)
if ooms and truth:
    o, t = ooms[0], truth[0]
    run.equal("requested_bytes", o["requested_bytes"], t["requested"])
    run.equal("free_bytes", o["free_bytes"], t["free"])
    run.equal("total_bytes", o["total_bytes"], t["total"])
    run.equal("process_bytes", o["process_bytes"], t["process_bytes"])
    run.equal("outside_bytes (this process's context)", o["outside_bytes"], t["context"])
    run.equal("verdict", o["verdict"], "exhausted")
    run.equal("the story's numbers", [format_bytes(t["requested"]), format_bytes(t["free"]),
                                      format_bytes(t["total"])],
              ["6.93 GiB", "6.80 GiB", "31.50 GiB"])
    names = [f.get("function") for f in o.get("frames") or []]
    if "flatten_dense_tensors_aligned" not in names:
        run.fail("the failing allocation's stack does not name flatten_dense_tensors_aligned: %s" % names)
    # What filled the device: the holders add up to everything live.
    top = o.get("top_stacks") or []
    run.equal("largest holders add up to process_bytes", sum(r["bytes"] for r in top),
              t["process_bytes"])
    live = led.live_sizes_at(t["index"], pid)
    nccl = [r for r in top if any(f.get("module") == "libprivrt_user.so" for f in r["frames"])]
    run.equal("NCCL's buffers (private runtime)", sum(r["bytes"] for r in nccl),
              sum(s for s in live if s == 66 * MiB))
    run.says("cudaMalloc of %s (device) failed: cudaErrorMemoryAllocation "
             "(CUDA_ERROR_OUT_OF_MEMORY) from cuMemAlloc_v2" % format_bytes(t["requested"]))
    # exhausted: what freeing would make it fit, from the ledger's figures
    run.says("next: freeing %s of this process's own memory would make it fit" %
             format_bytes(t["requested"] - t["free"]))
    run.says("driver: %s free of %s; this process held %s" % (
        format_bytes(t["free"]), format_bytes(t["total"]), format_bytes(t["process_bytes"])))
    run.says("verdict: exhausted")
    # The failure's phases, from the example's own log of its NVTX ranges:
    # the ranges pushed before the failure and never popped, innermost last.
    open_ranges = []
    with open(run.phase_log) as f:
        for line in f:
            w = line.split()
            if int(w[2] if w[0] == "push" else w[1]) >= int(led.lines[t["index"]]["ns"]):
                break
            if w[0] == "push":
                open_ranges.append(w[1])
            elif open_ranges:
                open_ranges.pop()
    if args.tamper:
        open_ranges.append("tampered")
    run.equal("the failure's phases (innermost, outermost)", (o.get("phase"), o.get("outer_phase")),
              (open_ranges[-1], open_ranges[0]) if open_ranges else (None, None))
    run.says("in phase deepspeed.initialize")
    # The failing call's stack names the function that asked. The failure's
    # line is too long for a pipe's 100 columns to show more than the
    # innermost frame (tensor), so it is read at full width.
    wide = run.text_report("--width", "0")
    if not any("at: tensor (deepspeed_init_oom.c:" in l and
               "<- flatten_dense_tensors_aligned (deepspeed_init_oom.c:" in l
               for l in wide.splitlines()):
        run.fail("the failure's stack (--width 0) does not read tensor <- "
                 "flatten_dense_tensors_aligned")
run.finish()
