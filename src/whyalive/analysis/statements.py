"""What a statement stores, read from its syntax tree: the AST side of finding the line that
made a reference (:mod:`whyalive.analysis.sourcelines` decides where to look).

A parsed file (:class:`ParsedFile`) knows each node's parent and its functions by first
line; :class:`StoreTarget` says what to look for (an attribute, a name, a key, an item, a
hook registration, an exception handed to a future); :func:`first_store` finds the
statement in a function or module that stores it; :class:`SourceHit` is what was found,
quoted exactly as the file has it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from whyalive.analysis.node_names import source_place
from whyalive.analysis.tree_answers import TreeAnswers

# A class up to this size is linted whole around the line; a bigger one only by the function.
MAX_CLASS_LINES = 400
FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
DEF_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
# Calls that store their argument in the receiver: `x.append(v)`, `m.register_forward_hook(f)`.
_ADDING_CALLS = frozenset({"append", "add", "insert", "extend", "appendleft", "setdefault"})


@dataclass
class ParsedFile:
    """One source file: its lines, its tree, each node's parent, its functions by first line."""

    lines: list[str]
    tree: ast.Module
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    functions_by_line: dict[int, list[ast.AST]] = field(default_factory=dict)
    """Function definitions by their first line (a decorator's line when decorated)."""
    flagged: dict[int, str] | None = None
    """Lint codes by line for the statements linted so far ("" for a line none flags)."""
    answers: TreeAnswers = field(default_factory=TreeAnswers)
    """Questions about the tree answered so far, kept with the file."""

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
            if isinstance(node, DEF_NODES):
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

    def enclosing(self, node: ast.AST) -> ast.AST | None:
        """The function (or module) whose body holds ``node``."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, (*FUNCTION_NODES, ast.Module)):
            parent = self.parents.get(parent)
        return parent

    def statement_of(self, node: ast.AST) -> ast.stmt:
        """The statement ``node`` belongs to (itself when it is one)."""
        current: ast.AST = node
        while not isinstance(current, ast.stmt):
            parent = self.parents.get(current)
            if parent is None:
                break
            current = parent
        assert isinstance(current, ast.stmt)
        return current

    def functions_around(self, lineno: int) -> list[ast.AST]:
        """The innermost function definition whose lines hold ``lineno`` (or the module)."""
        best: ast.AST = self.tree
        for node in ast.walk(self.tree):
            if not isinstance(node, DEF_NODES):
                continue
            if node.lineno <= lineno <= (node.end_lineno or 0) and node.lineno >= getattr(
                best, "lineno", 0
            ):
                best = node
        return [best]


def _lines_of(node: ast.AST) -> range:
    decorators = getattr(node, "decorator_list", [])
    first = min([getattr(node, "lineno", 1), *(d.lineno for d in decorators)])
    return range(first, (getattr(node, "end_lineno", None) or first) + 1)


@dataclass(frozen=True)
class StoreTarget:
    """What the statement stores: ``("attribute", "cb")``, ``("name", "xs")``, ``("key", "k")``,
    ``("hook", "fw_hook")`` (a registration call naming the function), ``("exception", "")``
    (an exception handed to a future)."""

    what: str
    name: object
    from_end: int | None = None
    """For an item: its position counted from the container's end (``[self]`` added last,
    as in ``self.nodes + [self]``), when the container's length is known."""
    container: str | None = None
    """For a key: the attribute of an instance that holds the dict (``pending`` for
    ``self.pending``), so that a store with a computed key (``self.pending[mb] = node``)
    is found when no line writes the key itself."""

    def spelled(self) -> str:
        """How a note names it: `` `.cb` ``, `` `['k']` ``, `` `xs` ``."""
        if self.what == "attribute":
            return f"`.{self.name}`"
        if self.what == "key":
            return f"`[{self.name!r}]`"
        if self.what == "hook":
            return f"the registration of {_hook_words(self.name)}"
        if self.what == "exception":
            return "the exception"
        if self.what == "item":
            return f"the item `[{self.name}]`"
        return f"`{self.name}`"

    def look_for(self) -> str:
        """What to search the code for when no statement was found."""
        if self.what == "attribute":
            return f"an assignment to `.{self.name}`"
        if self.what == "key":
            return f"a store of the key `{self.name!r}`"
        if self.what == "hook":
            return f"the call that registers {_hook_words(self.name)}"
        if self.what == "exception":
            return "the call that hands the exception to a future"
        if self.what == "item":
            return "the call that adds the item (`append`, `insert`, ...)"
        return f"an assignment to `{self.name}`"


