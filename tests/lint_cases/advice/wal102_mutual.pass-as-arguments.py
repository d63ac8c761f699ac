"""WAL102: two nested functions that call each other keep the environment they read."""

import torch

CODE = "WAL102"
HOLD = "gc"


def evaluate(expr, env):
    def value(node, value, apply):
        if isinstance(node, tuple):
            return apply(node, value, apply)
        return env[node] if isinstance(node, str) else node

    def apply(node, value, apply):
        op, left, right = node
        a, b = value(left, value, apply), value(right, value, apply)
        return a + b if op == "+" else a * b

    return value(expr, value, apply)


def scenario(keep):
    env = {"x": torch.ones(2)}
    keep(env["x"])
    return evaluate(("+", "x", ("*", "x", 3)), env).tolist()
