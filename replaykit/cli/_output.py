"""What the command line prints: tables, summaries and messages, in text, CSV or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import json_safe, terminal_safe

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["EXIT_EMPTY", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_PAUSED", "EXIT_USAGE"]

#: Exit codes of every ``replaykit`` command.
EXIT_OK, EXIT_EMPTY, EXIT_USAGE, EXIT_PAUSED = 0, 1, 2, 3
#: Exit code after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def _summary_columns() -> list[str]:
    """The runs table's computed columns, with the format after the run's identity."""
    from ..eventlog.log import RUN_STAT_COLUMNS

    return [*RUN_STAT_COLUMNS[:3], "format", *RUN_STAT_COLUMNS[3:]]



#: every --format value: the loaders' formats, a Parquet dataset, or sniffing per file.
_FORMATS = ("auto", "toh", "pleach", "isplay", "inspect", "otel", "claude_code", "codex",
            "langsmith", "langfuse", "phoenix", "parquet")
_RESULT_VIEWS = ("get", "events", "diff", "metrics", "effects", "requirements")
_DEFAULT_LIMIT = 50


class _UsageError(Exception):
    """A command-line mistake: exit 2 with the message."""


class _EmptyAnswer(Exception):
    """The command ran but found nothing to answer with: exit 1 with the message."""


# ---------------------------------------------------------------------------- output
def _csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV. A value holding a carriage return (which pandas leaves unquoted, and
    which CSV readers then take for a line end) makes every text value quoted, so the file
    reads back to the same values."""
    text = df.to_csv(index=False)
    if "\r" not in text:
        return text
    import csv

    return df.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC)


def _emit_table(df: pd.DataFrame, args: argparse.Namespace, *, noun: str) -> None:
    import pandas as pd

    limit = _limit(args)
    shown = df if limit == 0 else df.head(limit)
    if args.json:
        print(json_safe(shown.to_json(orient="records", date_format="iso", force_ascii=False)))
    elif args.csv:
        sys.stdout.write(_csv_text(shown))  # escaped on a terminal (files.terminal_stdout)
    else:
        with pd.option_context("display.max_rows", None, "display.max_columns", 60,
                               "display.width", 200):
            print(_safe_frame(shown).to_string(index=False, na_rep="") if len(shown)
                  else f"(no {noun})")
    _more(args, len(shown), len(df), noun)


