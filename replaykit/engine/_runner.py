"""The runner: map a kernel over run-aligned partitions, locally or on a Dask cluster.

This module knows partitions, scheduling, progress, resume and errors, and nothing about
what a kernel computes: :func:`~replaykit.fold`, :func:`~replaykit.verify_chain`,
:func:`~replaykit.compare` and :func:`~replaykit.cohorts` each pass their own per-partition
kernel and combine step down (``fold/_dask.py``, ``_integrity_dask.py``, ``branch/_dask.py``,
``cohorts/_dask.py``); nothing here imports them.

A **kernel** is a module-level function ``kernel(part, data, *args) -> T`` (picklable by
reference, so workers import it from its own module): ``part`` is a :class:`Partition`,
``data`` the partition's task input (a pandas partition of a dask.dataframe, a scattered
Arrow table, or whatever the caller put in ``data=``; None when the partition reads its own
file), ``args`` the arguments every task shares (DataFrames, Arrow tables and EventLogs among
them are scattered to the cluster once, not sent with each task).

Dask is imported only when a runner entry point is called (:class:`~replaykit.MissingExtraError`
without the ``dask`` extra).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import MissingExtraError
from ..eventlog.log import EventLog
from ._parts import EngineError, Partition, partitions

__all__ = [
    "ENGINES",
    "Kernel",
    "check_engine",
    "concat_frames",
    "dask_partitions",
    "default_client",
    "delayed_parts",
    "dispatch",
    "implements",
    "is_dask_dataframe",
    "require_dask",
    "run_partitions",
    "run_to_parquet",
    "source_partitions",
]

#: The values of ``engine=`` on fold / verify_chain / compare / cohorts.
ENGINES = ("local", "dask")

T = TypeVar("T")
R = TypeVar("R")

#: A per-partition kernel: ``kernel(part, data, *args) -> T`` (see the module docstring).
Kernel = Callable[..., T]

F = TypeVar("F", bound=Callable[..., Any])

#: (public function, engine) -> the implementation that runs it on that engine; filled by the
#: modules that define the implementations (fold/_dask.py, ...), never by the engine itself.
_IMPLEMENTATIONS: dict[tuple[Callable[..., Any], str], Callable[..., Any]] = {}
#: the modules that register implementations (imported by name when a lookup misses).
_REGISTRARS = ("replaykit.fold._dask", "replaykit.integrity._dask", "replaykit.branch._dask",
               "replaykit.cohorts._dask")


def implements(function: Callable[..., Any], engine: str) -> Callable[[F], F]:
    """Register the decorated function as ``function``'s implementation on ``engine``.

    The layer that owns ``function`` registers its own engine implementation next to its
    kernels, so the engine never imports it; ``function`` then hands over with
    :func:`dispatch`.

    Example:
        >>> def total(xs, *, engine="local"):  # doctest: +SKIP
        ...     return sum(xs) if engine == "local" else dispatch(engine, total, xs)
        >>> @implements(total, "dask")  # doctest: +SKIP
        ... def dask_total(xs): ...

    Raises:
        ValueError: ``engine`` is not one of :data:`ENGINES` or ``"local"``.
    """
    if engine not in ENGINES or engine == "local":
        raise ValueError(f"engine must be one of {ENGINES[1:]}, got {engine!r}")

    def register(impl: F) -> F:
        _IMPLEMENTATIONS[(function, engine)] = impl
        return impl

    return register


def dispatch(engine: str, function: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Run ``function(*args, **kw)`` on ``engine`` through its registered implementation.

    Raises:
        ValueError: ``engine`` is not one of :data:`ENGINES`.
        MissingExtraError: ``engine="dask"`` without the ``dask`` extra.
        NotImplementedError: nothing registered ``function`` for ``engine``.
    """
    check_engine(engine)
    impl = _IMPLEMENTATIONS.get((function, engine))
    if impl is None:  # ``import replaykit`` is lazy: import the registering modules by name
        import importlib

        for module in _REGISTRARS:
            importlib.import_module(module)
        impl = _IMPLEMENTATIONS.get((function, engine))
    if impl is None:
        raise NotImplementedError(
            f"{getattr(function, '__qualname__', function)!r} has no engine={engine!r} "
            "implementation registered (replaykit registers its own when imported)")
    return impl(*args, **kw)


# ----------------------------------------------------------------------------- dask plumbing
def require_dask(feature: str = 'engine="dask"') -> Any:
    """The ``distributed`` module, importing Dask on first use.

    Raises:
        MissingExtraError: Dask (``dask[dataframe,distributed]``) is not installed; the
            message names ``feature`` and the ``dask`` extra.
    """
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError:
        raise MissingExtraError(feature, "dask", "dask[dataframe,distributed]") from None
    return distributed


