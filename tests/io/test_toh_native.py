"""read_toh's native path (``native/src/toh.rs``, ``replaykit/io/toh/_nativepath.py``) against
the reference path (``REPLAYKIT_NATIVE=0``): the same table (values, types, dictionaries,
order), runs, quarantine, warnings, errors and chain hashes, on the bundled samples, on
generated logs, on mutated lines (hypothesis), on bad input of every kind the reference
quarantines, and on the real corpus when ``REPLAYKIT_CORPUS`` is set.

The core refuses every file of which the reference would quarantine a line; the tests also
check that it does read the clean files (so the comparison is not vacuous).

In CI (``CI=true``) the core must be built: a missing extension fails, never skips.
"""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _native_paths import native_path, require_core
from _toh_mutations import _mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import native as _native
from replaykit.datasets import generate_toh
from replaykit.errors import ReplayKitError
from replaykit.io.toh import _nativepath

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(autouse=True)
def _core_built() -> None:
    require_core()


def _load(path: Any, native: bool, errors: str) -> tuple[str, Any, list[str]]:
    with native_path(native), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: tuple[str, Any] = ("ok", rk.read_toh(path, owner="t", errors=errors,  # type: ignore[arg-type]
                                                      progress=False))
        except ReplayKitError as exc:
            out = ("error", (type(exc).__name__, getattr(exc, "reason", None), str(exc)))
    return (*out, [f"{w.category.__name__}: {w.message}" for w in caught])


def _dictionaries(table: pa.Table) -> dict[str, list[Any]]:
    return {name: [c.dictionary.to_pylist() for c in table.column(name).chunks]
            for name in table.column_names if pa.types.is_dictionary(table.column(name).type)}


def _hashes(log: Any) -> list[Any]:
    with native_path(False):
        try:
            return rk.stamp_chain(log).table.column("row_hash").to_pylist()
        except ValueError as exc:  # a seq beyond 2**53 cannot be hashed
            return [str(exc)]


def assert_same(a: tuple[str, Any, list[str]], b: tuple[str, Any, list[str]]) -> None:
    assert a[0] == b[0], (a[1], b[1])
    assert a[2] == b[2], "warnings differ"
    if a[0] == "error":
        assert a[1] == b[1]
        return
    x, y = a[1], b[1]
    assert x.table.schema.equals(y.table.schema, check_metadata=True)
    for name in x.table.column_names:
        cx, cy = x.table.column(name), y.table.column(name)
        assert cx.equals(cy), (f"column {name} differs", [
            (i, p, q) for i, (p, q) in enumerate(zip(cx.to_pylist(), cy.to_pylist(),
                                                     strict=True)) if p != q][:3])
    assert _dictionaries(x.table) == _dictionaries(y.table)
    assert x.runs.equals(y.runs)
    assert x.quarantine.equals(y.quarantine), (
        x.quarantine.to_pylist()[:3], y.quarantine.to_pylist()[:3])
    assert _hashes(x) == _hashes(y)


def both(path: Any, errors: str = "quarantine") -> Any:
    """Load both ways, assert they agree, return the native result."""
    a = _load(path, True, errors)
    b = _load(path, False, errors)
    assert_same(a, b)
    return a


def _native_reads(data: bytes) -> bool:
    with native_path(True):
        return _nativepath.native_file(data) is not None


# ----------------------------------------------------------------------------- samples
@pytest.mark.parametrize("errors", ["raise", "quarantine"])
def test_bundled_samples(errors: str) -> None:
    both(DATA / "toh", errors)
    for f in sorted((DATA / "toh").rglob("*.jsonl")):
        both(f, errors)
        assert _native_reads(f.read_bytes()), f  # the samples are clean: read natively
    assert _native.panics() == 0


@pytest.mark.parametrize("events,seed", [(0, 1), (50, 2), (3000, 3), (20_000, 4), (110_000, 5)])
def test_generated_logs(tmp_path: Path, events: int, seed: int) -> None:
    """(110,000 events: a file of more than 4 MB, scanned in parallel chunks.)"""
    f = generate_toh(tmp_path / "session.jsonl", events=events, seed=seed)
    assert _native_reads(f.read_bytes())
    got = both(f)
    assert got[1].quarantine.num_rows == 0


