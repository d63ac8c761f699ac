"""The HTML viewer in real headless Chromium, offline: it draws, it clicks, it executes nothing."""

from __future__ import annotations

import json
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
        "--window-size=1280,800",
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
    _wait_until_ready(driver)
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
    first = report.node(cycle.members[0])
    browser.find_element(By.CSS_SELECTOR, f'#graph .node[data-node="{first.node_id}"]').click()
    details = browser.find_element(By.ID, "details").text
    assert first.type_name in details
    assert first.label in details
    heavy = browser.find_elements(By.CSS_SELECTOR, "#graph .node.heavy")
    assert len(heavy) == len(cycle.holds)  # one box per place that holds heavy objects
    heavy[0].click()
    assert "allocated at" in browser.find_element(By.ID, "details").text
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"whyalive-html-{layout}.png"))
    assert seen == {"requests": [], "failed": [], "errors": []}


# What a person sees on open: the pane, every heavy box and suggested cut (in the pane and
# clear of the caption, toolbar and legend laid over it, or not), every box that counts
# bytes (heavy boxes, the autograd graph's among them, "+ N more" boxes: what the
# headline's bytes are made of) with its bytes, border and label sizes, the smallest label
# of all as drawn (its font size times the picture's scale), and how far down the side the
# cut and the holds end.
_WHAT_A_PERSON_SEES = """
const pane = document.getElementById("graph").getBoundingClientRect();
// In the pane, and not under what is laid over it (caption, toolbar, legend).
const over = ["caption", "toolbar", "legend"].map(id => document.getElementById(id))
    .filter(e => e).map(e => e.getBoundingClientRect()).filter(r => r.width > 0);
const meets = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
    && a.top < b.bottom - 1 && b.top < a.bottom - 1;
const inside = r => r.width > 0 && r.left >= pane.left - 1 && r.right <= pane.right + 1
    && r.top >= pane.top - 1 && r.bottom <= pane.bottom + 1 && !over.some(o => meets(r, o));
const boxes = sel => Array.from(document.querySelectorAll(sel), e => e.getBoundingClientRect());
const heavy = boxes("#graph .node.heavy"), cuts = boxes("#graph .edge.cut path");
const drawnSize = t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
const sizes = Array.from(document.querySelectorAll("#graph text"), drawnSize);
const counted = Array.from(document.querySelectorAll("#graph .node[data-bytes]"), g => {
  const r = g.getBoundingClientRect(), rect = g.querySelector("rect");
  const labels = Array.from(g.querySelectorAll("text"), drawnSize);
  return { bytes: Number(g.dataset.bytes), kind: g.classList[1], inside: inside(r),
    border: parseFloat(getComputedStyle(rect).strokeWidth),
    smallest_label: Math.min(...labels), largest_label: Math.max(...labels),
    text: Array.from(g.querySelectorAll("text"), t => t.textContent).join(" ") };
});
const bottom = sel => { const e = document.querySelector(sel);
    return e ? e.getBoundingClientRect().bottom : 0; };
const side = document.getElementById("side").getBoundingClientRect();
return {
  pane: [pane.width, pane.height], heavy: heavy.length, cuts: cuts.length,
  heavy_inside: heavy.every(inside), cuts_inside: cuts.every(inside),
  outside: heavy.concat(cuts).filter(r => !inside(r)).map(r => [r.left, r.top, r.right, r.bottom]),
  counted: counted,
  smallest_label: Math.min(...sizes),
  answer_bottom: Math.max(bottom("#cycle-details .cut"), bottom("#cycle-details .holds")),
  fold: Math.min(side.bottom, window.innerHeight),
  window: [window.innerWidth, window.innerHeight],
  cycle_list: !document.getElementById("cycles").hidden,
};
"""


def _first_picture_bytes(report: Report) -> int:
    """What the first picture's boxes add up to: one occurrence of the first cycle, or the
    first still-alive object."""
    return report.cycles[0].bytes_held if report.cycles else report.alive[0].nbytes


def _assert_counted_boxes_seen(sees: dict[str, Any], total: int) -> None:
    """Every box that counts bytes is in the pane with labels of 11 px or more, together
    they count the picture's bytes, and the one that counts the most has the largest text
    and the heaviest border (a tie: as large and as heavy)."""
    counted = sees["counted"]
    assert counted, sees
    assert all(box["inside"] for box in counted), counted
    assert min(box["smallest_label"] for box in counted) >= 11, counted
    assert sum(box["bytes"] for box in counted) == total, counted
    most = max(counted, key=lambda box: box["bytes"])
    assert all(most["largest_label"] >= box["largest_label"] for box in counted), counted
    assert all(most["border"] >= box["border"] for box in counted), counted


# Two windows, and the frame a notebook cell gives the viewer (900 px wide, its height).
SIZES = [(1280, 800), (1920, 1080), (900, 560)]


