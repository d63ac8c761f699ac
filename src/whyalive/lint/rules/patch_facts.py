"""What a file and a function tell about methods patched onto objects (for :mod:`.patches`).

An attribute read off an object of unknown class may be a bound method of that object or
just a callable kept in a field (``graph.current_callable``); only a method makes a cycle.
The evidence that ``attr`` is a method, all from one file:

- the file patches ``obj.attr`` with a callable bound to that object
  (``m.forward = MethodType(f, m)``, ``partial(f, m)``): a per-instance method slot;
- ``forward`` and ``extra_repr``, the ``nn.Module`` methods code patches per instance;
- for the enclosing method's ``self``, the plain methods of its class.

With a method name known: reading it gives the original method (also through a local, or a
dict pairing objects with their methods, ``{m: m.forward for m in modules}``), and an
attribute the file saves it in (``module._old_forward = module.forward``) holds one.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from whyalive.lint.findings import snippet
from whyalive.lint.scopes import FUNCTION_NODES, walk_nodes

__all__ = [
    "CLASS_NAMES",
    "MODULE_METHODS",
    "FileFacts",
    "FunctionFacts",
    "arguments_deep",
    "binds",
    "call_name",
    "file_facts",
    "function_facts",
    "is_class_name",
    "is_dunder",
    "makes_callable",
    "object_chain",
    "object_text",
]

_WRAPPERS = frozenset({"MethodType", "partial", "update_wrapper"})
# nn.Module's methods that code replaces on one instance (accelerate's hooks, exporters).
MODULE_METHODS = frozenset({"forward", "extra_repr"})
# Python's names for a class by convention, like `self` for an instance.
CLASS_NAMES = frozenset({"cls", "klass", "mcs", "metacls"})
# Special methods that only mean something on a class (`X.__init__ = ...` makes X a class);
# `__class__`, `__doc__` or `__dict__` are set on instances too.
_CLASS_ONLY_DUNDERS = frozenset(
    {
        "__init__",
        "__new__",
        "__call__",
        "__getattr__",
        "__getattribute__",
        "__setattr__",
        "__iter__",
        "__len__",
        "__getitem__",
        "__repr__",
        "__str__",
        "__eq__",
        "__hash__",
        "__init_subclass__",
        "__enter__",
        "__exit__",
    }
)


def is_class_name(name: str) -> bool:
    """Whether a name says it holds a class, by Python's conventions: ``cls``, ``klass``,
    ``model_cls``, ``target_class``, ``cls_``."""
    return (
        name in CLASS_NAMES
        or name.endswith(("_cls", "_class", "_klass"))
        or name.rstrip("_") in CLASS_NAMES
    )


def object_chain(expr: ast.AST) -> list[ast.AST] | None:
    """``expr`` and each object it is reached from (``[a.b.c, a.b, a]``), or ``None`` when the
    chain goes through a call or a class (``type(m).f``, ``m.__class__.f``: alive anyway)."""
    chain: list[ast.AST] = []
    while True:
        chain.append(expr)
        if isinstance(expr, ast.Name):
            return chain
        if isinstance(expr, ast.Subscript) or (
            isinstance(expr, ast.Attribute) and expr.attr != "__class__"
        ):
            expr = expr.value
        else:
            return None


def object_text(expr: ast.AST) -> str:
    """The source of an object expression, built directly for names and attribute chains
    (most of them) rather than by unparsing; the texts compare objects, so none is cut."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return f"{object_text(expr.value)}.{expr.attr}"
    return snippet(expr, 10_000)


def call_name(call: ast.Call) -> str:
    """The called name: ``partial`` for ``functools.partial(...)``."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def is_dunder(attr: str) -> bool:
    """Special methods are looked up on the type, so setting one means a class or a module
    (alive anyway), not an instance."""
    return attr.startswith("__") and attr.endswith("__")


def binds(value: ast.AST, obj: str) -> bool:
    """Whether ``value`` is a callable bound to the object spelled ``obj``: ``MethodType(f,
    obj)`` or a ``partial`` given ``obj`` (also inside ``update_wrapper`` or a conditional)."""
    pending = [value]
    for expr in pending:
        if isinstance(expr, ast.IfExp):
            pending.extend((expr.body, expr.orelse))
        elif isinstance(expr, ast.Call):
            name = call_name(expr)
            if name == "MethodType" and len(expr.args) == 2:
                if object_text(expr.args[1]) == obj:
                    return True
            elif name == "partial":
                given = (*expr.args, *(k.value for k in expr.keywords))
                if any(object_text(a) == obj for a in given):
                    return True
            elif name == "update_wrapper":
                pending.extend(expr.args[:1])
    return False


def makes_callable(value: ast.AST, defs: set[str] | frozenset[str]) -> bool:
    """Whether ``value`` is a new callable: a lambda, a ``def`` of this file, ``MethodType``,
    ``partial`` or a ``functools`` wrapper."""
    if isinstance(value, ast.Lambda):
        return True
    if isinstance(value, ast.Name):
        return value.id in defs
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Call):
        return call_name(value.func) == "wraps"
    return isinstance(value, ast.Call) and call_name(value) in _WRAPPERS


def _reads_attribute(value: ast.AST) -> bool:
    """Whether ``value`` reads an attribute (not a dunder) off an object: ``obj.attr``."""
    return (
        isinstance(value, ast.Attribute)
        and not value.attr.startswith("__")
        and object_chain(value.value) is not None
    )


def _reads_method(value: ast.AST, read: dict[str, set[str]], methods: set[str]) -> bool:
    """Whether ``value`` is ``obj.m``, or a local bound to ``obj.m``, with ``m`` a method."""
    if isinstance(value, ast.Attribute):
        return value.attr in methods
    return isinstance(value, ast.Name) and bool(read.get(value.id, set()) & methods)


@dataclass(frozen=True)
class FileFacts:
    """Attribute names that hold methods, from the whole file."""

    method_names: frozenset[str]
    """Attributes that are methods (see the module docstring): ``forward``."""
    saved_methods: frozenset[str]
    """Attributes the file fills with an object's own method (``_old_forward``)."""


