"""A test keeps ``pytest.raises(...) as err`` while large locals are in its frame.

Source: https://github.com/pytest-dev/pytest/issues/422 - the reference cycle exception ->
the frame that raised it -> the test's frame -> its locals -> the ``ExceptionInfo`` ->
the exception, unless the local is deleted: every large local of such a test (here a
batch of activations) waits for a collection. It dies with the test, so whyalive lists
it without failing.
"""

from __future__ import annotations

import pytest

from scenarios.payload import heavy

PATTERN = "pytest-idiom"


def run() -> object:
    activations = heavy()
    with pytest.raises(ValueError, match="bad batch") as err:
        raise ValueError(f"bad batch of {activations.shape[0]}")
    return str(err.value)
