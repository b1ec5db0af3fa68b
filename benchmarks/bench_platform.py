"""read_phoenix: the native scan against the reference path, a json.loads loop and polars.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The input is a
folder made by copying the real Phoenix span exports in ``tests/data/phoenix/recorded`` (the
span-dataframe and the REST shape, 26 KB of JSON Lines) until it holds >= 200 MB
(``quick=True``: >= 40 MB), each copy with fresh trace ids of the same length (so every copy
is its own traces, and the two shapes of one recording are different traces), written into
files of about 8 MB, under a temporary folder that is removed afterwards. Contenders,
interleaved, best of N, all reading the files from the (warm) page cache:

- ``native``: ``rk.read_phoenix(folder)`` with the native core (``native/src/platform.rs``);
- ``reference``: the same call with ``REPLAYKIT_NATIVE=0`` (the Python reader);
- ``json.loads loop``: every non-blank line of every file through the standard library's
  ``json.loads`` (no mapping at all);
- ``polars.read_ndjson``: one DataFrame per file, on the files polars reads (the REST shape's
  ``attributes`` objects have different keys per span kind; see the row's name for how many
  files it read).

Targets (issue 44): native >= 3x faster than the json.loads loop, and within 1.5x of polars
where polars reads the files.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, tiny

REPEAT = 3
FILE_BYTES = 8 << 20
_SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "data" / "phoenix" / "recorded"


def _trace_ids(text: str) -> list[str]:
    ids = set()
    for raw in text.splitlines():
        if raw.strip():
            d = json.loads(raw)
            ids.add(d.get("context.trace_id") or (d.get("context") or {}).get("trace_id"))
    return sorted(i for i in ids if isinstance(i, str))


def make_folder(root: Path, min_bytes: int) -> tuple[list[Path], int, int]:
    """Copies of the real exports under ``root`` until they hold ``min_bytes``, each copy's
    trace ids replaced by fresh ones of the same length: ``(files, bytes, lines)``."""
    texts = [(p.read_text(encoding="utf-8"), ) for p in sorted(_SAMPLES.glob("*.jsonl"))]
    shapes = [(t[0], _trace_ids(t[0])) for t in texts]
    root.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    size = lines = 0
    k = 0
    chunk: list[str] = []
    chunk_bytes = 0

    def flush() -> None:
        nonlocal chunk, chunk_bytes
        if chunk:
            p = root / f"spans-{len(files):04d}.jsonl"
            p.write_text("".join(chunk), encoding="utf-8")
            files.append(p)
            chunk, chunk_bytes = [], 0

    while size < min_bytes:
        for text, ids in shapes:
            for tid in ids:
                text = text.replace(tid, tid[:-10] + f"{k:010x}")
            k += 1
            n = len(text.encode("utf-8"))
            chunk.append(text if text.endswith("\n") else text + "\n")
            chunk_bytes += n
            size += n
            lines += sum(1 for x in text.split("\n") if x.strip())
            if chunk_bytes >= FILE_BYTES:
                flush()
    flush()
    return files, size, lines


def _loads_loop(files: list[Path]) -> int:
    n = 0
    for p in files:
        with open(p, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    json.loads(raw)
                    n += 1
    return n


def _polars(files: list[Path]) -> int:
    import polars as pl

    return sum(pl.read_ndjson(p).height for p in files)


def _polars_readable(files: list[Path]) -> list[Path]:
    import polars as pl

    ok = []
    for p in files:
        try:
            pl.read_ndjson(p)
        except Exception:  # noqa: BLE001 - polars' own errors: the file is left out
            continue
        ok.append(p)
    return ok


def _read(paths: Any, native: bool) -> int:
    import replaykit as rk

    saved = os.environ.get("REPLAYKIT_NATIVE")
    os.environ["REPLAYKIT_NATIVE"] = "1" if native else "0"
    try:
        return len(rk.read_phoenix(paths, owner="bench", progress=False))
    finally:
        if saved is None:
            os.environ.pop("REPLAYKIT_NATIVE", None)
        else:
            os.environ["REPLAYKIT_NATIVE"] = saved


def run(quick: bool = False) -> list[dict[str, Any]]:
    min_bytes = tiny(40 << 20) if quick else 200 << 20
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-platform-") as tmp:
        root = Path(tmp) / "phoenix"
        files, size, lines = make_folder(root, min_bytes)
        readable = _polars_readable(files)
        load0 = os.getloadavg()[0]
        res = interleave({
            "native": lambda: _read(root, True),
            "reference": lambda: _read(root, False),
            "json.loads loop": lambda: _loads_loop(files),
        }, repeat=REPEAT, keep_value=True)
        assert res["native"].value == res["reference"].value
        assert res["json.loads loop"].value == lines
        pol = interleave({
            "native (polars-readable files)": lambda: _read(readable, True),
            "polars.read_ndjson per file": lambda: _polars(readable),
        }, repeat=REPEAT) if readable else None
        load1 = os.getloadavg()[0]
    where = (f"{len(files)} files, {size / 2**20:,.0f} MB, {lines:,} lines; best of {REPEAT} "
             f"interleaved; load average {load0:.1f}-{load1:.1f}")
    nat = res["native"].best_s
    for name, target in (("reference", "(the Python reader, REPLAYKIT_NATIVE=0)"),
                         ("json.loads loop", ">= 3 (issue 44)")):
        base = res[name].best_s
        rows.append({"name": f"read_phoenix native vs {name} ({where})",
                     "value": round(nat, 3), "unit": "s", "baseline": round(base, 3),
                     "ratio": round(base / nat, 3), "target": target})
    if pol is not None:
        pn = pol["native (polars-readable files)"].best_s
        pp = pol["polars.read_ndjson per file"].best_s
        rows.append({"name": f"read_phoenix native vs polars.read_ndjson on the "
                             f"{len(readable)} of {len(files)} files polars reads ({where})",
                     "value": round(pn, 3), "unit": "s", "baseline": round(pp, 3),
                     "ratio": round(pn / pp, 3), "target": "<= 1.5 (native time / polars time)"})
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick="--quick" in sys.argv):
        print(r)
