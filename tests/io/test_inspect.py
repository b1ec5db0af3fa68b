"""Inspect AI eval logs: real logs from small offline tasks (mock model + a tool).

The logs are produced here by Inspect itself (``mockllm/model`` with scripted outputs, no
network) and checked against Inspect's own readers and dataframes (``read_eval_log``,
``inspect_ai.analysis.events_df`` / ``messages_df`` / ``samples_df``).
Without inspect_ai these tests skip locally and fail under CI=true.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import replaykit as rk
from replaykit._base.json import args_hash
from replaykit.errors import LoadError, MissingExtraError
from replaykit.fold._frozen import thaw
from replaykit.fold.inspect import inspect_state
from replaykit.io import detect_format, read_events
from replaykit.io.inspect import read_inspect, sniff

if importlib.util.find_spec("inspect_ai") is None:  # pragma: no cover - the environment
    if os.environ.get("CI") == "true":
        raise ImportError("inspect_ai is not installed (extra: inspect), and CI=true")
    pytest.skip("inspect_ai is not installed (extra: inspect)", allow_module_level=True)


# Inspect's own readers, imported by the first test that calls them rather than when the
# module is collected: inspect_ai takes about 2 s of CPU to import, which every pytest-xdist
# worker would pay to collect this module, whichever worker then runs it.
def read_eval_log(*args: Any, **kwargs: Any) -> Any:
    from inspect_ai.log import read_eval_log as read

    return read(*args, **kwargs)


class _Analysis:
    """``inspect_ai.analysis``, imported on first use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # pytest's collection looks for __test__ and the like
            raise AttributeError(name)
        from inspect_ai import analysis as module

        return getattr(module, name)


analysis = _Analysis()


def _run_task(log_dir: Path, fmt: str) -> Path:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import ToolError, tool
    from inspect_ai.util import store

    @tool
    def add():  # type: ignore[no-untyped-def]
        async def execute(x: int, y: int) -> str:
            """Add two numbers and keep a running total in the store.

            Args:
                x: first number
                y: second number
            """
            if y < 0:
                raise ToolError("y must not be negative")
            store().set("total", store().get("total", 0) + x + y)
            return str(x + y)

        return execute

    def out(o: ModelOutput, i: int, k: int) -> ModelOutput:
        o.usage = ModelUsage(input_tokens=i, output_tokens=k, total_tokens=i + k)
        return o

    m = "mockllm/model"
    outputs = [
        # sample s1: two good tool calls, then the answer
        out(ModelOutput.for_tool_call(m, "add", {"x": 1, "y": 2}, tool_call_id="c1"), 10, 3),
        out(ModelOutput.for_tool_call(m, "add", {"x": 3, "y": 4}, tool_call_id="c2"), 20, 4),
        out(ModelOutput.from_content(m, "The answer is 10"), 30, 5),
        # sample s2: a failing tool call, then a wrong answer
        out(ModelOutput.for_tool_call(m, "add", {"x": 1, "y": -1}, tool_call_id="c3"), 11, 3),
        out(ModelOutput.from_content(m, "I could not add them: 7"), 21, 6),
    ]
    task = Task(
        dataset=[Sample(input="What is 1+2+3+4?", target="10", id="s1"),
                 Sample(input="What is 1-1?", target="0", id="s2")],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
    )
    logs = eval(task, model=get_model(m, custom_outputs=outputs), log_dir=str(log_dir),
                log_format=fmt, display="none", max_samples=1)
    assert logs[0].status == "success", logs[0].error
    return Path(logs[0].location)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inspect_logs")
    return {fmt: _run_task(d, fmt) for fmt in ("eval", "json")}


def _run_ids(path: Path) -> dict[str, str]:
    """Inspect sample uuid -> replaykit run id."""
    el = read_eval_log(str(path))
    return {s.uuid: f"{el.eval.eval_id}:{s.id}:{s.epoch}" for s in el.samples}


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_sniff_and_detect(logs: dict[str, Path], fmt: str) -> None:
    assert sniff(logs[fmt]) is None
    assert detect_format(logs[fmt]) == "inspect"


