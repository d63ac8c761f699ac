"""Eval cases for 1xx: `# CODE: line, col`, then first kept names, `escapes`, `fix` (see tests)."""
import functools


# The seed: pipelining's stage_backward before the fix.
def stage_backward(stage_output, output_grads):
    stage_output_tensors = []
    output_grad_tensors = []

    def extract_tensors_with_grads(output_val, grad_val):  # WAL101: 10, 4 "output_grad_tensors" "stage_output_tensors" fix
        if isinstance(output_val, (tuple, list)):
            for ov, gv in zip(output_val, grad_val):
                extract_tensors_with_grads(ov, gv)
        else:
            stage_output_tensors.append(output_val)
            output_grad_tensors.append(grad_val)

    extract_tensors_with_grads(stage_output, output_grads)
    return stage_output_tensors


# The seed's fix, as shipped: the function is passed to itself.
def stage_backward_fixed(stage_output, output_grads):
    stage_output_tensors = []

    def extract_tensors_with_grads(output_val, grad_val, extract_tensors_with_grads):
        for ov in output_val:
            extract_tensors_with_grads(ov, grad_val, extract_tensors_with_grads)
        stage_output_tensors.append(output_val)

    extract_tensors_with_grads(stage_output, output_grads, extract_tensors_with_grads)


# The same fix with a parameter of another name.
def passed_as_argument(x):
    def extract(x, extract_fn):
        return [extract_fn(c, extract_fn) for c in x]

    return extract(x, extract)


# The other fix: del before the enclosing function returns.
def deleted_before_return(x):
    def walk(node):
        for child in node:
            walk(child)

    walk(x)
    del walk


def reset_to_none(x):
    def walk(node):
        return [walk(c) for c in node]

    result = walk(x)
    walk = None
    return result


# `walk = None` before the def does not break the cycle.
def cleared_too_early(x):
    walk = None

    def walk(node):  # WAL903: 65, 4 fix
        return walk(node)

    return walk(x)


# Module-level recursion: no closure, no cycle.
def module_level(n):
    return module_level(n - 1) if n else 0


class Tree:
    # Recursion through self.method: no closure, no cycle.
    def walk(self, node):
        return [self.walk(c) for c in node]

    # A method's name in its own body is a global, not a closure.
    def visit(self, node):
        return visit(node)

    def method_with_helper(self, node):
        def helper(n):  # WAL903: 86, 8 fix
            return [helper(c) for c in n]

        return helper(node)


# Through a comprehension and a generator expression inside the nested function.
def via_comprehension(x):
    def flatten(items):  # WAL903: 94, 4 fix
        return [y for i in items for y in (flatten(i) if isinstance(i, list) else [i])]

    def total(items):  # WAL903: 97, 4 fix
        return sum(total(i) for i in items)

    return flatten(x), total(x)


# Decorated nested functions are still closures.
def decorated(x):
    @functools.lru_cache(maxsize=None)
    def fib(n):  # WAL101: 106, 4 "@functools.lru_cache"
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    return fib(x)


# Async defs.
async def async_outer(x):
    async def crawl(node):  # WAL903: 114, 4 fix
        for child in node:
            await crawl(child)

    await crawl(x)


# A recursive lambda.
def recursive_lambda(n):
    fact = lambda k: 1 if k <= 1 else k * fact(k - 1)  # WAL903: 123, 4
    return fact(n)


# nonlocal counters are closures but not self-references.
def counter():
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count

    return bump


# Calling a sibling that does not call back makes no cycle.
def one_way(x):
    def leaf(v):
        return v

    def branch(v):
        return leaf(v)

    return branch(x)


# Mutual recursion among sibling nested functions.
def mutual(x):
    def is_even(n):  # WAL903: 152, 4
        return True if n == 0 else is_odd(n - 1)

    def is_odd(n):
        return False if n == 0 else is_even(n - 1)

    return is_even(x)


def mutual_deleted(x):
    def ping(n):
        return n and pong(n - 1)

    def pong(n):
        return n and ping(n - 1)

    try:
        return ping(x)
    finally:
        del ping


# Nested one level deeper: the inner function of a nested function.
def outer_outer():
    def outer():
        def inner(n):  # WAL903: 177, 8 fix
            return inner(n - 1) if n else 0

        return inner(3)

    return outer()


# Class bodies nested in functions do not make closures for their methods.
def class_in_function():
    class Local:
        def again(self):
            return again

    return Local
