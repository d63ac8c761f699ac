"""A real notebook on a real ipykernel: the magics, a Report's display, explain's short text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

# Anything that could make a browser fetch: a URL, a src or an href (the SVG namespace is a name).
EXTERNAL = re.compile(r"""(?:https?:|file:|data:)?//[^\s"'<>&)]+|\bsrc\s*=|\bhref\s*=""", re.I)
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


def external_references(markup: str) -> list[str]:
    """URLs, ``src=`` and ``href=`` in ``markup``, the SVG namespace excepted."""
    return [m for m in EXTERNAL.findall(markup) if m != SVG_NAMESPACE]


def outputs(notebook: Any, index: int) -> list[Any]:
    """The outputs of cell ``index``."""
    return list(notebook.cells[index].outputs)


def stdout(notebook: Any, index: int) -> str:
    """What cell ``index`` printed on stdout."""
    return "".join(
        o.text for o in outputs(notebook, index) if o.output_type == "stream" and o.name == "stdout"
    )


def rich(notebook: Any, index: int, kind: str) -> list[dict[str, str]]:
    """The data bundles of cell ``index``'s ``display_data`` or ``execute_result`` outputs."""
    return [dict(o.data) for o in outputs(notebook, index) if o.output_type == kind]


def test_no_cell_raises(executed_notebook: Any) -> None:
    """Every cell runs without an error output; usage errors are one line, not a traceback."""
    errors = [
        (i, o.ename)
        for i, cell in enumerate(executed_notebook.cells)
        for o in cell.outputs
        if o.output_type == "error"
    ]
    assert errors == []
    usage = "".join(o.text for o in outputs(executed_notebook, 8) if o.output_type == "stream")
    assert "min_bytes must be a size such as 1048576, 1MB or 1.5 MiB" in usage
    assert "Traceback" not in usage
    assert len(usage.strip().splitlines()) == 1


def test_leaking_cell_shows_the_explanation_inline(executed_notebook: Any) -> None:
    """`%%whyalive` over a recursive closure names the function and the list, and frees it all."""
    [bundle] = rich(executed_notebook, 1, "display_data")
    text = bundle["text/plain"]
    assert "extract_tensors_with_grads" in text
    assert "stage_output_tensors" in text
    assert "Fix:" in text
    assert text.startswith("whyalive: 1 reference cycle")
    # Places read as the notebook shows them, not as the kernel's hashed file names.
    number = executed_notebook.cells[1].execution_count
    assert f"alive at In [{number}]: " in text
    assert f"extract_tensors_with_grads (In [{number}], line 5)" in text
    assert ".py:" not in text
    html = bundle["text/html"]
    assert html.startswith("<iframe srcdoc=")
    assert 'sandbox="allow-scripts"' in html
    assert external_references(html) == []
    assert stdout(executed_notebook, 2) == "0 of 4 tensors alive\n"


def test_clean_cell_shows_nothing_extra(executed_notebook: Any) -> None:
    """A `%%whyalive` cell that leaks nothing shows only its own output."""
    assert [o.output_type for o in outputs(executed_notebook, 3)] == ["stream"]
    assert stdout(executed_notebook, 3) == "clean cell\n"


def test_report_displays_html_and_a_one_line_repr(executed_notebook: Any) -> None:
    """A cell ending in `chk.report` shows offline HTML; its text is one short line."""
    [bundle] = rich(executed_notebook, 4, "execute_result")
    assert external_references(bundle["text/html"]) == []
    assert "<iframe srcdoc=" in bundle["text/html"]
    text = bundle["text/plain"]
    assert "\n" not in text
    assert len(text) < 300
    assert "recursive-closure" in text
    assert "8.0 KiB" in text
    printed = stdout(executed_notebook, 5)
    assert "Fix:" in printed
    assert "Holds:" in printed


