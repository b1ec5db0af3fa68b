"""read_claude_code: the native scan against the reference path, a json.loads loop and polars.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The input is a
folder made by copying the real Claude Code transcripts in ``tests/data/claude_code`` (16
files, 1.4 MB) until it holds >= 200 MB (``quick=True``: >= 40 MB), each copy with fresh
session ids (so every copy is its own sessions, as a real ``~/.claude/projects`` is), under a
temporary folder that is removed afterwards. Contenders, interleaved, best of N, all reading
the files from the (warm) page cache:

- ``native``: ``rk.read_claude_code(folder)`` with the native core (``native/src/transcripts.rs``);
- ``reference``: the same call with ``REPLAYKIT_NATIVE=0`` (the Python reader);
- ``json.loads loop``: every non-blank line of every file through the standard library's
  ``json.loads`` (no mapping at all): the floor a Python reader cannot go under;
- ``polars.read_ndjson``: one DataFrame per file (polars 1.x cannot read the folder as one
  frame: the files' ``message.content`` is text on some lines and a list of blocks on others,
  and one real sample fails on its own, "failed to determine supertype of struct"); it is
  timed on the files it reads, against ``native`` on the same files.

Targets (issue 44): native >= 3x faster than the json.loads loop, and within 1.5x of polars
where polars reads the files.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, tiny

REPEAT = 3
_SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "data" / "claude_code"
_SESSION = re.compile(r'"sessionId"\s*:\s*"([^"]+)"')


def make_folder(root: Path, min_bytes: int) -> tuple[list[Path], int, int]:
    """Copies of the real transcripts under ``root`` until they hold ``min_bytes``, each
    copy's session ids replaced by fresh ones: ``(files, bytes, lines)``."""
    sources = sorted(_SAMPLES.rglob("*.jsonl"))
    texts = [(p.relative_to(_SAMPLES), p.read_text(encoding="utf-8")) for p in sources]
    files: list[Path] = []
    size = lines = 0
    k = 0
    while size < min_bytes:
        rng = uuid.UUID(int=k + 1)
        for rel, text in texts:
            ids = {m.group(1) for m in _SESSION.finditer(text)}
            for sid in ids:
                fresh = str(uuid.uuid5(rng, sid))
                text = text.replace(sid, fresh)
            out = root / f"copy{k:04d}" / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            files.append(out)
            size += len(text.encode("utf-8"))
            lines += sum(1 for x in text.split("\n") if x.strip())
        k += 1
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
        return len(rk.read_claude_code(paths, owner="bench", progress=False))
    finally:
        if saved is None:
            os.environ.pop("REPLAYKIT_NATIVE", None)
        else:
            os.environ["REPLAYKIT_NATIVE"] = saved


def run(quick: bool = False) -> list[dict[str, Any]]:
    min_bytes = tiny(40 << 20) if quick else 200 << 20
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-transcripts-") as tmp:
        root = Path(tmp) / "projects"
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
        }, repeat=REPEAT)
        load1 = os.getloadavg()[0]
    where = (f"{len(files)} files, {size / 2**20:,.0f} MB, {lines:,} lines; best of {REPEAT} "
             f"interleaved; load average {load0:.1f}-{load1:.1f}")
    nat = res["native"].best_s
    for name, target in (("reference", "(the Python reader, REPLAYKIT_NATIVE=0)"),
                         ("json.loads loop", ">= 3 (issue 44)")):
        base = res[name].best_s
        rows.append({"name": f"read_claude_code native vs {name} ({where})",
                     "value": round(nat, 3), "unit": "s", "baseline": round(base, 3),
                     "ratio": round(base / nat, 3), "target": target})
    pn, pp = pol["native (polars-readable files)"].best_s, pol["polars.read_ndjson per file"].best_s
    rows.append({"name": f"read_claude_code native vs polars.read_ndjson on the "
                         f"{len(readable)} of {len(files)} files polars reads ({where})",
                 "value": round(pn, 3), "unit": "s", "baseline": round(pp, 3),
                 "ratio": round(pn / pp, 3), "target": "<= 1.5 (native time / polars time)"})
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick="--quick" in sys.argv):
        print(r)
