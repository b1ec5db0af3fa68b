"""Notebook explorers (ipywidgets; needs ``pip install "replaykit[viz]"``).

Thin views over frames that already exist: a widget computes its frame once when it is built
(one fold for :class:`Scrubber`, one ``diff_df()`` for :class:`DiffExplorer`) and every
interaction after that only reads from it. Nothing re-folds or re-replays when a slider moves.

Each explorer has a ``.widget`` (the ipywidgets box it shows) and displays itself when it is the
last expression of a cell. The parts are attributes (``.slider``, ``.state_view``, ...) so code
and tests can drive them without a browser.

Raises at import: :class:`~replaykit.errors.MissingExtraError` when ipywidgets is missing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .errors import MissingExtraError

try:
    import ipywidgets as W
except ImportError:  # pragma: no cover - exercised in a subprocess test
    raise MissingExtraError("replaykit.widgets", "viz", "ipywidgets") from None

__all__ = ["CohortExplorer", "DiffExplorer", "Scrubber"]

#: characters of pretty JSON shown per pane before it is cut.
MAX_CHARS = 20_000


def _pre(obj: Any, max_chars: int = MAX_CHARS) -> str:
    """Pretty JSON of ``obj`` in an escaped <pre> block (log content is untrusted)."""
    text = json.dumps(obj, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n... ({len(text) - max_chars:,} more characters)"
    return ("<pre style='margin:0;max-height:360px;overflow:auto;font-size:11px'>"
            f"{html.escape(text)}</pre>")


def _event_dict(table: Any, i: int) -> dict[str, Any]:
    """One event row as plain data: null columns dropped, payload decoded."""
    from ._json import loads

    row = {k: v for k, v in table.slice(i, 1).to_pylist()[0].items() if v is not None}
    payload = row.get("payload")
    if isinstance(payload, str) and payload:
        try:
            row["payload"] = loads(payload)
        except ValueError:
            pass
    return row


def state_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What changed between two states: ``{field: {"before": ..., "after": ...}}`` for scalar
    fields, ``{field: {"added": {...}, "removed": [...], "changed": {...}}}`` for keyed ones.

    >>> state_changes({"n": 1, "m": {"a": 1}}, {"n": 2, "m": {"a": 1, "b": 2}})
    {'n': {'before': 1, 'after': 2}, 'm': {'added': {'b': 2}}}
    """
    out: dict[str, Any] = {}
    for key in after.keys() | before.keys():
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            d: dict[str, Any] = {}
            added = {k: b[k] for k in b.keys() - a.keys()}
            removed = sorted(a.keys() - b.keys(), key=str)
            changed = {k: {"before": a[k], "after": b[k]}
                       for k in a.keys() & b.keys() if a[k] != b[k]}
            if added:
                d["added"] = added
            if removed:
                d["removed"] = removed
            if changed:
                d["changed"] = changed
            out[key] = d
        else:
            out[key] = {"before": a, "after": b}
    order = [k for k in after if k in out] + sorted((k for k in out if k not in after), key=str)
    return {k: out[k] for k in order}


class _View:
    widget: Any

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


