"""Anchors that anchor nothing (issue 42, red-team finding 16), closed at its class.

Every form ``verify_chain(expected_heads=...)`` takes -- a mapping, a heads DataFrame, an
Arrow table, a list of records, a manifest (object, dict form, CLI file) -- either anchors
at least one run or is refused with a ReplayKitError that says why and what to pass: an
empty anchor set used to report 0 problems for a log with a run deleted, and a manifest
dict without its version member raised pyarrow.ArrowTypeError. Checked on the native and
the reference (REPLAYKIT_NATIVE=0) paths.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest
from _chainlogs import make_log

from replaykit import EventLog
from replaykit.cli.verify import verify_chain_command
from replaykit.errors import ReplayKitError
from replaykit.integrity.chain import chain_heads, stamp_chain
from replaykit.integrity.manifest import ChainManifest, ManifestError, chain_manifest
from replaykit.integrity.verify import verify_chain


@pytest.fixture(params=["native", "reference"], autouse=True)
def path_kind(request, monkeypatch):
    if request.param == "reference":
        monkeypatch.setenv("REPLAYKIT_NATIVE", "0")
    else:
        monkeypatch.delenv("REPLAYKIT_NATIVE", raising=False)
    return request.param


@pytest.fixture(scope="module")
def trusted() -> EventLog:
    return stamp_chain(make_log(80, n_runs=6, odd_ids=False))


@pytest.fixture(scope="module")
def one_run_deleted(trusted) -> EventLog:
    runs = chain_heads(trusted)["run_id"].tolist()
    gone = runs[0]
    keep = [r for r in runs if r != gone]
    return trusted.filter(run_ids=keep)


def _empty_forms(trusted):
    heads = chain_heads(trusted)
    return {
        "dict": {},
        "frame": heads.iloc[:0],
        "bare frame": pd.DataFrame(columns=["run_id", "row_hash"]),
        "arrow table": pa.Table.from_pandas(heads.iloc[:0], preserve_index=False),
        "list": [],
        "generator": (r for r in []),
        "tuple": (),
    }


@pytest.mark.parametrize("form", ["dict", "frame", "bare frame", "arrow table", "list",
                                  "generator", "tuple"])
def test_an_empty_anchor_set_is_refused_not_passed(trusted, one_run_deleted, form):
    assert verify_chain(one_run_deleted).empty  # a deleted run leaves no broken link
    with pytest.raises(ManifestError) as info:
        verify_chain(one_run_deleted, expected_heads=_empty_forms(trusted)[form])
    msg = str(info.value)
    assert "anchors nothing" in msg and "chain_manifest(trusted)" in msg
    assert isinstance(info.value, ReplayKitError) and isinstance(info.value, ValueError)


def test_an_empty_manifest_reports_every_run_as_unanchored(trusted):
    problems = verify_chain(trusted, expected_heads=ChainManifest.build({}))
    assert problems["kind"].tolist() == ["unexpected_run"] * len(chain_heads(trusted))


def test_each_anchor_form_detects_the_deleted_run(trusted, one_run_deleted):
    heads = chain_heads(trusted)
    gone = heads.iloc[0]
    forms = {
        "manifest": chain_manifest(trusted),
        "manifest dict": chain_manifest(trusted).to_dict(),
        "frame": heads,
        "arrow table": pa.Table.from_pandas(heads, preserve_index=False),
        "records": heads.to_dict("records"),
        "mapping": {(t, r): h for t, r, h in zip(heads["tenant_id"], heads["run_id"],
                                                  heads["row_hash"], strict=True)},
    }
    for name, anchors in forms.items():
        p = verify_chain(one_run_deleted, expected_heads=anchors)
        assert len(p) == 1, name
        row = p.iloc[0]
        assert (row["tenant_id"], row["run_id"]) == (gone["tenant_id"], gone["run_id"]), name
        assert row["kind"] in ("missing_run", "head_mismatch"), name


_MEMBERS = ["replaykit_chain_manifest", "algorithm", "tenants", "digest"]


@pytest.mark.parametrize("member", _MEMBERS)
def test_a_manifest_dict_missing_a_member_names_it(trusted, member):
    d = chain_manifest(trusted).to_dict()
    del d[member]
    with pytest.raises(ManifestError) as info:
        verify_chain(trusted, expected_heads=d)
    msg = str(info.value)
    # the missing member, or (tenants/digest) the members a manifest needs, and the fix
    want = member if member != "algorithm" else "sha256"
    assert want in msg or ("'tenants'" in msg and "'digest'" in msg)
    assert "ArrowTypeError" not in type(info.value).__name__


@pytest.mark.parametrize("member", _MEMBERS)
def test_a_manifest_file_missing_a_member_is_a_usage_error(tmp_path, trusted, member,
                                                            capsys):
    ds = tmp_path / "ds"
    trusted.to_parquet(ds)
    d = chain_manifest(trusted).to_dict()
    del d[member]
    f = tmp_path / "manifest.json"
    f.write_text(json.dumps(d))
    assert verify_chain_command([str(ds), "--heads", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "Traceback" not in err and "Arrow" not in err


@pytest.mark.parametrize("anchors, words", [
    ({"run-00000": {"seq": 1}}, "not a hash string"),
    ({"run-00000": None}, "not a hash string"),
    ({"run-00000": 12}, "not a hash string"),
    ([{"run_id": "run-00000"}], "run_id and row_hash"),
    (["run-00000"], "records"),
    ([{"run_id": "run-00000", "row_hash": "a" * 64, "seq": "x"}], "not an integer"),
    ([{"run_id": None, "row_hash": "a" * 64}], "without a run_id"),
    (pd.DataFrame({"run_id": ["run-00000"]}), "run_id and row_hash"),
])
def test_malformed_heads_are_a_clean_error(trusted, anchors, words):
    with pytest.raises(ManifestError, match=words):
        verify_chain(trusted, expected_heads=anchors)
