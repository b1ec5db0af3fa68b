"""Shared benchmark harness: contenders interleaved, best of N, wall + CPU + peak RSS.

Every suite that compares contenders uses :func:`interleave`: round ``k`` runs contender A,
then B, then C (``A B C, A B C, ...``), never all of A's repeats back to back, so a change in
machine load hits every contender alike. Each contender's figure is its **best** (minimum)
wall time over the ``repeat`` rounds; the CPU time reported is the one of that same run
(``time.process_time``: every thread of this process, so CPU > wall means threads overlapped).

Peak RSS, in process: before each run the kernel's high-water mark is reset
(``/proc/self/clear_refs`` = 5, Linux >= 4.0) and read back (``VmHWM``) after the run;
``peak_rss_mb`` is that peak minus the RSS just before the run, i.e. the memory the run added
on top of what was already resident (its inputs, other contenders' data, the interpreter).
Where the reset is not available (not Linux) ``peak_rss_mb`` is None and
``rss_method`` says so. For a whole-process figure (imports included) run the contender in its
own process (see :func:`child_peak_rss`).

>>> res = interleave({"a": lambda: sum(range(1000)), "b": lambda: sum(range(10))}, repeat=3)
>>> res["a"].best_s >= 0 and len(res["a"].walls) == 3
True
"""

from __future__ import annotations

import gc
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


