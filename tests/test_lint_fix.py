"""`whyalive lint --fix` / `--diff`: always-safe text edits that remove the cycle."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from lint_cli import run_lint
from whyalive import find_leaks
from whyalive.lint import lint_paths, lint_source
from whyalive.lint.fixes import apply_edits

numpy = pytest.importorskip("numpy")

CASES = Path(__file__).parent / "lint_cases"
SEED = """\
def stage_backward(stage_output, output_grads):
    stage_output_tensors = []

    def extract(output_val, grad_val):  # the seed
        if isinstance(output_val, (tuple, list)):
            for ov, gv in zip(output_val, grad_val):
                extract(
                    ov,
                    gv,  # keep this comment
                )
        else:
            stage_output_tensors.append(output_val)

    extract(stage_output, output_grads)
    return len(stage_output_tensors)
"""
SEED_FIXED = """\
def stage_backward(stage_output, output_grads):
    stage_output_tensors = []

    def extract(output_val, grad_val, *, extract):  # the seed
        if isinstance(output_val, (tuple, list)):
            for ov, gv in zip(output_val, grad_val):
                extract(
                    ov,
                    gv, extract=extract,  # keep this comment
                )
        else:
            stage_output_tensors.append(output_val)

    extract(stage_output, output_grads, extract=extract)
    return len(stage_output_tensors)
"""


def _run(*argv: str) -> tuple[int, str, str]:
    return run_lint(*argv, "--isolated")


def _fixed(source: str, select: str = "WAL1") -> str:
    findings = lint_source(source, select=select)
    return apply_edits(source, (e for f in findings for e in f.edits))


def _stage_backward(source: str) -> object:
    namespace: dict[str, object] = {}
    exec(compile(source, "<seed>", "exec"), namespace)
    return namespace["stage_backward"]


def test_fix_edits_keep_formatting_and_comments() -> None:
    """The fix adds `*, extract` and `extract=extract` and leaves every other byte alone."""
    assert _fixed(SEED) == SEED_FIXED


def test_fixed_code_makes_no_cycle_at_runtime() -> None:
    """The runtime check finds the seed's cycle before the fix and none after it."""
    arrays = [numpy.ones((256, 256)), [numpy.ones((128, 128))]]
    grads = [None, [None]]
    before = find_leaks(_stage_backward(SEED), arrays, grads)
    assert before.found
    after = find_leaks(_stage_backward(SEED_FIXED), arrays, grads)
    assert not after.found
    assert _stage_backward(SEED_FIXED)(arrays, grads) == 2  # still does its job


def test_fix_is_idempotent() -> None:
    """A fixed module has nothing left to fix, and fixing it again changes nothing."""
    once = _fixed(SEED)
    assert [f for f in lint_source(once, select="WAL1,WAL9") if f.edits] == []
    assert _fixed(once) == once


def test_escaping_closures_are_not_fixed() -> None:
    """A recursive closure that is returned gets no edits (its callers could not pass it)."""
    source = "def f(data):\n    def walk(n):\n        return walk(n) or data\n    return walk\n"
    (finding,) = lint_source(source)
    assert finding.edits == ()
    assert "del " not in finding.message


@pytest.mark.parametrize("case", sorted(CASES.glob("wal1_*.py")), ids=lambda p: p.name)
def test_fix_on_eval_files(case: Path, tmp_path: Path) -> None:
    """--fix on a copy of each 1xx eval file: it compiles, only flagged functions change,
    and a second run finds nothing to fix."""
    copy = tmp_path / case.name
    shutil.copy(case, copy)
    before = copy.read_text()
    flagged = [f for f in lint_paths([copy], select="WAL1,WAL903") if f.edits]
    assert flagged
    code, _, err = _run(str(copy), "--select", "WAL1,WAL903", "--fix")
    assert code == 1  # the findings that have no safe fix are still reported
    assert f"fixed {len(flagged)} finding(s) in 1 file(s)" in err
    after = copy.read_text()
    compile(after, str(copy), "exec")
    changed = {
        number
        for number, (old, new) in enumerate(
            zip(before.splitlines(), after.splitlines(), strict=True), 1
        )
        if old != new
    }
    # Every changed line sits in a function that holds a flagged nested function.
    outers = _outer_ranges(before, {f.line for f in flagged})
    assert all(any(lo <= n <= hi for lo, hi in outers) for n in changed)
    again = lint_paths([copy], select="WAL1,WAL903")
    assert [f for f in again if f.edits] == []
    assert _run(str(copy), "--select", "WAL1,WAL903", "--fix")[2].startswith(
        "whyalive lint: fixed 0 finding(s)"
    )


