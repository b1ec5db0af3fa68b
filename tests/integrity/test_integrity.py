"""Hash chain: canonical bytes, stamping, verification, proofs and the verify-chain command."""

from __future__ import annotations

import functools
import hashlib
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _chainlogs import make_log
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replaykit import EventLog
from replaykit.cli.verify import verify_chain_command
from replaykit.integrity.chain import GENESIS, chain_heads, stamp_chain
from replaykit.integrity.content import CONTENT_COLUMNS, canonical_json, row_content
from replaykit.integrity.manifest import chain_manifest
from replaykit.integrity.proofs import chain_proof, verify_proof
from replaykit.integrity.verify import verify_chain
from replaykit.schema import events_table

N_ROWS = 10_000
STRING_FIELDS = ("payload", "run_id", "tenant_id", "type")


@functools.cache
def chained() -> EventLog:
    return stamp_chain(make_log(N_ROWS, n_runs=12))


@functools.cache
def plain_table() -> pa.Table:
    """The chained log with dictionary columns decoded (easy to mutate)."""
    t = chained().table
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


@functools.cache
def heads():
    return chain_heads(chained())


def _set(table: pa.Table, column: str, i: int, value) -> pa.Table:
    col = table.column(column).combine_chunks()
    values = col.to_pylist()
    values[i] = value
    idx = table.schema.get_field_index(column)
    return table.set_column(idx, column, pa.array(values, col.type))


def _log(table: pa.Table) -> EventLog:
    """An EventLog from a plain (decoded) table."""
    return EventLog(events_table({name: table.column(name) for name in table.schema.names}))


def _row_key(table: pa.Table, i: int) -> tuple[str, str, int]:
    return (
        table.column("tenant_id")[i].as_py(),
        table.column("run_id")[i].as_py(),
        table.column("seq")[i].as_py(),
    )


