"""Figures for replaykit frames and results (plotly; needs ``pip install "replaykit[viz]"``).

Every function is a pure function from data to a :class:`plotly.graph_objects.Figure`: it
never calls ``.show()``, never re-folds or re-replays, and never changes its input. Show a
figure by leaving it as the last expression of a notebook cell, or save it with
``fig.write_html(...)``.

Shared argument vocabulary (the same name means the same thing in every function):

``data_frame``
    The data, always first: an :class:`~replaykit.EventLog`, an Arrow events table or a pandas
    DataFrame with the columns the function names (a result object where the function says so).
``runs``
    A list of run ids to keep (in that order, where order matters); default every run.
``tenant_id``
    Keep only this tenant's rows. Never guessed: a run id that two tenants share needs it.
``metric``
    A numeric column to plot (booleans count as 0/1).
``by``
    A column whose values split the data into cohorts (one trace, box or band per value).
``max_runs``
    Size bound: beyond this many runs (or replays, or matrix rows) the figure keeps an evenly
    spaced, deterministic sample of that many and says so in its title.
``max_points``
    Size bound for per-event series: beyond it, series are thinned (change points kept).
``title`` / ``height``
    Passed to the layout; ``title=None`` gives a descriptive default.

Size: with the default bounds a figure stays well under 5 MB of JSON whatever the input size
(a figure for 10,000 runs included); see docs/visual.md.

Raises (every function): :class:`~replaykit.errors.MissingExtraError` at import when plotly
is not installed; ``KeyError`` naming a missing column; ``ValueError`` for an empty selection
or a non-numeric ``metric``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from .branch.vocab import PROVENANCE_BADGES
from .errors import MissingExtraError

try:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
except ImportError:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtraError("replaykit.plots", "viz", "plotly") from None

__all__ = [
    "MAX_POINTS",
    "MAX_RUNS",
    "cohort_trend",
    "divergence_timeline",
    "fixture_dependence",
    "metric_distribution",
    "state_timeline",
    "palette_color",
    "tool_colors",
    "tool_distance_heatmap",
    "tool_sequences",
]

#: default ``max_runs``: swimlanes, bars and heatmap rows shown before sampling.
MAX_RUNS = 200
#: default ``max_points``: per-event points per series before thinning.
MAX_POINTS = 5_000
#: metric_distribution draws every value as a point when there are at most this many.
MAX_STRIP = 1_000
#: characters of event text shown in a hover label.
HOVER_TEXT = 120

_PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac"]
_ORIGIN_STYLE = {  # replay lane: where each replayed step's content came from (provenance)
    "recorded": ("#4e79a7", "circle"), "patched": ("#f28e2b", "diamond"),
    "fixture": ("#e15759", "star"), "policy-copy": ("#edc948", "circle-open"),
    "live": ("#59a14f", "triangle-up"), "blocked": ("#000000", "x"),
    "synthetic": ("#b07aa1", "square"),
}
_STATUS_STYLE = {  # base lane: how each base event aligns with the replay
    "same": ("#bab0ac", "circle"), "changed": ("#f28e2b", "diamond"),
    "removed": ("#e15759", "x"),
}


# --------------------------------------------------------------------------- helpers
def _frame(data_frame: Any, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """EventLog / Arrow table / DataFrame -> DataFrame (only ``columns`` when given)."""
    from .eventlog.log import EventLog, to_pandas

    if isinstance(data_frame, EventLog):
        data_frame = data_frame.table
    if isinstance(data_frame, pa.Table):
        if columns is not None:
            data_frame = data_frame.select([c for c in columns if c in data_frame.column_names])
        return to_pandas(data_frame)
    if isinstance(data_frame, pd.DataFrame):
        return data_frame
    raise TypeError(f"expected an EventLog, an Arrow table or a pandas DataFrame, got "
                    f"{type(data_frame).__name__}")


def _need(df: pd.DataFrame, *cols: str, what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise KeyError(f"{what} needs column(s) {missing}; the frame has {list(df.columns)}")


def _numeric(df: pd.DataFrame, metric: str) -> pd.Series:
    _need(df, metric, what=f"metric {metric!r}")
    s = df[metric]
    if pd.api.types.is_bool_dtype(s):
        return s.astype("Float64").astype(float)
    if not pd.api.types.is_numeric_dtype(s):
        raise ValueError(f"metric {metric!r} is not numeric (dtype {s.dtype}); pick a numeric "
                         "column, e.g. first_divergence_step or tool_sequence_distance")
    return s.astype("Float64").astype(float)


def _sample(ids: Sequence[Any], limit: int) -> list[Any]:
    """An evenly spaced, deterministic sample of ``limit`` ids (all of them when fewer)."""
    ids = list(ids)
    if len(ids) <= limit:
        return ids
    keep = np.unique(np.linspace(0, len(ids) - 1, limit).round().astype(np.int64))
    return [ids[i] for i in keep]


def _shown(title: str, shown: int, total: int, what: str) -> str:
    return title if shown >= total else f"{title} (showing {shown:,} of {total:,} {what})"


#: x-axis title of every per-event figure: the event's 0-based position in its run.
STEP_LABEL = "step (position in run)"


def _esc(text: Any) -> str:
    """Escape ``<``, ``>`` and ``&`` for plotly's HTML subset (never quotes: plotly does not
    decode ``&quot;``, so a quote escaped here would show as the literal entity)."""
    return html.escape(str(text), quote=False)


def _hover(series: pd.Series) -> pd.Series:
    """Escaped, shortened hover text (log content is untrusted; plotly renders some HTML)."""
    s = series.astype("string").fillna("")
    long = s.str.len() > HOVER_TEXT
    s = s.where(~long, s.str.slice(0, HOVER_TEXT - 1) + "\u2026")
    return s.map(_esc, na_action="ignore").astype(object)


def _layout(fig: go.Figure, title: str, height: int | None, **kw: Any) -> go.Figure:
    fig.update_layout(title=title, template="plotly_white", height=height,
                      legend={"title": {"text": kw.pop("legend_title", "")}}, **kw)
    return fig


def _lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB (0-1, rows) to CIELAB (D65): distances there are close to what people see."""
    c = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = c @ np.array([[0.4124, 0.2126, 0.0193], [0.3576, 0.7152, 0.1192],
                        [0.1805, 0.0722, 0.9505]])
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.column_stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]),
                            200 * (f[:, 1] - f[:, 2])])


