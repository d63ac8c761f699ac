"""Eval cases: WAL204, a method patched onto the object it holds (monkey-patched `forward`)."""
import functools
import types
from contextlib import contextmanager
from functools import partial, update_wrapper, wraps
from types import MethodType

import torch
from torch import nn

CACHE = {}


# accelerate's `add_hook_to_module`: the original bound method saved on the module, then a
# partial that binds the module stored as its `forward`.
def add_hook(module, hook):
    old_forward = module.forward
    module._old_forward = old_forward  # WAL204: 18, 4

    def new_forward(module, *args, **kwargs):
        return hook(module._old_forward(*args, **kwargs))

    module.forward = update_wrapper(partial(new_forward, module), old_forward)  # WAL204: 23, 4
    return module


def bind(model, new_forward):
    model.forward = MethodType(new_forward, model)  # WAL204: 28, 4
    model.extra_repr = types.MethodType(lambda m: "patched", model)  # WAL204: 29, 4
    setattr(model, "hook", functools.partial(print, model))  # WAL204: 30, 4


# A closure that uses the object, or calls its saved bound method, stored on it.
def install(module, mesh):
    original_forward = module.forward

    def sharded_forward(*args):
        return original_forward(*args)

    module.forward = sharded_forward  # WAL204: 40, 4


def install_capturing(module):
    def logged_forward(*args):
        print(type(module).__name__)
        return type(module).forward(module, *args)

    module.forward = logged_forward  # WAL204: 48, 4
    module.handlers["log"] = logged_forward  # WAL204: 49, 4
    module.callbacks.append(logged_forward)  # WAL204: 50, 4


# Saving the method read just before patching it (accelerate's `prepare_model`).
def autocast(model, wrap):
    model._original_forward = model.forward  # WAL204: 55, 4
    model.forward = MethodType(wrap(model.forward.__func__), model)  # WAL204: 56, 4


# Undoing a patch by assigning the old bound method back is the same cycle.
@contextmanager
def patched_forward(model, replacement):
    original_forward = model.forward
    model.forward = lambda *a: replacement(original_forward(*a))
    try:
        yield
    finally:
        model.forward = original_forward  # WAL204: 67, 8


# A submodule reached from the object holds the patch too: `self.codec` holds itself.
class Wrapper(nn.Module):
    def __init__(self, codec):
        super().__init__()
        self.codec = codec
        setattr(self.codec, "decode", types.MethodType(self._decode, self.codec))  # WAL204: 75, 8
        # A `partial` of `self` stored on `self` (a model: parameters).
        self.weight = nn.Parameter(torch.ones(2))
        self.generate = functools.partial(generate, model=self)  # WAL204: 78, 8

    def _decode(self, codec, x):
        return x


def generate(model):
    return model


# Not WAL204.
def not_cycles(model, other, cls, klass: type):
    model.forward = MethodType(print, other)  # bound to another object
    model.hook = partial(print, other)
    cls.forward = MethodType(print, cls)  # a class: alive anyway
    klass.forward = partial(print, klass)
    model.__class__.forward = partial(print, model)  # the class holds it: not a cycle
    type(model).forward = partial(print, model)
    CACHE["m"] = partial(print, model)  # a module global holds it, not the model
    model.name = model.config  # an attribute, not a method


def undo_in_finally(model, new_forward):
    model.forward = MethodType(new_forward, model)
    try:
        return model(1)
    finally:
        del model.forward


def undo_other_ways(model, new_forward):
    model.forward = MethodType(new_forward, model)
    model.hook = partial(print, model)
    model.extra_repr = MethodType(new_forward, model)
    try:
        return model(1)
    finally:
        delattr(model, "forward")
        model.__dict__.pop("hook", None)
        vars(model).pop("extra_repr")


def class_parameters(target_class, model_cls, cls_, model, new_forward):
    target_class.forward = partial(new_forward, target_class)
    model_cls.build = MethodType(new_forward, model_cls)
    cls_.describe = MethodType(new_forward, cls_)
    model.__class__ = type(model)  # an instance's class swapped: still an instance
    model.forward = MethodType(new_forward, model)  # WAL204: 125, 4


class Factory:
    @classmethod
    def patch(cls, model, new_forward):
        cls.make = MethodType(new_forward, cls)
        model.forward = MethodType(new_forward, model)  # WAL204: 132, 8


def patch_walrus(model, new_forward):
    model.forward = (bound := MethodType(new_forward, model))  # WAL204: 136, 4
    return bound


def tab_def(model):
    def	forward_tab(*args):
        return model

    model.forward = forward_tab  # WAL204: 144, 4


def unwrap(model, forward, original_forward):
    model.forward = original_forward if forward == original_forward else MethodType(forward, model)  # WAL204: 148, 4
    model.hook = None or partial(print, model)  # WAL204: 149, 4


