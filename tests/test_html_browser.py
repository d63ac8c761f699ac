"""The HTML viewer in real headless Chromium, offline: it draws, it clicks, it executes nothing."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scenarios import pipeline_step, ring
from whyalive.report import (
    AliveObject,
    Cut,
    CycleReport,
    Edge,
    HeavyObject,
    HolderPath,
    Node,
    Report,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("Debian chromium and chromium-driver are not installed", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
SCRIPT_CLOSE = '</script><img src=x onerror="window.__whyalive_xss=1">'
ATTR_BREAK = '"><svg onload="window.__whyalive_xss=2">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module, with the network emulated offline."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,900",
        # Belt and braces with the emulated offline mode: any request would go nowhere.
        "--proxy-server=http://127.0.0.1:9",
        "--disable-background-networking",
        "--no-first-run",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        yield driver
    finally:
        driver.quit()


def _open(driver: Any, report: Report, path: Path, **options: Any) -> dict[str, list[Any]]:
    """Write the page, load it by file:// URL and return the requests and console errors."""
    path.write_text(report.render("html", **options), encoding="utf-8")
    driver.get_log("browser")
    driver.get_log("performance")  # drain what earlier pages left
    driver.get(path.as_uri())
    deadline = time.monotonic() + 5
    while driver.execute_script("return document.body.dataset.ready") != "1":
        assert time.monotonic() < deadline, "the viewer never finished drawing"
        time.sleep(0.02)
    requests, failed = [], []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
        elif message["method"] == "Network.loadingFailed":
            failed.append(message["params"])
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    others = [url for url in requests if url != path.as_uri()]
    return {"requests": others, "failed": failed, "errors": errors}


def _demo_report() -> Report:
    """The pre-fix stage_backward leak on NumPy arrays (importing torch would cost seconds)."""
    pytest.importorskip("numpy")
    from whyalive import find_leaks

    return find_leaks(pipeline_step)


@pytest.mark.parametrize("layout", ["dagre", "graphviz"])
def test_viewer_draws_cycle_and_shows_details_offline(
    browser: Any, tmp_path: Path, layout: str
) -> None:
    """The demo cycle's members are drawn, a click shows details, nothing is fetched or logged."""
    if layout == "graphviz" and shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed")
    report = _demo_report()
    seen = _open(browser, report, tmp_path / "leak.html", layout=layout)
    cycle = report.cycles[0]
    members = browser.find_elements(By.CSS_SELECTOR, "#graph .node.member")
    assert sorted(int(m.get_attribute("data-node")) for m in members) == sorted(cycle.members)
    assert browser.find_elements(By.CSS_SELECTOR, "#graph .edge.cut")
    assert cycle.fix.replace("`", "") in browser.find_element(By.ID, "cycle-details").text
    browser.find_elements(By.CSS_SELECTOR, "#toolbar .tool")[2].click()  # fit: all in view
    first = report.node(cycle.members[0])
    browser.find_element(By.CSS_SELECTOR, f'#graph .node[data-node="{first.node_id}"]').click()
    details = browser.find_element(By.ID, "details").text
    assert first.type_name in details
    assert first.label in details
    heavy = report.node(cycle.holder_paths[0].heavy_node)
    browser.find_element(By.CSS_SELECTOR, f'#graph .node[data-node="{heavy.node_id}"]').click()
    assert "allocated at" in browser.find_element(By.ID, "details").text
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"whyalive-html-{layout}.png"))
    assert seen == {"requests": [], "failed": [], "errors": []}


# What the graph pane shows on open: the pane, the drawn graph's box, the smallest label.
_GRAPH_ON_OPEN = """
const pane = document.getElementById("graph").getBoundingClientRect();
const drawn = document.querySelector("#graph g.world").getBoundingClientRect();
const labels = Array.from(document.querySelectorAll("#graph text"),
                          t => t.getBoundingClientRect().height).filter(h => h > 0);
return [pane.width, pane.height, drawn.width, drawn.height, Math.min(...labels)];
"""


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


