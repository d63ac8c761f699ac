"""The kinds of reference a report names: a small closed vocabulary.

Patterns, cut ranking and the wording read a reference's kind from here; the
reading of live references that assigns them is :mod:`whyalive.analysis.edges`.
"""

from __future__ import annotations

CLOSURE = "closure"  # function -> cell, through __closure__[i] (the tuple collapsed)
CELL = "cell"  # cell -> its contents: a closure variable
ATTRIBUTE = "attribute"  # instance -> value of one of its attributes
KEY = "key"  # dict -> value (or key) of one entry
INDEX = "index"  # list/tuple/deque -> item
LOCAL = "local"  # frame or generator -> value of a local variable
BOUND_SELF = "bound-self"  # bound method -> __self__
BOUND_FUNC = "bound-func"  # bound method -> __func__
TRACEBACK = "traceback"  # exception/traceback/frame links
FRAME = "frame"  # generator/coroutine -> its frame, frame -> f_back
GLOBALS = "globals"  # function/frame -> module globals
DEFAULTS = "defaults"  # function -> __defaults__/__kwdefaults__
CLASS = "class"  # instance -> its class
AUTOGRAD = "autograd"  # held by the autograd graph in C++ (grad_fn, its hooks, saved tensors)
INTERNAL = "internal"  # a reference the interpreter owns (code, tuple slots, ...)
UNKNOWN = "unknown"  # labelled by type, never guessed

USER_KINDS = frozenset({CELL, ATTRIBUTE, KEY, INDEX, LOCAL, BOUND_SELF, DEFAULTS})
