"""Model-call scripts from recorded toh session logs (exposed as ``rk.toh``).

A toh scenario records one session log per agent (the primary ``session.jsonl`` plus one
``session.N.jsonl`` per subagent child). Each log can be turned into the *script* of model calls
that agent made: the ``assistant/chunk`` stream of every call, in order, so that a replay can
serve the recorded output call by call without a model. A ``replay.override.json`` sidecar
next to the primary log replaces or patches that script for calls the log cannot express
(a stream that threw before any chunk, a cancelled or hanging stream, an injected retry).

Rules (details and examples in ``docs/toh_scripts.md``):

* a call is a run of ``assistant/chunk`` events of one ``(turn, step)`` up to and including its
  ``finish`` chunk; a change of ``(turn, step)`` or a ``compaction/summary`` also ends the run,
  and a run that ends without ``finish`` cannot be replayed (:class:`UnfinishedCallError`);
* a ``compaction/summary`` with ``llmStreamCall: true`` is a call of its own at its position,
  rebuilt from ``rawOutput`` as a successful stream (``block-start``/``block-end`` per block,
  the recorded ``usage`` if any, ``finish`` ``stop``);
* events are walked in file order (not ``seq`` order), as the reference does;
* a fork child's seed (its first ``seedLength`` events, copied from the parent) is skipped --
  for children only: a primary log is derived whole, ``seedLength`` or not;
* scripts are ordered primary first, then children by header ``createdAt`` (ties: session id);
* the sidecar applies to the primary session only: a bare array replaces its script,
  ``{"patches": [{"at", "entry"}]}`` replaces the given 0-based calls (``at == len`` appends).

Grouping chunks into calls is done column-wise over the loaded table; only the chunk payloads
that end up in a script are decoded (one JSON parse for all of them).
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._base.json import loads
from ..errors import ReplayKitError, refuse_special_file
from ..io.toh import OrphanRunWarning, read_toh

__all__ = [
    "CHUNK_TYPES",
    "DerivationError",
    "OverrideError",
    "PlaceholderError",
    "PlaceholderNoMatchError",
    "PlaceholderPatternError",
    "PlaceholderUnterminatedError",
    "SessionScript",
    "TohScriptError",
    "UnfinishedCallError",
    "load_override",
    "model_scripts",
    "resolve_placeholders",
    "unfinished_calls",
]

#: StreamChunk ``type`` values a script entry may hold.
CHUNK_TYPES = frozenset(
    {"block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage",
     "finish"}
)  # fmt: skip
_OVERRIDE_NAME = "replay.override.json"
_PRIMARY_NAMES = ("session.jsonl", "session.expected.jsonl")
_CHILD_RE = re.compile(r"^session\.(\d+)\.jsonl$")
_OPEN = "{{fromRequest:"
_CLOSE = "}}"
_MAX_SAFE_INT = 2**53 - 1
# internal only: read_toh needs a tenant, scripts carry none (it never leaves this module)
_TENANT = "toh-scripts"
_NULL_KEY = -(2**40)


# --------------------------------------------------------------------------------- errors
class TohScriptError(ReplayKitError):
    """Root of the errors raised while building or resolving toh model-call scripts."""


class DerivationError(TohScriptError):
    """A recorded log cannot be turned into a model-call script.

    Attributes:
        source: the log file.
    """

    def __init__(self, message: str, *, source: str) -> None:
        self.source = source
        super().__init__(f"{source}: {message}")


class UnfinishedCallError(DerivationError):
    """A derived model call ends without a ``finish`` chunk (a stream that threw or was cut).

    Attributes:
        source: the log file.
        call: the call's id ``t{turn}.s{step}.c{k}`` (the loader's ``ref_id``).
        turn, step: the call's turn and step (None when the chunks had none).
        lines: (first, last) 1-based source lines of the call's chunks.
        n_chunks: how many chunks the call has.
    """

    def __init__(self, *, source: str, call: str | None, turn: int | None, step: int | None,
                 lines: tuple[int, int], n_chunks: int) -> None:  # fmt: skip
        self.call = call
        self.turn = turn
        self.step = step
        self.lines = lines
        self.n_chunks = n_chunks
        super().__init__(
            f"model call {call} (turn {turn}, step {step}, lines {lines[0]}-{lines[1]}, "
            f"{n_chunks} chunk(s)) ends without a finish chunk: the recorded stream threw or "
            "was cancelled, which a log alone cannot replay. Give the scenario a "
            f"{_OVERRIDE_NAME} sidecar that replaces the script or patches this call.",
            source=source,
        )


class OverrideError(TohScriptError):
    """A ``replay.override.json`` sidecar is invalid or does not fit the derived script.

    Attributes:
        source: the sidecar file.
        location: where in the document (``document``, ``entry 2``, ``patch 0.entry.chunks[3]``).
        detail: what is wrong.
    """

    def __init__(self, *, source: str, location: str, detail: str) -> None:
        self.source = source
        self.location = location
        self.detail = detail
        super().__init__(
            f"invalid override {source}: {location} {detail}. Fix the sidecar (a bare array of "
            'entries, or {"patches": [{"at": <call index>, "entry": <entry>}]}).'
        )


class PlaceholderError(TohScriptError):
    """A ``{{fromRequest:<regex>}}`` placeholder could not be resolved.

    Attributes:
        pattern: the placeholder's pattern (None when unterminated).
        text: the script string holding the placeholder.
    """

    def __init__(self, message: str, *, pattern: str | None, text: str) -> None:
        self.pattern = pattern
        self.text = text
        super().__init__(message)


class PlaceholderPatternError(PlaceholderError):
    """The placeholder's pattern is not a valid regular expression."""


