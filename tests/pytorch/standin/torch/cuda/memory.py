"""torch.cuda.memory: the snapshot and history API (torch/cuda/memory.py)."""
import pickle

from .. import _MISSING


def _snapshot(device=None):
    """The allocator's state, the dict _dump_snapshot pickles."""
    from . import _allocator

    segments, traces = [], []
    for a in _allocator.device_allocators:
        segments.extend(a.segments_snapshot())
        traces.append(list(a.history))
    return {
        "segments": segments,
        "device_traces": traces,
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "",
            "max_split_size": -1,
            "garbage_collection_threshold": 0.0,
            "expandable_segments": False,
            "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)},
        },
        "external_annotations": [],
    }


def _dump_snapshot(filename="dump_snapshot.pickle"):
    s = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(s, f)


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=100000,
                           device=None, clear_history=False, compile_context=False,
                           global_record_annotations=False):
    from . import _allocator

    _allocator.history_settings.update(
        enabled=enabled not in (None, False), context=context, max_entries=int(max_entries))
    for a in _allocator.device_allocators:
        a.history.max = int(max_entries)


def memory_stats(device=None):
    from . import _allocator

    if not _allocator.device_allocators:
        return {}
    return _allocator.device_allocators[0].stats()


def mem_get_info(device=None):
    from . import _allocator

    return _allocator.mem_get_info(0)


if "_snapshot" in _MISSING:
    del _snapshot
