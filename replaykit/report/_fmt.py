"""Numbers for people, shared by the report's sections (:mod:`._core`, :mod:`._cohort`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["fmt_number"]


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
