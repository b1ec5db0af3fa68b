"""Cohorts of runs: per-run measures, per-cohort summaries and comparisons (:class:`Cohorts`,
:func:`cohorts`). The calendar, the measures' arithmetic and the replays of whole cohorts
live next door (``calendar.py``, ``_measures.py``, ``replays.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..eventlog.log import EventLog
from ..fold.cache import CACHE_MODES, CacheMode, _contains_many
from ._measures import (
    _BASE_METRICS,
    _CACHE_METRICS,
    _REPLAY_METRICS,
    _bincount,
    _boot_means,
    _codes,
    _Metric,
    _ratio,
    _runs_index,
    _str,
)
from .calendar import SemesterCalendar
from .replays import ReplayBatch, replay_runs

__all__ = ["ABORT_FINISHES", "COMPARE_COLUMNS", "MIN_DENOMINATOR", "MIN_PAIRS", "MIN_RUNS",
           "MISSING", "Cohorts", "cohorts"]

#: ``finish`` values that mark a run as aborted (besides a turn that never ended).
ABORT_FINISHES: tuple[str, ...] = ("aborted", "abort", "cancelled", "canceled", "interrupted")
#: Label given to runs whose cohort cannot be derived (no start time, null field).
MISSING = "<missing>"

#: Small-sample rules (docs/cohorts.md, "Small samples"): the fewest runs a cohort needs for
#: its rates and means to be compared (unpaired rows) and flagged as settled in ``summary``,
MIN_RUNS = 10
#: the fewest shared pairing keys for paired rows,
MIN_PAIRS = 10
#: and the fewest units in a pooled rate's denominator per cohort (tool results of
#: ``tool_error_rate``, tool calls of a ``tool_share``, keyed events of ``cache_hit_rate``,
#: replayed runs of a replay metric). Below these a row is ``small_sample``: its values and
#: interval are shown, but it is not tested (``excludes_zero`` false, no p-value).
MIN_DENOMINATOR = 10

#: Columns of :meth:`Cohorts.compare`, in order.
COMPARE_COLUMNS: tuple[str, ...] = (
    "analysis", "metric", "statistic", "cohort_a", "cohort_b", "n_a", "n_b", "value_a",
    "value_b", "diff", "rel_diff", "ci_low", "ci_high", "ci_level", "effect_size",
    "effect_size_kind", "excludes_zero", "small_sample", "n_boot", "seed",
)


ByArg = str | Callable[[pd.DataFrame], Any]


class Cohorts:
    """Runs of a log grouped into cohorts. Build one with :func:`cohorts`.

    Attributes:
        log: the (tenant-filtered) log.
        by: what the cohorts were derived from.
        calendar: the :class:`SemesterCalendar` used for ``by="semester"``.
        cache / cache_mode: the provider cache consulted for coverage and replays.
        labels: the cohort labels, in order (chronological for semesters).
    """

    def __init__(self, log: EventLog, by: ByArg, *, calendar: SemesterCalendar | None = None,
                 cache: Any = None, cache_mode: CacheMode = "best-effort",
                 pair_on: ByArg = "prompt") -> None:
        if cache_mode not in CACHE_MODES:
            raise ValueError(f"cache_mode must be one of {CACHE_MODES}, got {cache_mode!r}")
        self.log = log
        self.by = by
        self.calendar = calendar or SemesterCalendar()
        self.cache = cache
        self.cache_mode = cache_mode
        self.pair_on = pair_on
        self._runs: pd.DataFrame | None = None
        self._tools: pd.DataFrame | None = None
        self._ri: np.ndarray | None = None

    # ------------------------------------------------------------------ per run
    def _measure(self) -> pd.DataFrame:
        t = self.log.table
        ri, starts = _runs_index(t)
        self._ri = ri
        R = len(starts)
        kind = _str(t.column("kind"))
        fin = t.column("finish")
        is_err = np.asarray(t.column("is_error"), dtype=bool) if t.num_rows else np.zeros(0, bool)
        is_tc = kind == "tool_call"
        is_tr = kind == "tool_result"
        finished = np.asarray(pc.is_valid(fin)) if t.num_rows else np.zeros(0, bool)
        abort_fin = np.asarray(pc.fill_null(pc.is_in(pc.cast(fin, pa.string()),
                                                     pa.array(ABORT_FINISHES)), False))
        tok_in = np.asarray(pc.fill_null(t.column("input_tokens"), 0), dtype=np.float64)
        tok_out = np.asarray(pc.fill_null(t.column("output_tokens"), 0), dtype=np.float64)
        ts = t.column("ts")
        ts_i = np.asarray(pc.fill_null(pc.cast(ts, pa.int64()), np.iinfo(np.int64).max))
        first_ts = np.minimum.reduceat(ts_i, starts) if R else np.zeros(0, np.int64)
        df = pd.DataFrame({
            "tenant_id": _str(t.column("tenant_id").take(pa.array(starts))),
            "run_id": _str(t.column("run_id").take(pa.array(starts))),
            "events": np.bincount(ri, minlength=R),
            "tool_calls": _bincount(ri, is_tc, R).astype(np.int64),
            "tool_results": _bincount(ri, is_tr, R).astype(np.int64),
            "tool_errors": _bincount(ri, is_tr & is_err, R).astype(np.int64),
            "model_calls": _bincount(ri, finished, R).astype(np.int64),
            "input_tokens": _bincount(ri, tok_in, R).astype(np.int64),
            "output_tokens": _bincount(ri, tok_out, R).astype(np.int64),
            "error_events": _bincount(ri, is_err, R).astype(np.int64),
        })
        df["tokens"] = df["input_tokens"] + df["output_tokens"]
        turn_starts = _bincount(ri, kind == "turn_start", R)
        turn_ends = _bincount(ri, kind == "turn_end", R)
        df["has_error"] = df["error_events"] > 0
        df["aborted"] = (turn_starts > turn_ends) | (_bincount(ri, abort_fin, R) > 0)
        start = pd.to_datetime(np.where(first_ts == np.iinfo(np.int64).max, np.iinfo(
            np.int64).min, first_ts), unit="us", utc=True)
        df["start"] = start
        # prompt: text of the run's first user message
        um = np.flatnonzero(kind == "user_message")
        prompt = np.full(R, None, dtype=object)
        if len(um):
            runs_um, first = np.unique(ri[um], return_index=True)
            prompt[runs_um] = _str(t.column("text").take(pa.array(um[first])))
        df["prompt"] = pd.array(prompt, dtype="string")
        # cache coverage (column-wise over every keyed event)
        if self.cache is not None:
            keyed = np.asarray(pc.is_valid(t.column("cache_key"))) if t.num_rows \
                else np.zeros(0, bool)
            kidx = np.flatnonzero(keyed)
            keys = pc.cast(t.column("cache_key").take(pa.array(kidx)), pa.string())
            keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
            hit = _contains_many(self.cache, keys) if len(kidx) else np.zeros(0, bool)
            kr = ri[kidx]
            df["cache_keyed"] = np.bincount(kr, minlength=R)
            df["cache_hits"] = _bincount(kr, hit, R).astype(np.int64)
            df["cache_misses"] = df["cache_keyed"] - df["cache_hits"]
            if self.cache_mode == "best-effort":
                df["live_fallbacks"] = df["cache_misses"]
                df["would_raise"] = 0
            elif self.cache_mode == "strict-mode":
                df["live_fallbacks"] = 0
                df["would_raise"] = df["cache_keyed"]
            else:
                df["live_fallbacks"] = 0
                df["would_raise"] = df["cache_misses"]
        # attach header metadata (format, created_at, attributes) when the log has it
        if self.log.runs.num_rows:
            meta = self.log.runs_df()
            extra = [c for c in meta.columns if c not in df.columns or c in ("tenant_id",
                                                                             "run_id")]
            df = df.merge(meta[extra], on=["tenant_id", "run_id"], how="left")
            if "created_at" in df:
                df["start"] = df["start"].fillna(df["created_at"])
        df["cohort"] = self._labels(df)
        return df

    def _labels(self, df: pd.DataFrame) -> pd.Series:
        by = self.by
        if callable(by):
            vals = by(df.copy())
            out = pd.Series(np.asarray(vals, dtype=object) if not isinstance(vals, pd.Series)
                            else vals.to_numpy(dtype=object), index=df.index)
            if len(out) != len(df):
                raise ValueError(f"by= callable returned {len(out)} labels for {len(df)} runs")
        elif by == "semester":
            out = self.calendar.label(df["start"]).set_axis(df.index)
        elif by in df.columns:
            out = df[by]
        elif by in self.log.runs_df().columns:
            extra = self.log.runs_df()[["tenant_id", "run_id", by]]
            out = df[["tenant_id", "run_id"]].merge(extra, how="left")[by].set_axis(df.index)
        else:
            out = self._payload_field(by, len(df))
        out = pd.Series(out, index=df.index).astype("object")
        out = out.where(pd.notna(out), MISSING)
        return out.astype(str).astype("string")

    def _payload_field(self, path: str, R: int) -> np.ndarray:
        """First non-null value of payload field ``path`` in every run (column-wise)."""
        from .._base.json import payload_fields

        field = path[len("payload."):] if path.startswith("payload.") else path
        t = self.log.table
        if self._ri is None:
            self._ri = _runs_index(t)[0]
        ri = self._ri
        has = np.asarray(pc.fill_null(pc.match_substring(t.column("payload"),
                                                         f'"{field.split(".")[-1]}"'), False))
        idx = np.flatnonzero(has)
        out = np.full(R, None, dtype=object)
        if not len(idx):
            raise KeyError(f"by={path!r} is not a run column, a header attribute or a payload "
                           "field of any event; pass a column of runs_df(), 'semester', a "
                           "payload field or a callable")
        vals = payload_fields(t.column("payload").take(pa.array(idx)), {field: pa.string()})
        v = vals.column(field)
        ok = np.asarray(pc.is_valid(v))
        if ok.any():
            runs_v, first = np.unique(ri[idx[ok]], return_index=True)
            out[runs_v] = _str(v.filter(pa.array(ok)).take(pa.array(first)))
        return out

    def runs_df(self) -> pd.DataFrame:
        """One row per run: tenant_id, run_id, cohort, start, prompt, events, tool_calls,
        tool_results, tool_errors, model_calls, input_tokens, output_tokens, tokens,
        error_events, has_error, aborted, the cache columns (cache_keyed, cache_hits,
        cache_misses, live_fallbacks, would_raise) when a cache was given, and header
        attributes when the log has them. Column-wise over the log.

        >>> cs.runs_df().groupby("cohort")["tokens"].mean()  # doctest: +SKIP
        """
        if self._runs is None:
            self._runs = self._measure()
        return self._runs.copy()

    @property
    def labels(self) -> list[str]:
        """The cohort labels, chronological for semesters, else sorted."""
        labs = [str(x) for x in self._frame()["cohort"].unique()]
        if self.by == "semester":
            return sorted(labs, key=self.calendar.sort_key)
        return sorted(labs)

    def _frame(self) -> pd.DataFrame:
        if self._runs is None:
            self._runs = self._measure()
        return self._runs

    def tool_mix_df(self) -> pd.DataFrame:
        """One row per (cohort, tool_name): calls and share of the cohort's tool calls."""
        if self._tools is None:
            self._tools = self._tool_counts()
        m = self._tools
        if m.empty:
            return pd.DataFrame({"cohort": pd.Series(dtype="string"),
                                 "tool_name": pd.Series(dtype="string"),
                                 "calls": pd.Series(dtype="Int64"),
                                 "share": pd.Series(dtype="Float64")})
        cohort = self._frame()["cohort"].to_numpy()
        g = m.groupby(cohort).sum()
        long = g.stack().rename("calls").reset_index()
        long.columns = ["cohort", "tool_name", "calls"]
        tot = long.groupby("cohort")["calls"].transform("sum")
        long["share"] = long["calls"] / tot
        long = long[long["calls"] > 0]
        order = {c: i for i, c in enumerate(self.labels)}
        long = long.sort_values(["cohort", "calls", "tool_name"], ascending=[True, False, True],
                                key=lambda s: s.map(order) if s.name == "cohort" else s)
        return long.astype({"cohort": "string", "tool_name": "string", "calls": "Int64",
                            "share": "Float64"}).reset_index(drop=True)

    def _tool_counts(self) -> pd.DataFrame:
        """Tool calls per (run, tool): a runs x tools count frame (column-wise bincount)."""
        self._frame()
        t = self.log.table
        ri = self._ri if self._ri is not None else _runs_index(t)[0]
        R = len(self._frame())
        kind = _str(t.column("kind"))
        idx = np.flatnonzero(kind == "tool_call")
        codes, names = _codes(t.column("tool_name").take(pa.array(idx)))
        names_l = [str(x) for x in names.to_pylist()]
        if (codes < 0).any():
            names_l.append(MISSING)
            codes = np.where(codes < 0, len(names_l) - 1, codes)
        k = len(names_l)
        mat = np.bincount(ri[idx] * k + codes, minlength=R * k).reshape(R, k) if k \
            else np.zeros((R, 0), np.int64)
        order = np.argsort(names_l)
        return pd.DataFrame(mat[:, order], columns=[names_l[i] for i in order])

    # ------------------------------------------------------------------ summary
    def summary(self, replays: ReplayBatch | None = None, *, branch: Any = None,
                **replay_kwargs: Any) -> pd.DataFrame:
        """One row per cohort.

        Columns: cohort, runs, tenants, first_start, last_start, events, events_per_run,
        tool_calls, model_calls, input_tokens, output_tokens, tokens, tokens_per_run,
        tool_results, tool_errors, tool_error_rate, error_events, run_error_rate, aborted,
        abort_rate, small_sample (fewer than :data:`MIN_RUNS` runs: its rates rest on too
        few runs to compare), distinct_tools, top_tool, ``tool_share.<tool>`` per tool; with a
        cache:
        cache_keyed, cache_hits, cache_misses, live_fallbacks, would_raise, cache_hit_rate; with
        replays (``replays=`` a :class:`ReplayBatch`, or ``branch=`` / replay keyword
        arguments to run :meth:`replay` first): replays, replay_errors, replays_completed,
        replays_paused, replays_failed, divergence_rate, tool_sequence_distance_mean /
        _median / _p90, tool_sequence_distance_norm_mean, fixture_dependence,
        ``comparability.<class>`` shares, replay_live_fallbacks. Definitions in
        docs/cohorts.md. Counts add up to the log's totals.

        >>> s = rk.cohorts(log, by="semester").summary()  # doctest: +SKIP
        >>> s[["cohort", "runs", "abort_rate"]]  # doctest: +SKIP
        """
        df = self._frame()
        g = df.groupby("cohort", sort=False)
        out = pd.DataFrame({
            "runs": g.size(),
            "tenants": g["tenant_id"].nunique(),
            "first_start": g["start"].min(),
            "last_start": g["start"].max(),
        })
        for c in ("events", "tool_calls", "model_calls", "input_tokens", "output_tokens",
                  "tokens", "tool_results", "tool_errors", "error_events", "aborted"):
            out[c] = g[c].sum().astype("int64")
        out["errored_runs"] = g["has_error"].sum().astype("int64")
        out["events_per_run"] = out["events"] / out["runs"]
        out["tokens_per_run"] = out["tokens"] / out["runs"]
        out["tool_error_rate"] = _ratio(out["tool_errors"].to_numpy(float),
                                        out["tool_results"].to_numpy(float))
        out["run_error_rate"] = out["errored_runs"] / out["runs"]
        out["abort_rate"] = out["aborted"] / out["runs"]
        out["small_sample"] = out["runs"] < MIN_RUNS  # its rates are not settled
        if self._tools is None:
            self._tools = self._tool_counts()
        tm = self._tools.groupby(df["cohort"].to_numpy()).sum().reindex(out.index).fillna(0)
        tot = tm.sum(axis=1).to_numpy(float)
        out["distinct_tools"] = (tm > 0).sum(axis=1).astype("int64")
        out["top_tool"] = pd.Series(np.where(tot > 0, tm.idxmax(axis=1) if tm.shape[1] else None,
                                             None), index=out.index, dtype="string") \
            if tm.shape[1] else pd.Series(pd.NA, index=out.index, dtype="string")
        for tool in tm.columns:
            out[f"tool_share.{tool}"] = _ratio(tm[tool].to_numpy(float), tot)
        if "cache_keyed" in df:
            for c in ("cache_keyed", "cache_hits", "cache_misses", "live_fallbacks",
                      "would_raise"):
                out[c] = g[c].sum().astype("int64")
            out["cache_hit_rate"] = _ratio(out["cache_hits"].to_numpy(float),
                                           out["cache_keyed"].to_numpy(float))
        if replays is None and (branch is not None or replay_kwargs):
            replays = self.replay(branch, **replay_kwargs)
        if replays is not None:
            out = out.join(self._replay_summary(replays))
        out = out.reindex(self.labels)
        out.index.name = "cohort"
        out = out.reset_index()
        out["cohort"] = out["cohort"].astype("string")
        ints = [c for c in out.columns if pd.api.types.is_integer_dtype(out[c])
                or pd.api.types.is_bool_dtype(out[c])]
        floats = [c for c in out.columns if pd.api.types.is_float_dtype(out[c])]
        return out.astype({c: "Int64" for c in ints} | {c: "Float64" for c in floats})

    def _replay_summary(self, rb: ReplayBatch) -> pd.DataFrame:
        r = rb.runs
        g = r.groupby("cohort", sort=False)
        done = r[r["status"] != "error"]
        gd = done.groupby("cohort", sort=False)
        out = pd.DataFrame({"replays": g.size()})
        out["replay_errors"] = g["status"].apply(lambda s: int((s == "error").sum())) \
            if len(r) else 0
        for st in ("completed", "paused", "failed"):
            out[f"replays_{st}"] = (r["status"] == st).groupby(r["cohort"]).sum()
        dist = done["tool_sequence_distance"].astype("float64")
        out["divergence_rate"] = (done["first_divergence_step"].astype("float64") >= 0) \
            .groupby(done["cohort"]).mean()
        out["tool_sequence_distance_mean"] = dist.groupby(done["cohort"]).mean()
        out["tool_sequence_distance_median"] = dist.groupby(done["cohort"]).median()
        out["tool_sequence_distance_p90"] = dist.groupby(done["cohort"]).quantile(0.9)
        out["tool_sequence_distance_norm_mean"] = gd["tool_sequence_distance_norm"].mean() \
            .astype("float64")
        out["fixture_dependence"] = done["sensitive_to_fixture"].astype("float64") \
            .groupby(done["cohort"]).mean()
        from ..branch import COMPARABILITY

        for c in COMPARABILITY:
            out[f"comparability.{c}"] = (done["comparability"] == c).astype("float64") \
                .groupby(done["cohort"]).mean()
        out["replay_live_fallbacks"] = r["live_fallbacks"].astype("Float64").fillna(0) \
            .groupby(r["cohort"]).sum().astype("int64")
        return out

    # ------------------------------------------------------------------ compare
    def _metric_matrix(self, rows: pd.DataFrame, metrics: Sequence[_Metric]
                       ) -> tuple[np.ndarray, np.ndarray]:
        num = np.column_stack([rows[m.num].astype("float64").fillna(0).to_numpy()
                               for m in metrics]) if metrics else np.zeros((len(rows), 0))
        den = np.column_stack([np.ones(len(rows)) if m.den is None
                               else rows[m.den].astype("float64").fillna(0).to_numpy()
                               for m in metrics]) if metrics else np.zeros((len(rows), 0))
        return num, den

    def _compare_rows(self, replays: ReplayBatch | None) -> tuple[pd.DataFrame, list[_Metric]]:
        df = self._frame().copy()
        metrics = list(_BASE_METRICS)
        if "cache_keyed" in df:
            metrics += list(_CACHE_METRICS)
        if self._tools is None:
            self._tools = self._tool_counts()
        for tool in self._tools.columns:
            df[f"_tool.{tool}"] = self._tools[tool].to_numpy()
            metrics.append(_Metric(f"tool_share.{tool}", f"_tool.{tool}", "tool_calls", "rate"))
        if replays is not None:
            r = replays.runs
            rr = pd.DataFrame({
                "tenant_id": r["tenant_id"], "run_id": r["run_id"],
                "replay_failed": (r["status"] == "error").astype(float),
                "replayed": (r["status"] != "error").astype(float),
                "diverged": (r["first_divergence_step"].astype("Float64") >= 0)
                .fillna(False).astype(float),
                "tool_sequence_distance": r["tool_sequence_distance"].astype("Float64")
                .fillna(0).astype(float),
                "sensitive_to_fixture": r["sensitive_to_fixture"].astype("boolean")
                .fillna(False).astype(float),
                "non_comparable": (r["comparability"] == "non_comparable").fillna(False)
                .astype(float),
            })
            df = df.merge(rr, on=["tenant_id", "run_id"], how="left")
            # runs not replayed count in neither numerator nor denominator
            df[["replayed", "diverged", "tool_sequence_distance", "sensitive_to_fixture",
                "non_comparable"]] = df[["replayed", "diverged", "tool_sequence_distance",
                                         "sensitive_to_fixture", "non_comparable"]].fillna(0)
            has = df["replay_failed"].notna()
            metrics += list(_REPLAY_METRICS)
            df["_in_replay"] = has
        return df, metrics

    def compare(self, a: str, b: str, *, replays: ReplayBatch | None = None,
                n_boot: int = 2000, ci: float = 0.95, seed: int = 0,
                paired: bool = True) -> pd.DataFrame:
        """Differences ``b - a`` between two cohorts, as a tidy frame: one row per
        (analysis, metric).

        ``analysis="unpaired"`` rows compare every run of ``a`` with every run of ``b``:
        ``value_a``/``value_b`` (a per-run mean, or a pooled rate such as tool errors / tool
        results), ``diff``, ``rel_diff`` (``diff / value_a``), a percentile bootstrap
        confidence interval of ``diff`` (runs resampled with replacement within each cohort,
        ``n_boot`` replicates, numpy's generator seeded by ``seed``: the same seed gives the
        same interval) and an effect size (Cohen's d for means, Cohen's h for rates).
        ``analysis="paired"`` rows (when ``paired`` and the pairing key -- by default the
        run's first prompt -- occurs in both cohorts) compare per key: ``n_a == n_b`` is the
        number of shared keys, ``diff`` the mean per-key difference, the interval resamples
        keys, the effect size is Cohen's d_z (mean / sd of the per-key differences).

        Small samples: a row with fewer than :data:`MIN_RUNS` runs in a cohort (unpaired),
        :data:`MIN_PAIRS` shared keys (paired) or :data:`MIN_DENOMINATOR` units in a pooled
        rate's denominator is ``small_sample``: its values and interval are given, but
        ``excludes_zero`` is false and the report does not test it (docs/cohorts.md).

        Metrics: events_per_run, tool_calls_per_run, model_calls_per_run, tokens_per_run,
        run_error_rate, abort_rate, tool_error_rate, ``tool_share.<tool>``, cache_hit_rate
        (with a cache) and, with ``replays``, replay_failure_rate, divergence_rate,
        tool_sequence_distance, fixture_dependence, non_comparable_rate.

        Example:
            >>> cs = rk.cohorts(log, by="semester")  # doctest: +SKIP
            >>> out = cs.compare("2025-fall", "2026-spring")  # doctest: +SKIP
            >>> out.query("metric == 'abort_rate'")  # doctest: +SKIP

        Raises:
            KeyError: ``a`` or ``b`` is not a cohort.
            ValueError: ``n_boot < 1`` or ``ci`` not in (0, 1).
        """
        if n_boot < 1:
            raise ValueError(f"n_boot must be >= 1, got {n_boot}")
        if not 0 < ci < 1:
            raise ValueError(f"ci must be within (0, 1), got {ci}")
        labs = set(self.labels)
        for c in (a, b):
            if c not in labs:
                raise KeyError(f"{c!r} is not a cohort; cohorts: {self.labels}")
        df, metrics = self._compare_rows(replays)
        A = df[df["cohort"] == a]
        B = df[df["cohort"] == b]
        rng = np.random.default_rng(seed)
        q = ((1 - ci) / 2, 1 - (1 - ci) / 2)
        rows: list[dict[str, Any]] = []

        def emit(analysis: str, m: _Metric, na: int, nb: int, va: float, vb: float,
                 boot: np.ndarray, es: float, kind: str, diff: float | None = None,
                 small: bool = False) -> None:
            d = vb - va if diff is None else diff
            fin = boot[np.isfinite(boot)]
            lo, hi = (np.quantile(fin, q) if len(fin) else (np.nan, np.nan))
            small = small or min(na, nb) < (MIN_PAIRS if analysis == "paired" else MIN_RUNS)
            rows.append({
                "analysis": analysis, "metric": m.name, "statistic": m.statistic,
                "cohort_a": a, "cohort_b": b, "n_a": na, "n_b": nb, "value_a": va,
                "value_b": vb, "diff": d,
                "rel_diff": d / va if va not in (0, 0.0) and np.isfinite(va) else np.nan,
                "ci_low": float(lo), "ci_high": float(hi), "ci_level": ci,
                "effect_size": es, "effect_size_kind": kind,
                "excludes_zero": bool(not small and np.isfinite(lo) and (lo > 0 or hi < 0)),
                "small_sample": small, "n_boot": n_boot, "seed": seed,
            })

        # unpaired: ratio of sums, bootstrap by run within each cohort
        num_a, den_a = self._metric_matrix(A, metrics)
        num_b, den_b = self._metric_matrix(B, metrics)
        ba = _boot_means(num_a, den_a, n_boot, rng)
        bb = _boot_means(num_b, den_b, n_boot, rng)
        for j, m in enumerate(metrics):
            va = float(_ratio(num_a[:, j].sum(), den_a[:, j].sum()))
            vb = float(_ratio(num_b[:, j].sum(), den_b[:, j].sum()))
            if m.statistic == "mean" and m.den is None:
                sa, sb = num_a[:, j], num_b[:, j]
                na_, nb_ = len(sa), len(sb)
                pooled = np.sqrt(((na_ - 1) * sa.var(ddof=1) + (nb_ - 1) * sb.var(ddof=1))
                                 / (na_ + nb_ - 2)) if na_ > 1 and nb_ > 1 else np.nan
                es = (vb - va) / pooled if pooled and np.isfinite(pooled) else np.nan
                kind = "cohen_d"
            elif m.statistic == "rate":
                es = float(2 * np.arcsin(np.sqrt(np.clip(vb, 0, 1)))
                           - 2 * np.arcsin(np.sqrt(np.clip(va, 0, 1)))) \
                    if np.isfinite(va) and np.isfinite(vb) else np.nan
                kind = "cohen_h"
            else:  # a mean over replayed runs: d with per-run values of replayed runs
                sa = num_a[den_a[:, j] > 0, j]
                sb = num_b[den_b[:, j] > 0, j]
                pooled = np.sqrt(((len(sa) - 1) * sa.var(ddof=1) + (len(sb) - 1)
                                  * sb.var(ddof=1)) / (len(sa) + len(sb) - 2)) \
                    if len(sa) > 1 and len(sb) > 1 else np.nan
                es = (vb - va) / pooled if pooled and np.isfinite(pooled) else np.nan
                kind = "cohen_d"
            few = m.den is not None and min(den_a[:, j].sum(), den_b[:, j].sum()) \
                < MIN_DENOMINATOR
            emit("unpaired", m, len(A), len(B), va, vb, bb[:, j] - ba[:, j], es, kind,
                 small=bool(few))

        # paired: per key present in both cohorts
        if paired:
            key_a, key_b = self._pair_keys(A), self._pair_keys(B)
            shared = sorted(set(key_a.dropna()) & set(key_b.dropna()))
            if shared:
                num_a, den_a = self._metric_matrix(A, metrics)
                num_b, den_b = self._metric_matrix(B, metrics)
                codes = {k: i for i, k in enumerate(shared)}
                ca = key_a.map(codes).to_numpy()
                cb = key_b.map(codes).to_numpy()
                K = len(shared)

                def per_key(codes_: np.ndarray, mat: np.ndarray) -> np.ndarray:
                    ok = ~pd.isna(codes_)
                    c = codes_[ok].astype(np.int64)
                    return np.column_stack([np.bincount(c, weights=mat[ok, j], minlength=K)
                                            for j in range(mat.shape[1])])

                ra = _ratio(per_key(ca, num_a), per_key(ca, den_a))
                rb = _ratio(per_key(cb, num_b), per_key(cb, den_b))
                d = rb - ra  # (K, m); NaN where a side has no denominator
                for j, m in enumerate(metrics):
                    dj = d[:, j]
                    ok = np.isfinite(dj)
                    dv = dj[ok]
                    kk = len(dv)
                    if kk == 0:
                        continue
                    boot = _boot_means(dv[:, None], np.ones((kk, 1)), n_boot, rng)[:, 0]
                    sd = dv.std(ddof=1) if kk > 1 else np.nan
                    es = float(dv.mean() / sd) if sd and np.isfinite(sd) else np.nan
                    few = m.den is not None and min(
                        per_key(ca, den_a)[ok, j].sum(), per_key(cb, den_b)[ok, j].sum()
                    ) < MIN_DENOMINATOR
                    emit("paired", m, kk, kk, float(np.nanmean(ra[ok, j])),
                         float(np.nanmean(rb[ok, j])), boot, es, "cohen_dz",
                         diff=float(dv.mean()), small=bool(few))
        out = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
        return out.astype({"analysis": "string", "metric": "string", "statistic": "string",
                           "cohort_a": "string", "cohort_b": "string", "n_a": "Int64",
                           "n_b": "Int64", "value_a": "Float64", "value_b": "Float64",
                           "diff": "Float64", "rel_diff": "Float64", "ci_low": "Float64",
                           "ci_high": "Float64", "ci_level": "Float64",
                           "effect_size": "Float64", "effect_size_kind": "string",
                           "excludes_zero": "boolean", "small_sample": "boolean",
                           "n_boot": "Int64", "seed": "Int64"})

    def _pair_keys(self, rows: pd.DataFrame) -> pd.Series:
        on = self.pair_on
        if callable(on):
            vals = on(rows.copy())
            return pd.Series(np.asarray(vals, dtype=object), index=rows.index)
        if on not in rows.columns:
            raise KeyError(f"pair_on={on!r} is not a column of runs_df(); columns: "
                           f"{list(rows.columns)}")
        return rows[on].astype("object").where(rows[on].notna(), None)

    # ------------------------------------------------------------------ replay
    def replay(self, branch: Any = None, *, cohort: str | Sequence[str] | None = None,
               model_policy: str | None = None, tool_policy: str | None = None,
               fixtures: Any = None, limit: int | None = None,
               progress: bool | None = None, **replay_kwargs: Any) -> ReplayBatch:
        """Replay every run (of ``cohort``, default all) and measure each replay.

        ``branch`` makes the branch of each run: a callable ``(base_log, tenant_id, run_id)
        -> Branch`` (``base_log`` holds that run only), or None for a branch with no
        interventions from the run's first event. Each run is replayed with
        :func:`replaykit.replay` (``model_policy``, ``tool_policy``, ``fixtures`` and other
        keyword arguments passed through); a run whose branch or replay raises becomes a row
        with ``status="error"`` and its error text, and the rest go on. Re-driven events that
        carry a ``cache_key`` read the cache under the cohorts' ``cache_mode``: under
        ``best-effort`` a miss is a live fallback, counted per run
        (``ReplayBatch.live_fallbacks`` in total); under ``cross-mode-readable`` a miss, and
        under ``strict-mode`` any read, stops that run's replay with
        :class:`~replaykit.ReplayCacheMissError` (its row has ``status="error"`` and the
        error's text; the other runs go on). All metrics are computed
        afterwards in one column-wise :func:`replaykit.compare` over every replay. A progress
        bar (tqdm when installed) shows runs done; ``progress=None`` shows it only when
        interactive.

        Example:
            >>> rb = cs.replay(cohort="2025-fall", tool_policy="recorded-only")  # doctest: +SKIP
            >>> rb.live_fallbacks, rb.status_counts()  # doctest: +SKIP

        Raises:
            KeyError: ``cohort`` names no cohort.
            TypeError: a keyword argument that :func:`replaykit.replay` does not take.
        """
        return replay_runs(self.log, self._frame(), self.labels, self.cache, self.cache_mode,
                           branch, cohort=cohort, model_policy=model_policy,
                           tool_policy=tool_policy, fixtures=fixtures, limit=limit,
                           progress=progress, **replay_kwargs)

    def __repr__(self) -> str:
        df = self._frame()
        return f"Cohorts(by={self.by!r}, cohorts={self.labels}, runs={len(df)})"

    def _repr_html_(self) -> str:
        from .._base.display import summary_html

        by = self.by if isinstance(self.by, str) else getattr(self.by, "__name__", "callable")
        summary = self.summary()
        cols = [c for c in ("cohort", "runs", "events", "tool_calls", "error_rate", "abort_rate")
                if c in summary.columns]
        return summary_html(
            "Cohorts",
            {"by": by, "cohorts": len(self.labels), "runs": len(self._frame())},
            table=summary[cols] if cols else summary,
        )


