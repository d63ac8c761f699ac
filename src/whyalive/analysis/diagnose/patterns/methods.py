"""Bound methods, wrapped methods and method caches stored on their own instance."""

from __future__ import annotations

import functools
import types

from whyalive.analysis.diagnose.patterns.base import PatternMatch
from whyalive.analysis.fix_edits import WEAKEN, WORDS_ONLY
from whyalive.analysis.naming import (
    accessor,
    cell_variable,
    chain,
    code_qualname_of,
    deletion,
    enclosing_function,
    expression,
    is_instance_node,
    label,
    qualname_of,
    short_name,
)
from whyalive.analysis.origin import is_installed_code
from whyalive.analysis.paths import CycleView, NamedEdge
from whyalive.analysis.sourcelines import SourceLines
from whyalive.guarded import type_mro, type_namespace, type_qualname, type_short_name
from whyalive.words import a_code
from whyalive.words import edge_kinds as ek


class BoundMethodOnSelfPattern:
    """``self.cb = self.on_step``, or a lambda/closure capturing ``self`` stored on ``self``."""

    name = "bound-method-on-self"
    title = "callable stored on its own instance"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A bound method whose ``__self__`` holds it, or a closure capturing its holder."""
        for edge in view.edges:
            if edge.name.kind == ek.BOUND_SELF and edge.target in view.shown:
                method, owner = edge.source, edge.target
                steps = chain(view, owner, method)
                if steps:
                    return self._bound(view, method, owner, steps)
        for edge in view.edges:
            if edge.name.kind != ek.CELL or not is_instance_node(view.obj(edge.target)):
                continue
            owner = edge.target
            for closure in view.edges_into(edge.source):
                if closure.name.kind == ek.CLOSURE:
                    steps = chain(view, owner, closure.source)
                    if steps:
                        return self._closure(view, closure.source, owner, steps, closure)
        for edge in view.edges:
            if edge.name.kind == ek.ATTRIBUTE and type(view.obj(edge.target)) is functools.partial:
                # obj --.forward--> partial --args/keywords--> obj
                for inner in view.edges_from(edge.target):
                    if any(b.target == edge.source for b in view.edges_from(inner.target)):
                        return self._partial(view, edge)
        return None

    def _partial(self, view: CycleView, stored: NamedEdge) -> PatternMatch:
        owner = view.obj(stored.source)
        cls = type_qualname(type(owner))
        partial = view.obj(stored.target)
        assert type(partial) is functools.partial
        func = partial.func  # a C-level slot of an exact partial: no user code runs
        name = short_name(qualname_of(func))
        code = expression("self", [stored])
        where = f"`{stored.name.name}`"
        summary = (
            f"{a_code(cls)} object stores in {where} a `functools.partial` of `{name}` "
            "that is given the object itself"
        )
        # Only a partial stored under the name of a method of the class patches that method;
        # deleting it then lets the class's own method show through again.
        patched = _shadows_method(owner, stored.name.name)
        shape = ", a method patched onto its own object" if patched else ""
        explanation = (
            f"A `functools.partial` of `{name}` keeps its arguments, here the `{cls}` object "
            f"that holds the partial in {where}: object -> partial -> object{shape}. "
            "Reference counting cannot free the loop."
        )
        again = ", and the class's own method shows through again" if patched else ""
        undo = f" (`del {code}`{again})" if code else ""
        back = "take the patch back" if patched else "remove it"
        fix = (
            f"Give the partial `weakref.proxy(self)` instead of the object (it is used the "
            f"same way), or {back} when done{undo}."
        )
        also = f"Or {back} when done{undo}."
        remedy = WEAKEN
        places: list[int | str] = [i for i, arg in enumerate(partial.args) if arg is owner]
        places += [key for key, arg in partial.keywords.items() if arg is owner]
        sources = SourceLines()
        if not all(sources.takes_proxy(func, place) for place in places):
            fix = (
                f"{back[:1].upper()}{back[1:]} when done{undo}. {_no_proxy(name, 'is given', cls)}"
            )
            also, remedy = "", WORDS_ONLY
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, [stored], "WAL204", None, remedy, also
        )

    def _bound(
        self, view: CycleView, method: int, owner: int, steps: list[NamedEdge]
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        func = qualname_of(view.obj(method))
        code = expression("self", steps)
        stored = f"`{code}`" if code else _stored_words(view, steps)
        spelled = [accessor(step) for step in steps]
        named = spelled.index(None) if None in spelled else len(steps)
        if not code and named:
            # `self.widgets['time'].callback`, then a reference code has no name for.
            inside = type_short_name(type(view.obj(steps[named].source)))
            stored = f"`self{''.join(p or '' for p in spelled[:named])}`, inside {a_code(inside)}"
        summary = f"{a_code(cls)} object stores its own bound method `{func}` in {stored}"
        method_name = func.rsplit(".", 1)[-1]
        function = view.obj(method)
        own = type(function) is types.MethodType and any(
            function.__func__ in type_namespace(c).values() for c in type_mro(type(view.obj(owner)))
        )
        # Only the class's own method is `self.name`; a function bound to the object from
        # outside (`MethodType(fp32_forward, model)`) is named as the function it is.
        made = (
            f"Storing `self.{method_name}` on the same `{cls}` object (in {stored})"
            if own
            else f"Binding `{short_name(func)}` to the `{cls}` object and storing the bound "
            f"method on that same object (in {stored})"
        )
        explanation = (
            f"A bound method holds its instance in `__self__`. {made} makes the object hold "
            "the method and the method hold the object, so neither is freed by reference "
            "counting."
        )
        bound = (
            f"types.MethodType(type(self).{method_name}, weakref.proxy(self))"
            if own
            else f"types.MethodType({short_name(func)}, weakref.proxy(self))"
        )
        remove = _removal(view, "self", steps)
        fix = (
            f"Store the method bound to a weak proxy of the object, `{bound}`: it is called "
            f"the same way (with the same arguments) but does not keep the object alive; or "
            f"remove it when done{remove}."
        )
        also = f"Or remove it when done{remove}." if remove else ""
        patched = _patched_from_outside(view.obj(method), view.obj(owner), steps) or any(
            _shadows_method(view.obj(owner), e.name.name)
            for e in view.edges_from(owner)
            if e.name.kind == ek.ATTRIBUTE
        )
        lint = "WAL204" if patched else "WAL201"
        cut = _written_step(steps)
        remedy = WEAKEN
        if type(function) is types.MethodType and not SourceLines().takes_proxy(
            function.__func__, 0
        ):
            # `type(self).forward(self, x)`: bound to a proxy, the function would break.
            again = (
                ", and the class's own method shows through again"
                if len(steps) == 1 and _shadows_method(view.obj(owner), steps[0].name.name)
                else ""
            )
            undo = (
                f"Remove it when done{remove[:-1]}{again})." if remove else "Remove it when done."
            )
            fix = f"{undo} {_no_proxy(short_name(func), 'is bound to', cls)}"
            also, remedy = "", WORDS_ONLY
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, cut, lint, None, remedy, also
        )

    def _closure(
        self,
        view: CycleView,
        fn: int,
        owner: int,
        steps: list[NamedEdge],
        closure: NamedEdge,
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        variable = closure.name.name.split(" ", 1)[1]
        # The captured variable is the code's own name for the object (`cd`, `self`).
        code = expression(variable if variable.isidentifier() else "self", steps)
        where = f"`{code}`" if code else _stored_words(view, steps)
        summary = (
            f"{a_code(cls)} object stores in {where} {label(view, fn)}, whose closure captures "
            f"the object as `{variable}`"
        )
        explanation = (
            f"The function stored on the `{cls}` object (in {where}) closes over `{variable}`, "
            f"which is that same object: object -> function -> closure cell -> object. "
            f"Reference counting cannot free the loop."
        )
        remove = _removal(view, variable, steps)
        fix = (
            f"Do not capture `{variable}`: let the function take it as a keyword-only default "
            f"holding a weak proxy (`{variable}=weakref.proxy({variable})` in its parameters), "
            f"which it reads the same way; or remove the function when done{remove}."
        )
        also = f"Or remove the function when done{remove}." if remove else ""
        # Every cell that holds the object under this name (a lambda made on each call has
        # its own): the cut is the captured variable of all of them, which one edit undoes.
        captured = [e for e in view.edges_from(closure.target) if e.target == owner]
        captured += [
            e
            for e in view.edges_into(owner)
            if e.name.kind == ek.CELL
            and e not in captured
            and cell_variable(view, e.source) == variable
        ]
        # A closure made in one of the class's own methods is WAL202's; one made elsewhere and
        # stored on the object (a patched `forward`) is WAL204's.
        made_in = enclosing_function(code_qualname_of(view.obj(fn)))
        own = any(
            made_in.startswith(type_qualname(c) + ".") for c in type_mro(type(view.obj(owner)))
        )
        cut, lint = captured or _written_step(steps), "WAL202" if own else "WAL204"
        remedy = WEAKEN
        function = view.obj(fn)
        sources = SourceLines()
        readable = (
            type(function) is types.FunctionType
            and sources.function_node(function.__code__) is not None
        )
        if readable and not sources.name_takes_proxy(function, variable):  # type: ignore[arg-type]
            name = short_name(code_qualname_of(function))
            fix = f"Remove the function when done{remove}. {_no_proxy(name, 'captures', cls)}"
            also, remedy = "", WORDS_ONLY
        return PatternMatch(
            self.name, self.title, summary, explanation, fix, cut, lint, None, remedy, also
        )


def _no_proxy(function: str, given: str, cls: str) -> str:
    """Why a ``weakref.proxy`` is not offered: the function uses the object as itself."""
    return (
        f"A `weakref.proxy` cannot stand in for the object here: `{function}` uses the object "
        f"it {given} other than through its attributes (it asks its type, compares or "
        f"passes it on), and a proxy is not a `{cls}` to `type()`, `isinstance` or C code."
    )


def _removal(view: CycleView, base: str, steps: list[NamedEdge]) -> str:
    """`` (`del self.cb`)``: how to remove what ``steps`` lead to, or the entry holding it
    when the last step cannot be deleted (an item of a tuple); empty when nothing can be."""
    target = deletion(view, base, steps)
    if target is None:
        return ""
    whole = target == expression(base, steps)
    return f" (`del {target}`)" if whole else f" (`del {target}`, the entry that holds it)"


def _patched_from_outside(method: object, owner: object, steps: list[NamedEdge]) -> bool:
    """Whether a bound method on its own object was put there by patching (lint WAL204) rather
    than by ``self.cb = self.on_step`` in the class (WAL201): it is stored under its own name
    (``model.forward = original_forward``), or its function is not the class's method
    (``MethodType(new_forward, model)``)."""
    if type(method) is not types.MethodType:
        return False
    func = method.__func__
    name = str(getattr(func, "__name__", "")) if type(func) is types.FunctionType else ""
    if len(steps) == 1 and steps[0].name.kind == ek.ATTRIBUTE and steps[0].name.name == f".{name}":
        return True
    # Looked up by identity in the classes' own namespaces: a mangled `__step` or a method
    # under another name is still the class's.
    return not any(func in type_namespace(c).values() for c in type_mro(type(owner)))


def _shadows_method(owner: object, attribute: str) -> bool:
    """Whether the instance attribute ``.name`` hides a method of the object's class: the
    object's ``forward`` was patched, so its saved bound methods are WAL204's too."""
    name = attribute.removeprefix(".")
    namespaces = (type_namespace(c) for c in type_mro(type(owner)))
    return any(type(n.get(name)) is types.FunctionType for n in namespaces)


def _stored_words(view: CycleView, steps: list[NamedEdge]) -> str:
    """Where a chain ends, when it has no spelling in code: "`._insert` of a `Graph` object"."""
    last = steps[-1]
    obj = view.obj(last.source)
    owner = (
        f"{a_code(type_qualname(type(obj)))} object"
        if is_instance_node(obj)
        else label(view, last.source)
    )
    if last.name.kind == ek.UNKNOWN:
        return f"an unnamed reference from {owner}"
    return f"`{last.name.name}` of {owner}"


def _written_step(steps: list[NamedEdge]) -> list[NamedEdge]:
    """The reference the user's code stored: its first attribute (``.cb``, ``._insert``)."""
    attributes = [e for e in steps if e.name.kind == ek.ATTRIBUTE]
    named = [e for e in steps if e.name.kind in (ek.KEY, ek.INDEX)]
    return attributes[:1] or named[-1:] or steps[:1]