_EXTENDED: list[str] = []


def _extended_palette() -> list[str]:
    """Tableau 10, then colours picked one at a time from a grid of hues, lightnesses and
    saturations, each the one farthest (CIELAB) from every colour picked before: the first
    colours are as distinct as colours get, and later ones stay distinct from all of them."""
    import colorsys

    if _EXTENDED:
        return _EXTENDED
    grid = [(h / 36, lt, st) for h in range(36) for lt in (0.3, 0.45, 0.6, 0.75)
            for st in (0.45, 0.7)]
    rgb = np.array([colorsys.hls_to_rgb(h, lt, st) for h, lt, st in grid])
    lab = _lab(rgb)
    base = np.array([[int(c[k:k + 2], 16) / 255 for k in (1, 3, 5)] for c in _PALETTE])
    dist = np.min(np.linalg.norm(lab[:, None, :] - _lab(base)[None, :, :], axis=2), axis=1)
    out = list(_PALETTE)
    for _ in range(len(grid)):
        j = int(np.argmax(dist))
        if dist[j] <= 0:
            break
        r, g, b = (round(float(v) * 255) for v in rgb[j])
        out.append(f"#{r:02x}{g:02x}{b:02x}")
        dist = np.minimum(dist, np.linalg.norm(lab - lab[j], axis=1))
        dist[j] = 0
    _EXTENDED[:] = out
    return out


