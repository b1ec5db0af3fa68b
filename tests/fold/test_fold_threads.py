"""The two-thread fold path gives exactly what the serial path and the scalar reducer give.

Small tables normally fold on the calling thread (``PARALLEL_MIN_ROWS``); these tests force the
threaded path on small inputs so that property tests reach it.
"""

from __future__ import annotations

import importlib
import multiprocessing
import threading
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _fold_strategies import logs
from hypothesis import given, settings

import replaykit as rk
from replaykit._base.json import canonical_json
from replaykit.fold import counter, engine, reducer, reference_fold
from replaykit.fold.hashing import state_hash
from replaykit.fold.synth import synthetic_log

FRAME = importlib.import_module("replaykit.fold.frame")  # rk.fold is the function


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(engine, "_workers", lambda: 2)
    monkeypatch.setattr(FRAME, "PARALLEL_MIN_ROWS", 0)


def _serial(log: Any, proj: Any) -> Any:
    old = (engine.PARALLEL_MIN_ROWS, FRAME.PARALLEL_MIN_ROWS)
    engine.PARALLEL_MIN_ROWS = FRAME.PARALLEL_MIN_ROWS = 10**12
    try:
        sf = rk.fold(log, proj)
        return sf, sf.steps_df()
    finally:
        engine.PARALLEL_MIN_ROWS, FRAME.PARALLEL_MIN_ROWS = old


def test_threaded_fold_equals_serial_fold(threads: None) -> None:
    log = synthetic_log(20_000, 40, seed=5)
    proj = [rk.agent(), rk.harness()]
    serial, serial_df = _serial(log, proj)
    sf = rk.fold(log, proj)
    np.testing.assert_array_equal(sf.state_hash(), serial.state_hash())
    pd.testing.assert_frame_equal(sf.steps_df(), serial_df)
    rng = np.random.default_rng(1)
    starts = sf._cols.starts
    for i in rng.integers(0, len(log), 50):
        s = int(starts[np.searchsorted(starts, i, side="right") - 1])
        assert sf.state_at_row(int(i), s) == serial.state_at_row(int(i), s)


@settings(max_examples=30, deadline=None)
@given(logs)
def test_threaded_fold_matches_the_scalar_reducer(log: Any) -> None:
    saved = (engine.PARALLEL_MIN_ROWS, engine._workers)
    engine.PARALLEL_MIN_ROWS, engine._workers = 0, lambda: 2  # type: ignore[assignment]
    try:
        sf = rk.fold(log, [rk.agent(), rk.harness()])
        df = sf.steps_df()
    finally:
        engine.PARALLEL_MIN_ROWS, engine._workers = saved  # type: ignore[assignment]
    ref = reference_fold(log.table, [rk.agent(), rk.harness()])
    assert len(df) == len(ref)
    hashes = sf.state_hash()
    starts = sf._cols.starts
    for i, want in enumerate(ref):
        s = int(starts[np.searchsorted(starts, i, side="right") - 1])
        got = sf.state_at_row(i, s)
        assert canonical_json(got) == canonical_json(want)
        assert int(hashes[i]) == state_hash(want)
        assert int(df["open_tool_calls_size"].iloc[i]) == len(want["open_tool_calls"])
        assert int(df["tool_calls"].iloc[i]) == want["tool_calls"]


def test_reducer_fields_run_on_the_calling_thread(threads: None) -> None:
    seen: set[str] = set()

    def count(acc: int, ev: dict[str, Any]) -> int:
        seen.add(threading.current_thread().name)
        return acc + 1

    log = synthetic_log(2_000, 4, seed=3)
    proj = rk.projection("p", n=reducer(count, initial=0), calls=counter(kinds="tool_call"))
    sf = rk.fold(log, proj)
    assert seen == {threading.current_thread().name}
    assert int(sf.final(with_state=True)["state"].map(lambda s: s["n"]).sum()) == len(log)


def _fold_in_child(q: Any) -> None:
    log = synthetic_log(3_000, 5, seed=9)
    q.put(int(rk.fold(log, rk.agent()).state_hash().sum(dtype=np.uint64)))


def test_a_forked_child_folds_with_a_pool_of_its_own(threads: None) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    log = synthetic_log(3_000, 5, seed=9)
    want = int(rk.fold(log, rk.agent()).state_hash().sum(dtype=np.uint64))  # pool started
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_fold_in_child, args=(q,))
    p.start()
    try:
        got = q.get(timeout=60)  # the inherited pool has no threads: a hang here is the bug
        p.join(timeout=60)
    finally:
        if p.is_alive():
            p.terminate()
            p.join()
    assert got == want and p.exitcode == 0
