"""Model-call scripts from toh logs: derivation, sidecars, placeholders (self-written logs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit.errors import ReplayKitError
from replaykit.toh.scripts import (
    DerivationError,
    OverrideError,
    PlaceholderError,
    PlaceholderNoMatchError,
    PlaceholderPatternError,
    PlaceholderUnterminatedError,
    SessionScript,
    TohScriptError,
    UnfinishedCallError,
    load_override,
    model_scripts,
    resolve_placeholders,
    unfinished_calls,
)


# ------------------------------------------------------------------------------ log builders
def header(sid: str = "s-main", created: int = 1000, **extra) -> dict:
    return {"type": "session", "version": 0, "id": sid, "createdAt": created, "cwd": "/w", **extra}


def chunk(turn: int, step: int, c: dict) -> dict:
    return {"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": c}}


def text_call(turn: int, step: int, text: str, finish: str = "stop") -> list[dict]:
    return [
        chunk(turn, step, {"type": "block-start", "index": 0, "blockType": "text"}),
        chunk(turn, step, {"type": "text-delta", "index": 0, "text": text}),
        chunk(turn, step, {"type": "block-end", "index": 0,
                           "block": {"type": "text", "text": text}}),
        chunk(turn, step, {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1}}),
        chunk(turn, step, {"type": "finish", "reason": {"kind": finish}}),
    ]  # fmt: skip


def write_log(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def turn(n: int, body: list[dict]) -> list[dict]:
    return [{"type": "turn/start", "data": {"turn": n}}, *body,
            {"type": "turn/end", "data": {"turn": n, "reason": {"kind": "completed"}}}]  # fmt: skip


def calls_text(script: SessionScript) -> list[str]:
    out = []
    for c in script.calls:
        out.append("".join(ch.get("text", "") for ch in c.get("chunks", [])
                           if ch["type"] == "text-delta"))  # fmt: skip
    return out


# ------------------------------------------------------------------------------- derivation
def test_two_calls_from_chunks_keep_payloads(tmp_path: Path) -> None:
    body = [{"type": "user/message", "data": {"content": [{"type": "text", "text": "hi"}]}},
            *text_call(1, 1, "one", "tool-calls"), *text_call(1, 2, "two")]  # fmt: skip
    log = write_log(tmp_path / "sc" / "session.jsonl", [header(), *turn(1, body)])
    [s] = model_scripts(tmp_path / "sc")
    assert s.session_id == "s-main" and s.primary and s.source == str(log)
    assert len(s) == 2 and s.origins == ("log", "log")
    assert s.calls[0] == {"kind": "chunks", "chunks": [x["data"]["chunk"]
                                                       for x in text_call(1, 1, "one",
                                                                          "tool-calls")]}
    assert calls_text(s) == ["one", "two"]
    # seq of the first chunk: 0 = turn/start, 1 = user/message, 2 = first chunk
    assert s.first_seqs == (2, 7)
    assert s.created_at == 1000
    df = s.calls_df()
    assert df["finish"].tolist() == ["tool-calls", "stop"]
    assert df["n_chunks"].tolist() == [5, 5]
    assert str(df["n_chunks"].dtype) == "Int64"


def test_packed_rows_expand_to_chunks(tmp_path: Path) -> None:
    lines = [header(),
             chunk(1, 1, {"type": "block-start", "index": 0, "blockType": "text"}),
             {"type": "text-chunks", "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 2],
                                              "texts": ["a", "b", "c"]}},
             chunk(1, 1, {"type": "finish", "reason": {"kind": "stop"}})]  # fmt: skip
    [s] = model_scripts(write_log(tmp_path / "session.jsonl", lines))
    assert [c["type"] for c in s.calls[0]["chunks"]] == ["block-start"] + ["text-delta"] * 3 + [
        "finish"]  # fmt: skip
    assert calls_text(s) == ["abc"]
    assert s.first_seqs == (0,)


def test_retry_in_one_step_is_two_calls(tmp_path: Path) -> None:
    lines = [header(), chunk(1, 1, {"type": "finish", "reason": {"kind": "error"}}),
             *text_call(1, 1, "again")]  # fmt: skip
    [s] = model_scripts(write_log(tmp_path / "session.jsonl", lines))
    assert len(s) == 2
    assert s.calls[0]["chunks"] == [{"type": "finish", "reason": {"kind": "error"}}]
    assert s.calls_df()["finish"].tolist() == ["error", "stop"]


def test_unfinished_before_step_change_names_file_and_call(tmp_path: Path) -> None:
    cut = text_call(1, 1, "cut")[:2]  # block-start + text-delta, no finish
    log = write_log(tmp_path / "session.jsonl", [header(), *cut, *text_call(1, 2, "next")])
    with pytest.raises(UnfinishedCallError) as ei:
        model_scripts(log)
    e = ei.value
    assert e.source == str(log) and e.call == "t1.s1.c0"
    assert (e.turn, e.step, e.lines, e.n_chunks) == (1, 1, (2, 3), 2)
    assert str(log) in str(e) and "t1.s1.c0" in str(e) and "replay.override.json" in str(e)
    assert isinstance(e, DerivationError) and isinstance(e, ReplayKitError)


def test_unfinished_at_end_and_unfinished_calls_table(tmp_path: Path) -> None:
    log = write_log(tmp_path / "a" / "session.jsonl",
                    [header(), *text_call(1, 1, "ok"), *text_call(2, 1, "cut")[:3]])
    ok = write_log(tmp_path / "b" / "session.jsonl", [header("s-b"), *text_call(1, 1, "ok")])
    with pytest.raises(UnfinishedCallError, match=r"t2\.s1\.c0"):
        model_scripts(log)
    df = unfinished_calls(tmp_path)
    assert df["source"].tolist() == [str(log)]
    assert df[["call", "turn", "step", "n_chunks", "position"]].values.tolist() == [
        ["t2.s1.c0", 2, 1, 3, 1]]  # fmt: skip
    assert unfinished_calls(ok).empty


def compaction(marked: bool, raw: list | None = None, usage: dict | None = None) -> dict:
    data: dict = {"compactionId": "c1", "summary": [{"type": "text", "text": "S"}]}
    if raw is not None:
        data["rawOutput"] = raw
    if marked:
        data["llmStreamCall"] = True
    if usage is not None:
        data["usage"] = usage
    return {"type": "compaction/summary", "data": data}


def test_marked_compaction_is_a_canonical_call(tmp_path: Path) -> None:
    raw = [{"type": "reasoning", "text": "r"}, {"type": "text", "text": "summary"}]
    usage = {"inputTokens": 9, "outputTokens": 4}
    lines = [header(), *text_call(1, 1, "a"), compaction(True, raw, usage),
             compaction(False, raw), *text_call(2, 1, "b")]  # fmt: skip
    [s] = model_scripts(write_log(tmp_path / "session.jsonl", lines))
    assert s.origins == ("log", "compaction", "log")
    assert s.calls[1]["chunks"] == [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "block-end", "index": 0, "block": raw[0]},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "block-end", "index": 1, "block": raw[1]},
        {"type": "usage", "usage": usage},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    assert s.first_seqs[1] == 5
    # without recorded usage there is no usage chunk
    [s2] = model_scripts(write_log(tmp_path / "n" / "session.jsonl",
                                   [header(), compaction(True, raw[1:])]))  # fmt: skip
    assert [c["type"] for c in s2.calls[0]["chunks"]] == ["block-start", "block-end", "finish"]


def test_compaction_closes_an_open_call_and_needs_raw_output(tmp_path: Path) -> None:
    lines = [header(), *text_call(1, 1, "a")[:2], compaction(False, []), *text_call(1, 1, "b")]
    with pytest.raises(UnfinishedCallError, match=r"t1\.s1\.c0"):
        model_scripts(write_log(tmp_path / "a" / "session.jsonl", lines))
    bad = write_log(tmp_path / "b" / "session.jsonl", [header(), compaction(True, None)])
    with pytest.raises(DerivationError, match="rawOutput") as ei:
        model_scripts(bad)
    assert not isinstance(ei.value, UnfinishedCallError)


def test_fork_seed_is_excluded_and_children_ordered(tmp_path: Path) -> None:
    sc = tmp_path / "sc"
    write_log(sc / "session.jsonl", [header("parent", 5000), *text_call(1, 1, "p")])
    # fork child: its first 5 events (one copied call) are the seed
    write_log(sc / "session.1.jsonl", [header("kid-b", 6000, parentSession="parent",
                                              seedLength=5),
                                       *text_call(1, 1, "p"), *text_call(1, 2, "own")])
    write_log(sc / "session.2.jsonl", [header("kid-a", 5500, parentSession="parent"),
                                       *text_call(1, 1, "early")])
    write_log(sc / "session.3.jsonl", [header("kid-0", 6000, parentSession="parent"),
                                       *text_call(1, 1, "tie")])  # fmt: skip
    scripts = model_scripts(sc)
    assert [s.session_id for s in scripts] == ["parent", "kid-a", "kid-0", "kid-b"]
    assert [s.primary for s in scripts] == [True, False, False, False]
    kid = scripts[-1]
    assert kid.seed_length == 5 and calls_text(kid) == ["own"] and kid.first_seqs == (5,)


def test_primary_first_even_when_created_later(tmp_path: Path) -> None:
    sc = tmp_path / "sc"
    write_log(sc / "session.jsonl", [header("parent", 9000), *text_call(1, 1, "p")])
    write_log(sc / "session.1.jsonl", [header("kid", 1, parentSession="parent"),
                                       *text_call(1, 1, "k")])  # fmt: skip
    assert [s.session_id for s in model_scripts(sc)] == ["parent", "kid"]


def test_folder_without_primary_and_expected_log(tmp_path: Path) -> None:
    a = tmp_path / "a"
    write_log(a / "session.1.jsonl", [header("k2", 2, parentSession="x"), *text_call(1, 1, "2")])
    write_log(a / "session.2.jsonl", [header("k1", 1, parentSession="x"), *text_call(1, 1, "1")])
    assert [s.session_id for s in model_scripts(a)] == ["k1", "k2"]
    b = write_log(tmp_path / "b" / "session.expected.jsonl", [header("e"), *text_call(1, 1, "e")])
    [s] = model_scripts(b.parent)
    assert s.primary and s.source == str(b)
    with pytest.raises(FileNotFoundError, match="no session log"):
        (tmp_path / "c").mkdir()
        model_scripts(tmp_path / "c")
    with pytest.raises(FileNotFoundError):
        model_scripts(tmp_path / "missing")


def test_header_only_log_has_no_calls(tmp_path: Path) -> None:
    [s] = model_scripts(write_log(tmp_path / "session.jsonl", [header("h", 7)]))
    assert (s.session_id, len(s), s.created_at) == ("h", 0, 7)


# ----------------------------------------------------------------------------------- sidecar
def write_override(folder: Path, doc: object) -> Path:
    p = folder / "replay.override.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


HANG = {"kind": "hang", "readyFile": ".ready"}
THROW = {"kind": "throw", "chunks": [], "message": "HTTP 401", "code": "AUTH"}


def scenario(tmp_path: Path, *, cut: bool = False) -> Path:
    sc = tmp_path / "sc"
    body = [*text_call(1, 1, "a"), *text_call(1, 2, "b")]
    if cut:
        body += text_call(2, 1, "c")[:2]
    write_log(sc / "session.jsonl", [header("parent", 10), *body])
    write_log(sc / "session.1.jsonl", [header("kid", 20, parentSession="parent"),
                                       *text_call(1, 1, "k")])  # fmt: skip
    return sc


def test_bare_array_replaces_primary_only_without_deriving_it(tmp_path: Path) -> None:
    sc = scenario(tmp_path, cut=True)  # the primary log alone would not derive
    ov = write_override(sc, [HANG, THROW])
    parent, kid = model_scripts(sc)
    assert parent.calls == (HANG, THROW) and parent.origins == ("override", "override")
    assert parent.override == str(ov) and parent.session_id == "parent"
    assert kid.override is None and calls_text(kid) == ["k"]
    with pytest.raises(UnfinishedCallError):
        model_scripts(sc, override=False)


def test_patches_replace_and_append(tmp_path: Path) -> None:
    sc = scenario(tmp_path)
    write_override(sc, {"patches": [{"at": 2, "entry": HANG}, {"at": 0, "entry": THROW}]})
    parent, kid = model_scripts(sc)
    assert parent.derived_calls == 2 and len(parent) == 3
    assert parent.calls[0] == THROW and parent.calls[2] == HANG
    assert calls_text(parent)[1] == "b"
    assert parent.origins == ("override", "log", "override")
    assert parent.first_seqs[0] is None and parent.first_seqs[1] == 5
    assert len(kid) == 1
    # explicit sidecar path; override=False ignores the folder's sidecar
    other = write_override(tmp_path, [HANG])
    assert model_scripts(sc, override=other)[0].calls == (HANG,)
    assert len(model_scripts(sc, override=False)[0]) == 2
    # a file path picks up the sidecar beside it
    assert model_scripts(sc / "session.jsonl")[0].calls[0] == THROW


def test_patches_still_need_a_derivable_log(tmp_path: Path) -> None:
    sc = scenario(tmp_path, cut=True)
    write_override(sc, {"patches": [{"at": 2, "entry": HANG}]})
    with pytest.raises(UnfinishedCallError):
        model_scripts(sc)


@pytest.mark.parametrize(
    ("patches", "message"),
    [
        ([{"at": 3, "entry": HANG}], r"index 3 is out of range \(the derived script has 2"),
        ([{"at": 1, "entry": HANG}, {"at": 1, "entry": THROW}], "repeats index 1"),
        ([{"at": 2, "entry": HANG}, {"at": 3, "entry": HANG}], "index 3 is out of range"),
    ],
)
def test_patch_index_rules(tmp_path: Path, patches: list, message: str) -> None:
    sc = scenario(tmp_path)
    ov = write_override(sc, {"patches": patches})
    with pytest.raises(OverrideError, match=message) as ei:
        model_scripts(sc)
    assert ei.value.source == str(ov) and str(ov) in str(ei.value)


@pytest.mark.parametrize(
    ("doc", "location", "detail"),
    [
        ({"patch": []}, "document", "entry array or"),
        ({"patches": [], "x": 1}, "document", "entry array or"),
        ("text", "document", "entry array or"),
        ([{"kind": "chunkz", "chunks": []}], "entry 0", "unknown kind"),
        ([7], "entry 0", "must be an object"),
        ([{"kind": "chunks", "chunks": [], "extra": 1}], "entry 0", "chunks-entry fields"),
        ([{"kind": "chunks", "chunks": {}}], "entry 0", "chunks must be an array"),
        ([{"kind": "chunks", "chunks": [{"type": "text"}]}], "entry 0.chunks[0]",
         "known StreamChunk type"),
        ([{"kind": "chunks", "chunks": ["finish"]}], "entry 0.chunks[0]", "known StreamChunk"),
        ([HANG, {"kind": "throw", "chunks": [], "message": "", "code": "X"}], "entry 1",
         "message must be a non-empty string"),
        ([{"kind": "throw", "chunks": [], "message": "m"}], "entry 0", "throw-entry fields"),
        ([{"kind": "throw", "chunks": [], "message": "m", "code": 3}], "entry 0",
         "code must be"),
        ([{"kind": "hang", "readyFile": ""}], "entry 0", "readyFile must be"),
        ([{"kind": "hang", "delay": 1}], "entry 0", "hang-entry fields"),
        ({"patches": [{"at": -1, "entry": HANG}]}, "patch 0", "non-negative"),
        ({"patches": [{"at": True, "entry": HANG}]}, "patch 0", "non-negative"),
        ({"patches": [{"at": 1.5, "entry": HANG}]}, "patch 0", "non-negative"),
        ({"patches": [{"at": 0}]}, "patch 0", "exactly at and entry"),
        ({"patches": [{"at": 0, "entry": {"kind": "x"}}]}, "patch 0.entry", "unknown kind"),
    ],
)  # fmt: skip
def test_override_validation(tmp_path: Path, doc: object, location: str, detail: str) -> None:
    p = write_override(tmp_path, doc)
    with pytest.raises(OverrideError) as ei:
        load_override(p)
    assert ei.value.location == location
    assert detail in ei.value.detail
    assert str(p) in str(ei.value)


def test_override_valid_shapes_and_bad_json(tmp_path: Path) -> None:
    ok = [{"kind": "chunks", "chunks": [{"type": t} for t in (
        "block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage",
        "finish")]}, THROW, HANG, {"kind": "hang"}]  # fmt: skip
    assert load_override(write_override(tmp_path, ok)) == ok
    doc = {"patches": [{"at": 2.0, "entry": HANG}]}
    assert load_override(write_override(tmp_path, doc)) == {"patches": [{"at": 2, "entry": HANG}]}
    p = tmp_path / "replay.override.json"
    p.write_text("[{", encoding="utf-8")
    with pytest.raises(OverrideError, match="not valid JSON"):
        load_override(p)


def test_patches_without_primary_rejected(tmp_path: Path) -> None:
    sc = tmp_path / "sc"
    write_log(sc / "session.1.jsonl", [header("k", 1, parentSession="p"), *text_call(1, 1, "k")])
    write_override(sc, {"patches": [{"at": 0, "entry": HANG}]})
    with pytest.raises(OverrideError, match="no primary|has none"):
        model_scripts(sc)
    write_override(sc, [HANG])
    scripts = model_scripts(sc)
    assert scripts[0].primary and scripts[0].session_id is None and scripts[0].calls == (HANG,)
    assert calls_text(scripts[1]) == ["k"]


# ------------------------------------------------------------------------------ placeholders
MSGS = [
    {"role": "system", "content": "ids: goal-aaaa-1111"},
    {"role": "user", "content": [{"type": "text", "text": "now goal-bbbb-2222 and x"}],
     "meta": {"n": 3, "tags": ["goal-cccc-3333"]}},
]  # fmt: skip


def test_last_match_wins_and_first_group() -> None:
    entry = {"kind": "chunks", "chunks": [{"type": "tool-call-delta", "index": 0,
             "argumentsDelta": '{"goal_id":"{{fromRequest:goal-[0-9a-f-]+}}"}'}]}  # fmt: skip
    out = resolve_placeholders(entry, MSGS)
    assert out["chunks"][0]["argumentsDelta"] == '{"goal_id":"goal-cccc-3333"}'
    assert entry["chunks"][0]["argumentsDelta"].startswith('{"goal_id":"{{')  # not mutated
    assert resolve_placeholders("{{fromRequest:goal-([a-z]+)-}}", MSGS) == "cccc"
    # a group that did not take part falls back to the whole match
    assert resolve_placeholders("{{fromRequest:goal-(z)?cccc}}", MSGS) == "goal-cccc"


def test_brace_quantifier_and_several_placeholders() -> None:
    s = "a={{fromRequest:goal-[a-z]{4}}} b={{fromRequest:([0-9]{4})}}!"
    assert resolve_placeholders(s, MSGS) == "a=goal-cccc b=3333!"
    assert resolve_placeholders(["x", {"k": s}, 5, None], MSGS) == [
        "x", {"k": "a=goal-cccc b=3333!"}, 5, None]  # fmt: skip


def test_corpus_is_string_leaves_joined_by_newline() -> None:
    msgs = [{"a": "left", "b": 1}, ["right"]]
    assert resolve_placeholders("{{fromRequest:t\\nr}}", msgs) == "t\nr"
    with pytest.raises(PlaceholderNoMatchError):
        resolve_placeholders("{{fromRequest:1}}", msgs)  # numbers are not leaves


def test_no_placeholder_returns_same_object() -> None:
    entry = {"kind": "chunks", "chunks": [{"type": "text-delta", "text": "{{cwd}} {{x}}"}]}
    assert resolve_placeholders(entry, MSGS) is entry


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("{{fromRequest:goal-(}}", PlaceholderPatternError),
        ("{{fromRequest:zzz-[0-9]+}}", PlaceholderNoMatchError),
        ("x {{fromRequest:goal-[0-9]+", PlaceholderUnterminatedError),
        ("x {{fromRequest:goal-[0-9]+}", PlaceholderUnterminatedError),
    ],
)
def test_three_distinct_errors(text: str, cls: type) -> None:
    with pytest.raises(PlaceholderError) as ei:
        resolve_placeholders({"chunks": [{"text": text}]}, MSGS)
    assert type(ei.value) is cls
    assert isinstance(ei.value, TohScriptError) and isinstance(ei.value, ReplayKitError)
    assert ei.value.text == text
    others = {PlaceholderPatternError, PlaceholderNoMatchError,
              PlaceholderUnterminatedError} - {cls}  # fmt: skip
    assert not any(isinstance(ei.value, o) for o in others)


_SAFE = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="{}"), max_size=30)


@settings(max_examples=60, deadline=None)
@given(before=_SAFE, token=st.text(alphabet=st.characters(codec="utf-8"), min_size=1,
                                   max_size=12).map(lambda t: t + "}"), after=_SAFE,
       noise=st.lists(_SAFE, max_size=4))  # fmt: skip
def test_property_escaped_token_resolves_to_itself(before: str, token: str, after: str,
                                                   noise: list[str]) -> None:  # fmt: skip
    # '}' goes in a class so the pattern never holds a run of closing braces
    pattern = "".join("[}]" if c == "}" else re.escape(c) for c in token)
    msgs = [*noise, {"t": f"x{token}y"}]
    s = f"{before}{{{{fromRequest:{pattern}}}}}{after}"
    assert resolve_placeholders(s, msgs) == before + token + after
    assert resolve_placeholders(before + after, msgs) == before + after
