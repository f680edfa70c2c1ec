"""Tensors and a minimal autograd: backward runs on a thread of its own,
named like PyTorch's device threads (pt_autograd_0), calls each node's
prehooks, allocates gradients and runs the callbacks queued during it at
its end (Engine::queue_callback)."""
import threading

from .. import _MISSING, is_grad_enabled


class Node(object):
    def __init__(self, name, inputs, saved, params):
        self.name_ = name
        self.inputs = inputs  # the nodes before this one
        self.saved = saved  # tensors kept for backward
        self.params = params  # parameters whose .grad this node fills
        self.prehooks = []

    def name(self):
        return self.name_

    def register_prehook(self, fn):
        self.prehooks.append(fn)


class _Engine(object):
    def __init__(self):
        self.callbacks = None

    def queue_callback(self, cb):
        if self.callbacks is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        self.callbacks.append(cb)

    def run_backward(self, root, grad_bytes):
        error = []

        def work():
            try:
                self.callbacks = []
                grad = None
                seen = set()
                pending = [root]
                while pending:
                    node = pending.pop(0)
                    if id(node) in seen:
                        continue
                    seen.add(id(node))
                    for hook in list(node.prehooks):
                        hook((None,))
                    new = Tensor(grad_bytes)  # the grad of the node's input
                    grad = new  # the previous one is freed (autograd frees as it goes)
                    for p in node.params:
                        if p.grad is None:
                            p.grad = Tensor(p.nbytes)
                    node.saved = []
                    pending.extend(node.inputs)
                del grad, new
                callbacks, self.callbacks = self.callbacks, None
                for cb in callbacks:
                    cb()
            except BaseException as e:
                self.callbacks = None
                error.append(e)

        t = threading.Thread(target=work, name="pt_autograd_0")
        t.start()
        t.join()
        if error:
            raise error[0]


class Variable(object):
    _execution_engine = _Engine()


if "queue_callback" in _MISSING:
    del _Engine.queue_callback


class Tensor(object):
    def __init__(self, nbytes, requires_grad=False, grad_fn=None):
        from ..cuda import _allocator

        self.nbytes = int(nbytes)
        self.requires_grad = requires_grad or grad_fn is not None
        self.grad_fn = grad_fn
        self.grad = None
        self.block = _allocator.allocator(0).malloc(self.nbytes)

    def __del__(self):
        block = getattr(self, "block", None)
        if block is not None:
            self.block = None
            try:
                block.allocator.free(block)
            except Exception:
                pass

    def data_ptr(self):
        return self.block.address

    def size(self):
        return self.nbytes

    def backward(self):
        if self.grad_fn is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        Variable._execution_engine.run_backward(self.grad_fn, max(self.nbytes, 512))

    def __matmul__(self, other):
        """A matmul on cuBLAS (the first of a thread gets its workspace,
        cuda/_blas.py); the output is rows x columns of float32."""
        from ..cuda import _blas

        _blas.handle()
        rows = getattr(self, "shape", (self.nbytes // 4,))[0]
        cols = getattr(other, "shape", (1, 1))[-1]
        out = Tensor(rows * cols * 4)
        out.shape = (rows, cols)
        out.batch = rows
        return out

    def sum(self):
        fn = Node("SumBackward0", [self.grad_fn] if self.grad_fn else [], [], []) \
            if is_grad_enabled() and self.requires_grad else None
        return Tensor(512, grad_fn=fn)


def is_tensor(x):
    return isinstance(x, Tensor)
