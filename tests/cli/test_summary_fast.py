"""``replaykit summary``'s pleach path without the events table (``io/pleach/_summary.py``)
against the full read (``read_events`` -> EventLog): the same stdout, stderr, exit code and
quarantine file, byte for byte, on the bundled samples, generated logs (one block and many),
bad lines under both ``--errors`` modes, tenant filters, runs split across files, every output
mode, and hypothesis-drawn logs. Under REPLAYKIT_NATIVE=0 both runs take the full read."""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit.io.pleach as pleach
from replaykit._base import native as _native
from replaykit.cli import _inputs as cli_inputs
from replaykit.cli import main
from replaykit.datasets import generate_pleach

ROOT = Path(__file__).resolve().parents[2]
NATIVE = _native.enabled()


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch, *, fast: bool,
         qout: Path | None = None) -> tuple[Any, ...]:
    """(exit code, stdout, stderr, quarantine file bytes, fast path used) of one command."""
    calls: list[int] = []
    real = pleach.read_pleach_runs

    def spy(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    with monkeypatch.context() as m:
        m.setattr(pleach, "read_pleach_runs", spy)
        if not fast:
            m.setattr(cli_inputs, "_pleach_only", lambda *a, **k: None)
        if qout is not None and qout.exists():
            qout.unlink()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse
                rc = exc.code
        q = qout.read_bytes() if qout is not None and qout.exists() else None
    return rc, out.getvalue(), err.getvalue(), _quarantine_value(qout, q), bool(calls)


def _quarantine_value(path: Path | None, data: bytes | None) -> Any:
    """A CSV quarantine file's bytes; a Parquet one's rows (its bytes carry a writer id)."""
    if data is None or path is None or path.suffix == ".csv":
        return data
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data)).to_pylist()


def _same(argv: list[str], monkeypatch: pytest.MonkeyPatch, *, qout: Path | None = None,
          expect_fast: bool | None = True) -> tuple[Any, ...]:
    """Run ``argv`` both ways, assert identical results; returns the fast run's."""
    if qout is not None:
        argv = [*argv, "--quarantine-out", str(qout), "--overwrite"]
    fast = _run(argv, monkeypatch, fast=True, qout=qout)
    full = _run(argv, monkeypatch, fast=False, qout=qout)
    assert fast[:4] == full[:4]
    assert not full[4]
    if expect_fast is not None:
        assert fast[4] == (expect_fast and NATIVE), argv
    return fast


MODES = [[], ["--json"], ["--csv"], ["--all-columns"], ["--limit", "3"], ["--limit", "0"],
         ["--json", "--all-columns", "--limit", "2"]]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pleach")
    out = {
        "small": generate_pleach(d / "small.jsonl", events=300, runs=7, seed=1),
        "mid": generate_pleach(d / "mid.jsonl", events=6000, runs=40, seed=2),
        "epoch": generate_pleach(d / "epoch.jsonl", events=800, runs=9, seed=3,
                                 timestamps="epoch_ms", hashes=False),
        "mixed": generate_pleach(d / "mixed.jsonl", events=800, runs=9, seed=4,
                                 timestamps="mixed"),
        "parquet": generate_pleach(d / "p.parquet", events=700, runs=6, seed=5,
                                   format="parquet"),
    }
    return out


