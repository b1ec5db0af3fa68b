"""Cohort calendars: :class:`SemesterCalendar` maps timestamps to term labels
(``"2026-spring"``), the default cohort of :func:`replaykit.cohorts`."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SemesterCalendar"]


@dataclass(frozen=True)
class SemesterCalendar:
    """Maps a timestamp to a term label such as ``"2026-spring"``.

    ``terms`` lists ``(name, month, day)`` start dates within a year, in calendar order; a term
    runs until the next one starts, and the last term runs into the next year until the first
    one starts. The label is ``f"{year}-{name}"`` where ``year`` is the year the term *started*
    (with terms starting Feb 1 and Aug 1, a January date belongs to the previous year's
    second term). Times are converted to ``tz`` before the lookup.

    The default: ``spring`` from Jan 1, ``summer`` from Jun 1, ``fall`` from Sep 1 (UTC).

    Example:
        >>> cal = SemesterCalendar()
        >>> cal.label(pd.to_datetime(["2026-03-01", "2025-12-24"], utc=True)).tolist()
        ['2026-spring', '2025-fall']
        >>> two = SemesterCalendar(terms=(("S1", 2, 1), ("S2", 8, 1)))
        >>> two.label(pd.to_datetime(["2026-01-15"], utc=True)).tolist()
        ['2025-S2']

    Raises:
        ValueError: no terms, duplicate names, an invalid month/day (day must be 1..28), or
            start dates not strictly increasing.
    """

    terms: tuple[tuple[str, int, int], ...] = (("spring", 1, 1), ("summer", 6, 1),
                                               ("fall", 9, 1))
    tz: str = "UTC"

    def __post_init__(self) -> None:
        terms = tuple((str(n), int(m), int(d)) for n, m, d in self.terms)
        object.__setattr__(self, "terms", terms)
        if not terms:
            raise ValueError("a SemesterCalendar needs at least one term")
        names = [t[0] for t in terms]
        if len(set(names)) != len(names) or not all(names) or any("-" in n for n in names):
            raise ValueError(f"term names must be unique, non-empty and without '-': {names}")
        for n, m, d in terms:
            if not (1 <= m <= 12 and 1 <= d <= 28):
                raise ValueError(f"term {n!r}: month must be 1..12 and day 1..28, got {m}/{d}")
        md = [m * 100 + d for _, m, d in terms]
        if any(b <= a for a, b in zip(md, md[1:], strict=False)):
            raise ValueError(f"term start dates must strictly increase within the year: {terms}")

    def _codes(self, ts: Any) -> tuple[np.ndarray, np.ndarray]:
        """(year of the term start, term index) per timestamp; -1 year where ts is missing."""
        s = pd.Series(pd.to_datetime(ts, utc=True))
        valid = s.notna().to_numpy()
        local = s.dt.tz_convert(self.tz)
        year = local.dt.year.fillna(-1).to_numpy().astype(np.int64)
        md = (local.dt.month.fillna(1) * 100 + local.dt.day.fillna(1)).to_numpy().astype(int)
        starts = np.array([m * 100 + d for _, m, d in self.terms])
        idx = np.searchsorted(starts, md, side="right") - 1
        year = np.where(idx < 0, year - 1, year)
        idx = np.where(idx < 0, len(self.terms) - 1, idx)
        return np.where(valid, year, -1), idx

    def label(self, ts: Any) -> pd.Series:
        """The term label of every timestamp (column-wise); ``<NA>`` where ``ts`` is missing.

        Example:
            >>> SemesterCalendar().label(pd.to_datetime(["2026-09-02"], utc=True)).tolist()
            ['2026-fall']
        """
        year, idx = self._codes(ts)
        code = np.where(year >= 0, year * len(self.terms) + idx, -1)
        uniq, inv = np.unique(code, return_inverse=True)
        names = np.array([None if c < 0 else f"{c // len(self.terms)}-"
                          f"{self.terms[c % len(self.terms)][0]}" for c in uniq.tolist()],
                         dtype=object)
        return pd.Series(names[inv] if len(code) else [], dtype="string")

    def bounds(self, label: str) -> tuple[_dt.datetime, _dt.datetime]:
        """``(start, end)`` of a term label (end exclusive), as aware datetimes in ``tz``.

        Raises:
            ValueError: the label is not ``"<year>-<term name>"`` of this calendar.
        """
        from zoneinfo import ZoneInfo

        year_s, _, name = str(label).partition("-")
        names = [t[0] for t in self.terms]
        if not year_s.isdigit() or name not in names:
            raise ValueError(f"{label!r} is not a term of this calendar; expected "
                             f"'<year>-<term>' with term one of {names}")
        tz = ZoneInfo(self.tz)
        i = names.index(name)
        _, m, d = self.terms[i]
        start = _dt.datetime(int(year_s), m, d, tzinfo=tz)
        if i + 1 < len(self.terms):
            _, m2, d2 = self.terms[i + 1]
            end = _dt.datetime(int(year_s), m2, d2, tzinfo=tz)
        else:
            _, m2, d2 = self.terms[0]
            end = _dt.datetime(int(year_s) + 1, m2, d2, tzinfo=tz)
        return start, end

    def sort_key(self, label: str) -> tuple[int, int]:
        """Chronological sort key of a label (unknown labels sort last)."""
        try:
            start, _ = self.bounds(label)
        except ValueError:
            return (10**9, 0)
        return (start.year, [t[0] for t in self.terms].index(str(label).partition("-")[2]))
