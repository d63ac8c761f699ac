"""Conventions of `whyalive lint`: noqa comments, [tool.whyalive.lint], unknown codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from lint_cli import run_lint
from whyalive.cli import main
from whyalive.errors import UsageError
from whyalive.lint import lint_source, select_rules

# One WAL101 finding per function; each captures `kept`, a list built in its outer function.
RECURSIVE = (
    "def {name}(outputs):\n"
    "    kept = []\n"
    "    def walk(x):{comment}\n"
    "        kept.append(x)\n"
    "        return [walk(y) for y in x]\n"
    "    return walk(outputs)\n"
)


def _module(*comments: str) -> str:
    return "\n".join(
        RECURSIVE.format(name=f"f{i}", comment=comment) for i, comment in enumerate(comments)
    )


def test_noqa_comments() -> None:
    """`# noqa` and `# noqa: <code or prefix>` drop a finding; other codes do not."""
    source = _module(
        "",
        "  # noqa",
        "  # noqa: WAL101",
        "  # NOQA:WAL1",
        "  # noqa: E501, WAL101",
        "  # noqa: WAL2",
        "  # noqa:E501",
    )
    assert [f.line for f in lint_source(source)] == [3, 38, 45]


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n" + table)
    for where in ("pkg/a.py", "tests/t.py", "build/gen.py"):
        path = tmp_path / where
        path.parent.mkdir(exist_ok=True)
        path.write_text(_module(""))
    return tmp_path


def test_pyproject_select_ignore_per_file_and_exclude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[tool.whyalive.lint] is found above the paths and all four keys apply."""
    root = _project(
        tmp_path,
        '[tool.whyalive.lint]\nselect = ["WAL1"]\nextend-exclude = ["build"]\n'
        '[tool.whyalive.lint.per-file-ignores]\n"tests/*" = ["WAL101"]\n',
    )
    monkeypatch.chdir(root / "pkg")
    code, out, _ = run_lint(str(root))
    assert code == 1
    assert [line.split(":")[0] for line in out.splitlines()] == [str(root / "pkg" / "a.py")]
    # The command line replaces `select` and adds to `ignore`.
    assert run_lint(str(root), "--select", "WAL2")[0] == 0
    assert run_lint(str(root), "--ignore", "WAL1")[0] == 0
    # --isolated reads no pyproject.toml at all.
    _, out, _ = run_lint(str(root), "--isolated")
    assert len(out.splitlines()) == 3


def test_pyproject_ignore_and_explicit_config(tmp_path: Path) -> None:
    """`ignore` in the table drops a code; --config reads a file that is not above the path."""
    root = tmp_path / "project"
    root.mkdir()
    _project(root, '[tool.whyalive.lint]\nignore = ["WAL101"]\n')
    assert run_lint(str(root))[0] == 0
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "a.py").write_text(_module(""))
    assert run_lint(str(elsewhere))[0] == 1
    assert run_lint(str(elsewhere), "--config", str(root / "pyproject.toml"))[0] == 0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('select = ["FOO"]', "unknown rule code 'FOO' in select in "),
        ('ignore = ["WAL7"]', "unknown rule code 'WAL7' in ignore in "),
        ('[tool.whyalive.lint.per-file-ignores]\n"a.py" = ["X1"]', "'X1' in per-file-ignores"),
        ('selct = ["WAL1"]', "unknown key 'selct'"),
        ("select = 3", "select must be a list of strings"),
        ('ignore = "WAL5"', "ignore must be a list of strings (got str 'WAL5')"),
        ('select = ["WAL1", 5]', "select must be a list of strings"),
        ('extend-exclude = "build"', "extend-exclude must be a list of strings"),
        ('[tool.whyalive.lint.per-file-ignores]\n"a.py" = "WAL1"', "must be a list of strings"),
        ("per-file-ignores = 3", "per-file-ignores must be a table"),
        ("select = [", "not valid TOML"),
    ],
)
def test_bad_pyproject_is_a_usage_error(tmp_path: Path, table: str, message: str) -> None:
    """A bad [tool.whyalive.lint] table exits 2 with one line that says what is wrong."""
    root = _project(tmp_path, "[tool.whyalive.lint]\n" + table + "\n")
    code, out, err = run_lint(str(root))
    assert (code, out) == (2, "")
    assert message in err
    assert len(err.splitlines()) == 1


def test_lint_table_of_the_wrong_type(tmp_path: Path) -> None:
    """`[tool.whyalive]` with `lint = 3` is a usage error, not a traceback."""
    root = _project(tmp_path, "[tool.whyalive]\nlint = 3\n")
    code, out, err = run_lint(str(root))
    assert (code, out) == (2, "")
    assert "[tool.whyalive.lint] must be a table" in err


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_code_on_the_command_line(tmp_path: Path, option: str) -> None:
    """--select FOO (or --ignore FOO) is a usage error, not a run that checks nothing."""
    (tmp_path / "a.py").write_text(_module(""))
    code, out, err = run_lint(str(tmp_path), option, "WAL1,FOO")
    assert (code, out) == (2, "")
    assert (
        err == f"whyalive lint: unknown rule code 'FOO' in {option}; codes look like WAL101 "
        "(`whyalive lint --explain CODE`, docs/lint.md)\n"
    )


def test_unknown_code_through_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`whyalive lint --select FOO` through the real entry point exits 2 with one line."""
    (tmp_path / "a.py").write_text(_module(""))
    assert main(["lint", "--isolated", "--select", "FOO", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_library_rejects_unknown_codes() -> None:
    """select_rules and lint_source raise UsageError for codes that name nothing."""
    with pytest.raises(UsageError, match="'WAL99'"):
        select_rules(["WAL99"])
    with pytest.raises(UsageError):
        lint_source("x = 1\n", ignore="B019")
    assert select_rules(["wal", "WAL0"])  # prefixes of real codes, any case, are fine
