"""read_pleach: mapping to the canonical schema, bad input, tenant filter, Parquet, globs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaykit import LoadError, read_events
from replaykit._base.json import args_hash
from replaykit.datasets import generate_pleach
from replaykit.io import pleach
from replaykit.io.pleach import EVENT_KINDS, read_pleach, sniff

DATA = Path(__file__).resolve().parents[2] / "data" / "pleach"


def row(seq: int, event_type: str = "message.user", payload: Any = None, **kw: Any) -> dict:
    r = {
        "tenant_id": "acme",
        "chat_id": "c1",
        "sequence_number": seq,
        "event_type": event_type,
        "payload": {"message_id": f"m{seq}", "text": "hi"} if payload is None else payload,
        "created_at": "2026-01-01T00:00:00Z",
        "prev_hash": None,
        "row_hash": None,
    }
    r.update(kw)
    return r


def write(path: Path, lines: list[Any]) -> Path:
    with open(path, "wb") as fh:
        for item in lines:
            if isinstance(item, bytes):
                fh.write(item + b"\n")
            else:
                fh.write(json.dumps(item, ensure_ascii=False).encode() + b"\n")
    return path


def good_rows(n: int = 5) -> list[dict]:
    return [row(i) for i in range(n)]


# ----------------------------------------------------------------------------- happy path
def test_sample_has_every_event_type_and_loads_clean() -> None:
    log = read_pleach(DATA)
    assert log.quarantine.num_rows == 0
    types = set(log.table.column("type").to_pylist())
    assert set(EVENT_KINDS) <= types
    assert len(log.tenants) >= 3
    counts = log.extras["pleach_counts"].to_pylist()
    assert sum(c["loaded"] for c in counts) == len(log)
    assert all(c["input_rows"] == c["loaded"] for c in counts)
    # cacheKeys and a subagent child with its parent
    assert log.table.column("cache_key").null_count < len(log)
    runs = log.runs_df()
    assert runs["parent_run_id"].notna().any()
    assert (runs["format"] == "pleach").all()


def test_mapping_of_each_event_type(tmp_path: Path) -> None:
    rows = [
        row(0, "turn.started", {"turn": 1, "message_id": "m1"}),
        row(1, "message.user", {"message_id": "m1", "text": "do it"}),
        row(2, "model.requested", {"call_id": "mc1", "model": "x", "provider": "p"}),
        row(3, "model.completed", {"call_id": "mc1", "model": "x", "finish": "tool-calls",
                                   "text": "ok", "usage": {"input_tokens": 10,
                                                           "output_tokens": 3},
                                   "cacheKey": "ck1"}),
        row(4, "tool.called", {"call_id": "tc1", "tool": "bash",
                               "args": {"b": 1, "a": [1, 2]}}),
        row(5, "interrupt.raised", {"interrupt_id": "i1", "kind": "approval",
                                    "reason": "bash needs approval"}),
        row(6, "interrupt.resolved", {"interrupt_id": "i1", "outcome": "approved"}),
        row(7, "tool.completed", {"call_id": "tc1", "tool": "bash", "result": "boom",
                                  "is_error": True, "error": {"name": "E", "code": "X",
                                                              "message": "m"},
                                  "cacheKey": "ck2"}),
        row(8, "subagent.spawned", {"subagent_id": "s1", "label": "helper",
                                    "child_chat_id": "c2"}),
        row(9, "subagent.completed", {"subagent_id": "s1", "outcome": "completed"}),
        row(10, "export.created", {"export_id": "e1", "format": "pdf", "uri": "s3://x"}),
        row(11, "user_card.shown", {"card_id": "k1", "title": "t"}),
        row(12, "checkpoint.created", {"checkpoint_id": "cp1"}),
        row(13, "error.raised", {"code": "RATE", "message": "slow down"}),
        row(14, "turn.completed", {"turn": 1, "message_id": "m1", "cacheKey": "ck3"}),
        row(15, "custom.thing", {"anything": [1, {"deep": True}]}),
        row(0, "turn.started", {"turn": 1}, chat_id="c2"),
    ]
    log = read_pleach(write(tmp_path / "x.jsonl", rows))
    df = log.events_df().set_index(["run_id", "seq"]).loc["c1"]
    assert df["kind"].tolist() == [EVENT_KINDS.get(r["event_type"], "other") for r in rows[:-1]]
    assert df.loc[3, "ref_id"] == "mc1" and df.loc[3, "finish"] == "tool-calls"
    assert (df.loc[3, "input_tokens"], df.loc[3, "output_tokens"]) == (10, 3)
    assert df.loc[3, "cache_key"] == "ck1" and df.loc[7, "cache_key"] == "ck2"
    assert df.loc[4, "tool_name"] == "bash"
    assert df.loc[4, "args_hash"] == args_hash({"a": [1, 2], "b": 1})
    assert json.loads(df.loc[4, "text"]) == {"b": 1, "a": [1, 2]}
    assert df.loc[7, "ref_id"] == "tc1" and bool(df.loc[7, "is_error"])
    assert df.loc[7, "text"] == "boom"
    assert df.loc[5, "ref_id"] == "i1" and df.loc[6, "ref_id"] == "i1"
    assert df.loc[8, "ref_id"] == "s1" and df.loc[9, "ref_id"] == "s1"
    assert df.loc[12, "event_id"] == "cp1" and df.loc[1, "event_id"] == "m1"
    assert bool(df.loc[13, "is_error"]) and df.loc[13, "text"] == "slow down"
    assert df.loc[14, "ref_id"] == "m1" and df.loc[14, "cache_key"] == "ck3"
    assert df["turn"].tolist() == [1] * 16  # carried forward from turn.started
    assert df["is_error"].sum() == 2
    # payload is the source's JSON text of the object
    assert json.loads(df.loc[15, "payload"]) == {"anything": [1, {"deep": True}]}
    assert df.loc[15, "payload"] == json.dumps({"anything": [1, {"deep": True}]})
    child = log.events_df().query("run_id == 'c2'")
    assert child["parent_run_id"].tolist() == ["c1"]
    assert str(df["source"].iloc[0]).startswith("pleach:")
    assert df["source_line"].tolist() == list(range(1, 17))


def test_timestamps_iso_and_epoch_ms(tmp_path: Path) -> None:
    rows = [
        row(0, created_at="2026-01-01T00:00:01.500Z"),
        row(1, created_at=1767225601500),
        row(2, created_at="2026-01-01T01:00:01.500+01:00"),
        row(3, created_at=None),
    ]
    ts = read_pleach(write(tmp_path / "t.jsonl", rows)).events_df()["ts"].tolist()
    assert ts[0] == ts[1] == ts[2] == pa.scalar(1767225601500000, pa.timestamp("us", "UTC")).as_py()
    assert ts[3] is None or str(ts[3]) == "NaT"
    only_ms = [row(i, created_at=1767225601000 + i) for i in range(3)]
    ts2 = read_pleach(write(tmp_path / "m.jsonl", only_ms)).table.column("ts").to_pylist()
    assert [t.microsecond for t in ts2] == [0, 1000, 2000]


def test_generated_iso_and_mixed_agree(tmp_path: Path) -> None:
    a = read_pleach(generate_pleach(tmp_path / "a.jsonl", events=400, runs=6, timestamps="iso"))
    b = read_pleach(generate_pleach(tmp_path / "b.jsonl", events=400, runs=6,
                                    timestamps="epoch_ms"))
    assert a.table.column("ts").equals(b.table.column("ts"))
    assert a.table.column("payload").equals(b.table.column("payload"))


def test_parquet_matches_jsonl(tmp_path: Path) -> None:
    j = read_pleach(generate_pleach(tmp_path / "g.jsonl", events=300, runs=5, timestamps="iso"))
    p = read_pleach(generate_pleach(tmp_path / "g.parquet", events=300, runs=5,
                                    timestamps="iso", format="parquet"))
    for name in ("tenant_id", "run_id", "seq", "type", "kind", "ts", "ref_id", "args_hash",
                 "cache_key", "is_error", "finish", "input_tokens", "text", "row_hash",
                 "turn", "parent_run_id"):
        assert j.table.column(name).to_pylist() == p.table.column(name).to_pylist(), name
    assert [json.loads(x) for x in j.table.column("payload").to_pylist()] == [
        json.loads(x) for x in p.table.column("payload").to_pylist()
    ]


def test_glob_and_directory_input(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", [row(0), row(1)])
    write(tmp_path / "b.jsonl", [row(0, chat_id="c2")])
    assert len(read_pleach(str(tmp_path / "*.jsonl"))) == 3
    assert len(read_pleach(tmp_path)) == 3
    assert len(read_events(str(tmp_path / "*.jsonl"), format="pleach")) == 3


def test_sniff(tmp_path: Path) -> None:
    assert sniff(DATA / "harness_event_log.jsonl") is None
    assert sniff(DATA / "harness_event_log_hashed.parquet") is None
    other = write(tmp_path / "o.jsonl", [{"type": "session", "id": "x"}])
    assert "lacks" in sniff(other)
    assert sniff(write(tmp_path / "e.jsonl", [])) == "file is empty"


def test_tenant_filter_counts_other_tenants(tmp_path: Path) -> None:
    rows = [row(0), row(1), row(0, tenant_id="globex"), row(1, tenant_id="globex"),
            row(-5, tenant_id="globex")]  # a bad row of another tenant is not ours to report
    f = write(tmp_path / "t.jsonl", rows)
    log = read_pleach(f, tenant_id="acme")
    assert log.tenants == ["acme"] and len(log) == 2
    c = log.extras["pleach_counts"].to_pylist()[0]
    assert c == {"source": f"pleach:{f}", "input_rows": 5, "filtered_out": 3, "quarantined": 0,
                 "loaded": 2}
    with pytest.raises(LoadError, match="tenant_id") as e:
        read_pleach(f, tenant_id="")
    assert e.value.reason == "bad_tenant"


# ----------------------------------------------------------------------------- bad input
BAD_CASES = {
    "truncated": (b'{"tenant_id":"acme","chat_id":"c1","sequence_number":9,"payl', "bad_json",
                  None),
    "not_object": (b"[1, 2, 3]", "not_object", None),
    "seq_text": (row(9, sequence_number="7a"), "bad_seq", "sequence_number"),
    "seq_negative": (row(9, sequence_number=-1), "bad_seq", "sequence_number"),
    "seq_float": (row(9, sequence_number=1.5), "bad_seq", "sequence_number"),
    "tenant_missing": ({k: v for k, v in row(9).items() if k != "tenant_id"},
                       "missing_tenant", "tenant_id"),
    "tenant_empty": (row(9, tenant_id=""), "missing_tenant", "tenant_id"),
    "event_empty": (row(9, event_type=""), "unknown_event", "event_type"),
    "event_missing": ({k: v for k, v in row(9).items() if k != "event_type"},
                      "unknown_event", "event_type"),
    "payload_string": (row(9, payload="text"), "bad_payload", "payload"),
    "bad_utf8": (b'{"tenant_id":"acme","chat_id":"c1","sequence_number":9,'
                 b'"event_type":"x","payload":{"t":"\xff\xfe"}}', "bad_utf8", None),
    "bad_time": (row(9, created_at="yesterday"), "bad_timestamp", "created_at"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_row_raises_with_line_and_reason(tmp_path: Path, case: str) -> None:
    bad, reason, fld = BAD_CASES[case]
    f = write(tmp_path / "bad.jsonl", [*good_rows(3), bad, row(3)])
    with pytest.raises(LoadError) as info:
        read_pleach(f)
    err = info.value
    assert (err.reason, err.line, err.field) == (reason, 4, fld)
    assert f"{f}:4" in str(err) and "quarantine" in str(err)


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_row_quarantined_rest_loaded(tmp_path: Path, case: str) -> None:
    bad, reason, _ = BAD_CASES[case]
    f = write(tmp_path / "bad.jsonl", [*good_rows(3), bad, row(3)])
    log = read_pleach(f, errors="quarantine")
    q = log.quarantine.to_pylist()
    assert [(r["reason"], r["line"]) for r in q] == [(reason, 4)]
    assert q[0]["raw"]
    assert log.table.column("seq").to_pylist() == [0, 1, 2, 3]
    # the fast path (source text) still holds for the good rows of the block
    assert log.table.column("payload").to_pylist()[0] == json.dumps(row(0)["payload"])


def test_duplicate_seq_keeps_first(tmp_path: Path) -> None:
    rows = [row(0), row(1, payload={"message_id": "first"}),
            row(1, payload={"message_id": "second"}), row(2)]
    f = write(tmp_path / "d.jsonl", rows)
    with pytest.raises(LoadError) as info:
        read_pleach(f)
    assert (info.value.reason, info.value.line) == ("duplicate_seq", 3)
    log = read_pleach(f, errors="quarantine")
    assert len(log) == 3 and log.quarantine.column("line").to_pylist() == [3]
    assert json.loads(log.table.column("payload")[1].as_py())["message_id"] == "first"


def test_empty_file_and_blank_lines(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    log = read_pleach(empty)
    assert len(log) == 0 and log.quarantine.num_rows == 0
    f = tmp_path / "blank.jsonl"
    f.write_bytes(b"\n" + json.dumps(row(0)).encode() + b"\n\n  \n" + json.dumps(row(1)).encode())
    log = read_pleach(f)
    assert log.table.column("source_line").to_pylist() == [2, 5]


def test_parquet_bad_payload_and_missing_columns(tmp_path: Path) -> None:
    t = pa.table({
        "tenant_id": ["acme", "acme", None], "chat_id": ["c", "c", "c"],
        "sequence_number": [0, 1, 2], "event_type": ["x", "x", "x"],
        "payload": ['{"a": 1}', "[1]", "{}"], "created_at": [1, 2, 3],
    })
    pq.write_table(t, tmp_path / "p.parquet")
    log = read_pleach(tmp_path / "p.parquet", errors="quarantine")
    assert len(log) == 1
    assert sorted(r["reason"] for r in log.quarantine.to_pylist()) == [
        "bad_payload", "missing_tenant"]
    pq.write_table(t.drop_columns(["payload"]), tmp_path / "q.parquet")
    with pytest.raises(LoadError, match="payload"):
        read_pleach(tmp_path / "q.parquet")


def test_robust_path_agrees_with_fast_path(tmp_path: Path) -> None:
    src = generate_pleach(tmp_path / "g.jsonl", events=500, runs=7, timestamps="iso")
    clean = read_pleach(src)
    lines = src.read_bytes().splitlines()
    lines.insert(100, b'{"broken":')  # forces the block through the per-line path
    f = tmp_path / "g2.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    log = read_pleach(f, errors="quarantine")
    assert log.quarantine.num_rows == 1
    for name in ("run_id", "seq", "kind", "ref_id", "payload", "text", "args_hash", "ts"):
        assert log.table.column(name).to_pylist() == clean.table.column(name).to_pylist()


def test_heterogeneous_payload_types_fall_back_canonically(tmp_path: Path) -> None:
    rows = [row(0, "custom", {"text": {"nested": 1}, "z": 1, "a": 2}), row(1)]
    log = read_pleach(write(tmp_path / "h.jsonl", rows))
    assert len(log) == 2 and log.quarantine.num_rows == 0
    assert json.loads(log.table.column("payload")[0].as_py()) == rows[0]["payload"]


def test_fast_path_is_taken_for_clean_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("robust path used for clean input")

    monkeypatch.setattr(pleach, "_robust_block", boom)
    f = generate_pleach(tmp_path / "g.jsonl", events=300, runs=4)
    assert len(read_pleach(f)) == 300


def test_fast_path_reads_spaced_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports written with ``", "``/``": "`` separators (e.g. PostgreSQL's JSONB text) stay
    on the column-wise path and load exactly like compact lines."""
    src = generate_pleach(tmp_path / "g.jsonl", events=400, runs=5, timestamps="iso")
    compact = read_pleach(src)
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text("".join(json.dumps(json.loads(line)) + "\n"
                              for line in src.read_text().splitlines()))

    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("robust path used for clean input")

    monkeypatch.setattr(pleach, "_robust_block", boom)
    log = read_pleach(spaced)
    for name in compact.table.column_names:
        if name not in ("payload", "source"):
            assert log.table.column(name).equals(compact.table.column(name)), name
    assert [json.loads(p) for p in log.table.column("payload").to_pylist()] == [
        json.loads(p) for p in compact.table.column("payload").to_pylist()]