def file_facts(module: ast.AST) -> FileFacts:
    """One pass over the file (see the module docstring)."""
    read: dict[str, set[str]] = {}  # local name -> attributes it is bound to, file-wide
    stores: list[tuple[ast.expr, str, ast.expr]] = []  # (object, attribute, value stored)
    for node in walk_nodes(module):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Attribute):
                read.setdefault(target.id, set()).add(value.attr)
            elif isinstance(target, ast.Attribute) and not is_dunder(target.attr):
                stores.append((target.value, target.attr, value))
        elif isinstance(node, ast.Call) and call_name(node) == "setattr" and len(node.args) == 3:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                stores.append((node.args[0], name.value, node.args[2]))
    patched = {attr for obj, attr, value in stores if binds(value, object_text(obj))}
    patched |= MODULE_METHODS
    saved = {attr for _, attr, value in stores if _reads_method(value, read, patched)}
    return FileFacts(frozenset(patched), frozenset(saved - patched))


@dataclass(frozen=True)
class FunctionFacts:
    """What one pass over a function tells about the objects it patches."""

    known_methods: dict[str, str]
    """Expressions that are bound methods whatever the file says, mapped to the ``obj.attr``
    they read: a value taken from a dict that pairs objects with their methods, and
    ``obj.attr`` itself where the function patches it with a callable bound to ``obj`` (read
    before, it is the original method)."""
    replaced: dict[str, tuple[str, str]]
    """``obj.attr`` the function patches with another new callable: ``(obj, attr)``, a method
    (read before the patch) when ``attr`` is a method name."""
    reads: dict[str, ast.Attribute]
    """Locals bound to ``obj.attr``."""
    wrappers: dict[str, frozenset[str]]
    """Locals bound to a call given ``obj.attr`` (directly or nested): ``new = wrap(m.f)``."""
    classes: frozenset[str]
    """Names that are classes: annotated ``type`` or given a special method that only a
    class uses (``X.__init__ = ...``); see also :func:`is_class_name`."""
    overwritten: frozenset[int]
    """Ids of assignments that the very next statement assigns again (``m.f = a`` then
    ``m.f = b``): their value is dropped at once."""
    wrapped: dict[str, list[ast.expr]]
    """Nested functions decorated with ``functools.wraps(x)``: their ``__wrapped__`` is ``x``."""
    rewrapped: frozenset[str]
    """``m.f`` where ``m.f = wrap(m.f)`` (also through locals and nested calls): the decorator
    shape (``torch.compile(self.forward)``) whose result holds its argument."""

    def bound_method(
        self, text: str, owners: set[str], is_method: Callable[[str, str], bool]
    ) -> str | None:
        """The ``obj.attr`` an expression (source text) is the bound method of, for ``obj``
        one of ``owners``, or ``None``; ``is_method(obj, attr)`` is asked last (it may need
        the file's facts)."""
        known = self.known_methods.get(text)
        if known is not None:
            return known
        replaced = self.replaced.get(text)
        if replaced is not None and replaced[0] in owners and is_method(*replaced):
            return text
        source = self.reads.get(text)
        if source is None or object_text(source.value) not in owners:
            return None
        return object_text(source) if is_method(object_text(source.value), source.attr) else None


def _pairs(value: ast.AST, methods: frozenset[str]) -> str | None:
    """The method name when ``value`` is ``{k: k.m for ...}`` with ``m`` a method name."""
    if (
        isinstance(value, ast.DictComp)
        and isinstance(value.key, ast.Name)
        and isinstance(value.value, ast.Attribute)
        and isinstance(value.value.value, ast.Name)
        and value.value.value.id == value.key.id
        and value.value.attr in methods
    ):
        return value.value.attr
    return None


