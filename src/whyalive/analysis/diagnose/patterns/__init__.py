"""The named patterns, one module per family: each recognises a shape, explains it, says the fix.

A pattern reads the live cycle (:class:`~whyalive.analysis.paths.CycleView`) during the
analysis and returns plain strings; every renderer shows those strings, so a
cycle is explained in the same words everywhere. :data:`PATTERNS` is the order
:func:`whyalive.analysis.diagnose.diagnose` tries them in; docs/architecture.md says how to
add one.
"""

from __future__ import annotations

from whyalive.analysis.diagnose.patterns import autograd, autograd_state
from whyalive.analysis.diagnose.patterns.base import Pattern, PatternMatch
from whyalive.analysis.diagnose.patterns.caches import MethodCachePattern
from whyalive.analysis.diagnose.patterns.classes import ClassPerCallPattern
from whyalive.analysis.diagnose.patterns.closures import (
    ClosureInCapturedContainerPattern,
    RecursiveClosurePattern,
)
from whyalive.analysis.diagnose.patterns.containers import (
    ParentChildPattern,
    SelfContainingContainerPattern,
    SelfInOwnContainerPattern,
)
from whyalive.analysis.diagnose.patterns.fallbacks import (
    FAMILY_WORDS,
    ReferenceLoopPattern,
    UnrecognisedPattern,
)
from whyalive.analysis.diagnose.patterns.frames import (
    ExceptionInFuturePattern,
    ExceptionTracebackPattern,
    FrameKeptPattern,
    GeneratorFramePattern,
)
from whyalive.analysis.diagnose.patterns.frameworks import AutogradNodePattern, PytestIdiomPattern
from whyalive.analysis.diagnose.patterns.hooks import HookRegistryPattern
from whyalive.analysis.diagnose.patterns.methods import (
    BoundMethodOnSelfPattern,
    WrappedMethodOnSelfPattern,
)
from whyalive.analysis.diagnose.patterns.structures import LinkedStructurePattern

__all__ = [
    "PATTERNS",
    "PATTERN_NAMES",
    "UNRECOGNISED",
    "LinkedStructurePattern",
    "Pattern",
    "PatternMatch",
]

UNRECOGNISED = UnrecognisedPattern()
"""Said only when every pattern failed on a hostile object."""

PATTERNS: tuple[Pattern, ...] = (
    # First: pytest's own objects make the test's cycles look like user patterns.
    PytestIdiomPattern(),
    # Before the closures and methods they are made of: what is attached to autograd.
    *autograd.HOOK_PATTERNS,
    *autograd_state.PATTERNS,
    RecursiveClosurePattern(),
    # Before bound methods: `self.f = lru_cache(self.g)` also holds a bound method.
    MethodCachePattern(),
    # After the class-level cache: a class made per call is any cycle with a local class.
    ClassPerCallPattern(),
    # Before bound methods: a hook or a closure's container also holds a callable.
    HookRegistryPattern(),
    ClosureInCapturedContainerPattern(),
    WrappedMethodOnSelfPattern(),
    BoundMethodOnSelfPattern(),
    # Before tracebacks: a future's exception is a traceback cycle through a hidden slot.
    ExceptionInFuturePattern(),
    ExceptionTracebackPattern(),
    # Before kept frames: on 3.10 a suspended generator's frame is a member of its cycle.
    GeneratorFramePattern(),
    FrameKeptPattern(),
    AutogradNodePattern(),
    SelfInOwnContainerPattern(),
    ParentChildPattern(),
    SelfContainingContainerPattern(),
    ReferenceLoopPattern(),
)

PATTERN_NAMES: frozenset[str] = frozenset(
    {pattern.name for pattern in PATTERNS}
    | {name for name, _ in FAMILY_WORDS.values()}
    | {LinkedStructurePattern.name, UNRECOGNISED.name}
)
"""Every pattern name a report can carry."""