# ----------------------------------------------------------------------------- invariant
_CORRUPTIONS = [
    b"", b"{", b"[]", b"null", b'{"tenant_id": 5}', b"\xff\xfe", b'"str"',
    b'{"tenant_id":"acme","chat_id":"c1","sequence_number":-3,"event_type":"x","payload":{}}',
    b'{"tenant_id":"acme","chat_id":"c1","sequence_number":1,"event_type":"x","payload":{}}',
    b'{"tenant_id":"globex","chat_id":"c9","sequence_number":0,"event_type":"x","payload":{}}',
    b'{"tenant_id":"acme","chat_id":"c1","sequence_number":50,"event_type":"","payload":{}}',
    b'{"tenant_id":"acme","chat_id":"c1","sequence_number":51,"event_type":"x","payload":1}',
]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picks=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(_CORRUPTIONS)), max_size=8),
    only_acme=st.booleans(),
)
def test_loaded_plus_quarantined_equals_input_rows(
    tmp_path: Path, picks: list[tuple[int, bytes]], only_acme: bool
) -> None:
    lines = [json.dumps(row(i)).encode() for i in range(30)]
    for pos, raw in picks:
        lines.insert(min(pos, len(lines)), raw)
    f = tmp_path / "h.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    input_rows = sum(1 for ln in lines if ln.strip())
    log = read_pleach(f, errors="quarantine", tenant_id="acme" if only_acme else None)
    c = log.extras["pleach_counts"].to_pylist()[0]
    assert c["input_rows"] == input_rows
    assert len(log) + log.quarantine.num_rows + c["filtered_out"] == input_rows
    assert c["loaded"] == len(log)
    if not only_acme:
        assert c["filtered_out"] == 0


