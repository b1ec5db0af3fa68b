"""The findings of a cohort comparison: multiple-comparison corrections, units, the headline
and the sentences at the top of ``rk.report.cohort`` (rules: docs/report.md)."""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["UNITS", "adjust", "cohort_answer", "cohort_findings", "unit_of"]

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


def adjust(frame: pd.DataFrame, *, alpha: float | None = None) -> pd.DataFrame:
    """``frame`` (a ``Cohorts.compare`` frame) with multiple-comparison columns added.

    ``p_value``: two-sided, from the interval by a normal approximation (the interval's
    half-width is ``z * se``; ``p = 2 * (1 - Phi(|diff| / se))``); ``p_holm`` and ``p_bh``:
    Holm (family-wise error) and Benjamini-Hochberg (false discovery rate) adjusted, within
    each ``analysis`` (paired and unpaired are separate families); ``holm`` / ``bh``: the
    adjusted p is below ``alpha`` (default ``1 - ci_level``); ``unit``: see :func:`unit_of`.

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
    p = np.where((se <= 0) | (n < 2), np.nan, p)
    out["p_value"] = p
    out["p_holm"] = np.nan
    out["p_bh"] = np.nan
    fam = out["analysis"].astype(str).to_numpy() if "analysis" in out else np.zeros(len(out))
    for f in pd.unique(fam):
        idx = np.flatnonzero(fam == f)
        out.iloc[idx, out.columns.get_loc("p_holm")] = _holm(p[idx])
        out.iloc[idx, out.columns.get_loc("p_bh")] = _bh(p[idx])
    out["holm"] = (out["p_holm"].to_numpy() < a) & out["excludes_zero"].fillna(False).to_numpy(
        dtype=bool)
    out["bh"] = (out["p_bh"].to_numpy() < a) & out["excludes_zero"].fillna(False).to_numpy(
        dtype=bool)
    out["unit"] = [unit_of(str(mt), str(st)) for mt, st in
                   zip(out["metric"], out.get("statistic", pd.Series([None] * len(out))),
                       strict=True)]
    return out


def _fmt(v: float, unit: str, signed: bool = False) -> str:
    from ._fmt import fmt_number

    if unit == "rates":
        x = fmt_number(v, percent=True, signed=signed)
        return x.replace("%", " pp") if signed else x
    return fmt_number(v, signed=signed)


def _p(p: float) -> str:
    """A p-value for people: 3 significant digits, and below 1e-15 (a normal tail that
    rounds to 0 in floating point) as ``< 1e-15``, never ``0``."""
    return "< 1e-15" if p < 1e-15 else f"{p:.3g}"


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
        if min(n_a, n_b) < 5:
            rows.append({"kind": "caveat", "sentence": (
                f"The {analysis} rows rest on {min(n_a, n_b)} "
                f"{'pair(s)' if analysis == 'paired' else 'run(s) in the smaller cohort'}: too "
                "few to support a finding."), "section": f"table-{analysis}"})
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
                f"); it {kept}" + (f" (Holm p {_p(r.p_holm)})." if testable else ".")),
                "section": f"unit-{unit}"})
        if hits.empty:
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
    if not everywhere and not somewhere:
        k = int(adj["excludes_zero"].fillna(False).sum())
        level = float(adj["ci_level"].iloc[0]) if "ci_level" in adj else 0.95
        chance = len(adj) * (1 - level)
        return (f"No change: between {a} and {b} no measure moved beyond what chance explains "
                f"after Holm correction ({k} of {len(adj)} intervals excluded zero; about "
                f"{chance:.1f} would by chance alone).")
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