def replaced_at_once(model, new_forward, wrap):
    model.forward = MethodType(new_forward, model)
    model.forward = MethodType(wrap(model.forward.__func__), model)  # WAL204: 154, 4


# A class decorator: the nested functions take `self`, they are methods of the class.
def add_init(experts_class):
    original_forward = experts_class.forward

    @wraps(original_forward)
    def forward(self, *args):
        return original_forward(self, *args)

    experts_class.__init__ = lambda self: None
    experts_class.forward = forward
    return experts_class


# A module object (PEP 562 `__getattr__`): special methods mean a class or module.
def lazy(module, replacement):
    def __getattr__(name):
        return getattr(replacement, name) if module else None

    module.__getattr__ = __getattr__


# Module level: the objects are alive anyway.
model = nn.Linear(2, 2)
model.forward = MethodType(lambda m, x: x, model)


class Light:
    """Only strings on `self`: demoted to WAL904 (opt-in)."""

    def __init__(self, name: str):
        self.name = name
        self.show = MethodType(describe, self)  # WAL904: 188, 8

    def describe(self):
        return self.name


def describe(obj):
    return obj.name


# Hostile shapes must not crash the rule.
def hostile(model, *args, **kwargs):
    model.forward = MethodType()
    model.forward = partial()
    model.forward = wraps()(lambda: model)  # WAL204: 202, 4
    setattr(model, "x")
    model.a.b[0].c = partial(print, model.a)  # WAL204: 204, 4
    (lambda: model)().x = partial(print, model)


# Wrappers of the object's own method, stored in its place (runtime: wrapped-method-on-self).
class Compiled(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(64, 64))

    def forward(self, x):
        return x

    def compile_forward(self):
        self.forward = torch.compile(self.forward)  # WAL204: 218, 8

    def trace_forward(self, calls):
        @wraps(self.forward)
        def traced(*args):
            calls.append(args)
            return 1

        self.forward = traced  # WAL204: 226, 8

    def not_methods(self, normalize):
        self.weight = normalize(self.weight)  # an attribute, not a method of the class


def not_rewraps(model, run, normalize):
    model.out = run(model.forward)  # the call's result, not a wrapper stored in its place
    model.data = normalize(model.data)  # another object's attribute: maybe not a method


# Restoring from the attribute where `add_hook` saved the bound method (accelerate's
# `remove_hook_from_module`): the module's `forward` is its own bound method again.
def remove_hook(module):
    if hasattr(module, "_old_forward"):
        module.forward = module._old_forward  # WAL204: 241, 8
        del module._old_forward


# Saved per module in a dict, restored in a loop (transformers' debugger context).
@contextmanager
def debug_all(model, wrap):
    originals = {m: m.forward for m in model.modules()}
    for m in model.modules():
        m.forward = wrap(m)
    try:
        yield
    finally:
        for module, forward in originals.items():
            module.forward = forward  # WAL204: 255, 12


# Wrapper factories applied to the saved method (accelerate's `prepare_model` after a hook).
def fp32_outputs(model, autocast, convert):
    model_forward_func = model.forward
    model.forward = convert(autocast(model_forward_func))  # WAL204: 261, 4


def data_not_methods(config, state, normalize):
    saved = {k: k.weight for k in state}  # `weight` is never patched here: data
    for obj, value in saved.items():
        obj.weight = value
    config.backup = config.value
    config.value = normalize(config.value)
    config.restored = config.backup


# Forwards kept per module across a context, put back after (transformers'
# `keep_accelerate_hooks`): `forward` is nn.Module's method wherever it is read.
@contextmanager
def keep_hooks(model):
    hooked = {m: m.forward for m in model.modules()}
    try:
        yield
    finally:
        for module, hooked_forward in hooked.items():
            if module.forward is not hooked_forward:
                module._old_forward = module.forward  # WAL204: 283, 16
                module.forward = hooked_forward  # WAL204: 284, 16


# A wrapper of the method, made first and stored in its place (accelerate's
# `convert_model` for Transformer Engine).
def fp8_autocast(model, autocast):
    new_forward = autocast(model.forward)
    if hasattr(model.forward, "__func__"):
        model.forward = MethodType(new_forward, model)  # WAL204: 292, 8
    else:
        model.forward = new_forward  # WAL204: 294, 8


# A callable kept in a field is not a method of the object: wrapping it, calling it from a
# closure or saving it makes no cycle (only `forward`-like method names, or a patch that
# binds the object, say an attribute is a method).
def callable_field(graph, cudagraphify):
    current_callable = graph.current_callable
    graph.current_callable = cudagraphify(current_callable)

    def call(*args):
        return current_callable(*args)

    graph.run = call
    graph.saved = graph.current_callable


# A class namespace being built (a metaclass's `namespace['__iter__']`): alive anyway.
def add_iter(namespace):
    def __iter__(self):
        return iter(namespace)

    namespace["__iter__"] = __iter__

