"""torch.optim.optimizer: Optimizer with the global step hooks
(register_optimizer_step_pre_hook / _post_hook, hook(optimizer, args,
kwargs)), run around every step() as Optimizer.profile_hook_step does."""
from collections import OrderedDict

from .. import _MISSING
from ..autograd import Tensor
from ..nn.modules.module import RemovableHandle

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    h = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook):
    h = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[h.id] = hook
    return h


if "register_optimizer_step_pre_hook" in _MISSING:
    del register_optimizer_step_pre_hook


class Optimizer(object):
    states_per_param = 0

    def __init__(self, params, **defaults):
        self.params = list(params)
        self.state = {}

    def step(self, *args, **kwargs):
        for hook in list(_global_optimizer_pre_hooks.values()):
            r = hook(self, args, kwargs)
            if r is not None:
                args, kwargs = r
        out = self._step()
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    def _step(self):
        for p in self.params:
            if id(p) not in self.state:
                self.state[id(p)] = [Tensor(p.nbytes) for _ in range(self.states_per_param)]

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None


class SGD(Optimizer):
    states_per_param = 0


class AdamW(Optimizer):
    states_per_param = 2  # exp_avg, exp_avg_sq