def test_several_files_some_refused(tmp_path: Path) -> None:
    """Files read natively and by the reference in one load: merged in file order."""
    for i in range(4):
        generate_toh(tmp_path / f"s{i}" / "session.jsonl", events=300, seed=10 + i)
    bad = tmp_path / "s1" / "session.jsonl"
    lines = bad.read_text().splitlines()
    lines[5] = lines[5][:-3]  # truncated: this file goes to the reference
    bad.write_text("\n".join(lines) + "\n")
    dup = tmp_path / "s3" / "session.jsonl"  # a duplicate explicit seq (found after reading)
    assert not _native_reads(bad.read_bytes())
    assert _native_reads(dup.read_bytes())
    got = both(tmp_path)
    assert got[1].quarantine.num_rows == 1
    both(tmp_path, "raise")


@pytest.mark.parametrize("damage", ["truncated", "bad_seq", "not_object"])
def test_large_file_bad_line_late(tmp_path: Path, damage: str) -> None:
    """A file of more than 4 MB (scanned in parallel chunks) with a bad line in its last
    chunk: the core refuses it, the reference reads it and reports the line."""
    f = generate_toh(tmp_path / "session.jsonl", events=110_000, seed=6)
    lines = f.read_text(encoding="utf-8").splitlines()
    i = len(lines) - 10
    lines[i] = {"truncated": lines[i][:-5], "bad_seq": '{"type":"x","seq":-3}',
                "not_object": "[]"}[damage]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not _native_reads(f.read_bytes())
    got = both(f)
    assert got[1].quarantine.num_rows == 1
    both(f, "raise")


# ----------------------------------------------------------------------------- bad inputs
_HEAD = '{"type":"session","id":"s1","createdAt":1700000000000}'
_STEP = '{"type":"step/start","data":{"turn":1,"step":1}}'
_PACK = ('{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[3,4],'
         '"texts":["a","b","c"]}}')
