"""rk.report pages in a real browser: headless Chromium driven by Playwright.

Checks: no console errors, no network request but the file itself, none of the hostile log's
scripts ran, the first-divergence section names the right step, moving the embedded scrubber
shows the state StateFrame.at gives for that event. Skips locally without Chromium or
Playwright; fails when CI=true.
"""

from __future__ import annotations

import json
import os
import re
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
    # Anything that is not the page itself is aborted (and still counted): see _open_file.
    return _open_file(browser, path)


def _open_file(browser: Any, path: Path, width: int = 1300) -> Opened:
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    console: list[tuple[str, str]] = []
    requests: list[str] = []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.on("request", lambda r: requests.append(r.url))
    url = path.resolve().as_uri()
    page.route("**/*", lambda route: route.continue_() if route.request.url == url
               else route.abort())
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_function("document.querySelectorAll('.figure .main-svg').length > 0")
    return Opened(page, console, requests)


# Hover every point of every trace of every figure (Plotly.Fx.hover) and collect the text of
# the hover labels a reader sees.
_HOVER_ALL = """() => {
  const out = [];
  for (const gd of document.querySelectorAll('.figure.js-plotly-plot')) {
    const data = gd._fullData || [];
    for (let c = 0; c < data.length; c++) {
      const n = (data[c].x || data[c].y || []).length;
      for (let p = 0; p < Math.min(n, 60); p++) {
        if (data[c].x && data[c].x[p] === null) { continue; }
        try { window.Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: p}]); }
        catch (e) { continue; }
        for (const el of gd.querySelectorAll('.hoverlayer .hovertext')) {
          out.push(el.textContent);
        }
        window.Plotly.Fx.unhover(gd);  // also clears plotly's hover throttle
      }
    }
    window.Plotly.Fx.unhover(gd);
  }
  return out;
}"""

# Every word of every visible table header cell must sit on one line (no wrap inside a word).
_HEADER_WORD_BREAKS = r"""() => {
  const bad = [];
  for (const th of document.querySelectorAll('th')) {
    if (!th.offsetParent) { continue; }
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      const re = /\S+/g; let m;
      while ((m = re.exec(node.data))) {
        const r = document.createRange();
        r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0)
                              .map(x => Math.round(x.top)));
        if (tops.size > 1) { bad.push(m[0]); }
      }
    }
  }
  return bad;
}"""

_ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")


def _check_reader_view(o: Opened) -> None:
    """No entity in any hover label; no header wraps inside a word."""
    hovers = o.page.evaluate(_HOVER_ALL)
    assert hovers, "no hover label appeared"
    bad = [h for h in hovers if _ENTITY.search(h)]
    assert bad == [], bad[:3]
    assert o.page.evaluate(_HEADER_WORD_BREAKS) == []


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
        shown = json.loads(page.locator("#rk-scrub-state").get_attribute("data-json"))
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


# ------------------------------------------------------------------------------ reader view
def test_demo_summary_states_values_and_policy_caveat(demo_page: Any) -> None:
    _, _, o = demo_page
    text = o.page.locator("#findings").inner_text()
    assert "args.claimedAmount 1800 \u2192 900" in text
    assert "output.score 0.81 \u2192 0.34" in text
    assert "fixture fx-risk-900 (provenance analyst" in text
    assert "copied from the recording under the recorded-only model policy" in text
    assert "guaranteed by the policy, not observed" in text
    # every sentence links to a section of the page that exists
    hrefs = o.page.eval_on_selector_all("#findings a.ev", "els => els.map(e => e.hash)")
    assert len(hrefs) >= 8
    for h in hrefs:
        assert o.page.locator(h).count() == 1, h
    o.page.locator("#findings a.ev").nth(1).click()
    assert o.page.evaluate("location.hash") == hrefs[1]


