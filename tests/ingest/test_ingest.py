"""rk.ingest: the same dataset as read_events(...).to_parquet(...), incrementally and safely."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _helpers import plain, same_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.datasets import generate_pleach
from replaykit.engine import partitions
from replaykit.ingest import CopyWarning, IngestError, parse_size
from replaykit.ingest._store import MANIFEST, Lock

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"


def reference(files: list[Path] | Path, tmp: Path, owner: str | None = None) -> rk.EventLog:
    """What read_events + to_parquet give for the same inputs, read back."""
    out = tmp / f"ref-{len(list(tmp.iterdir()))}"
    rk.read_events(files, owner=owner, errors="quarantine", progress=False).to_parquet(out)
    return rk.read_parquet(out)


def manifest(root: Path) -> dict:
    return json.loads((root / MANIFEST).read_text())


def check_counts(root: Path) -> None:
    """loaded + quarantined == input rows, per source; loaded matches the dataset's rows."""
    m = manifest(root)
    log = rk.read_parquet(root)
    by_source: dict[str, int] = {}
    for s in plain(log.table.select(["source"])).column("source").to_pylist():
        by_source[s] = by_source.get(s, 0) + 1
    for key, e in m["sources"].items():
        assert e["loaded"] + e["quarantined"] == e["input_rows"], key
        assert sum(by_source.get(n, 0) for n in e["names"]) == e["loaded"], key


_LINES: list[bytes] = []


def _generated() -> list[bytes]:
    """A generated pleach log (subagents, turns, several tenants) as lines, shuffled: runs
    interleave in any file cut from it (made once per session)."""
    if not _LINES:
        with tempfile.TemporaryDirectory() as d:
            path = generate_pleach(Path(d) / "all.jsonl", events=1_500, runs=24, seed=7,
                                   hashes=False)
            lines = path.read_bytes().splitlines(keepends=True)
        random.Random(3).shuffle(lines)
        _LINES.extend(lines)
    return _LINES


@pytest.fixture()
def pleach_lines() -> list[bytes]:
    return _generated()


