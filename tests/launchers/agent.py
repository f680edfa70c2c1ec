#!/usr/bin/env python3
"""A torchrun stand-in (the elastic agent of one node): starts N workers as
`subprocess` children with the agent's environment plus what torchrun sets
(RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK,
MASTER_ADDR/PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_RUN_ID), waits,
and exits 0 if every worker did, else 1 (as torchrun reports a failed
group).

    agent.py [--nproc N] [--visible] [--restart] [--kill-rank R] [--daemon] WORKER [ARGS...]

--visible    each worker sees one GPU: CUDA_VISIBLE_DEVICES=<local rank % 2>
             (as a scheduler pins ranks), so every rank's GPU is its "device 0"
--restart    a worker that fails is started again, once, with
             TORCHELASTIC_RESTART_COUNT=1 (as an elastic agent restarts)
--kill-rank  rank R is SIGKILLed 0.3 s after it says "ready" (LW_HOLD_MS keeps
             it alive)
--daemon     the agent daemonises first (double fork + setsid, like an agent
             started detached): its workers are no descendants of the command
             `vramtrace run` started; the foreground process waits for the
             daemon's word through a pipe and exits with its status
A WORKER ending in .py is run with this Python.
"""
import os
import signal
import subprocess
import sys
import time


def worker_argv(argv):
    return [sys.executable] + argv if argv[0].endswith(".py") else argv


def start(argv, rank, nproc, attempt, visible):
    env = dict(os.environ)
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
               LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK="0", ROLE_RANK=str(rank),
               MASTER_ADDR="127.0.0.1", MASTER_PORT="29500",
               TORCHELASTIC_RESTART_COUNT=str(attempt), TORCHELASTIC_RUN_ID="lw")
    if visible:
        env["CUDA_VISIBLE_DEVICES"] = str(rank % 2)
    return subprocess.Popen(worker_argv(argv), env=env, stdout=subprocess.PIPE, text=True)


def agent(args):
    nproc, visible, restart, kill_rank = 4, False, False, None
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--nproc":
            nproc = int(args.pop(0))
        elif opt == "--visible":
            visible = True
        elif opt == "--restart":
            restart = True
        elif opt == "--kill-rank":
            kill_rank = int(args.pop(0))
        elif opt == "--daemon":
            pass
    procs = {r: start(args, r, nproc, 0, visible) for r in range(nproc)}
    if kill_rank is not None:
        line = procs[kill_rank].stdout.readline()
        if line.startswith("ready"):
            time.sleep(0.3)  # mid-run: its tracer has written what it had (VRAMTRACE_FLUSH_MS)
            procs[kill_rank].send_signal(signal.SIGKILL)
    status = 0
    for r, p in procs.items():
        p.stdout.read()
        rc = p.wait()
        if rc != 0 and restart:
            q = start(args, r, nproc, 1, visible)
            q.stdout.read()
            rc = q.wait()
        if rc != 0:
            print("agent: rank %d exited %d" % (r, rc), file=sys.stderr)
            status = 1
    return status


def daemonised(args):
    """Double fork + setsid; the foreground waits for the daemon's status."""
    rd, wr = os.pipe()
    if os.fork() > 0:
        os.close(wr)
        data = os.read(rd, 16)
        return int(data or b"1")
    os.close(rd)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    status = agent(args)
    os.write(wr, b"%d" % status)
    os._exit(status)


if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(daemonised(argv) if "--daemon" in argv else agent(argv))
