"""WAL204: a forward redirected for one call and put back from inside the redirect (the
shape of lightning's `_ForwardRedirection`). The module may already carry an instance
`forward` (a compiled one): `del module.forward` alone would drop it."""

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


class Net(nn.Linear):
    def step(self, x):
        return self(x) + 1


def redirect(wrapper, module, method_name, x):
    had = "forward" in vars(module)
    original_forward = module.forward

    def wrapped_forward(*args):
        if had:
            module.forward = original_forward
        else:
            del module.forward
        return getattr(module, method_name)(*args)

    module.forward = wrapped_forward
    return wrapper(x)


def scenario(keep):
    torch.manual_seed(0)
    plain, patched = Net(4, 4), Net(4, 4)
    keep(plain.weight)
    patched.forward = lambda x: x * 0.5
    with torch.no_grad():
        x = torch.ones(1, 4)
        first = redirect(plain, plain, "step", x).tolist()
        second = redirect(patched, patched, "step", x).tolist()
        after = patched(x).tolist()
    return first, second, after, "forward" in vars(patched)