# ----------------------------------------------------------------------------- speed-path parity
_ARGS_CASES: list[Any] = [
    {"path": "a.py", "offset": 3, "limit": 2},  # keys not sorted in the source
    {"b": [1, {"z": 1, "a": "é\u2028"}], "a": 1.5},
    '{"y": 1, "x": [2]}',  # a string holding JSON: hashed by the value it holds
    "not json {",
    None,
    [3, 1, 2],
    7,
    {},
]


def test_tool_args_hash_equals_args_hash_for_every_row(tmp_path: Path) -> None:
    rows = [
        row(i, "tool.called", {"call_id": f"t{i}", "tool": "x", "args": a})
        for i, a in enumerate(_ARGS_CASES * 3)
    ]
    log = read_pleach(write(tmp_path / "a.jsonl", rows))
    got = log.table.column("args_hash").to_pylist()
    text = log.table.column("text").to_pylist()
    for r, h, t in zip(rows, got, text, strict=True):
        a = r["payload"]["args"]
        assert h == (None if a is None else args_hash(a))
        assert t == (None if a is None else json.dumps(a, sort_keys=True, ensure_ascii=False,
                                                        separators=(",", ":")))


def test_sort_and_duplicates_across_blocks_and_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pleach, "_BLOCK", 512)  # many small blocks
    big = 2**62  # a sequence range too wide to pack into one sort key
    keys = [("b", "c2", 5), ("a", "c1", 1), ("b", "c1", big), ("a", "c1", 0), ("b", "c1", 0),
            ("a", "c1", 1), ("a", "c9", 3), ("b", "c2", 5), ("a", "c1", 0)]
    rows = [row(s, chat_id=c, tenant_id=t, payload={"message_id": f"m{i}", "text": str(i)})
            for i, (t, c, s) in enumerate(keys)]
    write(tmp_path / "1.jsonl", rows[:5])
    write(tmp_path / "2.jsonl", rows[5:])
    log = read_pleach(tmp_path, errors="quarantine")
    got = list(zip(log.table.column("tenant_id").to_pylist(),
                   log.table.column("run_id").to_pylist(),
                   log.table.column("seq").to_pylist(),
                   log.table.column("text").to_pylist(), strict=True))
    first: dict[tuple[str, str, int], str] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, str(i))
    assert got == sorted((*k, v) for k, v in first.items())
    q = log.quarantine.to_pylist()
    assert [r["reason"] for r in q] == ["duplicate_seq"] * 3
    assert [(Path(r["source"].split(":", 1)[1]).name, r["line"]) for r in q] == [
        ("2.jsonl", 1), ("2.jsonl", 3), ("2.jsonl", 4)
    ]


