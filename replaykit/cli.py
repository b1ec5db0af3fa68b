"""The ``replaykit`` command line.

Usage::

    replaykit summary PATH... [--format F] [--owner ID] [--tenant ID]
                              [--errors raise|quarantine] [--quarantine-out FILE]
                              [--json | --csv] [--limit N] [--no-progress] [--all-columns]
    replaykit generate cohorts|pleach|toh|isplay OUT [--runs N] [--events N] [--seed S]
                              [--overwrite]
    replaykit branch create --from RUN --checkpoint CP --name NAME -o BRANCH.json
                            [--log PATH... --owner ID --tenant ID] [--parent ID]
                            [--model-policy P] [--tool-policy P]
    replaykit branch intervene BRANCH.json --kind K --target-... VALUE --patch FILE
                               [--description TEXT] [--id ID]
    replaykit replay LOG... --branch BRANCH.json [--owner ID] [--tenant ID]
                            [--model-policy P] [--tool-policy P] [--fixtures FILE]
                            -o RESULT_DIR
    replaykit replay get|events|diff|metrics|effects|requirements RESULT_DIR [--json|--csv]
    replaykit diff RESULT_DIR
    replaykit verify-chain PATH... [--format F] [--tenant ID] [--heads FILE] [--digest HEX]
                           [--json]
    replaykit report rca|cohort ...

Exit codes (every command): 0 success; 1 the input could not be loaded or the answer is
empty (a ``--tenant`` that matches nothing, a chain check that verified nothing, a replay
that failed); 2 bad usage (a file given to an option that is a folder, FIFO, device, too large
or too deeply nested; an output that exists, is a symbolic link or is an input); 3 the replay
paused for a fixture (``replaykit replay requirements RESULT_DIR`` lists what it needs);
130 interrupted (Ctrl-C). ``verify-chain`` also exits 1 when a chain is broken; ``report rca``
4 when the replay failed (the report is written).

Two tenant options, as in Python's ``read_events(owner=, tenant_id=)``: ``--owner ID`` names
the tenant of logs that record none (toh, isplay, inspect, otel); ``--tenant ID`` keeps only
that tenant's rows (the rows it leaves out are counted on the summary line). ``--tenant``
alone still names the owner of such logs, with a note to pass ``--owner``.

Paths: a file named on the command line must be a log; a folder, or a glob (whose folders are
walked), may hold other files: those of no known format are skipped and counted on the
summary line (``--errors quarantine --quarantine-out FILE`` says why for each).

Every file the commands write is checked and written atomically (see
:mod:`replaykit._cli_files`); text printed to a terminal has its control characters escaped.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._cli_files import (
    MODEL_POLICY_HELP,
    TOOL_POLICY_HELP,
    CliFileError,
    CliHelpFormatter,
    CliParser,
    TerminalSafeStream,
    atomic_write,
    atomic_write_text,
    check_input_path,
    check_output,
    json_safe,
    load_json_option,
    parse_json_text,
    policy_help,
    terminal_safe,
)
from ._cli_messages import cli_error_text
from .errors import LoadError, ReplayKitError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["EXIT_EMPTY", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_PAUSED", "EXIT_USAGE",
           "cli_error_text", "main", "version_text"]

#: Exit codes of every ``replaykit`` command.
EXIT_OK, EXIT_EMPTY, EXIT_USAGE, EXIT_PAUSED = 0, 1, 2, 3
#: Exit code after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def version_text() -> str:
    """What ``replaykit --version`` prints: one line per component: replaykit's version, then
    the native core's (its version, whether it is on, the CPU features it uses) or why the
    reference path is in use. Imports nothing heavy (no pyarrow, no pandas).

    >>> version_text().startswith("replaykit ")
    True
    """
    from . import __version__, _native  # _native loads only the small extension module

    return f"replaykit {__version__}, {_native.describe()}"


def _summary_columns() -> list[str]:
    """The runs table's computed columns, with the format after the run's identity."""
    from .eventlog import RUN_STAT_COLUMNS

    return [*RUN_STAT_COLUMNS[:3], "format", *RUN_STAT_COLUMNS[3:]]



#: every --format value: the loaders' formats, a Parquet dataset, or sniffing per file.
_FORMATS = ("auto", "toh", "pleach", "isplay", "inspect", "otel", "claude_code", "codex",
            "langsmith", "langfuse", "phoenix", "parquet")
_RESULT_VIEWS = ("get", "events", "diff", "metrics", "effects", "requirements")
_DEFAULT_LIMIT = 50
#: commands whose parse needs no branch/replay choices (see _parser).
_LIGHT_COMMANDS = ("summary", "generate", "diff")


class _UsageError(Exception):
    """A command-line mistake: exit 2 with the message."""


class _EmptyAnswer(Exception):
    """The command ran but found nothing to answer with: exit 1 with the message."""


class _Formatter(CliHelpFormatter):
    """Help that names an option's default when it has a meaningful one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
                and "default" not in text):
            text += " (default: %(default)s)"
        return text


def _help_formatter(prog: str) -> argparse.HelpFormatter:
    return _Formatter(prog, max_help_position=32)


