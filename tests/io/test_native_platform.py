"""read_phoenix's native path (``native/src/platform.rs``) against the reference path
(``REPLAYKIT_NATIVE=0``): the same table (values, types, dictionaries, order), runs,
quarantine, errors and chain hashes, on the real Phoenix JSON Lines samples, on generated
exports (both of Phoenix's span shapes, traces split over files), on seeded mutations of the
real lines and on a small Hypothesis property.

The core declines a whole file when it is not sure of a span (every span the reference would
quarantine among them) and a file sharing a trace with another file; the reference then reads
it. The tests check that the core does read the real samples and most generated files (so the
comparison is not vacuous), and check the native rows against an independent reading (a few
lines of ``json.loads``). Kept cheap: small files, few examples (the suite's time is tight).
"""

from __future__ import annotations

import json
import os
import random
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _json_mutations import mutate, raw_mutation
from _native_paths import native_path, require_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import native as _native
from replaykit.errors import ReplayKitError

ROOT = Path(__file__).resolve().parents[2]
_SAMPLES = [ROOT / "tests" / "data" / "phoenix" / "recorded" / "spans_dataframe.jsonl",
            ROOT / "tests" / "data" / "phoenix" / "recorded" / "spans_rest.jsonl",
            ROOT / "data" / "phoenix" / "spans.jsonl"]


@pytest.fixture(autouse=True)
def _core_built() -> None:
    require_core()


def _load(path: Any, native: bool, errors: str) -> tuple[str, Any, list[str]]:
    """``(outcome, log or error, warnings)`` of one load (warnings, such as a duplicate
    span's, are part of what the two paths must agree on)."""
    with native_path(native), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            got: tuple[str, Any] = ("ok", rk.read_phoenix(
                path, owner="t", errors=errors, progress=False))  # type: ignore[arg-type]
        except ReplayKitError as exc:
            got = ("error", (type(exc).__name__, getattr(exc, "reason", None), str(exc)))
    return (*got, [f"{w.category.__name__}: {w.message}" for w in seen])


def _dictionaries(table: pa.Table) -> dict[str, list[Any]]:
    return {name: [c.dictionary.to_pylist() for c in table.column(name).chunks]
            for name in table.column_names if pa.types.is_dictionary(table.column(name).type)}


def both(path: Any, errors: str = "quarantine", *, hashes: bool = False) -> Any:
    """Load both ways, assert they agree (table, dictionaries, runs, quarantine, warnings;
    ``hashes``: chain hashes too), return the native result."""
    a, b = _load(path, True, errors), _load(path, False, errors)
    assert a[0] == b[0], (a[1], b[1])
    assert a[2] == b[2]
    if a[0] == "error":
        assert a[1] == b[1]
        return a
    x, y = a[1], b[1]
    assert x.table.schema.equals(y.table.schema, check_metadata=True)
    for name in x.table.column_names:
        cx, cy = x.table.column(name), y.table.column(name)
        assert cx.equals(cy), (f"column {name} differs", [
            (i, p, q) for i, (p, q) in enumerate(zip(cx.to_pylist(), cy.to_pylist(),
                                                     strict=True)) if p != q][:3])
    assert _dictionaries(x.table) == _dictionaries(y.table)
    assert x.runs.equals(y.runs), (x.runs.to_pylist()[:2], y.runs.to_pylist()[:2])
    assert x.quarantine.equals(y.quarantine), (
        x.quarantine.to_pylist()[:3], y.quarantine.to_pylist()[:3])
    if hashes:
        with native_path(False):
            assert rk.stamp_chain(x).table.column("row_hash").equals(
                rk.stamp_chain(y).table.column("row_hash"))
    return a


