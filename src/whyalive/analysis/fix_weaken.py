"""The ``weaken`` remedy: the statement that made a reference rewritten to hold it weakly.

A value the caller keeps alive (a parameter, a local the function returns, the holder
itself) is wrapped where it is stored: ``self._parent = weakref.proxy(parent)``. A new
object built around the holder (a bound method, ``partial``, ``MethodType``, a lambda, a
display, a registered hook) refers to the holder weakly inside it:
``types.MethodType(type(self).on_step, weakref.proxy(self))``, ``lambda *,
self=weakref.proxy(self): ...``. A nested ``def`` that captures the holder takes it as a
keyword-only default holding a proxy instead. A stored value that other objects of the
cycle refer to as well (``self.node = table.append(self)``: the table's node) is held
weakly as a whole, never the holder inside it, which may be owned only through it. Nothing
that only the cycle keeps alive is made weak, and reads and calls work as before.
"""

from __future__ import annotations

import ast
import types

from whyalive.analysis.edit_text import (
    EditBuffer,
    Target,
    new_text,
    parameters,
)
from whyalive.analysis.fix_capture import weak_capture
from whyalive.analysis.statements import DEF_NODES, SourceHit, displayed_entry, stored_target
from whyalive.guarded import type_mro, type_namespace


def weaken(edit: EditBuffer, target: Target) -> bool:
    """Rewrite the target's statement (or the ``def`` that captures its variable) so that
    the reference it made is weak; False, with nothing changed, when no safe rewrite exists."""
    hit = target.hit
    store = hit.store
    if target.capture is not None and target.variable and target.value_weak:
        return weak_capture(edit, target.capture, target.variable)
    statement = hit.statement
    edit.at(statement.lineno, hit.scope)
    if isinstance(store, (ast.Dict, ast.List, ast.Tuple, ast.BinOp)):
        return _weaken_entry(edit, target, store)
    if isinstance(store, ast.Call):
        receiver = store.func.value if isinstance(store.func, ast.Attribute) else None
        owners = _owner_names(hit, receiver)
        values: list[ast.expr] = [*store.args, *(k.value for k in store.keywords)]
        if not values or not target.holder_weak or not target.proxy_ok:
            return False
        changed = False
        for argument in values:  # every argument, not only up to the first one changed
            changed = _weaken_inside(edit, target, argument, owners) or changed
        if changed:
            _written(edit, statement, _INSIDE)
        return changed
    stored = stored_target(statement)
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or stored is None:
        return False
    value = statement.value
    if value is None:  # a bare annotation stores nothing
        return False
    owners = _owner_names(
        hit, stored.value if isinstance(stored, (ast.Attribute, ast.Subscript)) else None
    )
    if isinstance(stored, ast.Name):
        # `original = module.forward`: the object whose method is taken is the owner.
        methods = _method_names(target)
        owners |= {
            node.value.id
            for node in ast.walk(value)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in methods
        }
    kept_by_caller = _borrowed(value, hit, owners, target.labels)
    if kept_by_caller is not None:
        if not target.value_weak:
            return False
        for leaf in kept_by_caller:
            _wrap_leaf(edit, hit, leaf)
        edit.need("weakref")
        _written(edit, statement, _WRAPPED)
        return True
    if target.value_shared:
        # `self.node = table.append(self)`: the table owns the node, and through it maybe the
        # holder too: hold the stored result weakly, never the holder inside it.
        if not target.value_weak or isinstance(value, (ast.Lambda, *_DISPLAYS)):
            return False
        edit.replace(value, f"weakref.proxy({edit.source(value)})")
        edit.need("weakref")
        _written(edit, statement, _WRAPPED)
        return True
    if (
        not target.holder_weak
        or not target.proxy_ok
        or not _weaken_inside(edit, target, value, owners)
    ):
        return False
    _written(edit, statement, _INSIDE)
    return True


_DISPLAYS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.DictComp, ast.SetComp)


def _weaken_entry(edit: EditBuffer, target: Target, display: ast.AST) -> bool:
    """``{"service": self}`` -> ``{"service": weakref.proxy(self)}``: only the display's entry
    that the cut names is held weakly (the holder itself, or a value the caller keeps)."""
    hit = target.hit
    entry = displayed_entry(display, hit.target)
    if entry is None:
        return False
    stored = stored_target(hit.statement)
    owners = _owner_names(
        hit, stored.value if isinstance(stored, (ast.Attribute, ast.Subscript)) else None
    )
    kept_by_caller = _borrowed(entry, hit, owners, target.labels)
    if kept_by_caller is not None:
        if not target.value_weak:
            return False
        for leaf in kept_by_caller:
            _wrap_leaf(edit, hit, leaf)
        edit.need("weakref")
        _written(edit, hit.statement, _WRAPPED)
        return True
    if not target.holder_weak or not _weaken_inside(edit, target, entry, owners):
        return False
    _written(edit, hit.statement, _INSIDE)
    return True


