"""``engine=`` dispatch for the public functions (imports Dask only when asked for it)."""

from __future__ import annotations

from typing import Any

from ..errors import MissingExtraError

ENGINES = ("local", "dask")


def _check(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise MissingExtraError(f'engine="{engine}"', "dask",
                                "dask[dataframe,distributed]") from None


def fold(engine: str, log: Any, projections: Any, **kw: Any) -> Any:
    _check(engine)
    from ._dask import dask_fold

    return dask_fold(log, projections, **kw)


def verify_chain(engine: str, log: Any, expected_heads: Any, **kw: Any) -> Any:
    _check(engine)
    from ._dask import dask_verify_chain

    return dask_verify_chain(log, expected_heads, **kw)


def compare(engine: str, base: Any, replay: Any, pairs: Any, **kw: Any) -> Any:
    _check(engine)
    from ._dask import dask_compare

    return dask_compare(base, replay, pairs, **kw)


def cohorts(engine: str, log: Any, by: Any, **kw: Any) -> Any:
    _check(engine)
    from ._dask import dask_cohorts

    return dask_cohorts(log, by, **kw)
