"""``python -m replaykit.report.demo``: build reports/demo-rca.html from the bundled samples.

Loads the isplay sample run (data/isplay), replays the branch
``branch-drop-fraud-clause.json`` (four interventions, one of which changes the risk-signals
arguments) under recorded-only / pause-for-fixture with the bundled fixtures, prints the
metrics table and writes the report.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "isplay"
TENANT = "demo"


def main(argv: list[str] | None = None) -> int:
    """Build the demo report; returns 0. ``argv[0]`` optionally names the output file.

    Raises:
        FileNotFoundError: the sample data is missing (run from a source checkout).
    """
    import pandas as pd

    import replaykit as rk

    from . import rca

    argv = list(sys.argv[1:] if argv is None else argv)
    out = Path(argv[0]) if argv else Path("reports") / "demo-rca.html"
    branch_file, fixtures = DATA / "branch-drop-fraud-clause.json", DATA / "fixtures.json"
    log = rk.read_isplay(DATA, owner=TENANT, progress=False)
    branch = rk.Branch.load(branch_file, base=log, tenant_id=TENANT)
    res = rk.replay(branch, model_policy="recorded-only", tool_policy="pause-for-fixture",
                    fixtures=fixtures)
    rep = rca(res, title="RCA-311: removing the fraud-escalation clause",
              question="In claim C-104, does removing the fraud-escalation clause (and sending "
                       "the real claimed amount to risk-signals) change what the agent does?",
              notes="Demo built from the bundled isplay sample run; the risk-signals output for "
                    "the changed arguments comes from an analyst fixture.",
              inputs=[DATA / "claims-triage-C-104.json", branch_file, fixtures],
              tenant_id=TENANT)
    path = rep.save_html(out)
    m = rep.data["metrics"]
    table = pd.DataFrame({"metric": list(m), "value": [str(v) for v in m.values()]})
    print("== findings ==")
    print(res.summary().text)
    print("\n== replay metrics ==")
    print(table.to_string(index=False))
    print(f"\nreport: {Path(str(path)).resolve()}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
