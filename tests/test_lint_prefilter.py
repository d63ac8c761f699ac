"""The rules' tests on the text (``Rule.may_report``): false only where the rule reports nothing.

The lint parses a file only when a selected rule's test passes on its text, so each test must
pass on every file where its rule has a finding. Checked rule by rule on the lint cases, this
package and a part of torch's sources, and on code written to trip a text scan (strings and
brackets that dedent, continuations, f-strings, tabs, odd line endings, decorators).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from whyalive.lint import (
    RULES,
    _without_noqa,
    iter_python_files,
    lint_source,
    read_source,
    rules_for,
)
from whyalive.lint.codetext import CodeText
from whyalive.lint.engine import lint_tree
from whyalive.lint.findings import LintFinding

HERE = Path(__file__).parent
ALL_CODES = "WAL,WAL9"


def _corpus() -> list[str]:
    """The lint cases, this package and torch parts full of closures, hooks and patches."""
    paths = [HERE / "lint_cases", HERE.parent / "src" / "whyalive"]
    try:
        import torch
    except ImportError:  # pragma: no cover - the dev environment has torch
        torch = None
    if torch is not None:
        root = Path(torch.__file__).parent
        paths += [root / "nn", root / "autograd", root / "optim", root / "utils" / "hooks.py"]
        paths += [root / "distributed" / "pipelining", root / "utils" / "checkpoint.py"]
    files = list(iter_python_files(paths))
    files += [str(p) for p in (HERE / "lint_cases").glob("*.py312")]
    return files


def _unparsable(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    return False


def _engine(source: str, path: str = "case.py") -> list[LintFinding]:
    """Every finding of every rule, the file parsed whatever the tests say (``# noqa``
    applied, as the lint applies it)."""
    return _without_noqa(lint_tree(ast.parse(source), source, path, RULES), source)


def _passed(text: CodeText) -> set[str]:
    return {rule.code for rule in RULES if rule.may_report is not None and rule.may_report(text)}


def test_every_rule_has_a_test_on_the_text() -> None:
    """A new rule must say which files it can report on (else every file is parsed)."""
    assert all(rule.may_report is not None for rule in RULES)


def test_tests_hold_on_the_corpus() -> None:
    """On every file of the corpus, each rule with a finding passes its test, and linting with
    the tests finds exactly what parsing every file finds."""
    files = _corpus()
    assert len(files) > 300
    found_codes: set[str] = set()
    skipped = 0
    for path in files:
        source = read_source(path)
        assert isinstance(source, str)
        if path.endswith(".py312") and sys.version_info < (3, 12):
            continue
        if _unparsable(source):
            continue
        text = CodeText(source)
        findings = lint_tree(ast.parse(source), source, path, RULES)
        passed = _passed(text)
        for finding in findings:
            assert text.unsure or finding.code in passed, (
                f"{path}:{finding.line}: {finding.code} but its test on the text is false"
            )
        found_codes.update(f.code for f in findings)
        skipped += rules_for(source, RULES) is None
        # The lint with the tests (and only the rules that pass them) finds the same.
        assert lint_source(source, path, select=ALL_CODES) == _without_noqa(findings, source)
    # Every rule has findings in the corpus, so every test was held to its rule.
    assert found_codes >= {rule.code for rule in RULES}
    # And the tests do spare work: most files are never parsed.
    assert skipped > len(files) // 3


# Code that a text scan could misread; each holds a finding its rule's test must see.
TRICKY = {
    "docstring dedented inside a nested function": '''
def outer(model):
    def walk(node):
        """Walk.
text at column 0, as in a long docstring
"""
        return [walk(c) for c in node.children] + [model]
    return walk(model)
''',
    "bracket closed at column 0 inside a nested function": """
def outer(model):
    def walk(node):
        total = sum(
    x for x in node)
        return walk(node.left), model, total
    return walk(model)
""",
    "backslash continuation at column 0": """
def outer(model):
    def walk(node):
        first = node.left + \\
0
        return walk(first), model
    return walk(model)
""",
    "recursive call inside an f-string only": """
def outer(model):
    def walk(node):
        return f"{walk(node.child)!r} {model}"
    return walk(model)
""",
    "tabs": "def outer(model):\n\tdef walk(node):\n\t\treturn walk(node.left), model\n"
    "\treturn walk(model)\n",
    "old Mac line endings": "def outer(model):\r    def walk(node):\r"
    "        return walk(node.left), model\r    return walk(model)\r",
    "Windows line endings": "def outer(model):\r\n    def walk(node):\r\n"
    "        return walk(node.left), model\r\n    return walk(model)\r\n",
    "mutual recursion through a lambda": """
