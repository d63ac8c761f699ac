"""4xx: hooks and autograd-node attributes that capture the object they are attached to."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from whyalive.lint.codetext import CodeText
from whyalive.lint.findings import Advice, LintFinding, snippet
from whyalive.lint.rules.shapes import closure_frees, enclosing_function, held_values, root_name
from whyalive.lint.scopes import Context, Frame, Rule, own_scope_nodes

_NODE_ATTRS = frozenset({"grad_fn", "_grad_fn", "next_functions"})


def is_hook_registrar(attr: str) -> bool:
    """Whether ``attr`` names a hook registration method (``register_forward_hook``, ...)."""
    name = attr.lstrip("_")
    return name.startswith("register") and name.endswith("hook")


_HOOK_REGISTRAR = re.compile(r"\.\s*_*register\w*hook(?!\w)")


def may_register_hook(text: CodeText) -> bool:
    """The test on the text of the hook rules: an attribute that :func:`is_hook_registrar`
    accepts."""
    return text.search(_HOOK_REGISTRAR)


def _removed_handles(ctx: Context, frame: Frame) -> frozenset[int]:
    """Ids of registration calls whose handle the same function later ``.remove()``s."""
    key = ("removed", id(frame.node))
    cached = ctx.memo.get(key)
    if isinstance(cached, frozenset):
        return cached
    handles: dict[str, list[int]] = {}
    removed: set[str] = set()
    for node in own_scope_nodes(getattr(frame.node, "body", [])):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    handles.setdefault(target.id, []).append(id(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "remove"
            and isinstance(node.func.value, ast.Name)
        ):
            removed.add(node.func.value.id)
    result = frozenset(i for name in removed for i in handles.get(name, ()))
    ctx.memo[key] = result
    return result


def _captures(held: ast.AST, owner: str, ctx: Context) -> str | None:
    """How ``held`` keeps ``owner``: the variable itself, or a closure that captures it."""
    if isinstance(held, ast.Name) and held.id == owner:
        return f"`{owner}` itself"
    found = closure_frees(held, ctx)
    if found is not None and owner in found[1]:
        return f"a {found[0]} that captures `{owner}`"
    return None


def _check_hook(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    assert isinstance(node, ast.Call)
    func = node.func
    if not isinstance(func, ast.Attribute) or not is_hook_registrar(func.attr):
        return
    owner = root_name(func.value)
    if owner is None or not node.args:
        return
    if isinstance(node.args[0], ast.Name) and node.args[0].id == owner:
        return  # a state argument (`ddp._register_comm_hook(ddp, hook)`), not a hook
    for held in held_values(node.args[0]):
        what = _captures(held, owner, ctx)
        if what is None:
            continue
        function = enclosing_function(ctx)
        if function is not None and id(node) in _removed_handles(ctx, function):
            return
        advice = [
            Advice("weak-owner", f"capture `weakref.ref({owner})` instead of `{owner}`"),
        ]
        if func.attr.lstrip("_") != "register_hook":
            # Module hooks get the module; a tensor's `register_hook` only the gradient.
            advice.append(Advice("use-arguments", "use what the hook receives as arguments"))
        advice.append(Advice("remove-handle", "`.remove()` the handle it returns when done"))
        yield ctx.report(node, call=snippet(node), what=what, owner=owner, advice=tuple(advice))
        return


HOOK_CAPTURES_OWNER = Rule(
    code="WAL401",
    name="hook-captures-owner",
    message=(
        "WAL401 `{call}` registers {what}, the object the hook is registered on; `{owner}` "
        "holds the hook, which holds `{owner}`: a cycle (for tensors, through autograd's C++ "
        "side, which the cyclic GC cannot see). {advice}"
    ),
    node_types=(ast.Call,),
    check=_check_hook,
    offers=("weak-owner", "use-arguments", "remove-handle"),
    may_report=may_register_hook,
    explanation="""\
`t.register_hook(lambda grad: grad * t.scale)` stores the lambda on `t` (for a non-leaf
tensor, on its autograd node in C++) while the lambda's closure holds `t`. The same holds for
module hooks (`model.register_forward_hook(lambda m, i, o: model...)`). For tensors the cycle
passes through C++ objects that have no GC traversal, so even the cyclic GC never frees it:
the tensor and its graph live until the process ends.

Fix: let a module hook use its arguments (it gets the module; a tensor's `register_hook` gets
only the gradient), capture `weakref.ref(t)`, or keep the handle and call `handle.remove()`
once the hook has run.""",
)


def _on_autograd_node(target: ast.AST) -> bool:
    expr = target
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Attribute) and expr is not target and expr.attr in _NODE_ATTRS:
            return True
        expr = expr.value
    return False


def _check_node_attr(node: ast.AST, ctx: Context) -> Iterator[LintFinding]:
    assert isinstance(node, (ast.Assign, ast.AnnAssign))
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if node.value is None:
        return
    for target in targets:
        if not isinstance(target, (ast.Attribute, ast.Subscript)) or not _on_autograd_node(target):
            continue
        owner = root_name(target)
        if owner is None:
            continue
        for held in held_values(node.value):
            what = _captures(held, owner, ctx)
            if what is not None:
                advice = (
                    Advice("weak-owner", f"attach `weakref.ref({owner})` instead"),
                    Advice(
                        "keep-outside",
                        "keep the data outside the graph (a dict of your own, keyed by "
                        "something that is not the tensor)",
                    ),
                )
                yield ctx.report(node, stmt=snippet(node), what=what, owner=owner, advice=advice)
                return


CLOSURE_ON_AUTOGRAD_NODE = Rule(
    code="WAL402",
    name="closure-on-autograd-node",
    message=(
        "WAL402 `{stmt}` attaches {what} to an autograd node of `{owner}`; the node holds it "
        "and `{owner}` holds the node: a cycle through C++ that the cyclic GC cannot free. "
        "{advice}"
    ),
    node_types=(ast.Assign, ast.AnnAssign),
    check=_check_node_attr,
    offers=("weak-owner", "keep-outside"),
    may_report=lambda text: text.has_word(*_NODE_ATTRS),
    explanation="""\
Attributes set on `t.grad_fn` (or nodes reached through `next_functions`) live as long as the
autograd graph, and the graph lives as long as `t`. Setting a closure that captures `t` (or
`t` itself) there, `out.grad_fn.cb = lambda: out.sum()`, makes a cycle through C++ autograd
objects, invisible to the cyclic GC.

Fix: store `weakref.ref(out)` and dereference it inside, or keep the data in a dict keyed
by something that is not the tensor.""",
)

RULES: tuple[Rule, ...] = (HOOK_CAPTURES_OWNER, CLOSURE_ON_AUTOGRAD_NODE)
