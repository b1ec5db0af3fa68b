"""Notebooks read as a user would write them (issue 19): no private imports, and every check
sits in its own cell tagged "test" and collapsed in JupyterLab (nbval still runs it). The checks
come last, under one heading (issue 42), so a reader never scrolls past one mid-story."""

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


CHECKS_HEADING = "## Checks (run by the test suite)"


def _cells(path: Path) -> list[nbformat.NotebookNode]:
    # imported here, not at collection: nbformat brings jsonschema (about 2 s of CPU), which
    # every pytest-xdist worker would pay to collect this module, whichever runs it
    import nbformat

    return list(nbformat.read(path, 4).cells)


def _code(path: Path) -> list[nbformat.NotebookNode]:
    return [c for c in _cells(path) if c.cell_type == "code"]


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


def _checks_after_story(cells: list[nbformat.NotebookNode]) -> list[str]:
    """What breaks "the checks come last, under one heading": an empty list when they do."""
    kinds = ["check" if _is_test_cell(c) else c.cell_type for c in cells]
    if "check" not in kinds:
        return ["no check cell"]
    first = kinds.index("check")
    wrong = [f"cell {i} ({kinds[i]}) after the first check" for i in range(first, len(kinds))
             if kinds[i] != "check"]
    headings = [i for i, c in enumerate(cells)
                if c.cell_type == "markdown" and c.source.startswith(CHECKS_HEADING)]
    if headings != [first - 1]:
        wrong.append(f"the {CHECKS_HEADING!r} heading sits at {headings}, not just before the "
                     f"first check (cell {first})")
    elif "nbval" not in cells[first - 1].source:
        wrong.append("the checks heading does not say nbval runs them")
    return wrong


@pytest.mark.parametrize("path", SPLIT, ids=lambda p: p.name)
def test_checks_come_after_every_example(path):
    assert _checks_after_story(_cells(path)) == []


def test_the_layout_rule_rejects_checks_between_examples():
    import nbformat

    def check(src):
        return nbformat.v4.new_code_cell(src, metadata={"tags": ["test"],
                                                        "jupyter": {"source_hidden": True}})

    head = nbformat.v4.new_markdown_cell(CHECKS_HEADING + "\n\nnbval runs them.")
    ex, md = nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("## More")
    assert _checks_after_story([ex, md, ex, head, check("assert x"), check("assert x")]) == []
    # the old layout: a check between two examples, no heading
    assert _checks_after_story([ex, check("assert x"), md, ex, check("assert x")]) != []
    assert _checks_after_story([ex, head, check("assert x"), ex]) != []       # an example after
    assert _checks_after_story([ex, check("assert x")]) != []                 # no heading
    assert _checks_after_story([head, ex, check("assert x")]) != []           # heading too early
    assert _checks_after_story([ex, md, ex]) == ["no check cell"]


def test_the_checker_sees_asserts_anywhere():
    assert _has_check("for x in y:\n    assert x")
    assert _has_check("pd.testing.assert_frame_equal(a, b)")
    assert not _has_check("x = 1\nprint('assert')")
