"""WAL204: a handler that uses the model stored in a dict the model owns."""

import torch
from torch import nn

CODE = "WAL204"
HOLD = "gc"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.handlers = {}

    def forward(self, x):
        out = self.linear(x)
        for handler in self.handlers.values():
            handler(out)
        return out


def install_logger(model, log):
    def log_output(out):
        log.append((type(model).__name__, float(out.sum())))

    model.handlers["log"] = log_output


def scenario(keep):
    torch.manual_seed(0)
    model = Net()
    keep(model.linear.weight)
    log = []
    install_logger(model, log)
    with torch.no_grad():
        model(torch.ones(1, 4))
    del model.handlers["log"]  # done logging
    return [(name, round(total, 4)) for name, total in log]