# --------------------------------------------------------------------------- Scrubber
class Scrubber(_View):
    """A slider and play button over one run's events: the event, the state, what changed.

    The slider value ``i`` is the 0-based index of an event in the run; the panes show that
    event (pretty JSON, payload decoded), the full state after it
    (``states.at(run_id, seq_i, tenant_id=...)``) and the changes from the state before it.
    Backed by a :class:`~replaykit.StateFrame`: built once (or passed in as ``states``), then
    every move only materialises one state from it.

    Args:
        log: the EventLog holding the run.
        run_id, tenant_id: which run (both required; the tenant is never guessed).
        projections: what to fold (default ``rk.agent()``); ignored when ``states`` is given.
        states: an existing StateFrame covering the run (skips the fold).

    Example:
        >>> s = rk.widgets.Scrubber(log, "chat-1", tenant_id="acme")  # doctest: +SKIP
        >>> s.slider.value = 12; s.state["tool_calls"]  # doctest: +SKIP

    Raises:
        TypeError: ``tenant_id`` missing; KeyError: the tenant has no such run;
        ReplayError: ``states`` does not cover the run; ValueError: ``states`` holds a
        different number of events for the run than ``log``.
    """

    def __init__(self, log: Any, run_id: str, *, tenant_id: str, projections: Any = None,
                 states: Any = None) -> None:
        from .fold import agent, fold
        from .fold.frame import _require_tenant

        _require_tenant(tenant_id)
        run = log.run(run_id, tenant_id=tenant_id)
        self.run_id, self.tenant_id = run_id, tenant_id
        self.states = states if states is not None else fold(run, projections or agent())
        start, end = self.states.run_bounds(run_id, tenant_id=tenant_id)
        self._start: int = start
        self._table = run.table
        self.seqs = self._table.column("seq").to_numpy()
        n = end - self._start
        if n != len(self.seqs):
            raise ValueError(f"states has {n} events of run {run_id!r}, the log {len(self.seqs)}"
                             "; pass the StateFrame folded from this log")
        self.slider = W.IntSlider(value=0, min=0, max=max(n - 1, 0), description="event",
                                  continuous_update=True,
                                  layout=W.Layout(width="60%"))
        self.play = W.Play(value=0, min=0, max=max(n - 1, 0), interval=400, description="play")
        self._link = W.jslink((self.play, "value"), (self.slider, "value"))
        self.header = W.HTML()
        self.event_view = W.HTML()
        self.state_view = W.HTML()
        self.changes_view = W.HTML()
        box = W.Layout(width="33%")
        self.widget = W.VBox([
            W.HBox([self.play, self.slider]), self.header,
            W.HBox([W.VBox([W.HTML("<b>event</b>"), self.event_view], layout=box),
                    W.VBox([W.HTML("<b>changed</b>"), self.changes_view], layout=box),
                    W.VBox([W.HTML("<b>state</b>"), self.state_view], layout=box)]),
        ])
        self.slider.observe(self._on_move, names="value")
        self.show(0)

    def __len__(self) -> int:
        return len(self.seqs)

    def _on_move(self, change: dict[str, Any]) -> None:
        self.show(int(change["new"]))

    def show(self, i: int) -> None:
        """Display event ``i`` (what moving the slider does)."""
        if not 0 <= i < len(self.seqs):
            raise IndexError(f"run {self.run_id!r} has {len(self.seqs)} events; i={i}")
        row = self._start + i
        self.index = i
        self.seq = int(self.seqs[i])
        self.state = self.states.state_at_row(row, self._start)
        before = self.states.state_at_row(row - 1, self._start)
        self.event = _event_dict(self._table, i)
        self.changes = state_changes(before, self.state)
        self.header.value = (f"<b>{html.escape(self.run_id)}</b> &middot; event {i + 1} of "
                             f"{len(self.seqs)} &middot; seq {self.seq} &middot; "
                             f"{html.escape(str(self.event.get('kind', '')))}")
        self.event_view.value = _pre(self.event)
        self.changes_view.value = _pre(self.changes) if self.changes else "<i>no change</i>"
        self.state_view.value = _pre(self.state)


# --------------------------------------------------------------------------- DiffExplorer
DIFF_STATUSES = ("all", "changed", "added", "removed", "same", "not same")