def arguments_deep(call: ast.Call) -> list[str]:
    """Source of every argument of ``call`` and of the calls nested in its arguments."""
    found: list[str] = []
    pending: list[ast.expr] = [*call.args]
    for arg in pending:
        if isinstance(arg, ast.Call):
            pending.extend(arg.args)
        else:
            found.append(object_text(arg))
    return found


def function_facts(function: ast.AST, file: Callable[[], FileFacts]) -> FunctionFacts:
    """One pass over ``function`` (nested functions included); ``file`` gives the file's
    facts, asked only when a local reads an attribute that may be a method."""
    read: dict[str, ast.Attribute] = {}
    local_defs: set[str] = set()
    stores: list[tuple[ast.Attribute, ast.expr]] = []
    classes: set[str] = set()
    overwritten: set[int] = set()
    wrapped: dict[str, list[ast.expr]] = {}
    paired: dict[str, str] = {}  # dict name -> the method name its values are
    wrappers: dict[str, frozenset[str]] = {}
    loops: list[ast.For] = []
    for node in walk_nodes(function):
        if isinstance(node, FUNCTION_NODES) and node is not function:
            local_defs.add(node.name)
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and call_name(deco) == "wraps":
                    wrapped.setdefault(node.name, []).extend(deco.args[:1])
        elif isinstance(node, ast.arg) and node.annotation is not None:
            annotation = node.annotation
            if isinstance(annotation, ast.Subscript):
                annotation = annotation.value
            if isinstance(annotation, ast.Name) and annotation.id in ("type", "Type"):
                classes.add(node.arg)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and _reads_attribute(value):
                assert isinstance(value, ast.Attribute)
                read[target.id] = value
            elif isinstance(target, ast.Name) and isinstance(value, ast.Call):
                wrappers[target.id] = frozenset(arguments_deep(value))
            elif isinstance(target, ast.Name) and isinstance(value, ast.DictComp):
                pairs = _pairs(value, file().method_names)
                if pairs is not None:
                    paired[target.id] = pairs
            elif isinstance(target, ast.Attribute):
                if target.attr in _CLASS_ONLY_DUNDERS and isinstance(target.value, ast.Name):
                    classes.add(target.value.id)
                stores.append((target, value))
        elif isinstance(node, ast.For):
            loops.append(node)
        if isinstance(node, _BLOCK_NODES):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if isinstance(block, list) and len(block) > 1:
                    for first, second in itertools.pairwise(block):
                        if (
                            type(first) is ast.Assign
                            and type(second) is ast.Assign
                            and _same_targets(first, second)
                        ):
                            overwritten.add(id(first))
    bound = _paired_loop_values(loops, paired)
    others: dict[str, tuple[str, str]] = {}
    rewrapped: set[str] = set()
    for attribute, new_value in stores:
        text = object_text(attribute)
        if binds(new_value, object_text(attribute.value)):
            bound[text] = text
        elif makes_callable(new_value, local_defs):
            others[text] = (object_text(attribute.value), attribute.attr)
        elif isinstance(new_value, ast.Call):
            arguments = arguments_deep(new_value)
            aliases = {object_text(read[a]) for a in arguments if a in read}
            if text in arguments or text in aliases:
                rewrapped.add(text)
    return FunctionFacts(
        bound,
        others,
        read,
        wrappers,
        frozenset(classes),
        frozenset(overwritten),
        wrapped,
        frozenset(rewrapped),
    )


# Statements with blocks of statements (`body`, `orelse`, `finalbody`).
_BLOCK_NODES = (
    *FUNCTION_NODES,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.ExceptHandler,
    ast.match_case,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)


def _same_targets(first: ast.Assign, second: ast.Assign) -> bool:
    """Whether two assignments store to the same places (compared as source text)."""
    if len(first.targets) != len(second.targets):
        return False
    return all(
        object_text(a) == object_text(b) for a, b in zip(first.targets, second.targets, strict=True)
    )


def _paired_loop_values(loops: list[ast.For], paired: dict[str, str]) -> dict[str, str]:
    """``for obj, fn in pairs.items()`` over a dict of objects and their methods: ``fn`` is
    the bound method ``obj.m``."""
    found: dict[str, str] = {}
    for loop in loops:
        target, iterable = loop.target, loop.iter
        if (
            isinstance(target, ast.Tuple)
            and len(target.elts) == 2
            and all(isinstance(e, ast.Name) for e in target.elts)
            and isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr == "items"
            and isinstance(iterable.func.value, ast.Name)
            and iterable.func.value.id in paired
        ):
            obj, method = target.elts
            assert isinstance(obj, ast.Name)
            assert isinstance(method, ast.Name)
            found[method.id] = f"{obj.id}.{paired[iterable.func.value.id]}"
    return found
