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

__all__ = ["CohortExplorer", "DiffExplorer", "Scrubber", "Transcript", "marked_json"]

#: characters of pretty JSON shown per pane before it is cut.
MAX_CHARS = 20_000


#: a pane's <pre>: a long line wraps between words, within the pane (a message or a prompt
#: is read whole, not clipped at the pane's edge); a word longer than the pane (a source
#: path, a hash) is never broken mid-word (JupyterLab's output CSS breaks <pre> text at any
#: character): it scrolls sideways inside the pane
_PRE_STYLE = ("margin:0;max-height:360px;overflow:auto;font-size:11px;max-width:100%;"
              "white-space:pre-wrap;word-break:normal;overflow-wrap:normal")


#: characters of one string value shown before it is cut (at a word boundary).
TEXT_CHARS = 400


def cut_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis
    (:func:`replaykit.report.cut_words`).

    >>> cut_words("the quick brown fox jumps", 16)
    'the quick brown…'
    """
    from .report import cut_words as cut

    return str(cut(text, limit))


def _shorten(obj: Any, limit: int) -> tuple[Any, int]:
    """``obj`` with every string longer than ``limit`` cut at a word boundary; and how many
    strings were cut."""
    if isinstance(obj, str):
        return (cut_words(obj, limit), 1) if len(obj) > limit else (obj, 0)
    if isinstance(obj, Mapping):
        out, n = {}, 0
        for k, v in obj.items():
            out[k], m = _shorten(v, limit)
            n += m
        return out, n
    if isinstance(obj, (list, tuple)):
        items = [_shorten(v, limit) for v in obj]
        return [v for v, _ in items], sum(m for _, m in items)
    return obj, 0


def _pre(obj: Any, max_chars: int = MAX_CHARS, text_chars: int = TEXT_CHARS, *,
         sort_keys: bool = True) -> str:
    """Pretty JSON of ``obj`` in an escaped <pre> block (log content is untrusted). Long
    strings are cut at a word boundary; the whole value is one click away (a <details>
    block below it). ``sort_keys=False`` keeps the members' order (content first, see
    :func:`_content_first_event`)."""
    short, cut = _shorten(obj, text_chars)
    text = json.dumps(short, indent=2, sort_keys=sort_keys, default=str, ensure_ascii=False)
    if len(text) > max_chars:
        text = cut_words(text, max_chars)
    out = f"<pre style='{_PRE_STYLE}'>{html.escape(text)}</pre>"
    if cut:
        whole = json.dumps(obj, indent=2, sort_keys=sort_keys, default=str,
                           ensure_ascii=False)
        out += (f"<details class='rk-whole'><summary>{cut:,} long text(s) cut at a word "
                f"boundary: show the whole value ({len(whole):,} characters)</summary>"
                f"<pre style='{_PRE_STYLE}'>"
                f"{html.escape(whole[:MAX_CHARS * 10])}</pre></details>")
    return out


_MARK = "background:#ffe0b2;display:block"


def _json_lines(obj: Any, path: str, indent: int, key: str | None,
                out: list[tuple[str, str]], sort_keys: bool = True) -> None:
    """(json pointer, text) per line of ``obj`` pretty-printed (sorted keys unless
    ``sort_keys`` is False, 2 spaces)."""
    pad = "  " * indent
    head = pad + (json.dumps(key, ensure_ascii=False) + ": " if key is not None else "")
    if isinstance(obj, dict) and obj:
        out.append((path, head + "{"))
        items = sorted(obj.items(), key=lambda kv: str(kv[0])) if sort_keys \
            else list(obj.items())
        for k, (kk, v) in enumerate(items):
            start = len(out)
            esc_k = str(kk).replace("~", "~0").replace("/", "~1")
            _json_lines(v, f"{path}/{esc_k}", indent + 1, str(kk), out, sort_keys)
            if k < len(items) - 1:
                p, t = out[-1]
                out[-1] = (p, t + ",")
            del start
        out.append((path, pad + "}"))
    elif isinstance(obj, list) and obj:
        out.append((path, head + "["))
        for k, v in enumerate(obj):
            _json_lines(v, f"{path}/{k}", indent + 1, None, out, sort_keys)
            if k < len(obj) - 1:
                p, t = out[-1]
                out[-1] = (p, t + ",")
        out.append((path, pad + "]"))
    else:
        out.append((path, head + json.dumps(obj, ensure_ascii=False, default=str)))


def marked_json(obj: Any, paths: Any, max_chars: int = MAX_CHARS, *,
                sort_keys: bool = True) -> str:
    """Pretty JSON of ``obj`` in an escaped <pre> block, every line at or under one of
    ``paths`` (JSON pointers) highlighted. ``sort_keys=False`` keeps the members' order
    (an event from :func:`_content_first_event` leads with what it says).

    >>> "background" in marked_json({"a": 1, "b": 2}, ["/b"])
    True
    """
    lines: list[tuple[str, str]] = []
    _json_lines(obj, "", 0, None, lines, sort_keys)
    marks = [p for p in paths if p]
    html_lines = []
    used = 0
    for p, text in lines:
        used += len(text) + 1
        if used > max_chars:
            html_lines.append(html.escape("... (cut)"))
            break
        hit = any(p == m or p.startswith(m + "/") for m in marks)
        line = html.escape(text)
        # a marked line is a block of its own: no newline after it (no blank line)
        html_lines.append(f"<span class='rk-changed' style='{_MARK}'>{line}</span>" if hit
                          else line + "\n")
    return f"<pre style='{_PRE_STYLE}'>" + "".join(html_lines).rstrip("\n") + "</pre>"


def _event_dict(table: Any, i: int) -> dict[str, Any]:
    """One event row as plain data: null columns dropped, payload decoded, ``source`` named
    as shared pages name it (by file name, never this machine's absolute path: a saved
    notebook keeps what the panes show)."""
    from ._base.json import loads
    from .branch._shared import shared_source

    row = {k: v for k, v in table.slice(i, 1).to_pylist()[0].items() if v is not None}
    if isinstance(row.get("source"), str):
        row["source"] = shared_source(row["source"])
    payload = row.get("payload")
    if isinstance(payload, str) and payload:
        try:
            row["payload"] = loads(payload)
        except ValueError:
            pass
    return row


#: event columns a pane shows first: what the event is and says.
_LEAD_COLUMNS = ("kind", "tool_name", "text", "payload", "finish", "is_error")


def _content_first_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """An event dict (:func:`_event_dict`) ordered for reading: kind, tool, text and the
    payload first, the payload's own content members before its envelope (the format's
    bookkeeping: ids, times, working directory ..., :mod:`replaykit._base.envelope`), the other
    columns (ids, hashes, source) last. Values are unchanged.

    >>> list(_content_first_event({"seq": 1, "kind": "tool_call", "payload": {"cwd": "/r",
    ...     "args": {}}, "source": "claude_code:x"})["payload"])
    ['args', 'cwd']
    """
    from ._base.envelope import content_first, format_of

    out: dict[str, Any] = {}
    for k in _LEAD_COLUMNS:
        if k in event:
            out[k] = event[k]
    if "payload" in out:
        out["payload"] = content_first(out["payload"], format_of(event.get("source")))
    for k in sorted(event, key=str):
        if k not in out:
            out[k] = event[k]
    return out


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


#: a pane holds its content to the pane's width: ipywidgets lets an HTML widget grow to its
#: widest line, and the box around it clips the rest out of reach; held to the pane, a long
#: line scrolls sideways inside it (its <pre> has overflow:auto) and a header wraps
PANE_CSS = ("<style>.rk-pane{min-width:0;max-width:100%}"
            ".rk-pane>.widget-html-content{min-width:0;max-width:100%;overflow-x:auto}"
            ".rk-status>.widget-html-content{white-space:normal;overflow-wrap:anywhere;"
            "height:auto;line-height:1.5}</style>")


def _css() -> Any:
    """The explorers' style rules (:data:`PANE_CSS`), in an HTML widget of no height."""
    return W.HTML(PANE_CSS, layout=W.Layout(height="0px", margin="0", overflow="hidden"))