def _native_reads(*paths: Path) -> list[bool]:
    got = _native.core().scan_phoenix_files([os.fsencode(p) for p in paths],
                                            [str(p) for p in paths], ["s"] * len(paths), 1)
    return list(got[0])


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ----------------------------------------------------------------------------- real samples
@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.parent.name + "/" + p.name)
def test_each_real_sample(path: Path) -> None:
    assert _native_reads(path) == [True], path  # the real samples are clean: read natively
    got = both(path, hashes=True)
    both(path, "raise")
    t = got[1].table.to_pydict()
    # an independent reading: one row per span (a TOOL span two), at its line; a span whose
    # payload has no added figures is its own payload, canonically written
    lines = {i: json.loads(raw) for i, raw in enumerate(
        path.read_text(encoding="utf-8").split("\n"), start=1) if raw.strip()}
    assert sorted(set(t["source_line"])) == sorted(lines)
    per_line: dict[int, list[int]] = {}
    for k, line in enumerate(t["source_line"]):
        per_line.setdefault(line, []).append(k)
    for i, doc in lines.items():
        kind = str(doc.get("span_kind")).upper()
        assert len(per_line[i]) == (2 if kind == "TOOL" else 1), i
        first = per_line[i][0]
        assert t["type"][first] == kind
        assert '"replaykitUsage"' in t["payload"][first] or \
            t["payload"][first] == _canonical(doc), i
    assert _native.panics() == 0


def test_real_samples_folder_with_a_shared_trace(tmp_path: Path) -> None:
    """The two recorded files hold the same spans in two shapes: each file alone is native,
    together they share traces, so both go to the reference (conflicting copies)."""
    for p in _SAMPLES[:2]:
        (tmp_path / p.name).write_bytes(p.read_bytes())
    assert _native_reads(*sorted(tmp_path.iterdir())) == [False, False]
    got = both(tmp_path)
    assert got[1].quarantine.num_rows > 0


# ----------------------------------------------------------------------------- generated
_TEXTS = ["hi", "", "\u00e9\u4e2d \"q\" \\ \n\t", '{"city": "Paris"}', "[1, 2]", " {bad",
          "42"]


def _span(rng: random.Random, trace: str, sid: str, parent: str | None, flat: bool,
          tools: list[str]) -> dict[str, Any]:
    """A random Phoenix span in the span-dataframe (``flat``) or REST shape."""
    kind = rng.choice(["LLM", "LLM", "TOOL", "CHAIN", "AGENT", "llm", "RETRIEVER"])
    failed = rng.random() < 0.15
    attrs: dict[str, Any] = {"input.value": rng.choice(_TEXTS), "session.id": rng.choice(
        [None, "sess-1", 3])}
    if kind.upper() == "LLM":
        calls = [{"tool_call.id": f"c{rng.randint(0, 3)}",
                  "tool_call.function.name": rng.choice(tools)}
                 for _ in range(rng.randint(0, 2))]
        msg: dict[str, Any] = {"message.role": "assistant", "message.content": rng.choice(
            [*_TEXTS, None, [{"type": "text", "text": "t"}]])}
        if calls:
            msg["message.tool_calls"] = calls
        attrs["llm.output_messages"] = [msg]
        attrs["llm.token_count.prompt"] = rng.choice([None, 3, 24.0, 0])
        attrs["llm.token_count.completion"] = rng.choice([None, 5, 7.0])
        attrs["llm.finish_reason"] = rng.choice([None, "stop", "tool_calls", "Length", "odd"])
        if rng.random() < 0.3:
            attrs["llm.token_count.prompt_details.cache_read"] = rng.choice([2, 2.0, -1])
    elif kind == "TOOL":
        attrs["tool.name"] = rng.choice([*tools, None])
        attrs["output.value"] = rng.choice([*_TEXTS, None, {"ok": True}])
        if rng.random() < 0.2:
            attrs["tool_call.id"] = f"c{rng.randint(0, 3)}"
    start = rng.choice([f"2026-01-01T00:00:{rng.randint(0, 59):02d}+00:00",
                        1767225600000 + rng.randint(0, 5000), None, 1767225600])
    span: dict[str, Any] = {"name": rng.choice(["root", "ChatCompletion", "get_weather", None]),
                            "span_kind": kind, "parent_id": parent, "start_time": start,
                            "end_time": rng.choice([None, "2026-01-01T00:01:00+00:00"]),
                            "status_code": "ERROR" if failed else rng.choice(["OK", "UNSET"]),
                            "status_message": "boom" if failed else ""}
    if flat:
        span["context.span_id"], span["context.trace_id"] = sid, trace
        for k, v in attrs.items():
            span[f"attributes.{k}"] = v
    else:
        span["context"] = {"span_id": sid, "trace_id": trace}
        rest: dict[str, Any] = {}
        for k, v in attrs.items():
            if k == "llm.output_messages":  # the REST API's numbered keys
                for i, m in enumerate(v):
                    for mk, mv in m.items():
                        if mk == "message.tool_calls":
                            for j, c in enumerate(mv):
                                for ck, cv in c.items():
                                    rest[f"{k}.{i}.message.tool_calls.{j}.{ck}"] = cv
                        else:
                            rest[f"{k}.{i}.{mk}"] = mv
            elif v is not None:
                rest[k] = v
        span["attributes"] = rest
    return span


