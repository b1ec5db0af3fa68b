"""The findings of a cohort comparison: multiple-comparison corrections, units, the headline
and the sentences at the top of ``rk.report.cohort`` (rules: docs/report.md)."""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["UNITS", "adjust", "cohort_answer", "cohort_findings", "fmt_p", "fmt_stat",
           "small_sample", "unit_of"]

#: Unit groups of cohort measures, in page order: each is drawn on its own axis.
UNITS = ("rates", "counts", "tokens")


def unit_of(metric: str, statistic: str | None) -> str:
    """``rates`` (shares and rates, shown as percentages), ``tokens`` or ``counts``.

    >>> unit_of("abort_rate", "rate"), unit_of("tokens_per_run", "mean"), \
unit_of("events_per_run", "mean")
    ('rates', 'tokens', 'counts')
    """
    if statistic == "rate":
        return "rates"
    if "token" in metric:
        return "tokens"
    return "counts"


def _holm(p: np.ndarray) -> np.ndarray:
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if not m:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def _bh(p: np.ndarray) -> np.ndarray:
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if not m:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    ranked = p[order] * m / np.arange(1, m + 1)
    adj = np.minimum.accumulate(ranked[::-1])[::-1]
    out[order] = np.minimum(adj, 1.0)
    return out


def small_sample(frame: pd.DataFrame) -> np.ndarray:
    """Per row of a compare frame: below the minimum sample (its ``small_sample`` column, as
    ``Cohorts.compare`` sets it; for a frame without one, fewer than
    :data:`replaykit.cohorts.MIN_RUNS` runs, or :data:`~replaykit.cohorts.MIN_PAIRS` pairs,
    on a side)."""
    from ..cohorts import MIN_PAIRS, MIN_RUNS

    if "small_sample" in frame:
        return frame["small_sample"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    if not {"n_a", "n_b"} <= set(frame.columns):
        return np.zeros(len(frame), dtype=bool)
    n = np.minimum(frame["n_a"].astype(float).to_numpy(), frame["n_b"].astype(float).to_numpy())
    paired = (frame["analysis"].astype(str).to_numpy() == "paired") if "analysis" in frame \
        else np.zeros(len(frame), dtype=bool)
    return np.asarray(n < np.where(paired, MIN_PAIRS, MIN_RUNS))


def adjust(frame: pd.DataFrame, *, alpha: float | None = None) -> pd.DataFrame:
    """``frame`` (a ``Cohorts.compare`` frame) with multiple-comparison columns added.

    ``p_value``: two-sided, from the interval by a normal approximation (the interval's
    half-width is ``z * se``; ``p = 2 * (1 - Phi(|diff| / se))``); ``p_holm`` and ``p_bh``:
    Holm (family-wise error) and Benjamini-Hochberg (false discovery rate) adjusted, within
    each ``analysis`` (paired and unpaired are separate families); ``holm`` / ``bh``: the
    adjusted p is below ``alpha`` (default ``1 - ci_level``); ``unit``: see :func:`unit_of`.
    A row below the minimum sample (:func:`small_sample`) gets no p-value: it is not tested,
    and it does not count in the correction's family.

    >>> f = pd.DataFrame({"analysis": ["u", "u"], "metric": ["a", "b"], "statistic": "mean",
    ...                   "diff": [1.0, 0.1], "ci_low": [0.5, -0.1], "ci_high": [1.5, 0.3],
    ...                   "ci_level": 0.95, "excludes_zero": [True, False]})
    >>> adjust(f)[["p_holm", "holm"]].round(6).values.tolist()
    [[0.000177, True], [0.327095, False]]
    """
    out = frame.copy()
    level = out["ci_level"].astype(float).fillna(0.95).to_numpy() if "ci_level" in out \
        else np.full(len(out), 0.95)
    a = (1 - level) if alpha is None else np.full(len(out), alpha)
    z = np.array([NormalDist().inv_cdf(0.5 + lv / 2) for lv in level])
    diff = out["diff"].astype(float).to_numpy()
    lo = out["ci_low"].astype(float).to_numpy()
    hi = out["ci_high"].astype(float).to_numpy()
    se = (hi - lo) / (2 * z)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.abs(diff) / se
    p = np.array([2 * (1 - NormalDist().cdf(s)) if np.isfinite(s) else np.nan for s in stat])
    # an interval without width (one pair, or no variation) supports no test
    n = np.minimum(out["n_a"].astype(float).to_numpy(), out["n_b"].astype(float).to_numpy()) \
        if {"n_a", "n_b"} <= set(out.columns) else np.full(len(out), np.inf)
    p = np.where((se <= 0) | (n < 2) | small_sample(out), np.nan, p)
    out["p_value"] = p
    out["p_holm"] = np.nan
    out["p_bh"] = np.nan
    fam = out["analysis"].astype(str).to_numpy() if "analysis" in out else np.zeros(len(out))
    for f in pd.unique(fam):
        idx = np.flatnonzero(fam == f)
        out.iloc[idx, out.columns.get_loc("p_holm")] = _holm(p[idx])
        out.iloc[idx, out.columns.get_loc("p_bh")] = _bh(p[idx])
    small = small_sample(out)
    out["small_sample"] = small
    beyond = out["excludes_zero"].astype("boolean").fillna(False).to_numpy(dtype=bool) & ~small
    out["excludes_zero"] = beyond
    out["holm"] = (out["p_holm"].to_numpy() < a) & out["excludes_zero"].fillna(False).to_numpy(
        dtype=bool)
    out["bh"] = (out["p_bh"].to_numpy() < a) & out["excludes_zero"].fillna(False).to_numpy(
        dtype=bool)
    out["unit"] = [unit_of(str(mt), str(st)) for mt, st in
                   zip(out["metric"], out.get("statistic", pd.Series([None] * len(out))),
                       strict=True)]
    return out


#: Decimals a cohort statistic is shown with, at most (hundredths of a percentage point, of an
#: event, of a token, of an effect size): a bootstrap bound of ``1.26e-17`` is ``0``, not
#: ``+0.00000000000000126``.
STAT_DECIMALS = 2
#: Smallest p-value written as a number; anything below prints as ``< 0.001`` (a bootstrap
#: interval of a few thousand replicates cannot tell smaller tails apart).
P_FLOOR = 0.001


def fmt_stat(v: Any, unit: str, signed: bool = False) -> str:
    """A cohort statistic (value, difference, interval bound, effect size) for people, the one
    format of the report's sentences and tables: 3 significant digits, at most
    :data:`STAT_DECIMALS` decimals; ``unit="rates"`` as a percentage (``5.23%``) and, signed,
    in percentage points (``+14.2 pp``); ``unit="percent"`` as a signed or unsigned
    percentage; missing is blank.

    >>> fmt_stat(0.14166, "rates", signed=True), fmt_stat(1.26e-17, "rates", signed=True)
    ('+14.2 pp', '0 pp')
    >>> fmt_stat(-83602.4, "tokens", signed=True), fmt_stat(0.0049, "counts")
    ('-83,602', '0')
    """
    from .._base.display import MISSING, _isna, fmt_number

    if v is None or _isna(v):
        return MISSING
    x = float(v) * (100 if unit in ("rates", "percent") else 1)
    if np.isfinite(x):
        x = round(x, STAT_DECIMALS) + 0.0  # + 0.0: no "-0"
    text = fmt_number(x, signed=signed)
    if unit == "rates":
        return text + (" pp" if signed else "%")
    return text + ("%" if unit == "percent" else "")


def fmt_p(p: Any) -> str:
    """A p-value for people, the one format of the report: 2 significant digits, below
    :data:`P_FLOOR` as ``< 0.001``; missing (not tested) is blank.

    >>> fmt_p(0.32709), fmt_p(0.0012), fmt_p(3e-17), fmt_p(float("nan"))
    ('0.33', '0.0012', '< 0.001', '')
    """
    from .._base.display import MISSING, _isna

    if p is None or _isna(p):
        return MISSING
    return f"< {P_FLOOR:g}" if float(p) < P_FLOOR else f"{float(p):.2g}"


_fmt = fmt_stat


def cohort_findings(adj: pd.DataFrame) -> tuple[str, list[dict[str, Any]]]:
    """(headline, sentences) of an adjusted compare frame (see :func:`adjust`). Each sentence
    is a dict with kind, sentence and section (the report anchor holding its evidence)."""
    rows: list[dict[str, Any]] = []
    heads = []
    a = str(adj["cohort_a"].iloc[0]) if "cohort_a" in adj else "a"
    b = str(adj["cohort_b"].iloc[0]) if "cohort_b" in adj else "b"
    for analysis in ("unpaired", "paired"):
        part = adj[adj["analysis"] == analysis]
        if part.empty:
            continue
        m = len(part)
        k = int(part["excludes_zero"].fillna(False).sum())
        j = int(part["holm"].sum())
        jb = int(part["bh"].sum())
        level = float(part["ci_level"].iloc[0]) if "ci_level" in part else 0.95
        heads.append(f"{analysis}: {k} of {m} measures moved beyond their "
                     f"{round(level * 100)}% interval; {j} after Holm correction "
                     f"({jb} after Benjamini-Hochberg)")
        n_a, n_b = int(part["n_a"].max()), int(part["n_b"].max())
        if analysis == "unpaired":
            how = (f"Unpaired rows compare all {n_a:,} runs of {a} with all {n_b:,} runs of "
                   f"{b} (intervals resample runs within each cohort).")
        else:
            how = (f"Paired rows compare the {n_a:,} prompts (pairing keys) that occur in both "
                   f"cohorts, each prompt's {b} value minus its {a} value, which removes the "
                   "differences between prompts.")
        rows.append({"kind": "evidence", "sentence": how, "section": f"table-{analysis}"})
        few = part[part["small_sample"].to_numpy(dtype=bool)]
        if len(few):
            from ..cohorts import MIN_DENOMINATOR, MIN_PAIRS, MIN_RUNS

            least = (f"{MIN_PAIRS} shared prompts" if analysis == "paired"
                     else f"{MIN_RUNS} runs in each cohort")
            what = (f"all {m} {analysis} measures" if len(few) == m else
                    f"{len(few)} of {m} {analysis} measures ("
                    + ", ".join(map(str, few["metric"])) + ")")
            rows.append({"kind": "caveat", "sentence": (
                f"Too few to test: {what} rest on {int(few[['n_a', 'n_b']].min().min()):,} "
                f"{'pair(s)' if analysis == 'paired' else 'run(s) in the smaller cohort'} or "
                f"on fewer than {MIN_DENOMINATOR} units in a rate's denominator; a test needs "
                f"at least {least} (docs/cohorts.md, \"Small samples\"). Their values are "
                "shown but never counted as findings."), "section": f"table-{analysis}"})
        chance = m * (1 - level)
        rows.append({"kind": "caveat", "sentence": (
            f"{m} {analysis} tests at {round(level * 100)}%: about {chance:.1f} would exclude "
            "zero by chance alone, so only the corrected columns (Holm, Benjamini-Hochberg) "
            "count as findings."), "section": f"table-{analysis}"})
        hits = part[part["excludes_zero"].fillna(False).to_numpy(dtype=bool)]
        for r in hits.itertuples(index=False):
            unit = str(r.unit)
            moved = "rose" if float(r.diff) > 0 else "fell"
            testable = bool(np.isfinite(r.p_holm))
            kept = ("holds after Holm correction" if r.holm else
                    "holds after Benjamini-Hochberg but not Holm" if r.bh else
                    "does not survive correction" if testable else
                    f"cannot be tested (n = {int(min(r.n_a, r.n_b))}, its interval has no "
                    "width)")
            rows.append({"kind": "outcome", "sentence": (
                f"{r.metric} ({analysis}) {moved} from {_fmt(r.value_a, unit)} to "
                f"{_fmt(r.value_b, unit)} ({_fmt(r.diff, unit, signed=True)}, interval "
                f"{_fmt(r.ci_low, unit, signed=True)} to {_fmt(r.ci_high, unit, signed=True)}"
                f"); it {kept}" + (f" (Holm p {fmt_p(r.p_holm)})." if testable else ".")),
                "section": f"unit-{unit}"})
        if hits.empty and len(few) == m:
            rows.append({"kind": "outcome", "sentence": (
                f"No {analysis} measure could be tested: {a} and {b} hold too few runs "
                "to tell whether anything changed."), "section": f"table-{analysis}"})
        elif hits.empty:
            rows.append({"kind": "outcome", "sentence": (
                f"No {analysis} measure moved beyond its interval: the data show no "
                f"difference between {a} and {b} at this sample size."),
                "section": f"table-{analysis}"})
    headline = "; ".join(heads) + "."
    rows.append({"kind": "caveat", "sentence": (
        "These describe the recorded runs of the two cohorts; they do not establish what "
        "caused a difference."), "section": "question"})
    return headline, rows


def cohort_answer(adj: pd.DataFrame) -> str:
    """The one sentence that opens a cohort report: did anything change between the two
    cohorts, counting only what survives Holm correction (see docs/report.md).

    A measure that holds in every analysis present (unpaired and paired) is named as a
    change; one that holds in only one analysis is named as weaker evidence; with none, the
    sentence says no measure moved beyond chance and how many intervals excluded zero
    against how many chance alone would.
    """
    analyses = [a for a in ("unpaired", "paired") if (adj["analysis"] == a).any()]
    if not analyses:
        return ""
    a = str(adj["cohort_a"].iloc[0]) if "cohort_a" in adj else "a"
    b = str(adj["cohort_b"].iloc[0]) if "cohort_b" in adj else "b"
    held = {x: set(adj.loc[(adj["analysis"] == x) & adj["holm"], "metric"].astype(str))
            for x in analyses}
    everywhere = set.intersection(*held.values())
    somewhere = set.union(*held.values()) - everywhere
    small = small_sample(adj)
    if not everywhere and not somewhere and small.all():
        from ..cohorts import MIN_RUNS

        n_a = int(adj["n_a"].max()) if "n_a" in adj else 0
        n_b = int(adj["n_b"].max()) if "n_b" in adj else 0
        return (f"Too few to tell: {a} has {n_a:,} runs and {b} {n_b:,}, below the minimum "
                f"sample of every measure (at least {MIN_RUNS} runs per cohort; "
                "docs/cohorts.md), so no difference is tested.")
    if not everywhere and not somewhere:
        k = int(adj["excludes_zero"].fillna(False).sum())
        level = float(adj["ci_level"].iloc[0]) if "ci_level" in adj else 0.95
        chance = len(adj) * (1 - level)
        untested = (f"; {int(small.sum())} measure(s) too few to test" if small.any()
                    else "")
        return (f"No change: between {a} and {b} no measure moved beyond what chance explains "
                f"after Holm correction ({k} of {len(adj)} intervals excluded zero; about "
                f"{chance:.1f} would by chance alone{untested}).")
    ref = adj[adj["analysis"] == analyses[0]].set_index("metric")

    def moved(m: str) -> str:
        r = ref.loc[m]
        unit = str(r["unit"])
        verb = "rose" if float(r["diff"]) > 0 else "fell"
        return f"{m} {verb} from {_fmt(r['value_a'], unit)} to {_fmt(r['value_b'], unit)}"

    order = list(ref.index.astype(str))
    both = [m for m in order if m in everywhere]
    weak = [m for m in order if m in somewhere]
    where = ("in both the unpaired and the paired analysis" if len(analyses) == 2
             else f"in the {analyses[0]} analysis")
    if both:
        text = (f"Changed: from {a} to {b}, " + "; ".join(moved(m) for m in both)
                + f" (beyond chance after Holm correction {where})")
        if weak:
            text += ("; weaker evidence for " + ", ".join(weak) + " (holds in one analysis "
                     "only)")
        return text + "."
    return ("Undetermined: " + ", ".join(weak) + f" moved beyond chance after Holm correction "
            f"in one analysis only (between {a} and {b}); the other analysis does not confirm "
            "it.")