@pytest.mark.parametrize("layout", ["dagre", "graphviz"])
def test_viewer_opens_fitted_readable_with_a_legend_and_the_texts_words(
    browser: Any, tmp_path: Path, layout: str
) -> None:
    """On open the graph fills its pane, labels are 11 px or more; legend, code and loop shown."""
    if layout == "graphviz" and shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed")
    report = _demo_report()
    _open(browser, report, tmp_path / "fit.html", layout=layout)
    _wait_until_fitted(browser)
    pane_w, pane_h, drawn_w, drawn_h, smallest_label = browser.execute_script(_GRAPH_ON_OPEN)
    shot = browser.find_element(By.ID, "graph-pane").screenshot_as_png
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"whyalive-html-fit-{layout}.png").write_bytes(shot)
    shot_w, shot_h = _png_size(shot)
    assert abs(shot_w - pane_w) <= 2
    assert abs(shot_h - pane_h) <= 2
    # Fitted: the graph spans most of the pane in one direction at least.
    assert max(drawn_w / pane_w, drawn_h / pane_h) >= 0.8, (pane_w, pane_h, drawn_w, drawn_h)
    assert smallest_label >= 11
    legend = browser.find_element(By.ID, "legend").text
    for words in ("suggested cut", "heavy object", "in the cycle"):
        assert words in legend
    from whyalive.words import report_headline

    headline = report_headline(report)
    assert browser.find_element(By.ID, "headline").text == headline[0].upper() + headline[1:]
    details = browser.find_element(By.ID, "cycle-details")
    codes = [c.text for c in details.find_elements(By.CSS_SELECTOR, ".fix code")]
    assert "del extract_tensors_with_grads" in codes
    assert "`" not in details.find_element(By.CSS_SELECTOR, ".fix").text
    loop = details.find_elements(By.CSS_SELECTOR, ".loop li")
    assert len(loop) == len(report.cycles[0].loop)
    # The page's sentences are the text report's (whyalive.words), not recomposed in JS.
    from whyalive.words import cut_sentence, holding_words

    cycle = report.cycles[0]
    holds = [li.text for li in details.find_elements(By.CSS_SELECTOR, ".holds li")]
    assert holds == [holding_words(h) for h in cycle.holds]
    assert cycle.cut is not None
    cut = details.find_element(By.CSS_SELECTOR, ".cut").text
    said = " ".join(cut_sentence(cycle.cut).replace("`", "").split())  # HTML folds spaces
    assert cut == f"Cut: {said}"
    assert said in " ".join(report.render("text").replace("`", "").split())


def test_viewer_lays_out_a_50_node_cycle_quickly(browser: Any, tmp_path: Path) -> None:
    """dagre in the page lays out a 50-member cycle, all members drawn, within a second."""
    from whyalive import find_leaks

    report = find_leaks(ring, 50)
    started = time.monotonic()
    seen = _open(browser, report, tmp_path / "ring.html", layout="dagre")
    elapsed = time.monotonic() - started
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .node.member")) == 50
    assert seen == {"requests": [], "failed": [], "errors": []}
    assert elapsed < 5, "load, layout and drawing took too long"
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "whyalive-html-ring50.png"))


def test_viewer_pans_and_zooms(browser: Any, tmp_path: Path) -> None:
    """The zoom button and a drag change the graph's transform."""
    _open(browser, _demo_report(), tmp_path / "zoom.html", layout="dagre")
    world = browser.find_element(By.CSS_SELECTOR, "#graph g.world")
    before = world.get_attribute("transform")
    browser.find_element(By.CSS_SELECTOR, "#toolbar .tool").click()
    zoomed = world.get_attribute("transform")
    assert zoomed != before
    webdriver.ActionChains(browser).move_to_element_with_offset(
        browser.find_element(By.ID, "graph"), 5, 5
    ).click_and_hold().move_by_offset(60, 40).release().perform()
    assert world.get_attribute("transform") != zoomed


def _hostile_report() -> Report:
    """A report whose every string tries to break out of the page."""
    nodes = (
        Node(0, "dict", f"dict {{{SCRIPT_CLOSE!r}: ...}}", f"{ATTR_BREAK}.py:1", 232),
        Node(1, f"Evil{ATTR_BREAK}", f"Evil {SCRIPT_CLOSE}", None, 56),
        Node(2, "numpy.ndarray", f"ndarray {ATTR_BREAK}", None, 4096, heavy=True),
    )
    back = Edge(1, 0, "attribute", f".{ATTR_BREAK}")
    edges = (Edge(0, 1, "dict-key", f"[{SCRIPT_CLOSE!r}]"), back)
    path = HolderPath(2, (0, 1, 2), (*edges[:1], Edge(1, 2, "attribute", f".{SCRIPT_CLOSE}")))
    cycle = CycleReport(
        signature=SCRIPT_CLOSE,
        pattern=ATTR_BREAK,
        title=f"title {SCRIPT_CLOSE}",
        summary=f"summary {ATTR_BREAK}",
        explanation=f"why {SCRIPT_CLOSE}",
        fix=f"fix {ATTR_BREAK}",
        members=(0, 1),
        edges=edges,
        heavy=(2,),
        holder_paths=(path,),
        cut=Cut((back,), f"cut {SCRIPT_CLOSE}", True),
        bytes_held=4096,
        total_bytes=4096,
        heavy_count=1,
    )
    heavy = HeavyObject(
        2,
        "numpy.ndarray",
        f"ndarray {SCRIPT_CLOSE}",
        4096,
        "cpu",
        1,
        True,
        allocation_site=f"{ATTR_BREAK}:3",
    )
    root = Node(3, "module", f"module {ATTR_BREAK}", None, 72)
    held = Node(4, "torch.Tensor", f"Tensor {SCRIPT_CLOSE}", None, 1 << 20, heavy=True)
    alive_path = HolderPath(4, (3, 4), (Edge(3, 4, "global", f"global {ATTR_BREAK}"),))
    alive = AliveObject(
        4, f"Tensor {SCRIPT_CLOSE}", 1 << 20, "cpu", (alive_path,), root=f"root {ATTR_BREAK}"
    )
    return Report(
        nodes=(*nodes, root, held),
        cycles=(cycle,),
        heavy_objects=(heavy,),
        total_bytes=4096,
        notes=(SCRIPT_CLOSE,),
        alive=(alive,),
    )


