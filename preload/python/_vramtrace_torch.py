"""What vramtrace's Python bootstrap does once a program has imported torch
(docs/user/PYTORCH.md). Loaded by sitecustomize.py right after `import torch`
finished; nothing here imports torch, and nothing happens before CUDA is
initialised (torch.cuda._lazy_call): a program that never uses the GPU is
not touched.

At CUDA initialisation:
- an out-of-memory observer (torch._C._cuda_attach_out_of_memory_observer):
  at every OOM, torch.cuda.memory._snapshot() is written beside the trace
  as <trace>.oom<N>.pickle (0600, never over a file or through a link) and
  a mark in the trace's "vramtrace.torch" domain ties it to the failure;
- with VRAMTRACE_TORCH_HISTORY=N, _record_memory_history(max_entries=N),
  and the snapshot once more at the interpreter's exit (atexit), as
  <trace>.exit.pickle with a mark "exit snapshot=NAME": a run that never
  failed gets the allocator's blocks at its peak too;
- unless VRAMTRACE_TORCH_PHASES=0, phases from the model: train / eval
  (switched when the program calls Module.train() / .eval() on the whole
  model - the outermost module forwarded, or any module outside it - and
  at each of the model's forwards by its .training), forward (from the
  outermost module call, through the global forward pre/post hooks, to
  the next phase: the loss is part of it),
  backward (from the moment autograd reaches the output's grad_fn to the
  end of that backward pass) and optimizer (the global optimizer step
  hooks), as vramtrace ranges;
- parts (class _Parts): at the end of the first optimizer step, at every
  OOM and every VRAMTRACE_TORCH_PARTS_EVERY steps (default 100; 0: only
  the first step and OOMs), a census of which device addresses are the
  model's parameters and buffers, their gradients and the optimizer's
  state, as VT_REC_PART records (vramtrace_part) - read through public
  tensor methods only, no tensor kept or changed;
- allocator samples (class _Samples): unless VRAMTRACE_TORCH_SAMPLES=0,
  at every closing of forward, backward and optimizer, the caching
  allocator's own figures (torch._C._cuda_memoryStats, the dict
  torch.cuda.memory_stats flattens: allocated, reserved and active bytes,
  alloc retries, OOMs) as a VT_REC_PART record of part
  VT_PART_ALLOCATOR_SAMPLE - numbers in the record's integer fields, so
  that the trace's string table does not grow with them.

With VRAMTRACE_TORCH_CPU=1 on a CPU-only build of PyTorch, the phases and
parts are armed at once, at torch's import, and the census counts CPU
tensors as device 0: a self-check of this file against a real torch
without a GPU (scripts/real-torch.sh), not a CPU profiler.

Every failure is one line on stderr, once; never an exception of the
program's.
"""
import functools
import os
import sys
import threading
import weakref

DOMAIN = b"vramtrace.torch"


class _Tracer(object):
    """The functions of libvramtrace.so the bootstrap uses (ctypes)."""

    def __init__(self, ctypes, lib):
        self.ctypes = ctypes
        self.path_fn = lib.vramtrace_trace_path
        self.path_fn.argtypes = [ctypes.c_char_p, ctypes.c_ulong]
        self.path_fn.restype = ctypes.c_long
        self.mark_fn = lib.vramtrace_mark_in
        self.mark_fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        self.mark_fn.restype = None
        self.start_fn = lib.vramtrace_range_start
        self.start_fn.argtypes = [ctypes.c_char_p]
        self.start_fn.restype = ctypes.c_ulonglong
        self.end_fn = lib.vramtrace_range_end
        self.end_fn.argtypes = [ctypes.c_ulonglong]
        self.end_fn.restype = None
        self.part_fn = getattr(lib, "vramtrace_part", None)
        if self.part_fn is not None:
            self.part_fn.argtypes = [ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_int,
                                     ctypes.c_ulonglong, ctypes.c_ulonglong,
                                     ctypes.c_ulonglong, ctypes.c_char_p, ctypes.c_char_p]
            self.part_fn.restype = None

    def trace_path(self):
        buf = self.ctypes.create_string_buffer(4096)
        n = self.path_fn(buf, len(buf))
        return os.fsdecode(buf.value) if n > 0 else None