def test_memory_pool_is_restored(tmp_path: Path) -> None:
    before = pa.default_memory_pool().backend_name
    read_pleach(write(tmp_path / "a.jsonl", good_rows()))
    assert pa.default_memory_pool().backend_name == before
    with pytest.raises(LoadError):
        read_pleach(write(tmp_path / "b.jsonl", [b"{"]))
    assert pa.default_memory_pool().backend_name == before


_TRICKY = [
    # a "payload" key inside an earlier nested object: not the second '{' of the line
    b'{"tenant_id":"acme","chat_id":"c1","sequence_number":0,"event_type":"tool.called",'
    b'"meta":{"payload":{}},"payload":{"call_id":"a","tool":"t","args":{"b":1,"a":2}}}',
    # braces and the key's bytes inside strings around the payload
    b'{"x":"\\"payload\\":","tenant_id":"acme","chat_id":"c1","sequence_number":1,'
    b'"event_type":"tool.completed","payload":{"call_id":"}{","result":"}}"},'
    b'"prev_hash":"x}y"}',
    # whitespace around the payload value, payload first
    b'{"payload":  {"message_id":"m","text":"hi"} ,"tenant_id":"acme","chat_id":"c1",'
    b'"sequence_number":2,"event_type":"message.user"}',
    # spaces around the colon, and a '}' in a string after the payload (the candidate
    # span then ends inside that string: the parses must reject it)
    b'{"tenant_id": "acme", "chat_id": "c1", "sequence_number": 4, "event_type": '
    b'"message.user", "payload" : {"message_id": "m4", "text": "a}"}, "prev_hash": "}"}',
    # an object after the payload
    b'{"tenant_id":"acme","chat_id":"c1","sequence_number":3,"event_type":"message.user",'
    b'"payload":{"message_id":"m3","text":"x"},"extra":{"q":1}}',
]


