"""Messy input classes of issue 15, one test each: deep JSON, big numbers, Parquet files that are
not what they claim, pleach row accounting and mixed folders.

Each case gets a replaykit error (or quarantine row) with its reason, never a raw exception;
where a value loads, the payload keeps its digits.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import replaykit as rk
from replaykit._base.json import JSONDecodeError, JSONTooDeep, canonical_json, loads
from replaykit.errors import FormatDetectionError, LoadError

DATA = Path(__file__).resolve().parents[2] / "data"
BIG = 123456789012345678901234567890
HEADER = {"type": "session", "version": 0, "id": "s-1", "createdAt": 1767312000000}


def _deep(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def _toh(tmp_path: Path, *lines: str | dict[str, Any], header: dict | None = None) -> Path:
    p = tmp_path / "session.jsonl"
    body = [json.dumps(header or HEADER)] + [x if isinstance(x, str) else json.dumps(x)
                                             for x in lines]
    p.write_text("\n".join(body) + "\n")
    return p


def _reasons(log: rk.EventLog) -> list[str]:
    return log.quarantine.column("reason").to_pylist()


def _load_error(fn: Any, *args: Any, **kwargs: Any) -> LoadError:
    with pytest.raises(LoadError) as info:
        fn(*args, **kwargs)
    return info.value


GOOD = {"type": "turn/start", "data": {"turn": 1}}


# ----------------------------------------------------------------------------- JSON helpers
def test_loads_is_strict_and_lossless() -> None:
    assert loads(f'{{"n": {BIG}}}'.encode()) == {"n": BIG}
    assert loads(f"[-{BIG}]") == [-BIG]
    assert canonical_json({"n": BIG, "f": 1.5}) == f'{{"f":1.5,"n":{BIG}}}'
    for bad in (b"[NaN]", b'{"a": Infinity}', b"[-Infinity]", b"[1e400]", f"[{BIG}, NaN]"):
        with pytest.raises(JSONDecodeError):
            loads(bad)
    with pytest.raises(JSONTooDeep):
        loads(_deep(300))
    assert loads(_deep(150)) is not None
    # brackets inside strings are not nesting
    assert loads(json.dumps(["[" * 500])) == ["[" * 500]


# ----------------------------------------------------------------------------- depth
@pytest.mark.parametrize("depth", [300, 1100, 10_000])
def test_deep_toh_line(tmp_path: Path, depth: int) -> None:
    p = _toh(tmp_path, GOOD, '{"type":"x/y","data":' + _deep(depth) + "}", GOOD)
    err = _load_error(rk.read_toh, p, owner="t")
    assert err.line == 3 and err.reason in ("too_deep", "bad_json")
    log = rk.read_toh(p, owner="t", errors="quarantine")
    assert len(log) == 2 and log.quarantine.column("line").to_pylist() == [3]
    assert _reasons(log) == ["too_deep" if depth < 1024 else "bad_json"]


@pytest.mark.parametrize("depth", [300, 1100])
def test_deep_isplay_document(tmp_path: Path, depth: int) -> None:
    doc = json.loads(DATA.joinpath("isplay", "claims-triage-C-231.json").read_text())
    n = len(doc["events"])
    doc["events"][3]["output"] = "HOLE"
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc, indent=1).replace('"HOLE"', _deep(depth)))
    err = _load_error(rk.read_isplay, p, owner="t")
    assert err.reason == "too_deep"
    log = rk.read_isplay(p, owner="t", errors="quarantine")
    assert _reasons(log) == ["too_deep"]
    if depth < 1000:  # one event is rejected, the others load
        assert len(log) == n - 1
    else:  # beyond the parser's reach the document is one bad row
        assert len(log) == 0


@pytest.mark.parametrize("depth", [300, 1100])
def test_isplay_document_that_is_a_deep_array(tmp_path: Path, depth: int) -> None:
    p = tmp_path / "run.json"
    p.write_text(_deep(depth))
    err = _load_error(rk.read_isplay, p, owner="t")
    assert err.reason == ("too_deep" if depth > 1000 else "not_object")
    assert _reasons(rk.read_isplay(p, owner="t", errors="quarantine")) == [err.reason]


def _otel_doc(value: dict[str, Any] | str, start: Any = "1767225600000000000") -> str:
    span = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "aaaaaaaaaaaaaaa1",
            "name": "chat m", "startTimeUnixNano": start,
            "endTimeUnixNano": "1767225600000500000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                           {"key": "custom", "value": "HOLE"}]}  # fmt: skip
    text = json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                          "scopeSpans": [{"scope": {"name": "s"},
                                                          "spans": [span]}]}]})  # fmt: skip
    return text.replace('"HOLE"', value if isinstance(value, str) else json.dumps(value))


def _kvlist(levels: int) -> str:
    return '{"kvlistValue":{"values":[{"key":"a","value":' * levels + '{"intValue":"1"}' + \
        "}]}}" * levels  # fmt: skip


def test_deep_otel_any_value(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(_otel_doc(_kvlist(100)))  # 400 JSON levels
    err = _load_error(rk.read_otel, p, owner="t")
    assert err.reason in ("bad_json", "too_deep") and "deep" in str(err)
    log = rk.read_otel(p, owner="t", errors="quarantine")
    assert len(log) == 0 and log.quarantine.num_rows == 1
    p.write_text(_otel_doc(_kvlist(40)))  # 160 levels: accepted, decoded in full
    log = rk.read_otel(p, owner="t")
    value = json.loads(log.table.column("payload")[0].as_py())["attributes"]["custom"]
    for _ in range(40):
        value = value["a"]
    assert value == 1


# ----------------------------------------------------------------------------- big numbers
@pytest.mark.parametrize(("line", "reason", "field"), [
    ({"type": "x", "time": BIG, "data": {}}, "bad_time", "time"),
    ({"type": "x", "time": 1e30, "data": {}}, "bad_time", "time"),
    ({"type": "x", "seq": 2**64, "data": {}}, "bad_seq", "seq"),
    ({"type": "text-chunks", "time0": 1, "data": {"turn": 1, "step": 1, "index": 0,
      "dt": [2**64], "texts": ["a", "b"]}}, "bad_packed_row", "data.dt"),
    ({"type": "text-chunks", "time0": 1, "data": {"turn": 1, "step": 1, "index": 0,
      "dt": [2**62, 2**62], "texts": ["a", "b", "c"]}}, "bad_packed_row", "data.dt"),
    ({"type": "text-chunks", "time0": 10**30, "data": {"turn": 1, "step": 1, "index": 0,
      "dt": [], "texts": ["a"]}}, "bad_packed_row", "time0"),
    ({"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {
        "type": "usage", "usage": {"inputTokens": BIG, "outputTokens": 1}}}},
     "bad_tokens", "data.chunk.usage"),
])  # fmt: skip
def test_big_numbers_toh(tmp_path: Path, line: dict, reason: str, field: str) -> None:
    p = _toh(tmp_path, GOOD, line)
    err = _load_error(rk.read_toh, p, owner="t")
    assert (err.reason, err.field, err.line) == (reason, field, 3)
    log = rk.read_toh(p, owner="t", errors="quarantine")
    assert len(log) == 1 and _reasons(log) == [reason]


def test_big_numbers_toh_header_and_payload(tmp_path: Path) -> None:
    p = _toh(tmp_path, GOOD, header={**HEADER, "createdAt": 2**70})
    err = _load_error(rk.read_toh, p, owner="t")
    assert (err.reason, err.field) == ("bad_header", "createdAt")
    # huge gaps are allowed while the member times stay in range
    p = _toh(tmp_path, {"type": "text-chunks", "time0": 0, "data": {
        "turn": 1, "step": 1, "index": 0, "dt": [10**14, -(10**14)], "texts": ["a", "b", "c"]}},
        {"type": "x/big", "data": {"n": BIG, "m": -BIG, "u": 2**64 - 1}})  # fmt: skip
    log = rk.read_toh(p, owner="t")
    payload = log.table.column("payload").to_pylist()[-1]
    assert f'"n":{BIG}' in payload and f'"m":-{BIG}' in payload
    assert f'"u":{2**64 - 1}' in payload and "e+29" not in payload
    assert json.loads(payload)["data"] == {"n": BIG, "m": -BIG, "u": 2**64 - 1}


def test_big_numbers_isplay(tmp_path: Path) -> None:
    doc = json.loads(DATA.joinpath("isplay", "claims-triage-C-231.json").read_text())
    n = len(doc["events"])
    k = next(i for i, e in enumerate(doc["events"]) if "usage" in e)
    doc["events"][k]["usage"]["outputTokens"] = 2**63
    doc["events"][0]["extra"] = BIG
    doc["run"]["metadata"] = {"budget": BIG}
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc))
    err = _load_error(rk.read_isplay, p, owner="t")
    assert (err.reason, err.field) == ("bad_type", f"events[{k}].usage.outputTokens")
    log = rk.read_isplay(p, owner="t", errors="quarantine")
    assert len(log) == n - 1 and _reasons(log) == ["bad_type"]
    assert f'"extra":{BIG}' in log.table.column("payload")[0].as_py()
    assert json.loads(log.runs.column("attrs")[0].as_py())["metadata"] == {"budget": BIG}


@pytest.mark.parametrize(("value", "start"), [
    ({"intValue": str(BIG)}, "1767225600000000000"),
    ({"intValue": 2**63}, "1767225600000000000"),
    ({"intValue": 1e30}, "1767225600000000000"),
    ({"stringValue": "x"}, str(BIG)),
    ({"stringValue": "x"}, 1e30),
])  # fmt: skip
def test_big_numbers_otel(tmp_path: Path, value: dict, start: Any) -> None:
    p = tmp_path / "t.json"
    p.write_text(_otel_doc(value, start))
    err = _load_error(rk.read_otel, p, owner="t")
    assert err.reason == "bad_span" and "64" in str(err)
    log = rk.read_otel(p, owner="t", errors="quarantine")
    assert len(log) == 0 and _reasons(log) == ["bad_span"]


def _pleach_rows(n: int = 3, **override: Any) -> list[dict[str, Any]]:
    return [{"tenant_id": "acme", "chat_id": "c1", "sequence_number": i,
             "event_type": "message.user", "payload": {"text": f"m{i}"},
             "created_at": "2026-01-01T00:00:00Z", **(override if i == 1 else {})}
            for i in range(n)]  # fmt: skip


def test_big_numbers_pleach(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in _pleach_rows(created_at=2**62)) + "\n")
    err = _load_error(rk.read_pleach, p)
    assert (err.reason, err.line) == ("bad_timestamp", 2)
    # a payload with a big integer keeps its digits (fast path: the source text)
    rows = _pleach_rows()
    rows[1]["payload"] = {"text": "x", "n": BIG}
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert f'"n": {BIG}' in rk.read_pleach(p).table.column("payload")[1].as_py()
    # ... and on the row-by-row path too (mixed payload types force it)
    rows[2]["payload"] = {"text": {"not": "a string"}}
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    payload = rk.read_pleach(p).table.column("payload")[1].as_py()
    assert str(BIG) in payload and "e+29" not in payload
    # Parquet created_at of 2**62 ms
    t = pa.table({k: [r[k] for r in _pleach_rows()] for k in
                  ("tenant_id", "chat_id", "sequence_number", "event_type")})
    t = t.append_column("payload", pa.array(['{"text":"a"}'] * 3)).append_column(
        "created_at", pa.array([0, 2**62, 1000], pa.int64()))
    pq.write_table(t, tmp_path / "log.parquet")
    err = _load_error(rk.read_pleach, tmp_path / "log.parquet")
    assert (err.reason, err.line) == ("bad_timestamp", 2)
    log = rk.read_pleach(tmp_path / "log.parquet", errors="quarantine")
    assert len(log) == 2 and _reasons(log) == ["bad_timestamp"]


# ----------------------------------------------------------------------------- Parquet
def _damaged(good: bytes) -> dict[str, bytes]:
    flipped = bytearray(good)
    for i in range(len(good) // 2, len(good) // 2 + 64):
        flipped[i] ^= 0xFF
    flipped[-6] ^= 0xFF  # the footer length
    return {
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "flipped": bytes(flipped),
        "random": bytes(range(256)) * 8,
        "jsonl": DATA.joinpath("pleach", "harness_event_log.jsonl").read_bytes()[:2000],
    }


@pytest.mark.parametrize("kind", ["truncated", "empty", "flipped", "random", "jsonl"])
def test_parquet_that_is_not_parquet(tmp_path: Path, kind: str) -> None:
    good = DATA.joinpath("pleach", "harness_event_log_hashed.parquet").read_bytes()
    bad = tmp_path / "in" / "bad.parquet"
    bad.parent.mkdir()
    bad.write_bytes(_damaged(good)[kind])
    (tmp_path / "in" / "good.parquet").write_bytes(good)
    err = _load_error(rk.read_pleach, bad)
    assert err.reason == "bad_parquet" and str(bad) in str(err)
    log = rk.read_pleach(tmp_path / "in", errors="quarantine")
    assert len(log) == pq.read_metadata(tmp_path / "in" / "good.parquet").num_rows
    q = log.quarantine.to_pylist()
    assert [(r["reason"], r["line"]) for r in q] == [("bad_parquet", None)]
    assert str(bad) in q[0]["source"] and str(bad) in q[0]["message"]
    counts = {r["source"]: r for r in log.extras["pleach_counts"].to_pylist()}
    assert counts[f"pleach:{bad}"]["input_rows"] == counts[f"pleach:{bad}"]["quarantined"] == 1
    # read_events sniffs it without a raw error (the file matches no format)
    with pytest.raises(FormatDetectionError):
        rk.read_events(bad)


def test_parquet_wrong_schema_is_one_quarantine_row(tmp_path: Path) -> None:
    good = DATA.joinpath("pleach", "harness_event_log_hashed.parquet")
    t = pq.read_table(good)
    (tmp_path / "in").mkdir()
    pq.write_table(t.drop_columns(["chat_id"]), tmp_path / "in" / "a_nochat.parquet")
    pq.write_table(t.set_column(t.column_names.index("payload"), "payload",
                                pa.array([1.5] * t.num_rows)), tmp_path / "in" / "b_float.parquet")
    pq.write_table(t, tmp_path / "in" / "c_good.parquet")
    err = _load_error(rk.read_pleach, tmp_path / "in" / "a_nochat.parquet")
    assert err.reason == "bad_schema"
    err = _load_error(rk.read_pleach, tmp_path / "in" / "b_float.parquet")
    assert (err.reason, err.field) == ("bad_type", "payload")
    log = rk.read_pleach(tmp_path / "in", errors="quarantine")
    assert len(log) == t.num_rows
    q = log.quarantine.to_pylist()
    assert [(Path(r["source"]).name, r["reason"], r["line"]) for r in q] == [
        ("a_nochat.parquet", "bad_schema", None), ("b_float.parquet", "bad_type", None)]
    assert all(r["message"] for r in q)


def test_damaged_parquet_dataset(tmp_path: Path) -> None:
    rk.read_toh(DATA / "toh" / "shed-fork", owner="t").to_parquet(tmp_path / "ds")
    part = next((tmp_path / "ds").rglob("part-*.parquet"))
    part.write_bytes(part.read_bytes()[:100])
    err = _load_error(rk.read_parquet, tmp_path / "ds")
    assert err.reason == "bad_parquet" and str(tmp_path / "ds") in str(err)
    with pytest.raises(LoadError):
        rk.read_events(tmp_path / "ds", tenant_id="t")


# ----------------------------------------------------------------------------- pleach accounting
def test_pleach_whitespace_lines_are_not_rows(tmp_path: Path) -> None:
    rows = [json.dumps(r) for r in _pleach_rows(2)]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join([rows[0], "   ", "\t", " \t ", "", rows[1], "  "]) + "\n")
    for errors in ("raise", "quarantine"):
        log = rk.read_pleach(p, errors=errors)  # type: ignore[arg-type]
        c = log.extras["pleach_counts"].to_pylist()[0]
        assert (len(log), c["input_rows"], c["loaded"], c["quarantined"]) == (2, 2, 2, 0)
        assert log.table.column("source_line").to_pylist() == [1, 6]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("path", ["fast", "fallback"])
def test_pleach_nonfinite_literals_are_bad_json(tmp_path: Path, literal: str, path: str) -> None:
    rows = [json.dumps(r) for r in _pleach_rows(4)]
    rows[1] = rows[1].replace('"text": "m1"', f'"text": "m1", "score": {literal}')
    if path == "fallback":  # a broken line sends the block to the row-by-row path
        rows[3] = rows[3][:20]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(rows) + "\n")
    err = _load_error(rk.read_pleach, p)
    assert (err.reason, err.line) == ("bad_json", 2)
    log = rk.read_pleach(p, errors="quarantine")
    bad = {r["line"]: r["reason"] for r in log.quarantine.to_pylist()}
    assert bad == ({2: "bad_json"} if path == "fast" else {2: "bad_json", 4: "bad_json"})
    assert log.table.column("source_line").to_pylist() == [1, 3] + ([4] if path == "fast" else [])
    c = log.extras["pleach_counts"].to_pylist()[0]
    assert c["input_rows"] == 4 and c["loaded"] == len(log)


@pytest.mark.parametrize("path", ["fast", "fallback"])
def test_pleach_deep_payload_is_rejected_on_both_paths(tmp_path: Path, path: str) -> None:
    rows = [json.dumps(r) for r in _pleach_rows(4)]
    rows[1] = rows[1].replace('"text": "m1"', '"text": "m1", "deep": ' + _deep(300))
    if path == "fallback":
        rows[3] = rows[3][:20]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(rows) + "\n")
    err = _load_error(rk.read_pleach, p)
    assert (err.reason, err.line) == ("bad_json", 2) and "deep" in str(err)
    log = rk.read_pleach(p, errors="quarantine")
    assert log.table.column("source_line").to_pylist() == [1, 3] + ([4] if path == "fast" else [])


def test_pleach_text_mentioning_nan_still_loads_byte_for_byte(tmp_path: Path) -> None:
    rows = _pleach_rows(2)
    rows[1]["payload"] = {"text": "score:NaN, [Infinity"}
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    log = rk.read_pleach(p)
    assert log.table.column("payload")[1].as_py() == json.dumps(rows[1]["payload"])


# ----------------------------------------------------------------------------- mixed folders
@pytest.mark.parametrize("odd", [b"", b"\x00\x01\xff\xfe binary \x00", b'{"hello": "world"}\n'])
def test_mixed_folder_skips_unknown_files_and_names_them(tmp_path: Path, odd: bytes) -> None:
    """The command line's rule in Python: a folder's file of no known format is skipped,
    counted and named in one SkippedFilesWarning (under both error modes); named
    explicitly, it still raises."""
    from replaykit.io import SkippedFilesWarning

    (tmp_path / "toh").mkdir()
    for f in (DATA / "toh" / "shed-fork").glob("*.jsonl"):
        (tmp_path / "toh" / f.name).write_bytes(f.read_bytes())
    (tmp_path / "run.json").write_bytes(
        DATA.joinpath("isplay", "claims-triage-C-231.json").read_bytes())
    (tmp_path / "odd.jsonl").write_bytes(odd)
    expected = len(rk.read_toh(tmp_path / "toh", owner="t")) + len(
        rk.read_isplay(tmp_path / "run.json", owner="t"))
    for errors in ("raise", "quarantine"):
        with pytest.warns(SkippedFilesWarning) as rec:
            log = rk.read_events(tmp_path, owner="t", errors=errors)
        assert len(log) == expected and len(log.quarantine) == 0
        (w,) = [r for r in rec if r.category is SkippedFilesWarning]
        assert Path(w.filename).name == "test_messy_input.py"  # the caller's line
        assert [(e.source, e.reason) for e in w.message.files] == [
            (str(tmp_path / "odd.jsonl"), "unknown_format")]
        assert str(w.message).startswith("1 file(s) of no known format skipped: ")
        assert str(tmp_path / "odd.jsonl") in str(w.message)
        assert "toh:" in str(w.message.files[0]) and "pleach:" in str(w.message.files[0])
    with pytest.raises(FormatDetectionError) as info:
        rk.read_events(tmp_path / "odd.jsonl", owner="t")
    assert info.value.source == str(tmp_path / "odd.jsonl")


def test_canonical_json_depth_error_is_typed() -> None:
    deep: Any = 1
    for _ in range(400):
        deep = [deep]
    with pytest.raises(JSONTooDeep):
        canonical_json(deep)


def test_parquet_with_invalid_utf8_text(tmp_path: Path) -> None:
    t = pa.table({k: [r[k] for r in _pleach_rows()] for k in
                  ("tenant_id", "chat_id", "sequence_number", "event_type")})
    t = t.append_column("payload", pa.array(['{"text":"MARKER-1"}', '{"text":"b"}', '{}']))
    p = tmp_path / "log.parquet"
    pq.write_table(t, p, compression="none", use_dictionary=False, write_statistics=False)
    data = p.read_bytes()
    assert data.count(b"MARKER-1") == 1
    p.write_bytes(data.replace(b"MARKER-1", b"\xffARKER-1"))
    err = _load_error(rk.read_pleach, p)
    assert err.reason == "bad_parquet" and str(p) in str(err)
    log = rk.read_pleach(p, errors="quarantine")
    assert len(log) == 0 and _reasons(log) == ["bad_parquet"]


def test_pleach_turn_beyond_int32_is_null(tmp_path: Path) -> None:
    rows = _pleach_rows(3)
    for r, turn in zip(rows, (1, -(2**63), 2**40), strict=True):
        r["event_type"], r["payload"] = "turn.started", {"turn": turn}
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    log = rk.read_pleach(p)
    # the out-of-range turns are null on their rows, and the previous turn is carried on
    assert log.table.column("turn").to_pylist() == [1, 1, 1]
    assert str(-(2**63)) in log.table.column("payload")[1].as_py()


# ----------------------------------------------------------------------------- integer digit limit
HUGE = "9" * 5000  # past Python's int digit limit (sys.get_int_max_str_digits(), 4300)


def test_loads_integer_past_the_digit_limit_is_a_json_error() -> None:
    with pytest.raises(JSONDecodeError):
        loads(f'{{"n": {HUGE}}}')
    with pytest.raises(JSONDecodeError):
        loads(HUGE.encode())


def test_integer_past_the_digit_limit_toh(tmp_path: Path) -> None:
    p = _toh(tmp_path, GOOD, '{"type":"x/y","data":{"n":' + HUGE + "}}", GOOD)
    err = _load_error(rk.read_toh, p, owner="t")
    assert (err.reason, err.line) == ("bad_json", 3) and "digits" in str(err)
    log = rk.read_toh(p, owner="t", errors="quarantine")
    assert len(log) == 2 and _reasons(log) == ["bad_json"]


@pytest.mark.parametrize("path", ["fast", "fallback"])
def test_integer_past_the_digit_limit_pleach(tmp_path: Path, path: str) -> None:
    rows = [json.dumps(r) for r in _pleach_rows(4)]
    rows[1] = rows[1].replace('"text": "m1"', f'"text": "m1", "n": {HUGE}')
    if path == "fallback":
        rows[3] = rows[3][:20]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join([*rows, HUGE]) + "\n")
    err = _load_error(rk.read_pleach, p)
    assert (err.reason, err.line) == ("bad_json", 2) and "digits" in str(err)
    log = rk.read_pleach(p, errors="quarantine")
    bad = {r["line"]: r["reason"] for r in log.quarantine.to_pylist()}
    assert bad == ({2: "bad_json", 5: "bad_json"} if path == "fast"
                   else {2: "bad_json", 4: "bad_json", 5: "bad_json"})
    c = log.extras["pleach_counts"].to_pylist()[0]
    assert c["input_rows"] == 5 and c["loaded"] + c["quarantined"] == 5
    with pytest.raises(LoadError):  # read_events sniffs the file without a raw error
        rk.read_events(p)


def test_integer_past_the_digit_limit_isplay_and_otel(tmp_path: Path) -> None:
    doc = json.loads(DATA.joinpath("isplay", "claims-triage-C-231.json").read_text())
    doc["events"][2]["extra"] = "HOLE"
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc).replace('"HOLE"', HUGE))
    assert _load_error(rk.read_isplay, p, owner="t").reason in ("bad_json", "bad_type")
    assert rk.read_isplay(p, owner="t", errors="quarantine").quarantine.num_rows >= 1
    p = tmp_path / "t.json"
    p.write_text(_otel_doc({"intValue": HUGE}))
    assert _load_error(rk.read_otel, p, owner="t").reason in ("bad_json", "bad_span")
    assert rk.read_otel(p, owner="t", errors="quarantine").quarantine.num_rows == 1


# ----------------------------------------------------------------------------- lone surrogates
LONG = "1234567890123456789012"  # 19+ digits: the text goes to the exact (stdlib) decoder


@pytest.mark.parametrize("long_int", [False, True])
def test_loads_rejects_lone_surrogates_on_both_decoders(long_int: bool) -> None:
    n = LONG if long_int else "1"
    for bad in ('"a\\ud800"', '"\\udfff"', '"\\ud800\\ud800"', '"\\ude00\\ud83d"'):
        with pytest.raises(JSONDecodeError):
            loads(f'{{"n": {n}, "s": {bad}}}')
    assert loads(f'{{"n": {n}, "s": "\\ud83d\\ude00", "t": "\\\\ud800"}}')["s"] == "\U0001F600"


def test_lone_surrogate_toh_line_with_a_long_int(tmp_path: Path) -> None:
    p = _toh(tmp_path, GOOD, '{"type":"x/y","data":{"n":' + LONG + ',"s":"a\\ud800"}}', GOOD)
    err = _load_error(rk.read_toh, p, owner="t")
    assert (err.reason, err.line) == ("bad_json", 3) and "surrogate" in str(err)
    log = rk.read_toh(p, owner="t", errors="quarantine")
    assert len(log) == 2 and _reasons(log) == ["bad_json"]


def test_lone_surrogate_otel(tmp_path: Path) -> None:
    p = tmp_path / "t.json"  # the span's nanosecond times are 19-digit runs
    p.write_text(_otel_doc({"stringValue": "a\\ud800"}).replace('"a\\\\ud800"', '"a\\ud800"'))
    assert "\\ud800" in p.read_text() and "\\\\ud800" not in p.read_text()
    err = _load_error(rk.read_otel, p, owner="t")
    assert err.reason == "bad_json" and "surrogate" in str(err)
    log = rk.read_otel(p, owner="t", errors="quarantine")
    assert len(log) == 0 and _reasons(log) == ["bad_json"]


@pytest.mark.parametrize("where", ["event", "run"])
def test_lone_surrogate_isplay(tmp_path: Path, where: str) -> None:
    doc = json.loads(DATA.joinpath("isplay", "claims-triage-C-231.json").read_text())
    if where == "event":
        doc["events"][1]["text"] = "HOLE"
    else:
        doc["run"]["runId"] = "HOLE"
    p = tmp_path / "run.json"
    text = json.dumps(doc, indent=1)
    p.write_text(text.replace('"HOLE"', '"a\\ud800"'))
    err = _load_error(rk.read_isplay, p, owner="t")
    line = text[: text.index('"HOLE"')].count("\n") + 1
    assert (err.reason, err.line) == ("bad_json", line) and "surrogate" in str(err)
    log = rk.read_isplay(p, owner="t", errors="quarantine")
    assert len(log) == 0 and _reasons(log) == ["bad_json"]
    # a surrogate pair is a character, not an error
    p.write_text(text.replace('"HOLE"', '"a\\ud83d\\ude00"'))
    assert len(rk.read_isplay(p, owner="t")) == len(doc["events"])


# ----------------------------------------------------------------------------- unreadable files
def _unreadable(path: Path, how: str) -> None:
    """Make ``path`` a file the OS refuses to read: chmod 000 (not for root, who reads
    anything), or a symlink to /proc/self/mem (a regular file whose read at offset 0 fails
    with EIO, for every user)."""
    if how == "chmod":
        path.chmod(0)
    else:
        if not Path("/proc/self/mem").is_file():
            pytest.skip("needs Linux /proc")
        path.unlink(missing_ok=True)
        path.symlink_to("/proc/self/mem")


#: chmod 000 makes a file unreadable for every user but root (CI runs as root): there the
#: EIO case, unreadable for root too, takes the same path (OSError on read), so the chmod case
#: is not generated rather than skipped
_UNREADABLE_HOW = ["eio"] if os.geteuid() == 0 else ["chmod", "eio"]


def _skipped_in_folder(d: Path, bad: Path, reason: str, **kw: Any) -> None:
    """read_events(folder) skips ``bad`` (one SkippedFilesWarning naming it and ``reason``)
    under both error modes and loads the rest of ``d``."""
    from replaykit.io import SkippedFilesWarning

    for errors in ("raise", "quarantine"):
        with pytest.warns(SkippedFilesWarning) as rec:
            log = rk.read_events(d, errors=errors, **kw)
        files = [e for r in rec if r.category is SkippedFilesWarning for e in r.message.files]
        assert [(e.source, e.reason) for e in files] == [(str(bad), reason)]
        assert len(log) > 0 and len(log.quarantine) == 0


@pytest.mark.parametrize("how", _UNREADABLE_HOW)
@pytest.mark.parametrize("fmt", ["toh", "pleach", "isplay", "otel", "auto"])
def test_unreadable_file_is_one_quarantine_row(tmp_path: Path, fmt: str, how: str) -> None:
    good = {"toh": DATA / "toh" / "shed-fork" / "session.jsonl",
            "pleach": DATA / "pleach" / "harness_event_log.jsonl",
            "isplay": DATA / "isplay" / "claims-triage-C-231.json",
            "auto": DATA / "toh" / "shed-fork" / "session.jsonl"}.get(fmt)
    name = {"isplay": "run.json", "otel": "trace.json"}.get(fmt, "session.jsonl")
    d = tmp_path / "in"
    d.mkdir()
    if good is None:
        (d / "a_trace.json").write_text(_otel_doc({"stringValue": "x"}))
    else:
        (d / f"a_{name}").write_bytes(good.read_bytes())
    bad = d / f"b_{name}"
    bad.write_bytes(b"{}\n")
    _unreadable(bad, how)
    load: Any = {"toh": rk.read_toh, "pleach": rk.read_pleach, "isplay": rk.read_isplay,
                 "otel": rk.read_otel, "auto": rk.read_events}[fmt]
    kw = {} if fmt == "pleach" else {"owner": "t"}
    try:
        err = _load_error(load, bad, **kw)
        assert (err.reason, err.line) == ("unreadable", None) and str(bad) in str(err)
        if fmt == "auto":  # in a folder: skipped and named, as on the command line
            _skipped_in_folder(d, bad, "unreadable", **kw)
            return
        log = load(d, errors="quarantine", **kw)
        q = log.quarantine.to_pylist()
        assert [(r["reason"], r["line"]) for r in q] == [("unreadable", None)]
        assert str(bad) in q[0]["source"] and len(log) > 0
        if fmt == "pleach":
            c = {r["source"]: r for r in log.extras["pleach_counts"].to_pylist()}[f"pleach:{bad}"]
            assert (c["input_rows"], c["quarantined"], c["loaded"]) == (1, 1, 0)
    finally:
        if how == "chmod":
            bad.chmod(0o644)


# ----------------------------------------------------------------------------- UTF-8 BOM
BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("path", ["fast", "fallback"])
def test_pleach_utf8_bom_is_accepted(tmp_path: Path, path: str) -> None:
    rows = [json.dumps(r) for r in _pleach_rows(4)]
    if path == "fallback":
        rows[3] = rows[3][:20]
    p = tmp_path / "log.jsonl"
    p.write_bytes(BOM + ("\r\n".join(rows) + "\r\n").encode())
    before = p.read_bytes()
    log = rk.read_pleach(p, errors="quarantine")
    assert log.table.column("source_line").to_pylist() == ([1, 2, 3, 4] if path == "fast"
                                                            else [1, 2, 3])
    assert log.table.column("payload")[0].as_py() == json.dumps(_pleach_rows(1)[0]["payload"])
    c = log.extras["pleach_counts"].to_pylist()[0]
    assert (c["input_rows"], c["loaded"]) == (4, len(log))
    assert len(rk.read_events(p, errors="quarantine")) == len(log)  # sniffed as pleach
    assert p.read_bytes() == before


@pytest.mark.parametrize("name", ["t.json", "t.jsonl"])
def test_otel_utf8_bom_is_accepted(tmp_path: Path, name: str) -> None:
    p = tmp_path / name
    p.write_bytes(BOM + _otel_doc({"stringValue": "x"}).encode() + b"\n")
    log = rk.read_otel(p, owner="t")
    assert len(log) == 1 and log.quarantine.num_rows == 0
    assert len(rk.read_events(p, owner="t")) == 1


# ----------------------------------------------------------------------------- duplicate keys
@pytest.mark.parametrize("spelling", ["last", "first", "escaped"])
@pytest.mark.parametrize("path", ["fast", "fallback"])
def test_pleach_row_naming_two_tenants_is_rejected(tmp_path: Path, path: str,
                                                   spelling: str) -> None:
    rows = [json.dumps(r) for r in _pleach_rows(4)]
    if spelling == "last":
        rows[1] = rows[1][:-1] + ', "tenant_id": "evil"}'
    elif spelling == "first":
        rows[1] = '{"tenant_id": "evil", ' + rows[1][1:]
    else:  # a key spelled with escapes decodes to tenant_id too
        rows[1] = rows[1][:-1] + ', "tenant\\u005fid": "evil"}'
    if path == "fallback":
        rows[3] = rows[3][:20]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(rows) + "\n")
    err = _load_error(rk.read_pleach, p)
    assert (err.reason, err.line, err.field) == ("bad_tenant", 2, "tenant_id")
    assert "'acme'" in str(err) and "'evil'" in str(err)
    log = rk.read_pleach(p, errors="quarantine")
    assert "evil" not in log.tenants
    q = {r["line"]: r for r in log.quarantine.to_pylist()}
    assert q[2]["reason"] == "bad_tenant" and q[2]["tenant_id"] is None
    assert log.table.column("source_line").to_pylist() == ([1, 3, 4] if path == "fast" else [1, 3])
    c = log.extras["pleach_counts"].to_pylist()[0]
    assert c["input_rows"] == 4 and c["loaded"] + c["quarantined"] == 4
    assert len(rk.read_pleach(p, tenant_id="evil", errors="quarantine")) == 0


def test_pleach_payload_keys_named_tenant_id_stay_on_the_fast_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import replaykit.io.pleach as pleach_mod

    rows = _pleach_rows(4)
    rows[1]["payload"] = {"text": "x", "tenant_id": "other", "user": {"tenant_id": "o2"}}
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    def no_robust(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the block took the row-by-row path")

    monkeypatch.setattr(pleach_mod, "_robust_block", no_robust)
    log = rk.read_pleach(p)
    assert log.tenants == ["acme"] and len(log) == 4
    assert json.loads(log.table.column("payload")[1].as_py()) == rows[1]["payload"]


# ----------------------------------------------------------------------------- years 1..9999
EDGE_TIMES = ["0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]


@pytest.mark.parametrize("value", EDGE_TIMES)
@pytest.mark.parametrize("path", ["fast", "fallback"])
def test_pleach_iso_time_outside_years_1_to_9999(tmp_path: Path, path: str, value: str) -> None:
    rows = [json.dumps(r) for r in _pleach_rows(4, created_at=value)]
    if path == "fallback":
        rows[3] = rows[3][:20]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(rows) + "\n")
    if path == "fast":  # (the row-by-row path reports the broken line 4 first)
        err = _load_error(rk.read_pleach, p)
        assert (err.reason, err.line, err.field) == ("bad_timestamp", 2, "created_at")
        assert "9999" in str(err)
    log = rk.read_pleach(p, errors="quarantine")
    assert {r["line"]: r["reason"] for r in log.quarantine.to_pylist()}[2] == "bad_timestamp"
    assert log.table.column("source_line").to_pylist() == ([1, 3, 4] if path == "fast" else [1, 3])
    log.table.column("ts").to_pylist()  # every loaded time is one a datetime can show
    # the edges themselves load
    rows = [json.dumps(r) for r in _pleach_rows(3, created_at="0001-01-01T00:00:00Z")]
    p.write_text("\n".join(rows) + "\n")
    assert rk.read_pleach(p).table.column("ts").to_pylist()[1].year == 1


def test_pleach_parquet_timestamp_outside_years_1_to_9999(tmp_path: Path) -> None:
    t = pa.table({k: [r[k] for r in _pleach_rows()] for k in
                  ("tenant_id", "chat_id", "sequence_number", "event_type")})
    us = pa.array([0, -62_135_596_800_000_000 - 1, 253_402_300_800_000_000], pa.int64())
    t = t.append_column("payload", pa.array(['{"text":"a"}'] * 3)).append_column(
        "created_at", us.cast(pa.timestamp("us", tz="UTC")))
    pq.write_table(t, tmp_path / "log.parquet")
    err = _load_error(rk.read_pleach, tmp_path / "log.parquet")
    assert (err.reason, err.line) == ("bad_timestamp", 2)
    log = rk.read_pleach(tmp_path / "log.parquet", errors="quarantine")
    assert len(log) == 1 and _reasons(log) == ["bad_timestamp", "bad_timestamp"]


@pytest.mark.parametrize("value", EDGE_TIMES)
def test_isplay_time_outside_years_1_to_9999(tmp_path: Path, value: str) -> None:
    doc = json.loads(DATA.joinpath("isplay", "claims-triage-C-231.json").read_text())
    n = len(doc["events"])
    doc["events"][1]["ts"] = value
    doc["run"]["createdAt"] = value
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc))
    err = _load_error(rk.read_isplay, p, owner="t")
    assert (err.reason, err.field) == ("bad_ts", "events[1].ts") and "9999" in str(err)
    log = rk.read_isplay(p, owner="t", errors="quarantine")
    assert len(log) == n - 1 and _reasons(log) == ["bad_ts"]
    log.table.column("ts").to_pylist()
    assert log.runs.column("created_at").to_pylist() == [None]  # as a run time that does not parse


# ----------------------------------------------------------------------------- compressed files
@pytest.mark.parametrize("kind", ["gzip", "bz2", "lzma"])
@pytest.mark.parametrize("fmt", ["toh", "pleach", "isplay", "otel", "auto"])
def test_compressed_file_with_a_text_name(tmp_path: Path, fmt: str, kind: str) -> None:
    import bz2
    import gzip
    import lzma

    pack: Any = {"gzip": gzip.compress, "bz2": bz2.compress, "lzma": lzma.compress}[kind]
    src = {"toh": DATA / "toh" / "shed-fork" / "session.jsonl",
           "pleach": DATA / "pleach" / "harness_event_log.jsonl",
           "isplay": DATA / "isplay" / "claims-triage-C-231.json",
           "auto": DATA / "toh" / "shed-fork" / "session.jsonl"}.get(fmt)
    text = src.read_bytes() if src is not None else _otel_doc({"stringValue": "x"}).encode()
    name = {"isplay": "run.json", "otel": "trace.json"}.get(fmt, "session.jsonl")
    d = tmp_path / "in"
    d.mkdir()
    (d / f"a_{name}").write_bytes(text)
    bad = d / f"b_{name}"
    bad.write_bytes(pack(text))
    load: Any = {"toh": rk.read_toh, "pleach": rk.read_pleach, "isplay": rk.read_isplay,
                 "otel": rk.read_otel, "auto": rk.read_events}[fmt]
    kw = {} if fmt == "pleach" else {"owner": "t"}
    err = _load_error(load, bad, **kw)
    assert (err.reason, err.line) == ("compressed", None) and str(bad) in str(err)
    assert "Decompress" in str(err)
    if fmt == "auto":  # in a folder: skipped and named, as on the command line
        _skipped_in_folder(d, bad, "compressed", **kw)
        return
    log = load(d, errors="quarantine", **kw)
    q = log.quarantine.to_pylist()
    assert [(r["reason"], r["line"]) for r in q] == [("compressed", None)]
    assert len(log) == len(load(d / f"a_{name}", **kw))
    if fmt == "pleach":
        c = {r["source"]: r for r in log.extras["pleach_counts"].to_pylist()}[f"pleach:{bad}"]
        assert (c["input_rows"], c["quarantined"], c["loaded"]) == (1, 1, 0)


def test_parquet_with_a_column_named_twice(tmp_path: Path) -> None:
    rows = _pleach_rows()
    t = pa.table([pa.array([r["tenant_id"] for r in rows]), pa.array(["evil"] * 3),
                  pa.array([r["chat_id"] for r in rows]),
                  pa.array([r["sequence_number"] for r in rows]),
                  pa.array([r["event_type"] for r in rows]), pa.array(['{"text":"a"}'] * 3)],
                 names=["tenant_id", "tenant_id", "chat_id", "sequence_number", "event_type",
                        "payload"])  # fmt: skip
    (tmp_path / "in").mkdir()
    pq.write_table(t, tmp_path / "in" / "a.parquet")
    pq.write_table(t.select([0, 2, 3, 4, 5]), tmp_path / "in" / "b.parquet")
    err = _load_error(rk.read_pleach, tmp_path / "in" / "a.parquet")
    assert (err.reason, err.field, err.line) == ("bad_schema", "tenant_id", None)
    log = rk.read_pleach(tmp_path / "in", errors="quarantine")
    assert len(log) == 3 and log.tenants == ["acme"]
    assert [(Path(r["source"]).name, r["reason"]) for r in log.quarantine.to_pylist()] == [
        ("a.parquet", "bad_schema")]
    with pytest.raises(LoadError):
        rk.read_events(tmp_path / "in" / "a.parquet")


@pytest.mark.parametrize(("text", "why"), [
    ('{"d": NaN}', "NaN"), ('{"d": ' + "[" * 300 + "]" * 300 + "}", "deep"),
    ('{"d": ' + HUGE + "}", "digits")])  # fmt: skip
def test_parquet_payload_text_follows_the_jsonl_rules(tmp_path: Path, text: str, why: str) -> None:
    """Arrow's parser accepts NaN, any depth and any integer: such Parquet payload texts were
    loaded as they were (not JSON, or not decodable), while the same JSONL line is bad_json."""
    rows = _pleach_rows()
    t = pa.table({k: [r[k] for r in rows] for k in
                  ("tenant_id", "chat_id", "sequence_number", "event_type")})
    t = t.append_column("payload", pa.array(['{"text":"a"}', text, '{"text":"score: NaN"}']))
    pq.write_table(t, tmp_path / "log.parquet")
    err = _load_error(rk.read_pleach, tmp_path / "log.parquet")
    assert (err.reason, err.line, err.field) == ("bad_payload", 2, "payload")
    assert why in str(err)
    log = rk.read_pleach(tmp_path / "log.parquet", errors="quarantine")
    assert log.table.column("source_line").to_pylist() == [1, 3]
    assert log.table.column("payload")[1].as_py() == '{"text":"score: NaN"}'
