"""The ``replaykit`` command line.

Usage::

    replaykit summary PATH... [--format auto|toh|pleach|isplay] [--tenant ID]
                              [--errors raise|quarantine] [--no-progress] [--all-columns]
    replaykit verify-chain PATH... [--format F] [--tenant ID] [--heads FILE] [--json]
    replaykit report rca --log PATH --branch FILE [--fixtures FILE] [--model-policy P]
                         [--tool-policy P] [--tenant ID] -o rca.html
    replaykit report cohort --log PATH --by COLUMN --a A --b B [--tenant ID] -o cohort.html

Exit codes: 0 success, 1 the input could not be loaded, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import pandas as pd

from .errors import LoadError, ReplayKitError
from .eventlog import RUN_STAT_COLUMNS

__all__ = ["main"]

# The runs table's computed columns, with the format after the run's identity.
_SUMMARY_COLUMNS = [*RUN_STAT_COLUMNS[:3], "format", *RUN_STAT_COLUMNS[3:]]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="replaykit",
        description="Analyse recorded AI-agent event logs.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "summary",
        help="load logs and print one row per run",
        description="Load event logs (files, folders or globs) and print the runs table.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="log file, folder or glob")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "toh", "pleach", "isplay"],
        help="input format (default: sniff each file)",
    )
    p.add_argument(
        "--tenant",
        default=None,
        help="tenant id: the owner of toh/isplay logs (required for them, never guessed); "
        "for pleach logs, which carry their own tenant, only this tenant's rows are shown",
    )
    p.add_argument(
        "--errors",
        default="raise",
        choices=["raise", "quarantine"],
        help="stop at the first bad row (raise) or set bad rows aside and continue",
    )
    p.add_argument("--no-progress", action="store_true", help="do not show progress bars")
    p.add_argument("--all-columns", action="store_true", help="show every runs_df column")

    sub.add_parser(
        "report",
        help="write a self-contained HTML report (rca | cohort)",
        add_help=False,
    )
    sub.add_parser(
        "verify-chain",
        help="verify the per-run hash chains (exit 0 intact, 1 broken, 2 usage)",
        add_help=False,
    )
    return parser


def _summary(args: argparse.Namespace) -> int:
    from .io import read_events

    kwargs: dict[str, object] = {"errors": args.errors, "progress": not args.no_progress}
    if args.tenant is not None:
        kwargs["tenant_id"] = args.tenant
    paths = args.paths if len(args.paths) > 1 else args.paths[0]
    log = read_events(paths, format=args.format, **kwargs)
    runs = log.runs_df()
    if not args.all_columns:
        runs = runs[[c for c in _SUMMARY_COLUMNS if c in runs.columns]]
    with pd.option_context(
        "display.max_rows", 500, "display.max_columns", 50, "display.width", 200
    ):
        print(runs.to_string(index=False, na_rep=""))
    s = log.summary()
    line = (
        f"\n{s['events']:,} events in {s['runs']:,} runs of {s['tenants']} tenant(s); "
        f"formats: {', '.join(s['formats']) or '-'}"
    )
    if s["quarantined"]:
        line += f"; {s['quarantined']} row(s) quarantined (see log.quarantine)"
    print(line)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``replaykit`` console command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verify-chain"]:
        from .integrity import verify_chain_command

        return verify_chain_command(argv[1:])
    if argv[:1] == ["report"]:
        from .report.cli import report_command

        return report_command(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "summary":
            return _summary(args)
    except TypeError as exc:  # e.g. a missing tenant id
        hint = " (on the command line: --tenant ID)" if "tenant_id" in str(exc) else ""
        print(f"replaykit {args.command}: {exc}{hint}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"replaykit {args.command}: {exc}", file=sys.stderr)
        return 2
    except LoadError as exc:
        print(f"replaykit {args.command}: {exc}", file=sys.stderr)
        return 1
    except ReplayKitError as exc:
        print(f"replaykit {args.command}: {exc}", file=sys.stderr)
        return 1
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