def _viewport(driver: Any, width: int, height: int) -> None:
    """The page's viewport exactly ``width`` x ``height`` CSS pixels, whatever the window.

    Chromium's DevTools emulation sets the viewport itself, so the size does not depend on
    when the window manager has finished resizing a window (a busy machine made a resize
    read back the old inner size). Returns once the page reports the new size.
    """
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    _wait_for(
        driver,
        f"return innerWidth === {width} && innerHeight === {height}",
        f"the viewport never became {width}x{height}",
    )


def _torch_demo() -> Report:
    """`whyalive demo` on torch: the tensors, their autograd graph, the closure cycle."""
    pytest.importorskip("torch")
    from whyalive.demo import run_demo

    name, report = run_demo()
    assert name == "torch"
    return report


def _ring_30() -> Report:
    """A ring of 30 objects, each holding an array: one 30-node cycle."""
    from whyalive import find_leaks

    return find_leaks(ring, 30)


def _explain_chain() -> Report:
    """explain() of an array that a module's global reaches through an object and a dict."""
    numpy = pytest.importorskip("numpy")
    from scenarios.modules import throwaway_module
    from whyalive import explain

    class Cache:
        """The user's cache object."""

    with throwaway_module("app_cache") as module:
        module.CACHE = Cache()  # type: ignore[attr-defined]
        module.CACHE.entries = {"weights": numpy.zeros(4096)}  # type: ignore[attr-defined]
        return explain(module.CACHE.entries["weights"]).report  # type: ignore[attr-defined]


def _many_places() -> Report:
    """An object in a cycle with itself that holds one 64 KiB array and ten of 8 KiB, each
    in an attribute of its own: four places are drawn, the other seven are one box, and
    that box counts the most bytes."""
    numpy = pytest.importorskip("numpy")
    from whyalive import find_leaks

    class Store:
        """The user's object, with a reference to itself."""

    def leak() -> None:
        store = Store()
        store.me = store  # type: ignore[attr-defined]
        store.big = numpy.zeros(16384, dtype=numpy.float32)  # type: ignore[attr-defined]
        for index in range(10):
            setattr(store, f"part{index}", numpy.zeros(2048, dtype=numpy.float32))

    return find_leaks(leak)


def _monitor_page() -> Report:
    """mon.report() after 30 steps that each leak a ring of three: timeline and picture."""
    import whyalive

    pytest.importorskip("numpy")
    with whyalive.monitor(log=False, collect_generation=1) as mon:
        for step in range(30):
            ring(3)
            mon.step(collect=step % 5 == 4)
    return mon.report()


PAGES = {
    "demo-torch": _torch_demo,
    "demo-numpy": _demo_report,
    "cycle-30": _ring_30,
    "explain-chain": _explain_chain,
    "many-places": _many_places,
    "monitor": _monitor_page,
}


@pytest.fixture(scope="module")
def page_reports() -> dict[str, Report]:
    """Each page's report, made once for both window sizes."""
    return {}


@pytest.mark.whyalive_skip  # the monitor page runs its own gc callback
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("page", sorted(PAGES))
def test_what_a_person_sees_on_open(
    browser: Any,
    tmp_path: Path,
    page_reports: dict[str, Report],
    page: str,
    size: tuple[int, int],
) -> None:
    """On open every heavy box, every box that counts bytes (the biggest drawn the most
    prominent) and the cut are in the pane, labels are 11 px or more, the answer (cut and
    holds) is above the fold; the screenshot is kept in test-artifacts/."""
    if page not in page_reports:
        page_reports[page] = PAGES[page]()
    report = page_reports[page]
    _viewport(browser, *size)
    try:
        seen = _open(browser, report, tmp_path / f"{page}.html")
        _wait_until_fitted(browser)
        sees = browser.execute_script(_WHAT_A_PERSON_SEES)
        ARTIFACTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / f"whyalive-{page}-{size[0]}x{size[1]}.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert sees["window"] == list(size)
    assert sees["heavy"] >= 1, sees
    assert sees["heavy_inside"], sees
    _assert_counted_boxes_seen(sees, _first_picture_bytes(report))
    assert sees["cuts"] == (1 if report.cycles and report.cycles[0].cut else 0), sees
    assert sees["cuts_inside"], sees
    assert sees["smallest_label"] >= 11, sees
    assert sees["answer_bottom"] <= sees["fold"], sees
    assert sees["cycle_list"] == (len(report.cycles) + len(report.alive) > 1), sees
    assert seen == {"requests": [], "failed": [], "errors": []}


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