def cohorts(log: EventLog, by: ByArg = "semester", *,
            tenant_id: str | Sequence[str] | None = None,
            calendar: SemesterCalendar | Sequence[tuple[str, int, int]] | None = None,
            cache: Any = None, cache_mode: CacheMode = "best-effort",
            pair_on: ByArg = "prompt", engine: str = "local", client: Any = None) -> Cohorts:
    """Group the runs of ``log`` into cohorts.

    Args:
        log: an :class:`~replaykit.EventLog`.
        by: ``"semester"`` (the term of the run's start time -- its earliest ``ts``, else the
            header's ``created_at`` -- under ``calendar``); a column of :meth:`Cohorts.runs_df`
            or of ``log.runs_df()`` (``"tenant_id"``, ``"format"``, a header attribute); a
            payload field (``"model"`` or ``"payload.model"``: the first non-null value in the
            run's events); or a callable taking the runs frame (one row per run) and returning
            one label per row. Runs without a label get ``"<missing>"`` (kept, never dropped).
        tenant_id: keep only this tenant (or these tenants); None keeps every tenant.
        calendar: a :class:`SemesterCalendar`, or its ``terms`` as ``(name, month, day)``
            tuples; default spring (Jan 1) / summer (Jun 1) / fall (Sep 1), UTC.
        cache: a provider cache (``get(key)``; ``InMemoryCache``, ``ParquetCache``) for cache
            coverage and replay cache reads.
        cache_mode: how cache reads are counted and replayed (``best-effort``: a miss is a
            live fallback; ``cross-mode-readable`` / ``strict-mode``: a replayed run whose
            read fails ends with ``status="error"``, see :meth:`Cohorts.replay`).
        pair_on: the key of the paired analysis in :meth:`Cohorts.compare` (a runs_df
            column or a callable; default the run's first prompt).
        engine: ``"local"`` or ``"dask"`` (``log`` may then be a Parquet dataset path or a
            dask.dataframe; per-run measures are computed per partition, and replay-based
            methods are unavailable); ``client``: its ``distributed.Client``. A
            :class:`replaykit.ingest.Dataset` (:func:`replaykit.open_dataset`, filters
            pushed into the scan) always runs that way, on Dask's threaded scheduler
            unless ``client=`` names a cluster.

    Example:
        >>> import replaykit as rk
        >>> data = rk.datasets.generate_cohorts(runs=100, seed=3)
        >>> cs = rk.cohorts(data.log, by="semester", cache=data.cache)
        >>> cs.labels
        ['2025-fall', '2026-spring']
        >>> int(cs.summary()["runs"].sum())
        100

    Raises:
        TypeError: ``log`` is not an EventLog (or a Dataset), or ``tenant_id`` is an empty
            string.
        MissingExtraError: a Dataset (or ``engine="dask"``) without the ``dask`` extra.
        KeyError: the log has none of the given tenants; ``by`` names nothing.
        ValueError: an unknown ``cache_mode`` or an invalid calendar.
    """
    from ..engine import is_partition_source

    if engine != "local" or is_partition_source(log):
        from ..engine import dispatch  # cohorts/_dask.py registers the implementation

        # a Dataset (rk.open_dataset) runs out of core, partition by partition, on Dask
        return dispatch("dask" if engine == "local" else engine, cohorts, log, by,
                        tenant_id=tenant_id, calendar=calendar, cache=cache,
                        cache_mode=cache_mode, pair_on=pair_on, client=client)
    if not isinstance(log, EventLog):
        raise TypeError(f"log must be a replaykit.EventLog, got {type(log).__name__}")
    if tenant_id is not None:
        vals = [tenant_id] if isinstance(tenant_id, str) else list(tenant_id)
        if not vals or not all(isinstance(v, str) and v for v in vals):
            raise TypeError(f"tenant_id must be a non-empty string or list of them, got "
                            f"{tenant_id!r}")
        missing = sorted(set(vals) - set(log.tenants))
        if missing:
            raise KeyError(f"tenant(s) {missing} not in the log; tenants: {log.tenants}")
        log = log.filter(tenant_id=vals)
    if calendar is not None and not isinstance(calendar, SemesterCalendar):
        calendar = SemesterCalendar(terms=tuple(calendar))
    if isinstance(calendar, Mapping):  # pragma: no cover - defensive
        raise TypeError("calendar must be a SemesterCalendar or a sequence of terms")
    cs = Cohorts(log, by, calendar=calendar, cache=cache, cache_mode=cache_mode,
                 pair_on=pair_on)
    cs._frame()  # derive labels now: a bad ``by`` fails here, not later
    return cs
