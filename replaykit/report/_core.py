"""Report objects and the builders behind ``rk.report.rca`` / ``rk.report.cohort``."""

from __future__ import annotations

import difflib
import html
import json
import os
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..branch.compare import tool_seq_diff as _tool_seq_diff  # both sides' tool calls, aligned
from ._embed import esc, plain
from ._fmt import _isna, cut_words, fmt_number
from ._parts import (
    TEXT_CHARS,
    Report,
    _cut,
    _event_rows,
    _figure_json,
    _inputs,
    _kv,
    _model_ids,
    _pretty,
    _source_paths,
    _table,
    _versions,
)
from ._template import Markup, json_script, page, reading_order, render

__all__ = ["MAX_SCRUB_EVENTS", "rca"]

#: steps the embedded scrubber holds, base and replay alike (a longer run keeps a window
#: around the first divergence and says so).
MAX_SCRUB_EVENTS = 3_000
#: per-lane points of the divergence figure in a report (keeps the file small).
FIGURE_POINTS = 2_000
#: events shown before the first divergence in its section.
CONTEXT_EVENTS = 3
#: events of the replayed run the report's transcript shows (the explorer shows more): the
#: first TRANSCRIPT_HEAD and, in a longer run, a window around the first divergence.
TRANSCRIPT_EVENTS = 120
#: events from the run's start the transcript shows before the window at the divergence.
TRANSCRIPT_HEAD = 30
#: characters of a payload the report's transcript shows per event.
TRANSCRIPT_CHARS = 1_500
#: calls per run the report's run tree lists (the totals count every call).
TREE_CALLS = 150
#: rows of the changed-descendants table.
MAX_DESCENDANTS = 200
#: rows of the changed-values table (one per changed JSON path).
MAX_CHANGE_ROWS = 500
#: rows of the tool-sequence diff table.
MAX_TOOL_ROWS = 300


# ------------------------------------------------------------------------------ scrubber
def scrubber_data(events: Any, *, tenant_id: str, origins: Mapping[int, str] | None = None,
                  statuses: Mapping[int, str] | None = None,
                  max_events: int = MAX_SCRUB_EVENTS, first: int = 0) -> dict[str, Any]:
    """The data the embedded scrubber walks: one step per event of a one-run log.

    The steps are the run's events ``first .. first + max_events - 1`` (``offset`` = first,
    ``shown`` of ``total``). ``zero`` is the state before the first of them; ``delta[i]``
    holds the fields whose value changed at step ``offset + i`` (the full new value of each),
    so the state after it is ``zero`` updated with ``delta[0..i]`` in order -- equal to
    ``StateFrame.at(run, seq_i)`` of ``rk.fold(events, rk.agent())``. Deltas are computed per
    field from the folded columns (only the rows where a field can change are looked at), so
    the cost grows with the window, not with the run.
    """
    return _scrubber_data(events, tenant_id=tenant_id, origins=origins, statuses=statuses,
                          max_events=max_events, first=first)[0]


