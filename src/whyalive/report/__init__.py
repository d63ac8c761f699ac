"""The report: versioned plain data, the only thing that leaves the analysis.

Invariant 1 of docs/architecture.md ("nothing live leaves analysis") ends here: no live
object is referenced from here on. Every class round-trips through
``to_dict()`` / ``from_dict()`` and JSON; the JSON Schema is
``whyalive/schema/report.schema.json``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from whyalive.errors import ReportFormatError
from whyalive.report.displays import display

SCHEMA_VERSION = 1

_T = TypeVar("_T")


@dataclass(frozen=True)
class RunInfo:
    """Where and when the analysis ran."""

    whyalive: str = ""
    python: str = ""
    platform: str = ""
    torch: str | None = None
    numpy: str | None = None
    pid: int = 0
    rank: int | None = None
    world_size: int | None = None
    time: str = ""
    where: str | None = None
    gc_note: str | None = None
    graph_core: str | None = None
    """``"c"`` or ``"python"``: which graph core ran the analysis (see ``whyalive --version``)."""


@dataclass(frozen=True)
class Node:
    """One object of the report's graph: a cycle member, a path step, or a heavy object.

    ``node_id`` is an index into :attr:`Report.nodes`, never an address.
    """

    node_id: int
    type_name: str
    label: str
    location: str | None = None
    size: int = 0
    heavy: bool = False


@dataclass(frozen=True)
class Edge:
    """A named reference from ``source`` to ``target`` (node ids).

    ``kind`` is one of the edge kinds in :mod:`whyalive.analysis.edges`; ``name`` is how
    it reads in the user's code (``__closure__[1]``, ``cell_contents``, ``[0]``,
    ``.attr``, ``['key']``, ``local x``).
    """

    source: int
    target: int
    kind: str
    name: str


@dataclass(frozen=True)
class HeavyObject:
    """A tensor, array or buffer kept alive by cyclic garbage."""

    node_id: int
    kind: str
    description: str
    nbytes: int
    device: str
    storage_id: int
    counted: bool
    shared_with_live: bool = False
    allocation_site: str | None = None


@dataclass(frozen=True)
class HolderPath:
    """The shortest chain of named references from a cycle member to a heavy object."""

    heavy_node: int
    nodes: tuple[int, ...]
    edges: tuple[Edge, ...]


@dataclass(frozen=True)
class Holding:
    """Heavy objects a cycle holds at one place, siblings folded: ``xs[0..3]``."""

    where: str
    """A Python expression from the cycle member that holds them: ``stage_output_tensors[0..3]``."""
    count: int
    kind: str
    description: str
    """What they are, shortened: ``float32[16, 256] cpu`` (``...`` when they differ)."""
    nbytes: int
    heavy: tuple[int, ...] = ()
    """Node ids of these heavy objects (siblings: the first 16); a holder path ends at the first."""
    autograd_bytes: int = 0
    """Of ``nbytes``, what only their autograd graph (C++) holds: saved tensors, leaves."""
    autograd_count: int = 0
    """How many tensors that autograd graph holds."""


@dataclass(frozen=True)
class Cut:
    """A reference inside the cycle whose absence lets reference counting free it."""

    edges: tuple[Edge, ...]
    description: str
    in_user_code: bool
    source_line: str | None = None
    """The line that made the reference, exactly as the file has it:
    ``leaky.py:6  self.on_step = self.step`` (the first of ``source_lines``)."""
    source_note: str | None = None
    """Why no line is named, and what to look for, when one was looked for."""
    source_lines: tuple[str, ...] = ()
    """The line that made each label of the cut (a tree's ``.parent`` and ``._root``)."""
    source_rule: str | None = None
    """The lint rule that flags ``source_line`` (never written into the quote)."""
    proven: bool = False
    """Removing exactly these references from the captured graph frees every heavy object
    the cycle held (checked before the report was written)."""
    stays: tuple[int, ...] = ()
    """Heavy objects (node ids) still held once the cut is gone; empty when proven."""
    leaves_loop: bool = False
    """A loop the cut does not touch remains (holding nothing heavy): a class and its own
    namespace, an exception and the frame that raised it."""


@dataclass(frozen=True)
class FixEdit:
    """The fix as an edit a tool can apply without judgment.

    Replace the lines ``line`` .. ``line + old.count("\\n")`` of ``file`` (which read
    exactly ``old``) with ``new`` (one or more lines). ``file`` is relative to the
    directory the report was made in when it lies under it, else absolute. Applied to
    the code the report was made from, it removes every reference of the cut while the
    program keeps working (the test suite applies it to runnable scenarios and runs them).
    """

    file: str
    line: int
    old: str
    new: str


@dataclass(frozen=True)
class CycleReport:
    """One cycle (a representative of all occurrences with the same signature)."""

    signature: str
    pattern: str
    title: str
    summary: str
    explanation: str
    fix: str
    members: tuple[int, ...]
    edges: tuple[Edge, ...]
    heavy: tuple[int, ...]
    holder_paths: tuple[HolderPath, ...]
    cut: Cut | None
    bytes_held: int
    bytes_by_device: dict[str, int] = field(default_factory=dict)
    bytes_shared: int = 0
    occurrences: int = 1
    total_bytes: int = 0
    heavy_count: int = 0
    lint_rule: str | None = None
    loop: tuple[Edge, ...] = ()
    """One closed loop through the cut: each hop a real reference, ending where it starts.

    A long loop keeps its first and last hops; ``loop_hidden`` hops between
    ``loop[loop_hidden_after - 1]`` and ``loop[loop_hidden_after]`` are left out.
    """
    loop_hidden: int = 0
    loop_hidden_after: int = 0
    member_count: int = 0
    """Objects in one occurrence of the cycle (instance dicts and closure tuples folded in)."""
    member_types: dict[str, int] = field(default_factory=dict)
    """How many members of each kind: ``{"Node object": 9999, "list": 3333}``."""
    structure: str | None = None
    """For a big cycle: what it is made of, in words."""
    holds: tuple[Holding, ...] = ()
    """Every heavy object the cycle holds, grouped by holder (the first few dozen places)."""
    made_inside: str | None = None
    """``torch/fx/graph.py:1371`` when every function and frame of the cycle is code of an
    installed package or the standard library (not the user's): the user cannot fix it."""
    fix_edit: FixEdit | None = None
    """``fix`` as a mechanical edit, when one is safe; None when the fix is words only."""
    heavy_unlisted: int = 0  # heavy objects held that `heavy` leaves out (siblings past 16)


@dataclass(frozen=True)
class AliveObject:
    """A heavy object that is still alive (not garbage), with what holds it.

    Produced by ``explain(obj)`` and by ``check_leaks(census=True)``. ``paths`` run
    from a root (a module global, a thread's frame, a class) to the object; ``root``
    names the first node in words; ``note`` states a blind spot ("held by a
    non-Python owner: autograd node X") when no Python path exists.
    """

    node_id: int
    description: str
    nbytes: int
    device: str
    paths: tuple[HolderPath, ...] = ()
    root: str | None = None
    note: str | None = None
    allocation_site: str | None = None


@dataclass(frozen=True)
class TimelinePoint:
    """Bytes of one cycle signature found at one monitor step (``GcMonitor`` reports).

    ``step`` is the :meth:`~whyalive.GcMonitor.step` count when the analysis ran;
    in long runs it is the first step of a bucket of steps (see ``docs/monitor.md``).
    """

    signature: str
    step: int
    nbytes: int
    occurrences: int


@dataclass(frozen=True)
class Report:
    """What a check found: cycles that hold heavy objects, with their bytes and paths."""

    schema_version: int = SCHEMA_VERSION
    run: RunInfo = field(default_factory=RunInfo)
    nodes: tuple[Node, ...] = ()
    cycles: tuple[CycleReport, ...] = ()
    heavy_objects: tuple[HeavyObject, ...] = ()
    total_bytes: int = 0
    bytes_by_device: dict[str, int] = field(default_factory=dict)
    garbage_objects: int = 0
    cycle_count: int = 0
    light_cycle_count: int = 0
    heavy_count: int = 0
    """Heavy objects the cycles and uncollectable loops hold, each once: the headline's count."""
    notes: tuple[str, ...] = ()
    alive: tuple[AliveObject, ...] = ()
    timeline: tuple[TimelinePoint, ...] = ()
    heavy_objects_unlisted: int = 0  # what `heavy_objects` leaves out (siblings past 16, counted)
    uncollectable: tuple[CycleReport, ...] = ()
    """Loops through the autograd graph (C++) that the collector can never free, with
    the objects the block made that only they keep alive; each hop C++ holds is an
    edge of kind ``autograd``."""
    held_natively: tuple[AliveObject, ...] = ()
    """Heavy objects the block made, alive, held only by a C/C++ owner whyalive cannot
    name: listed with that note, never failing (``docs/patterns.md``, "Loops through C++")."""

    @property
    def found(self) -> bool:
        """True when some cycle, uncollectable loop or (for a census) still-alive object
        was reported."""
        return bool(self.cycles) or bool(self.alive) or bool(self.uncollectable)

    @property
    def reported_cycle_count(self) -> int:
        """The reference cycles the headline counts, in the text, the viewer and the JSON:
        the reported cycles' occurrences summed. ``cycle_count`` counts every cycle the
        collection found, also those holding nothing heavy and those left out."""
        return sum(c.occurrences for c in self.cycles)

    def node(self, node_id: int) -> Node:
        """The node with this id."""
        return self.nodes[node_id]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (lists, dicts, str, int, bool, None); with
        ``reported_cycle_count``, derived, which :meth:`from_dict` does not read back."""
        plain: dict[str, Any] = _to_plain(asdict(self))
        plain["reported_cycle_count"] = self.reported_cycle_count
        return plain

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Rebuild a report from :meth:`to_dict` output; one clear error if it is not one."""
        if not isinstance(data, dict):
            raise ReportFormatError("not a whyalive report: expected a JSON object")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ReportFormatError(
                f"unsupported report schema_version {version!r} (this whyalive reads "
                f"{SCHEMA_VERSION})"
            )
        from whyalive.report.schema import validate_report

        validate_report(data)
        try:
            return _from_plain(cls, data)
        except (KeyError, TypeError, ValueError) as error:
            raise ReportFormatError(f"not a valid whyalive report: {error}") from None

    def to_json(self, *, indent: int | None = 2) -> str:
        """Deterministic JSON text (sorted keys)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    def save(self, path: str | Path) -> Path:
        """Write the report as JSON and return the path."""
        target = Path(path)
        target.write_text(self.to_json() + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> Report:
        """Read a report written by :meth:`save`."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ReportFormatError(f"cannot read report {path}: {error.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ReportFormatError(f"{path} is not JSON: {error}") from None
        return cls.from_dict(data)

    def render(self, format_name: str = "text", **options: Any) -> str:
        """The report rendered by the named renderer (``text``, ``json``, ``dot``, ...)."""
        return display("render", self, format_name, **options)

    def __str__(self) -> str:
        return self.render("text")

    def __repr__(self) -> str:
        return f"<whyalive.Report: {display('report_line', self)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        return display("report_html", self)


def _to_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    return value


_NESTED: dict[tuple[type, str], type] = {}


def _from_plain(cls: type[_T], data: dict[str, Any]) -> _T:
    """Build a dataclass from a dict, recursing by the field annotations we declared."""
    kwargs: dict[str, Any] = {}
    for spec in fields(cls):  # type: ignore[arg-type]
        if spec.name not in data:
            continue
        value = data[spec.name]
        nested = _NESTED.get((cls, spec.name))
        if nested is not None and value is not None:
            if isinstance(value, list):
                value = tuple(_from_plain(nested, item) for item in value)
            else:
                value = _from_plain(nested, value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[spec.name] = value
    return cls(**kwargs)


_NESTED.update(
    {
        (Report, "run"): RunInfo,
        (Report, "nodes"): Node,
        (Report, "cycles"): CycleReport,
        (Report, "heavy_objects"): HeavyObject,
        (Report, "alive"): AliveObject,
        (Report, "timeline"): TimelinePoint,
        (Report, "uncollectable"): CycleReport,
        (Report, "held_natively"): AliveObject,
        (AliveObject, "paths"): HolderPath,
        (CycleReport, "edges"): Edge,
        (CycleReport, "holder_paths"): HolderPath,
        (CycleReport, "loop"): Edge,
        (CycleReport, "cut"): Cut,
        (CycleReport, "fix_edit"): FixEdit,
        (CycleReport, "holds"): Holding,
        (HolderPath, "edges"): Edge,
        (Cut, "edges"): Edge,
    }
)
