"""Sealed evidence (issue 14): chain manifests, NULL payloads, one hashed payload form whatever
path decoded the rows, and derived columns checked against the hashed content."""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _chainlogs import make_log

from replaykit import EventLog
from replaykit.cli.verify import verify_chain_command
from replaykit.errors import ReplayKitError
from replaykit.integrity.chain import chain_heads, stamp_chain
from replaykit.integrity.content import row_content
from replaykit.integrity.manifest import ChainManifest, ManifestError, chain_manifest
from replaykit.integrity.verify import verify_chain
from replaykit.schema import events_table


@functools.cache
def chained() -> EventLog:
    return stamp_chain(make_log(2_000, n_runs=8))


def _plain(t: pa.Table) -> pa.Table:
    return pa.table(
        {
            name: (
                col.combine_chunks().cast(col.type.value_type)
                if pa.types.is_dictionary(col.type)
                else col.combine_chunks()
            )
            for name, col in zip(t.schema.names, t.columns, strict=True)
        }
    )


def _fabricated_run(run_id: str, tenant: str = "acme") -> EventLog:
    """A run with its own valid chain, as an attacker who can write the log would make it."""
    t = _plain(make_log(30, n_runs=1, tenants=(tenant,), seed=7).table)
    t = t.set_column(t.schema.get_field_index("run_id"), "run_id",
                     pa.array([run_id] * t.num_rows, pa.string()))
    return stamp_chain(EventLog(events_table({n: t.column(n) for n in t.schema.names})))


def _concat(*logs: EventLog) -> EventLog:
    return EventLog(pa.concat_tables([lg.table for lg in logs]).unify_dictionaries())


def _kinds(problems) -> dict[str, int]:
    return {k: int(v) for k, v in problems["kind"].value_counts().items()}


# --------------------------------------------------------------------------- manifest


def test_manifest_lists_every_run_and_round_trips_through_json():
    m = chain_manifest(chained())
    heads = chain_heads(chained())
    assert m.n_runs == len(heads) == 8
    assert set(m.tenants) == {"acme", "globex"}
    for r in heads.to_dict("records"):
        h = m.tenants[r["tenant_id"]][r["run_id"]]
        assert (h.seq, h.row_hash) == (r["seq"], r["row_hash"])
    back = ChainManifest.from_json(m.to_json())
    assert back == m and back.digest == m.digest and len(m.digest) == 64
    assert verify_chain(chained(), expected_heads=m).empty
    assert verify_chain(chained(), expected_heads=json.loads(m.to_json())).empty


def test_fabricated_run_with_its_own_valid_chain_is_an_unexpected_run():
    fake = _fabricated_run("run-fabricated")
    forged = _concat(chained(), fake)
    assert verify_chain(forged).empty  # the chain alone cannot tell
    assert verify_chain(forged, expected_heads=chain_heads(chained())).empty  # nor bare heads
    problems = verify_chain(forged, expected_heads=chain_manifest(chained()))
    assert _kinds(problems) == {"unexpected_run": 1}
    row = problems.iloc[0]
    assert (row["tenant_id"], row["run_id"]) == ("acme", "run-fabricated")
    assert row["seq"] == 29 and row["found"] == fake.table.column("row_hash")[29].as_py()
    # a fabricated tenant is no better
    other = verify_chain(_concat(chained(), _fabricated_run("x", tenant="initech")),
                         expected_heads=chain_manifest(chained()))
    assert _kinds(other) == {"unexpected_run": 1} and other.iloc[0]["tenant_id"] == "initech"


def test_deleted_run_is_a_missing_run():
    m = chain_manifest(chained())
    t = chained().table
    victim = pc.cast(t.column("run_id"), pa.string())[0].as_py()
    keep = pc.invert(pc.equal(pc.cast(t.column("run_id"), pa.string()), victim))
    problems = verify_chain(EventLog(t.filter(keep)), expected_heads=m)
    assert _kinds(problems) == {"missing_run": 1}
    row = problems.iloc[0]
    tenant = pc.cast(t.column("tenant_id"), pa.string())[0].as_py()
    assert (row["tenant_id"], row["run_id"]) == (tenant, victim)
    assert row["expected"] == m.tenants[tenant][victim].row_hash and pd.isna(row["found"])
    assert row["seq"] == m.tenants[tenant][victim].seq