def outer(model):
    def even(n):
        return n == 0 or odd(n - 1) or model
    odd = lambda n: n != 0 and even(n - 1)
    return even(4)
""",
    "lambda stored on a line after the target": """
class Trainer:
    def setup(self):
        self.callback = (
            lambda: self.step()
        )

    def step(self):
        return 1
""",
    "nested function stored through setattr": """
def install(model):
    def hook():
        return model
    setattr(model, "forward", hook)
""",
    "bound method read after a comment between decorator and def": """
class Trainer:
    def setup(self):
        self.callback = self.step

    @staticmethod
    # a comment
    def helper():
        return 1

    def step(self):
        return 1
""",
    "matmul continuation line above a plain method": """
class Trainer:
    weights = (1
    @ property)
    def step(self):
        return 1

    def setup(self):
        self.callback = self.step
""",
    "keyword touching a string": """
class Trainer:
    def setup(self):
        if"x"in self.__dict__:
            self.callback = self.step

    def step(self):
        return 1
""",
    "except clause over several lines": """
class Loader:
    def load(self):
        try:
            return 1
        except (ValueError,
                KeyError) as err:
            self.error = err
""",
    "cache decorator over several lines": """
import functools

class Model:
    @functools.lru_cache(
        maxsize=None
    )
    def weights(self, name):
        return name
""",
    "frame kept, call spread over lines": """
import inspect

def probe():
    frame = inspect.currentframe(
    )
    return frame
""",
    "hook registered with a partial": """
import functools

def attach(t):
    t.register_hook(functools.partial(print, t))
""",
    "string prefix that is not an f-string": """
class Trainer:
    def setup(self):
        self.callback = (rb"x", self.step)

    def step(self):
        return 1
""",
}


@pytest.mark.parametrize("source", TRICKY.values(), ids=list(TRICKY))
def test_tricky_text_keeps_findings(source: str) -> None:
    """Each case has a finding; its rule's test passes; the lint with the tests finds it."""
    findings = _engine(source)
    assert findings
    assert {f.code for f in findings} <= _passed(CodeText(source))
    assert lint_source(source, "case.py", select=ALL_CODES) == findings


UNSURE = {
    "non-ASCII name": "def outer(model):\n    def wälk(node):\n        return wälk(node), model\n"
    "    return wälk\n",
    "form feed": "\fdef outer(model):\n    return model\n",
    "unterminated string": "x = 'abc\n",
    "unbalanced brackets": "def f(:\n",
    "null byte": "x = 1\x00\n",
}


@pytest.mark.parametrize("source", UNSURE.values(), ids=list(UNSURE))
def test_text_python_could_lex_otherwise_is_parsed(source: str) -> None:
    """Where the scan could differ from Python's tokenizer, every rule runs on the parse."""
    assert CodeText(source).unsure
    assert rules_for(source, RULES) == RULES


@pytest.mark.skipif(sys.version_info < (3, 12), reason="f-strings nest their quotes on 3.12+")
def test_fstring_nesting_its_quotes_is_parsed() -> None:
    source = 'def f(d, model):\n    def g():\n        return f"{d["k"]}{g()}"\n    return g\n'
    assert CodeText(source).unsure


CLEAN = {
    "plain functions and classes": """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.linear(x)

def train(net, data):
    for x in data:
        net(x).sum().backward()
""",
    "a lambda passed to sorted, a local function returned": """
def order(items):
    def key(item):
        return item.rank
    ranked = sorted(items, key=lambda item: item.name)
    return ranked, key
""",
    "an exception only logged and raised again": """
def load(path):
    try:
        return open(path).read()
    except OSError as err:
        print(err)
        raise RuntimeError(path) from err
""",
}


@pytest.mark.parametrize("source", CLEAN.values(), ids=list(CLEAN))
def test_files_no_rule_can_report_on_are_not_parsed(source: str) -> None:
    """The tests spare the parse of ordinary code (that is the time they save)."""
    assert lint_tree(ast.parse(source), source, "c.py", RULES) == []
    assert rules_for(source, RULES) is None


def test_check_syntax_parses_every_file(tmp_path: Path) -> None:
    """A grammar error in a file no rule can report on passes by default (the tools that check
    syntax report it); ``--check-syntax`` parses every file and reports WAL003."""
    bad = tmp_path / "py2.py"
    bad.write_text('print "hello"\n')
    run = [sys.executable, "-m", "whyalive", "lint", "--isolated", str(tmp_path)]
    quiet = subprocess.run(run, capture_output=True, text=True, check=False)
    assert (quiet.returncode, quiet.stdout) == (0, "")
    strict = subprocess.run([*run, "--check-syntax"], capture_output=True, text=True, check=False)
    assert strict.returncode == 2
    assert "WAL003" in strict.stdout
