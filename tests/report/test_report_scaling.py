"""The RCA report has no quadratic corner: operations counted, never timed.

The same replay case (``benchmarks.bench_report.make_case``: an isplay run, a branch at 10% of
it with greedy decoding on every later model call and one changed tool call, a fixture for
it) is built at n, 2n and 4n events with the report's bounds lowered so that every bounded
view (scrubber window, transcript, figures, tables) is already full at n. Counted with
cProfile (call counts are deterministic): the whole build's Python calls grow at most
linearly (a quadratic step would multiply them by 4 per doubling), the per-row functions of
the bounded views are called the same number of times at every size, and the page's size
does not grow with the run. The sampled figures say so in a caption.
"""

from __future__ import annotations

import cProfile
import pstats
import re
from pathlib import Path
from typing import Any

import pytest

import replaykit as rk
from benchmarks.bench_report import make_case
from replaykit.report import _core

pytest.importorskip("plotly")

SIZES = (600, 1_200, 2_400)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    mp = pytest.MonkeyPatch()
    # bounds well below n: every bounded view is full at the smallest size
    for name, value in (("MAX_SCRUB_EVENTS", 150), ("FIGURE_POINTS", 100),
                        ("TRANSCRIPT_EVENTS", 30), ("TRANSCRIPT_HEAD", 8),
                        ("MAX_TOOL_ROWS", 30), ("MAX_CHANGE_ROWS", 30), ("TREE_CALLS", 20),
                        ("MAX_DESCENDANTS", 30)):
        mp.setattr(_core, name, value)
    out: dict[int, dict[str, Any]] = {}
    try:
        rk.report.rca  # noqa: B018 -- imports settle before counting
        for n in SIZES:
            d = make_case(tmp_path_factory.mktemp(f"n{n}"), n)
            log = rk.read_isplay(d / "log", owner="bench", progress=False)
            branch = rk.Branch.load(d / "branch.json", base=log, tenant_id="bench")
            res = rk.replay(branch, model_policy="recorded-only",
                            tool_policy="pause-for-fixture", fixtures=d / "fixtures.json")
            assert res.status == "completed" and len(res.events) == n
            prof = cProfile.Profile()
            prof.enable()
            rep = rk.report.rca(res, title="scaling", question="what changes?")
            prof.disable()
            st = pstats.Stats(prof)
            calls = {f"{Path(k[0]).name}:{k[2]}": v[1] for k, v in st.stats.items()}
            out[n] = {"total": st.total_calls, "calls": calls, "html": rep.html,
                      "bytes": len(rep.html.encode("utf-8")), "report": rep}
    finally:
        mp.undo()
    return out


def test_whole_build_grows_at_most_linearly(builds: dict[int, dict[str, Any]]) -> None:
    a, b, c = (builds[n]["total"] for n in SIZES)
    # linear work doubles per doubling, quadratic work quadruples: allow linear plus slack
    assert b / a < 2.3 and c / b < 2.3, (a, b, c)


@pytest.mark.parametrize("func", [
    "_core.py:_field_at",          # scrubber: one call per step and changed field
    "_core.py:_deltas",
    "_embed.py:plain",             # everything embedded as JSON goes through it
    "_parts.py:_cut",               # table cells
    "_transcript.py:_pretty",      # transcript payloads
    "_transcript.py:_args",
    "plots.py:_esc",               # figure labels and hover
])
def test_per_row_work_of_bounded_views_does_not_grow(builds: dict[int, dict[str, Any]],
                                                      func: str) -> None:
    counts = [builds[n]["calls"].get(func, 0) for n in SIZES]
    assert counts[0] > 0, (func, counts)
    # the same bounded views at every size: the counts stay within a few percent
    assert max(counts) <= 1.05 * min(counts) + 20, (func, counts)


def test_page_size_does_not_grow_with_the_run(builds: dict[int, dict[str, Any]]) -> None:
    sizes = [builds[n]["bytes"] for n in SIZES]
    assert sizes[2] < 1.03 * sizes[0], sizes


