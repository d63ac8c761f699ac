"""2xx: an instance that holds something that holds the instance (bound methods, closures)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterable, Iterator

from whyalive.lint.findings import Advice, LintFinding, advice_sentence, snippet
from whyalive.lint.rules.instances import light_instance
from whyalive.lint.rules.method_slots import bound_method_advice, weak_forwarder
from whyalive.lint.rules.object_stores import (
    may_patch,
    may_register,
    may_store_bound_method,
    may_store_closure,
    may_store_on_object,
)
from whyalive.lint.rules.patches import patch_of
from whyalive.lint.rules.shapes import (
    MethodSelf,
    bound_method_of,
    closure_frees,
    held_values,
    is_registrar,
    method_self,
    released_in_finally,
    root_name,
    store_sites,
)
from whyalive.lint.rules.weight import weigher
from whyalive.lint.scopes import Context, Rule

# What a finder found: the method's `self` when the cycle goes through it (only `self` can be
# proven light), the fields of its rule's message and the fixes it offers.
_Found = tuple[MethodSelf | None, dict[str, str], tuple[Advice, ...]]
_Finder = Callable[[ast.AST, Context], Iterator[_Found]]


def _light(ctx: Context, owner: MethodSelf | None) -> str | None:
    """The class name when its instances hold nothing heavy (:mod:`.instances`), else None."""
    if owner is None:
        return None
    cls = owner.method.parent.node if owner.method.parent is not None else None
    if isinstance(cls, ast.ClassDef) and light_instance(weigher(ctx), cls):
        return cls.name
    return None


def _heavy(finder: _Finder, node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    for owner, fields, advice in finder(node, ctx):
        if _light(ctx, owner) is None:
            yield ctx.report(node, fields, advice=advice)


def _may_register_call(node: ast.AST) -> bool:
    func = getattr(node, "func", None)
    return isinstance(func, ast.Attribute) and is_registrar(func.attr)


def _checking(
    finder: _Finder, may_match: Callable[[ast.AST], bool] = may_store_on_object
) -> Callable[[ast.AST, Context], Iterable[LintFinding]]:
    """A rule's check: ``finder`` on the nodes a cheap first look (``may_match``) lets through
    (most assignments and calls store nothing on an object)."""

    def check(node: ast.AST, ctx: Context) -> Iterable[LintFinding]:
        return _heavy(finder, node, ctx) if may_match(node) else ()

    return check


_STORE_NODES: tuple[type[ast.AST], ...] = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Call,
)


def _stores_on_self(node: ast.AST, ctx: Context) -> Iterator[tuple[str, ast.AST, ast.AST]]:
    """``(self name, where, stored expression)`` for each value this node stores on ``self``."""
    sites = [
        (where, value)
        for where, value in store_sites(node)
        if isinstance(node, ast.Call) or not isinstance(where, ast.Name)
    ]
    owner = method_self(ctx) if sites else None
    if owner is None:
        return
    for where, value in sites:
        if root_name(where) == owner.name:
            for held in held_values(value):
                yield owner.name, where, held


def _kept_on_every_path(node: ast.AST, where: ast.AST, ctx: Context) -> bool:
    """False when an attribute store is undone in a later ``finally`` (``del self.f``)."""
    return isinstance(node, ast.Call) or not released_in_finally(
        ctx, where, getattr(node, "lineno", 0)
    )


def _bound_methods(node: ast.AST, ctx: Context) -> Iterator[_Found]:
    owner = None
    for self_name, where, held in _stores_on_self(node, ctx):
        owner = owner or method_self(ctx)
        method = bound_method_of(held, owner) if owner is not None else None
        if owner is not None and method is not None and _kept_on_every_path(node, where, ctx):
            fields = {"stmt": snippet(node), "self": self_name, "method": method}
            yield owner, fields, bound_method_advice(ctx, owner, node, where, method)
            return


BOUND_METHOD_ON_SELF = Rule(
    code="WAL201",
    name="bound-method-on-self",
    message=(
        "WAL201 `{stmt}` stores a bound method on its own instance; the method holds "
        "`{self}`, which makes a cycle. {advice}"
    ),
    node_types=_STORE_NODES,
    check=_checking(_bound_methods),
    offers=("weak-forwarder", "dispatch-in-method"),
    may_report=may_store_bound_method,
    explanation="""\
`self.cb = self.on_step` (or appending `self.on_step` to a list or dict that `self` owns)
stores a bound method on the instance it is bound to. A bound method holds `__self__`, so
the instance holds itself: it is cyclic garbage when dropped, and everything it owns
(parameters, buffers, optimiser state) waits for the cyclic GC.

