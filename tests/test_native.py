"""The native core against the reference path: identical tables, quarantine, counts and hashes.

replaykit's Rust core (``native/``, the module ``replaykit._core``) and the Arrow/numpy
reference path (``REPLAYKIT_NATIVE=0``) must give the same results on every input. Each test
here loads the same files both ways and compares everything a user can see: the table (values,
types, dictionaries, order), the runs table, the quarantine rows, the per-file counts, the
warnings, and what ``verify_chain`` reports. Inputs: the bundled samples, generated logs of
several size classes and timestamp forms, seeded mutations of those (the fuzz test's
mutators), random rows from hypothesis, and tampered chains.

In CI (``CI=true``) the core must be built: a missing extension fails, never skips.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit._base import native as _native
from replaykit._base.json import canonical_json, loads
from replaykit.errors import ReplayKitError

DATA = Path(__file__).resolve().parents[1] / "data"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(autouse=True)
def _core_built() -> None:
    if not _native.available():
        if IN_CI:
            pytest.fail("the native core (replaykit._core) is not built, and CI=true")
        pytest.skip("the native core is not built (make demo builds it)")


class _Path:
    """Switch REPLAYKIT_NATIVE for one load (the core reads it on every call)."""

    def __init__(self, native: bool) -> None:
        self.native = native

    def __enter__(self) -> None:
        self.saved = os.environ.get("REPLAYKIT_NATIVE")
        os.environ["REPLAYKIT_NATIVE"] = "1" if self.native else "0"

    def __exit__(self, *exc: object) -> None:
        if self.saved is None:
            os.environ.pop("REPLAYKIT_NATIVE", None)
        else:
            os.environ["REPLAYKIT_NATIVE"] = self.saved


def _load(fn: Any, *args: Any, native: bool, **kw: Any) -> tuple[str, Any, list[str]]:
    """("ok", log, warnings) or ("error", (type, reason, message), warnings)."""
    with _Path(native), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: tuple[str, Any] = ("ok", fn(*args, **kw))
        except ReplayKitError as exc:
            out = ("error", (type(exc).__name__, getattr(exc, "reason", None), str(exc)))
    return (*out, [f"{w.category.__name__}: {w.message}" for w in caught])


def _dictionaries(table: pa.Table) -> dict[str, list[Any]]:
    out = {}
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            out[name] = [c.dictionary.to_pylist() for c in col.chunks]
    return out


def assert_same(a: tuple[str, Any, list[str]], b: tuple[str, Any, list[str]]) -> None:
    """Native result ``a`` equals reference result ``b`` in everything a user sees."""
    assert a[0] == b[0], (a[1], b[1])
    assert a[2] == b[2], "warnings differ"
    if a[0] == "error":
        assert a[1] == b[1]
        return
    x, y = a[1], b[1]
    assert x.table.schema.equals(y.table.schema, check_metadata=True)
    for name in x.table.column_names:
        cx, cy = x.table.column(name), y.table.column(name)
        assert cx.equals(cy), f"column {name} differs"
    assert _dictionaries(x.table) == _dictionaries(y.table)
    assert x.runs.equals(y.runs)
    assert x.quarantine.equals(y.quarantine), (
        x.quarantine.to_pylist()[:3], y.quarantine.to_pylist()[:3])
    assert sorted(x.extras) == sorted(y.extras)
    for k in x.extras:
        assert x.extras[k].equals(y.extras[k]), k


def both(fn: Any, *args: Any, **kw: Any) -> tuple[str, Any, list[str]]:
    """Load both ways, assert they agree, return the native result."""
    a = _load(fn, *args, native=True, **kw)
    b = _load(fn, *args, native=False, **kw)
    assert_same(a, b)
    return a


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("native")
    out = {}
    for name, kw in {
        "tiny": dict(events=40, runs=2),
        "iso_20k": dict(events=20_000, runs=150, seed=3),
        "epoch_20k": dict(events=20_000, runs=90, seed=4, timestamps="epoch_ms"),
        "mixed_5k": dict(events=5_000, runs=40, seed=5, timestamps="mixed"),
        "nohash_8k": dict(events=8_000, runs=30, seed=6, hashes=False),
    }.items():
        out[name] = rk.datasets.generate_pleach(root / f"{name}.jsonl", **kw)  # type: ignore[arg-type]
    return out


def test_core_reports_its_version_and_features() -> None:
    assert _native.version() == _native.core().__version__
    with _Path(True):
        assert _native.describe().startswith(f"native core {_native.version()} (on")
    with _Path(False):
        assert _native.describe().startswith(
            f"native core {_native.version()} (off (REPLAYKIT_NATIVE=0)")
    assert isinstance(_native.core().cpu_features(), list)


@pytest.mark.parametrize("errors", ["raise", "quarantine"])
def test_bundled_pleach_sample(errors: str) -> None:
    kind, log, _ = both(rk.read_pleach, DATA / "pleach" / "harness_event_log.jsonl",
                        errors=errors)
    assert kind == "ok" and len(log) > 100


@pytest.mark.parametrize("name", ["tiny", "iso_20k", "epoch_20k", "mixed_5k", "nohash_8k"])
def test_generated_logs(generated: dict[str, Path], name: str) -> None:
    kind, log, _ = both(rk.read_pleach, generated[name], errors="quarantine")
    assert kind == "ok" and len(log) > 0


def test_the_native_path_reads_clean_blocks(generated: dict[str, Path]) -> None:
    """The core itself (not only the fallback) produced the rows: it reads a clean block."""
    from replaykit.io.pleach._nativepath import native_block

    data = generated["iso_20k"].read_bytes()[: 1 << 20]
    data = data[: data.rindex(b"\n") + 1]
    with _Path(True):
        got = native_block(bytearray(data))
    assert got is not None
    n_lines, line, part = got
    assert n_lines == data.count(b"\n") == len(line)
    assert part.env.num_rows == n_lines
    # payload is the source text, byte for byte
    first = json.loads(data.split(b"\n", 1)[0])
    assert loads(part.payload[0].as_py()) == first["payload"]


def test_several_blocks_and_tenant_filter(generated: dict[str, Path],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import replaykit.io.pleach as pleach

    monkeypatch.setattr(pleach, "_BLOCK", 256 << 10)  # many blocks, read two at a time
    both(rk.read_pleach, generated["iso_20k"], errors="quarantine")
    both(rk.read_pleach, generated["iso_20k"], tenant_id="acme", errors="quarantine")
    both(rk.read_pleach, [generated["iso_20k"], generated["epoch_20k"]], errors="quarantine")


def test_shuffled_rows_duplicates_and_many_blocks(
        generated: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The native gather into run order (``_finish``, ``_native.take``): rows in random order,
    repeated keys (quarantined, the first kept), over many blocks; and the order already
    sorted (no gather)."""
    import replaykit.io.pleach as pleach

    lines = generated["iso_20k"].read_bytes().splitlines(keepends=True)
    rng = random.Random(11)
    shuffled = lines[:]
    rng.shuffle(shuffled)
    dups = [lines[i] for i in rng.sample(range(len(lines)), 50)]
    f = tmp_path / "shuffled.jsonl"
    f.write_bytes(b"".join(shuffled[:9000] + dups + shuffled[9000:]))
    s = tmp_path / "sorted.jsonl"
    s.write_bytes(b"".join(sorted(lines, key=lambda b: (json.loads(b)["tenant_id"],
                                                        json.loads(b)["chat_id"],
                                                        json.loads(b)["sequence_number"]))))
    monkeypatch.setattr(pleach, "_BLOCK", 200 << 10)
    kind, log, _ = both(rk.read_pleach, f, errors="quarantine")
    assert kind == "ok" and len(log.quarantine) == 50
    both(rk.read_pleach, [f, s], errors="quarantine")
    both(rk.read_pleach, s, errors="quarantine")