def _tracer():
    try:
        import ctypes

        lib = ctypes.CDLL(None)
        if not hasattr(lib, "vramtrace_trace_path"):
            return None  # no tracer in this process (LD_PRELOAD cleared)
        return _Tracer(ctypes, lib)
    except Exception:
        return None


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class _Said(object):
    def __init__(self, say):
        self.say = say
        self.seen = set()

    def once(self, key, msg):
        if key not in self.seen:
            self.seen.add(key)
            self.say(msg)


def install(torch, say):
    tracer = _tracer()
    if tracer is None:
        return
    said = _Said(say)
    if _cpu_check_armed(torch, said):
        try:
            _at_cuda_init(torch, tracer, said, cpu=True)
        except Exception as e:
            said.once("init", "torch support failed at import (CPU self-check): %s: %s"
                      % (type(e).__name__, e))
        return
    cuda = getattr(torch, "cuda", None)
    lazy_call = getattr(cuda, "_lazy_call", None)
    if lazy_call is None:
        return  # no way to wait for CUDA: nothing (docs/user/PYTORCH.md, versions)

    def at_cuda_init():
        try:
            _at_cuda_init(torch, tracer, said)
        except Exception as e:
            said.once("init", "torch support failed at CUDA initialisation: %s: %s"
                      % (type(e).__name__, e))

    lazy_call(at_cuda_init)


def _cpu_check_armed(torch, said):
    """VRAMTRACE_TORCH_CPU=1 on a CPU-only build of PyTorch: the bootstrap
    arms at torch's import (CUDA never initialises) and counts CPU tensors
    as device 0, so that phases and parts can be checked against a real
    torch without a GPU. A check of the bootstrap, not a CPU profiler
    (docs/user/PYTORCH.md)."""
    if os.environ.get("VRAMTRACE_TORCH_CPU", "0") != "1":
        return False
    version = getattr(torch, "version", None)
    if getattr(version, "cuda", None) or getattr(version, "hip", None):
        said.once("cpu", "VRAMTRACE_TORCH_CPU=1 ignored: this torch is built for GPUs (the "
                  "CPU self-check is for CPU-only builds)")
        return False
    return True


def _optimizer_module(torch):
    """torch.optim.optimizer, where the global step hooks live. Not an
    attribute of torch.optim in a real torch (its __init__ deletes its
    submodules' names), but imported with it: sys.modules has it."""
    return sys.modules.get("torch.optim.optimizer") or \
        getattr(getattr(torch, "optim", None), "optimizer", None)


def _version(torch):
    try:
        parts = str(torch.__version__).split("+")[0].split(".")
        return int(parts[0]), int(parts[1])
    except Exception:
        return (0, 0)


def _at_cuda_init(torch, tracer, said, cpu=False):
    v = _version(torch)
    if v < (2, 1):
        said.once("version", "PyTorch %s is older than 2.1: no OOM snapshots or phases"
                  % torch.__version__)
        return
    attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    memory = getattr(torch.cuda, "memory", None)
    snapshot = getattr(memory, "_snapshot", None)
    if cpu:
        attach = snapshot = None  # no CUDA, no allocator to observe: nothing to say
    elif attach is None or snapshot is None:
        said.once("oom-api", "PyTorch %s has no %s: no OOM snapshots"
                  % (torch.__version__, "_cuda_attach_out_of_memory_observer"
                     if attach is None else "torch.cuda.memory._snapshot"))
    parts = _Parts(torch, tracer, said, cpu) if tracer.part_fn is not None else None
    if attach is not None and snapshot is not None:
        attach(_OomObserver(tracer, snapshot, said, parts))
    history = _env_int("VRAMTRACE_TORCH_HISTORY", 0)
    if history > 0 and not cpu:
        _record_history(torch, memory, history, said)
        if snapshot is not None:
            import atexit

            atexit.register(_ExitSnapshot(tracer, snapshot, said))
    phases = None
    if os.environ.get("VRAMTRACE_TORCH_PHASES", "1") != "0":
        phases = _Phases(torch, tracer, said)
        # A CPU build has no caching allocator to sample (its memory_stats
        # raises "Torch not compiled with CUDA enabled").
        if tracer.part_fn is not None and not cpu and \
                os.environ.get("VRAMTRACE_TORCH_SAMPLES", "1") != "0":
            phases.samples = _Samples(torch, tracer, said)
        phases.install()
    if parts is not None:
        parts.install(phases)


