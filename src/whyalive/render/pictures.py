"""A report as pictures: each cycle along its loop, each still-alive object under its root.

A cycle is drawn top to bottom along its loop, with the reference that closes it (often
the suggested cut) drawn back up beside it. Under the loop hang the places that hold
heavy objects, one box per place (``4 tensors``, their bytes), and under those the
tensors that only their autograd graph (C++) keeps: so the boxes add up to the cycle's
bytes. What does not answer the question is folded into a box that says how much it
stands for: the middle of a long loop, the other members, the smaller places.
``crop=False`` draws what the report recorded of all of it; ``compact`` draws each holder
path as one arrow, for a narrow pane.
"""

from __future__ import annotations

import re
from itertools import pairwise

from whyalive.render.picture import (
    Picture,
    PictureBuilder,
    PictureNode,
    arrow_label,
    edge_text,
    label_lines,
)
from whyalive.report import CycleReport, Edge, Holding, Report
from whyalive.words import (
    HELD_NATIVELY_TITLE,
    UNCOLLECTABLE_TITLE,
    heavy_noun,
    holding_count,
    loop_gap_words,
    plural,
    size_to_words,
)

# A loop longer than this shows its ends and the places it holds from; the rest folds.
LOOP_KEPT = 6
# Places drawn when cropped (compact: for a narrow pane, where they stand in one column);
# the rest are one box that says what they hold.
HOLDINGS_DRAWN = 4
COMPACT_HOLDINGS_DRAWN = 2
# The items of a holding, as whyalive.words.index_range_words writes them: [0..3], [0, 2, 5].
_INDICES = re.compile(r"\[\d+(?:\.\.\d+|(?:, \d+)*(?:, \.\.\.)?)\]")


def _loop_nodes(cycle: CycleReport) -> list[int]:
    """The loop's objects in order, first one first; empty for a report without a loop."""
    if not cycle.loop:
        return []
    return [cycle.loop[0].source, *(e.target for e in cycle.loop[:-1])]


def _holding_path(cycle: CycleReport, holding: Holding) -> tuple[int, ...] | None:
    """The node ids from a cycle member to the holding's first heavy object, if recorded."""
    if not holding.heavy:
        return None
    for path in cycle.holder_paths:
        if path.heavy_node == holding.heavy[0]:
            return path.nodes
    return None


def _into_holding(holding: Holding, last: Edge) -> str:
    """``[0..3]`` for items of one list, ``.payload (each)`` for one per holder."""
    name = edge_text(last)
    if holding.count == 1:
        return name
    indices = _INDICES.findall(holding.where)
    return arrow_label(indices[-1] if indices else f"{name} (each)")


def _draw_holding(
    picture: PictureBuilder,
    cycle: CycleReport,
    number: int,
    holding: Holding,
    compact: bool,
    below: int = 0,
) -> tuple[str, str] | None:
    """A holder path down to one box for the whole holding, and one for its autograd graph;
    returns the keys of the top and bottom boxes, or None when no path was recorded.
    ``compact``: one arrow from the cycle, the place (``stage_output_tensors[0..3]``) in the
    box, ``below`` ranks further down (compact places stack, they do not stand side by side)."""
    path = _holding_path(cycle, holding)
    if path is None or len(path) < 2:
        return None
    members = set(cycle.members)
    by_pair = {(e.source, e.target): e for hp in cycle.holder_paths for e in hp.edges}
    drawn = path[:1] if compact else path[:-1]
    keys = [picture.node(n, "member" if n in members else "path") for n in drawn]
    for (source, target), pair in zip(pairwise(keys), pairwise(path[:-1]), strict=False):
        minlen = picture.below_loop(source) if source == keys[0] else 1
        picture.edge(source, target, edge_text(by_pair[pair]), minlen=minlen)
    own = holding.nbytes - holding.autograd_bytes
    heavy = picture.report.node(holding.heavy[0])
    what = heavy_noun(holding.kind, holding.count) if holding.count > 1 else heavy.label
    lines = label_lines(what) + (
        label_lines(holding.description) if holding.count > 1 and holding.description else ()
    )
    if compact:  # the place goes in the box, so the arrow needs no wide label
        lines = (*label_lines(holding.where.replace("`", "")), *lines)
    box = picture.add(
        PictureNode(
            f"holding-{number}",
            "heavy",
            (*lines, size_to_words(own)),
            holding.heavy[0],
            own,
        )
    )
    into = "" if compact else _into_holding(holding, by_pair[(path[-2], path[-1])])
    picture.edge(keys[-1], box, into, minlen=picture.below_loop(keys[-1]) + below)
    if holding.autograd_bytes:  # a heavy box like any other: often the biggest of all
        kept = (
            f"{plural(holding.autograd_count, 'tensor')} only their autograd graph (C++) "
            "keeps: saved for backward, or leaves"
        )
        saved = picture.add(
            PictureNode(
                f"autograd-{number}",
                "heavy",
                (*label_lines(kept), size_to_words(holding.autograd_bytes)),
                None,
                holding.autograd_bytes,
            )
        )
        picture.edge(box, saved, "grad_fn (C++)")
        return box, saved
    return box, box


