"""Notebook 06 in a real front end: JupyterLab in headless Chromium (Playwright).

Starts a JupyterLab server on a copy of notebook 06 (so autosave never touches the committed
file), runs every cell from the Run menu, then drives the explorers with the mouse and the
keyboard: the Scrubber beside the base (drag the slider handle, then arrow keys) and the
DiffExplorer (click "next change", then Enter on the focused button, then arrow keys on its row
slider), checking after each move that the panes show a different event. It also reads the
notebook's ``rk.for_people`` tables and the CohortExplorer's table off the page (headers drawn
and apart, short values on one line, no escaped HTML or pandas' NaN, numbers as people write
them) and screenshots each (``REPLAYKIT_SCREENSHOTS=DIR`` keeps them). Skips locally without
Chromium, Playwright or JupyterLab; fails when CI=true.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_report_browser import ARGS, _ci, _need_browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "06_visual_tour.ipynb"
TOKEN = "replaykit-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        if _ci():
            pytest.fail("jupyterlab is not installed and CI=true (it is in the dev extra)")
        pytest.skip("jupyterlab not installed")
    with serve(tmp_path_factory.mktemp("lab")) as url:
        yield url


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """A JupyterLab server on a copy of notebook 06 in ``root``; yields its URL."""
    (root / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, root / "notebooks" / NOTEBOOK)
    (root / "data").symlink_to(ROOT / "data")
    # every cell in the DOM (no windowing), no news or update pop-ups
    settings = root / ".settings"
    for ext, body in (("notebook-extension/tracker", {"windowingMode": "none"}),
                      ("apputils-extension/notification",
                       {"fetchNews": "false", "checkForUpdates": False})):
        f = settings / "@jupyterlab" / f"{ext}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(body))
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".jupyter"),
               JUPYTER_RUNTIME_DIR=str(root / ".runtime"), JUPYTER_DATA_DIR=str(root / ".data"),
               JUPYTER_PLATFORM_DIRS="1")
    # the venv's share/jupyter (lab extensions: ipywidgets, plotly) stays on the data path
    log = (root / "lab.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
         "--ServerApp.disable_check_xsrf=True", "--LabApp.news_url=", "--allow-root",
         "--LabApp.extension_manager=readonly",
         f"--LabApp.user_settings_dir={settings}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError("JupyterLab did not start:\n"
                                   + (root / "lab.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _run_notebook(browser: Any, url: str) -> Any:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{url}/lab/tree/notebooks/{NOTEBOOK}?token={TOKEN}&reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    # wait for the kernel to be idle, then Run > Run All Cells
    page.wait_for_function("() => /\\| Idle/.test(document.body.innerText)", timeout=90_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    n_code = len([c for c in json.loads((ROOT / "notebooks" / NOTEBOOK).read_text())["cells"]
                  if c["cell_type"] == "code"])
    page.wait_for_function(
        """n => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                  .map(e => e.textContent.trim());
                  return p.length === n && p.every(t => /^\\[\\d+\\]:$/.test(t)); }""",
        arg=n_code, timeout=180_000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                          ", .jp-RenderedText[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.first.inner_text()[:2000] if errors.count() else ""
    return page


def _widget_box(page: Any, marker: str) -> Any:
    """The widget output holding the text ``marker`` (a label of that explorer)."""
    box = page.locator(".jp-OutputArea-output .widget-vbox", has_text=marker).first
    box.scroll_into_view_if_needed()
    return box


def _center(loc: Any) -> None:
    loc.evaluate("e => e.scrollIntoView({block: 'center'})")


def _text(loc: Any) -> str:
    return str(loc.inner_text())


@pytest.fixture(scope="module")
def lab_page(lab: str) -> Iterator[Any]:
    sync_playwright, exe = _need_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=ARGS, headless=True)
        page = _run_notebook(b, lab)
        yield page
        b.close()


_BROKEN_WORDS_JS = """(box) => {
  const pres = [...box.querySelectorAll('.rk-pane pre')];
  let words = 0, broken = [], outside = 0;
  for (const p of pres) {
    const pane = p.closest('.rk-pane').getBoundingClientRect();
    if (p.getBoundingClientRect().right > pane.right + 1) outside++;
    const walk = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walk.nextNode())) {
      // a word: a run of letters and digits (a line may break at spaces and punctuation,
      // never inside one: JupyterLab's own CSS would break anywhere)
      const re = /\\w+/g; let m;
      while ((m = re.exec(node.data))) {
        words++;
        const r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        if (r.getClientRects().length > 1) broken.push(m[0]);
      }
    }
  }
  return [pres.length, words, broken, outside];
}"""


def test_scrubber_panes_wrap_between_words_inside_their_pane(lab_page: Any) -> None:
    # a long line (a message, a prompt) wraps inside its pane instead of running past the
    # pane's edge out of reach; no word (a source path) is broken (JupyterLab's CSS breaks
    # <pre> text at any character)
    box = _widget_box(lab_page, "base (recording): event at this step")
    assert '"source": "isplay:' in _text(box)
    panes, words, broken, outside = box.evaluate(_BROKEN_WORDS_JS)
    assert panes >= 4 and words > 50
    assert broken == [] and outside == 0


def test_scrubber_moves_with_mouse_and_keyboard(lab_page: Any) -> None:
    page = lab_page
    box = _widget_box(page, "base (recording): event at this step")
    replay_pane = box.locator(".widget-html").filter(has_text='"seq"').nth(1)
    base_pane = box.locator(".widget-html").filter(has_text='"seq"').first
    before = _text(replay_pane)
    assert '"seq": 10' in before and '"seq": 10' in _text(base_pane)
    handle = box.locator(".noUi-handle, .widget-slider .ui-slider-handle").first
    track = box.locator(".noUi-target, .widget-slider .slider").first
    _center(handle)  # not under the notebook's sticky toolbar
    hb, tb = handle.bounding_box(), track.bounding_box()
    # mouse: drag the handle to the left end of the track
    page.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2)
    page.mouse.down()
    page.mouse.move(tb["x"] - 40, hb["y"] + hb["height"] / 2, steps=8)  # past the end
    page.mouse.up()
    # both panes follow the slider: wait for each to show the left end (they update one
    # after the other, and a drag passes through intermediate steps)
    page.wait_for_function(
        "([a, b]) => a.innerText.includes('\"seq\": 0') && b.innerText.includes('\"seq\": 0')",
        arg=[replay_pane.element_handle(), base_pane.element_handle()], timeout=30_000)
    after_mouse = _text(replay_pane)
    assert '"seq": 0' in after_mouse and '"seq": 0' in _text(base_pane)
    # keyboard: focus the handle, three steps right
    handle.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([a, b, box]) => a.innerText.includes('\"seq\": 3') && "
        "b.innerText.includes('\"seq\": 3') && box.innerText.includes('step 3 of 18')",
        arg=[replay_pane.element_handle(), base_pane.element_handle(), box.element_handle()],
        timeout=30_000)
    assert '"seq": 3' in _text(base_pane) and '"seq": 3' in _text(replay_pane)
    assert "step 3 of 18" in _text(box)


def test_diff_explorer_steps_with_mouse_and_keyboard(lab_page: Any) -> None:
    page = lab_page
    box = _widget_box(page, "next change")
    values = box.locator(".widget-html", has=page.locator("table.rk-values")).first
    header = box.locator(".widget-html", has_text="status").first
    assert "row 3 of 19" in _text(header)
    first = _text(values)
    # mouse: click "next change"
    _center(box.get_by_role("button", name="next change"))
    box.get_by_role("button", name="next change").click()
    # every field counts: the request at row 7 (temperature, tools patched) is a change too
    page.wait_for_function(
        "([h, v]) => h.innerText.includes('row 7 ') && "
        "v.innerText.includes('settings.temperature')",
        arg=[header.element_handle(), values.element_handle()], timeout=30_000)
    assert "patched" in _text(header)  # the provenance badge of the replayed step
    box.get_by_role("button", name="next change").click()
    page.wait_for_function(  # header and values pane update one after the other
        "([h, v]) => h.innerText.includes('row 9 ') && v.innerText.includes('args.claimedAmount')",
        arg=[header.element_handle(), values.element_handle()], timeout=30_000)
    assert "args.claimedAmount" in _text(values) and _text(values) != first
    # keyboard: the focused button again, with Enter
    box.get_by_role("button", name="next change").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "([h, v]) => h.innerText.includes('row 10 ') && v.innerText.includes('output.score')",
        arg=[header.element_handle(), values.element_handle()], timeout=30_000)
    assert "output.score" in _text(values)
    marked = box.locator(".rk-changed", has_text="0.34")
    assert marked.count() >= 1  # the changed line of the replay event is highlighted
    # keyboard on the row slider: one step right leaves the changed rows
    handle = box.locator(".noUi-handle, .widget-slider .ui-slider-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([h, b]) => h.innerText.includes('row 11 ') && b.innerText.includes('no value changed')",
        arg=[header.element_handle(), box.element_handle()], timeout=30_000)
    assert "no value changed" in _text(box)


def test_answer_line_badges_and_unsupported_findings_on_the_page(lab_page: Any) -> None:
    """Issue 28: the notebook shows the summary's answer line and its unsupported findings,
    and the explorers show each step's provenance badge, the legend and the flags."""
    page = lab_page
    text = page.locator(".jp-Notebook").inner_text()
    # the answer leads with the agent's changed call (issue 41), then the outcome
    assert "Undetermined: after risk-signals was called with args.claimedAmount 1800" in text
    assert "the run ends as recorded" in text
    assert "Unsupported by the replay (5):" in text
    assert "no longer offers" in text
    # the transcript widget: a badge on every step, the legend, five flags
    tr = page.locator(".jp-OutputArea-output .rk-transcript").first
    _center(tr)
    assert tr.locator("[data-provenance]").count() == 19
    assert tr.locator("[data-provenance='policy-copy'] .origin").first.inner_text().strip() \
        == "copied by policy"
    legend = tr.locator("#rk-provenance-legend")
    assert legend.is_visible() and "copied by policy" in _text(legend)
    flags = tr.locator(".msg.unsupported .flag")
    assert flags.count() == 5 and flags.first.is_visible()
    # the replay scrubber: badge and legend with the panes
    box = _widget_box(page, "base (recording): event at this step")
    assert box.locator(".rk-badge").count() >= 1 and box.locator(".rk-legend").count() == 1


