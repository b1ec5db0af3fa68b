"""The engine's runner is generic: any kernel and combine step, partition order, errors that
name partitions, resume, and dispatch to the implementation a function's own layer registered.
(Dask's threaded scheduler in this process: no cluster needed.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import replaykit as rk
from replaykit.engine import (
    EngineError,
    Partition,
    concat_frames,
    dispatch,
    implements,
    run_partitions,
    run_to_parquet,
    source_partitions,
)

pytest.importorskip("distributed")


@pytest.fixture(autouse=True)
def _no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    import distributed

    def none() -> None:
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "default_client", none)


@pytest.fixture(scope="module")
def log() -> rk.EventLog:
    return rk.datasets.generate_cohorts(runs=40, seed=5).log


def _count(part: Partition, data: Any) -> tuple[int, int]:
    return part.index, len(part.load(data))


def _runs(part: Partition, data: Any, extra: str) -> pd.DataFrame:
    t = part.load(data).table
    return pd.DataFrame({"run_id": t.column("run_id").to_pylist(), "extra": extra}
                        ).drop_duplicates().reset_index(drop=True)


def _fail_on(part: Partition, data: Any, bad: int) -> int:
    if part.index == bad:
        raise RuntimeError(f"boom in {part.index}")
    return part.index


def _write(part: Partition, data: Any, bad: list[int]) -> tuple[pd.DataFrame, int]:
    if part.index in bad:
        raise RuntimeError("not yet")
    log = part.load(data)
    return pd.DataFrame({"run_id": sorted(set(log.table.column("run_id").to_pylist()))}), len(log)


def test_results_in_partition_order_and_the_combine_step(log: rk.EventLog) -> None:
    parts, data = source_partitions(log, 300)
    assert len(parts) > 2
    got = run_partitions(_count, parts, data=data, desc="count", progress=False)
    assert [i for i, _ in got] == sorted(p.index for p in parts)
    assert sum(n for _, n in got) == len(log)
    total = run_partitions(_count, parts, combine=lambda rs: sum(n for _, n in rs),
                           progress=False)
    assert total == len(log)
    runs = run_partitions(_runs, parts, args=("x",), combine=concat_frames, progress=False)
    assert sorted(runs["run_id"]) == sorted(log.runs_df()["run_id"])
    assert set(runs["extra"]) == {"x"}


def test_a_failing_partition_is_named(log: rk.EventLog) -> None:
    parts, _ = source_partitions(log, 300)
    with pytest.raises(EngineError, match="boom in 1") as info:
        run_partitions(_fail_on, parts, args=(1,), progress=False)
    assert info.value.partition == parts[1].name
    assert isinstance(info.value.cause, RuntimeError)
    with pytest.raises(EngineError, match=f"1 of {len(parts)} partitions failed"):
        run_partitions(_fail_on, parts, args=(1,), fail_fast=False, progress=False)


def test_run_to_parquet_resumes(log: rk.EventLog, tmp_path: Path) -> None:
    parts, _ = source_partitions(log, 300)
    out = tmp_path / "out"
    with pytest.raises(EngineError, match="not yet"):
        run_to_parquet(_write, parts, out, args=([2],), progress=False)
    again = run_to_parquet(_write, parts, out, args=([],), progress=False)
    status = dict(zip(again["partition"], again["status"], strict=True))
    assert status.pop(parts[2].name) == "written"
    assert set(status.values()) == {"skipped"}
    assert int(again["events"].sum()) == len(log)
    back = pd.read_parquet(out)
    assert sorted(back["run_id"]) == sorted(log.runs_df()["run_id"])


def _local(x: int, *, engine: str = "local") -> int:
    return x + 1 if engine == "local" else dispatch(engine, _local, x)


def test_dispatch_reaches_the_registered_implementation() -> None:
    with pytest.raises(NotImplementedError, match="_local"):
        _local(1, engine="dask")
    implements(_local, "dask")(lambda x: x * 10)
    assert _local(4, engine="dask") == 40
    assert _local(4) == 5
    with pytest.raises(ValueError, match="engine must be one of"):
        _local(4, engine="spark")
    with pytest.raises(ValueError):
        implements(_local, "local")


def test_the_four_functions_registered_their_dask_implementations() -> None:
    from replaykit.engine._runner import _IMPLEMENTATIONS

    got = {(f.__module__, f.__name__): impl.__module__
           for (f, e), impl in _IMPLEMENTATIONS.items() if e == "dask"}
    assert got[("replaykit.fold.frame", "fold")] == "replaykit.fold._dask"
    assert got[("replaykit.integrity.verify", "verify_chain")] == "replaykit.integrity._dask"
    assert got[("replaykit.branch.compare", "compare")] == "replaykit.branch._dask"
    assert got[("replaykit.cohorts._core", "cohorts")] == "replaykit.cohorts._dask"
