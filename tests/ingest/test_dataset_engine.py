"""rk.cohorts / rk.fold / rk.compare / rk.verify_chain over the lazy handle (rk.open_dataset):
out of core on the Dask engine, the view's filters pushed into the Parquet scan, results equal
to the in-memory engine's on ``view.load()``."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
import replaykit.engine._parts as engine_parts
from replaykit.datasets import generate_pleach
from replaykit.engine import partitions
from replaykit.fold import state_json

pytest.importorskip("dask")

TENANTS = ("acme", "globex", "initech")


def _shifted(lines: list[bytes], days: int) -> list[bytes]:
    """Pleach rows with ``created_at`` moved ``days`` days (one export per term)."""
    out = []
    for line in lines:
        row = json.loads(line)
        t = datetime.fromisoformat(row["created_at"].replace("Z", "+00:00"))
        row["created_at"] = (t + timedelta(days=days)).astimezone(UTC).isoformat(
            timespec="milliseconds").replace("+00:00", "Z")
        out.append(json.dumps(row).encode() + b"\n")
    return out


def make_exports(folder: Path) -> list[Path]:
    """A fall and a spring export of generated pleach logs (three tenants), each dealt at
    random into weekly files, so runs span files. Their rows carry hash chains, which the
    moved times break: verify_chain reports every row."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for term, days, seed in (("fall", -80, 11), ("spring", 60, 12)):
        src = generate_pleach(folder / f"_{term}.jsonl", events=1_200, runs=18, seed=seed,
                              tenants=TENANTS)
        lines = src.read_bytes().splitlines(keepends=True)
        src.unlink()
        lines = _shifted(lines, days)
        rng = random.Random(seed)
        weeks: list[list[bytes]] = [[], [], []]
        for line in lines:
            weeks[rng.randrange(3)].append(line)
        for i, w in enumerate(weeks):
            f = folder / f"{term}-week-{i}.jsonl"
            f.write_bytes(b"".join(w))
            files.append(f)
    return files


@pytest.fixture(scope="module")
def semester(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, rk.EventLog]:
    tmp = tmp_path_factory.mktemp("semester")
    make_exports(tmp / "exports")
    root = tmp / "semester"
    rk.ingest(tmp / "exports", root, partition_events=150, progress=False)
    return root, rk.read_parquet(root)


