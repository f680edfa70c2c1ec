"""torch.nn.modules.module: Module, its global hooks
(register_module_forward_pre_hook(hook(module, args)),
register_module_forward_hook(hook(module, args, output)), the full
backward ones stored only), train()/eval(), and a few layers whose
forward allocates its output through the caching allocator."""
from collections import OrderedDict

from ... import _MISSING, is_grad_enabled
from ...autograd import Node, Tensor

_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()


class RemovableHandle(object):
    next_id = 0

    def __init__(self, hooks):
        self.hooks = hooks
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1

    def remove(self):
        self.hooks.pop(self.id, None)


def _register(table, hook):
    h = RemovableHandle(table)
    table[h.id] = hook
    return h


def register_module_forward_pre_hook(hook):
    return _register(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook):
    return _register(_global_forward_hooks, hook)


def register_module_full_backward_pre_hook(hook):
    return _register(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    return _register(_global_backward_hooks, hook)


if "register_module_forward_pre_hook" in _MISSING:
    del register_module_forward_pre_hook


class Module(object):
    def __init__(self):
        self.training = True
        self._modules = OrderedDict()
        self._parameters = []

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self.__dict__.setdefault("_modules", OrderedDict())[name] = value
        object.__setattr__(self, name, value)

    def __call__(self, *args):
        for hook in list(_global_forward_pre_hooks.values()):
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        out = self.forward(*args)
        for hook in list(_global_forward_hooks.values()):
            r = hook(self, args, out)
            if r is not None:
                out = r
        return out

    def to(self, *args, **kwargs):
        return self

    def children(self):
        return iter(self._modules.values())

    def parameters(self):
        for p in self._parameters:
            yield p
        for m in self.children():
            for p in m.parameters():
                yield p

    def train(self, mode=True):
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)


class Linear(Module):
    """Weights of in*out*4 bytes; an output of batch*out*4 bytes."""

    def __init__(self, in_features, out_features):
        Module.__init__(self)
        self.out_features = out_features
        self.weight = Tensor(in_features * out_features * 4, requires_grad=True)
        self._parameters = [self.weight]

    def forward(self, x):
        batch = max(getattr(x, "batch", 1), 1)
        grad = is_grad_enabled()
        fn = Node("AddmmBackward0", [x.grad_fn] if x.grad_fn else [], [x], [self.weight]) \
            if grad else None
        out = Tensor(batch * self.out_features * 4, grad_fn=fn)
        out.batch = batch
        return out


class ReLU(Module):
    def forward(self, x):
        fn = Node("ReluBackward0", [x.grad_fn] if x.grad_fn else [], [], []) \
            if is_grad_enabled() and x.grad_fn else None
        out = Tensor(x.nbytes, grad_fn=fn)
        out.batch = getattr(x, "batch", 1)
        return out


class Sequential(Module):
    def __init__(self, *mods):
        Module.__init__(self)
        for i, m in enumerate(mods):
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self.children():
            x = m(x)
        return x


class CrossEntropyLoss(Module):
    def forward(self, x, target=None):
        fn = Node("NllLossBackward0", [x.grad_fn] if x.grad_fn else [], [], []) \
            if is_grad_enabled() and x.grad_fn else None
        return Tensor(512, grad_fn=fn)
