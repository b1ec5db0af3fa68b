"""``rk.report.cohort``: the cohort report (tables, forest plot, trends)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from ._embed import esc
from ._fmt import _isna, fmt_number
from ._parts import Report, _figure_json, _kv, _table, _versions
from ._template import page, reading_order, render

__all__ = ["cohort"]

# ------------------------------------------------------------------------------ cohort
def cohort(frame: pd.DataFrame, *, title: str, question: str, notes: str | None = None,
           metric: str | None = None, by: str | None = None,
           cohorts: Any = None) -> Report:
    """A cohort-comparison report: a ``Cohorts.compare`` frame (one row per analysis and
    metric) or an ``rk.compare`` frame (one row per replay pair), as a self-contained page.

    For a ``Cohorts.compare`` frame the page opens with its findings: the headline ("k of m
    measures moved beyond their interval; j after Holm correction"), each measure whose
    interval excludes zero in words, what paired and unpaired mean here (with n) and the
    multiple-comparison caveat. Then one table and one interval figure per unit (rates in
    percentage points, counts, tokens: each on its own axis), rows whose interval excludes
    zero highlighted, corrected columns (:func:`replaykit.report._cohort.adjust`), and --
    with ``cohorts=`` (the :class:`~replaykit.Cohorts` the frame came from) -- the trend of
    every measure over all its cohorts (semesters). For an ``rk.compare`` frame: a summary,
    the table and ``metric_distribution`` of ``metric`` split ``by``.

    Raises:
        TypeError: ``frame`` is not a DataFrame, or title/question missing.
        ValueError: an empty frame.

    Example:
        >>> cs = rk.cohorts(log, by="semester")  # doctest: +SKIP
        >>> out = cs.compare("2025-fall", "2026-spring")  # doctest: +SKIP
        >>> rk.report.cohort(out, title="Fall vs spring", question="...",
        ...                  cohorts=cs)  # doctest: +SKIP
    """
    for name, v in (("title", title), ("question", question)):
        if not isinstance(v, str) or not v.strip():
            raise TypeError(f"{name} is required (a non-empty string), got {v!r}")
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    if frame.empty:
        raise ValueError("frame is empty: nothing to report")
    from .. import plots

    sections: list[tuple[str, str, str]] = []
    claim = ("These are differences between the groups of recorded runs in this frame, under "
             "the definitions and (for replay metrics) the policies and fixtures used to build "
             "it. They describe these runs; they do not establish what caused the differences.")
    question_body = (f"<p class='question'><b>Question.</b> {esc(question)}</p>"
                     f"<p class='claim'><b>Bounded claim.</b> {esc(claim)}</p>")
    if notes:
        question_body += f"<div class='notes'><b>Notes.</b><pre>{esc(notes)}</pre></div>"
    data: dict[str, Any] = {"rows": len(frame)}
    figs: list[tuple[str, Any]] = []
    if {"metric", "diff", "ci_low", "ci_high", "analysis"} <= set(frame.columns):
        from ._cohort import UNITS, adjust, cohort_answer, cohort_findings

        adj = adjust(frame)
        headline, rows = cohort_findings(adj)
        answer = cohort_answer(adj)
        if cohorts is not None:  # a drifted stamp confounds every other difference: first
            from ..provenance.stamps import stamp_drift

            try:
                drift = stamp_drift(cohorts)
            except (KeyError, ValueError, TypeError):
                drift = pd.DataFrame()
            if len(drift):
                lines = [str(h) for h in drift["headline"]]
                headline = ("Stamp drift (confounds every difference below): "
                            + "; ".join(lines) + ". " + headline)
                rows.insert(0, {"kind": "caveat", "sentence": (
                    "Controllable variables changed between cohorts: " + "; ".join(lines)
                    + ". Any difference below may come from them rather than from the "
                    "agent."), "section": "repro"})
                data["stamp_drift"] = drift
        data.update(adjusted=adj, headline=headline, findings=rows, answer=answer)
        groups = [{"kind": k, "title": t, "rows": [r for r in rows if r["kind"] == k]}
                  for k, t in (("outcome", "Outcome"), ("evidence", "How the comparison is "
                                                                     "made"),
                               ("caveat", "Caveats"))]
        sections.append(("findings", "Findings", str(render(
            "findings.html", answer=answer, verdict=answer.split(":", 1)[0].lower(),
            headline=headline, groups=[g for g in groups if g["rows"]]))))
        sections.append(("question", "Question and claim", question_body))
        for analysis in ("unpaired", "paired"):
            part = adj[adj["analysis"] == analysis]
            if part.empty:
                continue
            body = ""
            for unit in UNITS:
                u = part[part["unit"] == unit]
                if u.empty:
                    continue
                body += (f"<h3 id='unit-{unit}-{analysis}'>{esc(unit)}"
                         f"{' (percentage points)' if unit == 'rates' else ''}</h3>"
                         + _cohort_table(u, unit))
            sections.append((f"table-{analysis}", f"Measures ({analysis})", body))
        for unit in UNITS:
            u = adj[adj["unit"] == unit]
            if len(u):
                figs.append((unit, _forest(u, unit)))
        fig_html = "".join(
            f"<h3 id='unit-{esc(unit)}'>Differences with intervals: {esc(unit)}</h3>"
            f"<div class='figure' id='rk-fig-{k}' data-unit='{esc(unit)}'></div>"
            for k, (unit, _) in enumerate(figs))
        trend_figs = []
        if cohorts is not None:
            try:
                trend_figs = _trends(cohorts, adj)
            except (KeyError, ValueError, TypeError):
                trend_figs = []
        for unit, fig in trend_figs:
            k = len(figs)
            figs.append((f"trend-{unit}", fig))
            fig_html += (f"<h3>Trend over cohorts: {esc(unit)}</h3><div class='figure' "
                         f"id='rk-fig-{k}' data-trend='{esc(unit)}'></div>")
        if cohorts is None:
            fig_html += ("<p class='note'>Pass <code>cohorts=</code> (the Cohorts the frame "
                         "came from) to draw each measure's trend over all cohorts.</p>")
        fig_html += "".join(f"<script type='application/json' class='rk-figure' "
                            f"data-target='rk-fig-{k}'>{_figure_json(f)}</script>"
                            for k, (_, f) in enumerate(figs))
        sections.append(("figures", "Figures", fig_html))
    else:
        n = len(frame)
        sents = [{"kind": "outcome", "sentence": f"{n:,} row(s) compared.", "section": "table"}]
        if "comparability" in frame.columns:
            counts = frame["comparability"].astype(str).value_counts()
            sents.append({"kind": "outcome", "sentence": "Comparability: " + ", ".join(
                f"{c} {fmt_number(v)} of {n:,}" for c, v in counts.items()) + ".",
                "section": "table"})
        mcol = metric or next((c for c in ("tool_sequence_distance", "first_divergence_step")
                               if c in frame.columns), None)
        if mcol is not None and pd.api.types.is_numeric_dtype(frame[mcol]):
            vals = frame[mcol].astype(float)
            sents.append({"kind": "outcome", "sentence": (
                f"{mcol}: median {fmt_number(vals.median())}, mean {fmt_number(vals.mean())}"
                f", max {fmt_number(vals.max())}."), "section": "figures"})
        sents.append({"kind": "caveat", "sentence": claim, "section": "question"})
        data.update(findings=sents)
        sections.append(("findings", "Findings", str(render(
            "findings.html", headline=None, groups=[
                {"kind": k, "title": t, "rows": [r for r in sents if r["kind"] == k]}
                for k, t in (("outcome", "Outcome"), ("caveat", "Caveats"))]))))
        sections.append(("question", "Question and claim", question_body))
        sections.append(("table", "Comparison table", _table(frame, max_rows=1000)))
        if mcol is not None:
            figs.append((mcol, plots.metric_distribution(frame, mcol, by=by)))
        fig_html = "".join(f"<div class='figure' id='rk-fig-{k}'></div><script type='application/"
                           f"json' class='rk-figure' data-target='rk-fig-{k}'>{_figure_json(f)}"
                           "</script>" for k, (_, f) in enumerate(figs))
        sections.append(("figures", "Figures", fig_html or "<p>No figure for this frame.</p>"))
    versions = _versions()
    stamp = {"generated": datetime.now(UTC).isoformat(timespec="seconds"),
             "rows": len(frame), **{f"version {k}": v for k, v in versions.items()}}
    sections.append(("repro", "Reproducibility stamp", _kv(stamp)))
    data["versions"] = versions
    data["figures"] = [n for n, _ in figs]
    sections = reading_order(sections)  # the question first
    return Report(page(title, sections), title=title, sections=[s[0] for s in sections],
                  data=data)


def _cohort_table(u: pd.DataFrame, unit: str) -> str:
    """One unit's measures: formatted for people, corrected columns, hits highlighted."""
    from ._cohort import fmt_p, fmt_stat

    def f(v: Any, signed: bool = False) -> str:
        return fmt_stat(v, unit, signed=signed)

    view = pd.DataFrame({
        "measure": u["metric"].astype(str).to_numpy(),
        "n (a / b)": [f"{fmt_number(a)} / {fmt_number(b)}" for a, b in
                      zip(u["n_a"], u["n_b"], strict=True)],
        str(u["cohort_a"].iloc[0]): [f(v) for v in u["value_a"]],
        str(u["cohort_b"].iloc[0]): [f(v) for v in u["value_b"]],
        "difference": [f(v, True) for v in u["diff"]],
        "interval": [f"{f(a, True)} to {f(b, True)}" for a, b in
                     zip(u["ci_low"], u["ci_high"], strict=True)],
        "relative": [fmt_stat(v, "percent", signed=True) for v in u["rel_diff"]],
        "effect size": [f"{fmt_stat(v, 'counts', signed=True)} ({k})" if not _isna(v) else ""
                        for v, k in zip(u["effect_size"], u["effect_size_kind"], strict=True)],
        "p (approx.)": [fmt_p(v) for v in u["p_value"]],
        "Holm p": [fmt_p(v) for v in u["p_holm"]],
        "BH p": [fmt_p(v) for v in u["p_bh"]],
        "beyond interval": ["too few to test" if sm else "yes" if x else "no"
                            for x, sm in zip(u["excludes_zero"].fillna(False),
                                             u["small_sample"], strict=True)],
        "after correction": ["Holm" if h else "BH only" if b else "no"
                             for h, b in zip(u["holm"], u["bh"], strict=True)],
    })
    hits = u["excludes_zero"].fillna(False).to_numpy(dtype=bool)
    return _table(view, cls="cohort", row_classes=["hit" if h else "" for h in hits])


def _forest(u: pd.DataFrame, unit: str) -> Any:
    """Differences with intervals for one unit, on its own axis; hits in red."""
    import plotly.graph_objects as go

    scale = 100.0 if unit == "rates" else 1.0
    u = u.iloc[::-1]
    labels = [html.escape(f"{m} ({a})", quote=False) for m, a in
              zip(u["metric"].astype(str), u["analysis"].astype(str), strict=True)]
    d = u["diff"].astype(float).to_numpy() * scale
    lo = u["ci_low"].astype(float).to_numpy() * scale
    hi = u["ci_high"].astype(float).to_numpy() * scale
    hit = u["excludes_zero"].fillna(False).to_numpy(dtype=bool)
    fig = go.Figure()
    unit_label = "percentage points" if unit == "rates" else unit
    for mask, name, color in ((hit, "interval excludes zero", "#c62828"),
                              (~hit, "interval includes zero", "#78909c")):
        if not mask.any():
            continue
        fig.add_trace(go.Scatter(
            x=d[mask], y=[lab for lab, k in zip(labels, mask, strict=True) if k],
            mode="markers", name=name, marker={"color": color, "size": 9},
            error_x={"type": "data", "symmetric": False, "array": (hi - d)[mask].tolist(),
                     "arrayminus": (d - lo)[mask].tolist(), "color": color, "thickness": 2},
            customdata=np.c_[lo[mask], hi[mask]],
            hovertemplate=(f"%{{y}}<br>difference %{{x:.3g}} {unit_label}<br>interval "
                           "%{customdata[0]:.3g} to %{customdata[1]:.3g}<extra></extra>")))
    fig.add_vline(x=0, line_color="#424242", line_width=1)
    fig.update_xaxes(title=f"difference (b \u2212 a), {unit_label}", zeroline=False)
    fig.update_yaxes(type="category", automargin=True, categoryorder="array",
                     categoryarray=labels)
    fig.update_layout(template="plotly_white", height=max(160, 90 + 26 * len(u)),
                      margin={"l": 10, "r": 20, "t": 30, "b": 50},
                      legend={"orientation": "h", "y": 1.08, "x": 0},
                      title=None)
    return fig


def _trends(cs: Any, adj: pd.DataFrame) -> list[tuple[str, Any]]:
    """Per unit: one small panel per measure, its per-cohort value over all cohorts."""
    from plotly.subplots import make_subplots

    s = cs.summary()
    if "tool_calls_per_run" not in s and {"tool_calls", "runs"} <= set(s.columns):
        s["tool_calls_per_run"] = s["tool_calls"].astype(float) / s["runs"].astype(float)
    if "model_calls_per_run" not in s and {"model_calls", "runs"} <= set(s.columns):
        s["model_calls_per_run"] = s["model_calls"].astype(float) / s["runs"].astype(float)
    out = []
    from ._cohort import UNITS

    hits = set(adj.loc[adj["excludes_zero"].fillna(False).to_numpy(dtype=bool), "metric"]
               .astype(str))
    for unit in UNITS:
        ms = [m for m in pd.unique(adj.loc[adj["unit"] == unit, "metric"].astype(str))
              if m in s.columns]
        if not ms:
            continue
        # three panels a row at most: room for the cohort labels and the measure names
        cols = min(3, len(ms))
        nrows = -(-len(ms) // cols)
        fig = make_subplots(rows=nrows, cols=cols, subplot_titles=[
            _panel_title(m, m in hits) for m in ms],
            horizontal_spacing=0.11, vertical_spacing=min(0.3, 0.75 / max(nrows, 1)))
        scale = 100.0 if unit == "rates" else 1.0
        for i, m in enumerate(ms):
            r, c = i // cols + 1, i % cols + 1
            y = (s[m].astype(float) * scale).tolist()
            fig.add_trace(_go_scatter(s["cohort"].astype(str).tolist(), y, m, m in hits),
                          row=r, col=c)
            fig.update_yaxes(ticksuffix=" %" if unit == "rates" else "",
                             range=trend_range(y, unit), nticks=5, row=r, col=c)
            fig.update_xaxes(type="category", tickangle=-30, automargin=True, row=r, col=c)
        fig.update_annotations(font_size=12)
        fig.update_layout(template="plotly_white", showlegend=False,
                          height=140 + 230 * nrows, margin={"t": 60, "b": 50})
        out.append((unit, fig))
    return out


#: The smallest y-span of a trend panel per unit (percentage points, counts, tokens): a change
#: smaller than this is drawn as the small change it is, not stretched over the whole panel.
TREND_MIN_SPAN = {"rates": 5.0, "counts": 1.0, "tokens": 100.0}


def trend_range(y: Sequence[float], unit: str) -> list[float] | None:
    """The y-range of one trend panel: the data with 15% padding, widened to at least
    :data:`TREND_MIN_SPAN` of its unit and to 20% of the values' magnitude, so that a
    0.03-point change reads as flat; rates stay within 0-100%.

    >>> trend_range([10.0, 10.03], "rates")
    [7.515, 12.515]
    """
    vals = [float(v) for v in y if v is not None and np.isfinite(v)]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    mid = (lo + hi) / 2
    span = max(hi - lo, TREND_MIN_SPAN.get(unit, 1.0), 0.2 * max(abs(lo), abs(hi)))
    span *= 1.15 if span == hi - lo else 1.0
    a, b = mid - span / 2, mid + span / 2
    if unit == "rates":
        if a < 0:
            a, b = 0.0, max(b - a, hi * 1.05)
        if b > 100:
            a, b = min(a - (b - 100), lo), 100.0
    elif lo >= 0 and a < 0:
        a, b = 0.0, b - a
    return [round(a, 6), round(b, 6)]


def _panel_title(metric: str, hit: bool) -> str:
    """A trend panel's title: the measure's name, broken after its prefix when long
    (``tool_share.<br>web_search``), a star when its interval excludes zero."""
    name = html.escape(metric, quote=False)
    if len(metric) > 16 and "." in metric:
        head, tail = metric.split(".", 1)
        name = html.escape(head, quote=False) + ".<br>" + html.escape(tail, quote=False)
    return name + (" \u2605" if hit else "")


def _go_scatter(x: list[str], y: list[float], name: str, hit: bool) -> Any:
    import plotly.graph_objects as go

    color = "#c62828" if hit else "#4e79a7"
    return go.Scatter(x=[html.escape(v, quote=False) for v in x], y=y, mode="lines+markers",
                      name=html.escape(name, quote=False), line={"color": color},
                      hovertemplate="%{x}: %{y:.3g}<extra></extra>")