@pytest.mark.parametrize("line", _TRICKY)
def test_tricky_lines_load_like_the_per_line_decoder(tmp_path: Path, line: bytes) -> None:
    good = [row(i, chat_id="g") for i in range(3)]
    f = write(tmp_path / "t.jsonl", [*(json.dumps(r).encode() for r in good), line])
    log = read_pleach(f)
    assert log.quarantine.num_rows == 0 and len(log) == 4
    obj = json.loads(line)
    expect = {(r["chat_id"], r["sequence_number"]): r["payload"] for r in [*good, obj]}
    got = zip(log.table.column("run_id").to_pylist(), log.table.column("seq").to_pylist(),
              log.table.column("payload").to_pylist(), strict=True)
    for chat, seq, payload in got:
        assert json.loads(payload) == expect[(chat, seq)]


# ------------------------------------------------------- property: any formatting, same rows
_TRICKY_TEXT = st.sampled_from(["}", "{", '"payload":', "a\\b", "x\ny", "é ü", "}}{{", "", "null"])
_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), _TRICKY_TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b", "}", "payload"]), inner,
                                            max_size=3)),
    max_leaves=6,
)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(
        st.sampled_from(["message.user", "tool.called", "tool.completed", "custom.thing"]),
        st.dictionaries(st.sampled_from(["text", "call_id", "tool", "args", "result", "z"]),
                        _VALUE, max_size=4),
        st.sampled_from(["first", "middle", "last"]),   # where the payload key sits
        st.booleans(),                                   # spaced separators
        st.booleans(),                                   # an object member after the payload
        st.booleans(),                                   # ... and one before it
    ), min_size=1, max_size=12),
    crlf=st.booleans(),
)
def test_any_formatting_loads_like_the_per_line_decoder(tmp_path: Path, rows: list,
                                                        crlf: bool) -> None:
    """Lines in any key order and spacing, with braces, quotes and the payload key's bytes
    inside strings, load to exactly the rows json.loads sees (fast path or not)."""
    lines = []
    expect = {}
    for i, (etype, payload, where, spaced, extra, before) in enumerate(rows):
        env = {"tenant_id": "acme", "chat_id": f"c{i % 3}", "sequence_number": i,
               "event_type": etype, "created_at": "2026-01-01T00:00:00Z"}
        items = list(env.items())
        pos = {"first": 0, "middle": 2, "last": len(items)}[where]
        items.insert(pos, ("payload", payload))
        if extra:
            items.append(("meta", {"note": "}", "n": 1}))
        if before:
            items.insert(0, ("meta0", {"payload": {"not": "this"}}))
        sep = (", ", ": ") if spaced else (",", ":")
        lines.append(json.dumps(dict(items), ensure_ascii=False, separators=sep).encode())
        expect[(f"c{i % 3}", i)] = (etype, payload)
    f = tmp_path / "p.jsonl"
    f.write_bytes(b"".join(line + (b"\r\n" if crlf else b"\n") for line in lines))
    log = read_pleach(f)
    assert len(log) == len(rows) and log.quarantine.num_rows == 0
    t = log.table
    got = zip(t.column("run_id").to_pylist(), t.column("seq").to_pylist(),
              t.column("type").to_pylist(), t.column("payload").to_pylist(), strict=True)
    for chat, seq, etype, payload in got:
        assert (etype, json.loads(payload)) == expect[(chat, seq)]
