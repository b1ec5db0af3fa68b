"""``replaykit report``: write an RCA or cohort report as one self-contained HTML file.

Usage::

    replaykit report rca --log PATH... --branch FILE [--fixtures FILE] [--model-policy P]
                         [--tool-policy P] [--owner ID] [--tenant ID] [--title T]
                         [--question Q] [--notes TEXT] [--no-progress] [--overwrite]
                         -o rca.html
    replaykit report cohort --log PATH... --by FIELD --a COHORT --b COHORT [--owner ID]
                         [--tenant ID] [--title T] [--question Q] [--no-progress]
                         [--overwrite] -o cohort.html

Exit codes: 0 written (replay completed), 1 the input could not be loaded or replayed, 2 bad
usage, 3 written but the replay paused (open requirements: each is named on stderr with the
fixture that would satisfy it; re-run with ``--fixtures FILE``), 4 written but the replay
failed (same, under a tool policy that fails instead of pausing), 130 interrupted (Ctrl-C).
The HTML file is written atomically, never through a symbolic link, never over an input, and
over an existing file only with ``--overwrite``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._output import add_format_option
from .files import (
    MODEL_POLICY_HELP,
    OWNER_HELP,
    TOOL_POLICY_HELP,
    CliFileError,
    CliParser,
    atomic_write,
    check_option_file,
    check_output,
    json_safe,
    policy_help,
    terminal_safe,
)
from .messages import cli_error_text

__all__ = ["EXIT_FAILED", "EXIT_PAUSED", "diff_runs", "report_command"]

#: exit code of ``replaykit report rca`` when the replay paused (the report is written).
EXIT_PAUSED = 3
#: exit code when the replay failed (the report is written).
EXIT_FAILED = 4


def _parser() -> argparse.ArgumentParser:
    from ..branch.vocab import MODEL_POLICIES, TOOL_POLICIES

    parser = CliParser(prog="replaykit report",
                       description="Write a self-contained HTML report.")
    sub = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    p = sub.add_parser("rca", help="root-cause analysis of one branch replay")
    p.add_argument("--log", nargs="+", required=True, metavar="PATH",
                   help="event log file(s), folder(s) or glob(s) holding the base run")
    p.add_argument("--branch", required=True, help="branch file (isplay.branch/v1)")
    p.add_argument("--fixtures", default=None, help="fixtures file (isplay.fixtures/v1)")
    p.add_argument("--model-policy", default=None, choices=MODEL_POLICIES,
                   help=policy_help("model calls", MODEL_POLICY_HELP, "recorded-only"))
    p.add_argument("--tool-policy", default=None, choices=TOOL_POLICIES,
                   help=policy_help("tool calls that differ from the recording",
                                     TOOL_POLICY_HELP, "pause-for-fixture"))
    p.add_argument("--question", default=None, help="the bounded question the report answers")
    p.add_argument("--notes", default=None, help="free text shown under the question")
    _common(p)
    c = sub.add_parser("cohort", help="compare two cohorts of runs")
    c.add_argument("--log", nargs="+", required=True, metavar="PATH",
                   help="event log file(s), folder(s), glob(s) or Parquet dataset(s)")
    c.add_argument("--by", default="semester",
                   help="cohort key: semester (default), a column, header or payload field")
    c.add_argument("--a", required=True, help="first cohort label")
    c.add_argument("--b", required=True, help="second cohort label")
    c.add_argument("--question", default=None, help="the question the comparison answers")
    c.add_argument("--notes", default=None, help="free text shown under the question")
    _common(c)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", default=None, metavar="ID",
                   help="keep only this tenant's rows (logs that record no tenant take "
                   "their owner from --owner; never guessed)")
    p.add_argument("--owner", default=None, metavar="ID",
                   help=OWNER_HELP)
    add_format_option(p, "the --log files")
    p.add_argument("--title", default=None, help="page title (default: derived from the "
                   "inputs)")
    p.add_argument("-o", "--output", required=True, help="HTML file to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing -o file")
    p.add_argument("--no-progress", action="store_true", help="do not show progress bars")


def _load(args: argparse.Namespace) -> object:
    from ..io import read_events

    kwargs: dict[str, Any] = {"progress": False if args.no_progress else None}  # bars: tty only
    if args.owner is not None:  # owner of logs that record none
        kwargs["owner"] = args.owner
    if args.tenant is not None:  # a filter, as everywhere
        kwargs["tenant_id"] = args.tenant
    if args.format == "parquet":  # a dataset written by EventLog.to_parquet, as elsewhere
        from ..eventlog.dataset import read_parquet
        from ..eventlog.log import concat

        logs = [read_parquet(p, tenant_id=args.tenant) for p in args.log]
        return logs[0] if len(logs) == 1 else concat(logs)
    paths = args.log if len(args.log) > 1 else args.log[0]
    return read_events(paths, format=args.format, **kwargs)


def _rca(args: argparse.Namespace) -> int:
    from ..branch import Branch, replay
    from ..io._common import Progress
    from ..report import rca

    with Progress(4, desc="report rca", unit="step",
                  enabled=False if args.no_progress else None) as bar:
        log = _load(args)
        bar.update(1)
        tenant = args.tenant or args.owner
        if tenant is None:
            tenants = log.tenants  # type: ignore[attr-defined]
            if len(tenants) != 1:
                raise TypeError("tenant_id is required when the log holds several tenants")
            tenant = tenants[0]
        branch = Branch.load(args.branch, base=log, tenant_id=tenant)  # type: ignore[arg-type]
        bar.set_description("report rca: replay")
        res = replay(branch, model_policy=args.model_policy, tool_policy=args.tool_policy,
                     fixtures=args.fixtures)
        bar.update(1)
        bar.set_description("report rca: build")
        inputs = [*args.log, args.branch] + ([args.fixtures] if args.fixtures else [])
        rep = rca(res, title=args.title or f"Replay of {branch.run_id}: {branch.name}",
                  question=args.question or f"What changes in run {branch.run_id} under the "
                  f"interventions of branch {branch.name!r}?", notes=args.notes,
                  inputs=inputs, tenant_id=tenant)
        bar.update(1)
        out = atomic_write(args.output, rep.save_html)
        bar.update(1)
    m = rep.data["metrics"]
    size = Path(str(out)).stat().st_size
    print(f"wrote {out} ({size / 1e6:.1f} MB): replay {res.status}, "
          f"{m['comparability']}, first divergence step {m['first_divergence_step']}, "
          f"{m['changed_descendants']} changed descendant(s), "
          f"{m['fixture_dependency_count']} fixture-served call(s)")
    if res.status == "completed":
        return 0
    summary = rep.data["summary"]
    for sentence in summary.sentences("requirement"):
        print(terminal_safe(f"open requirement {sentence}"), file=sys.stderr)
    for r in summary.requirements:
        import json

        print("fixture that would satisfy it: " + json_safe(
            json.dumps(r["fixture"], ensure_ascii=False)), file=sys.stderr)
    return EXIT_PAUSED if res.status == "paused" else EXIT_FAILED


def diff_runs(args: argparse.Namespace) -> int:
    """``replaykit diff LOG... --runs A B [-o report.html]``: compare two recorded runs
    (:func:`replaykit.compare_runs`); print the answer line and the findings, and with
    ``-o`` write the run-vs-run report (:func:`replaykit.report.rca` of the comparison)
    with the checks and messages of ``report rca``. Returns 0.

    Raises:
        KeyError: a run of ``--runs`` is not in the logs (the message lists their runs).
        CliFileError: ``-o`` may not be written (exists without ``--overwrite``, a link, an
            input).
    """
    from ..branch.runs import compare_runs
    from ..io._common import Progress

    args.log = args.result
    if args.output is not None:
        check_output(args.output, "-o", overwrite=args.overwrite, inputs=args.log)
    with Progress(3 if args.output else 2, desc="diff --runs", unit="step",
                  enabled=False if args.no_progress else None) as bar:
        log = _load(args)
        bar.update(1)
        tenant = args.tenant or args.owner
        a, b = args.runs
        ids = log.run_ids  # type: ignore[attr-defined]
        missing = [r for r in (a, b) if r not in ids]
        if missing:
            shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20
                                            else "")
            raise KeyError(f"--runs: {', '.join(missing)} not in the logs; the runs they "
                           f"hold: {shown}")
        cmp = compare_runs(log, runs=(a, b), tenant_id=tenant)  # type: ignore[call-overload]
        summary = cmp.summary()
        bar.update(1)
        if args.output is not None:
            from ..report import rca

            rep = rca(cmp, title=args.title, question=args.question, notes=args.notes,
                      inputs=list(args.log), tenant_id=tenant)
            out = atomic_write(args.output, rep.save_html)
            bar.update(1)
    m = cmp.metrics
    print(summary.text)
    if args.output is not None:
        size = Path(str(out)).stat().st_size
        print(f"wrote {out} ({size / 1e6:.1f} MB): two recorded runs, {m['comparability']}, "
              f"first divergence step {m['first_divergence_step']}, tool-sequence distance "
              f"{m['tool_sequence_distance']}", file=sys.stderr)
    return 0


def _cohort(args: argparse.Namespace) -> int:
    from ..cohorts import cohorts
    from ..io._common import Progress
    from ..report import cohort

    with Progress(3, desc="report cohort", unit="step",
                  enabled=False if args.no_progress else None) as bar:
        log = _load(args)
        bar.update(1)
        cs = cohorts(log, by=args.by)  # type: ignore[arg-type]
        for flag, label in (("--a", args.a), ("--b", args.b)):  # in the command line's words
            if label not in cs.labels:
                import difflib

                near = difflib.get_close_matches(label, cs.labels, n=1)
                raise ValueError(
                    f"{flag} {label}: no cohort of that name by --by {args.by}; cohorts: "
                    f"{', '.join(cs.labels)}"
                    + (f" (did you mean {flag} {near[0]}?)" if near else ""))
        frame = cs.compare(args.a, args.b)
        bar.update(1)
        rep = cohort(frame, title=args.title or f"Cohorts {args.a} vs {args.b}",
                     question=args.question or f"How do runs of {args.b} differ from runs "
                     f"of {args.a}?", notes=args.notes, cohorts=cs)
        out = atomic_write(args.output, rep.save_html)
        bar.update(1)
    size = Path(str(out)).stat().st_size
    print(f"wrote {out} ({size / 1e6:.1f} MB): {len(frame)} comparison row(s), "
          f"cohorts {args.a} vs {args.b}")
    return 0


def report_command(argv: Sequence[str]) -> int:
    """``replaykit report ...``; returns the exit code (0 written, 1 input error, 2 usage,
    3 written but the replay paused, 4 written but the replay failed).

    Example:
        >>> report_command(["rca", "--log", "data/isplay", "--owner", "demo", "--branch",
        ...     "data/isplay/branch-drop-fraud-clause.json", "--fixtures",
        ...     "data/isplay/fixtures.json", "-o", "rca.html"])  # doctest: +SKIP
        0
    """
    from ..errors import ReplayKitError

    parser = _parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        given = [*args.log, *(p for p in (getattr(args, "branch", None),
                                          getattr(args, "fixtures", None)) if p)]
        check_output(args.output, "-o", overwrite=args.overwrite, inputs=given)
        for flag in ("branch", "fixtures"):
            if getattr(args, flag, None):
                check_option_file(getattr(args, flag), f"--{flag}")
        return _rca(args) if args.kind == "rca" else _cohort(args)
    except CliFileError as exc:
        _say(args.kind, exc)
        return 2
    except (TypeError, FileNotFoundError, ValueError, KeyError) as exc:
        _say(args.kind, exc)  # a usage error: no exception repr, the command line's words
        return 2
    except ReplayKitError as exc:
        _say(args.kind, exc)
        return 1


def _say(kind: str, exc: BaseException) -> None:
    """``replaykit report KIND: message``: the message as every command writes errors
    (:func:`cli_error_text`: no ``KeyError`` quotes, options named as on the command line),
    control characters escaped."""

    text = cli_error_text(exc)
    if "tenant_id" in text:
        text += " (on the command line: --tenant ID)"
    print(f"replaykit report {kind}: {terminal_safe(text, one_line=False)}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(report_command(sys.argv[1:]))
