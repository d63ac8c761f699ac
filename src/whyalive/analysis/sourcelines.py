"""The statement that made a cut's reference: ``leaky.py:6  self.on_step = self.step``.

A cut names a reference by its code-level name (an attribute, a closure variable,
a local, a dict key, a hook entry). The code that can have stored it is read back
from its files, parsed once, and searched for that statement, in this order: the
methods of the holder's class and its bases; the functions, bound methods, frames
and partials of the cycle (and the function that defined a nested one); the
methods of every class the cycle's objects belong to, with their bases; the
function around each recorded allocation site. The line is quoted exactly as the
file has it; the lint rule that flags it is kept apart, never written into the
quote. When no statement is found the caller says so, and what to look for; it
never guesses.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import types
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial

from whyalive.analysis.edit_text import proxy_uses
from whyalive.analysis.naming import is_instance_node
from whyalive.analysis.origin import is_installed_file
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.source_targets import (
    codes_to_search,
    function_names,
    handed_over,
    methods_of,
    module_file,
    outside_store,
    store_target,
)
from whyalive.analysis.statements import (
    DEF_NODES,
    FUNCTION_NODES,
    ParsedFile,
    SourceHit,
    StoreTarget,
    callers,
    first_store,
    hit_for,
    stores,
)
from whyalive.guarded import read_attribute, type_mro, type_namespace, type_short_name
from whyalive.words import edge_kinds as ek

# Parsed source files kept between analyses (the same lines object from linecache: unchanged).
_RECENT_FILES = 16
_recent: OrderedDict[str, tuple[list[str], ParsedFile | None]] = OrderedDict()


@dataclass
class SourceLines:
    """Parsed files, shared by every cut of one analysis."""

    files: dict[str, ParsedFile | None] = field(default_factory=dict)

    def parsed(self, filename: str) -> ParsedFile | None:
        """The file's lines and tree, or None when it cannot be read or parsed."""
        if filename not in self.files:
            lines = linecache.getlines(filename)
            recent = _recent.get(filename)
            if recent is not None and recent[0] is lines:
                _recent.move_to_end(filename)
                self.files[filename] = recent[1]
                return recent[1]
            parsed: ParsedFile | None = None
            if lines:
                try:
                    tree = ast.parse("".join(lines), filename)
                except (SyntaxError, ValueError):
                    tree = None
                if tree is not None:
                    parsed = ParsedFile(lines, tree)
                    for node in ast.walk(tree):
                        for child in ast.iter_child_nodes(node):
                            parsed.parents[child] = node
                        if isinstance(node, FUNCTION_NODES):
                            decorators = getattr(node, "decorator_list", [])
                            first = min([node.lineno, *(d.lineno for d in decorators)])
                            parsed.functions_by_line.setdefault(first, []).append(node)
            self.files[filename] = parsed
            _recent[filename] = (lines, parsed)
            if len(_recent) > _RECENT_FILES:
                _recent.popitem(last=False)
        return self.files[filename]

    def function_node(self, code: types.CodeType) -> ast.AST | None:
        """The ``def`` (or lambda) a code object was compiled from, when its file parses."""
        parsed = self.parsed(code.co_filename)
        if parsed is None:
            return None
        for node in _functions_at(parsed, code.co_firstlineno):
            name = getattr(node, "name", "<lambda>")
            if name == code.co_name:
                return node
        return None

    def calls_itself(self, fn: types.FunctionType, name: str) -> bool | None:
        """Whether ``fn``'s code calls ``name`` (None when its source cannot be read)."""
        code = fn.__code__
        node = self.function_node(code)
        parsed = self.files.get(code.co_filename)
        if node is None or parsed is None:
            return None
        return parsed.answers.answer(
            ("calls", id(node), name),
            lambda: any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
                for n in ast.walk(node)
            ),
        )

    def takes_proxy(self, function: object, position: int | str, depth: int = 3) -> bool:
        """Whether ``function`` uses the argument it gets at ``position`` (an index among the
        positional arguments it is called with, or a keyword) only in ways a
        ``weakref.proxy`` of it supports (:func:`~whyalive.analysis.edit_text.proxy_uses`),
        following the Python functions it passes the argument on to (``Optimizer.step(self)``)
        ``depth`` calls deep; False when a function's code cannot be read (a C function
        rejects a proxy) or a callee cannot be told without running code."""
        shift = 0
        if type(function) is types.MethodType:
            function, shift = function.__func__, 1  # the bound object takes the first place
        if type(function) is not types.FunctionType or depth < 0:
            return False
        node = self.function_node(function.__code__)
        args = getattr(node, "args", None)
        if node is None or not isinstance(args, ast.arguments):
            return False
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if isinstance(position, int):
            index = position + shift
            if index >= len(positional):
                return False  # into `*args`: used however the body uses the tuple
            name = positional[index]
        elif position in {*positional[len(args.posonlyargs) :], *(a.arg for a in args.kwonlyargs)}:
            name = position
        else:
            return False
        return self.name_takes_proxy(function, name, depth)

    def name_takes_proxy(self, function: types.FunctionType, name: str, depth: int = 3) -> bool:
        """Whether ``function`` uses its parameter or captured variable ``name`` only in ways
        a ``weakref.proxy`` supports, following the Python functions it is passed on to."""
        node = self.function_node(function.__code__)
        passed = proxy_uses(node, name) if node is not None else None
        if passed is None:
            return False
        return all(
            self.takes_proxy(_callee(function, callee), place, depth - 1)
            for callee, place in passed
        )

    def class_statement(self, cls: type) -> SourceHit | None:
        """The ``class`` statement that made ``cls`` (a class made inside a function)."""
        name = type_short_name(cls)
        files = [code.co_filename for code, _ in methods_of(cls)] + module_file(cls)
        for file in dict.fromkeys(files):
            parsed = self.parsed(file)
            if parsed is None:
                continue
            for node in ast.walk(parsed.tree):
                made_here = isinstance(node, ast.ClassDef) and node.name == name
                if made_here and isinstance(parsed.enclosing(node), DEF_NODES):
                    return hit_for(file, parsed, node, StoreTarget("class", name))
        return None

    def find(
        self, view: CycleView, edge: NamedEdge, sites: Iterable[str] = ()
    ) -> tuple[SourceHit | None, str | None]:
        """The statement that made ``edge``, or (None, what to look for) when none is found.

        ``sites`` are recorded allocation sites (``file.py:12``) of the cycle's heavy
        objects: the functions around them are searched last.
        """
        target = store_target(view, edge)
        if target is None:
            return None, None
        made = function_names(view)
        searched = False
        if target.what in ("item", "key"):
            # The display assigned to the attribute that holds the container is exact; a
            # search of the cycle's code for any `append` is not.
            hit = self._display(view, edge, target, sites)
            if hit is not None:
                return hit, None
        # `self.handler.addFilter(self.only_mine)` made it, not the library's own `append`.
        handed = handed_over(view.obj(edge.target), self.parsed)
        for code, scope_up in codes_to_search(view, edge):
            library = handed is not None and is_installed_file(code.co_filename)
            parsed = None if library else self.parsed(code.co_filename)
            if parsed is None:
                continue
            searched = True
            for function in _functions_at(parsed, code.co_firstlineno):
                scope = parsed.enclosing(function) if scope_up else function
                if scope is None or (scope_up and isinstance(scope, ast.Module)):
                    continue  # a module-level store is not what made a function's reference
                hit = self._hit(code.co_filename, parsed, scope, target, made)
                if hit is not None:
                    return hit, None
        if edge.name.kind == ek.CELL:
            capture = self._capture(view, edge, target)
            if capture is not None:
                return capture, None
        if edge.name.kind == ek.LOCAL:
            bound = self._parameter(view, edge, target)
            if bound is not None:
                return bound, None
        if made:
            # Anywhere in the files of the cycle's code: a store that names one of the cycle's
            # functions (`m.forward = partial(_checkpointed_forward, m.forward)` in a helper).
            for filename in list(self.files):
                parsed = self.files[filename]
                if parsed is None:
                    continue
                hit = self._hit(filename, parsed, parsed.tree, target, made, naming_only=True)
                if hit is not None:
                    return hit, None
        for filename, lineno in self._site_lines(view, sites):
            parsed = self.parsed(filename)
            if parsed is None:
                continue
            searched = True
            for scope in parsed.functions_around(lineno):
                # The site's function, then (a helper that allocates) the functions that call it.
                for searched_scope in (scope, *callers(parsed, scope)):
                    hit = self._hit(filename, parsed, searched_scope, target, made)
                    if hit is not None:
                        return hit, None
        if target.what == "attribute":
            hit = self._set_from_outside(view, edge, target)
            if hit is not None:
                return hit, None
        if handed is not None:
            return hit_for(*handed, target), None
        pins = "; `check_leaks(record_allocations=True)` records where each payload was made"
        what = (
            f"no function in the cycle shows where {target.spelled()} is stored"
            if not searched
            else f"no function the cycle runs stores {target.spelled()}"
        )
        return None, f"{what}: look for {target.look_for()}{'' if sites else pins}"

    def _display(
        self, view: CycleView, edge: NamedEdge, target: StoreTarget, sites: Iterable[str]
    ) -> SourceHit | None:
        """``registry.members = [registry]``: an entry made by the display assigned to the
        attribute that holds its container."""
        for into in view.edges_into(edge.source):
            if into.name.kind != ek.ATTRIBUTE or not is_instance_node(view.obj(into.source)):
                continue
            hit, _ = self.find(view, into, sites)
            if hit is None:
                continue
            display = next(
                (node for node in ast.walk(hit.statement) if stores(node, target, hit.scope)), None
            )
            if display is not None:
                return SourceHit(
                    hit.filename, hit.lineno, hit.statement, display, hit.scope,
                    hit.parsed, target, hit.rule,
                )  # fmt: skip
        return None

    def _set_from_outside(
        self, view: CycleView, edge: NamedEdge, target: StoreTarget
    ) -> SourceHit | None:
        """``child.parent = tree`` in a function of the holder's module, or of the module of
        what it refers to (``model.trainer = trainer`` on a torch module): an attribute set on
        an object other than ``self``. Only when every such store of a file is in one
        function (else which one made this cycle is a guess)."""
        classes = (type(view.obj(edge.source)), type(view.obj(edge.target)))
        for filename in dict.fromkeys(f for cls in classes for f in module_file(cls)):
            parsed = self.parsed(filename)
            if parsed is None:
                continue
            search = partial(outside_store, parsed, target)
            # The search depends on the tree and the name only: once per parsed file.
            question = ("set_from_outside", target)
            first = parsed.answers.answer(question, search) if _plain(target.name) else search()
            if first is not None:
                return hit_for(filename, parsed, first, target)
        return None

    def _parameter(self, view: CycleView, edge: NamedEdge, target: StoreTarget) -> SourceHit | None:
        """A frame's local that is a parameter (``self``): bound by the function's ``def``."""
        frame = view.obj(edge.source)
        if type(frame) is not types.FrameType:
            return None
        code = frame.f_code
        node = self.function_node(code)
        parsed = self.parsed(code.co_filename)
        args = getattr(node, "args", None)
        names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args else ()
        if node is None or parsed is None or target.name not in names:
            return None
        return hit_for(code.co_filename, parsed, node, target)

    def _capture(self, view: CycleView, edge: NamedEdge, target: StoreTarget) -> SourceHit | None:
        """For a closure variable bound by no statement (a parameter such as ``self``): the
        nested ``def`` (or lambda) that captures it, which is what made the reference."""
        return next(iter(self._captures(view, edge, target)), None)

    def captures(self, view: CycleView, edge: NamedEdge) -> list[SourceHit]:
        """Every ``def`` (or lambda) of the cycle that shares the cell of the closure
        variable ``edge`` reads (``keep_acts`` and ``keep_grads`` both capturing ``self``),
        one per code, in the order the cycle holds them."""
        target = store_target(view, edge)
        return [] if target is None else self._captures(view, edge, target)

    def _captures(self, view: CycleView, edge: NamedEdge, target: StoreTarget) -> list[SourceHit]:
        hits: dict[types.CodeType, SourceHit] = {}
        for into in view.edges_into(edge.source):
            fn = view.obj(into.source)
            if into.name.kind != ek.CLOSURE or type(fn) is not types.FunctionType:
                continue
            code = fn.__code__
            node = self.function_node(code)
            parsed = self.parsed(code.co_filename)
            if node is not None and parsed is not None and code not in hits:
                hits[code] = hit_for(code.co_filename, parsed, node, target)
        return list(hits.values())

    def _hit(
        self,
        filename: str,
        parsed: ParsedFile,
        scope: ast.AST,
        target: StoreTarget,
        made: set[str],
        *,
        naming_only: bool = False,
    ) -> SourceHit | None:
        if not _plain(target.name):  # a key of the program's own type: never kept
            found = first_store(scope, target, made, naming_only=naming_only)
        else:  # the search depends on the tree and the names only: once per parsed file
            question = ("first_store", id(scope), target, frozenset(made), naming_only)
            found = parsed.answers.answer(
                question, lambda: first_store(scope, target, made, naming_only=naming_only)
            )
        return hit_for(filename, parsed, found, target) if found is not None else None

    def _site_lines(self, view: CycleView, sites: Iterable[str]) -> Iterator[tuple[str, int]]:
        """``(file, line)`` of each allocation site, its file found among the files read."""
        sites = list(sites)
        if not sites:
            return
        known = {os.path.basename(name): name for name in (*self.files, *linecache.cache)}
        for module in list(sys.modules.values()):
            filename = read_attribute(module, "__file__")
            if isinstance(filename, str):
                known.setdefault(os.path.basename(filename), filename)
        for site in sites:
            base, _, line = site.rpartition(":")
            if line.isdigit() and base in known:
                yield known[base], int(line)


