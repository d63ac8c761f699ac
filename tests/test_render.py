"""Renderers: golden files for text/JSON/DOT, the JSON schema, DOT/SVG/PNG, HTML, CLI, API.

Golden files live in ``tests/snapshots/``. After an intended change of output run
``WHYALIVE_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_render.py`` and
review the diff of the rewritten files.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from scenarios import Trainer, heavy, nothing, pipeline_step, ring, stage_backward
from whyalive import LeakError, check_leaks, find_leaks
from whyalive.cli import main
from whyalive.errors import EXIT_MISSING_TOOL, EXIT_USAGE, MissingToolError
from whyalive.render import RENDERERS, get_renderer, render_bytes, renderer_for_path
from whyalive.render.dot import DotRenderer, heavy_size, quote
from whyalive.render.html_page import HtmlRenderer
from whyalive.report import (
    AliveObject,
    Cut,
    CycleReport,
    Edge,
    HeavyObject,
    HolderPath,
    Node,
    Report,
    RunInfo,
)

numpy = pytest.importorskip("numpy")

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("WHYALIVE_UPDATE_SNAPSHOTS") == "1"
HAVE_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAVE_DOT, reason="Graphviz dot is not installed")


# ---- fixed scenarios (real garbage, NumPy arrays so they run without torch) ----


def recursive_closure() -> None:
    """The seed's pipelining helper over two 16 KiB outputs."""
    stage_backward([heavy(16, 256) for _ in range(2)])


def bound_method() -> None:
    """One trainer, dropped."""
    Trainer()


SCENARIOS: dict[str, Callable[[], None]] = {
    "recursive_closure": recursive_closure,
    "bound_method": bound_method,
    "no_leak": nothing,
}
_LINE = re.compile(r"(\w+\.py):\d+")


def masked(report: Report) -> Report:
    """The report with run metadata, line numbers and signatures (which hash lines) fixed,
    and no note on other threads."""
    text = report.to_json()
    for number, cycle in enumerate(report.cycles, 1):
        text = text.replace(cycle.signature, f"signature{number}")
    data = json.loads(_LINE.sub(r"\1:<line>", text))
    data["run"] = RunInfo(where=data["run"]["where"], gc_note=data["run"]["gc_note"]).__dict__
    # Which other threads ran is the test process's doing (pytest-xdist's channel thread
    # wakes when the controller writes), not the scenario's.
    data["notes"] = [n for n in data["notes"] if "other thread(s) ran during the block" not in n]
    for cycle in data["cycles"]:
        if cycle.get("fix_edit"):
            cycle["fix_edit"]["line"] = 1  # the edit's text is compared, not where it falls
    return Report.from_dict(data)


def scenario_report(name: str) -> Report:
    """The masked report of one fixed scenario."""
    return masked(find_leaks(SCENARIOS[name]))


