"""torch._C, the parts the bootstrap uses (torch/csrc/cuda/Module.cpp)."""
import sys as _sys

from . import _MISSING


def _cuda_attach_out_of_memory_observer(observer):
    """As in PyTorch: the observer goes to the device allocators that exist,
    so before CUDA's lazy initialisation it is silently lost
    (NativeCachingAllocator::attachOutOfMemoryObserver loops over
    device_allocator, empty until init)."""
    from .cuda import _allocator

    for a in _allocator.device_allocators:
        a.observers.append(observer)


def _cuda_clearCublasWorkspaces():
    """Frees the cuBLAS workspaces back to the caching allocator
    (at::cuda::clearCublasWorkspaces)."""
    from .cuda import _blas

    _blas.clear_workspaces()


if "_cuda_attach_out_of_memory_observer" in _MISSING:
    del _cuda_attach_out_of_memory_observer
_sys.modules.setdefault("torch._C", _sys.modules[__name__])
