"""Every notebook and every README example runs after `make demo` alone (issue 42, item 1).

`make demo` installs the extras of the Makefile's ``.installed-base`` recipe; the suite runs in
the dev environment, which has more. tools/demo_env.py derives, from the Makefile and
pyproject.toml (the source of truth) through the installed distributions' requirements, which
modules the demo environment lacks, and can block them in an interpreter.

Two checks, for the suite's time budget:

* fast (``make check``): every module a notebook or a README Python block imports is one
  `make demo` installs, and the demo extras hold those replaykit asks for by name in a
  ``MissingExtraError`` on the notebooks' paths (sql, frames, dask, inspect) -- values read
  from the files, not listed here;
* slow (``make test``): each notebook executed with every module outside the demo environment
  blocked (an import of one raises ModuleNotFoundError, so replaykit's own lazy imports --
  ADBC for ``read_sql``, ``distributed`` for ``engine="dask"``, ``inspect_ai`` -- fail exactly
  as they would after `make demo`). That is nbval's own pass over notebooks/ (`make test`):
  tests/conftest.py starts nbval's kernels with an IPython start-up file that blocks them
  (``demo_env.kernel_ipythondir``) and fails a notebook whose kernel did not; this module
  checks the mechanism and that the check can fail. The README's Python blocks run in a
  blocked interpreter in tests/test_docs.py (test_readme_quickstart_runs). Building a real
  venv per run (a minute of installs and the native build) would not fit the suite.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import demo_env  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def blocked() -> set[str]:
    return demo_env.blocked_modules()


def _imports(source: str) -> set[str]:
    out: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out  # IPython syntax (a magic): no import to check
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.partition(".")[0])
    return out


def _sources() -> list[tuple[str, str]]:
    src = [(p.name, c.source) for p in NOTEBOOKS for c in nbformat.read(p, 4).cells
           if c.cell_type == "code"]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    src += [("README.md", b) for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)]
    return src


def test_the_demo_environment_is_derived_from_the_makefile_and_pyproject(blocked: set[str]):
    extras = demo_env.demo_extras()
    assert extras[:4] == ["fast", "replay", "viz", "lab"]
    dists = demo_env.demo_distributions()
    # what the three notebooks that failed after `make demo` need is installed now
    assert {"adbc-driver-sqlite", "inspect-ai", "distributed", "polars", "duckdb"} <= dists
    assert {"jupyterlab", "nbstripout", "ipykernel", "pandas", "pyarrow"} <= dists
    # the dev tools are not, and are blocked
    assert {"pytest", "hypothesis", "playwright", "psycopg", "nbval"} <= blocked
    assert not {"polars", "duckdb", "dask", "distributed", "inspect_ai",
                "adbc_driver_sqlite", "IPython", "ipywidgets", "plotly"} & blocked


def test_every_notebook_and_readme_import_is_installed_by_make_demo(blocked: set[str]):
    sources = _sources()
    assert len(sources) > 100 and len({n for n, _ in sources}) == len(NOTEBOOKS) + 1
    used = {(name, m) for name, src in sources for m in _imports(src)}
    assert ("09_scaling_with_dask.ipynb", "distributed") in used  # the check sees imports
    assert sorted((n, m) for n, m in used if m in blocked) == []


def test_the_extras_replaykit_asks_for_on_the_notebooks_paths_are_demo_extras():
    """replaykit names the extra a feature needs in its MissingExtraError (``pip install
    "replaykit[X]"``); the features the notebooks and README call need these."""
    asked = set()
    for path in (ROOT / "replaykit").rglob("*.py"):
        asked |= set(re.findall(r'MissingExtraError\(\s*(?:"[^"]*"|\w+),\s*"(\w+)",',
                                path.read_text(encoding="utf-8"), flags=re.S))
    assert {"sql", "dask", "inspect", "frames"} <= asked
    demo = set(demo_env.demo_extras())
    used_by_examples = {"sql", "dask", "inspect", "frames"}  # 05, 09, 08, README
    assert used_by_examples <= demo
    # what stays out: the dev tools, and OTLP protobuf files (no notebook reads one)
    assert asked - demo <= {"otel", "dev"}


def test_blocking_works_as_make_demo_would_fail(tmp_path: Path):
    import subprocess

    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'tools')!r}); import demo_env\n"
            "demo_env.block()\nimport importlib.util\n"
            "import pandas, polars, dask.dataframe, distributed, inspect_ai, adbc_driver_sqlite\n"
            "print(importlib.util.find_spec('openai'), importlib.util.find_spec('polars')"
            " is not None)\n"
            "try:\n    import pytest\nexcept ModuleNotFoundError as e:\n"
            "    print('blocked', e.name)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["None True", "blocked pytest"]


@pytest.mark.slow
def test_the_notebook_run_fails_as_make_demo_did_without_an_extra(tmp_path: Path,
                                                                  blocked: set[str]):
    """The check can fail: with the extras `make demo` installed before (no sql), notebook
    05 stops at rk.read_sql with the MissingExtraError a newcomer saw."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    root = tmp_path / "old"
    root.mkdir()
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    old = re.sub(r'(\.installed-base:.*?-e "\.\[)[^\]]*', r"\1fast,replay,viz,lab", makefile,
                 count=1, flags=re.S)
    (root / "Makefile").write_text(old, encoding="utf-8")
    assert demo_env.demo_extras(root) == ["fast", "replay", "viz", "lab"]
    ipython = demo_env.kernel_ipythondir(tmp_path / "ipython", root)
    nb = nbformat.read(ROOT / "notebooks" / "05_integrity_and_databases.ipynb", 4)
    # the kernel blocked before the first cell, as the suite's nbval kernels do
    nb.cells.insert(0, nbformat.v4.new_code_cell(
        "import importlib.util, sys\nassert 'demo_env' in sys.modules\n"
        "assert importlib.util.find_spec('pytest') is None\n"
        "assert importlib.util.find_spec('adbc_driver_sqlite') is None\n"
        "assert importlib.util.find_spec('plotly') is not None"))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "data").symlink_to(ROOT / "data")
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path / "notebooks")}})
    with pytest.raises(CellExecutionError) as info:
        client.execute(env=dict(os.environ, IPYTHONDIR=str(ipython)))
    assert "MissingExtraError" in str(info.value)
    assert 'pip install "replaykit[sql]"' in str(info.value)
    # one kernel, which hid the modules the old extras do not install (sql's among them)
    markers = demo_env.kernel_markers(ipython)
    assert len(markers) == 1 and list(markers.values())[0] > len(blocked)