def test_sniff_rejects_other_files(tmp_path: Path) -> None:
    other = tmp_path / "x.json"
    other.write_text('{"resourceSpans": []}')
    assert "Inspect log header" in sniff(other)
    bad = tmp_path / "x.eval"
    bad.write_bytes(b"not a zip")
    assert "zip" in sniff(bad)


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_event_counts_match_inspect_events_df(logs: dict[str, Path], fmt: str) -> None:
    path = logs[fmt]
    log = read_inspect(path, owner="acme")
    ev = analysis.events_df(str(path))
    ids = _run_ids(path)
    t = log.table
    for uuid, run_id in ids.items():
        mine = t.filter(pc.equal(pc.cast(t.column("run_id"), "string"), run_id))
        inspect_rows = ev[ev.sample_id == uuid]
        # every Inspect event is one row, plus the split-off tool results and input messages
        types = pc.cast(mine.column("type"), "string").to_pylist()
        kinds = pc.cast(mine.column("kind"), "string").to_pylist()
        split = sum(k == "tool_result" for k in kinds) + types.count("message")
        assert mine.num_rows - split == len(inspect_rows)
        for name, count in inspect_rows.event.value_counts().items():
            same = [x == name and k != "tool_result" for x, k in zip(types, kinds, strict=True)]
            assert sum(same) == count, name
        assert kinds.count("tool_call") == (inspect_rows.event == "tool").sum()
        assert kinds.count("tool_result") == kinds.count("tool_call")
        assert kinds.count("model_response") == (inspect_rows.event == "model").sum()
    assert log.quarantine.num_rows == 0


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_tool_calls_match_inspect_messages_df(logs: dict[str, Path], fmt: str) -> None:
    path = logs[fmt]
    log = read_inspect(path, owner="acme")
    msgs = analysis.messages_df(str(path))
    ids = _run_ids(path)
    tools = log.tools_df()
    for uuid, run_id in ids.items():
        tool_msgs = msgs[(msgs.sample_id == uuid) & (msgs.role == "tool")].sort_values("order")
        mine = tools[tools.run_id == run_id].sort_values("call_seq")
        assert mine.call_id.tolist() == tool_msgs.tool_call_id.tolist()
        assert mine.tool_name.tolist() == tool_msgs.tool_call_function.tolist()
        assert mine.is_error.tolist() == tool_msgs.tool_call_error.notna().tolist()
        assert bool(mine.has_result.all())
    s1 = tools[tools.run_id.str.endswith(":s1:1")]
    assert s1.result_text.tolist() == ["3", "7"]
    assert [json.loads(a) for a in s1.arguments] == [{"x": 1, "y": 2}, {"x": 3, "y": 4}]
    assert s1.args_hash.tolist() == [args_hash({"x": 1, "y": 2}),
                                     args_hash({"x": 3, "y": 4})]
    s2 = tools[tools.run_id.str.endswith(":s2:1")]
    assert s2.is_error.tolist() == [True]


def test_model_rows_and_runs_attrs(logs: dict[str, Path]) -> None:
    path = logs["eval"]
    log = read_inspect(path, owner="acme")
    t = log.table
    model = t.filter(pc.equal(pc.cast(t.column("kind"), "string"), "model_response"))
    assert pc.cast(model.column("finish"), "string").to_pylist() == [
        "tool-calls", "tool-calls", "stop", "tool-calls", "stop"]
    assert model.column("input_tokens").to_pylist() == [10, 20, 30, 11, 21]
    assert model.column("output_tokens").to_pylist() == [3, 4, 5, 3, 6]
    assert model.column("ref_id").null_count == 0
    samples = analysis.samples_df(str(path))
    runs = {r["run_id"]: json.loads(r["attrs"]) for r in log.runs.to_pylist()}
    ids = _run_ids(path)
    for _, row in samples.iterrows():
        attrs = runs[ids[row.sample_id]]
        assert attrs["scores"]["includes"]["value"] == row.score_includes
        assert attrs["sample_id"] == row.id and attrs["epoch"] == row.epoch
        assert attrs["task"] == "task" or attrs["task"]
    by_sample = {a["sample_id"]: a for a in runs.values()}
    assert by_sample["s1"]["store"] == {"total": 10}
    assert by_sample["s1"]["scores"]["includes"]["value"] == "C"
    assert by_sample["s2"]["scores"]["includes"]["value"] == "I"
    assert set(pc.cast(log.table.column("tenant_id"), "string").to_pylist()) == {"acme"}
    assert pc.cast(t.column("source"), "string")[0].as_py() == f"inspect:{path}"


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_inspect_state_fold_matches_recorded_state(logs: dict[str, Path], fmt: str) -> None:
    path = logs[fmt]
    log = read_inspect(path, owner="acme")
    frame = rk.fold(log, inspect_state())
    el = read_eval_log(str(path), resolve_attachments=True)
    for sample in el.samples:
        run_id = f"{el.eval.eval_id}:{sample.id}:{sample.epoch}"
        run = log.run(run_id, tenant_id="acme")
        n = run.table.num_rows
        final = frame.at_step(run_id, n, tenant_id="acme")
        assert thaw(final["store"]) == sample.store
        state = thaw(final["state"])
        want = [m.model_dump(mode="json", exclude_none=True) for m in sample.messages]
        assert state["messages"] == want
        assert state["store"] == sample.store
        assert state["output"]["completion"] == sample.output.completion
        # the store moves exactly at the recorded store events, in order
        types = pc.cast(run.table.column("type"), "string").to_pylist()
        totals = [frame.at_step(run_id, i + 1, tenant_id="acme")["store"].get("total")
                  for i, typ in enumerate(types) if typ == "store"]
        expected = [3, 10, 10, 10] if sample.id == "s1" else []
        assert totals[: len(expected)] == expected
        # before sample_init nothing is known
        assert frame.at_step(run_id, 0, tenant_id="acme")["state"] is None