def check_engine(engine: str) -> None:
    """Check an ``engine=`` argument other than ``"local"`` before dispatching to it.

    Example:
        >>> check_engine("spark")
        Traceback (most recent call last):
        ...
        ValueError: engine must be one of ('local', 'dask'), got 'spark'

    Raises:
        ValueError: ``engine`` is not one of :data:`ENGINES`.
        MissingExtraError: ``engine="dask"`` without the ``dask`` extra.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    require_dask(f'engine="{engine}"')


def is_dask_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a dask.dataframe (checked without importing Dask)."""
    return type(obj).__module__.startswith("dask") and hasattr(obj, "to_delayed")


def default_client(client: Any = None) -> Any:
    """``client`` if given, else the current ``distributed`` client, else None (Dask's
    threaded scheduler in this process).

    Raises:
        MissingExtraError: Dask is not installed.
    """
    distributed = require_dask()
    if client is not None:
        return client
    try:
        return distributed.default_client()
    except ValueError:
        return None


def delayed_parts(ddf: Any, cols: list[str] | None = None) -> list[Any]:
    """The partitions of a dask.dataframe as Delayed objects (only ``cols`` if given).

    Partition ``i`` holds the same rows with or without ``cols``: Dask's tuning stage, which
    merges small Parquet partitions into fewer and merges more of them once columns are
    projected, is turned off, so the partitions are the dask.dataframe's own. A projection is
    still pushed into a Parquet read.
    """
    import dask

    with dask.config.set({"optimization.tune.active": False}):
        return list((ddf if cols is None else ddf[cols]).to_delayed())


def dask_partitions(n: int) -> list[Partition]:
    """Names for the ``n`` partitions of a dask.dataframe: ``"partition <i>"``."""
    return [Partition(name=f"partition {i}", index=i) for i in range(n)]


def source_partitions(source: Any, partition_events: int, check: bool = True
                      ) -> tuple[list[Partition], list[Any] | None]:
    """The partitions of ``source`` plus, for a dask.dataframe, its delayed pandas
    partitions (the tasks' ``data``; None for a dataset path or an EventLog, whose
    partitions load themselves).

    Raises:
        FileNotFoundError / EngineError / TypeError: as :func:`partitions`.
    """
    if is_dask_dataframe(source):
        delayed = list(source.to_delayed())
        return dask_partitions(len(delayed)), delayed
    return partitions(source, partition_events=partition_events, check=check), None


# ----------------------------------------------------------------------------- the runner
def _call(fn: Callable[..., Any], part: Partition, data: Any, *args: Any) -> Any:
    """Worker-side wrapper: any failure becomes an EngineError naming the partition."""
    try:
        return fn(part, data, *args)
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(part.name, f"{type(exc).__name__}: {exc}", exc) from exc


def _call_safe(fn: Callable[..., Any], part: Partition, data: Any, *args: Any
               ) -> tuple[bool, Any]:
    try:
        return True, _call(fn, part, data, *args)
    except EngineError as exc:
        return False, exc


def _scatter(client: Any, a: Any) -> Any:
    if isinstance(a, (pd.DataFrame, pa.Table)):
        return client.scatter(a, broadcast=True)
    if isinstance(a, EventLog):
        return client.scatter(a, broadcast=True, hash=False)
    return a


