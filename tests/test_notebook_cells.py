"""Notebooks read as a user would write them (issue 19): no private imports, and every check
sits in its own cell tagged "test" and collapsed in JupyterLab (nbval still runs it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# notebook 06 (the visual tour) is generated with the report work (issue 16), not here
SPLIT = [p for p in NOTEBOOKS if not p.name.startswith("06_")]


def _code(path: Path) -> list[nbformat.NotebookNode]:
    # imported here, not at collection: nbformat brings jsonschema (about 2 s of CPU), which
    # every pytest-xdist worker would pay to collect this module, whichever runs it
    import nbformat

    return [c for c in nbformat.read(path, 4).cells if c.cell_type == "code"]


def _has_check(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name.startswith("assert"):
                return True
    return False


def _is_test_cell(cell: nbformat.NotebookNode) -> bool:
    md = cell.metadata
    return "test" in md.get("tags", []) and md.get("jupyter", {}).get("source_hidden") is True


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_import_no_private_module(path):
    private = re.compile(r"^\s*(from|import)\s+replaykit(\.\w+)*\._\w+", re.M)
    hits = [c.source for c in _code(path) if private.search(c.source)]
    assert hits == []


@pytest.mark.parametrize("path", SPLIT, ids=lambda p: p.name)
def test_checks_live_in_collapsed_cells_tagged_test(path):
    cells = _code(path)
    teaching = [c for c in cells if not _is_test_cell(c)]
    tests = [c for c in cells if _is_test_cell(c)]
    assert tests, "a notebook without checks proves nothing when it runs"
    assert [c.source for c in teaching if _has_check(c.source)] == []
    assert all(_has_check(c.source) for c in tests)  # a test cell checks something
    assert teaching and not _is_test_cell(cells[0])  # the notebook opens with user code


def test_the_checker_sees_asserts_anywhere():
    assert _has_check("for x in y:\n    assert x")
    assert _has_check("pd.testing.assert_frame_equal(a, b)")
    assert not _has_check("x = 1\nprint('assert')")
