"""Static rules for code that makes reference cycles: ``whyalive lint`` and the flake8 plugin.

Independent of the runtime stages; it shares only their pattern names (see
:data:`whyalive.lint.rules.RULE_FOR_PATTERN`).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import ast
import codecs
import io
import os
import re
import stat
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence

from whyalive.errors import UsageError
from whyalive.lint.codetext import CodeText
from whyalive.lint.config import LintConfig
from whyalive.lint.engine import lint_tree
from whyalive.lint.findings import LintFinding
from whyalive.lint.parallel import map_in_workers, worker_count
from whyalive.lint.rules import INPUT_PROBLEMS, RULE_FOR_PATTERN, RULES, explain_rule
from whyalive.lint.scopes import Rule

__all__ = [
    "RULES",
    "RULE_FOR_PATTERN",
    "LintConfig",
    "LintFinding",
    "Rule",
    "check_codes",
    "explain_rule",
    "iter_python_files",
    "lint_paths",
    "lint_source",
    "rules_for",
    "select_rules",
]

# Directories never worth walking into (flake8's default exclude list, plus virtualenvs).
EXCLUDED_DIRS = frozenset(
    {".git", ".hg", ".svn", ".bzr", "CVS", "__pycache__", ".tox", ".nox", ".eggs", ".venv"}
)


def _codes(codes: Iterable[str] | str | None) -> list[str]:
    if codes is None:
        return []
    if isinstance(codes, str):
        codes = codes.split(",")
    return [c.strip().upper() for c in codes if c.strip()]


_KNOWN_CODES = (*(rule.code for rule in RULES), *INPUT_PROBLEMS)
# flake8's own pattern for noqa comments, bare or with a list of codes.
NOQA = re.compile(
    r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?",
    re.IGNORECASE,
)


def check_codes(codes: Iterable[str] | str | None, option: str) -> list[str]:
    """The code prefixes in ``codes``, upper-cased.

    Raises:
        UsageError: when a prefix names no rule or input problem (``--select FOO``).
    """
    found = _codes(codes)
    for code in found:
        if not any(known.startswith(code) for known in _KNOWN_CODES):
            raise UsageError(
                f"unknown rule code {code!r} in {option}; codes look like WAL101 "
                "(`whyalive lint --explain CODE`, docs/lint.md)"
            )
    return found


def _longest(code: str, prefixes: list[str]) -> int:
    return max((len(p) for p in prefixes if code.startswith(p)), default=-1)


def select_rules(
    select: Iterable[str] | str | None = None, ignore: Iterable[str] | str | None = None
) -> tuple[Rule, ...]:
    """The rules to run for flake8-style ``select``/``ignore`` code prefixes.

    Without ``select`` the default-on rules run. The longer matching prefix wins, so
    ``ignore=["WAL2"], select=["WAL201"]`` runs WAL201 alone of its family. Off-by-default
    (9xx) rules need a select prefix of at least four characters (``WAL9``), as
    flake8-bugbear's B9 rules do.

    Raises:
        UsageError: for a code that names nothing (see :func:`check_codes`).
    """
    chosen, dropped = check_codes(select, "select"), check_codes(ignore, "ignore")
    rules = []
    for rule in RULES:
        if chosen:
            selected = _longest(rule.code, chosen)
            if not rule.default_enabled and selected < 4:
                selected = -1
        else:
            selected = 3 if rule.default_enabled else -1
        if selected > 0 and selected > _longest(rule.code, dropped):
            rules.append(rule)
    return tuple(rules)


def _input_problem(path: str, code: str, detail: str, line: int = 1, col: int = 0) -> LintFinding:
    name = INPUT_PROBLEMS[code][0].replace("-", " ")
    return LintFinding(path, line, col, code, f"{code} {name}: {detail}")


def rules_for(source: str, rules: Iterable[Rule]) -> tuple[Rule, ...] | None:
    """The rules of ``rules`` that can report on this source, by their tests on its text; all
    of them when the text could be lexed otherwise by Python (only parsing tells), and
    ``None`` when none can: parsing it would find nothing."""
    text = CodeText(source)
    wanted = tuple(rule for rule in rules if rule.may_report is None or rule.may_report(text))
    if text.unsure:
        return tuple(rules)
    return wanted or None


def _lint_with(
    source: str, filename: str, rules: Sequence[Rule], check_syntax: bool = False
) -> list[LintFinding]:
    wanted = rules_for(source, rules)
    if wanted is None and not check_syntax:
        return []
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        return [
            _input_problem(
                filename, "WAL003", exc.msg, exc.lineno or 1, max((exc.offset or 1) - 1, 0)
            )
        ]
    except (ValueError, RecursionError, MemoryError) as exc:
        return [_input_problem(filename, "WAL003", str(exc) or type(exc).__name__)]
    return _without_noqa(lint_tree(tree, source, filename, wanted or ()), source)


def _without_noqa(findings: list[LintFinding], source: str) -> list[LintFinding]:
    """Drop findings whose line has ``# noqa`` or ``# noqa: <prefix of its code>``."""
    if not findings:
        return findings
    lines = re.split(r"\r\n|\r|\n", source)
    kept = []
    for finding in findings:
        text = lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
        match = NOQA.search(text) if "#" in text else None
        if match is not None:
            codes = match.group("codes")
            if not codes or finding.code.startswith(tuple(_codes(re.split(r"[,\s]+", codes)))):
                continue
        kept.append(finding)
    return kept


