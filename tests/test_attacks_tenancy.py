"""Attacks on the isolation promise (docs/security.md): a view of one tenant, and whatever is
made from it (a pickle, a Parquet dataset), never carries another tenant's data, not even in
the dictionaries of its dictionary columns or in the buffers a zero-copy slice shares."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.eventlog.log import RUNS_SCHEMA
from replaykit.schema import QUARANTINE_SCHEMA, events_table
from replaykit.tenancy import compact_dictionaries

_TENANTS = ("acme", "globex", "initech")


def _marked_log(shape: list[tuple[int, int]]) -> rk.EventLog:
    """Tenant ``i`` of ``shape`` gets ``runs`` runs of ``events`` events; every value a tenant
    owns (run ids, parents, tool names, sources, payloads, quarantine rows) names it."""
    cols: dict[str, list] = {c: [] for c in ("tenant_id", "run_id", "parent_run_id", "seq",
                                             "type", "kind", "tool_name", "payload", "source")}
    quarantine = []
    for i, (runs, events) in enumerate(shape):
        t = _TENANTS[i]
        for r in range(runs):
            for s in range(events):
                cols["tenant_id"].append(t)
                cols["run_id"].append(f"{t}-run{r}")
                cols["parent_run_id"].append(f"{t}-parent" if r else None)
                cols["seq"].append(s)
                cols["type"].append(f"{t}.custom" if s % 2 else "tool.called")
                cols["kind"].append("other" if s % 2 else "tool_call")
                cols["tool_name"].append(None if s % 2 else f"{t}-tool{s}")
                cols["payload"].append(f'{{"secret":"{t}-secret"}}')
                cols["source"].append(f"demo:/data/{t}/events.jsonl")
            quarantine.append({"source": f"/data/{t}/bad", "line": 1, "field": None,
                               "reason": "bad_json", "message": f"{t}-message",
                               "raw": f"{t}-raw", "tenant_id": t, "run_id": f"{t}-run{r}"})
    table = events_table(cols)
    q = pa.Table.from_pylist(quarantine, schema=QUARANTINE_SCHEMA)
    side = compact_dictionaries(pa.table({
        "tenant_id": pa.array([q["tenant_id"] for q in quarantine]).dictionary_encode(),
        "run_id": pa.array([q["run_id"] for q in quarantine]).dictionary_encode(),
        "note": pa.array([q["message"] for q in quarantine]).dictionary_encode(),
    }))
    return rk.EventLog(table, quarantine=q, extras={"notes": side})


def _dictionary_values(table: pa.Table) -> set[str]:
    out: set[str] = set()
    for col in table.columns:
        for chunk in col.chunks:
            if pa.types.is_dictionary(chunk.type):
                out.update(v for v in chunk.dictionary.to_pylist() if v is not None)
    return out


def _others(tenant: str, shape: list[tuple[int, int]]) -> list[str]:
    return [t for t in _TENANTS[: len(shape)] if t != tenant]


def _views(log: rk.EventLog, tenant: str) -> list[tuple[str, rk.EventLog]]:
    runs = [r for r in log.run_ids if r.startswith(tenant + "-")]
    out = [("filter", log.filter(tenant_id=tenant)),
           ("filter+run_ids", log.filter(tenant_id=tenant, run_ids=runs[:1])),
           ("run", log.run(runs[0], tenant_id=tenant))]
    out += [(f"iter_runs {k.run_id}", v) for k, v in log.iter_runs() if k.tenant_id == tenant]
    return out


_shapes = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4)), min_size=2, max_size=3)


@settings(max_examples=30, deadline=None)
@given(shape=_shapes, pick=st.data())
def test_a_view_carries_no_other_tenant_value_in_any_dictionary(shape, pick) -> None:
    """filter / run / iter_runs keep every dictionary column's dictionary to the view's own
    values (a slice or filter of an Arrow table keeps the whole log's dictionaries: the
    other tenants' ids, run ids, tool names and source paths, visible as pandas categories);
    and a pickled view holds none of the other tenants' bytes (pyarrow pickles a slice's
    whole buffers)."""
    log = _marked_log(shape)
    tenant = pick.draw(st.sampled_from(_TENANTS[: len(shape)]))
    for name, view in _views(log, tenant):
        tables = [view.table, view.runs, view.quarantine, *view.extras.values()]
        for table in tables:
            leaked = {v for v in _dictionary_values(table)
                      if any(o in v for o in _others(tenant, shape))}
            assert not leaked, (name, leaked)
        cats = view.events_df()["run_id"].cat.categories
        assert all(c.startswith(tenant + "-") for c in cats), (name, list(cats))
        blob = pickle.dumps(view)
        for other in _others(tenant, shape):
            assert other.encode() not in blob, (name, other)
        back = pickle.loads(blob)
        assert back.table.equals(view.table.cast(back.table.schema)) or \
            back.table.to_pylist() == view.table.to_pylist()


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=_shapes)
def test_a_tenant_folder_holds_no_other_tenant_bytes(tmp_path: Path, shape) -> None:
    """to_parquet of a multi-tenant log: each tenant_id=<t>/ file holds only t's values
    (its dictionary pages were the whole log's), so per-folder file permissions isolate."""
    log = _marked_log(shape)
    root = log.to_parquet(tmp_path / "ds", overwrite=True)
    for tenant in _TENANTS[: len(shape)]:
        files = list((root / f"tenant_id={tenant}").glob("*.parquet"))
        assert files
        for f in files:
            data = f.read_bytes()
            for other in _others(tenant, shape):
                assert other.encode() not in data, (f.name, other)
            assert not any(o in v for v in _dictionary_values(pq.read_table(f))
                           for o in _others(tenant, shape))
        one = rk.read_parquet(root, tenant_id=tenant)
        assert one.tenants == [tenant]
        assert not any(o in v for v in _dictionary_values(one.table)
                       for o in _others(tenant, shape))


def test_compact_dictionaries_keeps_values_and_order() -> None:
    arr = pa.array(["b", "a", None, "c", "a"]).dictionary_encode()
    table = pa.table({"x": arr, "n": [1, 2, 3, 4, 5]})
    part = compact_dictionaries(table.slice(1, 2))
    assert part.column("x").chunk(0).dictionary.to_pylist() == ["a"]
    assert part.column("x").to_pylist() == ["a", None]
    whole = compact_dictionaries(table)
    assert whole is table  # every entry in use: no copy
    only_null = compact_dictionaries(table.slice(2, 1))
    assert only_null.column("x").to_pylist() == [None]
    assert only_null.column("x").chunk(0).dictionary.to_pylist() == []


def test_tenants_sharing_a_folder_on_a_case_folding_file_system_are_refused(
        tmp_path: Path, monkeypatch) -> None:
    """On macOS / Windows file systems "tenant_id=ACME" and "tenant_id=acme" are one folder:
    to_parquet wrote both tenants' part-0.parquet there, so one replaced the other (and the
    survivor was served under the other's folder name). Simulated here by a folder name
    that folds case; nothing may be written."""
    from replaykit.engine import _parts
    from replaykit.errors import LoadError
    from replaykit.tenancy import partition_dir_name

    monkeypatch.setattr(_parts, "partition_dir_name", lambda t: partition_dir_name(t).lower())
    log = rk.EventLog(events_table({
        "tenant_id": ["ACME", "acme"], "run_id": ["r1", "r2"], "seq": [0, 0],
        "type": ["message.user"] * 2, "kind": ["user_message"] * 2, "payload": ["{}"] * 2,
        "source": ["demo:mem"] * 2}))
    with pytest.raises(LoadError, match="same partition folder") as err:
        log.to_parquet(tmp_path / "ds")
    assert err.value.reason == "bad_tenant" and "'ACME'" in str(err.value)
    assert not any((tmp_path / "ds").rglob("*.parquet"))
    assert not [p for p in (tmp_path / "ds").iterdir() if p.name.startswith("tenant_id=")]


def _owner_of_rows(log: rk.EventLog) -> list[str]:
    return log.table.column("tenant_id").to_pylist()


def _assert_only(view: rk.EventLog, tenants: set[str], shape, name: str) -> None:
    others = [t for t in _TENANTS[: len(shape)] if t not in tenants]
    for table in [view.table, view.runs, view.quarantine, *view.extras.values()]:
        if "tenant_id" in table.schema.names:
            assert set(table.column("tenant_id").to_pylist()) <= tenants, name
        leaked = {v for v in _dictionary_values(table) if any(o in v for o in others)}
        assert not leaked, (name, leaked)
    blob = pickle.dumps(view)
    for other in others:
        assert other.encode() not in blob, (name, other)


@settings(max_examples=40, deadline=None)
@given(shape=_shapes, pick=st.data())
def test_positional_slices_scope_side_tables_to_their_tenants(shape, pick) -> None:
    """log[a:b], log[a:b:k] and window() hold only the quarantine, extras and dictionary
    values of the tenants whose rows they hold (as filter does); head()'s categories too."""
    log = _marked_log(shape)
    owners = _owner_of_rows(log)
    n = len(log)
    a = pick.draw(st.integers(0, n - 1))
    b = pick.draw(st.integers(a + 1, n))
    step = pick.draw(st.sampled_from([1, 2]))
    view = log[a:b:step]
    held = set(owners[a:b:step])
    if len(view) < n:
        _assert_only(view, held, shape, f"[{a}:{b}:{step}]")
    # a window that only one tenant's runs reach (the others have fewer events)
    k = pick.draw(st.integers(0, max(e for _, e in shape)))
    win = log.window(from_seq=k - 1)
    held = set(_owner_of_rows(win))
    if len(win) < n:
        _assert_only(win, held, shape, f"window({k - 1})")
    h = log.head(b)
    for col in ("tenant_id", "run_id", "source", "tool_name"):
        cats = {str(c) for c in h[col].cat.categories}
        others = [t for t in _TENANTS[: len(shape)] if t not in set(owners[:b])]
        assert not any(o in c for c in cats for o in others), (col, cats)


def _public_results(view: rk.EventLog, tenant: str):
    """(name, thunk) for every public function and method taking an EventLog, applied to a
    one-tenant view: what a notebook computes, pickles, writes or shows."""
    import io

    from replaykit.fold import InMemoryCache
    from replaykit.report import rca

    run = view.run_ids[0]

    def written(df):  # a derived frame written to Parquet
        buf = io.BytesIO()
        df.to_parquet(buf)
        return buf.getvalue()

    chained = rk.stamp_chain(view)
    out = [
        ("fold", lambda: rk.fold(view, rk.agent())),
        ("fold(harness)", lambda: rk.fold(view, rk.harness())),
        ("fold.steps_df", lambda: rk.fold(view, rk.agent()).steps_df()),
        ("fold.final", lambda: rk.fold(view, rk.agent()).final()),
        ("aggregate", lambda: rk.aggregate(view, tenant_ids=[tenant])),
        ("cache_coverage", lambda: rk.cache_coverage(view, InMemoryCache({}))),
        ("calls_df", lambda: rk.calls_df(view)), ("tools_df", lambda: rk.tools_df(view)),
        ("turns_df", lambda: rk.turns_df(view)), ("events_df", view.events_df),
        ("runs_df", view.runs_df), ("stamps_df", view.stamps_df), ("summary", view.summary),
        ("head", lambda: view.head(3)), ("quarantine_df", view.quarantine_df),
        ("stamp_chain", lambda: chained), ("chain_heads", lambda: rk.chain_heads(chained)),
        ("chain_manifest", lambda: rk.chain_manifest(chained)),
        ("chain_proof", lambda: rk.chain_proof(chained, run, 0, tenant_id=tenant)),
        ("verify_chain", lambda: rk.verify_chain(chained)),
        ("check_determinism", lambda: rk.check_determinism(view, run, tenant_id=tenant)),
        ("cohorts", lambda: rk.cohorts(view)), ("compare", lambda: rk.compare(view, view)),
        ("fork", lambda: rk.fork(view, run, tenant_id=tenant, at_seq=0)),
        ("open_replay", lambda: rk.open_replay(view, run, tenant_id=tenant)),
        ("open_replay.step", lambda: rk.open_replay(view, run, tenant_id=tenant).step()),
        ("replay", lambda: rk.replay(rk.Branch(base=view, run_id=run, tenant_id=tenant,
                                                checkpoint=0, name="b"))),
        ("report rca", lambda: rca(rk.replay(rk.Branch(
            base=view, run_id=run, tenant_id=tenant, checkpoint=0, name="b"))).html),
        ("fold _repr_html_", lambda: rk.fold(view, rk.agent())._repr_html_()),
        ("view _repr_html_", view._repr_html_),
        ("tool_distance_matrix", lambda: rk.tool_distance_matrix(view)),
        ("concat", lambda: rk.concat([view])), ("to_parquet-able", lambda: view),
    ]
    return out, written


_VIEW_KINDS = ["filter", "run", "iter_runs", "slice", "window"]


def _one_tenant_view(log: rk.EventLog, tenant: str, kind: str) -> rk.EventLog:
    runs = [r for r in log.run_ids if r.startswith(tenant + "-")]
    if kind == "filter":
        return log.filter(tenant_id=tenant)
    if kind == "run":
        return log.run(runs[0], tenant_id=tenant)
    if kind == "iter_runs":
        return next(v for k, v in log.iter_runs() if k.tenant_id == tenant)
    owners = log.table.column("tenant_id").to_pylist()
    rows = [i for i, o in enumerate(owners) if o == tenant]
    if kind == "slice":
        return log[rows[0]:rows[-1] + 1]
    return log.filter(tenant_id=tenant).window(from_seq=-1)


@settings(max_examples=12, deadline=None)
@given(shape=_shapes, pick=st.data(), kind=st.sampled_from(_VIEW_KINDS))
def test_results_of_a_one_tenant_view_hold_no_other_tenant_bytes(shape, pick, kind) -> None:
    """For every public function taking an EventLog, the result computed from a one-tenant
    view (filter, run, iter_runs, a positional slice, a window), pickled or written to
    Parquet, holds no byte of another tenant's rows: every value another tenant owns names
    it (ids, runs, tools, sources, payloads), so its name must not appear (issue 30 item 1;
    a StateFrame of a run view pickled the whole log's payload buffers)."""
    import pandas as pd

    log = _marked_log(shape)
    tenant = pick.draw(st.sampled_from(_TENANTS[: len(shape)]))
    view = _one_tenant_view(log, tenant, kind)
    assert view.tenants == [tenant]
    others = _others(tenant, shape)
    thunks, written = _public_results(view, tenant)
    for name, thunk in thunks:
        res = thunk()
        blob = pickle.dumps(res)
        leaked = [o for o in others if o.encode() in blob]
        assert not leaked, (kind, name, leaked)
        if isinstance(res, pd.DataFrame):
            data = written(res)
            assert not [o for o in others if o.encode() in data], (kind, name, "parquet")
        if isinstance(res, rk.EventLog):
            back = pickle.loads(blob)
            assert back.table.to_pylist() == res.table.to_pylist()


def test_a_pickled_state_frame_of_a_run_view_still_answers() -> None:
    """The StateFrame pickled with its own rows only gives the same steps and states."""
    log = _marked_log([(2, 4), (2, 3)])
    view = log.run("acme-run1", tenant_id="acme")
    sf = rk.fold(view, rk.agent())
    back = pickle.loads(pickle.dumps(sf))
    assert back.steps_df().astype(str).equals(sf.steps_df().astype(str))
    assert list(back.state_hash()) == list(sf.state_hash())
    for seq in (0, 2, 10**6):
        assert back.at("acme-run1", seq, tenant_id="acme") == sf.at("acme-run1", seq,
                                                                    tenant_id="acme")


def test_a_branch_and_its_replay_over_a_multi_tenant_log_pickle_one_tenant() -> None:
    """A Branch of one tenant's run whose base is the whole multi-tenant log, and the
    ReplayResult of it, pickle (for a process pool, a cache, a file) only that tenant's part
    of the base; unpickled, they still replay the same."""
    log = _marked_log([(2, 4), (2, 3), (1, 2)])
    b = rk.Branch(base=log, run_id="acme-run0", tenant_id="acme", checkpoint=0, name="b")
    res = rk.replay(b)
    for obj in (b, res):
        blob = pickle.dumps(obj)
        assert b"globex" not in blob and b"initech" not in blob, type(obj).__name__
    back = pickle.loads(pickle.dumps(b))
    assert back.base.tenants == ["acme"] and back.branch_id == b.branch_id
    again = rk.replay(back)
    assert again.events.table.to_pylist() == res.events.table.to_pylist()
    assert pickle.loads(pickle.dumps(res)).base.tenants == ["acme"]


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=_shapes)
def test_a_tenant_folder_alone_is_that_tenant_complete(tmp_path: Path, shape) -> None:
    """A Parquet dataset isolates by folder (issue 30 item 3): the side files (runs,
    quarantine) of each tenant are inside its tenant_id=<id>/ folder and carry its tenant_id;
    the root holds no tenant's rows; and a reader who has only that folder (copied alone
    into an empty root: all it may open) reads the tenant completely: the same events, runs
    and quarantine as a reader of the whole dataset."""
    import shutil

    log = _marked_log(shape)
    with_runs = rk.EventLog(log.table, runs=pa.Table.from_pylist(
        [{"tenant_id": t, "run_id": r, "parent_run_id": None, "format": "demo",
          "source": f"/data/{t}", "created_at": None, "attrs": f'{{"owner":"{t}"}}'}
         for t, r in zip(log.table.column("tenant_id").to_pylist(),
                         log.table.column("run_id").to_pylist(), strict=True)][::2],
        schema=RUNS_SCHEMA), quarantine=log.quarantine, extras=log.extras)
    root = with_runs.to_parquet(tmp_path / "ds", overwrite=True)
    at_root = sorted(p.name for p in root.iterdir() if not p.is_dir())
    assert at_root == ["_quarantine_no_tenant.parquet"]
    assert pq.read_table(root / at_root[0]).column("tenant_id").null_count == \
        pq.read_table(root / at_root[0]).num_rows
    for tenant in _TENANTS[: len(shape)]:
        folder = root / f"tenant_id={tenant}"
        for side in ("_runs.parquet", "_quarantine.parquet"):
            t = pq.read_table(folder / side)
            assert set(t.column("tenant_id").to_pylist()) <= {tenant}, side
        for f in folder.iterdir():
            data = f.read_bytes()
            assert not [o for o in _others(tenant, shape) if o.encode() in data], f.name
        alone = tmp_path / f"only-{tenant}"
        if alone.exists():
            shutil.rmtree(alone)
        alone.mkdir()
        shutil.copytree(folder, alone / folder.name)
        full = rk.read_parquet(root, tenant_id=tenant)
        mine = rk.read_parquet(alone, tenant_id=tenant)
        for a, b in ((mine.table, full.table), (mine.runs, full.runs),
                     (mine.quarantine, full.quarantine)):
            assert a.to_pylist() == b.to_pylist()
        assert full.quarantine.num_rows == sum(
            1 for q in log.quarantine.column("tenant_id").to_pylist() if q == tenant)
        assert full.runs.num_rows == sum(1 for r in with_runs.runs.column("tenant_id")
                                         .to_pylist() if r == tenant)


