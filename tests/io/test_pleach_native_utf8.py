"""read_pleach leaves out the events table's UTF-8 pass when every row was read by the native
scan (it checks each block's bytes are UTF-8, and every text column is made of them or
written by it): these tests show the table is UTF-8 then, and that a block the scan declines
(a byte that is not UTF-8) brings the pass back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _native_paths import native_path, require_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
import replaykit.schema as schema_mod
from replaykit.schema import EVENTS_SCHEMA, text_is_utf8


@pytest.fixture(autouse=True)
def _core() -> None:
    require_core()


def _utf8_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets one entry (its rows) per UTF-8 pass over an events table (other
    tables, e.g. the quarantine, are checked on their own and not counted)."""
    calls: list[int] = []
    real = schema_mod.text_is_utf8

    def spy(table: Any) -> bool:
        if table.schema.names[:len(EVENTS_SCHEMA)] == EVENTS_SCHEMA.names:
            calls.append(table.num_rows)
        return real(table)

    monkeypatch.setattr(schema_mod, "text_is_utf8", spy)
    return calls


# any text but lone surrogates (which no UTF-8 can hold): controls, quotes, backslashes,
# characters beyond the BMP (written raw, or as a \ud83d\ude00 pair with ensure_ascii)
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)


@st.composite
def _export(draw: Any) -> tuple[str, list[dict[str, Any]]]:
    rows = []
    for seq in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["message.user", "tool.called", "model.completed"]))
        payload: dict[str, Any] = {"text": draw(_TEXT)}
        if kind == "tool.called":
            payload = {"tool": draw(_TEXT), "call_id": draw(_TEXT),
                       "args": {draw(_TEXT): draw(_TEXT)}}
        rows.append({"tenant_id": "acme", "chat_id": "c-" + draw(_TEXT), "sequence_number": seq,
                     "event_type": kind, "payload": payload,
                     "created_at": "2026-01-01T00:00:00Z", "prev_hash": None,
                     "row_hash": None})
    ascii_only = draw(st.booleans())
    return "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in rows), rows


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(export=_export())
def test_native_scan_text_is_utf8_without_the_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        export: tuple[str, list[dict[str, Any]]]) -> None:
    text, rows = export
    f = tmp_path / "export.jsonl"
    f.write_text(text, encoding="utf-8")
    with native_path(False):
        reference = rk.read_pleach(f)  # its table's UTF-8 pass runs
    from replaykit.io.pleach._nativepath import native_block

    with native_path(True):
        natively = native_block(text.encode("utf-8")) is not None  # (the file: one block)
    passes = _utf8_passes(monkeypatch)
    with native_path(True):
        log = rk.read_pleach(f)
    # every row read natively: the pass is left out; else (the scan declined the block,
    # e.g. a "{" in an id) the table is checked
    assert passes == ([] if natively else [len(rows)])
    assert text_is_utf8(log.table)  # UTF-8 all the same
    assert log.table.equals(reference.table)
    # an independent reading: each row's text and tool name as json.loads sees them
    by_key = {(r["chat_id"], r["sequence_number"]): r["payload"] for r in rows}
    got = log.table.select(["run_id", "seq", "text", "tool_name"]).to_pylist()
    for g in got:
        p = by_key[(g["run_id"], g["seq"])]
        assert g["tool_name"] == p.get("tool")
        if "text" in p:
            assert g["text"] == p["text"]


def test_exotic_text_is_read_natively_and_not_checked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "caf\u00e9 \U0001f600 \"q\" \\ \t\n\u0001 \u2028 \ufeff"
    row = {"tenant_id": "acme", "chat_id": "c1", "sequence_number": 0,
           "event_type": "tool.called",
           "payload": {"tool": text, "call_id": "x", "args": {text: [text, 1]}},
           "created_at": "2026-01-01T00:00:00Z", "prev_hash": None, "row_hash": None}
    f = tmp_path / "exotic.jsonl"
    f.write_text(json.dumps(row) + "\n" + json.dumps(
        {**row, "sequence_number": 1, "event_type": "message.user",
         "payload": {"text": text}}, ensure_ascii=False) + "\n", encoding="utf-8")
    passes = _utf8_passes(monkeypatch)
    with native_path(True):
        log = rk.read_pleach(f)
    assert passes == []
    assert text_is_utf8(log.table)
    assert log.table.column("tool_name").to_pylist() == [text, None]
    assert log.table.column("text").to_pylist()[1] == text


def test_a_block_with_bad_bytes_is_checked(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from replaykit.io.pleach._nativepath import native_block

    good = {"tenant_id": "acme", "chat_id": "c1", "sequence_number": 0,
            "event_type": "message.user", "payload": {"text": "hi"},
            "created_at": "2026-01-01T00:00:00Z", "prev_hash": None, "row_hash": None}
    lines = [json.dumps(good).encode(),
             json.dumps({**good, "sequence_number": 1}).encode().replace(b"hi", b"h\xffi")]
    body = b"\n".join(lines) + b"\n"
    with native_path(True):
        assert native_block(body) is None  # the scan declines: the reference reads it
        assert native_block(lines[0] + b"\n") is not None
    f = tmp_path / "bad.jsonl"
    f.write_bytes(body)
    passes = _utf8_passes(monkeypatch)
    with native_path(True):
        log = rk.read_pleach(f, errors="quarantine")
    assert passes == [1]  # not every row native: the table's text is checked
    assert log.table.column("seq").to_pylist() == [0]
    assert log.quarantine.column("reason").to_pylist() == ["bad_utf8"]
    assert text_is_utf8(log.table)


def test_toh_native_scan_leaves_out_the_pass(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """read_toh: the same rule (its native scan checks each file's bytes are UTF-8)."""
    from replaykit.datasets import generate_toh
    from replaykit.io.toh import _nativepath

    path = generate_toh(tmp_path / "s" / "session.jsonl", events=300, seed=3)
    with native_path(True):
        assert _nativepath.native_file(path.read_bytes()) is not None  # read natively
    with native_path(False):
        reference = rk.read_toh(path, owner="t", progress=False)
    passes = _utf8_passes(monkeypatch)
    with native_path(True):
        log = rk.read_toh(path, owner="t", progress=False)
    assert passes == []
    assert text_is_utf8(log.table)
    assert log.table.equals(reference.table)
    # a byte that is not UTF-8 in one line: the scan declines, the table is checked
    lines = path.read_bytes().split(b"\n")
    k = next(i for i, ln in enumerate(lines) if i and b'"' in ln)
    at = lines[k].rindex(b'"')
    lines[k] = lines[k][:at] + b"\xff" + lines[k][at:]
    bad = tmp_path / "b" / "session.jsonl"
    bad.parent.mkdir()
    bad.write_bytes(b"\n".join(lines))
    passes.clear()
    with native_path(True):
        log = rk.read_toh(bad, owner="t", errors="quarantine", progress=False)
    assert passes == [len(log)]
    assert "bad_utf8" in log.quarantine.column("reason").to_pylist()
    assert text_is_utf8(log.table)