def _record_history(torch, memory, entries, said):
    record = getattr(memory, "_record_memory_history", None)
    if record is None:
        said.once("history", "PyTorch %s has no _record_memory_history: no history"
                  % torch.__version__)
        return
    try:
        record(enabled="all", context="all", stacks="python", max_entries=entries)
    except TypeError:
        # The 2.0 signature (still accepted, with a warning, later).
        record(True, trace_alloc_max_entries=entries, trace_alloc_record_context=True)


class _OomObserver(object):
    """fn(device, alloc, device_allocated, device_free), called by the
    caching allocator after it freed its cache and retried, before it
    raises OutOfMemoryError (c10/cuda/CUDACachingAllocator.cpp). alloc is
    the size it tried to get from cudaMalloc; device_allocated what it had
    reserved (or the memory fraction's limit); device_free cudaMemGetInfo's
    free bytes."""

    def __init__(self, tracer, snapshot, said, parts):
        self.tracer = tracer
        self.snapshot = snapshot
        self.said = said
        self.parts = parts
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, device, alloc, device_allocated, device_free):
        try:
            with self.lock:
                n = self.count
                self.count += 1
            self.oom(n, device, alloc, device_allocated, device_free)
        except Exception as e:
            self.said.once("oom", "OOM snapshot failed: %s: %s" % (type(e).__name__, e))

    def oom(self, n, device, alloc, device_allocated, device_free):
        if self.parts is not None:
            self.parts.census("oom")  # first: the closest to the failure
        trace = self.tracer.trace_path()
        written = "-"
        if trace is None:
            self.said.once("no-trace", "CUDA out of memory, but this process has no trace "
                           "to put the allocator's snapshot beside")
        else:
            try:
                written = self.write(trace, n)
            except OSError as e:
                self.said.once("write", "cannot write the OOM snapshot beside %s: %s"
                               % (trace, e.strerror or e))
        text = "oom n=%d device=%d alloc=%d device_allocated=%d device_free=%d snapshot=%s" % (
            n, device, alloc, device_allocated, device_free, written)
        self.tracer.mark_fn(DOMAIN, os.fsencode(text))

    def write(self, trace, n):
        return _write_snapshot(self.snapshot(), trace, "oom%d" % n)


def _write_snapshot(snap, trace, stem):
    """snap pickled beside the trace as <trace>.<stem>.pickle (0600, created
    new, never through a link; a taken name gets .<stem>.<k>.pickle); its
    file name."""
    import pickle

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    for k in range(100):
        path = "%s.%s%s.pickle" % (trace, stem, "" if k == 0 else ".%d" % k)
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                # Protocol 4: what PyTorch's viewer and vramtrace read
                # (3.14 would default to 5).
                pickle.dump(snap, f, protocol=4)
        except BaseException:
            try:
                os.unlink(path)
            except OSError:
                pass
            raise
        return os.path.basename(path)
    raise OSError(0, "%s: 100 names taken" % stem)


class _ExitSnapshot(object):
    """With the allocator's history (--torch-history), its snapshot once
    more when the interpreter exits (atexit), so that a run that never
    failed has the allocator's blocks at its peak too: the report replays
    the history to the peak and splits it into tensors and cache. A mark
    "exit snapshot=NAME" ties the file to the trace, as the OOM marks do.
    A process that ends in os._exit or a signal writes none."""

    def __init__(self, tracer, snapshot, said):
        self.tracer = tracer
        self.snapshot = snapshot
        self.said = said

    def __call__(self):
        try:
            trace = self.tracer.trace_path()
            if trace is None:
                return
            try:
                written = _write_snapshot(self.snapshot(), trace, "exit")
            except OSError as e:
                self.said.once("write-exit", "cannot write the exit snapshot beside %s: %s"
                               % (trace, e.strerror or e))
                return
            self.tracer.mark_fn(DOMAIN, os.fsencode("exit snapshot=%s" % written))
        except Exception as e:
            self.said.once("exit", "exit snapshot failed: %s: %s" % (type(e).__name__, e))