_CASES: dict[str, bytes] = {
    "clean": f"{_HEAD}\n{_STEP}\n{_PACK}\n".encode(),
    "bom": f"\ufeff{_HEAD}\n{_STEP}\n".encode(),
    "bom_later": f"{_HEAD}\n\ufeff{_STEP}\n".encode(),
    "crlf": f"{_HEAD}\r\n{_STEP}\r\n{_PACK}\r\n".encode(),
    "no_final_newline": f"{_HEAD}\n{_STEP}".encode(),
    "blank_lines": f"\n  \n{_HEAD}\n\n\x0c\n{_STEP}\n \t\n".encode(),
    "empty": b"",
    "only_blank": b"\n\n  \n",
    "bad_utf8": f"{_HEAD}\n".encode() + b'{"type":"x","data":"\xff"}\n',
    "bad_utf8_header": b'{"type":"session","id":"\xc3"}\n' + _STEP.encode() + b"\n",
    "truncated": f"{_HEAD}\n{_STEP[:-2]}\n{_STEP}\n".encode(),
    "nan": f'{_HEAD}\n{{"type":"x","data":{{"v":NaN}}}}\n'.encode(),
    "infinity": f'{_HEAD}\n{{"type":"x","data":{{"v":-Infinity}}}}\n'.encode(),
    "float_overflow": f'{_HEAD}\n{{"type":"x","data":{{"v":1e400}}}}\n'.encode(),
    "floats": f'{_HEAD}\n{{"type":"x","data":{{"v":[1.5,-0.0,1e16,1e-7,1.5e-5,0.1,1E2]}}}}\n'
              .encode(),
    "huge_int": f'{_HEAD}\n{{"type":"x","data":{{"turn":{10**30},"v":{-(10**25)}}}}}\n'
                .encode(),
    "int64_edges": (f'{_HEAD}\n{{"type":"x","seq":{2**63 - 1},"data":{{"v":{2**64}}}}}\n'
                    f'{{"type":"y","seq":0,"data":{{"turn":{2**31},"step":{-(2**31)}}}}}\n')
                   .encode(),
    "seq_too_big": f'{_HEAD}\n{{"type":"x","seq":{2**63}}}\n'.encode(),
    "int_4301_digits": f'{_HEAD}\n{{"type":"x","v":{"9" * 4301}}}\n'.encode(),
    "minus_zero": f'{_HEAD}\n{{"type":"x","data":{{"turn":-0,"v":-0}}}}\n'.encode(),
    "duplicate_keys": (f'{_HEAD}\n{{"type":"x","type":"assistant/chunk","data":{{"turn":1,'
                       '"chunk":{"type":"text-delta","text":"a","text":"b"},"turn":2}}\n')
                      .encode(),
    "duplicate_packed_key": (f'{_HEAD}\n{{"type":"text-chunks","data":{{"turn":1,"step":1,'
                             '"index":0,"dt":[],"texts":["a"],"texts":["b","c"]}}\n').encode(),
    "escapes": (f'{_HEAD}\n{{"type":"user/message","data":{{"content":[{{"type":"text",'
                '"text":"\\u00e9\\n\\u0001\\/\\ud83d\\ude00\\"q\\\\"}],"id":"m\\u0041"}}\n'
                ).encode(),
    "lone_surrogate": f'{_HEAD}\n{{"type":"x","data":"\\ud800"}}\n'.encode(),
    "control_char": f'{_HEAD}\n{{"type":"x","data":"a\x01b"}}\n'.encode(),
    "too_deep": f'{_HEAD}\n{{"type":"x","data":{"[" * 201}{"]" * 201}}}\n'.encode(),
    "deep_ok": f'{_HEAD}\n{{"type":"x","data":{"[" * 198}{"]" * 198}}}\n'.encode(),
    "not_object": f"{_HEAD}\n[1,2]\n\"s\"\n{_STEP}\n".encode(),
    "missing_type": f'{_HEAD}\n{{"data":{{}}}}\n{{"type":""}}\n{{"type":3}}\n'.encode(),
    "no_header": f"{_STEP}\n{_STEP}\n".encode(),
    "header_not_object": f"[1]\n{_STEP}\n".encode(),
    "header_bad_id": f'{{"type":"session","id":""}}\n{_STEP}\n'.encode(),
    "header_bad_created": f'{{"type":"session","id":"a","createdAt":"x"}}\n{_STEP}\n'.encode(),
    "second_session_line": f"{_HEAD}\n{_HEAD}\n{_STEP}\n".encode(),
    "bad_seq": f'{_HEAD}\n{{"type":"x","seq":-1}}\n{{"type":"x","seq":1.0}}\n'.encode(),
    "seq_null": f'{_HEAD}\n{{"type":"x","seq":null,"time":null}}\n{_STEP}\n'.encode(),
    "dup_seq": f'{_HEAD}\n{{"type":"x","seq":3}}\n{{"type":"y","seq":3}}\n'.encode(),
    "bad_time": f'{_HEAD}\n{{"type":"x","time":1e20}}\n{{"type":"x","time":"now"}}\n'.encode(),
    "float_time": f'{_HEAD}\n{{"type":"x","time":1700000000000.5}}\n'.encode(),
    "mixed_envelope": f'{_HEAD}\n{{"type":"x","seq":0}}\n{_STEP}\n{_PACK}\n'.encode(),
    "packed_seq0_time0": (f'{_HEAD}\n{{"type":"x","seq":0,"time":1700000000000}}\n'
                          '{"type":"tool-call-chunks","seq0":1,"time0":1700000000001,'
                          '"data":{"turn":1,"step":2,"index":1,"dt":[0,5],"id":"c\\"1",'
                          '"name":"n\\u00e9","args":["{","\\"a\\":1","}"]}}\n').encode(),
    "packed_bad": (f"{_HEAD}\n"
                   '{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[],'
                   '"texts":[]}}\n'
                   '{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[1],'
                   '"texts":["a"]}}\n'
                   '{"type":"text-chunks","data":{"turn":1.0,"step":1,"index":0,"dt":[],'
                   '"texts":["a"]}}\n'
                   '{"type":"text-chunks","extra":1,"data":{"turn":1,"step":1,"index":0,'
                   '"dt":[],"texts":["a"]}}\n'
                   '{"type":"reasoning-chunks","data":{"turn":1,"step":1,"index":0,'
                   '"dt":[true],"texts":["a","b"]}}\n').encode(),
    "packed_time_out_of_years": (b'{"type":"session","id":"s"}\n{"type":"text-chunks",'
                                 b'"time0":253402300799999,"data":{"turn":1,"step":1,'
                                 b'"index":0,"dt":[1],"texts":["a","b"]}}\n'),
    "bad_tokens": (f'{_HEAD}\n{{"type":"assistant/chunk","data":{{"chunk":{{"type":"usage",'
                   f'"usage":{{"inputTokens":{2**64},"outputTokens":1}}}}}}}}\n').encode(),
    "tokens_wrong_type": (f'{_HEAD}\n{{"type":"assistant/chunk","data":{{"turn":1,"step":1,'
                          '"chunk":{"type":"usage","usage":{"inputTokens":"3",'
                          '"outputTokens":true}}}}\n').encode(),
    "compressed": b"\x1f\x8b\x08\x00" + b"\x00" * 20,
    "nul_byte": f"{_HEAD}\n".encode() + b'{"type":"x"}\x00\n',
    "whitespace_around": f'  {_HEAD} \n\t{_STEP}  \r\n'.encode(),
}


