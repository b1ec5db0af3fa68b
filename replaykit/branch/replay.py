"""replay(): re-drive a branch of a recorded run under explicit model and tool policies."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._base.json import args_hash, canonical_json
from ..errors import ReplayCacheMissError, ReplayError, refuse_special_file
from ..eventlog.log import EventLog, to_pandas
from ..fold.cache import CACHE_MODES
from ..schema import EVENTS_SCHEMA, EXTENSION_COLUMNS, cast_events, events_table
from ._recorded import (
    _CONVO_ROLES,
    _chunk_row,
    _content_status,
    _live_tool_calls,
    _Recorded,
    _shared_sources,
    _text_of,
    _tool_output,
)
from ._selectors import (
    _ARGS_KEYS,
    _CODEX_CALLS,
    _TOOL_KEYS,
    _decoded_args,
    _selector_mask,
    _slot,
    _str,
)
from .branch import Branch
from .fixtures import FixtureRegistry
from .patches import PATCH_RECORD_KEY, apply_operations, apply_tool_args_patch
from .vocab import (
    EXACT_MODEL_POLICIES,
    EXACT_TOOL_POLICIES,
    LIVE_MODEL_POLICIES,
    LIVE_TOOL_POLICIES,
    MODEL_POLICIES,
    TOOL_POLICIES,
    provenance_of,
)

__all__ = ["ReplayResult", "replay"]

ModelExecutor = Callable[..., Any]
ToolExecutor = Callable[..., Any]


# ------------------------------------------------------------------------------------ result


class ReplayResult:
    """What a replay produced: status, the replayed events, requirements, effects and metrics.

    ``status`` is ``"completed"``, ``"paused"`` (a divergent tool call needs a fixture: see
    :meth:`requirements_df`, then :meth:`resume`) or ``"failed"`` (``error`` says why).
    ``events`` is an :class:`~replaykit.EventLog` holding one run, ``run_id`` =
    ``"<base run>~<branch id>"`` with ``parent_run_id`` = the base run; events copied from
    before the checkpoint have ``inherited=True``. Its table carries one column after the
    canonical ones, ``replay_origin`` (copied / recorded / patched / fixture / executor /
    blocked / synthetic: where each event came from) and ``replay_provenance`` (the same for a
    reader, with model outputs copied under a non-live model policy as ``policy-copy``; see
    :data:`replaykit.schema.EXTENSION_COLUMNS`), so the origin stays with ``result.events``;
    :meth:`annotations_df` also gives each event's base seq.

    Example:
        >>> res = rk.replay(branch, fixtures="data/isplay/fixtures.json")  # doctest: +SKIP
        >>> res.status, res.metrics["first_divergence_step"]  # doctest: +SKIP
        ('completed', 3)
    """

    #: the :class:`~replaykit.branch.runs.Comparison` protocol: the replayed run follows from
    #: interventions (its differences are the interventions' effect under the policies), and
    #: the names a reader sees for the two sides.
    intervened = True
    labels = ("base", "replay")

    def __init__(self, *, branch: Branch | None, status: str, events: EventLog,
                 model_policy: str, tool_policy: str, fixtures: FixtureRegistry,
                 requirements: list[dict[str, Any]], effects: list[dict[str, Any]],
                 probes: list[dict[str, Any]], annotations: list[dict[str, Any]],
                 error: str | None, replay_id: str, base: EventLog,
                 executors: tuple[Any, Any] = (None, None),
                 cache: tuple[Any, str] = (None, "cross-mode-readable"),
                 cache_lookups: list[dict[str, Any]] | None = None) -> None:
        self.branch = branch
        self.status = status
        self.events = events
        self.model_policy = model_policy
        self.tool_policy = tool_policy
        self.fixtures = fixtures
        self.requirements = requirements
        self.effects = effects
        self.probes = probes
        self.annotations = annotations
        self.error = error
        self.replay_id = replay_id
        self.base = base
        self._executors = executors
        self._cache = cache
        self.cache_mode = cache[1]
        self.cache_lookups = list(cache_lookups or [])
        self._metrics: dict[str, Any] | None = None
        self._diff: pd.DataFrame | None = None
        # the JSON changes of the aligned pairs the diff had to decode, by (base_seq,
        # replay_seq): changes_df reuses them instead of diffing those payloads again
        self._pair_changes: dict[tuple[int, int], list[dict[str, Any]]] = {}
        # the tools each replayed payload the diff decoded offers, by its row in the events
        # table: unsupported_df reads them instead of decoding those payloads again
        self._request_tools: dict[int, list[str] | None] = {}

    def __getstate__(self) -> dict[str, Any]:
        # a pickled result carries the replayed tenant's part of the base only (issue 30)
        state = dict(self.__dict__)
        tenants = self.events.tenants or ([self.branch.tenant_id] if self.branch else [])
        if tenants and isinstance(self.base, EventLog):
            state["base"] = self.base.filter(tenant_id=tenants)
        state.pop("_base_view", None)  # a view of the whole base: rebuilt on demand
        return state

    def _base_run(self) -> EventLog:
        """The base run as one EventLog view, made once (``base.run(...)`` gives a new view
        with a new table per call, and the stamps' memo knows a table by its identity: the
        metrics, the diff and the findings ask for the same view)."""
        got = getattr(self, "_base_view", None)
        if got is None:
            got = self._base_view = (
                self.base.run(self.branch.run_id, tenant_id=self.branch.tenant_id)
                if self.branch is not None else self.base)
        return got

    def __repr__(self) -> str:
        return (f"ReplayResult(status={self.status!r}, events={len(self.events)}, "
                f"policy={self.model_policy}/{self.tool_policy}, "
                f"requirements={len(self.requirements)})")

    def _repr_html_(self) -> str:
        from .._base.display import replay_result_html

        return replay_result_html(self)

    @property
    def run_id(self) -> str:
        return self.events.run_ids[0] if len(self.events) else ""

    # ------------------------------------------------------------------ frames
    def annotations_df(self) -> pd.DataFrame:
        """One row per replayed event: seq, base_seq (null for new events), origin
        (copied / recorded / patched / fixture / executor / blocked / synthetic) and
        provenance (where the step's content came from, for a reader: recorded / patched /
        fixture / policy-copy / live / blocked / synthetic; meanings in
        :data:`replaykit.branch.vocab.PROVENANCES`).

        Example:
            >>> done.annotations_df().provenance.value_counts()  # doctest: +SKIP
        """
        df = pd.DataFrame(self.annotations, columns=["seq", "base_seq", "origin",
                                                     "provenance"])
        if len(df) and df["provenance"].isna().any():  # a result saved before provenance
            kinds = self.events.table.column("kind").to_pylist()
            df["provenance"] = [p if isinstance(p, str) else provenance_of(
                o, kinds[int(s)] if 0 <= int(s) < len(kinds) else None)
                for p, o, s in zip(df["provenance"], df["origin"], df["seq"], strict=True)]
        return df.astype({"seq": "Int64", "base_seq": "Int64", "origin": "string",
                          "provenance": "string"})

    def cache_lookups_df(self) -> pd.DataFrame:
        """One row per cache read of the replay (see ``cache=`` of :func:`replay`): seq (in
        the replayed run), base_seq, cache_key, hit, via (``cache`` / ``live``)."""
        cols = ["seq", "base_seq", "cache_key", "hit", "via"]
        return pd.DataFrame(self.cache_lookups, columns=cols).astype(
            {"seq": "Int64", "base_seq": "Int64", "cache_key": "string", "hit": "boolean",
             "via": "string"})

    def patches_df(self) -> pd.DataFrame:
        """One row per intervention record on a replayed event (``applied`` / ``failed``,
        with the failures): :func:`replaykit.branch.patches.patch_records_df` of
        :attr:`events`. replaykit writes the record as ``payload["replayPatch"]``; records
        named ``isplayPatch`` (isplay's name) are read too."""
        from .patches import patch_records_df

        out: pd.DataFrame = patch_records_df(self.events)
        return out

    def requirements_df(self) -> pd.DataFrame:
        """One row per fixture requirement: requirement_id, tool_name, args (JSON text),
        args_hash, ref_id, step (position in the replayed run), status (open / resolved)."""
        cols = ["requirement_id", "tool_name", "args", "args_hash", "ref_id", "step", "status"]
        return pd.DataFrame(self.requirements, columns=cols).astype(
            {"step": "Int64"} | {c: "string" for c in cols if c != "step"})

    def effects_df(self) -> pd.DataFrame:
        """One row per tool call after the checkpoint: how its output was obtained.

        ``action`` is ``recorded`` (signature matched the recording), ``fixture``,
        ``executed`` (live executor), ``blocked``, or ``missing`` (paused / failed there);
        ``fixture_id`` and ``provenance`` name the fixture when one served it.
        """
        cols = ["step", "ref_id", "tool_name", "args_hash", "divergent", "action",
                "fixture_id", "provenance"]
        return pd.DataFrame(self.effects, columns=cols).astype(
            {"step": "Int64", "divergent": "boolean"}
            | {c: "string" for c in cols if c not in ("step", "divergent")})

    def probes_df(self) -> pd.DataFrame:
        """determinism-probe results: one row per model call (ref_id, runs, distinct_outputs,
        deterministic, matches_recorded)."""
        cols = ["ref_id", "runs", "distinct_outputs", "deterministic", "matches_recorded"]
        return pd.DataFrame(self.probes, columns=cols)

    def diff_df(self) -> pd.DataFrame:
        """Base (after the checkpoint's copy) and replay aligned by event signature.

        One row per aligned position: ``status`` is ``same``, ``changed`` (a replaced event),
        ``added`` (only in the replay) or ``removed`` (only in the base); with base_seq /
        replay_seq, kinds and tool names of both sides. Computed once per result (a result
        never changes); each call returns a fresh copy.
        """
        if self._diff is None:
            self._diff = self._compute_diff()
        return self._diff.copy()

    def _compute_diff(self) -> pd.DataFrame:
        from .._base.align import align, expand
        from .compare import event_signatures

        # (a RunComparison borrows this method: its base is run A's log itself)
        view = getattr(self, "_base_run", None)
        b = (view() if callable(view) else self.base).table
        r = self.events.table
        # Near-linear alignment (replaykit._base.align), then column-wise takes: no per-event loop.
        status, i, j = expand(align(event_signatures(b), event_signatures(r)))

        def side(t: pa.Table, idx: np.ndarray, col: str) -> pa.Array:
            arr = _str(t.column(col)) if col != "seq" else t.column(col).combine_chunks()
            taken = arr.take(pa.array(np.where(idx >= 0, idx, 0), type=pa.int64()))
            return pc.if_else(pa.array(idx >= 0), taken, pa.scalar(None, taken.type))

        cols = {"status": pa.array(status, type=pa.string())}
        for name, col in (("seq", "seq"), ("kind", "kind"), ("tool", "tool_name")):
            cols[f"base_{name}"] = side(b, i, col)
            cols[f"replay_{name}"] = side(r, j, col)
        order = ["status", "base_seq", "replay_seq", "base_kind", "replay_kind",
                 "base_tool", "replay_tool"]
        cols["status"] = pa.array(_content_status(np.asarray(status, dtype=object), b, r, i, j,
                                                  changes=self._pair_changes,
                                                  offered=getattr(self, "_request_tools",
                                                                  None)),
                                  type=pa.string())
        df = pa.table({k: cols[k] for k in order}).to_pandas()
        return df.astype({"base_seq": "Int64", "replay_seq": "Int64", "status": "string",
                          "base_kind": "string", "replay_kind": "string",
                          "base_tool": "string", "replay_tool": "string"})

    def changes_df(self) -> pd.DataFrame:
        """Values, not flags: one row per changed JSON path of every changed event (path,
        before, after, where the replayed value came from); see
        :func:`replaykit.branch.findings.changes_df`.

        Example:
            >>> done.changes_df().query("key")[["tool_name", "label", "before", "after"]]
            ... # doctest: +SKIP
        """
        from .findings import changes_df

        return changes_df(self)

    def summary(self) -> Any:
        """The computed findings: outcome (with the key changed values and where they came
        from), strength of evidence, the caveats the policies imply, open requirements.

        Returns a :class:`~replaykit.branch.findings.Summary`: ``.text`` (plain text),
        ``.to_frame()`` (one row per sentence, with the report section holding its evidence),
        ``.values`` (the changed values named). The same sentences open ``rk.report.rca``.
        Rules: docs/report.md.

        Example:
            >>> print(done.summary().text)  # doctest: +SKIP
            Outcome:
              - The replay first diverges from the recording at step 3 ...
        """
        from .findings import summarize

        return summarize(self)

    # ------------------------------------------------------------------ metrics
    @property
    def metrics(self) -> dict[str, Any]:
        """Every metric of docs/metrics.md for this replay against its base run (a dict)."""
        if self._metrics is None:
            from .compare import compare

            base = self._base_run()
            pairs = pd.DataFrame({
                "tenant_id": [base.tenants[0]], "base_run_id": [base.run_ids[0]],
                "replay_run_id": [self.run_id], "status": [self.status],
                "exact_policies": [self.model_policy in EXACT_MODEL_POLICIES
                                   and self.tool_policy in EXACT_TOOL_POLICIES],
            })
            row = compare(base, self.events, pairs).iloc[0].to_dict()
            self._metrics = {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
        return self._metrics

    @property
    def comparability(self) -> str:
        """``exact``, ``aligned``, ``diverged_but_comparable`` or ``non_comparable``
        (rules: docs/metrics.md; advice: :data:`replaykit.COMPARABILITY`)."""
        return str(self.metrics["comparability"])

    # ------------------------------------------------------------------ resume / persist
    def resume(self, fixtures: Any = None) -> ReplayResult:
        """Replay again with ``fixtures`` added to this replay's fixtures (same policies,
        executors and replay id). Returns a new result; this one is unchanged.

        Raises:
            ReplayError: the result was loaded from disk without its branch.
        """
        if self.branch is None:
            raise ReplayError("this result has no branch (loaded from disk); rebuild the "
                              "branch and call rk.replay", run_id=None, tenant_id=None)
        return replay(self.branch, model_policy=self.model_policy, tool_policy=self.tool_policy,
                      fixtures=self.fixtures.merge(fixtures), model_executor=self._executors[0],
                      tool_executor=self._executors[1], replay_id=self.replay_id,
                      cache=self._cache[0], cache_mode=self._cache[1])

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write ``events.parquet`` plus ``manifest.json`` (status, policies, branch,
        requirements, effects, probes, annotations, metrics) into folder ``path``.

        What is written names no absolute path of this machine: the ``source`` column names
        each input file relative to the folder holding all of them (``isplay:claims.json``).

        Raises:
            LoadError: ``reason="bad_tenant"``: a tenant id breaks the tenant-id rule
                (nothing is written).
        """
        from ..tenancy import check_tenant_column

        out = Path(path)
        base_t = (self.base.run(self.branch.run_id, tenant_id=self.branch.tenant_id).table
                  if self.branch is not None else self.base.table)
        for name, t in (("events", self.events.table), ("base", base_t)):
            check_tenant_column(t.column("tenant_id"), source=str(out / f"{name}.parquet"))
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(_shared_sources(self.events.table), out / "events.parquet")
        pq.write_table(_shared_sources(base_t), out / "base.parquet")
        manifest = {
            "format": "replaykit.replay/v1", "replayId": self.replay_id, "status": self.status,
            "error": self.error, "modelPolicy": self.model_policy,
            "toolPolicy": self.tool_policy,
            "branch": self.branch.to_dict() if self.branch is not None else None,
            "tenantId": self.branch.tenant_id if self.branch is not None else None,
            "fixtures": [f.to_dict() for f in self.fixtures],
            "requirements": self.requirements, "effects": self.effects, "probes": self.probes,
            "annotations": self.annotations, "metrics": self.metrics,
        }
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str),
                                           encoding="utf-8")
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReplayResult:
        """Read a result written by :meth:`save`. The loaded result can be inspected and
        compared; :meth:`resume` needs the live branch and is not available.

        Raises:
            FileNotFoundError: no manifest in ``path``.
            LoadError: ``reason="special_file"``: ``path`` or a file of it is a FIFO, socket
                or device (never opened).
            LoadError: ``reason="bad_tenant"``: a stored tenant id breaks the tenant-id rule.
        """
        from ..tenancy import check_tenant_column

        p = Path(path)
        for name in (".", "manifest.json", "events.parquet", "base.parquet"):
            refuse_special_file(p / name)  # a FIFO or device would block: said, never opened
        m = json.loads((p / "manifest.json").read_text(encoding="utf-8"))
        events = EventLog(cast_events(pq.read_table(p / "events.parquet")))
        base = EventLog(pq.read_table(p / "base.parquet").cast(EVENTS_SCHEMA))
        for name, lg in (("events", events), ("base", base)):
            check_tenant_column(lg.table.column("tenant_id"), source=str(p / f"{name}.parquet"))
        from .fixtures import Fixture

        fx = FixtureRegistry([Fixture(
            fixture_id=f["fixtureId"], project_id=f["projectId"], tool_name=f["toolName"],
            output=f.get("output"), args_hash=f["matcher"].get("argsHash"),
            args_subset=f["matcher"].get("argsSubset"),
            scope_replay_id=(f.get("scope") or {}).get("replayId"),
            scope_branch_id=(f.get("scope") or {}).get("branchId"),
            is_error=bool(f.get("isError", False)), provenance=f["provenance"],
            created_by=f.get("createdBy"), note=f.get("note")) for f in m["fixtures"]])
        res = cls(branch=None, status=m["status"], events=events, model_policy=m["modelPolicy"],
                  tool_policy=m["toolPolicy"], fixtures=fx, requirements=m["requirements"],
                  effects=m["effects"], probes=m["probes"], annotations=m["annotations"],
                  error=m["error"], replay_id=m["replayId"], base=base)
        res._metrics = m["metrics"]
        res.branch_dict = m["branch"]  # type: ignore[attr-defined]
        return res


def replay(
    branch: Branch,
    *,
    model_policy: str | None = None,
    tool_policy: str | None = None,
    fixtures: Any = None,
    model_executor: ModelExecutor | None = None,
    tool_executor: ToolExecutor | None = None,
    replay_id: str | None = None,
    probe_runs: int = 2,
    cache: Any = None,
    cache_mode: str = "cross-mode-readable",
) -> ReplayResult:
    """Re-drive ``branch``'s base run from its checkpoint under explicit policies.

    Events up to the checkpoint are copied (``inherited=True``). Interventions are applied to
    the events their selectors name after the checkpoint (one that names nothing becomes a
    synthetic ``intervention.created`` event, kind ``intervention``; a failing patch keeps the
    original value and records ``payload["replayPatch"]``, the name replaykit writes; records
    under isplay's name ``isplayPatch`` are read too, see :meth:`ReplayResult.patches_df`).
    Then, call by call:

    * model calls -- ``recorded-only``: the recorded output of the same call; ``blocked``: the
      model is never called, the recorded output is kept and the call is logged as blocked;
      ``determinism-probe``: ``model_executor(request, policy=...)`` is called ``probe_runs``
      times and compared (see :meth:`ReplayResult.probes_df`), the recorded output is kept;
      ``pinned-live`` / ``compatible-live``: the executor's output replaces the recorded one;
      when it lists tool calls (``toolCalls``: name, args, optional id), they replace the
      recorded tool calls of that model call (a call equal to a recorded one gets its
      recorded result; others are divergent and go to the tool policy; see docs/metrics.md).
    * tool calls -- when the (tool, args hash) signature equals the recording, the recorded
      result is served. A divergent call is served by a fixture (``fixtures``) under
      ``pause-for-fixture`` (missing: the replay ends ``paused`` with an open requirement) and
      ``recorded-only`` (missing: ``failed``); ``blocked`` gives an error result without
      executing; ``live-readonly`` / ``live-explicit`` call
      ``tool_executor(tool_name, args, policy=..., readonly=...)``.

    Policies default to the branch's ``replay_policy``, else recorded-only / pause-for-fixture.

    Args:
        branch: the branch to replay.
        model_policy / tool_policy: see above (names as in the isplay CLI).
        fixtures: a :class:`FixtureRegistry`, an iterable of fixtures, a fixtures file path.
        model_executor / tool_executor: callables for the live and probe policies.
        replay_id: id used for replay-scoped fixtures (default: derived from the branch).
        probe_runs: executor calls per model call under ``determinism-probe``.
        cache / cache_mode: a provider cache (``get(key)``, e.g. :class:`~replaykit.InMemoryCache`)
            read for every re-served event after the checkpoint that carries a ``cache_key``
            (origin ``recorded`` or ``patched``), under the read modes of
            :func:`replaykit.open_replay`: ``cross-mode-readable`` (default) -- a miss raises
            :class:`~replaykit.ReplayCacheMissError`; ``strict-mode`` -- any read raises;
            ``best-effort`` -- a miss goes on (``via="live"``). Every read is listed in
            :meth:`ReplayResult.cache_lookups_df`. ``cache=None`` replays from the log alone.

    Returns:
        A :class:`ReplayResult` (``completed``, ``paused`` or ``failed``).

    Raises:
        ValueError: an unknown policy name.
        ReplayError: a live or probe policy without its executor (fail fast, nothing runs);
            the branch's run or checkpoint does not exist.
        ReplayCacheMissError: a cache read fails under ``cache_mode`` (``key``, ``mode`` and
            ``seq`` -- the base run's seq of the event -- name it).

    Example:
        >>> res = rk.replay(branch, model_policy="recorded-only",
        ...                 tool_policy="pause-for-fixture")  # doctest: +SKIP
        >>> res.status  # doctest: +SKIP
        'paused'
    """
    pol = branch.replay_policy
    mp = model_policy or (pol.model if pol else "recorded-only")
    tp = tool_policy or (pol.tool if pol else "pause-for-fixture")
    if mp not in MODEL_POLICIES:
        raise ValueError(f"model_policy must be one of {MODEL_POLICIES}, got {mp!r}")
    if tp not in TOOL_POLICIES:
        raise ValueError(f"tool_policy must be one of {TOOL_POLICIES}, got {tp!r}")
    if cache_mode not in CACHE_MODES:
        raise ValueError(f"cache_mode must be one of {CACHE_MODES}, got {cache_mode!r}")
    if mp in LIVE_MODEL_POLICIES and model_executor is None:
        raise ReplayError(f"model policy {mp!r} needs a model_executor callable; pass one or "
                          "use 'recorded-only'", run_id=branch.run_id, tenant_id=branch.tenant_id)
    if tp in LIVE_TOOL_POLICIES and tool_executor is None:
        raise ReplayError(f"tool policy {tp!r} needs a tool_executor callable; pass one or use "
                          "'pause-for-fixture'", run_id=branch.run_id, tenant_id=branch.tenant_id)
    registry = FixtureRegistry.coerce(fixtures)
    rid = replay_id or f"rp-{branch.branch_id}"
    base = branch.base_run()
    t = base.table
    cp = branch.checkpoint_seq()
    seq = t.column("seq").to_numpy()
    after = seq > cp

    # which interventions touch which events (column-wise per intervention)
    touched: dict[int, list[Any]] = {}
    unmatched = []
    for iv in branch.interventions:
        hits = np.flatnonzero(_selector_mask(t, iv.kind, iv.selector) & after)
        if not len(hits):
            unmatched.append(iv)
        for h in hits.tolist():
            touched.setdefault(h, []).append(iv)

    rows = t.to_pylist()  # one run, re-driven event by event (a per-event API)
    new_run = f"{branch.run_id}~{branch.branch_id}"
    src_type = {r["kind"]: r["type"] for r in rows}
    out: list[dict[str, Any]] = []
    ann: list[dict[str, Any]] = []
    requirements: list[dict[str, Any]] = []
    effects: list[dict[str, Any]] = []
    probes: list[dict[str, Any]] = []
    status, error = "completed", None

    lookups: list[dict[str, Any]] = []

    def read_cache(row: dict[str, Any], base_seq: int | None) -> None:
        """The cache read of one re-served keyed event, under the locked read mode."""
        key = row["cache_key"]
        at = base_seq if base_seq is not None else len(out)
        if cache_mode == "strict-mode":
            raise ReplayCacheMissError(run_id=branch.run_id, tenant_id=branch.tenant_id,
                                       key=key, mode=cache_mode, seq=at)
        hit = cache.get(key) is not None
        if not hit and cache_mode == "cross-mode-readable":
            raise ReplayCacheMissError(run_id=branch.run_id, tenant_id=branch.tenant_id,
                                       key=key, mode=cache_mode, seq=at)
        lookups.append({"seq": len(out), "base_seq": base_seq, "cache_key": key, "hit": hit,
                        "via": "cache" if hit else "live"})

    convo: list[dict[str, Any]] = []  # what an implicit model request holds

    def emit(row: dict[str, Any], origin: str, base_seq: int | None) -> None:
        if cache is not None and origin in ("recorded", "patched") and row.get("cache_key"):
            read_cache(row, base_seq)
        if row.get("text") is not None and row["kind"] in _CONVO_ROLES:
            convo.append({"role": _CONVO_ROLES[row["kind"]], "content": row["text"]})
        r = dict(row)
        r["run_id"] = new_run
        r["parent_run_id"] = branch.run_id
        r["seq"] = len(out)
        out.append(r)
        ann.append({"seq": r["seq"], "base_seq": base_seq, "origin": origin,
                    "provenance": provenance_of(origin, r["kind"])})

    def synthetic(like: dict[str, Any], typ: str, kind: str, payload: dict[str, Any],
                  **cols: Any) -> dict[str, Any]:
        r: dict[str, Any] = {c: None for c in EVENTS_SCHEMA.names}
        r.update(tenant_id=like["tenant_id"], type=typ, kind=kind, is_error=False,
                 inherited=False, payload=canonical_json(payload), source=f"replay:{rid}")
        r.update(cols)
        return r

    def serve(r: dict[str, Any], args: Any, result_type: str, *, origin: str,
              base_seq: int | None) -> bool:
        """Emit a divergent tool call and its result under the tool policy; False when the
        replay stops there (no fixture: paused or failed, with an open requirement)."""
        nonlocal status, error
        ref = r["ref_id"]
        eff = {"step": len(out), "ref_id": ref, "tool_name": r["tool_name"],
               "args_hash": r["args_hash"], "divergent": True, "action": "recorded",
               "fixture_id": None, "provenance": None}
        served: tuple[Any, bool, str, dict[str, Any]] | None = None
        if tp in ("pause-for-fixture", "recorded-only"):
            fx = registry.resolve(tool_name=r["tool_name"], args=args, args_hash=r["args_hash"],
                                  project_id=branch.project_id, branch_id=branch.branch_id,
                                  replay_id=rid)
            if fx is not None:
                served = (fx.output, fx.is_error, "fixture",
                          {"fixtureId": fx.fixture_id, "provenance": fx.provenance})
                eff.update(action="fixture", fixture_id=fx.fixture_id, provenance=fx.provenance)
        elif tp == "blocked":
            served = ({"error": {"code": "BLOCKED", "message": "tool execution blocked by "
                                 "replay policy"}}, True, "blocked", {"blocked": True})
            eff["action"] = "blocked"
        else:
            assert tool_executor is not None
            value, err = _tool_output(tool_executor(r["tool_name"], args, policy=tp,
                                                    readonly=tp == "live-readonly"))
            served = (value, err, "executor", {"executedBy": tp})
            eff["action"] = "executed"
        emit(r, origin, base_seq)
        if served is None:
            eff["action"] = "missing"
            effects.append(eff)
            req = {"requirement_id": f"req-{len(requirements) + 1}", "tool_name": r["tool_name"],
                   "args": canonical_json(args), "args_hash": r["args_hash"], "ref_id": ref,
                   "step": len(out) - 1, "status": "open"}
            requirements.append(req)
            if tp == "pause-for-fixture":
                status = "paused"
            else:
                status = "failed"
                error = (f"divergent tool call {r['tool_name']!r} (ref {ref}) has no recorded "
                         "output and no fixture; tool policy 'recorded-only' fails here")
            return False
        effects.append(eff)
        value, err, origin2, extra = served
        emit(synthetic(r, result_type, "tool_result",
                       {"type": result_type, "refId": ref, "toolName": r["tool_name"],
                        "output": value, "isError": err, **extra},
                       ref_id=ref, tool_name=r["tool_name"], is_error=err, text=_text_of(value),
                       turn=r.get("turn"), step=r.get("step"), ts=r.get("ts")),
             origin2, None)
        return True

    live_outputs: dict[str, Any] = {}
    requested = {x["ref_id"] for x in rows if x["kind"] == "model_request" and x["ref_id"]}
    implicit: set[str] = set()  # calls without a request row, already sent to the executor
    replaced_calls: set[str] = set()  # recorded tool calls a live model output replaced
    recorded: _Recorded | None = None
    call_index = {x["ref_id"]: k for k, x in enumerate(rows) if x["kind"] == "tool_call"}
    dropped_results: set[str] = set()
    cp_done = False
    for i, row in enumerate(rows):
        if not after[i]:
            emit(dict(row, inherited=True), "copied", row["seq"])
            continue
        if not cp_done:
            cp_done = True
            for iv in unmatched:
                emit(synthetic(row, "intervention.created", "intervention",
                               {"type": "intervention.created", **iv.to_dict(),
                                "matched": False}, ref_id=iv.intervention_id,
                               text=iv.description or None), "synthetic", None)
        r = dict(row)
        origin = "recorded"
        kind = r["kind"]
        if i in touched:
            payload = json.loads(r["payload"])
            records = []
            for iv in touched[i]:
                if iv.kind == "tool_args_patch":
                    a_box, ak, raw_args = _slot(payload, _ARGS_KEYS, ref=r["ref_id"])
                    t_box, tk, tool = _slot(payload, _TOOL_KEYS, ("name",), ref=r["ref_id"])
                    args_value, as_text = _decoded_args(raw_args)
                    # Codex keeps a call's arguments as JSON text, even text that is not JSON
                    # (a redacted export): patched ones are written as JSON text too
                    as_text = as_text or (isinstance(raw_args, str)
                                          and a_box.get("type") in _CODEX_CALLS)
                    view = {"args": args_value,
                            "toolName": tool,
                            "argsHash": payload.get("argsHash"),
                            "argsArtifactId": payload.get("argsArtifactId")}
                    new, fails = apply_tool_args_patch(
                        view, iv.patch,
                        where=f"intervention {iv.intervention_id}, call {r['ref_id']}",
                        stacklevel=3)  # the warning names the line that called replay()
                    if not fails:
                        # Write back where the format keeps them, in the format's own shape
                        # (a JSON string stays a JSON string).
                        a_box[ak or "args"] = (
                            canonical_json(new["args"]) if as_text else new["args"]
                        )
                        if iv.patch.get("toolName") and new["toolName"] != tool:
                            # only a rename writes the tool's name, where the format keeps
                            # it (a Langfuse observation: ``name`` beside its ``input``);
                            # nothing outside the arguments is touched otherwise
                            if tk is None and "name" in a_box:
                                t_box, tk = a_box, "name"
                            t_box[tk or "toolName"] = new["toolName"]
                        if "argsHash" in payload or (ak == "args" and a_box is payload):
                            payload["argsHash"] = new.get("argsHash", args_hash(new["args"]))
                        payload.pop("argsArtifactId", None)
                else:
                    new, fails = apply_operations(payload, iv.patch.get("operations", []))
                    if not fails:
                        payload = new
                records.append({"interventionId": iv.intervention_id,
                                "status": "failed" if fails else "applied",
                                **({"failures": fails} if fails else {})})
            payload[PATCH_RECORD_KEY] = records
            r["payload"] = canonical_json(payload)
            if kind == "tool_call":
                _, ak, args = _slot(payload, _ARGS_KEYS, ref=r["ref_id"])
                _, _, tool = _slot(payload, _TOOL_KEYS, ("name",), ref=r["ref_id"])
                if ak is not None:
                    r["args_hash"] = args_hash(args)
                    r["text"] = args if isinstance(args, str) else canonical_json(args)
                if isinstance(tool, str):
                    r["tool_name"] = tool
            elif kind == "model_request" and isinstance(payload.get("prompt"), str):
                r["text"] = payload["prompt"]
            elif kind == "user_message" and isinstance(payload.get("text"), str):
                r["text"] = payload["text"]
            origin = "patched"

        if kind == "model_request":
            req = json.loads(r["payload"])
            ref = r["ref_id"]
            if mp == "determinism-probe":
                assert model_executor is not None
                outs = [canonical_json(model_executor(req, policy=mp)) for _ in range(probe_runs)]
                recorded = next((x for x in rows[i + 1:] if x["ref_id"] == ref
                                 and x["kind"] == "model_response"), None)
                rec_out = (canonical_json(json.loads(recorded["payload"]).get("output"))
                           if recorded else None)
                probes.append({"ref_id": ref, "runs": probe_runs,
                               "distinct_outputs": len(set(outs)),
                               "deterministic": len(set(outs)) == 1,
                               "matches_recorded": rec_out is not None and outs[0] == rec_out})
            elif mp in ("pinned-live", "compatible-live") and ref is not None:
                # (a request row without a call id -- toh's request/header -- names no
                # call; its calls are sent at their first chunk, below)
                assert model_executor is not None
                live_outputs[ref] = model_executor(req, policy=mp)
            elif mp == "blocked":
                effects.append({"step": len(out), "ref_id": ref, "tool_name": None,
                                "args_hash": None, "divergent": False, "action": "blocked",
                                "fixture_id": None, "provenance": None})
            emit(r, origin, row["seq"])
            continue
        if (kind in ("model_chunk", "model_response") and mp in ("pinned-live",
                                                                 "compatible-live")
                and r["ref_id"] is not None and r["ref_id"] not in requested
                and r["ref_id"] not in implicit and not r.get("inherited")):
            # a call the log records without a request row of its own (toh: chunks of one
            # turn/step): the executor is asked at the call's first event, with the
            # conversation replayed so far as the request
            assert model_executor is not None
            ref = r["ref_id"]
            implicit.add(ref)
            value = model_executor({"refId": ref, "turn": r.get("turn"), "step": r.get("step"),
                                    "messages": list(convo), "implicit": True}, policy=mp)
            live_outputs[ref] = value
            if kind == "model_chunk" and isinstance(value, Mapping) and isinstance(
                    value.get("chunks"), list):
                for c in value["chunks"]:
                    syn = _chunk_row(r, c)
                    if syn is None:
                        break
                    emit(syn, "executor", None)
        if kind in ("model_response", "model_chunk") and r["ref_id"] in live_outputs:
            if kind == "model_chunk":
                continue  # the live output replaces the recorded stream
            mref = r["ref_id"]
            value = live_outputs.pop(mref)
            payload = json.loads(r["payload"])
            payload["output"] = value
            r.update(payload=canonical_json(payload), text=_text_of(value),
                     finish=(value.get("finish") if isinstance(value, Mapping) else None)
                     or r["finish"], input_tokens=None, output_tokens=None)
            emit(r, "executor", row["seq"])
            try:
                calls = _live_tool_calls(value, mref)
            except ValueError as exc:
                raise ReplayError(str(exc), run_id=branch.run_id,
                                  tenant_id=branch.tenant_id) from None
            if calls is None:
                continue  # the output names no tool calls: the recorded ones stay
            # the model's own tool calls replace the recorded calls of this model call
            if recorded is None:
                recorded = _Recorded(rows)
            mine = recorded.calls_of(i, mref)
            replaced_calls.update(x["ref_id"] for x in mine)
            recorded_by_sig = {(x["tool_name"], x["args_hash"]): x for x in mine}
            like = mine[0] if mine else r
            for call_id, tool, args in calls:
                # a tool-argument patch aimed at the recorded call of the same id applies
                # to the live call that replaces it
                records = []
                for iv in touched.get(call_index.get(call_id, -1), []):
                    if iv.kind != "tool_args_patch":
                        continue
                    args_value, as_text = _decoded_args(args)
                    new_call, fails = apply_tool_args_patch(
                        {"args": args_value, "toolName": tool, "argsHash": None,
                         "argsArtifactId": None}, iv.patch,
                        where=f"intervention {iv.intervention_id}, call {call_id}",
                        stacklevel=3)
                    if not fails:
                        args = (canonical_json(new_call["args"]) if as_text
                                else new_call["args"])
                        tool = new_call["toolName"]
                    records.append({"interventionId": iv.intervention_id,
                                    "status": "failed" if fails else "applied",
                                    **({"failures": fails} if fails else {})})
                ah = args_hash(args) if args is not None else None
                call = synthetic(
                    like, src_type.get("tool_call", "tool.call"), "tool_call",
                    {"type": src_type.get("tool_call", "tool.call"), "refId": call_id,
                     "toolName": tool, "args": args, "argsHash": ah, "modelCallId": mref,
                     **({PATCH_RECORD_KEY: records} if records else {})},
                    ref_id=call_id, tool_name=tool, args_hash=ah,
                    text=None if args is None else (
                        args if isinstance(args, str) else canonical_json(args)),
                    turn=r.get("turn"), step=r.get("step"), ts=r.get("ts"))
                rec = recorded_by_sig.get((tool, ah))
                result = None if rec is None else recorded.results.get(rec["ref_id"])
                if result is not None:  # the recording has this very call's result
                    effects.append({"step": len(out), "ref_id": call_id, "tool_name": tool,
                                    "args_hash": ah, "divergent": False, "action": "recorded",
                                    "fixture_id": None, "provenance": None})
                    emit(call, "executor", None)
                    emit(dict(result, ref_id=call_id), "recorded", result["seq"])
                    continue
                if not serve(call, args, src_type.get("tool_result", "tool.result"),
                             origin="executor", base_seq=None):
                    break
            if status != "completed":
                break
            continue
        if kind in ("tool_call", "tool_result") and r["ref_id"] in replaced_calls:
            continue
        if kind == "tool_result" and r["ref_id"] in dropped_results:
            continue
        if kind != "tool_call":
            emit(r, origin, row["seq"])
            continue

        # a tool call: recorded signature, or divergent and served by the tool policy
        ref = r["ref_id"]
        divergent = (r["tool_name"], r["args_hash"]) != (row["tool_name"], row["args_hash"])
        if not divergent:
            effects.append({"step": len(out), "ref_id": ref, "tool_name": r["tool_name"],
                            "args_hash": r["args_hash"], "divergent": False,
                            "action": "recorded", "fixture_id": None, "provenance": None})
            emit(r, origin, row["seq"])
            continue
        dropped_results.add(ref)
        payload = json.loads(r["payload"])
        _, _, args = _slot(payload, _ARGS_KEYS, ref=ref)
        result_type = next((x["type"] for x in rows[i + 1:] if x["ref_id"] == ref
                            and x["kind"] == "tool_result"), src_type.get("tool_result",
                                                                          "tool.result"))
        if not serve(r, args, result_type, origin=origin, base_seq=row["seq"]):
            break

    if not cp_done:  # checkpoint is the last event: interventions match nothing
        for iv in unmatched:
            emit(synthetic(rows[-1], "intervention.created", "intervention",
                           {"type": "intervention.created", **iv.to_dict(), "matched": False},
                           ref_id=iv.intervention_id, text=iv.description or None),
                 "synthetic", None)

    cols = {c: [r.get(c) for r in out] for c in EVENTS_SCHEMA.names}
    cols["source"] = [s if s is not None else f"replay:{rid}" for s in cols["source"]]
    table = events_table({k: v for k, v in cols.items()})
    # each event's origin travels with the events (schema.EXTENSION_COLUMNS)
    origin = pa.array([a["origin"] for a in ann], pa.string()).dictionary_encode()
    table = table.append_column(EXTENSION_COLUMNS.field("replay_origin"),
                                origin.cast(EXTENSION_COLUMNS.field("replay_origin").type))
    prov = pa.array([a["provenance"] for a in ann], pa.string()).dictionary_encode()
    table = table.append_column(EXTENSION_COLUMNS.field("replay_provenance"),
                                prov.cast(EXTENSION_COLUMNS.field("replay_provenance").type))
    runs = base.runs
    if runs.num_rows:
        runs = runs.set_column(runs.schema.get_field_index("run_id"), "run_id",
                               pa.array([new_run] * runs.num_rows, pa.string()))
        runs = runs.set_column(runs.schema.get_field_index("parent_run_id"), "parent_run_id",
                               pa.array([branch.run_id] * runs.num_rows, pa.string()))
    events = EventLog(table, runs=runs)
    return ReplayResult(branch=branch, status=status, events=events, model_policy=mp,
                        tool_policy=tp, fixtures=registry, requirements=requirements,
                        effects=effects, probes=probes, annotations=ann, error=error,
                        replay_id=rid, base=branch.base,
                        executors=(model_executor, tool_executor),
                        cache=(cache, cache_mode), cache_lookups=lookups)


_ = to_pandas  # re-exported helpers stay importable from one place