class PlaceholderNoMatchError(PlaceholderError):
    """The placeholder's pattern matches nothing in the request messages."""


class PlaceholderUnterminatedError(PlaceholderError):
    """A ``{{fromRequest:`` opens a placeholder that no ``}}`` closes."""


# ------------------------------------------------------------------------------ the script
@dataclass(frozen=True)
class SessionScript:
    """The model-call script of one recorded session.

    Attributes:
        session_id: the header ``id`` (None for a sidecar-only primary without a log).
        source: the log file (None for a sidecar-only primary).
        created_at: the header ``createdAt`` (epoch ms; None when absent).
        primary: True for the scenario's primary (parent) session.
        calls: one entry per model call, in call order. Each entry is a JSON-shaped dict like
            the reference plugin's: ``{"kind": "chunks", "chunks": [<StreamChunk>, ...]}``,
            and from a sidecar also ``{"kind": "throw", "chunks", "message", "code"}`` or
            ``{"kind": "hang"[, "readyFile"]}``.
        origins: per call, where it came from: ``"log"`` (assistant/chunk events),
            ``"compaction"`` (a marked ``compaction/summary``) or ``"override"`` (the sidecar).
        first_seqs: per call, the ``seq`` of its first event in the log (None for sidecar
            calls).
        override: the sidecar file applied to this script, if any.
        seed_length: events skipped at the start of a fork child (0 otherwise).
    """

    session_id: str | None
    source: str | None
    created_at: float | None
    primary: bool
    calls: tuple[dict[str, Any], ...]
    origins: tuple[str, ...]
    first_seqs: tuple[int | None, ...]
    override: str | None = None
    seed_length: int = 0
    derived_calls: int | None = field(default=None)

    def __len__(self) -> int:
        return len(self.calls)

    def calls_df(self) -> pd.DataFrame:
        """One row per model call of this script: index, kind, origin, first seq, chunks, finish.

        Example:
            >>> s = SessionScript("s1", None, 0, True, ({"kind": "hang"},), ("override",),
            ...                   (None,))
            >>> s.calls_df()[["index", "kind", "origin"]].values.tolist()
            [[0, 'hang', 'override']]
        """
        finishes = []
        for c in self.calls:
            chunks = c.get("chunks") or []
            last = chunks[-1] if chunks else None
            reason = last.get("reason") if isinstance(last, dict) and last.get(
                "type") == "finish" else None  # fmt: skip
            finishes.append(reason.get("kind") if isinstance(reason, dict) else reason)
        df = pd.DataFrame({
            "index": pd.array(range(len(self.calls)), dtype="Int64"),
            "kind": pd.array([c["kind"] for c in self.calls], dtype="string"),
            "origin": pd.array(list(self.origins), dtype="string"),
            "first_seq": pd.array(list(self.first_seqs), dtype="Int64"),
            "n_chunks": pd.array([len(c.get("chunks") or []) for c in self.calls],
                                 dtype="Int64"),  # fmt: skip
            "finish": pd.array(finishes, dtype="string"),
        })
        df.insert(0, "session_id", pd.array([self.session_id] * len(df), dtype="string"))
        return df


