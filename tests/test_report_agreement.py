"""Text, HTML and JSON say the same counts and bytes, on every scenario of tests/scenarios/.

Each figure a reader sees (the headline's cycles, heavy objects and bytes; each cycle's
member count and bytes; each holding's count, shape and bytes; the counts of objects by
type in its sentences) is read back from the text and from the HTML page and compared
with the JSON report it was rendered from. One computation, three renderings.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from scenarios.catalog import Scenario, params
from test_fix_proof import report_of
from whyalive.report import Report
from whyalive.words import (
    AUTOGRAD_NODE_KIND,
    holding_count,
    holding_words,
    plural,
    report_headline,
    size_to_words,
)

pytest.importorskip("numpy")

_SIZE = re.compile(r"\d+(?:\.\d)? (?:B|KiB|MiB|GiB|TiB)\b")
_TYPED_COUNT = re.compile(r"([\d,]+) `(\w+)` objects?")
_DOUBLED = re.compile(rf"{_SIZE.pattern},? {_SIZE.pattern}")
# A second size after a first, unsaid what it is ("769.0 KiB (512.0 KiB)").
_UNSAID = re.compile(rf"{_SIZE.pattern} \({_SIZE.pattern}\)")


def _report(scenario: Scenario) -> Report:
    for module in scenario.needs:
        pytest.importorskip(module)
    return report_of(scenario)


def _page_data(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="whyalive-data">(.*?)</script>', page)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def _cycle_blocks(text: str) -> list[str]:
    """The text of each ``Cycle N:`` (and ``Uncollectable loop N:``) block."""
    return re.split(r"\n(?=Cycle \d+: |Uncollectable loop \d+: )", text)[1:]


@pytest.mark.parametrize("scenario", params())
def test_text_html_and_json_agree_on_every_count_and_size(scenario: Scenario) -> None:
    report = _report(scenario)
    data = json.loads(report.render("json"))
    text = report.render("text", detail="full", width=10_000)
    page = report.render("html", layout="dagre")
    embedded = _page_data(page)

    # The page carries the JSON report itself, and the text in its <noscript>.
    assert embedded["report"] == data
    assert html.escape(report.render("text")) in page

    # Headline: the same sentence everywhere, with the JSON's totals in it.
    headline = report_headline(report)
    assert embedded["headline"] == headline
    assert headline in text.splitlines()[0]
    # The totals cover the reference cycles and the loops through C++ alike.
    loops = [*data["cycles"], *data["uncollectable"]]
    total = data["total_bytes"]
    assert total == sum(data["bytes_by_device"].values())
    assert total == sum(c["total_bytes"] for c in loops)  # no storage shared between them here
    assert size_to_words(total) in headline
    heavy = data["heavy_count"]
    assert heavy == sum(c["heavy_count"] for c in loops)
    assert re.search(rf"\b{heavy:,} \S+", headline.split(" keep")[1]), headline

    blocks = _cycle_blocks(text)
    page_words = [*embedded["words"]["cycles"], *embedded["words"].get("uncollectable", [])]
    assert len(blocks) == len(loops) == len(page_words)
    for block, cycle, words in zip(blocks, loops, page_words, strict=True):
        header = block.splitlines()[0]
        # Members and bytes in the header are the JSON's.
        members = cycle["member_count"] or len(cycle["members"])
        assert plural(members, "object") in header, header
        assert size_to_words(cycle["total_bytes"]) in header
        assert words["bytes"] == size_to_words(cycle["total_bytes"] or cycle["bytes_held"])
        assert sum(cycle["member_types"].values()) in (members, 0) or cycle["structure"]
        # Every holding line is the JSON holding, and the page shows the same words.
        every = (*report.cycles, *report.uncollectable)
        report_cycle = next(c for c in every if c.signature == cycle["signature"])
        for holding, said in zip(report_cycle.holds, words["holds"], strict=True):
            line = holding_words(holding)
            assert f"    {line}" in block
            assert said == {"where": holding.where, "what": line.split(": ", 1)[1]}
        if len(cycle["holds"]) == len(cycle["heavy"]):
            # The count is of what is held: the tensors autograd holds (C++) are in it, the
            # autograd nodes that hold them are not.
            held = sum(
                h["autograd_count"] + (h["count"] if h["kind"] != AUTOGRAD_NODE_KIND else 0)
                for h in cycle["holds"]
            )
            assert held == cycle["heavy_count"] == sum(map(holding_count, report_cycle.holds))
        # "N `Type` objects" in a sentence never says more than the cycle has of that type.
        for count, name in _TYPED_COUNT.findall(block):
            have = cycle["member_types"].get(f"{name} object")
            if have is not None:
                assert int(count.replace(",", "")) <= have, (count, name, block)
        # A size is never said twice for one thing ("1.0 MiB, 1.0 MiB"); brackets balance.
        for line in block.splitlines():
            assert not _DOUBLED.search(line), line
            assert not _UNSAID.search(line), line
            assert line.count("(") == line.count(")"), line
        assert "1 bytes object" not in block