class DiffExplorer(_View):
    """A replay's base and replay events side by side, aligned as in ``result.diff_df()``.

    ``status`` filters the aligned rows (all / changed / added / removed / same / not same);
    ``position`` walks the filtered rows; :meth:`jump_to_first_divergence` goes to the first
    row whose status is not ``same`` (its index equals ``metrics["first_divergence_step"]``).

    Example:
        >>> d = rk.widgets.DiffExplorer(done)  # doctest: +SKIP
        >>> d.jump_to_first_divergence()  # doctest: +SKIP
        3
    """

    def __init__(self, result: Any) -> None:
        self.result = result
        self.diff = result.diff_df()
        if result.branch is not None:
            base = result.base.run(result.branch.run_id, tenant_id=result.branch.tenant_id)
        else:
            base = result.base
        self._base = base.table
        self._rep = result.events.table
        self._base_pos = {int(s): i for i, s in enumerate(self._base.column("seq").to_pylist())}
        self._rep_pos = {int(s): i for i, s in enumerate(self._rep.column("seq").to_pylist())}
        self.rows = self.diff
        self.status = W.Dropdown(options=DIFF_STATUSES, value="all", description="status")
        self.position = W.IntSlider(value=0, min=0, max=max(len(self.diff) - 1, 0),
                                    description="row")
        self.jump = W.Button(description="first divergence", icon="step-forward")
        self.table_view = W.HTML()
        self.base_view = W.HTML()
        self.replay_view = W.HTML()
        self.header = W.HTML()
        half = W.Layout(width="50%")
        self.widget = W.VBox([
            W.HBox([self.status, self.position, self.jump]), self.header,
            W.HBox([W.VBox([W.HTML("<b>base</b>"), self.base_view], layout=half),
                    W.VBox([W.HTML("<b>replay</b>"), self.replay_view], layout=half)]),
            self.table_view,
        ])
        self.status.observe(lambda c: self._filter(c["new"]), names="value")
        self.position.observe(lambda c: self._show(int(c["new"])), names="value")
        self.jump.on_click(lambda _b: self.jump_to_first_divergence())
        self._filter("all")

    def _filter(self, status: str) -> None:
        s = self.diff["status"]
        mask = (s != "same") if status == "not same" else \
            pd.Series(True, index=s.index) if status == "all" else (s == status)
        self.rows = self.diff[mask.fillna(False).to_numpy(dtype=bool)]
        from ._display import frame_html

        self.table_view.value = frame_html(self.rows.reset_index(names="row"), max_rows=50)
        self.position.max = max(len(self.rows) - 1, 0)
        self.position.value = 0
        self._show(0)

    def _show(self, i: int) -> None:
        if not len(self.rows):
            self.header.value = "<i>no rows with this status</i>"
            self.base_view.value = self.replay_view.value = ""
            return
        row = self.rows.iloc[min(i, len(self.rows) - 1)]
        self.current = row
        bs, rs = row["base_seq"], row["replay_seq"]
        self.base_view.value = ("<i>only in the replay</i>" if pd.isna(bs) else
                                _pre(_event_dict(self._base, self._base_pos[int(bs)])))
        self.replay_view.value = ("<i>only in the base</i>" if pd.isna(rs) else
                                  _pre(_event_dict(self._rep, self._rep_pos[int(rs)])))
        status = html.escape(str(row["status"]))
        self.header.value = (f"row {int(self.rows.index[min(i, len(self.rows) - 1)])} of "
                             f"{len(self.diff)} &middot; status <b>{status}</b>")

    def jump_to_first_divergence(self) -> int | None:
        """Show the first aligned row that is not ``same``; returns its row index (None when
        the runs are identical). Resets the status filter to ``all``."""
        if self.status.value != "all":
            self.status.value = "all"
        not_same = np.flatnonzero((self.diff["status"] != "same").to_numpy(dtype=bool))
        if not len(not_same):
            return None
        self.position.value = int(not_same[0])
        return int(not_same[0])


# --------------------------------------------------------------------------- CohortExplorer
def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return None
    return get_ipython()


_DEFAULT_METRICS = ("changed_descendants", "first_divergence_step", "tool_sequence_distance")


