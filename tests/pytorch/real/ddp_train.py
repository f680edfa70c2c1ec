"""Two DDP ranks over gloo on the CPU, for the real-torch suite (suite.py).

    python3 ddp_train.py            starts ranks 0 and 1 (RANK, WORLD_SIZE,
                                    MASTER_ADDR, MASTER_PORT, USE_LIBUV=0:
                                    torchrun 2.6 of Debian's build has no
                                    libuv) and exits with the worst status
    python3 ddp_train.py rank       one rank (what the first form starts)

Each rank writes to VT_TRUTH.<rank> (where VT_TRUTH is set) its phases and
its census after the first step, as cpu_model.py does."""
import json
import os
import socket
import subprocess
import sys


def launch():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), USE_LIBUV="0",
                   GLOO_SOCKET_IFNAME="lo")  # else a warning when the host has no address
        procs.append(subprocess.Popen([sys.executable, __file__, "rank"], env=env))
    return max(p.wait() for p in procs)


def rank():
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cpu_model import census

    dist.init_process_group("gloo")
    r = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(),
                              nn.Linear(32, 4)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + r)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    phases = ["train"]
    model.train()
    truth = {}
    for step in range(2):
        opt.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
        phases += ["forward", "backward", "optimizer"]
        if step == 0:
            truth["census"] = census(model, opt)
        print("rank %d step %d %.5f" % (r, step, loss.item()), flush=True)
    dist.destroy_process_group()
    truth["phases"] = phases
    if os.environ.get("VT_TRUTH"):
        with open("%s.%d" % (os.environ["VT_TRUTH"], r), "w") as f:
            json.dump(truth, f)


if __name__ == "__main__":
    if sys.argv[1:] == ["rank"]:
        rank()
    else:
        sys.exit(launch())