@pytest.mark.parametrize("mode", MODES, ids=lambda m: " ".join(m) or "text")
def test_bundled_pleach_sample(mode: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _same(["summary", str(ROOT / "data/pleach"), "--no-progress", *mode], monkeypatch)
    _same(["summary", str(ROOT / "data/pleach/harness_event_log.jsonl"), "--no-progress",
           "--format", "pleach", *mode], monkeypatch)


def test_bundled_samples_of_other_formats_take_the_full_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for args in (["summary", str(ROOT / "data"), "--owner", "demo"],
                 ["summary", str(ROOT / "tests/data"), "--owner", "demo", "--json"],
                 ["summary", str(ROOT / "data/pleach"), str(ROOT / "data/toh"),
                  "--owner", "demo"],
                 ["summary", str(ROOT / "data/toh")]):
        _same([*args, "--no-progress"], monkeypatch, expect_fast=False)
    # every bundled pleach file through the fast path
    for f in sorted((ROOT / "data").rglob("*pleach*")) + sorted(
            (ROOT / "tests/data").rglob("*pleach*")):
        if f.is_file():
            _same(["summary", str(f), "--no-progress", "--format", "pleach", "--all-columns"],
                  monkeypatch, expect_fast=None)


@pytest.mark.parametrize("name", ["small", "mid", "epoch", "mixed", "parquet"])
@pytest.mark.parametrize("mode", MODES[:4], ids=lambda m: " ".join(m) or "text")
def test_generated_logs(name: str, mode: list[str], logs: dict[str, Path],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    _same(["summary", str(logs[name]), "--no-progress", *mode], monkeypatch)


@pytest.mark.parametrize("block", [512, 4096, 1 << 16])
def test_many_blocks(block: int, logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                     tmp_path: Path) -> None:
    monkeypatch.setattr(pleach, "_BLOCK", block)
    # 512-byte blocks hold about one line each: the small log already gives hundreds of them
    # (every run cut across blocks), the mid one thousands at a cost of seconds
    log = logs["small" if block < 1024 else "mid"]
    _same(["summary", str(log), "--no-progress", "--limit", "0"], monkeypatch)
    bad = _mutated(log, tmp_path / "bad.jsonl")
    _same(["summary", str(bad), "--no-progress", "--errors", "quarantine", "--csv"],
          monkeypatch, qout=tmp_path / "q.csv")


def test_tenants(logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    f = str(logs["mid"])
    for tenant in (["--tenant", "acme"], ["--tenant", "globex", "--json"],
                   ["--tenant", "nobody"], ["--tenant", "Acme"], ["--tenant", "a\tb"],
                   ["--tenant", ""]):
        _same(["summary", f, "--no-progress", *tenant], monkeypatch, expect_fast=None)


def _mutated(src: Path, dst: Path) -> Path:
    """``src`` with bad lines of every kind the loader reports, duplicates and blank lines."""
    lines = src.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        row = json.loads(line)
        k = i % 97
        if k == 3:
            out.append(line[: len(line) // 2])  # truncated: bad_json
        elif k == 7:
            out.append(json.dumps({**row, "tenant_id": ""}))  # missing_tenant
        elif k == 11:
            out.append(json.dumps({**row, "tenant_id": "a\u0085b"}))  # bad_tenant
        elif k == 13:
            out.append(json.dumps({**row, "chat_id": ""}))  # missing_field
        elif k == 17:
            out.append(json.dumps({**row, "sequence_number": -1}))  # bad_seq
        elif k == 19:
            out.append(json.dumps({**row, "created_at": "yesterday"}))  # bad_timestamp
        elif k == 23:
            out.append(line)
            out.append(line)  # duplicate_seq
        elif k == 29:
            out.append("")
            out.append("   ")  # blank lines
            out.append(line)
        elif k == 31:
            out.append("[1, 2]")  # not_object
        elif k == 37:
            out.append(json.dumps({**row, "event_type": None}))  # unknown_event
        elif k == 41:
            out.append(json.dumps({**row, "created_at": 253402300800000}))  # beyond 9999
        else:
            out.append(line)
    dst.write_text("\n".join(out) + "\n", encoding="utf-8")
    return dst


@pytest.mark.parametrize("errors", ["raise", "quarantine"])
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_bad_lines(errors: str, suffix: str, logs: dict[str, Path],
                   monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = _mutated(logs["mid"], tmp_path / "bad.jsonl")
    for mode in ([], ["--json"], ["--tenant", "acme"], ["--all-columns"]):
        got = _same(["summary", str(bad), "--no-progress", "--errors", errors, *mode],
                    monkeypatch, qout=tmp_path / f"q{suffix}")
        assert (got[0] == 0) == (errors == "quarantine"), got[2]
        assert (got[3] is not None) == (errors == "quarantine")
    # without a quarantine file, and only a duplicate (found at the end, after every file)
    _same(["summary", str(bad), "--no-progress", "--errors", errors], monkeypatch)
    lines = logs["small"].read_text(encoding="utf-8").splitlines()
    dup = tmp_path / "dup.jsonl"
    dup.write_text("\n".join([*lines, lines[5], lines[0]]) + "\n", encoding="utf-8")
    _same(["summary", str(dup), "--no-progress", "--errors", errors], monkeypatch)


def test_runs_split_across_files_and_globs(logs: dict[str, Path],
                                           monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    lines = logs["mid"].read_text(encoding="utf-8").splitlines()
    d = tmp_path / "split"
    d.mkdir()
    # every run's rows spread over three files, out of order, one duplicated across files
    (d / "a.jsonl").write_text("\n".join(lines[0::3]) + "\n", encoding="utf-8")
    (d / "b.jsonl").write_text("\n".join(reversed(lines[1::3])) + "\n", encoding="utf-8")
    (d / "c.ndjson").write_text("\n".join([*lines[2::3], lines[4]]) + "\n", encoding="utf-8")
    shutil.copy(logs["parquet"], d / "d.parquet")
    for mode in ([], ["--all-columns"], ["--errors", "quarantine", "--csv"]):
        _same(["summary", str(d), "--no-progress", *mode], monkeypatch)
        _same(["summary", str(d / "*.jsonl"), str(d / "c.ndjson"), "--no-progress", *mode],
              monkeypatch)
    _same(["summary", str(d / "a.jsonl"), str(logs["small"]), str(logs["epoch"]),
           "--no-progress", "--limit", "0"], monkeypatch)
    # a pleach file beside a file of another format: the full read
    _same(["summary", str(d / "a.jsonl"), str(ROOT / "data/toh"), "--owner", "demo",
           "--no-progress"], monkeypatch, expect_fast=False)
    # an empty file, a compressed one, a file that is not a log
    (d / "e.jsonl").write_bytes(b"")
    (d / "f.jsonl").write_bytes(b"\x1f\x8b\x08\x00rest")
    (d / "g.jsonl").write_text("hello\n", encoding="utf-8")
    for errors in ("raise", "quarantine"):
        _same(["summary", str(d), "--no-progress", "--errors", errors], monkeypatch,
              expect_fast=None)
        _same(["summary", str(d / "g.jsonl"), str(d / "a.jsonl"), "--format", "pleach",
               "--no-progress", "--errors", errors], monkeypatch, qout=tmp_path / "q.csv")


def test_the_comparison_can_fail(logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast path one event short per run is caught."""
    if not NATIVE:
        pytest.skip("the fast path is native-only")
    real = pleach._per_run

    def short(*a: Any, **k: Any) -> Any:
        stats, *rest = real(*a, **k)
        import pyarrow.compute as pc

        i = stats.schema.get_field_index("events")
        return (stats.set_column(i, "events", pc.subtract(stats.column("events"), 1)), *rest)

    monkeypatch.setattr(pleach, "_per_run", short)
    with pytest.raises(AssertionError):
        _same(["summary", str(logs["small"]), "--no-progress"], monkeypatch)


@pytest.mark.parametrize("shape", ["rising", "repeats", "going_back", "nulls_between"])
def test_distinct_turns_per_run(shape: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs table's turns (distinct turn numbers of a run's turn events) on the fast
    path's two ways to count them: turn numbers that never go back within a run (counted
    where they change) and ones that do (counted through a sort), as the full read counts."""
    rng = random.Random(shape)
    rows = []
    for r in range(6):
        seq = 0
        turn = 1
        for _ in range(rng.randint(1, 25)):
            seq += 1
            if shape == "rising":
                turn += 1
            elif shape == "repeats":
                turn += rng.choice([0, 0, 1])
            elif shape == "going_back":
                turn = rng.choice([1, 2, 3, 2, 1, 7])
            payload = {"turn": None if shape == "nulls_between" and rng.random() < 0.4
                       else turn} if rng.random() < 0.8 else {}
            if shape == "nulls_between":
                turn += rng.choice([0, 1])
            rows.append({"tenant_id": "acme", "chat_id": f"c{r}", "sequence_number": seq,
                         "event_type": "turn.started", "payload": payload,
                         "created_at": "2026-01-01T00:00:00Z"})
    rng.shuffle(rows)  # runs interleaved, rows out of order: the summary sorts them
    f = tmp_path / f"{shape}.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    fast = _same(["summary", str(f), "--no-progress", "--json"], monkeypatch)
    got = {r["run_id"]: r["turns"] for r in json.loads(fast[1])}
    want: dict[str, set[int]] = {}
    for x in rows:
        want.setdefault(x["chat_id"], set())
        if x["payload"].get("turn") is not None:
            want[x["chat_id"]].add(x["payload"]["turn"])
    assert got == {k: len(v) for k, v in want.items()}


# ------------------------------------------------------------------------------ hypothesis
@pytest.fixture(scope="module")
def pool_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d = tmp_path_factory.mktemp("pool")
    lines = []
    for seed, ts in ((7, "iso"), (8, "epoch_ms")):
        f = generate_pleach(d / f"p{seed}.jsonl", events=400, runs=12, seed=seed,
                            timestamps=ts, tenants=("acme", "globex"))  # type: ignore[arg-type]
        lines += f.read_text(encoding="utf-8").splitlines()
    return lines


_MUTATIONS = st.sampled_from(["keep", "keep", "keep", "keep", "dup", "cut", "tenant",
                              "seq", "ts", "blank", "noturn", "spawn"])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_hypothesis_logs(data: st.DataObject, pool_lines: list[str],
                         monkeypatch: pytest.MonkeyPatch, tmp_path_factory: Any) -> None:
    d = tmp_path_factory.mktemp("h")
    picks = data.draw(st.lists(st.integers(0, len(pool_lines) - 1), min_size=0, max_size=120))
    muts = data.draw(st.lists(_MUTATIONS, min_size=len(picks), max_size=len(picks)))
    out: list[str] = []
    for i, m in zip(picks, muts, strict=True):
        line = pool_lines[i]
        row = json.loads(line)
        if m == "dup":
            out += [line, line]
        elif m == "cut":
            out.append(line[:-3])
        elif m == "tenant":
            out.append(json.dumps({**row, "tenant_id": data.draw(st.sampled_from(
                ["", None, "x" * 300, "initech", "é"]))}))
        elif m == "seq":
            out.append(json.dumps({**row, "sequence_number": data.draw(st.sampled_from(
                [-5, 0, 10**6, "3", None]))}))
        elif m == "ts":
            out.append(json.dumps({**row, "created_at": data.draw(st.sampled_from(
                [None, "2026-01-01", 0, "nope", "2026-01-01T00:00:00+02:00"]))}))
        elif m == "blank":
            out.append("")
        elif m == "noturn":
            p = dict(row["payload"])
            p["turn"] = data.draw(st.sampled_from([None, 2**40, -1, 3]))
            out.append(json.dumps({**row, "event_type": "turn.started", "payload": p}))
        elif m == "spawn":
            p = {**row["payload"], "child_chat_id": data.draw(st.sampled_from(
                [r["chat_id"] for r in map(json.loads, pool_lines[:50])]))}
            out.append(json.dumps({**row, "event_type": "subagent.spawned", "payload": p}))
        else:
            out.append(line)
    n_files = data.draw(st.integers(1, 3))
    files = []
    for j in range(n_files):
        f = d / f"f{j}.jsonl"
        f.write_text("\n".join(out[j::n_files]) + ("\n" if out[j::n_files] else ""),
                     encoding="utf-8")
        files.append(str(f))
    block = data.draw(st.sampled_from([256, 2048, 1 << 20]))
    mode = data.draw(st.sampled_from(MODES))
    errors = data.draw(st.sampled_from(["raise", "quarantine"]))
    tenant = data.draw(st.sampled_from([[], ["--tenant", "acme"], ["--tenant", "initech"]]))
    with monkeypatch.context() as m:
        m.setattr(pleach, "_BLOCK", block)
        _same(["summary", *files, "--no-progress", "--errors", errors, *tenant, *mode],
              monkeypatch, qout=d / "q.csv", expect_fast=None)
