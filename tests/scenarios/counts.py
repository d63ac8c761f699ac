"""What a report's text says it found, read back as numbers, to hold against its JSON and HTML."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from whyalive.report import Report
from whyalive.words import report_headline, size_to_words

_HEADLINE = re.compile(
    r"(?P<cycles>[\d,]+) reference cycles?(?: \((?P<signatures>[\d,]+) signatures?\))? "
    r"(?:keeps?|kept) (?P<heavy>[\d,]+) (?:tensors?|arrays?|heavy objects?|\w+ objects?) alive"
    r".*: (?P<bytes>[\d.]+ (?:B|KiB|MiB|GiB|TiB))"
)


@dataclass(frozen=True)
class Counts:
    """Cycles, signatures, heavy objects and bytes, as one output states them."""

    cycles: int
    signatures: int
    heavy: int
    size: str


def counts_said(report: Report) -> Counts:
    """The counts in the report's text, checked against its JSON and its HTML page.

    Raises AssertionError naming the output that disagrees.
    """
    text = " ".join(report.render("text", width=1000).splitlines()[0].split())
    found = _HEADLINE.search(text)
    assert found is not None, text
    said = Counts(
        int(found["cycles"].replace(",", "")),
        int((found["signatures"] or found["cycles"]).replace(",", "")),
        int(found["heavy"].replace(",", "")),
        found["bytes"],
    )
    data = json.loads(report.to_json())
    # The JSON carries the headline's count; cycle_count also counts the cycles that held
    # nothing heavy and those left out, so it can only be larger.
    assert data["cycle_count"] - data["light_cycle_count"] >= data["reported_cycle_count"]
    from_json = Counts(
        data["reported_cycle_count"],
        len(data["cycles"]),
        data["heavy_count"],
        size_to_words(data["total_bytes"]),
    )
    assert said == from_json, (said, from_json)
    assert sum(c["occurrences"] for c in data["cycles"]) == said.cycles
    page = report.render("html", layout="dagre")
    embedded = re.search(r'id="whyalive-data">(.*?)</script>', page, re.S)
    assert embedded is not None
    assert json.loads(embedded.group(1))["headline"] == report_headline(report)
    return said
