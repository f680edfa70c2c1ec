"""A model of PyTorch's native caching allocator
(c10/cuda/CUDACachingAllocator.cpp, defaults: no max_split_size, no
garbage collection threshold, no expandable segments), getting its segments
with cudaMalloc from the simulated runtime (libsimcudart.so, EXAMPLE_CUDART
or LD_LIBRARY_PATH) through ctypes.

- sizes rounded up to 512 B; <= 1 MiB: small pool, else large;
- a new segment: 2 MiB (small), 20 MiB (< 10 MiB), else rounded up to 2 MiB;
- best fit among free blocks (size, then address);
- split if the rest is >= 512 B (small) or > 1 MiB (large); frees merge;
- cudaMalloc failing: every unsplit cached segment is released
  (cudaFree), then one retry; failing again: the OOM observers are called
  with (device, segment size, reserved bytes, free bytes), then
  OutOfMemoryError.
"""
import collections
import ctypes
import os
import sys
import threading
import time

MiB = 1 << 20
kSmallSize = MiB
kSmallBuffer = 2 * MiB
kMinLargeAlloc = 10 * MiB
kLargeBuffer = 20 * MiB
kRoundLarge = 2 * MiB

device_allocators = []
history_settings = {"enabled": False, "context": "all", "max_entries": 100000}
_cudart = None


def _rt():
    global _cudart
    if _cudart is None:
        rt = ctypes.CDLL(os.environ.get("EXAMPLE_CUDART", "libsimcudart.so"))
        rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        rt.cudaFree.argtypes = [ctypes.c_void_p]
        rt.cudaSetDevice.argtypes = [ctypes.c_int]
        rt.cudaMemGetInfo.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
        rt.cudaGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_int)]
        _cudart = rt
    return _cudart


def device_count():
    n = ctypes.c_int(0)
    try:
        if _rt().cudaGetDeviceCount(ctypes.byref(n)) != 0:
            return 0
    except OSError:
        return 0
    return n.value


def init():
    if device_allocators:
        return
    rt = _rt()
    if rt.cudaSetDevice(0) != 0:
        raise RuntimeError("No CUDA GPUs are available")
    for d in range(max(device_count(), 1)):
        device_allocators.append(DeviceAllocator(d))


def allocator(device):
    from . import _lazy_init

    _lazy_init()
    return device_allocators[device]


def mem_get_info(device):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    _rt().cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
    return free.value, total.value


def round_size(size):
    return 512 if size < 512 else (size + 511) // 512 * 512


def allocation_size(size):
    if size <= kSmallSize:
        return kSmallBuffer
    if size < kMinLargeAlloc:
        return kLargeBuffer
    return (size + kRoundLarge - 1) // kRoundLarge * kRoundLarge


