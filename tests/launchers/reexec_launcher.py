#!/usr/bin/env python3
"""`accelerate launch` stand-in: reads its own options, sets what accelerate
sets (ACCELERATE_MIXED_PRECISION, ...) and replaces itself, with exec, by
another Python launcher (agent.py here, torch.distributed.run there): the
same pid, a new program, and the tracer must follow.

    reexec_launcher.py --num_processes N WORKER [ARGS...]
"""
import os
import sys

args = sys.argv[1:]
nproc = "2"
if args[:1] == ["--num_processes"]:
    nproc = args[1]
    args = args[2:]
os.environ["ACCELERATE_MIXED_PRECISION"] = "no"
agent = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent.py")
os.execv(sys.executable, [sys.executable, agent, "--nproc", nproc] + args)
