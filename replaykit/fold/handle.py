"""The replay handle: walk one run event by event (step / seek / replay_turn)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ReplayCacheMissError, ReplayError, ReplayUnknownEventError
from ..eventlog.log import EventLog
from ._frozen import FrozenDict, freeze
from .cache import CACHE_MODES, CacheLookup, CacheMode
from .frame import StateFrame, _require_tenant, fold
from .projection import agent
from .scalar import ScalarReducer

__all__ = ["Done", "ReplayHandle", "StepResult", "TurnResult", "open_replay"]

_BLOCK = 2048


@dataclass(frozen=True)
class StepResult:
    """One processed event: its ``seq``, ``type``, ``kind``, the state after it, the cache lookup.

    ``index`` is the 1-based number of events processed in the window so far.
    ``cache_lookup`` is None for rows without a cache key (or when no cache was given).
    """

    seq: int
    type: str
    kind: str
    state: FrozenDict
    cache_lookup: CacheLookup | None
    index: int
    done: Literal[False] = False


@dataclass(frozen=True)
class Done:
    """Returned by ``step()`` past the end of the window: ``done`` is True."""

    seq: int | None
    state: FrozenDict
    done: Literal[True] = True


@dataclass(frozen=True)
class TurnResult:
    """What ``replay_turn`` walked: its steps, the post-turn state, whether a boundary came."""

    steps: tuple[StepResult, ...]
    state: FrozenDict
    boundary: bool
    message_id: str | None


class ReplayHandle:
    """A single-use cursor over one run's events (see :func:`open_replay`)."""

    def __init__(
        self,
        log: EventLog,
        run_id: str,
        *,
        tenant_id: str,
        from_seq: int | None,
        up_to_seq: int | None,
        projections: Any,
        cache: Any,
        cache_mode: CacheMode,
        from_state: Mapping[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.tenant_id = tenant_id
        self.from_seq = from_seq
        self.up_to_seq = up_to_seq
        self._cache_mode = cache_mode
        self._cache = cache
        self._projections = projections
        self._reducer = ScalarReducer(projections)
        run = log.filter(tenant_id=tenant_id, run_ids=run_id)
        if len(run) == 0:
            raise ReplayError(
                f"tenant {tenant_id!r} has no run {run_id!r} in this log; pass the tenant that "
                "owns the run (see log.runs_df())",
                run_id=run_id,
                tenant_id=tenant_id,
            )
        self._table: pa.Table | None = run.window(from_seq, up_to_seq).table
        self._n = self._table.num_rows
        self._seqs = self._table.column("seq").to_numpy() if self._n else np.zeros(0, np.int64)
        self._boundaries = self._turn_boundaries(self._table)
        self._rows: list[dict[str, Any]] = []
        self._rows_from = 0
        self._frame: StateFrame | None = None
        self._from_state = from_state is not None
        if from_state is not None:
            want = [f.name for f in self._reducer.fields]
            missing = [n for n in want if n not in from_state]
            if missing:
                raise ValueError(
                    f"from_state lacks the fields {missing} of the projections; pass a state "
                    "folded with the same projections (rk.fold(log, projections).at(...))")
            self._acc = self._reducer.load(freeze({n: from_state[n] for n in want}))
        else:
            self._acc = self._reducer.zero()
        self._zero = self._reducer.snapshot(self._acc)
        self._state = self._zero
        self._pos = 0
        self._closed = False

    # ------------------------------------------------------------------ observation
    @property
    def cache_mode(self) -> CacheMode:
        """The cache read mode, fixed when the handle opens (part of :attr:`identity`)."""
        return self._cache_mode

    @cache_mode.setter
    def cache_mode(self, value: object) -> None:
        raise AttributeError(
            f"cache_mode is locked when the handle opens (it is {self._cache_mode!r}); a "
            "mid-replay switch would make the divergence signal incoherent. Open a new handle "
            f"with rk.open_replay(..., cache_mode={value!r})")

    @property
    def identity(self) -> tuple[str, str, int | None, int | None, str]:
        """What the handle replays and how: (tenant_id, run_id, from_seq, up_to_seq,
        cache_mode). Two handles with equal identities walk the same states."""
        return (self.tenant_id, self.run_id, self.from_seq, self.up_to_seq, self._cache_mode)

    @property
    def state(self) -> FrozenDict:
        """The current state (the frozen zero state before the first step)."""
        return self._state

    @property
    def seq(self) -> int | None:
        """The seq of the most recently processed event (``from_seq`` before the first step)."""
        return int(self._seqs[self._pos - 1]) if self._pos else self.from_seq

    @property
    def position(self) -> int:
        """How many events of the window have been processed."""
        return self._pos

    def __len__(self) -> int:
        return self._n

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _turn_boundaries(t: pa.Table) -> np.ndarray:
        """Rows that close a turn: ``turn_end`` rows; without any, the last row of each turn."""
        if t.num_rows == 0:
            return np.zeros(0, bool)
        kind = pc.cast(t.column("kind"), pa.string())
        ends = np.asarray(pc.equal(kind, "turn_end").combine_chunks())
        if ends.any():
            return ends
        turn = t.column("turn").combine_chunks()
        if turn.null_count == len(turn):
            return ends
        tv = np.asarray(pc.fill_null(turn, -1))
        out = np.zeros(len(tv), bool)
        out[:-1] = (tv[1:] != tv[:-1]) & (tv[:-1] >= 0)
        out[-1] = tv[-1] >= 0
        return out

    def _row(self, i: int) -> dict[str, Any]:
        if not self._rows_from <= i < self._rows_from + len(self._rows):
            assert self._table is not None
            self._rows = self._table.slice(i, _BLOCK).to_pylist()
            self._rows_from = i
        return self._rows[i - self._rows_from]

    def _check_open(self) -> None:
        if self._closed:
            raise ReplayError(
                "this handle is closed; open a new one with rk.open_replay(...)",
                run_id=self.run_id,
                tenant_id=self.tenant_id,
            )

    def _lookup(self, row: dict[str, Any]) -> CacheLookup | None:
        key = row.get("cache_key")
        if key is None or self._cache is None:
            return None
        if self.cache_mode == "strict-mode":
            raise ReplayCacheMissError(run_id=self.run_id, tenant_id=self.tenant_id, key=key,
                                       mode=self.cache_mode, seq=row["seq"])
        value = self._cache.get(key)
        if value is not None:
            return CacheLookup(key, True, "cache", value)
        if self.cache_mode == "best-effort":
            return CacheLookup(key, False, "live", None)
        raise ReplayCacheMissError(run_id=self.run_id, tenant_id=self.tenant_id, key=key,
                                   mode=self.cache_mode, seq=row["seq"])

    # ------------------------------------------------------------------ walking
    def step(self) -> StepResult | Done:
        """Process the next event; :class:`Done` past the window's end.

        Raises:
            ReplayCacheMissError: the row's cache read fails under the handle's mode (the
                handle does not advance).
            ReplayUnknownEventError: the row has no usable event type.
            ReplayError: the handle is closed.
        """
        self._check_open()
        if self._pos >= self._n:
            return Done(self.seq, self._state)
        row = self._row(self._pos)
        if not row.get("type"):
            raise ReplayUnknownEventError(run_id=self.run_id, tenant_id=self.tenant_id,
                                          event_type=row.get("type"), seq=row["seq"])
        lookup = self._lookup(row)
        self._reducer.apply(self._acc, dict(row))
        self._state = self._reducer.snapshot(self._acc)
        self._pos += 1
        return StepResult(row["seq"], row["type"], row["kind"], self._state, lookup, self._pos)

    def seek(self, seq: int | None) -> FrozenDict:
        """Re-position after every event with ``seq <= seq`` (None: before the first).

        Deterministic and idempotent; the next ``step()`` continues at the following event.
        The window is folded column-wise once; later seeks only look the state up.
        Returns the state at the new position.

        Raises:
            ReplayError: the handle is closed.
        """
        self._check_open()
        i = 0 if seq is None else int(np.searchsorted(self._seqs, seq, side="right"))
        if self._from_state:
            # rooted at a saved state: re-fold from that state (the fold engine starts at
            # zero), row by row -- deterministic and independent of the cursor
            acc = self._reducer.load(self._zero)
            for k in range(i):
                self._reducer.apply(acc, dict(self._row(k)))
            self._acc = acc
            self._state = self._reducer.snapshot(acc)
            self._pos = i
            return self._state
        if self._frame is None:
            assert self._table is not None
            self._frame = fold(self._table, self._projections, state_hash=False)  # states only
        self._state = self._frame.state_at_row(i - 1, 0)
        self._acc = self._reducer.load(self._state)
        self._pos = i
        return self._state

    def replay_turn(self, message_id: str | None = None) -> TurnResult:
        """Step to the next turn boundary (``turn_end`` row; matching ``message_id`` if given).

        Formats without ``turn_end`` rows use the last event of each ``turn`` value. Stops
        at the window's end if no boundary comes (``boundary=False``).

        Raises:
            as :meth:`step`.
        """
        steps: list[StepResult] = []
        while True:
            pos = self._pos
            res = self.step()
            if isinstance(res, Done):
                return TurnResult(tuple(steps), self._state, False, message_id)
            steps.append(res)
            if self._boundaries[pos]:
                ref = self._row(pos).get("ref_id")
                if message_id is None or ref == message_id:
                    return TurnResult(tuple(steps), self._state, True, ref)

    def close(self) -> None:
        """Release the rows; idempotent. Later ``step``/``seek`` raise ReplayError."""
        self._closed = True
        self._rows = []
        self._frame = None
        self._table = None

    def __enter__(self) -> ReplayHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[StepResult]:
        while True:
            res = self.step()
            if isinstance(res, Done):
                return
            yield res

    def __repr__(self) -> str:
        return (
            f"ReplayHandle(run={self.run_id!r}, tenant={self.tenant_id!r}, "
            f"at {self._pos}/{self._n}, mode={self.cache_mode})"
        )


def open_replay(
    log: EventLog,
    run_id: str,
    *,
    tenant_id: str,
    from_seq: int | None = None,
    up_to_seq: int | None = None,
    projections: Any = None,
    cache: Any = None,
    cache_mode: CacheMode = "cross-mode-readable",
    from_state: Any = None,
) -> ReplayHandle:
    """Open a replay handle over one run of one tenant.

    Args:
        log: the event log.
        run_id: the run (chat / session) to walk.
        tenant_id: REQUIRED, no default: the tenant that owns the run.
        from_seq: exclusive lower bound (None: from the start); the fold starts at zero here.
        up_to_seq: inclusive upper bound (None: to the end).
        projections: what state to fold (default :func:`replaykit.agent`).
        cache: a cache backend (``get(key)``) consulted for rows with a ``cache_key``; None
            replays from the log alone.
        cache_mode: ``"cross-mode-readable"`` (default; a miss raises), ``"strict-mode"``
            (any read raises) or ``"best-effort"`` (a miss continues, ``via="live"``).
            Locked for the handle's life: assigning ``h.cache_mode`` raises AttributeError.
        from_state: start from a saved state instead of zero (snapshot-rooted replay): the
            state after event ``from_seq``, as a mapping (``StateFrame.at(...)``,
            ``h.state``), its JSON text (``replaykit.fold.state_json``), or a row of
            ``StateFrame.final()`` with ``run_id``, ``seq`` and ``state`` (its ``seq`` is the
            ``from_seq``), or a row of ``steps_df()`` (a dict or pandas row; it holds
            collection sizes, not the full state, so the state after its ``seq`` is folded
            from the run's events and checked against the row's ``state_hash``). A row of
            another run or tenant is refused. Stepping on gives, at every later event, the
            same state as the full fold of the run (docs/fold.md).

    Example:
        >>> with rk.open_replay(log, "chat-1", tenant_id="acme") as h:  # doctest: +SKIP
        ...     first = h.step()
        ...     h.seek(10)

    Raises:
        TypeError: ``tenant_id`` or ``run_id`` is None or empty.
        ValueError: unknown ``cache_mode``; ``from_state`` without a seq, with a seq other
            than ``from_seq``, not valid JSON, lacking a field of the projections, a row of
            another run or tenant, or a ``steps_df()`` row whose ``state_hash`` this log
            does not give.
        ReplayError: the tenant does not own such a run (no other tenant's rows are read).
    """
    _require_tenant(tenant_id)
    if not isinstance(run_id, str) or not run_id:
        raise TypeError(f"run_id is required (a non-empty string), got {run_id!r}")
    if cache_mode not in CACHE_MODES:
        raise ValueError(f"cache_mode must be one of {CACHE_MODES}, got {cache_mode!r}")
    state = None
    projections = agent() if projections is None else projections
    if from_state is not None:
        state, from_seq = _root_state(from_state, from_seq, run_id, tenant_id)
        if state is None:  # a steps_df() row: the state at its seq, from the log
            state = _state_of_step_row(log, run_id, tenant_id, projections, from_state,
                                       from_seq)
    return ReplayHandle(
        log,
        run_id,
        tenant_id=tenant_id,
        from_seq=from_seq,
        up_to_seq=up_to_seq,
        projections=projections,
        cache=cache,
        cache_mode=cache_mode,
        from_state=state,
    )


def _row_field(obj: Any, name: str) -> Any:
    if hasattr(obj, "to_dict") and not isinstance(obj, Mapping):
        obj = obj.to_dict()
    return obj.get(name) if isinstance(obj, Mapping) else None


def _state_of_step_row(log: EventLog, run_id: str, tenant_id: str, projections: Any,
                       row: Any, seq: int) -> Mapping[str, Any]:
    """The state after ``seq`` named by a :meth:`StateFrame.steps_df` row (which holds the
    scalar fields and collection sizes, not the full state): folded from the run's events
    up to ``seq``, checked against the row's ``state_hash`` when it has one."""
    from .hashing import state_hash

    sf = fold(log.filter(tenant_id=tenant_id, run_ids=run_id), projections)
    rows = sf.steps_df()
    if not (rows["seq"] == seq).any():
        raise ValueError(f"from_state is a steps_df() row at seq {seq}, but run {run_id!r} of "
                         f"tenant {tenant_id!r} has no event with that seq in this log")
    state = sf.at(run_id, seq, tenant_id=tenant_id)
    want = _row_field(row, "state_hash")
    if want is not None and not (isinstance(want, float) and want != want):
        if int(want) != state_hash(state):
            raise ValueError(
                f"from_state is a steps_df() row whose state_hash {int(want)} differs from "
                f"the state this log gives after seq {seq} of run {run_id!r} "
                f"({state_hash(state)}): the row is of another log or other projections")
    return state


def _root_state(obj: Any, from_seq: int | None, run_id: str, tenant_id: str | None = None
                ) -> tuple[Mapping[str, Any] | None, int]:
    """(state, seq) of a ``from_state`` argument (see :func:`open_replay`); state None for
    a :meth:`StateFrame.steps_df` row (it names a position, not a whole state)."""
    from .._base.json import JSONDecodeError, loads

    seq = from_seq
    if isinstance(obj, (str, bytes)):
        try:
            obj = loads(obj)
        except (*JSONDecodeError, ValueError) as exc:  # type: ignore[misc]
            raise ValueError(f"from_state is not valid JSON: {exc}") from None
    if hasattr(obj, "to_dict") and not isinstance(obj, Mapping):  # a pandas row
        obj = obj.to_dict()
    if not isinstance(obj, Mapping):
        raise ValueError(f"from_state must be a state mapping, its JSON text or a StateFrame "
                         f"row, got {type(obj).__name__}")
    if {"run_id", "seq"} <= set(obj) and (
            "state" in obj or {"tenant_id", "type", "kind"} <= set(obj)):
        # a row of StateFrame.final() (with its state) or steps_df() (without)
        if str(obj["run_id"]) != run_id:
            raise ValueError(f"from_state is a row of run {obj['run_id']!r}, not {run_id!r}")
        if tenant_id is not None and "tenant_id" in obj and str(obj["tenant_id"]) != tenant_id:
            raise ValueError(f"from_state is a row of tenant {obj['tenant_id']!r}, not "
                             f"{tenant_id!r}")
        row_seq = int(obj["seq"])
        if seq is not None and seq != row_seq:
            raise ValueError(f"from_state is the state after seq {row_seq}, but from_seq="
                             f"{seq}; drop from_seq or pass the matching row")
        if "state" not in obj:
            return None, row_seq
        seq, obj = row_seq, obj["state"]
        if isinstance(obj, (str, bytes)):
            try:
                obj = loads(obj)
            except (*JSONDecodeError, ValueError) as exc:  # type: ignore[misc]
                raise ValueError(f"from_state's state is not valid JSON: {exc}") from None
    if seq is None:
        raise ValueError("from_state needs from_seq: the seq of the event the state is after")
    return obj, int(seq)
