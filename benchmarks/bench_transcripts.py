"""read_claude_code and read_codex: the native scans against the reference path, a json.loads
loop and polars.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``, for each format
in turn. The input is a folder made by copying the format's real samples
(``tests/data/claude_code``: 16 files, 1.4 MB; ``tests/data/codex``: 6 rollouts, 0.7 MB) until
it holds >= 200 MB (``quick=True``: >= 40 MB), each copy with fresh session ids (so every copy
is its own sessions, as a real ``~/.claude/projects`` or ``~/.codex/sessions`` is), under a
temporary folder that is removed afterwards. Contenders, interleaved, best of N, all reading
the files from the (warm) page cache:

- ``native``: ``rk.read_claude_code(folder)`` / ``rk.read_codex(folder)`` with the native core
  (``native/src/transcripts.rs`` / ``codex.rs``);
- ``reference``: the same call with ``REPLAYKIT_NATIVE=0`` (the Python reader);
- ``json.loads loop``: every non-blank line of every file through the standard library's
  ``json.loads`` (no mapping at all): the floor a Python reader cannot go under;
- ``polars.read_ndjson``: one DataFrame per file, timed on the files it reads, against
  ``native`` on the same files (some Claude Code files fail on their own, "failed to
  determine supertype of struct"); and, where polars reads them (the Codex rollouts, polars
  2.1; not Claude Code's, whose ``message.content`` is text on some lines and a list of
  blocks on others), all the files as one frame (``read_ndjson`` of the list of paths);
- scaling: ``native`` on 1 thread against 2 (``REPLAYKIT_THREADS``; the whole read, the
  Python assembly of the table included).

Targets (issue 44): native >= 3x faster than the json.loads loop, and within 1.5x of polars
where polars reads the files; 1 -> 2 cores >= 1.8x.
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
_DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
_SAMPLES = _DATA / "claude_code"
_SESSION = re.compile(r'"sessionId"\s*:\s*"([^"]+)"')
#: per format: its samples, where its session ids are written, its reader's name
FORMATS: dict[str, tuple[Path, re.Pattern[str], str]] = {
    "claude_code": (_SAMPLES, _SESSION, "read_claude_code"),
    # a rollout's id: its session_meta's, also in its file name
    "codex": (_DATA / "codex", re.compile(r'"type":"session_meta","payload":\{"id":"([^"]+)"'),
              "read_codex"),
}


def make_folder(root: Path, min_bytes: int, fmt: str = "claude_code"
                ) -> tuple[list[Path], int, int]:
    """Copies of the format's real samples under ``root`` until they hold ``min_bytes``,
    each copy's session ids (in the text and the file name) replaced by fresh ones:
    ``(files, bytes, lines)``."""
    samples, session, _ = FORMATS[fmt]
    sources = sorted(samples.rglob("*.jsonl"))
    texts = [(p.relative_to(samples), p.read_text(encoding="utf-8")) for p in sources]
    files: list[Path] = []
    size = lines = 0
    k = 0
    while size < min_bytes:
        rng = uuid.UUID(int=k + 1)
        for rel, text in texts:
            ids = {m.group(1) for m in session.finditer(text)}
            name = str(rel)
            for sid in ids:
                fresh = str(uuid.uuid5(rng, sid))
                text = text.replace(sid, fresh)
                name = name.replace(sid, fresh)
            out = root / f"copy{k:04d}" / name
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


def _polars_list(files: list[Path]) -> int:
    import polars as pl

    return pl.read_ndjson(files).height


def _polars_reads_list(files: list[Path]) -> bool:
    """Whether polars reads the files as one frame (a list of paths)."""
    try:
        _polars_list(files)
    except Exception:  # noqa: BLE001 - polars' own errors: it does not
        return False
    return True


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


def _read(paths: Any, native: bool, fmt: str = "claude_code", threads: int | None = None
          ) -> int:
    import replaykit as rk

    saved = {k: os.environ.get(k) for k in ("REPLAYKIT_NATIVE", "REPLAYKIT_THREADS")}
    os.environ["REPLAYKIT_NATIVE"] = "1" if native else "0"
    if threads is not None:
        os.environ["REPLAYKIT_THREADS"] = str(threads)
    try:
        return len(getattr(rk, FORMATS[fmt][2])(paths, owner="bench", progress=False))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(quick: bool = False) -> list[dict[str, Any]]:
    return [r for fmt in FORMATS for r in run_format(fmt, quick)]


def run_format(fmt: str, quick: bool = False) -> list[dict[str, Any]]:
    """The figures of one format (``claude_code`` or ``codex``)."""
    min_bytes = tiny(40 << 20) if quick else 200 << 20
    reader = FORMATS[fmt][2]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rk-bench-transcripts-") as tmp:
        root = Path(tmp) / "sessions"
        files, size, lines = make_folder(root, min_bytes, fmt)
        readable = _polars_readable(files)
        load0 = os.getloadavg()[0]
        res = interleave({
            "native": lambda: _read(root, True, fmt),
            "reference": lambda: _read(root, False, fmt),
            "json.loads loop": lambda: _loads_loop(files),
        }, repeat=REPEAT, keep_value=True)
        assert res["native"].value == res["reference"].value
        assert res["json.loads loop"].value == lines
        pol = interleave({
            "native (polars-readable files)": lambda: _read(readable, True, fmt),
            "polars.read_ndjson per file": lambda: _polars(readable),
        }, repeat=REPEAT) if readable else None
        whole = interleave({
            "native": lambda: _read(root, True, fmt),
            "polars.read_ndjson of the file list": lambda: _polars_list(files),
        }, repeat=REPEAT) if _polars_reads_list(files) else None
        scale = interleave({
            "native, 1 thread": lambda: _read(root, True, fmt, threads=1),
            "native, 2 threads": lambda: _read(root, True, fmt, threads=2),
        }, repeat=REPEAT)
        load1 = os.getloadavg()[0]
    where = (f"{len(files)} files, {size / 2**20:,.0f} MB, {lines:,} lines; best of {REPEAT} "
             f"interleaved; load average {load0:.1f}-{load1:.1f}")
    nat = res["native"].best_s
    for name, target in (("reference", "(the Python reader, REPLAYKIT_NATIVE=0)"),
                         ("json.loads loop", ">= 3 (issue 44)")):
        base = res[name].best_s
        rows.append({"name": f"{reader} native vs {name} ({where})",
                     "value": round(nat, 3), "unit": "s", "baseline": round(base, 3),
                     "ratio": round(base / nat, 3), "target": target})
    if pol is None:
        rows.append({"name": f"{reader} native vs polars.read_ndjson: polars reads none of "
                             f"the {len(files)} files ({where})", "value": None, "unit": "s",
                     "baseline": None, "ratio": None, "target": "<= 1.5 where polars reads"})
    else:
        pn = pol["native (polars-readable files)"].best_s
        pp = pol["polars.read_ndjson per file"].best_s
        rows.append({"name": f"{reader} native vs polars.read_ndjson on the "
                             f"{len(readable)} of {len(files)} files polars reads ({where})",
                     "value": round(pn, 3), "unit": "s", "baseline": round(pp, 3),
                     "ratio": round(pn / pp, 3), "target": "<= 1.5 (native time / polars time)"})
    if whole is not None:
        pn, pp = whole["native"].best_s, whole["polars.read_ndjson of the file list"].best_s
        rows.append({"name": f"{reader} native vs polars.read_ndjson of all {len(files)} files "
                             f"as one frame ({where})",
                     "value": round(pn, 3), "unit": "s", "baseline": round(pp, 3),
                     "ratio": round(pn / pp, 3), "target": "<= 1.5 (native time / polars time)"})
    one, two = scale["native, 1 thread"].best_s, scale["native, 2 threads"].best_s
    rows.append({"name": f"{reader} native, 1 -> 2 threads (REPLAYKIT_THREADS; {where})",
                 "value": round(two, 3), "unit": "s", "baseline": round(one, 3),
                 "ratio": round(one / two, 3), "target": ">= 1.8 (issue 44)"})
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick="--quick" in sys.argv):
        print(r)