def _export(rng: random.Random, traces: list[str], n: int, flat: bool) -> list[Any]:
    out: list[Any] = []
    for t in traces:
        root = f"{t}-root"
        out.append(_span(rng, t, root, None, flat, ["get_weather", "search"]))
        out[-1]["span_kind"] = rng.choice(["CHAIN", "AGENT"])
        for k in range(n):
            out.append(_span(rng, t, f"{t}-s{k}", root, flat, ["get_weather", "search"]))
    rng.shuffle(out)
    return out


def _write(path: Path, docs: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(d if isinstance(d, str) else json.dumps(d, ensure_ascii=False)
                              for d in docs) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", range(4))
def test_generated_exports(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    files = [_write(tmp_path / "e" / f"f{i}.jsonl",
                    _export(rng, [f"t{seed}{i}{j}" for j in range(3)], 4, flat=i % 2 == 0))
             for i in range(3)]
    read = _native_reads(*files)
    both(tmp_path / "e")
    both(tmp_path / "e", "raise")
    assert sum(read) + sum(_native_reads(f)[0] for f in files) >= 0  # computed, both ways
    # a trace split over two files: those two go to the reference, the third stays native
    extra = _export(rng, ["t-shared"], 2, flat=True)
    _write(tmp_path / "s" / "a.jsonl", [*_export(rng, ["ta"], 2, True), extra[0]])
    _write(tmp_path / "s" / "b.jsonl", [*_export(rng, ["tb"], 2, True), *extra[1:]])
    _write(tmp_path / "s" / "c.jsonl", _export(rng, ["tc"], 2, True))
    ok = _native_reads(*sorted((tmp_path / "s").iterdir()))
    assert ok[:2] == [False, False]
    both(tmp_path / "s")


def test_clean_generated_files_are_read_natively(tmp_path: Path) -> None:
    """Not vacuous: exports without the shapes the core declines are read by it."""
    rng = random.Random(11)
    natively = 0
    for i in range(6):
        docs = _export(rng, [f"n{i}"], 3, flat=i % 2 == 0)
        f = _write(tmp_path / f"n{i}.jsonl", docs)
        natively += _native_reads(f)[0]
        both(f)
    assert natively >= 3


def test_some_files_declined_joined_in_file_order(tmp_path: Path) -> None:
    rng = random.Random(5)
    for i in range(4):
        _write(tmp_path / f"f{i}.jsonl", _export(rng, [f"o{i}"], 2, flat=True))
    lines = (tmp_path / "f1.jsonl").read_text().splitlines()
    lines[1] = lines[1][:-3]  # truncated: this file goes to the reference
    (tmp_path / "f1.jsonl").write_text("\n".join(lines) + "\n")
    got = both(tmp_path)
    assert got[1].quarantine.num_rows == 1
    both(tmp_path, "raise")


# ----------------------------------------------------------------------------- mutations
_VALUES = [0, -1, 2**63, 1.5, 1.0, -0.0, True, None, "", "x", "\u00df", 'q"', [], {}, [1],
           {"message.content": "c"}, "LLM", "TOOL", "ERROR", "error", "llm", 1767225600000,
           1767225600000000000, "2026-01-01T00:00:00+00:00", '{"a": 1}', "[", {"k": [None]}]


#: the members a mutation adds or overwrites (the shapes the scanner keys on)
_KEYS = ["span_kind", "context", "context.trace_id", "context.span_id", "parent_id", "attributes",
         "start_time", "status_code", "attributes.llm.output_messages", "attributes.tool.name",
         "spans", "attributes.llm.token_count.prompt", "name"]


def _mutate(obj: Any, rng: random.Random) -> Any:
    return mutate(obj, rng, _VALUES, _KEYS)


def _raw_mutation(line: str, rng: random.Random) -> str:
    return raw_mutation(line, rng, 'span_kind', 'TOOL')


@pytest.mark.parametrize("seed", range(6))
def test_seeded_mutations_of_real_lines(tmp_path: Path, seed: int) -> None:
    rng = random.Random(2000 + seed)
    src = _SAMPLES[seed % len(_SAMPLES)]
    docs = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines() if x.strip()]
    natively = 0
    for trial in range(5):
        out: list[Any] = []
        for d in docs:
            if rng.random() < 0.15:
                m = _mutate(d, rng)
                out.append(_raw_mutation(json.dumps(m), rng) if rng.random() < 0.3 else m)
            else:
                out.append(d)
        f = _write(tmp_path / f"t{trial}" / src.name, out)
        natively += _native_reads(f)[0]
        both(f)
        both(f, "raise")
    assert natively  # some mutated files are read natively (not all declined)
    assert _native.panics() == 0


# ----------------------------------------------------------------------------- property
_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**64),
                  st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
                  st.sampled_from(["LLM", "TOOL", "CHAIN", "ERROR", "stop", "t", "s", "c1",
                                   '{"a": 1}', "2026-01-01T00:00:00+00:00"]))
