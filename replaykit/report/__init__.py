"""Self-contained HTML reports: ``rk.report.rca`` (one replay) and ``rk.report.cohort``.

A report is one HTML file that opens anywhere, offline: plotly.js is inlined once, figures and
data are embedded as escaped JSON, and the page loads no URL. Every string from a log is
untrusted and escaped. Needs plotly (``pip install "replaykit[viz]"``). See docs/report.md.

Example:
    >>> import replaykit as rk  # doctest: +SKIP
    >>> rep = rk.report.rca(res, title="RCA-311", question="...")  # doctest: +SKIP
    >>> rep.save_html("reports/rca.html")  # doctest: +SKIP
"""

from __future__ import annotations

from ..errors import MissingExtraError

try:
    import plotly  # noqa: F401
except ImportError:  # pragma: no cover - exercised where plotly is absent
    raise MissingExtraError("replaykit.report", "viz", "plotly") from None

from ._cohort_page import cohort
from ._core import MAX_SCRUB_EVENTS, rca, scrubber_data
from ._fmt import cut_words, fmt_number, people_frame
from ._parts import Report
from ._template import TRANSCRIPT_CSS  # the transcript views widgets.py shows too
from ._transcript import run_tree_html, transcript_html, turn_numbers

__all__ = ["MAX_SCRUB_EVENTS", "TRANSCRIPT_CSS", "Report", "cohort", "cut_words", "fmt_number",
           "people_frame", "rca", "run_tree_html", "scrubber_data", "transcript_html",
           "turn_numbers"]