# What a proxy needs is said: the object it points to must be kept by another reference
# (the caller's), else using the proxy raises ReferenceError.
_WRAPPED = (
    "the reference then is a `weakref.proxy`, which reads and calls like the object but "
    "does not keep it alive: it works while the object is referenced elsewhere."
)
_INSIDE = (
    "what is stored then holds its owner through a `weakref.proxy`, so it works as before "
    "while the owner is referenced elsewhere, but no longer keeps the owner alive."
)


def _written(edit: EditBuffer, statement: ast.stmt, note: str) -> None:
    """The statement is changed: its lines are in the edit, and the fix says what to write."""
    edit.cover(statement.lineno, statement.end_lineno or statement.lineno)
    # Two statements, one wrapped and one weak inside: the proxy is explained once.
    said = _WRAPPED in edit.notes or _INSIDE in edit.notes
    edit.say(f"write `{new_text(edit, statement)}`", "" if said else note)


def _owner_names(hit: SourceHit, receiver: ast.expr | None) -> set[str]:
    """Names that stand for the object the loop comes back to: the base of what is stored
    on, and ``self`` (the first parameter) in a method."""
    names: set[str] = set()
    base = receiver
    while isinstance(base, (ast.Attribute, ast.Subscript)):
        base = base.value
    if isinstance(base, ast.Name):
        names.add(base.id)
    scope = hit.scope
    if isinstance(scope, DEF_NODES) and isinstance(hit.parsed.parents.get(scope), ast.ClassDef):
        params = scope.args.posonlyargs + scope.args.args
        if params:
            names.add(params[0].arg)
    return names


def _borrowed(
    value: ast.expr, hit: SourceHit, owners: set[str], labels: frozenset[str]
) -> list[ast.expr] | None:
    """The leaves to wrap when the stored value is one the caller keeps alive (a parameter,
    a local the function returns, the holder itself), else None. Reads of a label this fix
    weakens are weak already; a conditional's branches are each such a value or None."""
    kept = (parameters(hit.scope) | _returned(hit.scope)) - owners
    leaves: list[ast.expr] = []
    pending: list[ast.expr] = [value]
    while pending:
        node = pending.pop()
        if _already_weak(node):
            continue
        if isinstance(node, ast.IfExp):
            pending += (node.body, node.orelse)
        elif isinstance(node, ast.BoolOp):
            pending += node.values
        elif isinstance(node, ast.Name) and (node.id in kept or _holder_itself(node, hit, owners)):
            leaves.append(node)
        elif not (
            (isinstance(node, ast.Constant) and node.value is None)
            or (isinstance(node, ast.Attribute) and node.attr in labels)
        ):
            return None
    return leaves or None