@dataclass(frozen=True)
class SourceHit:
    """A statement that made a cut's reference, found in a parsed file."""

    filename: str
    lineno: int
    statement: ast.stmt
    store: ast.AST
    """The node that stores: an assignment, a call, a ``def``/``lambda`` that captures."""
    scope: ast.AST
    """The function (or module) whose body holds the statement."""
    parsed: ParsedFile
    target: StoreTarget
    rule: str | None = None
    """The lint rule that flags the line, if one does."""

    @property
    def text(self) -> str:
        """The line as the file has it (stripped of indentation and line end)."""
        return self.parsed.lines[self.lineno - 1].strip()

    @property
    def quote(self) -> str:
        """``leaky.py:6  self.on_step = self.step``: the place and the line, verbatim."""
        return f"{source_place(self.filename, self.lineno)}  {self.text}"


def _stored(target: ast.AST, store: StoreTarget) -> bool:
    what, name = store.what, store.name
    if what == "attribute":
        return isinstance(target, ast.Attribute) and _unmangled(target.attr) == _unmangled(name)
    if what == "name":
        return isinstance(target, ast.Name) and target.id == name
    if what not in ("key", "item") or not isinstance(target, ast.Subscript):
        return False
    if isinstance(target.slice, ast.Constant):
        return target.slice.value == name
    # `self.pending[mb] = node`: a computed key, into the dict the instance's attribute holds.
    container = target.value
    return (
        what == "key"
        and store.container is not None
        and isinstance(container, ast.Attribute)
        and _unmangled(container.attr) == _unmangled(store.container)
    )


def _unmangled(name: object) -> object:
    """``_Dict__parent`` -> ``__parent``: a private name as the class body writes it."""
    if isinstance(name, str) and name.startswith("_") and not name.startswith("__"):
        head, sep, tail = name[1:].partition("__")
        if sep and head and tail and not tail.endswith("__"):
            return "__" + tail
    return name


def stores(node: ast.AST, store: StoreTarget, scope: ast.AST) -> bool:
    """Whether ``node`` stores what ``store`` names."""
    what, name = store.what, store.name
    targets: list[ast.expr] = []
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
        return False  # `self.next = None` stores no object of the cycle
    if isinstance(node, ast.Assign):
        targets = [t for target in node.targets for t in _unpacked(target)]
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = _unpacked(node.target)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        targets = _unpacked(node.optional_vars)
    elif isinstance(node, DEF_NODES):
        return what == "name" and node.name == name and node is not scope
    elif isinstance(node, ast.ExceptHandler):
        return what == "name" and node.name == name
    elif isinstance(node, ast.Dict):
        return what == "key" and any(
            isinstance(k, ast.Constant) and k.value == name for k in node.keys
        )
    elif isinstance(node, (ast.List, ast.Tuple)) and isinstance(node.ctx, ast.Load):
        # `self.members = [self]`: a display that puts a variable at that position.
        return what == "item" and isinstance(displayed_entry(node, store), ast.Name)
    elif isinstance(node, ast.BinOp):
        # `self.nodes + [self]`: a display added last, the item counted from the end.
        return what == "item" and isinstance(displayed_entry(node, store), ast.Name)
    elif isinstance(node, ast.Call):
        return _call_stores(node, store)
    return any(_stored(t, store) for t in targets)