def test_explain_names_the_global_in_under_600_characters(executed_notebook: Any) -> None:
    """A cell ending in `whyalive.explain(t)` says `module __main__ --.t-->` in < 600 characters."""
    [bundle] = rich(executed_notebook, 6, "execute_result")
    text = bundle["text/plain"]
    assert len(text) < 600
    assert "module __main__ --.t--> Tensor(float32[100], cpu)" in text
    assert external_references(bundle["text/html"]) == []


def test_explain_magic_shows_the_full_explanation(executed_notebook: Any) -> None:
    """`%whyalive_explain t` displays the full text with the holder path."""
    [bundle] = rich(executed_notebook, 7, "display_data")
    assert "Held by: module `__main__` (a global variable)" in bundle["text/plain"]
    # The kernel's own threads (heartbeat, I/O, history) cannot change the answer: no note.
    assert "thread" not in bundle["text/plain"]
    assert "    module __main__\n      --.t--> Tensor(float32[100], cpu)\n" in bundle["text/plain"]


def test_report_option_writes_the_file(executed_notebook: Any) -> None:
    """`%%whyalive --report leak.json` writes a loadable report and says where."""
    written = Path(executed_notebook.metadata["workdir"]) / "leak.json"
    assert f"Report written to {written}" in stdout(executed_notebook, 9)
    data = json.loads(written.read_text())
    assert data["cycles"][0]["pattern"] == "recursive-closure"


@pytest.mark.parametrize("cell", [1, 4, 6])
def test_html_outputs_carry_no_element_ids_outside_their_frame(
    executed_notebook: Any, cell: int
) -> None:
    """Outside the srcdoc, the markup has no id, style or script that could clash on a page."""
    kind = "display_data" if cell == 1 else "execute_result"
    [bundle] = rich(executed_notebook, cell, kind)
    outside = re.sub(r'srcdoc="[^"]*"', "", bundle["text/html"])
    assert not re.search(r"\bid=|<style|<script", outside)


def test_allow_option_silences_a_known_cycle(executed_notebook: Any) -> None:
    """`%%whyalive --allow recursive-closure` shows only the cell's own output."""
    assert [o.output_type for o in outputs(executed_notebook, 10)] == ["stream"]
    assert stdout(executed_notebook, 10) == "allowed\n"


def test_census_option_explains_what_the_cell_left_alive(executed_notebook: Any) -> None:
    """`%%whyalive --census --min-bytes 1024` names the global dict holding the big tensor only."""
    [bundle] = rich(executed_notebook, 11, "display_data")
    text = bundle["text/plain"]
    assert (
        "    module __main__\n      --.cache--> dict cache of 1\n"
        "      --['weights']--> Tensor(float32[512], cpu)\n"
    ) in text
    assert "float32[4]" not in text


def test_loop_through_autograd_shows_as_uncollectable(executed_notebook: Any) -> None:
    """`%%whyalive` over a tensor hook that refers to its tensor: the loop through C++."""
    [bundle] = rich(executed_notebook, 12, "display_data")
    text = bundle["text/plain"]
    assert "Uncollectable loop 1: tensor hook that refers back to its tensor" in text
    assert "--.grad_fn (C++)--> ExpBackward0" in text
    assert "y.register_hook(lambda grad, *, y=weakref.proxy(y): grad * y.sum())" in text, text
    assert external_references(bundle["text/html"]) == []


def test_min_bytes_takes_a_quoted_size_with_a_space(executed_notebook: Any) -> None:
    """`%%whyalive --min-bytes "1 MiB"` (or '1 MiB') is read as a shell would: 64 bytes left
    in cyclic garbage are under it and show nothing, 2 MiB show; an unclosed quote is a
    one-line usage error."""
    assert [o.output_type for o in outputs(executed_notebook, 13)] == ["stream"]
    assert stdout(executed_notebook, 13) == "under 1 MiB\n"
    [bundle] = rich(executed_notebook, 14, "display_data")
    assert "2.0 MiB" in bundle["text/plain"]
    usage = "".join(o.text for o in outputs(executed_notebook, 15) if o.output_type == "stream")
    assert usage.strip() == (
        "UsageError: cannot read the options '--min-bytes \"1 MiB': No closing quotation"
    ), usage
