"""replaykit.plots: figures asserted on their data and layout, never on pixels."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("plotly")

import plotly.graph_objects as go  # noqa: E402

import replaykit as rk  # noqa: E402
from replaykit import plots  # noqa: E402
from replaykit.fold.synth import synthetic_log  # noqa: E402

FIVE_MB = 5 * 1024 * 1024


@pytest.fixture(scope="module")
def isplay(data_dir):
    return rk.read_isplay(data_dir / "isplay", owner="acme")


@pytest.fixture(scope="module")
def replays(isplay, data_dir):
    branch = rk.Branch.load(data_dir / "isplay" / "branch-drop-fraud-clause.json", base=isplay,
                            tenant_id="acme")
    paused = rk.replay(branch)
    done = paused.resume(data_dir / "isplay" / "fixtures.json")
    plain = rk.replay(rk.Branch(base=isplay, run_id="run-claims-C-104", tenant_id="acme",
                                checkpoint="cp-intake", name="noop"))
    return paused, done, plain


@pytest.fixture(scope="module")
def big_log():
    return synthetic_log(300_000, 10_000, seed=2)


def _trace(fig, name):
    found = [t for t in fig.data if t.name == name]
    assert len(found) == 1, [t.name for t in fig.data]
    return found[0]


# --------------------------------------------------------------------------- packaging
@pytest.mark.parametrize("module,blocked", [("replaykit.plots", "plotly"),
                                            ("replaykit.widgets", "ipywidgets")])
def test_missing_extra_names_the_install_line(module, blocked):
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None\n"
        "from replaykit.errors import MissingExtraError\n"
        "try:\n"
        f"    import {module}\n"
        "except MissingExtraError as e:\n"
        "    print('ERR', e.extra, e.module, str(e))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith(f"ERR viz {blocked} ")
    assert 'pip install "replaykit[viz]"' in out


def test_no_figure_is_shown(monkeypatch, isplay, replays):
    def boom(self, *a, **k):
        raise AssertionError("a plot function called .show()")

    monkeypatch.setattr(go.Figure, "show", boom)
    _, done, _ = replays
    figs = [plots.divergence_timeline(done), plots.tool_sequences(isplay),
            plots.tool_distance_heatmap(rk.tool_distance_matrix(isplay)),
            plots.fixture_dependence([done]),
            plots.metric_distribution(rk.compare(isplay, done.events), "changed_descendants")]
    assert all(isinstance(f, go.Figure) for f in figs)


# --------------------------------------------------------------------------- divergence
def test_divergence_timeline_marks_first_divergence(replays):
    _, done, _ = replays
    fig = plots.divergence_timeline(done)
    assert done.metrics["first_divergence_step"] == 3
    assert len(fig.layout.shapes) == 1
    assert fig.layout.shapes[0].x0 == 3 and fig.layout.shapes[0].x1 == 3
    assert fig.layout.annotations[0].text == "first change: step 3"
    assert fig.layout.title.text.endswith("5 changed after the first change")
    assert [t.name for t in fig.data] == ["base: same", "base: changed", "replay: recorded",
                                          "replay: patched", "replay: fixture",
                                          "replay: copied by policy",
                                          "outlined: differs from the base"]
    # every marker style drawn is in the legend: the outline has its own legend entry
    outlined = [t for t in fig.data if t.legendgroup == "replay"
                and max(t.marker.line.width) > 0]
    assert outlined and _trace(fig, "outlined: differs from the base").showlegend is not False
    assert fig.layout.xaxis.title.text == plots.STEP_LABEL
    # every field counts: the patched requests (temperature, tools) are changed too
    assert list(_trace(fig, "base: changed").x) == [3, 7, 9, 10, 12, 16]
    assert list(_trace(fig, "replay: fixture").x) == [10]
    assert list(_trace(fig, "replay: patched").x) == [3, 7, 9, 12, 16]
    # the model outputs copied from the recording under recorded-only have their own mark
    assert list(_trace(fig, "replay: copied by policy").x) == [4, 8, 13, 17]
    assert sum(len(t.x) for t in fig.data if t.legendgroup == "base") == 19
    assert sum(len(t.x) for t in fig.data if t.legendgroup == "replay") == 19
    # the fixture-served event's hover names it
    assert "tool_result" in _trace(fig, "replay: fixture").hovertext[0]


def test_divergence_timeline_without_divergence_has_no_marker(replays):
    _, _, plain = replays
    fig = plots.divergence_timeline(plain)
    assert plain.metrics["first_divergence_step"] == -1
    assert len(fig.layout.shapes) == 0
    assert {t.name for t in fig.data} >= {"base: same"}
    assert "base: changed" not in {t.name for t in fig.data}


def test_hover_text_is_escaped():
    out = plots._hover(pd.Series(["<script>alert(1)</script>", None, "x" * 500,
                                  'say "hi" & \'bye\''], dtype=object))
    assert out[0] == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert out[1] == ""
    assert len(out[2]) == plots.HOVER_TEXT and out[2].endswith("\u2026")
    # quotes stay quotes: plotly does not decode &quot; (it would show literally)
    assert out[3] == 'say "hi" &amp; \'bye\''


def test_divergence_timeline_hover_has_no_quote_entities(replays):
    _, done, _ = replays
    fig = plots.divergence_timeline(done)
    hovers = [h for t in fig.data if t.hovertext is not None for h in t.hovertext]
    assert any('"' in h for h in hovers)  # the payload text holds quotes ...
    assert not any("&quot;" in h or "&#x27;" in h for h in hovers)  # ... shown as quotes
    assert all(h.startswith("step ") and " \u00b7 seq " in h for h in hovers)


# --------------------------------------------------------------------------- tool sequences
def test_tool_sequences_swimlanes(isplay):
    fig = plots.tool_sequences(isplay)
    lanes = {(t.name, int(x), y) for t in fig.data for x, y in zip(t.x, t.y, strict=True)}
    assert lanes == {
        ("claim-lookup", 0, "run-claims-C-104"), ("risk-signals", 1, "run-claims-C-104"),
        ("escalate-to-siu", 2, "run-claims-C-104"), ("claim-lookup", 0, "run-claims-C-231"),
        ("claim-lookup", 1, "run-claims-C-231"), ("approve-claim", 2, "run-claims-C-231"),
    }
    # the same figure from the grain table
    fig2 = plots.tool_sequences(isplay.tools_df())
    assert {(t.name, tuple(t.x), tuple(t.y)) for t in fig2.data} == \
        {(t.name, tuple(t.x), tuple(t.y)) for t in fig.data}
    assert list(fig.layout.yaxis.categoryarray) == ["run-claims-C-231", "run-claims-C-104"]


def _calls(tools: list[str], run: str = "r1") -> pd.DataFrame:
    return pd.DataFrame({"tenant_id": "acme", "run_id": run, "tool_name": tools})


def _lab_distance(a: str, b: str) -> float:
    rgb = np.array([[int(c[k:k + 2], 16) / 255 for k in (1, 3, 5)] for c in (a, b)])
    lab = plots._lab(rgb)
    return float(np.linalg.norm(lab[0] - lab[1]))


@pytest.mark.parametrize("n_tools", [2, 10, 11, 24, 60])
def test_tool_sequences_gives_every_tool_its_own_colour(n_tools):
    tools = ["Bash", "Write"] + [f"tool_{i:02d}" for i in range(n_tools - 2)]
    fig = plots.tool_sequences(_calls(tools))
    colours = {t.name: t.marker.color for t in fig.data}
    assert len(colours) == n_tools and len(set(colours.values())) == n_tools
    assert colours["Bash"] != colours["Write"]
    # tall enough that the legend lists every tool without scrolling (seen in Chromium)
    assert fig.layout.height >= min(1600, 200 + 22 * n_tools)
    if n_tools <= 24:  # distinct to the eye too: CIELAB distance between any two colours
        values = list(colours.values())
        assert min(_lab_distance(a, b) for i, a in enumerate(values)
                   for b in values[i + 1:]) > 15


def test_a_tool_keeps_its_colour_across_figures():
    first = plots.tool_sequences(_calls(["Bash", "Write", "Read"]))
    other = plots.tool_sequences(_calls([f"extra_{i}" for i in range(12)] + ["Write"], "r2"))
    again = plots.tool_sequences(_calls(["Write", "Grep", "Bash"], "r3"))
    colour = {}
    for fig in (first, other, again):
        for t in fig.data:
            assert colour.setdefault(t.name, t.marker.color) == t.marker.color, t.name
    assert plots.tool_colors(["Bash", "Write"]) == {"Bash": colour["Bash"],
                                                     "Write": colour["Write"]}
    assert len(set(colour.values())) == len(colour)  # 16 tools, 16 colours


def test_the_palette_never_repeats():
    colours = [plots.palette_color(i) for i in range(1000)]
    assert len(set(colours)) == 1000
    assert colours[:10] == plots._PALETTE  # the familiar first ten


def test_tool_sequences_escapes_run_ids():
    calls = pd.DataFrame({"tenant_id": "acme", "run_id": ["<b>r&1</b>", "<b>r&1</b>", "plain"],
                          "tool_name": ["<i>t</i>", "x", "x"]})
    fig = plots.tool_sequences(calls)
    ys = {y for t in fig.data for y in t.y}
    assert ys == {"&lt;b&gt;r&amp;1&lt;/b&gt;", "plain"}
    assert list(fig.layout.yaxis.categoryarray) == ["plain", "&lt;b&gt;r&amp;1&lt;/b&gt;"]
    assert {t.name for t in fig.data} == {"&lt;i&gt;t&lt;/i&gt;", "x"}


def test_tool_sequences_rejects_unknown_runs(isplay):
    with pytest.raises(KeyError, match="nope"):
        plots.tool_sequences(isplay, runs=["nope"])
    with pytest.raises(ValueError, match="no tool calls"):
        plots.tool_sequences(isplay, tenant_id="other-tenant")


def test_tool_sequences_10k_runs_is_sampled_and_small(big_log):
    fig = plots.tool_sequences(big_log)
    runs = {y for t in fig.data for y in t.y}
    assert len(runs) == plots.MAX_RUNS
    assert "showing 200 of 10,000 runs" in fig.layout.title.text
    assert len(fig.to_json()) < FIVE_MB


# --------------------------------------------------------------------------- heatmap
def test_heatmap_clusters_similar_runs_together():
    rng = np.random.default_rng(0)
    group = np.array([0, 1] * 6)
    rng.shuffle(group)
    d = np.where(group[:, None] == group[None, :], 1.0, 9.0)
    np.fill_diagonal(d, 0)
    ids = [f"r{i}" for i in range(12)]
    fig = plots.tool_distance_heatmap(pd.DataFrame(d, index=ids, columns=ids))
    order = [int(s[1:]) for s in fig.data[0].y]
    labels = group[order]
    assert (np.diff(labels) != 0).sum() == 1  # two contiguous blocks
    z = np.asarray(fig.data[0].z)
    assert z.shape == (12, 12) and np.all(np.diag(z) == 0)
    assert z[0, 1] == 1.0  # neighbours within a block


def test_heatmap_values_follow_the_matrix(isplay):
    mat = rk.tool_distance_matrix(isplay)
    fig = plots.tool_distance_heatmap(mat, cluster=False)
    assert list(fig.data[0].x) == list(mat.columns)
    assert np.asarray(fig.data[0].z).tolist() == [[0, 2], [2, 0]]
    with pytest.raises(ValueError, match="square"):
        plots.tool_distance_heatmap(mat.iloc[:1])


def test_heatmap_large_matrix_is_sampled_and_small():
    n = 1_000
    ids = [f"run-{i:05d}" for i in range(n)]
    d = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) % 17
    fig = plots.tool_distance_heatmap(pd.DataFrame(d, index=ids, columns=ids))
    assert np.asarray(fig.data[0].z).shape == (300, 300)
    assert "showing 300 of 1,000 runs" in fig.layout.title.text
    assert len(fig.to_json()) < FIVE_MB


# --------------------------------------------------------------------------- fixtures
def test_fixture_dependence_from_results(replays):
    paused, done, plain = replays
    fig = plots.fixture_dependence([paused, done, plain])
    bars = _trace(fig, "analyst")
    assert list(bars.y) == [0, 1, 0]
    assert bars.x[1].startswith("run-claims-C-104~br-drop-fraud-clause (2)")
    sens = _trace(fig, "sensitive to fixture")
    assert list(sens.x) == [bars.x[1]]
    assert fig.layout.barmode == "stack"
    # a few replays: slim bars and headroom above the tallest (not one bar filling the chart)
    assert bars.width == 0.3
    assert list(fig.layout.yaxis.range) == [0, 2]
    one = plots.fixture_dependence([done])
    assert _trace(one, "analyst").width == 0.3 and one.layout.height == 320


def test_fixture_dependence_from_frame_caps_replays():
    n = 10_000
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "replay_run_id": np.repeat([f"rep-{i:05d}" for i in range(n)], 3),
        "action": rng.choice(["recorded", "fixture"], 3 * n, p=[0.8, 0.2]),
        "provenance": rng.choice(["analyst", "ai", "simulator"], 3 * n),
    })
    fig = plots.fixture_dependence(frame)
    bar_traces = [t for t in fig.data if t.type == "bar"]
    assert {t.name for t in bar_traces} == {"analyst", "ai", "simulator"}
    assert len(bar_traces[0].x) == plots.MAX_RUNS
    totals = np.sum([np.asarray(t.y) for t in bar_traces], axis=0)
    served = frame[frame["action"] == "fixture"].groupby("replay_run_id").size()
    assert totals[0] == served.max()  # most dependent first
    assert len(fig.to_json()) < FIVE_MB


# --------------------------------------------------------------------------- distributions
def test_metric_distribution_box_statistics():
    df = pd.DataFrame({"m": [1, 2, 3, 4, 100, 10, 20, 30],
                       "c": ["a", "a", "a", "a", "a", "b", "b", "b"]})
    fig = plots.metric_distribution(df, "m", by="c")
    a, b, points = fig.data
    assert points.name == "values" and sorted(points.y) == sorted(df["m"])
    assert (a.name, b.name) == ("a", "b")
    assert (a.q1[0], a.median[0], a.q3[0]) == (2.0, 3.0, 4.0)
    assert a.upperfence[0] == 4.0 and a.lowerfence[0] == 1.0  # 100 is an outlier
    assert a.mean[0] == pytest.approx(22.0)
    assert b.median[0] == 20.0 and "n=3" in b.x[0]
    one = plots.metric_distribution(df, "m")
    assert len(one.data) == 2 and one.data[0].median[0] == 7.0


def test_metric_distribution_errors():
    df = pd.DataFrame({"m": ["x", "y"], "n": [True, False]})
    with pytest.raises(ValueError, match="not numeric"):
        plots.metric_distribution(df, "m")
    with pytest.raises(KeyError, match="nope"):
        plots.metric_distribution(df, "nope")
    assert plots.metric_distribution(df, "n").data[0].mean[0] == 0.5


def test_metric_distribution_size_does_not_grow():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"m": rng.normal(size=200_000), "c": rng.choice(list("abc"), 200_000)})
    fig = plots.metric_distribution(df, "m", by="c")
    assert [t.type for t in fig.data] == ["box"] * 3  # statistics only, no points
    assert len(fig.to_json()) < 20_000


# --------------------------------------------------------------------------- state timeline
@pytest.fixture(scope="module")
def pleach_states(data_dir):
    log = rk.read_pleach(data_dir / "pleach" / "harness_event_log.jsonl")
    return log, rk.fold(log, rk.agent())


def test_state_timeline_matches_steps_df(pleach_states):
    _, sf = pleach_states
    first = sf.final().iloc[0]
    fig = plots.state_timeline(sf, first["run_id"], ["tool_calls", "last_tool"],
                               tenant_id=first["tenant_id"])
    assert [t.name for t in fig.data] == ["tool_calls", "last_tool"]
    steps = sf.steps_df()
    steps = steps[(steps["run_id"] == first["run_id"]) & (steps["tenant_id"] == first["tenant_id"])]
    tc = fig.data[0]
    assert tc.line.shape == "hv"
    # change points only, x is the step (position in the run), each point's value is the
    # frame's value at that step; the hover names the event's seq
    by_step = dict(enumerate(steps["tool_calls"]))
    assert all(by_step[int(x)] == y for x, y in zip(tc.x, tc.y, strict=True))
    seqs = steps["seq"].tolist()
    assert [int(s) for s in tc.customdata] == [seqs[int(x)] for x in tc.x]
    assert fig.layout.xaxis2.title.text == plots.STEP_LABEL
    assert tc.y[-1] == steps["tool_calls"].iloc[-1]
    assert sorted(set(tc.y)) == sorted(set(steps["tool_calls"]))
    assert fig.data[1].mode == "markers"
    # a steps_df frame gives the same figure
    fig2 = plots.state_timeline(steps, first["run_id"], ["tool_calls"])
    assert list(fig2.data[0].y) == list(tc.y)


def test_state_timeline_default_fields_and_tenant_rule(pleach_states):
    _, sf = pleach_states
    first = sf.final().iloc[0]
    fig = plots.state_timeline(sf, first["run_id"], tenant_id=first["tenant_id"])
    names = [t.name for t in fig.data]
    assert "tool_calls" in names and "open_tool_calls_size" in names
    assert not any(n.endswith(("_added", "_removed")) for n in names)
    with pytest.raises(KeyError):
        plots.state_timeline(sf, first["run_id"], ["nope"], tenant_id=first["tenant_id"])
    # panels with no variation are folded away and named in the title
    steps = sf.steps_df()
    steps = steps[(steps["run_id"] == first["run_id"]) & (steps["tenant_id"] == first["tenant_id"])]
    flat = list(fig.layout.meta["folded"])
    assert flat and all(steps[c].nunique(dropna=False) == 1 for c in flat)
    assert not set(flat) & set(names)
    assert all(steps[n].nunique(dropna=False) > 1 for n in names)
    assert all(c in fig.layout.title.text for c in flat[:6])


def test_state_timeline_thins_long_runs():
    log = synthetic_log(50_000, 1)
    sf = rk.fold(log, rk.agent())
    fig = plots.state_timeline(sf, log.run_ids[0], ["input_tokens"], tenant_id="acme",
                               max_points=500)
    assert len(fig.data[0].x) <= 500
    assert len(fig.to_json()) < FIVE_MB


# --------------------------------------------------------------------------- cohort trend
def _trend_frame():
    rng = np.random.default_rng(4)
    return pd.DataFrame({"week": np.repeat(["w1", "w2", "w3"], 40),
                         "model": np.tile(["a", "b"], 60),
                         "dist": rng.poisson(3, 120).astype(float)})


def test_cohort_trend_normal_band():
    df = _trend_frame()
    fig = plots.cohort_trend(df, "dist", period="week")
    upper, lower, mean = fig.data
    g = df.groupby("week")["dist"]
    half = 1.959963984540054 * g.std() / np.sqrt(g.size())
    assert list(mean.x) == ["w1", "w2", "w3"]
    np.testing.assert_allclose(mean.y, g.mean().to_numpy())
    np.testing.assert_allclose(upper.y, (g.mean() + half).to_numpy())
    np.testing.assert_allclose(lower.y, (g.mean() - half).to_numpy())
    assert lower.fill == "tonexty"


def test_cohort_trend_by_cohort_and_bootstrap():
    df = _trend_frame()
    fig = plots.cohort_trend(df, "dist", period="week", by="model", method="bootstrap",
                             n_boot=500, seed=1)
    assert len(fig.data) == 6
    means = [t for t in fig.data if t.showlegend is not False]
    assert [t.name for t in means] == ["a", "b"]
    lo, hi = np.asarray(fig.data[1].y), np.asarray(fig.data[0].y)
    assert np.all(lo < np.asarray(means[0].y)) and np.all(np.asarray(means[0].y) < hi)
    again = plots.cohort_trend(df, "dist", period="week", by="model", method="bootstrap",
                               n_boot=500, seed=1)
    assert list(again.data[0].y) == list(fig.data[0].y)


def test_cohort_trend_errors():
    df = _trend_frame()
    with pytest.raises(ValueError, match="ci"):
        plots.cohort_trend(df, "dist", period="week", ci=1.5)
    with pytest.raises(KeyError, match="period"):
        plots.cohort_trend(df, "dist", period="month")
    with pytest.raises(ValueError, match="method"):
        plots.cohort_trend(df, "dist", period="week", method="magic")
