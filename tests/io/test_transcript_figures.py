"""Every figure and every text of the coding-agent transcripts (Claude Code, Codex CLI,
Inspect), on each real file under tests/data/ (provenance: tests/data/README.md), checked
against an independent reading written here: a few lines of ``json.loads`` over the file that
follow the format's documentation (docs/formats/*.md, "Token figures" in docs/formats.md),
not the readers' code. Per run: model calls, tool calls, every token column of ``calls_df``
(summed; null where the file records no such figure), the text and reasoning of each call,
each tool call's name and arguments (the JSON the model produced, decoded once).

A Hypothesis property then writes arguments and text in every shape these formats use
(Anthropic content blocks, Responses items in both Codex layouts) and reads them back."""

from __future__ import annotations

import collections
import importlib.util
import json
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk

REAL = Path(__file__).resolve().parents[1] / "data"
CLAUDE = sorted((REAL / "claude_code").rglob("*.jsonl"))
CODEX = sorted((REAL / "codex").rglob("*.jsonl"))
INSPECT = sorted([*(REAL / "inspect").rglob("*.eval"), *(REAL / "inspect").rglob("*.json")])
TOKENS = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
          "reasoning_tokens"]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _rel(p: Path) -> str:
    return str(p.relative_to(REAL))


def _add(acc: dict[str, Any], key: str, value: Any) -> None:
    """A per-run sum that stays None while the file records no such figure."""
    if value is not None:
        acc[key] = (acc.get(key) or 0) + value


