"""How cohort measures are computed: column-wise run indexing and counting, the metric
definitions (numerator / denominator / statistic), and the seeded bootstrap of ratios."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _codes(col: Any) -> tuple[np.ndarray, pa.Array]:
    """(integer code per row, dictionary) of a string-like column; null -> -1."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    enc = pc.dictionary_encode(pc.cast(arr, pa.string()))
    idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return idx, enc.dictionary


def _str(col: Any) -> np.ndarray:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.cast(arr, pa.string()).to_numpy(zero_copy_only=False)


def _runs_index(t: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(run index per event, first row of every run) of a table sorted by (tenant, run, seq)."""
    n = t.num_rows
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    tc, _ = _codes(t.column("tenant_id"))
    rc, _ = _codes(t.column("run_id"))
    new = np.r_[True, (tc[1:] != tc[:-1]) | (rc[1:] != rc[:-1])]
    return np.cumsum(new) - 1, np.flatnonzero(new)


def _bincount(idx: np.ndarray, w: Any, n: int) -> np.ndarray:
    return np.bincount(idx, weights=np.asarray(w, dtype=np.float64), minlength=n)


def _boot_means(num: np.ndarray, den: np.ndarray, n_boot: int, rng: np.random.Generator,
                chunk: int = 200) -> np.ndarray:
    """Bootstrap ratios of sums, (n_boot, n_metrics): resampling rows with replacement.

    ``num``/``den`` are (n_rows, n_metrics). Each replicate's resample is drawn as counts per
    row (a bincount of uniform indices), so the work is a matrix product, not a Python loop
    over rows.
    """
    n, m = num.shape
    out = np.empty((n_boot, m))
    if n == 0:
        out.fill(np.nan)
        return out
    chunk = max(1, min(chunk, 4_000_000 // n))  # bound the (chunk x n) count matrix
    for lo in range(0, n_boot, chunk):
        c = min(chunk, n_boot - lo)
        idx = rng.integers(0, n, size=(c, n))
        w = np.bincount((idx + (np.arange(c) * n)[:, None]).ravel(),
                        minlength=c * n).reshape(c, n).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:lo + c] = (w @ num) / (w @ den)
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


@dataclass(frozen=True)
class _Metric:
    name: str
    num: str
    den: str | None  # None: a per-run mean (denominator 1)
    statistic: str  # "mean" (continuous, Cohen's d) or "rate" (a proportion, Cohen's h)


_BASE_METRICS = (
    _Metric("events_per_run", "events", None, "mean"),
    _Metric("tool_calls_per_run", "tool_calls", None, "mean"),
    _Metric("model_calls_per_run", "model_calls", None, "mean"),
    _Metric("tokens_per_run", "tokens", None, "mean"),
    _Metric("run_error_rate", "has_error", None, "rate"),
    _Metric("abort_rate", "aborted", None, "rate"),
    _Metric("tool_error_rate", "tool_errors", "tool_results", "rate"),
)
_CACHE_METRICS = (_Metric("cache_hit_rate", "cache_hits", "cache_keyed", "rate"),)
_REPLAY_METRICS = (
    _Metric("replay_failure_rate", "replay_failed", None, "rate"),
    _Metric("divergence_rate", "diverged", "replayed", "rate"),
    _Metric("tool_sequence_distance", "tool_sequence_distance", "replayed", "mean"),
    _Metric("fixture_dependence", "sensitive_to_fixture", "replayed", "rate"),
    _Metric("non_comparable_rate", "non_comparable", "replayed", "rate"),
)
