"""Hash-chain benchmarks: column-wise verify_chain vs a plain per-row Python loop.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. The full run
verifies a 1,000,000-row chained log (``quick=True``: 100,000 rows); the baseline is the
obvious per-row loop (build each row's canonical JSON with ``json.dumps``, hash, compare,
check the link), timed on a 100,000-row sample of the same log in the same process.

The derived-column check needs rows a loader derived: a 300,000-row pleach export
(``quick=True``: 50,000) read by ``read_pleach`` is verified with the check (the default)
and without it; its baseline is the per-row loop that also decodes each payload and compares
the columns a pleach row derives from it. Every contender (and baseline) runs interleaved
with the others, best of 3 (``benchmarks._harness``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, tiny
from replaykit.schema import DERIVED_COLUMNS

BASELINE_SAMPLE = 100_000


def _make_log(n: int) -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _chainlogs import make_log

    from replaykit.integrity.chain import stamp_chain

    return stamp_chain(make_log(n, n_runs=max(1, n // 1000)))


def _per_row_loop(rows: list[dict[str, Any]]) -> int:
    """The naive verifier: one dict, one json.dumps, one sha256 and one compare per row."""
    problems = 0
    prev_key = None
    prev_hash = "0" * 64
    for r in rows:
        key = (r["tenant_id"], r["run_id"])
        if key != prev_key:
            prev_key, prev_hash = key, "0" * 64
        ts = r["ts"]
        micros = None if ts is None else int(ts.timestamp() * 1_000_000)
        envelope = json.dumps(
            {
                "run_id": r["run_id"],
                "seq": r["seq"],
                "tenant_id": r["tenant_id"],
                "ts": micros,
                "type": r["type"],
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        content = '{"payload":' + r["payload"] + "," + envelope[1:]
        fmt = r["source"].split(":", 1)[0]
        if fmt != "pleach":  # other formats hash their derived columns too (docs/integrity.md)
            derived = {c: r[c] for c in DERIVED_COLUMNS}
            derived["format"] = fmt
            content = '{"derived":' + json.dumps(derived, sort_keys=True, separators=(",", ":"),
                                                 ensure_ascii=False) + "," + content[1:]
        h = hashlib.sha256((r["prev_hash"] + content).encode("utf-8")).hexdigest()
        if h != r["row_hash"] or r["prev_hash"] != prev_hash:
            problems += 1
        prev_hash = r["row_hash"]
    return problems


def _pleach_log(n: int) -> Any:
    import tempfile

    import replaykit as rk
    from replaykit.datasets import generate_pleach

    with tempfile.TemporaryDirectory() as tmp:
        path = generate_pleach(Path(tmp) / "log.jsonl", events=n, runs=max(1, n // 1000))
        return rk.read_pleach(path, progress=False)


_KINDS = {"tool.called": "tool_call", "tool.completed": "tool_result",
          "model.completed": "model_response", "message.user": "user_message"}


def _per_row_derived_loop(rows: list[dict[str, Any]]) -> int:
    """The naive verifier of derived columns: decode each payload, compare field by field."""
    problems = 0
    for r in rows:
        p = json.loads(r["payload"])
        t = r["type"]
        tool = p.get("tool") if t in ("tool.called", "tool.completed") else None
        ref = p.get("call_id") if t.startswith(("tool.", "model.")) else r["ref_id"]
        usage = p.get("usage") if t == "model.completed" else None
        tokens = (usage or {}).get("input_tokens") if isinstance(usage, dict) else None
        text = p.get("text", p.get("result", p.get("message", p.get("reason"))))
        if t == "tool.called" and p.get("args") is not None:
            text = json.dumps(p["args"], sort_keys=True, separators=(",", ":"),
                              ensure_ascii=False)
            if hashlib.sha256(text.encode()).hexdigest()[:32] != r["args_hash"]:
                problems += 1
        finish = p.get("finish") if t == "model.completed" else None
        if (tool != r["tool_name"] or ref != r["ref_id"] or finish != r["finish"]
                or tokens != r["input_tokens"] or text != r["text"]
                or p.get("cacheKey") != r["cache_key"]
                or _KINDS.get(t, r["kind"]) != r["kind"]):
            problems += 1
    return problems


def _on_reference_path(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with the native core switched off (``REPLAYKIT_NATIVE=0``)."""
    old = os.environ.get("REPLAYKIT_NATIVE")
    os.environ["REPLAYKIT_NATIVE"] = "0"
    try:
        return fn(*args)
    finally:
        if old is None:
            del os.environ["REPLAYKIT_NATIVE"]
        else:
            os.environ["REPLAYKIT_NATIVE"] = old


