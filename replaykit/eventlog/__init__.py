"""The canonical table: :class:`EventLog` (:mod:`.log`) and its Parquet datasets (:mod:`.dataset`).
"""

from __future__ import annotations

import typing as _typing

from .._base.delegates import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