def split(lines: list[bytes], folder: Path, k: int, seed: int, dups: int = 0) -> list[Path]:
    """Lines dealt at random into ``k`` files (plus ``dups`` lines repeated in another file)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    parts: list[list[bytes]] = [[] for _ in range(k)]
    for line in lines:
        parts[rng.randrange(k)].append(line)
    for line in rng.sample(lines, dups):
        parts[rng.randrange(k)].append(line)
    files = []
    for i, p in enumerate(parts):
        f = folder / f"day-{i:02d}.jsonl"
        f.write_bytes(b"".join(p))
        files.append(f)
    return files


# ------------------------------------------------------------------ same as read_events
def test_every_sample_format_ingests_as_read_events_reads_it(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    report = rk.ingest(DATA, root, owner="demo", progress=False)
    ref = reference(DATA, tmp_path, owner="demo")
    same_log(rk.read_parquet(root), ref)
    assert report.rows == len(ref) + len(ref.quarantine)
    formats = {s["format"] for s in report.sources}
    assert {"pleach", "toh", "isplay", "otel", "claude_code", "codex", "langsmith", "langfuse",
            "phoenix"} <= formats
    check_counts(root)
    # the engine reads it as any dataset: run-aligned files, checked from the footers
    assert len(partitions(root)) == len(list(root.glob("tenant_id=*/part-*.parquet")))
    # the lazy handle: runs_df from the side files, grain tables per part file
    ds = rk.open_dataset(root)
    import pandas as pd

    pd.testing.assert_frame_equal(ds.runs_df(), ref.runs_df())
    pd.testing.assert_frame_equal(ds.calls_df(), ref.calls_df())
    pd.testing.assert_frame_equal(ds.turns_df(), ref.turns_df())
    # running it again reads nothing and writes nothing
    again = rk.ingest(DATA, root, owner="demo", progress=False)
    assert {s["status"] for s in again.sources} == {"unchanged"}
    assert again.parts_written == 0 and again.rows == 0


def test_interleaved_runs_spanning_files_read_in_chunks(tmp_path: Path,
                                                        pleach_lines: list[bytes]) -> None:
    files = split(pleach_lines, tmp_path / "src", 3, seed=1, dups=5)
    root = tmp_path / "ds"
    # a 1 MB chunk size (memory_limit / 8) cuts each file into several chunks
    big = tmp_path / "src" / "day-00.jsonl"
    big.write_bytes(big.read_bytes() * 1)  # (as written; the next line makes it large)
    with open(big, "ab") as fh:
        for i in range(3_000):  # rows of new runs, to pass the chunk size
            fh.write(json.dumps({"tenant_id": "acme", "chat_id": f"bulk_{i % 7}",
                                 "sequence_number": i, "event_type": "message.user",
                                 "payload": {"text": "x" * 400},
                                 "created_at": "2026-01-02T00:00:00Z"}).encode() + b"\n")
    assert big.stat().st_size > 1_100_000
    rk.ingest(tmp_path / "src", root, memory_limit="8MB", partition_events=400,
              progress=False)
    ref = reference(files, tmp_path)
    log = rk.read_parquet(root)
    same_log(log, ref)
    assert len(ref.quarantine) >= 5  # the repeated lines: duplicate_seq, as read_pleach says
    assert set(ref.quarantine.column("reason").to_pylist()) == {"duplicate_seq"}
    assert len(list(root.glob("tenant_id=*/part-*.parquet"))) > 3
    partitions(root)  # disjoint run ranges per tenant (raises otherwise)
    check_counts(root)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(1, 4), seed=st.integers(0, 10_000), data=st.data())
def test_any_split_in_any_ingest_order_gives_the_same_dataset(
        k: int, seed: int, data: st.DataObject) -> None:
    pleach_lines = _generated()
    order = data.draw(st.permutations(range(k)))
    steps = data.draw(st.integers(1, k))
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        files = split(pleach_lines[:400], t / "src", k, seed, dups=2)
        root = t / "ds"
        # ingest the files in the drawn order, in ``steps`` calls
        ordered = [files[i] for i in order]
        cut = sorted(random.Random(seed).sample(range(1, k), steps - 1)) if steps > 1 else []
        bounds = [0, *cut, k]
        for a, b in zip(bounds, bounds[1:], strict=False):
            rk.ingest(ordered[a:b], root, partition_events=60, progress=False)
        same_log(rk.read_parquet(root), reference(files, t))
        partitions(root)
        m = manifest(root)
        for e in m["sources"].values():
            assert e["loaded"] + e["quarantined"] == e["input_rows"]


# ------------------------------------------------------------------ incremental
def _parts(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in root.glob("tenant_id=*/part-*.parquet")}


def test_new_grown_and_changed_files_replace_exactly_their_rows(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    gen = generate_pleach(tmp_path / "g.jsonl", events=2_000, runs=40, seed=5, hashes=False)
    lines = gen.read_bytes().splitlines(keepends=True)  # chat by chat, in seq order
    (src / "a.jsonl").write_bytes(b"".join(lines[:700]))
    (src / "b.jsonl").write_bytes(b"".join(lines[700:1400]))
    root = tmp_path / "ds"
    rk.ingest(src, root, partition_events=150, progress=False)
    before = _parts(root)
    # a new day's file: new runs only (chats after every existing one)
    (src / "c.jsonl").write_bytes(b"".join(lines[1400:1800]))
    r = rk.ingest(src, root, partition_events=150, progress=False)
    assert [s["status"] for s in r.sources] == ["unchanged", "unchanged", "new"]
    same_log(rk.read_parquet(root), reference(sorted(src.glob("*.jsonl")), tmp_path))
    after = _parts(root)
    kept = {k: v for k, v in before.items() if after.get(k) == v}
    assert r.parts_kept == len(kept) > 0  # untouched runs' files: the same inode and mtime
    assert r.rows == 400
    # a grown file (an export appended to): its rows are replaced, extending runs
    with open(src / "c.jsonl", "ab") as fh:
        fh.write(b"".join(lines[1800:]))
    r = rk.ingest(src, root, partition_events=150, progress=False)
    assert [s["status"] for s in r.sources] == ["unchanged", "unchanged", "changed"]
    same_log(rk.read_parquet(root), reference(sorted(src.glob("*.jsonl")), tmp_path))
    check_counts(root)
    # a changed file: some rows gone, one line broken (quarantined), the rest as before
    b = (src / "b.jsonl").read_bytes().splitlines(keepends=True)
    (src / "b.jsonl").write_bytes(b"".join(b[:300]) + b"{not json\n" + b"".join(b[350:]))
    r = rk.ingest(src, root, partition_events=150, progress=False)
    assert [s["status"] for s in r.sources] == ["unchanged", "changed", "unchanged"]
    ref = reference(sorted(src.glob("*.jsonl")), tmp_path)
    same_log(rk.read_parquet(root), ref)
    entry = manifest(root)["sources"]["b.jsonl"]
    assert (entry["input_rows"], entry["quarantined"]) == (651, 1)
    check_counts(root)
    partitions(root)


def test_a_copy_under_another_path_is_skipped_with_a_warning(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    gen = generate_pleach(src / "a.jsonl", events=300, runs=5, seed=1, hashes=False)
    root = tmp_path / "ds"
    rk.ingest(src, root, progress=False)
    shutil.copy(gen, src / "copy-of-a.jsonl")
    with pytest.warns(CopyWarning, match="same bytes as 'a.jsonl'"):
        r = rk.ingest(src, root, progress=False)
    assert {s["path"]: s["status"] for s in r.sources} == {"a.jsonl": "unchanged",
                                                           "copy-of-a.jsonl": "copy"}
    assert len(rk.read_parquet(root)) == 300


def test_touching_a_file_without_changing_it_reads_it_once_more_only(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    f = generate_pleach(src / "a.jsonl", events=200, runs=4, seed=2, hashes=False)
    root = tmp_path / "ds"
    rk.ingest(src, root, progress=False)
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    r = rk.ingest(src, root, progress=False)
    assert r.sources[0]["status"] == "unchanged" and r.parts_written == 0
    assert manifest(root)["sources"]["a.jsonl"]["mtime_ns"] == 1_000_000_000


# ------------------------------------------------------------------ safety
def test_a_second_ingest_fails_clearly_while_one_holds_the_lock(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    generate_pleach(src / "a.jsonl", events=200, runs=4, seed=2, hashes=False)
    root = tmp_path / "ds"
    rk.ingest(src, root, progress=False)
    generate_pleach(src / "b.jsonl", events=200, runs=4, seed=3, hashes=False)
    with Lock(root), pytest.raises(IngestError, match=rf"another ingest \(pid {os.getpid()}\)"):
        rk.ingest(src, root, progress=False)
    assert manifest(root)["sources"].keys() == {"a.jsonl"}  # nothing changed
    # wait=True queues behind the holder instead
    done: list[rk.IngestReport] = []
    with Lock(root):
        t = threading.Thread(target=lambda: done.append(
            rk.ingest(src, root, progress=False, wait=True)))
        t.start()
        t.join(0.5)
        assert not done  # blocked on the lock while it is held
    t.join()
    assert [s["status"] for s in done[0].sources] == ["unchanged", "new"]


def test_a_reader_during_an_ingest_sees_the_dataset_before_or_after(tmp_path: Path,
                                                                    pleach_lines: list[bytes]
                                                                    ) -> None:
    files = split(pleach_lines, tmp_path / "src", 2, seed=4)
    root = tmp_path / "ds"
    rk.ingest(files[0], root, partition_events=100, progress=False)
    before = plain(rk.read_parquet(root).table)
    seen: list[int] = []
    done = threading.Event()

    def writer() -> None:
        try:
            rk.ingest(files[1], root, partition_events=100, progress=False)
        finally:
            done.set()

    t = threading.Thread(target=writer)
    t.start()
    views = []
    while not done.is_set():
        views.append(plain(rk.read_parquet(root, tenant_id="acme").table))
    t.join()
    after = plain(rk.read_parquet(root).table)

    def acme(t: pa.Table) -> pa.Table:
        return t.filter(pc.equal(t.column("tenant_id"), "acme"))

    for v in views:
        assert v.equals(acme(before)) or v.equals(acme(after))
        seen.append(len(v))
    assert len(after) > len(before)


def test_a_commit_cut_short_is_finished_by_the_next_run(tmp_path: Path,
                                                        pleach_lines: list[bytes],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest that dies after its journal, half-way through swapping tenants in: readers
    still read a valid dataset, and the next run completes the commit (the SIGKILL version,
    at random points, is in test_ingest_processes.py)."""
    from replaykit.ingest import _store

    files = split(pleach_lines, tmp_path / "src", 2, seed=8)
    root = tmp_path / "ds"
    rk.ingest(files[0], root, progress=False)
    real = _store.swap_link
    calls = {"n": 0}

    def dying(link: Path, target: str) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the process stops here
        real(link, target)

    monkeypatch.setattr(_store, "swap_link", dying)
    with pytest.raises(KeyboardInterrupt):
        rk.ingest(files[1], root, progress=False)
    monkeypatch.setattr(_store, "swap_link", real)
    partitions(root)
    assert len(rk.read_parquet(root)) > 0  # readable: one tenant new, the others as before
    assert (root / "_ingest" / "pending.json").exists()
    r = rk.ingest(files, root, progress=False)
    assert {s["status"] for s in r.sources} == {"unchanged"}
    one_shot = tmp_path / "one"
    rk.ingest(files, one_shot, progress=False)
    same_log(rk.read_parquet(root), rk.read_parquet(one_shot))


