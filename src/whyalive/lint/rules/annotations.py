"""Annotations whose every value is light: ``str``, ``list[str]``, ``type``, ``Path``.

``Any``, ``Tensor``, ``np.ndarray``, a class or no annotation at all may be heavy, and so may a
``Callable``: a closure or a bound method holds whatever it captures (a visitor closure that
fills a dict of tensors)."""

from __future__ import annotations

import ast

__all__ = ["declares_light", "last_name", "light_annotation", "words"]


def words(text: str) -> frozenset[str]:
    """The set of whitespace-separated words in ``text`` (long name lists stay compact)."""
    return frozenset(text.split())


# Annotations: types whose values are light, and generic containers light when their items are.
_LIGHT_TYPES = words(
    """
    bool int float complex str bytes None NoneType Path PurePath PathLike Pattern Match
    type Type Logger LoggerAdapter device dtype Literal LiteralString Ellipsis
    """
)
_OPAQUE_GENERICS = frozenset({"Literal", "type", "Type"})
_LIGHT_GENERICS = words(
    """
    list List tuple Tuple set Set frozenset FrozenSet dict Dict Sequence MutableSequence
    Iterable Iterator Collection Mapping MutableMapping AbstractSet Optional Union
    DefaultDict defaultdict OrderedDict Counter deque Deque
    """
)


def last_name(expr: ast.AST) -> str:
    """The last name of ``a.b.c`` or ``a.b[c]``: ``c`` / ``b`` (``""`` for other expressions)."""
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ""


def light_annotation(annotation: ast.AST | None) -> bool:
    """Whether every value of the annotated type is light (``list[str]``, ``type[Model]``)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant):
        if annotation.value is None or annotation.value is Ellipsis:
            return True
        if not isinstance(annotation.value, str):
            return False
        try:
            parsed = ast.parse(annotation.value, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return False
        return light_annotation(parsed)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return light_annotation(annotation.left) and light_annotation(annotation.right)
    if isinstance(annotation, ast.Subscript):
        name = last_name(annotation.value)
        if name in _OPAQUE_GENERICS:
            return True
        items = annotation.slice
        parts = items.elts if isinstance(items, ast.Tuple) else [items]
        if name == "Annotated":
            return light_annotation(parts[0])
        return name in _LIGHT_GENERICS and all(light_annotation(p) for p in parts)
    return last_name(annotation) in _LIGHT_TYPES


def declares_light(stmt: ast.AST) -> bool:
    """A binding that declares a light type for its name: ``names: list[str] = []``, a bare
    ``dims: list[int]``, or a parameter ``flag: bool``."""
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return light_annotation(stmt.annotation)
    return isinstance(stmt, ast.arg) and light_annotation(stmt.annotation)