class Reading:
    """What one file holds, read independently: per run the calls (in file order) with
    their text, reasoning and token figures, and the tool calls with names and arguments."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, dict[str, Any]]] = collections.defaultdict(dict)
        self.tools: dict[str, dict[str, tuple[str, Any]]] = collections.defaultdict(dict)

    def call(self, run: str, ref: str) -> dict[str, Any]:
        return self.calls[run].setdefault(ref, {"text": "", "reasoning": "", "tokens": {}})

    def sums(self, run: str) -> dict[str, Any]:
        out: dict[str, Any] = dict.fromkeys(TOKENS)
        for c in self.calls[run].values():
            for k, v in c["tokens"].items():
                _add(out, k, v)
        return out


# -------------------------------------------------------------------------- Claude Code
def claude_reading(path: Path) -> Reading:
    """Anthropic Messages content blocks, one line per block of an assistant message, each
    line repeating the message's usage (the last line's is final). ``input_tokens`` is
    Anthropic's uncached remainder: every prompt token is it plus the cache reads and
    writes."""
    r = Reading()
    docs = _lines(path)
    session = next((d["sessionId"] for d in docs if d.get("sessionId")), path.stem)
    usage: dict[tuple[str, str], dict[str, Any]] = {}
    for d in docs:  # a sidechain's run: its agentId (older versions: the file's agent id)
        agent = d.get("agentId") or path.stem.removeprefix("agent-")
        run = f"{session}/agent-{agent}" if d.get("isSidechain") else session
        msg = d.get("message") if isinstance(d.get("message"), dict) else {}
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else \
            list(content or [])
        if d.get("type") == "assistant":
            c = r.call(run, msg["id"])
            if isinstance(msg.get("usage"), dict):
                usage[(run, msg["id"])] = msg["usage"]
            for b in blocks:
                if b.get("type") == "text":
                    c["text"] += b["text"]
                elif b.get("type") == "thinking":
                    c["reasoning"] += b["thinking"]
                elif b.get("type") == "tool_use":
                    r.tools[run][b["id"]] = (b["name"], b["input"])
    for (run, mid), u in usage.items():
        cr, cw = u.get("cache_read_input_tokens"), u.get("cache_creation_input_tokens")
        r.calls[run][mid]["tokens"] = {
            "input_tokens": u["input_tokens"] + (cr or 0) + (cw or 0),
            "output_tokens": u.get("output_tokens"), "cache_read_tokens": cr,
            "cache_write_tokens": cw, "reasoning_tokens": None}
    return r


# -------------------------------------------------------------------------------- Codex
_OUTPUT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call",
                 "web_search_call", "image_generation_call"}
_TOOL_ITEMS = _OUTPUT_ITEMS - {"reasoning"}


def codex_reading(path: Path) -> Reading:
    """A rollout: ``{timestamp, type, payload}`` lines, or (mid-2025 layout) a bare session
    header then bare Responses items. A model call is a run of output items (reasoning,
    assistant message, tool calls) that no input item, ``token_count`` or task boundary
    interrupts; its figures are the ``token_count`` that follows (``last_token_usage``;
    ``input_tokens`` already counts ``cached_input_tokens``; a repeated total is the same
    report again)."""
    r = Reading()
    docs = _lines(path)
    legacy = "type" not in docs[0]
    if legacy:
        run = docs[0]["id"]
        items = [d for d in docs[1:] if "record_type" not in d]
        docs = [{"type": "response_item", "payload": d} for d in items]
    else:
        run = next(d["payload"]["id"] for d in docs if d["type"] == "session_meta")
    def is_output(d: dict[str, Any]) -> bool:
        pl = d.get("payload") or {}
        return d["type"] == "response_item" and (pl.get("type") in _OUTPUT_ITEMS or (
            pl.get("type") == "message" and pl.get("role") == "assistant"))

    def is_count(d: dict[str, Any]) -> bool:
        pl = d.get("payload") or {}
        return pl.get("type") == "token_count" and bool((pl.get("info") or {}).get(
            "last_token_usage"))

    # Codex of about September 2025 writes a response's count before its items (after the
    # previous tool output); later versions right after the items
    first_out = next((k for k, d in enumerate(docs) if is_output(d)), len(docs))
    first_count = next((k for k, d in enumerate(docs) if is_count(d)), len(docs))
    leading = first_count < first_out
    call, open_, last_total, n, pending = None, False, None, 0, []
    for d in docs:
        pl = d.get("payload") or {}
        kind = pl.get("type")
        if d["type"] == "event_msg" and kind in ("task_started", "task_complete",
                                                 "turn_aborted"):
            open_ = False
        if d["type"] == "event_msg" and kind == "token_count":
            was_open, open_ = open_, False
            info = pl.get("info") or {}
            last = info.get("last_token_usage")
            if last is None or info.get("total_token_usage") == last_total:
                continue
            last_total = info.get("total_token_usage")
            if leading and not was_open:
                pending.append(last)  # the next call's
                continue
            if call is None:
                continue
            t = r.calls[run][call]["tokens"]
            _add(t, "input_tokens", last.get("input_tokens"))
            _add(t, "output_tokens", last.get("output_tokens"))
            _add(t, "cache_read_tokens", last.get("cached_input_tokens"))
            _add(t, "cache_write_tokens", last.get("cache_write_input_tokens"))
            _add(t, "reasoning_tokens", last.get("reasoning_output_tokens"))
        if d["type"] != "response_item":
            continue
        output = kind in _OUTPUT_ITEMS or (kind == "message" and pl.get("role") == "assistant")
        if not output:
            if kind == "message" or kind.endswith("_output"):
                open_ = False
            continue
        if not open_:
            n += 1
            call, open_ = f"c{n}", True
        c = r.call(run, call)
        for last in pending:
            t = c["tokens"]
            _add(t, "input_tokens", last.get("input_tokens"))
            _add(t, "output_tokens", last.get("output_tokens"))
            _add(t, "cache_read_tokens", last.get("cached_input_tokens"))
            _add(t, "cache_write_tokens", last.get("cache_write_input_tokens"))
            _add(t, "reasoning_tokens", last.get("reasoning_output_tokens"))
        pending = []
        if kind == "message":
            c["text"] += "".join(p["text"] for p in pl["content"] if "text" in p)
        elif kind == "reasoning":
            parts = pl.get("summary") or pl.get("content") or []
            c["reasoning"] += "\n\n".join(p["text"] for p in parts if "text" in p)
        elif kind == "function_call":  # JSON text, decoded once; text that is not JSON
            try:                           # (a redacted sample) stays text
                args = json.loads(pl["arguments"])
            except ValueError:
                args = pl["arguments"]
            r.tools[run][pl["call_id"]] = (pl["name"], args)
        elif kind == "custom_tool_call":
            r.tools[run][pl["call_id"]] = (pl["name"], pl["input"])  # free-form text
        elif kind in _TOOL_ITEMS:
            r.tools[run][pl.get("call_id") or pl.get("id")] = (pl.get("name") or kind,
                                                           pl.get("action", {}))
    return r


# ------------------------------------------------------------------------------ Inspect
def _resolve(v: Any, att: dict[str, str]) -> Any:
    if isinstance(v, str) and v.startswith("attachment://"):
        return att.get(v.removeprefix("attachment://"), v)
    if isinstance(v, dict):
        return {k: _resolve(x, att) for k, x in v.items()}
    if isinstance(v, list):
        return [_resolve(x, att) for x in v]
    return v


def _inspect_log(path: Path) -> tuple[str | None, list[dict[str, Any]]]:
    """(eval id, samples) of a ``.json`` log or a ``.eval`` zip (``header.json`` and
    ``samples/*.json``). Logs of older Inspect versions have no eval id (Inspect's reader
    makes one up on every read)."""
    if path.suffix == ".json":
        doc = json.loads(path.read_text(encoding="utf-8"))
        return doc["eval"].get("eval_id"), doc.get("samples") or []
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        head = json.loads(z.read("header.json")) if "header.json" in names else \
            json.loads(z.read("_journal/start.json"))
        samples = [json.loads(z.read(n)) for n in names if n.startswith("samples/")]
    return head["eval"].get("eval_id"), samples


def inspect_reading(path: Path) -> Reading:
    """One run per sample and epoch; a ``model`` event is one call (``output.completion``
    its text, ``reasoning`` content parts its reasoning, ``output.usage`` its figures:
    Inspect's ``input_tokens`` is the uncached remainder, so the cache reads and writes
    are added, unless ``total_tokens`` shows they are already in it); a ``tool`` event is
    one tool call with its ``function`` and ``arguments``."""
    r = Reading()
    _, samples = _inspect_log(path)
    for s in samples:
        run = f"{s['id']}:{s['epoch']}"  # the run id's tail (the eval id may be made up)
        r.calls[run]  # a run, even with no call (a sample of tool results only)  # noqa: B018
        # older logs keep the events under "transcript"; some samples have messages only
        events = s.get("events") or (s.get("transcript") or {}).get("events") or []
        events = _resolve(events, s.get("attachments") or {})
        if not events:
            for k, m in enumerate(s.get("messages") or []):
                if m.get("role") != "assistant":
                    continue
                c = r.call(run, m.get("id") or f"message{k}")
                content = m.get("content")
                parts = content if isinstance(content, list) else []
                c["text"] = content if isinstance(content, str) else "".join(
                    p.get("text") or "" for p in parts if p.get("type") == "text")
                c["reasoning"] = "".join(p.get("reasoning") or "" for p in parts
                                         if p.get("type") == "reasoning")
                for tc in m.get("tool_calls") or []:
                    r.tools[run][tc["id"]] = (tc["function"], tc.get("arguments") or {})
        for k, ev in enumerate(ev for ev in events if ev.get("event") in ("model", "tool")):
            if ev["event"] == "tool":
                r.tools[run][ev["id"]] = (ev["function"], ev.get("arguments") or {})
                continue
            out = ev.get("output") or {}
            c = r.call(run, ev.get("uuid") or f"k{k}")
            msg = (out.get("choices") or [{}])[0].get("message") or {}
            content = msg.get("content")
            parts = content if isinstance(content, list) else []
            c["text"] = content if isinstance(content, str) else "".join(
                p.get("text") or "" for p in parts if p.get("type") == "text")
            c["reasoning"] = "".join(p.get("reasoning") or "" for p in parts
                                     if p.get("type") == "reasoning" and not p.get("redacted"))
            u = out.get("usage") or {}
            cr, cw = u.get("input_tokens_cache_read"), u.get("input_tokens_cache_write")
            inp = u.get("input_tokens")
            if inp is not None and (cr or cw) and u.get("total_tokens") != inp + u.get(
                    "output_tokens", 0):
                inp += (cr or 0) + (cw or 0)
            c["tokens"] = {"input_tokens": inp, "output_tokens": u.get("output_tokens"),
                           "cache_read_tokens": cr, "cache_write_tokens": cw,
                           "reasoning_tokens": u.get("reasoning_tokens")}
    return r


# ------------------------------------------------------------------------------ checks
def _na(v: Any) -> Any:
    return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v


def _check(log: rk.EventLog, want: Reading, runs: list[str] | None = None,
           run_of: Any = None) -> None:
    """``run_of``: the reading's run id for a log run id (default: the same)."""
    calls, tools = log.calls_df(), log.tools_df()
    if run_of is not None:
        calls["run_id"] = calls.run_id.map(run_of)
        tools["run_id"] = tools.run_id.map(run_of)
    for run in runs if runs is not None else want.calls.keys() | want.tools.keys():
        got = calls[calls.run_id == run]
        exp = list(want.calls[run].values())
        assert len(got) == len(exp), f"{run}: model calls"
        assert int(got.tool_calls.sum()) == len(want.tools[run]), f"{run}: tool calls"
        sums = want.sums(run)
        for col in TOKENS:  # null when the file records no such figure, never 0
            total = got[col].sum(min_count=1)
            assert _na(total) == sums[col], f"{run}: {col}"
            assert [_na(v) for v in got[col]] == [c["tokens"].get(col) for c in exp], \
                f"{run}: {col} per call"
        assert [_na(t) or "" for t in got.text] == [c["text"] for c in exp], f"{run}: text"
        assert [_na(t) or "" for t in got.reasoning] == [c["reasoning"] for c in exp], \
            f"{run}: reasoning"
        tool_rows = tools[tools.run_id == run]
        assert len(tool_rows) == len(want.tools[run])
        got_tools = {row.call_id: (row.tool_name, json.loads(row.arguments))
                     for row in tool_rows.itertuples()}
        assert got_tools == want.tools[run], f"{run}: tool names and arguments"
    ev = log.events_df()
    assert not (ev.text.astype("string") == "None").any()  # no missing value printed


@pytest.mark.parametrize("path", CLAUDE, ids=_rel)
def test_claude_code_figures_and_text_agree_with_an_independent_reading(path: Path) -> None:
    want = claude_reading(path)
    log = rk.read_claude_code(path, owner="me", progress=False)
    assert set(log.run_ids) == set(want.calls) | set(want.tools)
    _check(log, want)


@pytest.mark.parametrize("path", CODEX, ids=_rel)
def test_codex_figures_and_text_agree_with_an_independent_reading(path: Path) -> None:
    want = codex_reading(path)
    log = rk.read_codex(path, owner="me", progress=False)
    assert log.num_runs == 1
    _check(log, want, runs=log.run_ids)


def test_real_samples_cover_the_versions_the_docs_name() -> None:
    versions = {d["version"] for p in CLAUDE for d in _lines(p) if d.get("version")}
    assert {v.split(".")[0] for v in versions} == {"1", "2"} and len(versions) >= 4
    assert len(CLAUDE) >= 6 and len(CODEX) >= 4
    clis = {d["payload"].get("cli_version") for p in CODEX for d in _lines(p)
            if d.get("type") == "session_meta"}
    assert len(clis) >= 3


needs_inspect = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                                   reason="inspect_ai is not installed (extra: inspect)")


@needs_inspect
@pytest.mark.parametrize("path", INSPECT, ids=_rel)
def test_inspect_figures_and_text_agree_with_an_independent_reading(path: Path) -> None:
    want = inspect_reading(path)
    log = rk.read_inspect(path, owner="me", progress=False)
    eval_id = _inspect_log(path)[0]
    assert all(r.startswith(f"{eval_id}:") for r in log.run_ids) or eval_id is None

    def tail(run_id: str) -> str:
        return run_id.split(":", 1)[1]

    assert {tail(r) for r in log.run_ids} == set(want.calls) | set(want.tools)
    _check(log, want, run_of=tail)


@needs_inspect
def test_one_eval_stored_as_eval_and_json_loads_once_naming_both_files() -> None:
    """Inspect's own test folder holds ``log_formats`` as ``.eval`` and ``.json``: the two
    files of one eval differ in what each writer fills in (event uuids, message ids, the
    clock-relative ``working_start``) but hold the same samples."""
    from replaykit.io.inspect import DuplicateLogWarning

    folder = REAL / "inspect" / "inspect_ai"
    with pytest.warns(DuplicateLogWarning) as rec:
        log = rk.read_events(folder, owner="me")
    dup = [str(w.message) for w in rec if issubclass(w.category, DuplicateLogWarning)]
    assert len(dup) == 1 and "log_formats.json" in dup[0] and "log_formats.eval" in dup[0]
    assert not any("@" in r for r in log.run_ids)  # no two copies told apart by file
    files = [p for p in INSPECT if p.name != "log_formats.json"]
    assert log.num_runs == sum(len(_inspect_log(p)[1]) for p in files)
    sources = collections.Counter(Path(s.split(":", 1)[1]).name
                                  for s in log.runs.column("source").to_pylist())
    assert "log_formats.json" not in sources
    assert sources["log_formats.eval"] == len(_inspect_log(folder / "log_formats.eval")[1])


# ------------------------------------------------------------------ the shapes, property
_ARGS = st.one_of(
    st.dictionaries(st.text("abcxyz_", min_size=1, max_size=6),
                    st.one_of(st.integers(-5, 5), st.text(max_size=8), st.booleans(),
                              st.lists(st.integers(0, 3), max_size=2),
                              st.just('{"nested": "json text"}')), max_size=3),
    st.text(max_size=20),  # free-form input: stays a string
)
_TEXT = st.text(min_size=1, max_size=20).filter(lambda s: s.strip() and s != "None")


@st.composite
def _exchange(draw: Any) -> list[dict[str, Any]]:
    """Model calls, each: some reasoning, some text, some tool calls (name, arguments)."""
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        calls.append({"reasoning": draw(st.lists(_TEXT, max_size=2)),
                      "text": draw(st.lists(_TEXT, max_size=2)),
                      "tools": draw(st.lists(st.tuples(st.sampled_from(["Bash", "Read",
                                                                        "apply_patch"]),
                                                       _ARGS), max_size=2))})
    return calls


def _claude_lines(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic content blocks, one line per block, each repeating the message's usage."""
    lines: list[dict[str, Any]] = [{"type": "user", "message": {"role": "user",
                                                                "content": "do it"}}]
    for i, c in enumerate(calls):
        blocks = [{"type": "thinking", "thinking": t, "signature": "s"} for t in c["reasoning"]]
        blocks += [{"type": "text", "text": t} for t in c["text"]]
        blocks += [{"type": "tool_use", "id": f"toolu_{i}_{k}", "name": n, "input": a}
                   for k, (n, a) in enumerate(c["tools"])]
        blocks = blocks or [{"type": "text", "text": "ok"}]
        for k, b in enumerate(blocks):
            lines.append({"type": "assistant", "message": {
                "id": f"msg_{i}", "role": "assistant", "content": [b],
                "usage": {"input_tokens": 3, "cache_read_input_tokens": 100 * i,
                          "cache_creation_input_tokens": 7, "output_tokens": 1 + k}}})
        for k in range(len(c["tools"])):
            lines.append({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i}_{k}",
                 "content": [{"type": "text", "text": f"result {k}"}]}]}})
    for k, d in enumerate(lines):
        d.update(sessionId="s-prop", uuid=f"u{k}", timestamp=f"2025-01-01T00:00:{k:02d}Z")
    return lines


def _codex_items(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses items: reasoning summaries, assistant output_text, function_call (arguments
    as JSON text) for object arguments, custom_tool_call (free-form input) for text."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": "do it"}]}]
    for i, c in enumerate(calls):
        items += [{"type": "reasoning", "id": f"rs_{i}_{k}", "summary": [
            {"type": "summary_text", "text": t}], "encrypted_content": "x"}
            for k, t in enumerate(c["reasoning"])]
        items += [{"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": t}]} for t in c["text"]]
        outs = []
        for k, (name, a) in enumerate(c["tools"]):
            cid = f"call_{i}_{k}"
            if isinstance(a, dict):
                items.append({"type": "function_call", "name": name, "call_id": cid,
                              "arguments": json.dumps(a)})
                outs.append({"type": "function_call_output", "call_id": cid, "output": "ok"})
            else:
                items.append({"type": "custom_tool_call", "name": name, "call_id": cid,
                              "input": a})
                outs.append({"type": "custom_tool_call_output", "call_id": cid,
                             "output": "ok"})
        if not (c["reasoning"] or c["text"] or c["tools"]):
            items.append({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": "ok"}]})
        items += outs or [{"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "go on"}]}]
    return items


def _codex_lines(items: list[dict[str, Any]], legacy: bool) -> list[dict[str, Any]]:
    sid = "0198aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
    if legacy:  # the mid-2025 layout: bare header, bare items, state markers
        lines: list[dict[str, Any]] = [{"id": sid, "timestamp": "2025-07-01T00:00:00Z",
                                        "instructions": None}, {"record_type": "state"}]
        return lines + items
    head = {"timestamp": "2025-11-01T00:00:00Z", "type": "session_meta",
            "payload": {"id": sid, "timestamp": "2025-11-01T00:00:00Z", "cli_version": "0.5"}}
    return [head, *({"timestamp": "2025-11-01T00:00:01Z", "type": "response_item",
                     "payload": it} for it in items)]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=_exchange(), shape=st.sampled_from(["anthropic", "codex", "codex-2025"]))
def test_text_reasoning_and_arguments_read_back_in_every_shape(tmp_path: Path,
                                                               calls: list[dict[str, Any]],
                                                               shape: str) -> None:
    if shape == "anthropic":
        lines = _claude_lines(calls)
        path = tmp_path / "s-prop.jsonl"
    else:
        lines = _codex_lines(_codex_items(calls), legacy=shape == "codex-2025")
        path = tmp_path / "rollout-2025-07-01T00-00-00-0198aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    assert rk.detect_format(path) == ("claude_code" if shape == "anthropic" else "codex")
    log = rk.read_events(path, owner="me")
    want = claude_reading(path) if shape == "anthropic" else codex_reading(path)
    _check(log, want, runs=log.run_ids)
    got = log.calls_df()
    expect_text = ["".join(c["text"]) or ("ok" if not (c["reasoning"] or c["tools"]) else "")
                   for c in calls]
    assert [_na(t) or "" for t in got.text] == expect_text
    assert [_na(t) or "" for t in got.reasoning] == ["".join(c["reasoning"]) for c in calls]
    tools = log.tools_df()
    args = [a for c in calls for _, a in c["tools"]]
    assert [json.loads(a) for a in tools.arguments] == args  # decoded once, strings stay
    assert tools.tool_name.tolist() == [n for c in calls for n, _ in c["tools"]]
    assert tools.has_result.all()
    if shape == "anthropic":
        assert tools.result_text.tolist() == [f"result {k}" for c in calls
                                              for k in range(len(c["tools"]))]
        assert got.input_tokens.tolist() == [3 + 100 * i + 7 for i in range(len(calls))]
        assert got.cache_read_tokens.tolist() == [100 * i for i in range(len(calls))]
        assert got.cache_write_tokens.tolist() == [7] * len(calls)
        assert got.reasoning_tokens.isna().all()