def test_demo_answer_line_badges_and_unsupported_findings(demo_page: Any) -> None:
    """Issue 28: the findings open with the answer, the unsupported conclusions are listed and
    counted, and every transcript step shows where it came from, with a legend."""
    res, _, o = demo_page
    page = o.page
    s = res.summary()
    answer = page.locator("#rk-answer")
    assert answer.inner_text().strip() == s.answer
    assert answer.get_attribute("data-verdict") == "undetermined"
    assert answer.inner_text().startswith("Undetermined:")
    assert "escalate-to-siu at step 14 is copied from the recording" in answer.inner_text()
    # it is the first thing in the findings box, above everything else
    first = page.evaluate("() => document.querySelector('#findings h2').nextElementSibling.id")
    assert first == "rk-answer"
    items = page.locator("#findings li.unsupported")
    assert items.count() == s.counts["unsupported"] == 5
    assert page.locator("#findings h3", has_text="Unsupported by the replay (5)").count() == 1
    steps = [int(items.nth(i).get_attribute("data-step")) for i in range(items.count())]
    assert steps == [4, 8, 13, 14, 17]
    # each links to its step in the transcript, which carries the flag
    for st in steps:
        step_el = page.locator(f"#rk-step-{st}")
        assert step_el.count() == 1
        assert step_el.locator(".flag").count() == 1
        assert "unsupported" in step_el.locator(".flag").inner_text()
    items.nth(3).locator("a.ev").click()
    assert page.evaluate("location.hash") == "#rk-step-14"
    assert "no longer offers" in page.locator("#rk-step-14 .why").inner_text()
    # a badge on every shown step, matching annotations_df().provenance, and a visible legend
    badges = page.eval_on_selector_all(
        ".rk-transcript [data-provenance]",
        "els => els.map(e => [+e.dataset.step, e.dataset.provenance, "
        "e.querySelector('.origin').innerText.trim()])")
    assert [b[0] for b in badges] == list(range(19))
    want = dict(zip(range(19), ["recorded"] * 3 + ["patched", "policy-copy", "recorded",
                                                    "recorded", "patched", "policy-copy",
                                                    "patched", "fixture", "recorded",
                                                    "patched", "policy-copy", "recorded",
                                                    "recorded", "patched", "policy-copy",
                                                    "recorded"], strict=True))
    assert {b[0]: b[1] for b in badges} == want
    assert want == dict(zip(res.annotations_df()["seq"].astype(int),
                            res.annotations_df()["provenance"], strict=True))
    assert {b[2] for b in badges if b[1] == "policy-copy"} == {"copied by policy"}
    legend = page.locator("#rk-provenance-legend")
    assert legend.is_visible()
    for word in ("recorded", "patched", "fixture", "copied by policy", "unsupported"):
        assert word in legend.inner_text()
    # the scrubber label names the provenance and the turn of the step too, and the state
    # pane shows no null step or turn (issue 31 item 9); data-json stays the exact state
    page.evaluate("rkScrubTo(13)")
    label = page.locator("#rk-scrub-label").inner_text()
    assert "policy-copy" in label and "step 13 of 18 \u00b7 turn 1 \u00b7" in label
    pane = page.locator("#rk-scrub-state").inner_text()
    assert "step: 13" in pane and "turn: 1" in pane and "null" not in pane.split("step:")[1][:6]
    assert json.loads(page.locator("#rk-scrub-state").get_attribute("data-json"))["step"] \
        is None


def test_demo_reader_view(browser: Any, demo_page: Any) -> None:
    """Hover labels show plain text and headers never break inside a word, also narrow."""
    _, path, o = demo_page
    _check_reader_view(o)
    narrow = _open_file(browser, path, width=820)
    try:
        assert narrow.page.evaluate(_HEADER_WORD_BREAKS) == []
        # the scrubber's status line is read whole, also narrow: it wraps under the
        # controls, nothing of it is cut or clipped, and it stays inside the scrubber
        lab = narrow.page.locator("#rk-scrub-label")
        assert lab.evaluate("e => getComputedStyle(e).textOverflow") != "ellipsis"
        assert lab.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        assert lab.evaluate("""e => { const r = e.getBoundingClientRect(),
            s = e.closest('.scrubber').getBoundingClientRect();
            return r.left >= s.left - 1 && r.right <= s.right + 1; }""")
        assert "base seq" in lab.inner_text()  # the end of the line is on the page
        assert lab.get_attribute("title") == lab.inner_text()
    finally:
        narrow.page.context.close()


