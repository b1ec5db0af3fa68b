"""The RCA report's data model, as plain JSON, for the differential test of issue 44 item 4.

``model(result)`` builds ``rk.report.rca(result)`` and returns what the page says, as
values: ``diff_df``'s statuses (with both sides' seqs), every row of ``changes_df`` (the
complete diffs), the summary's sentences, its unsupported rows and open requirements, the
metrics and the first divergence. ``cases()`` builds the generated replays it is recorded
for. ``PYTHONPATH=. python tests/report/rca_frozen_model.py`` (from the repository root)
rewrites ``tests/report/data/rca_frozen.json`` from the current code; the file committed
was written by the implementation before the report was made faster (this branch at
commit 5b2e269; the ``html`` digests were added from a checkout of ae6bf83 on
``PYTHONPATH``, whose report code differs from 5b2e269 in import paths only, and which gave
every other value unchanged), and ``test_report_frozen.py`` compares today's code with it.
``html`` holds a digest of each section of the page (the reproducibility stamp and the
figures aside: a figure's JSON follows plotly's process-wide template, which other tests
change): the page renders the same values the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FROZEN = Path(__file__).resolve().parent / "data" / "rca_frozen.json"
DATA = Path(__file__).resolve().parents[2] / "data" / "isplay"
#: (events, seed) of the generated bench-like replays (greedy decoding after a checkpoint
#: at 10 %, one changed tool call answered by a fixture: copied-output findings throughout)
GENERATED = ((700, 7), (1_500, 3), (2_600, 11))


def _plain(v: Any) -> Any:
    """JSON-able and comparable: NaN / NA as None, numpy scalars as Python ones."""
    import pandas as pd

    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _rows(df: Any) -> list[list[Any]]:
    return [_plain(list(r)) for r in df.itertuples(index=False, name=None)]


def model(result: Any) -> dict[str, Any]:
    """What ``rk.report.rca(result)`` computed, as plain JSON values."""
    import replaykit as rk

    rep = rk.report.rca(result, title="frozen", question="what changes?")
    s = rep.data["summary"]
    ch = rep.data["changes"]
    diff = result.diff_df()
    return {
        "diff": {"columns": list(diff.columns), "rows": _rows(diff)},
        "changes": {"columns": list(ch.columns), "rows": _rows(ch)},
        "summary": {"rows": _plain(s.rows), "answer": s.answer, "verdict": s.verdict,
                    "counts": _plain(s.counts),
                    "unsupported": {"columns": list(s.unsupported.columns),
                                    "rows": _rows(s.unsupported)},
                    "requirements": _plain(s.requirements),
                    "values": {"columns": list(s.values.columns), "rows": _rows(s.values)}},
        "metrics": _plain(rep.data["metrics"]),
        "first_divergence": _plain(rep.data["first_divergence"]),
        "sections": rep.sections,
        # every section's HTML but the reproducibility stamp (its time and versions) and the
        # figures (their JSON follows plotly's process-wide template, which other tests set)
        "html": {sid: digest(body) for sid, body in re.findall(
            r'<section id="([^"]+)">(.*?)</section>', rep.html, flags=re.S)
            if sid not in ("repro", "figures")},
    }


def digest(part: Any) -> str:
    """sha256 of a part's canonical JSON (large parts are frozen as digests and counts)."""
    text = json.dumps(part, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cases(folder: Path) -> Iterator[tuple[str, Any]]:
    """(name, ReplayResult) of each recorded case: the generated replays and the bundled
    sample's branch (a tool no longer offered: tool_not_offered findings), with its fixtures
    (completed) and without (paused at the divergent call: open requirements)."""
    import replaykit as rk
    from benchmarks.bench_report import make_case

    for n, seed in GENERATED:
        d = make_case(folder / f"n{n}-s{seed}", n, seed=seed)
        log = rk.read_isplay(d / "log", owner="bench", progress=False)
        branch = rk.Branch.load(d / "branch.json", base=log, tenant_id="bench")
        yield f"generated-{n}-seed{seed}", rk.replay(
            branch, model_policy="recorded-only", tool_policy="pause-for-fixture",
            fixtures=d / "fixtures.json")
    log = rk.read_isplay(DATA, owner="demo", progress=False)
    for fixtures in (DATA / "fixtures.json", None):
        branch = rk.Branch.load(DATA / "branch-drop-fraud-clause.json", base=log,
                                tenant_id="demo")
        yield ("demo-fixtures" if fixtures else "demo-paused"), rk.replay(
            branch, model_policy="recorded-only", tool_policy="pause-for-fixture",
            fixtures=fixtures)


#: parts frozen in full (the others as a digest plus their row count and first rows)
FULL = ("summary", "metrics", "first_divergence", "sections", "html")
HEAD_ROWS = 25


def freeze(got: dict[str, Any]) -> dict[str, Any]:
    """The stored form of :func:`model`'s answer: small parts in full; the diff, the
    changes and the summary's unsupported rows and values as digest, row count and their
    first rows."""
    out: dict[str, Any] = {k: got[k] for k in FULL}
    out["summary"] = dict(got["summary"])
    for part, k in (("summary", "unsupported"), ("summary", "values"), (None, "diff"),
                    (None, "changes")):
        src = got[part][k] if part else got[k]
        short = {"columns": src["columns"], "n": len(src["rows"]),
                 "head": src["rows"][:HEAD_ROWS], "sha256": digest(src["rows"])}
        if part:
            out[part][k] = short
        else:
            out[k] = short
    return out


def main() -> None:
    frozen: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        for name, res in cases(Path(d)):
            frozen[name] = freeze(model(res))
            print(name, frozen[name]["changes"]["n"], "change rows", file=sys.stderr)
    FROZEN.write_text(json.dumps(frozen, indent=1, ensure_ascii=False, sort_keys=True)
                      + "\n", encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    main()