# --------------------------------------------------------------------------- canonical JSON

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonical_json_matches_rfc8785_reference(value):
    rfc8785 = pytest.importorskip("rfc8785")
    assert canonical_json(value).encode("utf-8") == rfc8785.dumps(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (5e-324, "5e-324"),
        ({"b": 1, "a": [True, None, "é\n\x1f"]}, '{"a":[true,null,"é\\n\\u001f"],"b":1}'),
        ({"\ue000": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\ue000":1}'),  # UTF-16 key order
    ],
)
def test_canonical_json_examples(value, text):
    assert canonical_json(value) == text


@pytest.mark.parametrize("bad", [math.nan, math.inf, 2**53, -(2**60)])
def test_canonical_json_rejects_unrepresentable_numbers(bad):
    with pytest.raises(ValueError):
        canonical_json(bad)


# --------------------------------------------------------------------------- stamping


def test_column_wise_bytes_match_the_row_reference():
    log = chained()
    rows = log.table.to_pylist()
    for r in rows[::97]:  # every 97th row: ids with quotes, backslashes, control chars, é
        want = hashlib.sha256(r["prev_hash"].encode() + row_content(r)).hexdigest()
        assert r["row_hash"] == want
    firsts = [r for r in rows if r["seq"] == 0]
    assert len(firsts) == 12
    assert {r["prev_hash"] for r in firsts} == {GENESIS}


def test_row_content_layout():
    row = {
        "payload": '{"a":1}',
        "run_id": 'r"1',
        "seq": 3,
        "tenant_id": "t",
        "ts": 1_700_000_000_000_001,
        "type": "tool.called",
    }
    assert row_content(row) == (
        b'{"payload":{"a":1},"run_id":"r\\"1","seq":3,"tenant_id":"t",'
        b'"ts":1700000000000001,"type":"tool.called"}'
    )
    assert tuple(sorted(CONTENT_COLUMNS)) == CONTENT_COLUMNS


def test_stamp_refuses_to_restamp_unless_asked():
    with pytest.raises(ValueError, match="overwrite=True"):
        stamp_chain(chained())
    again = stamp_chain(chained(), overwrite=True)
    assert again.table.column("row_hash").equals(chained().table.column("row_hash"))
    with pytest.raises(TypeError):
        stamp_chain(chained().table)  # type: ignore[arg-type]


def test_intact_log_reports_nothing():
    problems = verify_chain(chained(), expected_heads=heads())
    assert problems.empty
    assert list(problems.columns) == ["tenant_id", "run_id", "seq", "kind", "expected", "found"]
    assert verify_chain(plain_table()).empty  # raw tables verify the same way
    assert len(heads()) == 12


def test_seq_gap_and_missing_hashes_are_reported():
    t = chained().table
    keep = np.ones(t.num_rows, dtype=bool)
    keep[5] = False
    gappy = stamp_chain(EventLog(t.filter(pa.array(keep))), overwrite=True)
    p = verify_chain(gappy)
    assert p["kind"].tolist() == ["seq_gap"]
    assert (p["expected"].iloc[0], p["found"].iloc[0]) == ("5", "6")
    unstamped = make_log(50, n_runs=2)
    p = verify_chain(unstamped)
    assert set(p["kind"]) == {"hash_mismatch", "link_mismatch"}
    assert (p["kind"] == "hash_mismatch").sum() == 50


def test_tail_truncation_needs_an_anchored_head():
    t = plain_table()
    last = int(
        np.flatnonzero(
            pc.equal(t.column("run_id"), t.column("run_id")[0]).to_numpy(zero_copy_only=False)
        )[-1]
    )
    cut = t.filter(pa.array(np.arange(t.num_rows) != last))
    assert verify_chain(cut).empty  # nothing after the cut is left to disagree ...
    p = verify_chain(cut, expected_heads=heads())  # ... but the anchored head is gone
    assert p["kind"].tolist() == ["head_mismatch"]
    tenant, run, seq = _row_key(t, last)
    assert (p["tenant_id"][0], p["run_id"][0], p["seq"][0]) == (tenant, run, seq)
    assert p["found"].isna().all()
    # a mapping anchor (run -> hash) is checked against the last row
    anchor = {(tenant, run): t.column("row_hash")[last].as_py()}
    p = verify_chain(cut, expected_heads=anchor)
    assert p["kind"].tolist() == ["head_mismatch"]
    assert p["found"][0] == t.column("row_hash")[last - 1].as_py()


# --------------------------------------------------------------------------- mutations


@st.composite
def mutations(draw):
    t = plain_table()
    n = t.num_rows
    kind = draw(st.sampled_from(["byte", "delete", "duplicate", "swap", "forgery"]))
    i = draw(st.integers(0, n - 1))
    if kind == "byte":
        field = draw(st.sampled_from(CONTENT_COLUMNS))
        pos = draw(st.integers(0, 10_000))
        new = draw(st.integers(0, 255))
        return kind, i, (field, pos, new)
    if kind == "swap":  # two events of one run trade places (a cross-run swap is no change)
        run = t.column("run_id").to_numpy(zero_copy_only=False)
        same = np.flatnonzero(run == run[i])
        j = draw(st.sampled_from([int(k) for k in same if k != i]))
        return kind, i, j
    return kind, i, None


def _flip_byte(data: bytes, pos: int, new: int) -> bytes | None:
    if not data:
        return None
    pos %= len(data)
    if data[pos] == new:
        return None
    return data[:pos] + bytes([new]) + data[pos + 1 :]


def _mutate(kind: str, i: int, arg) -> tuple[pa.Table, str | None]:
    """(mutated table, the kind of problem that must be reported at row i or None)."""
    t = plain_table()
    n = t.num_rows
    if kind == "byte":
        field, pos, new = arg
        value = t.column(field)[i].as_py()
        if field in STRING_FIELDS:
            changed = _flip_byte(value.encode("utf-8"), pos, new)
            assume(changed is not None)
            try:
                text = changed.decode("utf-8")
            except UnicodeDecodeError:
                assume(False)
            return _set(t, field, i, text), None
        if field == "seq":
            raw = _flip_byte(int(value).to_bytes(8, "little", signed=True), pos, new)
            assume(raw is not None)
            return _set(t, field, i, int.from_bytes(raw, "little", signed=True)), None
        # ts: microseconds as int64 bytes; a null ts gains a value
        micros = t.column("ts").cast(pa.int64())[i].as_py()
        if micros is None:
            changed_us = new
        else:
            raw = _flip_byte(int(micros).to_bytes(8, "little", signed=True), pos, new)
            assume(raw is not None)
            changed_us = int.from_bytes(raw, "little", signed=True)
        col = t.column("ts").cast(pa.int64()).to_pylist()
        col[i] = changed_us
        ts = pa.array(col, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        return t.set_column(t.schema.get_field_index("ts"), "ts", ts), None
    if kind == "delete":
        return t.filter(pa.array(np.arange(n) != i)), None
    if kind == "duplicate":
        order = np.insert(np.arange(n), i, i)
        return t.take(pa.array(order)), "duplicate_seq"
    if kind == "swap":
        j = arg
        order = np.arange(n)
        order[i], order[j] = j, i
        swapped = t.take(pa.array(order))
        seq_idx = t.schema.get_field_index("seq")
        return swapped.set_column(seq_idx, "seq", t.column("seq")), "hash_mismatch"
    # forgery: change a payload, then re-hash the whole log consistently
    payload = t.column("payload")[i].as_py()
    forged = _set(t, "payload", i, payload.replace('"amount":', '"amount":1'))
    return stamp_chain(_log(forged), overwrite=True).table, None


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(mutations())
def test_every_single_mutation_is_detected(mutation):
    kind, i, arg = mutation
    mutated, must = _mutate(kind, i, arg)
    problems = verify_chain(mutated, expected_heads=heads())
    assert not problems.empty, f"{kind} at row {i} went unnoticed"
    t = plain_table()
    tenant, run, seq = _row_key(t, i)
    at_row = problems[
        (problems["tenant_id"] == tenant) & (problems["run_id"] == run) & (problems["seq"] == seq)
    ]
    if must is not None:
        assert must in set(at_row["kind"]), problems.head()
    if kind == "byte":
        # the changed row (found under its possibly changed tenant/run/seq) no longer hashes
        # to its stored row_hash
        stored = t.column("row_hash")[i].as_py()
        hit = problems[(problems["kind"] == "hash_mismatch") & (problems["found"] == stored)]
        assert len(hit) == 1, problems.head()
    if kind == "byte" and arg[0] in ("payload", "type", "ts"):
        # changing content in place breaks exactly that row's hash and nothing else
        assert problems["kind"].tolist() == ["hash_mismatch"]
        assert at_row["found"].tolist() == [t.column("row_hash")[i].as_py()]
    if kind == "forgery":
        # the forged chain is internally consistent: only the anchored head gives it away
        assert set(problems["kind"]) == {"head_mismatch"}
        assert set(problems["run_id"]) == {run}
        assert verify_chain(mutated).empty
    if kind == "delete":
        is_last = i == t.num_rows - 1 or _row_key(t, i + 1)[:2] != (tenant, run)
        is_first = seq == 0
        if is_last:
            assert problems["kind"].tolist() == ["head_mismatch"]
        elif is_first:
            assert problems["kind"].tolist() == ["link_mismatch"]  # chain no longer at genesis
        else:
            assert set(problems["kind"]) == {"link_mismatch", "seq_gap"}


# --------------------------------------------------------------------------- proofs


def test_proof_round_trips_through_json_and_detects_tampering():
    log = chained()
    run = heads()["run_id"][3]
    tenant = heads()["tenant_id"][3]
    proof = chain_proof(log, run, 5, tenant_id=tenant)
    head = heads().iloc[3]
    assert proof["head"] == {"seq": int(head["seq"]), "row_hash": head["row_hash"]}
    portable = json.loads(json.dumps(proof))
    assert verify_proof(portable, expected_head=head["row_hash"]) is True
    assert verify_proof(portable, expected_head={"row_hash": head["row_hash"], "seq": head["seq"]})
    assert verify_proof(portable, expected_head="0" * 64) is False

    bad = json.loads(json.dumps(proof))
    bad["event"]["payload"] = bad["event"]["payload"].replace('"turn":', '"turn":9')
    assert verify_proof(bad) is False
    bad = json.loads(json.dumps(proof))
    bad["path"][2]["type"] = "tool.completed!"
    assert verify_proof(bad) is False
    bad = json.loads(json.dumps(proof))
    del bad["path"][4]
    assert verify_proof(bad) is False

    short = chain_proof(log, run, 5, tenant_id=tenant, head_seq=9)
    assert short["head"]["seq"] == 9 and len(short["path"]) == 4
    assert verify_proof(short)

    with pytest.raises(ValueError, match="chain proof"):
        verify_proof({"replaykit_chain_proof": 1, "algorithm": "sha256"})
    with pytest.raises(ValueError):
        verify_proof({"algorithm": "md5"})
    with pytest.raises(KeyError):
        chain_proof(log, run, 10**6, tenant_id=tenant)
    with pytest.raises(TypeError):
        chain_proof(log, run, 5, tenant_id="")


def test_proof_refuses_a_broken_chain():
    t = plain_table()
    broken = _log(_set(t, "payload", 3, '{"x":1}'))
    run = t.column("run_id")[3].as_py()
    with pytest.raises(ValueError, match="does not verify"):
        chain_proof(broken, run, 0, tenant_id=t.column("tenant_id")[3].as_py())


# --------------------------------------------------------------------------- command


def test_verify_chain_command_exit_codes(tmp_path, capsys):
    good = tmp_path / "good"
    chained().to_parquet(good)
    assert verify_chain_command([str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"intact: {N_ROWS} events in 12 run(s)") and out.count("\n") == 1

    heads_file = tmp_path / "manifest.json"
    heads_file.write_text(chain_manifest(chained()).to_json())
    assert verify_chain_command([str(good), "--heads", str(heads_file), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["intact"] is True and report["anchored_heads"] == 12
    assert report["manifest_digest"] == chain_manifest(chained()).digest

    bad = tmp_path / "bad"
    _log(_set(plain_table(), "type", 7, "forged")).to_parquet(bad)
    assert verify_chain_command([str(bad), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["intact"] is False
    assert report["problem_counts"] == {"hash_mismatch": 1}
    assert report["problems"][0]["seq"] == plain_table().column("seq")[7].as_py()
    assert captured.err.startswith("BROKEN: 1 problem(s) in 1 of 12 run(s)")

    assert verify_chain_command([str(good), "--tenant", "acme"]) == 0
    assert "of 1 tenant(s)" in capsys.readouterr().out

    bare = tmp_path / "bare"
    make_log(40, n_runs=2).to_parquet(bare)
    assert verify_chain_command([str(bare)]) == 4  # never chained: nothing to verify
    assert capsys.readouterr().out.startswith("nothing to verify: none of the 40 events")

    assert verify_chain_command([]) == 2
    assert verify_chain_command([str(good), "--bogus"]) == 2
    assert verify_chain_command([str(tmp_path / "missing")]) == 2
    assert verify_chain_command(["sqlite:///x.db"]) == 2  # a database needs --tenant
    assert "needs --tenant" in capsys.readouterr().err


def test_integrity_reads_no_inputs_itself():
    # reading the logs to check (files, Parquet datasets, databases) and the chain manifest is
    # the command line's part (replaykit.cli.verify), through the same loaders as everything
    # else; integrity itself only re-derives pleach columns with the loader's own code and
    # turns a log's quarantined SQL rows into problems
    from _imports import ROOT, imports_of, replaykit_files

    got = {(m, n) for f in replaykit_files("integrity") for m, n in imports_of(f)
           if m.startswith(("replaykit.io", "replaykit.sql", "replaykit.cli", "replaykit._cli"))
           or n.startswith("read_") or n == "cli"}
    assert all(m.startswith(("replaykit.sql", "replaykit.io.pleach")) for m, _ in got), got
    assert not [n for _, n in got if n.startswith("read_")], got
    assert {n for m, n in got if m.startswith("replaykit.sql")} == {"malformed_problems"}
    cli_side = {m for m, _ in imports_of(ROOT / "replaykit" / "cli" / "verify.py")}
    top = {".".join(m.split(".")[:2]) for m in cli_side}
    assert {"replaykit.io", "replaykit.eventlog", "replaykit.integrity"} <= top
    # the entry point dispatches to it, not back
    assert not cli_side & {"replaykit.cli", "replaykit.cli.app"}


def test_verify_chain_command_moved_to_the_command_line_layer():
    import replaykit.integrity as integrity
    from replaykit import cli

    with pytest.raises(AttributeError, match="has no attribute 'verify_chain_command'"):
        integrity.verify_chain_command  # noqa: B018
    assert cli.main(["verify-chain", "--bogus"]) == 2


# --------------------------------------------------------------------------- nothing to verify


def _unchained_inputs(tmp_path):
    """Logs that never had a chain, of every kind the command reads: the bundled samples of
    the formats that record no hashes, and a Parquet dataset of a log never stamped."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "data"
    bare = tmp_path / "bare"
    make_log(30, n_runs=3).to_parquet(bare)
    return [
        ([str(data / "isplay"), "--owner", "me"], 37),
        ([str(data / "toh"), "--owner", "me"], None),
        ([str(data / "claude_code"), "--owner", "me"], None),
        ([str(bare)], 30),
    ]


def test_logs_that_never_had_a_chain_are_nothing_to_verify(tmp_path, capsys):
    for argv, n_events in _unchained_inputs(tmp_path):
        assert verify_chain_command([*argv, "--json"]) == 4, argv
        captured = capsys.readouterr()
        report = json.loads(captured.out)
        assert report["status"] == "nothing_to_verify" and report["intact"] is False
        assert report["problems"] == [] and report["problem_counts"] == {}
        assert report["events"] > 0
        if n_events is not None:
            assert report["events"] == n_events
        assert captured.err.startswith("nothing to verify: none of the ")
        assert "BROKEN" not in captured.err and "stamp_chain" in captured.err
        assert verify_chain_command(argv) == 4
        assert capsys.readouterr().out.startswith("nothing to verify")


def test_a_partly_chained_log_or_one_a_manifest_anchors_is_still_broken(tmp_path, capsys):
    """"Nothing to verify" is only for a log with no hash at all and nothing anchoring it: one
    run's hashes stripped from a chained log, or a manifest of heads, keeps it BROKEN."""
    t = plain_table()
    first_run = pc.equal(t.column("run_id"), t.column("run_id")[0])
    stripped = t.set_column(
        t.schema.get_field_index("row_hash"), "row_hash",
        pc.if_else(first_run, pa.scalar(None, t.column("row_hash").type), t.column("row_hash")),
    )
    part = tmp_path / "part"
    _log(stripped).to_parquet(part)
    assert verify_chain_command([str(part), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "broken" and report["problem_counts"]["hash_mismatch"] > 0

    bare = tmp_path / "bare"
    unstamped = make_log(N_ROWS, n_runs=12)
    unstamped.to_parquet(bare)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(chain_manifest(chained()).to_json())
    assert verify_chain_command([str(bare), "--heads", str(manifest)]) == 1
    assert capsys.readouterr().out.startswith("BROKEN:")

    good = tmp_path / "good"
    chained().to_parquet(good)
    assert verify_chain_command([str(good), "--tenant", "nobody", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "nothing_verified" and report["intact"] is False
