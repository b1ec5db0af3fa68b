"""rk.compare_runs: two recorded runs (or sets) compared directly, on real and generated logs.

Real files are read a second time here with json.loads (an independent reading: the tool
calls of each run in order), and the distances are computed here with a Levenshtein written
in the test, not with replaykit's metric code.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.schema import events_table

DATA = Path(__file__).resolve().parents[1] / "data"
CC = DATA / "claude_code" / "spotter"
LF = DATA / "langfuse" / "framework-traces"


def _lev(a: list[Any], b: list[Any]) -> int:
    """Edit distance, written here (the test's own reference)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[len(a)][len(b)]


# ------------------------------------------------------------------ real Claude Code sessions
def _cc_reading(path: Path) -> tuple[str, str, list[str]]:
    """(session id, first user prompt, tool_use names in order) of a Claude Code transcript,
    read with json.loads."""
    sid, prompt, tools = None, None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        sid = sid or d.get("sessionId")
        msg = d.get("message") or {}
        if d.get("type") == "user" and prompt is None and isinstance(msg.get("content"), str):
            prompt = msg["content"]
        if d.get("type") == "assistant":
            tools += [b["name"] for b in msg.get("content", [])
                      if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert sid and prompt
    return sid, prompt, tools


@pytest.fixture(scope="module")
def cc() -> tuple[rk.EventLog, tuple, tuple]:
    log = rk.read_events([CC / "short.jsonl", CC / "tool_heavy.jsonl"], owner="t")
    return log, _cc_reading(CC / "short.jsonl"), _cc_reading(CC / "tool_heavy.jsonl")


def test_two_real_claude_code_sessions(cc: Any) -> None:
    log, (a_id, a_prompt, a_tools), (b_id, b_prompt, b_tools) = cc
    cmp = rk.compare_runs(log, runs=(a_id, b_id))
    assert isinstance(cmp, rk.RunComparison)
    m = cmp.metrics
    assert (m["base_run_id"], m["replay_run_id"]) == (a_id, b_id)
    assert m["base_tool_calls"] == len(a_tools) == 2
    assert m["replay_tool_calls"] == len(b_tools) == 6
    assert cmp.tool_sequence_distance == _lev(a_tools, b_tools) == 4
    # the bookkeeping lines before the prompt match; the runs part at the prompts
    a_t, b_t = cmp.base.table, cmp.events.table
    step = cmp.first_divergence
    assert a_t.column("kind")[step].as_py() == b_t.column("kind")[step].as_py() \
        == "user_message"
    assert a_t.column("kind").to_pylist()[:step] == b_t.column("kind").to_pylist()[:step]
    assert a_prompt in (a_t.column("text")[step].as_py() or "")
    assert b_prompt in (b_t.column("text")[step].as_py() or "")
    # changes: the aligned tool_call rows name the tools of both runs
    ch = cmp.changes_df()
    assert set(ch["status"]) <= {"changed", "added", "removed"}
    diff = cmp.diff_df()
    assert set(diff.loc[diff["status"] != "same", "replay_tool"].dropna()) <= set(b_tools)
    assert (ch.loc[ch["tool_name"] == "WebFetch", "status"] != "same").all()
    s = cmp.summary()
    assert s.verdict == "different"
    assert f"step {step}" in s.answer and "tool calls" in s.answer
    for tool in set(a_tools) | set(b_tools):
        assert tool in s.text
    assert "associations, not causes" in s.answer
    caveats = s.to_frame().query("kind == 'caveat'")["sentence"].tolist()
    assert any("not a cause" in c and "Nothing was intervened on" in c for c in caveats)
    # how each run ends, in words: both transcripts end with the user interrupting
    # (their last user line, read with json.loads), never a bare kind name
    for path in (CC / "short.jsonl", CC / "tool_heavy.jsonl"):
        users = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        users = [d for d in users if d.get("type") == "user"]
        assert "[Request interrupted by user" in json.dumps(users[-1]["message"])
    assert "both end the same way (interrupted by the user)" in s.answer
    assert not any(k in s.answer for k in ("turn_end", "model_response", "(other)"))
    # where they part and every aligned pair of different actions, in words: the prompts
    # are user messages; a line no category fits reads by the transcript's own type
    assert f"(run A has a user message \"{a_prompt[:10]}" in s.answer
    assert not re.search(r"\bhas (other|tool_call|tool_result|model_request|model_response|"
                         r"user_message)\b", s.text)
    types = {t for t, k in zip(a_t.column("type").to_pylist(), a_t.column("kind").to_pylist(),
                               strict=True) if k == "other"}
    for said in re.findall(r"run A has an? ([\w-]+) log entry", s.text):
        assert said in types


def test_a_session_against_itself(cc: Any) -> None:
    log, (a_id, _, a_tools), _ = cc
    cmp = rk.compare_runs(log.filter(run_ids=[a_id]), log.filter(run_ids=[a_id]))
    assert cmp.first_divergence == -1 and cmp.tool_sequence_distance == 0
    assert cmp.changes_df().empty
    assert cmp.summary().verdict == "identical"
    assert cmp.comparability == "exact"


def test_rk_compare_on_recorded_runs(cc: Any) -> None:
    log, (a_id, *_), (b_id, _, _) = cc
    # one run on each side: paired (the documented rule), not an empty frame
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = rk.compare(log.filter(run_ids=[a_id]), log.filter(run_ids=[b_id]))
    assert df[["base_run_id", "replay_run_id"]].values.tolist() == [[a_id, b_id]]
    assert int(df["tool_sequence_distance"].iloc[0]) == 4
    # several runs: nothing pairs them; the warning names the call to make
    with pytest.warns(UserWarning, match=r"rk\.compare_runs\(first, second, by='prompt'\)"
                      r".*pairs=pd\.DataFrame"):
        empty = rk.compare(log, log.filter(run_ids=[b_id]))
    assert empty.empty


def test_unknown_run_names_the_runs(cc: Any) -> None:
    log, (a_id, *_), _ = cc
    with pytest.raises(KeyError, match=a_id):
        rk.compare_runs(log, runs=(a_id, "no-such-run"))
    many = rk.read_events(CC, owner="t")  # the sessions and their subagent sidechains
    n = len(list(Path(CC).rglob("*.jsonl")))  # one run per transcript file
    assert n > 2 and len(many.run_ids) == n
    with pytest.raises(ValueError, match=rf"holds {n} runs; name the two to compare: "
                       r"rk\.compare_runs\(log, runs=\(RUN_A, RUN_B\)\)"):
        rk.compare_runs(many)


# ------------------------------------------------------------------ real Langfuse traces
def _langfuse_reading(path: Path) -> list[str]:
    """Tool calls of one Langfuse trace export in order, read with json.loads: each call id
    once (a tool_call / function_call named in a generation's output, or a TOOL observation's
    call id), and a TOOL observation without an id as the call its name names."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    seen: dict[str, str] = {}

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if v.get("type") in ("tool_call", "function_call") and v.get("name"):
                cid = v.get("call_id") or v.get("id")
                seen.setdefault(str(cid), v["name"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for o in sorted(doc["observations"], key=lambda o: o["startTime"]):
        if o["type"] == "GENERATION":
            walk(o.get("output"))
        elif o["type"] == "TOOL":
            attrs = (o.get("metadata") or {}).get("attributes") or {}
            name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
            cid = attrs.get("gen_ai.tool.call.id")
            if cid is not None:
                seen.setdefault(str(cid), name)
            elif name not in seen.values():
                seen[f"obs-{o['id']}"] = name
    return list(seen.values())


def test_two_real_langfuse_traces() -> None:
    a_path, b_path = LF / "openai-agents-2025-09-30.json", LF / "pydantic-ai-tools-2025-12-04.json"
    a_tools, b_tools = _langfuse_reading(a_path), _langfuse_reading(b_path)
    assert a_tools == ["get_weather"]
    assert b_tools == ["get_pun_suggestion", "get_dad_joke_suggestion",
                       "get_one_liner_suggestion", "final_result"]
    a = rk.read_events(a_path, owner="t")
    b = rk.read_events(b_path, owner="t")
    cmp = rk.compare_runs(a, b)
    assert cmp.a_run_id == json.loads(a_path.read_text())["trace"]["id"]
    assert cmp.metrics["base_tool_calls"] == 1 and cmp.metrics["replay_tool_calls"] == 4
    assert cmp.tool_sequence_distance == _lev(a_tools, b_tools) == 4
    assert cmp.metrics["tool_sequence_distance_norm"] == pytest.approx(1.0)
    s = cmp.summary()
    assert "Only run A called get_weather" in s.text
    assert "get_pun_suggestion" in s.answer and "get_weather" in s.answer
    # a trace against itself
    same = rk.compare_runs(b, b)
    assert same.first_divergence == -1 and same.tool_sequence_distance == 0


# ------------------------------------------------------------------ generated logs
def _log(runs: dict[str, list[tuple[str, str | None, dict | None, str | None]]]) -> rk.EventLog:
    """Runs of (kind, tool, args, text) events, payloads holding what the event says."""
    cols: dict[str, list] = {k: [] for k in ("tenant_id", "run_id", "seq", "type", "kind",
                                             "tool_name", "args_hash", "text", "payload",
                                             "source")}
    for run, evs in runs.items():
        for i, (kind, tool, args, text) in enumerate(evs):
            cols["tenant_id"].append("t")
            cols["run_id"].append(run)
            cols["seq"].append(i)
            cols["type"].append(kind)
            cols["kind"].append(kind)
            cols["tool_name"].append(tool)
            cols["args_hash"].append(json.dumps(args, sort_keys=True) if args else None)
            cols["text"].append(text)
            cols["payload"].append(json.dumps({"toolName": tool, "args": args, "text": text},
                                              sort_keys=True))
            cols["source"].append("test:mem")
    return rk.EventLog(events_table(cols))


RUN_A = [("user_message", None, None, "fix the bug"), ("tool_call", "read", {"p": "a.py"}, None),
         ("tool_result", "read", None, "x = 1"), ("tool_call", "edit", {"p": "a.py"}, None),
         ("model_response", None, None, "done")]
RUN_B = [("user_message", None, None, "fix the bug"), ("tool_call", "read", {"p": "b.py"}, None),
         ("tool_result", "read", None, "y = 2"), ("tool_call", "test", {}, None),
         ("tool_call", "edit", {"p": "b.py"}, None), ("model_response", None, None, "done")]


def test_generated_runs_values() -> None:
    log = _log({"a": RUN_A, "b": RUN_B})
    cmp = rk.compare_runs(log, runs=("a", "b"))
    assert cmp.first_divergence == 1  # the read's arguments differ
    assert cmp.tool_sequence_distance == _lev(["read", "edit"], ["read", "test", "edit"]) == 1
    ch = cmp.changes_df()
    # the edit calls align (same tool, other arguments): one changed value
    edit = ch[(ch["tool_name"] == "edit") & (ch["kind"] == "tool_call")]
    assert edit[["step", "label", "before", "after"]].values.tolist() == [
        [4, "args.p", '"a.py"', '"b.py"']]
    # B's read(b.py) has no partner of its signature in A: a whole event only in B
    read = ch[(ch["tool_name"] == "read") & (ch["kind"] == "tool_call")]
    assert read[["step", "status", "label"]].values.tolist() == [[1, "added", "(whole event)"]]
    assert json.loads(read["after"].iloc[0])["args"] == {"p": "b.py"}
    s = cmp.summary()
    assert "edit was called with args.p \"a.py\" \u2192 \"b.py\" at step 4" in s.text
    assert "tool calls run A 2 (read, edit) vs run B 3 (read, test, edit)" in s.answer
    assert "Only run B called test" in s.text
    # the same pair through the logs of one run each
    two = rk.compare_runs(log.filter(run_ids=["a"]), log.filter(run_ids=["b"]))
    assert two.metrics == cmp.metrics
    # a log of exactly two runs: compared in order
    assert rk.compare_runs(log).metrics == cmp.metrics


def test_where_the_runs_part_is_said_in_words() -> None:
    # the first divergence names what each run did there, not its kind: the tool called,
    # and for an event no category fits (kind "other") the source's own event type
    cmp = rk.compare_runs(_log({"a": RUN_A, "b": RUN_B}), runs=("a", "b"))
    s = cmp.summary()
    assert ("The runs first differ at step 1: run A has a call to read with other "
            "arguments, run B has a call to read with other arguments;") in s.text
    assert s.answer.startswith("Different: the runs part at step 1 (run A has a call to "
                               "read with other arguments, run B has a call to read with "
                               "other arguments);")
    log = _log({"a": RUN_A[:1] + [("other", None, None, None)] + RUN_A[1:], "b": RUN_B})
    cols = log.table.to_pydict()
    cols["type"] = ["file-history-snapshot" if k == "other" else t
                    for k, t in zip(cols["kind"], cols["type"], strict=True)]
    parted = rk.compare_runs(rk.EventLog(events_table(cols)), runs=("a", "b")).summary()
    assert ("The runs first differ at step 1: run A has a file-history-snapshot log entry, "
            "run B has a call to read;") in parted.text
    assert "(run A has a file-history-snapshot log entry, run B has a call to read)" \
        in parted.answer
    assert "has other" not in parted.text + parted.answer
    # a run that ends first: said so
    short = rk.compare_runs(_log({"a": RUN_A[:2], "b": RUN_A}), runs=("a", "b")).summary()
    assert "run A has no event (the run has ended), run B has the result of read" \
        in short.answer


def test_sets_paired_by_prompt_and_column() -> None:
    a = _log({"a1": RUN_A, "a2": [("user_message", None, None, "write docs")],
              "a3": [("user_message", None, None, "unpaired")]})
    b = _log({"b2": [("user_message", None, None, "write  docs ")], "b1": RUN_B})
    with pytest.warns(UserWarning, match="1 run.s. of the first log and 0 of the second"):
        cs = rk.compare_runs(a, b, by="prompt")
    assert isinstance(cs, rk.branch.RunComparisons) and len(cs) == 2
    assert sorted(zip(cs.pairs["a_run_id"], cs.pairs["b_run_id"], strict=True)) == [
        ("a1", "b1"),
        ("a2", "b2")]
    mdf = cs.metrics_df().set_index("base_run_id")
    assert (mdf["tenant_id"] == "t").all() and mdf.loc["a2", "key"] == "write docs"
    assert mdf.loc["a1", "tool_sequence_distance"] == 1
    # paired although the texts differ in whitespace; the comparison still sees the text
    assert mdf.loc["a2", "first_divergence_step"] == 0
    first = {c.a_run_id: c for c in cs}
    assert first["a1"].first_divergence == 1
    named = rk.compare_runs(a, b, pairs=[("a1", "b1")])
    assert named[0].metrics["tool_sequence_distance"] == 1
    with pytest.raises(KeyError, match="runs table has no such column"):
        rk.compare_runs(a, b, by="nope")
    with pytest.raises(KeyError, match="not in the second log"):
        rk.compare_runs(a, b, pairs=pd.DataFrame({"a_run_id": ["a1"], "b_run_id": ["zz"]}))


EV = st.one_of(
    st.tuples(st.just("tool_call"), st.sampled_from(["read", "edit", "bash"]),
              st.sampled_from([{"p": 1}, {"p": 2}]), st.none()),
    st.tuples(st.sampled_from(["user_message", "model_response"]), st.none(), st.none(),
              st.sampled_from(["hi", "ok"])),
)


@settings(max_examples=20, deadline=None)
@given(st.lists(EV, min_size=1, max_size=10), st.lists(EV, min_size=1, max_size=10))
def test_properties(a: list, b: list) -> None:
    log = _log({"a": a, "b": b})
    ab = rk.compare_runs(log, runs=("a", "b"))
    ba = rk.compare_runs(log, runs=("b", "a"))
    aa = rk.compare_runs(log, runs=("a", "a"))
    assert aa.first_divergence == -1 and aa.tool_sequence_distance == 0
    assert aa.changes_df().empty
    # symmetric: the same first divergence and distance both ways
    assert ab.tool_sequence_distance == ba.tool_sequence_distance == _lev(
        [t for k, t, *_ in a if k == "tool_call"], [t for k, t, *_ in b if k == "tool_call"])
    assert ab.first_divergence == ba.first_divergence
    # the reference definition: the first position whose (kind, tool, args, text) differ
    sig = [(k, t, json.dumps(x, sort_keys=True) if x else None, s) for k, t, x, s in a]
    sig_b = [(k, t, json.dumps(x, sort_keys=True) if x else None, s) for k, t, x, s in b]
    want = next((i for i in range(max(len(sig), len(sig_b)))
                 if i >= len(sig) or i >= len(sig_b) or sig[i] != sig_b[i]), -1)
    assert ab.first_divergence == want
    answer = ab.summary().answer
    assert ("associations, not causes" in answer) == (want != -1)
    if want != -1:  # each side's event at the divergence in words, never by its bare kind
        for side, evs in (("run A", a), ("run B", b)):
            k, tool = (evs[want][0], evs[want][1]) if want < len(evs) else (None, None)
            said = {"tool_call": f"a call to {tool}", "user_message": "a user message",
                    "model_response": "a model answer",
                    None: "no event (the run has ended)"}[k]
            assert f"{side} has {said}" in answer
        assert not re.search(r"has (tool_call|user_message|model_response|other)\b", answer)


def test_where_runs_part_quotes_each_text_whole_even_cut() -> None:
    """Two runs whose first messages differ: each is quoted with its closing mark, a long
    one cut with an ellipsis inside the quotes, so the sentence reads on."""
    long_a = "fix the failing test in   the parser module\nand then run the whole suite again"
    a = [("user_message", None, None, long_a), ("model_response", None, None, "ok")]
    b = [("user_message", None, None, "fix it"), ("model_response", None, None, "ok")]
    ans = rk.compare_runs(_log({"a": a, "b": b}), runs=("a", "b")).summary().answer
    cut = " ".join(long_a.split())[:47] + "\u2026"
    assert f'run A has a user message "{cut}"' in ans, ans
    assert 'run B has a user message "fix it"' in ans, ans