def test_rows_added_to_or_cut_from_a_run_end_break_the_manifest():
    m = chain_manifest(chained())
    t = chained().table
    runs = pc.cast(t.column("run_id"), pa.string()).to_numpy(zero_copy_only=False)
    last = int(np.flatnonzero(runs == runs[0])[-1])
    cut = EventLog(t.filter(pa.array(np.arange(t.num_rows) != last)))
    p = verify_chain(cut, expected_heads=m)
    assert _kinds(p) == {"head_mismatch": 1} and p.iloc[0]["run_id"] == runs[0]
    # one more row chained onto the end of an anchored run: a valid chain, but not the head
    plain = _plain(t)
    extra_row = plain.slice(last, 1)
    seq = extra_row.column("seq")[0].as_py() + 1
    extra_row = extra_row.set_column(extra_row.schema.get_field_index("seq"), "seq",
                                     pa.array([seq], pa.int64()))
    content = row_content(extra_row.to_pylist()[0])
    import hashlib

    prev = plain.column("row_hash")[last].as_py()
    h = hashlib.sha256(prev.encode() + content).hexdigest()
    extra_row = extra_row.set_column(extra_row.schema.get_field_index("prev_hash"), "prev_hash",
                                     pa.array([prev], pa.string()))
    extra_row = extra_row.set_column(extra_row.schema.get_field_index("row_hash"), "row_hash",
                                     pa.array([h], pa.string()))
    grown = pa.concat_tables([plain, extra_row])
    assert verify_chain(grown).empty
    p = verify_chain(grown, expected_heads=m)
    assert _kinds(p) == {"head_mismatch": 1}
    assert p.iloc[0]["seq"] == seq and p.iloc[0]["found"] == h


@pytest.mark.parametrize("edit", ["row_hash", "drop_run", "add_run", "seq", "digest"])
def test_manifest_edited_by_hand_is_refused(edit, tmp_path, capsys):
    m = chain_manifest(chained())
    obj = json.loads(m.to_json())
    tenant = sorted(obj["tenants"])[0]
    run = sorted(obj["tenants"][tenant])[0]
    if edit == "row_hash":
        obj["tenants"][tenant][run]["row_hash"] = "f" * 64
    elif edit == "drop_run":
        del obj["tenants"][tenant][run]
    elif edit == "add_run":
        obj["tenants"][tenant]["run-fabricated"] = {"seq": 3, "row_hash": "a" * 64}
    elif edit == "seq":
        obj["tenants"][tenant][run]["seq"] += 1
    else:
        obj["digest"] = "0" * 64
    with pytest.raises(ManifestError, match="does not match its content") as exc:
        ChainManifest.from_dict(obj)
    assert isinstance(exc.value, ReplayKitError)
    with pytest.raises(ManifestError, match="chain_manifest"):
        verify_chain(chained(), expected_heads=obj)
    f = tmp_path / "manifest.json"
    f.write_text(json.dumps(obj))
    good = tmp_path / "good"
    chained().to_parquet(good)
    assert verify_chain_command([str(good), "--heads", str(f)]) == 2
    assert "does not match its content" in capsys.readouterr().err


def test_malformed_manifests_are_refused():
    m = json.loads(chain_manifest(chained()).to_json())
    with pytest.raises(ManifestError, match="not a replaykit chain manifest"):
        ChainManifest.from_dict({"tenants": {}})
    with pytest.raises(ManifestError, match="unsupported"):
        ChainManifest.from_dict({**m, "replaykit_chain_manifest": 2})
    with pytest.raises(ManifestError, match="not valid JSON"):
        ChainManifest.from_json("{")
    bad = json.loads(json.dumps(m))
    t = sorted(bad["tenants"])[0]
    r = sorted(bad["tenants"][t])[0]
    bad["tenants"][t][r]["seq"] = 3.5
    with pytest.raises(ManifestError, match="integer seq"):
        ChainManifest.from_dict(bad)


