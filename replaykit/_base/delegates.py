"""Convenience methods of the core implemented by the layers above it, without back-edges.

``EventLog.calls_df()``, ``tools_df()``, ``turns_df()``, ``stamps_df()``, ``to_parquet()`` and
``to_otel()`` are thin delegations: the module that implements each one
(:mod:`replaykit.eventlog.grain`, :mod:`replaykit.provenance`, :mod:`replaykit.engine`,
:mod:`replaykit.io.otel.export`) registers it
here when it is imported, and the method looks it up by name, so :mod:`replaykit.eventlog`
imports none of them (the import contract in pyproject.toml checks it). ``import replaykit`` is
lazy, so a lookup of a name not yet registered imports the module that provides it (by name, at
run time) first.

Example:
    >>> from replaykit._base import delegates as _delegates
    >>> _delegates.provider("EventLog.calls_df").__module__
    'replaykit.eventlog.grain'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["provide", "provider"]

F = TypeVar("F", bound=Callable[..., Any])

_PROVIDERS: dict[str, Callable[..., Any]] = {}
#: the module that registers each name (imported on the first lookup when not yet imported).
_HOMES = {"EventLog.calls_df": "replaykit.eventlog.grain",
          "EventLog.tools_df": "replaykit.eventlog.grain",
          "EventLog.turns_df": "replaykit.eventlog.grain",
          "EventLog.stamps_df": "replaykit.provenance.stamps",
          "EventLog.to_parquet": "replaykit.engine._parts",
          "EventLog.to_otel": "replaykit.io.otel.export"}


def provide(name: str) -> Callable[[F], F]:
    """Register the decorated function as the implementation of ``name`` (e.g.
    ``"EventLog.calls_df"``); returns the function unchanged. A later registration of the
    same name replaces the earlier one."""

    def register(fn: F) -> F:
        _PROVIDERS[name] = fn
        return fn

    return register


def provider(name: str) -> Callable[..., Any]:
    """The function registered for ``name``.

    Raises:
        RuntimeError: nothing registered it (a name replaykit does not provide).
    """
    if name not in _PROVIDERS and name in _HOMES:
        import importlib

        importlib.import_module(_HOMES[name])
    try:
        return _PROVIDERS[name]
    except KeyError:
        raise RuntimeError(
            f"{name} is implemented by a replaykit module that has not been imported; "
            "`import replaykit` registers every implementation") from None
