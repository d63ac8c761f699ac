"""WAL204: a model's forward replaced by a closure that uses the model."""

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x)


def clamped(model, x):
    def clamped_forward(inputs):
        return model.linear(inputs).clamp(min=0)

    had = "forward" in vars(model)
    earlier = vars(model).get("forward")
    model.forward = clamped_forward
    try:
        with torch.no_grad():
            return model(x).tolist()
    finally:
        if had:
            model.forward = earlier
        else:
            del model.forward


def scenario(keep):
    torch.manual_seed(0)
    model = Net()
    keep(model.linear.weight)
    return clamped(model, torch.ones(1, 4))