def lint_source(
    source: str,
    filename: str = "<string>",
    *,
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    check_syntax: bool = False,
) -> list[LintFinding]:
    """Lint one module's source text; a syntax error comes back as a WAL003 finding when the
    text is parsed: always with ``check_syntax``, else when a rule could report on it (or the
    text fails a quick lexical check: unbalanced brackets, an unterminated string)."""
    findings = _lint_with(source, filename, select_rules(select, ignore), check_syntax)
    dropped = _codes(ignore)
    return [f for f in findings if not (f.code in INPUT_PROBLEMS and f.code in dropped)]


def iter_python_files(
    paths: Iterable[str | os.PathLike[str]],
    excluded: Callable[[str], bool] | None = None,
    skipped: list[str] | None = None,
) -> Iterator[str]:
    """Files named directly (any suffix), and ``*.py`` files under named directories, sorted.

    ``excluded`` (a path -> bool test, such as :meth:`LintConfig.excluded`) drops files and
    whole directories. Under a directory, only regular files are linted: a FIFO, device or
    socket named ``*.py`` (or a link to one) is left out and appended to ``skipped``; one
    named directly is linted, and :func:`read_source` says it cannot be read.
    """
    skip = excluded or (lambda _path: False)
    for path in paths:
        text = os.fspath(path)
        if skip(text):
            continue
        if not os.path.isdir(text):
            yield text
            continue
        for root, dirs, files in os.walk(text):
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in EXCLUDED_DIRS
                and not d.endswith(".egg")
                and not skip(os.path.join(root, d))
            )
            for name in sorted(files):
                found = os.path.join(root, name)
                if not name.endswith(".py") or skip(found):
                    continue
                if _is_special_file(found):
                    if skipped is not None:
                        skipped.append(found)
                    continue
                yield found


def _is_special_file(path: str) -> bool:
    """A FIFO, device or socket, or a link to one (a missing file is read, and says so)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def read_source(path: str) -> str | LintFinding:
    """The decoded text of a source file, or the WAL001/WAL002 finding that says why not.

    Only a regular file is read: a FIFO named ``*.py`` would block, a link to
    ``/dev/zero`` would never end. Opened without blocking, then checked.
    """
    try:
        data = _read_regular_file(path)
    except OSError as exc:
        return _input_problem(path, "WAL001", exc.strerror or str(exc))
    if data is None:
        return _input_problem(path, "WAL001", "not a regular file (a FIFO, device or socket)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codecs.lookup(encoding)
        return data.decode(encoding)
    except (SyntaxError, LookupError) as exc:
        return _input_problem(path, "WAL002", str(exc))
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return _input_problem(path, "WAL002", f"not valid {exc.encoding}: {exc.reason}", line)


def _read_regular_file(path: str) -> bytes | None:
    """The bytes of ``path``, or None when it is not a regular file."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(descriptor, "rb", closefd=True) as stream:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return stream.read()


_Job = tuple[str, tuple[str, ...], bool, bool]


def _lint_file(job: _Job) -> tuple[list[LintFinding], str | None]:
    """Lint one file with the rules of the given codes: its findings, and its text when asked
    (run in a worker process: rules travel by code)."""
    path, codes, keep_source, check_syntax = job
    source = read_source(path)
    if isinstance(source, LintFinding):
        return [source], None
    rules = tuple(rule for rule in RULES if rule.code in codes)
    return _lint_with(source, path, rules, check_syntax), source if keep_source else None


def _file_size(job: _Job) -> float:
    try:
        return float(os.stat(job[0]).st_size)
    except OSError:
        return 0.0


def lint_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    config: LintConfig | None = None,
    sources: dict[str, str] | None = None,
    jobs: int | None = None,
    check_syntax: bool = False,
    skipped: list[str] | None = None,
) -> list[LintFinding]:
    """Lint files and directories; unreadable or unparsable files become 0xx findings.

    A FIFO, device or socket met under a directory is not read; its path goes to ``skipped``
    (see :func:`iter_python_files`).

    ``select`` replaces ``config.select`` and ``ignore`` adds to ``config.ignore``; the
    config's ``per-file-ignores`` and ``extend-exclude`` apply too. When ``sources`` is given,
    the text of each file read is stored in it (``--fix`` edits that text). ``jobs`` processes
    share a big tree (``None``: one per available core; 1: this process only). A file is
    parsed only when the text of a rule's finding could be in it (see
    :mod:`whyalive.lint.codetext`), so a syntax error elsewhere goes unreported unless
    ``check_syntax`` asks to parse every file.

    Raises:
        UsageError: for an unknown code in ``select``, ``ignore`` or the config.
    """
    config = config or LintConfig()
    where = f" in {config.source}" if config.source else ""
    check_codes(config.select, f"select{where}")
    chosen = select if select is not None else config.select
    dropped = [*check_codes(config.ignore, f"ignore{where}"), *check_codes(ignore, "ignore")]
    for _, codes in config.per_file_ignores:
        check_codes(codes, f"per-file-ignores{where}")
    codes = tuple(rule.code for rule in select_rules(chosen, dropped))
    excluded = config.excluded if config.extend_exclude else None
    files = list(iter_python_files(paths, excluded, skipped))
    jobs_done = map_in_workers(
        _lint_file,
        [(path, codes, sources is not None, check_syntax) for path in files],
        worker_count(jobs, len(files)),
        cost=_file_size,
    )
    findings: list[LintFinding] = []
    for path, (found, source) in zip(files, jobs_done, strict=True):
        if sources is not None and source is not None:
            sources[path] = source
        per_file = config.ignored_in(path) if config.per_file_ignores else ()
        findings.extend(
            f
            for f in found
            if not (f.code in INPUT_PROBLEMS and f.code in dropped)
            and not (per_file and f.code not in INPUT_PROBLEMS and f.code.startswith(per_file))
        )
    return findings