def _fold(key: str, count: int, words: str) -> PictureNode:
    return PictureNode(key, "fold", (f"... {count:,} more {words}", "click to show"))


def _draw_loop(picture: PictureBuilder, cycle: CycleReport, keep: set[int], crop: bool) -> int:
    """The loop top to bottom, its middle folded when long; returns the objects folded."""
    order = _loop_nodes(cycle)
    cut = {(e.source, e.target, e.name) for e in (cycle.cut.edges if cycle.cut else ())}
    if not order:  # a report from before loops: the members and their references
        for edge in cycle.edges:
            picture.edge(
                picture.node(edge.source, "member"),
                picture.node(edge.target, "member"),
                edge_text(edge, cut=(edge.source, edge.target, edge.name) in cut),
                cut=(edge.source, edge.target, edge.name) in cut,
            )
        for member in cycle.members:
            picture.node(member, "member")
        return 0
    shown = set(order)
    if crop and len(order) > LOOP_KEPT:
        shown = {*order[:2], *order[-2:]} | (keep & set(order))
    folded = 0
    previous: str | None = None
    run: list[int] = []
    for index, edge in enumerate(cycle.loop):
        if cycle.loop_hidden and index == cycle.loop_hidden_after and previous is not None:
            gap = picture.add(
                PictureNode(
                    f"gap-{index}",
                    "fold",
                    (f"... {loop_gap_words(cycle.loop_hidden)}", "not recorded"),
                )
            )
            picture.edge(previous, gap, "")
            previous = gap
            picture.loop.append(gap)
        closing = index == len(cycle.loop) - 1
        is_cut = (edge.source, edge.target, edge.name) in cut
        if previous is None:
            previous = picture.node(edge.source, "member")
            picture.loop.append(previous)
        if edge.target in shown or closing:
            if run:
                fold = picture.add(_fold(f"fold-{index}", len(run), "objects in the loop"))
                folded += len(run)
                picture.edge(previous, fold, "")
                previous, run = fold, []
                picture.loop.append(fold)
            target = picture.node(edge.target, "member")
            picture.edge(previous, target, edge_text(edge, cut=is_cut), cut=is_cut, closing=closing)
            previous = target
            if not closing:
                picture.loop.append(target)
        else:
            run.append(edge.target)
    return folded


def cycle_picture(
    report: Report,
    number: int,
    cycle: CycleReport,
    *,
    crop: bool,
    compact: bool = False,
    uncollectable: bool = False,
) -> Picture:
    """One cycle: its loop, the places that hold heavy objects, and what is folded.

    ``compact`` (with ``crop``) draws each holder path as one arrow, for a narrow pane;
    ``uncollectable``: one of the report's loops through the autograd graph.
    """
    picture = PictureBuilder(report)
    holdings = sorted(cycle.holds, key=lambda h: -h.nbytes)
    most = COMPACT_HOLDINGS_DRAWN if compact else HOLDINGS_DRAWN
    drawn_holdings = holdings[:most] if crop else holdings
    starts = {path[0] for h in drawn_holdings if (path := _holding_path(cycle, h))}
    folded = _draw_loop(picture, cycle, starts, crop)
    drawn = []
    below = 0
    column: str | None = None  # compact: the bottom box of the places stacked so far
    for number_drawn, holding in enumerate(drawn_holdings):
        boxes = _draw_holding(picture, cycle, number_drawn, holding, compact, below)
        if boxes is not None:
            drawn.append(holding)
            if compact:
                below += 2 if holding.autograd_bytes else 1
                if column is not None:  # one under the other, not a staircase
                    picture.edge(column, boxes[0], "", hidden=True)
                column = boxes[1]
    hidden_places = len(holdings) - len(drawn)
    # Those in no place listed, and what the places not drawn stand for (autograd's too).
    unplaced = len(cycle.heavy) + cycle.heavy_unlisted - sum(h.count for h in holdings)
    undrawn = [h for h in holdings if not any(h is d for d in drawn)]
    hidden_heavy = max(unplaced, 0) + sum(map(holding_count, undrawn))
    rest = cycle.bytes_held - picture.drawn_bytes()
    first = f"n{_loop_nodes(cycle)[0]}" if cycle.loop else next(iter(picture.nodes), None)
    if (hidden_heavy > 0 or rest > 0) and first is not None:
        where = f" in {plural(hidden_places, 'more place')}" if hidden_places else ""
        more = picture.add(
            PictureNode(
                "more",
                "more",
                (
                    *label_lines(f"+ {plural(max(hidden_heavy, 0), 'more heavy object')}{where}"),
                    size_to_words(max(rest, 0)),
                ),
                None,
                max(rest, 0),
            )
        )
        picture.edge(first, more, "")
        if column is not None:
            picture.edge(column, more, "", hidden=True)
        if crop:
            folded += len(holdings) - len(drawn_holdings)
    folded += _draw_other_members(picture, cycle, first, folded, crop)
    caption = _cycle_caption(report, cycle, picture.drawn_bytes())
    if uncollectable:
        key, title = f"uncollectable-{number}", f"{UNCOLLECTABLE_TITLE} {number}: {cycle.title}"
    else:
        key, title = f"cycle-{number}", f"Cycle {number}: {cycle.title}"
    return picture.picture(key, title, cycle.bytes_held, caption, folded)


