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
from replaykit.errors import ReplayKitError
from replaykit.integrity import (
    ChainManifest,
    ManifestError,
    chain_heads,
    chain_manifest,
    row_content,
    stamp_chain,
    verify_chain,
    verify_chain_command,
)
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
    from replaykit.integrity import _content_column

    col = _content_column(nulled, strict=False).to_pylist()
    assert [c.encode() for c in col] == [row_content(r) for r in nulled.to_pylist()]
