"""`make check` stays quick without weakening `make test` (issue 31 item 3): the slow tests it
leaves out are named in tests/conftest.py and exist, its Hypothesis profile caps every
property's examples (explicit ``@settings(max_examples=...)`` included), and `make test` runs
everything at full counts."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import _SLOW_MODULES, _SLOW_TESTS, CHECK_EXAMPLES, _cap_examples
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def _make_n(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    return subprocess.run(["make", "--no-print-directory", "-n", "-B", target,
                           "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def test_check_caps_hypothesis_and_skips_slow_while_test_runs_all():
    check = _make_n("check").strip().splitlines()[-2:]
    test = " ".join(_make_n("test").strip().splitlines()[-2:])
    assert '-m "not slow"' in " ".join(check) and "--hypothesis-profile=check" in " ".join(check)
    assert "not slow" not in test and "hypothesis-profile" not in test
    assert "notebooks" in test and "--nbval-lax" in test


def _test_files(module: str) -> list[Path]:
    """The test files named `module` anywhere under tests/ (a folder per package)."""
    return sorted((ROOT / "tests").rglob(f"{module}.py"))


def test_every_slow_name_is_a_real_module_or_test():
    """A renamed test would silently come back into `make check`: each name is checked."""
    for module in _SLOW_MODULES:
        assert len(_test_files(module)) == 1, module
    for module, name in _SLOW_TESTS:
        (path,) = _test_files(module)
        tree = ast.parse(path.read_text())
        defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in defs, f"{module}::{name}"


def test_the_check_profile_caps_an_explicit_max_examples():
    calls: list[int] = []

    @settings(max_examples=200, deadline=None, database=None)
    @given(st.integers())
    def prop(x: int) -> None:
        calls.append(x)

    small_calls: list[int] = []

    @settings(max_examples=3, deadline=None, database=None)
    @given(st.integers())
    def small(x: int) -> None:
        small_calls.append(x)

    _cap_examples(SimpleNamespace(obj=prop), CHECK_EXAMPLES)  # type: ignore[arg-type]
    _cap_examples(SimpleNamespace(obj=small), CHECK_EXAMPLES)  # type: ignore[arg-type]
    _cap_examples(SimpleNamespace(obj=lambda: None), CHECK_EXAMPLES)  # type: ignore[arg-type]
    prop()
    small()
    assert 0 < len(calls) <= CHECK_EXAMPLES  # was 200
    assert 0 < len(small_calls) <= 3  # a lower count is kept
    assert settings.get_profile("check").max_examples == CHECK_EXAMPLES


def test_make_keeps_the_costliest_first_order_xdist_would_undo():
    """xdist's loadscope re-sorts files by their number of tests unless told not to; the
    order conftest gives (costliest file first) only holds with --no-loadscope-reorder."""
    for target in ("test", "check"):
        assert "--no-loadscope-reorder" in " ".join(_make_n(target).strip().splitlines()[-2:])


def _item(path: Path, name: str) -> SimpleNamespace:
    return SimpleNamespace(path=path, fspath=path, name=name)


def test_longest_first_orders_whole_files_by_cost_and_keeps_each_files_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import conftest

    durations = tmp_path / "durations.json"
    durations.write_text(json.dumps({"tests/a.py": 1.0, "tests/b.py": 50.0,
                                     "notebooks/n.ipynb": 9.0}))
    monkeypatch.setattr(conftest, "DURATIONS", durations)
    root = conftest.REPO
    a, b, c = root / "tests/a.py", root / "tests/b.py", root / "tests/c.py"
    nb = root / "notebooks/n.ipynb"
    items = [_item(a, "a1"), _item(c, "c1"), _item(b, "b1"), _item(nb, "Cell 0"),
             _item(a, "a2"), _item(b, "b2"), _item(nb, "Cell 1"), _item(c, "c2")]
    got = [i.name for i in conftest.longest_first(items)]  # type: ignore[arg-type]
    # b (50 s), the notebook (9 s), a (1 s), c unlisted (2 tests x 0.3 s = 0.6 s)
    assert got == ["b1", "b2", "Cell 0", "Cell 1", "a1", "a2", "c1", "c2"]
    durations.write_text(json.dumps({}))  # nothing measured: collection order, files whole
    got = [i.name for i in conftest.longest_first(items)]  # type: ignore[arg-type]
    assert got == ["a1", "a2", "c1", "c2", "b1", "b2", "Cell 0", "Cell 1"]


def test_durations_name_files_that_exist():
    """A renamed or deleted test file left in tests/durations.json would keep its old cost
    and order nothing; tools/test_durations.py rewrites the file from a JUnit report."""
    import json

    import conftest

    known = json.loads(conftest.DURATIONS.read_text())
    assert len(known) > 100
    missing = [rel for rel in known if not (conftest.REPO / rel).is_file()]
    assert not missing, missing
