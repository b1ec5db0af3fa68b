"""rk.ingest: a large harness_event_log file against DuckDB's sorted COPY, a folder of Claude
Code transcripts against a json.loads loop, re-ingest of an unchanged folder, one day's append.

``python -m benchmarks.bench_ingest [--events N] [--files N] [--repeat N] [--memory-limit 2GB]
[--workdir DIR] [--only big|append|analyses|folder] [--keep]`` (one command; defaults:
2,000,000 events, 1,000 files). Issue 43's targets are stated at 20,000,000 events and 10,000
files; the sizes are arguments:

    python -m benchmarks.bench_ingest --events 20000000 --files 10000 --repeat 1 \
        --workdir /work/bigtmp/ingest-bench       # the issue's sizes (~7 GB input, ~25 GB disk)
    python -m benchmarks.bench_ingest --events 50000000 --repeat 1 --only big,append,analyses \
        --workdir /work/bigtmp/ingest-bench       # the 50M run (17 GB input, ~45 GB disk)

The generated input, the datasets and DuckDB's output are deleted at the end unless ``--keep``
(the 200,000-event seed block stays). The disk used is reported: the input's and outputs'
sizes and the peak growth of the file system's used bytes during each contender (sampled
every second; other processes' writes count too).

* **pleach JSONL vs DuckDB**: one ``harness_event_log`` JSONL of ``--events`` rows, made fast:
  a 200,000-event file from :func:`replaykit.datasets.generate_pleach`, repeated with its chat
  ids renamed (``"chat_<n>`` -> ``"r<k>chat_<n>``, child chat ids included) until the size is
  reached. Contenders, each run in its own process (``python -c``), interleaved (A B, B A,
  ...), best of ``--repeat`` by wall time: ``rk.ingest(file, fresh_dir,
  memory_limit=...)`` and DuckDB ``SET memory_limit=...; COPY (SELECT * FROM read_json(file)
  ORDER BY tenant_id, chat_id, sequence_number) TO 'out.parquet'``. Wall time is measured
  around the call inside the child (imports excluded); peak RSS is the child's whole
  process (``os.wait4`` rusage ``ru_maxrss``).
* **Claude Code folder vs json.loads**: ``--files`` copies of the real sample transcript
  (``data/claude_code``), each with a fresh session id; contenders in this process,
  interleaved, best of N: ``rk.ingest(folder, fresh_dir, owner=...)`` and a loop of
  ``json.loads`` over every line of every file. Then re-ingest of the unchanged folder.
  The ingest contender reads a folder holding the file (a hard link, ``day-000.jsonl``), so
  its last dataset is the one the next two bullets use.
* **Analyses over the dataset** (``--only analyses``): in a child process over the ingested
  dataset, ``open_dataset(ds).runs_df()``, ``cohorts(ds, by="semester").compare(a, b,
  n_boot=200)`` and ``fold(ds, agent()).final()`` (peak RSS: each call's VmHWM reset, and
  the child's whole peak), against the same calls on the in-memory log of a 2,000,000-event
  subset (the input's first 2M events, read with ``read_pleach``) in another child; ratio
  per event (dataset wall / events over subset wall / events). Odd copies of the seed block
  are moved from January 2026 to October 2025, so there are two semesters.
* **One day's append**: the dataset of the first bullet, plus one file of ``--day-fraction``
  of its events (new runs: another renamed copy); the append's wall time against the first
  ingest's, and against the file's share of the events (ratio 1.0 = proportional to the file).

Prints one JSON object (rows with ``value``, ``baseline``, ``ratio``, ``target``) and the
machine; the numbers of a run go to docs/performance.md, with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks._harness import interleave, is_tiny, machine, tiny

ROOT = Path(__file__).resolve().parents[1]
SEED_EVENTS = 200_000


# ------------------------------------------------------------------ inputs
def make_pleach(path: Path, events: int, prefix: str = "r",
                seed_dir: Path | None = None) -> Path:
    """A pleach JSONL of ``events`` rows: a generated 200,000-event block (kept in
    ``seed_dir``, default beside ``path``) repeated with its chat ids renamed per copy (runs
    stay whole and distinct; rows chat by chat)."""
    from replaykit.datasets import generate_pleach

    seed = (seed_dir or path.parent) / f"seed-{SEED_EVENTS}.jsonl"
    if not seed.exists():
        generate_pleach(seed, events=SEED_EVENTS, runs=SEED_EVENTS // 100, seed=1,
                        hashes=False)
    block = seed.read_bytes()
    lines = block.count(b"\n")
    full, rest = divmod(events, lines)
    chat = re.compile(rb'"chat_(?=\d)')  # a chat id value ("chat_0_000001"), not the key

    def renamed(data: bytes, k: int) -> bytes:
        out = chat.sub(f'"{prefix}{k}chat_'.encode(), data)
        if k % 2:  # odd copies in the autumn term before (two semesters for cohorts)
            out = out.replace(b'"created_at":"2026-01-', b'"created_at":"2025-10-')
        return out

    with open(path, "wb") as fh:
        for k in range(full):
            fh.write(renamed(block, k))
        if rest:
            cut = 0
            for _ in range(rest):
                cut = block.index(b"\n", cut) + 1
            fh.write(renamed(block[:cut], full))
    return path


def make_claude_folder(folder: Path, files: int) -> Path:
    """``files`` copies of the real Claude Code sample transcript, each with a fresh session
    id (file name and every ``sessionId``)."""
    sample = next(p for p in sorted((ROOT / "data" / "claude_code").rglob("*.jsonl"))
                  if "subagents" not in p.parts)
    text = sample.read_bytes()
    old = sample.stem.encode()
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        new = str(uuid.UUID(int=i + 1)).encode()
        (folder / f"{new.decode()}.jsonl").write_bytes(text.replace(old, new))
    return folder


# ------------------------------------------------------------------ contenders in a child
_INGEST = """
import sys, time, json
import replaykit as rk
t0 = time.perf_counter()
r = rk.ingest(sys.argv[1], sys.argv[2], memory_limit=sys.argv[3], progress=False)
print(json.dumps({"wall": time.perf_counter() - t0, "rows": r.rows}))
"""
_DUCKDB = """
import sys, time, json
import duckdb
t0 = time.perf_counter()
con = duckdb.connect()
con.execute(f"SET memory_limit='{sys.argv[3]}'")
con.execute(f"SET temp_directory='{sys.argv[2]}.tmp'")
con.execute(f\"\"\"COPY (SELECT * FROM read_json('{sys.argv[1]}', format='newline_delimited')
    ORDER BY tenant_id, chat_id, sequence_number) TO '{sys.argv[2]}' (FORMAT parquet)\"\"\")
