"""cuBLAS as PyTorch drives it (aten/src/ATen/cuda/CublasHandlePool.cpp):
the first matmul of a thread gets a cuBLAS handle and a workspace for it,
allocated from the caching allocator (so it is inside a segment, counted
in memory_stats' allocated bytes, and kept until
torch._C._cuda_clearCublasWorkspaces()). Its size is
getChosenWorkspaceSize(): CUBLAS_WORKSPACE_CONFIG's ":SIZE_KiB:COUNT"
pairs summed, default :4096:2:16:8 (8 MiB + 128 KiB; the default of GPUs
before Hopper). The handle's own state is the library's, not modelled."""
import os
import re
import threading

_workspaces = {}  # thread -> the workspace's block
_lock = threading.Lock()
DEFAULT = 4096 * 1024 * 2 + 16 * 1024 * 8


def workspace_size():
    conf = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    if not conf:
        return DEFAULT
    pairs = re.findall(r":([0-9]+):([0-9]+)", conf)
    if not pairs:
        return DEFAULT
    return sum(int(size) * int(count) * 1024 for size, count in pairs)


def handle():
    """getCurrentCUDABlasHandle(): the thread's workspace, made once."""
    from . import _allocator

    key = threading.get_ident()
    with _lock:
        if key not in _workspaces:
            _workspaces[key] = _allocator.allocator(0).malloc(workspace_size())


def clear_workspaces():
    with _lock:
        for block in _workspaces.values():
            block.allocator.free(block)
        _workspaces.clear()
