#!/usr/bin/env python3
"""torch.multiprocessing / mp.spawn stand-in: N workers started with the
multiprocessing start method given ("spawn": fresh interpreters, "fork":
forks of this one), each calling lw_worker.work(rank, local). Exits with the
largest worker exit code.

RANK and LOCAL_RANK are in each worker's environment from its start (set
here before Process.start()): the tracer reads them when it starts, at the
worker's start (docs/user/LAUNCHERS.md, "multiprocessing").

    mp_launcher.py spawn|fork [N]
"""
import multiprocessing
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lw_worker  # noqa: E402


def main():
    method = sys.argv[1]
    nproc = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    os.environ["WORLD_SIZE"] = str(nproc)
    ctx = multiprocessing.get_context(method)
    procs = [ctx.Process(target=lw_worker.work, args=(r, r)) for r in range(nproc)]
    for r, p in enumerate(procs):
        os.environ["RANK"] = os.environ["LOCAL_RANK"] = str(r)
        p.start()
    for p in procs:
        p.join()
    return max(abs(p.exitcode or 0) for p in procs)


if __name__ == "__main__":
    sys.exit(main())
