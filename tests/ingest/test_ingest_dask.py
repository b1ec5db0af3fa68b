"""rk.ingest(..., engine="dask") on a local cluster of two worker processes writes the dataset
the local engine writes: same rows in the same order, same quarantine, same part files and
side tables, same manifest; first ingest and incremental ones (new, grown, changed files).
Slow (a Dask cluster): left out of `make check` (tests/conftest.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _helpers import plain, rows, same_log

import replaykit as rk
from replaykit.datasets import generate_pleach
from replaykit.engine import partitions

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                           dashboard_address=":0", memory_limit="1GiB")
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _manifest(root: Path) -> dict:
    m = json.loads((root / "_ingest_manifest.json").read_text())
    for e in m["sources"].values():
        e.pop("ingested_at")
    return m


def _tenant_files(root: Path) -> dict[str, list[dict]]:
    """Every file of every tenant's current generation: its rows, as plain values (part files
    in their order; side tables as sorted rows)."""
    out: dict[str, list[dict]] = {}
    for d in sorted(root.glob("tenant_id=*")):
        for f in sorted(d.iterdir()):
            t = pq.read_table(f)
            key = f"{d.name}/{f.name}"
            out[key] = (plain(t).to_pylist() if f.name.startswith("part-")
                        else rows(t, t.schema.names))
    return out


def same_dataset(a: Path, b: Path) -> None:
    same_log(rk.read_parquet(a), rk.read_parquet(b))
    assert _manifest(a) == _manifest(b)
    fa, fb = _tenant_files(a), _tenant_files(b)
    assert sorted(fa) == sorted(fb)
    for k in fa:
        assert fa[k] == fb[k], k
    assert rows(pq.read_table(a / "_quarantine_no_tenant.parquet"), ["source", "line"]) == \
        rows(pq.read_table(b / "_quarantine_no_tenant.parquet"), ["source", "line"])
    partitions(b)  # run-aligned, disjoint run ranges per tenant


def _both(src: Path | list[Path], tmp: Path, client, **kw) -> tuple[dict, dict]:
    local = rk.ingest(src, tmp / "local", progress=False, **kw).to_dict()
    dask = rk.ingest(src, tmp / "dask", progress=False, engine="dask", client=client,
                     **kw).to_dict()
    for d in (local, dask):
        d.pop("seconds")
        d.pop("dataset")
    return local, dask


def test_every_sample_format_same_dataset_as_the_local_engine(tmp_path: Path, client) -> None:
    local, dask = _both(DATA, tmp_path, client, owner="demo")
    assert local == dask
    assert dask["files"] == {"new": len(dask["sources"])} and dask["rows"] > 500
    same_dataset(tmp_path / "local", tmp_path / "dask")
    # and what read_events + to_parquet give (an independent path)
    ref = tmp_path / "ref"
    rk.read_events(DATA, owner="demo", errors="quarantine", progress=False).to_parquet(ref)
    same_log(rk.read_parquet(tmp_path / "dask"), rk.read_parquet(ref))


def test_chunked_interleaved_and_incremental_ingests_match(tmp_path: Path, client) -> None:
    gen = generate_pleach(tmp_path / "g.jsonl", events=3_000, runs=40, seed=11, hashes=False)
    lines = gen.read_bytes().splitlines(keepends=True)
    gen.unlink()
    rng = random.Random(5)
    head, tail = lines[:2_000], lines[2_000:]
    rng.shuffle(head)  # runs interleave across the files
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_bytes(b"".join(head[:1_200]) + head[3])  # a duplicate line
    (src / "b.jsonl").write_bytes(b"".join(head[1_200:]) + b"{broken\n")
    kw = {"memory_limit": "8MB", "partition_events": 150}  # 1 MB chunks: a.jsonl is cut
    with open(src / "a.jsonl", "ab") as fh:  # enough rows to pass the chunk size
        for i in range(2_500):
            fh.write(json.dumps({"tenant_id": "acme", "chat_id": f"bulk_{i % 9}",
                                 "sequence_number": i, "event_type": "message.user",
                                 "payload": {"text": "x" * 400},
                                 "created_at": "2026-01-02T00:00:00Z"}).encode() + b"\n")
    assert (src / "a.jsonl").stat().st_size > 1_100_000
    local, dask = _both(src, tmp_path, client, **kw)
    assert local == dask
    same_dataset(tmp_path / "local", tmp_path / "dask")
    q = rk.read_parquet(tmp_path / "dask").quarantine
    bad = [(Path(r["source"]).name, r["line"], r["reason"]) for r in q.to_pylist()]
    assert ("a.jsonl", 1_201, "duplicate_seq") in bad  # the repeated line, by its own line
    assert any(n == "b.jsonl" and line == 801 for n, line, _ in bad)  # the broken one
    # a new day's file, then a grown one and a changed one: the same steps on both engines
    (src / "c.jsonl").write_bytes(b"".join(tail[:500]))
    local, dask = _both(src, tmp_path, client, **kw)
    assert local == dask and [s["status"] for s in dask["sources"]] == \
        ["unchanged", "unchanged", "new"]
    same_dataset(tmp_path / "local", tmp_path / "dask")
    with open(src / "c.jsonl", "ab") as fh:
        fh.write(b"".join(tail[500:]))
    b = (src / "b.jsonl").read_bytes().splitlines(keepends=True)
    (src / "b.jsonl").write_bytes(b"".join(b[:300] + b[400:]))
    local, dask = _both(src, tmp_path, client, **kw)
    assert local == dask
    assert {s["path"]: s["status"] for s in dask["sources"]} == \
        {"a.jsonl": "unchanged", "b.jsonl": "changed", "c.jsonl": "changed"}
    assert dask["parts_kept"] > 0
    same_dataset(tmp_path / "local", tmp_path / "dask")
    ref = tmp_path / "ref"
    rk.read_events(sorted(src.glob("*.jsonl")), errors="quarantine",
                   progress=False).to_parquet(ref)
    same_log(rk.read_parquet(tmp_path / "dask"), rk.read_parquet(ref))