def lab_screenshots(out: Path) -> list[Path]:
    """Run notebook 06 in JupyterLab and screenshot each explorer (for tools/screenshots.py)."""
    sync_playwright, exe = _need_browser()
    import tempfile

    shots = []
    with serve(Path(tempfile.mkdtemp(prefix="lab"))) as url:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=exe, args=ARGS, headless=True)
            page = _run_notebook(b, url)
            for name, marker in (("scrubber", "base (recording): event at this step"),
                                 ("diff-explorer", "next change"),
                                 ("transcript", "run tree")):
                box = _widget_box(page, marker)
                if name == "diff-explorer":
                    box.get_by_role("button", name="next change").click()
                    box.get_by_role("button", name="next change").click()
                    page.wait_for_timeout(500)
                shot = out / f"lab-{name}.png"
                box.screenshot(path=str(shot))
                shots.append(shot)
            b.close()
    return shots


#: What the page must never show in a table: a missing value as pandas prints it, or HTML
#: escaped twice (an entity on the screen instead of the character).
_RAW_CELLS = {"nan", "NaN", "None", "NaT", "<NA>"}
_ENTITY = re.compile(r"&(lt|gt|amp|quot|#\d+);")
#: A number as people read it: 1,234 or 0.34 or -1.67 (never 0.3400000001 or 1234.0).
_NUMBER = re.compile(r"-?\d{1,3}(,\d{3})*(\.\d{1,3})?%?|exact")

