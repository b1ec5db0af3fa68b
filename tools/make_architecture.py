"""Redraw docs/architecture.md's "Packages by concern" tables from the code.

Each top-level package of ``replaykit/`` gets a table: its modules (line count and the first
paragraph of the module docstring) and its subpackages (the first paragraph of their
``__init__``). Run it after moving or adding modules::

    .venv/bin/python tools/make_architecture.py          # rewrite the section
    .venv/bin/python tools/make_architecture.py --check  # exit 1 if the section is stale

The text before the first ``### `replaykit/`` heading of the section and everything from the
next ``## `` heading on are kept as written by hand.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## Packages by concern"
WIDTH = 150


def first_paragraph(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    return para if len(para) <= WIDTH else para[: WIDTH - 1].rstrip() + " …"


def package_table(pkg: Path) -> str:
    rel = pkg.relative_to(ROOT).as_posix()
    lines = [f"### `{rel}/`", "", first_paragraph(pkg / "__init__.py"), "",
             "| module | lines | holds |", "|---|---:|---|"]
    for mod in sorted(pkg.glob("*.py")):
        n = len(mod.read_text().splitlines())
        lines.append(f"| `{mod.relative_to(ROOT).as_posix()}` | {n} | {first_paragraph(mod)} |")
    for sub in sorted(p for p in pkg.iterdir() if (p / "__init__.py").is_file()):
        lines.append(f"| `{sub.relative_to(ROOT).as_posix()}/` | | "
                     f"{first_paragraph(sub / '__init__.py')} |")
    return "\n".join(lines) + "\n"


def render(text: str) -> str:
    start = text.index(SECTION)
    first = text.index("\n### `replaykit/", start) + 1
    end = text.index("\n## ", first) + 1
    packages = sorted(p for p in (ROOT / "replaykit").iterdir()
                      if (p / "__init__.py").is_file())
    body = "\n".join(package_table(p) for p in packages)
    return text[:first] + body + "\n" + text[end:]


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print("docs/architecture.md's package tables are stale: "
                  "run .venv/bin/python tools/make_architecture.py")
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