class _TrainWatch(object):
    """Module.train as the class holds it: the original function from the
    class; from a module, for the outermost of a thread's nested train()
    calls (the model's: its children's calls are inside it), a callable of
    C (_TrainCall) whose end, just after the call returns, tells the
    phases, and inside it PyTorch's own bound method."""

    def __init__(self, orig, phases):
        functools.update_wrapper(self, orig)
        self.orig = orig
        self.phases = phases

    def __get__(self, module, cls=None):
        if module is None:
            return self.orig
        tls = self.phases.tls
        outer = getattr(tls, "outer", None)
        if outer is not None and outer[0]() is not None and outer[1] is not module:
            return self.orig.__get__(module, cls)  # a child's call inside the outermost one
        call = _TrainCall(self.orig, module)
        try:
            done = functools.partial(_train_returned, self.phases, module)
            tls.outer = (weakref.ref(call, lambda _ref: done()), module)
        except Exception:
            pass
        return call

    def __call__(self, *args, **kwargs):
        return self.orig(*args, **kwargs)


class _TrainCall(functools.partial):
    """module.train as a bound method would be (__self__, __func__), but a
    partial: no frame of Python, and held until the call returns (a bound
    method is taken apart before the call)."""

    __slots__ = ()

    @property
    def __self__(self):
        return self.args[0]

    @property
    def __func__(self):
        return self.func


def _train_returned(phases, module):
    try:
        phases.train_returned(module)
    except Exception:
        pass