_TABLE_JS = """(t) => {
  const text = e => e.innerText.trim();
  const heads = [...t.querySelectorAll('thead th')].map(text).filter(s => s);
  const clipped = [...t.querySelectorAll('thead th')]
      .filter(h => h.scrollWidth > h.clientWidth + 1).map(text);
  const rows = [...t.querySelectorAll('tbody tr')]
      .map(r => [...r.querySelectorAll('td')].map(text));
  const rects = e => { const r = document.createRange(); r.selectNodeContents(e);
                       return [...r.getClientRects()].filter(x => x.width > 0); };
  // a short value broken over lines (a run id at its hyphens)
  const wrapped = [...t.querySelectorAll('th, td')]
      .filter(e => text(e).length && text(e).length <= 40
                   && new Set(rects(e).map(x => Math.round(x.top))).size > 1).map(text);
  // neighbouring header labels that (nearly) touch: "base_events replay_events" run together
  const hs = [...t.querySelectorAll('thead tr:last-child th')].filter(h => text(h));
  const tight = [];
  for (let i = 0; i + 1 < hs.length; i++) {
    const a = rects(hs[i]), b = rects(hs[i + 1]);
    if (a.length && b.length && b[0].left - a[a.length - 1].right < 8)
      tight.push(text(hs[i]) + ' | ' + text(hs[i + 1]));
  }
  const box = t.getBoundingClientRect();
  return {heads, clipped, rows, wrapped, tight, width: box.width, height: box.height,
          color: getComputedStyle(t.querySelector('thead th') || t).color};
}"""