def _field_change_rows(res: Any, lo: int, hi: int, start: int) -> np.ndarray | None:
    """Frame rows in ``[lo, hi)`` where one folded field's value may change (a superset of
    the rows where it does), or None for a field kind this does not know."""
    from ..fold.engine import CollectionCol, CounterCol, KeyedCounterCol, ReducerCol, ScalarCol

    def within(rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        return rows[(rows >= lo) & (rows < hi)]

    if isinstance(res, (ScalarCol, ReducerCol)):
        if isinstance(res, ScalarCol) and res.src is None:
            vals = np.asarray(res.values)
            prev = vals[lo - 1] if lo > start else None
            w = vals[lo:hi]
            moved = np.r_[True if prev is None else w[:1] != prev, w[1:] != w[:-1]] \
                if len(w) else np.zeros(0, bool)
            return lo + np.flatnonzero(moved)
        src = np.asarray(res.src)
        w = src[lo:hi]
        first = np.array([True]) if lo <= start else (w[:1] != src[lo - 1])
        moved = np.r_[first, w[1:] != w[:-1]] if len(w) else np.zeros(0, bool)
        return lo + np.flatnonzero(moved)
    if isinstance(res, CounterCol):
        return within(res.rows)
    if isinstance(res, KeyedCounterCol):
        return within(res.pos)
    if isinstance(res, CollectionCol):
        return np.unique(np.concatenate([within(res.add_pos), within(res.rem_pos),
                                         within(res.end_pos)]))
    return None


def _field_at(res: Any, i: int, start: int) -> Any:
    from ..fold.engine import ReducerCol, ScalarCol

    return res.at(i) if isinstance(res, (ScalarCol, ReducerCol)) else res.at(i, start)


def _deltas(sf: Any, start: int, lo: int, n: int, zero: Mapping[str, Any],
            skip: np.ndarray) -> list[dict[str, Any] | None]:
    """Per step of the window ``[lo, lo + n)``: the fields whose value changed there (their
    new value), column-wise per field; ``skip`` steps get ``None`` ("as the other side")."""
    deltas: list[dict[str, Any] | None] = [{} for _ in range(n)]
    results = getattr(sf, "_results", None)
    found = [(res, _field_change_rows(res, lo, lo + n, start)) for res in results or []]
    plan = [(res, rows) for res, rows in found if rows is not None]
    if results is None or len(plan) < len(found):
        # an unknown field kind: whole states, step by step (bounded by n)
        before = dict(zero)
        for k in range(n):
            now = plain(sf.state_at_row(lo + k, start))
            deltas[k] = {f: v for f, v in now.items() if before.get(f) != v}
            before = now
    else:
        # skipped steps ("as the other side") are not computed; after a skipped stretch the
        # previous value is read again at the step before
        skipped = np.concatenate([[0], np.cumsum(skip)]) if n else np.zeros(1, np.int64)
        for res, rows in plan:  # only the rows where this field may change
            name = res.field.name
            prev = zero.get(name)
            last = lo - 1
            for i in rows.tolist():
                k = i - lo
                if skip[k]:
                    continue
                if skipped[k] > skipped[last - lo + 1]:  # a skipped step since `last`
                    prev = plain(_field_at(res, i - 1, start))
                last = i
                v = plain(_field_at(res, i, start))
                if v != prev:
                    d = deltas[k]
                    assert d is not None
                    d[name] = v
                    prev = v
    for k in np.flatnonzero(skip).tolist():
        deltas[k] = None
    return deltas


def _scrubber_data(events: Any, *, tenant_id: str, origins: Mapping[int, str] | None = None,
                   statuses: Mapping[int, str] | None = None,
                   max_events: int = MAX_SCRUB_EVENTS,
                   like: tuple[Mapping[str, Any], Any] | None = None,
                   first: int = 0, states: Any = None
                   ) -> tuple[dict[str, Any], Any]:
    """:func:`scrubber_data` and the window's state hashes. With ``like`` (another run's data
    and hashes over the same window, e.g. the replay's for the base run), a step whose state
    and previous state hash the same as ``like``'s at that step stores ``None`` as its delta
    (and a text equal to ``like``'s as ``None``): "same as the other side", neither recomputed
    nor embedded. ``states``: the events' ``rk.fold(events, rk.agent())`` when already done."""
    from ..eventlog.log import EventLog
    from ..fold import agent, fold

    run_id = events.run_ids[0]
    if states is None and isinstance(events, EventLog) and len(events.run_ids) == 1 \
            and len(events.tenants) == 1:
        # one run: a fold is causal (the state after a row depends on the rows up to it), so
        # the window's states are those of a fold of the rows up to the window's end
        total = events.table.num_rows
        first = max(0, min(int(first), max(total - 1, 0)))
        n = max(0, min(total - first, max_events))
        sf = fold(events._replace(events.table.slice(0, first + n)), agent())
        start, _ = sf.run_bounds(run_id, tenant_id=tenant_id)
    else:
        sf = states if states is not None else fold(events, agent())
        start, end = sf.run_bounds(run_id, tenant_id=tenant_id)
        total = end - start
        first = max(0, min(int(first), max(total - 1, 0)))
        n = max(0, min(total - first, max_events))
    lo = start + first
    t = events.table.slice(first, n)
    all_hashes = sf.state_hash()
    hashes = all_hashes[lo:lo + n] if all_hashes is not None else None
    prev_hash = (all_hashes[lo - 1] if lo > start else np.uint64(0)) \
        if all_hashes is not None else None
    zero = plain(sf.state_at_row(lo - 1, start))
    shared = np.zeros(n, dtype=bool)
    if like is not None and hashes is not None and like[1] is not None \
            and like[0]["zero"] == zero and like[0].get("offset", 0) == first:
        other, other_prev = like[1]
        m = min(n, len(other))
        same = np.zeros(n, dtype=bool)
        same[:m] = hashes[:m] == other[:m]
        before = np.concatenate([[prev_hash == other_prev], same[:-1]]) if n else same
        shared = same & before  # this and the previous state
    deltas = _deltas(sf, start, lo, n, zero, shared)
    # cut at a word boundary (the window is bounded: MAX_SCRUB_EVENTS)
    text: list[str | None] = [cut_words(x, TEXT_CHARS) for x in
            pc.fill_null(pc.cast(t.column("text"), pa.string()), "").to_pylist()]
    from ._transcript import turn_numbers  # one turn numbering: scrubbers and run tree

    turns = turn_numbers(events.table)[first:first + n].tolist()
    if like is not None:
        other_text = like[0]["text"]
        text = [None if i < len(other_text) and x == other_text[i] else x
                for i, x in enumerate(text)]
    seqs = t.column("seq").to_pylist()
    return {
        "run_id": run_id, "total": total, "shown": n, "offset": first,
        "seq": seqs,
        "kind": pc.cast(t.column("kind"), pa.string()).to_pylist(),
        "type": pc.cast(t.column("type"), pa.string()).to_pylist(),
        "tool": pc.cast(t.column("tool_name"), pa.string()).to_pylist(),
        "text": text, "turn": turns,
        "origin": [(origins or {}).get(s) for s in seqs] if origins else None,
        "status": [(statuses or {}).get(s) for s in seqs] if statuses else None,
        "zero": zero, "delta": deltas,
    }, (None if hashes is None else (hashes, prev_hash))


# ------------------------------------------------------------------------------ rca
def _claim(result: Any, m: Mapping[str, Any], branch: Mapping[str, Any] | None) -> str:
    name = (branch or {}).get("name") or (branch or {}).get("branchId") or "this branch"
    n_fx = len(result.fixtures) if result.fixtures is not None else 0
    step = int(m.get("first_divergence_step", -1))
    where = (f"the replay first diverges from the recording at step {step} and "
             f"{m.get('changed_descendants')} later event(s) differ"
             if step >= 0 else "the replay does not diverge from the recording")
    return (f"Under the intervention(s) of branch \u201c{name}\u201d, model policy "
            f"{result.model_policy}, tool policy {result.tool_policy} and a set of {n_fx} "
            f"fixture(s), {where}; replay status {result.status}, comparability "
            f"{m.get('comparability')}. This is what changed under this intervention, these "
            "policies and this fixture set, for this one recorded run. It is not evidence of "
            "universal causality: other runs, policies, fixtures or live model and tool "
            "behaviour may differ.")


def _recorded_claim(result: Any, m: Mapping[str, Any]) -> str:
    """The bounded claim of a comparison of two recorded runs (no intervention)."""
    from ..branch.runs import RECORDED_CAVEAT

    a, b = getattr(result, "labels", ("run A", "run B"))
    step = int(m.get("first_divergence_step", -1))
    where = (f"the runs first differ at step {step} and {m.get('changed_descendants')} later "
             "position(s) differ" if step >= 0 else "the runs match event for event")
    return (f"Comparing {b} ({result.b_run_id}) with {a} ({result.a_run_id}), both "
            f"recordings, {where}; their tool sequences are "
            f"{m.get('tool_sequence_distance')} edit(s) apart (comparability "
            f"{m.get('comparability')}). {RECORDED_CAVEAT}")


def _first_divergence(base_t: pa.Table, rep_t: pa.Table, step: int) -> dict[str, Any]:
    if step < 0:
        return {"step": -1, "rows": [], "args_diff": [], "kind": None}
    lo = max(0, step - CONTEXT_EVENTS)
    pos = list(range(lo, step + 1))
    rows = []
    b_rows = {r["pos"]: r for r in _event_rows(base_t, pos)}
    r_rows = {r["pos"]: r for r in _event_rows(rep_t, pos)}
    for p in pos:
        for side, src in (("base", b_rows), ("replay", r_rows)):
            r = src.get(p)
            rows.append({"side": side, "step": p, "at_divergence": p == step,
                         "seq": None if r is None else r["seq"],
                         "kind": None if r is None else r["kind"],
                         "type": None if r is None else r["type"],
                         "tool_name": None if r is None else r["tool_name"],
                         "text": None if r is None else r["text"]})
    b, r = b_rows.get(step), r_rows.get(step)
    fmt_src = (b or r or {}).get("source")  # the recording's format orders both sides
    diff = list(difflib.unified_diff(_pretty(b["payload"] if b else None, fmt_src),
                                     _pretty(r["payload"] if r else None, fmt_src),
                                     "base", "replay", lineterm="", n=2))
    kind = (r or b or {}).get("kind")
    return {"step": step, "rows": rows, "args_diff": diff[:400], "kind": kind,
            "base_seq": b and b["seq"], "replay_seq": r and r["seq"]}


def _integrity(base_t: pa.Table) -> dict[str, Any]:
    if "row_hash" not in base_t.column_names or not base_t.num_rows \
            or base_t.column("row_hash").null_count == base_t.num_rows:
        return {"status": "not available",
                "detail": "the base run carries no hash chain (no row_hash values), so its "
                          "integrity cannot be checked from the log alone"}
    from ..integrity.verify import verify_chain

    problems = verify_chain(base_t)
    if problems.empty:
        return {"status": "verified", "detail": f"hash chain intact over {base_t.num_rows:,} "
                "events of the base run (rows cut from the end are not detectable without "
                "an anchored head)"}
    return {"status": "broken", "detail": f"{len(problems):,} chain problem(s)",
            "problems": problems.head(50)}


class _CachedDiff:
    """``result`` with its frames computed once: ``diff_df()``, ``annotations_df()``,
    ``effects_df()`` and ``requirements_df()`` (the findings, the figures and the sections
    each ask for them again; each call returns a fresh copy, as the result's own methods do).
    Everything else is the result's."""

    _FRAMES = ("diff_df", "annotations_df", "effects_df", "requirements_df")

    def __init__(self, result: Any, diff: pd.DataFrame | None = None) -> None:
        self._result = result
        self._frames: dict[str, pd.DataFrame] = {} if diff is None else {"diff_df": diff}

    def _frame(self, name: str) -> pd.DataFrame:
        got = self._frames.get(name)
        if got is None:
            got = self._frames[name] = getattr(self._result, name)()
        return got.copy()

    def diff_df(self) -> pd.DataFrame:
        return self._frame("diff_df")

    def annotations_df(self) -> pd.DataFrame:
        return self._frame("annotations_df")

    def effects_df(self) -> pd.DataFrame:
        return self._frame("effects_df")

    def requirements_df(self) -> pd.DataFrame:
        return self._frame("requirements_df")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._result, name)