def displayed_entry(display: ast.AST, store: StoreTarget) -> ast.expr | None:
    """The expression a display puts where ``store`` names: ``self`` in ``{"me": self}`` for
    the key ``'me'``, in ``[self]`` for the item 0, in ``a + [self]`` for the last item."""
    name = store.name
    if isinstance(display, ast.Dict) and store.what == "key":
        for key, value in zip(display.keys, display.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == name:
                return value
        return None
    if store.what != "item" or not isinstance(name, int):
        return None
    if isinstance(display, (ast.List, ast.Tuple)):
        return display.elts[name] if len(display.elts) > name else None
    if (
        isinstance(display, ast.BinOp)
        and isinstance(display.op, ast.Add)
        and isinstance(display.right, (ast.List, ast.Tuple))
        and store.from_end is not None
        and store.from_end < len(display.right.elts)
    ):
        return display.right.elts[len(display.right.elts) - 1 - store.from_end]
    return None


def _hook_words(name: object) -> str:
    """`` `fw_hook` ``, or for a lambda (named by its line): "the lambda of line 12"."""
    if isinstance(name, tuple):
        return f"the lambda of line {name[1]}"
    return f"`{name}`"


def _call_stores(call: ast.Call, store: StoreTarget) -> bool:
    """``setattr(x, "cb", v)``, ``m.register_forward_hook(fw_hook)``, ``f.set_exception(e)``."""
    func = call.func
    what, name = store.what, store.name
    if what == "attribute" and isinstance(func, ast.Name) and func.id == "setattr":
        return (
            len(call.args) >= 2
            and isinstance(call.args[1], ast.Constant)
            and call.args[1].value == name
        )
    if not isinstance(func, ast.Attribute):
        return False
    if what == "item":
        return func.attr in _ADDING_CALLS
    if what == "hook" and ("hook" in func.attr or func.attr.startswith("register")):
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(name, tuple):  # ("<lambda>", line): a lambda written in the call
            return any(isinstance(a, ast.Lambda) and a.lineno == name[1] for a in arguments)
        return any(_names(arg, str(name)) for arg in arguments)
    return what == "exception" and func.attr == "set_exception" and bool(call.args)


def _names(node: ast.AST, name: str) -> bool:
    """``fw_hook`` or ``self.fw_hook`` in ``node``."""
    return any(
        (isinstance(n, ast.Name) and n.id == name)
        or (isinstance(n, ast.Attribute) and n.attr == name)
        for n in ast.walk(node)
    )


def callers(parsed: ParsedFile, function: ast.AST, limit: int = 8) -> list[ast.AST]:
    """Functions of the file that call ``function`` by name (a few)."""
    name = getattr(function, "name", None)
    if not name:
        return []
    found: list[ast.AST] = []
    for node in ast.walk(parsed.tree):
        if isinstance(node, DEF_NODES) and node is not function:
            calls = (
                n for n in ast.walk(node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
            )  # fmt: skip
            if any(calls):
                found.append(node)
                if len(found) >= limit:
                    break
    return found


def first_store(
    scope: ast.AST, store: StoreTarget, made: set[str], *, naming_only: bool = False
) -> ast.AST | None:
    """The first node in ``scope`` that stores what ``store`` names (nested defs too); one
    whose statement names a function in ``made`` first (only those when ``naming_only``)."""
    found = [node for node in ast.walk(scope) if stores(node, store, scope)]
    if not found:
        return None
    naming = [
        node
        for node in found
        if any(isinstance(n, ast.Name) and n.id in made for n in ast.walk(node))
    ]
    if naming_only and not naming:
        return None
    if store.what == "item":
        # `box.append(box)`: a container given itself is the likeliest maker of a loop.
        naming = [node for node in found if _adds_itself(node)] or naming
    return min(naming or found, key=lambda node: getattr(node, "lineno", 0))


def _adds_itself(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    receiver = node.func.value
    return isinstance(receiver, ast.Name) and any(
        isinstance(a, ast.Name) and a.id == receiver.id for a in node.args
    )


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for element in target.elts for t in _unpacked(element)]
    if isinstance(target, ast.Starred):
        return _unpacked(target.value)
    return [target]


def hit_for(filename: str, parsed: ParsedFile, store: ast.AST, target: StoreTarget) -> SourceHit:
    """The hit for ``store``: a ``def``, ``class`` or ``except`` is quoted by its own line
    (not a decorator's), anything else by its statement's first line."""
    statement = parsed.statement_of(store)
    exact = isinstance(store, (*DEF_NODES, ast.ClassDef, ast.ExceptHandler))
    lineno: int = store.lineno if exact else statement.lineno  # type: ignore[attr-defined]
    scope = parsed.enclosing(statement) or parsed.tree
    rule = parsed.lint_code(filename, lineno, statement)
    return SourceHit(filename, lineno, statement, store, scope, parsed, target, rule)


def stored_target(statement: ast.stmt) -> ast.expr | None:
    """What a one-target assignment stores on: ``self.cb`` in ``self.cb = ...``."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        return statement.targets[0]
    if isinstance(statement, ast.AnnAssign):
        return statement.target
    return None
