"""WAL102: two nested functions that call each other keep the environment they read."""

import torch

CODE = "WAL102"
HOLD = "gc"


def evaluate(expr, env):
    def value(node):
        if isinstance(node, tuple):
            return apply(node)
        return env[node] if isinstance(node, str) else node

    def apply(node):
        op, left, right = node
        a, b = value(left), value(right)
        return a + b if op == "+" else a * b

    try:
        return value(expr)
    finally:
        del value


def scenario(keep):
    env = {"x": torch.ones(2)}
    keep(env["x"])
    return evaluate(("+", "x", ("*", "x", 3)), env).tolist()
