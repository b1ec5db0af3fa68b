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


#: A test cell's helper: what a reader sees in a table a cell displays (headers, cell texts).
SHOWN = '''import html
import re


def shown(table):
    """What a reader sees in a displayed table: its column headers and cell texts."""
    page = table.to_html()
    heads = re.findall(r'<th [^>]*class="col_heading[^"]*"[^>]*>([^<]*)</th>', page)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    return [html.unescape(h) for h in heads], [html.unescape(c) for c in cells]


RAW = {"nan", "NaN", "None", "NaT", "<NA>"}  # what a raw frame shows for missing values
'''


def check(source: str) -> nbf.NotebookNode:
    """A cell of checks: run by the tests (nbval), tagged "test" and collapsed in Lab, so the
    teaching cells read as a user would write them."""
    return nbf.v4.new_code_cell(source, metadata={"tags": ["test"],
                                                  "jupyter": {"source_hidden": True}})


CHECKS_HEADING = ("## Checks (run by the test suite)\n\n"
                  "nbval runs the collapsed cells below when the test suite runs, checking the "
                  "values the examples above computed.")


def checks_last(cells: list[nbf.NotebookNode]) -> list[nbf.NotebookNode]:
    """The example cells in their order, then one heading, then the check cells in theirs: a
    reader scrolls through the story without passing collapsed checks (issue 42). A check may
    only read what the examples leave behind at the end of the notebook."""
    checks = [c for c in cells if "test" in c.metadata.get("tags", [])]
    story = [c for c in cells if "test" not in c.metadata.get("tags", [])]
    return [*story, nbf.v4.new_markdown_cell(CHECKS_HEADING), *checks]


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
        md(
            "## One row per run\n\n"
            "`rk.for_people(df)` shows any frame with numbers for people: counts with "
            "thousands separators, other numbers to 3 significant digits. It changes only "
            "what is shown (the frame keeps its values and dtypes) and never pandas' own "
            "display options; a plain `runs` shows pandas' default."
        ),
        code(
            "runs = log.runs_df()\n"
            'rk.for_people(runs[["tenant_id", "run_id", "parent_run_id", "format", "events", '
            '"turns", "model_calls", "tool_calls", "errors"]])'
        ),
        check(
            'assert runs["events"].sum() == len(log)\n'
            'assert (runs["events"] > 0).all()\n'
            'counts = ["events", "turns", "model_calls", "tool_calls", "errors"]\n'
            "assert all(runs[c].dtype == \"int64\" for c in counts)\n"
            "shown = rk.for_people(runs)\n"
            "assert shown.data is runs and f\">{runs['events'].max():,}</td>\" in shown.to_html()"
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
            '    rk.read_toh(tmp, owner="demo", progress=False)\n'
            "except rk.LoadError as err:\n"
            "    error = err\n"
            "    print(err)\n"
            'damaged = rk.read_toh(tmp, owner="demo", errors="quarantine", progress=False)\n'
            'damaged.quarantine_df()[["source", "line", "reason", "message"]]'
        ),
        check(
            "assert error.line == 4\n"
            "assert len(damaged.quarantine) == 1"
        ),
    ]
    nb = nbf.v4.new_notebook()
    nb.cells = checks_last(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def attributable_divergence() -> nbf.NotebookNode:
    md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
    cells = [
        md(
            "# 10 · Attributable divergence: reproducibility stamps\n\n"
            "Re-running an agent against a hosted model is never bit-for-bit reproducible, but "
            "every variable *you* control is written in the log: model and provider, versions, "
            "sampling settings, system prompt, tool definitions, safety policy. replaykit reads "
            "them as **stamps**, so when a replay diverges you can say which controllable "
            "variable changed -- and when cohorts differ, whether the model or the temperature "
            "changed under them."
        ),
        code(FIND_DATA),
        md(
            "## The stamps of one run\n\n"
            "`log.stamps_df()` gives one row per run (one per distinct stamp when a run "
            "switches model mid-way), null where the log does not say, and `sources` naming "
            "the field each value came from. Tables here are shown with `rk.for_people` "
            "(numbers rounded for people, missing values blank); the frames keep their values."
        ),
        code(
            "import json\n"
            "\n"
            'log = rk.read_isplay(DATA / "isplay", owner="acme", progress=False)\n'
            'RUN = "run-claims-C-104"\n'
            'base = log.run(RUN, tenant_id="acme")\n'
            "stamps = base.stamps_df()\n"
            "print(json.dumps(json.loads(stamps.loc[0, \"sources\"]), indent=1))\n"
            'rk.for_people(stamps[["run_id", "from_seq", "to_seq", "model", "provider", '
            '"temperature", "max_tokens", "harness_version", "system_prompt_hash", '
            '"tool_schema_hash"]])'
        ),
        check(SHOWN + "\n"
              "assert len(stamps) == 1 and stamps.loc[0, \"model\"] == \"gpt-4.1-mini\"\n"
              "heads, cells = shown(rk.for_people(stamps))\n"
              'assert "gpt-4.1-mini" in cells and "0.2" in cells and "800" in cells'),
        md(
            "## A stand-in for the hosted model\n\n"
            "The model executor of a `pinned-live` replay gets each model request. This one "
            "answers as recorded when the request asks for the pinned model; the cheaper model "
            "misses the fraud signal at the third call and approves the claim."
        ),
        code(
            "recorded = {json.loads(p)[\"modelCallId\"]: json.loads(p)[\"output\"]\n"
            '            for p in base.filter(types="model.result").table.column("payload").to_pylist()}\n'
            "\n"
            "\n"
            "def provider(request, policy):\n"
            "    call = request[\"modelCallId\"]\n"
            "    if request[\"settings\"][\"model\"] == \"gpt-4.1-mini\" or call in (\"mc-104-1\", \"mc-104-2\"):\n"
            "        return recorded[call]\n"
            "    if call == \"mc-104-3\":\n"
            "        return {\"text\": \"Risk looks acceptable; approving.\",\n"
            "                \"toolCalls\": [{\"toolCallId\": \"tc-104-3n\", \"toolName\": \"approve-claim\",\n"
            "                               \"args\": {\"claimId\": \"C-104\"}}]}\n"
            "    return {\"text\": \"Claim C-104 was approved.\"}\n"
            "\n"
            "\n"
            'pinned = rk.Branch(base=log, run_id=RUN, tenant_id="acme", checkpoint="cp-intake", name="pinned")\n'
            'same = rk.replay(pinned, model_policy="pinned-live", tool_policy="blocked", model_executor=provider)\n'
            "same.status, same.metrics[\"comparability\"]"
        ),
        check('assert same.metrics["first_divergence_step"] == -1 and same.metrics["stamps_changed"] == ""'),
        md(
            "## Switch the model, replay, and ask what changed\n\n"
            "The branch patches `/settings/model` of every model call after the checkpoint. The "
            "replay diverges; `stamps_changed` (a column of `rk.compare`, here through "
            "`res.metrics`) names the controllable variable that differs between base and "
            "replay, and `rk.stamp_diff` shows both values."
        ),
        code(
            'switched = pinned.intervene(kind="json_patch", target_type="model.call", json_pointer="/settings",\n'
            '                            patch={"operations": [{"op": "replace", "path": "/settings/model",\n'
            '                                                   "value": "gpt-4.1-nano"}]},\n'
            '                            description="the cheaper model")\n'
            'res = rk.replay(switched, model_policy="pinned-live", tool_policy="blocked", model_executor=provider)\n'
            "m = res.metrics\n"
            '{k: m[k] for k in ("first_divergence_step", "changed_descendants", "comparability", "stamps_changed")}'
        ),
        check('assert m["stamps_changed"] == "model" and m["first_divergence_step"] > 0'),
        code(
            "diff = rk.stamp_diff(base, res.events)\n"
            'rk.for_people(diff.rename(columns={"a": "base", "b": "replay"}))'
        ),
        check('assert diff.loc[diff["changed"], "field"].tolist() == ["model"]\n'
              'heads, cells = shown(rk.for_people(diff.rename(columns={"a": "base", '
              '"b": "replay"})))\n'
              'assert heads == ["field", "base", "replay", "changed"]\n'
              'assert cells[:4] == ["model", "gpt-4.1-mini", "gpt-4.1-nano", "True"]'),
        md(
            "Each replayed event says where it came from in the `replay_origin` column of "
            "`res.events` itself: the first divergent event is the live answer of the switched "
            "model (`executor`), and the tool call it asked for was `blocked`."
        ),
        code(
            "ev = res.events.events_df()\n"
            'k = m["first_divergence_step"]\n'
            'rk.for_people(ev.loc[k - 2:k + 2, ["seq", "type", "tool_name", "replay_origin", '
            '"text"]])'
        ),
        check('assert ev.loc[k, "replay_origin"] == "executor"\n'
              'heads, cells = shown(rk.for_people(ev.loc[k - 2:k + 2, ["seq", "type", "tool_name", '
              '"replay_origin", "text"]]))\n'
              'assert heads[-2:] == ["replay_origin", "text"] and not RAW & set(cells)\n'
              'assert "Risk looks acceptable; approving." in cells and str(k) in cells'),
        md(
            "## Stamp drift between cohorts\n\n"
            "Between two semesters the agent was moved to another model. Every other "
            "difference between those cohorts is confounded by it, so a cohort report should "
            "say so first: `rk.stamp_drift` gives one headline per drifted stamp (a random mix "
            "of models in both cohorts is not a drift)."
        ),
        code(
            "from replaykit.datasets import generate_cohorts\n"
            "\n"
            'drift = generate_cohorts(runs=300, model=[None, "gpt-5.1"], seed=5)\n'
            "d = rk.stamp_drift(rk.cohorts(drift.log))\n"
            'for line in d["headline"]:\n'
            "    print(line)\n"
            'rk.for_people(d[["field", "from_cohort", "to_cohort", "from_value", "to_value", '
            '"shift"]])'
        ),
        check('assert "model" in set(d["field"])\n'
              'assert rk.stamp_drift(rk.cohorts(generate_cohorts(runs=300, seed=5).log)).empty\n'
              'heads, cells = shown(rk.for_people(d[["field", "from_cohort", "to_cohort", '
              '"from_value", "to_value", "shift"]]))\n'
              'assert heads[-1] == "shift" and cells[5] == "1"  # the whole cohort moved'),
    ]
    nb = nbf.v4.new_notebook()
    nb.cells = checks_last(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


# ------------------------------------------------------------------ 06 (owned by the report work)
def visual_tour() -> nbf.NotebookNode:
    md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
    cells = [
        md(
            "# A visual tour\n\n"
            "Every figure in `replaykit.plots` and every explorer in `replaykit.widgets`, on the "
            "bundled\nsamples in `data/` (plus one generated frame for the cohort trend). Figures "
            "are plotly\n`Figure` objects returned by pure functions: nothing is shown until a "
            "cell ends with one.\nWidgets are thin views over frames that already exist. Needs the "
            '`viz` extra:\n`pip install "replaykit[viz]"`. The vocabulary shared by all figures '
            "is in `docs/visual.md`:\n**step** is an event's 0-based position in its run, "
            "**seq** the event's number in its log."
        ),
        code(
            "from pathlib import Path\n\nimport numpy as np\nimport pandas as pd\n\n"
            "import replaykit as rk\nfrom replaykit import plots, widgets\n\n"
            'DATA = next(p / "data" for p in [Path.cwd(), *Path.cwd().parents] '
            'if (p / "data" / "isplay").is_dir())\n'
            'log = rk.read_isplay(DATA / "isplay", owner="acme")\n'
            'branch = rk.Branch.load(DATA / "isplay" / "branch-drop-fraud-clause.json", '
            'base=log, tenant_id="acme")\n'
            "paused = rk.replay(branch)\n"
            'done = paused.resume(DATA / "isplay" / "fixtures.json")\n'
            'assert (paused.status, done.status) == ("paused", "completed")\n'
            "done"
        ),
        md(
            "## What the replay found\n\n"
            "`result.summary()` states the finding in sentences computed from the result: the "
            "outcome with the key changed values and where they came from, the strength of the "
            "evidence, and the caveats the policies imply. The same sentences open the RCA "
            "report. A paused replay names what it needs to finish."
        ),
        code(
            "summary = done.summary()\n"
            "print(summary.text)\n"
            'assert any("0.81 \\u2192 0.34" in s for s in summary.sentences("outcome"))\n'
            'assert any("not observed" in s for s in summary.sentences("caveat"))\n'
            "summary.to_frame()"
        ),
        code(
            'print("\\n".join(paused.summary().sentences("requirement")))\n'
            'changes = done.changes_df()\n'
            'changes.loc[changes["key"], ["step", "kind", "tool_name", "origin", "label", '
            '"before", "after"]]'
        ),
        md(
            "## Rich displays\n\n"
            "A replay result, a state frame and a determinism verdict each show a compact, "
            "escaped summary\n(above: the resumed replay, with its comparability and "
            "fixture-sensitivity badges)."
        ),
        code('states = rk.fold(log, rk.agent())\nassert "StateFrame" in states._repr_html_()\n'
             "states"),
        code('verdict = rk.check_determinism(log, "run-claims-C-104", tenant_id="acme")\n'
             "assert verdict.deterministic\nverdict"),
        md(
            "## Where the replay diverged\n\n"
            "Base and replay as two lanes over the step axis; the dashed line is the first "
            "divergence (step 3: the patched\nprompt). Orange diamonds are patched events, the red "
            "star is the tool result a fixture served;\nan outline marks a replayed event that "
            "differs from the base (its own legend entry)."
        ),
        code(
            "fig = plots.divergence_timeline(done)\n"
            'assert fig.layout.shapes[0].x0 == done.metrics["first_divergence_step"] == 3\n'
            'assert list(next(t for t in fig.data if t.name == "replay: fixture").x) == [10]\n'
            "fig"
        ),
        md(
            "## Tool sequences and their distances\n\n"
            "One lane per run; C-231 approves where C-104 escalates. The heatmap is the matrix "
            "of\n`rk.tool_distance_matrix` (here 2 x 2 on the sample; clustered when larger)."
        ),
        code(
            "fig = plots.tool_sequences(log)\n"
            'assert sorted(t.name for t in fig.data) == ["approve-claim", "claim-lookup", '
            '"escalate-to-siu", "risk-signals"]\n'
            "fig"
        ),
        code(
            "mat = rk.tool_distance_matrix(log)\n"
            "fig = plots.tool_distance_heatmap(mat)\n"
            "assert np.asarray(fig.data[0].z).max() == mat.to_numpy().max() == 2\n"
            "fig"
        ),
        md(
            "## Fixture dependence\n\n"
            "The paused replay used no fixture; the resumed one depends on one analyst fixture, "
            "so it is\nmarked sensitive to fixtures."
        ),
        code(
            "fig = plots.fixture_dependence([paused, done])\n"
            'assert list(next(t for t in fig.data if t.name == "analyst").y) == [0, 1]\n'
            'assert len(next(t for t in fig.data if t.name == "sensitive to fixture").x) == 1\n'
            "fig"
        ),
        md(
            "## Metric distributions\n\n"
            "`rk.compare` gives one row per run pair. Here: the replay compared with its base, "
            "plus each\nbase run compared with itself (an exact replay), to have two cohorts."
        ),
        code(
            "cmp = pd.concat([\n"
            "    rk.compare(log, done.events),\n"
            '    rk.compare(log, log, pd.DataFrame({"tenant_id": "acme", '
            '"base_run_id": log.run_ids,\n'
            '                                       "replay_run_id": log.run_ids})),\n'
            "], ignore_index=True)\n"
            'fig = plots.metric_distribution(cmp, "changed_descendants", by="comparability")\n'
            'assert [t.name for t in fig.data if t.type == "box"] == '
            '["diverged_but_comparable", "exact"]\n'
            "assert fig.data[0].median[0] == 2 and fig.data[1].median[0] == 0\n"
            "fig"
        ),
        md(
            "## State over time\n\n"
            "The state of one pleach chat after every event: counters climb, open tool calls "
            "open and\nclose, `last_tool` jumps between tools."
        ),
        code(
            'plog = rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl")\n'
            "pstates = rk.fold(plog, rk.agent())\n"
            "first = pstates.final().iloc[0]\n"
            'fig = plots.state_timeline(pstates, first["run_id"], ["tool_calls", '
            '"open_tool_calls_size", "last_tool", "input_tokens"],\n'
            '                           tenant_id=first["tenant_id"])\n'
            'assert fig.data[0].y[-1] == first["tool_calls"]\n'
            "fig"
        ),
        md(
            "## A metric across periods\n\n"
            "`cohort_trend` takes any frame with a period column and a metric column. Here a "
            "generated\nframe: weekly tool-sequence distances of two models, with 95 % "
            "normal-approximation bands."
        ),
        code(
            "rng = np.random.default_rng(7)\n"
            'weeks = np.repeat(pd.date_range("2026-01-05", periods=8, freq="W-MON"), 60)\n'
            'trend = pd.DataFrame({"week": weeks, "model": np.tile(["model-a", "model-b"], '
            "len(weeks) // 2),\n"
            '                      "tool_sequence_distance": rng.poisson(2.0, len(weeks))\n'
            "                      + np.tile([0, 1], len(weeks) // 2)})\n"
            'fig = plots.cohort_trend(trend, "tool_sequence_distance", period="week", '
            'by="model")\n'
            "means = [t for t in fig.data if t.showlegend is not False]\n"
            'assert [t.name for t in means] == ["model-a", "model-b"]\n'
            "assert np.mean(means[1].y) > np.mean(means[0].y)\n"
            "fig"
        ),
        md(
            "## Explorers\n\n"
            "`Scrubber` walks one run step by step: the event, what changed, the full state. It "
            "reads the\nstate frame built once; moving the slider never re-folds."
        ),
        code(
            'scrub = widgets.Scrubber(plog, first["run_id"], tenant_id=first["tenant_id"], '
            "states=pstates)\n"
            "scrub.slider.value = 5\n"
            'assert scrub.state == pstates.at(first["run_id"], scrub.seq, '
            'tenant_id=first["tenant_id"])\n'
            "scrub"
        ),
        md(
            "`Scrubber.for_replay` puts the base run (the recording) beside the replay at the "
            "same step; fields of the replay's state that differ from the base are marked. "
            "Drag the slider or focus it and use the arrow keys."
        ),
        code(
            "replay_scrub = widgets.Scrubber.for_replay(done)\n"
            "replay_scrub.slider.value = 10\n"
            'assert replay_scrub.event["seq"] == replay_scrub.base_event["seq"] == 10\n'
            "replay_scrub"
        ),
        md(
            "`DiffExplorer` aligns base and replay events; each changed row shows its values "
            "(path, before, after), the changed lines of both events are highlighted, and the "
            "*previous / next change* buttons step from change to change."
        ),
        code(
            "diff = widgets.DiffExplorer(done)\n"
            "assert diff.jump_to_first_divergence() == 3\n"
            "diff"
        ),
        md(
            "`Transcript` shows the run as a reviewer reads it (messages, tool calls with "
            "arguments and results, collapsible payloads) and its run tree (base and replayed "
            "run, calls with durations and a waterfall from the log's timestamps)."
        ),
        code(
            "transcript = widgets.Transcript(done)\n"
            'assert "risk-signals" in transcript.transcript_view.value\n'
            "transcript"
        ),
        code(
            'explorer = widgets.CohortExplorer(cmp, log=log, metric="changed_descendants", '
            'cohort="comparability")\n'
            'explorer.value.value = "diverged_but_comparable"\n'
            'assert explorer.run.value == "run-claims-C-104"\n'
            "explorer.open_run()\n"
            'assert explorer.scrubber.run_id == "run-claims-C-104"\n'
            "explorer"
        ),
    ]
    nb = nbf.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


# ------------------------------------------------------------------ 11 (coding agents and OTel)
OTLP_CELL = """import json

# An OTLP/JSON trace export as an OpenTelemetry SDK writes it: two runs of a weather agent
# (invoke_agent -> chat -> execute_tool -> chat, GenAI semantic conventions), which got
# different tool results.
T0 = 1767225600000000000  # 2026-01-01T00:00:00Z in ns


def attr(key, value):
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}}}
    return {"key": key, "value": {"stringValue": value}}


def span(trace_id, span_id, parent, name, start_ms, dur_ms, **attrs):
    s = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": 1,
         "startTimeUnixNano": str(T0 + start_ms * 10**6),
         "endTimeUnixNano": str(T0 + (start_ms + dur_ms) * 10**6),
         "attributes": [attr(k, v) for k, v in attrs.items()], "status": {"code": 1}}
    if parent:
        s["parentSpanId"] = parent
    return s


def chat(trace_id, span_id, parent, start_ms, text, tool_call=None):
    parts = [{"type": "text", "content": text}]
    if tool_call:
        parts.append({"type": "tool_call", "id": tool_call[0], "name": tool_call[1],
                      "arguments": tool_call[2]})
    return span(trace_id, span_id, parent, "chat gpt-4.1-mini", start_ms, 400, **{
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4.1-mini", "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.response.finish_reasons": ["tool_calls" if tool_call else "stop"],
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])})


def weather_trace(trace_id, result, answer):
    root = "1" * 16
    return [
        span(trace_id, root, None, "invoke_agent weather", 0, 2000,
             **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}),
        chat(trace_id, "2" * 16, root, 10, "", ("call-1", "get_weather", {"city": "Prague"})),
        span(trace_id, "3" * 16, root, "execute_tool get_weather", 420, 150, **{
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call-1",
            "gen_ai.tool.call.arguments": json.dumps({"city": "Prague"}),
            "gen_ai.tool.call.result": result}),
        chat(trace_id, "4" * 16, root, 600, answer),
    ]


spans = (weather_trace("a" * 32, "rain, 11 C", "Take an umbrella: rain and 11 C in Prague.")
         + weather_trace("b" * 32, "sunny, 19 C", "No umbrella needed: sunny, 19 C in Prague."))
otlp = {"resourceSpans": [{"resource": {"attributes": [attr("service.name", "weather-agent"),
                                                       attr("service.version", "1.4.0")]},
                           "scopeSpans": [{"scope": {"name": "demo"}, "spans": spans}]}]}
(OUT / "weather-traces.json").write_text(json.dumps(otlp))
otel = rk.read_otel(OUT / "weather-traces.json", owner="demo")
otel"""


def coding_agent_and_otel() -> nbf.NotebookNode:
    md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
    cells = [
        md(
            "# 11 · Coding-agent transcripts and OpenTelemetry traces\n\n"
            "Most agent logs people already have are a coding agent's session files or the "
            "traces their instrumentation exports. This notebook takes a **Claude Code** "
            "project transcript and an **OpenTelemetry** GenAI trace through the same four "
            "steps as every other format: load, fold, compare, and a root-cause-analysis "
            "report. (Codex CLI rollouts, LangSmith, Langfuse and Phoenix exports load the "
            "same way: `rk.read_codex`, `rk.read_langsmith`, `rk.read_langfuse`, "
            "`rk.read_phoenix`, or `rk.read_events` for any of them.)"
        ),
        code(FIND_DATA),
        md(
            "## Load a Claude Code project\n\n"
            "`~/.claude/projects/<project>/` holds one JSONL file per session, and each Task "
            "subagent's sidechain under `<session>/subagents/`. A folder loads as one log: "
            "one run per session, one per sidechain (its `parent_run_id` is the session). "
            "The files record no owner, so you name it."
        ),
        code(
            "import tempfile\n"
            "\n"
            'OUT = Path(tempfile.mkdtemp(prefix="rk-agents-"))  # where this notebook writes\n'
            'log = rk.read_claude_code(DATA / "claude_code", owner="demo", progress=False)\n'
            'SID = "7f3c2a10-5b8e-4d21-9c4e-2f6a8b1d0e55"\n'
            'log.runs_df()[["run_id", "parent_run_id", "events", "turns", "model_calls", '
            '"tool_calls", "errors"]]'
        ),
        check(
            "runs = log.runs_df().set_index(\"run_id\")\n"
            "assert runs.loc[f\"{SID}/agent-a3f09c1\", \"parent_run_id\"] == SID\n"
            "assert runs.loc[SID, \"tool_calls\"] == 5"
        ),
        md(
            "Each assistant message is one model call (its usage counted once, though Claude "
            "Code writes a line per content block); each `tool_use` block is a tool call "
            "paired with its `tool_result`; each prompt you typed starts a turn."
        ),
        code(
            "base = log.run(SID, tenant_id=\"demo\")\n"
            "tools = base.tools_df()\n"
            'tools[["turn", "step", "tool_name", "is_error", "result_text"]]'
        ),
        check(
            'assert tools.tool_name.tolist() == ["Bash", "Read", "Edit", "Bash", "Task"]\n'
            'assert tools.is_error.tolist() == [True, False, False, False, False]  # the failing test run'
        ),
        code('base.calls_df()[["turn", "step", "ref_id", "input_tokens", "output_tokens", "finish", '
             '"tool_calls"]]'),
        check('assert base.calls_df().finish.tolist()[-1] == "stop"'),
        md("The stamps say which model and Claude Code version ran each session."),
        code('log.stamps_df()[["run_id", "model", "harness_version", "safety_policy"]]'),
        check(
            'st = log.stamps_df().set_index("run_id")\n'
            'assert st.loc[SID, "model"] == "claude-sonnet-4-5-20250929"\n'
            'assert st.loc[SID, "harness_version"] == "claude-code@2.0.31"'
        ),
        md(
            "## Fold\n\n"
            "The `agent()` projection folds any format's canonical rows into the agent's "
            "state after every event: model calls, tool calls, the last tool, errors."
        ),
        code(
            "final = rk.fold(log, projections=rk.agent()).final()\n"
            'final[["run_id", "turn", "model_calls", "tool_calls", "last_tool", "errors"]]'
        ),
        check(
            'f = final.set_index("run_id")\n'
            'assert f.loc[SID, "errors"] == 1 and f.loc[SID, "last_tool"] == "Task"\n'
            'assert f.loc[f"{SID}/agent-a3f09c1", "last_tool"] == "Grep"'
        ),
        md(
            "## Branch, replay and compare\n\n"
            "What if another model had answered after reading `pricing.py`? The branch starts "
            "after the `Read` result; a stand-in for the other model answers every call as "
            "recorded except that one, where it explains the bug instead of editing. "
            "(`pinned-live` sends each model call to the executor; tool calls are served "
            "from the recording.)"
        ),
        code(
            "import json\n"
            "\n"
            "calls, tools = base.calls_df(), base.tools_df()\n"
            "recorded = {\n"
            "    c.ref_id: {\"text\": c.text or \"\", \"toolCalls\": [\n"
            "        {\"toolCallId\": t.call_id, \"toolName\": t.tool_name, \"args\": json.loads(t.arguments)}\n"
            "        for t in tools[(tools.turn == c.turn) & (tools.step == c.step)].itertuples()]}\n"
            "    for c in calls.itertuples()}\n"
            "\n"
            "\n"
            "def other_model(request, policy):\n"
            "    if request[\"refId\"] == \"msg_01C\":  # the call after the Read\n"
            "        return {\"text\": \"apply_discount rounds in float; use Decimal with half-up \"\n"
            "                        \"rounding. Shall I edit it?\", \"toolCalls\": []}\n"
            "    return recorded[request[\"refId\"]]\n"
            "\n"
            "\n"
            "read = tools[tools.tool_name == \"Read\"].iloc[0]\n"
            "branch = rk.Branch(base=log, run_id=SID, tenant_id=\"demo\", checkpoint=int(read.result_seq),\n"
            "                   name=\"another model after the Read\")\n"
            "res = rk.replay(branch, model_policy=\"pinned-live\", tool_policy=\"recorded-only\",\n"
            "                model_executor=other_model)\n"
            "cmp = rk.compare(log, res.events)\n"
            'rk.for_people(cmp[["first_divergence_step", "changed_descendants", '
            '"tool_sequence_distance", "comparability"]])'
        ),
        check(
            'ev = res.events.events_df()\n'
            'assert k == int(read.result_seq) + 1 and ev.loc[k, "replay_origin"] == "executor"\n'
            'assert cmp.loc[0, "changed_descendants"] > 0'
        ),
        md(
            "The replayed events say where each came from: copied before the checkpoint, "
            "the executor's answer at the divergence, recorded tool results after it."
        ),
        code('k = int(cmp.loc[0, "first_divergence_step"])\n'
             'res.events.events_df().loc[k - 1:k + 2, ["seq", "kind", "tool_name", "replay_origin", "text"]]'),
        check('assert set(res.events.events_df().replay_origin) >= {"copied", "executor"}'),
        md(
            "## The RCA report\n\n"
            "`rk.report.rca` writes one offline HTML page: the question, the first "
            "divergence with the events around it, the tool-sequence diff, the stamps and a "
            "step scrubber."
        ),
        code(
            "report = rk.report.rca(res, question=\"Would another model still edit pricing.py \"\n"
            "                                     \"after reading it?\")\n"
            'report.save_html(OUT / "rca-claude-code.html")\n'
            "report"
        ),
        check(
            'html = (OUT / "rca-claude-code.html").read_text()\n'
            'assert "Would another model still edit pricing.py" in html\n'
            'assert f"first diverges from the recording at step {k}" in html\n'
            'assert "Edit was called with" in html  # the edit the other model did not ask for'
        ),
        md(
            "## The same steps on an OpenTelemetry trace\n\n"
            "An OTLP/JSON export (here written by the cell below: two runs of a weather "
            "agent in the GenAI conventions) loads with `rk.read_otel`; each trace is a run."
        ),
        code(OTLP_CELL),
        check(
            "tools = otel.tools_df()\n"
            "assert otel.num_runs == 2\n"
            'assert tools[tools.has_result].result_text.tolist() == ["rain, 11 C", "sunny, 19 C"]'
        ),
        code(
            "otel_final = rk.fold(otel, projections=rk.agent()).final()\n"
            'otel_final[["run_id", "model_calls", "tool_calls", "last_tool", "input_tokens"]]'
        ),
        check('assert otel_final.model_calls.tolist() == [2, 2] and otel_final.last_tool.tolist() == ["get_weather"] * 2'),
        md(
            "Two recorded runs compare directly: the pair's first divergence is the tool "
            "result (rain vs. sun), and the answers after it changed with it."
        ),
        code(
            "import pandas as pd\n"
            "\n"
            "rain, sun = otel.run_ids\n"
            'pairs = pd.DataFrame({"tenant_id": ["demo"], "base_run_id": [rain], "replay_run_id": [sun]})\n'
            "runs_cmp = rk.compare(otel, otel, pairs)\n"
            'rk.for_people(runs_cmp[["first_divergence_step", "changed_descendants", '
            '"tool_signature_distance", "comparability"]])'
        ),
        check(
            'ev = otel.run(rain, tenant_id="demo").events_df()\n'
            'step = int(runs_cmp.loc[0, "first_divergence_step"])\n'
            'assert ev.loc[step, "kind"] == "tool_result" and runs_cmp.loc[0, "tool_signature_distance"] == 0\n'
            'assert f">{step:,}</td>" in rk.for_people(runs_cmp).to_html()'
        ),
        md(
            "And a replay of the rainy run in which the final answer comes from a stand-in "
            "model gives an RCA report for the trace, as for the transcript."
        ),
        code(
            "def stand_in(request, policy):\n"
            "    return {\"text\": \"No umbrella needed.\", \"toolCalls\": []}\n"
            "\n"
            "\n"
            'tool_result = otel.run(rain, tenant_id="demo").tools_df().result_seq.iloc[0]\n'
            'b = rk.Branch(base=otel, run_id=rain, tenant_id="demo", checkpoint=int(tool_result), name="stand-in answer")\n'
            'otel_res = rk.replay(b, model_policy="pinned-live", tool_policy="recorded-only", model_executor=stand_in)\n'
            'rk.report.rca(otel_res, question="Does the answer follow the weather the tool returned?"'
            ').save_html(OUT / "rca-otel.html")\n'
            '{k: otel_res.metrics[k] for k in ("first_divergence_step", "comparability")}'
        ),
        check(
            'assert otel_res.metrics["first_divergence_step"] == int(tool_result) + 1\n'
            'assert "Does the answer follow the weather" in (OUT / "rca-otel.html").read_text()'
        ),
    ]
    nb = nbf.v4.new_notebook()
    nb.cells = checks_last(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


FIND_TESTS_DATA = '''from pathlib import Path
import tempfile

import replaykit as rk

# The real sample files other projects publish live in tests/data/ at the repository root.
ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "tests" / "data" / "claude_code").is_dir())
SAMPLES = ROOT / "tests" / "data"
OUT = Path(tempfile.mkdtemp(prefix="rk-recorded-"))  # where this notebook writes
SAMPLES'''


def recorded_runs() -> nbf.NotebookNode:
    md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
    cells = [
        md(
            "# 12 · Compare the runs you recorded\n\n"
            "The runs people have are recordings: two coding-agent sessions of one task, two "
            "traces of an agent. `rk.compare_runs` compares two recorded runs directly (or two "
            "sets, paired by prompt, task or a column you name) and returns what a replay "
            "returns: the first divergence, the tool-sequence distance, the changed values, the "
            "findings with an answer line, and the same report and explorers.\n\n"
            "**What it can and cannot show.** Nothing is intervened on and nothing is re-run, "
            "so a difference between two recordings is an *association*, not a cause. The "
            "findings, the answer line and the report say so; to test a cause, branch a run "
            "and replay it (notebooks 03 and 10)."
        ),
        code(FIND_TESTS_DATA),
        md(
            "## Two real Claude Code sessions\n\n"
            "`tests/data/claude_code/spotter/` holds real Claude Code sessions that the "
            "author of [marot/spotter](https://github.com/marot/spotter) (MIT) published as "
            "test fixtures. Two of them are the same errand in the same project, asked two "
            "ways: *\"mix phx.server doesnt seem to start\"* and *\"start phoenix in "
            "background\"* (get the project's Phoenix server running). They are not the same "
            "prompt: no public MIT/Apache repository we found ships two sessions of one "
            "identical prompt, so this pair of closely related tasks stands in, and part of "
            "what differs below is the wording of the task itself."
        ),
        code(
            'CC = SAMPLES / "claude_code" / "spotter"\n'
            'sessions = rk.read_events([CC / "short.jsonl", CC / "tool_heavy.jsonl"], owner="demo", progress=False)\n'
            "A, B = sessions.run_ids  # short.jsonl, tool_heavy.jsonl\n"
            'sessions.runs_df()[["run_id", "events", "model_calls", "tool_calls"]]'
        ),
        check(
            "import json\n"
            "\n"
            "\n"
            "def tool_uses(path):\n"
            '    """tool_use names of a transcript, read with json.loads (not replaykit)."""\n'
            "    out = []\n"
            "    for line in path.read_text().splitlines():\n"
            "        d = json.loads(line)\n"
            '        if d.get("type") == "assistant":\n'
            '            out += [b["name"] for b in d["message"]["content"] if b.get("type") == "tool_use"]\n'
            "    return out\n"
            "\n"
            "\n"
            'A_TOOLS, B_TOOLS = tool_uses(CC / "short.jsonl"), tool_uses(CC / "tool_heavy.jsonl")\n'
            "assert (len(A_TOOLS), len(B_TOOLS)) == (2, 6)\n"
            'runs = sessions.runs_df().set_index("run_id")\n'
            'assert runs.loc[A, "tool_calls"] == len(A_TOOLS) and runs.loc[B, "tool_calls"] == len(B_TOOLS)'
        ),
        md(
            "`rk.compare_runs(log, runs=(A, B))` aligns run B with run A event by event. "
            "`first_divergence` (a position in both runs) and `tool_sequence_distance` (edits "
            "between the two tool-name sequences) are numbers; `comparability` says how far "
            "apart the runs are (rules in docs/metrics.md)."
        ),
        code(
            "cmp = rk.compare_runs(sessions, runs=(A, B))\n"
            "cmp.first_divergence, cmp.tool_sequence_distance, cmp.comparability"
        ),
        check(
            "def lev(a, b):\n"
            '    """Edit distance, written here as the reference."""\n'
            "    prev = list(range(len(b) + 1))\n"
            "    for i, x in enumerate(a, 1):\n"
            "        cur = [i]\n"
            "        for j, y in enumerate(b, 1):\n"
            "            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))\n"
            "        prev = cur\n"
            "    return prev[-1]\n"
            "\n"
            "\n"
            "assert cmp.tool_sequence_distance == lev(A_TOOLS, B_TOOLS) == 4\n"
            "k = cmp.first_divergence\n"
            'assert cmp.base.events_df().loc[k, "kind"] == cmp.events.events_df().loc[k, "kind"] == "user_message"'
        ),
        md(
            "The answer line leads with what the agents did: where the runs part, the tool "
            "calls of each, how each ends, and that this is an association."
        ),
        code("summary = cmp.summary()\nprint(summary.answer)"),
        check(
            'assert summary.answer.startswith(f"Different: the runs part at step {k}")\n'
            'assert "tool calls run A 2" in summary.answer and "run B 6" in summary.answer\n'
            'assert "associations, not causes" in summary.answer\n'
            'assert any("Nothing was intervened on" in s for s in summary.sentences("caveat"))'
        ),
        code('summary.to_frame()[["kind", "sentence"]]'),
        check(
            'kinds = summary.to_frame()["kind"].tolist()\n'
            'assert kinds[0] == "answer" and "caveat" in kinds\n'
            'assert any(s.startswith("Tool activity: run A made 2 tool call(s)") for s in summary.sentences("outcome"))'
        ),
        md(
            "`tools_df()` puts the two runs' tool calls side by side, aligned by tool and "
            "arguments; `changes_df()` has every changed value (the JSON path, run A's value, "
            "run B's value)."
        ),
        code("cmp.tools_df()"),
        check(
            "tdf = cmp.tools_df()\n"
            "assert sorted(tdf.base_tool.dropna()) == sorted(A_TOOLS)\n"
            "assert sorted(tdf.replay_tool.dropna()) == sorted(B_TOOLS)"
        ),
        code(
            "changes = cmp.changes_df()\n"
            'changes[changes.key & (changes.kind == "tool_call")][["step", "tool_name", "status", "label", "before", "after"]].head(8)'
        ),
        check(
            'assert set(changes[changes.kind == "tool_call"].tool_name) <= set(A_TOOLS) | set(B_TOOLS)\n'
            'assert len(changes) > 0 and set(changes.status) <= {"changed", "added", "removed"}'
        ),
        md(
            "`rk.compare`, the bulk metric frame, pairs one recorded run on each side the same "
            "way; given several runs and no pairs, it warns with the call to make "
            "(`rk.compare_runs(a, b, by=\"prompt\")` or `pairs=`) instead of returning an "
            "empty frame."
        ),
        code(
            "bulk = rk.compare(sessions.filter(run_ids=[A]), sessions.filter(run_ids=[B]))\n"
            'rk.for_people(bulk[["base_run_id", "replay_run_id", "first_divergence_step", '
            '"tool_sequence_distance", "comparability"]])'
        ),
        check('assert bulk.loc[0, "first_divergence_step"] == k and bulk.loc[0, "tool_sequence_distance"] == 4'),
        md(
            "## Two real framework traces\n\n"
            "`tests/data/langfuse/framework-traces/` holds traces that framework "
            "instrumentations sent to Langfuse, published by "
            "[langfuse/langfuse](https://github.com/langfuse/langfuse) (MIT): an OpenAI "
            "Agents SDK weather agent and a Pydantic AI joke agent. They are different agents, "
            "so the comparison shows how far apart two recorded runs are, not variants of one "
            "task."
        ),
        code(
            'LF = SAMPLES / "langfuse" / "framework-traces"\n'
            'weather = rk.read_events(LF / "openai-agents-2025-09-30.json", owner="demo", progress=False)\n'
            'jokes = rk.read_events(LF / "pydantic-ai-tools-2025-12-04.json", owner="demo", progress=False)\n'
            "traces = rk.compare_runs(weather, jokes)  # the one run of each log\n"
            "print(traces.summary().answer)"
        ),
        check(
            'assert traces.metrics["base_tool_calls"] == 1 and traces.metrics["replay_tool_calls"] == 4\n'
            'assert traces.tool_sequence_distance == 4 and traces.comparability == "non_comparable"\n'
            'for tool in ("get_weather", "get_pun_suggestion", "final_result"):\n'
            "    assert tool in traces.summary().answer"
        ),
        md("A trace compared with itself has no divergence: the comparison sees only what differs."),
        code("same = rk.compare_runs(jokes, jokes)\n"
             "same.first_divergence, same.tool_sequence_distance, same.summary().verdict"),
        check('assert (same.first_divergence, same.tool_sequence_distance, same.summary().verdict) '
              '== (-1, 0, "identical")'),
        md(
            "## The run-vs-run report\n\n"
            "`rk.report.rca` takes the comparison as it takes a replay: one offline HTML page "
            "that opens with the answer line and the findings, then the runs compared, the "
            "first divergence, the changed values, the tool-sequence diff, run B's "
            "transcript, the figures and a step scrubber with both runs. From the shell: "
            "`replaykit diff LOG... --runs A B -o report.html`."
        ),
        code(
            "report = rk.report.rca(cmp)\n"
            'report.save_html(OUT / "runs-claude-code.html")\n'
            "report"
        ),
        check(
            'page = (OUT / "runs-claude-code.html").read_text()\n'
            'assert "Runs compared" in page and "Open requirements" not in page\n'
            'assert "associations, not causes" in page\n'
            'assert "Tool activity: run A made 2 tool call(s)" in page\n'
            'assert report.sections[:2] == ["question", "findings"]  # the question, then the answer'
        ),
        md(
            "## The explorers\n\n"
            "`DiffExplorer` and `Scrubber.for_replay` take the comparison too: run A and run "
            "B side by side, aligned as in `diff_df()`."
        ),
        code(
            "explorer = rk.widgets.DiffExplorer(cmp)\n"
            "explorer.jump_to_first_divergence()\n"
            "explorer"
        ),
        check(
            'assert explorer.labels == ("run A", "run B")\n'
            'assert explorer.jump_to_first_divergence() == int((cmp.diff_df().status != "same").to_numpy().argmax())'
        ),
        code(
            "scrub = rk.widgets.Scrubber.for_replay(cmp)\n"
            "scrub.slider.value = cmp.first_divergence\n"
            "scrub"
        ),
        check(
            'assert scrub.event["kind"] == "user_message" and scrub.base_event["kind"] == "user_message"\n'
            "assert len(scrub) == len(cmp.events)"
        ),
    ]
    nb = nbf.v4.new_notebook()
    nb.cells = checks_last(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


if __name__ == "__main__":
    out = ROOT / "notebooks" / "01_quickstart.ipynb"
    nbf.write(quickstart(), out)
    print(f"wrote {out}")
    out = ROOT / "notebooks" / "10_attributable_divergence.ipynb"
    nbf.write(attributable_divergence(), out)
    print(f"wrote {out}")
    out = ROOT / "notebooks" / "11_coding_agent_and_otel.ipynb"
    nbf.write(coding_agent_and_otel(), out)
    print(f"wrote {out}")
    out = ROOT / "notebooks" / "06_visual_tour.ipynb"
    nbf.write(visual_tour(), out)
    print(f"wrote {out}")
    out = ROOT / "notebooks" / "12_recorded_runs.ipynb"
    nbf.write(recorded_runs(), out)
    print(f"wrote {out}")