def _outer_ranges(source: str, lines: set[int]) -> list[tuple[int, int]]:
    """Line ranges of the functions that hold a nested function defined on ``lines``."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    ranges = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, functions) and any(
            isinstance(sub, functions) and sub is not node and sub.lineno in lines
            for sub in ast.walk(node)
        ):
            ranges.append((node.lineno, node.end_lineno or node.lineno))
    return ranges


def test_diff_writes_nothing(tmp_path: Path) -> None:
    """--diff prints a unified diff, exits 1 when there is something to fix, and writes
    nothing; --fix then writes exactly that change."""
    path = tmp_path / "seed.py"
    path.write_text(SEED)
    code, out, _ = _run(str(path), "--diff")
    assert code == 1
    assert path.read_text() == SEED
    assert out.startswith(f"--- a/{path}\n+++ b/{path}\n")
    assert re.search(r"^\+    def extract\(output_val, grad_val, \*, extract\):", out, re.M)
    code, out, _ = _run(str(path), "--fix")
    assert (code, out) == (0, "")
    assert path.read_text() == SEED_FIXED
    assert _run(str(path), "--diff")[0] == 0


def test_diff_lists_what_it_cannot_fix_and_exits_1(tmp_path: Path) -> None:
    """--diff on findings without an always-safe fix: no diff, each finding on stderr, exit 1."""
    path = tmp_path / "trainer.py"
    path.write_text(
        "import torch\n"
        "\n"
        "class Trainer:\n"
        "    def __init__(self):\n"
        "        self.activations = torch.zeros(10)\n"
        "        self.callback = self.on_step\n"
        "\n"
        "    def on_step(self):\n"
        "        return self.activations\n"
    )
    code, out, err = _run(str(path), "--diff")
    assert code == 1
    assert out == ""
    assert "would fix 0 finding(s)" in err
    assert "1 finding(s) with no always-safe fix:" in err
    assert f"{path}:6:9: WAL201" in err
    assert path.read_text().count("self.callback = self.on_step") == 1


def test_fix_keeps_encoding_and_newlines(tmp_path: Path) -> None:
    """A latin-1 file with CRLF newlines is fixed in its own encoding and newlines."""
    path = tmp_path / "latin.py"
    text = "# -*- coding: latin-1 -*-\n" + SEED.replace("the seed", "caf\xe9")
    path.write_bytes(text.replace("\n", "\r\n").encode("latin-1"))
    assert _run(str(path), "--fix")[0] == 0
    data = path.read_bytes()
    assert b"caf\xe9" in data
    assert data.count(b"\r\n") == text.count("\n")
    assert b"*, extract" in data


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

# Parameters after `n`: each has a default, so every call passes `n` alone.
_EXTRAS = st.lists(
    st.sampled_from(
        ["depth=0", "scale: float = 1.0", "key=lambda v: v ** 2", "*args", "*", "**kw"]
    ),
    max_size=4,
    unique=True,
)


def _signature(posonly: bool, extras: list[str], multiline: bool, trailing: bool) -> str:
    params = ["n", "/"] if posonly else ["n"]
    # Keep the order Python requires: plain, then * or *args with a keyword after it, then **.
    plain = [e for e in extras if e not in ("*args", "*", "**kw")]
    star = next((e for e in extras if e in ("*args", "*")), None)
    params += plain
    if star is not None:
        params += [star, "flag=False"]
    if "**kw" in extras:
        params.append("**kw")
    if not multiline:
        return ", ".join(params) + ("," if trailing else "")
    lines = "".join(f"\n        {p},  # {p.split('=')[0]}" for p in params)
    return lines + "\n    "


@hypothesis.settings(max_examples=40, deadline=None, database=None)
@hypothesis.given(
    posonly=st.booleans(),
    extras=_EXTRAS,
    multiline=st.booleans(),
    trailing=st.booleans(),
    call_multiline=st.booleans(),
)
def test_fix_on_generated_signatures(
    posonly: bool, extras: list[str], multiline: bool, trailing: bool, call_multiline: bool
) -> None:
    """For any signature shape and call layout, the fixed code compiles, is not flagged
    again, returns the same result and leaves no cycle at runtime."""
    call = "walk(\n            n - 1,  # one less\n        )" if call_multiline else "walk(n - 1)"
    source = (
        "def outer(data):\n"
        "    kept = []\n\n"
        f"    def walk({_signature(posonly, extras, multiline, trailing)}):  # recursive\n"
        "        kept.append(data)\n"
        f"        return 0 if n <= 0 else 1 + {call}\n\n"
        "    return walk(3), len(kept)\n"
    )
    (finding,) = lint_source(source)
    assert finding.edits, source
    fixed = _fixed(source)
    assert [f for f in lint_source(fixed) if f.code.startswith("WAL1")] == [], fixed
    assert _fixed(fixed) == fixed
    results = []
    for text, cycles in ((source, True), (fixed, False)):
        namespace: dict[str, object] = {}
        exec(compile(text, "<generated>", "exec"), namespace)
        outer = namespace["outer"]
        assert callable(outer)
        # Called only under find_leaks, which takes the cycle the unfixed code leaves.
        got: list[object] = []
        report = find_leaks(lambda: got.append(outer(numpy.ones((64, 64)))))  # noqa: B023
        assert report.found is cycles, text
        results.extend(got)
    assert results[0] == results[1] == (3, 4)
