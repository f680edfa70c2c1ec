"""A stand-in for PyTorch, for vramtrace's tests without a GPU.

Its API shape follows PyTorch's own source where vramtrace's Python
bootstrap touches it (torch/cuda/__init__.py _lazy_call and _lazy_init,
torch/csrc/cuda/Module.cpp _cuda_attach_out_of_memory_observer,
torch/cuda/memory.py _snapshot and _record_memory_history,
torch/nn/modules/module.py global module hooks, torch/optim/optimizer.py
global optimizer hooks, autograd's Node.register_prehook and
Variable._execution_engine.queue_callback); its memory is a model of the
native caching allocator (cuda/_allocator.py) that gets segments from the
simulated CUDA runtime (tests/simdriver, libsimcudart.so) through ctypes,
and its _snapshot() has the format of real snapshots
(tests/data/pytorch-snapshots). Tensors hold no data. A matmul (`a @ b`,
torch.matmul) gets cuBLAS's workspace from the caching allocator as
PyTorch does (cuda/_blas.py; torch._C._cuda_clearCublasWorkspaces frees it).

Knobs (tests only): VTSTANDIN_TORCH_VERSION (default 2.5.1),
VTSTANDIN_MISSING=name,name: API names this build lacks
(_cuda_attach_out_of_memory_observer, _snapshot, _lazy_call,
register_module_forward_pre_hook, register_optimizer_step_pre_hook,
queue_callback).
"""
import os as _os
import threading as _threading

__version__ = _os.environ.get("VTSTANDIN_TORCH_VERSION", "2.5.1+standin")
_MISSING = set(filter(None, _os.environ.get("VTSTANDIN_MISSING", "").split(",")))

_grad = _threading.local()


def is_grad_enabled():
    return getattr(_grad, "enabled", True)


class no_grad(object):
    def __enter__(self):
        self.prev = is_grad_enabled()
        _grad.enabled = False

    def __exit__(self, *exc):
        _grad.enabled = self.prev
        return False


from . import _C  # noqa: E402
from . import cuda  # noqa: E402
from .autograd import Tensor, is_tensor  # noqa: E402
from . import autograd  # noqa: E402
from . import nn  # noqa: E402
from . import optim  # noqa: E402

OutOfMemoryError = cuda.OutOfMemoryError


def empty(nbytes, device="cuda", requires_grad=False):
    """A tensor of nbytes bytes (the stand-in's shapes are byte counts)."""
    if str(device).startswith("cuda"):
        cuda._lazy_init()
    return Tensor(nbytes, requires_grad=requires_grad)


zeros = empty


def device(name):
    return name


def randn(*shape, device="cpu", dtype=None):
    """float32 elements: 4 bytes each; shape[0] is the batch."""
    n = 1
    for d in shape:
        n *= d
    t = empty(n * 4, device=device)
    t.batch = shape[0] if len(shape) > 1 else 1
    t.shape = tuple(shape)
    return t


def matmul(a, b):
    """On cuBLAS: see Tensor.__matmul__ (nn.Linear does not use it here, so
    the tests' memory stories stay as designed)."""
    return a @ b
