"""Numbers for people, shared by the report's sections (:mod:`._core`, :mod:`._cohort`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["cut_words", "fmt_number", "people_frame"]

#: Columns whose -1 means "the runs never diverge" (docs/metrics.md): shown as ``exact``.
EXACT_MINUS_ONE = ("first_divergence_step",)


def _isna(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def fmt_number(v: Any, *, digits: int = 3, percent: bool = False, signed: bool = False) -> str:
    """A number for people: thousands separators, ``digits`` significant digits for
    non-integers, percentages for rates (``percent=True``: 0.0523 -> ``5.23%``).

    >>> fmt_number(1234567), fmt_number(-1.6699999999999946), fmt_number(0.0523, percent=True)
    ('1,234,567', '-1.67', '5.23%')
    """
    if v is None or _isna(v):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if not isinstance(v, (int, float, np.integer, np.floating)):
        return str(v)
    x = float(v) * (100 if percent else 1)
    sign = "+" if signed and x > 0 else ""
    suffix = "%" if percent else ""
    if not np.isfinite(x):
        return str(x)
    if not percent and float(x).is_integer() and abs(x) < 1e15:
        return f"{sign}{int(x):,}"
    if x == 0:
        return f"0{suffix}"
    mag = int(np.floor(np.log10(abs(x))))
    dec = max(0, digits - 1 - mag)
    return f"{sign}{x:,.{dec}f}{suffix}"


def people_frame(df: pd.DataFrame, max_rows: int | None = None) -> pd.DataFrame:
    """The first ``max_rows`` rows of ``df`` with every number as a person reads it (see
    :func:`fmt_number`: counts as integers with thousands separators, other numbers to 3
    significant digits) and ``-1`` in a first-divergence column as ``exact``. For display
    only: every cell becomes text.

    >>> people_frame(pd.DataFrame({"first_divergence_step": [3, -1], "events": [12345, 7],
    ...                            "norm": [0.333333, 1.0]})).values.tolist()
    [['3', '12,345', '0.333'], ['exact', '7', '1']]
    """
    head = df.head(max_rows) if max_rows is not None else df
    out = pd.DataFrame(index=head.index)
    for c in head.columns:
        col = head[c]
        if c in EXACT_MINUS_ONE and pd.api.types.is_numeric_dtype(col):
            out[c] = [("exact" if not _isna(v) and float(v) == -1 else fmt_number(v))
                      for v in col]
        elif pd.api.types.is_bool_dtype(col):
            out[c] = ["" if _isna(v) else str(bool(v)) for v in col]
        elif pd.api.types.is_numeric_dtype(col) or col.dtype == object:
            out[c] = [fmt_number(v) for v in col]
        else:
            out[c] = ["" if _isna(v) else str(v) for v in col]
    return out


def cut_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis
    (a single word longer than the limit is cut inside it).

    >>> cut_words("the quick brown fox jumps", 16)
    'the quick brown\u2026'
    >>> cut_words("short", 16)
    'short'
    """
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 1)]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip() + "\u2026"