def test_sampled_views_say_so(builds: dict[int, dict[str, Any]]) -> None:
    page = builds[SIZES[-1]]["html"]
    n = SIZES[-1]
    captions = re.findall(r"<p class='note sampled'><b>Sampled figure.</b>(.*?)</p>", page,
                          flags=re.S)
    assert len(captions) >= 2  # divergence timeline and tool swimlane at least
    # every field counts: the greedy-decoding patch changes each request, so the changed
    # events may be more than the sample holds (then evenly sampled, and it says so)
    assert re.search(rf"base: showing 10[01] of {n:,} events \((all \d+|\d+ of [\d,]+) "
                     rf"changed or removed events(, evenly sampled)?; 1 in \d+ of the other "
                     rf"[\d,]+\)", captions[0]), captions[0]
    assert re.search(rf"replay: showing 10[01] of {n:,} events", captions[0]), captions[0]
    assert re.search(r"run [^:]+: showing 50 of [\d,]+ tool calls \(1 in \d+\)",
                     captions[1]), captions[1]
    step = int(builds[n]["report"].data["metrics"]["first_divergence_step"])
    # scrubber: a stated window around the first divergence, which it holds
    scrub = builds[n]["report"].data["scrubber"]
    assert scrub["shown"] == 150 and scrub["total"] == n
    assert scrub["offset"] <= step < scrub["offset"] + scrub["shown"]
    assert (f"Both sides (replay and base) hold steps {scrub['offset']:,}\u2013"
            f"{scrub['offset'] + 149:,} of {n:,} events (150 steps around the first "
            "divergence)") in page
    # transcript and tables: stated counts
    assert re.search(rf"Showing 30 of\s+{n:,} events of the run \(the first ones and a "
                     "window", page)
    assert re.search(r"Showing rows [\d,]+\u2013[\d,]+ of [\d,]+ tool calls", page)


# ------------------------------------------------------------------------------ scrubber window
def _plain(state: Any) -> Any:
    import json

    return json.loads(json.dumps(state, default=lambda o: dict(o) if hasattr(o, "items")
                                 else list(o)))


@pytest.fixture(scope="module")
def mid_replay(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = make_case(tmp_path_factory.mktemp("mid"), 1_500)
    log = rk.read_isplay(d / "log", owner="bench", progress=False)
    branch = rk.Branch.load(d / "branch.json", base=log, tenant_id="bench")
    res = rk.replay(branch, model_policy="recorded-only", tool_policy="pause-for-fixture",
                    fixtures=d / "fixtures.json")
    base = res.base.run(res.branch.run_id, tenant_id="bench")
    return res, base, rk.fold(res.events, rk.agent()), rk.fold(base, rk.agent())


@pytest.mark.parametrize("first,size", [(0, 40), (140, 60), (1_450, 200), (700, 1)])
def test_scrubber_window_replays_the_fold_on_both_sides(mid_replay: Any, first: int,
                                                        size: int) -> None:
    """zero + deltas of a window (base side: None = as the replay) equal StateFrame.at at
    every step of it, for windows at the start, across the divergence and at the end."""
    res, base, rsf, bsf = mid_replay
    rep, rh = _core._scrubber_data(res.events, tenant_id="bench", first=first,
                                   max_events=size, states=rsf)
    bas, _ = _core._scrubber_data(base, tenant_id="bench", first=first, max_events=size,
                                  like=(rep, rh))
    assert rep["offset"] == first and rep["shown"] == min(size, 1_500 - first)
    for name, side, sf, log in (("replay", rep, rsf, res.events), ("base", bas, bsf, base)):
        state = dict(side["zero"])
        for i, seq in enumerate(side["seq"]):
            delta = side["delta"][i]
            state.update(rep["delta"][i] if delta is None else delta)
            assert state == _plain(sf.at(log.run_ids[0], seq, tenant_id="bench")), (name, i)
    if first == 0:  # before the checkpoint the base copies the replay: nothing re-embedded
        assert all(d is None for d in bas["delta"])


def test_scrubber_whole_state_fallback_gives_the_same_data(mid_replay: Any,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """A field kind the per-field path does not know falls back to whole states, same data."""
    res, _, rsf, _ = mid_replay
    fast, _ = _core._scrubber_data(res.events, tenant_id="bench", first=100, max_events=80,
                                   states=rsf)
    monkeypatch.setattr(_core, "_field_change_rows", lambda *a: None)
    slow, _ = _core._scrubber_data(res.events, tenant_id="bench", first=100, max_events=80,
                                   states=rsf)
    assert slow["delta"] == fast["delta"] and slow["zero"] == fast["zero"]
    assert sum(1 for d in fast["delta"] if d) > 10