@pytest.mark.parametrize("layout", ["dagre", "graphviz"])
def test_viewer_opens_readable_with_a_legend_and_the_texts_words(
    browser: Any, tmp_path: Path, layout: str
) -> None:
    """Both layouts open readable with a legend; the side says the text's words, code as code."""
    if layout == "graphviz" and shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed")
    report = _demo_report()
    _open(browser, report, tmp_path / "fit.html", layout=layout)
    _wait_until_fitted(browser)
    sees = browser.execute_script(_WHAT_A_PERSON_SEES)
    shot = browser.find_element(By.ID, "graph-pane").screenshot_as_png
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"whyalive-html-fit-{layout}.png").write_bytes(shot)
    shot_w, shot_h = _png_size(shot)
    pane_w, pane_h = sees["pane"]
    assert abs(shot_w - pane_w) <= 2
    assert abs(shot_h - pane_h) <= 2
    assert sees["heavy_inside"], sees
    assert sees["cuts_inside"], sees
    assert sees["smallest_label"] >= 11
    legend = browser.find_element(By.ID, "legend").text
    for words in ("suggested cut", "heavy object", "in the cycle", "folded"):
        assert words in legend
    from whyalive.words import report_headline

    headline = report_headline(report)
    assert browser.find_element(By.ID, "headline").text == headline[0].upper() + headline[1:]
    assert "add up to" in browser.find_element(By.ID, "caption").text
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
    assert said in " ".join(report.render("text", width=1000).replace("`", "").split())
    # The red arrow is labelled as the Cut line names it, not by the cell's slot.
    arrow = browser.find_element(By.CSS_SELECTOR, "#graph .edge.cut").text
    assert arrow == "closure variable"
    assert said.startswith(f"the {arrow} ")


def test_viewer_folds_a_50_node_cycle_and_shows_it_whole_on_a_click(
    browser: Any, tmp_path: Path
) -> None:
    """dagre draws a 50-member cycle cropped, the middle of its loop folded, and after a
    click on the fold, whole: all 50 members."""
    from whyalive import find_leaks

    report = find_leaks(ring, 50)
    seen = _open(browser, report, tmp_path / "ring.html", layout="dagre")
    members = browser.find_elements(By.CSS_SELECTOR, "#graph .node.member")
    assert 2 <= len(members) < 10
    fold = browser.find_element(By.CSS_SELECTOR, "#graph .node.fold.opens")
    assert "46 more objects in the loop" in fold.text
    fold.click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .node.member")) == 50
    assert browser.find_element(By.ID, "toggle-fold").text == "crop"
    assert seen == {"requests": [], "failed": [], "errors": []}
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "whyalive-html-ring50-whole.png"))


def test_viewer_pans_and_zooms(browser: Any, tmp_path: Path) -> None:
    """The zoom button and a drag change the graph's transform."""
    _open(browser, _demo_report(), tmp_path / "zoom.html", layout="dagre")
    world = browser.find_element(By.CSS_SELECTOR, "#graph g.world")
    before = world.get_attribute("transform")
    browser.find_element(By.CSS_SELECTOR, "#toolbar .tool").click()
    zoomed = world.get_attribute("transform")
    assert zoomed != before
    pane = browser.find_element(By.ID, "graph")
    # Start the drag on empty paper (a drag on a box or a label does not pan), wherever the
    # layout leaves some: the first point of a grid over the pane that hits no drawing.
    paper = browser.execute_script(
        """const pane = document.getElementById("graph").getBoundingClientRect();
        for (let y = pane.top + 40; y < pane.bottom - 60; y += 20)
          for (let x = pane.left + 20; x < pane.right - 80; x += 20) {
            const hit = document.elementFromPoint(x, y);
            if (hit && hit.closest("#graph") && !hit.closest(".node, .edge, #legend, #toolbar"))
              return [x - (pane.left + pane.width / 2), y - (pane.top + pane.height / 2)];
          }
        return null;"""
    )
    assert paper is not None, "the zoomed picture leaves no empty paper to drag"
    # Offsets count from the pane's centre.
    webdriver.ActionChains(browser).move_to_element_with_offset(
        pane, round(paper[0]), round(paper[1])
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
        "return Array.from(document.querySelectorAll('#graph .edge text'), t =>"
        " Array.from(t.querySelectorAll('tspan'), s => s.textContent))"
    )
    # A long name is wrapped, one line under the other, never cut: the whole name is shown.
    from whyalive.render.picture import arrow_label

    lines = arrow_label(f"[{SCRIPT_CLOSE!r}]").split("\n")
    assert len(lines) > 1
    assert lines in labels
    assert "\u2026" not in "".join(lines)
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


# Waits below end when the page says so; the limit only turns a hang into a failure, it
# is no judgement of speed (a page is ready when its scripts have run).
HANG_S = 120


def _wait_for(driver: Any, script: str, what: str) -> None:
    deadline = time.monotonic() + HANG_S
    while not driver.execute_script(script):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} (nothing after {HANG_S} s: the page hangs)")
        time.sleep(0.02)


