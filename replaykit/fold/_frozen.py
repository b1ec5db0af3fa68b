"""Immutable plain data for states: a read-only dict and a deep ``freeze``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from .._base.json import canonical_json

__all__ = ["FrozenDict", "freeze", "state_hash", "state_json", "thaw"]


class FrozenDict(dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses changes; serialises like a dict (orjson/json) and compares equal.

    >>> d = FrozenDict({"a": 1})
    >>> d["a"]
    1
    """

    __slots__ = ()

    def _readonly(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("replaykit states are immutable; build a new dict instead")

    __setitem__ = __delitem__ = _readonly  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _readonly  # type: ignore[assignment]
    __ior__ = _readonly  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(canonical_json(self))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


def freeze(value: Any) -> Any:
    """Deep-convert ``value`` to immutable plain data (dict -> FrozenDict, list -> tuple)."""
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Deep-convert frozen data back to mutable ``dict``/``list``."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def state_json(state: Mapping[str, Any]) -> str:
    """The canonical JSON text of a state (sorted keys, compact): what determinism compares."""
    return canonical_json(state)


def state_hash(state: Mapping[str, Any]) -> int:
    """The ``state_hash`` of one state (see :func:`replaykit.fold.hashing.state_hash`)."""
    from .hashing import state_hash as _state_hash

    return _state_hash(state)
