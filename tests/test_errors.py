"""Every ReplayKitError pickles with all its attributes and its message (issue 14, item 10).

The subclasses are found automatically (every replaykit module is imported and
``ReplayKitError.__subclasses__`` walked), and each is built from its ``__init__`` signature, so
a new error class without pickling support fails here without anyone listing it.
"""

from __future__ import annotations

import importlib
import inspect
import multiprocessing
import pickle
import pkgutil
import threading
import types
import typing
from concurrent.futures import ProcessPoolExecutor

import pandas as pd
import pytest

import replaykit
from replaykit.errors import (
    LoadError,
    ReplayCacheMissError,
    ReplayKitError,
)


def _all_subclasses() -> list[type[ReplayKitError]]:
    for mod in pkgutil.walk_packages(replaykit.__path__, "replaykit."):
        try:
            importlib.import_module(mod.name)
        except ImportError:  # an optional extra that is not installed
            continue
    seen: list[type[ReplayKitError]] = []
    todo = [ReplayKitError]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return [c for c in seen if c.__module__.startswith("replaykit")]


class _Unpicklable(Exception):
    def __init__(self) -> None:
        super().__init__("holds a lock")
        self.lock = threading.Lock()


def _sample(name: str, hint: typing.Any) -> typing.Any:
    """A distinctive value for parameter ``name`` of type ``hint``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args and typing.get_origin(hint) in (typing.Union, types.UnionType):
        return _sample(name, args[0])
    origin = typing.get_origin(hint) or hint
    if origin is str or hint is typing.Any:
        return f"<{name}>"
    if origin is bool:
        return True
    if origin is int:
        return 7 + len(name)
    if origin is tuple:
        return tuple(range(3, 3 + len(typing.get_args(hint))))
    if origin is dict:
        return {f"<{name}>": "why"}
    if origin is list:
        return [f"<{name} 1>", f"<{name} 2>"]
    if isinstance(origin, type) and issubclass(origin, BaseException):
        return ValueError(f"cause of {name}")
    if origin is pd.DataFrame:
        return pd.DataFrame({"session": [f"<{name}>"], "calls": [2]})
    raise AssertionError(f"no sample for parameter {name}: {hint!r}; extend _sample")


def _build(cls: type[ReplayKitError]) -> ReplayKitError:
    if "__init__" not in {k for c in cls.__mro__[:-3] for k in vars(c)}:
        return cls("a message")
    hints = typing.get_type_hints(cls.__init__)
    kwargs = {}
    pos = []
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        value = _sample(p.name, hints.get(p.name, typing.Any))
        if p.name == "mode":
            value = "best-effort"
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            pos.append(value)
    return cls(*pos, **kwargs)


def _same(a: typing.Any, b: typing.Any) -> bool:
    if isinstance(a, BaseException):
        return type(a) is type(b) and a.args == b.args
    if isinstance(a, pd.DataFrame):
        return isinstance(b, pd.DataFrame) and a.equals(b)
    return bool(a == b)


SUBCLASSES = _all_subclasses()


def test_the_hierarchy_is_found():
    names = {c.__name__ for c in SUBCLASSES}
    assert {"LoadError", "SchemaError", "FormatDetectionError", "MissingExtraError", "SQLError",
            "ReplayError", "ReplayDivergenceError", "ReplayCacheMissError",
            "ReplayUnknownEventError", "EngineError", "OverrideError"} <= names


@pytest.mark.parametrize("cls", SUBCLASSES, ids=lambda c: c.__name__)
def test_every_error_pickles_with_its_attributes_and_message(cls):
    err = _build(cls)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert str(back) == str(err)
    assert back.args == err.args
    assert set(vars(back)) == set(vars(err))
    for key, value in vars(err).items():
        assert _same(getattr(back, key), value), key
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert str(pickle.loads(pickle.dumps(err, protocol=proto))) == str(err)


def test_engine_error_keeps_the_workers_cause():
    from replaykit.engine import EngineError

    err = EngineError("part-0003.parquet", "ValueError: bad block", ValueError("bad block"))
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back.cause, ValueError) and back.cause.args == ("bad block",)
    assert back.partition == "part-0003.parquet" and back.message == "ValueError: bad block"
    # a cause that cannot be pickled crosses as a representation naming its type and message
    err = EngineError("p", "boom", _Unpicklable())
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back.cause, RuntimeError)
    assert str(back.cause) == f"{__name__}._Unpicklable: holds a lock"
    # the chained __cause__ travels too
    try:
        try:
            raise KeyError("k")
        except KeyError as exc:
            raise LoadError(source="f", line=1, reason="bad_json", detail="d") from exc
    except LoadError as err2:
        back = pickle.loads(pickle.dumps(err2))
    assert isinstance(back.__cause__, KeyError) and back.__cause__.args == ("k",)


def _raise(which: str) -> None:
    if which == "load":
        raise LoadError(source="events.jsonl", line=12, field="payload", reason="bad_json",
                        detail="is not JSON", fix="re-export the file")
    if which == "cache":
        raise ReplayCacheMissError(run_id="r1", tenant_id="acme", key="k9", mode="strict-mode",
                                   seq=4)
    from replaykit.engine import EngineError

    raise EngineError("part-1", "worker failed", _Unpicklable())


def test_errors_cross_a_real_process_pool():
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        with pytest.raises(LoadError) as load:
            pool.submit(_raise, "load").result()
        with pytest.raises(ReplayCacheMissError) as cache:
            pool.submit(_raise, "cache").result()
        from replaykit.engine import EngineError

        with pytest.raises(EngineError) as engine:
            pool.submit(_raise, "engine").result()
    e = load.value
    assert (e.source, e.line, e.field, e.reason, e.fix) == (
        "events.jsonl", 12, "payload", "bad_json", "re-export the file")
    assert str(e).startswith("events.jsonl:12: field 'payload' is not JSON (reason=bad_json)")
    c = cache.value
    assert (c.run_id, c.tenant_id, c.key, c.mode, c.seq) == ("r1", "acme", "k9", "strict-mode", 4)
    assert engine.value.partition == "part-1"
    assert str(engine.value.cause) == f"{__name__}._Unpicklable: holds a lock"
