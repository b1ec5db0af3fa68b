"""Seeded fuzzing of every loader with mutated real and sample logs.

Each case takes one input (a corpus toh log, a bundled sample in ``data/``, or a small log
made here or by :mod:`replaykit.datasets`), applies one seeded mutation (bytes, lines or JSON
values: deep nesting, big numbers (also past Python's 4300-digit limit), wrong types, unpaired
surrogate escapes, deletions, truncation, duplication, gzip, CRLF) and loads
the result with ``errors="raise"`` and with ``errors="quarantine"``. Asserted for every load:

* only :class:`replaykit.ReplayKitError` subclasses escape;
* under quarantine, loaded + quarantined (+ filtered out) == the input rows the loader reports
  (pleach's ``extras["pleach_counts"]``), and those input rows are the file's non-blank lines;
  for toh, non-blank lines == header + lines that produced events + quarantined lines;
* no load takes more than 10 s;
* the input files are byte-for-byte unchanged.

A failure prints the seed, the case and the mutation; rerun one case with
``REPLAYKIT_FUZZ_SEED=<seed> REPLAYKIT_FUZZ_CASE=<family>:<case> pytest <this file>``.
The default run is a few thousand loads; ``REPLAYKIT_FUZZ_N=<factor>`` multiplies the number of
cases per family (``REPLAYKIT_FUZZ_N=10`` for a long run).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import random
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import replaykit as rk
from replaykit.errors import ReplayKitError

DATA = Path(__file__).resolve().parents[2] / "data"
SEED = int(os.environ.get("REPLAYKIT_FUZZ_SEED", "15"))
FACTOR = float(os.environ.get("REPLAYKIT_FUZZ_N", "1"))
ONLY = os.environ.get("REPLAYKIT_FUZZ_CASE")  # "<family>:<case>"
TIME_LIMIT = 10.0
TENANT = "fuzz"

# --------------------------------------------------------------------------- JSON mutations
#: raw JSON texts that replace a value (big numbers, non-JSON literals)
BIG = ["123456789012345678901234567890", "18446744073709551616", "9223372036854775808",
       "-9223372036854775809", "1e30", "-1e30", "1e400", str(2**62), str(-(2**63)),
       "18446744073709551615", "9" * 5000]  # fmt: skip
NONFINITE = ["NaN", "Infinity", "-Infinity"]
#: raw JSON strings that are not Unicode text (an unpaired surrogate escape) or barely are
ODD_STRINGS = ['"\\ud800"', '"a\\udfff"', '"\\ud83d\\ude00"', '"\\u0000"', '"\\u005f"']
WRONG: list[Any] = ["", "x", 0, -1, 1.5, True, False, None, [], {}, [1, "a"], {"k": 1},
                    "2026-13-45T99:99:99Z"]  # fmt: skip
_HOLE = "\u0000HOLE\u0000"


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys/indices) into a JSON value, the root included."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_nodes(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_nodes(v, (*path, i)))
    return out


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    parent = value
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = new
    return value


def _deep(rng: random.Random) -> str:
    depth = rng.choice([200, 300, 600, 1100])
    if rng.random() < 0.5:
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def mutate_json(value: Any, rng: random.Random) -> tuple[str, str]:
    """(new JSON text, description) of one value mutation of a parsed JSON document."""
    nodes = _nodes(value)
    path = rng.choice(nodes)
    op = rng.choice(["deep", "big", "big", "wrong", "wrong", "delete", "nonfinite", "dup",
                     "string"])
    raw: str | None = None
    if op == "deep":
        raw = _deep(rng)
    elif op == "big":
        raw = rng.choice(BIG)
    elif op == "nonfinite":
        raw = rng.choice(NONFINITE)
    elif op == "string":
        raw = rng.choice(ODD_STRINGS)
    elif op == "wrong":
        new = rng.choice(WRONG)
        value = _set(value, path, new)
        return json.dumps(value), f"json:{op} at {list(path)} -> {new!r}"
    elif op == "delete" and path:
        parent = value
        for p in path[:-1]:
            parent = parent[p]
        del parent[path[-1]]
        return json.dumps(value), f"json:delete {list(path)}"
    elif op == "dup" and path and isinstance(path[-1], int):
        parent = value
        for p in path[:-1]:
            parent = parent[p]
        parent.insert(path[-1], json.loads(json.dumps(parent[path[-1]])))
        return json.dumps(value), f"json:duplicate element {list(path)}"
    else:
        raw = rng.choice(BIG)
        op = "big"
    value = _set(value, path, _HOLE)
    text = json.dumps(value).replace(json.dumps(_HOLE), raw)
    return text, f"json:{op} at {list(path)} -> {raw[:40]}{'...' if len(raw) > 40 else ''}"


# --------------------------------------------------------------------------- byte/line mutations
def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    n = len(data)
    op = rng.choice(["flip", "set", "delete", "insert", "truncate", "duplicate", "empty",
                     "random", "bom", "gzip", "crlf"])  # fmt: skip
    i = rng.randrange(n) if n else 0
    if op == "flip" and n:
        b = bytearray(data)
        bit = 1 << rng.randrange(8)
        b[i] ^= bit
        return bytes(b), f"bytes:flip bit {bit} at {i}"
    if op == "set" and n:
        c = rng.choice(b'{}[]",:\x00\xff\n 0-e.\\')
        return data[:i] + bytes([c]) + data[i + 1:], f"bytes:set {i} = {c!r}"
    if op == "delete" and n:
        k = rng.randint(1, 64)
        return data[:i] + data[i + k:], f"bytes:delete {k} at {i}"
    if op == "insert":
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        return data[:i] + junk + data[i:], f"bytes:insert {junk!r} at {i}"
    if op == "truncate":
        return data[:i], f"bytes:truncate at {i}"
    if op == "duplicate" and n:
        k = rng.randint(1, 512)
        return data[:i] + data[i:i + k] + data[i:], f"bytes:duplicate {k} at {i}"
    if op == "empty":
        return b"", "bytes:empty"
    if op == "bom":
        return b"\xef\xbb\xbf" + data, "bytes:bom"
    if op == "gzip":
        return gzip.compress(data, mtime=0), "bytes:gzip"
    if op == "crlf":
        return data.replace(b"\n", b"\r\n"), "bytes:crlf"
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))
    return junk, f"bytes:random {len(junk)}"


def mutate_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    n = len(lines)
    i = rng.randrange(n)
    op = rng.choice(["delete", "duplicate", "swap", "blank", "garbage", "nonfinite", "tail"])
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "swap":
        j = rng.randrange(n)
        lines[i], lines[j] = lines[j], lines[i]
        op = f"swap with {j}"
    elif op == "blank":
        lines.insert(i, rng.choice([b"", b"   ", b"\t", b" \t \r", b"\x0c"]))
    elif op == "garbage":
        lines.insert(i, rng.choice([b"{", b"[]", b"1", b'"x"', b"null", b"{}", b"\xff\xfe",
                                    b'{"type":', b"[" * 2000]))  # fmt: skip
    elif op == "nonfinite":
        lines[i] = lines[i].replace(b":0,", b":NaN,", 1).replace(b":1", b":Infinity", 1)
    else:  # cut the line in half
        lines[i] = lines[i][: len(lines[i]) // 2]
        op = "cut"
    return b"\n".join(lines), f"lines:{op} at line {i + 1}"


def mutate_jsonl(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One JSON-value mutation in one line of a JSON-lines file."""
    lines = data.split(b"\n")
    idx = [k for k, ln in enumerate(lines) if ln.strip()]
    k = rng.choice(idx)
    try:
        value = json.loads(lines[k])
    except ValueError:
        return mutate_lines(data, rng)
    text, desc = mutate_json(value, rng)
    lines[k] = text.encode()
    return b"\n".join(lines), f"line {k + 1}: {desc}"