_json = st.recursive(_leaf, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(
    st.sampled_from(["message.content", "message.tool_calls", "tool_call.id", "text",
                     "message", "content", "x"]), c, max_size=3)), max_leaves=6)
_attr_keys = st.sampled_from(["llm.output_messages", "llm.output_messages.0.message.content",
                              "llm.output_messages.1.message.content",
                              "llm.token_count.prompt", "llm.finish_reason", "tool.name",
                              "input.value", "output.value", "tool_call.id", "session.id",
                              "llm.output_messages.0.message.tool_calls.0.tool_call.id",
                              "llm.token_count.prompt_details.cache_read"])
_span_st = st.fixed_dictionaries(
    {"context": st.fixed_dictionaries({"trace_id": st.sampled_from(["t", "u"]),
                                       "span_id": st.sampled_from(["a", "b", "c", "d"])})},
    optional={"span_kind": st.sampled_from(["LLM", "TOOL", "CHAIN", "", "agent"]),
              "parent_id": st.sampled_from([None, "a", ""]),
              "name": _json, "status_code": st.sampled_from(["OK", "ERROR", "error", None]),
              "status_message": _json,
              "start_time": st.one_of(st.sampled_from(["2026-01-01T00:00:00+00:00", "", "x"]),
                                      st.integers(0, 2**41)),
              "end_time": _json,
              "attributes": st.dictionaries(_attr_keys, _json, max_size=4)})


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_span_st, min_size=1, max_size=6))
def test_property_native_equals_reference(tmp_path: Path, docs: list[Any]) -> None:
    """Any list of Phoenix-shaped spans: the native path (reading, or declining the file)
    gives what the reference gives."""
    both(_write(tmp_path / "h" / "spans.jsonl", docs))
