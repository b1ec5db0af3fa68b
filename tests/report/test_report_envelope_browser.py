"""Issue 41 item 3, looked at in headless Chromium: the first screen of an RCA report over a
real Claude Code session leads with what the agent called and received, not with the
transcript lines' envelope (cwd, git branch, uuids, timestamps), and no terminal state reads
as a bare kind ("(other)", "(checkpoint)").

The replay: a WebSearch call of tests/data/claude_code/spotter/tool_heavy.jsonl asked with
another query, answered by a live executor (whose result has none of the line's envelope).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import replaykit as rk
from replaykit.report import rca

pytestmark = pytest.mark.slow  # a browser (conftest's make-check rule)

CLAUDE = Path(__file__).resolve().parents[1] / "data" / "claude_code" / "spotter" / \
    "tool_heavy.jsonl"
QUERY = "xterm.js wheel events in an iframe"
LIVE = "3 results: xterm.js captures wheel events; use attachCustomWheelEventHandler"
VIEWPORT = {"width": 1300, "height": 900}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from test_report_browser import ARGS, _need_browser

    sync_playwright, exe = _need_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(browser: Any, tmp_path_factory: Any) -> Iterator[tuple[Any, Any, Any]]:
    # the call, read from the file: the third tool_use block of the session
    calls = [b for line in CLAUDE.read_text(encoding="utf-8").splitlines() if line.strip()
             for b in (json.loads(line).get("message") or {}).get("content") or []
             if isinstance(b, dict) and b.get("type") == "tool_use"]
    call = calls[2]
    assert call["name"] == "WebSearch"
    log = rk.read_claude_code(CLAUDE, owner="acme")
    t = log.table.to_pandas()
    seq = int(t[(t.kind == "tool_call") & (t.ref_id == call["id"])].seq.iloc[0])
    br = rk.Branch(base=log, run_id=str(t.run_id.iloc[0]), tenant_id="acme",
                   checkpoint=seq - 1, name="query").intervene(
        kind="tool_args_patch", target=call["id"], patch={"args": {**call["input"],
                                                                   "query": QUERY}})
    res = rk.replay(br, model_policy="recorded-only", tool_policy="live-explicit",
                    tool_executor=lambda tool, args, **kw: {"output": LIVE})
    out = tmp_path_factory.mktemp("rca") / "claude-rca.html"
    out.write_text(rca(res, title="Claude Code: another WebSearch query",
                       question="Does another search query change how the session ends?"
                       ).html, encoding="utf-8")
    ctx = browser.new_context(viewport=VIEWPORT)
    pg = ctx.new_page()
    url = out.resolve().as_uri()
    pg.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
    pg.goto(url)
    pg.wait_for_load_state("load")
    pg.screenshot(path=str(out.with_suffix(".png")))  # what a person sees first
    yield pg, res, out
    ctx.close()


def _on_first_screen(locator: Any) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def test_first_screen_leads_with_the_call_and_its_result(page: Any) -> None:
    pg, res, out = page
    assert out.with_suffix(".png").stat().st_size > 10_000
    answer = pg.locator("#rk-answer")
    assert _on_first_screen(answer)
    text = answer.inner_text().strip()
    assert text == res.summary().answer
    assert text.startswith('Undetermined: after WebSearch was called with {"query": "xterm.js')
    assert "(interrupted by the user)" in text
    items = pg.locator("#findings li")
    first, values = items.nth(0), items.nth(2)
    assert _on_first_screen(first) and _on_first_screen(values)
    assert "(tool_call WebSearch, patched by iv-1)" in first.inner_text()
    said = values.inner_text()
    assert said.startswith(f'WebSearch returned output "{LIVE[:40]}')
    assert said.index("output") < said.index("bookkeeping changes (ids, times, cwd, git")
    # the findings box names no envelope member or value: those are counted, by group
    box = pg.locator("#findings").inner_text()
    for word in ("gitBranch", "sessionId", "parentUuid", "userType", "/home/marco", "2.1.38"):
        assert word not in box, word
    assert box.count("cwd") == box.count("bookkeeping changes (ids, times, cwd")
    assert "(other)" not in box and "(checkpoint)" not in box


def test_changed_values_list_content_rows_then_envelope_rows(page: Any) -> None:
    pg, res, _ = page
    classes = pg.locator("#rk-changes tbody tr td.col0").evaluate_all(
        "tds => tds.map(td => td.classList.contains('hit') ? 'content' : "
        "(td.classList.contains('envelope') ? 'envelope' : '?'))")
    ch = res.changes_df()
    assert classes == ["content" if k else "envelope" for k in ch["key"]][:len(classes)]
    assert "?" not in classes and classes == sorted(classes)  # content, then envelope
    intro = pg.locator("#changes p").first.inner_text()
    n_bk = int((~ch["key"]).sum())
    assert f"{int(ch['key'].sum())} in what the agent asked" in intro
    assert f"then {n_bk} bookkeeping changes (" in intro


def test_transcript_step_of_the_change_shows_the_call_then_its_envelope(page: Any) -> None:
    pg, res, _ = page
    ch = res.changes_df()
    step = int(ch.loc[ch.kind == "tool_call", "step"].iloc[0])
    item = pg.locator(f"#rk-step-{step}")
    assert "WebSearch" in item.locator(".who").text_content()  # (CSS upper-cases it)
    assert QUERY in item.inner_text()
    payload = item.locator("details pre").last.text_content()
    doc = json.loads(payload)
    keys = list(doc)
    # the transcript line's message first; cwd, uuid, timestamp ... after it
    assert keys[0] == "message"
    assert keys.index("message") < keys.index("cwd") < len(keys)
    assert keys.index("message") < keys.index("uuid")


def test_changed_descendants_name_the_output_then_count_the_envelope(page: Any) -> None:
    pg, res, _ = page
    text = pg.locator("#descendants").inner_text()
    line = next(x for x in text.splitlines() if "output: added" in x)
    assert LIVE[:30] in line
    assert line.index("output: added") < line.index("bookkeeping changes (ids, times, cwd")
    assert "gitBranch" not in line and "/home/marco" not in line
