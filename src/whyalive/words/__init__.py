"""Every sentence, count and name a user reads: one package that all outputs take them from.

The text and HTML renderers, the DOT graph, the notebook lines, the distributed
summary, the monitor's log and the pytest/CLI lines all phrase through these
functions, so one finding reads the same everywhere. The report builder phrases
cycle summaries and cuts here too, from plain facts it reads off the objects.

* :mod:`~whyalive.words.basics`: sizes, counts, plurals, articles, code names.
* :mod:`~whyalive.words.headlines`: a report's, a cycle's and the ranks' headlines.
* :mod:`~whyalive.words.references`: labels, chains, cuts and what a cycle holds.
"""

from __future__ import annotations

from whyalive.words.basics import (
    BLIND_SPOTS,
    a_code,
    an,
    blind_spot_note,
    code,
    edge_label,
    heavy_brief,
    heavy_group_words,
    heavy_noun,
    index_range_words,
    joined,
    kind_count_words,
    members_words,
    plural,
    shorten,
    size_to_words,
    verb,
)
from whyalive.words.headlines import (
    cycles_headline,
    cycles_words,
    devices_words,
    heavy_count_words,
    holding_words,
    loop_gap_words,
    more_members_words,
    ranks_phrase,
    ranks_words,
    report_headline,
    summary_headline,
)
from whyalive.words.references import (
    MAX_CUT_PHRASES,
    MAX_HOLDER_PHRASES,
    Reference,
    chain_words,
    cut_words,
    cycle_summary,
    exit_words,
    holding_description,
    holding_place,
    holdings_words,
    holds_words,
    path_words,
    quoted_label,
    reference_words,
    says_holder,
    steps_words,
    through_words,
)

__all__ = [
    "BLIND_SPOTS",
    "MAX_CUT_PHRASES",
    "MAX_HOLDER_PHRASES",
    "Reference",
    "a_code",
    "an",
    "blind_spot_note",
    "chain_words",
    "code",
    "cut_words",
    "cycle_summary",
    "cycles_headline",
    "cycles_words",
    "devices_words",
    "edge_label",
    "exit_words",
    "heavy_brief",
    "heavy_count_words",
    "heavy_group_words",
    "heavy_noun",
    "holding_description",
    "holding_place",
    "holding_words",
    "holdings_words",
    "holds_words",
    "index_range_words",
    "joined",
    "kind_count_words",
    "loop_gap_words",
    "members_words",
    "more_members_words",
    "path_words",
    "plural",
    "quoted_label",
    "ranks_phrase",
    "ranks_words",
    "reference_words",
    "report_headline",
    "says_holder",
    "shorten",
    "size_to_words",
    "steps_words",
    "summary_headline",
    "through_words",
    "verb",
]
