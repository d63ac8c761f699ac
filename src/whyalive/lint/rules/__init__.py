"""The rule registry: every rule family in code order, and the runtime pattern names they map to.

Codes are never reused. 0xx are not rules but input problems (the file could not be read or
parsed), reported as findings so one bad file does not stop a run.
"""

from __future__ import annotations

from whyalive.lint.rules import autograd, caches, closures, exceptions, opinionated, self_refs
from whyalive.lint.scopes import Rule

__all__ = ["INPUT_PROBLEMS", "RULES", "RULE_FOR_PATTERN", "explain_rule", "rule_for_code"]

RULES: tuple[Rule, ...] = (
    *closures.RULES,
    *self_refs.RULES,
    *exceptions.RULES,
    *autograd.RULES,
    *caches.RULES,
    *opinionated.RULES,
    *closures.OPT_IN_RULES,
    *self_refs.OPT_IN_RULES,
    *caches.OPT_IN_RULES,
)

# Runtime diagnosis pattern name -> the lint code that would have caught it before it ran.
RULE_FOR_PATTERN: dict[str, str] = {
    "recursive-closure": closures.RECURSIVE_CLOSURE.code,
    "bound-method-on-self": self_refs.BOUND_METHOD_ON_SELF.code,
    "exception-traceback": exceptions.EXCEPTION_KEPT.code,
    "autograd-node": autograd.HOOK_CAPTURES_OWNER.code,
    "tensor-hook-loop": autograd.HOOK_CAPTURES_OWNER.code,
    "node-hook-loop": autograd.HOOK_CAPTURES_OWNER.code,
    "node-metadata": autograd.CLOSURE_ON_AUTOGRAD_NODE.code,
    "method-cache": caches.METHOD_CACHE.code,
    "frame-kept": exceptions.FRAME_KEPT.code,
    "wrapped-method-on-self": self_refs.PATCHED_METHOD.code,
}

# code -> (name, explanation) for problems with the input rather than with the code in it.
INPUT_PROBLEMS: dict[str, tuple[str, str]] = {
    "WAL000": (
        "internal-error",
        "A rule raised an exception on this file. The other rules still ran; please report "
        "the file and the message.",
    ),
    "WAL001": (
        "unreadable-file",
        "The path does not exist or could not be read (permissions, a directory loop).",
    ),
    "WAL002": (
        "not-decodable",
        "The file is not valid in its declared encoding (UTF-8 unless a coding cookie says "
        "otherwise), so it cannot be Python source.",
    ),
    "WAL003": (
        "syntax-error",
        "The file does not parse with the running Python (a syntax error, a null byte, or "
        "nesting too deep for the parser). Its code was not checked.",
    ),
}


def rule_for_code(code: str) -> Rule | None:
    """The rule with exactly this code, or ``None``."""
    wanted = code.strip().upper()
    return next((rule for rule in RULES if rule.code == wanted), None)


def explain_rule(code: str) -> str:
    """The long explanation of a rule (or input problem) code, for ``--explain``.

    Raises:
        KeyError: when no rule has this code.
    """
    wanted = code.strip().upper()
    rule = rule_for_code(wanted)
    if rule is not None:
        state = "on by default" if rule.default_enabled else "off by default"
        patterns = [p for p, c in RULE_FOR_PATTERN.items() if c == rule.code]
        seen = f"\nRuntime pattern: {patterns[0]}" if patterns else ""
        return f"{rule.code} {rule.name} ({state}){seen}\n\n{rule.explanation}\n"
    if wanted in INPUT_PROBLEMS:
        name, text = INPUT_PROBLEMS[wanted]
        return f"{wanted} {name} (always reported)\n\n{text}\n"
    raise KeyError(code)
