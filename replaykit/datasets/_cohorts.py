"""Generator of multi-semester, multi-tenant logs with controllable drift between cohorts.

Built column-wise with numpy (no per-event Python), so millions of events take seconds. Each
run is a pleach-style chat: turns of ``model.requested``/``model.completed`` steps with
``tool.called``/``tool.completed`` pairs, ending in a final answer and ``turn.completed``.
The first user message of a run is one of ``scenarios`` fixed prompts, so the same scenario
appears in every semester (the key of a paired comparison).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["COHORT_TOOLS", "DRIFTS", "CohortData", "generate_cohorts"]

#: Tools the generated agent calls (``tool_mix`` weights follow this order).
COHORT_TOOLS: tuple[str, ...] = ("read_file", "grep", "bash", "write_file", "web_search",
                                 "list_dir")
_BASE_MIX = np.array([0.30, 0.20, 0.20, 0.12, 0.10, 0.08])
_MODELS = np.array(["gpt-5-mini", "claude-sonnet-5", "gemini-3-pro"])
_VERBS = ("summarise", "refactor", "debug", "document", "benchmark", "review", "migrate",
          "triage")
_THINGS = ("the quarterly report", "the billing service", "a flaky test", "the onboarding docs",
           "the search index", "a failing deploy", "the data pipeline", "the auth module",
           "the release notes", "a customer ticket")


#: Drifts :func:`generate_cohorts` can plant in its last semester (``drift=``), each a known
#: truth a cohort comparison should find: name -> (parameter, change, what it means). The
#: change is added to the parameter's value for the last semester (rates stay in [0, 1]).
DRIFTS: dict[str, tuple[str | None, float, str]] = {
    "none": (None, 0.0, "no drift: every semester is generated from the same parameters, so a "
                        "comparison should find nothing beyond chance"),
    "tool-errors": ("error_rate", 0.10, "tool results fail more often in the last semester: "
                                        "the tool error rate rises by 10 points (5% -> 15% "
                                        "by default); tool_error_rate moves, and with it "
                                        "run_error_rate (runs with any error)"),
}


@dataclass(frozen=True)
class CohortData:
    """What :func:`generate_cohorts` returns.

    Attributes:
        log: the generated :class:`~replaykit.EventLog` (pleach event types, canonical kinds).
        cache: an :class:`~replaykit.InMemoryCache` holding every recorded ``cache_key`` except
            the evicted ones (each semester loses its ``cache_eviction`` share).
        params: one row per semester: the parameters it was generated with.
        paths: files written when ``path`` was given (``events``, ``cache``), else empty.
    """

    log: Any
    cache: Any
    params: pd.DataFrame
    paths: Mapping[str, Path] = field(default_factory=dict)


def _per_semester(value: Any, n: int, name: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return [value] * n
    if name == "tool_mix" and all(isinstance(v, (int, float)) for v in value):
        return [value] * n  # one weight vector for every semester
    vals = list(value)
    if len(vals) != n:
        raise ValueError(f"{name} needs one value per semester ({n}), got {len(vals)}")
    return vals


def _mix(value: Any) -> np.ndarray:
    if value is None:
        return _BASE_MIX.copy()
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(COHORT_TOOLS))
        if unknown:
            raise ValueError(f"tool_mix names unknown tools {unknown}; known: {COHORT_TOOLS}")
        w = np.array([float(value.get(t, 0.0)) for t in COHORT_TOOLS])
    else:
        w = np.asarray(value, dtype=float)
        if w.shape != (len(COHORT_TOOLS),):
            raise ValueError(f"tool_mix needs {len(COHORT_TOOLS)} weights (one per "
                             f"COHORT_TOOLS entry), got {w.shape}")
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"tool_mix weights must be >= 0 with a positive sum, got {w.tolist()}")
    return w / w.sum()


def _rate(v: Any, name: str) -> float:
    f = float(v)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], got {v!r}")
    return f


def _seg_pos(counts: np.ndarray) -> np.ndarray:
    """Position within its segment of every element of segments of the given lengths."""
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    return np.arange(total) - np.repeat(starts, counts)


def _join(*parts: Any) -> pa.Array:
    """Element-wise string concatenation of arrays and scalars (Arrow kernel)."""
    arrs = [p if isinstance(p, (pa.Array, pa.ChunkedArray)) else pa.scalar(p, pa.string())
            for p in parts]
    return pc.binary_join_element_wise(*arrs, "")


def _num(a: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(a), pa.string())


def _hexkey(prefix: str, a: np.ndarray) -> pa.Array:
    return _join(prefix, _num(a))


def generate_cohorts(
    path: str | os.PathLike[str] | None = None,
    *,
    runs: int = 2_000,
    semesters: Sequence[str] = ("2025-fall", "2026-spring"),
    tenants: Sequence[str] = ("acme", "globex"),
    events_per_run: int = 60,
    scenarios: int = 50,
    tool_mix: Any = None,
    error_rate: float | Sequence[float] = 0.05,
    abort_rate: float | Sequence[float] = 0.03,
    cache_eviction: float | Sequence[float] = 0.1,
    model: str | Sequence[str | None] | None = None,
    drift: str | None = None,
    seed: int = 0,
) -> CohortData:
    """A multi-semester, multi-tenant log with controllable drift; deterministic by ``seed``.

    ``runs`` runs are split evenly over ``semesters`` (labels of the default calendar of
    :mod:`replaykit.cohorts`, e.g. ``"2026-spring"``; each run starts at a time inside its
    term) and assigned to ``tenants`` round-robin. Runs average ``events_per_run`` events.
    Per semester (give one value for all, or a sequence with one value per semester):

    * ``tool_mix``: weights over :data:`COHORT_TOOLS` (a mapping tool -> weight, or a sequence
      of 6 weights); default a fixed mix;
    * ``error_rate``: probability that a tool result is an error;
    * ``abort_rate``: probability that a run is cut off inside its last turn (no
      ``turn.completed``);
    * ``cache_eviction``: share of the semester's cache keys missing from the returned cache;
    * ``model``: the model every run of the semester requests (None: each run picks one of
      three at random), e.g. ``[None, "gpt-5.1"]`` for a model drift.

    ``drift`` plants one of the named :data:`DRIFTS` on top of those parameters, in the last
    semester only (``"tool-errors"``: its tool error rate is 10 points higher; ``"none"``
    or None: nothing planted). ``params`` records
    the values used and ``params.attrs["drift"]`` the name, so the truth travels with the
    sample. With ``drift="none"`` and a single value per parameter the semesters differ only
    by chance.

    Every ``model.completed`` carries a ``cacheKey`` (and a third of the tool results). With
    ``path``, the log is written to ``<path>/events.parquet`` (read it back with
    :func:`replaykit.read_parquet`) and the cache to ``<path>/cache.parquet``
    (:class:`~replaykit.ParquetCache`).

    Example:
        >>> from replaykit.datasets import generate_cohorts
        >>> data = generate_cohorts(runs=200, error_rate=[0.02, 0.10], seed=1)
        >>> data.log.num_runs
        200

    Raises:
        ValueError: ``runs``/``events_per_run``/``scenarios`` out of range, ``semesters`` or
            ``tenants`` empty, an unknown semester label, a rate outside [0, 1], a bad
            ``tool_mix``, a per-semester sequence of the wrong length, or an unknown
            ``drift`` name.
    """
    from ..cohorts import SemesterCalendar
    from ..eventlog.log import EventLog
    from ..fold.cache import InMemoryCache
    from ..schema import events_table

    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if events_per_run < 12:
        raise ValueError(f"events_per_run must be >= 12, got {events_per_run}")
    if scenarios < 1:
        raise ValueError(f"scenarios must be >= 1, got {scenarios}")
    sems = list(semesters)
    tens = list(tenants)
    if not sems or not tens or not all(isinstance(t, str) and t for t in tens):
        raise ValueError("semesters and tenants must be non-empty lists of non-empty strings")
    cal = SemesterCalendar()
    bounds = [cal.bounds(s) for s in sems]
    ns = len(sems)
    mixes = np.stack([_mix(m) for m in _per_semester(tool_mix, ns, "tool_mix")])
    err = np.array([_rate(v, "error_rate") for v in _per_semester(error_rate, ns, "error_rate")])
    abort = np.array([_rate(v, "abort_rate") for v in _per_semester(abort_rate, ns,
                                                                      "abort_rate")])
    evict = np.array([_rate(v, "cache_eviction") for v in _per_semester(cache_eviction, ns,
                                                                          "cache_eviction")])
    if drift is not None and drift not in DRIFTS:
        raise ValueError(f"unknown drift {drift!r}; known: {', '.join(DRIFTS)}")
    planted, delta, _ = DRIFTS[drift or "none"]
    if planted == "error_rate":
        err = err.copy()
        err[-1] = min(1.0, err[-1] + delta)
    rng = np.random.default_rng(seed)

    # ---------------------------------------------------------------- runs
    R = runs
    sem = (np.arange(R) * ns) // max(R, 1)
    tenant = np.arange(R) % len(tens)
    scen = rng.integers(0, scenarios, R)
    lo = np.array([b[0].timestamp() for b in bounds])
    hi = np.array([b[1].timestamp() for b in bounds])
    start_s = lo[sem] + rng.random(R) * (hi[sem] - lo[sem] - 86_400)
    start_us = (start_s * 1e6).astype(np.int64)
    # turns per run and tool steps per turn: mean events ~ events_per_run
    n_turns = rng.integers(1, 4, R)
    steps_budget = np.maximum((events_per_run - 5 * n_turns) / 4.0, 0.0)  # steps per run
    T = int(n_turns.sum())
    turn_run = np.repeat(np.arange(R), n_turns)
    mean_steps = (steps_budget / n_turns)[turn_run]
    steps = rng.poisson(mean_steps).astype(np.int64)
    ev_turn = 5 + 4 * steps
    # aborted runs: the last turn is cut off before its turn.completed
    aborted = rng.random(R) < abort[sem]
    last_turn = np.cumsum(n_turns) - 1
    keep_len = ev_turn.copy()
    cut = last_turn[aborted]
    keep_len[cut] = 2 + (rng.random(len(cut)) * (ev_turn[cut] - 2)).astype(np.int64)

    # ---------------------------------------------------------------- events
    N = int(keep_len.sum())
    e_turn = np.repeat(np.arange(T), keep_len)
    pos = _seg_pos(keep_len)  # position within the turn
    e_run = turn_run[e_turn]
    run_counts = np.bincount(e_run, minlength=R)
    seq = _seg_pos(run_counts)
    turn_no = (np.arange(T) - np.repeat(np.cumsum(n_turns) - n_turns, n_turns))[e_turn] + 1
    S = steps[e_turn]
    in_steps = (pos >= 2) & (pos < 2 + 4 * S)
    step_k = np.where(in_steps, (pos - 2) // 4, S)  # the final answer call counts as step S
    role = np.select(
        [pos == 0, pos == 1, in_steps, pos == 2 + 4 * S, pos == 3 + 4 * S],
        [0, 1, 2 + (pos - 2) % 4, 2, 3], default=6)
    # role: 0 turn.started 1 message.user 2 model.requested 3 model.completed
    #       4 tool.called 5 tool.completed 6 turn.completed
    types = np.array(["turn.started", "message.user", "model.requested", "model.completed",
                      "tool.called", "tool.completed", "turn.completed"])
    kinds = np.array(["turn_start", "user_message", "model_request", "model_response",
                      "tool_call", "tool_result", "turn_end"])
    e_sem = sem[e_run]
    # tool per step: inverse-CDF draw from the semester's mix (same draw on call and result)
    u_tool = rng.random(int(steps.sum()) + 1)
    step_off = np.cumsum(steps) - steps
    gstep = np.minimum(step_off[e_turn] + np.minimum(step_k, np.maximum(S - 1, 0)),
                       len(u_tool) - 1)
    cdf = np.cumsum(mixes, axis=1)
    tool_idx = (u_tool[gstep][:, None] > cdf[e_sem]).sum(axis=1)
    tool_idx = np.minimum(tool_idx, len(COHORT_TOOLS) - 1)
    is_tool_ev = (role == 4) | (role == 5)
    tool_names = np.array(COHORT_TOOLS, dtype=object)
    tool_col = np.where(is_tool_ev, tool_names[tool_idx], None)
    err_draw = rng.random(int(steps.sum()) + 1)[gstep] < err[e_sem]
    is_error = (role == 5) & err_draw
    # ids
    run_ids = pa.array(np.char.add(np.char.add("run_", np.array(sems)[sem].astype(str)),
                                   np.char.add("_", np.char.zfill(np.arange(R).astype(str),
                                                                  6))))
    run_col = run_ids.take(pa.array(e_run))
    ids_base = _join(run_col, ".t", _num(turn_no), ".s", _num(step_k))
    is_model = (role == 2) | (role == 3)
    ref = pc.if_else(pa.array(is_model), _join("mc.", ids_base),
                     pc.if_else(pa.array(is_tool_ev), _join("tc.", ids_base),
                                pa.scalar(None, pa.string())))
    args_id = rng.integers(0, 40, N)
    args_hash = pc.if_else(pa.array(role == 4), _join("ah", _num(tool_idx * 100 + args_id)),
                           pa.scalar(None, pa.string()))
    # tokens and finish on model.completed
    is_done = role == 3
    final = is_done & (step_k == S)
    in_tok = np.where(is_done, rng.integers(500, 40_000, N), 0)
    out_tok = np.where(is_done, rng.integers(10, 2_000, N), 0)
    finish = np.where(is_done, np.where(final, "stop", "tool-calls"), np.array(None, object))
    run_model = _MODELS[rng.integers(0, len(_MODELS), R)].astype(object)
    if model is not None:
        fixed = np.array(_per_semester(model, ns, "model"), dtype=object)[sem]
        run_model = np.where(pd.isna(fixed), run_model, fixed)
    model_e = run_model[e_run]
    # cache keys: every model.completed, a third of the tool results
    key_tr = (role == 5) & (rng.random(N) < 1 / 3)
    has_key = is_done | key_tr
    cache_key = pc.if_else(pa.array(has_key),
                           _join("ck.", pa.array(np.where(role == 5, "t", "m")), ".", ids_base),
                           pa.scalar(None, pa.string()))
    # prompts / texts
    verbs = np.array(_VERBS)[np.arange(scenarios) % len(_VERBS)]
    things = np.array(_THINGS)[(np.arange(scenarios) // len(_VERBS)) % len(_THINGS)]
    prompts = np.char.add(np.char.add(np.char.add(np.char.add(
        "Scenario ", np.arange(scenarios).astype(str)), ": please "), verbs),
        np.char.add(" ", things))
    prompt_col = pa.array(prompts)
    run_prompt = prompt_col.take(pa.array(scen[e_run]))
    null_s = pa.scalar(None, pa.string())
    text = pc.if_else(pa.array(role == 1), run_prompt,
                      pc.if_else(pa.array(role == 5),
                                 pc.if_else(pa.array(is_error), pa.scalar("command failed"),
                                            pa.scalar("ok")),
                                 pc.if_else(pa.array(final), pa.scalar("done"), null_s)))
    # payloads (canonical JSON: sorted keys), built column-wise per role
    tool_s = pa.array(tool_col, pa.string())
    ck_json = pc.if_else(pc.is_valid(cache_key), _join('"cacheKey":"', cache_key, '",'),
                         pa.scalar(""))
    msg_id = _join("msg.", run_col, ".t", _num(turn_no))
    err_s = pc.if_else(pa.array(is_error), pa.scalar("true"), pa.scalar("false"))
    fin_s = pa.array(finish, pa.string())
    model_s = pa.array(model_e, pa.string())
    fin0 = pc.fill_null(fin_s, "")
    tool0 = pc.fill_null(tool_s, "")
    text0 = pc.fill_null(text, "")
    parts_by_role: list[tuple[Any, ...]] = [
        ('{"message_id":"', msg_id, '","turn":', turn_no, "}"),
        ('{"message_id":"', msg_id, '","text":"', run_prompt, '"}'),
        ('{"call_id":"', ref, '","model":"', model_s, '","provider":"generated"}'),
        ("{", ck_json, '"call_id":"', ref, '","finish":"', fin0, '","model":"', model_s,
         '","usage":{"input_tokens":', in_tok, ',"output_tokens":', out_tok, "}}"),
        ('{"args":{"id":', args_id, '},"call_id":"', ref, '","tool":"', tool0, '"}'),
        ("{", ck_json, '"call_id":"', ref, '","is_error":', err_s, ',"result":"', text0,
         '","tool":"', tool0, '"}'),
        ('{"message_id":"', msg_id, '","turn":', turn_no, "}"),
    ]
    # each role's payloads are built from that role's rows only, then put back in row order
    order = np.argsort(role, kind="stable")
    pieces: list[pa.Array] = []
    for r, parts in enumerate(parts_by_role):
        m = role == r
        if not m.any():
            continue
        am = pa.array(m)
        sub = [p if isinstance(p, str) else _num(p[m]) if isinstance(p, np.ndarray)
               else p.filter(am) for p in parts]
        built = pc.cast(_join(*sub), pa.large_string())
        pieces.extend(built.chunks if isinstance(built, pa.ChunkedArray) else [built])
    payload = pa.chunked_array(pieces, pa.large_string()).combine_chunks().take(
        pa.array(np.argsort(order)))
    ts = pa.array(start_us[e_run] + seq * 1_500_000, pa.timestamp("us", tz="UTC"))
    table = events_table({
        "tenant_id": pa.array(np.array(tens)[tenant][e_run]),
        "run_id": run_col,
        "seq": seq,
        "type": types[role],
        "kind": kinds[role],
        "ts": ts,
        "turn": turn_no.astype(np.int32),
        "step": pa.array(step_k.astype(np.int32), mask=~((role >= 2) & (role <= 5))),
        "ref_id": ref,
        "tool_name": tool_s,
        "args_hash": args_hash,
        "cache_key": cache_key,
        "is_error": is_error,
        "finish": fin_s,
        "input_tokens": pa.array(in_tok, mask=~is_done),
        "output_tokens": pa.array(out_tok, mask=~is_done),
        "text": text,
        "payload": payload,
        "source": np.full(N, "generated:cohorts"),
    })
    log = EventLog(table, sort=True)

    # ---------------------------------------------------------------- cache with eviction
    keyed = pc.is_valid(cache_key)
    keys = cache_key.filter(keyed)
    k_sem = e_sem[np.asarray(keyed)]
    kept = rng.random(len(keys)) >= evict[k_sem]
    cache = InMemoryCache(dict.fromkeys(keys.filter(pa.array(kept)).to_pylist(), "cached"))
    params = pd.DataFrame({
        "semester": sems, "runs": np.bincount(sem, minlength=ns),
        "error_rate": err, "abort_rate": abort, "cache_eviction": evict,
        **{f"tool_mix.{t}": mixes[:, i] for i, t in enumerate(COHORT_TOOLS)},
    })
    params.attrs["drift"] = drift or "none"
    paths: dict[str, Path] = {}
    if path is not None:
        import pyarrow.parquet as pq

        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        paths["events"] = log.to_parquet(out / "events.parquet", overwrite=True)
        ktab = pa.table({"key": keys.filter(pa.array(kept)),
                         "value": pa.array(np.full(int(kept.sum()), "cached"), pa.large_string())})
        pq.write_table(ktab, out / "cache.parquet")
        paths["cache"] = out / "cache.parquet"
    return CohortData(log=log, cache=cache, params=params, paths=paths)

