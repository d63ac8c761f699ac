"""Stores onto objects, for WAL204 (:mod:`.patches`): where a value goes, how to take it back,
and which stored values can hold a callable at all."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from whyalive.lint.codetext import CodeText
from whyalive.lint.findings import Advice, snippet
from whyalive.lint.rules.patch_facts import MODULE_METHODS, is_dunder, object_text
from whyalive.lint.rules.shapes import STORE_METHODS, is_registrar, keeps_argument
from whyalive.lint.texttests import stores_closure, stores_method

__all__ = [
    "MAY_HOLD",
    "may_patch",
    "may_register",
    "may_store_bound_method",
    "may_store_closure",
    "may_store_on_object",
    "object_stores",
    "patch_advice",
    "undo_text",
]


# Attribute names that register a callback (`is_registrar` decides), and the calls that bind
# an object into a new callable.
_REGISTRAR = re.compile(r"(?i)\.\s*(_*(?:register|subscribe|add_)\w*)")
_BINDERS = ("MethodType", "partial", "update_wrapper", "wraps")


def may_store_bound_method(text: CodeText) -> bool:
    """WAL201's test on the text: a method read as a bound method in a store."""
    return stores_method(text, keeps_argument)


def may_store_closure(text: CodeText) -> bool:
    """WAL202's (and WAL901's) test on the text: a closure in a store."""
    return stores_closure(text, keeps_argument)


def may_register(text: CodeText) -> bool:
    """WAL203's test on the text: a registrar called, and a bound method or closure kept."""
    return any(is_registrar(m) for m in _REGISTRAR.findall(text.code)) and (
        stores_method(text, keeps_argument) or stores_closure(text, keeps_argument)
    )


def may_patch(text: CodeText) -> bool:
    """WAL204's test (and WAL904's, which the other three tests' files all pass)."""
    return (
        stores_closure(text, keeps_argument)
        or text.has_word(*_BINDERS)
        or stores_method(text, keeps_argument, MODULE_METHODS, any_target=True)
    )


def may_store_on_object(node: ast.AST) -> bool:
    """A cheap first look: an assignment to an attribute or item, ``setattr``, or a container
    method that keeps its argument (most calls and assignments to names are none of these)."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id == "setattr"
        return isinstance(func, ast.Attribute) and func.attr in STORE_METHODS
    if isinstance(node, ast.Assign):
        return any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets)
    return isinstance(getattr(node, "target", None), (ast.Attribute, ast.Subscript))


# Values that can hold a callable bound to an object (not literals, arithmetic, f-strings).
MAY_HOLD = (
    ast.Name,
    ast.NamedExpr,
    ast.Attribute,
    ast.Call,
    ast.Lambda,
    ast.IfExp,
    ast.BoolOp,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
)


def object_stores(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST, str]]:
    """``(object stored on, stored value, where)`` for each store onto an object; ``where`` is
    the attribute (``m.forward``), or empty for an item of a container."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            key = target.slice if isinstance(target, ast.Subscript) else None
            namespace = isinstance(key, ast.Constant) and is_dunder(str(key.value))
            if (isinstance(target, ast.Subscript) and not namespace) or (
                isinstance(target, ast.Attribute) and not is_dunder(target.attr)
            ):
                where = object_text(target) if isinstance(target, ast.Attribute) else ""
                yield target.value, node.value, where
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "setattr" and len(node.args) == 3 and not node.keywords:
            obj, name, value = node.args
            constant = name.value if isinstance(name, ast.Constant) else None
            if not (isinstance(constant, str) and is_dunder(constant)):
                where = f"{object_text(obj)}.{constant}" if isinstance(constant, str) else ""
                yield obj, value, where
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        index = STORE_METHODS.get(node.func.attr)
        if index is not None and len(node.args) > index:
            yield node.func.value, node.args[index], ""


def undo_text(node: ast.AST, obj: ast.AST) -> str:
    """How to take back the store ``node`` makes on ``obj``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):  # setattr(obj, name, v)
        return f"`delattr({snippet(obj, 30)}, {snippet(node.args[1], 30)})`"
    if isinstance(node, ast.Call):
        return f"remove it from `{snippet(obj, 30)}`"
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", obj)]
    target = next((t for t in targets if getattr(t, "value", None) is obj), targets[0])
    return f"`del {snippet(target, 40)}`"


def patch_advice(
    kind: str,
    held: str,
    method: str | None,
    node: ast.AST,
    obj: ast.AST,
    where: str,
    own_method: bool,
    proxy_safe: bool = False,
) -> tuple[Advice, ...]:
    """The fixes for a store ``node`` on ``obj`` (at ``where``, ``obj.attr``, or ``""`` for a
    container) of a callable that holds ``held`` (``obj`` or an object it is reached from) in
    the way ``kind`` says (see
    ``patches._Holding``). ``del obj.attr`` restores the class's method only when ``attr``
    was not set on the object before; a wrapper of one of the class's own methods
    (``own_method``) can be applied once in the class; the class's function is offered for a
    saved bound method only when nothing patched it before; a weak proxy only where the code
    given the object uses it through attributes alone (``proxy_safe``)."""
    method = method or ""
    owner = object_text(obj)
    attr = where.rsplit(".", 1)[-1] if where else ""
    if kind == "saved" and where and where == method:  # the bound method put back
        return (
            Advice(
                "undo",
                f"undo the patch with `del {where}` when `{attr}` was not in `vars({owner})` "
                f"before it (what was read then is the method bound to `{held}`); when it "
                "was (an earlier patch), put that earlier value back",
            ),
        )
    if where and _rebinds_class_function(node, attr):
        return (
            Advice(
                "undo",
                f"`del {where}` instead: the class's `{attr}` shows through again, bound "
                "afresh each time it is read",
            ),
        )
    if kind == "saved" and where:
        undo = Advice("undo", f"delete it when done (`del {where}`)")
    elif where:
        undo = Advice(
            "undo",
            f"undo it when done: `del {where}` if `{attr}` was not in `vars({owner})` before "
            "(what the class defines shows through again), else put the earlier value back",
        )
    else:
        undo = Advice("undo", f"undo it when done ({undo_text(node, obj)})")
    name = method.rsplit(".", 1)[-1]
    if kind == "saved":
        return (
            Advice(
                "save-function",
                f"save the class's function instead, `type({held}).{name}`, call it with "
                f"`{held}`, and restore with `del {held}.{name}` (when nothing set `{name}` "
                f"on `{held}` before)",
            ),
            undo,
        )
    if kind == "rewrap" and own_method:
        return (
            Advice(
                "wrap-in-class",
                f"wrap `{name}` once, in the class (decorate `def {name}` with the wrapper), "
                f"so calls to `{method}(...)` stay as they are",
            ),
            undo,
        )
    if kind in ("binds", "captures") and proxy_safe:
        verb = "bind" if kind == "binds" else "capture"
        return (undo, Advice("weak-proxy", f"{verb} `weakref.proxy({held})` instead of `{held}`"))
    return (undo,)


def _rebinds_class_function(node: ast.AST, attr: str) -> bool:
    """``m.f = MethodType(Cls.f, m)``: the class's own function bound again, which is what
    reading ``m.f`` gives once the instance attribute is gone."""
    value = getattr(node, "value", None)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, (ast.Name, ast.Attribute))
        and (value.func.id if isinstance(value.func, ast.Name) else value.func.attr) == "MethodType"
        and len(value.args) == 2
        and isinstance(value.args[0], ast.Attribute)
        and value.args[0].attr == attr
    )
