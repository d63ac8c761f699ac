"""Check report data against ``whyalive/schema/report.schema.json`` with the standard library.

The schema uses a small part of JSON Schema (``type``, ``const``, ``minimum``,
``properties``, ``required``, ``additionalProperties``, ``items``, ``oneOf`` and
local ``$ref``); this reads exactly that part, so ``whyalive render`` rejects a
file that is not a report with one line, without a third-party validator.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from whyalive.errors import ReportFormatError

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


@functools.lru_cache(maxsize=1)
def report_schema() -> dict[str, Any]:
    """The report schema shipped with whyalive."""
    source = resources.files("whyalive") / "schema" / "report.schema.json"
    schema: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    return schema


def validate_report(data: object) -> None:
    """Raise :class:`~whyalive.errors.ReportFormatError` naming the first place ``data``
    breaks the report schema."""
    schema = report_schema()
    problem = _problem(data, schema, schema, "report")
    if problem is None:
        assert isinstance(data, dict)  # the schema says so
        problem = _dangling_node(data)
    if problem is not None:
        raise ReportFormatError(f"not a valid whyalive report: {problem}")


def _dangling_node(report: dict[str, Any]) -> str | None:
    """The first node id that names no node (renderers index ``nodes`` by it; a negative
    one would silently name a node counted from the end)."""
    count = len(report["nodes"])
    for index, node in enumerate(report["nodes"]):
        if node["node_id"] != index:
            return f"report.nodes[{index}].node_id must be {index}"
    named: list[tuple[str, int]] = []
    for index, heavy in enumerate(report.get("heavy_objects", ())):
        named.append((f"heavy_objects[{index}].node_id", heavy["node_id"]))
    for key in ("alive", "held_natively"):
        for index, alive in enumerate(report.get(key, ())):
            named.append((f"{key}[{index}].node_id", alive["node_id"]))
            named.extend(_path_ids(f"{key}[{index}].paths", alive.get("paths", ())))
    cycles = [("cycles", c) for c in report["cycles"]]
    cycles += [("uncollectable", c) for c in report.get("uncollectable", ())]
    for index, (key, cycle) in enumerate(cycles):
        where = f"{key}[{index if key == 'cycles' else index - len(report['cycles'])}]"
        named.extend((f"{where}.members", n) for n in cycle["members"])
        named.extend((f"{where}.heavy", n) for n in cycle["heavy"])
        for number, holding in enumerate(cycle.get("holds", ())):
            named.extend((f"{where}.holds[{number}].heavy", n) for n in holding.get("heavy", ()))
        edges = [
            *cycle["edges"],
            *cycle.get("loop", ()),
            *(cycle.get("cut") or {}).get("edges", ()),
        ]
        named.extend(_edge_ids(f"{where}.edges", edges))
        named.extend(_path_ids(f"{where}.holder_paths", cycle["holder_paths"]))
    for where, node_id in named:
        if not 0 <= node_id < count:
            return f"report.{where} names node {node_id}, but node ids run from 0 to {count - 1}"
    return None


def _edge_ids(where: str, edges: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(where, edge[end]) for edge in edges for end in ("source", "target")]


def _path_ids(where: str, paths: list[dict[str, Any]]) -> list[tuple[str, int]]:
    ids: list[tuple[str, int]] = []
    for path in paths:
        ids.append((where, path["heavy_node"]))
        ids.extend((where, n) for n in path["nodes"])
        ids.extend(_edge_ids(where, path["edges"]))
    return ids


def _is_type(value: object, name: str) -> bool:
    if name in ("integer", "number") and type(value) is bool:
        return False
    return isinstance(value, _TYPES[name])


def _problem(value: object, rule: dict[str, Any], root: dict[str, Any], where: str) -> str | None:
    """The first way ``value`` breaks ``rule``, in words, or None."""
    if "$ref" in rule:
        name = rule["$ref"].removeprefix("#/$defs/")
        return _problem(value, root["$defs"][name], root, where)
    if "oneOf" in rule:
        matching = [r for r in rule["oneOf"] if _problem(value, r, root, where) is None]
        return None if len(matching) == 1 else f"{where} matches none of its allowed shapes"
    if "const" in rule and value != rule["const"]:
        return f"{where} must be {rule['const']!r}"
    kinds = rule.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is_type(value, name) for name in names):
            return f"{where} must be {' or '.join(names)}, not {type(value).__name__}"
    if "minimum" in rule and isinstance(value, (int, float)) and value < rule["minimum"]:
        return f"{where} must be at least {rule['minimum']}"
    if isinstance(value, dict):
        return _object_problem(value, rule, root, where)
    if isinstance(value, list) and "items" in rule:
        for index, item in enumerate(value):
            problem = _problem(item, rule["items"], root, f"{where}[{index}]")
            if problem is not None:
                return problem
    return None


def _object_problem(
    value: dict[str, Any], rule: dict[str, Any], root: dict[str, Any], where: str
) -> str | None:
    for name in rule.get("required", ()):
        if name not in value:
            return f"{where} has no {name!r}"
    properties: dict[str, Any] = rule.get("properties", {})
    extra = rule.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            problem = _problem(item, properties[name], root, f"{where}.{name}")
        elif extra is False:
            problem = f"{where} has an unknown field {name!r}"
        elif isinstance(extra, dict):
            problem = _problem(item, extra, root, f"{where}[{name!r}]")
        else:
            problem = None
        if problem is not None:
            return problem
    return None
