#!/usr/bin/env python3
"""DeepSpeed multi-node (pdsh) stand-in: ranks start with a scrubbed
environment, as on a remote node - only PATH, the variables whose names
start with one of DeepSpeed's EXPORT_ENVS prefixes, and the lines of the
env file (.deepspeed_env in the current directory, or DS_ENV_FILE) - through
a shell, as pdsh runs the command. LD_PRELOAD and VRAMTRACE_* reach the
ranks only if the env file names them.

    envfile_launcher.py [--nproc N] WORKER [ARGS...]
"""
import os
import shlex
import subprocess
import sys

EXPORT_ENVS = ["MLFLOW", "NCCL", "PYTHON", "MV2", "UCX"]


def env_file():
    path = os.environ.get("DS_ENV_FILE", ".deepspeed_env")
    out = {}
    if os.path.isfile(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    k, v = line.split("=", 1)
                    out[k] = v
    return out


def main():
    args = sys.argv[1:]
    nproc = 2
    if args[:1] == ["--nproc"]:
        nproc = int(args[1])
        args = args[2:]
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    base.update({k: v for k, v in os.environ.items() if k.startswith(tuple(EXPORT_ENVS))})
    base.update(env_file())
    if args[0].endswith(".py"):
        args = [sys.executable] + args
    procs = []
    for r in range(nproc):
        env = dict(base, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc))
        cmd = "cd %s && exec %s" % (shlex.quote(os.getcwd()), " ".join(map(shlex.quote, args)))
        procs.append(subprocess.Popen(["/bin/sh", "-c", cmd], env=env))
    return max(p.wait() for p in procs)


if __name__ == "__main__":
    sys.exit(main())
