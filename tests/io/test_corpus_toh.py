"""read_toh and the grain tables over all 117 real toh logs (REPLAYKIT_CORPUS).

Expected values are computed here, independently, from the raw lines (plain ``json``), never
from the loader's own output.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import replaykit as rk
from replaykit.io.toh import OrphanRunWarning

pytestmark = pytest.mark.corpus

PACKED = {"text-chunks": "texts", "reasoning-chunks": "texts", "tool-call-chunks": "args"}
# the older event shape whose sourceEventSeqs use another numbering (README: out of range)
OLD_SHAPE = "cordis-tool-round"


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


def _raw(path: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return lines[0], lines[1:]


def _n_events(obj: dict) -> int:
    key = PACKED.get(obj["type"])
    return len(obj["data"][key]) if key else 1


@pytest.fixture(scope="module")
def corpus(toh_corpus: Path) -> tuple[rk.EventLog, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = rk.read_toh(toh_corpus, owner="corpus")
    return log, list(caught)


@pytest.fixture(scope="module")
def raw_lines(toh_corpus: Path) -> dict[str, tuple[dict, list[dict]]]:
    return {f"toh:{f}": _raw(f) for f in _files(toh_corpus)}


def test_every_log_loads_without_quarantine(corpus, raw_lines) -> None:
    log, caught = corpus
    assert len(raw_lines) == 117
    assert len(log.quarantine) == 0
    assert len(log.runs) == 117 and log.num_runs == 117
    orphans = [w for w in caught if issubclass(w.category, OrphanRunWarning)]
    # three children name parents that are not in the corpus ({{parent}} twice, one SDK id)
    assert len(orphans) == 3
    assert [w for w in caught if not issubclass(w.category, OrphanRunWarning)] == []


def test_each_file_alone_loads_with_its_header_id(toh_corpus: Path, raw_lines) -> None:
    for f in _files(toh_corpus):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OrphanRunWarning)
            log = rk.read_toh(f, owner="corpus")
        header, body = raw_lines[f"toh:{f}"]
        assert len(log.quarantine) == 0, f
        assert log.run_ids == [header["id"]], f
        assert len(log) == sum(_n_events(o) for o in body), f


def test_event_counts_follow_the_seq_rule(corpus, raw_lines) -> None:
    log, _ = corpus
    df = log.events_df()
    total = 0
    for source, group in df.groupby("source", observed=True):
        _, body = raw_lines[str(source)]
        expected_lines: list[int] = []
        for lineno, obj in enumerate(body, start=2):
            expected_lines += [lineno] * _n_events(obj)
        total += len(expected_lines)
        group = group.sort_values("seq")
        assert group["seq"].tolist() == list(range(len(expected_lines))), source
        assert group["source_line"].tolist() == expected_lines, source
    assert total == len(df) == 11_441
    assert df.groupby("source", observed=True).ngroups == 117


def test_packed_members_and_types(corpus, raw_lines) -> None:
    log, _ = corpus
    df = log.events_df()
    n_lines = sum(len(body) for _, body in raw_lines.values())
    assert n_lines == 4_457
    n_packed = sum(1 for _, body in raw_lines.values() for o in body if o["type"] in PACKED)
    members = sum(_n_events(o) for _, body in raw_lines.values() for o in body
                  if o["type"] in PACKED)  # fmt: skip
    assert len(df) == n_lines - n_packed + members
    assert not df["type"].isin(list(PACKED)).any()
    raw_types = {o["type"] for _, body in raw_lines.values() for o in body} - set(PACKED)
    assert set(df["type"].astype(str)) == raw_types


def test_inherited_is_the_fork_seed_region(corpus, raw_lines) -> None:
    log, _ = corpus
    df = log.events_df()
    expected = 0
    for source, (header, _) in raw_lines.items():
        seed = header.get("seedLength")
        rows = df[df["source"] == source]
        want = rows["seq"] < seed if seed is not None else pd.Series(False, index=rows.index)
        assert rows["inherited"].tolist() == want.tolist(), source
        expected += int(want.sum())
    assert int(df["inherited"].sum()) == expected > 0


def test_source_event_seqs_point_at_the_events_they_name(corpus) -> None:
    """tool/result -> the tool/call of the same call id; assistant/message -> chunks of its call.

    Checked for every in-range reference (all of them, not only a sample); the older-shape
    log is excluded: its references use another numbering (some are even out of range).
    """
    log, _ = corpus
    df = log.events_df()
    df = df.assign(run_id=df["run_id"].astype(str), type=df["type"].astype(str))
    at = df.set_index(["run_id", "seq"])
    refs = df[df["payload"].str.contains('"sourceEventSeqs"', regex=False)]
    checked = out_of_range = old_shape = 0
    for row in refs.itertuples():
        seqs = json.loads(row.payload)["sourceEventSeqs"]
        for s in seqs:
            if (row.run_id, s) not in at.index:
                out_of_range += 1
                assert OLD_SHAPE in str(row.source), (row.source, row.seq, s)
                continue
            if OLD_SHAPE in str(row.source):
                old_shape += 1
                continue
            target = at.loc[(row.run_id, s)]
            if row.type == "tool/result":
                assert (target["type"], target["ref_id"]) == ("tool/call", row.ref_id)
            elif row.type == "assistant/message":
                assert target["type"] == "assistant/chunk"
                assert target["ref_id"] == row.ref_id
                assert (target["turn"], target["step"]) == (row.turn, row.step)
            checked += 1
    assert checked > 8_000
    assert out_of_range == 175 and old_shape > 0


def test_grain_tables_agree_with_the_logs(corpus, raw_lines) -> None:
    log, _ = corpus
    bodies = [o for _, body in raw_lines.values() for o in body]
    tool_calls = [o for o in bodies if o["type"] == "tool/call"]
    finishes = [
        o for o in bodies
        if o["type"] == "assistant/chunk" and o["data"]["chunk"]["type"] == "finish"
    ]  # fmt: skip
    turn_ends = [o for o in bodies if o["type"] == "turn/end"]

    tools = log.tools_df()
    assert len(tools) == len(tool_calls) == 160
    assert sorted(tools["call_id"]) == sorted(o["data"]["callId"] for o in tool_calls)
    assert tools["has_result"].all()
    n_err = 0
    for o in bodies:
        if o["type"] != "tool/result":
            continue
        d = o["data"]
        items = d["message"]["content"] if "message" in d else [d]
        n_err += any(i.get("isError") is True for i in items)
    assert int(tools["is_error"].sum()) == n_err
    assert int(tools["error_code"].notna().sum()) == sum(
        1 for o in bodies if o["type"] == "tool/result" and "error" in o["data"]
    )

    calls = log.calls_df()
    assert int(calls["finished"].sum()) == len(finishes) == 299
    unfinished = calls[~calls["finished"]]
    # streams cut off without a finish (cancel, goal-round-driver): the corpus README counts
    # three, the logs hold two such chunk runs (the third is a call that never streamed)
    assert len(unfinished) == 2
    assert unfinished["finish"].isna().all()
    assert sorted(calls["finish"].dropna().value_counts().to_dict().items()) == sorted(
        pd.Series([o["data"]["chunk"]["reason"]["kind"] for o in finishes])
        .value_counts().to_dict().items()
    )
    assert int(calls["tool_calls"].sum()) == len(tool_calls)
    usage = [
        o["data"]["chunk"]["usage"] for o in bodies
        if o["type"] == "assistant/chunk" and o["data"]["chunk"]["type"] == "usage"
    ]
    assert int(calls["input_tokens"].sum()) == sum(u["inputTokens"] for u in usage)
    assert int(calls["cache_read_tokens"].sum()) == sum(u.get("cacheReadTokens", 0) for u in usage)
    assert int(calls["chunks"].sum()) == int((log.events_df()["type"] == "assistant/chunk").sum())

    turns = log.turns_df()
    ended = turns[turns["end_reason"].notna()]
    assert len(ended) == len(turn_ends) == 137
    assert sorted(ended["end_reason"]) == sorted(o["data"]["reason"]["kind"] for o in turn_ends)
    assert int(turns["error_code"].notna().sum()) == sum(
        1 for o in turn_ends if o["data"]["reason"]["kind"] == "error"
    )