def _final_json(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    if df.empty:  # a fold of no run has no state column
        return []
    return [(str(t), str(r), state_json(s)) for t, r, s in
            zip(df["tenant_id"], df["run_id"], df["state"], strict=True)]


def frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal frames; a categorical column's values compared, not its categories' order (the
    engine's combine step unions the partitions' categories sorted)."""
    def plain(df: pd.DataFrame) -> pd.DataFrame:
        return df.assign(**{c: df[c].astype(object) for c in df.columns
                            if isinstance(df[c].dtype, pd.CategoricalDtype)})

    for c in a.columns:
        assert isinstance(a[c].dtype, pd.CategoricalDtype) == isinstance(
            b[c].dtype, pd.CategoricalDtype), c
    pd.testing.assert_frame_equal(plain(a), plain(b))


def same_results(view: rk.Dataset) -> None:
    """Every analysis over the view (out of core) equals the in-memory one on view.load()."""
    log = view.load()
    # fold
    got = rk.fold(view, rk.agent()).final()
    want = rk.fold(log, rk.agent()).final()
    assert _final_json(got) == _final_json(want)
    assert list(got.columns) == list(want.columns)
    cols = [c for c in want.columns if c != "state"]
    frames_equal(got[cols], want[cols])
    # verify_chain: whole runs only
    if view.whole_runs:
        frames_equal(rk.verify_chain(view), rk.verify_chain(log))
    else:
        with pytest.raises(ValueError, match="checks whole runs"):
            rk.verify_chain(view)
    # cohorts
    if log.num_runs:
        cd, cl = rk.cohorts(view, by="semester"), rk.cohorts(log, by="semester")
        assert cd.labels == cl.labels
        frames_equal(cd.runs_df(), cl.runs_df())
        frames_equal(cd.summary(), cl.summary())


def test_the_analyses_over_the_handle_equal_the_loaded_logs(semester) -> None:
    root, log = semester
    ds = rk.open_dataset(root)
    assert len(partitions(ds)) == len(partitions(root)) >= 12
    same_results(ds)
    # the whole dataset: values, not only self-consistency
    final = rk.fold(ds, rk.agent()).final()
    assert len(final) == log.num_runs == 36
    assert final["events"].sum() == len(log)
    problems = rk.verify_chain(ds)  # the moved times break every row's hash
    assert set(problems["kind"]) == {"hash_mismatch"} and len(problems) == len(log)
    cs = rk.cohorts(ds, by="semester")
    assert cs.labels == ["2025-fall", "2026-spring"]
    assert cs.summary()["runs"].tolist() == [18, 18]
    # narrower views
    acme = ds.filter(tenant_id="acme")
    same_results(acme)
    assert set(rk.fold(acme, rk.agent()).final()["tenant_id"].astype(str)) == {"acme"}
    runs = log.run_ids[::5]
    same_results(ds.filter(runs=runs))
    same_results(ds.filter(since="2026-01-01"))
    same_results(ds.filter(types=["tool.called", "tool.completed", "model.completed"]))
    same_results(ds.filter(tenant_id=["globex", "initech"], until="2026-01-01"))


def test_a_cohort_comparison_over_the_handle_is_the_in_memory_one(semester) -> None:
    root, log = semester
    ds = rk.open_dataset(root)
    got = rk.cohorts(ds, by="semester").compare("2025-fall", "2026-spring", n_boot=200)
    want = rk.cohorts(log, by="semester").compare("2025-fall", "2026-spring", n_boot=200)
    frames_equal(got, want)
    events = got.set_index(["analysis", "metric"]).loc[("unpaired", "events_per_run")]
    runs = log.runs_df()  # the fall term: runs starting before January
    assert events["value_a"] == pytest.approx(
        runs.loc[runs["first_ts"] < "2026-01-01", "events"].mean())
    # a tenant's view: only its folders are read, the same comparison as its loaded log
    acme = ds.filter(tenant_id="acme")
    frames_equal(
        rk.cohorts(acme, by="semester").compare("2025-fall", "2026-spring", n_boot=50),
        rk.cohorts(log.filter(tenant_id="acme"), by="semester").compare(
            "2025-fall", "2026-spring", n_boot=50))


def test_compare_takes_views_on_either_side(semester) -> None:
    root, log = semester
    ds = rk.open_dataset(root)
    acme = log.filter(tenant_id="acme")
    first = acme.runs_df().sort_values("run_id")
    fall = first[first["first_ts"] < "2026-01-01"]["run_id"].astype(str).tolist()
    spring = first[first["first_ts"] >= "2026-01-01"]["run_id"].astype(str).tolist()
    pairs = pd.DataFrame({"tenant_id": "acme", "base_run_id": fall[:4],
                          "replay_run_id": spring[:4]})
    want = rk.compare(acme, acme, pairs)
    got = rk.compare(ds.filter(tenant_id="acme"), ds, pairs)
    frames_equal(got, want)
    assert len(got) == 4 and got["tool_sequence_distance"].notna().all()
    # a type filter on the view is applied to what compare reads, as load() applies it
    tools = ds.filter(types=["tool.called", "tool.completed"])
    frames_equal(rk.compare(tools, tools, pairs),
                                  rk.compare(tools.load(), tools.load(), pairs))


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(tenants=st.none() | st.lists(st.sampled_from(TENANTS), min_size=1, max_size=3,
                                    unique=True),
       run_share=st.none() | st.integers(2, 7),
       since=st.none() | st.integers(-100, 80), span=st.none() | st.integers(0, 200),
       types=st.none() | st.lists(st.sampled_from(
           ["tool.called", "tool.completed", "model.completed", "turn.started",
            "message.user"]), min_size=1, max_size=3, unique=True))
def test_any_filter_then_the_handle_equals_the_loaded_view(semester, tenants, run_share, since,
                                                           span, types) -> None:
    root, log = semester
    day0 = datetime(2026, 1, 1, tzinfo=UTC)
    lo = None if since is None else day0 + timedelta(days=since)
    hi = None if span is None else (lo or day0 - timedelta(days=100)) + timedelta(days=span)
    runs = None if run_share is None else log.run_ids[::run_share]
    view = rk.open_dataset(root).filter(tenant_id=tenants, runs=runs, since=lo, until=hi,
                                        types=types)
    same_results(view)


# ------------------------------------------------------------------ pushed into the scan
def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The part files the engine's tasks open (Dask's threaded scheduler: this process)."""
    from distributed import default_client

    with pytest.raises(ValueError):  # no cluster client left current by an earlier module
        default_client()
    seen: list[str] = []
    real = engine_parts.read_partition_files

    def spy(files, **kw):
        seen.extend(str(f) for _, f in files)
        return real(files, **kw)

    monkeypatch.setattr(engine_parts, "read_partition_files", spy)
    return seen


def test_a_filtered_call_opens_only_the_files_that_can_match(semester, tmp_path,
                                                             monkeypatch) -> None:
    root, log = semester
    ds = rk.open_dataset(root)
    every = [str(p.path) for p in partitions(ds)]
    seen = _count_reads(monkeypatch)
    one = log.filter(tenant_id="globex").run_ids[3]
    final = rk.fold(ds.filter(tenant_id="globex", runs=[one]), rk.agent()).final()
    assert final["run_id"].astype(str).tolist() == [one]
    assert len(seen) == 1  # one file of 12+ holds the run: only it was opened
    # independently: that file's own rows hold the run
    assert one in set(pq.read_table(seen[0], columns=["run_id"]).column("run_id")
                      .to_pylist())
    seen.clear()
    # without the tenant: per tenant, only a file whose run-id range can hold it
    rk.fold(ds.filter(runs=[one]), rk.agent()).final()
    assert 1 <= len(seen) <= len(TENANTS)
    for f in seen:
        ids = sorted(pq.read_table(f, columns=["run_id"]).column("run_id").to_pylist())
        assert ids[0] <= one <= ids[-1]
    seen.clear()
    rk.verify_chain(ds.filter(tenant_id="acme"))
    assert seen and all("tenant_id=acme" in f for f in seen)
    assert len(seen) == sum("tenant_id=acme" in f for f in every)
    seen.clear()
    # a time window: files whose ts range misses it are not opened
    rk.cohorts(ds.filter(since="2026-01-01"), by="semester")
    spring_files = set()
    for f in every:
        ts = pq.read_table(f, columns=["ts"]).column("ts").to_pylist()
        if max(t for t in ts if t is not None) >= datetime(2026, 1, 1, tzinfo=UTC):
            spring_files.add(f)
    assert set(seen) == spring_files and 0 < len(spring_files) < len(every)


def test_other_tenants_files_are_never_opened(semester, tmp_path) -> None:
    """Damaged part files of other tenants: a view of one tenant never lists them. (A file
    of the view's own tenants has its footer read to plan the view: damaged, its task fails
    and names it.)"""
    import shutil

    root, log = semester
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    ds = rk.open_dataset(copy)
    one = log.filter(tenant_id="acme").run_ids[0]
    view = ds.filter(tenant_id="acme", runs=[one])
    want = rk.fold(view, rk.agent()).final()
    keep = [p.path for p in partitions(view)]
    assert len(keep) == 1
    other = [p for p in partitions(ds) if p.tenant_id != "acme"]
    for p in other:
        Path(p.path).unlink()
        Path(p.path).write_bytes(b"not parquet")
    got = rk.fold(view, rk.agent()).final()
    assert _final_json(got) == _final_json(want) and len(got) == 1
    frames_equal(rk.verify_chain(view), rk.verify_chain(log.filter(
        tenant_id="acme", run_ids=[one])))
    frames_equal(rk.cohorts(ds.filter(tenant_id="acme"), by="semester").summary(),
                 rk.cohorts(log.filter(tenant_id="acme"), by="semester").summary())
    with pytest.raises(rk.ReplayKitError, match=r"partition 'tenant_id=(globex|initech)/part"):
        rk.fold(ds, rk.agent()).final()  # the whole dataset does read them, and names one
    # a damaged file of the view's own tenant: named
    mine = next(p for p in partitions(ds.filter(tenant_id="acme")) if p.path != keep[0])
    Path(mine.path).unlink()
    Path(mine.path).write_bytes(b"not parquet")
    with pytest.raises(rk.ReplayKitError, match=re.escape(mine.name)):
        rk.fold(view, rk.agent()).final()


def test_runs_df_reads_only_the_side_files(semester, tmp_path) -> None:
    import shutil

    root, log = semester
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    ds = rk.open_dataset(copy)
    want = log.runs_df()
    for p in partitions(ds):  # every part file damaged: runs_df does not need them
        Path(p.path).unlink()
        Path(p.path).write_bytes(b"not parquet")
    frames_equal(ds.runs_df(), want)
    frames_equal(ds.filter(tenant_id="acme").runs_df(),
                                  log.filter(tenant_id="acme").runs_df())
    with pytest.raises(rk.ReplayKitError):
        ds.calls_df()


def test_a_view_no_file_can_match_gives_empty_results(semester) -> None:
    root, log = semester
    view = rk.open_dataset(root).filter(since="2030-01-01")
    assert partitions(view) == []
    assert rk.fold(view, rk.agent()).final().empty
    nobody = rk.open_dataset(root).filter(runs=["no-such-run"])
    assert partitions(nobody) == [] and rk.verify_chain(nobody).empty
    cs = rk.cohorts(view, by="semester")
    assert cs.labels == [] and cs.runs_df().empty


def test_the_scaling_doc_semester_story_runs(tmp_path, monkeypatch) -> None:
    """docs/scaling.md's "A semester of logs" Python blocks run, in order, on generated
    exports (the section's folder names), and its cohort comparison is the in-memory one."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "scaling.md").read_text()
    section = doc.split("## A semester of logs", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    # the blocks that run here; the one past one machine needs a scheduler (tcp://...)
    blocks = [b for b in blocks if "tcp://" not in b]
    assert len(blocks) == 3
    make_exports(tmp_path / "exports")
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/scaling.md semester block {i + 1}", "exec"), ns)
    assert ns["report"].rows == 2_400 and ns["small"].num_runs == 1
    frames_equal(ns["by_term"].summary(),
                 rk.cohorts(rk.read_parquet("semester"), by="semester").summary())


def test_a_view_runs_on_a_cluster_with_client(semester) -> None:
    """client=: the view's partitions (their filters among them) cross to worker processes."""
    distributed = pytest.importorskip("distributed")
    root, log = semester
    view = rk.open_dataset(root).filter(tenant_id=["acme", "globex"], since="2026-01-01")
    whole = rk.open_dataset(root).filter(tenant_id="acme")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        got = rk.fold(view, rk.agent(), client=client).final()
        cohorts = rk.cohorts(view, by="semester", client=client).summary()
        chain = rk.verify_chain(whole, client=client)
    want = rk.fold(view.load(), rk.agent()).final()
    assert _final_json(got) == _final_json(want) and len(got) == 12
    frames_equal(cohorts, rk.cohorts(view.load(), by="semester").summary())
    frames_equal(chain, rk.verify_chain(whole.load()))