def mutate_jsondoc(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    value = json.loads(data)
    text, desc = mutate_json(value, rng)
    return text.encode(), desc


def any_text_mutation(jsonl: bool) -> Callable[[bytes, random.Random], tuple[bytes, str]]:
    def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
        r = rng.random()
        if r < 0.5:
            return (mutate_jsonl if jsonl else mutate_jsondoc)(data, rng)
        if r < 0.8 and jsonl:
            return mutate_lines(data, rng)
        return mutate_bytes(data, rng)

    return mutate


# --------------------------------------------------------------------------- inputs
def _small_otel() -> dict[str, Any]:
    """A small OTLP/JSON trace: an agent span, a chat span and a tool span."""
    tid = "5b8efff798038103d269b633813fc60c"

    def attr(k: str, v: Any) -> dict[str, Any]:
        if isinstance(v, bool):
            return {"key": k, "value": {"boolValue": v}}
        if isinstance(v, int):
            return {"key": k, "value": {"intValue": str(v)}}
        if isinstance(v, list):
            return {"key": k, "value": {"arrayValue": {"values": [{"stringValue": x}
                                                                 for x in v]}}}
        return {"key": k, "value": {"stringValue": v}}

    def span(sid: str, parent: str | None, name: str, start: int, attrs: dict[str, Any]
             ) -> dict[str, Any]:  # fmt: skip
        s: dict[str, Any] = {
            "traceId": tid, "spanId": sid, "name": name, "kind": 1,
            "startTimeUnixNano": str(1767225600000000000 + start * 1000000),
            "endTimeUnixNano": str(1767225600000000000 + (start + 5) * 1000000),
            "attributes": [attr(k, v) for k, v in attrs.items()],
            "events": [{"timeUnixNano": str(1767225600000000000 + start * 1000000 + 1),
                        "name": "gen_ai.choice", "attributes": [attr("index", 0)]}],
            "status": {"code": 1},
        }  # fmt: skip
        if parent:
            s["parentSpanId"] = parent
        return s

    conv = {"gen_ai.conversation.id": "conv-1"}
    spans = [
        span("aaaaaaaaaaaaaaa1", None, "invoke_agent planner", 0,
             {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "p", **conv}),
        span("aaaaaaaaaaaaaaa2", "aaaaaaaaaaaaaaa1", "chat m", 1,
             {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
              "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 7,
              "gen_ai.response.finish_reasons": ["tool_calls"],
              "gen_ai.input.messages": json.dumps(
                  [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
              "gen_ai.output.messages": json.dumps(
                  [{"role": "assistant", "parts": [{"type": "text", "content": "x"}]}]),
              **conv}),
        span("aaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaa1", "execute_tool get", 2,
             {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get",
              "gen_ai.tool.call.id": "call-1", "gen_ai.tool.call.arguments": '{"city":"P"}',
              "gen_ai.tool.call.result": "rain", **conv}),
    ]  # fmt: skip
    return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", "demo")]},
                               "scopeSpans": [{"scope": {"name": "s", "version": "1"},
                                               "spans": spans}]}]}  # fmt: skip


