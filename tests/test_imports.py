"""``import replaykit`` is lazy (PEP 562): every public name still resolves, to the object its
module defines, and the command line starts without pandas, plotting or the replay layers."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import replaykit as rk
from replaykit._base import delegates as _delegates
from replaykit.engine import _runner

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "pyarrow", "plotly", "jinja2", "dask", "distributed",
         "ipywidgets", "rapidfuzz", "duckdb", "polars")


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def _loaded(code: str, prefixes: tuple[str, ...]) -> list[str]:
    probe = (f"{code}\nimport sys\n"
             f"print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in {prefixes!r} "
             "or m in " + repr(prefixes) + ")))")
    return [m for m in _fresh(probe).split(",") if m]


def test_import_replaykit_imports_no_library():
    assert _loaded("import replaykit", HEAVY) == []


def test_import_cli_imports_no_pandas_plotting_or_replay_layers():
    inner = ("replaykit.branch", "replaykit.fold", "replaykit.cohorts", "replaykit.report",
             "replaykit.plots", "replaykit.widgets", "replaykit.engine", "replaykit.sql")
    assert _loaded("import replaykit.cli", HEAVY[:1] + HEAVY[3:] + inner) == []


def test_summary_command_imports_no_plotting_or_replay_layers():
    code = ("import contextlib, io\nfrom replaykit.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['summary', 'data/pleach', '--no-progress']) == 0")
    unwanted = HEAVY[3:] + ("replaykit.branch", "replaykit.fold", "replaykit.cohorts",
                            "replaykit.eventlog.grain", "replaykit.integrity")
    assert _loaded(code, unwanted) == []


def test_every_public_name_resolves_to_its_modules_object():
    for name in rk.__all__:
        if name == "__version__":
            continue
        if name in rk._MODULES:
            want = importlib.import_module(rk._MODULES[name], "replaykit")
        else:
            module, attr = rk._HOME[name]
            want = getattr(importlib.import_module(module, "replaykit"), attr)
        assert getattr(rk, name) is want, name
    assert set(rk.__all__) - {"__version__"} == set(rk._HOME) | set(rk._MODULES)


def test_from_import_of_every_public_name_in_a_fresh_process():
    names = ", ".join(n for n in rk.__all__ if n != "__version__")
    assert _fresh(f"from replaykit import {names}, __version__\nprint(len([{names}]))") \
        == str(len(rk.__all__) - 1)


def test_the_type_checking_imports_name_the_same_homes():
    tree = ast.parse((ROOT / "replaykit" / "__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and "TYPE_CHECKING" in ast.unparse(n.test))
    seen: dict[str, tuple[str, str | None]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        for a in node.names:
            mod = "." * node.level + (node.module or "")
            seen[a.asname or a.name] = (mod, None) if mod == "." else (mod, a.name)
    want = {n: (m, a) for n, (m, a) in rk._HOME.items()}
    want.update({n: (".", None) for n in rk._MODULES})
    got = {n: ((".", None) if m == "." else (m, a)) for n, (m, a) in seen.items()}
    assert got == want


def test_fold_and_cohorts_stay_the_functions_when_their_packages_load():
    out = _fresh("import types, replaykit as rk\n"
                 "rk.agent\n"  # imports replaykit.fold, which sets the package attribute
                 "import replaykit.cohorts._core, replaykit.fold.frame\n"
                 "print(isinstance(rk.fold, types.ModuleType), "
                 "isinstance(rk.cohorts, types.ModuleType), callable(rk.fold), "
                 "rk.fold.__module__, rk.cohorts.__module__)")
    assert out == "False False True replaykit.fold.frame replaykit.cohorts._core"
    assert isinstance(rk.fold, types.FunctionType) and isinstance(rk.cohorts, types.FunctionType)


def test_submodules_resolve_and_dir_lists_public_names():
    assert rk.io is importlib.import_module("replaykit.io")
    assert rk.toh is importlib.import_module("replaykit.toh")
    listed = dir(rk)
    assert set(rk.__all__) <= set(listed)
    assert {"plots", "report", "widgets", "io", "eventlog", "toh"} <= set(listed)
    try:
        rk.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("rk.no_such_name resolved")


def test_every_provided_delegate_names_its_home():
    found = {}
    for path in (ROOT / "replaykit").rglob("*.py"):
        for name in re.findall(r'@provide\("([^"]+)"\)', path.read_text(encoding="utf-8")):
            rel = path.relative_to(ROOT).with_suffix("")
            found[name] = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    assert found and found == _delegates._HOMES


def test_a_delegate_imports_its_provider_on_first_use():
    out = _fresh("import sys\nfrom replaykit.io.pleach import read_pleach\n"
                 "log = read_pleach('data/pleach/harness_event_log.jsonl', progress=False)\n"
                 "before = ('replaykit.eventlog.grain' in sys.modules\n"
                 "          or 'replaykit.provenance.stamps' in sys.modules)\n"
                 "print(before, len(log.tools_df()) > 0, len(log.stamps_df()) > 0)")
    assert out == "False True True"


def test_every_engine_implementation_module_is_a_registrar():
    found = set()
    for path in (ROOT / "replaykit").rglob("*.py"):
        if re.search(r"^@implements\(", path.read_text(encoding="utf-8"), flags=re.M):
            rel = path.relative_to(ROOT).with_suffix("")
            found.add(".".join(rel.parts))
    assert found and found == set(_runner._REGISTRARS)


def test_dispatch_imports_the_implementation_on_first_use():
    # verify_chain's engine="dask" implementation lives in replaykit.integrity._dask, which
    # importing replaykit.integrity does not import
    out = _fresh("from replaykit.engine import _runner\n"
                 "from replaykit.integrity import verify_chain\n"
                 "before = (verify_chain, 'dask') in _runner._IMPLEMENTATIONS\n"
                 "_runner.check_engine = lambda engine: None  # whether Dask is installed\n"
                 "try:\n"
                 "    _runner.dispatch('dask', verify_chain, 'no such source')\n"
                 "except NotImplementedError as exc:\n"
                 "    raise SystemExit(f'not registered: {exc}')\n"
                 "except Exception:\n"
                 "    pass  # the implementation ran and rejected the source\n"
                 "print(before, (verify_chain, 'dask') in _runner._IMPLEMENTATIONS)")
    assert out == "False True"
