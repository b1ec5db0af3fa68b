"""The RCA report made faster (issue 44 item 4) says what it said before, value for value.

``data/rca_frozen.json`` was written by ``tests/report/rca_frozen_model.py`` from the
implementation before the speed-up (commit 5b2e269): for generated replays of three sizes
and seeds (greedy decoding after a checkpoint, a changed tool call served by a fixture:
copied-output findings on every later model call) and for the bundled sample's branch (a
tool no longer offered; with its fixtures and paused without them), the diff's statuses,
every changed-values row, the summary's sentences, unsupported rows, open requirements and
values, the metrics and the first divergence. Today's code must give the same values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rca_frozen_model as rca_model

pytest.importorskip("plotly")

FROZEN = json.loads(rca_model.FROZEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def today(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return {name: rca_model.model(res) for name, res in
            rca_model.cases(Path(tmp_path_factory.mktemp("frozen")))}


def test_the_frozen_cases_hold_every_kind_of_finding() -> None:
    # the recorded cases exercise what the report states: copied outputs, a tool no longer
    # offered, a fixture-served call, open requirements, bookkeeping and content rows
    reasons = {r[4] for c in FROZEN.values() for r in c["summary"]["unsupported"]["head"]}
    assert {"copied_output", "tool_not_offered"} <= reasons
    assert FROZEN["demo-paused"]["summary"]["requirements"]
    assert all(c["summary"]["counts"]["unsupported"] > 0 for c in FROZEN.values())
    keys = {r[-4] for c in FROZEN.values() for r in c["changes"]["head"]}
    assert keys == {True, False}
    assert set(FROZEN) == {f"generated-{n}-seed{s}" for n, s in rca_model.GENERATED} \
        | {"demo-fixtures", "demo-paused"}


@pytest.mark.parametrize("case", sorted(FROZEN))
def test_report_model_is_unchanged(today: dict[str, dict[str, Any]], case: str) -> None:
    got = rca_model.freeze(today[case])
    want = FROZEN[case]
    # the readable parts first (a difference shows as values, not as a digest)
    for part in ("sections", "metrics", "first_divergence", "html"):
        assert got[part] == want[part], part
    gs, ws = got["summary"], want["summary"]
    for k in ("answer", "verdict", "counts", "rows", "requirements"):
        assert gs[k] == ws[k], k
    for k in ("unsupported", "values"):
        assert (gs[k]["columns"], gs[k]["n"], gs[k]["head"]) == \
            (ws[k]["columns"], ws[k]["n"], ws[k]["head"]), k
        assert gs[k]["sha256"] == ws[k]["sha256"], k
    for k in ("diff", "changes"):
        assert (got[k]["columns"], got[k]["n"]) == (want[k]["columns"], want[k]["n"]), k
        assert got[k]["head"] == want[k]["head"], k
        assert got[k]["sha256"] == want[k]["sha256"], k
    # and the frozen digests are of what the head shows: an independent re-check of the
    # stored file's own consistency for the small cases
    if want["changes"]["n"] <= rca_model.HEAD_ROWS:
        assert rca_model.digest(want["changes"]["head"]) == want["changes"]["sha256"]