@pytest.mark.parametrize("fmt", ["text", "json", "dot"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_golden_files(scenario: str, fmt: str) -> None:
    """Text, JSON and DOT of each fixed scenario equal the reviewed golden file."""
    suffix = {"text": "txt"}.get(fmt, fmt)
    path = SNAPSHOTS / f"{scenario}.{suffix}"
    document = scenario_report(scenario).render(fmt)
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(document, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}: run with WHYALIVE_UPDATE_SNAPSHOTS=1"
    assert document == path.read_text(encoding="utf-8")


# ---- JSON ----


def _schema() -> dict[str, Any]:
    source = resources.files("whyalive") / "schema" / "report.schema.json"
    return json.loads(source.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _rich_report() -> Report:
    """A hand-made report using every field: cut, heavy objects, allocation site, alive."""
    nodes = (
        Node(0, "dict", "dict {'</script><b>': ...}", 'evil".py:1', 232),
        Node(1, "Model", 'Model "a\\b"\nnext line', None, 56),
        Node(2, "numpy.ndarray", "ndarray(float32[1024], cpu)", None, 4096, heavy=True),
        Node(3, "numpy.ndarray", "ndarray(float32[1 << 20], cpu)", None, 1 << 22, heavy=True),
        Node(4, "module", "module __main__", None, 72),
    )
    back = Edge(1, 0, "attribute", ".registry")
    edges = (Edge(0, 1, "dict-key", "['</script><b>']"), back)
    path = HolderPath(2, (0, 1, 2), (edges[0], Edge(1, 2, "attribute", ".weight")))
    cycle = CycleReport(
        signature="0123456789abcdef",
        pattern="parent-child",
        title="back reference",
        summary="s",
        explanation="e",
        fix="use weakref",
        members=(0, 1),
        edges=edges,
        heavy=(2,),
        holder_paths=(path,),
        cut=Cut((back,), "the attribute `registry`", True),
        bytes_held=4096,
        bytes_by_device={"cpu": 4096},
        total_bytes=4096,
        heavy_count=1,
    )
    heavy = HeavyObject(
        2,
        "numpy.ndarray",
        "ndarray(float32[1024], cpu)",
        4096,
        "cpu",
        7,
        True,
        allocation_site="train.py:12 in step",
    )
    alive_path = HolderPath(3, (4, 3), (Edge(4, 3, "global", "global CACHE"),))
    alive = AliveObject(
        3,
        "ndarray(float32[1 << 20], cpu)",
        1 << 22,
        "cpu",
        (alive_path,),
        root="module __main__",
        allocation_site="train.py:3",
    )
    return Report(
        nodes=nodes,
        cycles=(cycle,),
        heavy_objects=(heavy,),
        total_bytes=4096,
        bytes_by_device={"cpu": 4096},
        alive=(alive,),
        notes=("a note",),
    )


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_json_matches_the_shipped_schema(scenario: str) -> None:
    """Real reports validate against report.schema.json."""
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads(find_leaks(SCENARIOS[scenario]).render("json"))
    jsonschema.validate(document, _schema())


def test_schema_rejects_a_wrong_report() -> None:
    """The schema is strict: an unknown field or a wrong type fails validation."""
    jsonschema = pytest.importorskip("jsonschema")
    data = _rich_report().to_dict()
    jsonschema.validate(data, _schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "extra": 1}, _schema())
    data["nodes"][0]["size"] = "big"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, _schema())


def test_schema_lists_every_report_field() -> None:
    """Each dataclass field of Report and its parts is in the schema (so it is kept in step),
    and each key that to_dict derives (the headline's cycle count)."""
    from dataclasses import fields

    schema = _schema()
    derived = {"reported_cycle_count"}
    assert {f.name for f in fields(Report)} | derived == set(schema["properties"])
    assert derived <= set(Report().to_dict())
    for cls in (RunInfo, Node, Edge, HeavyObject, HolderPath, Cut, CycleReport, AliveObject):
        assert {f.name for f in fields(cls)} == set(schema["$defs"][cls.__name__]["properties"])


def test_json_round_trips_and_is_deterministic() -> None:
    """from_dict(json) gives the same report back, and rendering twice gives the same text."""
    report = _rich_report()
    document = report.render("json")
    assert Report.from_dict(json.loads(document)) == report
    assert document == report.render("json")
    assert list(json.loads(document)) == sorted(json.loads(document))


# ---- every renderer ----


@pytest.mark.parametrize("renderer", list(RENDERERS.values()), ids=list(RENDERERS))
def test_empty_report_does_not_crash(renderer: Any) -> None:
    """Every registered renderer renders an empty Report() to a non-empty document."""
    if renderer.name in ("svg", "png") and not HAVE_DOT:
        pytest.skip("Graphviz dot is not installed")
    document = render_bytes(renderer(), Report())
    assert document


def test_renderers_found_by_name_and_suffix() -> None:
    """Names and output suffixes pick the renderer; an unknown suffix is a usage error."""
    for name in ("text", "json", "dot", "svg", "png", "html"):
        assert get_renderer(name).name == name
    pairs = {
        "a.json": "json",
        "a.dot": "dot",
        "a.gv": "dot",
        "a.svg": "svg",
        "a.PNG": "png",
        "a.html": "html",
        "a.htm": "html",
        "a.txt": "text",
    }
    assert {p: renderer_for_path(p).name for p in pairs} == pairs
    assert get_renderer("whyalive.render.dot:DotRenderer") is DotRenderer


# ---- DOT ----


def test_quote_escapes_everything_dot_would_read() -> None:
    """Quotes, backslashes, line breaks and control characters cannot end or bend a DOT ID."""
    assert quote('a"b') == '"a\\"b"'
    assert quote("a\\b") == '"a\\\\b"'
    assert quote("a\nb\r\nc") == '"a\\nb\\nc"'
    assert quote("a\x00b\x1b") == '"a b "'


def test_dot_marks_cut_sizes_heavy_and_shows_alive() -> None:
    """The cut edge is red and dashed, heavy boxes grow with their part of the bytes, alive
    paths are drawn."""
    source = _rich_report().render("dot")
    cut_line = next(line for line in source.splitlines() if '"' + ".registry" + '"' in line)
    assert 'color="#dc2626"' in cut_line
    assert "style=dashed" in cut_line
    small, big = heavy_size(1.0), heavy_size(1.35)
    assert all(b > s for b, s in zip(big, small, strict=True))  # width, height, font
    width, height, font = heavy_size(1.0)  # the only heavy box: all the bytes, border 4.5
    assert f"penwidth=4.5, width={width}, height={height}, fontsize={font}" in source
    assert "cluster_alive_1" in source
    assert '"global CACHE"' in source


def test_dot_never_shows_the_debugging_apparatus() -> None:
    """The check's own objects (gc.garbage, the watch, check_leaks) never appear in the graph."""
    source = find_leaks(recursive_closure).render("dot")
    for word in ("gc.garbage", "GarbageWatch", "check_leaks", "find_leaks", "whyalive"):
        assert word not in source.replace("digraph whyalive", "")


@needs_dot
def test_dot_output_is_valid_graphviz_for_hostile_strings() -> None:
    """Graphviz parses the DOT of a report full of quotes and markup, and draws SVG from it."""
    svg = _rich_report().render("svg")
    assert "<svg" in svg
    assert "&lt;/script&gt;" in svg
    assert "</script>" not in svg


@needs_dot
def test_png_is_binary() -> None:
    """PNG comes as bytes from render_bytes; render() explains it has no text form."""
    data = render_bytes(get_renderer("png")(), _rich_report())
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(Exception, match="binary"):
        _rich_report().render("png")


def test_missing_graphviz_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without `dot` on PATH: one line naming dot and the html/dot ways out; CLI exits 3."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingToolError, match="`dot`") as caught:
        _rich_report().render("svg")
    assert "\n" not in str(caught.value)
    assert "-f html" in str(caught.value)
    assert "-f dot" in str(caught.value)
    saved = _rich_report().save(tmp_path / "r.json")
    assert main(["render", str(saved), "-o", str(tmp_path / "out.svg")]) == EXIT_MISSING_TOOL
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert not (tmp_path / "out.svg").exists()
    # HTML still works, laid out by the embedded dagre.
    page = _rich_report().render("html")
    assert '"layout":null' in page


# ---- HTML ----


def _embedded(page: str) -> dict[str, Any]:
    match = re.search(
        r'<script type="application/json" id="whyalive-data">(.*?)</script>', page, re.S
    )
    assert match is not None
    return json.loads(match.group(1))  # type: ignore[no-any-return]


def test_html_embeds_the_report_data_safely() -> None:
    """The page carries report.to_dict() as JSON that no string can close or break."""
    report = _rich_report()
    page = report.render("html", layout="dagre")
    assert page.startswith("<!DOCTYPE html>")
    assert _embedded(page)["report"] == report.to_dict()
    assert page.count("</script>") == 3
    assert "<b>" not in page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1)
    assert "unsafe-inline" not in csp.group(1)
    assert csp.group(1).count("'sha256-") == 3
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, "only the SVG namespace name, never a fetch"