def _run(fn: Callable[..., Any], parts: Sequence[Partition], data: Sequence[Any] | None,
         args: Sequence[Any], *, client: Any, desc: str, progress: bool | None,
         fail_fast: bool) -> dict[int, Any]:
    """Results of ``fn(part, data, *args)`` by partition index (see :func:`run_partitions`)."""
    from ..io._common import Progress

    distributed = require_dask()
    client = default_client(client)
    parts = list(parts)
    bar = Progress(len(parts), desc=desc, unit="part", enabled=progress)
    results: dict[int, Any] = {}
    errors: list[EngineError] = []
    try:
        if client is None:  # no cluster: Dask's threaded scheduler in this process
            import dask

            tasks = [dask.delayed(_call_safe, pure=False)(
                fn, p, None if data is None else data[i], *args) for i, p in enumerate(parts)]
            for p, (ok, value) in zip(parts, dask.compute(*tasks, scheduler="threads"),
                                      strict=True):
                if ok:
                    results[p.index] = value
                elif fail_fast:
                    raise value
                else:
                    errors.append(value)
                bar.update(1)
        else:
            token = uuid.uuid4().hex[:8]
            shared = [_scatter(client, a) for a in args]
            if data is not None:  # one graph: each task runs as soon as its inputs exist
                import dask

                tasks = [dask.delayed(_call, pure=False)(
                    fn, p, data[i], *shared, dask_key_name=f"replaykit-{desc}-{p.index}-{token}")
                    for i, p in enumerate(parts)]
                futures = dict(zip(client.compute(tasks), parts, strict=True))
            else:
                inputs: list[Any] = [None] * len(parts)
                if any(p.table is not None for p in parts):  # in-memory: scatter, not graph
                    inputs = client.scatter([p.table for p in parts], hash=False)
                    parts = [dataclasses.replace(p, table=None) for p in parts]
                futures = {
                    client.submit(_call, fn, p, inputs[i], *shared, pure=False,
                                  key=f"replaykit-{desc}-{p.index}-{token}"): p
                    for i, p in enumerate(parts)
                }
            for fut in distributed.as_completed(list(futures)):
                p = futures.pop(fut)
                if fut.status == "finished":
                    results[p.index] = fut.result()
                else:
                    exc = fut.exception()
                    err = exc if isinstance(exc, EngineError) else EngineError(
                        p.name, f"the task failed on the cluster ({type(exc).__name__}: {exc})",
                        exc)
                    if fail_fast:
                        client.cancel(list(futures))
                        raise err
                    errors.append(err)
                fut.release()
                bar.update(1)
    finally:
        bar.close()
    if errors:
        names = ", ".join(repr(e.partition) for e in errors[:5])
        more = f" and {len(errors) - 5} more" if len(errors) > 5 else ""
        first = errors[0]
        raise EngineError(
            first.partition,
            f"{first.message}. {len(errors)} of {len(parts)} partitions failed ({names}{more}); "
            "finished partitions are kept -- re-run with the same arguments to resume.",
            first.cause,
        )
    return results


@overload
def run_partitions(kernel: Kernel[T], parts: Sequence[Partition], *,
                   args: Sequence[Any] = ..., data: Sequence[Any] | None = ...,
                   combine: None = ..., client: Any = ..., desc: str = ...,
                   progress: bool | None = ..., fail_fast: bool = ...) -> list[T]: ...


@overload
def run_partitions(kernel: Kernel[T], parts: Sequence[Partition], *,
                   args: Sequence[Any] = ..., data: Sequence[Any] | None = ...,
                   combine: Callable[[list[T]], R], client: Any = ..., desc: str = ...,
                   progress: bool | None = ..., fail_fast: bool = ...) -> R: ...


def run_partitions(kernel: Kernel[T], parts: Sequence[Partition], *,
                   args: Sequence[Any] = (), data: Sequence[Any] | None = None,
                   combine: Callable[[list[T]], R] | None = None, client: Any = None,
                   desc: str = "partitions", progress: bool | None = None,
                   fail_fast: bool = True) -> list[T] | R:
    """Run ``kernel(part, data[i], *args)`` for every partition; combine the results.

    With a ``distributed`` client (given, or the current default one) tasks run on the
    cluster and finish in any order; otherwise Dask's threaded scheduler runs them in this
    process. Either way the results come back in partition order (by ``Partition.index``)
    and ``combine`` (if given) turns that list into the answer on the client.

    Args:
        kernel: a module-level function (see the module docstring).
        parts: the partitions (:func:`source_partitions`, :func:`partitions`, or your own
            :class:`Partition` s naming chunks of work).
        args: arguments every task shares (DataFrames, Arrow tables and EventLogs are
            scattered to the workers once).
        data: one task input per partition (e.g. Delayed pandas partitions of a
            dask.dataframe; Dask computes them before the task), or None: each partition
            loads itself (an in-memory partition's table is scattered, not put in the graph).
        combine: the combine step, called once with the ordered results.
        client: a ``distributed.Client`` (default: the current one, if any).
        desc: the progress bar's label and the prefix of the Dask task keys.
        progress: show a progress bar (None: when tqdm is installed and output is a
            terminal or notebook).
        fail_fast: stop at the first failing partition (cancelling the rest); with False
            every other partition finishes first (their side effects, e.g. the files of
            :func:`run_to_parquet`, are kept), then one error names all that failed.

    Returns:
        the ordered kernel results, or ``combine(results)``.

    Example:
        >>> from replaykit.engine import run_partitions, source_partitions  # doctest: +SKIP
        >>> parts, data = source_partitions("events/", 250_000)  # doctest: +SKIP
        >>> def n_events(part, data):  # module level in real code  # doctest: +SKIP
        ...     return len(part.load(data))
        >>> run_partitions(n_events, parts, data=data, combine=sum)  # doctest: +SKIP
        1200000

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (``.partition`` names it, ``.cause`` is the kernel's
            exception); with ``fail_fast=False`` after the others finished, naming them all.
    """
    res = _run(kernel, parts, data, args, client=client, desc=desc, progress=progress,
               fail_fast=fail_fast)
    ordered = [res[i] for i in sorted(res)]
    return ordered if combine is None else combine(ordered)