def _status_kb(key: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_hwm() -> bool:
    try:
        _CLEAR.write_text("5")
    except OSError:
        return False
    return True


def rss_method() -> str:
    """How peak RSS is measured on this machine (stated next to the figures)."""
    if _reset_hwm():
        return "VmHWM reset per run (/proc/self/clear_refs), minus the RSS before the run"
    return "not measured (no /proc/self/clear_refs)"


@dataclass
class Result:
    """One contender's measurements over the interleaved rounds."""

    name: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    peaks_mb: list[float | None] = field(default_factory=list)
    value: Any = None  # what the contender returned on its last run

    @property
    def best_s(self) -> float:
        """Best (minimum) wall time over the rounds."""
        return min(self.walls)

    @property
    def cpu_s(self) -> float:
        """CPU time (all threads) of the best-wall run."""
        return self.cpus[self.walls.index(self.best_s)]

    @property
    def peak_rss_mb(self) -> float | None:
        """Largest peak RSS the contender added over the rounds (None: not measured)."""
        got = [p for p in self.peaks_mb if p is not None]
        return max(got) if got else None

    def summary(self) -> str:
        peak = "-" if self.peak_rss_mb is None else f"{self.peak_rss_mb:,.0f} MB"
        return (f"{self.name:<28} best of {len(self.walls)}: {self.best_s:8.4f} s wall, "
                f"{self.cpu_s:8.4f} s CPU, peak +RSS {peak}")


def measure(fn: Callable[[], Any]) -> tuple[float, float, float | None, Any]:
    """(wall s, CPU s, peak RSS added in MB or None, return value) of one call of ``fn``."""
    gc.collect()
    can = _reset_hwm()
    rss0 = _status_kb("VmRSS:") if can else None
    c0, t0 = time.process_time(), time.perf_counter()
    value = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = None
    if can and rss0 is not None:
        hwm = _status_kb("VmHWM:")
        peak = None if hwm is None else max(0, hwm - rss0) / 1024
    return wall, cpu, peak, value


def interleave(contenders: dict[str, Callable[[], Any]], repeat: int = 3, *,
               warmup: bool = True, keep_value: bool = False,
               alternate: bool = False) -> dict[str, Result]:
    """Run the contenders interleaved (A B C, A B C, ...) ``repeat`` times; best of N each.

    Args:
        contenders: name -> zero-argument callable (its return value is dropped after each
            run unless ``keep_value``, so one contender's result does not inflate the next
            one's RSS).
        repeat: rounds (N of "best of N").
        warmup: one untimed call of each contender first (imports, caches, page cache).
        keep_value: keep each contender's last return value in ``Result.value``.
        alternate: every other round in reverse order (A B, B A, A B, ...), so that no
            contender always runs first (after the previous round's garbage, on a cold
            cache): for two contenders whose difference is small next to that.
    """
    out = {name: Result(name) for name in contenders}
    if warmup:
        for fn in contenders.values():
            fn()
    for k in range(repeat):
        order = list(contenders.items())
        for name, fn in (order[::-1] if alternate and k % 2 else order):
            wall, cpu, peak, value = measure(fn)
            r = out[name]
            r.walls.append(wall)
            r.cpus.append(cpu)
            r.peaks_mb.append(peak)
            r.value = value if keep_value else None
            del value
    return out


def child_peak_rss() -> float | None:
    """This process's own peak RSS in MB (``VmHWM``), for a contender in its own process."""
    kb = _status_kb("VmHWM:")
    if kb is None:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024


def row(name: str, contender: Result, baseline: Result | None, *, target: str,
        ratio: str = "baseline/contender", unit: str = "s", repeat_note: bool = True,
        ) -> dict[str, Any]:
    """A results-table row for ``contender`` against ``baseline`` (same run, interleaved).

    ``ratio="baseline/contender"``: > 1 means the contender is faster (a speed-up);
    ``"contender/baseline"``: the contender's time as a multiple of the baseline's (< 1 is
    faster). The row names the best-of-N, wall and CPU time and the peak RSS added.
    """
    b = baseline.best_s if baseline is not None else None
    c = contender.best_s
    if b is None:
        r = None
    elif ratio == "baseline/contender":
        r = b / c if c else None
    else:
        r = c / b if b else None
    note = f"best of {len(contender.walls)}, interleaved" if repeat_note else ""
    peak = contender.peak_rss_mb
    extra = f"; CPU {contender.cpu_s:.3g} s"
    if peak is not None:
        extra += f", +{peak:,.0f} MB peak RSS"
    return {"name": f"{name} ({note}{extra})" if note else name,
            "value": round(c, 4), "unit": unit,
            "baseline": None if b is None else round(b, 4),
            "ratio": None if r is None else round(r, 3), "target": target,
            "wall_s": c, "cpu_s": contender.cpu_s, "peak_rss_mb": peak,
            "baseline_wall_s": b,
            "baseline_cpu_s": None if baseline is None else baseline.cpu_s,
            "baseline_peak_rss_mb": None if baseline is None else baseline.peak_rss_mb}


def machine() -> dict[str, Any]:
    """The machine and library versions, for the results table's header."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    kb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                kb = int(line.split()[1])
    except OSError:
        pass
    if kb is not None:
        mem_gb = round(kb / 1024 / 1024, 1)
    info: dict[str, Any] = {"nproc": os.cpu_count(), "cpu": cpu, "ram_gb": mem_gb,
                            "python": platform.python_version(),
                            "platform": platform.platform()}
    for mod in ("numpy", "pyarrow", "pandas", "polars", "duckdb", "orjson", "dask"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    try:
        import replaykit

        info["replaykit"] = getattr(replaykit, "__version__", None)
    except ImportError:  # pragma: no cover
        info["replaykit"] = None
    return info


def tiny(n: Any) -> Any:
    """A quick-run size, or its twentieth (at least 100) under ``python -m benchmarks --tiny``
    (``REPLAYKIT_BENCH_TINY=1``: the test suite's smoke run, which checks that every benchmark
    runs, not what it measures). Works on a number, a tuple or a list of them."""
    if isinstance(n, (tuple, list)):
        return type(n)(tiny(v) for v in n)
    return max(n // 20, 100) if is_tiny() else n


def is_tiny() -> bool:
    """True under ``python -m benchmarks --tiny`` (the test suite's smoke run)."""
    return os.environ.get("REPLAYKIT_BENCH_TINY") == "1"