@needs_dot
def test_html_uses_graphviz_coordinates_when_installed() -> None:
    """With dot installed, each drawing carries Graphviz positions for every box and arrow
    but the one closing the loop, which the viewer draws beside it."""
    report = find_leaks(recursive_closure)
    views = _embedded(report.render("html"))["views"]
    for drawing in (views[0]["crop"], views[0]["compact"]):
        layout = drawing["layout"]
        assert layout is not None
        assert {n["key"] for n in drawing["nodes"]} == set(layout["nodes"])
        assert len(layout["edges"]) == len(drawing["edges"])
        pairs = zip(drawing["edges"], layout["edges"], strict=True)
        placed = [e["closing"] for e, at in pairs if at is None]
        assert placed == [True]


@pytest.mark.parametrize("layout", ["dagre", pytest.param("graphviz", marks=needs_dot)])
def test_html_for_a_50_node_cycle_is_small(layout: str) -> None:
    """A 50-node cycle's page, layout engine included, is at most 2 MiB."""
    report = find_leaks(ring)
    assert len(report.cycles[0].members) == 50
    renderer = HtmlRenderer(layout=layout)  # type: ignore[arg-type]
    page = renderer.render(report)
    assert len(page.encode("utf-8")) <= 2 * 1024 * 1024


# ---- CLI and API ----


