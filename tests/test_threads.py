"""replaykit's one thread-count setting (``replaykit._base.native.threads``) and its plumbing.

The default is the cores the process may use (its affinity mask), capped by
``REPLAYKIT_THREADS`` and a call's ``threads=``; a bad value is a ``SettingError`` naming the
variable and a fix. The count never changes a result: the readers, ``verify_chain``, ``fold``
and the native gathers give identical output on 1 and on 3 threads (3 here even on a smaller
machine: the affinity mask is faked so the cap is what decides).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import native as _native
from replaykit.datasets import generate_toh
from replaykit.errors import ReplayKitError, SettingError

ENV = "REPLAYKIT_THREADS"


@pytest.fixture
def eight_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process may run on 8 cores (its affinity mask, faked), REPLAYKIT_THREADS unset."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.delenv(ENV, raising=False)


@pytest.fixture(scope="module")
def pleach_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 20k-event export with its rows shuffled (so the loader gathers them into run order)
    and a few rows tampered with (so verify_chain has problems to report)."""
    root = tmp_path_factory.mktemp("threads")
    src = rk.datasets.generate_pleach(root / "src.jsonl", events=20_000, runs=120, seed=8)
    lines = src.read_bytes().splitlines(keepends=True)
    rng = random.Random(3)
    rng.shuffle(lines)
    for i in rng.sample(range(len(lines)), 5):
        row = json.loads(lines[i])
        row["payload"]["tampered"] = True
        lines[i] = (json.dumps(row) + "\n").encode()
    f = root / "shuffled.jsonl"
    f.write_bytes(b"".join(lines))
    return f


def _same_log(a: rk.EventLog, b: rk.EventLog) -> None:
    assert a.table.schema == b.table.schema
    assert a.table.equals(b.table)
    assert a.runs.equals(b.runs)
    assert a.quarantine.equals(b.quarantine)


# ----------------------------------------------------------------------------- the setting
def test_default_is_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    for mask in ({0}, {0, 3}, {1, 2, 5}, set(range(12))):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, m=mask: set(m),
                            raising=False)
        assert _native.cores() == len(mask)
        assert _native.threads() == len(mask)


def test_real_default_matches_the_process_affinity() -> None:
    if ENV in os.environ:
        pytest.skip(f"{ENV} is set")
    assert _native.threads() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize(("env", "arg", "want"), [
    (None, None, 8), ("3", None, 3), (" 5 ", None, 5), ("64", None, 8), ("", None, 8),
    (None, 2, 2), ("3", 6, 3), ("6", 2, 2), (None, 100, 8), ("1", None, 1),
])
def test_env_and_argument_cap_the_cores(eight_cores: None, monkeypatch: pytest.MonkeyPatch,
                                        env: str | None, arg: int | None, want: int) -> None:
    if env is not None:
        monkeypatch.setenv(ENV, env)
    assert _native.threads(arg) == want


@pytest.mark.parametrize("bad", ["0", "-2", "two", "2.5", "1e3", "4 threads"])
def test_bad_env_value_is_a_setting_error(eight_cores: None, monkeypatch: pytest.MonkeyPatch,
                                          bad: str, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(SettingError) as err:
        _native.threads()
    assert err.value.setting == ENV and err.value.value == bad
    assert f"{ENV}={bad!r}" in str(err.value) and "whole number" in str(err.value)
    assert "unset it" in str(err.value)
    # a loader raises it too (a ReplayKitError), before reading anything
    f = rk.datasets.generate_pleach(tmp_path / "a.jsonl", events=20, runs=1)
    with pytest.raises(ReplayKitError, match=ENV):
        rk.read_pleach(f)


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "3"])
def test_bad_threads_argument_is_a_setting_error(eight_cores: None, bad: Any) -> None:
    with pytest.raises(SettingError) as err:
        _native.threads(bad if bad != "3" else "three")
    assert err.value.setting == "threads="
    assert isinstance(err.value, ValueError)


def test_using_threads_sets_the_core_and_arrow_and_restores_arrow(eight_cores: None) -> None:
    before = pa.cpu_count()
    with _native.using_threads(3) as n:
        assert n == 3 and _native.threads() == 3
        assert pa.cpu_count() == 3
        assert _native.core().get_threads() == 3
        with _native.using_threads(5) as inner:  # nested: the smallest cap applies
            assert inner == 3 and _native.threads() == 3 and pa.cpu_count() == 3
        with _native.using_threads(2):
            assert _native.threads() == 2 and pa.cpu_count() == 2
            assert _native.core().get_threads() == 2
        assert pa.cpu_count() == 3
    assert pa.cpu_count() == before
    assert _native.core().get_threads() == _native.threads() == 8


