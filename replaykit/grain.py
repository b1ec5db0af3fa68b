"""Grain tables computed from an EventLog (being written)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def calls_df(log: Any) -> pd.DataFrame:
    raise NotImplementedError


def tools_df(log: Any) -> pd.DataFrame:
    raise NotImplementedError


def turns_df(log: Any) -> pd.DataFrame:
    raise NotImplementedError
