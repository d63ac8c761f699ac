"""What the rules' tests ask of a module's text (:mod:`whyalive.lint.codetext`): whether it can
store a closure or a bound method on an object, keep a caught exception, or define nested
functions that call each other.

Each answer is true for every file where the rule's finding could be (the tests on the text
must never hide a finding: tests/test_lint_prefilter.py), and false for most others.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable

from whyalive.lint.codetext import (
    Block,
    CodeText,
    attribute_read_pattern,
    held_pattern,
    load_pattern,
    whole_match,
    word_pattern,
)

__all__ = ["keeps_caught", "recursive_nested_functions", "stores_closure", "stores_method"]

_LAMBDA_ASSIGNMENT = re.compile(r"(?m)^([ \t]+)([A-Za-z_]\w*)[ \t]*=(?!=)[\s(]*lambda(?!\w)")
_AS_NAME = re.compile(r"(?<!\w)as\s+([A-Za-z_]\w*)\s*$")
_OPENERS, _CLOSERS = "([{", ")]}"


def stores_closure(text: CodeText, keeps: Callable[[str], bool]) -> bool:
    """Whether a statement in a function stores a lambda or a nested function (its name,
    neither called nor looked into, in the function that defines it) on an object: the
    statement assigns to an attribute or an item, or passes it to a call whose name
    ``keeps`` accepts (``append``, ``setattr``, a registrar)."""
    known = text.memo.get("stores-closure")
    if isinstance(known, bool):
        return known
    code = text.code
    found = False
    if "lambda" in code:
        lambda_word = word_pattern("lambda")
        at = whole_match(lambda_word, code, dot=True)
        while at is not None and not found:
            found = _stored_at(text, at.start(), keeps)
            at = whole_match(lambda_word, code, at.end(), dot=True)
    for block in text.nested_functions() if not found else ():
        parent = block.parent
        assert parent is not None
        end = text.end_of(parent)
        at = whole_match(held_pattern(block.name), code, parent.start, end, dot=False)
        while at is not None and not found:
            found = _stored_at(text, at.start(), keeps)
            at = whole_match(held_pattern(block.name), code, at.end(), end, dot=False)
        if found:
            break
    text.memo["stores-closure"] = found
    return found


def _stored_at(
    text: CodeText, position: int, keeps: Callable[[str], bool], any_target: bool = False
) -> bool:
    """Whether the expression at ``position``, in a function, is part of what its
    statement stores (see :meth:`stores_closure`)."""
    block = text.innermost(position)
    if block is None or block.kind != "def":
        return False  # stores in a class body or the module are not checked
    starts = text.statement_starts(block)
    start = starts[bisect.bisect_right(starts, position) - 1]
    return _stores(text.code[start:position], keeps, any_target)


def stores_method(
    text: CodeText,
    keeps: Callable[[str], bool],
    extra: Iterable[str] = (),
    *,
    any_target: bool = False,
) -> bool:
    """Whether a plain method of a class here (or one of ``extra``) is read as a bound
    method (``obj.m`` not called) in a function, in a statement that stores it (see
    :func:`stores_closure`; with ``any_target``, an assignment to a name counts too)."""
    reads = text.attribute_reads()
    names = reads.intersection(extra)
    if not reads.isdisjoint(text.methods()):
        names |= reads & text.methods()
    code = text.code
    for name in sorted(names):
        # An alias is a name bound to `obj.attr`, never to a special method.
        alias = any_target and not (name.startswith("__") and name.endswith("__"))
        pattern = attribute_read_pattern(name)
        at = pattern.search(code)
        while at is not None:
            if _stored_at(text, at.start(), keeps, alias):
                return True
            at = pattern.search(code, at.end())
    return False


def keeps_caught(text: CodeText, keeps: Callable[[str], bool]) -> bool:
    """Whether a function stores the exception an ``except ... as name`` caught: the name,
    neither called nor looked into, in an assignment (to any target) or a call that
    ``keeps`` accepts, after the clause."""
    code = text.code
    if "except" not in code:
        return False
    clause = whole_match(word_pattern("except"), code, dot=True)
    while clause is not None:
        name, end = _caught_name(code, clause.end())
        if name == "":
            return True  # a clause too odd to read (a lambda in it): parse
        block = text.innermost(end) if name is not None else None
        if name is not None and block is not None and block.kind == "def":
            held = held_pattern(name)
            stop = text.end_of(block)
            at = whole_match(held, code, end, stop, dot=False)
            while at is not None:
                if _stored_at(text, at.start(), keeps, True):
                    return True
                at = whole_match(held, code, at.end(), stop, dot=False)
        clause = whole_match(word_pattern("except"), code, end, dot=True)
    return False


def recursive_nested_functions(text: CodeText) -> bool:
    """Whether functions defined in one function (``def`` or a lambda assigned to a name)
    refer to themselves or to each other: a name of the group read in a body."""
    known = text.memo.get("recursion")
    if not isinstance(known, bool):
        known = text.memo["recursion"] = _find_recursion(text)
    return known


def _find_recursion(text: CodeText) -> bool:
    code = text.code
    groups: dict[int, list[tuple[str, int, int]]] = {}
    owners: dict[int, Block] = {}
    for block in text.nested_functions():
        assert block.parent is not None
        groups.setdefault(id(block.parent), []).append(
            (block.name, block.name_end, text.end_of(block))
        )
        owners[id(block.parent)] = block.parent
    for found in _LAMBDA_ASSIGNMENT.finditer(code) if "lambda" in code else ():
        owner = text.innermost(found.start(1))
        owner = owner if owner is not None and owner.kind == "def" else None
        if owner is not None:
            end = text.statement_end(found.start(1), len(found.group(1)))
            groups.setdefault(id(owner), []).append((found.group(2), found.end(2), end))
    for members in groups.values():
        names = {name for name, _, _ in members}
        edges: dict[str, set[str]] = {name: set() for name in names}
        for name, body, end in members:
            for other in names:
                if whole_match(load_pattern(other), code, body, end, dot=False):
                    edges[name].add(other)
        if _has_cycle(edges):
            return True
    return False


def _caught_name(code: str, start: int) -> tuple[str | None, int]:
    """The name an ``except`` clause (its text from ``start``) binds with ``as`` (``None``:
    none; ``""``: a clause with a lambda, whose colon may not end it) and where it ends."""
    depth = 0
    for at in range(start, len(code)):
        char = code[at]
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            depth -= 1
        elif char == ":" and depth == 0:
            clause = code[start:at]
            if whole_match(word_pattern("lambda"), clause, dot=True) is not None:
                return "", at
            named = _AS_NAME.search(clause)
            return (named.group(1) if named is not None else None), at + 1
    return None, len(code)


def _stores(prefix: str, keeps: Callable[[str], bool], any_target: bool = False) -> bool:
    """Whether a statement that starts with ``prefix`` stores what follows it on an object:
    an assignment at bracket depth 0 to a target with an attribute or an item, or an open
    call that ``keeps`` accepts by name."""
    callees: list[str] = []
    target = 0
    for at, char in enumerate(prefix):
        if char in _OPENERS:
            name = ""
            if char == "(":
                back = at
                while back > 0 and prefix[back - 1] in " \t\n":
                    back -= 1
                first = back
                while first > 0 and (prefix[first - 1].isalnum() or prefix[first - 1] == "_"):
                    first -= 1
                name = prefix[first:back]
            callees.append(name)
        elif char in _CLOSERS:
            if callees:
                callees.pop()
        elif char == "=" and not callees:
            before = prefix[at - 1 : at]
            after = prefix[at + 1 : at + 2]
            comparison = (
                after == "="
                or before in ("=", "!", ":")
                or (before in ("<", ">") and prefix[at - 2 : at - 1] != before)
            )
            if not comparison:
                if any_target or "." in prefix[target:at] or "[" in prefix[target:at]:
                    return True
                target = at + 1
    return any(name and keeps(name) for name in callees)


def _has_cycle(edges: dict[str, set[str]]) -> bool:
    """Whether the graph of names has a cycle (a self-loop included)."""
    done: set[str] = set()
    for start in edges:
        if start in done:
            continue
        path, stack = {start}, [(start, iter(edges[start]))]
        while stack:
            node, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                stack.pop()
                path.discard(node)
                done.add(node)
            elif target in path:
                return True
            elif target not in done:
                path.add(target)
                stack.append((target, iter(edges[target])))
    return False