def concat_frames(frames: Sequence[pd.DataFrame | None]) -> pd.DataFrame:
    """The usual combine step: per-partition DataFrames as one, in order (categorical
    columns get the union of the partitions' categories; an all-empty input keeps the
    first frame's columns and dtypes)."""
    kept = [f for f in frames if f is not None]
    nonempty = [f for f in kept if len(f)]
    if not nonempty:
        return kept[0].iloc[0:0].reset_index(drop=True) if kept else pd.DataFrame()
    out = pd.concat(nonempty, ignore_index=True)
    for c in out.columns:  # categoricals: the union of the partitions' categories
        cols = [f[c] for f in nonempty]
        if all(isinstance(x.dtype, pd.CategoricalDtype) for x in cols):
            out[c] = pd.api.types.union_categoricals(cols, sort_categories=True)
    return out


# ----------------------------------------------------------------------------- resume
def _out_name(part: Partition) -> str:
    if part.path is not None:
        return part.name  # same hive layout as the input: tenant_id=<id>/part-<k>.parquet
    return f"part-{part.index}.parquet"


def _marker(out: Path, part: Partition) -> Path:
    return out / "_done" / (_out_name(part).replace("/", "__") + ".json")


def _write_part(part: Partition, data: Any, kernel: Callable[..., tuple[pd.DataFrame, int]],
                out: str, *args: Any) -> dict[str, Any]:
    """Worker side of :func:`run_to_parquet`: run the kernel, write its rows atomically,
    then the partition's marker."""
    t0 = time.perf_counter()
    df, events = kernel(part, data, *args)
    if part.path is not None and "tenant_id" in df:  # hive layout: the directory names it
        df = df.drop(columns="tenant_id")
    target = Path(out) / _out_name(part)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)
    os.replace(tmp, target)
    info = {"partition": part.name, "output": str(target.relative_to(out)),
            "events": int(events), "rows": len(df), "seconds": time.perf_counter() - t0}
    marker = _marker(Path(out), part)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(info))
    return info


def run_to_parquet(kernel: Kernel[tuple[pd.DataFrame, int]], parts: Sequence[Partition],
                   path: str | os.PathLike[str], *, args: Sequence[Any] = (),
                   data: Sequence[Any] | None = None, client: Any = None,
                   desc: str = "partitions", progress: bool | None = None) -> pd.DataFrame:
    """Out-of-core: each task writes its kernel's rows to Parquet; nothing is collected.

    ``kernel(part, data, *args)`` returns ``(rows, events)``: a DataFrame of results and the
    number of events it read. The task writes ``rows`` to ``path/<partition>.parquet`` (a
    dataset file keeps its ``tenant_id=<id>/part-<k>.parquet`` name, without the
    ``tenant_id`` column, which the hive folder carries; other partitions become
    ``part-<i>.parquet``), atomically, and then a marker ``path/_done/<partition>.json``. A
    re-run skips the partitions whose marker and output both exist, so after a failure it
    resumes where it stopped; a failing partition does not stop the others
    (``fail_fast=False``).

    Returns:
        One row per partition, in partition order: partition, output, events, rows,
        seconds, status (``"written"`` now or ``"skipped"``, done by an earlier run).

    Raises:
        MissingExtraError: Dask is not installed.
        EngineError: a partition failed (raised after the others finished, naming them).
    """
    require_dask()
    out = Path(path).absolute()  # written by workers, whose working directory may differ
    out.mkdir(parents=True, exist_ok=True)
    parts = list(parts)
    done: list[dict[str, Any]] = []
    todo: list[int] = []
    for i, p in enumerate(parts):
        m = _marker(out, p)
        if m.exists() and (out / _out_name(p)).exists():
            done.append({**json.loads(m.read_text()), "status": "skipped"})
        else:
            todo.append(i)
    written = run_partitions(
        _write_part, [parts[i] for i in todo], args=(kernel, str(out), *args),
        data=None if data is None else [data[i] for i in todo], client=client, desc=desc,
        progress=progress, fail_fast=False)
    rows = done + [{**r, "status": "written"} for r in written]
    df = pd.DataFrame(rows, columns=["partition", "output", "events", "rows", "seconds",
                                     "status"])
    order = {p.name: p.index for p in parts}
    df = df.sort_values("partition", key=lambda s: s.map(order)).reset_index(drop=True)
    return df.astype({"partition": "string", "output": "string", "events": "Int64",
                      "rows": "Int64", "seconds": "Float64", "status": "string"})
