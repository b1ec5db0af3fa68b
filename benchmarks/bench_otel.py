"""read_otel on OTLP/JSON lines: the native decoder against the reference, json.loads, polars.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The input is
the real OTel samples (``tests/data/otel``, ``data/otel``: OpenLIT, Langtrace, LiteLLM,
Vercel, OpenLLMetry, OpenInference, openai-v2 exports) copied, one document per line, into a
``.jsonl`` file under the system temp folder (never in the repository) until it holds
>= 200 MB (``quick``: 20 MB); each copy gets its own trace ids (and conversation ids), so no
span is a duplicate. Contenders, interleaved, best of N, in this process (the page cache is
warm for all):

- ``native``: :func:`replaykit.read_otel` with the native core (``REPLAYKIT_NATIVE=1``);
- ``reference``: the same with ``REPLAYKIT_NATIVE=0`` (every document through ``loads`` and
  the Python OTLP decoder);
- ``decode``: the native part alone (``_nativepath.native_documents``: the core's pass plus
  the one orjson decode of each document's records), which is what the issue's target is
  about (the mapping to events is the reference's for both paths);
- ``json.loads``: a plain ``json.loads`` loop over the same lines (the documents only);
- ``polars``: ``polars.read_ndjson`` over the same file (one row per document; polars has
  to infer a schema for the nested ``resourceSpans`` lists; it reads these files).
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, is_tiny, tiny

REPEAT = 3
ROOT = Path(__file__).resolve().parents[1]


def _samples() -> list[str]:
    files = sorted([*(ROOT / "tests" / "data" / "otel").rglob("*.json"),
                    *(ROOT / "data" / "otel").rglob("*.json")])
    return [json.dumps(json.loads(f.read_bytes()), separators=(",", ":")) for f in files]


_TRACE = re.compile(r'"traceId":"([^"]+)"')
_CONV = re.compile(r'("gen_ai\.conversation\.id","value":\{"stringValue":")([^"]*)"')


def _retag(trace: str, k: int) -> str:
    """A trace id (hex or base64, as the samples write it) with its last 4 bytes set to k."""
    if len(trace) == 32:
        return trace[:24] + f"{k:08x}"
    raw = base64.b64decode(trace)
    return base64.b64encode(raw[:-4] + k.to_bytes(4, "big")).decode()


def write_file(path: Path, size: int) -> int:
    """Copy the samples into ``path`` as JSON lines until it holds ``size`` bytes; the
    number of lines. Trace ids and conversation ids differ from copy to copy."""
    docs = _samples()
    n = written = k = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < size:
            for d in docs:
                line = _TRACE.sub(lambda m, k=k: f'"traceId":"{_retag(m.group(1), k)}"', d)
                line = _CONV.sub(lambda m, k=k: f'{m.group(1)}{m.group(2)}-{k:08x}"', line)
                fh.write(line + "\n")
                written += len(line) + 1
                n += 1
            k += 1
    return n


def run(quick: bool = False) -> list[dict[str, Any]]:
    import replaykit as rk
    from replaykit._base import native as _native
    from replaykit.io.otel import _nativepath

    size = tiny(20_000_000) if quick else 200_000_000
    with tempfile.TemporaryDirectory(prefix="rk-bench-otel-") as tmp:
        path = Path(tmp) / "otel.jsonl"
        lines = write_file(path, size)
        mb = path.stat().st_size / 1e6

        def read(native: bool) -> int:
            os.environ["REPLAYKIT_NATIVE"] = "1" if native else "0"
            try:
                return len(rk.read_otel(path, owner="bench", errors="quarantine",
                                        progress=False))
            finally:
                os.environ.pop("REPLAYKIT_NATIVE", None)

        def decode() -> int:
            got = _nativepath.native_documents(path.read_bytes(), True)
            assert got is not None
            return sum(len(r.spans) + len(r.logs) for *_, r in got if r is not None)

        def loads_loop() -> int:
            n = 0
            with open(path, "rb") as fh:
                for raw in fh:
                    json.loads(raw)
                    n += 1
            return n

        contenders: dict[str, Any] = {"json.loads": loads_loop, "reference": lambda: read(False)}
        if _native.available():
            contenders = {"native": lambda: read(True), "decode": decode, **contenders}
        try:
            import polars as pl

            contenders["polars"] = lambda: pl.read_ndjson(path).height
        except ImportError:  # pragma: no cover - polars is in the dev environment
            pass
        res = interleave(contenders, repeat=1 if is_tiny() else REPEAT,
                         warmup=False, keep_value=True)
        if "native" in res:
            assert res["native"].value == res["reference"].value
    rows = []
    base = res["json.loads"]
    for name, r in res.items():
        ratio = base.best_s / r.best_s if r.best_s else None
        rows.append({"name": f"otel {name}: {mb:,.0f} MB, {lines:,} lines (best of "
                     f"{len(r.walls)}, interleaved; CPU {r.cpu_s:.3g} s)",
                     "value": round(r.best_s, 4), "unit": "s",
                     "baseline": round(base.best_s, 4),
                     "ratio": None if ratio is None else round(ratio, 3),
                     "target": ">= 3x json.loads" if name in ("native", "decode") else ""})
    if "polars" in res and "decode" in res:
        rows.append({"name": "otel decode vs polars.read_ndjson (time / polars' time)",
                     "value": round(res["decode"].best_s, 4), "unit": "s",
                     "baseline": round(res["polars"].best_s, 4),
                     "ratio": round(res["decode"].best_s / res["polars"].best_s, 3),
                     "target": "<= 1.5"})
    print("\n".join(f"{r['name']}: {r['value']} s (json.loads loop {r['baseline']} s, "
                    f"ratio {r['ratio']})" for r in rows), file=sys.stderr)
    return rows


if __name__ == "__main__":  # python -m benchmarks.bench_otel [--quick]
    run(quick="--quick" in sys.argv)