Fix, keeping every call `self.cb(...)` as it is: store a function that calls the method
through a weak reference (`method = weakref.WeakMethod(self.on_step)`, then
`self.cb = lambda *args, **kwargs: method()(*args, **kwargs)`). When the class defines the
attribute as a method, or callers expect one by that name (`forward`), a method of the class
that calls the chosen one works too ("keep" it when the class defines it, "define" it when
not), told which by a flag set where the store was when the store is conditional. On an
`nn.Module` (or a class with a base this file does not show) `forward` and `extra_repr` are
called by `nn.Module.__call__`: only that method is offered, since a `WeakMethod` or
`type(self).forward_split_cat` stored in `self.forward` would break `module(x)`.""",
)


def _closures_on_self(node: ast.AST, ctx: Context) -> Iterator[_Found]:
    for self_name, where, held in _stores_on_self(node, ctx):
        found = closure_frees(held, ctx)
        if found is not None and self_name in found[1] and _kept_on_every_path(node, where, ctx):
            owner = method_self(ctx)
            assert owner is not None
            advice = [
                Advice(
                    "weak-self",
                    f"capture `weakref.ref({self_name})` instead of `{self_name}` (`ref = "
                    f"weakref.ref({self_name})`, and `ref()` inside), so calls stay as they are",
                )
            ]
            direct = isinstance(where, ast.Attribute) and isinstance(where.value, ast.Name)
            if direct and found[1] == {self_name} and isinstance(node, ast.Assign):
                assert isinstance(where, ast.Attribute)
                advice.append(
                    Advice(
                        "method",
                        f"make it a method of the class (`def {where.attr}({self_name}, ...)`"
                        "), since it uses nothing else from here",
                    )
                )
            fields = {"stmt": snippet(node), "kind": found[0], "self": self_name}
            yield owner, fields, tuple(advice)
            return


CLOSURE_ON_SELF = Rule(
    code="WAL202",
    name="closure-capturing-self-on-self",
    message=(
        "WAL202 `{stmt}` stores a {kind} that captures `{self}` on `{self}` itself; its "
        "closure cell holds `{self}`, which makes a cycle. {advice}"
    ),
    node_types=_STORE_NODES,
    check=_checking(_closures_on_self),
    offers=("weak-self", "method"),
    may_report=may_store_closure,
    explanation="""\
`self.f = lambda: self.x`, or a nested `def` that uses `self` stored on `self`, puts `self`
into a closure cell that `self` then holds through the stored function: a cycle.

Fix, keeping every call as it is: capture a weak reference (`ref = weakref.ref(self)` and
`lambda: ref().x`), or, when it uses nothing but `self`, make it a method of the class.
(Taking the instance as a parameter would change every call, some made by other code.)""",
)


def _registered(node: ast.AST, ctx: Context) -> Iterator[_Found]:
    if not isinstance(node, ast.Call):
        return
    func = node.func
    if not isinstance(func, ast.Attribute) or not is_registrar(func.attr):
        return
    owner = method_self(ctx)
    if owner is None or root_name(func.value) != owner.name:
        return
    is_hook = "hook" in func.attr.lower()
    for arg in (*node.args, *(k.value for k in node.keywords)):
        for held in held_values(arg):
            method = bound_method_of(held, owner)
            if method is not None:
                what = f"bound method `{owner.name}.{method}`"
            else:
                found = closure_frees(held, ctx)
                # Closures passed to hook registrars are WAL401's (they capture the owner).
                if found is None or owner.name not in found[1] or is_hook:
                    continue
                what = f"{found[0]} that captures `{owner.name}`"
            receiver = snippet(func.value, 30)
            chain = (
                f"`{owner.name}` holds the callback, which holds `{owner.name}`"
                if receiver == owner.name
                else f"`{owner.name}` holds `{receiver}`, which holds the callback, "
                f"which holds `{owner.name}`"
            )
            fields = {"call": snippet(node), "what": what, "receiver": receiver}
            weak = (
                weak_forwarder(f"{owner.name}.{method}", "register")
                if method is not None
                else Advice(
                    "weak-self",
                    f"make the function capture `weakref.ref({owner.name})` instead of "
                    f"`{owner.name}` (`ref = weakref.ref({owner.name})`, and `ref()` inside)",
                )
            )
            remove = Advice(
                "remove-when-done",
                "keep what the registration returns and remove it when done "
                "(`handle.remove()` for a hook)",
            )
            yield owner, {**fields, "chain": chain, "self": owner.name}, (weak, remove)
            return


CALLBACK_ON_OWNED = Rule(
    code="WAL203",
    name="callback-on-owned-object",
    message=("WAL203 `{call}` registers a {what} on `{receiver}`; {chain}: a cycle. {advice}"),
    node_types=(ast.Call,),
    check=_checking(_registered, _may_register_call),
    offers=("weak-forwarder", "weak-self", "remove-when-done"),
    may_report=may_register,
    explanation="""\
Registering `self.on_event` (a bound method) or a closure over `self` as a hook or callback
on `self` or on an object reached from `self` (`self.register_forward_hook(self._hook)`,
`self.timer.add_callback(self.tick)`) makes the registry hold `self`, while `self` holds the
registry: a cycle.