def test_cli_heads_takes_the_manifest(tmp_path, capsys):
    m = chain_manifest(chained())
    f = tmp_path / "manifest.json"
    f.write_text(m.to_json())
    forged = tmp_path / "forged"
    _concat(chained(), _fabricated_run("run-fabricated")).to_parquet(forged)
    assert verify_chain_command([str(forged)]) == 0  # without the manifest: looks intact
    capsys.readouterr()
    assert verify_chain_command([str(forged), "--heads", str(f), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["problem_counts"] == {"unexpected_run": 1}
    assert report["manifest_digest"] == m.digest
    # --tenant checks that tenant's part of the manifest only
    assert verify_chain_command([str(forged), "--heads", str(f), "--tenant", "globex"]) == 0
    assert "manifest of 4 run(s) matches" in capsys.readouterr().out
    # the old list of heads cannot see added runs: refused with how to make a manifest
    old = tmp_path / "heads.json"
    old.write_text(chain_heads(chained()).to_json(orient="records"))
    assert verify_chain_command([str(forged), "--heads", str(old)]) == 2
    err = capsys.readouterr().err
    assert "old --heads format" in err and "chain_manifest" in err


def test_a_re_digested_forged_manifest_is_refused_against_the_anchored_digest(tmp_path,
                                                                              capsys):
    """Storage that can rewrite the log and its manifest file adds a fabricated run to both
    and recomputes the manifest's digest: the self-check passes (it is not authentication),
    so verify-chain said intact. Against the anchored digest (from_json(expected_digest=),
    --digest) the forged manifest is refused, and the report's manifest_digest is the whole
    manifest's (the anchored value), also with --tenant."""
    m = chain_manifest(chained())
    forged_log = _concat(chained(), _fabricated_run("run-fabricated"))
    forged_m = chain_manifest(forged_log)  # re-digested: consistent with itself
    assert ChainManifest.from_json(forged_m.to_json()) == forged_m
    assert verify_chain(forged_log, expected_heads=forged_m).empty  # what the self-check buys
    with pytest.raises(ManifestError, match="anchored"):
        ChainManifest.from_json(forged_m.to_json(), expected_digest=m.digest)
    assert ChainManifest.from_json(m.to_json(), expected_digest=m.digest.upper()) == m
    data = tmp_path / "forged"
    forged_log.to_parquet(data)
    f = tmp_path / "manifest.json"
    f.write_text(forged_m.to_json())
    assert verify_chain_command([str(data), "--heads", str(f)]) == 0
    capsys.readouterr()
    assert verify_chain_command([str(data), "--heads", str(f), "--digest", m.digest]) == 2
    assert "anchored" in capsys.readouterr().err
    f.write_text(m.to_json())
    assert verify_chain_command([str(data), "--heads", str(f), "--digest", m.digest,
                                 "--tenant", "globex", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["manifest_digest"] == m.digest
    assert verify_chain_command([str(data), "--digest", m.digest]) == 2


def test_manifest_is_local_engine_only():
    with pytest.raises(ValueError, match="engine='local'"):
        verify_chain(chained(), expected_heads=chain_manifest(chained()), engine="dask")


# --------------------------------------------------------------------------- NULL payload


def test_null_payload_does_not_hash_like_the_text_null():
    base = {"run_id": "r", "seq": 0, "tenant_id": "t", "ts": None, "type": "x"}
    assert row_content({**base, "payload": None}) != row_content({**base, "payload": "null"})
    # a raw table row stamped with payload 'null', then the payload set to NULL
    t = _plain(chained().table).slice(0, 3)
    i = t.schema.get_field_index("payload")
    as_text = t.set_column(i, "payload", pa.array(["null", "{}", "{}"], pa.large_string()))
    stamped = stamp_chain(EventLog(events_table({n: as_text.column(n) for n in t.schema.names})),
                          overwrite=True)
    s = _plain(stamped.table)
    assert verify_chain(s, derived=False).empty
    nulled = s.set_column(i, "payload", pa.array([None, "{}", "{}"], pa.large_string()))
    p = verify_chain(nulled, derived=False)
    assert _kinds(p) == {"hash_mismatch": 1} and p.iloc[0]["seq"] == s.column("seq")[0].as_py()
    # column-wise bytes agree with the row reference for a NULL payload too
    from replaykit.integrity.content import _content_column

    col = _content_column(nulled, strict=False).to_pylist()
    assert [c.encode() for c in col] == [row_content(r) for r in nulled.to_pylist()]


# --------------------------------------------------------------------------- item 7: one
# hashed payload form, whatever path read the block

import hashlib  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from replaykit.io import pleach  # noqa: E402

_T0_MS = 1_767_225_600_000  # 2026-01-01


def _spell(payload: dict, style: int) -> str:
    """The payload's JSON text as some producer might spell it (never with a newline)."""
    items = list(payload.items())
    if style & 1:
        items.reverse()
    seps = (", ", ": ") if style & 2 else (",", ":")
    text = json.dumps(dict(items), separators=seps, ensure_ascii=bool(style & 4))
    return "{ " + text[1:-1] + " }" if style & 8 else text


def _export(rows: list[tuple[str, str, dict, int]]) -> tuple[bytes, list[str]]:
    """pleach JSONL of (chat, event_type, payload, spelling) rows, chained by the producer
    over its own payload text; also returns each row's payload text."""
    lines, texts = [], []
    prev: dict[str, str] = {}
    seq: dict[str, int] = {}
    for chat, etype, payload, style in rows:
        s = seq.get(chat, 0)
        seq[chat] = s + 1
        ms = _T0_MS + 1000 * len(lines)
        text = _spell(payload, style)
        p = prev.get(chat, "0" * 64)
        content = row_content({"payload": text, "run_id": chat, "seq": s, "tenant_id": "acme",
                               "ts": ms * 1000, "type": etype})
        h = hashlib.sha256(p.encode() + content).hexdigest()
        prev[chat] = h
        head = json.dumps({"tenant_id": "acme", "chat_id": chat, "sequence_number": s,
                           "event_type": etype})
        lines.append(f'{head[:-1]}, "payload":{text}, "created_at":{ms}, '
                     f'"prev_hash":"{p}","row_hash":"{h}"}}')
        texts.append(text)
    return ("\n".join(lines) + "\n").encode(), texts


def _read(path, *, fallback: bool, block: int = 1 << 20) -> EventLog:
    """read_pleach with a small block size, the fast path or (fallback=True) only the
    row-by-row path."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pleach, "_BLOCK", block)
        if fallback:
            def refuse(*args, **kwargs):
                raise pleach._FastPathFailed("forced by the test")

            mp.setattr(pleach, "_fast_block", refuse)
        return pleach.read_pleach(path, progress=False)


def _verdict(log: EventLog) -> list[tuple]:
    p = verify_chain(log)
    return sorted(zip(p["run_id"], p["seq"].astype(int), p["kind"], p["expected"].astype(str),
                      p["found"].astype(str), strict=True))


_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_payloads = st.fixed_dictionaries(
    {"call_id": _words, "text": _words},
    optional={"turn": st.integers(0, 50), "note": st.lists(st.integers(-5, 5), max_size=3),
              "tool": st.sampled_from(["search", "bash"]), "args": st.dictionaries(
                  st.sampled_from(["q", "n"]), st.integers(0, 9) | _words, max_size=2)},
)
_types = st.sampled_from(["turn.started", "message.user", "tool.called", "tool.completed",
                          "model.completed"])
_rows = st.lists(st.tuples(st.sampled_from(["c1", "c2"]), _types, _payloads,
                           st.integers(0, 15)), min_size=1, max_size=25)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows, mixed_at=st.none() | st.integers(0, 24), edits=st.sets(st.integers(0, 24)))
def test_fast_and_row_by_row_paths_give_the_same_verdict(tmp_path_factory, rows, mixed_at,
                                                         edits):
    if mixed_at is not None:  # one row whose typed field has another JSON type
        i = mixed_at % len(rows)
        rows[i] = (rows[i][0], rows[i][1], {**rows[i][2], "turn": "three"}, rows[i][3])
    data, texts = _export(rows)
    edited = {e % len(rows) for e in edits}
    lines = data.split(b"\n")
    for i in edited:  # a whitespace-only edit of the payload, after it was hashed
        t = texts[i].encode()
        lines[i] = lines[i].replace(b'"payload":' + t, b'"payload":' + t[:1] + b" " + t[1:], 1)
    path = tmp_path_factory.mktemp("p") / "log.jsonl"
    path.write_bytes(b"\n".join(lines))
    fast = _read(path, fallback=False, block=512)
    slow = _read(path, fallback=True, block=512)
    # the same payload bytes (the source text of each payload member) on both paths
    assert fast.table.column("payload").to_pylist() == slow.table.column("payload").to_pylist()
    assert _verdict(fast) == _verdict(slow)
    # ... and that verdict is right: exactly the edited rows, as hash_mismatch
    got = {(r, s) for r, s, k, _, _ in _verdict(fast)}
    assert {k for _, _, k, _, _ in _verdict(fast)} <= {"hash_mismatch"}
    want = {(rows[i][0], sum(1 for r in rows[:i] if r[0] == rows[i][0])) for i in edited}
    assert got == want


def test_producer_spelled_payloads_verify_in_a_block_with_a_mixed_type_row(tmp_path):
    """The issue's case: one row of a block has a payload field of another JSON type."""
    rows = [("c1", "tool.called", {"call_id": f"k{i}", "tool": "search", "args": {"q": i},
                                    "turn": i}, 3) for i in range(320)]
    rows[100] = ("c1", "turn.started", {"turn": "one hundred", "message_id": "m"}, 3)
    data, texts = _export(rows)
    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    log = pleach.read_pleach(path, progress=False)  # the block falls back to the row path
    assert log.table.column("payload").to_pylist() == texts
    assert verify_chain(log).empty
    # a whitespace-only edit of one payload is detected there
    lines = data.split(b"\n")
    lines[7] = lines[7].replace(b'"payload":{', b'"payload":{ ', 1)
    path.write_bytes(b"\n".join(lines))
    p = verify_chain(pleach.read_pleach(path, progress=False))
    assert _kinds(p) == {"hash_mismatch": 1} and p.iloc[0]["seq"] == 7


def test_member_text_cuts_the_payload_as_spelled():
    line = '{"payload" : { "b" : [1, 2.50], "a":"}" } , "x": {"payload": 1}, "payload":{"z":1e3}}'
    assert pleach._member_text(line, "payload") == '{"z":1e3}'  # the last one, as decoded
    assert pleach._member_text('{"a": {"payload": {}}}', "payload") is None
    assert pleach._member_text(' {"payload" :\t{"k": "v" }}', "payload") == '{"k": "v" }'


# --------------------------------------------------------------------------- item 8: derived
# columns are checked against the hashed content

import sqlite3  # noqa: E402
from pathlib import Path  # noqa: E402

import replaykit as rk  # noqa: E402
from replaykit.datasets import generate_pleach  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"


@functools.cache
def pleach_log() -> EventLog:
    import tempfile

    path = generate_pleach(Path(tempfile.mkdtemp()) / "log.jsonl", events=1200, runs=8,
                           tenants=("acme",), seed=3)
    return rk.read_pleach(path, progress=False)


def _row_for(column: str) -> tuple[int, object]:
    """A row of pleach_log() and a forged value for ``column`` there."""
    t = pleach_log().table

    def first(mask) -> int:
        return int(np.flatnonzero(np.asarray(mask))[0])

    kind = pc.cast(t.column("kind"), pa.string())
    if column == "parent_run_id":
        i = first(t.column("parent_run_id").is_null())
        runs = pc.unique(pc.cast(t.column("run_id"), pa.string())).to_pylist()
        own = pc.cast(t.column("run_id"), pa.string())[i].as_py()
        return i, next(r for r in runs if r != own)  # a run of the log that never spawned it
    if column == "kind":
        return first(pc.equal(kind, "tool_call")), "other"
    if column == "turn":
        i = first(t.column("turn").is_valid())
        return i, t.column("turn")[i].as_py() + 1
    if column in ("is_error", "inherited"):
        i = first(pc.equal(kind, "tool_result"))
        return i, not t.column(column)[i].as_py()
    if column in ("step", "input_tokens", "output_tokens"):
        return first(pc.equal(kind, "model_response")), 12345
    return first(pc.equal(kind, "tool_call")), "forged"


def _set_value(t: pa.Table, column: str, i: int, value) -> pa.Table:
    col = t.column(column).combine_chunks()
    typ = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    values = pc.cast(col, typ).to_pylist()
    values[i] = value
    return t.set_column(t.schema.get_field_index(column), t.schema.field(column),
                        pa.array(values, typ).cast(col.type) if pa.types.is_dictionary(col.type)
                        else pa.array(values, typ))


def test_pleach_derived_columns_are_the_loaders():
    from replaykit.io.pleach import DERIVED_COLUMNS, derive_columns

    t = pleach_log().table
    derived = derive_columns(t)
    for c in DERIVED_COLUMNS:
        stored = t.column(c).combine_chunks()
        if pa.types.is_dictionary(stored.type):
            stored, got = stored.cast(pa.string()), derived[c].cast(pa.string())
        else:
            got = derived[c]
        assert got.equals(stored), c
    # the sample has something in every column it derives (else the tamper test is weak)
    for c in ("parent_run_id", "turn", "event_id", "ref_id", "tool_name", "args_hash",
              "cache_key", "finish", "input_tokens", "output_tokens", "text"):
        assert t.column(c).null_count < t.num_rows, c
    assert verify_chain(pleach_log()).empty


DERIVED = ["parent_run_id", "kind", "turn", "step", "event_id", "ref_id", "tool_name",
           "args_hash", "cache_key", "is_error", "finish", "input_tokens", "output_tokens",
           "chunk_type", "text", "inherited"]


@pytest.mark.parametrize("column", DERIVED)
def test_tampered_derived_column_in_parquet_is_reported(column, tmp_path):
    from replaykit.io.pleach import DERIVED_COLUMNS

    assert sorted(DERIVED) == sorted(DERIVED_COLUMNS)
    i, value = _row_for(column)
    t = _set_value(pleach_log().table, column, i, value)
    EventLog(t, runs=pleach_log().runs).to_parquet(tmp_path / "ds")
    back = rk.read_parquet(tmp_path / "ds")
    p = verify_chain(back)
    assert _kinds(p) == {"derived_mismatch": 1}, p
    row = p.iloc[0]
    assert row["seq"] == t.column("seq")[i].as_py()
    assert row["expected"].startswith(column + "=") and row["found"].startswith(column + "=")
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    assert row["found"] == f"{column}={shown}"


_SQL_VALUE = {"is_error": int, "inherited": int}


@pytest.mark.parametrize("column", DERIVED)
def test_tampered_derived_column_in_sqlite_is_reported(column, tmp_path, capsys):
    db = tmp_path / "events.db"
    uri = f"sqlite:///{db}"
    rk.write_sql(pleach_log(), uri)
    i, value = _row_for(column)
    t = pleach_log().table
    key = (pc.cast(t.column("tenant_id"), pa.string())[i].as_py(),
           pc.cast(t.column("run_id"), pa.string())[i].as_py(), t.column("seq")[i].as_py())
    with sqlite3.connect(db) as con:
        n = con.execute(
            f'UPDATE harness_event_log SET "{column}" = ? WHERE tenant_id = ? AND chat_id = ? '
            "AND sequence_number = ?", (_SQL_VALUE.get(column, lambda v: v)(value), *key),
        ).rowcount
    assert n == 1
    assert verify_chain_command([uri, "--tenant", "acme", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["problem_counts"] == {"derived_mismatch": 1}
    assert report["problems"][0]["seq"] == key[2]
    assert report["problems"][0]["expected"].startswith(column + "=")


def test_untampered_samples_have_no_derived_mismatch(tmp_path):
    for path in (DATA / "pleach" / "harness_event_log.jsonl",
                 DATA / "pleach" / "harness_event_log_hashed.parquet"):
        p = verify_chain(rk.read_pleach(path, progress=False))
        assert "derived_mismatch" not in set(p["kind"]), path
    assert verify_chain(rk.read_pleach(DATA / "pleach" / "harness_event_log_hashed.parquet")).empty
    for fmt, ts in (("jsonl", "mixed"), ("parquet", "epoch_ms")):
        path = generate_pleach(tmp_path / f"g.{fmt}", events=700, runs=5, seed=9, format=fmt,
                               timestamps=ts)
        assert verify_chain(rk.read_pleach(path, progress=False)).empty, fmt
    # a database round trip (write_sql layout) and a plain harness_event_log table
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    rk.write_sql(pleach_log(), uri)
    assert verify_chain(rk.read_sql(uri, tenant_id="acme")).empty
    for sub in ("toh", "isplay"):  # other formats: their rows are not pleach-derived
        log = rk.read_events(DATA / sub, owner="demo", progress=False)
        p = verify_chain(stamp_chain(log, overwrite=True))
        assert p.empty, sub


def test_a_child_run_verified_without_its_parent_is_not_a_mismatch():
    t = pleach_log().table
    child = t.filter(t.column("parent_run_id").is_valid())
    run = pc.cast(child.column("run_id"), pa.string())[0].as_py()
    assert verify_chain(pleach_log().run(run, tenant_id="acme")).empty


def _redigested(obj: dict) -> dict:
    """``obj`` with its digest recomputed: what whoever can rewrite the manifest does."""
    import hashlib

    from replaykit.integrity.content import canonical_json

    body = {k: v for k, v in obj.items() if k != "digest"}
    try:
        text = canonical_json(body)
    except ValueError:  # a number canonical JSON cannot write: no digest can be computed
        return {**body, "digest": "0" * 64}
    return {**body, "digest": hashlib.sha256(text.encode()).hexdigest()}


@pytest.mark.parametrize("seq", [2**63, 2**64 + 5, 10**30, -1, -(2**63) - 1])
def test_manifest_numbers_out_of_range_are_a_manifest_error(seq):
    """A seq no event can have (beyond int64, negative), even with a recomputed digest, is a
    ManifestError from from_dict, from_json and verify_chain, never an OverflowError out of
    the comparison with the log's int64 seqs (issue 30 item 11)."""
    obj = json.loads(chain_manifest(chained()).to_json())
    t = sorted(obj["tenants"])[0]
    r = sorted(obj["tenants"][t])[0]
    obj["tenants"][t][r]["seq"] = seq
    obj = _redigested(obj)
    with pytest.raises(ManifestError, match="seq"):
        ChainManifest.from_dict(obj)
    with pytest.raises(ManifestError, match="seq"):
        ChainManifest.from_json(json.dumps(obj))
    with pytest.raises(ManifestError):
        verify_chain(chained(), expected_heads=obj)


def test_manifest_with_hostile_values_is_a_manifest_error():
    """Deeply nested JSON, a number of thousands of digits, a row_hash that is not hex, a
    tenant id that breaks the tenant-id rule: each a ManifestError (a ReplayKitError)."""
    deep = "[" * 200_000 + "]" * 200_000
    for text in (deep, '{"a":' * 100_000 + "1" + "}" * 100_000,
                 '{"replaykit_chain_manifest": 1, "x": ' + "9" * 50_000 + "}"):
        with pytest.raises(ManifestError):
            ChainManifest.from_json(text)
    nested: dict = {}
    cur = nested
    for _ in range(50_000):
        cur["x"] = {}
        cur = cur["x"]
    obj = json.loads(chain_manifest(chained()).to_json())
    with pytest.raises(ManifestError):
        ChainManifest.from_dict({**obj, "tenants": {"acme": nested}})
    t = sorted(obj["tenants"])[0]
    r = sorted(obj["tenants"][t])[0]
    bad = json.loads(json.dumps(obj))
    bad["tenants"][t][r]["row_hash"] = "z" * 64
    with pytest.raises(ManifestError, match="hex"):
        ChainManifest.from_dict(_redigested(bad))
    bad = json.loads(json.dumps(obj))
    bad["tenants"]["acme\x00x"] = bad["tenants"][t]
    with pytest.raises(ManifestError, match="tenant"):
        ChainManifest.from_dict(_redigested(bad))
