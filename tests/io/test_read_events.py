"""read_events: per-file format sniffing, mixed folders, and wrong guesses that are impossible
to miss."""

from __future__ import annotations

from pathlib import Path

import pytest

import replaykit as rk
from replaykit.io import FORMATS


def _one_file(data_dir, fmt):
    pattern = {"toh": "session.jsonl", "pleach": "*.jsonl", "isplay": "*.json"}[fmt]
    files = [
        f
        for f in sorted((data_dir / fmt).rglob(pattern))
        if not any(getattr(m, "is_side_file", lambda _p: False)(f) for m in FORMATS.values())
    ]
    assert files, f"no {fmt} sample in data/{fmt}"
    return files[0]


@pytest.mark.parametrize("fmt", ["toh", "pleach", "isplay"])
def test_each_bundled_sample_is_detected_as_its_format(data_dir, fmt):
    assert rk.detect_format(_one_file(data_dir, fmt)) == fmt


def test_unknown_file_names_every_format_tried_and_why(tmp_path):
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": "world"}\n')
    with pytest.raises(rk.FormatDetectionError) as info:
        rk.read_events(bad, owner="demo")
    err = info.value
    assert set(err.attempts) == set(FORMATS)
    assert all(reason for reason in err.attempts.values())
    message = str(err)
    for name in FORMATS:
        assert f"{name}:" in message
    assert "format=" in message  # the fix
    assert err.source == str(bad)


def test_mixed_folder_loads_every_format_with_its_own_loader(data_dir):
    owned = rk.read_events([data_dir / "toh", data_dir / "isplay"], owner="demo",
                           progress=False)
    assert set(owned.summary()["formats"]) == {"toh", "isplay"}
    direct = rk.concat(
        [
            rk.read_toh(data_dir / "toh", owner="demo", progress=False),
            rk.read_isplay(data_dir / "isplay", owner="demo", progress=False),
        ]
    )
    assert owned.table.equals(direct.table)


def test_explicit_format_skips_sniffing_and_unknown_format_is_rejected(data_dir):
    log = rk.read_events(data_dir / "pleach", format="pleach", progress=False)
    assert log.summary()["formats"] == ["pleach"]
    with pytest.raises(ValueError, match="format must be 'auto' or one of"):
        rk.read_events(data_dir, format="csv")


def test_formats_without_tenant_never_get_one_invented(data_dir):
    for fmt in ("toh", "isplay"):
        with pytest.raises(rk.LoadError, match="no owner was named") as exc:
            rk.read_events(data_dir / fmt, progress=False)
        assert exc.value.reason == "missing_tenant"
        assert Path(exc.value.source).is_file() and str(data_dir / fmt) in exc.value.source
        with pytest.raises((TypeError, rk.LoadError), match="tenant"):
            rk.read_events(data_dir / fmt, owner="", progress=False)


def test_a_replaykit_parquet_dataset_is_read_back(tmp_path: Path, data_dir: Path) -> None:
    log = rk.read_events(data_dir / "pleach", progress=False)
    ds = log.to_parquet(tmp_path / "ds")
    assert rk.io.is_dataset(ds) and not rk.io.is_dataset(data_dir / "pleach")
    back = rk.read_events(ds)
    assert back.table.equals(rk.read_parquet(ds).table) and len(back) == len(log)
    one = sorted(log.tenants)[0]
    assert set(rk.read_events(ds, tenant_id=one).tenants) == {one}
    # with other logs in the same call (the toh logs get the owner; the dataset is filtered)
    toh = rk.read_events(data_dir / "toh", owner="acme", progress=False)
    both = rk.read_events([ds, data_dir / "toh"], owner="acme", tenant_id="acme",
                          progress=False)
    n_acme = len(rk.read_parquet(ds, tenant_id="acme"))
    assert n_acme > 0 and len(both) == len(toh) + n_acme and both.tenants == ["acme"]
