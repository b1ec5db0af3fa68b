"""Notebook displays: compact, escaped HTML and plain-text summaries of result objects.

Every value that can come from a log (run ids, tool names, text, errors) is untrusted: it goes
through :func:`html.escape` before it reaches HTML. The functions here only read attributes and
frames the objects already hold; they import nothing beyond pandas and the standard library, so
``import replaykit`` stays light.

Used by ``StateFrame._repr_html_``, ``ReplayResult._repr_html_``, ``Verdict._repr_html_`` and
available for other result objects (:func:`frame_html`, :func:`summary_html`).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

__all__ = [
    "frame_html",
    "frame_text",
    "replay_result_html",
    "state_frame_html",
    "summary_html",
    "verdict_html",
]

#: rows shown in an HTML table before "... N more rows".
MAX_ROWS = 10
#: longest cell text shown (longer values are cut with an ellipsis).
MAX_CELL = 80

_STYLE = ("font-family:var(--jp-ui-font-family,sans-serif);font-size:12px;"
          "line-height:1.4")
_BADGE = ("display:inline-block;padding:0 6px;border-radius:8px;margin-left:4px;"
          "font-size:11px;background:{bg};color:#fff")
_COLORS = {
    "completed": "#2e7d32", "paused": "#ef6c00", "failed": "#c62828",
    "exact": "#2e7d32", "aligned": "#558b2f", "diverged_but_comparable": "#ef6c00",
    "non_comparable": "#c62828", "deterministic": "#2e7d32", "nondeterministic": "#c62828",
}


def _esc(value: Any, limit: int = MAX_CELL) -> str:
    text = "" if value is None else str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    return html.escape(text, quote=True)


def _badge(label: str) -> str:
    return f"<span style='{_BADGE.format(bg=_COLORS.get(label, '#616161'))}'>{_esc(label)}</span>"


def summary_html(title: str, items: Mapping[str, Any], *, badges: Iterable[str] = (),
                 table: pd.DataFrame | None = None, css_class: str = "replaykit") -> str:
    """A title line with badges, a ``key: value`` line, and an optional table (all escaped).

    >>> "runs: <code>2</code>" in summary_html("Thing", {"runs": 2}, badges=["completed"])
    True
    """
    head = f"<b>{_esc(title)}</b>" + "".join(_badge(b) for b in badges)
    pairs = " &middot; ".join(f"{_esc(k)}: <code>{_esc(v, 4 * MAX_CELL)}</code>"
                              for k, v in items.items())
    body = frame_html(table) if table is not None else ""
    return (f"<div class='{_esc(css_class)}' style='{_STYLE}'><div>{head}</div>"
            f"<div>{pairs}</div>{body}</div>")


def frame_html(df: pd.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """The first ``max_rows`` rows of ``df`` as an escaped HTML table, plus a "more" line."""
    head = df.head(max_rows)
    shown = head.astype(object).where(head.notna(), "")
    for col in shown.columns:
        shown[col] = shown[col].map(
            lambda v: str(v)[: MAX_CELL - 1] + "\u2026" if len(str(v)) > MAX_CELL else v)
    out = shown.to_html(index=False, escape=True, na_rep="", border=0)
    if len(df) > max_rows:
        out += f"<div>&hellip; {len(df) - max_rows:,} more rows</div>"
    # a wide frame scrolls inside its own box instead of overflowing the cell
    return f"<div style='overflow-x:auto;max-width:100%'>{out}</div>"


def frame_text(title: str, items: Mapping[str, Any]) -> str:
    """``Title(key=value, ...)`` for plain-text reprs."""
    inner = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}"
                      for k, v in items.items())
    return f"{title}({inner})"


# --------------------------------------------------------------------------- StateFrame
def _state_items(sf: Any) -> dict[str, Any]:
    return {"events": f"{len(sf):,}", "runs": f"{sf.num_runs:,}",
            "fields": ", ".join(f.name for f in sf.fields)}




def state_frame_html(sf: Any) -> str:
    """HTML summary of a :class:`~replaykit.StateFrame`: counts, fields, first final states."""
    table = None
    if len(sf):
        final = sf.final(with_state=False)
        drop = [c for c in final.columns if c in ("state_hash", "type")
                or c.endswith(("_added", "_removed", "_key"))]
        table = final.drop(columns=drop)
    return summary_html("StateFrame", _state_items(sf), table=table,
                        css_class="replaykit-stateframe")


# --------------------------------------------------------------------------- ReplayResult
_RESULT_METRICS = ("first_divergence_step", "changed_descendants", "tool_sequence_distance",
                   "tool_signature_distance", "fixture_dependency_count")


def _metrics(res: Any) -> dict[str, Any] | None:
    try:
        return dict(res.metrics)
    except Exception:  # a display never raises: the summary just leaves metrics out
        return None




def replay_result_html(res: Any) -> str:
    """HTML summary of a replay: status and comparability badges, key metrics, open requirements
    (or the effects table when there are none)."""
    m = _metrics(res)
    badges = [res.status]
    items: dict[str, Any] = {"run": res.run_id, "events": len(res.events),
                             "policy": f"{res.model_policy}/{res.tool_policy}"}
    if m is not None:
        badges.append(str(m.get("comparability")))
        items.update({k: m[k] for k in _RESULT_METRICS if k in m})
        if m.get("sensitive_to_fixture"):
            badges.append("sensitive to fixture")
    if res.error:
        items["error"] = res.error
    open_req = [r for r in res.requirements if r.get("status") == "open"]
    table = res.requirements_df() if open_req else res.effects_df()
    return summary_html("ReplayResult", items, badges=badges, table=table,
                        css_class="replaykit-replayresult")


# --------------------------------------------------------------------------- Verdict
def _verdict_items(v: Any) -> dict[str, Any]:
    items: dict[str, Any] = {"deterministic": v.deterministic, "steps": v.steps}
    if not v.deterministic:
        # named as everywhere else: the 0-based step (position in the run, as in a replay's
        # first_divergence_step and the scrubbers) and its seq; Verdict.first_divergence_at
        # counts from 1
        at = v.first_divergence_at
        items["first_divergence_step"] = at - 1 if isinstance(at, int) else at
        items["first_divergence_seq"] = v.first_divergence_seq
    return items




def verdict_html(v: Any) -> str:
    """HTML summary of a determinism verdict (badge plus where it first diverged)."""
    badge = "deterministic" if v.deterministic else "nondeterministic"
    return summary_html("Verdict", _verdict_items(v), badges=[badge],
                        css_class="replaykit-verdict")