class _Phases(object):
    """train/eval, forward, backward, optimizer as vramtrace ranges (any
    thread may end a range: backward may end on an autograd thread)."""

    def __init__(self, torch, tracer, said):
        self.torch = torch
        self.tracer = tracer
        self.said = said
        self.tls = threading.local()
        self.owner = None  # the thread whose forwards make phases
        self.mode = None
        self.mode_id = 0
        self.step = None
        self.step_id = 0
        self.root = None
        self.model = None  # weakref to the outermost module forwarded last
        self.parts_of = None  # (weakref to the model, its parts by id) at its last walk
        self.parts = None  # the census taker (_Parts), told of the first forward
        self.samples = None  # the allocator's figures at each closing (_Samples)

    def install(self):
        t = self.torch
        mod = getattr(getattr(getattr(t, "nn", None), "modules", None), "module", None)
        pre = getattr(mod, "register_module_forward_pre_hook", None)
        post = getattr(mod, "register_module_forward_hook", None)
        if pre is None or post is None:
            self.said.once("phases", "PyTorch %s has no global module hooks: no phases"
                           % t.__version__)
            return
        pre(self.forward_pre)
        post(self.forward_post)
        self.wrap_train(getattr(mod, "Module", None))
        opt = _optimizer_module(t)
        opre = getattr(opt, "register_optimizer_step_pre_hook", None)
        opost = getattr(opt, "register_optimizer_step_post_hook", None)
        if opre is not None and opost is not None:
            opre(self.optimizer_pre)
            opost(self.optimizer_post)
        engine = getattr(getattr(getattr(t, "autograd", None), "Variable", None),
                         "_execution_engine", None)
        self.queue_callback = getattr(engine, "queue_callback", None)
        self.is_grad_enabled = getattr(t, "is_grad_enabled", lambda: True)
        self.is_tensor = getattr(t, "is_tensor", lambda x: False)
        self.graph_task_id = getattr(getattr(t, "_C", None), "_current_graph_task_id", None)
        self.compiling = getattr(getattr(t, "compiler", None), "is_compiling", lambda: False)

    def in_backward(self):
        """Whether this thread runs a backward pass now: activation
        checkpointing recomputes forwards inside it, which are backward's."""
        task = self.graph_task_id
        return task is not None and task() != -1

    # ---- ranges ----
    def switch(self, name):
        if self.step == name:
            return
        if self.step_id:
            if self.samples is not None:
                self.samples.take(self.step)
            self.tracer.end_fn(self.step_id)
        self.step, self.step_id = name, 0
        if name:
            self.step_id = self.tracer.start_fn(name.encode())

    def set_mode(self, mode):
        if self.mode == mode:
            return
        self.switch(None)
        if self.mode_id:
            self.tracer.end_fn(self.mode_id)
        self.mode = mode
        self.mode_id = self.tracer.start_fn(mode.encode())

    # ---- Module.train() / .eval(): PyTorch has no hook for them. The
    # class's train (which eval calls) becomes a descriptor (_TrainWatch):
    # no frame of ours is on the stack while train() runs (a deep model
    # recurses as deeply as without us, and an exception's traceback is the
    # program's own). The outermost call of a thread is seen when the
    # callable it was handed is freed, just after the call returns, by the
    # .training it left on the module. ----
    def wrap_train(self, cls):
        orig = cls.__dict__.get("train") if cls is not None else None
        if orig is None or isinstance(orig, _TrainWatch):
            return
        try:
            cls.train = _TrainWatch(orig, self)
        except Exception as e:
            self.said.once("train", "phase hook: Module.train: %s: %s" % (type(e).__name__, e))

    def train_returned(self, module):
        self.tls.outer = None
        self.train_called(module, getattr(module, "training", None))

    def train_called(self, module, mode):
        """The outermost train()/eval() call of a thread (the children's
        calls it makes are inside it)."""
        try:
            if not isinstance(mode, bool):
                return  # PyTorch refuses it
            if self.owner is not None and threading.current_thread() is not self.owner:
                return
            model = self.model() if self.model is not None else None
            if model is not None and module is not model and self.inside(model, module):
                return  # a part of the model switched (frozen layers): not the phase
            self.remember(module)
            self.set_mode("train" if mode else "eval")
        except Exception as e:
            self.said.once("trainmode", "phase hook: %s: %s" % (type(e).__name__, e))

    def inside(self, model, module):
        """Whether module is one of model's descendants: the parts seen at
        the model's last walk, walked again only when module is not among
        them (freezing a model's parts one by one walks it once)."""
        parts = self.parts_of
        if parts is not None and parts[0]() is model:
            ref = parts[1].get(id(module))
            if ref is not None and ref() is module:
                return True
        found = {}
        self.parts_of = (weakref.ref(model), self.walk(model, found))
        return found.get(id(module)) is module

    @staticmethod
    def walk(model, found, limit=100000):
        """model's descendants by id into found (a bounded walk of
        children(), which every Module has); returns them held weakly."""
        parts = {}
        pending = [model]
        ref = weakref.ref
        while pending and len(found) < limit:
            m = pending.pop()
            if id(m) in found:
                continue
            found[id(m)] = m
            try:
                parts[id(m)] = ref(m)
            except TypeError:
                pass  # not weakly referable: walked again next time
            children = getattr(m, "children", None)
            pending.extend(children() if children is not None else ())
        return parts

    def remember(self, module):
        try:
            self.model = weakref.ref(module)  # never keeps the model alive
        except TypeError:
            self.model = None

    # ---- module hooks: every module call runs them; only the outermost
    # call of the owning thread does more than count ----
    def forward_pre(self, module, args):
        # First: torch.compile's dynamo traces these hooks into the modules
        # it compiles; traced, they are nothing (the compiled module's own
        # call, outside, runs them). And a forward recomputed inside
        # backward (activation checkpointing) is backward's, not a forward.
        if self.compiling() or self.in_backward():
            return None  # a recomputation may stop early (its post hook never runs)
        tls = self.tls
        depth = getattr(tls, "depth", 0)
        if depth and module is self.root:
            depth = 0  # its forward raised: the post hook never ran
        tls.depth = depth + 1
        if depth:
            return None
        try:
            me = threading.current_thread()
            if self.owner is None:
                self.owner = me
            if me is not self.owner:
                return None
            self.root = module
            model = self.model() if self.model is not None else None
            if model is None or module is model:
                self.remember(module)
                self.set_mode("train" if getattr(module, "training", False) else "eval")
            # else another outermost module (the loss, a frozen teacher, an
            # EMA copy): the mode stays the model's
            self.switch("forward")
        except Exception as e:
            self.said.once("fwd", "phase hook: %s: %s" % (type(e).__name__, e))
        return None

    def forward_post(self, module, args, output):
        if self.compiling() or self.in_backward():
            return None
        tls = self.tls
        depth = getattr(tls, "depth", 1) - 1
        tls.depth = depth if depth > 0 else 0
        if depth > 0 or threading.current_thread() is not self.owner:
            return None
        try:
            # forward stays open until the next phase: the loss (often a
            # module of its own) is part of it.
            self.root = None
            if self.parts is not None and self.model is not None and \
                    self.model() is module:
                self.parts.first_forward()
            if self.is_grad_enabled():
                self.watch_backward(output)
        except Exception as e:
            self.said.once("fwdpost", "phase hook: %s: %s" % (type(e).__name__, e))
        return None

    def watch_backward(self, output):
        node = None
        pending = [output]
        for _ in range(8):
            if not pending:
                break
            x = pending.pop(0)
            if self.is_tensor(x):
                node = getattr(x, "grad_fn", None)
                if node is not None:
                    break
            elif isinstance(x, (tuple, list)):
                pending.extend(x[:8])
            elif isinstance(x, dict):
                pending.extend(list(x.values())[:8])
        register = getattr(node, "register_prehook", None)
        if register is not None:
            register(self.backward_begins)

    def backward_begins(self, grad_outputs):
        try:
            if self.step != "backward":
                self.switch("backward")
                if self.queue_callback is not None:
                    self.queue_callback(self.backward_ends)
        except Exception as e:
            self.said.once("bwd", "phase hook: %s: %s" % (type(e).__name__, e))
        return None

    def backward_ends(self):
        try:
            if self.step == "backward":
                self.switch(None)
            if self.parts is not None:
                self.parts.first_backward()
        except Exception as e:
            self.said.once("bwdend", "phase hook: %s: %s" % (type(e).__name__, e))

    # ---- optimizer hooks ----
    def optimizer_pre(self, optimizer, args, kwargs):
        try:
            if threading.current_thread() is self.owner or self.owner is None:
                self.switch("optimizer")
        except Exception as e:
            self.said.once("opt", "phase hook: %s: %s" % (type(e).__name__, e))
        return None

    def optimizer_post(self, optimizer, args, kwargs):
        try:
            if self.step == "optimizer":
                self.switch(None)
        except Exception as e:
            self.said.once("optpost", "phase hook: %s: %s" % (type(e).__name__, e))
        return None

