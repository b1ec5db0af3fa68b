"""Which replaykit modules a source file imports (statically, imports inside functions too):
for tests that check which way the arrows between layers run."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imports_of(path: Path) -> set[tuple[str, str]]:
    """(module, name) of every replaykit import in ``path``, at module level or inside
    functions (name "" for ``import x``); relative imports resolved."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1]  # a module's package; an __init__'s package is its folder
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update((a.name, "") for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out.update((base, a.name) for a in node.names)
    return {(m, n) for m, n in out if m.startswith("replaykit")}


def replaykit_files(sub: str) -> list[Path]:
    """Every ``.py`` file under ``replaykit/<sub>`` (a package folder or one module's name)."""
    return sorted((ROOT / "replaykit" / sub).rglob("*.py"))