@pytest.mark.parametrize("large", [False, True])
def test_native_take_freeing_matches_arrow_take(large: bool) -> None:
    """``_native.take_freeing`` (the large columns' copy, chunk by chunk) gives Arrow's take
    on chunked, sliced string columns with nulls, for a whole permutation and for a part of
    one (duplicates dropped), and empties the list of chunks it was given."""
    rng = np.random.default_rng(5)
    typ = pa.large_string() if large else pa.string()

    def chunk(k: int) -> pa.Array:
        vals = [None if rng.random() < 0.1 else "y" * int(rng.integers(0, 30)) + str(i)
                for i in range(k + 3)]
        return pa.array(vals, type=typ).slice(3)

    chunks = [chunk(k) for k in (40_000, 0, 35_000, 1)]
    col = pa.chunked_array(chunks, type=typ)
    n = len(col)
    for order in (rng.permutation(n), np.sort(rng.choice(n, n // 2, replace=False))[::-1]):
        given = list(chunks)
        with _Path(True):
            got = _native.take_freeing(given, typ, order)
        got.validate(full=True)
        assert given == [None] * len(chunks)
        want = col.take(pa.array(order)).combine_chunks()
        assert got.type == want.type and got.equals(want)
    with pytest.raises(ValueError):
        _native.take_freeing(list(chunks), typ, np.array([n]))


def test_row_checks_of_native_blocks(generated: dict[str, Path], tmp_path: Path) -> None:
    """Rows the core reads but the row checks refuse (the core then leaves the checks to
    ``_check_rows``; a block of good rows skips them): both paths quarantine the same rows."""
    lines = generated["iso_20k"].read_bytes().splitlines(keepends=True)[:400]
    edits = {
        "tenant_id": ["", "a\u0085b", "t" * 257, "\u00e9" * 256, None],
        "chat_id": ["", None],
        "sequence_number": [-1, None],
        "event_type": ["", None],
    }
    rows = [json.loads(x) for x in lines]
    k = 3
    for fld, values in edits.items():
        for v in values:
            rows[k][fld] = v
            k += 7
    f = tmp_path / "checks.jsonl"
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                 encoding="utf-8")
    kind, log, _ = both(rk.read_pleach, f, errors="quarantine")
    reasons = sorted(log.quarantine.column("reason").to_pylist())
    assert kind == "ok" and len(reasons) == 10, reasons
    both(rk.read_pleach, f, errors="quarantine", tenant_id="acme")
    both(rk.read_pleach, f)


def test_pooled_block_buffers(generated: dict[str, Path], tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The native path's reused block buffers (``_iter_native_blocks``): a BOM, CRLF line
    ends, a last line without its line end, lines longer than the buffers' slack, and a bad
    row (that block is read by the reference, from a copy) give the reference's results."""
    import replaykit.io.pleach as pleach

    lines = generated["iso_20k"].read_bytes().splitlines(keepends=True)[:3000]
    long_row = json.loads(lines[5])
    long_row["payload"]["text"] = "x" * 9000
    long_row["sequence_number"] = 10**6
    body = b"".join(lines[:1000]) + json.dumps(long_row).encode() + b"\n"
    body += b"".join(ln.replace(b"\n", b"\r\n") for ln in lines[1000:2000])
    body += b"{not json\n" + b"".join(lines[2000:]).rstrip(b"\n")
    f = tmp_path / "pooled.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + body)
    monkeypatch.setattr(pleach, "_BLOCK", 64 << 10)
    monkeypatch.setattr(pleach, "_SLACK", 4 << 10)
    kind, log, _ = both(rk.read_pleach, f, errors="quarantine")
    assert kind == "ok" and len(log.quarantine) == 1 and len(log) == 3001


def test_buffers_sized_to_the_file(generated: dict[str, Path], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A file shorter than a block is read into a buffer of its own size (no 17 MB buffer
    zero-filled per small file), on both paths; files of one byte either side of the block
    size, empty files and a last line without its line end read as the reference does; and
    a file larger than its size said when it was opened (it grew) reads whole."""
    import tracemalloc

    import replaykit.io.pleach as pleach

    lines = generated["iso_20k"].read_bytes().splitlines(keepends=True)[:400]
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"".join(lines[:3]))
    for native in (True, False):
        with _Path(native):
            rk.read_pleach(small)  # imports and caches outside the measurement
            tracemalloc.start()
            log = rk.read_pleach(small)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert len(log) == 3 and peak < 4 << 20, (native, peak)

    block = 32 << 10
    monkeypatch.setattr(pleach, "_BLOCK", block)
    body = b"".join(lines)
    cut = body[:block + 4096]
    cut = cut[:cut.rindex(b"\n") + 1]
    cases = {"empty": b"", "one": lines[0], "no_end": lines[0].rstrip(b"\n")}
    for delta in (-1, 0, 1):  # the file's size about the block size, on a line end
        lo = cut[:block + delta]
        cases[f"block{delta:+d}"] = lo[:lo.rindex(b"\n") + 1] + b" " * (
            block + delta - (lo.rindex(b"\n") + 1) - 1) + b"\n"
    for name, data in cases.items():
        f = tmp_path / f"{name}.jsonl"
        f.write_bytes(data)
        both(rk.read_pleach, f, errors="quarantine")
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(body)
    _, want, _ = both(rk.read_pleach, whole, errors="quarantine")
    assert len(want) == 400
    monkeypatch.setattr(pleach, "_file_size", lambda fh: 100)  # "grew" since opened
    _, got, _ = both(rk.read_pleach, whole, errors="quarantine")
    assert got.table.equals(want.table)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_native_take_matches_arrow_take(seed: int) -> None:
    """``_native.take`` gives Arrow's ``take`` (values, type, dictionary) on every layout:
    chunked and sliced columns, nulls, dictionaries, all-null and empty columns."""
    rng = np.random.default_rng(seed)
    n = 70_000  # beyond the core's threshold for several threads

    def strings(k: int, large: bool) -> pa.Array:
        vals = [None if rng.random() < 0.1 else "x" * int(rng.integers(0, 9)) + str(i)
                for i in range(k)]
        return pa.array(vals, type=pa.large_string() if large else pa.string())

    cols = [
        pa.chunked_array([strings(n // 2, False), strings(n - n // 2, False)]),
        pa.chunked_array([strings(n // 2 + 5, True).slice(5), strings(n - n // 2, True)]),
        pa.array(np.where(rng.random(n) < 0.2, None, rng.integers(-9, 9, n)).tolist(),
                 type=pa.int64()),
        pa.array(rng.integers(0, 9, n), type=pa.int32()),
        pa.array((rng.random(n) < 0.5).tolist()).slice(0),
        pa.array([None if i % 7 == 0 else i % 3 == 0 for i in range(n)]),
        pa.array([f"k{i % 13}" for i in range(n)]).dictionary_encode(),
        pa.chunked_array([pa.array([f"a{i % 5}" for i in range(n // 2)]).dictionary_encode(),
                          pa.array([f"b{i % 4}" for i in range(n - n // 2)]).dictionary_encode()]),
        pa.nulls(n, pa.string()),
        pa.array(rng.random(n)),
        pa.array(rng.integers(0, 10**12, n), type=pa.timestamp("us", tz="UTC")),
        pa.array([[i] for i in range(n)]),  # not a layout of the core: Arrow takes it
    ]
    order = rng.integers(0, n, n)
    order[: n // 2] = np.arange(n // 2)  # long runs, as a sort of a log file gives
    with _Path(True):
        got = _native.take(cols, order)
    for col, arr in zip(cols, got, strict=True):
        want = col.take(pa.array(order))
        want = want.combine_chunks() if isinstance(want, pa.ChunkedArray) else want
        arr.validate(full=True)
        assert arr.type == want.type and arr.equals(want), col.type
    with _Path(True):
        empty = _native.take([pa.array([], pa.string()), pa.array([], pa.int64())],
                             np.zeros(0, np.int64))
    assert [len(a) for a in empty] == [0, 0]
    with pytest.raises(ValueError):
        _native.take([pa.array([1, 2])], np.array([2]))


# ----------------------------------------------------------------------------- mutations
def _mutations() -> Iterator[tuple[int, bytes]]:
    from test_fuzz_loaders import mutate_jsonl

    base = DATA.joinpath("pleach", "harness_event_log.jsonl").read_bytes()
    head = b"\n".join(base.split(b"\n")[:40]) + b"\n"
    rng = random.Random(27)
    for seed in range(160):
        data, _ = mutate_jsonl(head, random.Random(rng.random()))
        yield seed, data


@pytest.mark.parametrize("errors", ["raise", "quarantine"])
def test_seeded_fuzz_inputs(tmp_path: Path, errors: str) -> None:
    """The fuzz test's mutations of a pleach log: both paths give the same table, quarantine
    and errors (most mutations make a block the core refuses; the reference then reads it)."""
    for seed, data in _mutations():
        f = tmp_path / f"m{seed}.jsonl"
        f.write_bytes(data)
        both(rk.read_pleach, f, errors=errors)
    assert _native.panics() == 0


# ----------------------------------------------------------------------------- hypothesis
_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
_json_values = st.recursive(
    _json_scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids,
                                                              max_size=4),
    max_leaves=12,
)
_TYPES = ["turn.started", "turn.completed", "message.user", "model.requested",
          "model.completed", "tool.called", "tool.completed", "interrupt.raised",
          "subagent.spawned", "checkpoint.created", "error.raised", "export.created", "x.y"]
_FIELDS = ["turn", "message_id", "call_id", "tool", "finish", "text", "result", "is_error",
           "usage", "cacheKey", "interrupt_id", "reason", "subagent_id", "child_chat_id",
           "checkpoint_id", "export_id", "card_id", "message", "args", "model"]


@st.composite
def _rows(draw: Any) -> bytes:
    """A pleach JSONL text of a few rows: mostly valid, with random payload members of any
    JSON type (so typed fields of the wrong type too) and random raw-line damage."""
    lines = []
    for seq in range(draw(st.integers(1, 6))):
        payload = {f: draw(_json_values) for f in draw(st.lists(st.sampled_from(_FIELDS),
                                                                 max_size=5))}
        if draw(st.booleans()):
            payload["usage"] = {"input_tokens": draw(st.integers(-5, 2**40)),
                                "output_tokens": draw(st.one_of(st.none(), st.integers(0, 9)))}
        if draw(st.booleans()):
            payload["turn"] = draw(st.integers(-(2**33), 2**33))
        row = {"tenant_id": draw(st.sampled_from(["acme", "beta", "", "a\u0001"])),
               "chat_id": draw(st.sampled_from(["c1", "c2", "c\u00e9"])),
               "sequence_number": draw(st.sampled_from([seq, seq, seq, -1, 0])),
               "event_type": draw(st.sampled_from(_TYPES)),
               "payload": payload,
               "created_at": draw(st.sampled_from(
                   ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.5+02:00", None,
                    "not a time", "0000-01-01T00:00:00Z"])),
               "prev_hash": None, "row_hash": None}
        text = json.dumps(row, ensure_ascii=draw(st.booleans()),
                          separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
        damage = draw(st.sampled_from(["none"] * 6 + ["cut", "nan", "dup_tenant", "crlf",
                                                       "blank", "space"]))
        if damage == "cut":
            text = text[: draw(st.integers(1, max(1, len(text) - 1)))]
        elif damage == "nan" and ": 0" in text:
            text = text.replace(": 0", ": NaN", 1)
        elif damage == "dup_tenant":
            text = text[:-1] + ', "tenant_id": "other"}'
        elif damage == "crlf":
            text += "\r"
        elif damage == "blank":
            text += "\n"
        elif damage == "space":
            text = " " + text
        lines.append(text)
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=_rows())
def test_random_rows_both_paths(tmp_path: Path, text: bytes) -> None:
    f = tmp_path / "rows.jsonl"
    f.write_bytes(text)
    both(rk.read_pleach, f, errors="quarantine")
    both(rk.read_pleach, f, errors="raise")


@settings(max_examples=300, deadline=None)
@given(value=_json_values, spaced=st.booleans())
def test_tool_arguments_canonical_and_hash(value: Any, spaced: bool) -> None:
    """The core's canonical JSON of tool arguments and their hash equal the reference's."""
    from replaykit.io.pleach._derive import _tool_args
    from replaykit.io.pleach._shapes import _Part

    sep = (", ", ": ") if spaced else (",", ":")
    payloads = pa.array([json.dumps({"args": value, "tool": "t"}, separators=sep)],
                        pa.large_string())

    def run(native: bool) -> tuple[Any, Any]:
        part = _Part(env=pa.table({"event_type": pa.array(["tool.called"])}),
                     created_at=pa.nulls(1, pa.string()), payload=payloads,
                     typed=pa.table({}), line=np.zeros(1, np.int64))
        with _Path(native):
            a, h = _tool_args(part, {})
        return a.to_pylist(), h.to_pylist()

    got, want = run(True), run(False)
    assert got == want
    if value is not None:
        assert got[0][0] == canonical_json(value)


@st.composite
def _payload_texts(draw: Any) -> str:
    """One payload text: an object of typed fields of any JSON type (so of the wrong type
    too), sometimes a duplicate key, an escaped key, spacing, or not an object at all."""
    obj = {f: draw(_json_values) for f in draw(st.lists(st.sampled_from(_FIELDS), max_size=6))}
    if draw(st.booleans()):
        obj["usage"] = draw(st.one_of(st.none(), st.fixed_dictionaries(
            {}, optional={"input_tokens": st.one_of(st.none(), st.integers(-5, 2**40)),
                          "output_tokens": st.one_of(st.none(), st.integers(0, 9),
                                                     st.text(max_size=2))})))
    for f in draw(st.lists(st.sampled_from(_FIELDS[1:7]), max_size=3)):
        obj[f] = draw(st.one_of(st.none(), st.text(max_size=8)))  # mostly the right type
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()),
                      separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
    damage = draw(st.sampled_from(["none"] * 8 + ["dup", "escaped_key", "space", "array"]))
    if damage == "dup" and len(text) > 2:
        text = text[:-1] + (', ' if obj else '') + '"tool": "again"}'
    elif damage == "escaped_key":
        text = text.replace('"tool"', '"t\\u006fol"', 1)
    elif damage == "space":
        text = text + " "
    elif damage == "array":
        text = "[" + text + "]"
    return text


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_payload_texts(), min_size=1, max_size=8))
def test_typed_payload_fields_both_paths(texts: list[str]) -> None:
    """The core's typed payload fields (verify_chain's derived-column check and
    derive_columns) are Arrow's typed parse, value for value, or the core leaves the column
    to it (None)."""
    from replaykit.io.pleach._derive import _native_typed, _typed_payloads

    payload = pa.array(texts, pa.large_string())
    got = _native_typed(payload)
    with _Path(False):
        want = _typed_payloads(payload)
    if got is not None:
        assert got.schema == want.schema
        assert got.equals(want), (got.to_pylist(), want.to_pylist())
    with _Path(True):
        assert _typed_payloads(payload).equals(want)
    assert _native.panics() == 0


def test_typed_payload_fields_read_natively(generated: dict[str, Path]) -> None:
    """On a loader's own table the core reads every payload (the reference's Arrow parse is
    not run) and gives the same derived columns."""
    from replaykit.io.pleach._derive import _native_typed, derive_columns

    table = rk.read_pleach(generated["iso_20k"]).table
    payload = table.column("payload").combine_chunks().cast(pa.large_string())
    assert _native_typed(payload) is not None
    with _Path(True):
        a = derive_columns(table)
    with _Path(False):
        b = derive_columns(table)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].equals(b[name]), name


# ----------------------------------------------------------------------------- chains
def test_verify_chain_same_findings(generated: dict[str, Path]) -> None:
    log = rk.read_pleach(generated["iso_20k"])
    table = log.table
    payload = table.column("payload").to_pylist()
    for i in (5, 777, 15_000):
        payload[i] = payload[i][:-1] + ' }'  # same JSON value, other bytes: a hash mismatch
    types = table.column("type").cast(pa.string()).to_pylist()
    called = types.index("tool.called")
    payload[called] = payload[called].replace('"args":{', '"args":{"injected":1,', 1)
    tampered = table.set_column(table.schema.get_field_index("payload"), "payload",
                                pa.array(payload, pa.large_string()))
    seq = pc.if_else(pc.equal(pa.array(np.arange(len(table)) == 12_345), True),
                     pc.add(table.column("seq"), 1000), table.column("seq"))
    tampered = tampered.set_column(tampered.schema.get_field_index("seq"), "seq", seq)
    results = []
    for native in (True, False):
        with _Path(native):
            results.append(rk.verify_chain(tampered))
    a, b = results
    assert a.equals(b)
    assert len(a) >= 5
    with _Path(True):
        assert rk.verify_chain(log).empty


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(0, 300), start=st.integers(0, 50),
       pleach_every=st.integers(0, 4), null_every=st.integers(0, 6),
       odd=st.lists(st.text(max_size=6), min_size=1, max_size=4))
def test_chain_hashes_both_paths(seed: int, n: int, start: int, pleach_every: int,
                                 null_every: int, odd: list[str]) -> None:
    """verify_chain's and stamp_chain's hashes: the core's one-pass content and digests
    equal the reference's column-wise bytes, on sealed, pleach and mixed rows, NULL
    payloads, slices (dictionaries larger than the rows), and strings needing escapes."""
    from _chainlogs import make_log

    from replaykit.eventlog.log import EventLog
    from replaykit.integrity.chain import _verify_hashes

    table = make_log(start + n + 1, n_runs=1 + seed % 7, seed=seed).table
    if pleach_every:
        src = table.column("source").combine_chunks().cast(pa.string()).to_pylist()
        src = [("pleach:x.jsonl" if i % pleach_every == 0 else v) for i, v in enumerate(src)]
        table = table.set_column(table.schema.get_field_index("source"), "source",
                                 pa.array(src).dictionary_encode())
    if null_every:
        pay = table.column("payload").combine_chunks().to_pylist()
        pay = [None if i % null_every == 1 else v for i, v in enumerate(pay)]
        table = table.set_column(table.schema.get_field_index("payload"), "payload",
                                 pa.array(pay, pa.large_string()))
    text = [odd[i % len(odd)] if i % 3 else None for i in range(table.num_rows)]
    table = table.set_column(table.schema.get_field_index("text"), "text",
                             pa.array(text, pa.large_string()))
    table = table.slice(start, n)
    prev = table.column("prev_hash").combine_chunks()
    got = []
    for native in (True, False):
        with _Path(native):
            got.append(_verify_hashes(table, prev).to_pylist())
    assert got[0] == got[1]
    if n and not table.column("payload").null_count:  # an EventLog holds no NULL payload
        stamped = []
        for native in (True, False):
            with _Path(native):
                t = rk.stamp_chain(EventLog(table), overwrite=True).table
            stamped.append((t.column("prev_hash").to_pylist(), t.column("row_hash").to_pylist()))
        assert stamped[0] == stamped[1]
        with _Path(True):
            stamped_log = rk.stamp_chain(EventLog(table), overwrite=True)
            assert rk.verify_chain(stamped_log, derived=False).empty  # (made-up pleach rows)
    assert _native.panics() == 0


def test_chain_spec_leaves_unknown_column_types_to_the_reference() -> None:
    """A derived column of a type the content cannot hold: the core declines, and the
    reference's error names the column (the same error on both paths)."""
    from _chainlogs import make_log

    from replaykit.integrity.chain import _verify_hashes
    from replaykit.integrity.content import _chain_spec

    table = make_log(20, n_runs=2, seed=1).table
    i = table.schema.get_field_index("input_tokens")
    table = table.set_column(i, "input_tokens", pa.array([1.5] * 20, pa.float64()))
    assert _chain_spec(table) is None
    for native in (True, False):
        with _Path(native), pytest.raises(ValueError, match="input_tokens"):
            _verify_hashes(table, table.column("prev_hash").combine_chunks())


def test_sha256_many_matches_hashlib() -> None:
    import hashlib

    rng = random.Random(3)
    values = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
              for _ in range(500)]
    arr = pa.array(values, pa.large_binary())
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int64)[: len(values) + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    got = bytes(_native.core().sha256_many(offs.view(np.uint8), data))
    assert got == b"".join(hashlib.sha256(v).digest() for v in values)
    with pytest.raises(ValueError, match="out of order"):
        _native.core().sha256_many(np.array([0, 10**9], np.int64).view(np.uint8), data[:4])


# ----------------------------------------------------------------------------- set-up
def test_reference_path_is_chosen_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = _native.core().scan_pleach_block
    monkeypatch.setattr(_native, "_core_module", _Spy(real, calls))
    with _Path(False):
        rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl")
    assert calls == []
    with _Path(True):
        rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl")
    assert len(calls) >= 1


class _Spy:
    def __init__(self, real: Any, calls: list[int]) -> None:
        self._real, self._calls = real, calls
        self._module = sys.modules["replaykit._core"]

    def scan_pleach_block(self, block: Any) -> Any:
        self._calls.append(len(block))
        return self._real(block)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


_WITHOUT_CORE = """
import sys, warnings
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "replaykit._core":
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import replaykit as rk
    log = rk.read_pleach(sys.argv[1])
    log2 = rk.read_pleach(sys.argv[1])
print(len(log), len(log2))
for w in caught:
    print(w.category.__name__, str(w.message))
"""


@pytest.mark.parametrize("switched_off", [False, True])
def test_without_the_extension_one_warning(switched_off: bool) -> None:
    env = {**os.environ}
    env.pop("REPLAYKIT_NATIVE", None)
    if switched_off:
        env["REPLAYKIT_NATIVE"] = "0"
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_CORE, str(DATA / "pleach" / "harness_event_log.jsonl")],
        capture_output=True, text=True, env=env, check=True,
    ).stdout.splitlines()
    n = len(rk.read_pleach(DATA / "pleach" / "harness_event_log.jsonl"))
    assert out[0] == f"{n} {n}"
    warned = [line for line in out[1:] if line.startswith("NativeCoreMissingWarning")]
    if switched_off:
        assert warned == []
    else:
        assert len(warned) == 1
        assert "make demo" in warned[0] and "REPLAYKIT_NATIVE=0" in warned[0]


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=30),
       large=st.booleans(), start=st.integers(0, 3))
