"""Fold real bundled samples of every format: the column-wise fold, the handle and the scalar
reducer agree on each, and agent() sees the work the sample records."""

from __future__ import annotations

from pathlib import Path

import pytest

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.fold import ScalarReducer

PROJ = [rk.agent(), rk.harness()]


def _load(fmt: str, data_dir: Path) -> rk.EventLog:
    path = data_dir / fmt
    if not path.exists():
        pytest.fail(f"bundled sample {path} is missing")
    if fmt == "pleach":
        return rk.read_pleach(path)
    return getattr(rk, f"read_{fmt}")(path, owner="demo")


@pytest.mark.parametrize("fmt", ["pleach", "toh", "isplay"])
def test_fold_matches_scalar_and_handle_on_real_sample(fmt: str, data_dir: Path) -> None:
    log = _load(fmt, data_dir)
    assert len(log) > 0
    frame = rk.fold(log, PROJ, state_hash=True)
    ref = ScalarReducer(PROJ)
    for tenant, run in log.runs_df()[["tenant_id", "run_id"]].itertuples(index=False):
        rows = log.run(run, tenant_id=tenant).table.to_pylist()
        expected = [canonical_json(s) for s in ref.states(rows)]
        walked = [canonical_json(s.state) for s in
                  rk.open_replay(log, run, tenant_id=tenant, projections=PROJ)]
        assert walked == expected
        assert [canonical_json(frame.at_step(run, n + 1, tenant_id=tenant))
                for n in range(len(rows))] == expected
    final = frame.final(with_state=False)
    assert final["events"].sum() == len(log)
    assert final["model_calls"].sum() > 0  # every sample records model calls
    if fmt == "pleach":
        assert final["eventCount"].sum() == len(log)
        assert (final["tool_calls"] > 0).any()
