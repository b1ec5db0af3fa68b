"""read_events and every reader: owner= names the tenant of formats that record none;
tenant_id= filters every format. tenant_id= never names an owner: that old meaning is a
TypeError naming owner= (issues 19 and 42)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import replaykit as rk


def test_owner_names_untenanted_files_and_leaves_pleach_tenants_alone(data_dir: Path):
    from replaykit.io import SkippedFilesWarning

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        log = rk.read_events(data_dir, owner="demo", progress=False)
    # the one file of data/ that is not a log is named, nothing else is said
    assert [(w.category, [Path(e.source).name for e in w.message.files]) for w in rec] == [
        (SkippedFilesWarning, ["README.md"])]
    pleach = rk.read_pleach(data_dir / "pleach", progress=False)
    toh = rk.read_toh(data_dir / "toh", owner="demo", progress=False)
    isplay = rk.read_isplay(data_dir / "isplay", owner="demo", progress=False)
    agents = sum(len(getattr(rk, f"read_{fmt}")(data_dir / fmt, owner="demo", progress=False))
                 for fmt in ("claude_code", "codex", "langsmith", "langfuse", "phoenix", "otel"))
    assert len(log) == len(pleach) + len(toh) + len(isplay) + agents
    # every pleach tenant is still there, none of its rows was dropped or renamed
    assert set(log.tenants) == {"demo", *pleach.tenants}
    assert len(log.filter(tenant_id=pleach.tenants)) == len(pleach)


def test_tenant_id_filters_every_format(data_dir: Path):
    acme = rk.read_events(data_dir, owner="demo", tenant_id="acme", progress=False)
    assert acme.tenants == ["acme"]
    assert len(acme) == len(rk.read_pleach(data_dir / "pleach", tenant_id="acme",
                                           progress=False))
    both = rk.read_events(data_dir, owner="demo", tenant_id=["demo", "acme"], progress=False)
    assert both.tenants == ["acme", "demo"]


def test_a_filter_that_drops_every_row_of_a_file_warns_with_counts(data_dir: Path):
    with pytest.warns(UserWarning) as rec:
        log = rk.read_events(data_dir / "pleach", tenant_id="demo", progress=False)
    assert len(log) == 0
    msgs = [str(w.message) for w in rec]
    jsonl = next(m for m in msgs if "harness_event_log.jsonl" in m)
    n = len(rk.read_pleach(data_dir / "pleach" / "harness_event_log.jsonl", progress=False))
    assert f"dropped all {n:,} rows" in jsonl
    assert "its tenants: acme, globex, initech" in jsonl
    # the warning points at the caller's line, not inside replaykit
    assert all(Path(w.filename).name == "test_read_events_owner.py" for w in rec)
    # owner and filter that disagree: the owned files' rows are dropped, with a warning
    with pytest.warns(UserWarning, match="dropped all .* rows of the toh logs owned by 'demo'"):
        none = rk.read_events(data_dir / "toh", owner="demo", tenant_id="acme", progress=False)
    assert len(none) == 0


def test_a_filter_that_keeps_rows_is_silent(data_dir: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = rk.read_events(data_dir / "pleach" / "harness_event_log.jsonl",
                             tenant_id="acme", progress=False)
    assert log.tenants == ["acme"]


def test_tenant_id_never_names_an_owner(data_dir: Path):
    """The old meaning (tenant_id= naming the owner of logs that record no tenant) is gone:
    a TypeError (a LoadError too) that names owner=, for a string and for a list."""
    for given in ("demo", ["a", "b"]):
        with pytest.raises(TypeError, match="owner=") as exc:
            rk.read_events(data_dir / "toh", tenant_id=given, progress=False)
        assert isinstance(exc.value, rk.MissingTenantError)
        assert "tenant_id=" in str(exc.value) and "filters" in str(exc.value)
    with pytest.raises(TypeError, match="owner=") as exc:
        rk.read_events(data_dir / "isplay", tenant_id="", progress=False)
    assert exc.value.reason == "missing_tenant"


UNTENANTED = ["toh", "isplay", "claude_code", "codex", "langsmith", "langfuse", "phoenix",
              "otel"]


@pytest.mark.parametrize("fmt", UNTENANTED)
def test_every_reader_takes_owner_and_filters_with_tenant_id(data_dir: Path, fmt: str):
    read = getattr(rk, f"read_{fmt}")
    owned = read(data_dir / fmt, owner="demo", progress=False)
    assert len(owned) > 0 and owned.tenants == ["demo"]
    assert set(owned.table.column("tenant_id").to_pylist()) == {"demo"}
    kept = read(data_dir / fmt, owner="demo", tenant_id=["acme", "demo"], progress=False)
    assert kept.table.equals(owned.table)
    assert len(read(data_dir / fmt, owner="demo", tenant_id="demo", progress=False)) == \
        len(owned)
    dropped = read(data_dir / fmt, owner="demo", tenant_id="acme", progress=False)
    assert len(dropped) == 0 and dropped.tenants == []
    # the old meaning: tenant_id= alone names no owner; the error names the argument to use
    with pytest.raises(TypeError, match=rf"read_{fmt}\(path, owner='demo'\)") as exc:
        read(data_dir / fmt, tenant_id="demo", progress=False)
    assert exc.value.reason == "bad_tenant" and exc.value.field == "owner"
    with pytest.raises(TypeError, match="owner"):
        read(data_dir / fmt, progress=False)
    with pytest.raises(rk.LoadError, match="tenant_id"):  # the filter follows the id rule
        read(data_dir / fmt, owner="demo", tenant_id="", progress=False)


def test_read_inspect_takes_owner_too():
    """No inspect sample under data/: the argument check runs before any file is read."""
    with pytest.raises(TypeError, match=r"read_inspect\(path, owner='me'\)"):
        rk.read_inspect("no-such-dir", tenant_id="me")


def test_explicit_format_follows_the_same_split(data_dir: Path):
    log = rk.read_events(data_dir / "toh", format="toh", owner="demo", progress=False)
    assert log.tenants == ["demo"]
    with pytest.raises(rk.LoadError) as exc:
        rk.read_events(data_dir / "toh", format="toh", progress=False)
    assert exc.value.reason == "missing_tenant"
    pl = rk.read_events(data_dir / "pleach", format="pleach", owner="ignored",
                        tenant_id="acme", progress=False)
    assert pl.tenants == ["acme"]


def test_parquet_datasets_are_filtered_and_mixed_with_owned_files(data_dir: Path, tmp_path):
    ds = rk.read_pleach(data_dir / "pleach", progress=False).to_parquet(tmp_path / "ds")
    log = rk.read_events([ds, data_dir / "toh"], owner="demo", tenant_id=["acme", "demo"],
                         progress=False)
    assert log.tenants == ["acme", "demo"]
