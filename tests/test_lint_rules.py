"""Rule behaviour: eval files in tests/lint_cases, the registry, self-clean and stdlib runs."""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import pytest

from whyalive.lint import RULES, lint_paths, lint_source, select_rules
from whyalive.lint.rules import INPUT_PROBLEMS, RULE_FOR_PATTERN, explain_rule

# `*.py312` files hold syntax older Pythons (and ruff's py310 target) cannot parse.
CASES = sorted(
    p for p in (Path(__file__).parent / "lint_cases").iterdir() if p.suffix in (".py", ".py312")
)
EXPECTED = re.compile(r"(WAL\d{3}): (\d+), (\d+)")
# After an expectation: the first names it keeps, in order, then flags (`escapes`, `fix`).
DETAILS = re.compile(r"(WAL\d{3}): (\d+), \d+((?: \"[^\"]+\")*)((?: (?:escapes|fix))*)")
SRC = Path(__file__).parent.parent / "src" / "whyalive"


def _expected(text: str) -> set[tuple[str, int, int]]:
    found = set()
    for number, line in enumerate(text.splitlines(), 1):
        for code, at, col in EXPECTED.findall(line):
            assert int(at) == number, f"expectation on line {number} names line {at}"
            found.add((code, int(at), int(col)))
    return found


def _expected_details(text: str) -> dict[tuple[str, int], tuple[tuple[str, ...], tuple[str, ...]]]:
    details = {}
    for code, line, names, flags in DETAILS.findall(text):
        details[code, int(line)] = (tuple(re.findall(r'"([^"]+)"', names)), tuple(flags.split()))
    return details


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_eval_file(case: Path) -> None:
    """Each eval file yields exactly the findings written in its `# CODE: line, col` comments."""
    if case.suffix == ".py312" and sys.version_info < (3, 12):
        pytest.skip("needs Python 3.12 syntax")
    text = case.read_text()
    expected = _expected(text)
    # A family's off-by-default (9xx) rules run when the file expects them.
    select = ["WAL" + case.stem[3], *{code for code, _, _ in expected if code[3] == "9"}]
    findings = lint_source(text, str(case), select=select)
    assert {(f.code, f.line, f.col) for f in findings} == expected
    details = _expected_details(text)
    for finding in findings:
        names, flags = details.get((finding.code, finding.line), ((), ()))
        kept = tuple(c.name for c in finding.captures)
        assert kept[: len(names)] == names, finding.message
        shown = [finding.message.index(f"`{n}`") for n in names]
        assert shown == sorted(shown), finding.message
        assert ("escapes" in flags) == (" escapes `" in finding.message), finding.message
        if "escapes" in flags:
            assert "del " not in finding.message
        assert ("fix" in flags) == bool(finding.edits), finding.message


def test_every_rule_has_an_eval_case() -> None:
    """Every rule code appears in at least one eval file."""
    written = "".join(c.read_text() for c in CASES)
    assert [r.code for r in RULES if f"{r.code}: " not in written] == []


def test_rule_codes_and_messages() -> None:
    """Codes are unique, fit flake8's pattern, and every message starts with its code."""
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    for rule in RULES:
        assert re.fullmatch(r"WAL[1-9]\d\d", rule.code)
        assert rule.message.startswith(rule.code + " ")
        assert rule.explanation
        assert rule.default_enabled is not rule.code.startswith("WAL9")
    assert set(codes).isdisjoint(INPUT_PROBLEMS)


def test_pattern_map_points_at_rules() -> None:
    """RULE_FOR_PATTERN uses runtime pattern names and names existing rules."""
    from whyalive.analysis.diagnose.patterns import PATTERN_NAMES

    assert set(RULE_FOR_PATTERN) <= PATTERN_NAMES
    assert RULE_FOR_PATTERN["frame-kept"] == "WAL303"
    assert set(RULE_FOR_PATTERN.values()) <= {r.code for r in RULES}


def test_explain_rule() -> None:
    """explain_rule gives the long text for rules and input codes and rejects unknown codes."""
    assert "pipelining" in explain_rule("wal101")
    assert "B019" in explain_rule("WAL501")
    assert "off by default" in explain_rule("WAL901")
    assert explain_rule("WAL003").startswith("WAL003 syntax-error")
    with pytest.raises(KeyError):
        explain_rule("WAL999")


def test_select_and_ignore() -> None:
    """Longest prefix wins, and 9xx rules need a select prefix of four characters."""
    default = {r.code for r in select_rules()}
    assert "WAL101" in default
    assert "WAL901" not in default
    assert {r.code for r in select_rules(["WAL"])} == default
    assert {r.code for r in select_rules("WAL9")} == {f"WAL90{i}" for i in range(1, 6)}
    assert {r.code for r in select_rules(ignore="WAL1")} == default - {"WAL101", "WAL102"}
    assert {r.code for r in select_rules(["WAL101"], ["WAL1"])} == {"WAL101"}


