"""A trace's runs: every child run keeps its parent run, every run keeps its children.

Source: https://github.com/langchain-ai/langsmith-sdk/pull/1591 - ``RunTree.parent_run``
made a cyclic reference between each run and its parent ("slows down garbage collection
and makes it easy to introduce memory leaks"); the PR stops setting it.
"""

from __future__ import annotations

from scenarios.payload import heavy

PATTERN = "parent-child"


class RunTree:
    def __init__(self, name: str, parent_run: RunTree | None = None) -> None:
        self.name = name
        self.parent_run = parent_run
        self.child_runs: list[RunTree] = []
        self.inputs = heavy(256)

    def create_child(self, name: str) -> RunTree:
        child = RunTree(name, parent_run=self)
        self.child_runs.append(child)
        return child

    def depth(self) -> int:
        return 0 if self.parent_run is None else 1 + self.parent_run.depth()


def run() -> object:
    root = RunTree("agent")
    leaves = [root.create_child(f"tool{i}").create_child("llm") for i in range(3)]
    return [leaf.depth() for leaf in leaves]