def test_read_events_sniffs_inspect_in_a_folder(logs: dict[str, Path]) -> None:
    log = read_events(logs["eval"].parent, owner="acme")
    runs = set(pc.cast(log.table.column("run_id"), "string").to_pylist())
    assert len(runs) == 4  # 2 samples x 2 log files
    assert set(log.runs.column("format").to_pylist()) == {"inspect"}


def test_tenant_required(logs: dict[str, Path]) -> None:
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        read_inspect(logs["eval"], owner=None)  # type: ignore[arg-type]
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        read_inspect(logs["eval"], owner="")


def test_bad_log_raises_or_quarantines(tmp_path: Path) -> None:
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(LoadError) as info:
        read_inspect(bad, owner="acme")
    assert info.value.reason == "bad_log" and str(bad) in str(info.value)
    log = read_inspect(bad, owner="acme", errors="quarantine")
    assert log.table.num_rows == 0
    assert log.quarantine.column("reason").to_pylist() == ["bad_log"]


def test_missing_extra(monkeypatch: pytest.MonkeyPatch, logs: dict[str, Path]) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    with pytest.raises(MissingExtraError, match=r"replaykit\[inspect\]"):
        read_inspect(logs["eval"], owner="acme")


def test_branch_replay_and_distance(logs: dict[str, Path]) -> None:
    log = read_inspect(logs["eval"], owner="acme")
    runs = sorted(set(pc.cast(log.table.column("run_id"), "string").to_pylist()))
    mat = rk.tool_distance_matrix(log)
    assert mat.loc[runs[0], runs[0]] == 0
    assert mat.loc[runs[0], runs[1]] == 1  # [add, add] vs [add]
    s1 = next(r for r in runs if r.endswith(":s1:1"))
    b = rk.Branch(base=log, run_id=s1, tenant_id="acme", checkpoint=0, name="bigger x")
    b = b.intervene(kind="tool_args_patch", target="c1", patch={"args": {"x": 5, "y": 2}})
    res = rk.replay(b)
    assert res.status == "paused"  # the patched call diverges and has no fixture
    req = res.requirements_df()
    assert req.tool_name.tolist() == ["add"]
    assert json.loads(req.args.iloc[0]) == {"x": 5, "y": 2}
    fx = rk.Fixture("fx1", "any", "add", output="7", args_subset={"x": 5, "y": 2})
    done = res.resume([fx])
    assert done.status == "completed"
    eff = done.effects_df()
    assert eff.action.tolist()[:1] == ["fixture"]


def _rewrite(src: Path, dest: Path, fmt: str, edit=None) -> Path:  # type: ignore[no-untyped-def]
    from inspect_ai.log import write_eval_log

    el = read_eval_log(str(src))
    if edit is not None:
        edit(el)
    write_eval_log(el, str(dest), format=fmt)
    return dest


@pytest.mark.parametrize("errors", ["raise", "quarantine"])
def test_same_eval_twice_is_loaded_once(logs: dict[str, Path], tmp_path: Path,
                                        errors: str) -> None:
    """The same eval as .eval and .json (Inspect's own test folders have both) and a copy."""
    import shutil

    from replaykit.io.inspect import DuplicateLogWarning

    folder = tmp_path / "logs"
    folder.mkdir()
    a = shutil.copy(logs["eval"], folder / "a.eval")
    _rewrite(logs["eval"], folder / "b.json", "json")
    shutil.copy(a, folder / "c.eval")
    with pytest.warns(DuplicateLogWarning) as rec:
        both = read_inspect(folder, owner="acme", errors=errors)  # type: ignore[arg-type]
    assert len(rec) == 2 and all("a.eval" in str(w.message) for w in rec)
    one = read_inspect(a, owner="acme")
    assert both.run_ids == one.run_ids and both.num_runs == 2
    assert both.table.num_rows == one.table.num_rows
    assert both.table.column("payload").to_pylist() == one.table.column("payload").to_pylist()
    assert both.quarantine.num_rows == 0


