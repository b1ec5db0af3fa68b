"""``replaykit verify-chain``: read the logs to check through the loaders, verify their chains
(:func:`replaykit.verify_chain`), print a summary or a JSON report, return the exit code.

The command line's part of integrity: integrity itself reads no inputs; this module reads them
through the same entry points as everything else (:func:`replaykit.read_events`,
:func:`replaykit.read_parquet`, :func:`replaykit.read_sql`) and a chain manifest from its file.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import ReplayKitError
from ..eventlog.dataset import read_parquet
from ..integrity.content import _plain
from ..integrity.manifest import ChainManifest, ManifestError
from ..integrity.problems import _PROBLEM_SCHEMA, _problem_frame
from ..integrity.verify import verify_chain
from ..io import is_dataset, read_events
from ..schema import run_starts as _run_starts
from ._output import add_format_option
from .files import (
    OWNER_HELP,
    CliFileError,
    CliParser,
    check_input_path,
    json_safe,
    parse_json_text,
    read_option_file,
)
from .files import terminal_safe as _safe
from .messages import cli_error_text

__all__ = ["verify_chain_command"]

_SQL_PREFIXES = ("sqlite://", "postgresql://", "postgres://")


def _load_for_cli(args: argparse.Namespace, malformed: list[pa.Table] | None = None) -> pa.Table:
    """The logs as one table; rows of a database that cannot be read (values not of their
    column's type, payloads that are not JSON objects, ...) are left out and reported as
    ``malformed_value`` problems appended to ``malformed``."""
    tenants = args.tenant or None
    sql = [p for p in args.paths if str(p).startswith(_SQL_PREFIXES)]
    files = [p for p in args.paths if p not in sql]
    tables: list[pa.Table] = []
    if sql:
        from ..sql._fetch import malformed_problems
        from ..sql.read import read_sql  # the sql extra, imported when needed

        if not tenants:
            raise TypeError("reading a database needs --tenant ID (repeatable)")
        for uri in sql:
            db_log = read_sql(uri, tenant_id=tenants, table=args.table, errors="quarantine")
            tables.append(db_log.table)
            if malformed is not None and db_log.quarantine.num_rows:
                malformed.append(malformed_problems(db_log.quarantine, every_reason=True))
    if files:
        for path in files:
            check_input_path(path)  # a FIFO or device would block the loaders
            p = Path(path)
            if args.format == "parquet" or is_dataset(p):
                log = read_parquet(p, tenant_id=tenants)
            else:
                kwargs: dict[str, Any] = {}
                owner = getattr(args, "owner", None)
                if owner is not None:
                    kwargs["owner"] = owner
                if tenants:
                    kwargs["tenant_id"] = tenants[0] if len(tenants) == 1 else tenants
                with warnings.catch_warnings(record=True) as caught:  # said in CLI words
                    warnings.simplefilter("always")
                    log = read_events(p, format=args.format, **kwargs)
                for w in caught:  # a filter that drops a file's rows: "nothing verified"
                    if "dropped all" not in str(w.message):
                        text = cli_error_text(Exception(str(w.message)))
                        print(f"replaykit: warning: {_safe(text)}", file=sys.stderr)
                if tenants:
                    log = log.filter(tenant_id=tenants)
            tables.append(log.table)
    if not tables:
        raise ValueError("no input")
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables).unify_dictionaries().combine_chunks()


#: exit codes of ``verify-chain`` (documented in docs/integrity.md and the README)
EXIT_INTACT, EXIT_BROKEN, EXIT_USAGE, EXIT_NOTHING_TO_VERIFY = 0, 1, 2, 4


def _unchained(table: pa.Table, problems: pd.DataFrame, anchored: bool) -> bool:
    """True when there is nothing to verify: the log has events, none carries a ``row_hash``
    (it was never chained), no manifest expects heads and no stored row was unreadable."""
    if not table.num_rows or anchored:
        return False
    if table.column("row_hash").null_count != table.num_rows:
        return False
    return bool(problems.empty or problems["kind"].isin(["hash_mismatch", "link_mismatch"]).all())


def _summary(
    table: pa.Table, problems: pd.DataFrame, anchored: int, unchained: bool = False
) -> tuple[str, dict[str, Any]]:
    n = table.num_rows
    runs = int(_run_starts(table).sum()) if n else 0
    tenants = sorted(set(_plain(table.column("tenant_id")).to_pylist())) if n else []
    counts = (
        {k: int(v) for k, v in problems["kind"].value_counts().items()} if len(problems) else {}
    )
    if unchained:  # nothing was checked: no per-row "mismatch" noise in the report
        problems, counts = problems.iloc[0:0], {}
    status = ("nothing_to_verify" if unchained else "intact" if problems.empty and n
              else "broken" if n else "nothing_verified")
    report = {
        "status": status,
        "intact": status == "intact",
        "events": n,
        "runs": runs,
        "tenants": tenants,
        "anchored_heads": anchored,
        "problem_counts": counts,
        "problems": [
            {k: (None if pd.isna(v) else (int(v) if k == "seq" else str(v))) for k, v in r.items()}
            for r in problems.to_dict("records")
        ],
    }
    anch = (
        f", manifest of {anchored} run(s) matches"
        if anchored
        else ", no anchored heads (tail cuts undetectable)"
    )
    if unchained:
        line = (
            f"nothing to verify: none of the {n} events in {runs} run(s) carries a row_hash "
            "(the log was never chained; stamp logs with replaykit.stamp_chain when they are "
            "written to make them verifiable)"
        )
    elif problems.empty:
        line = f"intact: {n} events in {runs} run(s) of {len(tenants)} tenant(s) verified{anch}"
    else:
        bad_runs = problems[["tenant_id", "run_id"]].drop_duplicates().shape[0]
        first = problems.iloc[0]
        seq = "" if pd.isna(first["seq"]) else f" seq {int(first['seq'])}"
        kinds = ", ".join(f"{k}={v}" for k, v in counts.items())
        line = (
            f"BROKEN: {len(problems)} problem(s) in {bad_runs} of {runs} run(s) ({kinds}); first: "
            f"tenant {first['tenant_id']!r} run {first['run_id']!r}{seq} {first['kind']}"
        )
    return line, report


def _read_manifest_file(path: str, expected_digest: str | None = None) -> ChainManifest:
    """The chain manifest stored in ``path`` (``ChainManifest.to_json`` text); with
    ``expected_digest``, refused unless it is the anchored manifest."""
    data = read_option_file(path, "--heads")  # a regular file of bounded size, never a FIFO
    try:
        obj = parse_json_text(data, f"--heads {path}")
    except CliFileError as exc:
        raise ManifestError(str(exc)) from None
    if isinstance(obj, list):
        raise ManifestError(
            f"{path} is a list of run heads (the old --heads format), which cannot show runs "
            "added to or removed from the log; write a manifest instead: "
            "open(path, 'w').write(replaykit.integrity.chain_manifest(trusted_log).to_json())"
        )
    try:
        return ChainManifest.from_dict(obj, expected_digest=expected_digest)
    except ManifestError as exc:
        raise ManifestError(f"{path}: {exc}") from exc


def verify_chain_command(argv: Sequence[str] | None = None) -> int:
    """``replaykit verify-chain PATH... [--format F] [--tenant ID] [--heads FILE] [--digest HEX]
    [--json]``.

    Loads the logs (files, folders, globs, a Parquet dataset written by
    ``EventLog.to_parquet``, or database URIs ``sqlite:///file.db`` /
    ``postgresql://...`` which need ``--tenant``), verifies every run's chain and prints a
    one-line summary (or, with ``--json``, a JSON report on stdout and the summary on
    stderr). ``--heads FILE`` is a chain manifest (``chain_manifest(log).to_json()``): every
    run of every tenant with its head and the manifest's digest; with ``--tenant`` only those
    tenants' part of it is checked. A manifest whose digest does not match is refused (exit 2),
    and so, with ``--digest HEX`` (the digest that was anchored), is any other manifest.

    Returns the exit code: 0 intact, 1 the chain is broken or nothing was verified (no
    events: "nothing verified"), 2 bad usage or unreadable input, 4 nothing to verify (the
    log has events but none carries a ``row_hash``: it was never chained; the ``--json``
    report's ``status`` is ``"nothing_to_verify"``).

    >>> verify_chain_command(["data/pleach", "--tenant", "acme"])  # doctest: +SKIP
    0
    """
    parser = CliParser(
        prog="replaykit verify-chain",
        description="Verify the per-run hash chain of event logs "
        "(exit 0 intact, 1 broken or nothing verified, 2 usage, 4 nothing to verify: "
        "the log was never chained).",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="log files, folders, globs or DB URIs"
    )
    add_format_option(parser, "the files")
    parser.add_argument(
        "--tenant", action="append", metavar="ID",
        help="tenant to verify (repeatable): a filter; logs that record no tenant take "
        "their owner from --owner"
    )
    parser.add_argument(
        "--owner", default=None, metavar="ID",
        help=OWNER_HELP
    )
    parser.add_argument("--table", default="harness_event_log",
                        help="table name for DB URIs (default: harness_event_log)")
    parser.add_argument(
        "--heads", metavar="FILE", help="chain manifest JSON (chain_manifest(log).to_json())"
    )
    parser.add_argument(
        "--digest", metavar="HEX",
        help="the anchored digest of the --heads manifest: any other manifest is refused",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON report on stdout")
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    if args.digest and not args.heads:
        print("replaykit verify-chain: error: --digest needs --heads FILE (the manifest it "
              "anchors)", file=sys.stderr)
        return 2
    try:
        heads = None
        digest = None
        if args.heads:
            heads = _read_manifest_file(args.heads, args.digest)
            digest = heads.digest  # the whole manifest's: the value that was anchored
            if args.tenant:
                heads = heads.for_tenants(args.tenant)
        malformed: list[pa.Table] = []
        table = _load_for_cli(args, malformed)
        problems = verify_chain(table, expected_heads=heads)
        if malformed:  # stored values not of their column's type: tampering, not "unreadable"
            problems = _problem_frame(
                [pa.Table.from_pandas(problems, schema=_PROBLEM_SCHEMA, preserve_index=False),
                 *malformed]
            )
    except (ReplayKitError, OSError, TypeError, ValueError, ImportError, CliFileError) as exc:
        print(f"replaykit verify-chain: error: {_safe(cli_error_text(exc), one_line=False)}",
              file=sys.stderr)
        return 2
    except RecursionError:
        print("replaykit verify-chain: error: an input nests too deeply to read",
              file=sys.stderr)
        return 2
    unchained = _unchained(table, problems, heads is not None) and not malformed
    line, report = _summary(table, problems, 0 if heads is None else heads.n_runs, unchained)
    if heads is not None:
        report["manifest_digest"] = digest
    if table.num_rows == 0:  # an empty answer is not "intact"
        who = f" of tenant(s) {', '.join(args.tenant)}" if args.tenant else ""
        line = f"nothing verified: the input holds no events{who}"
    if args.json:
        print(json_safe(json.dumps(report, indent=2, ensure_ascii=False)))
        print(_safe(line), file=sys.stderr)
    else:
        print(_safe(line))
    if unchained:
        return EXIT_NOTHING_TO_VERIFY
    return EXIT_INTACT if problems.empty and table.num_rows else EXIT_BROKEN
