"""Write the notebooks whose cells live here (outputs stripped). Run: python tools/make_notebooks.py"""

from __future__ import annotations

from pathlib import Path

import nbformat as nbf

ROOT = Path(__file__).resolve().parents[1]

FIND_DATA = '''from pathlib import Path

import replaykit as rk

# The bundled samples live in data/ at the repository root.
DATA = next(p / "data" for p in [Path.cwd(), *Path.cwd().parents] if (p / "data" / "toh").is_dir())
DATA'''


def check(source: str) -> nbf.NotebookNode:
    """A cell of checks: run by the tests (nbval), tagged "test" and collapsed in Lab, so the
    teaching cells read as a user would write them."""
    return nbf.v4.new_code_cell(source, metadata={"tags": ["test"],
                                                  "jupyter": {"source_hidden": True}})


def quickstart() -> nbf.NotebookNode:
    md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
    cells = [
        md(
            "# 01 · Quick start: load logs, look at runs, calls and tools\n\n"
            "replaykit loads agent event logs of several formats into one canonical Arrow table "
            "and gives you pandas frames at the grain you need: one row per event, run, model "
            "call, tool call or turn. Everything here uses the small sample logs in `data/`."
        ),
        code(FIND_DATA),
        md(
            "## Load every bundled sample\n\n"
            "`read_events` sniffs each file's format. Session logs of the agent harness (`toh`) "
            "and isplay run exports carry no tenant, so we name the owner: replaykit never "
            "invents one. The `harness_event_log` rows (`pleach`) carry their own tenants."
        ),
        code(
            'owned = rk.read_events([DATA / "toh", DATA / "isplay"], owner="demo", progress=False)\n'
            'rows = rk.read_pleach(DATA / "pleach", progress=False)\n'
            "log = rk.concat([owned, rows])\n"
            "log"
        ),
        check(
            "assert len(log.quarantine) == 0\n"
            'assert set(log.summary()["formats"]) == {"toh", "pleach", "isplay"}'
        ),
        md("## One row per run"),
        code(
            "runs = log.runs_df()\n"
            'runs[["tenant_id", "run_id", "parent_run_id", "format", "events", "turns", '
            '"model_calls", "tool_calls", "errors"]]'
        ),
        check(
            'assert runs["events"].sum() == len(log)\n'
            'assert (runs["events"] > 0).all()'
        ),
        md(
            "## Model calls and tool calls of the harness logs\n\n"
            "A model call is the stream of chunks up to its `finish`; a stream that stops "
            "without one is marked `finished=False`."
        ),
        code(
            'toh = log.filter(tenant_id="demo").filter(run_ids=[r for r in runs.loc[runs.format == "toh", "run_id"]])\n'
            "calls = toh.calls_df()\n"
            'calls[["run_id", "turn", "step", "call_index", "chunks", "finish", "input_tokens", '
            '"output_tokens", "finished"]].head(10)'
        ),
        check(
            'finishes = toh.filter(kinds="model_chunk").table.column("finish").drop_null()\n'
            'assert calls["finished"].sum() == len(finishes)'
        ),
        code(
            "tools = toh.tools_df()\n"
            'tools[["run_id", "turn", "step", "tool_name", "is_error", "has_result"]]'
        ),
        check('assert len(tools) == len(toh.filter(kinds="tool_call"))'),
        md(
            "## Fold the log into per-step state\n\n"
            "`rk.fold` turns every run into one row per event holding the state after that "
            "event (here the format-agnostic `agent()` projection: tool calls, tokens, errors, "
            "...). The last row of each run is its final state."
        ),
        code(
            "states = rk.fold(toh, [rk.agent()])\n"
            "final = states.final()\n"
            "final[[\"run_id\", \"turn\", \"model_calls\", \"tool_calls\", "
            "\"input_tokens\", \"output_tokens\", \"errors\"]]"
        ),
        check(
            "per_run_tools = toh.tools_df().groupby(\"run_id\").size()\n"
            "for run_id, n in per_run_tools.items():\n"
            "    assert final.loc[final[\"run_id\"] == run_id, \"tool_calls\"].item() == n"
        ),
        md("## One picture: which tools each run called, in order"),
        code(
            "from replaykit import plots\n"
            "\n"
            "fig = plots.tool_sequences(toh)\n"
            "fig"
        ),
        check(
            "assert sum(len(trace.x) for trace in fig.data) == len(toh.filter(kinds=\"tool_call\"))"
        ),
        md(
            "## Bad input is never silently dropped\n\n"
            "A damaged file either raises a `LoadError` naming file, line, field and a fix, or, "
            'with `errors="quarantine"`, keeps loading and sets each bad row aside with its reason.'
        ),
        code(
            "import tempfile\n"
            "\n"
            "tmp = Path(tempfile.mkdtemp()) / \"session.jsonl\"\n"
            "good = (DATA / \"toh\").rglob(\"session.jsonl\").__next__().read_text().splitlines()\n"
            "tmp.write_text(\"\\n\".join(good[:3] + ['{\"type\": \"turn/start\", \"data\": '] + good[3:]) + \"\\n\")\n"
            "try:\n"
            '    rk.read_toh(tmp, tenant_id="demo", progress=False)\n'
            "except rk.LoadError as err:\n"
            "    error = err\n"
            "    print(err)\n"
            'damaged = rk.read_toh(tmp, tenant_id="demo", errors="quarantine", progress=False)\n'
            'damaged.quarantine_df()[["source", "line", "reason", "message"]]'
        ),
        check(
            "assert error.line == 4\n"
            "assert len(damaged.quarantine) == 1"
        ),
    ]
    nb = nbf.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


if __name__ == "__main__":
    out = ROOT / "notebooks" / "01_quickstart.ipynb"
    nbf.write(quickstart(), out)
    print(f"wrote {out}")