def _wait_until_fitted(driver: Any) -> None:
    fitted = "return document.querySelector('#graph g.world').hasAttribute('transform')"
    _wait_for(driver, fitted, "the picture was never fitted to its pane")


def _wait_until_ready(driver: Any) -> None:
    _wait_for(driver, "return document.body.dataset.ready === '1'", "the viewer never drew")


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
            sees = browser.execute_script(_WHAT_A_PERSON_SEES)
            # The same rules as a page of its own: heavy boxes and the cut in the pane,
            # readable labels, the answer above the frame's fold.
            assert sees["heavy"] >= 1, sees
            assert sees["heavy_inside"], sees
            assert sees["cuts_inside"], sees
            assert sees["smallest_label"] >= 11, sees
            assert sees["answer_bottom"] <= sees["fold"], sees
            seen.append(
                (
                    browser.find_element(By.ID, "headline").text,
                    len(browser.find_elements(By.CSS_SELECTOR, "#graph .node.member")),
                    browser.find_element(By.ID, "graph").rect["width"] > 300,
                    sees["cuts"],
                )
            )
            assert browser.execute_script("return window.parent === window") is False
        finally:
            browser.switch_to.default_content()
    numbers = [executed_notebook.cells[index].execution_count for index in cells]
    assert [headline for headline, *_ in seen] == [
        f"1 reference cycle keeps 4 tensors alive at In [{numbers[0]}]: 64.0 KiB on cpu",
        f"1 reference cycle keeps 2 tensors alive at In [{numbers[1]}], line 1 in <module>: "
        "8.0 KiB on cpu",
        "1 heavy object still alive: 400 B",
    ]
    assert [rest for _, *rest in seen] == [[2, True, 1], [2, True, 1], [0, True, 0]]
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
    # Every axis label and legend entry lies inside the viewBox, which is all a window
    # narrower than the picture shows (it scales the viewBox to its width).
    clipped = browser.execute_script(
        """const box = document.querySelector("#timeline svg").viewBox.baseVal;
        return Array.from(document.querySelectorAll("#timeline svg text"), t => [
            t.textContent, t.getBBox()]).filter(([_, b]) =>
            b.x < box.x || b.x + b.width > box.x + box.width).map(([words]) => words);"""
    )
    assert clipped == []
    legend = report.cycles[0].pattern
    assert legend in browser.find_element(By.CSS_SELECTOR, "#timeline svg").text
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
    page = browser.find_element(By.TAG_NAME, "body").text
    assert loop.title in page
    assert "1 loop through the autograd graph (C++), never freed" in page
    drawn = browser.find_elements(By.CSS_SELECTOR, "#graph .node.member, #graph .node.heavy")
    drawn_ids = {int(m.get_attribute("data-node")) for m in drawn}
    assert set(loop.members) <= drawn_ids  # the tensor on the loop is drawn as heavy
    details = browser.find_element(By.ID, "cycle-details").text
    assert loop.fix.replace("`", "") in details
    assert ".grad_fn (C++)" in details
    assert seen == {"requests": [], "failed": [], "errors": []}


@pytest.mark.whyalive_skip  # the loop beside the survivor is never freed: the suite's check sees it
def test_viewer_lists_a_survivor_held_by_a_cpp_owner(browser: Any, tmp_path: Path) -> None:
    """A listed survivor (held by an unnamed C/C++ owner): its own entry after the loops,
    drawn as a heavy box, its note and size shown when picked."""
    pytest.importorskip("torch")
    from scenarios import autograd_loops
    from whyalive import find_leaks
    from whyalive.report.merge import merge_reports
    from whyalive.report.survivors import held_natively_note

    note = held_natively_note(1)
    held = Report(
        nodes=(Node(0, "Tensor", "Tensor(float32[256, 256], cpu)", None, 80, True),),
        held_natively=(AliveObject(0, "Tensor(float32[256, 256], cpu)", 262144, "cpu", note=note),),
    )
    report = merge_reports([find_leaks(autograd_loops.tensor_hook), held])
    seen = _open(browser, report, tmp_path / "held.html")
    items = browser.find_elements(By.CSS_SELECTOR, "#cycles .cycle-item")
    assert len(items) == 2
    assert "Held by a C/C++ owner 1: Tensor(float32[256, 256], cpu)" in items[1].text
    items[1].click()
    details = browser.find_element(By.ID, "cycle-details").text
    assert "256.0 KiB" in details
    assert "held by a C/C++ owner outside Python" in details
    node_id = report.held_natively[0].node_id
    assert browser.find_elements(By.CSS_SELECTOR, f'#graph .node.heavy[data-node="{node_id}"]')
    assert seen == {"requests": [], "failed": [], "errors": []}
