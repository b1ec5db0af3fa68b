"""Convenience methods of the core implemented by the layers above it, without back-edges.

``EventLog.calls_df()``, ``tools_df()``, ``turns_df()``, ``stamps_df()``, ``to_parquet()`` and
``to_otel()`` are thin delegations: the module that implements each one
(:mod:`replaykit.eventlog.grain`, :mod:`replaykit.provenance`, :mod:`replaykit.engine`,
:mod:`replaykit.io.otel.export`) registers it
here when it is imported, and the method looks it up by name, so :mod:`replaykit.eventlog`
imports none of them (the import contract in pyproject.toml checks it). ``import replaykit`` is
lazy, so a lookup of a name not yet registered imports the module that provides it (by name, at
run time) first.

:func:`lazy_exports` gives a package the same laziness for its own public names (PEP 562):
the module behind a name is imported on its first use; :func:`lazy_module` does it for a
library a module uses (pandas, ``pyarrow.dataset``).

Example:
    >>> from replaykit._base import delegates as _delegates
    >>> _delegates.provider("EventLog.calls_df").__module__
    'replaykit.eventlog.grain'
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["lazy_exports", "lazy_module", "provide", "provider"]

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
        importlib.import_module(_HOMES[name])
    try:
        return _PROVIDERS[name]
    except KeyError:
        raise RuntimeError(
            f"{name} is implemented by a replaykit module that has not been imported; "
            "`import replaykit` registers every implementation") from None


def lazy_exports(package: str, homes: Mapping[str, str]
            ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` whose public names live in the
    modules ``homes`` names (relative to the package).

    ``__getattr__(name)`` imports the module behind ``name`` on first use and keeps the name
    in the package's namespace (later uses find it there without a call); ``__dir__`` lists
    the package's namespace and its ``__all__``.

    Example:
        >>> import sys, types
        >>> demo = types.ModuleType("replaykit.demo")
        >>> sys.modules["replaykit.demo"] = demo
        >>> demo.__getattr__, demo.__dir__ = lazy_exports("replaykit.demo", {"dumps": "json"})
        >>> demo.dumps([1]), "dumps" in vars(demo)
        ('[1]', True)
        >>> del sys.modules["replaykit.demo"]

    Raises:
        AttributeError: (from ``__getattr__``) ``name`` is not one of ``homes``.
    """

    def __getattr__(name: str) -> object:
        """Import the module behind a public name on first use (PEP 562)."""
        if name in homes:
            value = getattr(importlib.import_module(homes[name], package), name)
            vars(sys.modules[package])[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


class _OnUse(types.ModuleType):
    """A module imported on first use of one of its names."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self.__name__), name)


def lazy_module(name: str) -> Any:
    """The module ``name``, imported on the first use of one of its names: loading a log and
    the ``replaykit summary`` table need neither pandas nor ``pyarrow.dataset`` (which
    imports pandas); pandas is about half of the command's start-up. For use under
    ``if not TYPE_CHECKING`` (type checkers see the plain import).

    Example:
        >>> fractions = lazy_module("fractions")
        >>> str(fractions.Fraction(1, 3))
        '1/3'

    Raises:
        ModuleNotFoundError: (on first use) no module ``name`` is installed.
    """
    return _OnUse(name)
