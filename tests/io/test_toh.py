"""read_toh: the toh session-log loader, on the bundled samples and on hand-made bad input."""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base.json import args_hash, canonical_json
from replaykit.errors import LoadError
from replaykit.io import detect_format
from replaykit.io.toh import OrphanRunWarning, is_side_file, read_toh, sniff

DATA = Path(__file__).resolve().parents[2] / "data" / "toh"

HEADER = {"type": "session", "version": 0, "id": "run-1", "createdAt": 1767225600000, "cwd": "/w"}


def _line(obj: object) -> bytes:
    return obj if isinstance(obj, bytes) else json.dumps(obj).encode()


def write_log(path: Path, lines: list[object], header: object = HEADER) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = ([_line(header)] if header is not None else []) + [_line(x) for x in lines]
    path.write_bytes(b"".join(b + b"\n" for b in body))
    return path


def ev(typ: str, **data: object) -> dict:
    return {"type": typ, "data": data}


def chunk(turn: int, step: int, **c: object) -> dict:
    return ev("assistant/chunk", turn=turn, step=step, chunk=c)


def packed_text(n: int = 3, **extra: object) -> dict:
    texts = [f"t{i}" for i in range(n)]
    d = {"turn": 1, "step": 1, "index": 0, "dt": [1] * (n - 1), "texts": texts}
    d.update(extra)
    return {"type": "text-chunks", "data": d}


def line_accounting(log: rk.EventLog, files: list[Path]) -> tuple[int, int]:
    """(input non-blank lines, loaded lines + quarantined lines) over ``files``."""
    n_input = sum(
        sum(1 for raw in f.read_bytes().split(b"\n") if raw.strip()) for f in files
    )
    ev_lines = log.events_df()[["source", "source_line"]].drop_duplicates()
    headers = len(log.runs)
    q = log.quarantine.to_pandas()
    quarantined = int(q["line"].notna().sum()) if len(q) else 0
    return n_input, len(ev_lines) + headers + quarantined


# --------------------------------------------------------------------------- samples
@pytest.fixture(scope="module")
def sample() -> rk.EventLog:
    return read_toh(DATA, owner="demo")


def test_sample_runs_and_parent_links(sample: rk.EventLog) -> None:
    runs = sample.runs_df().set_index("run_id")
    assert sorted(runs.index) == [
        "7d0c1e2a-0000-4000-8000-00000000a001",
        "7d0c1e2a-0000-4000-8000-00000000a002",
        "7d0c1e2a-0000-4000-8000-00000000c001",
        "7d0c1e2a-0000-4000-8000-00000000c002",
    ]
    assert runs.loc["7d0c1e2a-0000-4000-8000-00000000c001", "parent_run_id"] == (
        "7d0c1e2a-0000-4000-8000-00000000a001"
    )
    assert pd.isna(runs.loc["7d0c1e2a-0000-4000-8000-00000000a001", "parent_run_id"])
    assert runs.loc["7d0c1e2a-0000-4000-8000-00000000c002", "seed_length"] == 13
    assert runs.loc["7d0c1e2a-0000-4000-8000-00000000a001", "created_at"] == pd.Timestamp(
        1767225600000, unit="ms", tz="UTC"
    )
    assert set(runs["format"]) == {"toh"}
    assert len(sample.quarantine) == 0


def test_sample_seq_follows_the_implicit_rule(sample: rk.EventLog) -> None:
    for f in sorted(DATA.rglob("session*.jsonl")):
        lines = [json.loads(x) for x in f.read_text().splitlines()]
        expected = 0
        for obj in lines[1:]:
            d = obj["data"]
            expected += len(d.get("texts") or d.get("args") or [0])
        events = sample.events_df()
        events = events[events["source"] == f"toh:{f}"]
        assert events["seq"].tolist() == list(range(expected))


