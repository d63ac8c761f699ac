"""WAL901 (opt-in): a lambda stored on `self` that does not capture `self` (yet)."""

import torch

CODE = "WAL901"
HOLD = "none"


class Scaler:
    def __init__(self, factor, weights):
        self.weights = weights
        self.factor = factor

    def scale(self, x):
        return x * self.factor


def scenario(keep):
    scaler = Scaler(2, torch.ones(3))
    keep(scaler.weights)
    return scaler.scale(3), scaler.scale(0.5)