@pytest.mark.parametrize("layout", ["dagre", "graphviz"])
def test_hostile_strings_show_as_text_and_execute_nothing(
    browser: Any, tmp_path: Path, layout: str
) -> None:
    """`</script><img onerror>` and `"><svg onload>` in keys and reprs are text, never markup."""
    if layout == "graphviz" and shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed")
    seen = _open(browser, _hostile_report(), tmp_path / "xss.html", layout=layout)
    browser.find_elements(By.CSS_SELECTOR, "#toolbar .tool")[2].click()  # fit: all in view
    browser.find_element(By.CSS_SELECTOR, '#graph .node[data-node="1"]').click()
    assert browser.execute_script("return window.__whyalive_xss") is None
    injected = "return document.querySelectorAll('img, [onerror], [onload], svg svg').length"
    assert browser.execute_script(injected) == 0
    details = browser.find_element(By.ID, "details").text
    assert f"Evil {SCRIPT_CLOSE}" in details
    assert f"Evil{ATTR_BREAK}" in details
    side = browser.find_element(By.ID, "cycle-details").text
    assert f"fix {ATTR_BREAK}" in side
    assert f"cut {SCRIPT_CLOSE}" in side
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('#graph .edge text'), t => t.textContent)"
    )
    assert f"[{SCRIPT_CLOSE!r}]"[:31] + "\u2026" in labels
    browser.find_elements(By.CSS_SELECTOR, "#cycles .cycle-item")[1].click()  # the alive view
    assert f"root {ATTR_BREAK}" in browser.find_element(By.ID, "cycle-details").text
    browser.find_elements(By.CSS_SELECTOR, "#toolbar .tool")[2].click()
    browser.find_element(By.CSS_SELECTOR, '#graph .node[data-node="4"]').click()
    assert f"Tensor {SCRIPT_CLOSE}" in browser.find_element(By.ID, "details").text
    assert browser.execute_script("return window.__whyalive_xss") is None
    assert browser.execute_script(injected) == 0
    assert seen == {"requests": [], "failed": [], "errors": []}


def test_empty_report_page_loads_cleanly(browser: Any, tmp_path: Path) -> None:
    """An empty Report() gives a page that says so, with no errors and no requests."""
    seen = _open(browser, Report(), tmp_path / "empty.html")
    assert "No cyclic garbage" in browser.find_element(By.ID, "headline").text
    assert seen == {"requests": [], "failed": [], "errors": []}


# The graph was fitted to its pane: its leftmost box starts inside the pane, not off to the left
# (a frame drawn before it had a size used to place it there).
_LEFTMOST_NODE_INSIDE = """
const pane = document.getElementById("graph").getBoundingClientRect();
const lefts = Array.from(document.querySelectorAll("#graph .node"),
                         n => n.getBoundingClientRect().left);
return lefts.length > 0 && Math.min(...lefts) >= pane.left - 2;
"""


def _wait_until_fitted(driver: Any) -> None:
    deadline = time.monotonic() + 5
    fitted = "return document.querySelector('#graph g.world').hasAttribute('transform')"
    while not driver.execute_script(fitted):
        assert time.monotonic() < deadline, "the graph was never fitted to its pane"
        time.sleep(0.02)


def _wait_until_ready(driver: Any) -> None:
    deadline = time.monotonic() + 5
    while driver.execute_script("return document.body.dataset.ready") != "1":
        assert time.monotonic() < deadline, "the viewer never finished drawing"
        time.sleep(0.02)


