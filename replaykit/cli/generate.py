"""``replaykit generate``: write a realistic synthetic log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._output import EXIT_OK, _replace_path, _UsageError
from .files import CliFileError, check_parent

__all__ = []

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


def _generate(args: argparse.Namespace) -> int:
    import shutil

    from .. import datasets

    out = Path(args.out)
    check_parent(out, "OUT")
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
    from .._base.files import temp_dir_beside  # mkdtemp's 0700 would be the folder's mode

    tmp = temp_dir_beside(out)
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