# ------------------------------------------------------------------ lazy handle
def test_open_dataset_filters_push_down_and_match_the_loaded_log(tmp_path: Path,
                                                                 pleach_lines: list[bytes]
                                                                 ) -> None:
    import pandas as pd

    files = split(pleach_lines, tmp_path / "src", 2, seed=9)
    root = tmp_path / "ds"
    rk.ingest(files, root, partition_events=200, progress=False)
    log = rk.read_parquet(root)
    ds = rk.open_dataset(root)
    assert len(ds) == len(log)
    pd.testing.assert_frame_equal(ds.runs_df(), log.runs_df())
    pd.testing.assert_frame_equal(ds.tools_df(), log.tools_df())
    acme = ds.filter(tenant_id="acme")
    assert acme.tenants == ["acme"]
    pd.testing.assert_frame_equal(acme.runs_df(), log.filter(tenant_id="acme").runs_df())
    run_id = log.filter(tenant_id="acme").run_ids[0]
    one = acme.run(run_id)
    assert len(one) == len(log.run(run_id, tenant_id="acme"))
    ts = log.table.column("ts").to_pylist()
    mid = sorted(t for t in ts if t is not None)[len(ts) // 2]
    window = ds.filter(since=mid, types=["tool.called"])
    got = window.load()
    assert set(got.table.column("type").to_pylist()) == {"tool.called"}
    assert min(got.table.column("ts").to_pylist()) >= mid
    want = log.filter(types=["tool.called"])
    assert len(got) == sum(1 for t in want.table.column("ts").to_pylist() if t >= mid)
    # a time window: runs_df computed per part file over the window's rows
    pd.testing.assert_frame_equal(window.runs_df()[["tenant_id", "run_id", "events"]],
                                  got.runs_df()[["tenant_id", "run_id", "events"]])
    with pytest.raises(KeyError, match="no run 'nope'"):
        acme.run("nope")
    with pytest.raises(ValueError, match="name the run's tenant"):
        ds.run(run_id)


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    assert parse_size("2GB") == 2 * 10**9 and parse_size("512MiB") == 512 * 2**20
    with pytest.raises(ValueError, match="memory_limit"):
        parse_size("lots")
    with pytest.raises(ValueError, match="errors"):
        rk.ingest(DATA / "pleach", tmp_path / "x", errors="ignore")
    from replaykit.errors import SettingError

    with pytest.raises(SettingError, match="threads="):
        rk.ingest(DATA / "pleach", tmp_path / "x", threads=0)
    assert not (tmp_path / "x").exists()  # refused before anything is written
    plain_ds = tmp_path / "plain"
    rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl").to_parquet(plain_ds)
    with pytest.raises(IngestError, match="not written by ingest"):
        rk.ingest(DATA / "pleach", plain_ds)
    with pytest.raises(ValueError, match="is a Parquet dataset, not logs"):
        rk.ingest(plain_ds, tmp_path / "w")
    # a dataset inside the folder being ingested: its own files are not read as logs
    nested = tmp_path / "logs"
    shutil.copytree(DATA / "pleach", nested)
    rk.ingest(nested, nested / "ds", progress=False)
    again = rk.ingest(nested, nested / "ds", progress=False)
    assert {s["path"] for s in again.sources} == {"harness_event_log.jsonl",
                                                   "harness_event_log_hashed.parquet"}
    assert {s["status"] for s in again.sources} == {"unchanged"}
    with pytest.raises(rk.MissingTenantError):
        rk.ingest(DATA / "toh", tmp_path / "y", progress=False)
    assert not list((tmp_path / "y").glob("tenant_id=*"))
    # a pleach file read in chunks names the file and line of a bad row under errors="raise"
    f = generate_pleach(tmp_path / "bad.jsonl", events=3_600, runs=9, seed=4, hashes=False)
    n = f.read_bytes().count(b"\n")
    assert f.stat().st_size > 1 << 20  # more than one chunk at memory_limit="8MB"
    with open(f, "ab") as fh:
        fh.write(b"{broken\n")
    with pytest.raises(rk.LoadError, match=rf"bad\.jsonl:{n + 1}: .*reason=bad_json"):
        rk.ingest(f, tmp_path / "z", errors="raise", memory_limit="8MB", progress=False)
    assert not list((tmp_path / "z").glob("tenant_id=*"))  # nothing written
    assert not list((tmp_path / "z" / "_ingest").glob("*"))  # and nothing left beside it


# ------------------------------------------------------------------ threads
def _dataset_files(root: Path) -> dict[str, pa.Table]:
    """Every Parquet file of an ingested dataset by its path under the tenant links (part
    files and side tables), read as plain columns."""
    import pyarrow.parquet as pq

    return {str(p.relative_to(root)): plain(pq.read_table(p))
            for p in sorted(root.glob("tenant_id=*/*.parquet"))}


def test_the_concurrent_merge_writes_the_dataset_of_one_thread(
        tmp_path: Path, pleach_lines: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    import replaykit._base.native as native
    from replaykit.ingest import _merge

    monkeypatch.setattr(native, "cores", lambda: 4)  # (a 1-core runner still gets threads)
    monkeypatch.delenv(native.ENV_THREADS, raising=False)
    seen: set[str] = set()
    real = _merge.merge_range

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(_merge, "merge_range", spy)
    from replaykit.ingest import _parse

    staged: list[str] = []
    real_write = _parse._write_staging

    def spy_write(table, path):  # type: ignore[no-untyped-def]
        staged.append(threading.current_thread().name)
        return real_write(table, path)

    monkeypatch.setattr(_parse, "_write_staging", spy_write)
    files = split(pleach_lines[:700], tmp_path / "src", 3, seed=5, dups=4)
    roots = {n: tmp_path / f"ds-{n}" for n in (1, 4)}
    # small ranges (partition_events) and a limit that stages pieces to disk (a quarter of
    # the limit stays in memory)
    for n, root in roots.items():
        rk.ingest(tmp_path / "src", root, memory_limit="1MB", partition_events=50,
                  threads=n, progress=False)
    assert any(name.startswith("replaykit-merge") for name in seen)  # ranges ran in the pool
    assert any(name.startswith("replaykit-staging") for name in staged)  # and staging wrote
    a, b = _dataset_files(roots[1]), _dataset_files(roots[4])
    assert len([k for k in a if "/part-" in k]) > 6
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].equals(b[name]), name
    # then a changed file: its runs' part files are rewritten (dirty ranges), concurrently too
    with open(files[1], "ab") as fh:
        fh.write(b"".join(pleach_lines[:30]))
    seen.clear()
    for n, root in roots.items():
        rk.ingest(tmp_path / "src", root, memory_limit="1MB", partition_events=50,
                  threads=n, progress=False)
    assert any(name.startswith("replaykit-merge") for name in seen)
    a, b = _dataset_files(roots[1]), _dataset_files(roots[4])
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].equals(b[name]), name
    same_log(rk.read_parquet(roots[4]), reference(files, tmp_path))
    partitions(roots[4])
    check_counts(roots[4])


@settings(max_examples=30, deadline=None)
@given(lines=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")),
                      max_size=30),
       tail=st.booleans(), chunk=st.integers(1, 64))
def test_line_blocks_cut_a_file_at_newlines_without_losing_a_byte(
        lines: list[bytes], tail: bool, chunk: int) -> None:
    import io

    from replaykit.ingest._parse import _line_blocks

    data = b"\n".join(lines) + (b"" if tail else b"\n" if lines else b"")
    got = list(_line_blocks(io.BytesIO(data), chunk))
    assert b"".join(bytes(d) for _, d, _ in got) == data
    pos = 0
    for i, (off, d, line_off) in enumerate(got):
        assert off == pos and line_off == data[:pos].count(b"\n")
        assert len(d) > 0
        if i < len(got) - 1:  # every block but the last ends a line
            assert bytes(d).endswith(b"\n")
        pos += len(d)