@pytest.mark.parametrize("errors", ["raise", "quarantine"])
@pytest.mark.parametrize("case", sorted(_CASES))
def test_bad_inputs(tmp_path: Path, case: str, errors: str) -> None:
    f = tmp_path / "session.jsonl"
    f.write_bytes(_CASES[case])
    both(f, errors)
    assert _native.panics() == 0


def test_clean_cases_are_read_natively() -> None:
    for case in ("clean", "bom", "crlf", "no_final_newline", "blank_lines", "floats",
                 "huge_int", "int64_edges", "minus_zero", "duplicate_keys", "escapes",
                 "deep_ok", "seq_null", "dup_seq", "float_time", "packed_seq0_time0",
                 "tokens_wrong_type", "second_session_line", "whitespace_around"):
        assert _native_reads(_CASES[case]), case


# ----------------------------------------------------------------------------- event shapes
def _event_lines() -> list[str]:
    """Lines of every type and field shape _decode_event looks at."""
    ev = [
        {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": c}}
        for c in [{"type": "text-delta", "text": "x"}, {"type": "reasoning-delta", "text": 5},
                  {"type": "tool-call-delta", "argumentsDelta": "{"}, {"type": "usage",
                  "usage": {"inputTokens": 3, "outputTokens": 4}}, {"type": "usage"},
                  {"type": "finish", "reason": "stop"}, {"type": "finish", "reason": {}},
                  {"type": "finish", "reason": {"kind": "error"}}, {"type": 3}, {},
                  {"type": "block-start", "index": 0}, "chunk"]
    ]
    ev += [
        {"type": "tool/call", "data": {"callId": "c1", "name": "ls", "arguments": {"b": [1, 2.5]}}},
        {"type": "tool/call", "data": {"callId": "c2", "name": "ls", "arguments": '{"x": 1}'}},
        {"type": "tool/call", "data": {"callId": "c3", "arguments": "not json"}},
        {"type": "tool/call", "data": {"callId": 4, "arguments": None}},
        {"type": "tool/result", "data": {"callId": "c1", "isError": True, "content": [
            {"type": "text", "text": "a"}, {"text": "b"}]}},
        {"type": "tool/result", "data": {"message": {"content": [
            {"toolCallId": "c2", "content": [{"type": "text", "text": "r"}]},
            {"isError": True, "content": "plain"}, {"content": {"k": [1]}}, {"content": 3},
            "skip", {"content": None}]}}},
        {"type": "tool/result", "data": {"message": {"content": "bare",
                                                     "source": {"callId": "c3"}}}},
        {"type": "tool/result", "data": {"message": {"content": 2.5}}},
        {"type": "tool/result", "data": {"message": {"content": {"toolCallId": "c9"},
                                                     "source": {"callId": "c8"}}}},
        {"type": "tool/result", "data": {"message": {"content": None, "source": {"callId": 1}}}},
        {"type": "tool/result", "data": {"message": "m"}},
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "error"}}},
        {"type": "turn/end", "data": {"turn": 1, "reason": "error"}},
        {"type": "user/message", "data": {"id": "u1", "content": [
            {"type": "text", "text": "hi"}, {"type": "image"}, {"type": None, "text": "n"}]}},
        {"type": "assistant/message", "data": {"message": {"id": "a1", "content": [
            {"type": "text", "text": "p"}, {"type": "text", "text": "q"}]}}},
        {"type": "assistant/message", "data": {"content": [{"text": "r"}]}},
        {"type": "approval/asked", "data": {"id": "p1", "toolName": "rm"}},
        {"type": "approval/decided", "data": {"id": "p1"}},
        {"type": "tool-workflow/agent-start", "data": {"childId": "k1"}},
        {"type": "subagent/descriptor", "data": {}},
        {"type": "x", "cacheKey": "top", "data": {"cacheKey": None}},
        {"type": "x", "cacheKey": "top", "data": {}},
        {"type": "x", "data": "not an object", "cacheKey": "k"},
        {"type": "request/header", "data": {"turn": 2**31 - 1, "step": True}},
    ]
    return [json.dumps(e) for e in ev]


