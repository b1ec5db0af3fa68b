"""rk.report pages in a real browser: headless Chromium driven by Playwright.

Checks: no console errors, no network request but the file itself, none of the hostile log's
scripts ran, the first-divergence section names the right step, moving the embedded scrubber
shows the state StateFrame.at gives for that event. Skips locally without Chromium or
Playwright; fails when CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import replaykit as rk
from replaykit.report import rca

CHROMIUM = os.environ.get("REPLAYKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _need_browser() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if _ci():
            pytest.fail("playwright is not installed and CI=true: the browser tests must run")
        pytest.skip("playwright not installed")
    exe = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not exe:
        if _ci():
            pytest.fail(f"no Chromium at {CHROMIUM} and CI=true: install it (apt-get install "
                        "chromium)")
        pytest.skip("chromium not installed")
    return sync_playwright, exe


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_playwright, exe = _need_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=ARGS, headless=True)
        yield b
        b.close()


def cohort_frame() -> tuple[Any, Any]:
    """A three-semester generated log whose last semester aborts and errors more: a compare
    frame of the last two semesters (some intervals exclude zero) and its Cohorts."""
    from replaykit.datasets import generate_cohorts

    cd = generate_cohorts(runs=360, events_per_run=20,
                          semesters=("2025-spring", "2025-fall", "2026-spring"),
                          error_rate=(0.05, 0.06, 0.14), abort_rate=(0.02, 0.03, 0.12), seed=3)
    cs = rk.cohorts(cd.log, by="semester")
    return cs.compare("2025-fall", "2026-spring", n_boot=400), cs


class Opened:
    def __init__(self, page: Any, console: list[tuple[str, str]], requests: list[str]) -> None:
        self.page, self.console, self.requests = page, console, requests


def _open(browser: Any, path: Path) -> Opened:
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    console: list[tuple[str, str]] = []
    requests: list[str] = []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url))
    # Anything that is not the page itself is aborted (and still counted above).
    url = path.resolve().as_uri()
    page.route("**/*", lambda route: route.continue_() if route.request.url == url
               else route.abort())
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_function("document.querySelectorAll('.figure .main-svg').length > 0")
    return Opened(page, console, requests)


def _check_clean(o: Opened, path: Path) -> None:
    errors = [c for c in o.console if c[0] in ("error", "pageerror")]
    assert errors == []
    assert o.requests == [path.resolve().as_uri()]  # zero network requests
    assert o.page.evaluate("window.__pwned === undefined")


# ------------------------------------------------------------------------------ demo
@pytest.fixture(scope="module")
def demo_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from test_report import demo_result

    res = demo_result()
    path = tmp_path_factory.mktemp("report") / "rca.html"
    rca(res, title="RCA-311", question="Does dropping the clause change the outcome?"
        ).save_html(path)
    o = _open(browser, path)
    yield res, path, o
    o.page.context.close()


def test_demo_renders_offline_without_errors(demo_page: Any) -> None:
    res, path, o = demo_page
    _check_clean(o, path)
    assert o.page.locator(".figure .main-svg").count() >= 3  # figures drawn by Plotly
    assert o.page.locator("#rk-class").inner_text() == "diverged_but_comparable"


def test_first_divergence_names_the_step(demo_page: Any) -> None:
    res, _, o = demo_page
    step = res.metrics["first_divergence_step"]
    assert step == 3
    text = o.page.locator("#rk-first-divergence").inner_text()
    assert text.startswith(f"First divergence at step {step} ")


def _plain(state: Any) -> Any:
    return json.loads(json.dumps(state, default=lambda o: dict(o) if hasattr(o, "items")
                                 else list(o)))


def test_scrubber_shows_the_state_of_each_step(demo_page: Any) -> None:
    res, _, o = demo_page
    page = o.page
    tenant = res.events.tenants[0]
    sf = rk.fold(res.events, rk.agent())
    seqs = res.events.table.column("seq").to_pylist()
    # opens at the first divergence
    assert page.locator("#rk-scrub-state").get_attribute("data-step") == "3"
    seen = set()
    for i in (0, 5, 9, 10, 4, len(seqs) - 1):
        page.locator("#rk-scrub").fill(str(i))  # moves the range input, fires input/change
        assert page.locator("#rk-scrub-state").get_attribute("data-step") == str(i)
        shown = json.loads(page.locator("#rk-scrub-state").inner_text())
        assert shown == _plain(sf.at(res.run_id, seqs[i], tenant_id=tenant)), i
        event = json.loads(page.locator("#rk-scrub-event").inner_text())
        assert event["seq"] == seqs[i] and event["step"] == i
        seen.add(json.dumps(shown, sort_keys=True))
    assert len(seen) >= 4  # moving it really changes the shown state
    page.locator("#rk-scrub-prev").click()
    assert page.locator("#rk-scrub-state").get_attribute("data-step") == str(len(seqs) - 2)


def test_screenshot(demo_page: Any, tmp_path: Path) -> None:
    _, _, o = demo_page
    shot = Path(os.environ.get("REPLAYKIT_SHOT_DIR", str(tmp_path))) / "report.png"
    o.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------ hostile
def test_hostile_log_runs_no_script(browser: Any, tmp_path: Path) -> None:
    from test_report import HOSTILE_TOOL, XSS_BREAK, XSS_IMG, XSS_SCRIPT, hostile_result

    res = hostile_result(tmp_path)
    path = tmp_path / "hostile.html"
    rca(res, title=f"T {XSS_SCRIPT}", question=f"Q {XSS_BREAK}", notes=XSS_IMG).save_html(path)
    o = _open(browser, path)
    try:
        page = o.page
        # let any injected handler (img onerror, scripts) get its chance
        page.wait_for_timeout(300)
        _check_clean(o, path)
        assert page.locator("main img").count() == 0
        assert page.evaluate("document.scripts.length") == 2 + len(
            page.query_selector_all("script[type='application/json']"))
        assert page.title() == f"T {XSS_SCRIPT}"  # shown as text
        assert XSS_BREAK in page.locator("#question").inner_text()
        assert HOSTILE_TOOL in page.locator("#tool-diff").inner_text()
        # scrubber text panes show the strings verbatim
        page.locator("#rk-scrub").fill("4")
        event = json.loads(page.locator("#rk-scrub-event").inner_text())
        assert event["tool_name"] == HOSTILE_TOOL
        shot = Path(os.environ.get("REPLAYKIT_SHOT_DIR", str(tmp_path))) / "hostile.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    finally:
        o.page.context.close()