def _derived_rows(quick: bool) -> list[dict[str, Any]]:
    from replaykit.integrity.verify import verify_chain

    n = tiny(50_000) if quick else 300_000
    log = _pleach_log(n)
    sample = log.table.slice(0, min(BASELINE_SAMPLE, n)).to_pylist()
    res = interleave({  # A B C D, A B C D, ...: best of 3 each
        "with": lambda: verify_chain(log),
        "reference": lambda: _on_reference_path(verify_chain, log),
        "without": lambda: verify_chain(log, derived=False),
        "loop": lambda: _per_row_loop(sample) + _per_row_derived_loop(sample),
    }, repeat=3, keep_value=True)
    assert res["with"].value.empty and res["reference"].value.empty
    assert res["loop"].value == 0  # the naive loops agree the chain and derived columns hold
    with_check, without = res["with"].walls, res["without"].walls
    rate = n / min(with_check)
    base_rate = len(sample) / res["loop"].best_s
    size = f"{n:,} pleach rows"
    return [
        {
            "name": f"verify_chain with derived-column check rows/s ({size})",
            "value": round(rate),
            "unit": "rows/s",
            "baseline": round(base_rate),
            "ratio": round(rate / base_rate, 1),
            "target": ">= 1,500,000 rows/s (baseline: per-row loop, chain + derived columns)",
        },
        {
            "name": f"verify_chain with derived-column check, native core vs its reference "
                    f"path (REPLAYKIT_NATIVE=0) ({size})",
            "value": round(min(with_check), 3),
            "unit": "s",
            "baseline": round(res["reference"].best_s, 3),
            "ratio": round(min(with_check) / res["reference"].best_s, 2),
            "target": "informational: the native core's gain (time native / time reference)",
        },
        {
            "name": f"verify_chain without the derived-column check rows/s ({size})",
            "value": round(n / min(without)),
            "unit": "rows/s",
            "baseline": round(rate),
            "ratio": round(min(with_check) / min(without), 2),
            "target": "reference: what the derived check costs (ratio = time with / without)",
        },
    ]


def run(quick: bool = False) -> list[dict[str, Any]]:
    from replaykit.integrity.chain import stamp_chain
    from replaykit.integrity.content import _content_column
    from replaykit.integrity.verify import verify_chain

    n = tiny(100_000) if quick else 1_000_000
    log = _make_log(n)
    sample = log.table.slice(0, min(BASELINE_SAMPLE, n)).to_pylist()
    res = interleave({  # A B C D, A B C D, ...: best of 3 each (was: a median of 3)
        "verify": lambda: verify_chain(log),
        "content": lambda: _content_column(log.table, strict=False),
        "stamp": lambda: stamp_chain(log, overwrite=True),
        "loop": lambda: _per_row_loop(sample),
    }, repeat=3, keep_value=True)
    assert res["verify"].value.empty
    assert res["loop"].value == 0  # the naive loop agrees the chain is intact
    rate = n / res["verify"].best_s
    content_s = res["content"].best_s
    stamp_rate = n / res["stamp"].best_s
    base_rate = len(sample) / res["loop"].best_s

    size = f"{n:,} rows"
    return [
        {
            "name": f"verify_chain rows/s ({size})",
            "value": round(rate),
            "unit": "rows/s",
            "baseline": round(base_rate),
            "ratio": round(rate / base_rate, 1),
            "target": ">= 1,500,000 rows/s (baseline: plain per-row Python loop)",
        },
        {
            "name": f"verify_chain: canonical bytes built column-wise ({size})",
            "value": round(content_s * 1000, 1),
            "unit": "ms",
            "baseline": None,
            "ratio": None,
            "target": "share of verify time (rest: one sha256 per row + column checks)",
        },
        {
            "name": f"stamp_chain rows/s ({size})",
            "value": round(stamp_rate),
            "unit": "rows/s",
            "baseline": round(base_rate),
            "ratio": round(stamp_rate / base_rate, 1),
            "target": "reference only (sequential by definition)",
        },
        *_derived_rows(quick),
    ]


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