def rca(result: Any, *, title: str | None = None, question: str | None = None,
        notes: str | None = None,
        inputs: Sequence[str | os.PathLike[str]] | None = None,
        tenant_id: str | None = None) -> Report:
    """A root-cause-analysis report for one replay, as a self-contained HTML page.

    Sections: question and bounded claim, notes, interventions and policies, comparability
    class with its advice (:data:`replaykit.COMPARABILITY`), metrics table, first divergence
    (events just before and at it, payload/args diff), changed descendants, tool-sequence
    diff, fixture provenance (with sensitive-to-fixture wording whenever a fixture served a
    call), integrity (hash chain verified, broken or not available), reproducibility stamp
    (versions, input files' sha256, policies, model/provider ids in the log), figures
    (divergence timeline, tool sequences, fixture dependence, state timeline) and an
    embedded step scrubber over the replayed run (plain JavaScript, data in the page).

    Args:
        result: a :class:`~replaykit.ReplayResult`.
        title: page title (default, as ``replaykit report rca`` without ``--title``:
            ``"Replay of <run>: <branch name>"``). question: the bounded question the replay
            answers (default, as without ``--question``: what changes in the run under the
            branch's interventions).
        notes: free text shown under the question (escaped).
        inputs: files or folders to fingerprint (default: the files named by the logs'
            ``source`` column that exist on disk).
        tenant_id: the tenant (default: the branch's).

    Returns:
        A :class:`Report` (``_repr_html_``, ``save_html``).

    Raises:
        TypeError: ``title`` or ``question`` is given but is not a non-empty string.
        MissingExtraError: plotly is not installed (``pip install "replaykit[viz]"``).

    Example:
        >>> res = rk.replay(branch, fixtures="data/isplay/fixtures.json")  # doctest: +SKIP
        >>> rk.report.rca(res, title="RCA-311", question="Does dropping the fraud clause "
        ...               "change the SIU escalation?").save_html("rca.html")  # doctest: +SKIP
    """
    bd = result.branch.to_dict() if result.branch is not None else \
        (getattr(result, "branch_dict", None) or {})
    # the Comparison protocol (replaykit.branch.runs): a replay, or two recorded runs
    intervened = bool(getattr(result, "intervened", True))
    side_a, side_b = getattr(result, "labels", ("base", "replay"))
    if not intervened:  # the same defaults as ``replaykit diff --runs``
        title = title if title is not None else (
            f"Run {result.b_run_id} compared with run {result.a_run_id}")
        question = question if question is not None else (
            f"Where does run {result.b_run_id} ({side_b}) part from run {result.a_run_id} "
            f"({side_a}), and what differs?")
    if title is None:  # the same defaults as the command line's
        title = f"Replay of {bd.get('baseRunId')}: {bd.get('name')}"
    if question is None:
        question = (f"What changes in run {bd.get('baseRunId')} under the interventions of "
                    f"branch {bd.get('name')!r}?")
    for name, v in (("title", title), ("question", question)):
        if not isinstance(v, str) or not v.strip():
            raise TypeError(f"{name} is required (a non-empty string), got {v!r}")
    from .. import plots
    from ..branch.metrics import COMPARABILITY

    branch = result.branch
    tenant = tenant_id or (branch.tenant_id if branch is not None else
                           (result.events.tenants[0] if len(result.events) else ""))
    if branch is not None:
        view = getattr(result, "_base_run", None)  # the view the metrics and findings use
        base_log = view() if callable(view) else \
            result.base.run(branch.run_id, tenant_id=branch.tenant_id)
        bdict = branch.to_dict()
    else:
        base_log = result.base
        bdict = getattr(result, "branch_dict", None)
    base_t, rep_t = base_log.table, result.events.table
    m = plain(dict(result.metrics))
    cls = str(m.get("comparability"))
    step = int(m.get("first_divergence_step", -1))
    cached = _CachedDiff(result)  # each frame computed once, shared by every section
    diff = cached.diff_df()
    annotations = cached.annotations_df()
    effects = cached.effects_df()
    requirements = cached.requirements_df()

    sections: list[tuple[str, str, str]] = []  # (id, heading, html)
    from ..branch.findings import changes_df as _changes_df
    from ..branch.findings import summarize

    changes = summary_values = _changes_df(cached)
    summary = summarize(cached, changes=changes)

    # 0. findings: the computed summary, each sentence linking to its evidence
    shown_steps = set(_transcript_steps(rep_t.num_rows, step))
    groups = [{"kind": k, "title": summary.TITLES[k] + (
                   f" ({summary.counts[k]:,})" if k == "unsupported" else ""),
               "rows": [dict(r, anchor=f"rk-step-{r['step']}" if r.get("step") in shown_steps
                             else None) for r in summary.rows if r["kind"] == k]}
              for k in summary.KINDS[1:] if any(r["kind"] == k for r in summary.rows)]
    status_line = (f"Replay {result.status} \u00b7 comparability {cls} \u00b7 model policy "
                   f"{result.model_policy} \u00b7 tool policy {result.tool_policy}")
    if not intervened:
        status_line = (f"Two recorded runs \u00b7 {side_a} {result.a_run_id} \u00b7 {side_b} "
                       f"{result.b_run_id} \u00b7 comparability {cls} \u00b7 no intervention: "
                       "differences are associations, not causes")
    sections.append(("findings", "Findings", str(render(
        "findings.html", answer=summary.answer, verdict=summary.verdict,
        headline=status_line, groups=groups))))

    # 1. question and claim
    claim = _claim(result, m, bdict) if intervened else _recorded_claim(result, m)
    body = (f"<p class='question'><b>Question.</b> {esc(question)}</p>"
            f"<p class='claim'><b>Bounded claim.</b> {esc(claim)}</p>")
    if notes:
        body += f"<div class='notes'><b>Notes.</b><pre>{esc(notes)}</pre></div>"
    if result.error:
        body += f"<p class='warn'><b>Replay error.</b> {esc(result.error)}</p>"
    sections.append(("question", "Question and claim", body))

    # 2. open requirements (what a paused / failed replay needs to finish)
    reqs = []
    for r in summary.requirements:
        spec = r["fixture"]
        cli = ("replaykit report rca --log LOG... --branch BRANCH.json "
               f"--fixtures fixtures.json{' --tenant ' + tenant if tenant else ''} -o rca.html")
        tbl = pd.DataFrame([{"tool": r["tool_name"], "call id": r["ref_id"],
                             "step": r["step"], "args hash": r["args_hash"],
                             "selector (fixture matcher)": f"toolName={r['tool_name']} & "
                             f"argsHash={r['args_hash']}", "arguments": r["args"]}])
        reqs.append({"requirement_id": r["requirement_id"], "tool_name": r["tool_name"],
                     "table": Markup(_table(tbl, limit=400)),
                     "spec_json": json.dumps(spec, indent=2, ensure_ascii=False),
                     "cli": cli})
    if intervened:  # two recorded runs have nothing to supply
        sections.append(("requirements", "Open requirements", str(render(
            "requirements.html", reqs=reqs, status=result.status))))

    # 3. interventions and policies
    ivs = (bdict or {}).get("interventions") or []
    iv_df = pd.DataFrame([{
        "id": iv.get("interventionId"), "kind": iv.get("kind"),
        "selector": json.dumps(iv.get("selector"), sort_keys=True, ensure_ascii=False),
        "patch": json.dumps(iv.get("patch"), sort_keys=True, ensure_ascii=False),
        "description": iv.get("description")} for iv in ivs],
        columns=["id", "kind", "selector", "patch", "description"])
    pol = {"base run": (bdict or {}).get("baseRunId", base_log.run_ids[0] if len(base_log)
                                          else ""),
           "replay run": result.run_id, "tenant": tenant,
           "branch": (bdict or {}).get("branchId"), "branch name": (bdict or {}).get("name"),
           "checkpoint": (bdict or {}).get("checkpointId"),
           "model policy": result.model_policy, "tool policy": result.tool_policy,
           "fixtures available": len(result.fixtures), "replay status": result.status}
    body = _kv(pol) + (_table(iv_df, limit=400) if len(iv_df)
                       else "<p>No interventions: the replay re-drives the recording.</p>")
    if not intervened:
        body = _kv({side_a: result.a_run_id, side_b: result.b_run_id, "tenant": tenant,
                    "paired by": getattr(result, "rule", ""),
                    "key": getattr(result, "key", None) or "",
                    f"{side_a} events / tool calls": f"{m.get('base_events')} / "
                                                     f"{m.get('base_tool_calls')}",
                    f"{side_b} events / tool calls": f"{m.get('replay_events')} / "
                                                     f"{m.get('replay_tool_calls')}"}) + (
            "<p id='rk-no-intervention'>No intervention: both runs are recordings, so the "
            "differences below are associations between them, not causes.</p>")
    sections.append(("interventions", "Interventions and policies" if intervened
                     else "Runs compared", body))

    # 4. comparability
    adv = COMPARABILITY.get(cls, {"meaning": "unknown class", "advice": ""})
    if not intervened:
        from ..branch.runs import RECORDED_COMPARABILITY

        adv = {"meaning": RECORDED_COMPARABILITY.get(cls, adv["meaning"]),
               "advice": "Cite the first divergence and the tool-sequence distance; claim no "
                         "cause (no intervention)."}
    body = (f"<p><span class='badge {esc(cls)}' id='rk-class'>{esc(cls)}</span></p>"
            f"<p><b>Meaning.</b> {esc(adv['meaning'])}</p>"
            f"<p><b>Report advice.</b> {esc(adv['advice'])}</p>")
    if result.status != "completed":
        body += (f"<p class='warn'>Here the class follows from the replay having "
                 f"{esc(result.status)}, not from drift: the advice that applies is to supply "
                 "what the <a href='#requirements'>open requirements</a> name and re-run, "
                 "not to change the intervention or the checkpoint.</p>")
    sections.append(("comparability", "Comparability", body))

    # 5. changed values: the structural JSON diff of every changed event
    sections.append(("changes", "Changed values", _changes_html(changes,
                                                                 max_rows=MAX_CHANGE_ROWS)))

    # 6. first divergence
    fd = _first_divergence(base_t, rep_t, step)
    if step < 0:
        body = "<p id='rk-first-divergence'>No divergence: every event signature matches.</p>"
    else:
        here = changes[changes["step"] == step] if len(changes) else changes
        body = (f"<p id='rk-first-divergence'>First divergence at <b>step {step}</b> "
                f"(base seq {esc(fd['base_seq'])}, replay seq {esc(fd['replay_seq'])}, "
                f"kind {esc(fd['kind'])}).</p>"
                + _table(pd.DataFrame(fd["rows"]), cls="events")
                + "<h3>Changed values at the divergence</h3>"
                + (_table(_change_rows(here), limit=600, markup=["before", "after"])
                   if len(here)
                   else "<p>The payloads are identical.</p>")
                + "<details><summary>unified diff of the two payloads</summary>"
                + (f"<pre class='diff'>{esc(chr(10).join(fd['args_diff']))}</pre>"
                   if fd["args_diff"] else "<p>The payloads are identical.</p>")
                + "</details>")
    sections.append(("first-divergence", "First divergence", body))

    # 7. changed descendants, each with its values
    desc = diff[diff["status"] != "same"]
    if step >= 0:
        desc = desc[(desc["replay_seq"].fillna(-1) > int(fd["replay_seq"] or -1))
                    | (desc["base_seq"].fillna(-1) > int(fd["base_seq"] or -1))]
    # values only for the rows the table embeds (its first MAX_DESCENDANTS)
    vals = _values_by_row(changes, desc.index[:MAX_DESCENDANTS])
    desc = desc.assign(**{"changed values": vals + [""] * (len(desc) - len(vals))})
    body = (f"<p>{esc(m.get('changed_descendants'))} position(s) after the first divergence "
            "differ (metric <code>changed_descendants</code>, by position). Aligned by event "
            f"signature, {len(desc):,} event(s) after it are changed, added or removed:</p>"
            + (_table(desc, max_rows=MAX_DESCENDANTS, limit=300) if len(desc) else ""))
    sections.append(("descendants", "Changed descendants", body))

    # 8. tool-sequence diff, with the argument changes
    tsd = _tool_seq_diff(base_t, rep_t)
    if len(tsd) and len(changes):
        by_seq = {}
        # only the calls the windowed table embeds
        lo, hi = _window_bounds(len(tsd), (tsd["status"] != "same").to_numpy(), MAX_TOOL_ROWS)
        shown = set(tsd["replay_seq"].iloc[lo:hi].dropna().astype("int64").tolist())
        tc = changes[changes["key"] & (changes["kind"] == "tool_call")]
        tc = tc[tc["replay_seq"].isin(shown)]
        for k, g in tc.groupby("replay_seq"):
            by_seq[int(k)] = "; ".join(_value_text(r) for r in g.itertuples())
        tsd["arguments change"] = tsd["replay_seq"].map(by_seq).fillna("").astype(object)
    body = (f"<p>Tool-sequence distance {esc(m.get('tool_sequence_distance'))} (normalised "
            f"{esc(m.get('tool_sequence_distance_norm'))}); over (tool, arguments hash) "
            f"{esc(m.get('tool_signature_distance'))}.</p>" + _window_table(
                tsd, (tsd["status"] != "same").to_numpy() if len(tsd) else np.zeros(0, bool),
                MAX_TOOL_ROWS, "tool calls", limit=300))
    sections.append(("tool-diff", "Tool-sequence diff", body))

    # 9. transcript and run tree
    from ._transcript import run_tree_html, transcript_html

    steps = _transcript_steps(rep_t.num_rows, step)
    uns = summary.unsupported
    flags: dict[int, str] = {}  # each step's sentences, in step order (one pass, no groupby)
    if len(uns):
        by_step: dict[int, list[str]] = {}
        for k, text in zip(uns["step"].tolist(), uns["sentence"].tolist(), strict=True):
            by_step.setdefault(int(k), []).append(text)
        flags = {k: "; ".join(by_step[k]) for k in sorted(by_step)}
    body = (("<h3>Replayed run</h3>" if intervened else
             f"<h3>{esc(side_b)}: {esc(result.b_run_id)}</h3>") + transcript_html(
        rep_t, origins=_seq_map(annotations, "provenance", rep_t, steps), steps=steps,
        payload_chars=TRANSCRIPT_CHARS, flags=flags)
        + "<h3>Run tree</h3>" + run_tree_html([base_t, rep_t], max_nodes=TREE_CALLS))
    sections.append(("transcript", "Transcript and run tree", body))

    # 10. fixture provenance
    fx_used = effects[effects["action"] == "fixture"]
    fx_all = pd.DataFrame([{"fixture_id": f.fixture_id, "tool_name": f.tool_name,
                            "provenance": f.provenance, "created_by": f.created_by,
                            "note": f.note, "used": f.fixture_id in set(
                                fx_used["fixture_id"].dropna())} for f in result.fixtures])
    if len(fx_used):
        body = (f"<p class='warn' id='rk-sensitive'><b>Sensitive to fixture.</b> "
                f"{len(fx_used)} divergent tool call(s) were answered by fixtures, not by the "
                "recording or a live tool. The conclusion holds only as far as those fixture "
                "outputs are right: a different fixture could change what follows.</p>"
                + _table(fx_used))
    else:
        body = "<p>No fixture served a call: every tool output is recorded (or executed).</p>"
    if len(requirements):
        body += ("<h3>Requirements</h3>" + _table(requirements)
                 + "<p><a href='#requirements'>what would satisfy the open ones &rarr;</a></p>")
    if len(fx_all):
        body += "<h3>Fixture set</h3>" + _table(fx_all)
    if intervened:  # no fixture serves a recorded run
        sections.append(("fixtures", "Fixture provenance", body))

    # 11. integrity
    integ = _integrity(base_t)
    body = (f"<p><span class='badge {esc(integ['status'])}' id='rk-integrity'>"
            f"{esc(integ['status'])}</span> {esc(integ['detail'])}</p>")
    if "problems" in integ:
        body += _table(integ["problems"])
    sections.append(("integrity", "Integrity", body))

    # 12. metrics
    mdf = pd.DataFrame({"metric": list(m), "value": [m[k] for k in m]})
    sections.append(("metrics", "Metrics", _table(mdf, cls="metrics", formatters={
        "value": lambda v: "" if v is None or _isna(v) else fmt_number(v)})))

    # 13. reproducibility stamp
    paths = list(inputs) if inputs is not None else [
        p for p in _source_paths(base_t) if Path(p).exists()]
    files = _inputs(paths)
    versions = _versions()
    stamp = {"generated": datetime.now(UTC).isoformat(timespec="seconds"),
             "platform": f"{platform.system()} {platform.machine()}",
             "model policy": result.model_policy, "tool policy": result.tool_policy,
             "replay id": result.replay_id,
             "models / providers in the log": ", ".join(_model_ids(base_t)) or "none found",
             **{f"version {k}": v for k, v in versions.items()}}
    body = _kv(stamp) + (_table(pd.DataFrame(files)) if files
                         else "<p>No input files named (the logs came from memory).</p>")
    sections.append(("repro", "Reproducibility stamp", body))

    # 14. figures
    figs: list[tuple[str, Any]] = []
    figs.append(("Divergence timeline", plots.divergence_timeline(
        cached, max_points=FIGURE_POINTS)))
    # the columns tool_sequences reads, not a copy of both runs' payloads
    seq_cols = ("tenant_id", "run_id", "seq", "kind", "tool_name")
    both = pa.concat_tables([t.select([c for c in seq_cols if c in t.column_names])
                             for t in (base_t, rep_t)], promote_options="permissive")
    try:
        figs.append(("Tool sequences", plots.tool_sequences(
            both, max_points=FIGURE_POINTS // 2)))
    except (ValueError, KeyError):
        pass
    if len(effects):
        try:
            figs.append(("Fixture dependence", plots.fixture_dependence([cached])))
        except (ValueError, KeyError, TypeError):
            pass
    from ..fold import agent, fold

    states = fold(result.events, agent())
    try:
        figs.append(("State timeline (replay; fields that never change are folded away)",
                     plots.state_timeline(states, result.run_id,
                                          tenant_id=result.events.tenants[0],
                                          max_points=FIGURE_POINTS)))
    except (ValueError, KeyError, TypeError):
        pass
    fig_html = []
    fig_json = []
    for k, (name, fig) in enumerate(figs):
        fig_html.append(f"<h3>{esc(name)}</h3>{_sampling_caption(fig)}"
                        f"<div class='figure' id='rk-fig-{k}'></div>")
        fig_json.append(f"<script type='application/json' class='rk-figure' "
                        f"data-target='rk-fig-{k}'>{_figure_json(fig)}</script>")
    sections.append(("figures", "Figures", "".join(fig_html) + "".join(fig_json)))

    # 15. scrubber: base and replay at the same step
    n_steps = max(rep_t.num_rows, base_t.num_rows)
    first = 0 if step < 0 or n_steps <= MAX_SCRUB_EVENTS else \
        max(0, min(step - MAX_SCRUB_EVENTS // 4, n_steps - MAX_SCRUB_EVENTS))
    window = range(first, first + MAX_SCRUB_EVENTS)
    st = diff.dropna(subset=["replay_seq"]).rename(columns={"replay_seq": "seq"})
    scrub, rep_hashes = _scrubber_data(
        result.events, tenant_id=result.events.tenants[0], states=states, first=first,
        max_events=MAX_SCRUB_EVENTS,
        origins=_seq_map(annotations, "provenance", rep_t, window),
        statuses=_seq_map(st, "status", rep_t, window))
    sb = diff.dropna(subset=["base_seq"]).rename(columns={"base_seq": "seq"})
    base_scrub, _ = _scrubber_data(base_log, tenant_id=base_log.tenants[0], first=first,
                                   max_events=MAX_SCRUB_EVENTS,
                                   statuses=_seq_map(sb, "status", base_t, window),
                                   like=(scrub, rep_hashes))
    body = _scrubber_html(scrub, base_scrub, step, labels=(side_a, side_b) if not intervened
                          else None)
    sections.append(("scrubber", "Step scrubber (base and replay)" if intervened else
                     f"Step scrubber ({side_a} and {side_b})", body))

    data = {"metrics": m, "first_divergence": fd, "comparability": cls,
            "advice": adv["advice"], "integrity": integ["status"],
            "sensitive_to_fixture": bool(len(fx_used)), "inputs": files, "versions": versions,
            "figures": [n for n, _ in figs], "scrubber": scrub, "base_scrubber": base_scrub,
            "summary": summary, "changes": summary_values}
    sections = reading_order(sections)  # the question first
    return Report(page(title, sections), title=title, sections=[s[0] for s in sections],
                  data=data)


def _seq_map(frame: pd.DataFrame, col: str, t: pa.Table, steps: Any) -> dict[int, str]:
    """``seq -> frame[col]`` for the events of ``t`` at positions ``steps`` only (the rows a
    bounded view shows), looked up column-wise."""
    pos = np.asarray([p for p in steps if 0 <= p < t.num_rows], dtype=np.int64)
    if not len(pos) or not len(frame):
        return {}
    seqs = t.column("seq").take(pa.array(pos)).to_numpy(zero_copy_only=False)
    keys = pd.Index(frame["seq"].astype("int64").to_numpy())
    vals = frame[col].astype(str).to_numpy(dtype=object)
    if not keys.is_unique:
        keep = ~keys.duplicated()
        keys, vals = keys[keep], vals[keep]
    idx = keys.get_indexer(seqs)
    ok = idx >= 0
    return dict(zip(seqs[ok].tolist(), vals[idx[ok]].tolist(), strict=True))


def _transcript_steps(n: int, step: int) -> list[int]:
    """Positions the report's transcript shows: all of a short run; else the first
    ``TRANSCRIPT_HEAD`` events and a window from just before the first divergence."""
    if n <= TRANSCRIPT_EVENTS:
        return list(range(n))
    if step < 0 or step < TRANSCRIPT_EVENTS - 10:
        return list(range(TRANSCRIPT_EVENTS))
    room = TRANSCRIPT_EVENTS - TRANSCRIPT_HEAD
    lo = max(TRANSCRIPT_HEAD, min(step - 10, n - room))
    return list(range(TRANSCRIPT_HEAD)) + list(range(lo, min(n, lo + room)))


def _window_bounds(n: int, hot: np.ndarray, max_rows: int) -> tuple[int, int]:
    """The rows ``[lo, hi)`` :func:`_window_table` embeds of ``n``: all when they fit, else
    ``max_rows`` from just before the first ``hot`` row."""
    if n <= max_rows:
        return 0, n
    hits = np.flatnonzero(hot)
    lo = 0 if not len(hits) else max(0, min(int(hits[0]) - 5, n - max_rows))
    return lo, lo + max_rows


def _window_table(df: pd.DataFrame, hot: np.ndarray, max_rows: int, what: str,
                  **kw: Any) -> str:
    """A long table as a stated window: all rows when they fit, else ``max_rows`` rows from
    just before the first ``hot`` row (the first difference), with a "rows a-b of n" note."""
    n = len(df)
    if n <= max_rows:
        return _table(df, **kw)
    hits = np.flatnonzero(hot)
    lo, hi = _window_bounds(n, hot, max_rows)
    part = df.iloc[lo:hi]
    where = "from just before the first difference" if len(hits) and lo > 0 else "the first"
    return (f"<p class='note rows-cut'>Showing rows {lo + 1:,}\u2013{lo + len(part):,} of "
            f"{n:,} {what} ({where}; {n - len(part):,} rows not embedded).</p>"
            + _table(part, **kw))


def _sampling_caption(fig: Any) -> str:
    """A visible caption under a figure's heading when the figure shows a sample."""
    meta = fig.layout.meta if fig.layout.meta is not None else {}
    notes = list(meta.get("sampling") or []) if isinstance(meta, Mapping) else []
    if not notes:
        return ""
    return ("<p class='note sampled'><b>Sampled figure.</b> "
            + "; ".join(esc(html.unescape(str(x))) for x in notes) + ".</p>")


def _value_text(r: Any) -> str:
    if r.op == "changed":
        return f"{r.label}: {_cut(r.before, 60)} \u2192 {_cut(r.after, 60)}"
    if r.op == "added":
        return f"{r.label}: added {_cut(r.after, 60)}"
    return f"{r.label}: removed {_cut(r.before, 60)}"


#: changed values a row of the changed-descendants table names (the rest are counted).
VALUES_PER_ROW = 3


class _Change(NamedTuple):
    path: Any
    op: Any
    label: Any
    before: Any
    after: Any


def _values_by_row(changes: pd.DataFrame, rows: Any) -> list[str]:
    """Per diff_df row: its key value changes as ``path: before -> after; ...``."""
    if not len(changes):
        return ["" for _ in rows]
    from .._base.envelope import bookkeeping_phrase, said_first

    want = [int(r) for r in rows]
    mine = changes[changes["row"].isin(want)]  # only the rows asked for
    # per diff row, in frame order: plain lists, not a pandas group per row
    cells = zip(mine["row"].tolist(), mine["key"].tolist(), mine["path"].tolist(),
                mine["op"].tolist(), mine["label"].tolist(), mine["before"].tolist(),
                mine["after"].tolist(),
                mine["bookkeeping"].tolist() if "bookkeeping" in mine.columns
                else [None] * len(mine), strict=True)
    key_rows: dict[int, list[_Change]] = {}
    bk_rows: dict[int, list[Any]] = {}
    for row, key, path, op, label, before, after, group in cells:
        if key:
            key_rows.setdefault(int(row), []).append(_Change(path, op, label, before, after))
        elif "bookkeeping" in mine.columns and group != "replay":
            bk_rows.setdefault(int(row), []).append(group)
    text = {}
    for k in sorted(key_rows):  # what the agent sent or got first; three, then a count
        g = key_rows[k]
        g = [g[i] for i in said_first([str(c.path) for c in g], [str(c.op) for c in g])]
        parts = [_value_text(r) for r in g[:VALUES_PER_ROW]]
        if len(g) > VALUES_PER_ROW:
            parts.append(f"{len(g) - VALUES_PER_ROW:,} more")
        text[k] = "; ".join(parts)
    # then the envelope, counted (not the replay's own record: the source column says it)
    for k in sorted(bk_rows):
        head = text.get(k, "")
        text[k] = (head + "; " if head else "") + bookkeeping_phrase(bk_rows[k])
    return [text.get(r, "") for r in want]


def _inline_diff(before: str, after: str) -> tuple[Markup, Markup]:
    """Word-level highlighting of two texts: removed words in ``<del>``, added in ``<ins>``
    (every word escaped)."""
    import re

    from markupsafe import escape

    a = re.split(r"(\s+)", before)
    b = re.split(r"(\s+)", after)
    from .._base.align import align

    left: list[str] = []
    right: list[str] = []
    # difflib's word blocks read best; its cost is quadratic, so only for bounded texts
    # (a few thousand words), the near-linear alignment for longer ones
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() \
        if len(a) * len(b) <= 4_000_000 else align(a, b)
    for tag, i1, i2, j1, j2 in ops:  # one changed value
        x, y = str(escape("".join(a[i1:i2]))), str(escape("".join(b[j1:j2])))
        if tag == "equal":
            left.append(x)
            right.append(y)
            continue
        if x:
            left.append(f"<del>{x}</del>")
        if y:
            right.append(f"<ins>{y}</ins>")
    return Markup("".join(left)), Markup("".join(right))


def _value_cells(changes: pd.DataFrame, limit: int = 600) -> tuple[list[Any], list[Any]]:
    """before / after cells: JSON text, long strings with their changed words marked."""
    bs: list[Any] = []
    as_: list[Any] = []
    for op, b, a in zip(changes["op"], changes["before"], changes["after"], strict=True):
        bt = "" if b is None or _isna(b) else str(b)
        at = "" if a is None or _isna(a) else str(a)
        if op == "changed" and bt.startswith('"') and at.startswith('"') \
                and max(len(bt), len(at)) > 40:
            x, y = _inline_diff(json.loads(bt), json.loads(at))
            bs.append(x)
            as_.append(y)
        else:
            bs.append(_cut(bt, limit))
            as_.append(_cut(at, limit))
    return bs, as_


def _change_rows(changes: pd.DataFrame) -> pd.DataFrame:
    """The changed-values table a reader sees: one row per changed path."""
    src = [(f"fixture {f} ({p})" if o == "fixture" else str(o) if isinstance(o, str) else "")
           for o, f, p in zip(changes["origin"], changes["fixture_id"], changes["provenance"],
                              strict=True)]
    what = [f"{k} \u00b7 {t}" if isinstance(t, str) and t else str(k)
            for k, t in zip(changes["kind"], changes["tool_name"], strict=True)]
    before, after = _value_cells(changes)
    return pd.DataFrame({"step": changes["step"].to_numpy(), "event": what, "source": src,
                         "path": changes["label"].to_numpy(), "change": changes["op"].to_numpy(),
                         "before": pd.Series(before, dtype=object),
                         "after": pd.Series(after, dtype=object)})


def _changes_html(changes: pd.DataFrame, *, max_rows: int | None = None) -> str:
    if not len(changes):
        return str(render("changes.html", n=0, events=0, table=""))
    n, events = len(changes), changes["row"].nunique()
    all_changes = changes
    if max_rows is not None and n > max_rows:  # only the embedded rows are rendered
        changes = changes.head(max_rows)
    view = _change_rows(changes)
    rows = ["hit" if k else "envelope" for k in changes["key"]]
    cells = pd.DataFrame("", index=view.index, columns=view.columns)
    cells["change"] = ["op-" + str(o) for o in changes["op"]]
    cells["before"] = ["before" if o != "added" else "" for o in changes["op"]]
    cells["after"] = ["after" if o != "removed" else "" for o in changes["op"]]
    table = _table(view, tid="rk-changes", limit=600, row_classes=rows, cell_classes=cells,
                   markup=["before", "after"])
    if len(changes) < n:
        table += (f"<p class='note rows-cut'>Showing the first {len(changes):,} of {n:,} "
                  "changed values (in step order); the rest are not embedded "
                  "(<code>result.changes_df()</code> has them all).</p>")
    from .._base.envelope import bookkeeping_phrase

    content = int(all_changes["key"].sum())
    bk = bookkeeping_phrase(all_changes.loc[~all_changes["key"], "bookkeeping"]) \
        if "bookkeeping" in all_changes.columns else ""
    return str(render("changes.html", n=n, events=events, table=Markup(table),
                      content=content, bookkeeping=bk))


def _scrubber_html(scrub: Mapping[str, Any], base: Mapping[str, Any] | None,
                   step: int, labels: tuple[str, str] | None = None) -> str:
    n = max(int(scrub["shown"]), int(base["shown"]) if base else 0)
    off = int(scrub.get("offset", 0))
    note = ""
    sides = [(side, d) for side, d in (("replay", scrub), ("base (recording)", base))
             if d is not None and d["shown"] < d["total"]]
    if len(sides) == 2 and all(sides[0][1][k] == sides[1][1][k]
                               for k in ("offset", "shown", "total")):
        sides = [("", scrub)]
    for side, d in sides:
        lo, hi = int(d.get("offset", 0)), int(d.get("offset", 0)) + int(d["shown"]) - 1
        where = (" around the first divergence" if step >= 0 and lo <= step <= hi and lo > 0
                 else "")
        who = f"The {side} side holds" if side else "Both sides (replay and base) hold"
        note += (f"{who} steps {lo:,}\u2013{hi:,} of {int(d['total']):,} events "
                 f"({int(d['shown']):,} steps{where}); the rest are not embedded. ")
    start = max(0, min(step - off, n - 1)) if step >= 0 else 0
    # two recorded runs: the sides named as the reader knows them (labels)
    side_a, side_b = labels if labels is not None else (None, None)
    return str(render("scrubber.html", note=note, max=max(n - 1, 0), start=start,
                      data=json_script({"replay": scrub, "base": base}), side_a=side_a,
                      side_b=side_b))