Fix: register a small function that calls the method through a weak reference
(`method = weakref.WeakMethod(self._hook)`, then `lambda *args, **kwargs: method()(*args,
**kwargs)`) or that looks the instance up through `weakref.ref(self)`; or keep the returned
handle and call `handle.remove()` when done. (A bare `weakref.WeakMethod` is no callback:
calling it gives the method back instead of calling it.)""",
)


def _patched_methods(node: ast.AST, ctx: Context) -> Iterator[_Found]:
    patch = patch_of(node, ctx)
    if patch is not None:
        fields = {"stmt": snippet(node), "obj": patch.obj, "what": patch.what}
        yield patch.owner, fields, patch.advice


PATCHED_METHOD = Rule(
    code="WAL204",
    name="patched-method-holds-object",
    message=(
        "WAL204 `{stmt}` stores on `{obj}` {what}, so `{obj}` holds itself: a cycle that "
        "keeps `{obj}` and everything it owns alive until the cyclic GC runs. {advice}"
    ),
    node_types=_STORE_NODES,
    check=_checking(_patched_methods),
    offers=("undo", "save-function", "wrap-in-class", "weak-proxy"),
    may_report=may_patch,
    explanation="""\
Monkey-patching a method onto one object binds the object into the new callable and then
stores that callable on the same object: `model.forward = MethodType(new_forward, model)`,
`module.forward = functools.partial(new_forward, module)`, `model.forward = wrapper` where
the closure `wrapper` uses `model` or calls the saved `original = model.forward`. Saving the
original bound method on the object (`module._old_forward = module.forward`) or assigning it
back to undo a patch (`model.forward = original`) is the same cycle: a bound method holds
its object. The object (a model with all its parameters) then waits for the cyclic GC.
Only objects that can die are checked (parameters and locals, not module globals, imports
or classes).

Fix: undo the patch when done: `del model.forward` (the class's method shows through again)
when `forward` was not in `vars(model)` before the patch, rather than assigning the old bound
method back; when it was (an earlier patch, a compiled `forward`), put that earlier value
back, as `del` would drop it. Or bind a `weakref.proxy(model)` instead of the model, where the
function given it (or the closure) is in the file and uses it only through attributes (a
proxy is no instance of the class, cannot be hashed and breaks C calls); save the
class's function (`type(model).forward`, called with the model) instead of the bound method
when nothing patched it before; wrap a method of the class once, in the class, rather than
per instance (callers keep calling `obj.method(...)`).""",
)

_FINDERS: tuple[tuple[Rule, _Finder], ...] = (
    (BOUND_METHOD_ON_SELF, _bound_methods),
    (CLOSURE_ON_SELF, _closures_on_self),
    (CALLBACK_ON_OWNED, _registered),
    (PATCHED_METHOD, _patched_methods),
)


def _check_light(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    for rule, finder in _FINDERS:
        if not isinstance(node, rule.node_types):
            continue
        for owner, fields, advice in finder(node, ctx):
            cls = _light(ctx, owner)
            if cls is not None:
                fields = {**fields, "advice": advice_sentence(advice)}
                text = rule.message.format(**fields).removeprefix(rule.code).lstrip()
                found = ctx.report(node, code=rule.code, text=text, cls=cls)
                yield dataclasses.replace(found, advice=tuple(a.key for a in advice))
                return


LIGHT_SELF_CYCLE = Rule(
    code="WAL904",
    name="self-cycle-holding-nothing-heavy",
    message=(
        "WAL904 ({code}) {text} It holds nothing that can be a heavy object: `{cls}` stores "
        "only strings, numbers, flags and code on its instances."
    ),
    node_types=_STORE_NODES,
    check=_check_light,
    offers=(
        "weak-forwarder",
        "dispatch-in-method",
        "weak-self",
        "method",
        "remove-when-done",
        "undo",
        "save-function",
        "wrap-in-class",
        "weak-proxy",
    ),
    default_enabled=False,
    may_report=may_patch,
    explanation="""\
A WAL201, WAL202, WAL203 or WAL204 cycle through an instance whose class stores only light values
on `self`: strings, numbers, flags, `None`, functions, bound methods, loggers, containers of
those (its bases are `object`, `nn.Module`, `ABC`, `Protocol`, `Generic` or such light
classes of the same file, and its same-file subclasses are light too). It is still a
cycle, freed only by the cyclic GC, but it cannot keep a tensor alive. Off by default;
select it with `--select WAL904` (or `WAL9`). What code in other files stores on the
instance is not seen. The fixes are the original rule's.""",
)

RULES: tuple[Rule, ...] = (
    BOUND_METHOD_ON_SELF,
    CLOSURE_ON_SELF,
    CALLBACK_ON_OWNED,
    PATCHED_METHOD,
)
OPT_IN_RULES: tuple[Rule, ...] = (LIGHT_SELF_CYCLE,)
