"""What to store instead of a bound method of ``self`` on ``self`` (WAL201), by the slot's shape.

``self.X = self.m`` makes the cycle ``self -> X -> __self__ -> self``. What replaces it
depends on who calls ``X`` and whether the class defines it:

- on a class that is, or may be, an ``nn.Module`` (a base named ``Module``, or one this
  file does not define), ``forward`` and ``extra_repr`` are called by the module's own
  protocol (``module(x)``): only a method of the class that dispatches keeps the calls
  working; a ``WeakMethod`` or ``type(self).m`` stored there breaks them;
- on a class known not to be one, a function that calls the method through
  ``weakref.WeakMethod`` works in any slot (an instance attribute shadows a method of the
  class); when the class defines ``X``, or ``X`` is a name callers expect as a method
  (``forward``), a method that dispatches works as well.

"Keep ``X`` a method" is said only when the class defines ``X``; otherwise the advice is
to define it.
"""

from __future__ import annotations

import ast

from whyalive.lint.findings import Advice
from whyalive.lint.rules.instances import base_names
from whyalive.lint.rules.patch_facts import MODULE_METHODS
from whyalive.lint.rules.shapes import MethodSelf
from whyalive.lint.rules.weight import weigher
from whyalive.lint.scopes import Context

__all__ = ["bound_method_advice", "weak_forwarder"]

# Bases that make no class an nn.Module (a base outside this file might).
_NOT_MODULE_BASES = frozenset({"object", "ABC", "Protocol", "Generic", "NamedTuple"})


def weak_forwarder(bound: str, verb: str = "store") -> Advice:
    """A function that calls ``bound`` through a weak reference, in its place: calls keep
    their form."""
    return Advice(
        "weak-forwarder",
        f"{verb} a function that calls it through a weak reference instead (`method = "
        f"weakref.WeakMethod({bound})`, then `lambda *args, **kwargs: method()(*args, "
        "**kwargs)`), so calls stay as they are",
    )


def _may_be_module(ctx: Context, cls: ast.AST | None) -> bool:
    """Whether ``cls`` is or may be an ``nn.Module``: a base named ``Module``, directly or
    through classes of this file, or a base this file does not define (it may derive from
    ``Module``)."""
    if not isinstance(cls, ast.ClassDef):
        return True
    return any(
        name == "Module" or (not here and name not in _NOT_MODULE_BASES)
        for name, here in base_names(weigher(ctx), cls)
    )


def _chosen_here(owner: MethodSelf, node: ast.AST) -> bool:
    """Whether the store runs only on some calls (under an ``if``, a loop, a ``try``): then
    the method must be told which one to call, by a flag set where the store was."""
    body = getattr(owner.method.node, "body", [])
    return not any(stmt is node for stmt in body)


def _dispatch(owner: MethodSelf, attr: str, method: str, node: ast.AST, why: str) -> Advice:
    me = owner.name
    verb = "keep" if attr in owner.methods else "define"  # "keep" only what the class has
    flag = (
        f" when a flag set here says so (`{me}._use_{method.lstrip('_')} = True`)"
        if _chosen_here(owner, node)
        else ""
    )
    return Advice(
        "dispatch-in-method",
        f"{verb} `{attr}` {'a' if verb == 'keep' else 'as a'} method of the class that calls "
        f"`{me}.{method}(...)`{flag}{why}",
    )


def bound_method_advice(
    ctx: Context, owner: MethodSelf, node: ast.AST, where: ast.AST, method: str
) -> tuple[Advice, ...]:
    """The fixes for ``node``, which stores ``self.method`` at ``where``."""
    me = owner.name
    forwarder = weak_forwarder(f"{me}.{method}")
    if not (
        isinstance(node, (ast.Assign, ast.AnnAssign))
        and isinstance(where, ast.Attribute)
        and isinstance(where.value, ast.Name)
        and where.value.id == me
    ):
        return (forwarder,)  # an item of a list or dict on self: no method can stand there
    attr = where.attr
    cls = owner.method.parent.node if owner.method.parent is not None else None
    if attr in MODULE_METHODS and _may_be_module(ctx, cls):
        why = (
            f": `nn.Module.__call__` calls `{me}.{attr}`, so a bound method stored there "
            f"makes a cycle, and a `WeakMethod` or `type({me}).{method}` there breaks the calls"
        )
        return (_dispatch(owner, attr, method, node, why),)
    if attr in owner.methods or attr in MODULE_METHODS:
        return (_dispatch(owner, attr, method, node, ""), forwarder)
    return (forwarder,)