def test_notebook_outputs_draw_side_by_side_offline(
    browser: Any, tmp_path: Path, executed_notebook: Any
) -> None:
    """The notebook's HTML outputs on one 900 px page: each frame draws its own report, offline."""
    cells = (1, 4, 6)  # %%whyalive, a cell ending in chk.report, one ending in explain(t)
    markup = [
        output.data["text/html"]
        for index in cells
        for output in executed_notebook.cells[index].outputs
        if "data" in output and "text/html" in output.data
    ]
    assert len(markup) == len(cells)
    page = tmp_path / "notebook.html"
    page.write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>cells</title></head>'
        '<body><div style="width: 900px">'
        + "".join(f'<div class="output">{m}</div>' for m in markup)
        + "</div></body></html>\n",
        encoding="utf-8",
    )
    browser.get_log("browser")
    browser.get_log("performance")
    browser.get(page.as_uri())
    frames = browser.find_elements(By.TAG_NAME, "iframe")
    assert len(frames) == len(cells)
    seen = []
    for frame in frames:
        # Chromium draws an off-screen cross-origin frame only once it is scrolled into view.
        browser.execute_script("arguments[0].scrollIntoView()", frame)
        browser.switch_to.frame(frame)
        try:
            _wait_until_ready(browser)
            _wait_until_fitted(browser)
            seen.append(
                (
                    browser.find_element(By.ID, "headline").text,
                    len(browser.find_elements(By.CSS_SELECTOR, "#graph .node.member")),
                    browser.find_element(By.ID, "graph").rect["width"] > 300,
                    browser.execute_script(_LEFTMOST_NODE_INSIDE),
                )
            )
            assert browser.execute_script("return window.parent === window") is False
        finally:
            browser.switch_to.default_content()
    # The cells' file names are the kernel's (hashed), so only the words around them are fixed.
    headlines = [re.sub(r" at \S+:1( in \S+)?:", " at <cell>:", h) for h, *_ in seen]
    assert headlines == [
        "1 reference cycle keeps 4 tensors alive at <cell>: 64.0 KiB on cpu",
        "1 reference cycle keeps 2 tensors alive at <cell>: 8.0 KiB on cpu",
        "1 heavy object still alive: 400 B",
    ]
    assert [rest for _, *rest in seen] == [[2, True, True], [2, True, True], [0, True, True]]
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "whyalive-notebook-outputs.png"))
    requests = [
        json.loads(entry["message"])["message"]
        for entry in browser.get_log("performance")
        if "Network.requestWillBeSent" in entry["message"]
    ]
    assert [r["params"]["request"]["url"] for r in requests] == [page.as_uri()]
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []


@pytest.mark.whyalive_skip  # the monitor runs its own gc callback
def test_monitor_page_draws_the_timeline(browser: Any, tmp_path: Path) -> None:
    """mon.report() as HTML: a visible SVG timeline with one line per signature, no errors."""
    import whyalive

    numpy = pytest.importorskip("numpy")
    with whyalive.monitor(log=False, collect_generation=1) as mon:
        for step in range(30):
            ring(3)
            if step % 2:
                numpy.zeros(1)  # keeps the loop body from being only the leak
            mon.step(collect=step % 5 == 4)
    report = mon.report()
    seen = _open(browser, report, tmp_path / "monitor.html")
    series = browser.find_elements(By.CSS_SELECTOR, "#timeline svg .series")
    assert len(series) == 1
    assert browser.find_element(By.CSS_SELECTOR, "#timeline svg").rect["height"] > 100
    assert len(browser.find_elements(By.CSS_SELECTOR, "#timeline svg circle")) == 6
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .node.member")) == 3
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "whyalive-monitor-timeline.png"))
    assert seen == {"requests": [], "failed": [], "errors": []}


@pytest.mark.whyalive_skip  # the loop it reports is never freed: the suite's own check sees it
def test_viewer_lists_an_uncollectable_loop_with_its_cpp_hops(browser: Any, tmp_path: Path) -> None:
    """A loop through the autograd graph: its own entry in the list, drawn, its fix shown."""
    pytest.importorskip("torch")
    from scenarios import autograd_loops
    from whyalive import find_leaks

    report = find_leaks(autograd_loops.tensor_hook)
    [loop] = report.uncollectable
    seen = _open(browser, report, tmp_path / "loop.html")
    titles = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#cycles .cycle-title")]
    assert titles == [f"Uncollectable loop 1: {loop.title}"]
    drawn = browser.find_elements(By.CSS_SELECTOR, "#graph .node.member, #graph .node.heavy")
    drawn_ids = {int(m.get_attribute("data-node")) for m in drawn}
    assert set(loop.members) <= drawn_ids  # the tensor on the loop is drawn as heavy
    details = browser.find_element(By.ID, "cycle-details").text
    assert loop.fix.replace("`", "") in details
    assert ".grad_fn (C++)" in details
    assert seen == {"requests": [], "failed": [], "errors": []}
