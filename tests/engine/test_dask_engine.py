"""The Dask engine: results equal to the local engine's, run-aligned partitions, out-of-core
folds that resume after a failure, and the optional-extra contract."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.branch import dask_compare
from replaykit.engine import EngineError, partitions, write_partitioned
from replaykit.engine._parts import _cuts
from replaykit.fold import dask_fold, fold_to_parquet, state_json
from replaykit.fold.synth import synthetic_log
from replaykit.schema import events_table

N_EVENTS, N_RUNS, PART = 6_000, 60, 700


# ----------------------------------------------------------------------------- no Dask needed
def test_import_replaykit_does_not_import_dask() -> None:
    code = ("import sys, replaykit, replaykit.engine; "
            "print(any(m == 'dask' or m.startswith(('dask.', 'distributed')) "
            "for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_missing_dask_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    log = synthetic_log(200, 4)
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(rk.MissingExtraError, match=r'pip install "replaykit\[dask\]"'):
        rk.fold(log, rk.agent(), engine="dask")
    with pytest.raises(rk.MissingExtraError):
        rk.verify_chain(log, engine="dask")


def test_unknown_engine() -> None:
    with pytest.raises(ValueError, match="engine must be one of"):
        rk.fold(synthetic_log(100, 2), rk.agent(), engine="spark")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=25), st.integers(1, 60),
       st.integers(1, 3))
def test_cuts_cover_rows_and_never_split_a_run(lengths: list[int], target: int,
                                               tenants: int) -> None:
    tenant, run = [], []
    for i, n in enumerate(lengths):
        tenant += [f"t{i % tenants}"] * n
        run += [f"r{i:03d}"] * n
    seq = np.concatenate([np.arange(n) for n in lengths])
    t = events_table({"tenant_id": tenant, "run_id": run, "seq": seq, "type": ["x"] * len(seq),
                      "kind": ["other"] * len(seq), "payload": ["{}"] * len(seq),
                      "source": ["t:mem"] * len(seq)})
    cuts = _cuts(t, target)
    assert cuts[0][0] == 0 and cuts[-1][1] == t.num_rows
    assert all(b1 == a2 for (_, b1), (a2, _) in zip(cuts, cuts[1:], strict=False))
    keys = list(zip(pc.cast(t.column("tenant_id"), pa.string()).to_pylist(),
                    pc.cast(t.column("run_id"), pa.string()).to_pylist(), strict=True))
    owner: dict[tuple[str, str], int] = {}
    for k, (a, b) in enumerate(cuts):
        assert len({keys[i][0] for i in range(a, b)}) == 1  # one tenant per partition
        for i in range(a, b):
            assert owner.setdefault(keys[i], k) == k  # a run lives in one partition
        # a partition only exceeds the target by the tail of the run that crosses it
        first_of_last = max(i for i in range(a, b) if i == a or keys[i] != keys[i - 1])
        assert first_of_last - a < target


def test_overlapping_files_are_rejected(tmp_path: Path) -> None:
    log = synthetic_log(400, 4, tenants=("acme",))
    t = log.table.drop_columns(["tenant_id"])
    d = tmp_path / "tenant_id=acme"
    d.mkdir()
    half = t.num_rows // 2 + 3  # cuts a run in two
    pq.write_table(t.slice(0, half), d / "part-0.parquet")
    pq.write_table(t.slice(half), d / "part-1.parquet")
    with pytest.raises(EngineError, match="overlap") as info:
        partitions(tmp_path)
    assert info.value.partition == "tenant_id=acme/part-1.parquet"


# ----------------------------------------------------------------------------- with Dask
def _need_dask() -> None:
    """Skip without the dask extra locally; in CI (CI=true) a missing extra is a failure."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail('dask is not installed and CI=true: pip install "replaykit[dask]"')
        pytest.skip("the dask extra is not installed")


