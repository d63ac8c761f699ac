"""The line of source that made a cut's reference: ``leaky.py:6  self.on_step = self.step``.

A cut names a reference by its code-level name (an attribute, a closure
variable, a local, a dict key). The functions the cycle runs through (its
functions, bound methods and frames, and the methods of the class that holds an
attribute) are read back from their files, parsed, and searched for the
statement that stores that name. The file is parsed once and linted with the
same engine as ``whyalive lint``, so a line a rule flags is named with its code.
When no statement is found the caller says so; it never guesses.
"""

from __future__ import annotations

import ast
import functools
import linecache
import types
from collections import OrderedDict
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from whyalive import edge_kinds as ek
from whyalive.diagnose.naming import cell_variable, is_python, variable_of
from whyalive.guarded import type_namespace
from whyalive.node_names import source_place
from whyalive.paths import CycleView, NamedEdge
from whyalive.words import shorten

_SEARCHED = (ek.ATTRIBUTE, ek.CELL, ek.KEY, ek.LOCAL)
# A class up to this size is linted whole around the line; a bigger one only by the function.
MAX_CLASS_LINES = 400
# Parsed source files kept between analyses (the same lines object from linecache: unchanged).
_RECENT_FILES = 16
_recent: OrderedDict[str, tuple[list[str], _ParsedFile | None]] = OrderedDict()
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass
class _ParsedFile:
    lines: list[str]
    tree: ast.Module
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    functions_by_line: dict[int, list[ast.AST]] = field(default_factory=dict)
    """Function definitions by their first line (a decorator's line when decorated)."""
    flagged: dict[int, str] | None = None
    """Lint codes by line for the statements linted so far ("" for a line none flags)."""

    def lint_code(self, filename: str, lineno: int, statement: ast.AST) -> str | None:
        """The code of a lint rule that flags ``lineno``, if one does.

        Only the module's imports and the outermost function around the statement (with
        the headers of the classes around it) are linted, the other lines blanked so that
        line numbers stay: a big module costs what that one function costs.
        """
        if self.flagged is None:
            self.flagged = {}
        if lineno not in self.flagged:
            from whyalive.lint import lint_source

            shown = {
                line
                for node in self.tree.body
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for line in _lines_of(node)
            }
            shown.update(self._context_lines(statement))
            text = "".join(
                line if number in shown else "\n" for number, line in enumerate(self.lines, 1)
            )
            for finding in lint_source(text, filename):
                self.flagged.setdefault(finding.line, finding.code)
            self.flagged.setdefault(lineno, "")
        return self.flagged[lineno] or None

    def _context_lines(self, statement: ast.AST) -> set[int]:
        """The outermost function holding ``statement``, and its classes' header lines."""
        outermost: ast.AST = statement
        classes: list[ast.ClassDef] = []
        node: ast.AST | None = statement
        while node is not None and not isinstance(node, ast.Module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                outermost, classes = node, []
            elif isinstance(node, ast.ClassDef):
                classes.append(node)
            elif node is not statement and not classes and outermost is statement:
                outermost = node  # a module-level statement: keep the whole of it
            node = self.parents.get(node)
        lines = set(_lines_of(outermost))
        if classes and len(_lines_of(classes[-1])) <= MAX_CLASS_LINES:
            # Rules read the class around a method (`self.cb = self.on_step` needs `on_step`).
            lines.update(_lines_of(classes[-1]))
        else:
            for cls in classes:
                lines.update(range(cls.lineno, cls.body[0].lineno))
        return lines


def _lines_of(node: ast.AST) -> range:
    decorators = getattr(node, "decorator_list", [])
    first = min([getattr(node, "lineno", 1), *(d.lineno for d in decorators)])
    return range(first, (getattr(node, "end_lineno", None) or first) + 1)


@dataclass
class SourceLines:
    """Parsed files, shared by every cut of one analysis."""

    files: dict[str, _ParsedFile | None] = field(default_factory=dict)

    def parsed(self, filename: str) -> _ParsedFile | None:
        """The file's lines and tree, or None when it cannot be read or parsed."""
        if filename not in self.files:
            lines = linecache.getlines(filename)
            recent = _recent.get(filename)
            if recent is not None and recent[0] is lines:
                _recent.move_to_end(filename)
                self.files[filename] = recent[1]
                return recent[1]
            parsed: _ParsedFile | None = None
            if lines:
                try:
                    tree = ast.parse("".join(lines), filename)
                except (SyntaxError, ValueError):
                    tree = None
                if tree is not None:
                    parsed = _ParsedFile(lines, tree)
                    for node in ast.walk(tree):
                        for child in ast.iter_child_nodes(node):
                            parsed.parents[child] = node
                        if isinstance(node, _FUNCTIONS):
                            decorators = getattr(node, "decorator_list", [])
                            first = min([node.lineno, *(d.lineno for d in decorators)])
                            parsed.functions_by_line.setdefault(first, []).append(node)
            self.files[filename] = parsed
            _recent[filename] = (lines, parsed)
            if len(_recent) > _RECENT_FILES:
                _recent.popitem(last=False)
        return self.files[filename]

    def line_for(self, view: CycleView, edge: NamedEdge) -> tuple[str | None, str | None]:
        """(``"leaky.py:6  self.on_step = self.step"``, None), or (None, why not)."""
        if edge.name.kind == ek.KEY and type(view.obj(edge.source)) is OrderedDict:
            # A hook in torch's hook dict: the line is the call that registered it.
            registered = self._registration(view.obj(edge.target))
            if registered is not None:
                return registered, None
        if edge.name.kind not in _SEARCHED:
            return None, None
        target = _target_of(view, edge)
        if target is None:
            return None, None
        what, name = target
        codes = list(_codes_to_search(view, edge))
        made = _function_names(view)
        searched = False
        placeholder: str | None = None
        for code, scope_up in codes:
            parsed = self.parsed(code.co_filename)
            if parsed is None:
                continue
            searched = True
            for function in _functions_at(parsed, code.co_firstlineno):
                scope = _enclosing(parsed, function) if scope_up else function
                if scope is None or (scope_up and isinstance(scope, ast.Module)):
                    continue  # a module-level store is not what made a function's reference
                stored = _first_store(scope, what, name, made)
                if stored is not None:
                    lineno, statement = stored
                    text = _code_of(parsed.lines[lineno - 1], statement)
                    flagged = parsed.lint_code(code.co_filename, lineno, statement)
                    rule = f"  # {flagged}" if flagged else ""
                    where = source_place(code.co_filename, lineno)
                    if not _stores_constant(statement):
                        return f"{where}  {text}{rule}", None
                    # `self.x = None` in __init__ only names the attribute: look further.
                    placeholder = placeholder or f"{where}  {text}{rule}"
        if placeholder is not None:
            return placeholder, None
        spelled = {"attribute": f"`.{name}`", "key": f"`[{name!r}]`"}.get(what, f"`{name}`")
        if not codes:
            return None, f"no function in the cycle shows where {spelled} is stored"
        if not searched:
            return None, f"the source that stores {spelled} could not be read"
        return None, f"no line in the cycle's functions stores {spelled}"

    def _registration(self, hook: object) -> str | None:
        """``model.py:12  y.register_hook(lambda g: g * y)``: the call that registered a
        hook (``register_hook``, ``register_forward_hook``, ...), found around the hook's
        own definition: the call it is written in, or one in its scope that names it."""
        function = _function_of(hook)
        if function is None:
            return None
        code = function.__code__
        parsed = self.parsed(code.co_filename)
        if parsed is None:
            return None
        for defined in parsed.functions_by_line.get(code.co_firstlineno, ()):
            node: ast.AST | None = parsed.parents.get(defined)
            while node is not None and not isinstance(node, ast.stmt):
                if _registers(node):
                    return self._statement_line(parsed, code.co_filename, node)
                node = parsed.parents.get(node)
            scope = _enclosing(parsed, defined)
            for call in ast.walk(scope) if scope is not None else ():
                if _registers(call) and any(
                    _names(arg, function.__name__)
                    for arg in call.args  # type: ignore[attr-defined]
                ):
                    return self._statement_line(parsed, code.co_filename, call)
        return None

    def _statement_line(self, parsed: _ParsedFile, filename: str, node: ast.AST) -> str:
        while not isinstance(node, ast.stmt) and node in parsed.parents:
            node = parsed.parents[node]
        lineno = getattr(node, "lineno", 1)
        text = _code_of(parsed.lines[lineno - 1], node)
        flagged = parsed.lint_code(filename, lineno, node)
        rule = f"  # {flagged}" if flagged else ""
        return f"{source_place(filename, lineno)}  {text}{rule}"


def _stores_constant(statement: ast.AST) -> bool:
    """``self.x = None``, ``self.n: int = 0``: a store of a literal constant."""
    return isinstance(getattr(statement, "value", None), ast.Constant)


def _registers(node: ast.AST) -> bool:
    """A call of a hook registration method (``x.register_hook(...)``, ``register_*_hook``)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    name = node.func.attr.lstrip("_")
    return name.startswith("register") and name.endswith("hook")


def _names(arg: ast.AST, name: str) -> bool:
    """``hook`` or ``self.hook``: an argument that names the function ``name``."""
    return (isinstance(arg, ast.Name) and arg.id == name) or (
        isinstance(arg, ast.Attribute) and arg.attr == name
    )


def _target_of(view: CycleView, edge: NamedEdge) -> tuple[str, object] | None:
    """What the statement stores: ("attribute", "cb"), ("name", "xs"), ("key", "k")."""
    kind, name = edge.name.kind, edge.name.name
    if kind == ek.ATTRIBUTE:
        return ("attribute", name[1:]) if name[1:].isidentifier() else None
    if kind == ek.CELL:
        variable = cell_variable(view, edge.source)
        return ("name", variable) if variable else None
    if kind == ek.LOCAL:
        variable = variable_of(edge)
        return ("name", variable) if variable.isidentifier() else None
    try:
        key = ast.literal_eval(name[1:-1]) if name.startswith("[") else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return ("key", key) if isinstance(key, (str, int)) else None


def _codes_to_search(view: CycleView, edge: NamedEdge) -> Iterator[tuple[types.CodeType, bool]]:
    """Code objects whose source may store the reference; True: search the enclosing def."""
    if edge.name.kind == ek.CELL:
        for into in view.edges_into(edge.source):
            fn = view.obj(into.source)
            if into.name.kind == ek.CLOSURE and type(fn) is types.FunctionType:
                yield fn.__code__, True
        return
    if edge.name.kind == ek.LOCAL:
        frame = view.obj(edge.source)
        if type(frame) is types.FrameType:
            yield frame.f_code, False
        return
    if edge.name.kind == ek.ATTRIBUTE:
        holder = type(view.obj(edge.source))
        # A custom autograd.Function's ctx: `ctx.x = ...` is written in the Function's forward.
        function_class = type_namespace(holder).get("_forward_cls")
        for cls in (holder, function_class) if isinstance(function_class, type) else (holder,):
            for value in type_namespace(cls).values():
                if type(value) in (staticmethod, classmethod):  # no user __class__ runs
                    value = value.__func__  # type: ignore[attr-defined]
                if type(value) is types.FunctionType:
                    yield value.__code__, False
    for node in view.shown:
        obj = view.obj(node)
        function = _function_of(obj)
        if function is not None:
            yield function.__code__, False
            if ".<locals>." in function.__qualname__:
                # A nested function patched onto an object (`m.forward = partial(new, m)`)
                # is stored by the function that made it.
                yield function.__code__, True
        elif type(obj) is types.FrameType:
            yield obj.f_code, False


def _function_of(obj: object) -> types.FunctionType | None:
    """The Python function of a function, a bound method or an exact ``partial`` (read from
    C-level slots: no user code runs)."""
    if type(obj) is types.MethodType:
        obj = obj.__func__
    elif type(obj) is functools.partial:
        obj = obj.func
    return obj if type(obj) is types.FunctionType else None


def _functions_at(parsed: _ParsedFile, first_line: int) -> Iterator[ast.AST]:
    """The function definitions (or module) a code object's first line belongs to."""
    if first_line <= 1:
        yield parsed.tree
    yield from parsed.functions_by_line.get(first_line, ())


def _enclosing(parsed: _ParsedFile, node: ast.AST) -> ast.AST | None:
    parent = parsed.parents.get(node)
    while parent is not None and not isinstance(parent, (*_FUNCTIONS, ast.Module)):
        parent = parsed.parents.get(parent)
    return parent


def _stored(target: ast.AST, what: str, name: object) -> bool:
    if what == "attribute":
        return isinstance(target, ast.Attribute) and target.attr == name
    if what == "name":
        return isinstance(target, ast.Name) and target.id == name
    return (
        isinstance(target, ast.Subscript)
        and isinstance(target.slice, ast.Constant)
        and target.slice.value == name
    )


def _function_names(view: CycleView) -> set[str]:
    """Names of the functions in the cycle (a partial's too): a store naming one of them is
    the one that made the cycle, when several statements store the same name."""
    functions = (_function_of(view.obj(node)) for node in view.shown)
    return {str(f.__name__) for f in functions if f is not None}


def _first_store(
    scope: ast.AST,
    what: str,
    name: object,
    made: AbstractSet[str] = frozenset(),
) -> tuple[int, ast.AST] | None:
    """The first statement in ``scope`` that stores ``name``, with its line (nested defs too);
    one whose value names a function in ``made`` first."""
    found: list[tuple[int, ast.AST]] = []
    for node in ast.walk(scope):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in _unpacked(target)]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and what == "name":
            if node.name == name and node is not scope:
                found.append((node.lineno, node))
            continue
        elif isinstance(node, ast.Dict) and what == "key":
            if any(isinstance(k, ast.Constant) and k.value == name for k in node.keys):
                found.append((node.lineno, node))
            continue
        elif isinstance(node, ast.ExceptHandler) and what == "name" and node.name == name:
            found.append((node.lineno, node))
            continue
        if any(_stored(t, what, name) for t in targets):
            found.append((targets[0].lineno, node))
    naming = [
        item
        for item in found
        if any(isinstance(n, ast.Name) and n.id in made for n in ast.walk(item[1]))
    ]
    return min(naming or found, key=lambda item: item[0]) if found else None


def _code_of(line: str, node: ast.AST) -> str:
    """The line as Python that parses: a header gets ``...``, a statement over lines is unparsed."""
    text = line.strip()
    if text.endswith(":"):
        text += " ..."
    if is_python(text):
        return text
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"def {node.name}(...): ..."
    if isinstance(node, ast.ExceptHandler):
        return f"except ... as {node.name}: ..."
    return shorten(" ".join(ast.unparse(node).split()), 100)


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for element in target.elts for t in _unpacked(element)]
    return [target]