def test_syntax_error_is_a_finding() -> None:
    """A module that does not parse gives one WAL003 finding at the error."""
    (finding,) = lint_source("def f(:\n", "bad.py")
    assert (finding.code, finding.path, finding.line) == ("WAL003", "bad.py", 1)
    assert lint_source("x = 1\x00\n")[0].code == "WAL003"


def test_deep_nesting_does_not_crash() -> None:
    """Deeply nested expressions are walked without recursion limits."""
    source = "def f():\n    x = " + "(" * 150 + "1" + ")" * 150 + "\n"
    assert lint_source(source) == []


def test_project_source_is_clean() -> None:
    """whyalive's own source has no findings."""
    assert lint_paths([SRC]) == []


def test_stdlib_sample_does_not_crash() -> None:
    """A sample of the CPython standard library lints with no internal errors."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    every = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    # Every 15th, or more where a distribution ships the standard library split up.
    files = every[:: min(15, max(len(every) // 60, 1))]
    assert len(files) > 50
    findings = lint_paths(files, select=["WAL"])
    assert [f for f in findings if f.code == "WAL000"] == []


def test_mutual_recursion_is_one_finding_naming_every_function() -> None:
    """A group of mutually recursive closures gives one WAL102 naming all and what they keep."""
    source = (
        "def outer(tensors, outputs):\n"
        "    def a(n):\n"
        "        return b(n) + a(n - 1)\n"
        "    def b(n):\n"
        "        return c(n) + [tensors]\n"
        "    def c(n):\n"
        "        outputs.append(n)\n"
        "        return a(n - 1)\n"
        "    return a(3)\n"
    )
    (finding,) = lint_source(source)
    assert (finding.code, finding.line) == ("WAL102", 2)
    assert "`a`, `b` and `c` refer to each other" in finding.message
    assert "keeps `outputs`, `tensors` alive" in finding.message
    assert [(c.name, c.kind) for c in finding.captures] == [
        ("outputs", "parameter"),
        ("tensors", "parameter"),
    ]


def test_light_recursion_is_opt_in() -> None:
    """A recursive closure holding only code and constants is WAL903, off by default."""
    source = "def f(tree):\n    import json\n    def walk(n):\n        return walk(json)\n"
    assert lint_source(source) == []
    (finding,) = lint_source(source, select="WAL903")
    assert finding.code == "WAL903"
    assert [(c.name, c.kind) for c in finding.captures] == [("json", "module")]


def test_light_instances_are_opt_in() -> None:
    """Cycles and caches on instances that store only light values are WAL904/WAL905, and
    a WAL904 message names the rule it was demoted from."""
    source = (
        "import functools\n"
        "class Gelu:\n"
        "    def __init__(self, approximate: str = 'none'):\n"
        "        self.approximate = approximate\n"
        "        self.act = self.python\n"
        "    def python(self, x):\n"
        "        return x\n"
        "    @functools.cache\n"
        "    def name(self) -> str:\n"
        "        return self.approximate.upper()\n"
    )
    assert lint_source(source) == []
    found = lint_source(source, select=["WAL904", "WAL905"])
    assert [(f.code, f.line) for f in found] == [("WAL904", 5), ("WAL905", 8)]
    assert found[0].message.startswith("WAL904 (WAL201) `self.act = self.python`")
    heavier = source.replace("self.approximate = approximate", "self.weight = make(approximate)")
    assert [f.code for f in lint_source(heavier)] == ["WAL201", "WAL501"]


def test_cache_messages_say_what_a_bounded_cache_keeps() -> None:
    """An unbounded cache keeps every instance; `maxsize=N` the last N calls; `maxsize=1`
    the instance used last. No message offers `cached_property` (callers call the method)."""
    source = (
        "import functools\n"
        "class C(Base):\n"
        "    @functools.cache\n"
        "    def a(self, x): return x\n"
        "    @functools.lru_cache(maxsize=4)\n"
        "    def b(self, x): return x\n"
        "    @functools.lru_cache(1)\n"
        "    def c(self, x): return x\n"
    )
    messages = [f.message for f in lint_source(source)]
    assert "keeps every `self` it is called with" in messages[0]
    assert "instances are never freed" in messages[0]
    assert "the `self`, arguments and result of its last 4 calls" in messages[1]
    assert "keeps the last `self` it was called with" in messages[2]
    assert all("cached_property" not in m for m in messages)


def test_linting_leaves_no_cyclic_garbage() -> None:
    """The lint runs inside whyalive's own analysis (to name the rule that flags a cut), so
    it must make no cyclic garbage: scope tables hold their parents weakly, no `ast.dump`."""
    import gc

    files = [*CASES, *sorted((CASES[0].parent / "advice").glob("*.py"))]
    texts = [(p, p.read_text(encoding="utf-8")) for p in files if p.suffix == ".py"]
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    try:
        start = len(gc.garbage)
        for path, text in texts:
            lint_source(text, str(path), select="WAL,WAL9")
        gc.collect()
        made = gc.garbage[start:]
        del gc.garbage[start:]
    finally:
        gc.set_debug(flags)
    assert not made, sorted({type(o).__qualname__ for o in made})