# enum vt_part (include/vramtrace/trace_format.h, VT_REC_PART)
PART_CENSUS, PART_PARAMETER, PART_BUFFER, PART_GRADIENT, PART_OPTIMIZER_STATE = range(5)
PART_ALLOCATOR_SAMPLE = 16


class _Samples(object):
    """The caching allocator's own figures at a phase's closing: one call
    of torch._C._cuda_memoryStats (what torch.cuda.memory_stats flattens and
    sorts, the costly half left out; memory_stats where it is missing) and
    one record. Its cost is measured in bench/torch_samples.py."""

    def __init__(self, torch, tracer, said):
        self.said = said
        self.part_fn = tracer.part_fn
        cuda = torch.cuda
        self.nested = getattr(getattr(torch, "_C", None), "_cuda_memoryStats", None)
        self.flat = getattr(cuda, "memory_stats", None)
        self.current = getattr(cuda, "current_device", None)
        self.phase_names = {}
        self.oom_names = {}
        self.off = self.nested is None and self.flat is None

    def take(self, phase):
        if self.off:
            return
        try:
            device = self.current() if self.current is not None else 0
            if self.nested is not None:
                s = self.nested(device)
                allocated = s["allocated_bytes"]["all"]["current"]
                reserved = s["reserved_bytes"]["all"]["current"]
                active = s.get("active_bytes", {}).get("all", {}).get("current", allocated)
            else:
                s = self.flat(device)
                allocated = s.get("allocated_bytes.all.current", 0)
                reserved = s.get("reserved_bytes.all.current", 0)
                active = s.get("active_bytes.all.current", allocated)
            retries = s.get("num_alloc_retries", 0)
            ooms = s.get("num_ooms", 0)
            name = self.phase_names.get(phase)
            if name is None:
                name = self.phase_names[phase] = phase.encode()
            oom_text = self.oom_names.get(ooms)
            if oom_text is None:
                oom_text = self.oom_names[ooms] = str(ooms).encode()
            self.part_fn(retries, PART_ALLOCATOR_SAMPLE, device, allocated, reserved, active,
                         name, oom_text)
        except Exception as e:
            self.off = True
            self.said.once("sample", "allocator samples stopped: %s: %s" % (type(e).__name__, e))

SAW_MODEL, SAW_OPTIMIZER = 1, 2
PARTS_MAX = 100000  # tensors told per census, at most (its cost stays bounded)


