"""io/pleach, io/toh and io/otel are packages split along their seams: the old import paths
keep working, and the pieces import one another one way only (no submodule imports its package
back)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

IO = Path(__file__).resolve().parents[2] / "replaykit" / "io"

#: names other modules and tests import from the old single-file modules
USED = {
    "pleach": ("read_pleach", "sniff", "FORMAT", "EVENT_KINDS", "DERIVED_COLUMNS",
               "derive_columns", "events_from_arrow", "_typed_payloads", "_runs_table",
               "_member_text", "_FastPathFailed", "_TYPED", "_BLOCK", "_fast_block",
               "_robust_block", "_parse_payloads", "_slim"),
    "otel": ("read_otel", "sniff", "FORMAT", "FINISH", "MODEL_OPERATIONS",
             "DuplicateSpanWarning"),
    "toh": ("read_toh", "sniff", "is_side_file", "OrphanRunWarning", "FORMAT", "CHUNK_TYPES",
            "KIND_OF_TYPE", "_json_strings", "_member_payloads", "_decode_event", "_dump"),
}


@pytest.mark.parametrize("pkg", sorted(USED))
def test_old_names_are_importable_from_the_package(pkg: str) -> None:
    mod = importlib.import_module(f"replaykit.io.{pkg}")
    assert [n for n in USED[pkg] if not hasattr(mod, n)] == []
    for name in mod.__all__:
        assert hasattr(mod, name)


def _sibling_imports(path: Path) -> set[str]:
    """The package-relative modules a submodule imports ('' = the package itself)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out.add(node.module or "")
    return out


@pytest.mark.parametrize("pkg", sorted(USED))
def test_submodules_import_one_way(pkg: str) -> None:
    subs = {p.stem: _sibling_imports(p) for p in (IO / pkg).glob("_*.py")}
    assert subs, pkg
    assert not any("" in deps or "__init__" in deps for deps in subs.values()), subs
    # no cycle among the submodules
    state: dict[str, int] = {}

    def visit(m: str, path: tuple[str, ...]) -> None:
        assert state.get(m) != 1, f"import cycle {' -> '.join((*path, m))}"
        if state.get(m) == 2:
            return
        state[m] = 1
        for dep in subs.get(m, ()):
            visit(dep, (*path, m))
        state[m] = 2

    for m in subs:
        visit(m, ())
