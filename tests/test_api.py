"""The public face: every exported name resolves; importing stays light."""

from __future__ import annotations

import subprocess
import sys

import replaykit


def test_every_public_name_resolves():
    missing = [name for name in replaykit.__all__ if not hasattr(replaykit, name)]
    assert missing == []
    assert len(set(replaykit.__all__)) == len(replaykit.__all__)


def test_import_does_not_pull_in_plotting_or_widgets():
    code = (
        "import sys, replaykit; "
        "heavy = [m for m in ('plotly', 'ipywidgets', 'dask', 'duckdb', "
        "'adbc_driver_manager', 'inspect_ai', 'opentelemetry', 'playwright') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_public_callables_are_documented():
    undocumented = [
        name
        for name in replaykit.__all__
        if callable(getattr(replaykit, name))
        and not (getattr(replaykit, name).__doc__ or "").strip()
    ]
    assert undocumented == []