def _wrapped_method(view: CycleView, node: int) -> int | None:
    """The bound method a ``functools.wraps`` wrapper keeps in its ``__wrapped__``."""
    for edge in view.edges_from(node):
        if edge.name.name in ("['__wrapped__']", ".__wrapped__"):
            return edge.target
        if edge.name.kind == ek.INTERNAL and type(view.obj(edge.target)) is dict:
            for inner in view.edges_from(edge.target):
                if inner.name.name == "['__wrapped__']":
                    return inner.target
    return None


class WrappedMethodOnSelfPattern:
    """``self.forward = wrap(self.forward)``: a wrapper of a bound method, stored on its object."""

    name = "wrapped-method-on-self"
    title = "wrapper around an object's own method, stored on it"

    def match(self, view: CycleView) -> PatternMatch | None:
        """A function whose ``__wrapped__`` is a bound method of an object that holds it."""
        for wrapper in view.shown:
            if type(view.obj(wrapper)) is not types.FunctionType:
                continue
            method = _wrapped_method(view, wrapper)
            if method is None or type(view.obj(method)) is not types.MethodType:
                continue
            owners = [e.target for e in view.edges_from(method) if e.name.kind == ek.BOUND_SELF]
            if not owners:
                continue
            steps = chain(view, owners[0], wrapper)
            if not steps:
                continue
            return self._words(view, wrapper, method, owners[0], steps)
        return None

    def _words(
        self, view: CycleView, wrapper: int, method: int, owner: int, steps: list[NamedEdge]
    ) -> PatternMatch:
        cls = type_qualname(type(view.obj(owner)))
        method_name = qualname_of(view.obj(method)).rsplit(".", 1)[-1]
        code = expression("self", steps)
        stored = f"`{code}`" if code else _stored_words(view, steps)
        wrapper_name = short_name(qualname_of(view.obj(wrapper)))
        summary = (
            f"{a_code(cls)} object stores in {stored} the wrapper `{wrapper_name}` around its own "
            f"bound method `{method_name}`"
        )
        removal = _removal(view, "self", steps)
        remove = f"; or remove it when done{removal}" if removal else ""
        bound = f"types.MethodType(type(self).{method_name}, weakref.proxy(self))"
        holds = (
            f"A bound method holds its instance, so the `{cls}` object holds the wrapper, the "
            "wrapper holds the method and the method holds the object: reference counting "
            "cannot free them."
        )
        if is_installed_code(view.obj(wrapper)):
            # A library made the wrapper (`ExitStack.callback(self.close)`): the user's part
            # is the method they handed it, not a wrapper they could move to the class body;
            # nor is deleting an entry of the library's private state.
            if "._" in removal:
                removal = remove = ""
            explanation = (
                f"The library's wrapper `{wrapper_name}` keeps the callable it was given in "
                f"`__wrapped__`, here the bound method `self.{method_name}`. {holds}"
            )
            fix = (
                f"Hand the library `{bound}` (the method bound to a weak proxy of the object) "
                f"instead of `self.{method_name}`{remove}."
            )
            also = f"Or remove it when done{removal}." if removal else ""
        else:
            explanation = (
                f"`functools.wraps` sets `__wrapped__` on the wrapper to the wrapped callable, "
                f"here the bound method `self.{method_name}`, and the wrapper's closure usually "
                f"holds it too. {holds}"
            )
            fix = (
                f"Wrap the function once, in the class body, so the wrapper never holds an "
                f"instance; if it must be per instance, wrap `{bound}` (the method bound to a "
                f"weak proxy of the object) instead of `self.{method_name}`{remove}."
            )
            also = f"Or wrap the function once, in the class body, instead of per instance{remove}."
        return PatternMatch(
            self.name,
            self.title,
            summary,
            explanation,
            fix,
            steps[:1],
            "WAL204",
            None,
            WEAKEN,
            also,
        )