# ---------------------------------------------------------------------------- parser
def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; for a ``command`` that parses none of the branch/replay options (summary,
    generate, diff, or none: ``--version``, ``--help``) their choices are left empty rather
    than importing the branch package."""
    if command is None or command in _LIGHT_COMMANDS:  # --version, --help: nothing heavy
        INTERVENTION_KINDS: tuple[str, ...] = ()
        MODEL_POLICIES: tuple[str, ...] = ()
        TOOL_POLICIES: tuple[str, ...] = ()
    else:
        from .branch.vocab import INTERVENTION_KINDS, MODEL_POLICIES, TOOL_POLICIES

    parser = CliParser(
        prog="replaykit",
        description="Analyse recorded AI-agent event logs: load, summarise, branch, replay, "
        "verify and report.",
        epilog="Exit codes: 0 success, 1 unreadable input or an empty answer, 2 bad usage, "
        "3 replay paused for a fixture, 130 interrupted (Ctrl-C). Run 'replaykit COMMAND "
        "--help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # ---- summary
    p = sub.add_parser(
        "summary", help="load logs and print one row per run", formatter_class=_help_formatter,
        description="Load event logs (files, folders, globs or Parquet datasets) and print "
        "the runs table.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="log file, folder or glob")
    _load_options(p)
    p.add_argument("--errors", default="raise", choices=["raise", "quarantine"],
                   help="stop at the first bad row or file (raise), or set bad rows and "
                   "unknown or unreadable files aside and continue (quarantine)")
    p.add_argument("--quarantine-out", metavar="FILE", default=None,
                   help="write the quarantined rows and skipped files to FILE (.parquet or "
                   ".csv; never an input or a symbolic link)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --quarantine-out FILE")
    _table_options(p)
    p.add_argument("--all-columns", action="store_true",
                   help="show every runs_df column, header attributes included")

    # ---- generate
    g = sub.add_parser(
        "generate", help="write a generated sample log (cohorts, pleach, toh, isplay)",
        formatter_class=_help_formatter,
        description="Write a deterministic generated log, e.g. two semesters of runs for "
        "'replaykit report cohort'.")
    g.add_argument("kind", choices=["cohorts", "pleach", "toh", "isplay"],
                   help="what to generate: cohorts = a folder with events.parquet and "
                   "cache.parquet; pleach = one JSONL file; toh = a session.jsonl; isplay = a "
                   "folder of run exports")
    g.add_argument("out", metavar="OUT", help="folder (cohorts, isplay) or file to write")
    g.add_argument("--runs", type=int, default=None,
                   help="number of runs (default: 200 cohorts, 10 pleach, 4 isplay)")
    g.add_argument("--events", type=int, default=None,
                   help="about how many events (pleach, toh) or events per run (isplay)")
    g.add_argument("--seed", type=int, default=0, help="random seed (same seed, same bytes)")
    g.add_argument("--drift", default="tool-errors",
                   choices=["tool-errors", "none"],
                   help="cohorts: the drift planted in the last semester, a known truth for "
                   "'report cohort' to find (default tool-errors: tool results fail 10 points "
                   "more often; none: same parameters, "
                   "so nothing should be found)")
    g.add_argument("--overwrite", action="store_true",
                   help="replace an existing OUT (never a symbolic link)")
    g.add_argument("--no-progress", action="store_true",
                   help="do not show the progress line (it only shows on a terminal)")

    # ---- branch
    b = sub.add_parser("branch", help="create a branch file or add an intervention to one",
                       description="Branch files (isplay.branch/v1) name a base run, a "
                       "checkpoint and the interventions 'replaykit replay' applies.")
    bsub = b.add_subparsers(dest="branch_command", required=True, metavar="ACTION")
    bc = bsub.add_parser("create", help="write a new branch file from a checkpoint of a run",
                         formatter_class=_help_formatter)
    bc.add_argument("--from", dest="run_id", required=True, metavar="RUN",
                    help="id of the base run")
    bc.add_argument("--checkpoint", required=True, metavar="CP",
                    help="checkpoint id, event id, or (with --log) a seq; pick one before the "
                    "suspected cause")
    bc.add_argument("--name", required=True, help="a short name for the branch")
    bc.add_argument("-o", "--output", required=True, metavar="BRANCH.json",
                    help="branch file to write")
    bc.add_argument("--log", nargs="+", metavar="PATH", default=None,
                    help="check that RUN and CP exist in these logs before writing")
    bc.add_argument("--tenant", default=None, metavar="ID",
                    help="tenant of the base run (with --log; never guessed when the logs "
                    "hold several)")
    bc.add_argument("--owner", default=None, metavar="ID",
                    help="owner of --log files that record no tenant (toh, isplay, inspect, "
                    "otel)")
    bc.add_argument("--format", default="auto", choices=_FORMATS,
                    help="format of the --log files (auto: sniff each file)")
    bc.add_argument("--parent", default=None, metavar="BRANCH_ID", help="parent branch id")
    bc.add_argument("--branch-id", default=None,
                    help="branch id (default: derived from run, checkpoint, name and parent)")
    bc.add_argument("--project", default=None, metavar="ID", help="project id to record")
    bc.add_argument("--model-policy", default=None, choices=MODEL_POLICIES,
                    help="default model policy of replays of this branch; "
                    + "; ".join(f"{k}: {v}" for k, v in MODEL_POLICY_HELP.items()))
    bc.add_argument("--tool-policy", default=None, choices=TOOL_POLICIES,
                    help="default tool policy of replays of this branch; "
                    + "; ".join(f"{k}: {v}" for k, v in TOOL_POLICY_HELP.items()))
    bc.add_argument("--overwrite", action="store_true", help="replace an existing file")
    bi = bsub.add_parser("intervene", help="add one intervention to a branch file",
                         formatter_class=_help_formatter,
                         description="Add one targeted intervention to a branch file (in "
                         "place, or to -o FILE). Give at least one --target-... selector.")
    bi.add_argument("branch", metavar="BRANCH.json", help="branch file to extend")
    bi.add_argument("--kind", required=True, choices=INTERVENTION_KINDS,
                    help="what the patch does")
    for flag, what in (
        ("--target-ref", "events with this ref id (a call or tool-call id)"),
        ("--target", "shortcut for --target-ref"),
        ("--target-event", "one event by id (or by seq, a number, on formats without ids)"),
        ("--target-type", "events of this type or kind"),
        ("--target-tool", "tool calls of this tool"),
        ("--target-model-call", "the request/response events of this model call id"),
        ("--target-artifact", "events referencing this artifact id"),
        ("--target-context", "events referencing this context id"),
        ("--target-context-path", "events referencing this context path"),
        ("--json-pointer", "only events whose payload has this JSON pointer, e.g. /prompt"),
    ):
        bi.add_argument(flag, default=None, metavar="VALUE", help=what)
    patch = bi.add_mutually_exclusive_group(required=True)
    patch.add_argument("--patch", metavar="FILE", default=None,
                       help="JSON file with the patch (operations, or toolName/args)")
    patch.add_argument("--patch-json", metavar="JSON", default=None,
                       help="the patch as JSON text instead of a file")
    bi.add_argument("--description", default="", help="why this intervention")
    bi.add_argument("--id", dest="intervention_id", default=None,
                    help="intervention id (default: iv-N)")
    bi.add_argument("-o", "--output", default=None, metavar="FILE",
                    help="write the extended branch here instead of in place")
    bi.add_argument("--overwrite", action="store_true",
                    help="replace an existing -o FILE")

    # ---- replay (the inspection actions are dispatched in main, see _replay_view_parser)
    r = sub.add_parser(
        "replay", help="replay a branch into a result folder; or inspect one (get, events, "
        "diff, metrics, effects, requirements)", formatter_class=_help_formatter,
        description="Replay a branch of a recorded run under explicit policies and write the "
        "result folder (events.parquet, manifest.json, metrics.json, requirements.json, "
        "effects.json). Inspect a result with: replaykit replay {get,events,diff,metrics,"
        "effects,requirements} RESULT_DIR.",
        epilog="Exit codes: 0 finished, 3 paused for a fixture (see 'replaykit replay "
        "requirements RESULT_DIR', then rerun with --fixtures), 1 failed or unreadable input, "
        "2 bad usage, 130 interrupted.")
    r.add_argument("log", nargs="+", metavar="LOG", help="log file(s), folder(s) or glob(s) "
                   "holding the base run")
    r.add_argument("--branch", required=True, metavar="BRANCH.json", help="branch file")
    r.add_argument("--tenant", default=None, metavar="ID",
                   help="tenant of the base run (never guessed when the logs hold several)")
    r.add_argument("--owner", default=None, metavar="ID",
                   help="owner of logs that record no tenant (toh, isplay, inspect, otel)")
    r.add_argument("--format", default="auto", choices=_FORMATS,
                   help="format of the log files (auto: sniff each file)")
    r.add_argument("--model-policy", default=None, choices=MODEL_POLICIES,
                   help=policy_help("model calls", MODEL_POLICY_HELP, "recorded-only"))
    r.add_argument("--tool-policy", default=None, choices=TOOL_POLICIES,
                   help=policy_help("tool calls that differ from the recording",
                                     TOOL_POLICY_HELP, "pause-for-fixture"))
    r.add_argument("--fixtures", nargs="+", default=None, metavar="FILE",
                   help="fixture file(s) (isplay.fixtures/v1) serving divergent tool calls")
    r.add_argument("-o", "--output", required=True, metavar="RESULT_DIR",
                   help="folder to write the result into")
    r.add_argument("--overwrite", action="store_true",
                   help="replace the result in a folder that holds one")
    r.add_argument("--no-progress", action="store_true", help="do not show progress bars")

    # ---- diff shortcut
    d = sub.add_parser("diff", help="the event diff of a replay result (= replay diff)",
                       formatter_class=_help_formatter)
    _view_options(d)

    sub.add_parser("verify-chain", add_help=False,
                   help="verify the per-run hash chains (exit 0 intact, 1 broken or nothing "
                   "verified, 2 usage)")
    sub.add_parser("report", add_help=False,
                   help="write a self-contained HTML report (rca | cohort)")
    return parser


def _load_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", default="auto", choices=_FORMATS,
                   help="input format: auto sniffs each file (and reads Parquet datasets "
                   "written by EventLog.to_parquet); parquet reads such a dataset")
    p.add_argument("--owner", default=None, metavar="ID",
                   help="the tenant of logs that record none (toh, isplay, inspect, otel): "
                   "required for them, never guessed; logs that carry their own tenant "
                   "(pleach, Parquet datasets) keep theirs")
    p.add_argument("--tenant", default=None, metavar="ID",
                   help="keep only this tenant's rows (a filter, in every format; the rows it "
                   "leaves out are counted). Alone, it also names the owner of logs that "
                   "record none (pass --owner for that)")
    p.add_argument("--no-progress", action="store_true",
                   help="do not show progress bars (they only show on a terminal)")


def _table_options(p: argparse.ArgumentParser) -> None:
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true",
                     help="print the rows as a JSON array of objects (the summary line goes "
                     "to stderr)")
    out.add_argument("--csv", action="store_true",
                     help="print the rows as CSV (the summary line goes to stderr)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help=f"print at most N rows (0: all; default {_DEFAULT_LIMIT} for the text "
                   "table, all for --json/--csv)")


def _view_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("result", metavar="RESULT_DIR", help="folder written by 'replaykit replay'")
    _table_options(p)


def _replay_view_parser(view: str) -> argparse.ArgumentParser:
    what = {
        "get": "status, policies, branch and headline metrics of a replay result",
        "events": "the replayed events",
        "diff": "base and replay events aligned by signature (same/changed/added/removed)",
        "metrics": "every replay metric (first divergence, tool-sequence distance, ...)",
        "effects": "how each tool call after the checkpoint got its output",
        "requirements": "fixture requirements of a paused replay",
    }[view]
    p = CliParser(prog=f"replaykit replay {view}", description=f"Print {what}.",
                  formatter_class=_help_formatter)
    _view_options(p)
    return p


# ---------------------------------------------------------------------------- output
def _emit_table(df: pd.DataFrame, args: argparse.Namespace, *, noun: str) -> None:
    import pandas as pd

    limit = _limit(args)
    shown = df if limit == 0 else df.head(limit)
    if args.json:
        print(json_safe(shown.to_json(orient="records", date_format="iso", force_ascii=False)))
    elif args.csv:
        sys.stdout.write(shown.to_csv(index=False))  # escaped on a terminal (console_main)
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
    print(line, file=sys.stderr if (getattr(args, "json", False) or getattr(args, "csv", False))
          else sys.stdout)


def _progress(args: argparse.Namespace) -> bool | None:
    # None: a bar only on a terminal or in a notebook, never frames into a log file
    return False if getattr(args, "no_progress", False) else None


# ---------------------------------------------------------------------------- loading
def _tenant_hint(wanted: str, present: Sequence[str]) -> str:
    listed = ", ".join(present) if present else "none"
    hint = f"tenants present: {listed}"
    folded = [t for t in present if t.casefold() == wanted.casefold()]
    near = folded or difflib.get_close_matches(wanted, list(present), n=1, cutoff=0.6)
    if near:
        hint += f"; did you mean --tenant {near[0]}?"
    return hint


def _expand_inputs(paths: Sequence[str], errors: str = "raise"
                   ) -> tuple[list[str | Path], list[dict[str, Any]]]:
    """Paths to read, plus one quarantine row per file found in a folder or by a glob that is
    of no known format or cannot be read, which is skipped (and counted), whatever ``errors``.

    One rule for every way of naming inputs: a file named on the command line must be a log
    (the loaders say what is wrong with it, or quarantine it); a folder is walked, and so is
    every folder a glob matches; a Parquet dataset (``EventLog.to_parquet``) is read whole.
    """
    import glob as _glob

    import pyarrow as pa

    from .errors import FormatDetectionError
    from .io import FORMATS, detect_format, is_dataset

    del errors  # walked files of no known format are skipped under both error modes
    keep: list[str | Path] = []
    skipped: list[dict[str, Any]] = []
    seen: set[Path] = set()

    def add(f: Path | str) -> None:
        key = Path(f).resolve()
        if key not in seen:
            seen.add(key)
            keep.append(f)

    for item in paths:
        check_input_path(item)
        p = Path(item)
        if is_dataset(p) or p.is_file():
            add(item)
            continue
        if p.is_dir():
            roots, files = [p], []
        else:
            matches = sorted(Path(m) for m in _glob.glob(str(item), recursive=True))
            if not matches:
                raise FileNotFoundError(f"{item}: no such file, directory or glob match")
            roots = [m for m in matches if m.is_dir()]
            files = [m for m in matches if m.is_file()]
        for root in roots:
            if is_dataset(root):
                add(root)
                continue
            inner = sorted(d for d in root.rglob("*") if d.is_dir() and is_dataset(d))
            inner = [d for d in inner if not any(o in d.parents for o in inner)]  # top-most
            for d in inner:
                add(d)
            files += sorted(f for f in root.rglob("*") if f.is_file()
                            and not any(o in f.parents for o in inner))
        before = (len(keep), len(skipped))
        for f in files:
            if Path(f).resolve() in seen:
                continue
            if any(getattr(m, "is_side_file", lambda _p: False)(f) for m in FORMATS.values()):
                continue  # read by its format's loader with the log beside it
            try:
                detect_format(f)
            except FormatDetectionError as exc:
                skipped.append({**exc.as_record(), "raw": None})
                continue
            except (OSError, ValueError, pa.ArrowException) as exc:  # a file sniffing cannot open
                why = getattr(exc, "strerror", None) or str(exc)
                err = LoadError(source=str(f), line=None, reason="unreadable",
                                detail=f"cannot be read ({why})",
                                fix="Check the file's permissions and that it is complete.")
                skipped.append({**err.as_record(), "raw": None})
                continue
            add(f)
        if (len(keep), len(skipped)) == before and not files:
            raise FileNotFoundError(f"{item}: holds no files")
    return keep, skipped


#: Python warnings of the loaders that the command line says in its own words (or counts).
_DROPPED_ALL = "dropped all"
_NAMED_OWNER = "naming the owner of"


def _read(paths: Sequence[str | Path], fmt: str, tenant: str | None, *,
          owner: str | None = None, errors: str = "raise", progress: bool | None = None,
          dropped: list[int] | None = None) -> Any:
    """Read ``paths``; ``owner`` names the tenant of logs that record none, ``tenant``
    filters. The rows the filter leaves out are added to ``dropped`` (one number)."""
    import re

    from .eventlog import read_parquet
    from .io import read_events

    if fmt == "parquet":
        logs = [read_parquet(p, tenant_id=tenant) for p in paths]
        from .eventlog import concat

        return logs[0] if len(logs) == 1 else concat(logs)
    one = paths[0] if len(paths) == 1 else list(paths)
    kwargs: dict[str, Any] = {"errors": errors, "progress": progress}
    if owner is not None:
        kwargs["owner"] = owner
    if tenant is not None:
        kwargs["tenant_id"] = tenant
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = read_events(one, format=fmt, **kwargs)
    n_dropped = 0
    counts = log.extras.get("pleach_counts")
    if tenant is not None and counts is not None and "filtered_out" in counts.column_names:
        n_dropped += sum(v or 0 for v in counts.column("filtered_out").to_pylist())
    for w in caught:
        text = str(w.message)
        if _DROPPED_ALL in text:
            m = re.search(r"dropped all ([\d,]+) rows of the \w+ logs owned by", text)
            if m:  # a whole untenanted log of another owner (pleach files are counted above)
                n_dropped += int(m.group(1).replace(",", ""))
            continue
        if _NAMED_OWNER in text and tenant is not None:
            m = re.search(r"owner of (\w+) logs", text)
            kind = m.group(1) if m else "these"
            _note(f"--tenant {tenant} named the owner of the {kind} logs, which record no "
                  f"tenant; pass --owner {tenant} for that (--tenant is a filter)")
            continue
        _note(cli_error_text(Exception(text)), kind="warning")
    if dropped is not None:
        dropped.append(n_dropped)
    return log


def _note(text: str, *, kind: str = "note") -> None:
    """One line on stderr: ``replaykit: warning: ...`` (never Python's file:line form)."""
    print(f"replaykit: {kind}: {terminal_safe(text)}", file=sys.stderr)


def _load(args: argparse.Namespace, paths: Sequence[str], *, errors: str = "raise"
          ) -> tuple[Any, list[dict[str, Any]]]:
    """Load ``paths`` the command line's way; a --tenant matching nothing is an empty answer.
    Sets ``args.dropped_rows``: the rows the --tenant filter left out."""
    keep, skipped = _expand_inputs(paths, errors)
    if not keep:
        empty = _EmptyAnswer(f"none of the {len(skipped)} input file(s) is a log replaykit "
                             "reads (--quarantine-out FILE says why)")
        empty.skipped = skipped  # type: ignore[attr-defined]
        raise empty
    owner = getattr(args, "owner", None)
    dropped: list[int] = []
    log = _read(keep, args.format, args.tenant, owner=owner, errors=errors,
                progress=_progress(args), dropped=dropped)
    args.dropped_rows = sum(dropped)
    if args.tenant is not None and len(log) == 0 and log.num_runs == 0:
        everything = _read(keep, args.format, None, owner=owner,
                           errors="quarantine", progress=False) \
            if owner is not None or _all_tenanted(keep) else None
        present = everything.tenants if everything is not None else []
        raise _EmptyAnswer(f"no events of tenant {args.tenant!r} in the input; "
                           + _tenant_hint(args.tenant, present))
    return log, skipped


def _input_files(paths: Sequence[str]) -> list[Path]:
    """The existing files and folders ``paths`` name (globs expanded): what a command's
    output may not be."""
    import glob as _glob

    out: list[Path] = []
    for item in paths:
        p = Path(item)
        out.extend([p] if p.exists() else [Path(m) for m in _glob.glob(str(item),
                                                                       recursive=True)])
    found: list[Path] = []
    for p in out:
        found.append(p)
        if p.is_dir():
            found.extend(f for f in p.rglob("*") if f.is_file())
    return found


def _all_tenanted(paths: Sequence[str | Path]) -> bool:
    """True when every input carries its own tenants (so it can be read without --tenant)."""
    from .io import _PATTERNS as patterns
    from .io import UNTENANTED, detect_format, is_dataset
    from .io._common import expand_paths

    for item in paths:
        if is_dataset(item):
            continue
        for f in expand_paths(item, patterns=patterns):
            try:
                if detect_format(f) in UNTENANTED:
                    return False
            except (ReplayKitError, OSError):
                return False
    return True


def _write_quarantine(table: Any, out: str) -> None:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    p = Path(out)
    if p.suffix == ".parquet":
        atomic_write(p, lambda tmp: pq.write_table(table, tmp))
    elif p.suffix == ".csv":
        atomic_write(p, lambda tmp: pcsv.write_csv(table, tmp))
    else:
        raise _UsageError(f"--quarantine-out {out}: name a .parquet or a .csv file")


# ---------------------------------------------------------------------------- commands
def _summary(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from .schema import QUARANTINE_SCHEMA, quarantine_table

    if args.quarantine_out and not args.quarantine_out.endswith((".parquet", ".csv")):
        raise _UsageError(f"--quarantine-out {args.quarantine_out}: name a .parquet or a "
                          ".csv file")
    if args.quarantine_out:  # before anything is read: never an input, a link, or a file
        check_output(args.quarantine_out, "--quarantine-out", overwrite=args.overwrite,
                     inputs=_input_files(args.paths))
    try:
        log, skipped = _load(args, args.paths, errors=args.errors)
    except _EmptyAnswer as exc:
        if args.quarantine_out and getattr(exc, "skipped", None):
            _write_quarantine(quarantine_table(exc.skipped), args.quarantine_out)  # type: ignore[attr-defined]
        raise
    quarantine = log.quarantine
    if skipped:
        quarantine = pa.concat_tables([quarantine.cast(QUARANTINE_SCHEMA),
                                       quarantine_table(skipped).cast(QUARANTINE_SCHEMA)])
    if args.quarantine_out:
        _write_quarantine(quarantine, args.quarantine_out)
    _emit_summary(log, args)
    s = log.summary()
    line = (
        f"{s['events']:,} events in {s['runs']:,} runs of {s['tenants']} tenant(s); "
        f"formats: {', '.join(s['formats']) or '-'}"
    )
    dropped = getattr(args, "dropped_rows", 0)
    if dropped:
        line += f"; {dropped:,} row(s) of other tenants left out by --tenant {args.tenant}"
    if s["quarantined"] or skipped:
        where = (f"written to {args.quarantine_out}" if args.quarantine_out
                 else "pass --errors quarantine --quarantine-out FILE to keep them"
                 if args.errors == "raise" else "pass --quarantine-out FILE to keep them")
        line += (f"; {s['quarantined']} row(s) quarantined, {len(skipped)} file(s) skipped "
                 f"({where})")
    _info(args, ("" if (args.json or args.csv) else "\n") + line)
    return EXIT_OK


class _Ticker:
    """A one-line "still working" indicator on a terminal's stderr for commands whose work
    reports no steps (``generate``): what is being written and the seconds spent, redrawn
    twice a second, erased at the end. Nothing when stderr is not a terminal or with
    ``--no-progress``."""

    def __init__(self, text: str, enabled: bool | None) -> None:
        import threading

        self.text = text
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        import time

        start = time.monotonic()
        while True:
            sys.stderr.write(f"\r{self.text} {time.monotonic() - start:.1f} s ")
            sys.stderr.flush()
            if self._stop.wait(0.5):
                break
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()

    def __enter__(self) -> _Ticker:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._stop.set()
            self._thread.join()


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


def _generate(args: argparse.Namespace) -> int:
    import os
    import shutil
    import tempfile

    from . import datasets

    out = Path(args.out)
    if out.is_symlink():
        raise CliFileError(f"OUT {out}: is a symbolic link; replaykit never writes through "
                           "one (name the file or folder itself)")
    if out.exists() and not args.overwrite:
        raise CliFileError(f"OUT {out}: exists; pass --overwrite to replace it")
    folder = args.kind in ("cohorts", "isplay") and out.suffix.lower() not in (".jsonl",
                                                                                 ".ndjson")
    out.parent.mkdir(parents=True, exist_ok=True)
    # written beside OUT under a temporary name, renamed into place once complete: an
    # interrupted or failed generate leaves OUT as it was
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 would be the generated folder's mode
    target = tmp if folder else tmp / out.name
    try:
        with _Ticker(f"replaykit generate {args.kind}: writing {out}",
                     False if args.no_progress else None):
            if args.kind == "cohorts":
                gen = datasets.generate_cohorts(target, runs=args.runs or 200, seed=args.seed,
                                                drift=args.drift)
                done = (f"({len(gen.log):,} events in {gen.log.num_runs:,} runs, semesters "
                        f"2025-fall and 2026-spring) and {out / 'cache.parquet'}")
                shown = out / "events.parquet"
            elif args.kind == "pleach":
                datasets.generate_pleach(target, events=args.events or 2_000,
                                         runs=args.runs or 10, seed=args.seed)
                done, shown = "", out
            elif args.kind == "toh":
                datasets.generate_toh(target, events=args.events or 500, seed=args.seed)
                done, shown = "(toh logs record no tenant: read it with --owner ID)", out
            else:
                if datasets.generate_isplay is None:  # pragma: no cover - depends on the tree
                    raise _UsageError("this replaykit has no isplay generator")
                datasets.generate_isplay(target, runs=args.runs or 4,
                                         events_per_run=args.events or 40, seed=args.seed)
                done, shown = "(isplay logs record no tenant: read it with --owner ID)", out
        _replace_path(target, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {shown}" + (f" {done}" if done else ""))
    if args.kind == "cohorts":
        print(f"planted drift: {args.drift} ({datasets.DRIFTS[args.drift][2]})")
    return EXIT_OK


def _pick_tenant(log: Any, tenant: str | None, run_id: str) -> str:
    if tenant is not None:
        return tenant
    owners = sorted(set(log.filter(run_ids=run_id).tenants)) if len(log) else []
    if len(owners) == 1:
        return str(owners[0])
    if not owners:
        raise _EmptyAnswer(f"no run {run_id!r} in the logs; runs present: "
                           + ", ".join(log.run_ids[:20]))
    raise _UsageError(f"run {run_id!r} exists for several tenants ({', '.join(owners)}): "
                      "pass --tenant ID")


def _branch_create(args: argparse.Namespace) -> int:
    from .branch.branch import _default_id
    from .branch.types import IsplayBranch, ReplayPolicy

    out = check_output(args.output, "-o", overwrite=args.overwrite,
                       inputs=_input_files(args.log or []))
    checkpoint: str | int = args.checkpoint
    if args.log:
        from .branch import Branch
        from .errors import ReplayError

        log, _ = _load(args, args.log)
        tenant = _pick_tenant(log, args.tenant, args.run_id)
        if not len(log.filter(tenant_id=tenant, run_ids=args.run_id)):
            raise _EmptyAnswer(f"tenant {tenant!r} has no run {args.run_id!r} in the logs; "
                               "runs present: " + ", ".join(log.filter(tenant_id=tenant)
                                                            .run_ids[:20]))
        probe = Branch(base=log, run_id=args.run_id, tenant_id=tenant,
                       checkpoint=checkpoint, name=args.name)
        try:
            seq = probe.checkpoint_seq()
        except ReplayError:
            if not args.checkpoint.isdigit():
                raise
            checkpoint = int(args.checkpoint)
            seq = Branch(base=log, run_id=args.run_id, tenant_id=tenant,
                         checkpoint=checkpoint, name=args.name).checkpoint_seq()
        where = f" (seq {seq})"
    else:
        where = " (not checked: pass --log to check run and checkpoint)"
    policy = None
    if args.model_policy or args.tool_policy:
        policy = ReplayPolicy(model=args.model_policy or "recorded-only",
                              tool=args.tool_policy or "pause-for-fixture")
    branch_id = args.branch_id or _default_id(args.run_id, checkpoint, args.name, args.parent)
    ib = IsplayBranch(branch_id=branch_id, base_run_id=args.run_id,
                      checkpoint_id=str(checkpoint), name=args.name,
                      parent_branch_id=args.parent, project_id=args.project,
                      replay_policy=policy,
                      extra={"checkpointSeq": checkpoint} if isinstance(checkpoint, int) else {})
    IsplayBranch.from_dict(ib.to_dict(), source=str(out))  # the file we write must read back
    atomic_write_text(out, json.dumps(ib.to_dict(), indent=2) + "\n")
    print(f"wrote {out}: branch {branch_id} of run {args.run_id} from checkpoint "
          f"{checkpoint}{where}, no interventions yet (add them with 'replaykit branch "
          f"intervene {out} ...')")
    return EXIT_OK


_SELECTOR_FLAGS = ("target_ref", "target", "target_event", "target_type", "target_tool",
                   "target_model_call", "target_artifact", "target_context",
                   "target_context_path", "json_pointer")


def _branch_intervene(args: argparse.Namespace) -> int:
    from .branch.types import IsplayBranch

    ib = _branch_file(args.branch, "BRANCH.json")
    selector: dict[str, Any] = {}
    for key in _SELECTOR_FLAGS:
        value = getattr(args, key)
        if value is None:
            continue
        if key == "target_event" and value.isdigit() and not _has_event_ids(ib):
            value = int(value)
        selector[key] = value
    if not selector:
        raise _UsageError("name what to change with at least one of --target-ref, "
                          "--target-event, --target-type, --target-tool, --target-model-call, "
                          "--target-artifact, --target-context, --target-context-path, "
                          "--json-pointer")
    if args.patch is not None:
        patch = load_json_option(args.patch, "--patch")
    else:
        patch = parse_json_text(args.patch_json, "--patch-json")
    if not isinstance(patch, dict):
        raise _UsageError("the patch must be a JSON object (operations, or toolName/args)")
    doc = ib.to_dict()
    ids = {iv.intervention_id for iv in ib.interventions}
    iid = args.intervention_id or next(f"iv-{k}" for k in range(len(ids) + 1, len(ids) + 999)
                                       if f"iv-{k}" not in ids)
    doc["interventions"].append({"interventionId": iid, "kind": args.kind,
                                 "selector": selector, "patch": patch,
                                 "description": args.description})
    if args.output is None:  # in place: the branch file is this command's target
        out = Path(args.branch)
        if out.is_symlink():
            raise CliFileError(f"{out}: is a symbolic link; replaykit never writes through "
                               "one (pass -o FILE)")
    else:
        out = check_output(args.output, "-o", overwrite=args.overwrite,
                           inputs=[args.branch, *([args.patch] if args.patch else [])])
    checked = IsplayBranch.from_dict(doc, source=str(out))
    atomic_write_text(out, json.dumps(checked.to_dict(), indent=2) + "\n")
    print(f"wrote {out}: intervention {iid} ({args.kind}) added; the branch has "
          f"{len(checked.interventions)} intervention(s)")
    return EXIT_OK


def _branch_file(path: str, option: str) -> Any:
    """The branch in the file ``path`` named by ``option``: a regular JSON file of bounded size
    holding an object (else a one-line usage error), validated by ``IsplayBranch``."""
    from .branch.types import IsplayBranch

    doc = load_json_option(path, option)
    if not isinstance(doc, dict):
        raise CliFileError(f"{option} {path}: not a branch file (a JSON object with "
                           "\"format\": \"isplay.branch/v1\")")
    return IsplayBranch.from_dict(doc, source=str(path))


def _has_event_ids(ib: Any) -> bool:
    # a seq checkpoint marks a log without event ids (a number then names a seq)
    return "checkpointSeq" not in ib.extra


def _replay(args: argparse.Namespace) -> int:
    from .branch import Branch, FixtureRegistry, replay

    out = Path(args.output)
    if out.is_symlink():
        raise CliFileError(f"-o {out}: is a symbolic link; replaykit never writes through one")
    if out.exists() and not out.is_dir():
        raise CliFileError(f"-o {out}: is a file; name a folder for the replay result")
    if (out / "manifest.json").exists() and not args.overwrite:
        raise _UsageError(f"{out} already holds a replay result; pass --overwrite or name "
                          "another folder")
    given = [args.branch, *(args.fixtures or [])]
    if out.is_dir() and any(out.iterdir()) and not (out / "manifest.json").exists():
        raise CliFileError(f"-o {out}: a folder holding other files, not a replay result; "
                           "name a new or empty folder")
    if out.exists():  # the folder is replaced whole: it may not hold an input
        whole = out.resolve()
        for f in _input_files([*args.log, *given]):
            if f.resolve() == whole or whole in f.resolve().parents:
                raise CliFileError(f"-o {out}: holds an input of this command ({f}); name "
                                   "another folder")
    ib = _branch_file(args.branch, "--branch")
    for f in args.fixtures or []:
        load_json_option(f, "--fixtures")  # a JSON file (the registry then checks its content)
    log, _ = _load(args, args.log)
    tenant = _pick_tenant(log, args.tenant or args.owner, ib.base_run_id)
    branch = Branch.from_dict(ib, base=log, tenant_id=tenant)
    fixtures = FixtureRegistry.from_file(args.fixtures) if args.fixtures else None
    res = replay(branch, model_policy=args.model_policy, tool_policy=args.tool_policy,
                 fixtures=fixtures)
    _save_result(res, out)
    m = res.metrics
    head = (f"replay {res.status}: {len(res.events):,} events of run {res.run_id} under "
            f"{res.model_policy}/{res.tool_policy}")
    if res.status == "completed":
        print(f"{head}; {m['comparability']}, first divergence step "
              f"{m['first_divergence_step']}, {m['fixture_dependency_count']} fixture-served "
              f"call(s); wrote {out}")
        return EXIT_OK
    if res.status == "paused":
        open_reqs = [r for r in res.requirements if r.get("status") == "open"]
        tools = ", ".join(sorted({str(r.get("tool_name")) for r in open_reqs}))
        print(f"{head}; paused for {len(open_reqs)} fixture(s) ({tools}); wrote {out}. See "
              f"'replaykit replay requirements {out}', then rerun with --fixtures FILE")
        return EXIT_PAUSED
    print(f"{head}: {res.error}; wrote {out}", file=sys.stderr)
    return EXIT_EMPTY


def _save_result(res: Any, out: Path) -> None:
    """Write the result folder whole into a temporary folder beside ``out``, then move it in
    place (an interrupted replay leaves the old result, or none)."""
    import os
    import shutil
    import tempfile

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        res.save(tmp)
        for name, value in (("metrics", res.metrics), ("requirements", res.requirements),
                            ("effects", res.effects)):
            (tmp / f"{name}.json").write_text(json.dumps(value, indent=2, default=str) + "\n",
                                              encoding="utf-8")
        if out.is_dir() and any(out.iterdir()):
            _replace_path(tmp, out)
        else:
            if out.is_dir():
                out.rmdir()
            os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _result_view(view: str, args: argparse.Namespace) -> int:
    from .branch import ReplayResult

    if not (Path(args.result) / "manifest.json").exists():
        raise _UsageError(f"{args.result}: not a replay result folder (no manifest.json); "
                          "write one with 'replaykit replay LOG --branch FILE -o DIR'")
    res = ReplayResult.load(args.result)
    if view == "get":
        m = res.metrics
        b = getattr(res, "branch_dict", None) or {}
        info = {"replay_id": res.replay_id, "status": res.status, "error": res.error,
                "run_id": res.run_id, "base_run_id": b.get("baseRunId"),
                "branch_id": b.get("branchId"), "branch_name": b.get("name"),
                "interventions": len(b.get("interventions", [])),
                "model_policy": res.model_policy, "tool_policy": res.tool_policy,
                "events": len(res.events), "comparability": m.get("comparability"),
                "first_divergence_step": m.get("first_divergence_step"),
                "open_requirements": sum(r.get("status") == "open" for r in res.requirements),
                "fixture_dependency_count": m.get("fixture_dependency_count")}
        _emit_mapping(info, args)
        return EXIT_OK
    if view == "metrics":
        _emit_mapping(res.metrics, args)
        return EXIT_OK
    frames = {"events": lambda: res.events.events_df(), "diff": res.diff_df,
              "effects": res.effects_df, "requirements": res.requirements_df}
    _emit_table(frames[view](), args, noun="rows")
    return EXIT_OK


def _emit_mapping(d: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json_safe(json.dumps(d, indent=2, default=str, ensure_ascii=False)))
    elif args.csv:
        import pandas as pd

        sys.stdout.write(pd.DataFrame([d]).to_csv(index=False))
    else:
        width = max(map(len, d)) if d else 0
        for k, v in d.items():
            print(f"{terminal_safe(k):<{width}}  {'' if v is None else terminal_safe(str(v))}")


# ---------------------------------------------------------------------------- entry point
def _say(name: str, text: str) -> None:
    """A command's error: ``replaykit NAME: text`` on stderr, control characters escaped."""
    print(f"replaykit {name}: {terminal_safe(str(text), one_line=False)}", file=sys.stderr)


def _run(name: str, fn: Any, *fn_args: Any) -> int:
    try:
        return int(fn(*fn_args))
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (_UsageError, CliFileError) as exc:
        _say(name, str(exc))
        return EXIT_USAGE
    except _EmptyAnswer as exc:
        _say(name, str(exc))
        return EXIT_EMPTY
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, ValueError, TypeError,
            KeyError) as exc:
        _say(name, cli_error_text(exc))
        return EXIT_USAGE
    except ReplayKitError as exc:
        _say(name, cli_error_text(exc))
        missing = isinstance(exc, LoadError) and exc.reason == "missing_tenant"
        return EXIT_USAGE if missing else EXIT_EMPTY
    except RecursionError:
        _say(name, "an input nests too deeply to read (JSON or a branch/patch document)")
        return EXIT_USAGE
    except MemoryError:
        _say(name, "out of memory reading the input (is it the file you meant?)")
        return EXIT_EMPTY
    except OSError as exc:  # permissions, a full disk, a vanished file: the OS's words
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        _say(name, f"{where}{exc.strerror or exc}")
        return EXIT_EMPTY


def _exit_now(code: int) -> None:
    """End the ``replaykit summary`` process once its output is flushed, skipping the
    interpreter's teardown (freeing the loaded table and finalizing pandas, pyarrow and numpy
    took 0.2 s or more, a tenth of the command on a 300,000-event log). Nothing is left to
    run: the loaders' thread pools are closed and every file written is closed."""
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # e.g. piped into head: stop quietly, as _run does
        code = EXIT_OK
    os._exit(code)


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str,
                      lineno: int, file: Any = None, line: str | None = None) -> None:
    """``warnings.showwarning`` of the command line: ``replaykit: warning: ...`` in its
    words, never Python's ``file:line: UserWarning`` form."""
    print(f"replaykit: warning: {terminal_safe(cli_error_text(Exception(str(message))))}",
          file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``replaykit`` command in this process and return its exit code (``argv``
    defaults to ``sys.argv[1:]``). Safe to call from a notebook or a test: it never ends the
    interpreter (the ``replaykit`` console command goes through :func:`console_main`).

    >>> main(["summary", "data/pleach", "--limit", "5"])  # doctest: +SKIP
    0
    """
    return _main(argv, fast_exit=False)


def console_main() -> None:
    """The ``replaykit`` console command: :func:`main` on ``sys.argv``, then exit. After
    ``summary`` the process ends as soon as its output is flushed (see ``_exit_now``).

    On a terminal, stdout escapes control characters (:class:`TerminalSafeStream`). Ctrl-C
    ends any command with one line, ``replaykit: interrupted``, and exit code 130 (a file
    being written is left as it was: writes go to a temporary file first)."""
    import os

    if sys.stdout.isatty():
        sys.stdout = TerminalSafeStream(sys.stdout)  # type: ignore[assignment]
    try:
        code = _main(None, fast_exit=True)
    except KeyboardInterrupt:
        try:
            sys.stderr.write("\nreplaykit: interrupted\n")
            sys.stderr.flush()
        finally:
            os._exit(EXIT_INTERRUPTED)  # no teardown: worker threads may still be reading
    sys.exit(code)


def _main(argv: Sequence[str] | None, *, fast_exit: bool) -> int:
    previous = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        return _dispatch(argv, fast_exit=fast_exit)
    except KeyboardInterrupt:
        if fast_exit:
            raise  # console_main ends the process
        print("replaykit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        warnings.showwarning = previous


def _dispatch(argv: Sequence[str] | None, *, fast_exit: bool) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verify-chain"]:
        from ._cli_verify import verify_chain_command

        return verify_chain_command(argv[1:])
    if argv[:1] == ["report"]:
        from .report.cli import report_command

        return report_command(argv[1:])
    if argv[:1] == ["replay"] and len(argv) > 1 and argv[1] in _RESULT_VIEWS:
        view = argv[1]
        try:
            vargs = _replay_view_parser(view).parse_args(argv[2:])
        except SystemExit as exc:
            return EXIT_OK if exc.code == 0 else EXIT_USAGE
        return _run(f"replay {view}", _result_view, view, vargs)
    parser = _parser(next((a for a in argv if not a.startswith("-")), None))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    if args.command == "summary":
        code = _run("summary", _summary, args)
        if fast_exit:
            _exit_now(code)
        return code
    if args.command == "generate":
        return _run("generate", _generate, args)
    if args.command == "branch":
        fn = _branch_create if args.branch_command == "create" else _branch_intervene
        return _run(f"branch {args.branch_command}", fn, args)
    if args.command == "replay":
        return _run("replay", _replay, args)
    if args.command == "diff":
        return _run("diff", _result_view, "diff", args)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return EXIT_USAGE  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    console_main()
