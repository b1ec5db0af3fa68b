"""Notebook displays: compact, escaped HTML and plain-text summaries of result objects.

Every value that can come from a log (run ids, tool names, text, errors) is untrusted: it goes
through :func:`html.escape` before it reaches HTML. The functions here only read attributes and
frames the objects already hold; they import nothing beyond pandas and the standard library, so
``import replaykit`` stays light.

Numbers for people (:func:`fmt_number`, :func:`people_frame`, :func:`for_people`): counts as
integers with thousands separators, other numbers to 3 significant digits. Reports and
explorers format their tables this way; a notebook opts in for any frame with
``rk.for_people(df)``. Nothing here changes pandas' global display options.

Used by ``StateFrame._repr_html_``, ``ReplayResult._repr_html_``, ``Verdict._repr_html_`` and
available for other result objects (:func:`frame_html`, :func:`summary_html`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import html
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import MissingExtraError

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

__all__ = [
    "MISSING",
    "display_cells",
    "fmt_cell",
    "fmt_number",
    "fmt_time",
    "for_people",
    "frame_html",
    "frame_text",
    "people_frame",
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


#: A cell that reads as a number (as :func:`fmt_number` writes them, or a plain number).
_NUMBER_TEXT = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?%?|exact")


def _numeric_positions(shown: pd.DataFrame) -> list[int]:
    """1-based positions of the columns whose every non-empty cell is a number."""
    out = []
    for i, col in enumerate(shown.columns, start=1):
        values = [v for v in shown[col] if v != ""]
        if values and all(
                (isinstance(v, (int, float, np.integer, np.floating))
                 and not isinstance(v, (bool, np.bool_)))
                or (isinstance(v, str) and _NUMBER_TEXT.fullmatch(v)) for v in values):
            out.append(i)
    return out


def frame_html(df: pd.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """The first ``max_rows`` rows of ``df`` as an escaped HTML table, plus a "more" line.

    The table carries its own spacing and alignment (an ipywidgets ``HTML`` gets none of
    JupyterLab's table styles): padded cells that do not wrap (every cell is at most
    ``MAX_CELL`` characters), text left-aligned, numbers right-aligned."""
    head = df.head(max_rows)
    shown = display_cells(head)
    for col in shown.columns:
        shown[col] = shown[col].map(
            lambda v: str(v)[: MAX_CELL - 1] + "\u2026" if len(str(v)) > MAX_CELL else v)
    out = shown.to_html(index=False, escape=True, na_rep=MISSING, border=0)
    # a class named after the table's content: the same table gets the same rules, and two
    # tables' rules never meet
    cls = "rk-t" + hashlib.sha256(out.encode()).hexdigest()[:10]
    right = "".join(f".{cls} td:nth-child({k}),.{cls} th:nth-child({k}){{text-align:right}}"
                    for k in _numeric_positions(shown))
    style = (f"<style>.{cls}{{border-collapse:collapse}}"
             f".{cls} th,.{cls} td{{padding:2px 10px;text-align:left;white-space:nowrap;"
             f"vertical-align:top}}.{cls} th{{font-weight:600}}{right}</style>")
    out = out.replace('class="dataframe"', f'class="dataframe rk-table {cls}"', 1)
    if len(df) > max_rows:
        out += f"<div>&hellip; {len(df) - max_rows:,} more rows</div>"
    # a wide frame scrolls inside its own box instead of overflowing the cell
    return f"{style}<div style='overflow-x:auto;max-width:100%'>{out}</div>"


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


# ------------------------------------------------------------------ numbers for people
#: Columns whose -1 means "the runs never diverge" (docs/metrics.md): shown as ``exact``.
EXACT_MINUS_ONE = ("first_divergence_step",)


def _isna(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def fmt_number(v: Any, *, digits: int = 3, percent: bool = False, signed: bool = False) -> str:
    """A number for people: thousands separators, ``digits`` significant digits for
    non-integers (without trailing zeros: ``0.2``, not ``0.200``), percentages for rates
    (``percent=True``: 0.0523 -> ``5.23%``).

    >>> fmt_number(1234567), fmt_number(-1.6699999999999946), fmt_number(0.0523, percent=True)
    ('1,234,567', '-1.67', '5.23%')
    >>> fmt_number(0.2), fmt_number(0.05, percent=True), fmt_number(2.5e-05)
    ('0.2', '5%', '0.000025')
    """
    if v is None or _isna(v):
        return MISSING
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if not isinstance(v, (int, float, np.integer, np.floating)):
        return str(v)
    x = float(v) * (100 if percent else 1)
    sign = "+" if signed and x > 0 else ""
    suffix = "%" if percent else ""
    if not np.isfinite(x):
        return str(x)
    if not percent and float(x).is_integer() and abs(x) < 1e15:
        return f"{sign}{int(x):,}"
    if x == 0:
        return f"0{suffix}"
    mag = int(np.floor(np.log10(abs(x))))
    dec = max(0, digits - 1 - mag)
    text = f"{x:,.{dec}f}"
    if "." in text:  # 0.2, not 0.200: the digits are a bound, not padding
        text = text.rstrip("0").rstrip(".")
    return f"{sign}{text}{suffix}"


def _exact_or_number(v: Any) -> str:
    return "exact" if not _isna(v) and float(v) == -1 else fmt_number(v)


def people_frame(df: pd.DataFrame, max_rows: int | None = None) -> pd.DataFrame:
    """The first ``max_rows`` rows of ``df`` with every number as a person reads it (see
    :func:`fmt_number`: counts as integers with thousands separators, other numbers to 3
    significant digits) and ``-1`` in a first-divergence column as ``exact``. For display
    only: every cell becomes text (:func:`for_people` keeps the values and formats only what
    is shown).

    >>> people_frame(pd.DataFrame({"first_divergence_step": [3, -1], "events": [12345, 7],
    ...                            "norm": [0.333333, 1.0]})).values.tolist()
    [['3', '12,345', '0.333'], ['exact', '7', '1']]
    """
    head = df.head(max_rows) if max_rows is not None else df
    out = pd.DataFrame(index=head.index)
    for c in head.columns:
        col = head[c]
        if c in EXACT_MINUS_ONE and pd.api.types.is_numeric_dtype(col):
            out[c] = [_exact_or_number(v) for v in col]
        elif pd.api.types.is_bool_dtype(col):
            out[c] = [MISSING if _isna(v) else str(bool(v)) for v in col]
        elif pd.api.types.is_datetime64_any_dtype(col):
            out[c] = [fmt_time(v) for v in col]
        else:
            out[c] = [fmt_number(fmt_cell(v)) for v in col.astype(object)]
    return out


#: How every table replaykit shows writes a missing value (``None``, ``NaN``, ``NaT``,
#: ``pd.NA``): blank. Notebook reprs, widgets, reports, ``rk.for_people`` and the command
#: line's text tables all go through :func:`fmt_cell` / :func:`display_cells`.
MISSING = ""


def fmt_time(v: Any) -> str:
    """A timestamp for people, in the one format every table replaykit shows uses: UTC to the
    millisecond, ``YYYY-MM-DD HH:MM:SS.mmmZ`` (always three fraction digits, whatever the
    precision of the source; never pandas' six digits of microseconds); a time without a
    zone prints without the ``Z``; missing is :data:`MISSING` (blank).

    >>> fmt_time(pd.Timestamp("2026-01-01 10:00:04.150", tz="UTC")), fmt_time(pd.NaT)
    ('2026-01-01 10:00:04.150Z', '')
    >>> fmt_time(pd.Timestamp("2026-01-01 11:00:04", tz="Europe/Paris"))
    '2026-01-01 10:00:04.000Z'
    """
    if v is None or _isna(v):
        return MISSING
    ts = pd.Timestamp(v)
    zone = ""
    if ts.tzinfo is not None:
        ts, zone = ts.tz_convert("UTC"), "Z"
    return f"{ts:%Y-%m-%d %H:%M:%S}.{ts.microsecond // 1000:03d}{zone}"


def fmt_cell(v: Any) -> Any:
    """One cell as a table shows it: missing values (``None``, ``NaN``, ``NaT``, ``pd.NA``)
    as :data:`MISSING`, timestamps as :func:`fmt_time`, dicts and lists as compact JSON
    text; anything else unchanged (numbers stay numbers, for :func:`fmt_number`).

    >>> [fmt_cell(v) for v in (None, float("nan"), pd.NaT, pd.NA, {"a": [1]}, 3)]
    ['', '', '', '', '{"a": [1]}', 3]
    """
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (dict, list, tuple)):
        import json

        return json.dumps(v, ensure_ascii=False, default=str)
    if v is None or _isna(v):
        return MISSING
    if isinstance(v, (pd.Timestamp, _dt.datetime)):
        return fmt_time(v)
    return v


def display_cells(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (the rows to show) with every cell as :func:`fmt_cell` writes it: object
    columns, one missing-value style and one timestamp format. For display only.

    >>> display_cells(pd.DataFrame({"t": pd.to_datetime([None, 0], utc=True),
    ...                             "n": pd.array([None, 2], dtype="Int64")})).values.tolist()
    [['', ''], ['1970-01-01 00:00:00.000Z', 2]]
    """
    out = pd.DataFrame(index=df.index)
    for i in range(len(df.columns)):
        col = df.iloc[:, i]
        if pd.api.types.is_datetime64_any_dtype(col):
            vals = [fmt_time(v) for v in col]
        else:
            vals = [fmt_cell(v) for v in col.astype(object)]
        out[i] = pd.Series(vals, index=df.index, dtype=object)
    out.columns = df.columns
    return out


def _text_cell(v: Any) -> str:
    return str(fmt_number(fmt_cell(v)))


def _people_styler_class() -> type[Styler]:
    """A pandas ``Styler`` that also reads well outside a notebook: ``print()`` and
    ``repr()`` give the table as text (what :func:`people_frame` shows), not
    ``<pandas.io.formats.style.Styler object at 0x...>``; Jupyter still renders its HTML."""
    from pandas.io.formats.style import Styler as _Styler

    class PeopleStyler(_Styler):  # type: ignore[misc]
        def __repr__(self) -> str:
            data = self.data
            hidden = bool(getattr(self, "hide_index_", [False])[0])
            shown = people_frame(data)
            if not len(shown.columns):
                return f"(empty table: {len(data):,} rows)"
            text = str(shown.to_string(index=not hidden))
            return "\n".join(line.rstrip() for line in text.split("\n"))

        __str__ = __repr__

    return PeopleStyler


def for_people(df: pd.DataFrame, max_rows: int | None = None) -> Styler:
    """``df`` shown with numbers for people, for a notebook's last line: a pandas ``Styler``
    whose numeric columns display as :func:`fmt_number` writes them (``12,345``, ``0.333``,
    ``-1.67``; ``-1`` in a first-divergence column as ``exact``; missing values blank), and
    timestamps as :func:`fmt_time` does (UTC to the millisecond), every missing value
    blank (:data:`MISSING`). ``print()`` and ``repr()`` of it, as in a script, give the same
    table as text instead of pandas' ``<... Styler object at 0x...>``.

    Opt-in and local: the values are not changed (``.data`` is the frame itself, numbers and
    dtypes and all, for checks), and pandas' global display options are not touched. Text is
    HTML-escaped (log content is untrusted). Rows
    beyond ``max_rows`` are left out of the display. Needs Jinja2 (the ``viz`` extra), as
    every pandas ``Styler`` does.

    >>> import replaykit as rk  # doctest: +SKIP
    >>> rk.for_people(log.runs_df()[["run_id", "events", "tool_calls"]])  # doctest: +SKIP

    Raises:
        MissingExtraError: Jinja2 is not installed.
    """
    shown = df.head(max_rows) if max_rows is not None else df
    try:
        styler_class = _people_styler_class()
    except ImportError as exc:  # pandas: "the Styler requires jinja2"
        raise MissingExtraError("rk.for_people (a pandas Styler)", "viz", "jinja2") from exc
    styler = styler_class(shown)
    numeric = [c for c in shown.columns if pd.api.types.is_numeric_dtype(shown[c])
               and not pd.api.types.is_bool_dtype(shown[c])]
    formats: dict[Any, Any] = {c: (_exact_or_number if c in EXACT_MINUS_ONE else fmt_number)
                               for c in numeric}
    times = [c for c in shown.columns if pd.api.types.is_datetime64_any_dtype(shown[c])]
    formats.update({c: fmt_time for c in times})
    formats.update({c: _text_cell for c in shown.columns if c not in formats
                    and not pd.api.types.is_bool_dtype(shown[c])})
    styler = styler.format(formats, na_rep=MISSING, escape="html")  # log text is untrusted
    # text reads from the left (JupyterLab right-aligns every cell); numbers stay right
    text = [c for c in shown.columns if c not in numeric and c not in times
            and not pd.api.types.is_bool_dtype(shown[c])]
    if text:
        styler = styler.set_table_styles(
            {c: [{"selector": "", "props": "text-align: left;"}] for c in text}, overwrite=False)
    # a plain row number (0, 1, 3, ... after a filter) means nothing to a reader: not shown;
    # a named index (run ids of a distance matrix) is
    index = shown.index
    if index.nlevels == 1 and index.name is None and pd.api.types.is_integer_dtype(index):
        styler = styler.hide(axis="index")
    return styler
