"""``replaykit ingest SOURCES... --into DIR``: :func:`replaykit.ingest` on the command line (a
summary line per run, or ``--json``: the ingest report)."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Sequence

from ..errors import LoadError, ReplayKitError
from ._output import EXIT_EMPTY, EXIT_OK, EXIT_USAGE
from .files import CliParser, terminal_safe
from .messages import cli_error_text

__all__ = ["ingest_command"]


def _parser() -> CliParser:
    p = CliParser(
        prog="replaykit ingest",
        description="Stream logs of any supported format and size into a run-aligned Parquet "
        "dataset (the EventLog.to_parquet layout), incrementally: a re-run reads only new and "
        "changed files. Read the dataset with rk.open_dataset(DIR) or rk.read_parquet(DIR).")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="log file, folder or glob")
    p.add_argument("--into", required=True, metavar="DIR", help="the dataset folder")
    p.add_argument("--owner", default=None, metavar="ID",
                   help="the tenant of logs that record none (toh, isplay, inspect, otel, "
                   "claude_code, codex, langsmith, langfuse, phoenix); never guessed")
    p.add_argument("--memory-limit", default="2GB", metavar="SIZE",
                   help="peak memory to aim for, e.g. 2GB, 512MiB (default: 2GB)")
    p.add_argument("--errors", default="quarantine", choices=["raise", "quarantine"],
                   help="set bad rows aside in the dataset's quarantine (default), or stop at "
                   "the first one without changing the dataset")
    p.add_argument("--partition-events", type=int, default=250_000, metavar="N",
                   help="about how many events a part file holds (default: 250000)")
    p.add_argument("--engine", default="local", choices=["local", "dask"],
                   help="parse and partition here (default), or on Dask: the workers of "
                   "--scheduler, else Dask's threaded scheduler in this process")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="with --engine dask: a distributed scheduler, e.g. tcp://host:8786 "
                   "(the sources and DIR at the same paths on its workers)")
    p.add_argument("--wait", action="store_true",
                   help="wait for another ingest into DIR instead of failing")
    p.add_argument("--json", action="store_true",
                   help="print the ingest report as JSON (files, rows, parts, per source)")
    p.add_argument("--no-progress", action="store_true",
                   help="do not show the progress bar (it only shows on a terminal)")
    return p


def ingest_command(argv: Sequence[str]) -> int:
    """Run ``replaykit ingest``; the exit code (0 done, 1 an input could not be read,
    2 bad usage or the dataset is locked by another ingest)."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    from ..ingest import IngestError, ingest

    def say(text: str) -> None:
        print(f"replaykit ingest: {terminal_safe(text)}", file=sys.stderr)

    if args.scheduler is not None and args.engine != "dask":
        say("--scheduler needs --engine dask")
        return EXIT_USAGE
    client = None
    try:
        if args.scheduler is not None:
            from ..engine import require_dask

            client = require_dask("replaykit ingest --scheduler").Client(args.scheduler)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = ingest(args.sources, args.into, owner=args.owner,
                            memory_limit=args.memory_limit, errors=args.errors,
                            progress=False if args.no_progress or args.json else None,
                            partition_events=args.partition_events, wait=args.wait,
                            engine=args.engine, client=client)
    except IngestError as exc:
        say(str(exc))
        return EXIT_USAGE
    except (FileNotFoundError, ValueError, TypeError) as exc:
        say(cli_error_text(exc))
        return EXIT_USAGE
    except ReplayKitError as exc:
        say(cli_error_text(exc))
        missing = isinstance(exc, LoadError) and exc.reason == "missing_tenant"
        return EXIT_USAGE if missing else EXIT_EMPTY
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        say(f"{where}{exc.strerror or exc}")
        return EXIT_EMPTY
    finally:
        if client is not None:
            client.close()
    for w in caught:
        say(f"warning: {w.message}")
    d = report.to_dict()
    if args.json:
        print(json.dumps(d, indent=1))
        return EXIT_OK
    files = ", ".join(f"{n} {k}" for k, n in sorted(d["files"].items()))
    quarantined = sum(s["quarantined"] for s in report.sources
                      if s["status"] in ("new", "changed"))
    print(f"{args.into}: {files}; {d['rows']:,} rows read ({quarantined:,} quarantined); "
          f"{d['parts_written']} part file(s) written, {d['parts_kept']} kept; "
          f"{d['seconds']:.1f} s")
    return EXIT_OK
