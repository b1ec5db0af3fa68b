"""read_codex's native path (``native/src/codex.rs``) against the reference path
(``REPLAYKIT_NATIVE=0``): the same table (values, types, dictionaries, order), runs,
quarantine, errors and chain hashes, on every real rollout in tests/data, on generated
sessions of both layouts (``{timestamp, type, payload}`` lines and the mid-2025 bare layout;
counts after their call and, as Codex 0.40 wrote them, before it), on tool arguments and
outputs Python's ``json.loads`` reads differently from strict JSON, on seeded mutations of the
real lines, and on a Hypothesis property.

The core refuses a whole file when it is not sure of a line (every line the reference would
quarantine among them) and the reference reads that file; the tests check that it does read
the real samples and the generated files (so the comparison is not vacuous), and check the
native rows against an independent reading (a few lines of ``json.loads``).

In CI (``CI=true``) the core must be built: a missing extension fails, never skips.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from _json_mutations import mutate, raw_mutation
from _native_paths import assert_same, native_path, require_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import native as _native
from replaykit.errors import ReplayKitError

CODEX = Path(__file__).resolve().parents[2] / "tests" / "data" / "codex"
_SAMPLES = sorted(CODEX.rglob("*.jsonl"))


@pytest.fixture(autouse=True)
def _core_built() -> None:
    require_core()


def _load(path: Any, native: bool, errors: str) -> tuple[str, Any]:
    with native_path(native):
        try:
            return ("ok", rk.read_codex(path, owner="t", errors=errors,  # type: ignore[arg-type]
                                        progress=False))
        except ReplayKitError as exc:
            return ("error", (type(exc).__name__, getattr(exc, "reason", None), str(exc)))


def both(path: Any, errors: str = "quarantine") -> Any:
    """Load both ways, assert they agree, return the native result."""
    a = _load(path, True, errors)
    b = _load(path, False, errors)
    assert_same(a, b)
    return a


def _native_reads(path: Path) -> bool:
    got = _native.core().scan_codex_files([os.fsencode(path)], ["fallback"], ["s"], 1)
    return bool(got[0][0])


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _write(path: Path, docs: list[Any], *, crlf: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    end = "\r\n" if crlf else "\n"
    path.write_text(end.join(d if isinstance(d, str) else json.dumps(d, ensure_ascii=False)
                             for d in docs) + end, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- real samples
@pytest.mark.parametrize("errors", ["raise", "quarantine"])
def test_real_samples_folder(errors: str) -> None:
    got = both(CODEX, errors)
    assert got[1].table.num_rows > 500 and got[1].num_runs == len(_SAMPLES)
    assert _native.panics() == 0


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: str(p.relative_to(CODEX)))
def test_each_real_sample(path: Path) -> None:
    assert _native_reads(path), path  # the real samples are clean: read natively
    t = both(path)[1].table
    # an independent reading: one row per non-blank line (two for a call's first tool
    # call), each line its own canonical payload
    lines = {i: json.loads(raw) for i, raw in enumerate(
        path.read_text(encoding="utf-8").split("\n"), start=1) if raw.strip()}
    src = t.column("source_line").to_pylist()
    payloads = t.column("payload").to_pylist()
    assert sorted(set(src)) == sorted(lines)
    for line, payload in zip(src, payloads, strict=True):
        doc = lines[line]
        want = _canonical({**doc, "contentPart": "call"}) if '"contentPart":"call"' in payload \
            else _canonical(doc)
        assert payload == want, line
    # tokens: each token_count's last usage once (a repeated total is not counted again)
    want_in = want_out = 0
    total = None
    for doc in lines.values():
        info = (doc.get("payload") or {}).get("info")
        if doc.get("type") == "event_msg" and doc["payload"].get("type") == "token_count" \
                and isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
            key = _canonical(info.get("total_token_usage"))
            if info.get("total_token_usage") is None or key != total:
                total = key
                want_in += info["last_token_usage"].get("input_tokens") or 0
                want_out += info["last_token_usage"].get("output_tokens") or 0
    assert sum(x or 0 for x in t.column("input_tokens").to_pylist()) == want_in
    assert sum(x or 0 for x in t.column("output_tokens").to_pylist()) == want_out


# ----------------------------------------------------------------------------- generated
_TEXTS = ["hi", "", "<environment_context>", "\u00e9\u4e2d \"q\" \\ \n\t", "done"]
#: argument / output texts the core reads itself (JSON, or text no JSON reader takes) ...
_ARGS = ['{"cmd":["ls","-la"],"b":1.5e-7}', "[REDACTED_ARGUMENTS len=4 sha=ab]", "not json",
         "{bad", "[1, 2]", "  ", "", '{"a":1} x', "*** Begin Patch"]
#: ... and texts Python's json.loads reads where strict JSON does not (the core refuses them)
_LOOSE = ['"a string"', "NaN", "-Infinity", '{"a": NaN}', '["\\ud800"]', "1e400",
          '{"output": NaN}']
_OUTPUTS = ["plain", '{"output":"ran","metadata":{"exit_code":0}}',
            '{"output":"boom","metadata":{"exit_code":2}}', '{"metadata":{"exit_code":true}}',
            '{"success":false}', "{not json", "[1,2]", " {\"output\":\"x\"}",
            {"content": "c"}, {"content": [{"type": "text", "text": "t"}]}, {"x": 1}, None, 5,
            [{"type": "input_text", "text": "a"}]]


def _items(rng: random.Random, n: int, *, leading: bool, tasks: bool) -> list[Any]:
    """``(type, payload)`` pairs of a random rollout: turns of model calls (reasoning,
    messages, tool calls of every kind and their outputs) with their token counts."""
    out: list[Any] = []
    total = 0
    k = 0
    while len(out) < n:
        k += 1
        if tasks:
            out.append(("event_msg", {"type": "task_started", "turn_id": f"t{k}"}))
        out.append(("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": rng.choice(_TEXTS)}]}))
        if rng.random() < 0.5:
            out.append(("event_msg", {"type": "user_message", "message": rng.choice(_TEXTS)}))
        for _ in range(rng.randint(1, 3)):  # model calls
            total += 1
            usage = {"input_tokens": rng.randint(0, 99), "output_tokens": rng.randint(0, 9),
                     "cached_input_tokens": 3}
            count = ("event_msg", {"type": "token_count", "info": {
                "last_token_usage": usage,
                "total_token_usage": {"total": total if rng.random() < 0.9 else total - 1}}})
            if leading:
                out.append(count)
            if rng.random() < 0.6:
                out.append(("response_item", {"type": "reasoning", "summary": rng.choice([
                    [], [{"type": "summary_text", "text": "think"}, {"text": 5}]]),
                    "content": rng.choice([None, [{"type": "reasoning_text", "text": "raw"}]]),
                    "encrypted_content": "x"}))
            for _ in range(rng.randint(0, 2)):
                cid = f"call_{rng.randint(0, 9)}"
                kind = rng.choice(["function_call", "function_call", "custom_tool_call",
                                   "local_shell_call", "web_search_call"])
                call: dict[str, Any] = {"type": kind, "call_id": rng.choice([cid, cid, "", None])}
                if kind == "function_call":
                    call.update(name="shell", arguments=rng.choice(_ARGS + [{"x": 1}, None]))
                elif kind == "custom_tool_call":
                    call.update(name="apply_patch", input=rng.choice(
                        ["*** Begin Patch", '{"a":1}', None, {"p": [1]}]))
                else:
                    call.update(id=f"ws_{k}", action=rng.choice([{"type": "exec"}, "text", None]))
                out.append(("response_item", call))
                if rng.random() < 0.8:
                    out.append(("response_item", {
                        "type": rng.choice(["function_call_output", "custom_tool_call_output",
                                            "local_shell_call_output"]),
                        "call_id": cid, "output": rng.choice(_OUTPUTS)}))
            if rng.random() < 0.7:
                out.append(("response_item", {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text",
                                                           "text": rng.choice(_TEXTS)}]}))
                out.append(("event_msg", {"type": "agent_message", "message": "m"}))
            if not leading:
                out.append(count)
        r = rng.random()
        if r < 0.1:
            out.append(("event_msg", {"type": rng.choice(["error", "stream_error"]),
                                      "message": "e"}))
        elif r < 0.15:
            out.append(("compacted", {"message": "summary"}))
        elif r < 0.2:
            out.append(("event_msg", {"type": "exec_command_end", "exit_code": 0}))
        if tasks:
            out.append(("event_msg", rng.choice([
                {"type": "task_complete", "last_agent_message": "ok"},
                {"type": "turn_aborted", "reason": "interrupted"}])))
        out.append(("turn_context", {"model": "gpt-5", "effort": "high"}))
    return out


def _rollout(rng: random.Random, sid: str, n: int, *, layout: str = "current",
             leading: bool = False, tasks: bool = True) -> list[Any]:
    items = _items(rng, n, leading=leading, tasks=tasks and layout == "current")
    if layout == "2025":  # the mid-2025 layout: a bare header, bare items, state markers
        docs: list[Any] = [{"id": sid, "timestamp": "2025-06-01T10:00:00Z",
                            "instructions": None, "git": {"branch": "main"}}]
        for typ, pl in items:
            if typ == "response_item":
                docs.append(pl)
                if rng.random() < 0.1:
                    docs.append({"record_type": "state"})
        return docs
    meta: dict[str, Any] = {"id": sid, "timestamp": "2025-10-01T10:00:00Z", "cwd": "/w",
                            "cli_version": "0.40.0" if leading else "0.125.0",
                            "originator": "codex_cli", "model_provider": "openai",
                            "git": {"commit_hash": "abc", "branch": "main"}, "source": "cli"}
    if rng.random() < 0.3:
        meta["forked_from_id"] = "parent-session"
    docs = [{"timestamp": "2025-10-01T10:00:00.000Z", "type": "session_meta", "payload": meta}]
    for i, (typ, pl) in enumerate(items):
        docs.append({"timestamp": f"2025-10-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                     "type": typ, "payload": pl})
        if rng.random() < 0.02:
            docs.append({"record_type": "state"})  # the September 2025 change-over's markers
    return docs


@pytest.mark.parametrize("seed", range(4))
def test_generated_sessions(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "sessions"
    sid = f"0199812e-64f0-7f73-91fc-{seed:012d}"
    files = [
        _write(root / "a" / f"rollout-2025-10-01T10-00-00-{sid}.jsonl",
               _rollout(rng, sid, 80, leading=seed % 2 == 0)),
        _write(root / "b" / "rollout-b.jsonl", _rollout(rng, "s-b", 60, tasks=False),
               crlf=seed % 2 == 1),
        _write(root / "c" / "rollout-2025-06-01.jsonl", _rollout(rng, "s-c", 60, layout="2025")),
        # no session_meta: the session id comes from the file name
        _write(root / "d" / "rollout-2025-10-02T10-00-00-0199812e-64f0-7f73-91fc-aaaaaaaaaaaa"
               ".jsonl", _rollout(rng, "x", 30)[1:]),
    ]
    for f in files:
        assert _native_reads(f), f
    got = both(root)
    assert got[1].num_runs == 4
    both(root, "raise")


def test_duplicate_sessions_and_refused_files(tmp_path: Path) -> None:
    """Files read natively and by the reference in one load, joined in file order; a second
    copy of a session is quarantined (``duplicate_session``) whichever path read it."""
    rng = random.Random(7)
    docs = _rollout(rng, "s1", 40)
    for name in ("f0", "f1", "f2", "f3"):
        _write(tmp_path / f"{name}.jsonl", docs if name != "f3" else _rollout(rng, "s3", 30))
    bad = tmp_path / "f2.jsonl"
    lines = bad.read_text().splitlines()
    lines[5] = lines[5][:-3]  # truncated: this file goes to the reference
    bad.write_text("\n".join(lines) + "\n")
    assert not _native_reads(bad) and _native_reads(tmp_path / "f1.jsonl")
    got = both(tmp_path)
    reasons = sorted(got[1].quarantine.column("reason").to_pylist())
    assert reasons == ["bad_json", "duplicate_session", "duplicate_session"]
    assert got[1].num_runs == 2
    assert both(tmp_path, "raise")[0] == "error"


@pytest.mark.parametrize("value", _ARGS + _LOOSE)
def test_argument_and_output_strings(tmp_path: Path, value: str) -> None:
    """A function call's arguments and a tool output as text, JSON or not, also text Python's
    json.loads reads otherwise than strict JSON (NaN, lone surrogates, huge numbers, ...):
    read as the reference reads them (the text no JSON reader takes too), or refused."""
    docs = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}},
            {"type": "response_item", "payload": {"type": "function_call", "name": "f",
                                                  "call_id": "c", "arguments": value}},
            {"type": "response_item", "payload": {"type": "function_call_output",
                                                  "call_id": "c", "output": value}},
            {"type": "response_item", "payload": {"type": "custom_tool_call", "call_id": "d",
                                                  "input": value}}]
    f = _write(tmp_path / "r.jsonl", docs)
    assert _native_reads(f) == (value not in _LOOSE)
    both(f)


# ----------------------------------------------------------------------------- mutations
_VALUES = [0, -1, 2**63, 1.5, 1.0, True, False, None, "", "x", "<x", [], {}, [1], {"type": 1},
           "session_meta", "response_item", "event_msg", "token_count", "task_started",
           "function_call", "message", "assistant", "user", "reasoning", '{"a":1}', "[x",
           {"last_token_usage": {"input_tokens": -1}}, {"exit_code": 1}]


#: the members a mutation adds or overwrites (the shapes the scanner keys on)
_KEYS = ["type", "payload", "role", "call_id", "id", "info", "arguments", "output", "record_type",
         "timestamp", "turn_id", "contentPart", "last_token_usage", "total_token_usage"]


def _mutate(obj: Any, rng: random.Random) -> Any:
    return mutate(obj, rng, _VALUES, _KEYS)


def _raw_mutation(line: str, rng: random.Random) -> str:
    return raw_mutation(line, rng)


@pytest.mark.parametrize("seed", range(6))
def test_seeded_mutations_of_real_lines(tmp_path: Path, seed: int) -> None:
    rng = random.Random(2000 + seed)
    src = _SAMPLES[seed % len(_SAMPLES)]
    docs = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()[:50]
            if x.strip()]
    natively = 0
    for trial in range(5):
        out: list[Any] = []
        for d in docs:
            if rng.random() < 0.06:
                m = _mutate(d, rng)
                out.append(_raw_mutation(json.dumps(m), rng) if rng.random() < 0.3 else m)
            else:
                out.append(d)
        f = _write(tmp_path / f"t{trial}" / src.name, out)
        natively += _native_reads(f)
        both(f)
    assert natively  # some mutated files are read natively (not all refused)
    assert _native.panics() == 0


# ----------------------------------------------------------------------------- property
_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**64), st.floats(
    allow_nan=False, allow_infinity=False), st.text(max_size=5), st.sampled_from(
    ["message", "assistant", "user", "reasoning", "function_call", "function_call_output",
     "token_count", "task_started", "user_message", '{"output":"o"}', "<u", "c1"]))
_json = st.recursive(_leaf, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(
    st.sampled_from(["type", "text", "role", "content", "call_id", "name", "arguments",
                     "output", "info", "last_token_usage", "total_token_usage",
                     "input_tokens", "metadata", "exit_code"]), c, max_size=4)), max_leaves=8)
_payload = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["message", "reasoning", "function_call", "custom_tool_call",
                             "local_shell_call", "function_call_output", "token_count",
                             "task_started", "task_complete", "user_message", "error"]),
    "role": st.sampled_from(["user", "assistant", "developer"]), "content": _json,
    "call_id": st.sampled_from(["c1", "c2", ""]), "arguments": _json, "output": _json,
    "info": _json, "summary": _json, "message": _json, "turn_id": _json})
_line = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["session_meta", "response_item",
                                                    "event_msg", "turn_context",
                                                    "compacted"])},
                          optional={"payload": st.one_of(_payload, _json),
                                    "timestamp": st.sampled_from(["2025-01-01T00:00:00Z", 3])}),
    st.just({"record_type": "state"}), _payload)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_line, min_size=1, max_size=8), st.booleans())
def test_property_native_equals_reference(tmp_path: Path, docs: list[Any],
                                          legacy: bool) -> None:
    """Any list of rollout-shaped lines, after a current or a mid-2025 header: the native path
    (reading, or refusing the file) gives what the reference gives."""
    head = {"id": "s", "timestamp": "t", "instructions": None} if legacy else \
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}
    both(_write(tmp_path / "h" / "rollout.jsonl", [head, *docs]))