def test_distinct_logs_sharing_an_eval_id_get_distinct_runs(logs: dict[str, Path],
                                                            tmp_path: Path) -> None:
    def rescore(el):  # type: ignore[no-untyped-def]
        el.samples[0].store["total"] = 99  # a re-run of the same eval that ended differently

    folder = tmp_path / "logs"
    (folder / "retry").mkdir(parents=True)
    _rewrite(logs["eval"], folder / "first.eval", "eval")
    _rewrite(logs["eval"], folder / "retry" / "second.eval", "eval", rescore)
    log = read_inspect(folder, owner="acme")
    eval_id = read_eval_log(str(logs["eval"])).eval.eval_id
    assert log.run_ids == sorted(f"{eval_id}:{s}:1@{p}" for s in ("s1", "s2")
                                 for p in ("first.eval", "retry/second.eval"))
    again = read_inspect([folder / "retry" / "second.eval", folder / "first.eval"],
                         owner="acme")
    assert again.run_ids == log.run_ids  # deterministic, whatever the order of the paths
    stores = {r["run_id"]: json.loads(r["attrs"])["store"] for r in log.runs.to_pylist()}
    assert stores[f"{eval_id}:s1:1@retry/second.eval"]["total"] == 99
    assert stores[f"{eval_id}:s1:1@first.eval"]["total"] == 10


def test_sample_with_messages_but_no_events_is_a_run(logs: dict[str, Path],
                                                    tmp_path: Path) -> None:
    def strip(el):  # type: ignore[no-untyped-def]
        for sample in el.samples:  # recorded without a transcript
            sample.events = []

    path = _rewrite(logs["eval"], tmp_path / "no_events.eval", "eval", strip)
    log = read_inspect(path, owner="acme")
    el = read_eval_log(str(path))
    run = f"{el.eval.eval_id}:s1:1"
    assert log.num_runs == 2 == len(log.runs_df()) == log.summary()["runs"]
    assert log.run_ids == sorted(log.runs_df().run_id) and run in log.run_ids
    t = log.run(run, tenant_id="acme").table
    kinds = pc.cast(t.column("kind"), "string").to_pylist()
    assert kinds == ["user_message", "model_response", "tool_call", "tool_result",
                     "model_response", "tool_call", "tool_result", "model_response"]
    assert t.column("ref_id").to_pylist()[2:4] == ["c1", "c1"]
    assert pc.cast(t.column("tool_name"), "string").to_pylist()[2:4] == ["add", "add"]
    assert t.column("text").to_pylist()[3] == "3"
    assert t.column("text").to_pylist()[-1] == "The answer is 10"
    assert t.column("args_hash")[2].as_py() == args_hash({"x": 1, "y": 2})
    assert log.tools_df().query("run_id == @run").tool_name.tolist() == ["add", "add"]


def test_sample_with_nothing_is_quarantined(logs: dict[str, Path], tmp_path: Path) -> None:
    def empty(el):  # type: ignore[no-untyped-def]
        el.samples[0].events = []
        el.samples[0].messages = []

    path = _rewrite(logs["eval"], tmp_path / "empty.eval", "eval", empty)
    with pytest.raises(LoadError) as info:
        read_inspect(path, owner="acme")
    assert info.value.reason == "empty_sample" and "s1" in str(info.value)
    log = read_inspect(path, owner="acme", errors="quarantine")
    assert log.quarantine.column("reason").to_pylist() == ["empty_sample"]
    assert log.num_runs == 1 == len(log.runs_df())


def test_byte_identical_copies_load_once_even_with_read_time_fields(logs: dict[str, Path],
                                                                    tmp_path: Path) -> None:
    """A .json log that lacks the fields Inspect fills in at read time (the eval id, event
    timestamps: new values on every read) and byte-identical copies of it, and of an .eval,
    load once each, with a DuplicateLogWarning (issue 30 item 9): de-duplication looks at
    what the files hold, not at what the reader made of them."""
    import shutil

    from replaykit.io.inspect import DuplicateLogWarning

    obj = json.loads(logs["json"].read_text())
    obj["eval"].pop("eval_id", None)
    obj["eval"].pop("run_id", None)
    for sample in obj["samples"]:
        for ev in sample.get("events", []):
            ev.pop("timestamp", None)
            ev.pop("working_start", None)
    folder = tmp_path / "copies"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(obj))
    for name in ("b.json", "sub/c.json"):
        (folder / name).parent.mkdir(exist_ok=True)
        shutil.copy(folder / "a.json", folder / name)
    shutil.copy(logs["eval"], folder / "x.eval")
    shutil.copy(logs["eval"], folder / "y.eval")
    with pytest.warns(DuplicateLogWarning) as rec:
        log = read_inspect(folder, owner="acme")
    one_json = read_inspect(folder / "a.json", owner="acme")
    one_eval = read_inspect(folder / "x.eval", owner="acme")
    assert log.num_runs == one_json.num_runs + one_eval.num_runs == 4
    assert len(log) == len(one_json) + len(one_eval)
    dup = sorted(str(w.message).split(" holds")[0] for w in rec
                 if issubclass(w.category, DuplicateLogWarning))
    assert [Path(d).name for d in dup] == ["b.json", "c.json", "y.eval"]
