"""Report objects and the builders behind ``rk.report.rca`` / ``rk.report.cohort``."""

from __future__ import annotations

import difflib
import hashlib
import html
import json
import os
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..branch._shared import shared_name
from ._embed import esc, plain, script_json
from ._fmt import _isna, cut_words, fmt_number
from ._template import Markup, json_script, page, render

__all__ = ["MAX_SCRUB_EVENTS", "Report", "cohort", "rca"]

#: steps the embedded scrubber holds, base and replay alike (a longer run keeps a window
#: around the first divergence and says so).
MAX_SCRUB_EVENTS = 3_000
#: characters of event text kept per scrubber step and per table cell.
TEXT_CHARS = 160
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

_DEPENDENCIES = ("pyarrow", "pandas", "numpy", "plotly", "orjson", "jsonpatch", "rapidfuzz")


# ------------------------------------------------------------------------------ Report
class Report:
    """One self-contained HTML report (built by :func:`rca` or :func:`cohort`).

    ``html`` is the whole page: plotly.js inlined once, figures and data embedded as escaped
    JSON, no URL the page loads. ``sections`` names the sections in page order; ``data`` holds
    the values the page shows (metrics, first divergence, ...), for tests and code.

    Example:
        >>> rep = rk.report.rca(res, title="RCA-311", question="...")  # doctest: +SKIP
        >>> rep.save_html("rca.html")  # doctest: +SKIP
    """

    def __init__(self, html: str, *, title: str, sections: Sequence[str],
                 data: Mapping[str, Any]) -> None:
        self.html = html
        self.title = title
        self.sections = list(sections)
        self.data = dict(data)

    def __repr__(self) -> str:
        return (f"Report(title={self.title!r}, sections={len(self.sections)}, "
                f"size={len(self.html.encode('utf-8')):,} bytes)")

    def _repr_html_(self) -> str:
        """The page in an isolated ``<iframe srcdoc>`` (its scripts and styles stay inside)."""
        return ("<iframe style='width:100%;height:720px;border:1px solid #ddd' "
                "sandbox='allow-scripts' "
                f"srcdoc=\"{esc(self.html)}\"></iframe>")

    def save_html(self, path: str | os.PathLike[str] | IO[str] | IO[bytes]) -> Path | None:
        """Write the page to ``path`` (a file path, or an open text or binary file object).

        Returns the path written (None for a file object).

        Raises:
            OSError: the file cannot be written.
        """
        if hasattr(path, "write"):
            try:
                path.write(self.html)  # type: ignore[union-attr,arg-type,call-overload]
            except TypeError:
                path.write(self.html.encode("utf-8"))  # type: ignore[union-attr,arg-type]
            return None
        p = Path(path)  # type: ignore[arg-type]
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.html, encoding="utf-8")
        return p


# ------------------------------------------------------------------------------ helpers
def _table(df: pd.DataFrame, *, limit: int = TEXT_CHARS, cls: str = "",
           max_rows: int | None = None, tid: str | None = None,
           row_classes: Sequence[str] | None = None,
           cell_classes: pd.DataFrame | None = None,
           formatters: Mapping[str, Any] | None = None,
           markup: Sequence[str] = ()) -> str:
    """``df`` as an escaped HTML table through the pandas Styler (cells and headers escaped
    by Styler, numbers formatted by :func:`fmt_number`, long text cut with an ellipsis).
    Columns named in ``markup`` hold :class:`Markup` built (and escaped) here, kept as is."""
    if max_rows is not None and len(df) > max_rows:
        more = len(df) - max_rows
        df = df.head(max_rows)
        if row_classes is not None:
            row_classes = list(row_classes)[:max_rows]
        if cell_classes is not None:
            cell_classes = cell_classes.head(max_rows)
    else:
        more = 0
    df = df.reset_index(drop=True)
    num_cols = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
                and not pd.api.types.is_bool_dtype(df[c])]
    fmts: dict[Any, Any] = {}
    for c in df.columns:
        if formatters and c in formatters:
            fmts[c] = formatters[c]
        elif c in num_cols:
            fmts[c] = fmt_number
        else:
            fmts[c] = (lambda v: "" if v is None or _isna(v) else _cut(v, limit))
    classes = pd.DataFrame("", index=df.index, columns=df.columns)
    for c in num_cols:
        classes[c] = "num"
    if cell_classes is not None:
        cc = cell_classes.reset_index(drop=True).reindex(index=df.index, columns=df.columns)
        classes = (classes + " " + cc.fillna("")).apply(lambda col: col.str.strip())
    if row_classes is not None:
        rc = pd.Series(list(row_classes), index=df.index).fillna("")
        classes = classes.apply(lambda col: (col + " " + rc).str.strip())
    uid = tid or "t" + hashlib.sha1("|".join(map(str, df.columns)).encode()).hexdigest()[:8]
    sty = (df.style.format({c: f for c, f in fmts.items() if c not in markup}, escape="html")
           .format_index(escape="html", axis=1)
           .hide(axis="index").set_td_classes(classes).set_uuid(uid))
    if markup:
        sty = sty.format(lambda v: str(v) if isinstance(v, Markup) else str(esc(v)),
                         subset=list(markup), escape=None)
    sty = sty.set_table_attributes(f'class="{esc(cls)}"')
    out = sty.to_html(doctype_html=False)
    tail = (f"<p class='note rows-cut'>Showing the first {max_rows:,} of {max_rows + more:,} "
            f"rows ({more:,} more not embedded).</p>") if more and max_rows is not None else ""
    wrap_id = f" id='{esc(tid)}'" if tid else ""
    return f"<div class='tablewrap'{wrap_id}>{out}</div>{tail}"