def test_changes_show_values_and_step_with_keys(demo_page: Any) -> None:
    _, _, o = demo_page
    page = o.page
    rows = page.locator("#rk-changes tbody tr")
    text = page.locator("#changes").inner_text()
    assert "args.claimedAmount" in text and "1800" in text and "900" in text
    hits = page.locator("#rk-changes td.hit.col0")
    assert 0 < hits.count() < rows.count()  # key values highlighted, bookkeeping not
    assert hits.first.evaluate("e => getComputedStyle(e).backgroundColor") != \
        "rgba(0, 0, 0, 0)"
    page.locator("body").press("n")
    assert page.locator("#rk-change-label").inner_text() == f"change 1 of {rows.count()}"
    page.locator("body").press("n")
    page.locator("#rk-change-next").click()
    assert page.locator("#rk-changes tbody tr.current").count() == 1
    assert page.locator("#rk-change-label").inner_text() == f"change 3 of {rows.count()}"
    page.locator("#rk-change-prev").click()
    assert page.locator("#rk-change-label").inner_text().startswith("change 2 ")


def test_scrubber_shows_base_and_replay_side_by_side(demo_page: Any) -> None:
    res, _, o = demo_page
    page = o.page
    base = res.base.run(res.branch.run_id, tenant_id=res.branch.tenant_id)
    sfb = rk.fold(base, rk.agent())
    bseqs = base.table.column("seq").to_pylist()
    for i in (9, 10, 2):
        page.locator("#rk-scrub").fill(str(i))
        bev = json.loads(page.locator("#rk-scrub-base-event").inner_text())
        rev = json.loads(page.locator("#rk-scrub-event").inner_text())
        assert bev["step"] == rev["step"] == i
        assert json.loads(page.locator("#rk-scrub-base-state").get_attribute("data-json")) \
            == _plain(sfb.at(base.run_ids[0], bseqs[i], tenant_id="acme"))
    page.locator("#rk-scrub").fill("10")
    assert json.loads(page.locator("#rk-scrub-event").inner_text())["origin"] == "fixture"
    assert page.locator("#rk-scrub-label").inner_text().startswith("step 10 of 18")


# ------------------------------------------------------------------------------ paused
@pytest.fixture(scope="module")
def paused_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from test_report import demo_result

    res = rk.replay(demo_result().branch)  # no fixtures: pauses
    path = tmp_path_factory.mktemp("paused") / "paused.html"
    rca(res, title="RCA paused", question="q").save_html(path)
    o = _open_file(browser, path)
    yield res, path, o
    o.page.context.close()


def test_paused_report_names_the_requirement(paused_page: Any) -> None:
    res, path, o = paused_page
    _check_clean(o, path)
    req = res.requirements_df().iloc[0]
    findings = o.page.locator("#findings").inner_text()
    assert "The replay did not finish: it paused at step 9" in findings
    section = o.page.locator("#requirements").inner_text()
    for part in (req["tool_name"], req["ref_id"], req["args_hash"], "--fixtures",
                 f"toolName={req['tool_name']} & argsHash={req['args_hash']}"):
        assert part in section, part
    spec = json.loads(o.page.locator("#requirements .fixture-spec pre").first.inner_text())
    assert spec["toolName"] == req["tool_name"]
    assert spec["matcher"] == {"argsHash": req["args_hash"]}
    assert "narrow the intervention" not in findings  # the advice that applies: fixtures
    _check_reader_view(o)


