"""read_claude_code's native path (``native/src/transcripts.rs``) against the reference path
(``REPLAYKIT_NATIVE=0``): the same table (values, types, dictionaries, order), runs,
quarantine, errors and chain hashes, on every real transcript in tests/data, on generated
sessions, on seeded mutations of the real lines, and on a Hypothesis property.

The core refuses a whole file when it is not sure of a line (every line the reference would
quarantine among them), and the reference then reads that file; the tests also check that it
does read the real samples and the generated files (so the comparison is not vacuous), and
check the native rows against an independent reading (a few lines of ``json.loads``).

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

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
CC = DATA / "claude_code"


@pytest.fixture(autouse=True)
def _core_built() -> None:
    require_core()


def _load(path: Any, native: bool, errors: str) -> tuple[str, Any]:
    with native_path(native):
        try:
            return ("ok", rk.read_claude_code(path, owner="t", errors=errors,  # type: ignore[arg-type]
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
    got = _native.core().scan_claude_code_files([os.fsencode(path)], [path.stem], ["s"], 1)
    return bool(got[0][0])


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ----------------------------------------------------------------------------- real samples
_SAMPLES = sorted(CC.rglob("*.jsonl"))


@pytest.mark.parametrize("errors", ["raise", "quarantine"])
def test_real_samples_folder(errors: str) -> None:
    got = both(CC, errors)
    assert got[1].table.num_rows > 500
    assert _native.panics() == 0


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: str(p.relative_to(CC)))
def test_each_real_sample(path: Path) -> None:
    assert _native_reads(path), path  # the real samples are clean: read natively
    got = both(path)
    t = got[1].table
    # an independent reading: every non-blank line gives at least one row (one per content
    # block), and a line with at most one block is its own payload, canonically written
    lines = [(i, json.loads(raw)) for i, raw in enumerate(
        path.read_text(encoding="utf-8").split("\n"), start=1) if raw.strip()]
    src = t.column("source_line").to_pylist()
    payloads = t.column("payload").to_pylist()
    assert sorted(set(src)) == [i for i, _ in lines]
    rows_of: dict[int, list[int]] = {}
    for k, line in enumerate(src):
        rows_of.setdefault(line, []).append(k)
    for i, doc in lines:
        content = (doc.get("message") or {}).get("content") \
            if doc.get("type") in ("user", "assistant") else None
        if isinstance(content, list) and len(content) > 1:
            assert len(rows_of[i]) >= len(content)
            continue
        plain = [payloads[k] for k in rows_of[i] if '"contentPart":"call"' not in payloads[k]]
        assert plain and all(p == _canonical(doc) for p in plain), i


def test_real_samples_token_convention() -> None:
    """input_tokens: every prompt token (input + cache reads + cache writes) of the last line
    of each message id, once per id, recomputed here from the raw lines."""
    path = CC / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    with native_path(True):
        log = rk.read_claude_code(path, owner="t", progress=False)
    last: dict[str, dict[str, Any]] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        doc = json.loads(raw)
        msg = doc.get("message") or {}
        if doc.get("type") == "assistant" and isinstance(msg.get("usage"), dict):
            last[msg["id"]] = msg["usage"]
    want = {mid: sum(u.get(k) or 0 for k in ("input_tokens", "cache_read_input_tokens",
                                              "cache_creation_input_tokens"))
            for mid, u in last.items()}
    t = log.table.to_pydict()
    got: dict[str, int] = {}
    for ref, n in zip(t["ref_id"], t["input_tokens"], strict=True):
        if n is not None:
            assert ref not in got  # once per message id
            got[ref] = n
    assert got == want and want


# ----------------------------------------------------------------------------- generated
def _session(rng: random.Random, sid: str, n: int, *, sidechain: bool = False) -> list[Any]:
    """A random Claude Code session in the shapes the transcripts hold (and a few rarer)."""
    out: list[Any] = []
    k = 0
    texts = ["hi", "", " [Request interrupted by user]", "[Request interrupted by user]",
             "<bash-stdout>ok</bash-stdout>", "\u00e9\u4e2d \"q\" \\ \n\t",
             "\x1c <local-command-stdout>"]
    while len(out) < n:
        k += 1
        base: dict[str, Any] = {"sessionId": sid, "uuid": f"{sid}-u{k}", "parentUuid": None,
                                "timestamp": f"2025-03-0{rng.randint(1, 9)}T10:00:{k % 60:02d}Z",
                                "cwd": "/w", "version": "2.0.1", "isSidechain": sidechain}
        if sidechain:
            base["agentId"] = "a1"
        r = rng.random()
        if r < 0.3:
            content: Any = rng.choice(texts) if rng.random() < 0.5 else [
                {"type": "text", "text": rng.choice(texts)} for _ in range(rng.randint(0, 3))]
            doc = {**base, "type": "user", "message": {"role": "user", "content": content}}
            if rng.random() < 0.1:
                doc["isMeta"] = True
            if rng.random() < 0.05:
                doc["isCompactSummary"] = True
            out.append(doc)
        elif r < 0.7:
            mid = f"msg_{rng.randint(0, 6)}"
            blocks: list[Any] = []
            for _ in range(rng.randint(0, 3)):
                c = rng.random()
                if c < 0.3:
                    blocks.append({"type": "tool_use", "id": f"t{rng.randint(0, 5)}",
                                   "name": rng.choice(["Bash", "Read"]),
                                   "input": {"b": [1, 2.5, None], "a": rng.choice(texts)}})
                elif c < 0.5:
                    blocks.append({"type": "thinking", "thinking": rng.choice(texts),
                                   "signature": "s"})
                elif c < 0.55:
                    blocks.append("bare text")
                else:
                    blocks.append({"type": "text", "text": rng.choice(texts)})
            usage = {"input_tokens": rng.randint(0, 9), "output_tokens": rng.randint(0, 9),
                     "cache_read_input_tokens": rng.choice([None, 0, 100]),
                     "cache_creation_input_tokens": rng.randint(0, 50)}
            msg: dict[str, Any] = {"id": mid, "role": "assistant", "content": blocks,
                                   "usage": usage,
                                   "stop_reason": rng.choice([None, "end_turn", "tool_use",
                                                              "max_tokens", "weird"])}
            if rng.random() < 0.1:
                del msg["id"]
            doc = {**base, "type": "assistant", "message": msg, "requestId": f"req{k}"}
            if rng.random() < 0.05:
                doc["isApiErrorMessage"] = True
            out.append(doc)
        elif r < 0.85:
            out.append({**base, "type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{rng.randint(0, 6)}",
                 "is_error": rng.random() < 0.2,
                 "content": rng.choice(["done", [{"type": "text", "text": "x"}], None,
                                        {"a": 1}, 5])} for _ in range(rng.randint(1, 2))]}})
        elif r < 0.9:
            out.append({"type": "summary", "summary": "s", "leafUuid": f"{sid}-u1"})
        elif r < 0.95:
            out.append({**base, "type": "system", "subtype": rng.choice(
                ["compact_boundary", "local_command", None]), "level": rng.choice(
                ["error", "info"]), "content": "c"})
        else:
            out.append({**base, "type": rng.choice(["progress", "file-history-snapshot",
                                                    "queue-operation", "novel"]),
                        "data": {"x": 1.5e-7}})
    return out


def _write(path: Path, docs: list[Any], *, crlf: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    end = "\r\n" if crlf else "\n"
    path.write_text(end.join(json.dumps(d, ensure_ascii=False) if not isinstance(d, str)
                             else d for d in docs) + end, encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", range(6))
def test_generated_sessions(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    files = [
        _write(tmp_path / "p" / "s1.jsonl", _session(rng, "s1", 120)),
        # a resumed session: the same id in a second file continues its seq
        _write(tmp_path / "p" / "s1b.jsonl", _session(rng, "s1", 40), crlf=seed % 2 == 1),
        _write(tmp_path / "p" / "s1" / "subagents" / "agent-a1.jsonl",
               _session(rng, "s1", 30, sidechain=True)),
    ]
    for f in files:
        assert _native_reads(f), f
    got = both(tmp_path / "p")
    assert got[1].quarantine.num_rows == 0
    both(tmp_path / "p", "raise")


def test_some_files_refused(tmp_path: Path) -> None:
    """Files read natively and by the reference in one load: joined in file order."""
    rng = random.Random(7)
    for i in range(4):
        _write(tmp_path / f"f{i}.jsonl", _session(rng, "s", 50))
    bad = tmp_path / "f1.jsonl"
    lines = bad.read_text().splitlines()
    lines[5] = lines[5][:-3]  # truncated: this file goes to the reference
    bad.write_text("\n".join(lines) + "\n")
    assert not _native_reads(bad)
    assert _native_reads(tmp_path / "f2.jsonl")
    got = both(tmp_path)
    assert got[1].quarantine.num_rows == 1
    both(tmp_path, "raise")


# ----------------------------------------------------------------------------- mutations
_VALUES = [0, -1, 2**63, 2**64, 1.5, 1.0, -0.0, True, None, "", "x", "\x01", 'q"', [], {}, [1],
           ["a"], {"type": "text"}, {"type": "tool_use"}, {"type": "tool_result"},
           {"type": "thinking", "thinking": 3}, "user", "assistant", "summary", "system",
           "tool_use", "tool_result", "[Request interrupted by user]", "<bash-stdout>",
           {"input_tokens": -1}, {"input_tokens": 1.0}, {"input_tokens": 2**63}]


#: the members a mutation adds or overwrites (the shapes the scanner keys on)
_KEYS = ["type", "message", "content", "isSidechain", "agentId", "sessionId", "usage", "id",
         "isMeta", "error", "input", "requestId", "contentIndex"]


def _mutate(obj: Any, rng: random.Random) -> Any:
    return mutate(obj, rng, _VALUES, _KEYS)


def _raw_mutation(line: str, rng: random.Random) -> str:
    return raw_mutation(line, rng)


@pytest.mark.parametrize("seed", range(8))
def test_seeded_mutations_of_real_lines(tmp_path: Path, seed: int) -> None:
    rng = random.Random(1000 + seed)
    src = rng.choice(_SAMPLES)
    lines = src.read_text(encoding="utf-8").splitlines()[:60]
    docs = [json.loads(x) for x in lines if x.strip()]
    natively = 0
    for trial in range(6):
        out: list[Any] = []
        for d in docs:
            if rng.random() < 0.08:
                m = _mutate(d, rng)
                out.append(_raw_mutation(json.dumps(m), rng) if rng.random() < 0.3 else m)
            else:
                out.append(d)
        f = _write(tmp_path / f"t{trial}" / src.name, out)
        natively += _native_reads(f)
        both(f)
        both(f, "raise")
    assert natively  # some mutated files are read natively (not all refused)
    assert _native.panics() == 0


# ----------------------------------------------------------------------------- property
_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**64), st.floats(allow_nan=False,
                  allow_infinity=False), st.text(max_size=6),
                  st.sampled_from(["user", "assistant", "tool_use", "tool_result", "thinking",
                                   "text", "[Request interrupted", "m1", "t1", "s"]))
_json = st.recursive(_leaf, lambda c: st.one_of(st.lists(c, max_size=3),
                                                st.dictionaries(st.sampled_from(
                                                    ["type", "text", "id", "name", "input",
                                                     "content", "usage", "input_tokens",
                                                     "tool_use_id", "thinking", "x"]), c,
                                                    max_size=4)), max_leaves=8)
_line = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "summary", "system", "progress"])},
    optional={"sessionId": st.sampled_from(["s", "", "s2"]), "uuid": st.sampled_from(["u", "v"]),
              "isSidechain": st.booleans(), "agentId": st.sampled_from(["a", ""]),
              "timestamp": st.sampled_from(["2025-01-01T00:00:00Z", "bad"]),
              "message": st.one_of(st.fixed_dictionaries({}, optional={
                  "id": st.sampled_from(["m1", "m2"]), "content": _json, "usage": _json,
                  "stop_reason": _json}), _json),
              "isMeta": _json, "error": _json, "summary": _json, "leafUuid": _json,
              "subtype": st.sampled_from(["compact_boundary", "x"])})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_line, min_size=1, max_size=8))
def test_property_native_equals_reference(tmp_path: Path, docs: list[Any]) -> None:
    """Any list of transcript-shaped lines: the native path (reading, or refusing the file)
    gives what the reference gives."""
    f = _write(tmp_path / "h" / "agent-x.jsonl", docs)
    both(f)
