"""The layers hold: import-linter's contracts (pyproject.toml ``[tool.importlinter]``) pass on
the code and break when someone adds a back-edge; no import cycle among replaykit's modules
(imports inside functions counted) but the one edge i17-branch removes; plots, widgets and
report use only each other's public names. See docs/architecture.md, "Layers"."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = "replaykit's layers: each imports only the layers below it"
NO_PLOTLY = "Only the display layer imports plotly and ipywidgets"
INTERNALS = "plots and widgets do not import report's internals (underscore modules)"

#: Import edges allowed to close a cycle, each with who removes it. None is left since the
#: `verify-chain` command moved from integrity.py to _cli_verify.py; the test asserts the
#: graph has no cycle at all.
REMAINING_CYCLE_EDGES: set[tuple[str, str]] = set()  # none: the graph has no cycle


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return found


def _env(root: Path) -> dict[str, str]:
    # the copy in `root` comes first on sys.path, before the editable install's finder
    return {**os.environ, "PYTHONPATH": str(root)}


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=root, env=_env(root),
                          capture_output=True, text=True, check=False, timeout=300)


def _copy(tmp: Path) -> Path:
    shutil.copytree(ROOT / "replaykit", tmp / "replaykit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def _cycles_tool():
    spec = importlib.util.spec_from_file_location("import_cycles",
                                                  ROOT / "tools" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_contracts_hold_on_the_code() -> None:
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in (LAYERS, NO_PLOTLY, INTERNALS):
        assert f"{name} KEPT" in proc.stdout, proc.stdout
    assert "13 kept, 0 broken" in proc.stdout


@pytest.mark.parametrize(("module", "code", "broken"), [
    # the base imports the display layer
    ("schema.py", "from replaykit import plots  # noqa\n", LAYERS),
    # the engine imports what runs on it -- inside a function, which counts too
    ("engine/_runner.py", "\ndef _back():\n    import replaykit.cohorts  # noqa\n", LAYERS),
    # the core imports a layer above it for a convenience method
    ("eventlog/log.py", "\ndef _calls(log):\n    from ..grain import calls_df  # noqa\n",
     LAYERS),
    # a loader imports the folds
    ("io/toh.py", "from ..fold import projection as _p  # noqa\n", LAYERS),
    # a fold draws a figure
    ("fold/ops.py", "\ndef _fig():\n    import plotly.graph_objects  # noqa\n", NO_PLOTLY),
    # widgets reach into report's internals
    ("widgets.py", "from .report import _core  # noqa\n", INTERNALS),
])
def test_an_added_back_edge_breaks_the_contract(tmp_path: Path, module: str, code: str,
                                               broken: str) -> None:
    root = _copy(tmp_path)
    with open(root / "replaykit" / module, "a") as f:
        f.write(code)
    proc = _lint(root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{broken} BROKEN" in proc.stdout, proc.stdout
    assert "0 broken" not in proc.stdout


def test_no_import_cycle_but_the_listed_edges() -> None:
    tool = _cycles_tool()
    graph = tool.build_graph("replaykit")
    comps = tool.sccs(graph)
    for a, b in REMAINING_CYCLE_EDGES:  # each listed edge still exists and closes a cycle
        assert any(a in c and b in c for c in comps), (
            f"{a} -> {b} closes no cycle any more: delete it from REMAINING_CYCLE_EDGES")
        graph.remove_import(importer=a, imported=b)
    assert tool.sccs(graph) == [], tool.sccs(graph)


def test_the_cycle_finder_reports_an_added_cycle(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    with open(root / "replaykit" / "engine" / "_runner.py", "a") as f:
        f.write("\ndef _back():\n    from .. import cohorts  # noqa\n")
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "import_cycles.py"), "--json"],
                          cwd=root, env=_env(root), capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.returncode == 1, proc.stderr
    comps = json.loads(proc.stdout)
    engine_cycle = [c for c in comps if "replaykit.engine._runner" in c]
    assert len(engine_cycle) == 1
    assert {"replaykit.cohorts", "replaykit.engine", "replaykit.engine._runner"} <= set(
        engine_cycle[0])


# ------------------------------------------------------------------ display internals by name
DISPLAY = ("replaykit.plots", "replaykit.widgets", "replaykit.report")


def _member(module: str) -> str | None:
    return next((d for d in DISPLAY if module == d or module.startswith(d + ".")), None)


def _private_uses(module: str, source: str) -> list[str]:
    """Imports in ``source`` (the text of ``module``) of another display member's underscore
    modules or names: ``from replaykit.report._core import x``, ``from ..plots import _f``."""
    own = _member(module)
    package = module if module.endswith("__init__") else module.rsplit(".", 1)[0]
    package = package.removesuffix(".__init__")
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                up = parts[:len(parts) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [(base, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [(a.name, "") for a in node.names]
        else:
            continue
        for mod, name in targets:
            full = f"{mod}.{name}" if name else mod
            other = _member(full)
            if other is None or other == own:
                continue
            tail = full[len(other):].lstrip(".").split(".")
            if any(seg.startswith("_") for seg in tail if seg):
                out.append(f"{module}:{node.lineno} imports {full}")
    return out


def test_display_modules_use_only_each_others_public_names() -> None:
    files = [ROOT / "replaykit" / "plots.py", ROOT / "replaykit" / "widgets.py",
             *sorted((ROOT / "replaykit" / "report").glob("*.py"))]
    bad = []
    for f in files:
        module = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        bad += _private_uses(module, f.read_text())
    assert bad == []


@pytest.mark.parametrize(("module", "source", "hits"), [
    ("replaykit.widgets", "from .report._transcript import transcript_html\n", 1),
    ("replaykit.widgets", "from .report import _template\n", 1),
    ("replaykit.report._core", "from ..plots import _axis, figure\n", 1),
    ("replaykit.report._core", "from .. import widgets\nfrom ._fmt import fmt_number\n", 0),
    ("replaykit.plots", "import replaykit.widgets._x\n", 1),
    ("replaykit.widgets", "from .report import transcript_html\n", 0),
])
def test_the_private_name_check_catches_what_it_should(module: str, source: str,
                                                       hits: int) -> None:
    assert len(_private_uses(module, source)) == hits
