"""WAL101: a nested walker that calls itself keeps the tensors it collected."""

import torch

CODE = "WAL101"
HOLD = "gc"


def total(tree, keep):
    found = []

    def walk(node):
        found.append(node["value"])
        for child in node["children"]:
            walk(child)

    try:
        walk(tree)
        keep(found[0])
        return float(sum(float(t.sum()) for t in found))
    finally:
        del walk


def scenario(keep):
    leaf = {"value": torch.full((4,), 2.0), "children": []}
    return total({"value": torch.ones(4), "children": [leaf]}, keep)