def _pane(view: Any) -> Any:
    """``view`` (an HTML widget) held to its pane's width (:data:`PANE_CSS`)."""
    view.add_class("rk-pane")
    view.layout.width = "100%"
    return view


def _plain_default(o: Any) -> Any:
    return dict(o) if hasattr(o, "items") else list(o) if hasattr(o, "__iter__") else str(o)


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
                 states: Any = None, base: Any = None, base_run_id: str | None = None,
                 labels: tuple[str, str] = ("base (recording)", "replay")) -> None:
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
        self.slider = W.IntSlider(value=0, min=0, max=max(n - 1, 0), description="step",
                                  continuous_update=True,
                                  layout=W.Layout(width="60%"))
        self.play = W.Play(value=0, min=0, max=max(n - 1, 0), interval=400, description="play")
        self._link = W.jslink((self.play, "value"), (self.slider, "value"))
        self.header = W.HTML()
        self.event_view = W.HTML()
        self.state_view = W.HTML()
        self.changes_view = W.HTML()
        self.base_event_view = W.HTML()
        self.base_state_view = W.HTML()
        self.base_run_id = base_run_id
        self._base_table: Any = None
        if base is not None:
            brun = base.run(base_run_id or base.run_ids[0], tenant_id=tenant_id)
            self.base_run_id = brun.run_ids[0]
            self._base_table = brun.table
            self.base_states = fold(brun, projections or agent())
            self._base_start = self.base_states.run_bounds(self.base_run_id,
                                                           tenant_id=tenant_id)[0]
            half = W.Layout(width="50%")
            la, lb = html.escape(labels[0]), html.escape(labels[1])
            la_short = la.replace(" (recording)", "")
            panes = W.VBox([
                W.HBox([W.VBox([W.HTML(f"<b>{la}: event at this step</b>"),
                                _pane(self.base_event_view)], layout=half),
                        W.VBox([W.HTML(f"<b>{lb}: event at this step</b>"),
                                _pane(self.event_view)], layout=half)]),
                W.HBox([W.VBox([W.HTML(f"<b>{la_short}: state after it</b>"),
                                _pane(self.base_state_view)], layout=half),
                        W.VBox([W.HTML(f"<b>{lb}: state after it (differences from the "
                                       f"{la_short} marked)</b>"), _pane(self.state_view),
                                W.HTML(f"<b>{lb}: changed at this step</b>"),
                                _pane(self.changes_view)], layout=half)])])
        else:
            box = W.Layout(width="33%")
            panes = W.HBox([
                W.VBox([W.HTML("<b>event</b>"), _pane(self.event_view)], layout=box),
                W.VBox([W.HTML("<b>changed</b>"), _pane(self.changes_view)], layout=box),
                W.VBox([W.HTML("<b>state</b>"), _pane(self.state_view)], layout=box)])
        self.flags: dict[int, str] = {}  # seq -> unsupported finding (for_replay sets them)
        self._turns = _turn_numbers(self._table)
        self.legend = W.HTML(_legend_html(
            sorted(set(self._table.column("replay_provenance").to_pylist()) - {None}))
            if "replay_provenance" in self._table.column_names else "")
        self.header.add_class("rk-status")
        self.widget = W.VBox([W.HBox([self.play, self.slider]), self.header, panes,
                              self.legend, _css()])
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
        prov = self.event.get("replay_provenance")
        self.provenance = prov
        self.step, self.turn = i, self._turns[i]
        self.header.value = (f"<b>{html.escape(self.run_id)}</b> &middot; step {i:,} of "
                             f"{len(self.seqs) - 1:,} &middot; turn {self.turn} &middot; "
                             f"seq {self.seq:,} &middot; "
                             f"{html.escape(str(self.event.get('kind', '')))}"
                             + (f" &middot; from: {_badge(prov)}" if prov else "")
                             + (f" {_flag(self.flags[self.seq])}"
                                if self.seq in self.flags else ""))
        self.event_view.value = _pre(_content_first_event(self.event), sort_keys=False)
        self.changes_view.value = _pre(self.changes) if self.changes else "<i>no change</i>"
        if self._base_table is None:
            self.state_view.value = _pre(self._shown_state(self.state, i))
            return
        nb = self._base_table.num_rows
        self.base_event: dict[str, Any] | None
        self.base_state: Any
        if i < nb:
            self.base_event = _event_dict(self._base_table, i)
            self.base_state = self.base_states.state_at_row(self._base_start + i,
                                                            self._base_start)
            self.base_event_view.value = _pre(_content_first_event(self.base_event),
                                              sort_keys=False)
            self.base_state_view.value = _pre(self._shown_state(self.base_state, i))
        else:
            self.base_event, self.base_state = None, None
            self.base_event_view.value = self.base_state_view.value = \
                "<i>the base run has no event at this step</i>"
        plain = self._shown_state(json.loads(json.dumps(self.state, default=_plain_default)), i)
        other = self._shown_state(json.loads(json.dumps(self.base_state,
                                                        default=_plain_default)), i) \
            if self.base_state is not None else {}
        self.differs = sorted(k for k in plain if other.get(k, object()) != plain[k])
        self.state_view.value = marked_json(plain, [f"/{k}" for k in self.differs])
        self.header.value += (f" &middot; base seq {int(self._base_table.column('seq')[i].as_py())}"
                              if i < nb else " &middot; base: no event")

    def _shown_state(self, state: Any, i: int) -> Any:
        """The state as the panes show it: a ``step`` / ``turn`` the log does not record
        (null in the fold) shows the scrubber's step and turn instead of ``null``."""
        if not isinstance(state, Mapping):
            return state
        out = dict(state)
        if "step" in out and out["step"] is None:
            out["step"] = i
        if "turn" in out and out["turn"] is None:
            out["turn"] = self._turns[i]
        return out

    @classmethod
    def for_replay(cls, result: Any) -> Scrubber:
        """A scrubber over a replay's run with its base run beside it at the same step (or
        over run B of a :class:`~replaykit.branch.runs.RunComparison`, run A beside it).

        Example:
            >>> s = rk.widgets.Scrubber.for_replay(done)  # doctest: +SKIP
            >>> s.slider.value = 10; s.differs  # doctest: +SKIP
        """
        base = (result.base.run(result.branch.run_id, tenant_id=result.branch.tenant_id)
                if result.branch is not None else result.base)
        # a replay or two recorded runs (the Comparison protocol: replaykit.branch.runs)
        labels = ("base (recording)", "replay") if getattr(result, "intervened", True) \
            else tuple(result.labels)
        s = cls(result.events, result.run_id, tenant_id=result.events.tenants[0],
                base=base, labels=labels)
        uns = result.summary().unsupported
        s.flags = {int(k): "; ".join(g["sentence"]) for k, g in uns.groupby("step")} \
            if len(uns) else {}
        s.show(s.index)
        return s