# ------------------------------------------------------------------------------ cohort
@pytest.fixture(scope="module")
def cohort_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from replaykit.report import cohort

    frame, cs = cohort_frame()
    path = tmp_path_factory.mktemp("cohort") / "cohort.html"
    rep = cohort(frame, title="Cohorts", question="Did agents get worse?", cohorts=cs)
    rep.save_html(path)
    o = _open_file(browser, path)
    yield rep, path, o
    o.page.context.close()


# For each interval figure: pixel positions of zero and of each interval's ends on its axis.
_INTERVALS = """() => {
  const out = [];
  for (const gd of document.querySelectorAll('.figure[data-unit]')) {
    const ax = gd._fullLayout.xaxis;
    for (const tr of gd._fullData) {
      const ex = tr.error_x || {};
      for (let i = 0; i < tr.x.length; i++) {
        const lo = tr.x[i] - ex.arrayminus[i], hi = tr.x[i] + ex.array[i];
        out.push({unit: gd.getAttribute('data-unit'), label: tr.y[i], name: tr.name,
                  zero: ax.l2p(0), lo: ax.l2p(lo), hi: ax.l2p(hi), width: ax._length});
      }
    }
  }
  return out;
}"""


def test_cohort_report_headline_highlights_and_axes(cohort_page: Any) -> None:
    rep, path, o = cohort_page
    _check_clean(o, path)
    page = o.page
    adj = rep.data["adjusted"]
    hits = adj[adj["excludes_zero"].fillna(False).to_numpy(dtype=bool)]
    assert len(hits) >= 2  # the generated drift gives findings to show
    # the findings open with one sentence answering the question (issue 28)
    answer = page.locator("#rk-answer").inner_text().strip()
    assert answer == rep.data["answer"]
    both = [m for m in adj.loc[adj["holm"], "metric"].unique()
            if adj.loc[adj["metric"] == m, "holm"].all()]
    some = set(adj.loc[adj["holm"], "metric"]) - set(both)
    want = "Changed:" if both else "Undetermined:" if some else "No change:"
    assert answer.startswith(want), answer
    assert all(m in answer for m in both) and all(m in answer for m in some)
    assert page.locator("#rk-answer").get_attribute("data-verdict") == want[:-1].lower()
    head = page.locator("#rk-headline").inner_text()
    un = adj[adj["analysis"] == "unpaired"]
    assert head.startswith(f"unpaired: {int(un['excludes_zero'].sum())} of {len(un)} measures "
                           f"moved beyond their 95% interval; {int(un['holm'].sum())} after "
                           "Holm correction")
    findings = page.locator("#findings").inner_text()
    assert "Unpaired rows compare all 120 runs of 2025-fall with all 120 runs" in findings
    assert "Paired rows compare the" in findings and "by chance alone" in findings
    # every measure whose interval excludes zero is highlighted in its table ...
    for analysis in ("unpaired", "paired"):
        rows = page.locator(f"#table-{analysis} tbody tr")
        for i in range(rows.count()):
            cells = rows.nth(i).locator("td")
            measure = cells.first.inner_text()
            want = bool(adj[(adj["analysis"] == analysis) & (adj["metric"] == measure)]
                        ["excludes_zero"].iloc[0])
            bg = cells.first.evaluate("e => getComputedStyle(e).backgroundColor")
            assert (bg not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")) == want, measure
            if want:
                assert cells.nth(11).inner_text() == "yes"
    # ... and readable on its own axis: its interval is visibly apart from zero
    pts = page.evaluate(_INTERVALS)
    hit_pts = [p for p in pts if p["name"] == "interval excludes zero"]
    assert len(hit_pts) == len(hits)
    for p in hit_pts:
        gap = min(abs(p["lo"] - p["zero"]), abs(p["hi"] - p["zero"]))
        assert gap >= 3 and abs(p["hi"] - p["lo"]) >= 0.05 * p["width"], p
    # rates are drawn in percentage points, on an axis of their own
    assert {p["unit"] for p in pts} == {"rates", "counts", "tokens"}
    assert page.locator("#table-unpaired").inner_text().count("%") > 5
    # trend over semesters: one panel per measure, three semesters each
    trends = page.evaluate("""() => [...document.querySelectorAll('.figure[data-trend]')]
        .map(gd => gd._fullData.map(t => t.x.length))""")
    assert trends and all(n == 3 for fig in trends for n in fig)
    # issue 31 item 11: no label of a trend figure overlaps another (panel titles, cohort
    # tick labels, y tick labels), and no panel stretches a tiny change over its height
    overlaps = page.evaluate(_TREND_OVERLAPS)
    assert overlaps == [], overlaps[:5]
    spans = page.evaluate("""() => [...document.querySelectorAll('.figure[data-trend]')]
        .flatMap(gd => Object.keys(gd._fullLayout).filter(k => k.startsWith('yaxis'))
        .map(k => gd._fullLayout[k].range[1] - gd._fullLayout[k].range[0]))""")
    assert spans and min(spans) >= 1.0, spans
    _check_reader_view(o)


# ------------------------------------------------------------------------------ hostile view
def test_hostile_report_reader_view(browser: Any, tmp_path: Path) -> None:
    from test_report import XSS_BREAK, hostile_result

    res = hostile_result(tmp_path)
    path = tmp_path / "hostile.html"
    rca(res, title="T \"q\" & 'x'", question=f"Q {XSS_BREAK}").save_html(path)
    o = _open_file(browser, path)
    try:
        o.page.wait_for_timeout(200)
        _check_clean(o, path)
        hovers = o.page.evaluate(_HOVER_ALL)
        assert any("<img src=x onerror=" in h for h in hovers)  # shown as text, verbatim
        assert not [h for h in hovers if _ENTITY.search(h)]
        assert o.page.evaluate(_HEADER_WORD_BREAKS) == []
        assert "<script>window.__pwned" in o.page.locator("#transcript").inner_text()
    finally:
        o.page.context.close()


# ------------------------------------------------------------------------------ long run
LONG = 8_000  # beyond every bound of the report (scrubber, transcript, figures, tables)


@pytest.fixture(scope="module")
def long_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The report of a long replay (benchmarks.bench_report's case), as a reader opens it."""
    from benchmarks.bench_report import make_case

    d = make_case(tmp_path_factory.mktemp("long"), LONG)
    log = rk.read_isplay(d / "log", owner="bench", progress=False)
    branch = rk.Branch.load(d / "branch.json", base=log, tenant_id="bench")
    res = rk.replay(branch, model_policy="recorded-only", tool_policy="pause-for-fixture",
                    fixtures=d / "fixtures.json")
    path = d / "rca.html"
    rca(res, title="Long replay", question="What changes under greedy decoding?"
        ).save_html(path)
    o = _open(browser, path)
    yield res, path, o
    o.page.context.close()


# pairs of overlapping text labels inside each trend figure (titles and tick labels)
_TREND_OVERLAPS = """() => {
  const out = [];
  for (const gd of document.querySelectorAll('.figure[data-trend]')) {
    const els = [...gd.querySelectorAll('.annotation-text, .xtick text, .ytick text')]
      .filter(e => e.textContent.trim());
    const boxes = els.map(e => [e.textContent, e.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [ta, a] = boxes[i], [tb, b] = boxes[j];
        const ix = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const iy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (ix > 1 && iy > 1) { out.push([ta, tb]); }
      }
    }
  }
  return out;
}"""


# the box of an element in page coordinates, and whether any ancestor clips it
_BOX = """(el) => { const r = el.getBoundingClientRect();
  let clipped = false;
  for (let p = el.parentElement; p; p = p.parentElement) {
    const s = getComputedStyle(p), q = p.getBoundingClientRect();
    if (s.overflow !== 'visible' && (r.left < q.left - 1 || r.right > q.right + 1)) {
      clipped = true; }
  }
  return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, left: r.left,
          right: r.right, width: r.width, height: r.height, clipped: clipped,
          visible: getComputedStyle(el).visibility !== 'hidden'
                   && getComputedStyle(el).display !== 'none',
          page: document.documentElement.clientWidth}; }"""


def test_long_report_states_finding_and_sampling(long_page: Any) -> None:
    res, path, o = long_page
    _check_clean(o, path)
    assert path.stat().st_size < 8_000_000
    page = o.page
    step = int(res.metrics["first_divergence_step"])
    assert step > 0
    findings = page.locator("#findings").inner_text()
    # every field counts: the greedy-decoding patch changes requests before the signatures
    # differ, and the findings name both steps
    diff = res.diff_df()
    first = int(diff.loc[diff["status"] != "same", "replay_seq"].min())
    assert first <= step
    assert f"first diverges from the recording at step {first:,}" in findings
    if first < step:
        assert f"the first change in kind, tool, arguments or text is at step {step:,}" \
            in findings
    # every sampled figure has a visible, uncut caption above the figure it describes
    caps = page.locator("#figures p.sampled")
    assert caps.count() >= 3  # divergence timeline, tool swimlane, state timeline
    for k in range(caps.count()):
        cap = caps.nth(k)
        box = cap.evaluate(_BOX)
        assert box["visible"] and box["height"] >= 10 and box["width"] > 200, box
        assert box["left"] >= 0 and box["right"] <= box["page"] and not box["clipped"], box
        fig = cap.evaluate_handle("el => el.nextElementSibling")
        assert fig.evaluate("el => el.classList.contains('figure')")
        assert box["bottom"] <= fig.evaluate(_BOX)["top"] + 1
    first = caps.nth(0).inner_text()
    assert first.startswith("Sampled figure.")
    assert re.search(rf"base: showing 2,00\d of {LONG:,} events", first), first
    assert re.search(rf"replay: showing 2,00\d of {LONG:,} events", first), first
    # the drawn points are what the caption says (at most 2,000 per lane, plus the divergence)
    lanes = page.evaluate("""() => { const gd = document.getElementById('rk-fig-0');
      const n = {base: 0, replay: 0};
      for (const t of gd._fullData) { if (t.y && t.y[0] in n) { n[t.y[0]] += t.x.length; } }
      return n; }""")
    assert 1_900 <= lanes["base"] <= 2_001 and 1_900 <= lanes["replay"] <= 2_001, lanes
    # the transcript, the tool diff and the scrubber say what part of the run they hold
    assert re.search(rf"Showing 120 of\s+{LONG:,} events of the run \(the first ones and a window",
                     page.locator("#transcript").inner_text())
    assert page.locator("#transcript .gap").first.is_visible()
    assert re.search(r"Showing rows [\d,]+\u2013[\d,]+ of [\d,]+ tool calls \(from just "
                     r"before the first difference", page.locator("#tool-diff").inner_text())
    scrub_note = page.locator("#scrubber p.note").inner_text()
    assert f"of {LONG:,} events" in scrub_note and "around the first divergence" in scrub_note


def test_long_report_scrubber_opens_at_the_divergence(long_page: Any) -> None:
    res, _, o = long_page
    page = o.page
    step = int(res.metrics["first_divergence_step"])
    assert page.locator("#rk-scrub-state").get_attribute("data-step") == str(step)
    label = page.locator("#rk-scrub-label").inner_text()
    assert label.startswith(f"step {step:,} of {LONG - 1:,}"), label
    event = json.loads(page.locator("#rk-scrub-event").inner_text())
    assert event["step"] == step and event["origin"] == "patched"
    shown = json.loads(page.locator("#rk-scrub-state").get_attribute("data-json"))
    sf = rk.fold(res.events, rk.agent())
    assert shown == _plain(sf.at(res.run_id, event["seq"], tenant_id="bench"))
    base = json.loads(page.locator("#rk-scrub-base-state").get_attribute("data-json"))
    base_log = res.base.run(res.branch.run_id, tenant_id="bench")
    bsf = rk.fold(base_log, rk.agent())
    bev = json.loads(page.locator("#rk-scrub-base-event").inner_text())
    assert base == _plain(bsf.at(base_log.run_ids[0], bev["seq"], tenant_id="bench"))
    shot = Path(os.environ.get("REPLAYKIT_SHOT_DIR", str(Path(o.page.url[7:]).parent))) \
        / "long-figures.png"
    page.locator("#figures").screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_vs_run_report_leads_with_the_agents_actions(browser: Any, tmp_path: Path) -> None:
    """Two real Claude Code sessions compared (rk.compare_runs): the page renders offline
    without errors, its first screen is the answer line naming where the runs part and each
    run's tool calls, then the findings; the scrubber names run A and run B."""
    cc = Path(__file__).resolve().parents[1] / "data" / "claude_code" / "spotter"
    log = rk.read_events([cc / "short.jsonl", cc / "tool_heavy.jsonl"], owner="t",
                         progress=False)
    a, b = log.run_ids
    cmp = rk.compare_runs(log, runs=(a, b))
    path = tmp_path / "runs.html"
    rca(cmp).save_html(path)
    o = _open(browser, path)
    assert [c for c in o.console if c[0] in ("error", "pageerror")] == []
    assert o.requests == [path.resolve().as_uri()]
    answer = o.page.inner_text("#rk-answer")
    assert answer.startswith(f"Different: the runs part at step {cmp.first_divergence}")
    assert "tool calls run A 2 (Bash, Glob) vs run B 6" in answer
    assert "associations, not causes" in answer
    box = o.page.locator("#rk-answer").bounding_box()
    assert box is not None and box["y"] + box["height"] < 900  # on the first screen
    assert o.page.locator("a[href='#interventions']").first.inner_text() == "Runs compared"
    assert o.page.locator("#rk-no-intervention").count() == 1
    heads = o.page.locator(".scrubber h4").all_inner_texts()
    assert heads[:2] == ["run A: event at this step", "run B: event at this step"]
    o.page.screenshot(path=str(tmp_path / "runs-first-screen.png"))
    assert (tmp_path / "runs-first-screen.png").stat().st_size > 10_000


_FIRST_SCREEN = """() => {
  const q = document.querySelector('section#question .question').getBoundingClientRect();
  const a = document.querySelector('#findings .answer').getBoundingClientRect();
  return [q.top, q.bottom, a.top, a.bottom, window.innerHeight];
}"""


def test_the_question_then_the_answer_open_every_report(browser: Any, demo_page: Any,
                                                        tmp_path: Path) -> None:
    """The demo RCA report and a cohort report: the question is the first thing read, and
    the answer below it is still on the first screen (1300 x 900), also 1024 wide."""
    _, path, o = demo_page
    compare, cs = cohort_frame()
    cohort_path = tmp_path / "cohort.html"
    rk.report.cohort(compare, title="Fall vs spring", question="Did the agent change?",
                     cohorts=cs).save_html(cohort_path)
    for p in (path, cohort_path):
        for width in (1300, 1024):
            opened = _open_file(browser, p, width=width)
            try:
                first = opened.page.evaluate(
                    "() => document.querySelector('main section').id")
                assert first == "question", p
                q_top, q_bottom, a_top, a_bottom, height = opened.page.evaluate(_FIRST_SCREEN)
                assert q_bottom <= a_top, (p, width)  # the question above the answer
                assert a_bottom <= height, (p, width, a_bottom)  # both on the first screen
            finally:
                opened.page.context.close()