def _shots_dir(tmp_path: Path) -> Path:
    """Where the screenshots go: $REPLAYKIT_SCREENSHOTS (to look at them) or the test's tmp."""
    out = Path(os.environ.get("REPLAYKIT_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _read_table(table: Any) -> dict[str, Any]:
    _center(table)
    got: dict[str, Any] = table.evaluate(_TABLE_JS)
    return got


def _check_people_table(got: dict[str, Any], heads: list[str], numeric: list[str]) -> None:
    assert got["heads"][-len(heads):] == heads, got["heads"]  # a leading index header is fine
    assert got["clipped"] == [] and got["width"] > 100 and got["height"] > 20
    assert got["wrapped"] == [] and got["tight"] == [], (got["wrapped"], got["tight"])
    assert got["color"] not in ("rgba(0, 0, 0, 0)", "transparent")  # headers are drawn
    cells = [c for row in got["rows"] for c in row]
    assert cells and not _RAW_CELLS & set(cells), got["rows"]
    assert not [c for c in cells if _ENTITY.search(c)], got["rows"]  # escaped once, not twice
    for name in numeric:
        col = len(got["rows"][0]) - len(heads) + heads.index(name)
        values = [row[col] for row in got["rows"] if row[col]]
        assert values and all(_NUMBER.fullmatch(v) for v in values), (name, values)


def test_people_tables_and_a_widget_table_read_well_in_lab(lab_page: Any, tmp_path: Path
                                                           ) -> None:
    """Issue 31 items 2 and 10 on the screen: the notebook's rk.for_people tables and the
    CohortExplorer's table, as JupyterLab draws them in Chromium, show readable headers, no
    escaped HTML or pandas' missing-value markers, and numbers as people write them; each is
    screenshotted ($REPLAYKIT_SCREENSHOTS keeps the images)."""
    page = lab_page
    out = _shots_dir(tmp_path)
    output = ".jp-OutputArea-output"
    unsupported = page.locator(f"{output} table", has=page.locator("th", has_text="because_step"))
    changes = page.locator(f"{output} table", has=page.locator("th", has_text="origin")).filter(
        has=page.locator("th", has_text="before"))
    explorer = page.locator(f"{output} .widget-html table",
                            has=page.locator("th", has_text="changed_descendants")).first
    checks = (("people-unsupported", unsupported.first,
               ["step", "kind", "tool_name", "reason", "because_step"], ["step", "because_step"]),
              ("people-changes", changes.first,
               ["step", "kind", "tool_name", "origin", "label", "before", "after"], ["step"]),
              ("widget-cohort-explorer", explorer, None, ["changed_descendants"]))
    for name, table, heads, numeric in checks:
        got = _read_table(table)
        _check_people_table(got, heads or got["heads"], numeric)
        shot = out / f"lab-{name}.png"
        # the widget's table scrolls in its own box: the picture is what that box shows
        (table.locator("xpath=ancestor::div[contains(@class, 'widget-html')][1]")
         if name.startswith("widget") else table).screenshot(path=str(shot))
        assert shot.stat().st_size > 2_000
    # the explorer's -1 (never diverges) reads "exact"; the raw frame's dtypes stay numbers
    text = _text(explorer)
    assert "-1" not in text.split()
