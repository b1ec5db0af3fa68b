"""toh input seen in real exports: odd tool-result shapes, a byte order mark, files that mix
projected and full persisted lines; model scripts follow the reference on seq order and on a
primary log that carries ``seedLength``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from replaykit.errors import LoadError
from replaykit.io import detect_format, read_events
from replaykit.io.toh import read_toh, sniff
from replaykit.toh.scripts import model_scripts, unfinished_calls

HEADER = {"type": "session", "version": 0, "id": "run-1", "createdAt": 1767225600000}


def write_log(path: Path, lines: list[Any], header: Any = HEADER, bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(x) + "\n" for x in [header, *lines])
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode())
    return path


def result(content: Any, **msg: Any) -> dict:
    return {"type": "tool/result", "data": {"message": {"content": content, **msg}}}


@pytest.mark.parametrize("content,text", [
    (5, "5"), (2.5, "2.5"), (True, "true"), ("plain words", "plain words"), (None, None),
    ([1, "x"], None), ({"toolCallId": "c9", "isError": True,
                        "content": [{"type": "text", "text": "t"}]}, "t"),
    ({"toolCallId": "c9", "isError": True, "content": 7}, "7"),  # the item's content bare too
    ({"toolCallId": "c9", "isError": True, "content": "s"}, "s"),
])
def test_tool_result_content_of_any_json_type_loads(tmp_path: Path, content: Any,
                                                    text: str | None) -> None:
    f = write_log(tmp_path / "session.jsonl",
                  [result(content, source={"callId": "c1"}), result([])])
    t = read_toh(f, owner="acme").table
    assert t.num_rows == 2
    assert t.column("text").to_pylist()[0] == text
    ref = t.column("ref_id").to_pylist()[0]
    assert ref == ("c9" if isinstance(content, dict) else "c1")
    assert t.column("is_error").to_pylist()[0] is isinstance(content, dict)
    assert json.loads(t.column("payload")[0].as_py())["data"]["message"]["content"] == content


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    lines = [{"type": "turn/start", "data": {"turn": 1}}, result("ok")]
    plain = write_log(tmp_path / "a" / "session.jsonl", lines)
    marked = write_log(tmp_path / "b" / "session.jsonl", lines, bom=True)
    assert sniff(marked) is None and detect_format(marked) == "toh"
    a, b = read_toh(plain, owner="acme"), read_toh(marked, owner="acme")
    for col in ("seq", "type", "text", "payload", "source_line"):
        assert a.table.column(col).to_pylist() == b.table.column(col).to_pylist()
    assert json.loads(b.runs.column("attrs")[0].as_py())["id"] == "run-1"
    assert read_events(tmp_path / "b", owner="acme").table.num_rows == 2


def _ev(seq: int | None = None, turn: int = 1) -> dict:
    e: dict[str, Any] = {"type": "turn/start", "data": {"turn": turn}}
    if seq is not None:
        e["seq"] = seq
        e["time"] = 1767225600000 + seq
    return e


PACKED = {"type": "text-chunks", "data": {"turn": 1, "step": 1, "index": 0, "dt": [1],
                                          "texts": ["a", "b"]}}


@pytest.mark.parametrize("lines,bad_line,first", [
    ([_ev(), _ev(), _ev(5), _ev()], 4, 2),            # projected file, a line with seq
    ([_ev(0), _ev(1), _ev(), _ev(3)], 4, 2),          # full file, a line without seq
    ([_ev(0), PACKED], 3, 2),                         # full file, a packed row without seq0
    ([PACKED, {**PACKED, "seq0": 9}], 3, 2),          # projected file, a packed row with seq0
])
def test_mixed_envelopes_are_rejected_not_reordered(tmp_path: Path, lines: list[Any],
                                                    bad_line: int, first: int) -> None:
    f = write_log(tmp_path / "session.jsonl", lines)
    with pytest.raises(LoadError) as info:
        read_toh(f, owner="acme")
    err = info.value
    assert err.reason == "mixed_envelope" and err.line == bad_line
    assert f"line {first}" in err.detail and err.source == str(f)
    log = read_toh(f, owner="acme", errors="quarantine")
    q = log.quarantine
    assert q.column("reason").to_pylist() == ["mixed_envelope"]
    assert q.column("line").to_pylist() == [bad_line]
    # what loads keeps file order: no line of the other shape is slotted in between
    assert sorted(log.table.column("source_line").to_pylist()) == log.table.column(
        "source_line").to_pylist()
    assert bad_line not in log.table.column("source_line").to_pylist()


def test_projected_file_keeps_slots_of_a_rejected_line(tmp_path: Path) -> None:
    f = write_log(tmp_path / "session.jsonl", [_ev(), _ev(0), _ev()])
    log = read_toh(f, owner="acme", errors="quarantine")
    assert log.table.column("seq").to_pylist() == [0, 2]  # line 3 keeps its implicit slot 1


def test_full_file_with_seqs_out_of_file_order(tmp_path: Path) -> None:
    """Loaded rows are ordered by seq (the log's own numbers); scripts walk the lines in file
    order, as the reference does."""
    def call(seq0: int, text: str) -> list[dict]:
        c = [{"type": "text-delta", "index": 0, "text": text},
             {"type": "finish", "reason": {"kind": "stop"}}]
        return [{"type": "assistant/chunk", "seq": seq0 + i, "time": 1 + seq0 + i,
                 "data": {"turn": 1, "step": 1, "chunk": ch}} for i, ch in enumerate(c)]
    f = write_log(tmp_path / "sc" / "session.jsonl", [*call(10, "first"), *call(0, "second")])
    log = read_toh(f, owner="acme")
    assert log.table.column("seq").to_pylist() == [0, 1, 10, 11]
    assert log.table.column("source_line").to_pylist() == [4, 5, 2, 3]
    [s] = model_scripts(tmp_path / "sc")
    assert [c["chunks"][0]["text"] for c in s.calls] == ["first", "second"]
    assert s.first_seqs == (10, 0)


def _text_call(turn: int, text: str) -> list[dict]:
    return [{"type": "assistant/chunk", "data": {"turn": turn, "step": 1, "chunk": c}} for c in (
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "finish", "reason": {"kind": "stop"}})]


def test_primary_log_with_seed_length_is_derived_whole(tmp_path: Path) -> None:
    hdr = {**HEADER, "id": "kid", "parentSession": "parent", "seedLength": 2}
    kid = write_log(tmp_path / "sc" / "session.1.jsonl", [*_text_call(1, "copied"),
                                                          *_text_call(2, "own")], header=hdr)
    write_log(tmp_path / "sc" / "session.jsonl", _text_call(1, "copied"),
              header={**HEADER, "id": "parent"})
    # as a child of its scenario: the seed (the parent's call) is skipped
    _, child = model_scripts(tmp_path / "sc")
    assert [c["chunks"][0]["text"] for c in child.calls] == ["own"] and child.seed_length == 2
    # the same log given as the primary: the reference derives every chunk of it
    [prim] = model_scripts(kid)
    assert prim.primary and prim.seed_length == 0
    assert [c["chunks"][0]["text"] for c in prim.calls] == ["copied", "own"]
    assert prim.first_seqs == (0, 2)
    # a primary without parentSession but with seedLength: derived whole too
    lone = write_log(tmp_path / "lone" / "session.jsonl", [*_text_call(1, "a"),
                                                           *_text_call(2, "b")],
                     header={**HEADER, "seedLength": 2})
    [s] = model_scripts(tmp_path / "lone")
    assert [c["chunks"][0]["text"] for c in s.calls] == ["a", "b"]
    assert unfinished_calls(lone).empty
    assert pc.sum(read_toh(lone, owner="a").table.column("inherited")).as_py() == 2


@pytest.mark.parametrize("field", ["type", "id", "parentSession", "createdAt"])
def test_bad_header_value_is_not_copied_into_every_later_line(tmp_path: Path,
                                                              field: str) -> None:
    """A headerless file's later lines each repeat the header's error: a 2 MB header value
    became 2 MB per line (a 40 MB one: 3 GB of messages for a 29-line file)."""
    header = {"type": "session", "version": 0, "id": "s-1", "createdAt": 1767312000000}
    header[field] = {"type": "x" * 2_000_000, "createdAt": 10**3000}.get(field, ["x" * 2_000_000])
    lines = [json.dumps(header)] + [json.dumps({"type": "turn/start", "data": {"turn": k}})
                                    for k in range(50)]
    p = tmp_path / "session.jsonl"
    p.write_text("\n".join(lines) + "\n")
    log = read_toh(p, owner="t", errors="quarantine")
    q = log.quarantine.to_pylist()
    assert len(q) == 51 and {r["reason"] for r in q[1:]} == {"no_header"}
    assert max(len(r["message"]) for r in q) < 1000
    with pytest.raises(LoadError) as info:
        read_toh(p, owner="t")
    assert info.value.field == field and len(str(info.value)) < 1000