def test_sample_packed_rows_expand_to_chunk_events(sample: rk.EventLog) -> None:
    df = sample.events_df()
    f = DATA / "garden-report" / "session.jsonl"
    lines = f.read_text().splitlines()
    packed_line = next(i for i, x in enumerate(lines, 1) if '"tool-call-chunks"' in x)
    rows = df[(df["source"] == f"toh:{f}") & (df["source_line"] == packed_line)]
    member = json.loads(lines[packed_line - 1])["data"]
    assert rows["type"].unique().tolist() == ["assistant/chunk"]
    assert rows["chunk_type"].unique().tolist() == ["tool-call"]
    assert rows["text"].tolist() == member["args"]
    assert np.diff(rows["seq"].to_numpy()).tolist() == [1] * (len(member["args"]) - 1)
    for payload, arg in zip(rows["payload"], member["args"], strict=True):
        c = json.loads(payload)["data"]["chunk"]
        assert c == {
            "type": "tool-call-delta",
            "index": member["index"],
            "id": member["id"],
            "name": member["name"],
            "argumentsDelta": arg,
        }


def test_member_payloads_are_canonical_json(sample: rk.EventLog) -> None:
    df = sample.events_df()
    chunks = df[df["type"] == "assistant/chunk"]
    assert len(chunks) > 50
    for payload in chunks["payload"]:
        assert canonical_json(json.loads(payload)) == payload


def test_sample_typed_columns(sample: rk.EventLog) -> None:
    df = sample.events_df()
    call = df[(df["type"] == "tool/call") & (df["ref_id"] == "call_read_2")].iloc[0]
    assert call["tool_name"] == "read"
    assert call["text"] == '{"path":"notes/rain.csv"}'
    assert call["args_hash"] == args_hash('{"path":"notes/rain.csv"}')
    res = df[(df["type"] == "tool/result") & (df["ref_id"] == "call_read_2")].iloc[0]
    assert bool(res["is_error"]) is True
    assert res["tool_name"] == "read"  # filled from the matching call
    assert res["text"] == "Error: notes/rain.csv does not exist"
    asked = df[df["type"] == "approval/asked"].iloc[0]
    assert (asked["kind"], asked["ref_id"], asked["tool_name"]) == (
        "approval_request", "appr-1", "read"
    )
    decided = df[df["type"] == "approval/decided"].iloc[0]
    assert (decided["kind"], decided["ref_id"]) == ("approval_decision", "appr-1")
    fin = df[(df["chunk_type"] == "finish") & (df["finish"] == "error")].iloc[0]
    assert bool(fin["is_error"]) and fin["ref_id"] == "t2.s2.c0"
    usage = df[df["chunk_type"] == "usage"].iloc[0]
    assert (usage["input_tokens"], usage["output_tokens"]) == (812, 41)
    # every row of one model call shares its synthetic id, the closing message too
    msg = df[(df["type"] == "assistant/message") & (df["turn"] == 1) & (df["step"] == 3)]
    assert msg["ref_id"].tolist() == ["t1.s3.c0"]
    desc = df[df["type"] == "subagent/descriptor"]
    assert (desc["ref_id"] == desc["run_id"].astype(str)).all()


def test_fork_child_seed_region_is_inherited(sample: rk.EventLog) -> None:
    df = sample.events_df()
    child = df[df["run_id"] == "7d0c1e2a-0000-4000-8000-00000000c002"]
    assert child["inherited"].tolist() == (child["seq"] < 13).tolist()
    assert int(child["inherited"].sum()) == 13
    assert not df[df["run_id"] != "7d0c1e2a-0000-4000-8000-00000000c002"]["inherited"].any()


def test_sniff_and_side_files(tmp_path: Path) -> None:
    f = DATA / "garden-report" / "session.jsonl"
    assert sniff(f) is None
    assert detect_format(f) == "toh"
    other = write_log(tmp_path / "x.jsonl", [], header={"tenant_id": "t", "event_type": "x"})
    assert "not a session header" in sniff(other)
    assert is_side_file(tmp_path / "replay.override.json")
    assert not is_side_file(f)
    (tmp_path / "s").mkdir()
    write_log(tmp_path / "s" / "session.jsonl", [ev("turn/start", turn=1)])
    (tmp_path / "s" / "replay.override.json").write_text("[]")
    log = read_toh(tmp_path / "s", owner="t")
    assert len(log) == 1