def _cut(v: Any, limit: int) -> str:
    text = str(v)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _kv(items: Mapping[str, Any]) -> str:
    return str(render("kv.html", items=[(k, "" if v is None else v) for k, v in items.items()]))


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _versions() -> dict[str, str]:
    """replaykit, Python and the installed dependencies' versions."""
    out = {"replaykit": _version("replaykit") or "unknown", "python": platform.python_version()}
    for dep in _DEPENDENCIES:
        v = _version(dep)
        if v is not None:
            out[dep] = v
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _source_paths(*tables: pa.Table) -> list[str]:
    """Distinct input files named by the ``source`` column (``<format>:<path>``)."""
    out: set[str] = set()
    for t in tables:
        if "source" not in t.column_names or not t.num_rows:
            continue
        col = pc.cast(t.column("source"), pa.string())
        for s in pc.unique(col).to_pylist():
            if s and ":" in s:
                out.add(s.split(":", 1)[1])
    return sorted(out)


def _inputs(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """One row per input file: its shared name (relative to the folder passed, or the file
    name; see :func:`shared_name`), size and sha256."""
    rows = []
    seen: set[str] = set()
    for p in paths:
        q = Path(p)
        key = str(q.resolve()) if q.exists() else str(q)
        if key in seen:
            continue
        seen.add(key)
        if q.is_file():
            rows.append({"file": shared_name(q), "bytes": q.stat().st_size,
                         "sha256": _sha256(q)})
        elif q.is_dir():
            for f in sorted(x for x in q.rglob("*") if x.is_file()):
                if str(f.resolve()) not in seen:
                    seen.add(str(f.resolve()))
                    rows.append({"file": shared_name(f, q), "bytes": f.stat().st_size,
                                 "sha256": _sha256(f)})
        else:
            rows.append({"file": shared_name(q), "bytes": None,
                         "sha256": "not available (no such file)"})
    return rows


def _model_ids(t: pa.Table) -> list[str]:
    """Distinct ``model`` / ``provider`` values named by the model rows' payloads."""
    from .._json import payload_fields

    kind = pc.cast(t.column("kind"), pa.string())
    m = pc.fill_null(pc.is_in(kind, pa.array(["model_request", "model_response"])), False)
    payloads = t.column("payload").filter(m)
    if not len(payloads):
        return []
    found: set[str] = set()
    fields = ("model", "provider", "modelId", "settings.model")
    try:  # one column-wise read of the four fields
        cols = payload_fields(payloads, dict.fromkeys(fields, pa.string()))
        got = [(f, cols.column(f)) for f in fields]
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        got = []  # a field of another type somewhere: each field on its own
        for field in fields:
            try:
                got.append((field, payload_fields(payloads, {field: pa.string()})
                            .column(field)))
            except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
                continue
    for field, col in got:
        name = field.rsplit(".", 1)[-1]
        found.update(f"{name}={v}" for v in pc.unique(col).to_pylist() if v)
    return sorted(found)


_CATEGORY_KEYS = ("x", "y", "categoryarray", "ticktext", "labels")


def _escape_categories(node: Any) -> Any:
    """HTML-escape raw markup in category values (trace x/y, axis categories).

    Plotly renders category labels and ``%{y}`` hover substitutions as its own HTML subset, so
    a log string used as a category (a run id, a tool name) must arrive escaped. Strings that
    hold no ``<``/``>`` (plain, or already escaped) are left as they are.
    """
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in _CATEGORY_KEYS and isinstance(v, list):
                out[k] = [html.escape(x, quote=False)
                          if isinstance(x, str) and ("<" in x or ">" in x) else x for x in v]
            else:
                out[k] = _escape_categories(v)
        return out
    if isinstance(node, list):
        return [_escape_categories(v) for v in node]
    return node


def _figure_json(fig: Any) -> str:
    import plotly.io as pio

    spec = json.loads(pio.to_json(fig, validate=False, pretty=False))
    return script_json(_escape_categories(spec))


def _event_rows(t: pa.Table, positions: Sequence[int]) -> list[dict[str, Any]]:
    keep = [p for p in positions if 0 <= p < t.num_rows]
    if not keep:
        return []
    sub = t.take(pa.array(keep, pa.int64())).select(
        ["seq", "kind", "type", "tool_name", "ref_id", "text", "payload"])
    rows = sub.to_pylist()
    for pos, r in zip(keep, rows, strict=True):
        r["pos"] = pos
    return rows


def _pretty(payload: str | None) -> list[str]:
    if not payload:
        return []
    try:
        return json.dumps(json.loads(payload), indent=2, sort_keys=True,
                          ensure_ascii=False).splitlines()
    except ValueError:
        return payload.splitlines()


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
    from ..eventlog import EventLog
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
    kinds_w = pc.cast(events.table.column("kind"), pa.string()).to_numpy(zero_copy_only=False)
    opener = "turn_start" if (kinds_w == "turn_start").any() else "user_message"
    derived_turn = np.cumsum(kinds_w == opener)[first:first + n]
    rec_turn = t.column("turn").to_pandas()
    turns = [int(r) if not pd.isna(r) else int(d)
             for r, d in zip(rec_turn.tolist(), derived_turn.tolist(), strict=True)]
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
    diff = list(difflib.unified_diff(_pretty(b["payload"] if b else None),
                                     _pretty(r["payload"] if r else None),
                                     "base", "replay", lineterm="", n=2))
    kind = (r or b or {}).get("kind")
    return {"step": step, "rows": rows, "args_diff": diff[:400], "kind": kind,
            "base_seq": b and b["seq"], "replay_seq": r and r["seq"]}


def _tool_seq_diff(base_t: pa.Table, rep_t: pa.Table) -> pd.DataFrame:
    def calls(t: pa.Table) -> tuple[list[Any], list[Any], list[Any]]:
        m = pc.fill_null(pc.equal(pc.cast(t.column("kind"), pa.string()), "tool_call"), False)
        s = t.filter(m)
        return (pc.cast(s.column("tool_name"), pa.string()).to_pylist(),
                pc.cast(s.column("args_hash"), pa.string()).to_pylist(),
                s.column("seq").to_pylist())

    from .._align import align, expand

    bt, bh, bs = calls(base_t)
    rt, rh, rs = calls(rep_t)
    # near-linear alignment of the (tool, args hash) keys, then column-wise rows
    status, i, j = expand(align([f"{t}\x1f{h}" for t, h in zip(bt, bh, strict=True)],
                                [f"{t}\x1f{h}" for t, h in zip(rt, rh, strict=True)]))

    def take(vals: list[Any], idx: np.ndarray) -> list[Any]:
        arr = np.asarray(vals + [None], dtype=object)
        return arr[np.where(idx >= 0, idx, len(vals))].tolist()

    b_tool, r_tool = take(bt, i), take(rt, j)
    note = np.where(status == "changed",
                    np.where(np.asarray(b_tool, dtype=object) == np.asarray(r_tool, dtype=object),
                             "arguments changed", "tool changed"), "")
    return pd.DataFrame({"status": status, "base_seq": take(bs, i), "base_tool": b_tool,
                         "replay_seq": take(rs, j), "replay_tool": r_tool, "note": note})


def _integrity(base_t: pa.Table) -> dict[str, Any]:
    if "row_hash" not in base_t.column_names or not base_t.num_rows \
            or base_t.column("row_hash").null_count == base_t.num_rows:
        return {"status": "not available",
                "detail": "the base run carries no hash chain (no row_hash values), so its "
                          "integrity cannot be checked from the log alone"}
    from ..integrity import verify_chain

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
        base_log = result.base.run(branch.run_id, tenant_id=branch.tenant_id)
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
    sections.append(("findings", "Findings", str(render(
        "findings.html", answer=summary.answer, verdict=summary.verdict,
        headline=status_line, groups=groups))))

    # 1. question and claim
    claim = _claim(result, m, bdict)
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
    sections.append(("interventions", "Interventions and policies", body))

    # 4. comparability
    adv = COMPARABILITY.get(cls, {"meaning": "unknown class", "advice": ""})
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
    flags = {int(k): "; ".join(g["sentence"]) for k, g in uns.groupby("step")} \
        if len(uns) else {}
    body = ("<h3>Replayed run</h3>" + transcript_html(
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
    body = _scrubber_html(scrub, base_scrub, step)
    sections.append(("scrubber", "Step scrubber (base and replay)", body))

    data = {"metrics": m, "first_divergence": fd, "comparability": cls,
            "advice": adv["advice"], "integrity": integ["status"],
            "sensitive_to_fixture": bool(len(fx_used)), "inputs": files, "versions": versions,
            "figures": [n for n, _ in figs], "scrubber": scrub, "base_scrubber": base_scrub,
            "summary": summary, "changes": summary_values}
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


def _values_by_row(changes: pd.DataFrame, rows: Any) -> list[str]:
    """Per diff_df row: its key value changes as ``path: before -> after; ...``."""
    if not len(changes):
        return ["" for _ in rows]
    want = [int(r) for r in rows]
    key = changes[changes["key"] & changes["row"].isin(want)]  # only the rows asked for
    text = {int(k): "; ".join(_value_text(r) for r in g.itertuples())
            for k, g in key.groupby("row")}
    return [text.get(r, "") for r in want]


def _inline_diff(before: str, after: str) -> tuple[Markup, Markup]:
    """Word-level highlighting of two texts: removed words in ``<del>``, added in ``<ins>``
    (every word escaped)."""
    import re

    from markupsafe import escape

    a = re.split(r"(\s+)", before)
    b = re.split(r"(\s+)", after)
    from .._align import align

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
    if max_rows is not None and n > max_rows:  # only the embedded rows are rendered
        changes = changes.head(max_rows)
    view = _change_rows(changes)
    rows = ["hit" if k else "" for k in changes["key"]]
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
    return str(render("changes.html", n=n, events=events, table=Markup(table)))


def _scrubber_html(scrub: Mapping[str, Any], base: Mapping[str, Any] | None,
                   step: int) -> str:
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
    return str(render("scrubber.html", note=note, max=max(n - 1, 0), start=start,
                      data=json_script({"replay": scrub, "base": base})))


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
            from ..stamps import stamp_drift

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
    return Report(page(title, sections), title=title, sections=[s[0] for s in sections],
                  data=data)


def _cohort_table(u: pd.DataFrame, unit: str) -> str:
    """One unit's measures: formatted for people, corrected columns, hits highlighted."""
    pct = unit == "rates"

    def f(v: Any, signed: bool = False) -> str:
        s = fmt_number(v, percent=pct, signed=signed)
        return s.replace("%", " pp") if pct and signed else s

    view = pd.DataFrame({
        "measure": u["metric"].astype(str).to_numpy(),
        "n (a / b)": [f"{fmt_number(a)} / {fmt_number(b)}" for a, b in
                      zip(u["n_a"], u["n_b"], strict=True)],
        str(u["cohort_a"].iloc[0]): [f(v) for v in u["value_a"]],
        str(u["cohort_b"].iloc[0]): [f(v) for v in u["value_b"]],
        "difference": [f(v, True) for v in u["diff"]],
        "interval": [f"{f(a, True)} to {f(b, True)}" for a, b in
                     zip(u["ci_low"], u["ci_high"], strict=True)],
        "relative": [fmt_number(v, percent=True, signed=True) for v in u["rel_diff"]],
        "effect size": [f"{fmt_number(v, signed=True)} ({k})" if not _isna(v) else ""
                        for v, k in zip(u["effect_size"], u["effect_size_kind"], strict=True)],
        "p (approx.)": [fmt_number(v) for v in u["p_value"]],
        "Holm p": [fmt_number(v) for v in u["p_holm"]],
        "BH p": [fmt_number(v) for v in u["p_bh"]],
        "beyond interval": ["yes" if x else "no" for x in u["excludes_zero"].fillna(False)],
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
