"""Grain tables of a log that mixes formats equal those of each format read alone.

The details without a canonical column (error names and codes, cache and reasoning tokens,
turn end reasons) are parsed from payloads column-wise; formats disagree on a path's JSON
type (``error`` is an object in one, a string in another), and such a disagreement must not
blank out another format's values (it once did: 7 tool error names alone, 1 together).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import replaykit as rk

DATA = Path(__file__).resolve().parents[1] / "data"
FOLDERS = sorted(p for p in DATA.iterdir() if p.is_dir())

_DETAILS = {
    "tools_df": ["error_name", "error_code", "is_error"],
    "calls_df": ["cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
                 "input_tokens", "output_tokens", "error_code"],
    "turns_df": None,  # every column
}


def _read(path: Path | list[Path]) -> rk.EventLog:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rk.read_events(path, owner="demo")


@pytest.fixture(scope="module")
def logs() -> tuple[rk.EventLog, dict[str, rk.EventLog]]:
    return _read(FOLDERS), {p.name: _read(p) for p in FOLDERS}


@pytest.mark.parametrize("grain", sorted(_DETAILS))
def test_mixed_log_details_equal_each_format_alone(logs, grain: str) -> None:
    mixed, alone = logs
    whole = getattr(mixed, grain)()
    parts = [getattr(log, grain)() for log in alone.values()]
    cols = _DETAILS[grain] or list(whole.columns)
    key = ["tenant_id", "run_id", *(c for c in ("turn", "step", "call_index", "seq", "ref_id",
                                                "first_seq") if c in whole.columns)]
    got = whole.sort_values(key).reset_index(drop=True)[key + [c for c in cols if c not in key]]
    want = (pd.concat(parts, ignore_index=True).sort_values(key).reset_index(drop=True)
            [key + [c for c in cols if c not in key]])
    assert len(got) == len(want) > 0
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    if grain == "tools_df":  # the details are there at all (the bug blanked them to 1)
        assert int(got["error_name"].notna().sum()) == sum(
            int(p["error_name"].notna().sum()) for p in parts) >= 2