def _safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the control characters of its text cells and column names escaped
    (:func:`terminal_safe`): a run id or tool name cannot move the cursor or recolour the
    terminal, or break the table's lines."""
    import pandas as pd

    def cell(v: Any) -> Any:
        return terminal_safe(v) if isinstance(v, str) else v

    def unsafe(values: Any) -> bool:
        return any(isinstance(v, str) and terminal_safe(v) != v for v in values)

    out = df
    for name in df.columns:  # only columns that hold such characters change (and their type)
        col = df[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            cats = list(col.cat.categories)
            if unsafe(cats):
                safe = [cell(c) for c in cats]
                out = out.copy() if out is df else out
                out[name] = (col.cat.rename_categories(safe) if len(set(safe)) == len(safe)
                             else col.astype(object).map(cell))
        elif (col.dtype == object or isinstance(col.dtype, pd.StringDtype)) and \
                unsafe(col.unique()):
            out = out.copy() if out is df else out
            out[name] = col.astype(object).map(cell)
    if unsafe(df.columns):
        out = out.copy() if out is df else out
        out.columns = [terminal_safe(str(c)) for c in df.columns]
    return out


def _limit(args: argparse.Namespace) -> int:
    limit = args.limit
    if limit is None:
        limit = 0 if (args.json or args.csv) else _DEFAULT_LIMIT
    if limit < 0:
        raise _UsageError("--limit must be >= 0")
    return int(limit)


def _more(args: argparse.Namespace, shown: int, total: int, noun: str) -> None:
    if shown < total:
        print(f"... {total - shown:,} more {noun} (pass --limit 0 for all, or --json / "
              "--csv)", file=sys.stderr if (args.json or args.csv) else sys.stdout)


def _text_table(table: pa.Table) -> str | None:
    """``table`` as ``DataFrame.to_string(index=False, na_rep="")`` prints it, for the column
    types of the runs table (strings, int64, UTC microsecond timestamps), without pandas;
    None for anything else (the caller then prints through pandas).

    As pandas does: each column is right-justified to the wider of its name and its values,
    columns are joined by one space, a numeric column's name gets one leading space, a null
    prints as nothing, and a timestamp column shows the fewest fraction digits (0, 3 or 6)
    that print every shown value exactly.
    """
    import datetime as dt

    import pyarrow as pa

    if not table.num_rows:
        return None  # pandas prints "Empty DataFrame ..."; the commands print "(no runs)"
    cols: list[list[str]] = []
    for name, col in zip(table.column_names, table.columns, strict=True):
        values = col.to_pylist()
        if pa.types.is_string(col.type):
            cells = ["" if v is None else terminal_safe(v) for v in values]
            if any(not c.isprintable() for c in cells):
                return None  # wide or combining characters: pandas aligns those
            head = name
        elif col.type == pa.int64():
            cells, head = ["" if v is None else str(v) for v in values], " " + name
        elif col.type == pa.timestamp("us", tz="UTC"):
            us = col.cast(pa.int64()).to_pylist()
            seen = [u for u in us if u is not None]
            if any(not 1000 <= v.year <= 9999 for v in values if v is not None):
                return None
            digits = (0 if all(u % 1_000_000 == 0 for u in seen)
                      else 3 if all(u % 1000 == 0 for u in seen) else 6)
            epoch = dt.datetime(1970, 1, 1)
            cells = []
            for u in us:
                if u is None:
                    cells.append("")
                    continue
                t = epoch + dt.timedelta(microseconds=u)
                frac = f".{t.microsecond:06d}"[: digits + 1] if digits else ""
                cells.append(f"{t:%Y-%m-%d %H:%M:%S}{frac}+00:00")
            head = name
        else:
            return None
        width = max(len(head), *(len(c) for c in cells))
        cols.append([s.rjust(width) for s in (head, *cells)])
    return "\n".join(" ".join(row) for row in zip(*cols, strict=True))


def _summary_table(log: Any) -> pa.Table:
    """The columns ``replaykit summary`` prints (:func:`_summary_columns`), one row per run,
    as ``log.runs_df()[_summary_columns()]`` has them (same values, same order), computed on
    Arrow: no pandas frame of every run and its header attributes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    stats = log._run_stats()
    meta = log.runs
    keys = ["tenant_id", "run_id"]
    if meta.num_rows:
        # the first header row of each run, joined (outer) to the computed columns
        meta = meta.select([*keys, "parent_run_id", "format", "created_at"])
        meta = meta.append_column("_row", pa.array(range(meta.num_rows), pa.int64()))
        first = meta.group_by(keys, use_threads=False).aggregate([("_row", "min")])
        meta = meta.take(first.column("_row_min")).drop_columns(["_row"])
        meta = meta.rename_columns([*keys, "_parent", "format", "_created"])
        t = stats.join(meta, keys, join_type="full outer", use_threads=False)
        t = t.set_column(t.schema.get_field_index("parent_run_id"), "parent_run_id",
                         pc.coalesce(t.column("parent_run_id"), t.column("_parent")))
        for c in ("events", "turns", "model_calls", "tool_calls", "errors"):
            t = t.set_column(t.schema.get_field_index(c), c, pc.fill_null(t.column(c), 0))
        # runs whose events carry no time (e.g. toh sessions) start at the header's
        # createdAt; their end, and so their duration, stays unknown (last_ts null)
        no_ts = pc.and_(pc.is_null(t.column("first_ts")), pc.is_valid(t.column("_created")))
        t = t.set_column(t.schema.get_field_index("first_ts"), "first_ts",
                         pc.if_else(no_ts, t.column("_created"), t.column("first_ts")))
    else:
        t = stats.append_column("format", pa.array(log._formats_per_run(None), pa.string()))
    t = t.sort_by([(k, "ascending") for k in keys])
    return t.select(_summary_columns()).combine_chunks()


def _emit_summary(log: Any, args: argparse.Namespace) -> None:
    """The runs table of ``replaykit summary``: printed from Arrow for the text table of the
    default columns, through ``runs_df`` (pandas) for --json, --csv and --all-columns."""
    if not (args.json or args.csv or args.all_columns):
        limit = _limit(args)
        runs = _summary_table(log)
        shown = runs if limit == 0 else runs.slice(0, limit)
        text = _text_table(shown) if len(shown) else "(no runs)"
        if text is not None:
            print(text)
            _more(args, len(shown), len(runs), "runs")
            return
    df = log.runs_df()
    if not args.all_columns:
        df = df[[c for c in _summary_columns() if c in df.columns]]
    _emit_table(df, args, noun="runs")


def _info(args: argparse.Namespace, line: str) -> None:
    """The human summary line: stdout for the text table, stderr beside --json/--csv."""
    print(terminal_safe(line, one_line=False),
          file=sys.stderr if (getattr(args, "json", False) or getattr(args, "csv", False))
          else sys.stdout)


def _progress(args: argparse.Namespace) -> bool | None:
    # None: a bar only on a terminal or in a notebook, never frames into a log file
    return False if getattr(args, "no_progress", False) else None


def _replace_path(tmp: Path, out: Path) -> None:
    """Move the finished ``tmp`` (file or folder) to ``out``; an existing ``out`` (checked
    by :func:`check_output`) is moved aside first and removed once the new one is in place."""
    import os
    import shutil

    if out.is_dir() and not out.is_symlink():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def _emit_mapping(d: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json_safe(json.dumps(d, indent=2, default=str, ensure_ascii=False)))
    elif args.csv:
        import pandas as pd

        sys.stdout.write(_csv_text(pd.DataFrame([d])))
    else:
        width = max(map(len, d)) if d else 0
        for k, v in d.items():
            print(f"{terminal_safe(k):<{width}}  {'' if v is None else terminal_safe(str(v))}")


# ---------------------------------------------------------------------------- entry point
def _say(name: str, text: str) -> None:
    """A command's error: ``replaykit NAME: text`` on stderr, control characters escaped."""
    print(f"replaykit {name}: {terminal_safe(str(text), one_line=False)}", file=sys.stderr)