@pytest.mark.parametrize(
    ("suffix", "marker"),
    [
        (".html", "<!DOCTYPE html>"),
        (".dot", "digraph whyalive"),
        (".json", '"schema_version"'),
        pytest.param(".svg", "<svg", marks=needs_dot),
        pytest.param(".png", "PNG", marks=needs_dot),
    ],
)
def test_cli_render_writes_by_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str, marker: str
) -> None:
    """`whyalive render REPORT.json -o out.<suffix>` writes that format and says so."""
    saved = _rich_report().save(tmp_path / "r.json")
    out = tmp_path / f"out{suffix}"
    assert main(["render", str(saved), "-o", str(out)]) == 0
    assert marker.encode() in out.read_bytes()
    assert capsys.readouterr().out == f"Wrote {out}\n"


def test_bare_whyalive_prints_usage_with_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """`whyalive` alone lists what it can do (exit 2), not one line about a missing argument."""
    assert main([]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage: whyalive")
    for command in ("demo", "render", "lint", "run"):
        assert re.search(rf"^    {command} +\w", err, re.M), err


def test_cli_render_to_an_unwritable_place_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that cannot be written is a usage error in one line, not a traceback."""
    saved = _rich_report().save(tmp_path / "r.json")
    assert main(["render", str(saved), "-o", str(tmp_path / "no" / "such" / "x.dot")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_cli_render_to_stdout_with_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o -` and `--format dot` write to stdout; an unknown suffix exits 2."""
    saved = _rich_report().save(tmp_path / "r.json")
    assert main(["render", str(saved), "--format", "dot", "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith("digraph whyalive {")
    assert main(["render", str(saved), "-o", str(tmp_path / "out.xyz")]) == EXIT_USAGE


def test_check_leaks_report_to_writes_html_and_names_it(tmp_path: Path) -> None:
    """check_leaks(report_to="leak.html") writes the page and the LeakError names the file."""
    target = tmp_path / "reports" / "leak.html"
    with pytest.raises(LeakError) as caught, check_leaks(report_to=target):
        recursive_closure()
    assert str(target) in str(caught.value)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert _embedded(target.read_text(encoding="utf-8"))["report"]["cycles"]


@needs_dot
def test_cli_png_to_stdout_is_raw_bytes(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """`--format png -o -` writes the PNG bytes themselves to stdout."""
    saved = _rich_report().save(tmp_path / "r.json")
    assert main(["render", str(saved), "--format", "png", "-o", "-"]) == 0
    assert capsysbinary.readouterr().out.startswith(b"\x89PNG\r\n\x1a\n")


# the answer first ------------------------------------------------------------------------


def test_demo_puts_cut_and_fix_in_its_first_eight_lines_and_fits_in_forty(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`whyalive demo` at 100 columns leads with the cut and the fix and fits in 40 lines."""
    assert main(["demo"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 40, "\n".join(lines)
    head = lines[:8]
    assert any(line.lstrip().startswith("Cut: ") for line in head), head
    assert any(line.lstrip().startswith("Fix: ") for line in head), head
    assert sum("Note: whyalive sees what Python's cyclic GC sees" in line for line in lines) == 1


# A line allowed past the width: one hop token alone (`--name-->`, never broken), a node's
# label alone (a path's start, or the node under a hop that did not fit beside it), or one
# backtick span (code the user pastes) with its punctuation.
_HOP = re.compile(r"\s*--.*-->")
_CODE = re.compile(r"\s*\W*`[^`]*`\W*")


def _over_width(text: str, width: int) -> list[str]:
    """Lines of ``text`` longer than ``width`` that are neither code nor one part of a path."""
    lines = text.splitlines()
    over = []
    for index, line in enumerate(lines):
        if len(line) <= width or _HOP.fullmatch(line) or _CODE.fullmatch(line):
            continue
        following = lines[index + 1].lstrip() if index + 1 < len(lines) else ""
        before = lines[index - 1] if index else ""
        path_start = following.startswith("--")  # the node its first hop leaves from
        under_a_hop = bool(_HOP.fullmatch(before)) and "-->" not in line
        if not (path_start or under_a_hop):
            over.append(line)
    return over


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_demo_fits_the_terminal_but_for_code_and_paths(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """`whyalive demo` in a terminal of N columns: no line over N except code and paths;
    a hop that does not fit beside its node goes on its own line, the node under it."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["demo"]) == 1
    out = capsys.readouterr().out
    assert _over_width(out, columns) == [], out
    assert [line for line in out.splitlines() if len(line) > columns] == []
    assert max(len(line) for line in out.splitlines()) > columns - 20, "it uses the width"
    if columns == 80:
        assert (
            "      --__closure__[0] extract_tensors_with_grads-->\n"
            "          cell extract_tensors_with_grads\n"
        ) in out


# `whyalive demo` where torch cannot be imported: the NumPy backend, as a user without torch
# sees it.
_WITHOUT_TORCH = """
import sys


class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is hidden from this run")
        return None


sys.meta_path.insert(0, NoTorch())
from whyalive.cli import main

sys.exit(main(["demo"]))
"""


def test_numpy_demo_fits_80_columns_but_for_code_and_paths() -> None:
    """The NumPy demo at 80 columns: no line over 80 except code and paths."""
    import subprocess
    import sys

    pytest.importorskip("numpy")
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TORCH],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "numpy backend" in done.stdout
    assert _over_width(done.stdout, 80) == [], done.stdout
    assert [line for line in done.stdout.splitlines() if len(line) > 80] == [], done.stdout


def test_text_width_is_a_render_option() -> None:
    """`render("text", width=60)` wraps every sentence to 60 columns, whatever the terminal."""
    report = scenario_report("recursive_closure")
    text = report.render("text", width=60, detail="full")
    assert _over_width(text, 60) == [], text
    assert "  Fix: At leaks.py:<line>, add\n    `del extract_tensors_with_grads` after" in text
    with pytest.raises(ValueError, match="width must be a positive int"):
        report.render("text", width=0)


class _Hub:
    """Keeps one of each kind of container on a cycle through it."""


class _Spoke:
    """A member kind of its own, so the cycle's kinds make a long list."""


def _many_kinds() -> None:
    hub = _Hub()
    hub.payload = heavy(4096)  # type: ignore[attr-defined]
    spoke = _Spoke()
    spoke.hub = hub  # type: ignore[attr-defined]
    hub.members = [  # type: ignore[attr-defined]
        {"hub": hub},
        [hub],
        (hub, spoke),
        {"spoke": spoke},
        [[hub]],
    ]


def test_the_rest_of_a_big_loop_is_wrapped() -> None:
    """The line that says what else the cycle holds ("... in all: ...") wraps like a
    sentence: a cycle of many kinds says them all within the width."""
    report = find_leaks(_many_kinds)
    text = report.render("text", width=60, detail="full")
    assert "in all:" in text, text
    assert _over_width(text, 60) == [], text


def test_holds_fold_siblings_of_one_list() -> None:
    """Items of one list are one holds line, `xs[0..1]`, with their count and bytes."""
    report = scenario_report("recursive_closure")
    [cycle] = report.cycles
    [holding] = cycle.holds
    assert holding.where == "stage_output_tensors[0..1]"
    assert (holding.count, holding.nbytes) == (2, 2 * 16 * 256 * 4)
    assert "    stage_output_tensors[0..1]: 2 arrays float32[16, 256], 32.0 KiB" in (
        report.render("text").splitlines()
    )


def test_full_detail_keeps_every_path_and_the_blind_spot_note() -> None:
    """`detail="full"` lists every holder path, the cut's references and the note."""
    report = scenario_report("recursive_closure")
    short = report.render("text", width=1000)
    full = report.render("text", detail="full", width=1000)
    assert "Not visible to the cyclic GC" in full
    assert "Not visible to the cyclic GC" not in short
    assert full.count("--[") == len(report.cycles[0].holder_paths) == 2
    assert short.count("--[") == 1
    assert "--cell_contents-->" in full.split("Fix:")[0]
    with pytest.raises(ValueError, match="detail"):
        report.render("text", detail="everything")


def test_every_cycle_starts_with_pattern_size_place_then_cut_and_fix() -> None:
    """Each cycle's block is: pattern, size and place; then `Cut:` and `Fix:` next."""
    for scenario in ("recursive_closure", "bound_method"):
        text = scenario_report(scenario).render("text", width=1000)
        block = text.split("\n\n")[1].splitlines()
        assert re.match(r"Cycle 1: .+ \[[a-z-]+\]: \d+ objects, [\d.]+ KiB, at \S+:", block[0])
        assert block[1].startswith("  Cut: ")
        assert block[2].startswith("  Fix: ")


def test_a_reference_with_no_name_reads_as_unnamed_not_as_an_empty_label() -> None:
    """A reference whyalive cannot name prints as `(unnamed reference)`, never `---> dict-->`."""
    from whyalive.render.text import edge_words

    report = Report(nodes=(Node(0, "dict", "dict of 1"),))
    assert edge_words(report, Edge(0, 0, "unknown", "-> dict")) == (
        "--(unnamed reference)--> dict of 1"
    )
    assert edge_words(report, Edge(0, 0, "key", "['k']")) == "--['k']--> dict of 1"


# the picture adds up -------------------------------------------------------------------


def _drawings(report: Report) -> list[tuple[str, dict[str, Any]]]:
    """Every drawing the page carries: (view key and kind, the drawing)."""
    views = _embedded(report.render("html", layout="dagre"))["views"]
    return [
        (f"{view['key']} {kind}", view[kind])
        for view in views
        for kind in ("crop", "compact", "full")
        if view[kind] is not None
    ]


@pytest.mark.parametrize(
    "scenario", ["pipeline", "ring-30", "shared", "recursive_closure", "bound_method"]
)
def test_every_drawing_adds_up_to_what_the_headline_counts(scenario: str) -> None:
    """The heavy boxes (what autograd keeps among them) and "more" boxes of every drawing add
    up to the cycle's bytes, and a one-cycle report's to the headline's bytes."""
    from scenarios import shared_parameters

    made = {
        "pipeline": lambda: find_leaks(pipeline_step),
        "ring-30": lambda: find_leaks(ring, 30),
        "shared": lambda: find_leaks(shared_parameters),
    }
    report = made[scenario]() if scenario in made else scenario_report(scenario)
    for (key, drawing), cycle in zip(
        _drawings(report), [c for c in report.cycles for _ in range(3)], strict=False
    ):
        number = int(key.split()[0].split("-")[1])
        drawn = sum(node["bytes"] for node in drawing["nodes"])
        assert drawn == report.cycles[number - 1].bytes_held, (key, drawn)
        del cycle
    if len(report.cycles) == 1 and report.cycles[0].occurrences == 1:
        assert report.cycles[0].bytes_held == report.total_bytes


def test_torch_autograd_bytes_are_drawn_in_their_own_box() -> None:
    """The demo on torch: what only the outputs' autograd graph (C++) keeps is a heavy box of
    its own that says so, the boxes add up to the headline's 672 KiB, and that box, which
    counts 544 KiB of them, is drawn the most prominent in HTML and DOT alike."""
    pytest.importorskip("torch")
    from whyalive.demo import run_demo

    _, report = run_demo()
    [cycle] = report.cycles
    autograd = sum(h.autograd_bytes for h in cycle.holds)
    assert autograd == report.total_bytes - 8 * 16 * 256 * 4  # all but the 8 tensors' own
    for key, drawing in _drawings(report):
        heavy = [node for node in drawing["nodes"] if node["kind"] == "heavy"]
        assert len(heavy) == 3, key
        assert sum(node["bytes"] for node in drawing["nodes"]) == report.total_bytes, key
        [saved] = [node for node in heavy if node["key"].startswith("autograd-")]
        assert saved["bytes"] == autograd
        assert " ".join(saved["lines"]).startswith(
            "4 tensors only their autograd graph (C++) keeps: saved for backward, or leaves"
        ), saved["lines"]
        others = [node for node in heavy if node is not saved]
        assert all(saved["grow"] > node["grow"] for node in others), key
        assert all(saved["share"] > node["share"] for node in others), key
        assert all(saved["w"] * saved["h"] > node["w"] * node["h"] for node in others), key
    boxes = {
        name: dict(re.findall(r"(penwidth|fontsize|width)=([\d.]+)", attrs))
        for name, attrs in re.findall(r"^\s+(cycle_1_\w+) \[(.*)\];$", report.render("dot"), re.M)
        if "penwidth" in attrs and "->" not in name
    }
    assert len(boxes) == 3, boxes
    saved_box = boxes.pop("cycle_1_autograd_0")
    for other in boxes.values():
        for attribute in ("penwidth", "fontsize", "width"):
            assert float(saved_box[attribute]) > float(other[attribute]), (attribute, boxes)


def test_static_pictures_wrap_labels_and_never_cut_them() -> None:
    """A PNG or SVG cannot be hovered to read more: box and arrow labels are wrapped, whole,
    without an ellipsis, unless a name is longer than any box could hold."""
    from whyalive.render.picture import EDGE_CHARS, LINE_CHARS, arrow_label, label_lines, wrapped

    description = "float32[16, 256] cpu (some with what autograd keeps for them)"
    lines = label_lines(description)
    assert len(lines) > 1
    assert " ".join(lines) == description
    assert all(len(line) <= LINE_CHARS + 5 for line in lines)
    name = "['a dictionary key that is rather long']"
    arrow = arrow_label(name).split("\n")
    assert len(arrow) > 1
    assert " ".join(arrow) == name
    assert all(len(line) <= EDGE_CHARS + 5 for line in arrow)
    assert wrapped("x" * 1000, LINE_CHARS, 6)[-1].endswith("\u2026")  # no one writes these
    report = find_leaks(pipeline_step)
    source = report.render("dot")
    assert "\u2026" not in "".join(re.findall(r'label="([^"]*)"', source))


@needs_dot
def test_svg_scales_and_carries_the_headline_totals_legend_and_fix() -> None:
    """The SVG has a viewBox and no fixed size, and says the headline, what the boxes add up
    to, the legend and each cycle's fix, as a picture pasted into an issue must."""
    report = scenario_report("recursive_closure")
    svg = report.render("svg")
    root = re.search(r"<svg\b[^>]*>", svg)
    assert root is not None
    assert "viewBox=" in root.group(0)
    assert 'width="100%"' in root.group(0)
    assert "height=" not in root.group(0)
    texts = html.unescape(" ".join(re.findall(r">([^<>]+)</text>", svg)))
    for words in (
        "1 reference cycle keeps 2 arrays alive",
        "The heavy boxes add up to 32.0 KiB",
        "suggested cut",
        "heavy object",
        "Fix: At leaks.py:<line>, add del extract_tensors_with_grads after its last use",
    ):
        assert words in texts, words


def test_wrap_breaks_prose_but_never_code_sizes_or_cells() -> None:
    """Prose breaks between words; `code`, `32.0 KiB` and `In [2], line 3` stay whole, an
    unmatched backtick loses nothing, and only an unbreakable span runs past the width."""
    from whyalive.render.wrap import wrap

    text = (
        "Fix: store `weakref.WeakMethod(self.on_step)` instead, 32.0 KiB held, made at "
        "In [2], line 3, `a_very_long_identifier_that_cannot_break_anywhere_at_all()` done"
    )
    lines = wrap(text, 30, indent="  ")
    assert lines[0].startswith("  Fix: store")
    assert all(line.startswith("    ") for line in lines[1:])
    joined = " ".join(line.strip() for line in lines)
    assert joined == text
    for whole in ("`weakref.WeakMethod(self.on_step)`", "32.0 KiB", "In [2], line 3,"):
        assert any(whole in line for line in lines), whole
    over = [line.strip() for line in lines if len(line) > 30]
    assert over == [
        "`weakref.WeakMethod(self.on_step)`",
        "`a_very_long_identifier_that_cannot_break_anywhere_at_all()`",
    ], lines
    odd = "an `unmatched backtick and more words after it"
    assert " ".join(line.strip() for line in wrap(odd, 12)) == odd