def _draw_other_members(
    picture: PictureBuilder, cycle: CycleReport, first: str | None, loop_folded: int, crop: bool
) -> int:
    """Members on no drawn path: one fold box (``crop``), else drawn, and a box for those the
    report did not record; returns how many the fold box stands for."""
    members = cycle.member_count or len(cycle.members)
    drawn = sum(1 for n in picture.nodes.values() if n.kind == "member")
    unseen = members - drawn - loop_folded - max(cycle.loop_hidden - 1, 0)
    if unseen <= 0 or first is None:
        return 0
    recorded = [m for m in cycle.members if f"n{m}" not in picture.nodes]
    if crop and recorded:
        picture.edge(first, picture.add(_fold("others", unseen, "objects in the cycle")), "")
        return len(recorded)
    for member in recorded:
        picture.node(member, "member")
    for edge in cycle.edges:
        if f"n{edge.source}" in picture.nodes and f"n{edge.target}" in picture.nodes:
            picture.edge(f"n{edge.source}", f"n{edge.target}", edge_text(edge))
    left = unseen - len(recorded)
    if left > 0:
        box = PictureNode(
            "others", "fold", (f"... {left:,} more objects in the cycle", "not recorded")
        )
        picture.edge(first, picture.add(box), "")
    return 0


def _cycle_caption(report: Report, cycle: CycleReport, drawn: int) -> str:
    """What the boxes add up to, and how that stands to the headline's bytes."""
    said = f"The heavy boxes add up to {size_to_words(drawn)}"
    if cycle.occurrences > 1:
        return (
            f"{said}: one of {cycle.occurrences} occurrences of this cycle; all of them hold "
            f"{size_to_words(cycle.total_bytes)}."
        )
    if len(report.cycles) > 1:
        return (
            f"{said}; the headline's {size_to_words(report.total_bytes)} is all "
            f"{len(report.cycles)} cycles, objects they share counted once."
        )
    return f"{said}, all that the headline counts."


def alive_picture(report: Report, number: int) -> Picture:
    """A still-alive object and the paths from a root that keep it."""
    alive = report.alive[number - 1]
    picture = PictureBuilder(report)
    for path in alive.paths:
        keys = [picture.node(n, "root" if i == 0 else "path") for i, n in enumerate(path.nodes)]
        for edge, source, target in zip(path.edges, keys, keys[1:], strict=False):
            picture.edge(source, target, edge_text(edge))
    key = f"n{alive.node_id}"
    heavy = report.node(alive.node_id)
    picture.nodes[key] = PictureNode(
        key,
        "heavy",
        (*label_lines(heavy.label), size_to_words(alive.nbytes)),
        alive.node_id,
        alive.nbytes,
    )
    caption = f"The heavy box is {size_to_words(alive.nbytes)}" + (
        f", of {size_to_words(sum(a.nbytes for a in report.alive))} still alive in all."
        if len(report.alive) > 1 or report.cycles
        else ", all that the headline counts."
    )
    title = f"Still alive {number}: {alive.description}"
    return picture.picture(f"alive-{number}", title, alive.nbytes, caption)


def held_picture(report: Report, number: int) -> Picture:
    """A survivor only an unnamed C/C++ owner holds: its box alone (no Python path)."""
    held = report.held_natively[number - 1]
    picture = PictureBuilder(report)
    key = f"n{held.node_id}"
    picture.nodes[key] = PictureNode(
        key,
        "heavy",
        (*label_lines(report.node(held.node_id).label), size_to_words(held.nbytes)),
        held.node_id,
        held.nbytes,
    )
    caption = f"The heavy box is {size_to_words(held.nbytes)}; no Python path reaches it."
    title = f"{HELD_NATIVELY_TITLE} {number}: {held.description}"
    return picture.picture(f"held-{number}", title, held.nbytes, caption)


def pictures(report: Report, *, crop: bool = True, compact: bool = False) -> tuple[Picture, ...]:
    """One picture per cycle, per uncollectable loop, per still-alive object, then per
    survivor an unnamed C/C++ owner holds."""
    return (
        *(
            cycle_picture(report, n, c, crop=crop, compact=compact)
            for n, c in enumerate(report.cycles, 1)
        ),
        *(
            cycle_picture(report, n, c, crop=crop, compact=compact, uncollectable=True)
            for n, c in enumerate(report.uncollectable, 1)
        ),
        *(alive_picture(report, n) for n in range(1, len(report.alive) + 1)),
        *(held_picture(report, n) for n in range(1, len(report.held_natively) + 1)),
    )