def _legacy_otel() -> tuple[bytes, bytes]:
    """A trace in OpenLLMetry's numbered attributes and a chat span whose messages are only in
    OTLP log records (gen_ai.user.message / gen_ai.tool.message / gen_ai.choice)."""
    tid, root, chat = "7c9efff798038103d269b633813fc60c", "bbbbbbbbbbbbbbb1", "bbbbbbbbbbbbbbb2"

    def kv(d: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else
                 {"stringValue": v}} for k, v in d.items()]

    t0 = 1767225600000000000
    spans = [
        {"traceId": tid, "spanId": root, "name": "openai.chat", "startTimeUnixNano": str(t0),
         "endTimeUnixNano": str(t0 + 9), "attributes": kv({
             "llm.request.type": "chat", "gen_ai.system": "openai",
             "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi",
             "gen_ai.completion.0.role": "assistant",
             "gen_ai.completion.0.finish_reason": "tool_calls",
             "gen_ai.completion.0.tool_calls.0.id": "c1",
             "gen_ai.completion.0.tool_calls.0.name": "get",
             "gen_ai.completion.0.tool_calls.0.arguments": '{"q": 1}',
             "gen_ai.usage.prompt_tokens": 5, "gen_ai.usage.completion_tokens": 2})},
        {"traceId": tid, "spanId": chat, "parentSpanId": root, "name": "openai.chat",
         "startTimeUnixNano": str(t0 + 10), "endTimeUnixNano": str(t0 + 20),
         "attributes": kv({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 9})},
    ]
    traces = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    body = [("gen_ai.user.message", {"content": "hi"}),
            ("gen_ai.tool.message", {"content": "rain", "id": "c1"}),
            ("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                               "message": {"content": "It rains."}})]
    records = [{"traceId": tid, "spanId": chat, "timeUnixNano": str(t0 + 11 + i),
                "eventName": n, "body": {"kvlistValue": {"values": kv(b)}}}
               for i, (n, b) in enumerate(body)]
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
    return json.dumps(traces).encode(), json.dumps(logs).encode()


def _otel_proto(doc: bytes) -> bytes:
    """The same trace as an OTLP protobuf ExportTraceServiceRequest."""
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    d = json.loads(doc)
    for rs in d["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in sp:
                        sp[k] = base64.b64encode(bytes.fromhex(sp[k])).decode()
    return json_format.ParseDict(d, ExportTraceServiceRequest()).SerializeToString()


def _written_otel(gen: Path) -> bytes:
    """A toh sample written back by ``EventLog.to_otel``."""
    out = gen / "written.otel.json"
    rk.read_toh(DATA / "toh" / "shed-fork", owner=TENANT).to_otel(out, overwrite=True)
    return out.read_bytes()


@dataclass
class Sample:
    name: str
    files: dict[str, bytes]  # relative path -> content
    target: str  # the relative path to mutate
    kind: str  # "jsonl", "json", "parquet", "binary"
    load: Callable[[Path, str], rk.EventLog]  # (root folder, errors) -> log
    counts: str | None = None  # "pleach" or "toh": how input rows are checked


def _toh(root: Path, errors: str) -> rk.EventLog:
    return rk.read_toh(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _pleach(root: Path, errors: str) -> rk.EventLog:
    return rk.read_pleach(root, errors=errors)  # type: ignore[arg-type]


def _isplay(root: Path, errors: str) -> rk.EventLog:
    return rk.read_isplay(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _otel(root: Path, errors: str) -> rk.EventLog:
    return rk.read_otel(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _inspect(root: Path, errors: str) -> rk.EventLog:
    return rk.read_inspect(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _claude_code(root: Path, errors: str) -> rk.EventLog:
    return rk.read_claude_code(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _codex(root: Path, errors: str) -> rk.EventLog:
    return rk.read_codex(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _langsmith(root: Path, errors: str) -> rk.EventLog:
    return rk.read_langsmith(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _langfuse(root: Path, errors: str) -> rk.EventLog:
    return rk.read_langfuse(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _phoenix(root: Path, errors: str) -> rk.EventLog:
    return rk.read_phoenix(root, owner=TENANT, errors=errors)  # type: ignore[arg-type]


def _auto(root: Path, errors: str) -> rk.EventLog:
    return rk.read_events(root, owner=TENANT, tenant_id=TENANT, errors=errors)


def _dataset(root: Path, errors: str) -> rk.EventLog:
    return rk.read_events(root / "ds", tenant_id=TENANT, errors=errors)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _parquet_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Byte damage, or a table-level change (wrong column types, dropped columns, big values)."""
    if rng.random() < 0.5:
        if rng.random() < 0.2:
            jsonl = DATA.joinpath("pleach", "harness_event_log.jsonl").read_bytes()[:4000]
            return jsonl, "parquet:JSONL bytes named .parquet"
        return mutate_bytes(data, rng)
    table = pq.read_table(io.BytesIO(data))
    cols = table.column_names
    name = rng.choice(cols)
    op = rng.choice(["drop", "strings", "ints", "big_ms", "nulls", "struct"])
    n = table.num_rows
    if op == "drop":
        table = table.drop_columns([name])
    elif op == "strings":
        table = table.set_column(cols.index(name), name,
                                 pa.array([rng.choice(["", "x", "7a", "{"]) for _ in range(n)]))
    elif op == "ints":
        table = table.set_column(cols.index(name), name,
                                 pa.array([rng.choice([0, -1, 2**62, -(2**63)]) for _ in range(n)],
                                          pa.int64()))  # fmt: skip
    elif op == "big_ms":
        name = "created_at" if "created_at" in cols else name
        vals = [rng.choice([2**62, -(2**62), 10**18, 253402300800000]) for _ in range(n)]
        table = table.set_column(cols.index(name), name, pa.array(vals, pa.int64()))
    elif op == "nulls":
        table = table.set_column(cols.index(name), name, pa.nulls(n, table.schema.field(name).type))
    else:
        table = table.set_column(cols.index(name), name,
                                 pa.array([{"a": i} for i in range(n)]))
    return _parquet_bytes(table), f"parquet:{op} column {name}"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    toh: list[Sample] = []
    for scen in sorted((DATA / "toh").iterdir()):
        files = {p.name: p.read_bytes() for p in sorted(scen.glob("*.jsonl"))}
        for target in files:
            toh.append(Sample(f"data/toh/{scen.name}/{target}", {target: files[target]}, target,
                              "jsonl", _toh, "toh"))
        toh.append(Sample(f"data/toh/{scen.name}/", files, "session.jsonl", "jsonl", _toh))
    out["toh_data"] = toh
    pl = DATA.joinpath("pleach", "harness_event_log.jsonl").read_bytes()
    head = b"\n".join(pl.split(b"\n")[:60]) + b"\n"
    out["pleach_jsonl"] = [Sample("data/pleach/harness_event_log.jsonl[:60]", {"log.jsonl": head},
                                  "log.jsonl", "jsonl", _pleach, "pleach")]
    pq_sample = DATA.joinpath("pleach", "harness_event_log_hashed.parquet").read_bytes()
    gen = tmp_path_factory.mktemp("gen")
    from replaykit.datasets import generate_pleach

    gp = generate_pleach(gen / "g.parquet", events=300, runs=6, format="parquet",
                         timestamps="epoch_ms", seed=3)
    out["pleach_parquet"] = [
        Sample("data/pleach/harness_event_log_hashed.parquet", {"log.parquet": pq_sample},
               "log.parquet", "parquet", _pleach, "pleach"),
        Sample("generate_pleach(parquet, epoch_ms)", {"log.parquet": gp.read_bytes()},
               "log.parquet", "parquet", _pleach, "pleach"),
    ]
    isplay = [Sample(f"data/isplay/{p.name}", {p.name: p.read_bytes()}, p.name, "json", _isplay)
              for p in sorted((DATA / "isplay").glob("claims-*.json"))]
    from replaykit.datasets import generate_isplay

    runs = generate_isplay(gen / "runs.jsonl", runs=3, events_per_run=12, seed=5)
    isplay.append(Sample("generate_isplay(runs.jsonl)", {"runs.jsonl": runs.read_bytes()},
                         "runs.jsonl", "jsonl", _isplay))
    out["isplay"] = isplay
    otel = json.dumps(_small_otel()).encode()
    legacy, logs = _legacy_otel()
    out["otel"] = [
        Sample("otel trace.json", {"trace.json": otel}, "trace.json", "json", _otel),
        Sample("otel traces.jsonl", {"t.jsonl": otel + b"\n" + otel.replace(b"5b8e", b"6c9f")},
               "t.jsonl", "jsonl", _otel),
        # older generations: numbered gen_ai.prompt.N.* attributes, content in log records
        Sample("otel numbered + log records: traces", {"t.json": legacy, "t.logs.json": logs},
               "t.json", "json", _otel),
        Sample("otel numbered + log records: logs", {"t.json": legacy, "t.logs.json": logs},
               "t.logs.json", "json", _otel),
        Sample("otel protobuf", {"t.pb": _otel_proto(otel)}, "t.pb", "binary", _otel),
        Sample("to_otel output", {"w.json": _written_otel(gen)}, "w.json", "json", _otel),
    ]
    # real instrumentation output recorded once (tests/data/otel, tests/data/README.md)
    recorded = Path(__file__).resolve().parents[1] / "data" / "otel"
    lt = (recorded / "langtrace" / "langtrace.otlp.json").read_bytes()
    ol = {p.name: p.read_bytes() for p in sorted((recorded / "openlit").glob("*.json"))}
    out["otel"] += [
        Sample("otel langtrace gen_ai.content.* events", {"t.json": lt}, "t.json", "json", _otel),
        Sample("otel openlit: traces", ol, "openlit.otlp.json", "json", _otel),
        Sample("otel openlit: logs", ol, "openlit.logs.json", "json", _otel),
    ]
    # coding-agent transcripts (real ones under tests/data and data/ samples): every line
    # is loaded or quarantined
    tests_data = Path(__file__).resolve().parents[1] / "data"
    agents = []
    for fmt, load in (("claude_code", _claude_code), ("codex", _codex)):
        for base in (DATA / fmt, tests_data / fmt):
            for p in sorted(base.rglob("*.jsonl")):
                if p.stat().st_size < 48_000:
                    agents.append(Sample(f"{fmt}:{p.relative_to(base)}", {p.name: p.read_bytes()},
                                         p.name, "jsonl", load, "lines"))
    out["agents"] = agents
    platforms = []
    for fmt, load in (("langsmith", _langsmith), ("langfuse", _langfuse), ("phoenix", _phoenix)):
        for base in (DATA / fmt, tests_data / fmt):
            for p in sorted(base.rglob("*")):
                kind = {".jsonl": "jsonl", ".json": "json", ".csv": "csv",
                        ".parquet": "parquet"}.get(p.suffix)
                if kind is not None:
                    platforms.append(Sample(f"{fmt}:{p.relative_to(base)}",
                                            {p.name: p.read_bytes()}, p.name,
                                            "jsonl" if kind == "csv" else kind, load))
    out["platforms"] = platforms
    # a Parquet dataset written by EventLog.to_parquet
    ds_root = gen / "dsw"
    rk.read_toh(DATA / "toh" / "shed-fork", owner=TENANT).to_parquet(ds_root / "ds")
    ds_files = {str(p.relative_to(ds_root)): p.read_bytes()
                for p in sorted(ds_root.rglob("*.parquet"))}
    out["dataset"] = [Sample(f"to_parquet dataset: {t}", ds_files, t, "parquet", _dataset)
                      for t in ds_files]
    # a mixed folder for read_events(format="auto")
    mixed = {"toh/session.jsonl": DATA.joinpath("toh", "shed-fork", "session.jsonl").read_bytes(),
             "pleach/log.jsonl": head, "isplay/run.json":
             DATA.joinpath("isplay", "claims-triage-C-231.json").read_bytes(),
             "otel/trace.json": otel}  # fmt: skip
    out["mixed"] = [Sample(f"mixed folder: {t}", mixed, t, "binary", _auto) for t in mixed]
    return out


@pytest.fixture(scope="module")
def corpus_samples(corpus_dir: Path) -> list[Sample]:
    files = sorted((corpus_dir / "toh").rglob("*.jsonl"))
    assert len(files) >= 100, f"expected the 117 corpus logs under {corpus_dir}/toh"
    return [Sample(f"corpus:{p.relative_to(corpus_dir)}", {p.name: p.read_bytes()}, p.name,
                   "jsonl", _toh, "toh") for p in files if p.stat().st_size < 64_000]


@pytest.fixture(scope="module")
def inspect_samples(tmp_path_factory: pytest.TempPathFactory) -> list[Sample]:
    try:
        from test_inspect import _run_task
    except ImportError:  # pragma: no cover - depends on the environment
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            raise
        pytest.skip("inspect_ai is not installed (extra: inspect)")
    d = tmp_path_factory.mktemp("inspect_fuzz")
    out = []
    for fmt in ("json", "eval"):
        p = _run_task(d / fmt, fmt)
        out.append(Sample(f"inspect .{fmt}", {p.name: p.read_bytes()}, p.name,
                          "json" if fmt == "json" else "binary", _inspect))
    return out


# --------------------------------------------------------------------------- the checks
def _nonblank(data: bytes) -> int:
    return sum(1 for ln in data.split(b"\n") if ln.strip())


def _rejected_whole(log: rk.EventLog, rel: str) -> bool:
    """The file was rejected as a whole (compressed or unreadable: one row, line null)."""
    return any(r["line"] is None and r["reason"] in ("compressed", "unreadable")
               and str(r["source"]).endswith("/" + rel) for r in log.quarantine.to_pylist())


def _check_counts(sample: Sample, files: dict[str, bytes], log: rk.EventLog) -> str | None:
    q = log.quarantine.num_rows
    if sample.counts == "pleach":
        c = log.extras["pleach_counts"].to_pylist()
        if sum(r["loaded"] for r in c) != len(log):
            return f"pleach_counts loaded {sum(r['loaded'] for r in c)} != len(log) {len(log)}"
        if sum(r["quarantined"] for r in c) != q:
            return f"pleach_counts quarantined {[r['quarantined'] for r in c]} != {q} rows"
        for r in c:
            if r["loaded"] + r["quarantined"] + r["filtered_out"] != r["input_rows"]:
                return f"pleach_counts row {r} does not add up"
        if sample.kind == "jsonl":  # a file rejected whole counts as one input row
            lines = sum(1 if _rejected_whole(log, k) else _nonblank(v) for k, v in files.items())
            if sum(r["input_rows"] for r in c) != lines:
                return f"input_rows {sum(r['input_rows'] for r in c)} != {lines} non-blank lines"
    elif sample.counts == "lines":  # every non-blank line loaded or quarantined
        if any(_rejected_whole(log, k) for k in files):
            return None
        lines = sum(_nonblank(v) for v in files.values())
        event_lines = len({(s, ln) for s, ln in zip(
            log.table.column("source").to_pylist(), log.table.column("source_line").to_pylist(),
            strict=True)})  # fmt: skip
        qlines = len({(r["source"], r["line"]) for r in log.quarantine.to_pylist()
                      if r["line"] is not None})
        if lines != event_lines + qlines:
            return f"{lines} non-blank lines != {event_lines} loaded + {qlines} quarantined lines"
    elif sample.counts == "toh":
        lines = sum(0 if _rejected_whole(log, k) else _nonblank(v) for k, v in files.items())
        event_lines = len({(s, ln) for s, ln in zip(
            log.table.column("source").to_pylist(), log.table.column("source_line").to_pylist(),
            strict=True)})  # fmt: skip
        qrows = log.quarantine.to_pylist()
        file_level = sum(1 for r in qrows if r["line"] is None)
        if lines != log.runs.num_rows + event_lines + len(qrows) - file_level:
            return (f"{lines} non-blank lines != {log.runs.num_rows} headers + {event_lines} "
                    f"event lines + {len(qrows) - file_level} quarantined lines")
    return None


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _run_case(sample: Sample, mutate: Callable[[bytes, random.Random], tuple[bytes, str]],
              rng: random.Random, root: Path) -> list[str]:
    """Mutate, load in both error modes, check; the problems found (empty when all is well)."""
    files = dict(sample.files)
    files[sample.target], desc = mutate(files[sample.target], rng)
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    before = _digest(root)
    problems = []
    for errors in ("raise", "quarantine"):
        t0 = time.perf_counter()
        log = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                log = sample.load(root, errors)
        except ReplayKitError:
            pass
        except Exception as exc:  # noqa: BLE001 - the point of the test
            problems.append(f"{desc} [errors={errors}]: raw {type(exc).__name__}: "
                            f"{str(exc)[:300]}")
        took = time.perf_counter() - t0
        if took > TIME_LIMIT:
            problems.append(f"{desc} [errors={errors}]: load took {took:.1f} s")
        if log is not None and errors == "quarantine":
            bad = _check_counts(sample, files, log)
            if bad:
                problems.append(f"{desc} [errors={errors}]: {bad}")
    if _digest(root) != before:
        problems.append(f"{desc}: the input files changed while loading")
    return [f"{sample.name}: {p}" for p in problems]


def _fuzz(family: str, samples: list[Sample], cases: int, tmp_path: Path,
          mutate_for: Callable[[Sample], Callable[[bytes, random.Random], tuple[bytes, str]]]
          ) -> int:  # fmt: skip
    """Run ``cases`` seeded cases over ``samples``; fails listing every problem found."""
    n = max(1, int(cases * FACTOR))
    todo = range(n)
    if ONLY:
        fam, _, k = ONLY.partition(":")
        if fam != family:
            pytest.skip(f"REPLAYKIT_FUZZ_CASE={ONLY} selects another family")
        todo = range(int(k), int(k) + 1)
    failures = []
    for k in todo:
        rng = random.Random(f"{SEED}:{family}:{k}")
        sample = rng.choice(samples)
        root = tmp_path / f"c{k}"
        for p in _run_case(sample, mutate_for(sample), rng, root):
            failures.append(f"REPLAYKIT_FUZZ_SEED={SEED} REPLAYKIT_FUZZ_CASE={family}:{k} -> {p}")
    assert not failures, f"{len(failures)} problems in {n} cases:\n" + "\n".join(failures[:100])
    return n


def _text_mutations(sample: Sample) -> Callable[[bytes, random.Random], tuple[bytes, str]]:
    if sample.kind == "parquet":
        return _parquet_mutation
    if sample.kind == "binary":
        return mutate_bytes
    return any_text_mutation(sample.kind == "jsonl")


def test_fuzz_toh_corpus(corpus_samples: list[Sample], tmp_path: Path) -> None:
    _fuzz("toh_corpus", corpus_samples, 500, tmp_path, _text_mutations)


@pytest.mark.parametrize(("family", "cases"), [
    ("toh_data", 300), ("pleach_jsonl", 250), ("pleach_parquet", 120), ("isplay", 200),
    ("otel", 250), ("dataset", 60), ("mixed", 60), ("agents", 250), ("platforms", 250),
])  # fmt: skip
def test_fuzz_samples(samples: dict[str, list[Sample]], family: str, cases: int,
                      tmp_path: Path) -> None:
    _fuzz(family, samples[family], cases, tmp_path, _text_mutations)


def test_fuzz_inspect(inspect_samples: list[Sample], tmp_path: Path) -> None:
    _fuzz("inspect", inspect_samples, 120, tmp_path, _text_mutations)


def test_mutations_are_seeded() -> None:
    """The same seed gives the same mutation (so a printed case can be rerun)."""
    data = DATA.joinpath("toh", "shed-fork", "session.jsonl").read_bytes()
    for k in range(20):
        a = any_text_mutation(True)(data, random.Random(f"1:{k}"))
        b = any_text_mutation(True)(data, random.Random(f"1:{k}"))
        assert a == b
    assert len({any_text_mutation(True)(data, random.Random(f"1:{k}"))[1]
                for k in range(20)}) > 10


def test_fuzz_inputs_load_unmutated(samples: dict[str, list[Sample]], tmp_path: Path) -> None:
    """Every fuzz input loads cleanly before mutation (so mutations, not inputs, are tested)."""
    for family, group in samples.items():
        for k, sample in enumerate(group):
            root = tmp_path / f"{family}{k}"
            for rel, data in sample.files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_bytes(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                log = sample.load(root, "raise")
            assert len(log) > 0 and log.quarantine.num_rows == 0, sample.name
            assert _check_counts(sample, sample.files, log) is None, sample.name
