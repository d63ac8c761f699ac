"""The lint's scope tables, built from the parsed tree, answer as the standard library's
`symtable` does (which parses the source a second time)."""

from __future__ import annotations

import ast
import symtable
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from whyalive.lint.symbols import COMPREHENSION_NODES, Scope, build_scopes

HERE = Path(__file__).parent
STDLIB = Path(sysconfig.get_paths()["stdlib"])
SOURCES = [
    *sorted((HERE / "lint_cases").glob("*.py")),
    *sorted((HERE.parent / "src" / "whyalive" / "lint").rglob("*.py")),
    *(STDLIB / name for name in ("asyncio/base_events.py", "functools.py", "inspect.py")),
    *(STDLIB / name for name in ("typing.py", "dataclasses.py", "argparse.py", "ast.py")),
]


def _tables(table: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
    yield table
    for child in table.get_children():
        yield from _tables(child)


def _scopes(scope: Scope, owner: str | None = None) -> Iterator[tuple[Scope, str | None]]:
    yield scope, owner
    inner = getattr(scope.node, "name", None) if scope.kind == "class" else owner
    for child in scope.children:
        yield from _scopes(child, inner)


def _unmangled(name: str, owner: str | None) -> str:
    prefix = f"_{(owner or '').lstrip('_')}__"
    return name[len(prefix) - 2 :] if owner and name.startswith(prefix) else name


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_scopes_match_symtable(path: Path) -> None:
    """Every function and lambda has the closure variables, parameters and (up to 3.11's
    separate comprehension scopes) locals that `symtable` gives it."""
    source = path.read_text(encoding="utf-8")
    expected = symtable.symtable(source, str(path), "exec")
    tree = ast.parse(source)
    root = build_scopes(tree)[id(tree)]
    mine: dict[tuple[str, int], list[tuple[Scope, str | None]]] = {}
    for scope, owner in _scopes(root):
        if scope.kind == "function" and not isinstance(scope.node, COMPREHENSION_NODES):
            key = (getattr(scope.node, "name", "lambda"), getattr(scope.node, "lineno", 0))
            mine.setdefault(key, []).append((scope, owner))
    compared = 0
    for table in _tables(expected):
        if str(table.get_type()) != "function" or table.get_name().endswith("comp"):
            continue
        if table.get_name() == "genexpr":
            continue
        scope, owner = mine[table.get_name(), table.get_lineno()].pop(0)
        symbols = table.get_symbols()
        assert {_unmangled(s.get_name(), owner) for s in symbols if s.is_free()} == scope.free
        parameters = table.get_parameters()  # type: ignore[attr-defined]
        assert tuple(_unmangled(p, owner) for p in parameters) == scope.parameters
        if sys.version_info < (3, 12):  # 3.12+ inlines comprehensions' locals (PEP 709)
            mine_local = {s.name for s in scope.symbols.values() if s.is_local()}
            assert {_unmangled(s.get_name(), owner) for s in symbols if s.is_local()} == mine_local
        compared += 1
    assert compared


def test_walrus_in_comprehension_and_nonlocal() -> None:
    """A walrus in a comprehension binds in the function around it; `nonlocal` names and
    `super()` (the `__class__` cell) are closure variables."""
    source = (
        "def outer(xs):\n"
        "    count = 0\n"
        "    found = [y for x in xs if (y := x)]\n"
        "    def bump():\n"
        "        nonlocal count\n"
        "        count += 1\n"
        "        return y\n"
        "    return bump\n"
        "class C:\n"
        "    def m(self):\n"
        "        return super().m()\n"
    )
    tree = ast.parse(source)
    root = build_scopes(tree)[id(tree)]
    outer, klass = root.children
    comprehension, bump = outer.children
    y, defined = outer.lookup("y"), root.lookup("outer")
    assert y is not None
    assert y.is_local()
    assert comprehension.free == {"y"}
    assert bump.free == {"count", "y"}
    assert klass.children[0].free == {"__class__"}
    assert defined is not None
    assert defined.is_local()
    assert defined.is_global()


def test_tables_of_one_function_match_the_whole_module() -> None:
    """The lint builds tables for one outermost function at a time (the module's names are
    globals to it); they equal the tables built with the whole module."""
    path = HERE / "lint_cases" / "wal1_captures.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    whole = build_scopes(tree)
    tops = [
        (n, isinstance(parent, ast.ClassDef))
        for parent in (tree, *(c for c in tree.body if isinstance(c, ast.ClassDef)))
        for n in parent.body  # type: ignore[attr-defined]
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    assert len(tops) > 10
    for top, in_class in tops:
        for key, scope in build_scopes(top, in_class=in_class).items():
            assert scope.free == whole[key].free
            assert scope.symbols == whole[key].symbols
