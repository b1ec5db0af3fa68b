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
    replaykit diff LOG... --runs A B [-o report.html] [--owner ID] [--tenant ID] [--title T]
                          [--question Q] [--notes TEXT] [--overwrite]
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
:mod:`replaykit.cli.files`); text printed to a terminal has its control characters escaped.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from ..errors import LoadError, ReplayKitError
from ._output import (
    _DEFAULT_LIMIT,
    _RESULT_VIEWS,
    EXIT_EMPTY,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    _EmptyAnswer,
    _say,
    _UsageError,
    add_format_option,
)
from .branch import _branch_create, _branch_intervene, _replay, _result_view
from .files import (
    MODEL_POLICY_HELP,
    OWNER_HELP,
    TOOL_POLICY_HELP,
    CliFileError,
    CliHelpFormatter,
    CliParser,
    policy_help,
    terminal_safe,
    terminal_stdout,
)
from .generate import _generate
from .messages import cli_error_text
from .summary import _summary

__all__ = ["main", "version_text"]

def version_text() -> str:
    """What ``replaykit --version`` prints: one line per component: replaykit's version, then
    the native core's (its version, whether it is on, the CPU features it uses) or why the
    reference path is in use. Imports nothing heavy (no pyarrow, no pandas).

    >>> version_text().startswith("replaykit ")
    True
    """
    from .. import __version__  # _native loads only the small extension module
    from .._base import native as _native

    return f"replaykit {__version__}, {_native.describe()}"
class _Version(argparse.Action):
    """``--version``: :func:`version_text` printed as it is (argparse's own version action
    wraps it at the terminal's width, splitting the CPU features over two lines)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(version_text())
        parser.exit()


#: commands whose parse needs no branch/replay choices (see _parser).
_LIGHT_COMMANDS = ("summary", "generate", "diff")


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
        from ..branch.vocab import INTERVENTION_KINDS, MODEL_POLICIES, TOOL_POLICIES

    parser = CliParser(
        prog="replaykit",
        description="Analyse recorded AI-agent event logs: load, summarise, branch, replay, "
        "verify and report.",
        epilog="Exit codes: 0 success, 1 unreadable input or an empty answer, 2 bad usage, "
        "3 replay paused for a fixture, 130 interrupted (Ctrl-C). Run 'replaykit COMMAND "
        "--help' for a command's options.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show replaykit's and the native core's versions and exit")
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
                    help=OWNER_HELP.replace("logs", "--log files"))
    add_format_option(bc, "the --log files")
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
                       help="JSON file with the patch (operations, or toolName/args). For "
                       "tool_args_patch, 'args' REPLACES the call's whole arguments (as the "
                       "isplay reference does): members it does not name are dropped, with a "
                       "warning; pass --merge to change only the members it names")
    patch.add_argument("--patch-json", metavar="JSON", default=None,
                       help="the patch as JSON text instead of a file")
    bi.add_argument("--merge", action="store_true",
                    help="tool_args_patch: merge 'args' into the call's arguments (RFC 7396: "
                    "only the members named change, null removes one; writes \"mode\": "
                    "\"merge\" into the patch) instead of replacing them all")
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
                   help=OWNER_HELP)
    add_format_option(r, "the log files")
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

    # ---- diff: a replay result's event diff, or two recorded runs (--runs A B)
    d = sub.add_parser(
        "diff", help="the event diff of a replay result (= replay diff), or of two recorded "
        "runs (--runs A B)", formatter_class=_help_formatter,
        description="Without --runs: print the event diff of a result folder written by "
        "'replaykit replay'. With --runs A B: compare two recorded runs of the LOG files "
        "(no replay, no intervention: their differences are associations, not causes); print "
        "the findings, and with -o write the run-vs-run report (the RCA report's sections).",
        epilog="Exit codes: 0 printed or written, 1 unreadable input, 2 bad usage (a run "
        "that is not in the logs: the message lists the runs they hold), 130 interrupted.")
    d.add_argument("result", nargs="+", metavar="RESULT_DIR | LOG",
                   help="folder written by 'replaykit replay'; with --runs, the log file(s), "
                   "folder(s) or glob(s) holding both runs")
    _table_options(d)
    d.add_argument("--runs", nargs=2, metavar=("A", "B"), default=None,
                   help="compare recorded run B with recorded run A (run ids of the logs)")
    d.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="with --runs: write the run-vs-run HTML report here")
    d.add_argument("--overwrite", action="store_true", help="replace an existing -o file")
    add_format_option(d, "the log files (with --runs)")
    d.add_argument("--owner", default=None, metavar="ID", help=OWNER_HELP)
    d.add_argument("--tenant", default=None, metavar="ID",
                   help="with --runs: tenant of both runs (never guessed when the logs hold "
                   "several)")
    d.add_argument("--title", default=None, help="with -o: page title (default: 'Run B "
                   "compared with run A')")
    d.add_argument("--question", default=None, help="with -o: the question the report answers")
    d.add_argument("--notes", default=None, help="with -o: free text shown under the question")
    d.add_argument("--no-progress", action="store_true", help="do not show progress bars")

    sub.add_parser("verify-chain", add_help=False,
                   help="verify the per-run hash chains (exit 0 intact, 1 broken or nothing "
                   "verified, 2 usage)")
    sub.add_parser("report", add_help=False,
                   help="write a self-contained HTML report (rca | cohort)")
    sub.add_parser("ingest", add_help=False,
                   help="stream logs of any size into a run-aligned Parquet dataset, "
                   "incrementally (--into DIR)")
    return parser


def _load_options(p: argparse.ArgumentParser) -> None:
    add_format_option(p)
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
    with terminal_stdout():  # every output mode of every command, on a terminal: escaped
        return _guarded(argv, fast_exit=fast_exit, previous=previous)


def _guarded(argv: Sequence[str] | None, *, fast_exit: bool, previous: Any) -> int:
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
        from .verify import verify_chain_command

        return verify_chain_command(argv[1:])
    if argv[:1] == ["report"]:
        from .report import report_command

        return report_command(argv[1:])
    if argv[:1] == ["ingest"]:
        from .ingest import ingest_command

        return ingest_command(argv[1:])
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
        if args.runs is not None:
            from .report import diff_runs

            return _run("diff", diff_runs, args)
        if len(args.result) != 1 or args.output is not None:
            _say("diff", "give one RESULT_DIR (or --runs A B with the log files; -o only "
                 "with --runs)")
            return EXIT_USAGE
        args.result = args.result[0]
        return _run("diff", _result_view, "diff", args)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return EXIT_USAGE  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    console_main()
