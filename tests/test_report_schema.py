"""Reading reports back: the stdlib schema check behind ``whyalive render`` and Report.load."""

from __future__ import annotations

import copy
import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from capabilities import JSONSCHEMA_MISSING
from whyalive import find_leaks
from whyalive.cli import main
from whyalive.errors import EXIT_USAGE, ReportFormatError
from whyalive.report import Report
from whyalive.report.schema import report_schema, validate_report


def _leak() -> None:
    holder: list[object] = [bytearray(2 << 20)]
    holder.append(holder)


@pytest.fixture(scope="module")
def report_data() -> dict[str, Any]:
    """A real report with a cycle, a heavy object, paths and a cut, as plain data."""
    data: dict[str, Any] = find_leaks(_leak).to_dict()
    assert data["cycles"]
    return data


def _mutations(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Broken copies of a valid report, each with what is wrong with it."""
    cases: list[tuple[str, dict[str, Any]]] = []

    def case(name: str, change: Any) -> None:
        broken = copy.deepcopy(data)
        change(broken)
        cases.append((name, broken))

    case("only a version", lambda d: d.clear() or d.update(schema_version=1))
    case("missing run", lambda d: d.pop("run"))
    case("string bytes", lambda d: d.update(total_bytes="8"))
    case("negative bytes", lambda d: d.update(total_bytes=-1))
    case("bool as int", lambda d: d.update(cycle_count=True))
    case("unknown field", lambda d: d.update(extra=1))
    case("node not an object", lambda d: d["nodes"].__setitem__(0, 7))
    case("edge without name", lambda d: d["cycles"][0]["edges"][0].pop("name"))
    case("cut of the wrong shape", lambda d: d["cycles"][0].update(cut=[]))
    case("device bytes as text", lambda d: d.update(bytes_by_device={"cpu": "1"}))
    return cases


def test_real_reports_are_valid(report_data: dict[str, Any]) -> None:
    """A report whyalive wrote passes the check and loads back equal."""
    validate_report(report_data)
    assert Report.from_dict(report_data).to_dict() == report_data


def test_each_schema_break_is_one_line(report_data: dict[str, Any]) -> None:
    """Every broken copy is rejected with one line that says where."""
    for name, broken in _mutations(report_data):
        with pytest.raises(ReportFormatError) as caught:
            Report.from_dict(broken)
        message = str(caught.value)
        assert message.startswith("not a valid whyalive report: report"), name
        assert "\n" not in message, name


def _jsonschema_validator(jsonschema: Any) -> Any:
    """A validator of the report schema, on jsonschema 4.18+ and on 4.17.

    4.17 (the last release without rpds-py, the one the CPython 3.14 leg can install)
    resolves ``#/$defs/...`` against the schema's ``urn:`` id as the empty URL, so the
    schema is also stored under that name there; 4.18+ resolves it unaided and
    deprecates the resolver.
    """
    schema = report_schema()
    validator_class = jsonschema.validators.validator_for(schema)
    major, minor = (int(part) for part in metadata.version("jsonschema").split(".")[:2])
    if (major, minor) >= (4, 18):
        return validator_class(schema)
    resolver = jsonschema.RefResolver.from_schema(schema, store={"": schema})
    return validator_class(schema, resolver=resolver)


def test_agrees_with_jsonschema(report_data: dict[str, Any]) -> None:
    """The stdlib check accepts and rejects exactly what jsonschema does on the schema."""
    jsonschema = pytest.importorskip("jsonschema", reason=JSONSCHEMA_MISSING)
    validator = _jsonschema_validator(jsonschema)
    validator.validate(report_data)
    for name, broken in _mutations(report_data):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(broken)
        with pytest.raises(ReportFormatError):
            validate_report(broken)
        assert name


def test_dangling_node_ids_are_rejected(report_data: dict[str, Any]) -> None:
    """A node id past the node table (which renderers index) is one clear line."""
    broken = copy.deepcopy(report_data)
    broken["cycles"][0]["members"] = [len(broken["nodes"]) + 5]
    with pytest.raises(ReportFormatError, match=r"cycles\[0\]\.members names node"):
        validate_report(broken)
    renumbered = copy.deepcopy(report_data)
    renumbered["nodes"][0]["node_id"] = 9
    with pytest.raises(ReportFormatError, match=r"nodes\[0\]\.node_id must be 0"):
        validate_report(renumbered)


def test_render_of_a_version_only_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`whyalive render` on {"schema_version": 1} exits 2 with one line, and prints no report."""
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"schema_version": 1}), encoding="utf-8")
    assert main(["render", str(path)]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "not a valid whyalive report: report has no 'run'" in captured.err


NODE_IDS = {
    "members": lambda d, v: d["cycles"][0].__setitem__("members", [v]),
    "heavy": lambda d, v: d["cycles"][0].__setitem__("heavy", [v]),
    "holder path nodes": lambda d, v: d["cycles"][0]["holder_paths"][0]["nodes"].__setitem__(0, v),
    "holder path heavy": lambda d, v: d["cycles"][0]["holder_paths"][0].__setitem__(
        "heavy_node", v
    ),
    "edge source": lambda d, v: d["cycles"][0]["edges"][0].__setitem__("source", v),
    "loop target": lambda d, v: d["cycles"][0]["loop"][0].__setitem__("target", v),
    "cut edge": lambda d, v: d["cycles"][0]["cut"]["edges"][0].__setitem__("target", v),
    "heavy object": lambda d, v: d["heavy_objects"][0].__setitem__("node_id", v),
}


@pytest.mark.parametrize("value", [-1, -2, 99])
@pytest.mark.parametrize("where", sorted(NODE_IDS))
def test_render_rejects_every_bad_node_id_with_one_line_and_exit_2(
    where: str,
    value: int,
    report_data: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A negative id would silently show the node counted from the end, or crash deep
    in a renderer: every node id in the file is checked before anything is drawn."""
    broken = copy.deepcopy(report_data)
    NODE_IDS[where](broken, value)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    assert main(["render", str(path)]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("whyalive: error: not a valid whyalive report: report.")
