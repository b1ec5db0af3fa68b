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

#: the child: one Python that imports replaykit once, then for each target N forks a process
#: that runs the ingest and dies by SIGKILL at its N-th file-system step (a Parquet file
#: written, a hard link, a rename, a link swapped, a JSON file written); N = 0 runs to the end.
#: Prints, per target, the forked process's exit (the negative signal number if killed) and
#: its step count. A fork per case instead of a fresh interpreter: the same fresh process
#: state for the ingest, without importing replaykit and pyarrow eleven times.
KILLER = textwrap.dedent("""
    import os, signal, sys, json
    import pyarrow.parquet as pq
    import replaykit as rk
    from replaykit.ingest import _merge, _store

    inputs = json.loads(sys.argv[2])
    for target, root in json.loads(sys.argv[1]):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
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
            try:
                rk.ingest(inputs, root, partition_events=80, progress=False)
            except BaseException as e:
                os.write(write, repr(e).encode())
                os._exit(1)
            os.write(write, str(count[0]).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            said = f.read()
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        print(json.dumps({"target": target, "exit": status, "said": said}), flush=True)
""")


def _child(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


def _kills(cases: list[tuple[int, Path]], inputs: list[str]) -> list[dict]:
    """KILLER's report per (target step, dataset) case, in order."""
    proc = _child(KILLER, json.dumps([(n, str(root)) for n, root in cases]),
                  json.dumps(inputs))
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [o["target"] for o in out] == [n for n, _ in cases], proc.stdout
    return out


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
    done, = _kills([(0, probe)], run)
    assert done["exit"] == 0, done["said"]
    steps = int(done["said"])
    after = rk.read_parquet(probe)
    assert steps >= 10
    rng = random.Random(2026)
    points = sorted(rng.sample(range(1, steps + 1), 10))
    for n in points:
        shutil.copytree(root, tmp_path / f"kill-{n}", symlinks=True)
    cuts = _kills([(n, tmp_path / f"kill-{n}") for n in points], run)
    for n, cut in zip(points, cuts, strict=True):
        work = tmp_path / f"kill-{n}"
        assert cut["exit"] == -signal.SIGKILL, (n, cut["said"])
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
