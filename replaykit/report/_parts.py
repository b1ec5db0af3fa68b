"""The pieces every report is made of: the :class:`Report` object, tables, versions and inputs,
figures and event rows."""

from __future__ import annotations

import hashlib
import html
import json
import os
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.display import fmt_cell
from ..branch._shared import shared_name
from ._embed import esc, script_json
from ._fmt import fmt_number
from ._template import Markup, render

__all__ = ["Report"]

#: characters of event text kept per scrubber step and per table cell.
TEXT_CHARS = 160

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
            fmts[c] = (lambda v: _cut(fmt_cell(v), limit))  # one missing/time style
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
    from .._base.json import payload_fields

    kind = pc.cast(t.column("kind"), pa.string())
    m = pc.fill_null(pc.is_in(kind, pa.array(["model_request", "model_response"])), False)
    payloads = t.column("payload").filter(m)
    # only payloads whose text can name one of the fields are parsed: a member "model",
    # "provider" or "modelId" appears in the text as that quoted name, unless escaped
    # (texts with a \u escape are kept too)
    can = None
    for needle in ('"model"', '"provider"', '"modelId"', "\\u"):
        hit = pc.match_substring(payloads, needle)
        can = hit if can is None else pc.or_(can, hit)
    payloads = payloads.filter(pc.fill_null(can, False))
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
        ["seq", "kind", "type", "tool_name", "ref_id", "text", "payload", "source"])
    rows = sub.to_pylist()
    for pos, r in zip(keep, rows, strict=True):
        r["pos"] = pos
    return rows


def _pretty(payload: str | None, source: str | None = None) -> list[str]:
    """The payload's lines as pretty JSON: content members first, the envelope of the format
    named by ``source`` (ids, times, working directory ...) after them."""
    if not payload:
        return []
    from .._base.envelope import content_first, format_of

    try:
        return json.dumps(content_first(json.loads(payload), format_of(source)), indent=2,
                          ensure_ascii=False).splitlines()
    except ValueError:
        return payload.splitlines()