def test_tenant_is_required() -> None:
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        read_toh(DATA, owner=None)  # type: ignore[arg-type]
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        read_toh(DATA, owner="")
    with pytest.raises(ValueError, match="errors"):
        read_toh(DATA, owner="t", errors="ignore")  # type: ignore[arg-type]


def test_explicit_seq_and_time_envelope(tmp_path: Path) -> None:
    f = write_log(
        tmp_path / "session.jsonl",
        [
            {**ev("turn/start", turn=1), "seq": 10, "time": 1_000},
            {**packed_text(3), "seq0": 11, "time0": 2_000},
            {**chunk(1, 1, type="finish", reason={"kind": "stop"}), "seq": 20, "time": 5_000},
        ],
    )
    df = read_toh(f, owner="t").events_df()
    assert df["seq"].tolist() == [10, 11, 12, 13, 20]
    ms = (df["ts"] - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(milliseconds=1)
    assert ms.tolist() == [1_000, 2_000, 2_001, 2_002, 5_000]
    member = json.loads(df["payload"].iloc[2])
    assert member["seq"] == 12 and member["time"] == 2_001
    assert canonical_json(member) == df["payload"].iloc[2]


def test_same_header_id_in_two_folders_gets_qualified_run_ids(tmp_path: Path) -> None:
    write_log(tmp_path / "a" / "session.jsonl", [ev("turn/start", turn=1)])
    write_log(tmp_path / "b" / "session.jsonl", [ev("turn/start", turn=1)])
    child = {**HEADER, "id": "kid", "parentSession": "run-1"}
    write_log(tmp_path / "b" / "session.1.jsonl", [ev("turn/start", turn=1)], header=child)
    log = read_toh(tmp_path, owner="t")
    runs = log.runs_df().set_index("run_id")
    assert sorted(runs.index) == ["kid", "run-1@a/session.jsonl", "run-1@b/session.jsonl"]
    assert runs.loc["kid", "parent_run_id"] == "run-1@b/session.jsonl"  # same folder wins
    assert runs.loc["run-1@a/session.jsonl", "id"] == "run-1"


def test_child_with_missing_parent_loads_with_a_warning(tmp_path: Path) -> None:
    child = {**HEADER, "id": "kid", "parentSession": "ghost", "origin": "subagent"}
    write_log(tmp_path / "s" / "session.1.jsonl", [ev("turn/start", turn=1)], header=child)
    with pytest.warns(OrphanRunWarning, match="ghost"):
        log = read_toh(tmp_path / "s", owner="t")
    assert len(log) == 1 and len(log.quarantine) == 0
    assert log.runs_df()["parent_run_id"].tolist() == ["ghost"]
    assert log.events_df()["parent_run_id"].astype(str).tolist() == ["ghost"]


def test_header_only_file_is_a_run_without_events(tmp_path: Path) -> None:
    log = read_toh(write_log(tmp_path / "session.jsonl", []), owner="t")
    assert len(log) == 0
    runs = log.runs_df()
    assert runs["run_id"].tolist() == ["run-1"] and runs["events"].tolist() == [0]


def test_unknown_event_types_are_kept(tmp_path: Path) -> None:
    f = write_log(tmp_path / "session.jsonl", [ev("brand/new-thing", x=1), {"type": "bare"}])
    df = read_toh(f, owner="t").events_df()
    assert df["type"].tolist() == ["brand/new-thing", "bare"]
    assert df["kind"].tolist() == ["other", "other"]
    assert json.loads(df["payload"].iloc[0]) == ev("brand/new-thing", x=1)


def test_old_tool_result_shape(tmp_path: Path) -> None:
    f = write_log(
        tmp_path / "session.jsonl",
        [
            ev("tool/call", turn=1, step=1, callId="c1", name="grep", arguments='{"q": "x"}'),
            ev("tool/result", turn=1, step=1, callId="c1", isError=True,
               content=[{"type": "text", "text": "no match"}]),
        ],
    )  # fmt: skip
    df = read_toh(f, owner="t").events_df()
    res = df.iloc[1]
    assert (res["ref_id"], bool(res["is_error"]), res["text"], res["tool_name"]) == (
        "c1", True, "no match", "grep"
    )


# --------------------------------------------------------------------------- bad input
BAD_LINES: dict[str, tuple[object, str, str | None]] = {
    # name: (line, reason, field)
    "truncated_json": (b'{"type":"turn/start","data":{"tu', "bad_json", None),
    "non_object": (b"[1, 2, 3]", "not_object", None),
    "string_line": (b'"hello"', "not_object", None),
    "missing_type": ({"data": {}}, "missing_type", "type"),
    "invalid_utf8": (b'{"type":"user/message","data":{"t":"\xff\xfe"}}', "bad_utf8", None),
    "seq_not_int": ({**ev("turn/start", turn=1), "seq": "7a"}, "bad_seq", "seq"),
    "seq_float": ({**ev("turn/start", turn=1), "seq": 1.5}, "bad_seq", "seq"),
    "seq_negative": ({**ev("turn/start", turn=1), "seq": -1}, "bad_seq", "seq"),
    "seq_bool": ({**ev("turn/start", turn=1), "seq": True}, "bad_seq", "seq"),
    "time_text": ({**ev("turn/start", turn=1), "time": "noon"}, "bad_time", "time"),
    "packed_empty": (packed_text(1, texts=[], dt=[]), "bad_packed_row", "data.texts"),
    "packed_not_array": (packed_text(1, texts="abc", dt=[]), "bad_packed_row", "data.texts"),
    "packed_non_string": (packed_text(2, texts=["a", 3]), "bad_packed_row", "data.texts"),
    "packed_dt_length": (packed_text(3, dt=[1]), "bad_packed_row", "data.dt"),
    "packed_dt_float": (packed_text(3, dt=[1, 0.5]), "bad_packed_row", "data.dt"),
    "packed_dt_bool": (packed_text(3, dt=[1, True]), "bad_packed_row", "data.dt"),
    "packed_extra_key": (packed_text(2, extra=1), "bad_packed_row", "data"),
    "packed_missing_key": (
        {"type": "reasoning-chunks", "data": {"turn": 1, "step": 1, "dt": [], "texts": ["a"]}},
        "bad_packed_row",
        "data",
    ),
    "packed_top_level_extra": ({**packed_text(2), "seq": 3}, "bad_packed_row", "seq"),
    "packed_turn_text": (packed_text(2, turn="1"), "bad_packed_row", "data.turn"),
    "packed_seq0_negative": ({**packed_text(2), "seq0": -4}, "bad_packed_row", "seq0"),
    "packed_tool_no_name": (
        {"type": "tool-call-chunks",
         "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "id": "c", "name": 5,
                  "args": ["{}"]}},
        "bad_packed_row",
        "data.name",
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_bad_line_raises_with_file_line_field_and_reason(tmp_path: Path, name: str) -> None:
    line, reason, field = BAD_LINES[name]
    f = write_log(tmp_path / "session.jsonl", [ev("turn/start", turn=1), line])
    with pytest.raises(LoadError) as info:
        read_toh(f, owner="t")
    err = info.value
    assert (err.source, err.line, err.reason, err.field) == (str(f), 3, reason, field)
    assert f"{f}:3" in str(err) and "errors=" in str(err)


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_bad_line_is_quarantined_and_nothing_else_is_lost(tmp_path: Path, name: str) -> None:
    line, reason, field = BAD_LINES[name]
    f = write_log(
        tmp_path / "session.jsonl",
        [ev("turn/start", turn=1), line, ev("turn/end", turn=1, reason={"kind": "completed"})],
    )
    log = read_toh(f, owner="t", errors="quarantine")
    q = log.quarantine.to_pylist()
    assert [(r["line"], r["reason"], r["field"]) for r in q] == [(3, reason, field)]
    assert q[0]["raw"]
    df = log.events_df()
    assert df["type"].tolist() == ["turn/start", "turn/end"]
    # the quarantined line keeps its implicit seq slot(s): later numbers do not shift
    assert df["seq"].iloc[1] >= 2
    n_in, n_out = line_accounting(log, [f])
    assert n_in == n_out == 4


def test_duplicate_seq(tmp_path: Path) -> None:
    lines = [
        {**ev("turn/start", turn=1), "seq": 0},
        {**ev("step/start", turn=1, step=1), "seq": 1},
        {**ev("step/end", turn=1, step=1), "seq": 1},
    ]
    f = write_log(tmp_path / "session.jsonl", lines)
    with pytest.raises(LoadError) as info:
        read_toh(f, owner="t")
    assert (info.value.line, info.value.reason, info.value.field) == (4, "duplicate_seq", "seq")
    log = read_toh(f, owner="t", errors="quarantine")
    assert log.events_df()["type"].tolist() == ["turn/start", "step/start"]
    assert [(r["line"], r["reason"]) for r in log.quarantine.to_pylist()] == [
        (4, "duplicate_seq")
    ]


def test_duplicate_seq_between_a_packed_row_and_a_line(tmp_path: Path) -> None:
    lines = [{**packed_text(3), "seq0": 0}, {**ev("turn/end", turn=1), "seq": 2}]
    f = write_log(tmp_path / "session.jsonl", lines)
    log = read_toh(f, owner="t", errors="quarantine")
    assert log.events_df()["seq"].tolist() == [0, 1, 2]
    assert [r["line"] for r in log.quarantine.to_pylist()] == [3]


@pytest.mark.parametrize(
    ("header", "reason", "field"),
    [
        (ev("turn/start", turn=1), "missing_header", "type"),
        ({"type": "sessions", "id": "x"}, "missing_header", "type"),
        ({"type": "session"}, "bad_header", "id"),
        ({"type": "session", "id": "x", "seedLength": -1}, "bad_header", "seedLength"),
        ({"type": "session", "id": "x", "parentSession": 7}, "bad_header", "parentSession"),
        (b"[]", "missing_header", None),
        (b'{"type":"session","id":', "bad_json", None),
    ],
)
def test_missing_or_bad_header(tmp_path: Path, header: object, reason: str, field: str) -> None:
    f = write_log(tmp_path / "session.jsonl", [ev("turn/start", turn=1)] * 2, header=header)
    with pytest.raises(LoadError) as info:
        read_toh(f, owner="t")
    assert (info.value.line, info.value.reason, info.value.field) == (1, reason, field)
    log = read_toh(f, owner="t", errors="quarantine")
    assert len(log) == 0 and len(log.runs) == 0
    q = log.quarantine.to_pylist()
    assert [(r["line"], r["reason"]) for r in q] == [(1, reason), (2, "no_header"),
                                                     (3, "no_header")]  # fmt: skip
    n_in, n_out = line_accounting(log, [f])
    assert n_in == n_out == 3


def test_empty_file(tmp_path: Path) -> None:
    f = tmp_path / "session.jsonl"
    f.write_bytes(b"")
    with pytest.raises(LoadError) as info:
        read_toh(f, owner="t")
    assert (info.value.line, info.value.reason) == (None, "empty_file")
    assert str(f) in str(info.value)
    log = read_toh(f, owner="t", errors="quarantine")
    assert len(log) == 0
    assert [(r["line"], r["reason"]) for r in log.quarantine.to_pylist()] == [(None, "empty_file")]


def test_blank_lines_are_skipped_and_line_numbers_stay_exact(tmp_path: Path) -> None:
    f = write_log(tmp_path / "session.jsonl", [b"", ev("turn/start", turn=1), b"   "])
    df = read_toh(f, owner="t").events_df()
    assert df["source_line"].tolist() == [3] and df["seq"].tolist() == [0]


def test_input_file_is_not_modified(tmp_path: Path) -> None:
    f = write_log(tmp_path / "session.jsonl", [ev("turn/start", turn=1), b"{bad"])
    before = f.read_bytes()
    read_toh(f, owner="t", errors="quarantine")
    assert f.read_bytes() == before


def test_fifty_megabyte_single_line_loads(tmp_path: Path) -> None:
    big = "x" * (50 * 1024 * 1024)
    msg = ev("user/message", content=[{"type": "text", "text": big}], role="user", id="m1")
    f = write_log(tmp_path / "session.jsonl", [msg, ev("turn/start", turn=1)])
    assert f.stat().st_size > 50 * 1024 * 1024
    log = read_toh(f, owner="t")
    df = log.events_df()
    assert len(df) == 2 and len(df["text"].iloc[0]) == len(big)
    assert df["seq"].tolist() == [0, 1]


def test_fifty_megabyte_garbage_line_is_rejected_or_quarantined(tmp_path: Path) -> None:
    garbage = b'{"type":"user/message","data":"' + b"y" * (50 << 20)
    f = write_log(tmp_path / "session.jsonl", [garbage])
    with pytest.raises(LoadError) as info:
        read_toh(f, owner="t")
    assert (info.value.line, info.value.reason) == (2, "bad_json")
    log = read_toh(f, owner="t", errors="quarantine")
    assert len(log) == 0
    assert [(r["line"], r["reason"]) for r in log.quarantine.to_pylist()] == [(2, "bad_json")]
    one_line = tmp_path / "one" / "session.jsonl"
    one_line.parent.mkdir()
    one_line.write_bytes(b"z" * (50 << 20))
    with pytest.raises(LoadError) as info:
        read_toh(one_line, owner="t")
    assert (info.value.line, info.value.reason) == (1, "bad_json")


def test_progress_bar_can_be_on_or_off(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    on = read_toh(DATA, owner="demo", progress=True)
    off = read_toh(DATA, owner="demo", progress=False)
    assert on.table.equals(off.table)


# --------------------------------------------------------------------------- property
GOOD = {
    "event": (ev("step/start", turn=1, step=1), 1),
    "packed": (packed_text(4), 4),
    "tool": (ev("tool/call", turn=1, step=1, callId="c", name="n", arguments="{}"), 1),
}
CORRUPT = [v[0] for v in BAD_LINES.values()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(sorted(GOOD)).map(lambda k: ("good", k)),
            st.integers(0, len(CORRUPT) - 1).map(lambda i: ("bad", i)),
            st.just(("blank", None)),
        ),
        max_size=25,
    )
)
def test_loaded_plus_quarantined_equals_input_lines(mix: list[tuple[str, object]]) -> None:
    lines: list[object] = []
    n_events = n_bad = 0
    for what, key in mix:
        if what == "good":
            obj, n = GOOD[key]  # type: ignore[index]
            lines.append(obj)
            n_events += n
        elif what == "bad":
            lines.append(CORRUPT[key])  # type: ignore[index]
            n_bad += 1
        else:
            lines.append(b"")
    with tempfile.TemporaryDirectory() as tmp:
        f = write_log(Path(tmp) / "session.jsonl", lines)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            log = read_toh(f, owner="t", errors="quarantine")
        n_in, n_out = line_accounting(log, [f])
    assert n_in == n_out
    assert len(log.quarantine) == n_bad
    assert len(log) == n_events
    seq = log.events_df()["seq"].to_numpy()
    assert (np.diff(seq) > 0).all()


def test_many_lines_mixing_packed_and_plain_rows(tmp_path: Path) -> None:
    lines = [packed_text(10) if i % 3 == 0 else ev("step/start", turn=1, step=i)
             for i in range(3000)]  # fmt: skip
    f = write_log(tmp_path / "session.jsonl", lines)
    df = read_toh(f, owner="t").events_df()
    assert len(df) == 1000 * 10 + 2000
    assert df["seq"].tolist() == list(range(len(df)))
    assert df["source_line"].head(13).tolist() == [2] * 10 + [3, 4, 5]