def _turn_numbers(table: Any) -> list[int]:
    """The turn of each event of one run, as the report numbers them
    (:func:`replaykit.report.turn_numbers`)."""
    from .report import turn_numbers

    return [int(x) for x in turn_numbers(table)]


# --------------------------------------------------------------------------- DiffExplorer
DIFF_STATUSES = ("all", "changed", "added", "removed", "same", "not same")


class DiffExplorer(_View):
    """A replay's base and replay events side by side, aligned as in ``result.diff_df()``
    (or run A and run B of a :class:`~replaykit.branch.runs.RunComparison`).

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
        # the two sides' names: a replay's, or two recorded runs' (run A / run B)
        self.labels: tuple[str, str] = tuple(getattr(result, "labels", ("base", "replay")))
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
        from .branch.findings import changes_df, summarize

        self.changes = changes_df(result)
        ann = result.annotations_df()
        self._prov = dict(zip(ann["seq"].astype("int64").tolist(),
                              ann["provenance"].astype(str).tolist(), strict=True))
        uns = summarize(result, changes=self.changes).unsupported
        self._flags = {int(k): "; ".join(g["sentence"]) for k, g in uns.groupby("step")} \
            if len(uns) else {}
        self.legend = W.HTML(_legend_html(sorted(set(self._prov.values()))))
        self.status = W.Dropdown(options=DIFF_STATUSES, value="all", description="status")
        self.position = W.IntSlider(value=0, min=0, max=max(len(self.diff) - 1, 0),
                                    description="row")
        self.jump = W.Button(description="first divergence", icon="step-forward")
        self.prev_change = W.Button(description="previous change", icon="arrow-left")
        self.next_change = W.Button(description="next change", icon="arrow-right")
        self.table_view = W.HTML()
        self.base_view = W.HTML()
        self.replay_view = W.HTML()
        self.values_view = W.HTML()
        self.header = W.HTML()
        half = W.Layout(width="50%")
        # everything that shows the current row: hidden as a whole when no row is shown, so
        # no pane keeps the previous row's content
        self.detail = W.VBox([
            self.values_view,
            W.HBox([W.VBox([W.HTML(f"<b>{html.escape(self.labels[0])}</b>"),
                            _pane(self.base_view)], layout=half),
                    W.VBox([W.HTML(f"<b>{html.escape(self.labels[1])}</b>"),
                            _pane(self.replay_view)], layout=half)]),
        ])
        self.header.add_class("rk-status")
        self.widget = W.VBox([
            W.HBox([self.status, self.position]),
            W.HBox([self.prev_change, self.next_change, self.jump]), self.header,
            self.legend, self.detail, self.table_view, _css(),
        ])
        self.status.observe(lambda c: self._filter(c["new"]), names="value")
        self.position.observe(lambda c: self._show(int(c["new"])), names="value")
        self.jump.on_click(lambda _b: self.jump_to_first_divergence())
        self.prev_change.on_click(lambda _b: self.step_change(-1))
        self.next_change.on_click(lambda _b: self.step_change(1))
        self._filter("all")

    def _filter(self, status: str) -> None:
        s = self.diff["status"]
        mask = (s != "same") if status == "not same" else \
            pd.Series(True, index=s.index) if status == "all" else (s == status)
        self.rows = self.diff[mask.fillna(False).to_numpy(dtype=bool)]
        from ._base.display import frame_html
        from .report import people_frame

        self.table_view.value = "" if not len(self.rows) else frame_html(
            people_frame(self.rows.reset_index(names="row"), max_rows=50), max_rows=50) + (
            f"<div>&hellip; {len(self.rows) - 50:,} more rows</div>" if len(self.rows) > 50
            else "")
        self.position.max = max(len(self.rows) - 1, 0)
        self.position.value = 0
        self._show(0)

    def _show(self, i: int) -> None:
        if not len(self.rows):  # nothing of another row may stay on show
            self.header.value = (f"<i>no rows with status {html.escape(self.status.value)} "
                                 f"(of {len(self.diff):,} aligned rows)</i>")
            self.base_view.value = self.replay_view.value = self.values_view.value = ""
            self.current, self.current_changes, self.provenance = None, self.changes.iloc[0:0], None
            self.detail.layout.display = "none"
            return
        self.detail.layout.display = None
        row = self.rows.iloc[min(i, len(self.rows) - 1)]
        self.current = row
        label = int(self.rows.index[min(i, len(self.rows) - 1)])
        ch = self.changes[self.changes["row"] == label] if len(self.changes) else self.changes
        self.current_changes = ch
        # the event dicts hold the decoded payload under "payload": mark paths below it
        marks = ["/payload" + p for p in ch["path"]] if len(ch) else []
        bs, rs = row["base_seq"], row["replay_seq"]
        # each side leads with what the event says, its envelope after
        self.base_view.value = (f"<i>only in the {html.escape(self.labels[1])}</i>"
                                if pd.isna(bs) else
                                marked_json(_content_first_event(_event_dict(
                                    self._base, self._base_pos[int(bs)])), marks,
                                    sort_keys=False))
        self.replay_view.value = (f"<i>only in the {html.escape(self.labels[0])}</i>"
                                  if pd.isna(rs) else
                                  marked_json(_content_first_event(_event_dict(
                                      self._rep, self._rep_pos[int(rs)])), marks,
                                      sort_keys=False))
        self.values_view.value = _values_html(ch)
        status = html.escape(str(row["status"]))
        prov = None if pd.isna(rs) else self._prov.get(int(rs))
        self.provenance = prov
        self.header.value = (f"row {int(self.rows.index[min(i, len(self.rows) - 1)])} of "
                             f"{len(self.diff)} &middot; status <b>{status}</b>"
                             + (f" &middot; replay step from: {_badge(prov)}" if prov else "")
                             + (f" {_flag(self._flags[int(rs)])}"
                                if not pd.isna(rs) and int(rs) in self._flags else ""))

    def step_change(self, direction: int = 1) -> int | None:
        """Show the next (``direction=1``) or previous (``-1``) row that is not ``same``,
        wrapping around; returns its row index (None when nothing changed). Resets the
        status filter to ``all``."""
        if self.status.value != "all":
            self.status.value = "all"
        not_same = np.flatnonzero((self.diff["status"] != "same").to_numpy(dtype=bool))
        if not len(not_same):
            return None
        cur = int(self.position.value)
        later = not_same[not_same > cur] if direction > 0 else not_same[not_same < cur][::-1]
        target = int(later[0]) if len(later) else int(not_same[0 if direction > 0 else -1])
        self.position.value = target
        return target

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


_BADGE_STYLE = {
    "recorded": "background:#78909c;color:#fff", "patched": "background:#ef6c00;color:#fff",
    "fixture": "background:#c62828;color:#fff",
    "policy-copy": "background:#fff;color:#8d6e00;border:1px dashed #8d6e00",
    "live": "background:#2e7d32;color:#fff", "blocked": "background:#000;color:#fff",
    "synthetic": "background:#7b1fa2;color:#fff",
}


def _badge(prov: str) -> str:
    """The provenance badge of one step (the same names and colours as the report)."""
    from .branch.vocab import PROVENANCE_BADGES, PROVENANCES

    style = _BADGE_STYLE.get(prov, "background:#607d8b;color:#fff")
    return (f"<span class='rk-badge {html.escape(prov)}' title='"
            f"{html.escape(PROVENANCES.get(prov, ''))}' style='{style};font-size:11px;"
            f"border-radius:6px;padding:0 5px'>{html.escape(PROVENANCE_BADGES.get(prov, prov))}"
            "</span>")


def _flag(sentence: str) -> str:
    """The "unsupported" flag of a step, with its finding as the tooltip and below it."""
    return ("<span class='rk-flag' style='font-size:11px;color:#b71c1c;background:#ffebee;"
            "border:1px solid #b71c1c;border-radius:6px;padding:0 5px' title='"
            f"{html.escape(sentence)}'>unsupported</span><div style='font-size:12px;"
            f"color:#b71c1c'>{html.escape(sentence)}</div>")


def _legend_html(present: list[str]) -> str:
    """One line per provenance badge shown: what it means (and the unsupported flag)."""
    from .branch.vocab import PROVENANCES

    if not present:
        return ""
    keys = [k for k in PROVENANCES if k in present]
    items = " ".join(f"{_badge(k)} <span style='font-size:11px;color:#555'>"
                     f"{html.escape(PROVENANCES[k])}</span>" for k in keys)
    return (f"<div class='rk-legend' style='font-size:11px;margin:2px 0'>{items} "
            "<span class='rk-flag' style='font-size:11px;color:#b71c1c;border:1px solid "
            "#b71c1c;border-radius:6px;padding:0 5px'>unsupported</span> <span style='"
            "font-size:11px;color:#555'>the replay cannot support what this step shows</span>"
            "</div>")


def _values_html(ch: pd.DataFrame) -> str:
    """The changed values of one aligned row: path, before, after (key values marked); the
    agent's content first, the bookkeeping rows after it, under a line that counts them
    ("13 bookkeeping changes (ids, times, cwd ...)")."""
    if not len(ch):
        return "<i>no value changed in this row</i>"
    from ._base.envelope import bookkeeping_phrase

    if "bookkeeping" in ch.columns:
        ch = ch.iloc[np.argsort(~ch["key"].to_numpy(dtype=bool), kind="stable")]
    rows = []
    first_bk = True
    for r in ch.itertuples(index=False):
        if not r.key and first_bk and "bookkeeping" in ch.columns:
            first_bk = False
            bk = ch.loc[~ch["key"].to_numpy(dtype=bool), "bookkeeping"]
            rows.append("<tr class='rk-envelope'><td colspan='4' style='color:#555;"
                        f"font-style:italic'>{html.escape(bookkeeping_phrase(bk))}, after "
                        "the content:</td></tr>")
        style = " style='background:#fff8e1;font-weight:600'" if r.key else ""
        rows.append(f"<tr{style}><td><code>{html.escape(str(r.label))}</code></td>"
                    f"<td>{html.escape(str(r.op))}</td>"
                    f"<td style='color:#b71c1c'>{html.escape(_short(r.before))}</td>"
                    f"<td style='color:#1b5e20'>{html.escape(_short(r.after))}</td></tr>")
    return ("<div style='overflow-x:auto'><table class='rk-values' style='font-size:12px'>"
            "<thead><tr><th>path</th><th>change</th><th>before</th><th>after</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _short(v: Any, limit: int = 200) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    text = str(v)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# --------------------------------------------------------------------------- Transcript
class Transcript(_View):
    """A run as a reviewer reads it: the transcript (messages, tool calls with arguments and
    results, collapsible payloads) and the run tree (parent and child runs, turns, model and
    tool calls, durations and a waterfall where the log has timestamps), in two tabs.

    Args:
        log: an EventLog, or a :class:`~replaykit.ReplayResult` (its replayed run, with the
            base run beside it in the tree and each event's origin marked).
        run_id, tenant_id: which run of ``log`` (both required for an EventLog).

    Example:
        >>> rk.widgets.Transcript(done)  # doctest: +SKIP
        >>> rk.widgets.Transcript(log, "chat-1", tenant_id="acme")  # doctest: +SKIP

    Raises:
        TypeError: ``tenant_id`` missing for an EventLog; KeyError: no such run.
    """

    def __init__(self, log: Any, run_id: str | None = None, *,
                 tenant_id: str | None = None) -> None:
        from .report import run_tree_html, transcript_html

        origins = None
        flags: dict[int, str] = {}
        if hasattr(log, "annotations_df") and hasattr(log, "events"):  # a ReplayResult
            res = log
            ann = res.annotations_df()
            origins = dict(zip(ann["seq"].astype("int64"), ann["provenance"].astype(str),
                               strict=True))
            uns = res.summary().unsupported
            flags = {int(k): "; ".join(g["sentence"]) for k, g in uns.groupby("step")} \
                if len(uns) else {}
            table = res.events.table
            base = (res.base.run(res.branch.run_id, tenant_id=res.branch.tenant_id)
                    if res.branch is not None else res.base)
            tables = [base.table, table]
            self.run_id = res.run_id
        else:
            from .fold.frame import _require_tenant

            _require_tenant(tenant_id)
            if run_id is None:
                raise TypeError("run_id is required for an EventLog")
            table = log.run(run_id, tenant_id=tenant_id).table
            tables = [table]
            self.run_id = run_id
        self.transcript_view = W.HTML(f"<div class='rk-transcript'>{_transcript_css()}"
                                      f"{transcript_html(table, origins=origins, flags=flags)}"
                                      "</div>")
        self.tree_view = W.HTML(f"<div class='rk-tree'>{_transcript_css()}"
                                f"{run_tree_html(tables)}</div>")
        self.tabs = W.Tab(children=[self.transcript_view, self.tree_view])
        self.tabs.set_title(0, "transcript")
        self.tabs.set_title(1, "run tree")
        self.widget = W.VBox([W.HTML(f"<b>{html.escape(self.run_id)}</b>"), self.tabs])


def _transcript_css() -> str:
    from .report import TRANSCRIPT_CSS

    return f"<style>{TRANSCRIPT_CSS}</style>"


# --------------------------------------------------------------------------- CohortExplorer
def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return None
    return get_ipython()


_DEFAULT_METRICS = ("changed_descendants", "first_divergence_step", "tool_sequence_distance")
#: the CohortExplorer's "no cohort column" and "every value" choices
NONE, ALL = "(none)", "(all)"
_EXACT_MINUS_ONE = ("first_divergence_step",)



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
        # sentinel strings, not None: an ipywidgets Dropdown whose value is None shows no
        # selection at all, so "(none)" / "(all)" would look empty once picked
        self.cohort = W.Dropdown(options=[NONE] + cohorts, value=cohort or NONE,
                                 description="cohort")
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

    @property
    def cohort_column(self) -> str | None:
        """The chosen cohort column (None for "(none)")."""
        return None if self.cohort.value == NONE else str(self.cohort.value)

    @property
    def cohort_value(self) -> str | None:
        """The chosen value of the cohort column (None for "(all)")."""
        v = self.value.value
        return None if v in (ALL, None) else str(v)

    def _cohort_changed(self) -> None:
        col = self.cohort_column
        vals = [] if col is None else sorted(self.df[col].astype("string").fillna("(missing)")
                                             .unique().tolist())
        keep = self.value.value if self.value.value in vals else ALL
        self.value.options = [ALL] + vals
        self.value.value = keep
        self._redraw()

    def _redraw(self) -> None:
        metric = self.metric.value
        if pd.api.types.is_bool_dtype(self.df[metric]):
            self.figure = self._share_figure(metric, self.cohort_column)
        else:
            df = self.df
            exact = 0
            is_exact = np.zeros(len(df), dtype=bool)
            if metric in _EXACT_MINUS_ONE:  # -1 is "never diverged", not a step
                is_exact = (df[metric] == -1).fillna(False).to_numpy(dtype=bool)
                exact = int(is_exact.sum())
                df = df.assign(**{metric: df[metric].astype("Float64").mask(is_exact)})
            title = None
            if exact:
                title = (f"{metric} by {self.cohort_column or 'all rows'} ({exact:,} exact "
                         "rows without a divergence not drawn)")
            try:
                self.figure = self._plots.metric_distribution(df, metric,
                                                              by=self.cohort_column,
                                                              title=title)
            except ValueError:  # every row exact: nothing to draw
                self.figure = self._share_figure_of(metric, "exact", is_exact)
        if _ipython() is not None:  # headless (tests, scripts): keep .figure, draw nothing
            self.figure_view.clear_output(wait=True)
            with self.figure_view:
                from IPython.display import display

                display(self.figure)
        self._table()

    def _share_figure_of(self, metric: str, what: str, mask: Any) -> Any:
        """The share of rows where ``mask`` holds, per cohort (e.g. every row exact)."""
        df = self.df.assign(**{f"{metric} {what}": pd.array(mask, dtype="boolean")})
        return self._share_figure(f"{metric} {what}", self.cohort_column, df)

    def _share_figure(self, metric: str, by: str | None, frame: pd.DataFrame | None = None
                      ) -> Any:
        """A yes/no metric as the share of rows where it holds, per cohort (not a 0/1 box)."""
        import plotly.graph_objects as go

        df = self.df if frame is None else frame
        key = (df[by].astype("string").fillna("(missing)") if by is not None
               else pd.Series("all", index=df.index, dtype="string"))
        g = df[metric].astype("boolean").fillna(False).astype(float).groupby(
            key.to_numpy(), sort=True)
        share, n = g.mean(), g.size()
        labels = [f"{html.escape(str(k), quote=False)} (n={int(n[k]):,})" for k in share.index]
        fig = go.Figure(go.Bar(x=labels, y=(share * 100).to_numpy(), marker_color="#4e79a7",
                               width=0.4, hovertemplate="%{x}: %{y:.3g}%<extra></extra>"))
        fig.update_yaxes(title=f"share with {metric} (%)", range=[0, 100], ticksuffix=" %")
        fig.update_xaxes(title=by or "", type="category")
        fig.update_layout(template="plotly_white", title=f"{metric}: share of rows",
                          showlegend=False)
        return fig

    def selected(self) -> pd.DataFrame:
        """The rows of the chosen cohort value, highest metric first."""
        df = self.df
        if self.cohort_column is not None and self.cohort_value is not None:
            key = df[self.cohort_column].astype("string").fillna("(missing)")
            df = df[(key == self.cohort_value).to_numpy(dtype=bool)]
        return df.sort_values(self.metric.value, ascending=False, kind="stable")

    def _table(self) -> None:
        from ._base.display import frame_html
        from .report import people_frame

        rows = self.selected()
        self.rows = rows
        shown = people_frame(rows, max_rows=15)
        self.table_view.value = frame_html(shown, max_rows=15) + (
            f"<div>&hellip; {len(rows) - 15:,} more rows</div>" if len(rows) > 15 else "")
        # each run once (a base run replayed several times has several rows), worst first
        runs = list(dict.fromkeys(rows[self.run_column].astype(str).tolist())) \
            if self.run_column in rows else []
        keep = self.run.value if self.run.value in runs[:500] else None
        self.run.options = runs[:500]
        self.run.value = keep or (runs[0] if runs else None)

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