class _Parts(object):
    """A census of what device memory is made of: which addresses are the
    model's parameters and buffers (named_parameters, named_buffers), their
    gradients (.grad) and the optimizer's state (optimizer.state), each with
    its name and dtype. Read through public tensor methods only (data_ptr,
    numel, element_size, dtype, get_device); the model and the optimizers
    are held by weak references, and no tensor outlives a census."""

    def __init__(self, torch, tracer, said, cpu=False):
        self.torch = torch
        self.tracer = tracer
        self.said = said
        self.cpu = cpu  # the CPU self-check: CPU tensors count as device 0
        self.every = max(_env_int("VRAMTRACE_TORCH_PARTS_EVERY", 100), 0)
        self.phases = None
        self.optimizers = weakref.WeakSet()
        self.steps = 0
        self.number = 0
        self.forwarded = self.backwarded = False
        self.lock = threading.Lock()

    def install(self, phases):
        self.phases = phases
        if phases is not None:
            phases.parts = self
        opt = _optimizer_module(self.torch)
        post = getattr(opt, "register_optimizer_step_post_hook", None)
        if post is None:
            self.said.once("parts", "PyTorch %s has no optimizer step hooks: parts only at "
                           "an OOM" % self.torch.__version__)
            return
        post(self.step_done)

    def step_done(self, optimizer, args, kwargs):
        try:
            self.optimizers.add(optimizer)
            self.steps += 1
            if self.steps == 1:
                self.census("first-step")
            elif self.every and self.steps % self.every == 0:
                self.census("every")
        except Exception as e:
            self.said.once("partstep", "parts: %s: %s" % (type(e).__name__, e))
        return None

    def first_forward(self):
        """The end of the model's first forward: what a model that never
        steps (inference, or a failure before the first step) is made of."""
        if not self.forwarded:
            self.forwarded = True
            self.census("first-forward")

    def first_backward(self):
        """The end of the first backward: the gradients of a model trained
        without an optimizer the bootstrap sees."""
        if not self.backwarded:
            self.backwarded = True
            self.census("first-backward")

    def model(self):
        ph = self.phases
        ref = ph.model if ph is not None else None
        return ref() if ref is not None else None

    def census(self, why):
        try:
            with self.lock:
                self.number += 1
                self.take(self.number, why)
        except Exception as e:
            self.said.once("census", "parts census failed: %s: %s" % (type(e).__name__, e))

    def take(self, number, why):
        model = self.model()
        optimizers = list(self.optimizers)
        saw = (SAW_MODEL if model is not None else 0) | (SAW_OPTIMIZER if optimizers else 0)
        kinds = sorted(set(type(o).__name__ for o in optimizers))
        self.tracer.part_fn(number, PART_CENSUS, -1, 0, saw, self.steps,
                            ",".join(kinds).encode() or None, why.encode())
        told = set()  # (address, bytes) told in this census
        budget = [PARTS_MAX]
        names = {}  # id(parameter) -> its name, for its state's names

        def tell(part, name, t):
            if budget[0] <= 0 or not self.is_tensor(t):
                return
            device = t.get_device()
            if device < 0:
                if not (self.cpu and getattr(t.device, "type", None) == "cpu"):
                    return  # not on a GPU
                device = 0
            n = t.numel()
            addr = t.data_ptr()
            nbytes = n * t.element_size()
            if not nbytes or (addr, nbytes) in told:
                return
            told.add((addr, nbytes))
            budget[0] -= 1
            dtype = str(t.dtype)
            if dtype.startswith("torch."):
                dtype = dtype[6:]
            self.tracer.part_fn(number, part, device, addr, nbytes, n, dtype.encode(),
                                name.encode("utf-8", "replace"))

        if model is not None:
            for name, p in model.named_parameters():
                names[id(p)] = name
                tell(PART_PARAMETER, name, p)
                tell(PART_GRADIENT, name, p.grad)
            for name, b in model.named_buffers():
                tell(PART_BUFFER, name, b)
        for k, opt in enumerate(optimizers):
            for g, group in enumerate(opt.param_groups):
                for i, p in enumerate(group["params"]):
                    if id(p) not in names:  # not the model's: only the optimizer knows it
                        names[id(p)] = "param_groups[%d][%d]" % (g, i)
                        tell(PART_PARAMETER, names[id(p)], p)
                        tell(PART_GRADIENT, names[id(p)], p.grad)
            for p, state in _items(opt.state):
                base = names.get(id(p), "state")
                for key, v in _items(state):
                    tell(PART_OPTIMIZER_STATE, "%s.%s" % (base, key), v)
        if budget[0] <= 0:
            self.said.once("partsmax", "parts: a census stops at %d tensors" % PARTS_MAX)

    def is_tensor(self, x):
        return x is not None and self.torch.is_tensor(x)


def _items(table):
    """A dict's items; nothing from what is not a dict (an optimizer of
    the program's own may keep its state as it likes)."""
    return table.items() if isinstance(table, dict) else ()


if __name__ == "__main__":  # pragma: no cover
    sys.exit("this module is loaded by vramtrace's sitecustomize.py")
