"""rk.ingest in child processes: killed with SIGKILL at seeded random points, and its peak
memory under a small ``memory_limit`` (slow: a Python process per case)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from _helpers import same_log

import replaykit as rk
from replaykit.datasets import generate_pleach
from replaykit.engine import partitions

REPO = Path(__file__).resolve().parents[2]

#: the child: ingest, dying by SIGKILL at the N-th file-system step of the ingest (a Parquet
#: file written, a hard link, a rename, a link swapped, a JSON file written)
KILLER = textwrap.dedent("""
    import os, signal, sys, json
    import pyarrow.parquet as pq
    import replaykit as rk
    from replaykit.ingest import _merge, _store

    target = int(sys.argv[1])
    count = [0]

    def step(fn):
        def wrapped(*a, **k):
            count[0] += 1
            if count[0] == target:
                os.kill(os.getpid(), signal.SIGKILL)
            return fn(*a, **k)
        return wrapped

    pq.write_table = step(pq.write_table)
    os.link = step(os.link)
    os.replace = step(os.replace)
    os.symlink = step(os.symlink)
    _store.write_json_atomic = step(_store.write_json_atomic)
    rk.ingest(sys.argv[2:-1], sys.argv[-1], partition_events=80, progress=False)
    print(json.dumps({"steps": count[0]}))
""")


def _child(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


def _files(tmp: Path) -> tuple[list[Path], list[Path]]:
    """Two days of a pleach export, then a third day and the second day grown."""
    gen = generate_pleach(tmp / "g.jsonl", events=1_200, runs=18, seed=11, hashes=False)
    lines = gen.read_bytes().splitlines(keepends=True)
    random.Random(5).shuffle(lines)
    src = tmp / "src"
    src.mkdir()
    (src / "d1.jsonl").write_bytes(b"".join(lines[:400]))
    (src / "d2.jsonl").write_bytes(b"".join(lines[400:700]))
    first = sorted(src.glob("*.jsonl"))
    later = tmp / "later"
    later.mkdir()
    (later / "d2.jsonl").write_bytes(b"".join(lines[400:900]))  # d2 grown
    (later / "d3.jsonl").write_bytes(b"".join(lines[900:]))
    return first, sorted(later.glob("*.jsonl"))


def test_sigkill_at_random_points_leaves_a_valid_dataset_and_a_rerun_finishes(
        tmp_path: Path) -> None:
    first, later = _files(tmp_path)
    root = tmp_path / "ds"
    rk.ingest(first, root, partition_events=80, progress=False)
    before = rk.read_parquet(root)
    # the incremental ingest run to the end once, to count its steps
    probe = tmp_path / "probe"
    rk.ingest(first, probe, partition_events=80, progress=False)
    # d1 unchanged, d2 grown (the same key, d2.jsonl), d3 new
    run = [str(p) for p in (tmp_path / "src" / "d1.jsonl", *later)]
    done = _child(KILLER, "0", *run, str(probe))
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout.strip().splitlines()[-1])["steps"]
    after = rk.read_parquet(probe)
    assert steps >= 10
    rng = random.Random(2026)
    points = sorted(rng.sample(range(1, steps + 1), 10))
    for n in points:
        work = tmp_path / f"kill-{n}"
        shutil.copytree(root, work, symlinks=True)
        cut = _child(KILLER, str(n), *run, str(work))
        assert cut.returncode == -signal.SIGKILL, (n, cut.stderr)
        # valid after the kill: readable, run-aligned, each tenant as before or after
        partitions(work)
        log = rk.read_parquet(work)
        for tenant in after.tenants:
            got = log.filter(tenant_id=tenant)
            for ref in (before.filter(tenant_id=tenant), after.filter(tenant_id=tenant)):
                if len(got) == len(ref):
                    try:
                        same_log(got, ref)
                        break
                    except AssertionError:
                        continue
            else:
                raise AssertionError(f"kill at step {n}: tenant {tenant} is neither before "
                                     "nor after")
        # the re-run finishes the job: the same dataset as the uninterrupted run
        rk.ingest(run, work, partition_events=80, progress=False)
        same_log(rk.read_parquet(work), after)
        assert _sources(work) == _sources(probe)


def _sources(root: Path) -> dict[str, tuple]:
    m = json.loads((root / "_ingest_manifest.json").read_text())
    for e in m["sources"].values():
        assert e["loaded"] + e["quarantined"] == e["input_rows"]
    return {k: (e["digest"], e["size"], e["input_rows"], e["loaded"], e["quarantined"])
            for k, e in m["sources"].items()}


MEASURE = textwrap.dedent("""
    import json, resource, sys, tempfile
    from pathlib import Path
    import replaykit as rk
    from replaykit.datasets import generate_pleach

    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # bytes (Linux: KiB)

    # warm up every code path on a small input first: what is measured is the ingest's own
    # memory, not the first import of a module
    with tempfile.TemporaryDirectory() as d:
        w = generate_pleach(Path(d) / "w.jsonl", events=3_000, runs=20, seed=1, hashes=False)
        rk.ingest(w, Path(d) / "ds", memory_limit=sys.argv[3], progress=False)
        rk.read_parquet(Path(d) / "ds")
    base = peak()
    r = rk.ingest(sys.argv[1], sys.argv[2], memory_limit=sys.argv[3], progress=False)
    print(json.dumps({"base": base, "peak": peak(), "rows": r.rows}))
""")


def test_peak_memory_follows_the_limit_not_the_input(tmp_path: Path) -> None:
    """A 48 MB export ingested under memory_limit="16MB" (a 2 MB chunk): the ingest's peak
    RSS above the warmed-up process stays under 16 MB plus a fixed allowance for allocator
    arenas and Arrow's scanner (64 MB), while the same file read whole takes about 4x its size
    (measured: ~200 MB)."""
    gen = generate_pleach(tmp_path / "seed.jsonl", events=10_000, runs=100, seed=3,
                          hashes=False)
    one = gen.read_bytes()
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as fh:  # the same chats renamed per copy: 15x the rows, fast
        for k in range(15):
            fh.write(one.replace(b'"chat_id":"chat_', f'"chat_id":"c{k:02d}_'.encode()))
    size = big.stat().st_size
    assert size > 40_000_000
    out = _child(MEASURE, str(big), str(tmp_path / "ds"), "16MB")
    assert out.returncode == 0, out.stderr
    m = json.loads(out.stdout.strip().splitlines()[-1])
    assert m["rows"] == 150_000
    growth = m["peak"] - m["base"]
    assert growth < 16_000_000 + 64_000_000, growth
    assert growth < size * 2  # far from what the whole file in memory takes
    assert len(rk.read_parquet(tmp_path / "ds")) == 150_000