def test_a_planted_side_file_of_another_tenant_is_a_partition_mismatch(tmp_path: Path) -> None:
    """A _runs.parquet / _quarantine.parquet in acme's folder holding globex's rows is never
    read as acme's: partition_mismatch (raised, or its rows left out and reported)."""
    log = _marked_log([(1, 2), (1, 2)])
    root = log.to_parquet(tmp_path / "ds")
    planted = pq.read_table(root / "tenant_id=globex" / "_quarantine.parquet")
    pq.write_table(planted, root / "tenant_id=acme" / "_quarantine.parquet")
    with pytest.raises(rk.LoadError) as info:
        rk.read_parquet(root, tenant_id="acme")
    assert info.value.reason == "partition_mismatch"
    got = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
    assert "globex" not in str(got.quarantine.to_pylist()).replace(
        str(root / "tenant_id=acme"), "")
    assert "partition_mismatch" in got.quarantine.column("reason").to_pylist()


def test_a_dataset_of_the_older_layout_reads_with_a_note(tmp_path: Path) -> None:
    """Root _runs.parquet / _quarantine.parquet (every tenant's rows in one file: the layout
    before issue 30) still read, scoped per tenant as before, with a LegacyDatasetWarning
    that says how to rewrite; the rewritten dataset has the per-folder layout."""
    from replaykit.eventlog.dataset import LegacyDatasetWarning

    log = _marked_log([(1, 2), (2, 2)])
    root = log.to_parquet(tmp_path / "ds")
    # turn it into the old layout: one root file each, every tenant's rows
    for side in ("_runs.parquet", "_quarantine.parquet"):
        parts = [pq.read_table(d / side) for d in sorted(root.glob("tenant_id=*"))]
        for d in root.glob("tenant_id=*"):
            (d / side).unlink()
        pq.write_table(pa.concat_tables(parts), root / side)
    (root / "_quarantine_no_tenant.parquet").unlink()
    with pytest.warns(LegacyDatasetWarning, match=r"to_parquet\(new\)"):
        old = rk.read_parquet(root, tenant_id="acme")
    assert old.quarantine.column("tenant_id").to_pylist() == ["acme"]
    assert old.table.to_pylist() == log.filter(tenant_id="acme").table.to_pylist()
    with pytest.warns(LegacyDatasetWarning):
        new = rk.read_parquet(root).to_parquet(tmp_path / "new")
    assert (new / "tenant_id=acme" / "_quarantine.parquet").exists()
    assert not (new / "_quarantine.parquet").exists()


def test_a_tenant_reads_its_folder_when_the_root_cannot_be_listed(tmp_path: Path,
                                                                    monkeypatch) -> None:
    """Folder permissions that let a reader into tenant_id=<id>/ but not list the root
    (the test runs as root, so the refusal is simulated): read_parquet(tenant_id=...) takes
    the tenant's folder by name and reads it completely; an all-tenants read needs the
    listing and says so."""
    log = _marked_log([(2, 3), (1, 2)])
    root = log.to_parquet(tmp_path / "ds")
    want = rk.read_parquet(root, tenant_id="acme")
    real = Path.iterdir

    def no_listing(self):
        if self == root:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", no_listing)
    got = rk.read_parquet(root, tenant_id="acme")
    for a, b in ((got.table, want.table), (got.runs, want.runs),
                 (got.quarantine, want.quarantine)):
        assert a.to_pylist() == b.to_pylist()
    with pytest.raises(rk.LoadError):
        rk.read_parquet(root)