class CohortExplorer(_View):
    """Choose a metric and a cohort column: a linked box-plot figure and table of runs.

    The figure is :func:`replaykit.plots.metric_distribution` of the chosen metric by the
    chosen cohort (``.figure``); ``value`` picks one cohort and the table lists its rows, worst
    (highest metric) first; choosing a run and pressing *open* builds a :class:`Scrubber` for
    it (``.scrubber``; needs ``log``). The tenant of the run comes from the frame's
    ``tenant_id`` column.

    Args:
        compare_df: e.g. :func:`replaykit.compare` output (any frame with numeric columns).
        log: the EventLog holding the runs (optional; enables *open*).
        run_column: the column naming runs (default ``base_run_id``, else ``run_id``).

    Example:
        >>> rk.widgets.CohortExplorer(cmp, log=log)  # doctest: +SKIP

    Raises:
        ValueError: the frame has no numeric column.
    """

    def __init__(self, compare_df: pd.DataFrame, *, log: Any = None,
                 run_column: str | None = None, metric: str | None = None,
                 cohort: str | None = None) -> None:
        from . import plots

        self._plots = plots
        self.df = compare_df
        self.log = log
        self.run_column = run_column or ("base_run_id" if "base_run_id" in compare_df.columns
                                         else "run_id")
        metrics = [c for c in compare_df.columns if pd.api.types.is_numeric_dtype(compare_df[c])
                   or pd.api.types.is_bool_dtype(compare_df[c])]
        if not metrics:
            raise ValueError("compare_df has no numeric column to explore")
        cohorts = [c for c in compare_df.columns if c not in metrics
                   and not c.endswith("run_id") and compare_df[c].nunique(dropna=False) <= 50]
        default = next((m for m in _DEFAULT_METRICS if m in metrics), metrics[0])
        self.metric = W.Dropdown(options=metrics, value=metric or default,
                                 description="metric")
        self.cohort = W.Dropdown(options=[("(none)", None)] + [(c, c) for c in cohorts],
                                 value=cohort, description="cohort")
        self.value = W.Dropdown(options=[], description="value")
        self.run = W.Dropdown(options=[], description="run")
        self.open = W.Button(description="open", icon="play", disabled=log is None)
        self.figure_view = W.Output()
        self.table_view = W.HTML()
        self.scrubber_box = W.VBox([])
        self.scrubber: Scrubber | None = None
        self.figure: Any = None
        self.widget = W.VBox([
            W.HBox([self.metric, self.cohort, self.value]), self.figure_view,
            self.table_view, W.HBox([self.run, self.open]), self.scrubber_box,
        ])
        self.metric.observe(lambda _c: self._redraw(), names="value")
        self.cohort.observe(lambda _c: self._cohort_changed(), names="value")
        self.value.observe(lambda _c: self._table(), names="value")
        self.open.on_click(lambda _b: self.open_run())
        self._cohort_changed()

    def _cohort_changed(self) -> None:
        col = self.cohort.value
        vals = [] if col is None else sorted(self.df[col].astype("string").fillna("(missing)")
                                             .unique().tolist())
        self.value.options = [("(all)", None)] + [(v, v) for v in vals]
        self.value.value = None
        self._redraw()

    def _redraw(self) -> None:
        self.figure = self._plots.metric_distribution(self.df, self.metric.value,
                                                      by=self.cohort.value)
        if _ipython() is not None:  # headless (tests, scripts): keep .figure, draw nothing
            self.figure_view.clear_output(wait=True)
            with self.figure_view:
                from IPython.display import display

                display(self.figure)
        self._table()

    def selected(self) -> pd.DataFrame:
        """The rows of the chosen cohort value, highest metric first."""
        df = self.df
        if self.cohort.value is not None and self.value.value is not None:
            key = df[self.cohort.value].astype("string").fillna("(missing)")
            df = df[(key == self.value.value).to_numpy(dtype=bool)]
        return df.sort_values(self.metric.value, ascending=False, kind="stable")

    def _table(self) -> None:
        from ._display import frame_html

        rows = self.selected()
        self.rows = rows
        self.table_view.value = frame_html(rows, max_rows=15)
        runs = rows[self.run_column].astype(str).tolist() if self.run_column in rows else []
        self.run.options = runs[:500]
        self.run.value = runs[0] if runs else None

    def open_run(self, run_id: str | None = None) -> Scrubber:
        """Build (and show) a :class:`Scrubber` for ``run_id`` (default: the chosen run).

        Raises:
            ValueError: no ``log`` was given or no run is chosen.
        """
        run_id = run_id or self.run.value
        if self.log is None or run_id is None:
            raise ValueError("pass log= to CohortExplorer and choose a run to open a Scrubber")
        row = self.df[self.df[self.run_column].astype(str) == run_id].iloc[0]
        self.scrubber = Scrubber(self.log, run_id, tenant_id=str(row["tenant_id"]))
        self.scrubber_box.children = (self.scrubber.widget,)
        return self.scrubber
