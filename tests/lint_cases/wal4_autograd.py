"""Eval cases for 4xx (autograd hooks and nodes). `# CODE: line, col` (col 0-based)."""
import functools
import weakref


def tensor_hook(t, scale):
    t.register_hook(lambda g: g * t)  # WAL401: 7, 4
    t.register_hook(lambda g: g * scale)
    t.register_hook(functools.partial(rescale, t))  # WAL401: 9, 4

    def hook(grad):
        return grad + t.mean()

    t.register_hook(hook)  # WAL401: 14, 4
    ref = weakref.ref(t)
    t.register_hook(lambda g: g * ref())
    t.register_post_accumulate_grad_hook(lambda p: p.grad.zero_())


def removed_afterwards(t):
    handle = t.register_hook(lambda g: g * t)
    t.backward()
    handle.remove()


def module_hooks(model):
    model.register_forward_hook(lambda m, i, o: model.cache.append(o))  # WAL401: 27, 4
    model.register_forward_hook(lambda m, i, o: m.cache.append(o))
    model._register_comm_hook(model, allreduce)


class Layer:
    def build(self):
        self.weight.register_hook(lambda g: g * self.scale)  # WAL401: 34, 8


def node_attributes(x):
    out = x * 2
    out.grad_fn.keep = lambda: out.sum()  # WAL402: 39, 4
    out.grad_fn.tensor = out  # WAL402: 40, 4
    out.grad_fn.name = "mul"
    out.grad_fn.next_functions[0][0].cb = lambda: out  # WAL402: 42, 4
    out.grad_fn.fn = lambda: x
    out.meta = lambda: out
