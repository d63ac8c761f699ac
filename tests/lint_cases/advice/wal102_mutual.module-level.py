"""WAL102: two nested functions that call each other keep the environment they read."""

import torch

CODE = "WAL102"
HOLD = "gc"


def _value(node, env):
    if isinstance(node, tuple):
        return _apply(node, env)
    return env[node] if isinstance(node, str) else node


def _apply(node, env):
    op, left, right = node
    a, b = _value(left, env), _value(right, env)
    return a + b if op == "+" else a * b


def evaluate(expr, env):
    return _value(expr, env)


def scenario(keep):
    env = {"x": torch.ones(2)}
    keep(env["x"])
    return evaluate(("+", "x", ("*", "x", 3)), env).tolist()