def palette_color(i: int) -> str:
    """The ``i``-th colour of the figures' palette, which does not repeat: Tableau 10 first,
    then colours chosen to be as far as possible (CIELAB) from all before them (about 280),
    then hues by golden-angle steps; any number of series get distinct colours.

    >>> palette_color(0), palette_color(1), palette_color(11) != palette_color(1)
    ('#4e79a7', '#f28e2b', True)
    """
    import colorsys

    ext = _extended_palette()
    if i < len(ext):
        return ext[i]
    k = i - len(ext)
    r, g, b = colorsys.hls_to_rgb((k * 0.381966) % 1.0, (0.4, 0.55, 0.7)[k % 3],
                                  (0.55, 0.8)[(k // 3) % 2])
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


_color = palette_color

#: tool name -> colour, for the whole session: a tool keeps its colour in every figure
_TOOL_COLORS: dict[str, str] = {}


def tool_colors(tools: Iterable[Any]) -> dict[str, str]:
    """The colour of each tool name, the same in every figure of the session: a tool seen for
    the first time takes the next unused colour of :func:`palette_color` (new tools of one
    call in sorted order, so the first figure of a session is the same every time); no two
    tools share a colour, however many there are. ``tool_sequences`` colours by it; use it to
    colour tools in your own figures.

    >>> c = tool_colors(["Write", "Bash"]); c == tool_colors(["Bash"]) | tool_colors(["Write"])
    True
    """
    names = [str(t) for t in tools]
    for name in sorted(set(names) - set(_TOOL_COLORS)):
        _TOOL_COLORS[name] = palette_color(len(_TOOL_COLORS))
    return {n: _TOOL_COLORS[n] for n in names}


# --------------------------------------------------------------------------- divergence
def _pick(n: int, keep: np.ndarray, max_points: int, always: Sequence[int] = ()
          ) -> tuple[np.ndarray, dict[str, Any]]:
    """Row positions (sorted) of one lane drawn with at most ~``max_points`` points.

    Up to three quarters of the budget go to the ``keep`` rows (changed / patched /
    fixture-served events; all of them when they fit, else an even sample), the rest to an even
    sample of the other rows; ``always`` positions (the first divergence) are drawn whatever
    the budget. Returns the positions and what was sampled (for the caption)."""
    if n <= max_points:
        return np.arange(n, dtype=np.int64), {"shown": n, "total": n}
    hot = np.flatnonzero(keep)
    cold = np.flatnonzero(~keep)
    room_hot = min(len(hot), max(max_points * 3 // 4, max_points - len(cold)))
    hot_pick = hot[np.asarray(_sample(range(len(hot)), room_hot), dtype=np.int64)] \
        if room_hot else hot[:0]
    room_cold = max(0, max_points - len(hot_pick))
    cold_pick = cold[np.asarray(_sample(range(len(cold)), room_cold), dtype=np.int64)] \
        if room_cold else cold[:0]
    extra = np.asarray([a for a in always if 0 <= a < n], dtype=np.int64)
    pos = np.unique(np.concatenate([hot_pick, cold_pick, extra]))
    info = {"shown": int(len(pos)), "total": int(n), "hot": int(len(hot)),
            "hot_shown": int(np.isin(hot, pos).sum()), "cold": int(len(cold)),
            "every": int(round(len(cold) / len(cold_pick))) if len(cold_pick) else 0}
    return pos, info


def _sampling_note(lane: str, info: Mapping[str, Any], hot_what: str) -> str | None:
    """``"base: showing 2,000 of 100,000 events (...)"`` or None when nothing was sampled."""
    if info["shown"] >= info["total"]:
        return None
    hot = (f"all {info['hot']:,} {hot_what}" if info["hot_shown"] >= info["hot"] else
           f"{info['hot_shown']:,} of {info['hot']:,} {hot_what}, evenly sampled") \
        if info["hot"] else f"no {hot_what}"
    rest = (f"1 in {info['every']:,} of the other {info['cold']:,}" if info["every"] > 1
            else f"all other {info['cold']:,}") if info["cold"] else "no other events"
    return (f"{lane}: showing {info['shown']:,} of {info['total']:,} events ({hot}; {rest})")


def _lane_rows(table: pa.Table, pos: np.ndarray) -> pd.DataFrame:
    """The drawn rows of one lane: step, seq and the escaped hover text (only those rows)."""
    sub = table.take(pa.array(pos, pa.int64())).select(["seq", "kind", "tool_name", "text"])
    df = _frame(sub)
    df["pos"] = pos
    kind = df["kind"].astype("string").fillna("")
    tool = df["tool_name"].astype("string").fillna("")
    label = kind.where(tool == "", kind + " \u00b7 " + tool)
    df["hover"] = ("step " + df["pos"].astype("string") + " \u00b7 seq "
                   + df["seq"].astype("string").fillna("?") + " \u00b7 "
                   + _hover(label).astype(str) + "<br>" + _hover(df["text"]).astype(str))
    return df


def _by_seq(seqs: np.ndarray, keys: Any, values: Any, default: str) -> np.ndarray:
    """Per row of a lane (its ``seqs``): the value of ``keys`` == seq, else ``default``."""
    k = pd.Index(pd.array(keys, dtype="Int64"))
    if not len(k):
        return np.full(len(seqs), default, dtype=object)
    if not k.is_unique:
        keep = ~k.duplicated()
        k, values = k[keep], np.asarray(values, dtype=object)[keep]
    idx = k.get_indexer(pd.array(seqs, dtype="Int64"))
    vals = np.asarray(values, dtype=object)
    out = np.full(len(seqs), default, dtype=object)
    ok = idx >= 0
    out[ok] = vals[idx[ok]]
    return out


def divergence_timeline(result: Any, *, max_points: int = MAX_POINTS,
                        title: str | None = None, height: int | None = 380) -> go.Figure:
    """Base and replay as two lanes of events over steps, the first divergence marked.

    x is the event's position in its own run (0-based, the position the metrics of
    docs/metrics.md count); the base lane is coloured by its diff status (same / changed /
    removed, from ``result.diff_df()``, where every differing field counts), the replay lane by
    provenance (recorded, patched, fixture, copied by policy, live, ...; from
    ``result.annotations_df().provenance``), so fixture-served, patched and policy-copied
    events stand out. A dashed vertical line (``layout.shapes[0]``) sits at the first changed
    step (``result.metrics["first_divergence_step"]`` or earlier, when a field outside the
    event signature changed first); there is none when the runs are identical.
    Hover shows seq, kind, tool and the (escaped, shortened) event text.

    A lane longer than ``max_points`` is sampled: up to three quarters of the points go to
    its changed, patched and fixture-served events (all of them when they fit), the rest to
    an even sample of the other events; the first divergence is always drawn. The title then
    says so and ``fig.layout.meta["sampling"]`` holds one sentence per sampled lane (shown,
    total, what was kept); the cost is column-wise and only drawn rows get hover text.

    Args:
        result: a :class:`~replaykit.ReplayResult`.
        max_points: points per lane (see above).

    Example:
        >>> fig = rk.plots.divergence_timeline(done)  # doctest: +SKIP
        >>> fig.layout.shapes[0].x0  # doctest: +SKIP
        3
    """
    if result.branch is not None:
        base_log = result.base.run(result.branch.run_id, tenant_id=result.branch.tenant_id)
    else:
        base_log = result.base
    bt, rt = base_log.table, result.events.table
    diff = result.diff_df()
    b_seq = bt.column("seq").to_numpy(zero_copy_only=False)
    r_seq = rt.column("seq").to_numpy(zero_copy_only=False)
    db = diff.dropna(subset=["base_seq"])
    dr = diff.dropna(subset=["replay_seq"])
    b_status = _by_seq(b_seq, db["base_seq"], db["status"].astype(str), "same")
    r_status = _by_seq(r_seq, dr["replay_seq"], dr["status"].astype(str), "same")
    ann = result.annotations_df()
    r_origin = _by_seq(r_seq, ann["seq"], ann["provenance"].astype(str), "recorded")
    m = result.metrics
    step = int(m["first_divergence_step"])
    hot_r = np.flatnonzero(r_status != "same")
    if len(hot_r):  # every field counts: a patched request parameter is a change too
        step = int(hot_r[0]) if step < 0 else min(step, int(hot_r[0]))
    always = [step] if step >= 0 else []
    b_pos, b_info = _pick(len(b_seq), b_status != "same", max_points, always)
    r_hot = (r_status != "same") | ~np.isin(r_origin, ["recorded", "policy-copy"])
    r_pos, r_info = _pick(len(r_seq), r_hot, max_points, always)
    base = _lane_rows(bt, b_pos).assign(status=b_status[b_pos])
    rep = _lane_rows(rt, r_pos).assign(status=r_status[r_pos], origin=r_origin[r_pos])
    notes = [n for n in (_sampling_note("base", b_info, "changed or removed events"),
                         _sampling_note("replay", r_info,
                                        "changed, patched or fixture-served events")) if n]

    fig = go.Figure()
    for status, (color, symbol) in _STATUS_STYLE.items():
        part = base[base["status"] == status]
        if len(part):
            fig.add_trace(go.Scatter(
                x=part["pos"], y=["base"] * len(part), mode="markers", name=f"base: {status}",
                legendgroup="base", marker={"color": color, "symbol": symbol, "size": 11},
                hovertext=part["hover"], hoverinfo="text"))
    present = set(rep["origin"])
    origins = [o for o in _ORIGIN_STYLE if o in present] + sorted(present - set(_ORIGIN_STYLE))
    for origin in origins:
        part = rep[rep["origin"] == origin]
        color, symbol = _ORIGIN_STYLE.get(origin, ("#9c755f", "circle"))
        changed = (part["status"] != "same").to_numpy()
        fig.add_trace(go.Scatter(
            x=part["pos"], y=["replay"] * len(part), mode="markers",
            name=f"replay: {PROVENANCE_BADGES.get(origin, origin)}",
            legendgroup="replay",
            marker={"color": color, "symbol": symbol, "size": 11,
                    "line": {"width": np.where(changed, 2, 0).tolist(), "color": "#000"}},
            hovertext=part["hover"], hoverinfo="text"))
    if (r_status != "same").any():
        # the outline drawn on replay markers that differ from the base, in the legend too
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name="outlined: differs from the base",
            legendgroup="outline", hoverinfo="skip",
            marker={"color": "rgba(0,0,0,0)", "symbol": "circle", "size": 11,
                    "line": {"width": 2, "color": "#000"}}))
    if step >= 0:
        fig.add_vline(x=step, line_dash="dash", line_color="#c62828", line_width=2)
        fig.add_annotation(x=step, y=1.0, yref="paper", yanchor="bottom", showarrow=False,
                           text=f"first change: step {step}", font={"color": "#c62828"})
    n_hot = int((diff["status"] != "same").sum())
    default = (f"Replay {result.run_id}: {m['comparability']}, "
               f"{max(n_hot - 1, 0):,} changed after the first change")
    if notes:
        default += (f" (sampled: {max(b_info['shown'], r_info['shown']):,} of "
                    f"{max(b_info['total'], r_info['total']):,} events per lane)")
    fig.update_yaxes(categoryorder="array", categoryarray=["replay", "base"])
    fig.update_xaxes(title=STEP_LABEL, rangemode="tozero")
    fig = _layout(fig, title or _esc(default), height, legend_title="",
                  hovermode="closest")
    fig.update_layout(legend={"orientation": "h", "y": -0.35, "x": 0})
    fig.layout.meta = {"sampling": notes}
    return fig


# --------------------------------------------------------------------------- tool sequences
def _tool_calls(data_frame: Any, tenant_id: str | None) -> pd.DataFrame:
    from .eventlog.log import EventLog

    if isinstance(data_frame, EventLog):
        data_frame = data_frame.table
    if isinstance(data_frame, pa.Table) and "kind" in data_frame.column_names:
        import pyarrow.compute as pc  # only the tool calls reach pandas

        data_frame = data_frame.filter(pc.fill_null(pc.equal(
            pc.cast(data_frame.column("kind"), pa.string()), "tool_call"), False))
    df = _frame(data_frame, ["tenant_id", "run_id", "seq", "kind", "tool_name"])
    if "seq" not in df.columns and "call_seq" in df.columns:
        df = df.rename(columns={"call_seq": "seq"})
    _need(df, "run_id", "tool_name", what="tool_sequences")
    if tenant_id is not None:
        _need(df, "tenant_id", what="tenant_id=")
        df = df[df["tenant_id"] == tenant_id]
    if "kind" in df.columns:
        df = df[df["kind"] == "tool_call"]
    if "seq" in df.columns:
        df = df.sort_values(["run_id", "seq"], kind="stable")
    return df


def tool_sequences(data_frame: Any, runs: Sequence[str] | None = None, *,
                   tenant_id: str | None = None, max_runs: int = MAX_RUNS,
                   max_points: int = MAX_POINTS,
                   title: str | None = None, height: int | None = None) -> go.Figure:
    """A swimlane of tool calls per run: one row per run, one square per call, coloured by tool
    (:func:`tool_colors`: every tool its own colour, the same in every figure of the session).

    x is the call's index among its run's tool calls (0, 1, 2, ...), the sequence that
    ``tool_sequence_distance`` compares; one trace per tool name (the legend). Beyond
    ``max_runs`` runs an evenly spaced sample of runs is drawn; a run with more than
    ``max_points`` calls shows an evenly spaced sample of them (x stays the call's index),
    said in the title and in ``fig.layout.meta["sampling"]``.

    Args:
        data_frame: an EventLog / events table (``tool_call`` rows are used) or
            ``log.tools_df()`` (one row per call).
        runs: run ids to draw, top to bottom in that order (default: sorted).

    Example:
        >>> rk.plots.tool_sequences(log, tenant_id="acme")  # doctest: +SKIP

    Raises:
        KeyError: a run in ``runs`` has no tool calls / a column is missing.
        ValueError: nothing to draw.
    """
    df = _tool_calls(data_frame, tenant_id)
    present = pd.unique(df["run_id"])
    if runs is None:
        order = sorted(present)
    else:
        order = list(runs)
        missing = sorted(set(order) - set(present))
        if missing:
            raise KeyError(f"runs without tool calls in data_frame: {missing[:5]}")
    if not order:
        raise ValueError("no tool calls to draw (check tenant_id / runs)")
    shown = _sample(order, max_runs)
    df = df[df["run_id"].isin(shown)]
    idx = df.groupby("run_id", sort=False).cumcount()
    # run ids are shown as category labels: plotly reads tags in them, so they are escaped
    label = {r: _esc(str(r)) for r in shown}
    df = df.assign(call=idx.to_numpy(), tool=df["tool_name"].astype("string").fillna("?"),
                   run_label=df["run_id"].map(label))
    calls = df.groupby("run_id", sort=False)["call"].transform("size").to_numpy()
    notes: list[str] = []
    if len(df) and int(calls.max()) > max_points:
        # an even sample of each long run's calls: call r is kept when r * max_points / n
        # crosses an integer (the first call always), ~max_points per run
        r = df["call"].to_numpy()
        keep = (calls <= max_points) | (r * max_points // calls != (r - 1) * max_points // calls)
        long = df.loc[calls > max_points].groupby("run_id", sort=False).size()
        notes = [f"run {rid}: showing {int(keep[(df['run_id'] == rid).to_numpy()].sum()):,} of "
                 f"{int(n):,} tool calls (1 in {-(-int(n) // max_points):,})"
                 for rid, n in long.items()]
        df = df[keep]
    fig = go.Figure()
    tools = sorted(df["tool"].unique())
    colors = tool_colors(tools)  # a tool keeps its colour across figures
    for tool in tools:
        part = df[df["tool"] == tool]
        fig.add_trace(go.Scatter(
            x=part["call"], y=part["run_label"], mode="markers", name=_esc(str(tool)),
            marker={"symbol": "square", "size": 12, "color": colors[str(tool)]},
            hovertemplate=f"{_esc(str(tool))}<br>call %{{x}} of run %{{y}}<extra></extra>"))
    fig.update_yaxes(categoryorder="array", categoryarray=[label[r] for r in reversed(shown)],
                     type="category",
                     title="run")
    last = float(df["call"].max())
    fig.update_xaxes(title="tool call #", range=[-0.7, last + 0.7], dtick=1 if last <= 30 else None)
    # tall enough for every run's lane and for the legend's every tool (a legend taller than
    # the figure scrolls, hiding tools a reader needs to read the colours)
    h = height or max(300, min(1600, 160 + 24 * len(shown)), min(1600, 200 + 22 * len(tools)))
    default = _shown("Tool calls per run", len(shown), len(order), "runs")
    if notes:
        default += f" (long runs sampled to {max_points:,} calls)"
    fig = _layout(fig, title or default, h, legend_title="tool")
    fig.layout.meta = {"sampling": [_esc(n) for n in notes]}
    return fig


# --------------------------------------------------------------------------- heatmap
def _spectral_order(d: np.ndarray) -> np.ndarray:
    """Order rows so similar runs sit together: sort by the Fiedler vector of the graph whose
    edge weights are exp(-distance / median distance)."""
    n = len(d)
    if n <= 2:
        return np.arange(n)
    off = d[~np.eye(n, dtype=bool)]
    scale = float(np.median(off)) or float(off.max()) or 1.0
    w = np.exp(-d / scale)
    np.fill_diagonal(w, 0.0)
    lap = np.diag(w.sum(axis=1)) - w
    _, vecs = np.linalg.eigh(lap)
    fiedler = vecs[:, 1]
    if fiedler[0] > fiedler[-1]:  # a stable orientation
        fiedler = -fiedler
    return np.lexsort((np.arange(n), np.round(fiedler, 12)))


def tool_distance_heatmap(matrix: pd.DataFrame, *, cluster: bool = True,
                          max_runs: int = 300, title: str | None = None,
                          height: int | None = None) -> go.Figure:
    """A heatmap of the tool-sequence distance matrix, rows and columns clustered.

    ``cluster=True`` reorders runs so that runs with similar tool sequences are adjacent
    (spectral ordering: the Fiedler vector of a similarity graph; deterministic). Beyond
    ``max_runs`` rows an evenly spaced sample of runs is drawn.

    Args:
        matrix: the square frame of :func:`replaykit.tool_distance_matrix`.

    Example:
        >>> rk.plots.tool_distance_heatmap(rk.tool_distance_matrix(log))  # doctest: +SKIP

    Raises:
        ValueError: ``matrix`` is not square with matching row and column labels.
    """
    if matrix.shape[0] != matrix.shape[1] or list(matrix.index) != list(matrix.columns):
        raise ValueError("matrix must be square with the same run ids as index and columns "
                         "(use rk.tool_distance_matrix)")
    total = len(matrix)
    keep = _sample(range(total), max_runs)
    sub = matrix.iloc[keep, keep]
    d = sub.to_numpy(dtype=float)
    order = _spectral_order(d) if cluster else np.arange(len(d))
    labels = [_esc(str(r)) for r in sub.index[order]]
    z = d[np.ix_(order, order)]
    small = len(labels) <= 30
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, colorscale="Viridis", colorbar={"title": {"text": "distance"}},
        texttemplate="%{z}" if small else None,
        hovertemplate="%{y} vs %{x}<br>distance %{z}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", showticklabels=len(labels) <= 60)
    fig.update_yaxes(showticklabels=len(labels) <= 60)
    h = height or max(400, min(900, 200 + 18 * len(labels)))
    name = "clustered" if cluster else "unordered"
    return _layout(fig, title or _shown(f"Tool-sequence distance ({name})", len(keep), total,
                                        "runs"), h)


# --------------------------------------------------------------------------- fixtures
def _fixture_rows(results_or_frame: Any) -> tuple[pd.DataFrame, list[str]]:
    """-> (one row per fixture-served call: replay, provenance; every replay in order)."""
    if isinstance(results_or_frame, pd.DataFrame):
        df = results_or_frame
        col = "replay_run_id" if "replay_run_id" in df.columns else "replay"
        _need(df, col, "provenance", what="fixture_dependence")
        replays = list(pd.unique(df[col].astype(str)))
        if "action" in df.columns:
            df = df[df["action"] == "fixture"]
        return (pd.DataFrame({"replay": df[col].astype(str).to_numpy(),
                              "provenance": df["provenance"].astype("string")
                              .fillna("unknown").to_numpy()}), replays)
    results = list(results_or_frame)
    parts, replays = [], []
    seen: dict[str, int] = {}
    for res in results:  # one effects frame per replay (already materialised)
        eff = res.effects_df()
        eff = eff[eff["action"] == "fixture"]
        label = res.run_id
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:  # a resumed replay keeps its run id: tell the bars apart
            label = f"{label} ({seen[label]})"
        label = f"{label} [{res.status}]"
        replays.append(label)
        parts.append(pd.DataFrame({"replay": label,
                                   "provenance": eff["provenance"].fillna("unknown")
                                   .astype(str).to_numpy()}))
    rows = pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame({"replay": [], "provenance": []})
    return rows, replays


def fixture_dependence(results_or_frame: Any, *, max_runs: int = MAX_RUNS,
                       title: str | None = None, height: int | None = None) -> go.Figure:
    """Fixture-served tool calls per replay, stacked by fixture provenance.

    One bar trace per provenance (analyst, ai, simulator, live, ...); a marker trace named
    ``sensitive to fixture`` flags every replay with at least one fixture-served call
    (``sensitive_to_fixture`` in docs/metrics.md). Beyond ``max_runs`` replays the most
    fixture-dependent ones are drawn (ties by replay id).

    Args:
        results_or_frame: a list of :class:`~replaykit.ReplayResult`, or a DataFrame with one
            row per tool call (``replay_run_id`` or ``replay``, ``provenance``; ``action`` when
            present selects ``fixture`` rows; other replays appear with zero).

    Example:
        >>> rk.plots.fixture_dependence([done, other])  # doctest: +SKIP
    """
    rows, replays = _fixture_rows(results_or_frame)
    if not replays:
        raise ValueError("no replays to draw")
    counts = pd.crosstab(rows["replay"], rows["provenance"]) if len(rows) else \
        pd.DataFrame(index=pd.Index([], name="replay"))
    counts = counts.reindex(replays, fill_value=0)
    total = counts.sum(axis=1) if counts.shape[1] else pd.Series(0, index=counts.index)
    if len(counts) > max_runs:
        ranked = total.reset_index().set_axis(["replay", "n"], axis=1)
        ranked = ranked.sort_values(["n", "replay"], ascending=[False, True]).head(max_runs)
        counts = counts.loc[ranked["replay"]]
        total = total.loc[ranked["replay"]]
    labels = [_esc(str(r)) for r in counts.index]
    fig = go.Figure()
    for i, prov in enumerate(counts.columns):
        fig.add_trace(go.Bar(x=labels, y=counts[prov].to_numpy(), name=_esc(str(prov)),
                             marker_color=_color(i)))
    sens = total.to_numpy() > 0
    fig.add_trace(go.Scatter(
        x=[lab for lab, s in zip(labels, sens, strict=True) if s],
        y=(total.to_numpy()[sens] + 0.3), mode="markers", name="sensitive to fixture",
        marker={"symbol": "triangle-down", "size": 12, "color": "#c62828"},
        hovertemplate="%{x}: sensitive to fixture<extra></extra>"))
    fig.update_layout(barmode="stack", bargap=0.5)
    if len(counts) <= 4:  # a few replays: slim bars, not one bar across the whole figure
        fig.update_traces(width=0.3, selector={"type": "bar"})
    top = float(total.max()) if len(total) else 0.0
    fig.update_yaxes(title="fixture-served calls", range=[0, top + 1],
                     dtick=1 if top <= 10 else None)
    if height is None and len(counts) <= 4:
        height = 320
    fig.update_xaxes(title="replay", type="category")
    return _layout(fig, title or _shown("Fixture dependence by provenance", len(counts),
                                        len(replays), "replays"), height,
                   legend_title="provenance")


# --------------------------------------------------------------------------- distributions
def metric_distribution(compare_df: pd.DataFrame, metric: str, by: str | None = None, *,
                        title: str | None = None, height: int | None = None) -> go.Figure:
    """The distribution of one metric per cohort, as box plots from precomputed statistics.

    One box trace per cohort (value of ``by``; one box without it) with q1, median, q3 and
    whiskers at the most extreme values within 1.5 IQR; the mean is a marker. Statistics are
    computed column-wise, so the figure has the same size for 100 or 1,000,000 rows.

    Args:
        compare_df: e.g. the frame of :func:`replaykit.compare`.
        metric: a numeric column (``first_divergence_step``, ``tool_sequence_distance``, ...).
        by: a cohort column (``comparability``, ``tenant_id``, ``status``, ...).

    Example:
        >>> rk.plots.metric_distribution(cmp, "changed_descendants", by="comparability")
        ... # doctest: +SKIP

    Raises:
        KeyError / ValueError: as the module docstring says.
    """
    values = _numeric(compare_df, metric)
    if by is not None:
        _need(compare_df, by, what=f"by={by!r}")
        key = compare_df[by].astype("string").fillna("(missing)")
    else:
        key = pd.Series("all", index=compare_df.index, dtype="string")
    df = pd.DataFrame({"k": key.to_numpy(), "v": values.to_numpy()}).dropna()
    if df.empty:
        raise ValueError(f"no values of {metric!r} to draw")
    g = df.groupby("k", sort=True)["v"]
    q1, med, q3 = g.quantile(0.25), g.median(), g.quantile(0.75)
    stats = pd.DataFrame({"q1": q1, "median": med, "q3": q3, "mean": g.mean(), "n": g.size()})
    iqr = stats["q3"] - stats["q1"]
    df = df.join(stats[["q1", "q3"]].assign(iqr=iqr), on="k")
    inside = df[(df["v"] >= df["q1"] - 1.5 * df["iqr"]) & (df["v"] <= df["q3"] + 1.5 * df["iqr"])]
    wb = inside.groupby("k")["v"]
    stats["lo"], stats["hi"] = wb.min(), wb.max()
    fig = go.Figure()
    for i, (k, row) in enumerate(stats.iterrows()):  # one row per cohort, not per run
        name = _esc(str(k))
        fig.add_trace(go.Box(
            name=name, x=[f"{name} (n={int(row['n']):,})"], q1=[row["q1"]],
            median=[row["median"]], q3=[row["q3"]],
            lowerfence=[row["lo"]], upperfence=[row["hi"]], mean=[row["mean"]],
            marker_color=_color(i), boxpoints=False,
            hovertemplate=(f"{name} (n={int(row['n']):,})<br>median {row['median']:.4g}"
                           f"<br>mean {row['mean']:.4g}<extra></extra>")))
    if len(df) <= MAX_STRIP:  # few values: draw each one on its box (one extra trace)
        xlab = {k: f"{_esc(str(k))} (n={int(n):,})" for k, n in stats["n"].items()}
        fig.add_trace(go.Scatter(
            x=df["k"].map(xlab), y=df["v"], mode="markers", name="values",
            marker={"color": "rgba(0,0,0,0.5)", "size": 7, "symbol": "circle-open"},
            hovertemplate="%{y}<extra></extra>"))
    fig.update_yaxes(title=metric)
    fig.update_xaxes(title=by or "", type="category")
    return _layout(fig, title or f"{metric}" + (f" by {by}" if by else ""), height,
                   showlegend=False)


# --------------------------------------------------------------------------- state timeline
def _run_rows(states: Any, run_id: str, tenant_id: str | None) -> pd.DataFrame:
    from .fold import StateFrame

    if isinstance(states, StateFrame):
        if tenant_id is None:
            seg = [t for (t, r) in states._index if r == run_id]
            if len(seg) != 1:
                raise ValueError(f"run {run_id!r} is in {len(seg)} tenants' data; pass "
                                 "tenant_id=" if seg else f"no run {run_id!r} in the frame")
            tenant_id = seg[0]
        start, end = states.run_bounds(run_id, tenant_id=tenant_id)
        return states.steps_df().iloc[start:end].reset_index(drop=True)
    df = _frame(states)
    _need(df, "run_id", "seq", what="state_timeline")
    sel = df["run_id"] == run_id
    if tenant_id is not None:
        sel &= df["tenant_id"] == tenant_id
    elif "tenant_id" in df.columns and df.loc[sel, "tenant_id"].nunique() > 1:
        raise ValueError(f"run {run_id!r} is in several tenants' data; pass tenant_id=")
    out = df[sel].sort_values("seq").reset_index(drop=True)
    if out.empty:
        raise ValueError(f"no rows for run {run_id!r}")
    return out


_NOT_FIELDS = {"tenant_id", "run_id", "seq", "type", "kind", "state_hash", "events", "state"}


def state_timeline(states: Any, run_id: str, fields: Sequence[str] | None = None, *,
                   tenant_id: str | None = None, max_points: int = MAX_POINTS,
                   title: str | None = None, height: int | None = None) -> go.Figure:
    """State fields of one run over its steps: one panel per field, sharing the step axis.

    x is the event's position in the run (``step``, as in :func:`divergence_timeline`); the
    hover names both the step and the event's ``seq``. By default fields that never change in
    the run are folded away (named in the title and in ``fig.layout.meta["folded"]``).

    Numeric fields (counters, sizes of keyed collections, token totals) are step lines (the
    value holds until the next event changes it); text fields (``last_tool``, ``last_finish``)
    are categorical markers. Long runs keep only the rows where the field changes (exact for a
    step line), then an even sample down to ``max_points`` (said in the title and, one
    sentence per sampled field, in ``fig.layout.meta["sampling"]``).

    Args:
        states: a :class:`~replaykit.StateFrame` or its ``steps_df()``.
        fields: columns to draw (default: every scalar field and every ``*_size``).
        tenant_id: needed when two tenants have a run with this id.

    Example:
        >>> rk.plots.state_timeline(sf, "chat-1", ["tool_calls", "errors"], tenant_id="acme")
        ... # doctest: +SKIP
    """
    df = _run_rows(states, run_id, tenant_id)
    if fields is None:
        fields = [c for c in df.columns if c not in _NOT_FIELDS
                  and not c.endswith(("_added", "_removed", "_key"))
                  and (pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_string_dtype(df[c]))
                  and not pd.api.types.is_bool_dtype(df[c]) and df[c].notna().any()]
        # panels with no variation are folded away: named in the title, not drawn
        flat = [c for c in fields if df[c].nunique(dropna=False) <= 1]
        if len(flat) < len(fields):
            fields = [c for c in fields if c not in flat]
    else:
        flat = []
    fields = list(fields)
    _need(df, *fields, what="state_timeline fields")
    if not fields:
        raise ValueError("no fields to draw")
    h = height or 140 + 130 * len(fields)
    gap = min(0.3 / max(len(fields) - 1, 1), 45 / h)  # ~45 px between panels for the titles
    fig = make_subplots(rows=len(fields), cols=1, shared_xaxes=True, vertical_spacing=gap,
                        subplot_titles=[_esc(f) for f in fields])
    seq = df["seq"].to_numpy()
    pos = np.arange(len(df), dtype=np.int64)
    sampled: list[str] = []
    for i, f in enumerate(fields, start=1):
        col = df[f]
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        vals = col.astype("Float64").to_numpy(dtype=float, na_value=np.nan) if numeric \
            else col.astype("string").fillna("(none)").to_numpy(dtype=object)
        change = np.r_[True, vals[1:] != vals[:-1]] if len(vals) else np.zeros(0, bool)
        if numeric:
            change |= np.r_[False, np.isnan(vals[1:]) != np.isnan(vals[:-1])] if len(vals) \
                else change
        if len(vals):
            change[-1] = True  # the line reaches the last event
        idx = np.flatnonzero(change)
        if len(idx) > max_points:
            sampled.append(f"{f}: showing {max_points:,} of its {len(idx):,} changes "
                           f"(1 in {-(-len(idx) // max_points):,})")
            idx = idx[_sample(range(len(idx)), max_points)]
        if numeric:
            fig.add_trace(go.Scatter(x=pos[idx], y=vals[idx], mode="lines", name=f,
                                     customdata=seq[idx],
                                     hovertemplate=f"{_esc(f)} %{{y}}<br>step %{{x}} \u00b7 "
                                     "seq %{customdata}<extra></extra>",
                                     line={"shape": "hv", "color": _color(i - 1)}), row=i, col=1)
        else:
            fig.add_trace(go.Scatter(x=pos[idx], y=[_esc(v) for v in vals[idx]],
                                     mode="markers", name=f, customdata=seq[idx],
                                     hovertemplate=f"{_esc(f)} %{{y}}<br>step %{{x}} \u00b7 "
                                     "seq %{customdata}<extra></extra>",
                                     marker={"color": _color(i - 1), "size": 8}), row=i, col=1)
            fig.update_yaxes(type="category", tickmode="linear", dtick=1, row=i, col=1)
    fig.update_xaxes(title=STEP_LABEL, row=len(fields), col=1)
    default = f"State of {run_id}"
    if flat:
        default += " (constant, not drawn: " + ", ".join(
            f"{c}={df[c].iloc[0]}" for c in flat[:6]) + (", \u2026" if len(flat) > 6 else "") \
            + ")"
    if sampled:
        default += f" (sampled: at most {max_points:,} points per field)"
    fig = _layout(fig, title or _esc(default), h, showlegend=False)
    fig.layout.meta = {"folded": flat, "sampling": [_esc(n) for n in sampled]}
    return fig


# --------------------------------------------------------------------------- cohort trend
def _bootstrap(values: np.ndarray, ci: float, n_boot: int, rng: np.random.Generator
               ) -> tuple[float, float]:
    if len(values) < 2:
        return (float("nan"), float("nan"))
    draws = rng.integers(0, len(values), (n_boot, len(values)))
    means = values[draws].mean(axis=1)
    a = (1 - ci) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def cohort_trend(frame: pd.DataFrame, metric: str, period: str = "period", *,
                 by: str | None = None, ci: float = 0.95,
                 method: Literal["normal", "bootstrap"] = "normal", n_boot: int = 1_000,
                 seed: int = 0, title: str | None = None,
                 height: int | None = None) -> go.Figure:
    """The mean of a metric per period, with a confidence band, one line per cohort.

    Rows are observations (runs, replays); they are grouped by ``period`` (and ``by``). The
    band is ``mean +- z * sd / sqrt(n)`` (``method="normal"``) or the percentile interval of
    ``n_boot`` bootstrap means (``method="bootstrap"``, seeded: same figure every time).
    Periods with one row have no band. Traces per cohort: the band's upper edge, its lower
    edge (filled to the upper) and the mean line (named after the cohort).

    Args:
        frame: any DataFrame with a ``period`` column and a numeric ``metric`` column.
        period: the period column (dates, strings or numbers; sorted ascending).
        ci: confidence level in (0, 1).

    Example:
        >>> rk.plots.cohort_trend(df, "tool_sequence_distance", period="week",
        ...                       by="model")  # doctest: +SKIP

    Raises:
        KeyError / ValueError: a missing column, a non-numeric metric, ``ci`` outside (0, 1).
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")
    values = _numeric(frame, metric)
    _need(frame, period, what=f"period={period!r}")
    keys = [period] if by is None else [by, period]
    if by is not None:
        _need(frame, by, what=f"by={by!r}")
    df = frame[keys].copy()
    df["v"] = values.to_numpy()
    df = df.dropna(subset=["v"])
    if df.empty:
        raise ValueError(f"no values of {metric!r} to draw")
    g = df.groupby(keys, sort=True)["v"]
    stats = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "n": g.size()})
    if method == "normal":
        from statistics import NormalDist

        z = NormalDist().inv_cdf(0.5 + ci / 2)
        half = z * stats["sd"] / np.sqrt(stats["n"])
        stats["lo"], stats["hi"] = stats["mean"] - half, stats["mean"] + half
    elif method == "bootstrap":
        rng = np.random.default_rng(seed)
        bounds = [_bootstrap(grp.to_numpy(dtype=float), ci, n_boot, rng) for _, grp in g]
        stats["lo"] = [b[0] for b in bounds]
        stats["hi"] = [b[1] for b in bounds]
    else:
        raise ValueError(f"method must be 'normal' or 'bootstrap', got {method!r}")
    stats = stats.reset_index()
    cohorts = [None] if by is None else list(pd.unique(stats[by]))
    fig = go.Figure()
    for i, c in enumerate(cohorts):
        part = stats if c is None else stats[stats[by] == c]
        name = metric if c is None else _esc(str(c))
        color = _color(i)
        r, gg, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
        x = part[period].tolist()
        fig.add_trace(go.Scatter(x=x, y=part["hi"], mode="lines", line={"width": 0},
                                 showlegend=False, hoverinfo="skip", legendgroup=name,
                                 name=f"{name} upper"))
        fig.add_trace(go.Scatter(x=x, y=part["lo"], mode="lines", line={"width": 0},
                                 fill="tonexty", fillcolor=f"rgba({r},{gg},{b},0.2)",
                                 showlegend=False, hoverinfo="skip", legendgroup=name,
                                 name=f"{name} lower"))
        fig.add_trace(go.Scatter(
            x=x, y=part["mean"], mode="lines+markers", name=name, legendgroup=name,
            line={"color": color}, customdata=np.c_[part["n"], part["lo"], part["hi"]],
            hovertemplate=(f"{name}<br>%{{x}}: mean %{{y:.4g}}<br>{int(ci * 100)}% CI "
                           "%{customdata[1]:.4g} to %{customdata[2]:.4g}<br>"
                           "n=%{customdata[0]}<extra></extra>")))
    fig.update_xaxes(title=period)
    fig.update_yaxes(title=f"mean {metric}")
    label = "normal approx." if method == "normal" else f"bootstrap, {n_boot:,} resamples"
    default = f"{metric} per {period} ({int(round(ci * 100))}% CI, {label})"
    return _layout(fig, title or default, height, legend_title=by or "")