def _already_weak(node: ast.expr) -> bool:
    """``weakref.ref(x)``, ``weakref.proxy(x)``, ``types.MethodType(type(x).m,
    weakref.proxy(x))``: a branch that already holds it weakly."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return False
    if func.value.id == "types" and func.attr == "MethodType" and len(node.args) == 2:
        return _already_weak(node.args[1])
    return func.value.id == "weakref" and func.attr in ("ref", "proxy")


def _returned(scope: ast.AST) -> set[str]:
    """Locals the function returns: its caller keeps them (``return tree``)."""
    return {
        node.value.id
        for node in ast.walk(scope)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name)
    }


def _holder_itself(name: ast.Name, hit: SourceHit, owners: set[str]) -> bool:
    """``self.me = self``: the holder stored on itself (only ever weak in the fixed code)."""
    stored = stored_target(hit.statement)
    base = stored.value if isinstance(stored, ast.Attribute) else None
    return isinstance(base, ast.Name) and base.id == name.id and name.id in owners


def _wrap_leaf(edit: EditBuffer, hit: SourceHit, leaf: ast.expr) -> None:
    name = edit.source(leaf)
    stored = stored_target(hit.statement)
    base = stored.value if isinstance(stored, ast.Attribute) else None
    holder = isinstance(base, ast.Name) and isinstance(leaf, ast.Name) and base.id == leaf.id
    if (
        isinstance(leaf, ast.Name)
        and not holder  # `self.me = self`: what is stored on is never None
        and _may_be_none(hit.scope, leaf.id)
        and not _guarded(hit, leaf)
    ):
        edit.replace(leaf, f"(weakref.proxy({name}) if {name} is not None else None)")
    else:
        edit.replace(leaf, f"weakref.proxy({name})")


def _may_be_none(scope: ast.AST, name: str) -> bool:
    """Whether a name may be None when stored: unless its annotation says it is never None,
    a parameter or local may be (``weakref.proxy(None)`` raises, so the fix guards it)."""
    if isinstance(scope, DEF_NODES):
        args = scope.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if arg.arg == name and arg.annotation is not None:
                annotation = ast.unparse(arg.annotation)
                return "None" in annotation or "Optional" in annotation
    return True


def _guarded(hit: SourceHit, leaf: ast.Name) -> bool:
    """The leaf sits in the branch of a conditional that tested it against None."""
    node: ast.AST = leaf
    parents = hit.parsed.parents
    while node is not hit.statement:
        parent = parents.get(node)
        if parent is None:
            return False
        if isinstance(parent, ast.IfExp) and node is not parent.test:
            test = parent.test
            if (
                isinstance(test, ast.Compare)
                and isinstance(test.left, ast.Name)
                and test.left.id == leaf.id
                and len(test.ops) == 1
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None
            ):
                positive = isinstance(test.ops[0], ast.IsNot)
                return (node is parent.body) == positive
        node = parent
    return False


def _weaken_inside(edit: EditBuffer, target: Target, value: ast.expr, owners: set[str]) -> bool:
    """In a new object built around the holder, refer to the holder weakly: ``self`` ->
    ``weakref.proxy(self)``, ``self.m`` (a method) -> ``types.MethodType(type(self).m,
    weakref.proxy(self))``, a lambda that uses ``self`` gets it as a weak default."""
    methods = _method_names(target)
    changed = False
    parents = target.hit.parsed.parents

    def callee(node: ast.AST) -> bool:
        parent = parents.get(node)
        return isinstance(parent, ast.Call) and parent.func is node

    stack: list[ast.AST] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and _already_weak(node):
            # `weakref.proxy(self) if weak else self`: that branch is weak already; but the
            # callback a weak reference is given (`weakref.ref(x, self._gone)`) is held strongly.
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("ref", "proxy"):
                stack.extend([*node.args[1:], *(k.value for k in node.keywords)])
            continue
        if isinstance(node, ast.Lambda):
            used = sorted(owners & {n.id for n in ast.walk(node.body) if isinstance(n, ast.Name)})
            if used and not (parameters(node) & set(used)):
                changed = weak_capture(edit, node, used[0], say=False) or changed
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in owners and node.attr in methods and not callee(node):
                owner = node.value.id
                edit.replace(
                    node, f"types.MethodType(type({owner}).{node.attr}, weakref.proxy({owner}))"
                )
                edit.need("types", "weakref")
                changed = True
                continue
            if callee(node):
                continue  # calling `self.wrap(...)` keeps nothing
        if isinstance(node, ast.Name) and node.id in owners and isinstance(node.ctx, ast.Load):
            parent = parents.get(node)
            if not isinstance(parent, ast.Attribute) and not callee(node):
                edit.replace(node, f"weakref.proxy({node.id})")
                edit.need("weakref")
                changed = True
            continue
        stack.extend(ast.iter_child_nodes(node))
    return changed


def _method_names(target: Target) -> set[str]:
    """Names that are methods of the holder's class or of the class whose method holds the
    statement (so ``self.name`` is a bound method there).

    The live class says what each of its names is, the first definition in the MRO
    winning: a plain function is a method; a ``staticmethod`` (``self._step`` is the bare
    function, which holds no instance) or a ``classmethod`` (bound to the class) is not.
    The ``def``s of the class around the statement count too, less the decorated ones."""
    kinds: dict[str, bool] = {}
    if target.holder_class is not None:
        for klass in type_mro(target.holder_class):
            for name, value in type_namespace(klass).items():
                kinds.setdefault(name, type(value) is types.FunctionType)
    parent = target.hit.parsed.parents.get(target.hit.scope)
    if isinstance(parent, ast.ClassDef):
        for node in parent.body:
            if isinstance(node, DEF_NODES):
                plain = not any(_binds_no_instance(d) for d in node.decorator_list)
                kinds[node.name] = kinds.get(node.name, True) and plain
    return {name for name, is_method in kinds.items() if is_method}


def _binds_no_instance(decorator: ast.expr) -> bool:
    """``@staticmethod``, ``@classmethod``: the decorated function is not bound to ``self``."""
    name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
    return name in ("staticmethod", "classmethod")
