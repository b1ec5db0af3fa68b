"""read_events: owner= names the tenant of formats that record none; tenant_id= filters every
format; the old meaning of tenant_id= still works behind a DeprecationWarning (issue 19)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import replaykit as rk


def test_owner_names_untenanted_files_and_leaves_pleach_tenants_alone(data_dir: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = rk.read_events(data_dir, owner="demo", progress=False)
    pleach = rk.read_pleach(data_dir / "pleach", progress=False)
    toh = rk.read_toh(data_dir / "toh", tenant_id="demo", progress=False)
    isplay = rk.read_isplay(data_dir / "isplay", tenant_id="demo", progress=False)
    agents = sum(len(getattr(rk, f"read_{fmt}")(data_dir / fmt, tenant_id="demo", progress=False))
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


def test_tenant_id_as_owner_is_deprecated_but_still_works(data_dir: Path):
    """The one test of the deprecated form: everywhere else (tests, notebooks, README) it is
    an error (pyproject.toml's filterwarnings)."""
    with pytest.warns(rk.ReplayKitDeprecationWarning, match="pass owner='demo'") as rec:
        old = rk.read_events(data_dir / "toh", tenant_id="demo", progress=False)
    assert issubclass(rec[0].category, DeprecationWarning)  # Python's own filters apply
    assert Path(rec[0].filename).name == "test_read_events_owner.py"  # the caller's line
    new = rk.read_events(data_dir / "toh", owner="demo", progress=False)
    assert old.table.equals(new.table)
    with pytest.raises(TypeError, match="owner="):  # a list cannot name one owner
        rk.read_events(data_dir / "toh", tenant_id=["a", "b"], progress=False)
    for fmt in ("toh", "isplay"):  # an empty id through the old form is refused too
        with pytest.raises((TypeError, rk.LoadError), match="tenant_id"), \
                pytest.warns(rk.ReplayKitDeprecationWarning):
            rk.read_events(data_dir / fmt, tenant_id="", progress=False)


def test_replaykit_deprecations_are_errors_in_this_suite(data_dir: Path):
    """pyproject.toml makes ReplayKitDeprecationWarning an error in tests, wherever it is
    attributed (a DeprecationWarning pointing at a test module is not caught by the
    ``error:::replaykit`` module filter)."""
    with pytest.raises(rk.ReplayKitDeprecationWarning, match="pass owner='demo'"):
        rk.read_events(data_dir / "toh", tenant_id="demo", progress=False)


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