# ------------------------------------------------------------------------ derivation (columnar)
@dataclass
class _Derived:
    """Per log: calls (entries, origins, first seqs) and unfinished call descriptions."""

    source: str
    session_id: str
    created_at: float | None
    seed_length: int
    calls: list[dict[str, Any]] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    first_seqs: list[int | None] = field(default_factory=list)
    unfinished: list[dict[str, Any]] = field(default_factory=list)
    bad_compaction: list[int] = field(default_factory=list)  # seqs


def _derive_files(paths: Sequence[Path], seeded: Sequence[Path] | None = None
                  ) -> dict[str, _Derived]:
    """Derive the call scripts of every log in ``paths`` (keyed by ``str(path)``).

    Events are walked in file order (line, then member of a packed row), as the reference
    walks the parsed lines, whatever their ``seq`` says. The fork seed (``seq < seedLength``)
    is skipped only for the logs in ``seeded`` (default: every log whose header names a
    ``parentSession``, i.e. a child).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrphanRunWarning)
        log = read_toh([str(p) for p in paths], owner=_TENANT, progress=False)
    out: dict[str, _Derived] = {}
    runs = log.runs
    # header facts per run id (runs has one row per loaded file)
    run_ids = runs.column("run_id").to_pylist()
    attrs = [loads(a) if a else {} for a in runs.column("attrs").to_pylist()]
    created = pc.cast(runs.column("created_at"), pa.int64()).to_pylist()  # us
    header_of = {
        r: (a, None if c is None else c / 1000.0) for r, a, c in zip(run_ids, attrs, created,
                                                                     strict=True)
    }  # fmt: skip

    if seeded is None:
        seeded_runs = [r for r, a in zip(run_ids, attrs, strict=True)
                       if a.get("parentSession") is not None]
    else:
        wanted = {f"toh:{p}" for p in seeded}
        seeded_runs = [r for r, src in zip(run_ids, runs.column("source").to_pylist(),
                                           strict=True) if src in wanted]
    t = log.table
    src_all = pc.cast(t.column("source"), pa.string())
    # file order within each file: (source, line, seq) -- seq only orders a packed row's members
    order = pc.sort_indices(
        pa.table({"s": src_all, "l": t.column("source_line"), "q": t.column("seq")}),
        sort_keys=[("s", "ascending"), ("l", "ascending"), ("q", "ascending")])
    t = t.take(order)
    typ = pc.cast(t.column("type"), pa.string())
    skip_seed = pc.and_(t.column("inherited"),
                        pc.is_in(pc.cast(t.column("run_id"), pa.string()),
                                 value_set=pa.array(seeded_runs, pa.string())))
    keep = pc.and_(
        pc.or_(pc.equal(typ, "assistant/chunk"), pc.equal(typ, "compaction/summary")),
        pc.invert(skip_seed),
    )
    sel = t.filter(keep)
    n = sel.num_rows
    src = pc.cast(sel.column("source"), pa.string()).to_numpy(zero_copy_only=False)
    run = pc.cast(sel.column("run_id"), pa.string()).to_numpy(zero_copy_only=False)
    s_typ = pc.cast(sel.column("type"), pa.string())
    is_comp = np.asarray(pc.equal(s_typ, "compaction/summary"))
    ctype = pc.cast(sel.column("chunk_type"), pa.string())
    is_fin = np.asarray(pc.fill_null(pc.equal(ctype, "finish"), False)) & ~is_comp
    turn = np.asarray(pc.fill_null(pc.cast(sel.column("turn"), pa.int64()), _NULL_KEY))
    step = np.asarray(pc.fill_null(pc.cast(sel.column("step"), pa.int64()), _NULL_KEY))
    seq = sel.column("seq").to_numpy()
    line = sel.column("source_line").to_numpy()

    # a new group starts at: a new file, a compaction row, the row after a compaction or a
    # finish, or a (turn, step) change
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = ((src[1:] != src[:-1]) | is_comp[1:] | is_comp[:-1] | is_fin[:-1]
                   | (turn[1:] != turn[:-1]) | (step[1:] != step[:-1]))  # fmt: skip
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n) - 1 if n else np.zeros(0, np.int64)
    g_comp = is_comp[starts]
    g_finished = is_fin[ends]

    # decode payloads only where needed: chunks of finished groups and compaction rows
    row_grp = np.cumsum(new) - 1 if n else np.zeros(0, np.int64)
    need = (g_finished | g_comp)[row_grp] if n else np.zeros(0, bool)
    need_idx = np.flatnonzero(need)
    payloads = sel.column("payload").take(pa.array(need_idx, pa.int64())).to_pylist()
    decoded = loads("[" + ",".join(payloads) + "]") if payloads else []
    pos_of = np.full(n, -1, np.int64)
    pos_of[need_idx] = np.arange(len(need_idx))
    ref = sel.column("ref_id").to_pylist() if n else []

    src_runs = dict(zip(src.tolist(), run.tolist(), strict=True)) if n else {}
    # files with no chunk/compaction rows still need their header facts
    all_src = pc.cast(log.table.column("source"), pa.string())
    all_run = pc.cast(log.table.column("run_id"), pa.string())
    pairs = pa.table({"s": all_src, "r": all_run}).group_by(["s", "r"]).aggregate([]).to_pylist()
    for pr in pairs:
        src_runs.setdefault(pr["s"], pr["r"])
    for s_name, r_id in src_runs.items():
        a, c = header_of.get(r_id, ({}, None))
        path = s_name[len("toh:"):] if s_name.startswith("toh:") else s_name
        sl = a.get("seedLength") if r_id in seeded_runs else None
        out[path] = _Derived(source=path, session_id=str(a.get("id", r_id)), created_at=c,
                             seed_length=sl if type(sl) is int else 0)  # fmt: skip
    # a header-only log has no events at all: take its facts from runs via its run id
    for p in paths:
        if str(p) not in out:
            out[str(p)] = _header_only(p)
            if seeded is not None and p not in set(seeded):
                out[str(p)].seed_length = 0

    g_src = src[starts] if n else np.zeros(0, object)
    for g, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        path = str(g_src[g])
        path = path[len("toh:"):] if path.startswith("toh:") else path
        d = out[path]
        if g_comp[g]:
            data = decoded[pos_of[a]].get("data")
            data = data if isinstance(data, dict) else {}
            if data.get("llmStreamCall") is not True:
                continue
            raw = data.get("rawOutput")
            if not isinstance(raw, list):
                d.bad_compaction.append(int(seq[a]))
                continue
            chunks: list[dict[str, Any]] = []
            for i, block in enumerate(raw):
                btype = block.get("type") if isinstance(block, dict) else None
                chunks.append({"type": "block-start", "index": i, "blockType": btype})
                chunks.append({"type": "block-end", "index": i, "block": block})
            if data.get("usage") is not None:
                chunks.append({"type": "usage", "usage": data["usage"]})
            chunks.append({"type": "finish", "reason": {"kind": "stop"}})
            d.calls.append({"kind": "chunks", "chunks": chunks})
            d.origins.append("compaction")
            d.first_seqs.append(int(seq[a]))
        elif g_finished[g]:
            chunks = [decoded[i]["data"]["chunk"] for i in pos_of[a:b + 1].tolist()]
            d.calls.append({"kind": "chunks", "chunks": chunks})
            d.origins.append("log")
            d.first_seqs.append(int(seq[a]))
        else:
            d.unfinished.append({
                "call": ref[a],
                "turn": None if turn[a] == _NULL_KEY else int(turn[a]),
                "step": None if step[a] == _NULL_KEY else int(step[a]),
                "lines": (int(line[a]), int(line[b])),
                "n_chunks": int(b - a + 1),
                "first_seq": int(seq[a]),
                "position": len(d.calls),
            })
    return out


def _header_only(p: Path) -> _Derived:
    with open(p, "rb") as fh:
        first = b""
        for raw in fh:
            if raw.strip():
                first = raw
                break
    h = loads(first) if first else {}
    sl = h.get("seedLength")
    ca = h.get("createdAt")
    return _Derived(source=str(p), session_id=str(h.get("id")), created_at=ca,
                    seed_length=sl if type(sl) is int else 0)  # fmt: skip


def _raise_if_bad(d: _Derived) -> None:
    if d.bad_compaction:
        raise DerivationError(
            f"the compaction/summary at seq {d.bad_compaction[0]} is marked llmStreamCall but "
            "has no rawOutput array, so its stream cannot be rebuilt. Re-record the scenario "
            f"or give it a {_OVERRIDE_NAME} sidecar.",
            source=d.source,
        )
    if d.unfinished:
        u = d.unfinished[0]
        raise UnfinishedCallError(source=d.source, call=u["call"], turn=u["turn"],
                                  step=u["step"], lines=u["lines"], n_chunks=u["n_chunks"])


# ---------------------------------------------------------------------------- sidecar (override)
def _is_int(v: Any) -> bool:
    if type(v) is int:
        return 0 <= v <= _MAX_SAFE_INT
    return type(v) is float and v.is_integer() and 0 <= v <= _MAX_SAFE_INT


def _read_chunks(value: Any, src: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise OverrideError(source=src, location=where, detail="chunks must be an array")
    for i, chunk in enumerate(value):
        if not isinstance(chunk, dict) or chunk.get("type") not in CHUNK_TYPES:
            raise OverrideError(source=src, location=f"{where}.chunks[{i}]",
                                detail="must have a known StreamChunk type (one of "
                                + ", ".join(sorted(CHUNK_TYPES)) + ")")  # fmt: skip
    return value


def _read_entry(value: Any, src: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise OverrideError(source=src, location=where, detail="must be an object")
    kind = value.get("kind")
    keys = set(value)
    if kind == "chunks":
        if keys != {"kind", "chunks"}:
            raise OverrideError(source=src, location=where,
                                detail="has invalid chunks-entry fields (exactly kind, chunks)")
        return {"kind": "chunks", "chunks": _read_chunks(value["chunks"], src, where)}
    if kind == "throw":
        if keys != {"kind", "chunks", "message", "code"}:
            raise OverrideError(source=src, location=where, detail="has invalid throw-entry "
                                "fields (exactly kind, chunks, message, code)")  # fmt: skip
        for name in ("message", "code"):
            if not isinstance(value[name], str) or not value[name]:
                raise OverrideError(source=src, location=where,
                                    detail=f"{name} must be a non-empty string")
        return {"kind": "throw", "chunks": _read_chunks(value["chunks"], src, where),
                "message": value["message"], "code": value["code"]}  # fmt: skip
    if kind == "hang":
        allowed = {"kind", "readyFile"} if "readyFile" in value else {"kind"}
        if keys != allowed:
            raise OverrideError(source=src, location=where,
                                detail="has invalid hang-entry fields (kind, optional readyFile)")
        if "readyFile" in value:
            rf = value["readyFile"]
            if not isinstance(rf, str) or not rf:
                raise OverrideError(source=src, location=where,
                                    detail="readyFile must be a non-empty string")
            return {"kind": "hang", "readyFile": rf}
        return {"kind": "hang"}
    raise OverrideError(source=src, location=where, detail=f"has unknown kind {json.dumps(kind)}"
                        " (expected chunks, throw or hang)")  # fmt: skip


def load_override(path: str | Path) -> list[dict[str, Any]] | dict[str, list[dict[str, Any]]]:
    """Read and validate a ``replay.override.json`` sidecar.

    Returns the bare entry list (a whole-script replacement) or ``{"patches": [{"at",
    "entry"}, ...]}``, every entry checked: kind ``chunks`` (exactly ``kind``, ``chunks``),
    ``throw`` (exactly ``kind``, ``chunks``, non-empty ``message`` and ``code``) or ``hang``
    (``kind``, optional non-empty ``readyFile``), and every chunk's ``type`` one of
    :data:`CHUNK_TYPES`; ``at`` must be a non-negative integer. Whether ``at`` fits the
    derived script is checked when it is applied (:func:`model_scripts`).

    Example:
        >>> import json, tempfile, os
        >>> d = tempfile.mkdtemp(); p = os.path.join(d, "replay.override.json")
        >>> _ = open(p, "w").write(json.dumps([{"kind": "hang"}]))
        >>> load_override(p)
        [{'kind': 'hang'}]

    Raises:
        OverrideError: the file is not JSON or breaks one of the rules above (the message names
            the file and the entry / patch / chunk at fault).
        FileNotFoundError: no such file.
        LoadError: ``reason="special_file"``: ``path`` is a FIFO, socket or device.
    """
    src = str(path)
    refuse_special_file(path)  # a FIFO or device would block: said as such, never opened
    text = Path(path).read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OverrideError(source=src, location="document",
                            detail=f"is not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if isinstance(doc, list):
        return [_read_entry(e, src, f"entry {i}") for i, e in enumerate(doc)]
    if not isinstance(doc, dict) or set(doc) != {"patches"} or not isinstance(doc["patches"],
                                                                              list):  # fmt: skip
        raise OverrideError(source=src, location="document",
                            detail="must be an entry array or {patches: [...]}")
    patches = []
    for i, p in enumerate(doc["patches"]):
        where = f"patch {i}"
        if not isinstance(p, dict) or set(p) != {"at", "entry"}:
            raise OverrideError(source=src, location=where, detail="must contain exactly at and "
                                "entry")  # fmt: skip
        if not _is_int(p["at"]):
            raise OverrideError(source=src, location=where,
                                detail="at must be a non-negative safe integer")
        patches.append({"at": int(p["at"]), "entry": _read_entry(p["entry"], src,
                                                                 f"{where}.entry")})  # fmt: skip
    return {"patches": patches}


def _apply_patches(derived: list[dict[str, Any]], origins: list[str],
                   first_seqs: list[int | None], patches: list[dict[str, Any]], src: str
                   ) -> tuple[list[dict[str, Any]], list[str], list[int | None]]:  # fmt: skip
    n = len(derived)
    calls, origs, seqs = list(derived), list(origins), list(first_seqs)
    seen: set[int] = set()
    for i, p in enumerate(patches):
        at = p["at"]
        if at > n:
            raise OverrideError(source=src, location=f"patch {i}",
                                detail=f"index {at} is out of range (the derived script has "
                                f"{n} call(s); at == {n} appends)")  # fmt: skip
        if at in seen:
            raise OverrideError(source=src, location=f"patch {i}",
                                detail=f"repeats index {at} (each call index may be patched once)")
        seen.add(at)
        if at == len(calls):
            calls.append(p["entry"])
            origs.append("override")
            seqs.append(None)
        else:
            calls[at] = p["entry"]
            origs[at] = "override"
            seqs[at] = None
    return calls, origs, seqs


# ---------------------------------------------------------------------------- public entry point
def _scenario_files(path: Path) -> tuple[Path | None, list[Path], Path | None]:
    primary = next((path / n for n in _PRIMARY_NAMES if (path / n).is_file()), None)
    children = sorted(
        (p for p in path.iterdir() if _CHILD_RE.match(p.name) and p.is_file()),
        key=lambda p: int(_CHILD_RE.match(p.name).group(1)),  # type: ignore[union-attr]
    )
    ov = path / _OVERRIDE_NAME
    return primary, children, (ov if ov.is_file() else None)


def model_scripts(
    path: str | Path,
    *,
    children: Iterable[str | Path] | None = None,
    override: str | Path | bool | None = None,
) -> list[SessionScript]:
    """The per-session model-call scripts of one recorded toh scenario.

    ``path`` is a scenario folder or a primary log file. For a folder, the primary log is
    ``session.jsonl`` (else ``session.expected.jsonl``; a folder with only ``session.N.jsonl``
    children has no primary), the children are its ``session.N.jsonl`` files and the sidecar
    is its ``replay.override.json``. For a file, the file is the primary, ``children`` lists
    the child logs (default none) and the sidecar defaults to ``replay.override.json`` beside it.

    Rules: see the module docstring and docs/toh_scripts.md. In short, a call is the chunks of
    one (turn, step) up to ``finish``; a marked ``compaction/summary`` is a call of its own; a
    fork child's seed is skipped; the sidecar replaces (bare array; the primary log is then not
    derived at all) or patches (``{"patches": ...}``) the primary's script only.

    Args:
        path: scenario folder or primary log file.
        children: child logs (file ``path`` only; a folder finds its own).
        override: None = use the sidecar when present; False = ignore it; a path = use that
            sidecar.

    Returns:
        Primary first, then children ordered by header ``createdAt`` (ties: session id).

    Example:
        >>> import replaykit as rk
        >>> scripts = rk.toh.model_scripts("scenario/")  # doctest: +SKIP
        >>> [len(s) for s in scripts]  # doctest: +SKIP
        [4, 2]

    Raises:
        UnfinishedCallError: a log that must be derived has a call without ``finish``.
        DerivationError: a marked ``compaction/summary`` has no ``rawOutput``.
        OverrideError: the sidecar is invalid, a patch index repeats or is out of range, or
            ``{"patches"}`` is given for a scenario without a primary log.
        FileNotFoundError: ``path`` (or a child, or an explicit sidecar) does not exist, or the
            folder holds no session log.
        LoadError: a log line is broken (see :func:`replaykit.read_toh`).
    """
    p = Path(path)
    if p.is_dir():
        if children is not None:
            raise TypeError("children= is only for a primary log file; a folder finds its own")
        primary, kids, found = _scenario_files(p)
        if primary is None and not kids:
            raise FileNotFoundError(f"{p}: no session log (session.jsonl, session.expected.jsonl "
                                    "or session.N.jsonl) in this folder")  # fmt: skip
    elif p.is_file():
        primary = p
        kids = [Path(c) for c in (children or ())]
        for c in kids:
            if not c.is_file():
                raise FileNotFoundError(f"child log not found: {c}")
        side = p.parent / _OVERRIDE_NAME
        found = side if side.is_file() else None
    else:
        raise FileNotFoundError(f"no such scenario folder or log: {p}")
    if override is False:
        ov_path = None
    elif override is None or override is True:
        ov_path = found
    else:
        ov_path = Path(override)
        if not ov_path.is_file():
            raise FileNotFoundError(f"override sidecar not found: {ov_path}")

    doc = load_override(ov_path) if ov_path is not None else None
    replace_primary = isinstance(doc, list)
    if isinstance(doc, dict) and primary is None:
        raise OverrideError(source=str(ov_path), location="document",
                            detail="patches need a primary session log to patch, and this "
                            "scenario has none")  # fmt: skip
    to_load = [c for c in kids] + ([primary] if primary is not None else [])
    derived = _derive_files(to_load, seeded=kids) if to_load else {}

    scripts: list[SessionScript] = []
    if primary is not None or replace_primary:
        d = derived.get(str(primary)) if primary is not None else None
        if replace_primary:
            entries: list[dict[str, Any]] = list(doc) if isinstance(doc, list) else []
            scripts.append(SessionScript(
                session_id=d.session_id if d else None, source=str(primary) if primary else None,
                created_at=d.created_at if d else None, primary=True, calls=tuple(entries),
                origins=("override",) * len(entries), first_seqs=(None,) * len(entries),
                override=str(ov_path), seed_length=d.seed_length if d else 0,
                derived_calls=None,
            ))  # fmt: skip
        else:
            assert d is not None
            _raise_if_bad(d)
            calls, origs, seqs = d.calls, d.origins, d.first_seqs
            if isinstance(doc, dict):
                calls, origs, seqs = _apply_patches(calls, origs, seqs, doc["patches"],
                                                    str(ov_path))  # fmt: skip
            scripts.append(SessionScript(
                session_id=d.session_id, source=d.source, created_at=d.created_at, primary=True,
                calls=tuple(calls), origins=tuple(origs), first_seqs=tuple(seqs),
                override=str(ov_path) if doc is not None else None,
                seed_length=d.seed_length, derived_calls=len(d.calls),
            ))  # fmt: skip
    child_scripts = []
    for c in kids:
        d = derived[str(c)]
        _raise_if_bad(d)
        child_scripts.append(SessionScript(
            session_id=d.session_id, source=d.source, created_at=d.created_at, primary=False,
            calls=tuple(d.calls), origins=tuple(d.origins), first_seqs=tuple(d.first_seqs),
            seed_length=d.seed_length, derived_calls=len(d.calls),
        ))  # fmt: skip
    child_scripts.sort(key=lambda s: (s.created_at if s.created_at is not None else 0,
                                      s.session_id or ""))  # fmt: skip
    return scripts + child_scripts


def unfinished_calls(path: str | Path | Iterable[str | Path]) -> pd.DataFrame:
    """One row per derived model call that ends without ``finish``, over one or many logs.

    Use it to find the logs that cannot be replayed from their chunks alone (they need a
    ``replay.override.json`` sidecar). ``path`` is a log file, a folder (searched recursively
    for ``*.jsonl``) or a list of those. Fork seeds are skipped, as in :func:`model_scripts`.

    Columns: ``source``, ``session_id``, ``call`` (``t{turn}.s{step}.c{k}``), ``turn``,
    ``step``, ``first_line``, ``last_line``, ``first_seq``, ``n_chunks`` and ``position`` (the
    call index it would have had in the derived script).

    Example:
        >>> import replaykit as rk
        >>> rk.toh.unfinished_calls("corpus/toh")[["source", "call"]]  # doctest: +SKIP

    Raises:
        FileNotFoundError: a path matches nothing.
        LoadError: a log line is broken.
    """
    items = [path] if isinstance(path, (str, Path)) else list(path)
    files: list[Path] = []
    for it in items:
        q = Path(it)
        if q.is_dir():
            files.extend(sorted(q.rglob("*.jsonl")))
        elif q.is_file():
            files.append(q)
        else:
            raise FileNotFoundError(f"no such log or folder: {q}")
    rows = []
    for src, d in sorted(_derive_files(files).items()) if files else []:
        for u in d.unfinished:
            rows.append({"source": src, "session_id": d.session_id, "call": u["call"],
                         "turn": u["turn"], "step": u["step"], "first_line": u["lines"][0],
                         "last_line": u["lines"][1], "first_seq": u["first_seq"],
                         "n_chunks": u["n_chunks"], "position": u["position"]})  # fmt: skip
    cols = {"source": "string", "session_id": "string", "call": "string", "turn": "Int64",
            "step": "Int64", "first_line": "Int64", "last_line": "Int64", "first_seq": "Int64",
            "n_chunks": "Int64", "position": "Int64"}  # fmt: skip
    df = pd.DataFrame(rows, columns=list(cols))
    return df.astype(cols)


# ------------------------------------------------------------------------------ placeholders
def _string_leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _string_leaves(v, out)
    elif isinstance(value, Mapping):
        for v in value.values():
            _string_leaves(v, out)


def _resolve_one(pattern: str, corpus: str, text: str) -> str:
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise PlaceholderPatternError(
            f"fromRequest placeholder has an invalid pattern {json.dumps(pattern)}: {exc}. "
            "Fix the regular expression in the script (Python re syntax).",
            pattern=pattern, text=text,
        ) from exc
    last = None
    for last in rx.finditer(corpus):  # noqa: B007 - the last match wins
        pass
    if last is None:
        raise PlaceholderNoMatchError(
            f"fromRequest pattern {json.dumps(pattern)} matched nothing in the request messages "
            f"(searched {len(corpus)} characters). Check that the request carries the value, or "
            "loosen the pattern.",
            pattern=pattern, text=text,
        )
    if rx.groups >= 1 and last.group(1) is not None:
        return last.group(1)
    return last.group(0)


def _substitute(text: str, corpus: str) -> str:
    out = []
    cursor = 0
    while True:
        start = text.find(_OPEN, cursor)
        if start == -1:
            out.append(text[cursor:])
            return "".join(out)
        close = text.find(_CLOSE, start + len(_OPEN))
        if close == -1:
            raise PlaceholderUnterminatedError(
                f"fromRequest placeholder is unterminated in {json.dumps(text)}: close it with "
                "'}}'.",
                pattern=None, text=text,
            )
        # the last two braces of a run of '}' close the placeholder
        while close + len(_CLOSE) < len(text) and text[close + len(_CLOSE)] == "}":
            close += 1
        pattern = text[start + len(_OPEN):close]
        out.append(text[cursor:start])
        out.append(_resolve_one(pattern, corpus, text))
        cursor = close + len(_CLOSE)


def _sub_value(value: Any, corpus: str) -> Any:
    if isinstance(value, str):
        return _substitute(value, corpus) if _OPEN in value else value
    if isinstance(value, list):
        return [_sub_value(v, corpus) for v in value]
    if isinstance(value, dict):
        return {k: _sub_value(v, corpus) for k, v in value.items()}
    return copy.deepcopy(value)


def _has_open(value: Any) -> bool:
    if isinstance(value, str):
        return _OPEN in value
    if isinstance(value, list):
        return any(_has_open(v) for v in value)
    if isinstance(value, dict):
        return any(_OPEN in k or _has_open(v) for k, v in value.items())
    return False


def resolve_placeholders(entry: Any, request_messages: Any) -> Any:
    """Resolve every ``{{fromRequest:<regex>}}`` in a script entry against a request.

    The text searched is every string leaf of ``request_messages`` (lists in order, dicts in
    key order) joined with newlines. For each placeholder the *last* match of the pattern
    wins; its first capture group replaces the placeholder (the whole match when the pattern
    has no group or the group did not take part). In a run of closing braces the last two end
    the placeholder, so a pattern may end with a brace quantifier (``[0-9a-f]{4}}}``); a
    pattern cannot hold ``}}`` followed by more pattern. Patterns use Python ``re`` syntax.
    Only string values are rewritten (dict keys are kept).

    Args:
        entry: a script entry (any JSON-shaped value, e.g. one of ``SessionScript.calls``).
        request_messages: the request's messages (JSON-shaped).

    Returns:
        ``entry`` itself when it holds no placeholder, else a resolved deep copy.

    Example:
        >>> msgs = [{"role": "user", "content": "goal id g-1a2b then g-9f3c"}]
        >>> resolve_placeholders({"id": "{{fromRequest:g-([0-9a-f]{4})}}"}, msgs)
        {'id': '9f3c'}

    Raises:
        PlaceholderPatternError: a pattern is not a valid regular expression.
        PlaceholderNoMatchError: a pattern matches nothing in the request.
        PlaceholderUnterminatedError: ``{{fromRequest:`` without a closing ``}}``.
    """
    if not _has_open(entry):
        return entry
    leaves: list[str] = []
    _string_leaves(request_messages, leaves)
    return _sub_value(entry, "\n".join(leaves))
