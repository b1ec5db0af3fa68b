"""``replaykit summary``: one row per run of the given logs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .files import check_output

if TYPE_CHECKING:
    pass
from ._inputs import _input_files, _load, _write_quarantine
from ._output import EXIT_OK, _emit_summary, _EmptyAnswer, _info, _UsageError

__all__ = []

# ---------------------------------------------------------------------------- commands
def _summary(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from ..schema import QUARANTINE_SCHEMA, quarantine_table

    if args.quarantine_out and not args.quarantine_out.endswith((".parquet", ".csv")):
        raise _UsageError(f"--quarantine-out {args.quarantine_out}: name a .parquet or a "
                          ".csv file")
    if args.quarantine_out:  # before anything is read: never an input, a link, or a file
        check_output(args.quarantine_out, "--quarantine-out", overwrite=args.overwrite,
                     inputs=_input_files(args.paths))
    try:
        log, skipped = _load(args, args.paths, errors=args.errors, summary=True)
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