def _plain(name: object) -> bool:
    """A name made of strings, ints and tuples of them (a lambda's ``("<lambda>", 12)``)."""
    if type(name) is tuple:
        return all(map(_plain, name))
    return type(name) in (str, int, type(None))


def _callee(function: types.FunctionType, callee: ast.expr) -> object:
    """What ``callee`` (``helper``, ``Optimizer.step``) names in ``function``'s module, read
    from its globals and the namespaces of classes and modules (no code runs); None when it
    is anything else (``type(self).forward``, a local)."""
    names: list[str] = []
    while isinstance(callee, ast.Attribute):
        names.append(callee.attr)
        callee = callee.value
    if not isinstance(callee, ast.Name) or callee.id in function.__code__.co_varnames:
        return None
    found = function.__globals__.get(callee.id)
    for name in reversed(names):
        if isinstance(found, type):
            spaces = (type_namespace(c) for c in type_mro(found))
            found = next((space[name] for space in spaces if name in space), None)
        elif type(found) is types.ModuleType:
            found = vars(found).get(name)
        else:
            return None
    return found.__func__ if type(found) is staticmethod else found


def _functions_at(parsed: ParsedFile, first_line: int) -> list[ast.AST]:
    """The function definitions (or module) a code object's first line belongs to (a list:
    see ``codes_to_search``)."""
    functions: list[ast.AST] = list(parsed.functions_by_line.get(first_line, ()))
    return [parsed.tree, *functions] if first_line <= 1 else functions
