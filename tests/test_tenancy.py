"""Tenant isolation (issue 14, items 1-3): scoped views, the one tenant-id rule in every loader
and writer, reversible partition folders, rows checked against their partition folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.engine import partitions, write_partitioned
from replaykit.engine._parts import file_index
from replaykit.errors import LoadError
from replaykit.eventlog.log import RUNS_SCHEMA
from replaykit.schema import QUARANTINE_SCHEMA, events_table
from replaykit.tenancy import (
    TENANT_ID_MAX_LEN,
    decode_partition_value,
    partition_dir_name,
    partition_dir_tenant,
    scope_side_table,
    tenant_id_problem,
)

DATA = Path(__file__).resolve().parent.parent / "data"
ISPLAY = DATA / "isplay" / "claims-triage-C-104.json"


# ----------------------------------------------------------------------------- helpers
def _events(rows: list[tuple[str, str, int]], payload: str = "{}") -> pa.Table:
    """An events table from (tenant, run, seq) triples."""
    return events_table({
        "tenant_id": [r[0] for r in rows],
        "run_id": [r[1] for r in rows],
        "seq": [r[2] for r in rows],
        "type": ["message.user"] * len(rows),
        "kind": ["user_message"] * len(rows),
        "payload": [payload] * len(rows),
        "source": ["demo:mem"] * len(rows),
    })


def _qrow(tenant: str | None, run: str | None, i: int) -> dict[str, Any]:
    return {"source": f"f{i}", "line": i, "field": None, "reason": "bad_json",
            "message": f"m{i}", "raw": f"raw of {tenant}/{run}/{i}", "tenant_id": tenant,
            "run_id": run}


def _pleach_row(tenant: Any, chat: str, seq: int, **kw: Any) -> dict[str, Any]:
    r = {"tenant_id": tenant, "chat_id": chat, "sequence_number": seq,
         "event_type": "message.user", "payload": {"message_id": f"m{seq}", "text": "hi"},
         "created_at": "2026-01-01T00:00:00Z"}
    r.update(kw)
    return r


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


# a tenant alphabet with the characters that broke folder names before
TENANTS = ["acme", "globex", "a/b=c", "100%", ".hidden", "ünï côdé", "acme "]


@st.composite
def _logs(draw: Any) -> tuple[rk.EventLog, list[dict[str, Any]]]:
    tenants = draw(st.lists(st.sampled_from(TENANTS), min_size=2, max_size=4, unique=True))
    runs = ["r1", "r2", "r3"]
    keys = draw(st.lists(st.tuples(st.sampled_from(tenants), st.sampled_from(runs)),
                         min_size=1, max_size=8, unique=True))
    rows = [(t, r, s) for t, r in keys for s in range(draw(st.integers(1, 3)))]
    qrows = [_qrow(draw(st.sampled_from([*tenants, None])),
                   draw(st.sampled_from([*runs, None])), i)
             for i in range(draw(st.integers(0, 10)))]
    per_run = pa.table({"tenant_id": [t for t, _ in keys], "run_id": [r for _, r in keys],
                        "n": list(range(len(keys)))})
    per_tenant = pa.table({"tenant_id": tenants, "note": [f"of {t}" for t in tenants]})
    everyone = pa.table({"source": ["all files"], "rows": [len(rows)]})
    log = rk.EventLog(_events(rows),
                      quarantine=pa.Table.from_pylist(qrows, schema=QUARANTINE_SCHEMA),
                      extras={"per_run": per_run, "per_tenant": per_tenant,
                              "everyone": everyone})
    return log, qrows


def _pairs(t: pa.Table) -> list[tuple[Any, Any]]:
    return sorted(zip(t.column("tenant_id").to_pylist(), t.column("run_id").to_pylist(),
                      strict=True), key=repr)


# ----------------------------------------------------------------------------- item 1: views
@settings(max_examples=60, deadline=None)
@given(data=_logs(), pick=st.data())
def test_views_scope_quarantine_and_every_side_table(data, pick) -> None:
    log, qrows = data
    tenants = log.tenants
    chosen = pick.draw(st.lists(st.sampled_from(tenants), min_size=1, unique=True))
    view = log.filter(tenant_id=chosen)
    # exactly the chosen tenants' quarantined rows: none of another tenant, none of no tenant
    want = [r for r in qrows if r["tenant_id"] in chosen]
    assert sorted(view.quarantine.column("message").to_pylist()) == \
        sorted(r["message"] for r in want)
    assert set(view.extras["per_run"].column("tenant_id").to_pylist()) <= set(chosen)
    assert view.extras["per_run"].num_rows == sum(
        t in chosen for t in log.extras["per_run"].column("tenant_id").to_pylist())
    assert view.extras["per_tenant"].column("tenant_id").to_pylist() == \
        [t for t in log.extras["per_tenant"].column("tenant_id").to_pylist() if t in chosen]
    assert "everyone" not in view.extras  # a table that cannot say whose rows it holds
    # a run view: only that run of that tenant
    t, r = pick.draw(st.sampled_from(_pairs(log.table.select(["tenant_id", "run_id"]))))
    one = log.run(r, tenant_id=t)
    assert _pairs(one.quarantine) == sorted(
        [(q["tenant_id"], q["run_id"]) for q in qrows
         if q["tenant_id"] == t and q["run_id"] == r], key=repr)
    assert _pairs(one.extras["per_run"]) == [(t, r)]
    assert "per_tenant" not in one.extras and "everyone" not in one.extras
    # a run view across tenants: that run's rows of known tenants only
    runs_view = log.filter(run_ids=[r])
    assert _pairs(runs_view.quarantine) == sorted(
        [(q["tenant_id"], q["run_id"]) for q in qrows
         if q["run_id"] == r and q["tenant_id"] is not None], key=repr)
    assert "per_tenant" not in runs_view.extras
    # views of views stay scoped; selections that keep every tenant keep everything
    assert one.window(up_to_seq=0).quarantine.equals(one.quarantine)
    assert view.filter(types="message.user").quarantine.equals(view.quarantine)
    assert log.filter(types="message.user").quarantine.num_rows == len(qrows)
    assert log.filter(types="message.user").extras.keys() == log.extras.keys()


def test_unreadable_tenant_rows_only_in_an_all_tenants_log(tmp_path: Path) -> None:
    f = _write_jsonl(tmp_path / "rows.jsonl", [
        _pleach_row("acme", "c1", 0), _pleach_row("globex", "g1", 0),
        _pleach_row("acme", "c1", -1),  # acme's bad row
        _pleach_row("globex", "g1", -1, payload={"secret": "globex"}),  # globex's bad row
        _pleach_row(None, "x", 0),  # no tenant: nobody's
        '{"tenant_id": "acme", "chat_id": "c1", "sequence_nu',  # unreadable
    ])
    log = rk.read_pleach(f, errors="quarantine")
    q = log.quarantine
    assert _pairs(q) == sorted([("acme", "c1"), ("globex", "g1"), (None, None), (None, None)],
                               key=repr)
    for view in (log.filter(tenant_id="acme"), log.run("c1", tenant_id="acme"),
                 rk.read_pleach(f, tenant_id="acme", errors="quarantine")):
        assert _pairs(view.quarantine) == [("acme", "c1")]
        assert "globex" not in "".join(view.quarantine.column("raw").to_pylist())
    direct = rk.read_pleach(f, tenant_id="acme", errors="quarantine")
    c = direct.extras["pleach_counts"].to_pylist()[0]
    assert c["quarantined"] == 1 and c["loaded"] == 1 and c["filtered_out"] == 4
    assert c["input_rows"] == c["loaded"] + c["quarantined"] + c["filtered_out"]
    assert "pleach_counts" not in log.filter(tenant_id="acme").extras


def test_read_parquet_and_read_events_views_scope_quarantine(tmp_path: Path) -> None:
    f = _write_jsonl(tmp_path / "rows.jsonl", [
        _pleach_row("acme", "c1", 0), _pleach_row("globex", "g1", 0),
        _pleach_row("acme", "c1", -1), _pleach_row("globex", "g1", -1),
        _pleach_row("", "x", 0),
    ])
    out = rk.read_pleach(f, errors="quarantine").to_parquet(tmp_path / "ds")
    assert rk.read_parquet(out).quarantine.num_rows == 3  # the all-tenants load has them all
    for view in (rk.read_parquet(out, tenant_id="acme"), rk.read_events(out, tenant_id="acme"),
                 rk.read_parquet(out, tenant_id="acme", run_ids="c1")):
        assert view.tenants == ["acme"]
        assert _pairs(view.quarantine) == [("acme", "c1")]
    assert rk.read_parquet(out, tenant_id="acme", run_ids="zz").quarantine.num_rows == 0


def test_isplay_checkpoints_and_quarantine_are_scoped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    both = rk.concat([rk.read_isplay(ISPLAY, owner="acme"),
                      rk.read_isplay([ISPLAY, bad], owner="globex", errors="quarantine")])
    cps = both.extras["checkpoints"]
    assert set(cps.column("tenant_id").to_pylist()) == {"acme", "globex"}
    assert both.quarantine.column("tenant_id").to_pylist() == ["globex"]
    run = both.run_ids[0]
    for view in (both.filter(tenant_id="acme"), both.run(run, tenant_id="acme")):
        assert set(view.extras["checkpoints"].column("tenant_id").to_pylist()) == {"acme"}
        assert view.extras["checkpoints"].num_rows == cps.num_rows // 2
        assert view.quarantine.num_rows == 0


def test_caller_tenant_quarantine_rows_name_their_tenant_and_run(tmp_path: Path) -> None:
    f = tmp_path / "session.jsonl"
    f.write_text('{"type":"session","version":0,"id":"s1","createdAt":0,"cwd":"/"}\n'
                 '{"type":"turn/start","data":{"turn":1}}\nnot json\n')
    log = rk.read_toh(f, owner="acme", errors="quarantine")
    assert _pairs(log.quarantine) == [("acme", log.run_ids[0])]
    assert log.run(log.run_ids[0], tenant_id="acme").quarantine.num_rows == 1


def test_scope_side_table_drops_nulls_and_missing_columns() -> None:
    t = pa.table({"tenant_id": ["acme", None, "globex"], "run_id": ["r", "r", None]})
    assert scope_side_table(t, tenants=["acme", "globex"]).num_rows == 2
    assert scope_side_table(t, run_ids=["r"]).column("tenant_id").to_pylist() == ["acme"]
    assert scope_side_table(t, tenants=["acme"], run_ids=["r"]).num_rows == 1
    assert scope_side_table(t.drop_columns(["run_id"]), run_ids=["r"]) is None
    assert scope_side_table(t).equals(t)


# ----------------------------------------------------------------------------- item 2: the rule
BAD_IDS = ["acme\x00x", "", "a\nb", "x" * (TENANT_ID_MAX_LEN + 1), "tab\there", "\u2028"]


def test_nul_truncation_attack_fails(tmp_path: Path) -> None:
    f = _write_jsonl(tmp_path / "rows.jsonl", [_pleach_row("acme\x00x", "c1", 0),
                                               _pleach_row("acme", "c2", 0)])
    with pytest.raises(LoadError) as e:
        rk.read_pleach(f)
    assert e.value.reason == "bad_tenant" and e.value.line == 1
    log = rk.read_pleach(f, errors="quarantine")
    assert log.tenants == ["acme"]
    assert log.quarantine.column("reason").to_pylist() == ["bad_tenant"]
    assert log.quarantine.column("tenant_id").to_pylist() == [None]
    # a log holding that id (built by hand) cannot be written
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        rk.EventLog(_events([("acme\x00x", "c1", 0)])).to_parquet(tmp_path / "ds")
    assert not (tmp_path / "ds").exists() or not any((tmp_path / "ds").iterdir())
    # a dataset planted with a truncating folder name is never acme's
    root = tmp_path / "planted"
    rk.EventLog(_events([("acme", "c2", 0)])).to_parquet(root)
    bad = root / "tenant_id=acme%00x"
    bad.mkdir()
    pq.write_table(_events([("acme", "evil", 0)]).drop_columns(["tenant_id"]),
                   bad / "part-0.parquet")
    assert rk.read_parquet(root, tenant_id="acme").run_ids == ["c2"]
    with pytest.raises(LoadError) as e:
        rk.read_parquet(root)
    assert e.value.reason == "bad_tenant" and "acme%00x" in e.value.source
    q = rk.read_parquet(root, errors="quarantine")
    assert q.run_ids == ["c2"] and q.quarantine.column("reason").to_pylist() == ["bad_tenant"]


def test_pleach_parquet_rows_follow_the_rule(tmp_path: Path) -> None:
    t = pa.table({"tenant_id": ["acme", "acme\x07", "x" * 300], "chat_id": ["c", "c", "c"],
                  "sequence_number": [0, 1, 2], "event_type": ["message.user"] * 3,
                  "payload": ['{"text": "hi"}'] * 3})
    pq.write_table(t, tmp_path / "rows.parquet")
    with pytest.raises(LoadError, match="reason=bad_tenant"):
        rk.read_pleach(tmp_path / "rows.parquet")
    log = rk.read_pleach(tmp_path / "rows.parquet", errors="quarantine")
    assert len(log) == 1 and log.quarantine.column("reason").to_pylist() == ["bad_tenant"] * 2


def _loaders(tmp_path: Path) -> dict[str, Any]:
    ds_root = rk.EventLog(_events([("acme", "r1", 0)])).to_parquet(tmp_path / "ds")
    otel = tmp_path / "t.json"
    otel.write_text('{"resourceSpans": []}')
    return {
        "toh": lambda t: rk.read_toh(DATA / "toh", owner=t),
        "isplay": lambda t: rk.read_isplay(ISPLAY, owner=t),
        "otel": lambda t: rk.read_otel(otel, owner=t),
        "inspect": lambda t: rk.read_inspect(tmp_path / "none.eval", owner=t),
        "pleach": lambda t: rk.read_pleach(DATA / "pleach", tenant_id=t),
        "read_events": lambda t: rk.read_events(DATA / "toh", owner=t),
        "read_parquet": lambda t: rk.read_parquet(ds_root, tenant_id=t),
        "read_events_ds": lambda t: rk.read_events(ds_root, tenant_id=t),
        "run": lambda t: rk.read_parquet(ds_root).run("r1", tenant_id=t),
        "filter": lambda t: rk.read_parquet(ds_root).filter(tenant_id=t),
    }


@pytest.mark.parametrize("name", ["toh", "isplay", "otel", "inspect", "pleach", "read_events",
                                  "read_parquet", "read_events_ds", "run", "filter"])
def test_every_caller_tenant_argument_follows_the_rule(tmp_path: Path, name: str) -> None:
    load = _loaders(tmp_path)[name]
    for bad in [*BAD_IDS, 7, ["acme", "a\x00"]]:
        with pytest.raises(LoadError) as e:
            load(bad)
        assert e.value.reason == "bad_tenant", (name, bad)
        assert isinstance(e.value, rk.ReplayKitError)


@pytest.mark.parametrize("name", ["toh", "isplay", "otel", "inspect", "read_events", "run"])
def test_a_missing_tenant_is_a_load_error_not_a_type_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(LoadError) as e:
        _loaders(tmp_path)[name](None)
    # read_events names the file whose format records no tenant (issue 19): missing_tenant
    assert e.value.reason == ("missing_tenant" if name == "read_events" else "bad_tenant")


def test_writers_refuse_bad_tenant_ids(tmp_path: Path) -> None:
    good = _events([("acme", "r1", 0)])
    runs = pa.Table.from_pylist([{"tenant_id": "ac\x00me", "run_id": "r1", "format": "demo"}],
                                schema=RUNS_SCHEMA)
    quarantine = pa.Table.from_pylist([_qrow("a\x1b", None, 0)], schema=QUARANTINE_SCHEMA)
    for log in (rk.EventLog(_events([("acme", "r1", 0), ("a\x00", "r1", 0)])),
                rk.EventLog(good, runs=runs), rk.EventLog(good, quarantine=quarantine)):
        for write in (lambda p, lg=log: lg.to_parquet(p),
                      lambda p, lg=log: write_partitioned(lg, p, partition_events=1)):
            with pytest.raises(LoadError, match="reason=bad_tenant"):
                write(tmp_path / "out")
            assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    # a quarantine row of no known tenant is fine to write
    ok = rk.EventLog(good, quarantine=pa.Table.from_pylist([_qrow(None, None, 0)],
                                                           schema=QUARANTINE_SCHEMA))
    assert rk.read_parquet(ok.to_parquet(tmp_path / "ok")).quarantine.num_rows == 1


valid_tenant_ids = st.text(
    st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40,
).filter(lambda t: tenant_id_problem(t) is None) | st.sampled_from(
    ["a/b", "a=b", "100%", "%41", ".", "..", ".x", " lead", "trail ", "ünï", "日本", "a%2Fb"])


@settings(max_examples=300, deadline=None)
@given(valid_tenant_ids)
def test_partition_value_round_trips(tenant: str) -> None:
    name = partition_dir_name(tenant)
    value = name.removeprefix("tenant_id=")
    assert decode_partition_value(value) == tenant
    assert "/" not in value and "\x00" not in value and not value.startswith(".")
    assert partition_dir_tenant(name) == (tenant, None)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(valid_tenant_ids, min_size=1, max_size=3, unique=True))
def test_to_parquet_read_parquet_round_trip_of_any_valid_tenant(tmp_path: Path,
                                                                tenants: list[str]) -> None:
    root = tmp_path / "rt"
    shutil.rmtree(root, ignore_errors=True)
    log = rk.EventLog(_events([(t, f"r{i}", s) for i, t in enumerate(tenants) for s in (0, 1)]))
    log.to_parquet(root)
    back = rk.read_parquet(root)
    cols = ["tenant_id", "run_id", "seq", "payload"]
    assert back.tenants == sorted(tenants)
    assert back.table.select(cols).to_pylist() == log.table.select(cols).to_pylist()
    for i, t in enumerate(tenants):
        one = rk.read_parquet(root, tenant_id=t)
        assert one.tenants == [t] and one.run_ids == [f"r{i}"] and len(one) == 2
    assert {p.tenant_id for p in partitions(root)} == set(tenants)


long_tenant_ids = st.builds(
    lambda unit, n, tail: (unit * n)[: TENANT_ID_MAX_LEN - len(tail)] + tail,
    st.sampled_from(["a", "é", "日", "😀", "a/", "%"]), st.integers(1, TENANT_ID_MAX_LEN),
    st.sampled_from(["", "x", "y", " "]))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(long_tenant_ids, min_size=1, max_size=3, unique=True))
def test_long_valid_tenant_ids_round_trip_or_are_refused_before_writing(
        tmp_path: Path, tenants: list[str]) -> None:
    """A valid tenant id whose folder name would not fit a file name (255 bytes) is a
    LoadError(bad_tenant) raised before anything is written, never an OSError after other
    tenants' folders were written; ids that fit round-trip, also when they differ only in
    their last character."""
    root = tmp_path / "long"
    shutil.rmtree(root, ignore_errors=True)
    log = rk.EventLog(_events([(t, f"r{i}", 0) for i, t in enumerate(tenants)]))
    fits = all(len(("tenant_id=" + quote(t, safe="")).encode()) <= 255 for t in tenants)
    if not fits:
        with pytest.raises(LoadError, match="reason=bad_tenant"):
            log.to_parquet(root)
        assert not root.exists() or not any(root.iterdir())
        return
    log.to_parquet(root)
    for i, t in enumerate(tenants):
        one = rk.read_parquet(root, tenant_id=t)
        assert one.tenants == [t] and one.run_ids == [f"r{i}"]


def test_old_raw_hive_datasets_still_read(tmp_path: Path) -> None:
    table = _events([("acme", "r1", 0), ("acme", "r1", 1), ("globex", "g", 0)])
    ds.write_dataset(table, tmp_path / "old", format="parquet",
                     partitioning=ds.partitioning(pa.schema([("tenant_id", pa.string())]),
                                                  flavor="hive"))
    assert not any("tenant_id" in pq.read_schema(f).names
                   for f in (tmp_path / "old").rglob("*.parquet"))  # the old layout
    pq.write_table(pa.table({"source": ["s"], "line": [1], "field": [None], "reason": ["r"],
                             "message": ["m"], "raw": pa.array(["x"], pa.large_string())}),
                   tmp_path / "old" / "_quarantine.parquet")  # old quarantine schema
    back = rk.read_parquet(tmp_path / "old")
    cols = ["tenant_id", "run_id", "seq", "payload"]
    assert back.table.select(cols).to_pylist() == rk.EventLog(table).table.select(cols).to_pylist()
    assert back.quarantine.column("tenant_id").to_pylist() == [None]
    assert rk.read_parquet(tmp_path / "old", tenant_id="acme").quarantine.num_rows == 0
    assert len(rk.read_parquet(tmp_path / "old", tenant_id="acme")) == 2


def test_non_canonical_folder_is_not_a_second_folder_of_a_tenant(tmp_path: Path) -> None:
    root = rk.EventLog(_events([("acme", "r1", 0)])).to_parquet(tmp_path / "ds")
    alias = root / "tenant_id=acm%65"
    alias.mkdir()
    pq.write_table(_events([("acme", "r9", 0)]), alias / "part-0.parquet")
    with pytest.raises(LoadError) as e:
        rk.read_parquet(root, tenant_id="acme")
    assert e.value.reason == "bad_partition" and "acm%65" in e.value.source
    view = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
    assert view.run_ids == ["r1"] and view.quarantine.column("tenant_id").to_pylist() == ["acme"]
    assert rk.read_parquet(root, tenant_id="globex").run_ids == []  # not opened for others


# ----------------------------------------------------------------------------- item 3: files
def _planted(tmp_path: Path) -> tuple[Path, Path]:
    log = rk.EventLog(_events([("acme", "a1", 0), ("acme", "a1", 1), ("globex", "g1", 0)]))
    root = log.to_parquet(tmp_path / "ds")
    planted = root / "tenant_id=acme" / "part-9.parquet"
    pq.write_table(_events([("globex", "g7", 0), ("globex", "g7", 1)],
                           payload='{"secret": "globex"}'), planted)
    return root, planted


def test_planted_file_is_never_served_as_the_folder_tenant(tmp_path: Path) -> None:
    root, planted = _planted(tmp_path)
    for read in (lambda: rk.read_parquet(root, tenant_id="acme"), lambda: rk.read_parquet(root),
                 lambda: rk.read_events(root, tenant_id="acme")):
        with pytest.raises(LoadError) as e:
            read()
        assert e.value.reason == "partition_mismatch" and e.value.source == str(planted)
    view = rk.read_parquet(root, tenant_id="acme", errors="quarantine")
    assert view.run_ids == ["a1"] and view.tenants == ["acme"]
    assert view.quarantine.column("reason").to_pylist() == ["partition_mismatch"]
    assert view.quarantine.column("raw").to_pylist() == [None]  # no globex bytes in acme's view
    everything = rk.read_parquet(root, errors="quarantine")
    assert sorted(everything.run_ids) == ["a1", "g1"]
    rows = everything.quarantine.filter(pa.compute.is_null(everything.quarantine["tenant_id"]))
    assert rows.column("raw").to_pylist() == ['{"secret": "globex"}'] * 2
    assert set(rows.column("source").to_pylist()) == {str(planted)}


def test_a_partly_foreign_file_is_rejected_whole(tmp_path: Path) -> None:
    root = rk.EventLog(_events([("acme", "a1", 0)])).to_parquet(tmp_path / "ds")
    mixed = _events([("acme", "a2", 0), ("globex", "g", 0), ("acme", "a3", 0)])
    pq.write_table(mixed, root / "tenant_id=acme" / "part-5.parquet", row_group_size=1)
    with pytest.raises(LoadError, match="partition_mismatch"):
        rk.read_parquet(root)
    assert rk.read_parquet(root, errors="quarantine").run_ids == ["a1"]
    # with a filter that leaves only this tenant's rows of the file, they are served
    assert rk.read_parquet(root, run_ids=["a2"]).run_ids == ["a2"]


def test_engine_partition_readers_use_the_same_check(tmp_path: Path) -> None:
    root, planted = _planted(tmp_path)
    part = next(p for p in partitions(root) if p.path == str(planted.absolute()))
    with pytest.raises(LoadError, match="partition_mismatch"):
        part.load()
    index = file_index(root)
    with pytest.raises(LoadError, match="partition_mismatch"):
        index.read(["acme"], ["g7"])
    assert index.read(["acme"], ["a1"]).run_ids == ["a1"]
    assert index.read(["globex"], ["g1"]).tenants == ["globex"]


def test_a_file_moved_to_another_tenant_folder_is_caught_by_its_footer(tmp_path: Path) -> None:
    root = rk.EventLog(_events([("acme", "a1", 0), ("globex", "g1", 0)])).to_parquet(
        tmp_path / "ds")
    moved = root / "tenant_id=acme" / "part-1.parquet"
    shutil.move(root / "tenant_id=globex" / "part-0.parquet", moved)
    assert "tenant_id" not in pq.read_schema(moved).names  # the folder names it (hive)
    with pytest.raises(LoadError) as e:
        rk.read_parquet(root, tenant_id="acme")
    assert e.value.reason == "partition_mismatch" and e.value.source == str(moved)
    assert rk.read_parquet(root, errors="quarantine").run_ids == ["a1"]


def test_a_file_that_names_no_tenant_takes_its_folder_tenant(tmp_path: Path) -> None:
    root = rk.EventLog(_events([("acme", "a1", 0)])).to_parquet(tmp_path / "ds")
    pq.write_table(_events([("x", "legacy", 0)]).drop_columns(["tenant_id"]),
                   root / "tenant_id=acme" / "part-7.parquet")  # no column, no footer key
    back = rk.read_parquet(root)
    assert back.tenants == ["acme"] and back.run_ids == ["a1", "legacy"]
    assert [p.load().tenants for p in partitions(root)] == [["acme"], ["acme"]]


def test_datasets_stay_readable_by_hive_readers(tmp_path: Path) -> None:
    import pandas as pd

    root = rk.EventLog(_events([("acme", "a1", 0), ("a/b c", "x", 0)])).to_parquet(
        tmp_path / "ds", partition_events=1)
    df = pd.read_parquet(root)
    assert sorted(df["tenant_id"].astype(str).unique()) == ["a/b c", "acme"]


def test_bad_tenant_error_is_a_load_error_that_old_handlers_still_catch() -> None:
    from replaykit.tenancy import BadTenantError

    with pytest.raises(BadTenantError) as e:
        rk.read_toh(DATA / "toh", owner=None)  # type: ignore[arg-type]
    err = e.value
    assert isinstance(err, LoadError) and isinstance(err, rk.ReplayKitError)
    assert isinstance(err, TypeError)  # what a missing tenant raised before the rule
    assert err.reason == "bad_tenant" and err.field == "owner"


def test_a_dataset_file_of_the_wrong_shape_is_a_load_error(tmp_path: Path) -> None:
    root = rk.EventLog(_events([("acme", "a1", 0)])).to_parquet(tmp_path / "ds")
    pq.write_table(pa.table({"run_id": ["x"], "seq": ["not a number"]}),
                   root / "tenant_id=acme" / "part-3.parquet")
    with pytest.raises(LoadError) as e:
        rk.read_parquet(root)
    assert e.value.reason == "bad_parquet" and "tenant_id=acme" in e.value.source