@pytest.fixture(scope="module")  # closed with its module: a current client left behind would
def client():  # take over the threaded scheduler of every later module on this xdist worker
    _need_dask()
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                           dashboard_address=":0", memory_limit="1GiB")
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _tamper(log: rk.EventLog) -> rk.EventLog:
    """Change the payload of two rows and drop a third: hash, link and seq problems."""
    t = log.table
    text = pc.cast(t.column("payload"), pa.string()).to_pylist()
    text[10] = '{"tampered":1}'
    text[3000] = '{"tampered":2}'
    t = t.set_column(t.schema.get_field_index("payload"), "payload",
                     pa.array(text).cast(t.schema.field("payload").type))
    keep = np.ones(t.num_rows, bool)
    keep[4500] = False
    return rk.EventLog(t.filter(pa.array(keep)), runs=log.runs)


@pytest.fixture(scope="session")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[rk.EventLog, Path]:
    log = _tamper(rk.stamp_chain(synthetic_log(N_EVENTS, N_RUNS)))
    path = log.to_parquet(tmp_path_factory.mktemp("ds") / "events", partition_events=PART)
    return rk.read_parquet(path), path


def test_write_partitioned_round_trip(data: tuple[rk.EventLog, Path]) -> None:
    log, path = data
    parts = partitions(path)
    assert len(parts) >= 8  # several partitions per tenant
    seen: set[tuple[str, str]] = set()
    total = 0
    for p in parts:
        part = p.load()
        keys = set(zip(pc.cast(part.table.column("tenant_id"), pa.string()).to_pylist(),
                       pc.cast(part.table.column("run_id"), pa.string()).to_pylist(),
                       strict=True))
        assert not keys & seen  # no run in two partitions
        seen |= keys
        total += len(part)
    assert total == len(log) and len(seen) == log.num_runs


def _cats(df: pd.DataFrame) -> pd.DataFrame:
    """Categoricals as their values: the Dask engine's categories are the sorted union of
    the partitions' (the local engine's follow the Arrow dictionary's order)."""
    return df.astype({c: "string" for c in df.columns
                      if isinstance(df[c].dtype, pd.CategoricalDtype)})


