"""read_parquet: what the partition and tenant checks cost.

``run(quick)`` returns rows ``{name, value, unit, baseline, ratio, target}``. A log of
1,000,000 events (``quick=True``: 200,000) over three tenants is written with
``EventLog.to_parquet(partition_events=...)`` (several files per tenant). The contender is
:func:`replaykit.read_parquet`, which checks every folder name (canonical encoding of a valid
tenant id) and every record batch's ``tenant_id`` against its folder. The baseline is the
same read without the checks, as replaykit did it before they existed: one
``pyarrow.dataset`` hive scan (the folder names the tenant), the same filters pushed down,
the same cast to the canonical schema and the same sorted ``EventLog``. Both read the same
files in the same process, interleaved, best of N (the page cache is warm for both).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, tiny

REPEAT = 7


def _unchecked_read(root: Path, tenant_id: list[str] | None) -> Any:
    """The pre-check read_parquet: the hive partitioning names the tenant, nothing checked."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from replaykit import EventLog
    from replaykit.schema import EVENTS_SCHEMA

    dataset = ds.dataset(root, format="parquet", partitioning=ds.partitioning(
        pa.schema([("tenant_id", pa.string())]), flavor="hive"))
    expr = None if tenant_id is None else ds.field("tenant_id").isin(tenant_id)
    table = dataset.to_table(filter=expr).select(EVENTS_SCHEMA.names)
    table = pa.Table.from_arrays(
        [table.column(f.name).cast(f.type) if table.column(f.name).type != f.type
         else table.column(f.name) for f in EVENTS_SCHEMA],
        schema=EVENTS_SCHEMA,
    ).unify_dictionaries().combine_chunks()
    return EventLog(table)


def _pair(root: Path, tenant_id: list[str] | None, n: int) -> tuple[float, float]:
    import replaykit as rk

    def checked() -> int:
        return len(rk.read_parquet(root, tenant_id=tenant_id))

    def unchecked() -> int:
        return len(_unchecked_read(root, tenant_id))

    # interleaved: both see the same machine load; warmed up by the caller
    res = interleave({"ours": checked, "theirs": unchecked}, repeat=REPEAT, warmup=False,
                     keep_value=True)
    assert res["ours"].value == res["theirs"].value == n, (res["ours"].value, n)
    return res["ours"].best_s, res["theirs"].best_s


def run(quick: bool = False) -> list[dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _chainlogs import make_log

    import replaykit as rk

    n = tiny(200_000) if quick else 1_000_000
    tenants = ("acme", "globex", "initech")
    log = make_log(n, n_runs=max(3, n // 2_000), tenants=tenants)
    with tempfile.TemporaryDirectory(prefix="rk-bench-parquet-") as tmp:
        root = log.to_parquet(Path(tmp) / "events", partition_events=max(1, n // 24))
        files = sum(1 for _ in root.rglob("part-*.parquet"))
        rk.read_parquet(root)  # warm-up (page cache, imports)
        _unchecked_read(root, None)
        one = len(log.filter(tenant_id="acme"))
        load0 = os.getloadavg()[0]
        all_s, all_base = _pair(root, None, n)
        one_s, one_base = _pair(root, ["acme"], one)
        load1 = os.getloadavg()[0]
    rows = []
    for label, events, ours, base in (("all tenants", n, all_s, all_base),
                                      ("one tenant", one, one_s, one_base)):
        rows.append({
            "name": f"read_parquet with partition + tenant checks, {label} "
                    f"({events:,} events, {files} files)",
            "value": round(ours, 3),
            "unit": "s",
            "baseline": round(base, 3),
            "ratio": round(ours / base, 3),
            "target": "<= 1.10 (at most 10% lost to the checks; baseline: the same read "
                      f"unchecked, hive scan); best of {REPEAT} interleaved, load average "
                      f"{load0:.1f}-{load1:.1f}",
        })
    return rows


if __name__ == "__main__":  # pragma: no cover
    for row in run(quick="--quick" in sys.argv):
        print(row)