def test_every_event_shape(tmp_path: Path) -> None:
    f = tmp_path / "session.jsonl"
    f.write_text("\n".join([_HEAD, *_event_lines()]) + "\n")
    assert _native_reads(f.read_bytes())
    both(f)


# ----------------------------------------------------------------------------- hypothesis


_BASE: list[str] = []


def _base_lines(tmp: Path) -> list[str]:
    if not _BASE:
        f = tmp / "base.jsonl"
        generate_toh(f, events=400, seed=3)
        _BASE.extend(f.read_text(encoding="utf-8").splitlines())
        _BASE.extend(_event_lines())
    return _BASE


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_mut=st.integers(0, 4),
       style=st.sampled_from(["compact", "spaced", "ascii", "crlf"]))
def test_mutated_logs_both_paths(tmp_path: Path, seed: int, n_mut: int, style: str) -> None:
    """A generated log with a few lines mutated (values, keys, order, truncation): most
    mutations keep the file valid (so it is read natively), some make the core refuse it."""
    rng = random.Random(seed)
    lines = list(_base_lines(tmp_path))
    for _ in range(n_mut):
        i = rng.randrange(1, len(lines))
        op = rng.random()
        if op < 0.85:
            try:
                obj = json.loads(lines[i])
            except ValueError:
                continue
            lines[i] = json.dumps(_mutate(obj, rng), ensure_ascii=style == "ascii",
                                  separators=(", ", ": ") if style == "spaced" else (",", ":"))
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]))]
    end = "\r\n" if style == "crlf" else "\n"
    f = tmp_path / f"m{seed}.jsonl"
    f.write_text(end.join(lines) + end, encoding="utf-8", errors="surrogatepass")
    both(f)
    both(f, "raise")
    assert _native.panics() == 0


_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
)
_json_values = st.recursive(
    _json_scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids,
                                                              max_size=4),
    max_leaves=10,
)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.tuples(st.sampled_from(["x", "tool/call", "tool/result", "user/message",
                                                  "assistant/chunk", "turn/end"]),
                               st.dictionaries(st.sampled_from(
                                   ["turn", "step", "chunk", "arguments", "callId", "content",
                                    "message", "id", "reason", "cacheKey", "name"]),
                                   _json_values, max_size=5)), min_size=1, max_size=6))
def test_random_values_both_paths(tmp_path: Path, data: list[tuple[str, dict]]) -> None:
    """Random JSON values (floats, long integers, any strings) in the fields the typed
    columns are picked from: payloads and fields written natively equal the reference's."""
    lines = [_HEAD] + [json.dumps({"type": t, "data": d}, ensure_ascii=False) for t, d in data]
    f = tmp_path / "r.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    both(f)


# ----------------------------------------------------------------------------- corpus
@pytest.mark.corpus
@pytest.mark.filterwarnings("ignore::replaykit.io.toh.OrphanRunWarning")
def test_corpus_both_paths(toh_corpus: Path) -> None:
    both(toh_corpus)
    both(toh_corpus, "raise")
    files = sorted(toh_corpus.rglob("*.jsonl"))
    native = sum(_native_reads(f.read_bytes()) for f in files)
    assert native >= len(files) // 2, (native, len(files))
    for d in sorted({p.parent for p in files}):
        both(d)