def _frames():
    """Python frames, innermost first, as PyTorch's stacks="python"
    records them; this file's own left out."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename != __file__:
            out.append({"filename": f.f_code.co_filename, "line": f.f_lineno,
                        "name": f.f_code.co_name})
        f = f.f_back
    return out


class Block(object):
    __slots__ = ("allocator", "segment", "address", "size", "requested", "allocated",
                 "frames", "prev", "next")

    def __init__(self, allocator, segment, address, size):
        self.allocator = allocator
        self.segment = segment
        self.address = address
        self.size = size
        self.requested = 0
        self.allocated = False
        self.frames = []
        self.prev = self.next = None


class Segment(object):
    def __init__(self, address, size, small):
        self.address = address
        self.size = size
        self.small = small
        self.frames = []


class History(collections.deque):
    def __init__(self):
        collections.deque.__init__(self)
        self.max = history_settings["max_entries"]

    def add(self, action, addr, size, **extra):
        if not history_settings["enabled"]:
            return
        entry = {"action": action, "size": size, "stream": 0,
                 "time_us": time.time_ns() // 1000,
                 "frames": _frames() if history_settings["context"] else []}
        if addr is not None:
            entry["addr"] = addr
        entry.update(extra)
        self.append(entry)
        while len(self) > self.max:
            self.popleft()


class DeviceAllocator(object):
    def __init__(self, device):
        self.device = device
        self.observers = []
        self.segments = []
        self.free_blocks = {True: [], False: []}  # small pool?, blocks
        self.lock = threading.RLock()
        self.history = History()
        self.reserved = 0
        self.allocated = 0
        self.peak_reserved = 0
        self.peak_allocated = 0
        self.num_ooms = 0
        self.num_alloc_retries = 0
        self.live = set()

    # ---- cudaMalloc / cudaFree ----
    def cuda_malloc(self, size):
        p = ctypes.c_void_p()
        err = _rt().cudaMalloc(ctypes.byref(p), size)
        return p.value if err == 0 else None

    def new_segment(self, size, small):
        alloc = allocation_size(size)
        addr = self.cuda_malloc(alloc)
        if addr is None:
            self.num_alloc_retries += 1
            self.release_cached()
            addr = self.cuda_malloc(alloc)
            if addr is None:
                return None, alloc
        seg = Segment(addr, alloc, small)
        self.segments.append(seg)
        self.segments.sort(key=lambda s: s.address)
        self.reserved += alloc
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        self.history.add("segment_alloc", addr, alloc)
        block = Block(self, seg, addr, alloc)
        return block, alloc

    def release_cached(self):
        for small in (True, False):
            for b in list(self.free_blocks[small]):
                if b.prev is None and b.next is None:
                    self.free_blocks[small].remove(b)
                    self.segments.remove(b.segment)
                    self.reserved -= b.size
                    self.history.add("segment_free", b.address, b.size)
                    _rt().cudaFree(b.address)

    def empty_cache(self):
        with self.lock:
            self.release_cached()

    # ---- malloc / free ----
    def malloc(self, nbytes):
        with self.lock:
            size = round_size(nbytes)
            small = size <= kSmallSize
            pool = self.free_blocks[small]
            fits = [b for b in pool if b.size >= size]
            block = min(fits, key=lambda b: (b.size, b.address)) if fits else None
            if block is not None:
                pool.remove(block)
            else:
                block, alloc = self.new_segment(size, small)
                if block is None:
                    self.oom(nbytes, size, alloc)
            rest = block.size - size
            if (small and rest >= 512) or (not small and rest > kSmallSize):
                tail = Block(self, block.segment, block.address + size, rest)
                tail.prev, tail.next = block, block.next
                if block.next is not None:
                    block.next.prev = tail
                block.next = tail
                block.size = size
                pool.append(tail)
            block.allocated = True
            block.requested = nbytes
            block.frames = _frames() if history_settings["enabled"] and \
                history_settings["context"] else []
            self.live.add(block)
            self.allocated += block.size
            self.peak_allocated = max(self.peak_allocated, self.allocated)
            self.history.add("alloc", block.address, nbytes)
            return block

    def free(self, block):
        with self.lock:
            self.history.add("free_requested", block.address, block.requested)
            self.history.add("free_completed", block.address, block.requested)
            self.live.discard(block)
            block.allocated = False
            block.frames = []
            self.allocated -= block.size
            pool = self.free_blocks[block.segment.small]
            for nb in (block.prev, block.next):
                if nb is not None and not nb.allocated:
                    pool.remove(nb)
                    if nb is block.prev:
                        block.address = nb.address
                        block.prev = nb.prev
                        if nb.prev is not None:
                            nb.prev.next = block
                    else:
                        block.next = nb.next
                        if nb.next is not None:
                            nb.next.prev = block
                    block.size += nb.size
            pool.append(block)

    def oom(self, nbytes, size, alloc):
        free, total = mem_get_info(self.device)
        self.num_ooms += 1
        self.history.add("oom", None, size, device_free=free)
        for obs in list(self.observers):
            obs(self.device, alloc, self.reserved, free)
        from . import OutOfMemoryError

        MiBf = float(MiB)
        raise OutOfMemoryError(
            "CUDA out of memory. Tried to allocate %.2f MiB. GPU %d has a total capacity of "
            "%.2f GiB of which %.2f MiB is free. Of the allocated memory %.2f MiB is allocated "
            "by PyTorch, and %.2f MiB is reserved by PyTorch but unallocated."
            % (alloc / MiBf, self.device, total / MiBf / 1024, free / MiBf,
               self.allocated / MiBf, (self.reserved - self.allocated) / MiBf))

    # ---- what _snapshot() and memory_stats() report ----
    def segments_snapshot(self):
        out = []
        with self.lock:
            for seg in self.segments:
                blocks = []
                b = self.first_block(seg)
                alloc_sz = req = 0
                while b is not None:
                    blocks.append({"address": b.address, "size": b.size,
                                   "requested_size": b.requested if b.allocated else 0,
                                   "state": "active_allocated" if b.allocated else "inactive",
                                   "frames": list(b.frames)})
                    if b.allocated:
                        alloc_sz += b.size
                        req += b.requested
                    b = b.next
                out.append({"device": self.device, "address": seg.address,
                            "total_size": seg.size, "allocated_size": alloc_sz,
                            "active_size": alloc_sz, "requested_size": req, "stream": 0,
                            "segment_type": "small" if seg.small else "large",
                            "segment_pool_id": (0, 0), "is_expandable": False,
                            "frames": [], "blocks": blocks})
        return out

    def first_block(self, seg):
        for small in (True, False):
            for b in self.free_blocks[small]:
                if b.segment is seg:
                    while b.prev is not None:
                        b = b.prev
                    return b
        for b in self.live:
            if b.segment is seg:
                while b.prev is not None:
                    b = b.prev
                return b
        return None

    def stats(self):
        return {"allocated_bytes.all.current": self.allocated,
                "allocated_bytes.all.peak": self.peak_allocated,
                "reserved_bytes.all.current": self.reserved,
                "reserved_bytes.all.peak": self.peak_reserved,
                "num_ooms": self.num_ooms, "num_alloc_retries": self.num_alloc_retries}

