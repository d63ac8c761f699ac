"""A cycle's fix as an edit: the statement that made the cut, rewritten from its real code.

The report builder hands this module the statements :mod:`whyalive.analysis.sourcelines`
found for every label of a proven cut, and a *remedy* (what kind of change undoes
the cut, said by the pattern or read from the cut's kind):

- ``weaken``: hold the reference weakly where it is made. A stored value that the
  caller keeps alive (a parameter such as ``parent``) is wrapped:
  ``self._parent = weakref.proxy(parent)``; a new object built around the holder
  (a bound method, a ``partial``, ``MethodType``, a lambda, a registered hook, a
  display) gets the holder weakly inside it: ``self.cb = types.MethodType(
  type(self).on_step, weakref.proxy(self))``, ``lambda *, self=weakref.proxy(self):
  ...``, ``def hook(m, i, o, *, self=weakref.proxy(self)):``. Reads and calls work
  as before, and nothing is made weak that only the cycle keeps alive.
- ``delete``: ``del name`` after the variable's last use in its block (in a
  ``finally`` around a ``return``), when the variable does not escape the function.
- ``drop-traceback``: an exception is kept without its frames:
  ``fut.set_exception(exc.with_traceback(None))``.
- ``clear-traceback``: the handler that catches an exception a future re-raised drops the
  traceback that re-raise gave it (``error.__traceback__ = None``), on its way out.
- ``save-for-backward``: a custom ``autograd.Function`` keeps a tensor as a ``ctx``
  attribute (``ctx.y = y``): ``ctx.save_for_backward(y)`` in its forward, and each read
  of ``ctx.y`` in its backward becomes ``ctx.saved_tensors[0]``.

The result, :class:`Rewrite`, is one contiguous replacement of whole lines (file,
first line, the old lines exactly as written, the new lines) that a tool can apply
without judgment, and the sentence that says it. When no safe mechanical edit
exists there is no :class:`Rewrite`, and the pattern's words say what to change.
Every rewrite is a text replacement at the exact positions of the AST nodes it
changes, so the rest of each line (comments, spacing) is kept.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from whyalive.analysis.edit_text import (
    EditBuffer,
    Target,
    after_last_use,
    parameters,
    parses_in_place,
    uses_name,
    weak_referenceable,
)
from whyalive.analysis.fix_traceback import clear_in_handler, drop_traceback
from whyalive.analysis.fix_weaken import weaken
from whyalive.analysis.node_names import source_place
from whyalive.analysis.statements import DEF_NODES, ParsedFile

WEAKEN = "weaken"
DELETE = "delete"
DROP_TRACEBACK = "drop-traceback"
CLEAR_TRACEBACK = "clear-traceback"
SAVE_FOR_BACKWARD = "save-for-backward"
REMEDIES = (WEAKEN, DELETE, DROP_TRACEBACK, CLEAR_TRACEBACK, SAVE_FOR_BACKWARD)
WORDS_ONLY = "words"
"""A pattern's remedy when no mechanical edit keeps the program working (a tensor that
must be detached, a ``ctx`` attribute that backward reads): the fix stays in words."""

# Uses of a variable that neither keep nor hand it on: the variable does not escape.
_HARMLESS_CALLS = frozenset({"print", "len", "repr", "str", "isinstance", "id", "type", "bool"})


__all__ = [
    "CLEAR_TRACEBACK",
    "DELETE",
    "DROP_TRACEBACK",
    "REMEDIES",
    "SAVE_FOR_BACKWARD",
    "WEAKEN",
    "Rewrite",
    "Target",
    "build_rewrite",
    "weak_referenceable",
]


@dataclass(frozen=True)
class Rewrite:
    """One mechanical edit and the words that say it; plain strings only."""

    filename: str
    line: int
    old: str
    """Lines ``line`` .. ``line + old.count("\\n")`` exactly as the file has them."""
    new: str
    """What replaces them (one or more lines)."""
    words: str
    """The fix as a sentence: what to write, where, and what it keeps working."""


def build_rewrite(targets: Sequence[Target], remedy: str) -> Rewrite | None:
    """The one edit that applies ``remedy`` at every target, or None when none is safe."""
    if not targets or remedy not in REMEDIES:
        return None
    first = targets[0].hit
    edit = EditBuffer(first.parsed, first.filename)
    seen: set[tuple[str, int, str | None]] = set()
    for target in targets:
        hit = target.hit
        if hit.filename != edit.filename:
            return None  # two files: no single edit
        # One statement is rewritten once; two variables it binds are each deleted.
        key = (hit.filename, hit.lineno, target.variable if remedy == DELETE else None)
        if key in seen:
            continue
        seen.add(key)
        done = {
            WEAKEN: weaken,
            DELETE: _delete,
            DROP_TRACEBACK: drop_traceback,
            CLEAR_TRACEBACK: clear_in_handler,
            SAVE_FOR_BACKWARD: _save_for_backward,
        }[remedy](edit, target)
        if not done:
            return None
    rendered = edit.render()
    if rendered is None:
        return None
    old, new = rendered
    if not parses_in_place(edit, new):
        return None
    where = source_place(edit.filename, edit.first)
    return Rewrite(edit.filename, edit.first, old, new, _words(edit, where))


def _words(edit: EditBuffer, where: str) -> str:
    imports = sorted(edit.imports)
    also = f" (with `import {', '.join(imports)}`)" if imports else ""
    if edit.last > edit.first:
        where = f"{where}-{edit.last}"
    actions = list(dict.fromkeys(edit.actions))
    said = actions[0] if len(actions) == 1 else ", ".join(actions[:-1]) + " and " + actions[-1]
    notes = " ".join(n if i == 0 else n[:1].upper() + n[1:] for i, n in enumerate(edit.notes))
    return f"At {where}{also}, {said}: {notes}"


# --- save for backward ------------------------------------------------------------------


def _save_for_backward(edit: EditBuffer, target: Target) -> bool:
    """``ctx.y = y`` in ``forward`` -> ``ctx.save_for_backward(y)``, and ``ctx.y`` in
    ``backward`` -> ``ctx.saved_tensors[0]``: only when the class has exactly that shape
    (one store, reads only in backward, nothing saved already)."""
    statement = target.hit.statement
    forward = target.hit.scope
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return False
    stored = statement.targets[0]
    if not isinstance(forward, ast.FunctionDef) or forward.name != "forward":
        return False
    params = [a.arg for a in (*forward.args.posonlyargs, *forward.args.args)]
    if not (isinstance(stored, ast.Attribute) and isinstance(stored.value, ast.Name)):
        return False
    if not params or stored.value.id != params[0]:
        return False
    cls = edit.parsed.parents.get(forward)
    if not isinstance(cls, ast.ClassDef):
        return False
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    backward = methods.get("backward")
    if backward is None:
        return False
    ctx = [a.arg for a in (*backward.args.posonlyargs, *backward.args.args)][:1]
    uses = [
        (name, method)
        for method in cls.body
        for name in ast.walk(method)
        if isinstance(name, ast.Attribute) and name.attr == stored.attr
    ]
    reads = [n for n, method in uses if method is backward]
    saving = any(
        isinstance(n, ast.Attribute) and n.attr in ("save_for_backward", "saved_tensors")
        for n in ast.walk(cls)
    )
    if saving or not ctx or len(uses) != len(reads) + 1 or not reads:
        return False
    if any(not isinstance(n.value, ast.Name) or n.value.id != ctx[0] for n in reads):
        return False
    if any(not isinstance(n.ctx, ast.Load) for n in reads):
        return False
    value = edit.source(statement.value)
    edit.replace(statement, f"{stored.value.id}.save_for_backward({value})")
    for read in reads:
        edit.replace(read, f"{ctx[0]}.saved_tensors[0]")
    last = max(n.end_lineno or n.lineno for n in reads)
    edit.cover(statement.lineno, max(last, statement.end_lineno or statement.lineno))
    edit.say(
        f"write `{stored.value.id}.save_for_backward({value})` in forward and read it in "
        f"backward as `{ctx[0]}.saved_tensors[0]`",
        "autograd keeps a saved tensor without the reference from the node back to its own "
        "output, and backward gets the same values.",
    )
    return True


# --- delete after the last use ----------------------------------------------------------


def _delete(edit: EditBuffer, target: Target) -> bool:
    variable = target.variable
    hit = target.hit
    if not variable:
        return False
    binding = hit.statement
    scope = hit.scope
    if isinstance(binding, DEF_NODES) and variable in parameters(binding):
        scope, block = binding, binding.body  # a parameter (`self`): bound by the def
        after: list[ast.stmt] = block
    else:
        found = _block_of(edit.parsed, binding)
        if found is None:
            return False
        block, after = found, [binding, *_run_after(edit.parsed, binding, scope)]
    # `probe.frame`: the attribute is deleted; `probe` itself must not escape.
    base = variable.partition(".")[0]
    if not isinstance(scope, DEF_NODES):
        return False
    # Questions about the tree alone, answered once per parsed file (the next sighting of
    # the same leak asks them again).
    parsed = edit.parsed
    answer = parsed.answers.answer
    if answer(("escapes", id(scope), base), lambda: _escapes(scope, base, parsed, set())):
        return False
    if answer(("deleted", id(scope), variable), lambda: _deleted(scope, variable)):
        return False  # the code deletes it already somewhere (on some path): not twice
    question = ("uses", id(scope), id(binding), variable)
    uses = answer(question, lambda: _uses(scope, after, variable)) or [binding]
    done = _deleted_note(edit, variable)
    after_last_use(edit, uses[-1], f"del {variable}", done)
    return True


def _uses(scope: ast.AST, after: list[ast.stmt], variable: str) -> list[ast.stmt]:
    """The statements of ``after`` that use the variable (``probe.frame``: the attribute)."""
    base, _, attribute = variable.partition(".")
    if attribute:
        return [s for s in after if _uses_attribute(s, base, attribute)]
    users = _users(scope, variable)
    return [s for s in after if any(uses_name(s, name) for name in users)]


def _deleted_note(edit: EditBuffer, variable: str) -> str:
    """Why the deletes free the loop: said once for every variable the edit deletes."""
    old = _deleted_words(edit.deleted)
    edit.deleted.append(variable)
    if old in edit.notes:
        edit.notes.remove(old)
    return _deleted_words(edit.deleted)


def _deleted_words(variables: list[str]) -> str:
    named = " or ".join(f"`{name}`" for name in dict.fromkeys(variables))
    if len(variables) == 1:
        return f"once it has been used, nothing holds {named} and the loop is gone."
    return f"once they have been used, nothing holds {named} and the loops are gone."


def _run_after(parsed: ParsedFile, statement: ast.stmt, scope: ast.AST) -> list[ast.stmt]:
    """The statements that run after ``statement`` up to the end of the function: the rest of
    its block, then of each block around it (an ``except`` clause's binding read after the
    ``try``). Other clauses of a compound statement are not among them."""
    following: list[ast.stmt] = []
    node: ast.AST | None = statement
    while node is not None and node is not scope:
        if isinstance(node, ast.stmt):
            block = _block_of(parsed, node)
            if block is None:
                break
            following += block[block.index(node) + 1 :]
        node = parsed.parents.get(node)
    return following


def _block_of(parsed: ParsedFile, statement: ast.stmt) -> list[ast.stmt] | None:
    """The statement list that holds ``statement``."""
    parent = parsed.parents.get(statement)
    for name in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and statement in block:
            return block
    return None


def _deleted(scope: ast.AST, variable: str) -> bool:
    """A ``del`` of the variable (or the attribute) already in the function."""
    return any(
        isinstance(node, ast.Delete) and any(ast.unparse(t) == variable for t in node.targets)
        for node in ast.walk(scope)
    )


def _uses_attribute(node: ast.AST, base: str, attribute: str) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == attribute
        and isinstance(n.value, ast.Name)
        and n.value.id == base
        for n in ast.walk(node)
    )


def _users(scope: ast.AST, variable: str) -> set[str]:
    """The variable, and the functions nested in ``scope`` that use it (directly or through
    another such function): calling one of them is a use of the variable too."""
    nested = [n for n in ast.walk(scope) if isinstance(n, DEF_NODES) and n is not scope]
    users = {variable}
    grew = True
    while grew:
        grew = False
        for function in nested:
            if function.name not in users and any(
                uses_name(s, u) for s in function.body for u in users
            ):
                users.add(function.name)
                grew = True
    return users


def _escapes(scope: ast.AST, variable: str, parsed: ParsedFile, checking: set[str]) -> bool:
    """Whether the variable's value may outlive the call: returned, yielded, stored, passed
    on, or used by a nested function that itself may outlive the call (a sibling a
    recursive helper calls is fine as long as that sibling does not escape either)."""
    checking.add(variable)
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Name) and node.id == variable):
            continue
        if not isinstance(node.ctx, ast.Load):
            continue
        parent = parsed.parents.get(node)
        inner = _function_around(parsed, node)
        if inner is not scope:
            name = getattr(inner, "name", None)
            nested_here = isinstance(inner, DEF_NODES) and parsed.enclosing(inner) is scope
            if not nested_here or name is None:
                return True  # a lambda or a deeper function: it may be kept anywhere
            if name not in checking and _escapes(scope, name, parsed, checking):
                return True
            continue
        if isinstance(parent, ast.Call) and parent.func is node:
            continue
        if isinstance(parent, (ast.Attribute, ast.Compare)):
            continue
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in _HARMLESS_CALLS
        ):
            continue
        if _reads_only(parent):
            continue
        return True
    return False


def _reads_only(node: ast.AST | None) -> bool:
    """``traceback.format_tb(tb)``: a function of the ``traceback`` module reads the frames
    and keeps nothing of them."""
    func = node.func if isinstance(node, ast.Call) else None
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "traceback"
        and func.attr.startswith(("format_", "print_", "extract_"))
    )


def _function_around(parsed: ParsedFile, node: ast.AST) -> ast.AST | None:
    parent = parsed.parents.get(node)
    while parent is not None and not isinstance(parent, (*DEF_NODES, ast.Lambda, ast.Module)):
        parent = parsed.parents.get(parent)
    return parent
