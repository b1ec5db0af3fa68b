"""The readers' shared pieces (issue 45): the per-record guard, the per-file loop, line 1 of a
JSON Lines head, and the lazy names of the packages."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replaykit._base.delegates import lazy_exports, lazy_module
from replaykit.errors import LoadError
from replaykit.io._common import Quarantine, each_file
from replaykit.io._records import bad, first_line, guard

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
_OBJECTS = st.dictionaries(st.text(min_size=1, max_size=6), _SCALARS, max_size=4)


def test_guard_quarantines_a_load_error_with_the_records_raw_text() -> None:
    q = Quarantine("quarantine")
    with guard(q, "demo", "f.jsonl", 7, b'{"x": 1}'):
        raise bad("demo", "f.jsonl", 7, "missing_type", "has no 'type'", field="type")
    assert [(r["reason"], r["line"], r["field"], r["raw"]) for r in q.rows] == [
        ("missing_type", 7, "type", '{"x": 1}')]


def test_guard_turns_an_unexpected_error_into_unexpected_input_and_undoes() -> None:
    q = Quarantine("quarantine")
    undone: list[int] = []
    with guard(q, "demo", "f.jsonl", 3, None, {"id": "a"}, undo=lambda: undone.append(1)):
        raise KeyError("type")
    assert undone == [1]
    assert q.rows[0]["reason"] == "unexpected_input"
    assert "KeyError" in q.rows[0]["message"]
    assert json.loads(q.rows[0]["raw"]) == {"id": "a"}  # no raw line: the record as JSON


def test_guard_leaves_a_clean_record_alone_and_passes_other_errors_on() -> None:
    q = Quarantine("quarantine")
    undone: list[int] = []
    with guard(q, "demo", "f.jsonl", 1, b"{}", undo=lambda: undone.append(1)):
        pass
    assert q.rows == [] and undone == []
    with pytest.raises(ZeroDivisionError), guard(q, "demo", "f.jsonl", 1, b"{}"):
        _ = 1 // 0
    assert q.rows == []


def test_guard_raises_under_errors_raise() -> None:
    q = Quarantine("raise")
    with pytest.raises(LoadError) as info, guard(q, "demo", "f.jsonl", 9, b"{}"):
        raise IndexError("list index out of range")
    assert (info.value.reason, info.value.line) == ("unexpected_input", 9)


def test_each_file_skips_a_file_that_fails_and_names_it() -> None:
    q = Quarantine("quarantine")
    sizes = {"b.jsonl": 2, "c.jsonl": 3}
    got = list(each_file([Path("a.jsonl"), Path("b.jsonl"), Path("c.jsonl")],
                         lambda p: sizes[p.name], q, desc="demo", progress=False))
    assert got == [(Path("b.jsonl"), 2), (Path("c.jsonl"), 3)]
    assert [(r["reason"], r["source"]) for r in q.rows] == [("unexpected_input", "a.jsonl")]
    with pytest.raises(LoadError):
        list(each_file([Path("a.jsonl")], lambda p: sizes[p.name], Quarantine("raise"),
                       desc="demo", progress=False))


@given(st.lists(_OBJECTS, min_size=1, max_size=4), st.integers(0, 3), st.booleans())
def test_first_line_is_the_first_object_as_json_loads_reads_it(
        docs: list[dict[str, object]], blanks: int, bom: bool) -> None:
    text = "\n" * blanks + "\n".join(json.dumps(d) for d in docs) + "\n"
    head = (b"\xef\xbb\xbf" if bom else b"") + text.encode()
    line = first_line(head)
    assert line is not None
    assert line[0] == json.dumps(docs[0]).encode()
    assert line[1] == docs[0]


def test_first_line_of_a_cut_line_a_non_object_and_a_blank_head() -> None:
    assert first_line(b'{"type": "us') == (b'{"type": "us', None)
    assert first_line(b"[1, 2]\n{}") == (b"[1, 2]", None)
    assert first_line(b" \n\n") is None


def test_lazy_exports_import_on_first_use_and_keep_the_name() -> None:
    name = "replaykit._lazy_demo_pkg"
    mod = types.ModuleType(name)
    mod.__all__ = ["dumps"]  # type: ignore[attr-defined]
    sys.modules[name] = mod
    try:
        mod.__getattr__, mod.__dir__ = lazy_exports(name, {"dumps": "json"})  # type: ignore[attr-defined]
        assert "dumps" not in vars(mod)
        assert mod.dumps is json.dumps  # type: ignore[attr-defined]
        assert vars(mod)["dumps"] is json.dumps
        assert "dumps" in dir(mod)
        with pytest.raises(AttributeError, match="has no attribute 'loads'"):
            _ = mod.loads  # type: ignore[attr-defined]
    finally:
        del sys.modules[name]


def test_the_packages_lazy_names_are_their_modules_objects() -> None:
    import replaykit.branch as branch
    import replaykit.eventlog as eventlog
    from replaykit.branch.runs import compare_runs
    from replaykit.eventlog.log import EventLog

    assert eventlog.EventLog is EventLog
    assert branch.compare_runs is compare_runs
    assert callable(branch.compare) and callable(branch.replay)  # the functions, not modules
    assert {"EventLog", "concat", "read_parquet"} <= set(dir(eventlog))


def test_lazy_module_imports_on_first_use() -> None:
    mod = lazy_module("fractions")
    assert str(mod.Fraction(2, 4)) == "1/2"
