"""Eval cases for issue 17: captures that static evidence proves light make WAL903, not WAL101."""
import ast
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn


# A set only ever filled with strings (string methods, f-strings), read by sorted().
def imports_of(tree):
    found = set()

    def visit(node):  # WAL903: 16, 4 fix
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                found.add(top)
                found.add(f"{top}!")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return sorted(found)


# The same set handed to other code, or returned, may be filled with anything.
def imports_shared(tree, collect):
    found = set()

    def visit(node):  # WAL101: 33, 4 "found" fix
        found.add(node.name.lower())
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    collect(found)


def imports_returned(tree):
    found = []

    def visit(node):  # WAL101: 45, 4 "found" fix
        found.append(node.name.strip())
        return [visit(c) for c in ast.iter_child_nodes(node)]

    visit(tree)
    return found


# A list filled with what the walk finds keeps tensors.
def gather(root):
    tensors = []

    def visit(node):  # WAL101: 57, 4 "tensors" fix
        tensors.append(node.weight)
        return [visit(c) for c in node.children()]

    visit(root)
    return len(tensors)


# Flags, counters from divmod, comprehensions over strings.
def cycle_of(num_nodes, keys):
    visited = [False] * num_nodes
    per_rank, extra = divmod(num_nodes, 3)
    lowered = {k.lower() for k in keys}

    def visit(node):  # WAL903: 71, 4 fix
        visited[node] = True
        if extra or per_rank or node in lowered:
            return visit(node + 1)

    return visit(0)


# Light annotations: str, list[str], Path; heavy: Tensor, dict of tensors, Any, Callable.
def annotated(names: list[str], kinds: type[int], root: Path, labels: "dict[str, int]"):
    def walk(i):  # WAL903: 81, 4 fix
        return walk(i - 1) if kinds(names[i]) and root and labels else None

    return walk(3)


def annotated_heavy(x: torch.Tensor, sd: dict[str, torch.Tensor], extra: Any, visit: Callable):
    def walk(i):  # WAL101: 88, 4 "sd" "extra" "visit" "x" fix
        return walk(i - 1) if i else (x, sd, extra, visit(i))

    return walk(3)


# `@functools.wraps(fn)`: fn is the wrapped function (code), even taken from a class.
def compiler_disable(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # WAL903: 97, 4 escapes
        if not hasattr(wrapper, "_compiled"):
            wrapper._compiled = fn
        return wrapper._compiled(*args, **kwargs)

    return wrapper


class Layer:
    def __init_subclass__(cls, **kwargs):
        forward = cls.forward

        @functools.wraps(forward)
        def checkpointed(self, *args):  # WAL903: 110, 8 escapes
            return forward(self, *args) if type(self).forward is checkpointed else None

        cls.forward = checkpointed


# `self` of a class that stores only light values; of a module with parameters.
class Splitter:
    def __init__(self, processes: int, name: str):
        self.processes = processes
        self.name = name

    def split(self, items):
        def part(i):  # WAL903: 123, 8 fix
            return part(i - 1) if i > self.processes else self.name

        return part(len(items))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 2)

    def walk(self, items):
        def part(i):  # WAL101: 135, 8 "self" fix
            return part(i - 1) if i else self.linear

        return part(len(items))


# Names built from each other: one heavy source makes them all heavy, in any order.
def built_from_each_other(x):
    a = None
    b = a
    a = b or x

    def walk(i):  # WAL101: 147, 4 "a" "b" fix
        return walk(i - 1) if i else (b, a)

    return walk(2)


# Annotations on locals count whatever the uses (returned, handed on, string annotations).
def annotated_locals(root, collect):
    files: list[tuple[str, str]] = []
    names: "OrderedDict[str, str]" = {}
    sizes: list[int]
    sizes = []

    def walk(node):  # WAL903: 160, 4 fix
        files.append((f"{node.name}", node.url))
        names[node.name] = node.kind
        sizes.append(node.size)
        for child in node.children:
            walk(child)

    walk(root)
    collect(sizes)
    return files, names


# Filled from attributes named as numbers, and the items read only as numbers and strings:
# counted, halved, compared, formatted.
def sliceable(model, slice_size):
    dims = []

    def collect(module):  # WAL903: 177, 4 fix
        if hasattr(module, "set_attention_slice"):
            dims.append(module.sliceable_head_dim)
        for child in module.children():
            collect(child)

    collect(model)
    halves = [d // 2 for d in dims]
    for i in range(len(dims)):
        dim = dims[i]
        if slice_size > dim:
            raise ValueError(f"size {slice_size} is larger than {dim}")
    return halves


# Names said scalar, but an item is read as a tensor (`.sum()`), or items never read at all.
def sizes_read_as_tensors(model):
    sizes = []

    def collect(module):  # WAL101: 196, 4 "sizes" fix
        sizes.append(module.hidden_size)
        for child in module.children():
            collect(child)

    collect(model)
    return [s.sum() for s in sizes]


def only_counted(model):
    dims = []

    def collect(module):  # WAL101: 208, 4 "dims" fix
        dims.append(module.head_dim)
        for child in module.children():
            collect(child)

    collect(model)
    return len(dims)


# Items taken out by index into a name that is then handed on: not read as a number.
def taken_and_handed(model, sink):
    dims = []

    def collect(module):  # WAL101: 221, 4 "dims" fix
        dims.append(module.head_dim)
        for child in module.children():
            collect(child)

    collect(model)
    first = dims[0]
    sink(first)


# A call of a function of this file annotated to return something light is light.
def depth_of(node) -> int:
    return 1 + max((depth_of(c) for c in node.children), default=0)


def deepest(root):
    best = depth_of(root)

    def walk(node):  # WAL903: 239, 4 fix
        if depth_of(node) > best:
            return node.name
        for child in node.children:
            walk(child)

    return walk(root)


# The same name, rebound to a local that may be anything, is not that function.
def shadowed(root, depth_of):
    best = depth_of(root)

    def walk(node):  # WAL101: 252, 4 "best" fix
        if node.size > best:
            return node.name
        for child in node.children:
            walk(child)

    return walk(root)
