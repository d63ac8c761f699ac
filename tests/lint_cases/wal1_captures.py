"""Eval cases for issue 17's 1xx defects: `# CODE: line, col`, kept names, `escapes`, `fix`."""
import functools
import json
import torch
from collections import OrderedDict


# 1. A private (mangled) nested function name: symtable says `_Editor__serialise`.
class Editor:
    def save(self, weights):
        out = []

        def __serialise(w):  # WAL101: 13, 8 "out"
            if isinstance(w, list):
                return [__serialise(x) for x in w]
            out.append(w)

        __serialise(weights)
        return out

    def light(self, tree):
        def __walk(node):  # WAL903: 22, 8
            return [__walk(c) for c in node]

        return __walk(tree)


# 2. The payload comes first: parameters and locals, then names that are alive anyway.
def load_sharded(shards, model):
    from torch.nn import Linear
    from json import loads

    sd = [torch.load(s) for s in shards]
    LIMIT = 4

    def merge(name, depth=0):  # WAL101: 36, 4 "model" "sd" "shards" fix
        if depth > LIMIT:
            return Linear, loads, json, OrderedDict
        for part in sd:
            merge(name, depth + 1)
        return model, shards

    return merge("layer")


# A helper capturing only functions, classes, modules and constants holds nothing heavy.
def only_code(tree):
    from json import dumps
    depth_limit = 10

    class Node:
        pass

    def render(node, depth=0):  # WAL903: 54, 4 fix
        if depth > depth_limit:
            return dumps(Node.__name__)
        return [render(c, depth + 1) for c in node]

    return render(tree)


# A default value is held by the function, and so by the cycle.
def default_holds(batch):
    def walk(x, scale=batch * 2):  # WAL101: 64, 4 "batch * 2" fix
        return walk(x, scale)

    return walk(1)


# 3. Escaping recursive closures: `del` would break them, so no `del` advice, no fix.
def returned(state):
    def visit(node):  # WAL101: 72, 4 "state" escapes
        state.append(node)
        return [visit(c) for c in node]

    return visit


def stored(self, cache):
    def fetch(key):  # WAL101: 80, 4 "cache" escapes
        return cache.get(key) or fetch(key[:-1])

    self.fetch = fetch


def registered(registry, outputs):
    def hook(x):  # WAL101: 87, 4 "outputs" escapes
        outputs.append(x)
        return hook(x[1:]) if x else None

    registry.register(hook)
    setattr(registry, "hook", hook)


def decorated_escape(app, data):
    @app.route("/x")
    def handler(n):  # WAL101: 97, 4 "data" escapes
        return handler(n - 1) if n else data

    return None


def captured_by_lambda(items):
    def step(i):  # WAL101: 104, 4 "items" escapes
        return step(i - 1) if i else items

    return lambda: step(3)


def generator_escape(items):
    def step(i):  # WAL101: 111, 4 "items" escapes
        return step(i - 1) if i else items

    return (step(i) for i in range(3))


def helper_that_stays(items):
    def step(i):  # WAL101: 118, 4 "items" fix
        return step(i - 1) if i else items

    def twice(i):
        return step(step(i))

    return twice(2)


# 4. Broken cycles: any rebinding after the last call, deletes in `finally`.
def rebound_to_zero(tensors):
    def walk(node):
        return [walk(c) for c in node] + tensors

    result = walk(tensors)
    walk = 0
    return result


def rebound_from_itself(tensors):
    def walk(node):  # WAL101: 138, 4 "tensors" escapes
        return [walk(c) for c in node] + tensors

    walk = functools.partial(walk)
    return walk(tensors)


def deleted_in_finally(tensors):
    def walk(node):
        return [walk(c) for c in node] + tensors

    try:
        return walk(tensors)
    finally:
        del walk


# 5. One finding per mutual-recursion group, naming every function and what they keep.
def mutual_three(tensors, outputs):
    def a(n):  # WAL102: 157, 4 "outputs" "tensors"
        return b(n) + a(n - 1)

    def b(n):
        return c(n) + [tensors]

    def c(n):
        outputs.append(n)
        return a(n - 1)

    return a(3)


def mutual_escapes(state):
    def ping(n):  # WAL102: 171, 4 "state" escapes
        return pong(n - 1) if n else state

    def pong(n):
        return ping(n - 1)

    return ping


# The fix keeps formatting: trailing commas, comments, keyword-only and ** parameters.
def formatted(tensors, extra):
    def walk(  # WAL101: 182, 4 "tensors" "extra" fix
        node,  # the node
        *rest,
        depth=0,
        **options,
    ):
        walk(
            node,
            depth=depth + 1,  # deeper
        )
        return walk(node) or tensors or extra

    return walk(tensors, **{})


# Scalars hold nothing heavy: parameters annotated or defaulting to one, counters, flags.
def scalars(tree, flag: bool, limit=3, name: "str | None" = None):
    i = 0
    done = len(tree) > 2 and not flag
    for step in range(3):
        i += step

    def walk(node):  # WAL903: 204, 4 fix
        if flag and i < limit and not done and name:
            return walk(node)

    walk(tree)
    tree[i : i + 1] = None


# A `with` target, a loop variable over data and an untyped parameter can hold anything.
def not_scalars(path, rows, scale):
    with open(path) as stream:
        for row in rows:

            def walk(node):  # WAL101: 217, 12 "row" "scale" "stream" fix
                return walk(node) or stream or row or scale

            walk(row)

