"""Phases and marks from Python for vramtrace (docs/user/INSTALL.md).

    import vramtrace

    for epoch in range(epochs):
        with vramtrace.phase("train"):
            train_one_epoch(model, loader)
        with vramtrace.phase("eval"):
            evaluate(model, val_loader)
        vramtrace.mark("epoch %d done" % epoch)

    @vramtrace.phase("checkpoint")
    def save(model): ...

These are the tracer's own phases and marks, the C API's of
include/vramtrace/vramtrace.h (vramtrace_phase_push/_pop, vramtrace_mark):
the report, the exports and `vramtrace diff` show them like any other.

The tracer is found once, at import, among what the process has already
loaded (`vramtrace run`, or LD_PRELOAD=libvramtrace.so); this module never
loads it. Without it every call does nothing, and costs a Python function
call. Phases nest per thread: a phase is closed by the thread that opened it.
"""

__all__ = ["phase", "mark", "trace_path"]


def _find_tracer():
    """The tracer's C functions, if libvramtrace.so is in this process."""
    try:
        import ctypes
        scope = ctypes.CDLL(None)  # the process's global scope: loads nothing
        if not hasattr(scope, "vramtrace_phase_push"):
            return None
        push, pop, mark_fn, path_fn = (scope.vramtrace_phase_push, scope.vramtrace_phase_pop,
                                       scope.vramtrace_mark, scope.vramtrace_trace_path)
    except (ImportError, OSError, AttributeError):
        return None
    push.argtypes = [ctypes.c_char_p]
    push.restype = None
    pop.argtypes = []
    pop.restype = None
    mark_fn.argtypes = [ctypes.c_char_p]
    mark_fn.restype = None
    path_fn.argtypes = [ctypes.c_char_p, ctypes.c_ulong]
    path_fn.restype = ctypes.c_long
    return ctypes, push, pop, mark_fn, path_fn


_tracer = _find_tracer()


def _name_bytes(name, what):
    """The C API takes a NUL-terminated string: UTF-8 bytes without NUL."""
    if isinstance(name, str):
        name = name.encode("utf-8", "surrogateescape")
    elif not isinstance(name, bytes):
        raise TypeError("vramtrace.%s: the name must be str or bytes, not %s"
                        % (what, type(name).__name__))
    if b"\0" in name:
        raise ValueError("vramtrace.%s: the name contains a NUL character: %r" % (what, name))
    return name


class phase(object):
    """A phase of the program, `with vramtrace.phase("eval"):` or as a
    decorator, `@vramtrace.phase("eval")`. The same object may be entered
    again, also recursively and from other threads."""

    __slots__ = ("name", "_c_name")

    def __init__(self, name):
        self._c_name = _name_bytes(name, "phase")
        self.name = name

    def __enter__(self):
        if _tracer is not None:
            _tracer[1](self._c_name)
        return self

    def __exit__(self, exc_type, exc, tb):
        if _tracer is not None:
            _tracer[2]()
        return False

    def __call__(self, function):
        import functools

        @functools.wraps(function)
        def in_phase(*args, **kwargs):
            with self:
                return function(*args, **kwargs)
        return in_phase

    def __repr__(self):
        return "vramtrace.phase(%r)" % (self.name,)


def mark(text):
    """An instant marker in the trace (a checkpoint written, an epoch done)."""
    c_text = _name_bytes(text, "mark")
    if _tracer is not None:
        _tracer[3](c_text)


def trace_path():
    """The path of this process's trace file; None when not traced (or
    nothing is recorded yet and the file cannot be made)."""
    if _tracer is None:
        return None
    ctypes, path_fn = _tracer[0], _tracer[4]
    buf = ctypes.create_string_buffer(4096)
    n = path_fn(buf, len(buf))
    if n < 0:
        return None
    return buf.value.decode("utf-8", "surrogateescape")