n = con.execute(f"SELECT count(*) FROM '{sys.argv[2]}'").fetchone()[0]
print(json.dumps({"wall": time.perf_counter() - t0, "rows": n}))
"""


_ANALYSES = """
import sys, time, json, resource
import replaykit as rk
from benchmarks._harness import measure
where, kind = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if kind == "dataset":
    data = rk.open_dataset(where)
else:
    data = rk.read_pleach(where)
load = time.perf_counter() - t0
labels = rk.cohorts(data, by="semester").labels
a, b = labels[0], labels[-1]
out = {"load_s": load, "labels": [str(x) for x in labels],
       "events": len(data) if kind != "dataset" else None}
calls = {"runs_df": lambda: data.runs_df(),
         "cohorts_compare": lambda: rk.cohorts(data, by="semester").compare(a, b, n_boot=200),
         "fold_final": lambda: rk.fold(data, rk.agent()).final()}
for name, fn in calls.items():
    wall, cpu, peak, value = measure(fn)
    if name == "runs_df":
        out["runs"] = len(value)
        if kind == "dataset":
            out["events"] = int(value["events"].sum())
    del value
    out[name] = {"wall": wall, "cpu": cpu, "peak_added_mb": peak}
print(json.dumps(out))
"""


class DiskPeak:
    """The peak growth of the file system's used bytes under ``path`` while in the block
    (sampled every second: every process's writes count)."""

    def __init__(self, path: Path) -> None:
        self.path, self.peak, self._stop = path, 0, threading.Event()

    def __enter__(self) -> DiskPeak:
        self.base = shutil.disk_usage(self.path).used
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.peak = max(self.peak, shutil.disk_usage(self.path).used - self.base)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()

    @property
    def gb(self) -> float:
        return round(self.peak / 1e9, 2)


def du(path: Path) -> int:
    """Bytes of the files under ``path`` (a hard-linked file once)."""
    if path.is_file():
        return path.stat().st_size
    seen: set[int] = set()
    total = 0
    for f in path.rglob("*"):
        if f.is_file() and not f.is_symlink():
            st = f.stat()
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_size
    return total


def child(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh Python; its printed JSON plus its peak RSS (MB)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"contender failed: {err.decode()[-2000:]}")
    res: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    res["peak_rss_mb"] = usage.ru_maxrss / 1024
    res["cpu_s"] = usage.ru_utime + usage.ru_stime  # the whole child, imports included
    return res


def _fresh(p: Path) -> Path:
    if p.is_dir():
        shutil.rmtree(p)
    elif p.exists():
        p.unlink()
    shutil.rmtree(f"{p}.tmp", ignore_errors=True)
    return p


def big_input(work: Path, events: int) -> Path:
    """The generated ``events``-row file (made once) and the folder holding it as
    ``day-000.jsonl`` (a hard link: the ingest contender reads the folder)."""
    src = work / f"pleach-{events}.jsonl"
    if not src.exists():
        t0 = time.perf_counter()
        make_pleach(src, events)
        print(f"made {src} ({src.stat().st_size / 1e9:.2f} GB) in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    folder = work / f"src-{events}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    os.link(src, folder / "day-000.jsonl")
    return src


def bench_big(work: Path, events: int, repeat: int, limit: str,
              duckdb_too: bool = True) -> list[dict[str, Any]]:
    src = big_input(work, events)
    folder = work / f"src-{events}"
    best: dict[str, dict[str, Any]] = {}
    runs: dict[str, list[float]] = {"ingest": [], "duckdb": []}
    have_duckdb = duckdb_too
    try:
        import duckdb  # noqa: F401
    except ImportError:
        have_duckdb = False
    disk: dict[str, float] = {}
    sizes: dict[str, float] = {}
    for k in range(repeat):
        order = ["ingest", "duckdb"] if k % 2 == 0 else ["duckdb", "ingest"]
        for name in order:
            if name == "duckdb" and not have_duckdb:
                continue
            out = _fresh(work / (f"out-{name}" + (".parquet" if name == "duckdb" else "")))
            with DiskPeak(work) as dp:
                if name == "ingest":
                    res = child(_INGEST, str(folder), str(out), limit)
                else:
                    res = child(_DUCKDB, str(src), str(out), limit)
            res["load1"] = os.getloadavg()[0]
            disk[name] = max(disk.get(name, 0.0), dp.gb)
            sizes[name] = round(du(out) / 1e9, 2)
            runs[name].append(res["wall"])
            if name not in best or res["wall"] < best[name]["wall"]:
                best[name] = res
            print(f"{name}: {res}", file=sys.stderr)
        if have_duckdb:
            _fresh(work / "out-duckdb.parquet")
    rows = []
    ing = best["ingest"]
    if have_duckdb:
        dk = best["duckdb"]
        rows.append({"name": f"ingest {events:,}-event pleach JSONL "
                             f"({src.stat().st_size / 1e9:.2f} GB) vs DuckDB sorted COPY, "
                             f"memory_limit {limit}",
                     "value": round(ing["wall"], 2), "baseline": round(dk["wall"], 2),
                     "ratio": round(ing["wall"] / dk["wall"], 3), "unit": "s",
                     "target": "ratio <= 1.0", "walls": runs,
                     "peak_rss_mb": round(ing["peak_rss_mb"]),
                     "baseline_peak_rss_mb": round(dk["peak_rss_mb"]),
                     "cpu_s": round(ing["cpu_s"], 1), "baseline_cpu_s": round(dk["cpu_s"], 1),
                     "load1": [ing["load1"], dk["load1"]]})
    rows.append({"name": f"ingest peak RSS, {events:,} events, memory_limit {limit}",
                 "value": round(ing["peak_rss_mb"]), "unit": "MB", "target": "<= 2048"})
    rows.append({"name": f"disk, {events:,} events", "unit": "GB",
                 "input_gb": round(src.stat().st_size / 1e9, 2),
                 "dataset_gb": sizes.get("ingest"), "duckdb_output_gb": sizes.get("duckdb"),
                 "peak_growth_during_ingest_gb": disk.get("ingest"),
                 "peak_growth_during_duckdb_gb": disk.get("duckdb"),
                 "value": disk.get("ingest"), "target": "stated"})
    return rows


def bench_analyses(work: Path, events: int, subset: int = 2_000_000) -> list[dict[str, Any]]:
    """runs_df / cohorts compare / fold final over the ingested dataset (``out-ingest``, the
    last ingest of :func:`bench_big`) against the same calls on the in-memory log of the
    input's first ``subset`` events; each side in its own child process."""
    root = work / "out-ingest"
    subset = min(subset, events)
    sub = work / f"pleach-{subset}.jsonl"
    if not sub.exists():
        make_pleach(sub, subset)  # the same bytes as the input's first rows
    ds = child(_ANALYSES, str(root), "dataset")
    mem = child(_ANALYSES, str(sub), "memory")
    for side in (ds, mem):
        print(f"analyses: {side}", file=sys.stderr)
    rows = []
    for call, target in (("runs_df", "<= 1 s"),
                         ("cohorts_compare", "peak RSS <= 2 GB"),
                         ("fold_final", "peak RSS <= 2 GB")):
        a, b = ds[call], mem[call]
        per_event = (a["wall"] / ds["events"]) / (b["wall"] / mem["events"]) \
            if b["wall"] and ds["events"] else None
        rows.append({"name": f"{call} over the {ds['events']:,}-event dataset vs the "
                             f"in-memory log of {mem['events']:,} events",
                     "value": round(a["wall"], 3), "baseline": round(b["wall"], 3),
                     "ratio_per_event": None if per_event is None else round(per_event, 3),
                     "unit": "s", "cpu_s": round(a["cpu"], 2),
                     "baseline_cpu_s": round(b["cpu"], 2),
                     "peak_added_mb": a["peak_added_mb"],
                     "baseline_peak_added_mb": b["peak_added_mb"],
                     "target": target, "load1": os.getloadavg()[0]})
    rows.append({"name": "analyses children: whole-process peak RSS (dataset; in-memory "
                         "subset, its load included)", "unit": "MB",
                 "value": round(ds["peak_rss_mb"]), "baseline": round(mem["peak_rss_mb"]),
                 "dataset_open_s": round(ds["load_s"], 3),
                 "subset_load_s": round(mem["load_s"], 2), "labels": ds["labels"],
                 "target": "<= 2048"})
    return rows


def bench_append(work: Path, events: int, fraction: float, limit: str,
                 first_wall: float | None = None) -> list[dict[str, Any]]:
    """The dataset of ``events`` (``out-ingest`` of :func:`bench_big` when ``first_wall``,
    its ingest's best wall, is given; else ingested here), then one day's file of new
    runs."""
    folder = work / f"src-{events}"
    root = work / "out-ingest"
    if first_wall is None or not (root / "_ingest_manifest.json").exists():
        big_input(work, events)
        first = child(_INGEST, str(folder), str(_fresh(root)), limit)
    else:
        first = {"wall": first_wall}
    day = max(1, int(events * fraction))
    make_pleach(folder / "day-001.jsonl", day, prefix="d", seed_dir=work)  # not in folder
    assert sorted(p.name for p in folder.iterdir()) == ["day-000.jsonl", "day-001.jsonl"]
    add = child(_INGEST, str(folder), str(root), limit)
    share = day / (events + day)
    (folder / "day-001.jsonl").unlink()
    return [{"name": f"append one day's file ({day:,} events of new runs) to the "
                     f"{events:,}-event dataset",
             "value": round(add["wall"], 2), "baseline": round(first["wall"], 2),
             "ratio": round(add["wall"] / first["wall"], 3), "unit": "s",
             "file_share": round(share, 4),
             "ratio_over_share": round(add["wall"] / first["wall"] / share, 2),
             "target": "proportional to the file: ratio_over_share ~ 1 (not the dataset's)",
             "peak_rss_mb": round(add["peak_rss_mb"])}]


def bench_folder(work: Path, files: int, repeat: int) -> list[dict[str, Any]]:
    import replaykit as rk

    folder = work / f"claude-{files}"
    if not folder.exists():
        make_claude_folder(folder, files)
    paths = sorted(folder.glob("*.jsonl"))
    lines = sum(f.read_bytes().count(b"\n") for f in paths)
    n = [0]

    def ingest() -> int:
        n[0] += 1
        root = _fresh(work / f"claude-ds-{n[0] % 2}")
        return rk.ingest(folder, root, owner="bench", progress=False).rows

    def loads() -> int:
        k = 0
        for f in paths:
            with open(f, "rb") as fh:
                for line in fh:
                    if line.strip():
                        json.loads(line)
                        k += 1
        return k

    res = interleave({"ingest": ingest, "json.loads": loads}, repeat=repeat, alternate=True,
                     keep_value=True)
    root = work / f"claude-ds-{n[0] % 2}"
    again = interleave({"re-ingest": lambda: rk.ingest(folder, root, owner="bench",
                                                        progress=False).rows},
                       repeat=repeat, warmup=False)
    i, j, r = res["ingest"], res["json.loads"], again["re-ingest"]
    return [{"name": f"ingest {files:,} Claude Code transcripts ({lines:,} lines) vs a "
                     "json.loads loop", "value": round(i.best_s, 3),
             "baseline": round(j.best_s, 3), "ratio": round(i.best_s / j.best_s, 3),
             "unit": "s", "target": "ratio <= 1.0", "cpu_s": round(i.cpu_s, 3),
             "baseline_cpu_s": round(j.cpu_s, 3),
             "cpu_ratio": round(i.cpu_s / j.cpu_s, 3) if j.cpu_s else None,
             "peak_rss_mb": i.peak_rss_mb},
            {"name": f"re-ingest the unchanged {files:,}-file folder",
             "value": round(r.best_s, 3), "unit": "s", "target": "<= 2 s"}]


def run(quick: bool = False) -> list[dict[str, Any]]:
    """The suite as ``python -m benchmarks --only ingest`` runs it: 2,000,000 events and
    1,000 files, best of 2 (``quick``: 100,000 events and 100 files; ``--tiny``: a twentieth)."""
    import tempfile

    events, files = (tiny(100_000), tiny(100)) if quick else (2_000_000, 1_000)
    with tempfile.TemporaryDirectory(prefix="rk-bench-ingest-") as tmp:
        out = main(["--events", str(events), "--files", str(files), "--repeat",
                    "1" if is_tiny() else "2", "--workdir", tmp], echo=False)
    return [{k: v for k, v in r.items() if k in ("name", "value", "unit", "baseline", "ratio",
                                                 "target")} for r in out["rows"]]


def main(argv: list[str] | None = None, echo: bool = True) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_ingest")
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory-limit", default="2GB")
    ap.add_argument("--day-fraction", type=float, default=0.05)
    ap.add_argument("--workdir", default=None, help="where the inputs and outputs go "
                    "(default: a temporary folder; kept inputs are reused)")
    ap.add_argument("--only", default=None, help="comma-separated parts to run: big, analyses, "
                    "append, folder (default: all; analyses and append use big's dataset "
                    "when it ran, else ingest it)")
    ap.add_argument("--no-duckdb", action="store_true", help="big: ingest alone (the 50M "
                    "run: its peak RSS and disk; DuckDB's COPY would double the time)")
    ap.add_argument("--keep", action="store_true", help="keep the generated input and the "
                    "datasets (default: deleted at the end)")
    args = ap.parse_args(argv)
    parts = {"big", "analyses", "append", "folder"} if args.only is None else \
        {p.strip() for p in args.only.split(",")}
    unknown = parts - {"big", "analyses", "append", "folder"}
    if unknown:
        ap.error(f"--only: unknown part(s) {sorted(unknown)}")
    work = Path(args.workdir) if args.workdir else Path(
        os.environ.get("TMPDIR", "/tmp")) / "rk-bench-ingest"
    work.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    rows: list[dict[str, Any]] = []

    def done(new: list[dict[str, Any]]) -> None:
        for r in new:
            print(json.dumps(r), file=sys.stderr)
        rows.extend(new)

    free0 = shutil.disk_usage(work).free
    first_wall = None
    if "folder" in parts:
        done(bench_folder(work, args.files, args.repeat))
    if "big" in parts:
        big = bench_big(work, args.events, args.repeat, args.memory_limit,
                        duckdb_too=not args.no_duckdb)
        first_wall = big[0]["value"] if "DuckDB" in big[0]["name"] else None
        done(big)
    if "analyses" in parts:
        if not (work / "out-ingest" / "_ingest_manifest.json").exists():
            big_input(work, args.events)
            child(_INGEST, str(work / f"src-{args.events}"), str(_fresh(work / "out-ingest")),
                  args.memory_limit)
        done(bench_analyses(work, args.events))
    if "append" in parts:
        done(bench_append(work, args.events, args.day_fraction, args.memory_limit,
                          first_wall=first_wall))
    usage = shutil.disk_usage(work)
    out = {"rows": rows, "machine": machine(), "load_before": load0,
           "load_after": os.getloadavg(), "workdir": str(work),
           "disk_free_gb_before": round(free0 / 1e9, 1),
           "disk_free_gb": round(usage.free / 1e9, 1)}
    if not args.keep:
        for p in work.iterdir():
            if p.name.startswith(("pleach-", "src-", "out-", "append-", "claude-")):
                _fresh(p)
    if echo:
        print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":  # pragma: no cover
    main()
