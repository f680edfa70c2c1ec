"""torch.cuda: lazy initialisation as in torch/cuda/__init__.py - calls
queued with _lazy_call run, once, at the first use of CUDA, right after
the device allocators exist; an exception in one becomes
DeferredCudaCallError."""
import threading
import traceback

from .. import _MISSING


class OutOfMemoryError(RuntimeError):
    pass


class DeferredCudaCallError(Exception):
    pass


_initialized = False
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls = []


def is_initialized():
    return _initialized and not hasattr(_tls, "is_initializing")


def is_available():
    from . import _allocator

    return _allocator.device_count() > 0


def device_count():
    from . import _allocator

    return _allocator.device_count()


def _lazy_call(callable, **kwargs):
    if is_initialized():
        callable()
    else:
        _queued_calls.append((callable, traceback.format_stack()))


def _lazy_init():
    global _initialized
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        from . import _allocator

        _allocator.init()  # torch._C._cuda_init(): the device allocators
        _tls.is_initializing = True
        try:
            for queued_call, orig_traceback in _queued_calls:
                try:
                    queued_call()
                except Exception as e:
                    msg = ("CUDA call failed lazily at initialization with error: %s\n\n"
                           "CUDA call was originally invoked at:\n\n%s" % (e, "".join(orig_traceback)))
                    raise DeferredCudaCallError(msg) from e
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True


def synchronize(device=None):
    _lazy_init()


def memory_stats(device=None):
    from . import memory

    return memory.memory_stats(device)


def mem_get_info(device=None):
    from . import memory

    return memory.mem_get_info(device)


def memory_allocated(device=None):
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def memory_reserved(device=None):
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def empty_cache():
    from . import _allocator

    if _initialized:
        for a in _allocator.device_allocators:
            a.empty_cache()


from . import memory  # noqa: E402

if "_lazy_call" in _MISSING:
    del _lazy_call
