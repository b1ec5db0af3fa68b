"""Cohorts of runs: semester over semester summaries, comparisons and best-effort replays.

``rk.cohorts(log, by=...)`` labels every run of a log with a cohort (a run column, a payload
field, a callable over the runs frame, or ``"semester"`` from the run's start time through a
:class:`SemesterCalendar`) and returns a :class:`Cohorts` object:

* :meth:`Cohorts.runs_df` -- one row per run with its cohort and per-run measures;
* :meth:`Cohorts.summary` -- one row per cohort;
* :meth:`Cohorts.compare` -- differences between two cohorts with effect sizes and seeded
  bootstrap confidence intervals (numpy only), plus a paired analysis over the scenarios
  (prompts) that appear in both;
* :meth:`Cohorts.replay` -- replay every run of a cohort under a branch, best-effort cache
  reads and a progress bar; failures become rows.

Every per-event computation is column-wise (numpy / Arrow over the whole log); the only
per-run Python is the replay itself, which is a per-event API. Definitions: docs/cohorts.md.

Layout: ``_core.py`` (:class:`Cohorts`, :func:`cohorts`: measures, summaries, comparisons),
``calendar.py`` (:class:`SemesterCalendar`), ``_measures.py`` (column-wise counting, metric
definitions, the bootstrap), ``replays.py`` (:class:`ReplayBatch`: replays of whole cohorts),
``_dask.py`` (``engine="dask"``).
"""

from __future__ import annotations

from . import _dask  # noqa: F401  (registers cohorts(engine="dask"))
from ._core import (
    ABORT_FINISHES,
    COMPARE_COLUMNS,
    MIN_DENOMINATOR,
    MIN_PAIRS,
    MIN_RUNS,
    MISSING,  # noqa: F401  (the label of unlabelled runs)
    Cohorts,
    cohorts,
)
from ._measures import _boot_means  # noqa: F401  (tests reach it here)
from .calendar import SemesterCalendar
from .replays import ReplayBatch

__all__ = [
    "ABORT_FINISHES",
    "COMPARE_COLUMNS",
    "MIN_DENOMINATOR",
    "MIN_PAIRS",
    "MIN_RUNS",
    "Cohorts",
    "ReplayBatch",
    "SemesterCalendar",
    "cohorts",
]
