"""Core scaling of the scans: ``python -m benchmarks.bench_threads [--events N] [--repeat N]
[--cores 1,2]``.

Each contender (``read_pleach``, ``read_toh``, and polars' ``read_ndjson`` of the same pleach
file for reference) runs in a fresh process pinned with ``taskset`` to the first k cores of
this process's affinity mask, for every k of ``--cores``; runs are interleaved (every
contender on every core count, then again) and the best of ``--repeat`` wall times is kept.
The speed-up of k cores is best(1 core) / best(k cores). replaykit's thread count follows the
mask (``replaykit._base.native.threads``: ``os.sched_getaffinity``), so no setting is passed.

On a shared machine the ratios are noisy (another process on "your" core halves it): run it
idle, and report the load averages printed with the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.__main__ import ROOT, _dataset

CONTENDERS = {"pleach_replaykit": "pleach", "pleach_polars": "pleach",
              "toh_replaykit": "toh"}


def _once(name: str, path: Path, cpus: list[int]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks._worker", name, str(path)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", ",".join(map(str, cpus)), *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        return {"name": name, "error": proc.stderr.strip().splitlines()[-1:]}
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return res


def measure(events: int, repeat: int, cores: list[int],
            names: tuple[str, ...] = tuple(CONTENDERS)) -> dict[str, Any]:
    """``{name: {k: best run on k cores}}`` plus the files and load averages."""
    mask = sorted(os.sched_getaffinity(0))
    cores = [k for k in cores if k <= len(mask)]
    paths = {kind: _dataset(kind, events) for kind in set(CONTENDERS[n] for n in names)}
    best: dict[str, dict[int, dict[str, Any]]] = {n: {} for n in names}
    walls: dict[str, dict[int, list[float]]] = {n: {k: [] for k in cores} for n in names}
    load = os.getloadavg()
    for _ in range(repeat):
        for k in cores:
            for name in names:
                res = _once(name, paths[CONTENDERS[name]], mask[:k])
                if "error" in res:
                    best[name][k] = res
                    continue
                walls[name][k].append(round(res["seconds"], 3))
                if k not in best[name] or res["seconds"] < best[name][k]["seconds"]:
                    best[name][k] = res
    return {"events": events, "repeat": repeat, "cores": cores, "best": best,
            "walls": walls, "load_before": load, "load_after": os.getloadavg(),
            "files_mb": {k: p.stat().st_size / 2**20 for k, p in paths.items()}}


def report(r: dict[str, Any]) -> list[str]:
    lines = [f"scaling, {r['events']:,} events, best of {r['repeat']}, interleaved; load "
             f"{r['load_before'][0]:.1f} -> {r['load_after'][0]:.1f} (files: "
             + ", ".join(f"{k} {v:,.0f} MB" for k, v in r["files_mb"].items()) + ")"]
    for name, per in r["best"].items():
        base = per.get(r["cores"][0], {})
        for k in r["cores"]:
            res = per.get(k, {})
            if "error" in res or "seconds" not in res:
                lines.append(f"  {name:<18} {k:>2} cores: FAILED {res.get('error')}")
                continue
            speed = base["seconds"] / res["seconds"] if "seconds" in base else float("nan")
            lines.append(
                f"  {name:<18} {k:>2} cores: {res['seconds']:7.3f} s wall "
                f"{res['cpu_seconds']:7.3f} s CPU  {res['rows'] / res['seconds']:>12,.0f} rows/s"
                f"  speed-up {speed:4.2f}x  (all: {r['walls'][name][k]})")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_threads",
                                 description=__doc__.split("\n\n")[1])
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cores", default="1,2", help="core counts, e.g. 1,2,4,8")
    ap.add_argument("--only", choices=sorted(CONTENDERS), action="append")
    a = ap.parse_args(argv)
    names = tuple(a.only) if a.only else tuple(CONTENDERS)
    r = measure(a.events, a.repeat, [int(k) for k in a.cores.split(",")], names)
    print("\n".join(report(r)))


if __name__ == "__main__":
    main()
