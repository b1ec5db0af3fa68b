"""Grain tables (calls_df, tools_df, turns_df) on a hand-built canonical table and on toh."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.eventlog.grain import _joint_keys, calls_df, tools_df, turns_df
from replaykit.schema import events_table

DATA = Path(__file__).resolve().parents[1] / "data" / "toh"


def _log(rows: list[dict]) -> rk.EventLog:
    cols: dict[str, list] = {}
    names = [
        "tenant_id", "run_id", "seq", "type", "kind", "turn", "step", "ref_id", "tool_name",
        "args_hash", "is_error", "finish", "input_tokens", "output_tokens", "chunk_type", "text",
        "payload", "source",
    ]  # fmt: skip
    for name in names:
        cols[name] = [r.get(name) for r in rows]
    cols["is_error"] = [bool(r.get("is_error", False)) for r in rows]
    cols["payload"] = [json.dumps(r.get("payload", {})) for r in rows]
    cols["source"] = ["mem:test"] * len(rows)
    return rk.EventLog(events_table(cols))


def _row(seq: int, kind: str, run: str = "r1", **kw: object) -> dict:
    return {"tenant_id": "acme", "run_id": run, "seq": seq, "type": kind, "kind": kind, **kw}


@pytest.fixture(scope="module")
def generic() -> rk.EventLog:
    """A non-toh log: single-event model results (pleach style) plus a streamed call pair."""
    return _log([
        _row(0, "turn_start", turn=1),
        _row(1, "model_request", turn=1, step=1, ref_id="m1"),
        _row(2, "model_response", turn=1, step=1, ref_id="m1", finish="tool-calls",
             input_tokens=100, output_tokens=7, text="calling grep",
             payload={"usage": {"input_tokens": 100, "output_tokens": 7,
                                "cache_read_tokens": 64}}),
        _row(3, "tool_call", turn=1, step=1, ref_id="tc1", tool_name="grep", args_hash="h1",
             text='{"q":"x"}'),
        _row(4, "tool_call", turn=1, step=1, ref_id="tc2", tool_name="cat", text="{}"),
        _row(5, "tool_result", turn=1, step=1, ref_id="tc1", is_error=True, text="boom",
             payload={"error": {"name": "ToolError", "code": "E_GREP"}}),
        _row(6, "tool_result", turn=1, step=1, ref_id="tc1", text="second result ignored"),
        # step 2: an error finish, then a retried call in the same step
        _row(7, "model_chunk", turn=1, step=2, ref_id="s2a", chunk_type="text", text="Hel"),
        _row(8, "model_chunk", turn=1, step=2, ref_id="s2a", chunk_type="finish",
             finish="error", is_error=True, payload={"failure": {"code": "RATE"}}),
        _row(9, "model_chunk", turn=1, step=2, ref_id="s2b", chunk_type="reasoning", text="th"),
        _row(10, "model_chunk", turn=1, step=2, ref_id="s2b", chunk_type="reasoning", text="ink"),
        _row(11, "model_chunk", turn=1, step=2, ref_id="s2b", chunk_type="text", text="Hel"),
        _row(12, "model_chunk", turn=1, step=2, ref_id="s2b", chunk_type="text", text="lo"),
        _row(13, "model_chunk", turn=1, step=2, ref_id="s2b", chunk_type="usage",
             input_tokens=5, output_tokens=2,
             payload={"usage": {"reasoningTokens": 3, "cacheReadTokens": 1}}),
        _row(14, "model_chunk", turn=1, step=2, ref_id="s2b", chunk_type="finish", finish="stop"),
        # a reason of another JSON type in the same table must not break extraction
        _row(15, "turn_end", turn=1, payload={"reason": "max-tokens"}),
        _row(16, "turn_start", turn=2),
        _row(17, "model_chunk", turn=2, step=1, ref_id="u1", chunk_type="text", text="cut"),
        # run r2: a turn that ends in error, with its code; a turn end with no reason
        _row(0, "turn_start", run="r2", turn=1),
        _row(1, "turn_end", run="r2", turn=1, is_error=True,
             payload={"data": {"reason": {"kind": "error", "error": {"code": "AUTH"}}}}),
        _row(2, "turn_end", run="r2", turn=2),
    ])  # fmt: skip


def test_calls_df_generic(generic: rk.EventLog) -> None:
    df = calls_df(generic)
    assert df.columns.tolist() == [
        "tenant_id", "run_id", "turn", "step", "call_index", "ref_id", "first_seq", "last_seq",
        "chunks", "text", "reasoning", "tool_calls", "input_tokens", "output_tokens",
        "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "finish", "error_code",
        "finished",
    ]  # fmt: skip
    assert df["ref_id"].tolist() == ["m1", "s2a", "s2b", "u1"]
    assert df["call_index"].tolist() == [0, 0, 1, 0]
    assert df["first_seq"].tolist() == [1, 7, 9, 17]
    assert df["last_seq"].tolist() == [2, 8, 14, 17]
    assert df["chunks"].tolist() == [0, 2, 6, 1]
    assert df["text"].tolist() == ["calling grep", "Hel", "Hello", "cut"]
    assert df["reasoning"].isna().tolist() == [True, True, False, True]
    assert df.loc[2, "reasoning"] == "think"
    assert df["tool_calls"].tolist() == [2, 0, 0, 0]
    assert df["input_tokens"].iloc[0] == 100 and df["input_tokens"].iloc[2] == 5
    assert pd.isna(df["input_tokens"].iloc[1])
    assert df["output_tokens"].iloc[2] == 2
    assert df["cache_read_tokens"].iloc[0] == 64 and df["cache_read_tokens"].iloc[2] == 1
    assert df["reasoning_tokens"].iloc[2] == 3
    assert df["finish"].tolist()[:3] == ["tool-calls", "error", "stop"]
    assert pd.isna(df["finish"].iloc[3])
    assert df["error_code"].iloc[1] == "RATE" and df["error_code"].isna().sum() == 3
    assert df["finished"].tolist() == [True, True, True, False]
    assert str(df["input_tokens"].dtype) == "Int64" and str(df["turn"].dtype) == "Int32"


def test_tools_df_generic(generic: rk.EventLog) -> None:
    df = tools_df(generic)
    assert df.columns.tolist() == [
        "tenant_id", "run_id", "turn", "step", "call_id", "tool_name", "args_hash", "arguments",
        "call_seq", "result_seq", "result_text", "is_error", "error_name", "error_code",
        "has_result",
    ]  # fmt: skip
    assert df["call_id"].tolist() == ["tc1", "tc2"]
    first = df.iloc[0]
    assert (first["tool_name"], first["arguments"], first["call_seq"]) == ("grep", '{"q":"x"}', 3)
    assert (first["result_seq"], first["result_text"]) == (5, "boom")
    assert (bool(first["is_error"]), first["error_name"], first["error_code"]) == (
        True, "ToolError", "E_GREP"
    )
    second = df.iloc[1]
    assert not second["has_result"] and pd.isna(second["is_error"])
    assert pd.isna(second["result_seq"]) and pd.isna(second["error_code"])


def test_turns_df_generic(generic: rk.EventLog) -> None:
    df = turns_df(generic)
    assert df.columns.tolist() == [
        "tenant_id", "run_id", "turn", "start_seq", "end_seq", "end_reason", "error_code",
        "steps", "tool_calls",
    ]  # fmt: skip
    assert list(zip(df["run_id"], df["turn"], strict=True)) == [
        ("r1", 1), ("r1", 2), ("r2", 1), ("r2", 2)
    ]
    assert df["start_seq"].tolist() == [0, 16, 0, 2]
    assert df["end_seq"].tolist()[0] == 15 and pd.isna(df["end_seq"].iloc[1])
    assert df["end_reason"].tolist()[0] == "max-tokens"
    assert pd.isna(df["end_reason"].iloc[1])
    assert df["end_reason"].tolist()[2:] == ["error", "completed"]
    assert df["error_code"].iloc[2] == "AUTH" and pd.isna(df["error_code"].iloc[0])
    assert df["steps"].tolist() == [2, 1, 0, 0]
    assert df["tool_calls"].tolist() == [2, 0, 0, 0]


def test_grain_tables_of_an_empty_log_have_their_columns() -> None:
    empty = rk.EventLog(events_table({
        "tenant_id": [], "run_id": [], "seq": [], "type": [], "kind": [], "payload": [],
        "source": [],
    }))  # fmt: skip
    assert len(calls_df(empty)) == 0 and "finished" in calls_df(empty).columns
    assert len(tools_df(empty)) == 0 and "has_result" in tools_df(empty).columns
    assert len(turns_df(empty)) == 0 and "end_reason" in turns_df(empty).columns


def test_grain_accepts_a_plain_table(generic: rk.EventLog) -> None:
    pd.testing.assert_frame_equal(calls_df(generic.table), generic.calls_df())


# --------------------------------------------------------------------------- toh sample
@pytest.fixture(scope="module")
def sample() -> rk.EventLog:
    return rk.read_toh(DATA, owner="demo")


def test_toh_sample_calls(sample: rk.EventLog) -> None:
    df = sample.calls_df()
    garden = df[df["run_id"] == "7d0c1e2a-0000-4000-8000-00000000a001"]
    assert garden["ref_id"].tolist() == ["t1.s1.c0", "t1.s2.c0", "t1.s3.c0", "t2.s1.c0",
                                         "t2.s2.c0"]  # fmt: skip
    assert garden["finish"].tolist() == ["tool-calls", "tool-calls", "stop", "tool-calls",
                                         "error"]  # fmt: skip
    assert garden["tool_calls"].tolist() == [1, 1, 0, 1, 0]
    assert garden["text"].iloc[2] == "Water every 2 days, in the morning."
    assert garden["reasoning"].iloc[0] == "I should read the notes first."
    assert garden["error_code"].iloc[4] == "SERVER"
    assert garden[["input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens"]
                  ].iloc[1].tolist() == [880, 30, 768, 6]  # fmt: skip
    assert df["finished"].all()
    assert int(df["tool_calls"].sum()) == len(sample.tools_df())


def test_toh_sample_tools_and_turns(sample: rk.EventLog) -> None:
    tools = sample.tools_df()
    assert tools["call_id"].tolist() == ["call_read_1", "call_read_2", "call_spawn_1",
                                         "call_fork_1"]  # fmt: skip
    assert tools["is_error"].tolist() == [False, True, False, False]
    assert tools["error_name"].iloc[1] == "FsError"
    assert tools["error_code"].iloc[1] == "FS_NOT_FOUND"
    assert tools["has_result"].all()
    turns = sample.turns_df()
    assert turns["end_reason"].tolist() == [
        "completed", "error", "completed", "aborted", "completed", "completed", "completed"
    ]
    assert turns["error_code"].iloc[1] == "SERVER"
    assert turns["steps"].tolist()[:2] == [3, 2]


# ------------------------------------------------------------ the joint keys grain tables use
_VAL = st.one_of(st.none(), st.sampled_from(["a", "b", "é", ""]))


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(_VAL, _VAL, st.one_of(st.none(), st.integers(0, 3))),
                     min_size=1, max_size=30),
       split=st.integers(0, 30), dict_cols=st.tuples(st.booleans(), st.booleans()))
def test_joint_keys_equal_exactly_when_the_rows_are(rows, split, dict_cols) -> None:
    import pyarrow as pa

    split = min(split, len(rows))
    left, right = rows[:split], rows[split:]

    def cols(part):
        out = []
        for j, typ in enumerate((pa.string(), pa.string(), pa.int32())):
            arr = pa.array([r[j] for r in part], typ)
            if j < 2 and dict_cols[j]:
                arr = arr.dictionary_encode()
            out.append(arr)
        return out

    lk, rk_ = _joint_keys(cols(left), cols(right))
    keys = lk.to_pylist() + rk_.to_pylist()
    for a in range(len(rows)):
        for b in range(len(rows)):
            assert (keys[a] == keys[b]) == (rows[a] == rows[b])