def test_state_hash_text_hash_matches(texts: list[str | None], large: bool, start: int) -> None:
    """``H`` of the fold's state hash: the core's text hashes equal numpy's, for any strings,
    both offset widths and sliced arrays."""
    from replaykit.fold.hashing import hash_texts

    arr = pa.array(texts, pa.large_string() if large else pa.string()).slice(start)
    with _Path(True):
        got = hash_texts(arr)
    with _Path(False):
        want = hash_texts(arr)
    assert got.dtype == want.dtype == np.uint64
    assert np.array_equal(got, want)


def test_fold_state_hash_same_both_paths(generated: dict[str, Path]) -> None:
    log = rk.read_pleach(generated["iso_20k"])
    frames = []
    for native in (True, False):
        with _Path(native):
            frames.append(rk.fold(log, rk.agent()).state_hash())
    assert np.array_equal(np.asarray(frames[0]), np.asarray(frames[1]))


def test_floats_half_way_between_two_shortest_texts_read_as_repr_writes_them() -> None:
    """A float whose shortest text has two candidates that both read back (the value lies
    half-way between them: 70368744177664.625 is ``.62`` or ``.63``) is written as repr and
    orjson write it, the nearer and then the even one, by the core's canonical JSON too."""
    from replaykit.io.pleach._derive import _tool_args
    from replaykit.io.pleach._shapes import _Part

    rng = np.random.default_rng(7)
    values = [70368744177664.62, 123456789012345.67, 2.0 ** 60 + 2048.0]
    values += [float(2 ** int(b) + int(c) / 100) for b, c in
               zip(rng.integers(40, 53, 400), rng.integers(0, 100, 400), strict=True)]
    payloads = pa.array([json.dumps({"args": {"v": v}, "tool": "t"}) for v in values],
                        pa.large_string())
    n = len(values)
    part = _Part(env=pa.table({"event_type": pa.array(["tool.called"] * n)}),
                 created_at=pa.nulls(n, pa.string()), payload=payloads, typed=pa.table({}),
                 line=np.zeros(n, np.int64))
    with _Path(True):
        got, _ = _tool_args(part, {})
    assert got.to_pylist() == [canonical_json({"v": v}) for v in values]