def _same_final(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert [state_json(s) for s in a["state"]] == [state_json(s) for s in b["state"]]
    pd.testing.assert_frame_equal(_cats(a.drop(columns="state")), _cats(b.drop(columns="state")))


def test_fold_equals_local(client, data) -> None:
    log, path = data
    local = rk.fold(log, rk.agent())
    sf = rk.fold(path, rk.agent(), engine="dask", client=client)
    _same_final(sf.final(), local.final())
    pd.testing.assert_frame_equal(_cats(sf.steps_df()), _cats(local.steps_df()))
    run = pc.cast(log.table.column("run_id"), pa.string())[500].as_py()
    tenant = pc.cast(log.table.column("tenant_id"), pa.string())[500].as_py()
    assert state_json(sf.at(run, 5, tenant_id=tenant)) == state_json(
        local.at(run, 5, tenant_id=tenant))


def _ddf(log: rk.EventLog, rows: int = 1_000, reverse: bool = False):
    """``log`` as a dask.dataframe of run-aligned partitions of ~``rows`` events (dictionary
    columns as plain strings), optionally with the partitions in reverse order."""
    import dask
    import dask.dataframe as dd

    frames = [log.table.slice(a, b - a) for a, b in _cuts(log.table, rows)]
    plain = [pa.Table.from_arrays([pc.cast(c, pa.string()) if pa.types.is_dictionary(c.type)
                                   else c for c in f.columns], names=f.column_names)
             for f in frames]
    if reverse:
        plain = plain[::-1]
    pdfs = [dask.delayed(f.to_pandas)() for f in plain]
    return dd.from_delayed(pdfs, meta=plain[0].slice(0, 0).to_pandas())


@pytest.mark.filterwarnings("ignore:Sending large graph")  # the test's own from_delayed
def test_fold_eventlog_and_dask_dataframe_sources(client, data) -> None:
    log, _ = data
    want = rk.fold(log, rk.agent()).final()
    _same_final(dask_fold(log, rk.agent(), client=client,
                                    partition_events=900).final(), want)
    _same_final(rk.fold(_ddf(log), rk.agent(), engine="dask", client=client).final(), want)


def test_verify_chain_equals_local(client, data) -> None:
    log, path = data
    local = rk.verify_chain(log)
    assert set(local["kind"]) >= {"hash_mismatch", "link_mismatch", "seq_gap"}
    pd.testing.assert_frame_equal(rk.verify_chain(path, engine="dask", client=client), local)
    heads = rk.chain_heads(log)
    heads.loc[0, "row_hash"] = "0" * 64
    extra = pd.DataFrame({"tenant_id": ["acme"], "run_id": ["no-such-run"], "seq": [3],
                          "row_hash": ["f" * 64]})
    heads = pd.concat([heads, extra], ignore_index=True)
    want = rk.verify_chain(log, heads)
    assert "head_mismatch" in set(want["kind"])
    pd.testing.assert_frame_equal(rk.verify_chain(path, heads, engine="dask", client=client),
                                  want)


def _replays(log: rk.EventLog) -> rk.EventLog:
    """Every run replayed under a new id, with the run as parent and some tools changed."""
    t = log.table
    run = pc.cast(t.column("run_id"), pa.string())
    rep = pc.binary_join_element_wise("rep-", run, "")
    tool = pc.cast(t.column("tool_name"), pa.string()).to_pylist()
    for i in range(0, len(tool), 97):
        if tool[i] is not None:
            tool[i] = "other_tool"
    cols = {n: t.column(n) for n in t.column_names}
    cols.update(run_id=rep, parent_run_id=run, tool_name=pa.array(tool, pa.string()))
    return rk.EventLog(events_table(cols))


def test_compare_equals_local(client, data, tmp_path: Path) -> None:
    log, path = data
    rep = _replays(log)
    rpath = write_partitioned(rep, tmp_path / "rep", partition_events=PART)
    want = rk.compare(log, rep)
    assert len(want) == N_RUNS and (want["first_divergence_step"] >= 0).any()
    pd.testing.assert_frame_equal(rk.compare(path, rpath, engine="dask", client=client), want)
    pairs = want[["tenant_id", "base_run_id", "replay_run_id"]].iloc[::-3].astype(object)
    pairs = pairs.reset_index(drop=True)
    pd.testing.assert_frame_equal(
        dask_compare(path, rpath, pairs, client=client, pairs_per_task=7),
        rk.compare(log, rep, pairs))


@pytest.mark.filterwarnings("ignore:Sending large graph")  # the test's own from_delayed
def test_compare_dask_dataframe_sources_equal_local(client, data, tmp_path: Path) -> None:
    log, path = data
    rep = _replays(log)
    rpath = write_partitioned(rep, tmp_path / "rep", partition_events=PART)
    want = rk.compare(log, rep)
    pairs = want[["tenant_id", "base_run_id", "replay_run_id"]].iloc[::-3].astype(object)
    pairs = pairs.reset_index(drop=True)
    want_pairs = rk.compare(log, rep, pairs)
    untenanted = pairs.drop(columns="tenant_id").iloc[::2].reset_index(drop=True)
    want_untenanted = rk.compare(log, rep, untenanted)
    base_ddf, rep_ddf = _ddf(log, 900), _ddf(rep, 1_100, reverse=True)  # other cuts, order
    # each pairing of sources once, each with another kind of call (every run, pairs in
    # small tasks, pairs without tenants): nine cluster computations were three times the same
    # code paths (each source kind is opened by one function whatever the call)
    pd.testing.assert_frame_equal(
        rk.compare(path, rep_ddf, engine="dask", client=client), want)
    pd.testing.assert_frame_equal(
        dask_compare(base_ddf, rpath, pairs, client=client, pairs_per_task=7), want_pairs)
    pd.testing.assert_frame_equal(
        dask_compare(base_ddf, rep_ddf, untenanted, client=client), want_untenanted)
    # an in-memory side next to a dask.dataframe one
    pd.testing.assert_frame_equal(
        dask_compare(base_ddf, rep, client=client, partition_events=1_500), want)
    pd.testing.assert_frame_equal(
        dask_compare(log, rep_ddf, pairs, client=client), want_pairs)


@pytest.mark.filterwarnings("ignore:Sending large graph")  # the test's own from_delayed
def test_compare_names_a_missing_run(client, data, tmp_path: Path) -> None:
    log, path = data
    rep = _replays(log)
    rpath = write_partitioned(rep, tmp_path / "rep", partition_events=PART)
    pairs = rk.compare(log, rep)[["tenant_id", "base_run_id", "replay_run_id"]].iloc[:4]
    pairs = pairs.astype(object).reset_index(drop=True)
    pairs.loc[2, "replay_run_id"] = "no-such-run"
    with pytest.raises(KeyError, match="no-such-run"):
        rk.compare(log, rep, pairs)
    for replay in (rpath, _ddf(rep)):  # a task fails / the client finds it first
        with pytest.raises(EngineError, match="no-such-run.*missing from its log"):
            dask_compare(path, replay, pairs, client=client)
    bad = pairs.copy()
    bad.loc[2, "replay_run_id"] = pairs.loc[1, "replay_run_id"]
    bad.loc[1, "base_run_id"] = "no-such-base"
    with pytest.raises(EngineError, match="no-such-base") as info:
        dask_compare(_ddf(log), rpath, bad, client=client)
    assert info.value.partition == "pairs"


def test_file_index_opens_only_files_that_can_hold_the_runs(data, tmp_path: Path) -> None:
    from replaykit.engine._parts import file_index

    log, path = data
    parts = partitions(path)
    index = file_index(path)
    for p in parts:  # every run of every file is found in that file, and only there
        t = p.load().table
        runs = sorted(set(pc.cast(t.column("run_id"), pa.string()).to_pylist()))
        assert index.lookup([p.tenant_id], runs) == [p.path]
        assert p.path in index.lookup(None, runs[:1])  # (other tenants' ranges too)
    assert index.lookup(["acme"], ["no-such-run"]) == []
    tenant, run = parts[0].tenant_id, "\uffff-after-every-run"
    assert index.lookup([tenant], [run]) == []
    # a file without statistics may hold anything: it is always read
    src = tmp_path / "src"
    shutil.copytree(path, src)
    victim = src / parts[1].name
    pq.write_table(pq.read_table(victim), victim, write_statistics=False)
    index = file_index(src)
    assert str(victim) in index.lookup([parts[1].tenant_id], ["no-such-run"])
    runs = pc.cast(log.table.column("run_id"), pa.string()).to_pylist()[::50]
    tenants = pc.cast(log.table.column("tenant_id"), pa.string()).to_pylist()[::50]
    got = index.read(sorted(set(tenants)), runs)
    assert got.table.equals(rk.read_parquet(path, tenant_id=sorted(set(tenants)),
                                            run_ids=runs).table)


def test_cohort_summary_equals_local(client, tmp_path: Path) -> None:
    cd = rk.datasets.generate_cohorts(runs=80, seed=3)
    path = write_partitioned(cd.log, tmp_path / "coh", partition_events=800)
    log = rk.read_parquet(path)
    for by in ("semester", "model"):
        local = rk.cohorts(log, by=by, cache=cd.cache)
        dist = rk.cohorts(path, by=by, cache=cd.cache, engine="dask", client=client)
        assert dist.labels == local.labels
        pd.testing.assert_frame_equal(dist.summary(), local.summary())
        pd.testing.assert_frame_equal(dist.runs_df(), local.runs_df())
    # header metadata (here a "team" attribute) reaches the partitions, from memory and disk
    keys = cd.log.runs_df()[["tenant_id", "run_id"]]
    runs = pa.table({"tenant_id": keys["tenant_id"].astype(str), "run_id":
                     keys["run_id"].astype(str), "format": ["gen"] * len(keys),
                     "attrs": [f'{{"team": "t{i % 3}"}}' for i in range(len(keys))]})
    full = pa.table({f.name: runs.column(f.name) if f.name in runs.column_names
                     else pa.nulls(len(keys), f.type) for f in rk.eventlog.RUNS_SCHEMA})
    meta_log = rk.EventLog(cd.log.table, runs=full.cast(rk.eventlog.RUNS_SCHEMA))
    mpath = write_partitioned(meta_log, tmp_path / "meta", partition_events=800)
    local = rk.cohorts(meta_log, by="team")
    assert set(local.labels) == {"t0", "t1", "t2"}
    for src in (meta_log, mpath):
        dist = rk.cohorts(src, by="team", engine="dask", client=client)
        pd.testing.assert_frame_equal(dist.runs_df(), local.runs_df())
        pd.testing.assert_frame_equal(dist.summary(), local.summary())
    one = rk.cohorts(path, tenant_id="acme", engine="dask", client=client).summary()
    pd.testing.assert_frame_equal(one, rk.cohorts(log, tenant_id="acme").summary())
    # a dask.dataframe source (partitions in reverse order)
    local = rk.cohorts(log, by="semester", cache=cd.cache)
    dist = rk.cohorts(_ddf(log, 700, reverse=True), by="semester", cache=cd.cache,
                      engine="dask", client=client)
    pd.testing.assert_frame_equal(dist.runs_df(), local.runs_df())
    pd.testing.assert_frame_equal(dist.summary(), local.summary())


@pytest.mark.filterwarnings("ignore:Sending large graph")  # the test's own from_delayed
def test_verify_chain_on_a_dask_dataframe(client, data) -> None:
    log, _ = data
    want = rk.verify_chain(log)
    assert len(want) >= 3
    got = rk.verify_chain(_ddf(log, 800, reverse=True), engine="dask", client=client)
    pd.testing.assert_frame_equal(got, want)


def test_relative_paths_work_on_worker_processes(client, data, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers were started in another working directory: relative dataset and output
    paths are the caller's."""
    from replaykit.fold import fold_to_parquet

    log, path = data
    monkeypatch.chdir(path.parent)
    want = rk.fold(log, rk.agent()).final()
    _same_final(rk.fold(path.name, rk.agent(), engine="dask", client=client).final(), want)
    report = fold_to_parquet(path.name, rk.agent(), "folded-rel", client=client, progress=False)
    assert int(report["events"].sum()) == len(log)
    assert len(sorted((path.parent / "folded-rel").glob("tenant_id=*/*.parquet"))) == len(report)


def test_fold_to_parquet_fails_clearly_and_resumes(client, data, tmp_path: Path) -> None:
    log, path = data
    src = tmp_path / "src"
    shutil.copytree(path, src)
    parts = partitions(src)
    victim = src / parts[3].name
    good = victim.read_bytes()
    victim.write_bytes(b"not a parquet file")
    out = tmp_path / "out"
    with pytest.raises(EngineError) as info:
        fold_to_parquet(src, rk.agent(), out, client=client)
    assert info.value.partition == parts[3].name
    assert parts[3].name in str(info.value) and "resume" in str(info.value)
    done = sorted(p.name for p in (out / "_done").iterdir())
    assert len(done) == len(parts) - 1  # every other partition finished and was kept
    victim.write_bytes(good)
    report = fold_to_parquet(src, rk.agent(), out, client=client)
    assert report["status"].tolist().count("written") == 1
    assert report.loc[report["status"] == "written", "partition"].tolist() == [parts[3].name]
    assert int(report["events"].sum()) == len(log)
    got = pd.read_parquet(out)
    want = rk.fold(log, rk.agent()).final()
    got = got.sort_values(["tenant_id", "run_id"]).reset_index(drop=True)
    assert got["run_id"].astype(str).tolist() == want["run_id"].astype(str).tolist()
    assert got["events"].tolist() == want["events"].tolist()
    assert got["state_hash"].astype("uint64").tolist() == want["state_hash"].astype(
        "uint64").tolist()
    assert got["state"].tolist() == [state_json(s) for s in want["state"]]
    again = fold_to_parquet(src, rk.agent(), out, client=client)
    assert set(again["status"]) == {"skipped"}


def test_without_a_cluster_uses_local_threads(data, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    _need_dask()
    import distributed

    def no_client() -> None:
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "default_client", no_client)
    log, path = data
    _same_final(rk.fold(path, rk.agent(), engine="dask").final(),
                rk.fold(log, rk.agent()).final())
    rep = _replays(log)
    pd.testing.assert_frame_equal(dask_compare(_ddf(log), rep), rk.compare(log, rep))
    src = tmp_path / "src"
    shutil.copytree(path, src)
    bad = partitions(src)[1]
    (src / bad.name).write_bytes(b"junk")
    with pytest.raises(EngineError, match="1 of .* partitions failed") as info:
        fold_to_parquet(src, rk.agent(), tmp_path / "out")
    assert info.value.partition == bad.name
