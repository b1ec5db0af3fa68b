"""The canonical table: :class:`EventLog` (:mod:`.log`) and its Parquet datasets (:mod:`.dataset`).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ._runs import RunKey
    from .dataset import read_parquet
    from .log import RUNS_SCHEMA, EventLog, concat

__all__ = [
    "EventLog",
    "RUNS_SCHEMA",
    "RunKey",
    "concat",
    "read_parquet",
]

#: where each public name lives (imported on first use, PEP 562).
_EXPORTS: dict[str, str] = {
    "EventLog": ".log",
    "RUNS_SCHEMA": ".log",
    "RunKey": "._runs",
    "concat": ".log",
    "read_parquet": ".dataset",
}


def __getattr__(name: str) -> object:
    """Import the module behind a public name on first use (PEP 562)."""
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
