"""WAL204: a patch undone by assigning the bound method read before it back."""

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


def run_with(model, patch, x):
    original = model.forward
    model.forward = patch
    try:
        out = model(x)
    finally:
        model.forward = original
    return out.tolist()


def scenario(keep):
    torch.manual_seed(0)
    plain, patched = nn.Linear(4, 4), nn.Linear(4, 4)
    keep(plain.weight)
    patched.forward = lambda x: x * 0.5
    with torch.no_grad():
        x = torch.ones(1, 4)
        outputs = [run_with(m, lambda x: x * 3, x) for m in (plain, patched)]
        outputs += [plain(x).tolist(), patched(x).tolist()]
    return outputs