def test_using_threads_restores_arrow_after_an_error(eight_cores: None) -> None:
    before = pa.cpu_count()
    with pytest.raises(KeyError), _native.using_threads(1):
        raise KeyError("x")
    assert pa.cpu_count() == before and _native.threads() == 8


# ----------------------------------------------------------------------------- identical output
def test_read_pleach_same_table_on_1_and_3_threads(
        pleach_file: Path, eight_cores: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import replaykit.io.pleach as pleach

    pools: list[int] = []
    real = pleach.ThreadPoolExecutor

    def spy(n: int, *a: Any, **k: Any) -> Any:
        pools.append(n)
        return real(n, *a, **k)

    monkeypatch.setattr(pleach, "ThreadPoolExecutor", spy)
    monkeypatch.setattr(pleach, "_BLOCK", 256 << 10)  # many blocks
    monkeypatch.setenv(ENV, "1")
    one = rk.read_pleach(pleach_file, errors="quarantine")
    monkeypatch.setenv(ENV, "3")
    three = rk.read_pleach(pleach_file, errors="quarantine")
    arg = rk.read_pleach(pleach_file, errors="quarantine", threads=2)
    assert pools == [1, 3, 2]
    _same_log(one, three)
    _same_log(one, arg)
    # an independent reading: every line's (tenant, chat, seq) is a row, in run order
    keys = sorted((r["tenant_id"], r["chat_id"], r["sequence_number"])
                  for r in map(json.loads, pleach_file.read_bytes().splitlines()))
    t = one.table
    got = list(zip(t.column("tenant_id").to_pylist(), t.column("run_id").to_pylist(),
                   t.column("seq").to_pylist(), strict=True))
    assert got == keys


def test_read_pleach_runs_same_summary_on_1_and_3_threads(
        pleach_file: Path, eight_cores: None) -> None:
    from replaykit.io.pleach import read_pleach_runs

    one = read_pleach_runs(pleach_file, errors="quarantine", threads=1)
    three = read_pleach_runs(pleach_file, errors="quarantine", threads=3)
    assert one._stats.equals(three._stats)
    assert one.runs.equals(three.runs) and one.quarantine.equals(three.quarantine)
    assert one.extras["pleach_counts"].equals(three.extras["pleach_counts"])


def test_reference_path_same_table_on_1_and_3_threads(
        pleach_file: Path, eight_cores: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAYKIT_NATIVE", "0")
    import replaykit.io.pleach as pleach

    monkeypatch.setattr(pleach, "_BLOCK", 512 << 10)
    _same_log(rk.read_pleach(pleach_file, errors="quarantine", threads=1),
              rk.read_pleach(pleach_file, errors="quarantine", threads=3))


def test_read_toh_same_table_on_1_and_3_threads(tmp_path: Path, eight_cores: None) -> None:
    # more than 4 MB: the core scans it in one chunk per thread
    f = generate_toh(tmp_path / "session.jsonl", events=110_000, seed=2)
    assert f.stat().st_size > 4 << 20
    one = rk.read_toh(f, owner="o", threads=1)
    three = rk.read_toh(f, owner="o", threads=3)
    _same_log(one, three)
    # an independent count: every line after the header decodes to one event or more
    lines = f.read_bytes().splitlines()
    assert one.table.num_rows >= len(lines) - 1


def test_verify_chain_same_problems_on_1_and_3_threads(
        pleach_file: Path, eight_cores: None) -> None:
    log = rk.read_pleach(pleach_file, errors="quarantine")
    one = rk.verify_chain(log, threads=1)
    three = rk.verify_chain(log, threads=3)
    pd.testing.assert_frame_equal(one, three)
    # the five tampered rows break their own hash (the payload is hashed)
    tampered = [json.loads(b) for b in pleach_file.read_bytes().splitlines()]
    want = {(r["tenant_id"], r["chat_id"], r["sequence_number"]) for r in tampered
            if r["payload"].get("tampered")}
    got = one[one["kind"] == "hash_mismatch"]
    assert set(zip(got["tenant_id"], got["run_id"], got["seq"], strict=True)) == want


def test_fold_same_state_on_1_and_3_threads(pleach_file: Path, eight_cores: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from replaykit.fold import engine

    monkeypatch.setattr(engine, "PARALLEL_MIN_ROWS", 0)  # the threaded path on 20k rows
    log = rk.read_pleach(pleach_file, errors="quarantine")
    one = rk.fold(log, [rk.agent(), rk.harness()], threads=1, state_hash=True)
    three = rk.fold(log, [rk.agent(), rk.harness()], threads=3, state_hash=True)
    np.testing.assert_array_equal(one.state_hash(), three.state_hash())
    pd.testing.assert_frame_equal(one.steps_df(), three.steps_df())


def test_fold_run_spans_cut_at_run_starts(pleach_file: Path) -> None:
    from replaykit.fold import engine
    from replaykit.fold.engine import Columns

    log = rk.read_pleach(pleach_file, errors="quarantine")
    c = Columns(log.table)
    for parts in (1, 2, 3, 8, 40, 10_000):
        spans = engine._run_spans(c, parts)
        assert spans[0][0] == 0 and spans[-1][1] == c.n
        assert all(a < b for a, b in spans)
        assert all(s[1] == t[0] for s, t in zip(spans, spans[1:], strict=False))
        starts = set(c.starts.tolist())
        assert all(a in starts for a, _ in spans)
        assert len(spans) <= parts


@pytest.mark.parametrize("n_threads", [1, 2, 3, 5])
def test_native_gathers_are_arrows_take_on_any_thread_count(n_threads: int) -> None:
    """Above 65,536 rows the gathers split their work by bytes into several pieces per
    thread: the same arrays as Arrow's take."""
    rng = np.random.default_rng(n_threads)
    n = 70_000
    lens = rng.integers(0, 40, n)
    words = ["x" * int(k) for k in lens]
    strings = pa.chunked_array([pa.array(words[:30_000]), pa.array(words[30_000:])])
    nums = pa.chunked_array([pa.array(rng.integers(0, 1 << 40, n))])
    order = rng.permutation(n)
    want = [c.take(pa.array(order)).combine_chunks() for c in (strings, nums)]
    got = _native.take([strings, nums], order, n_threads)
    assert [g.equals(w) for g, w in zip(got, want, strict=True)] == [True, True]
    freed = _native.take_freeing(list(strings.chunks), strings.type, order, n_threads)
    assert freed.equals(want[0])


@settings(max_examples=200, deadline=None)
@given(size=st.integers(0, 1 << 34), threads=st.integers(1, 256))
def test_block_size_keeps_every_thread_busy(size: int, threads: int) -> None:
    import replaykit.io.pleach as pleach

    b = pleach._block_size(size, threads)
    assert b <= pleach._BLOCK
    if threads == 1:
        assert b == pleach._BLOCK
    else:
        assert b >= min(pleach._BLOCK, 1 << 20)
        # a full-size block, or small enough for about four blocks per thread
        assert b == pleach._BLOCK or b == 1 << 20 or -(-size // b) >= 4 * threads - 1


@settings(max_examples=15, deadline=None)
@given(at=st.integers(0, 479_999), cpus=st.sampled_from([1, 2, 3]))
def test_text_validation_in_pieces_finds_a_bad_byte_anywhere(at: int, cpus: int) -> None:
    """``schema.text_is_utf8`` validates 16 MB+ of text in pieces on Arrow's threads: one
    row that is not UTF-8, wherever it is, still makes the table invalid."""
    from replaykit import schema

    n = 480_000
    good = pa.array([b"x" * 40] * n, pa.binary())
    rows = [b"y" * 40] * n
    rows[at] = b"\xff\xfe"
    raw = pa.array(rows, pa.binary())

    def text(a: pa.Array) -> pa.Array:
        return pa.Array.from_buffers(pa.string(), len(a), a.buffers())

    before = pa.cpu_count()
    pa.set_cpu_count(cpus)
    try:
        table = pa.table({"ok": text(good), "bad": text(raw)})
        assert table.nbytes >= schema._PARALLEL_UTF8_BYTES
        assert schema.text_is_utf8(table) is False
        assert schema.text_is_utf8(table.select(["ok"])) is True
        pieces = schema._pieces(table.column("bad").chunk(0))
        assert len(pieces) > 1 and sum(len(p) for p in pieces) == n
    finally:
        pa.set_cpu_count(before)


def test_scaling_benchmark_runs_pinned_and_reports(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m benchmarks.bench_threads`` (small): each run pinned to the first k cores of
    the mask, every run's rows counted, a speed-up line per core count."""
    from benchmarks import bench_threads

    f = rk.datasets.generate_pleach(tmp_path / "p.jsonl", events=1_000, runs=10)
    monkeypatch.setattr(bench_threads, "_dataset", lambda kind, events: f)
    cores = [1, 2] if len(os.sched_getaffinity(0)) >= 2 else [1]
    r = bench_threads.measure(1_000, 1, cores, ("pleach_replaykit",))
    assert [r["best"]["pleach_replaykit"][k]["rows"] for k in cores] == [1_000] * len(cores)
    lines = bench_threads.report(r)
    assert len(lines) == 1 + len(cores)
    assert all("speed-up" in line for line in lines[1:])
    assert "1.00x" in lines[1]
