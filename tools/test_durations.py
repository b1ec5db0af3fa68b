"""Write ``tests/durations.json``: each test file's (or notebook's) summed test time, read from a
JUnit XML report (``pytest --junitxml=FILE``), which ``tests/conftest.py`` uses to hand the
costliest files to pytest-xdist's workers first.

Why: ``--dist loadscope`` keeps a file on one worker, and xdist's own order (files with the
most tests first) ran the one-test files that take longest -- the benchmark smoke run, the
JupyterLab save, the lint runs -- last, one worker busy for a minute while the other idled.
Longest first is the classic greedy schedule (LPT) and leaves the short files to fill the end.
Only the order is taken from these figures, so a file measured on a loaded machine sorts the
same; a file not listed counts as 0.3 s per test.

Usage::

    pytest tests notebooks ... --junitxml=/tmp/junit.xml
    python tools/test_durations.py /tmp/junit.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "durations.json"


def file_of(classname: str) -> str | None:
    """The repository path of a JUnit ``classname`` (``tests.io.test_x`` or
    ``tests.io.test_x.TestY``; notebooks: ``notebooks.01_quickstart.ipynb``)."""
    if classname.endswith(".ipynb"):
        head, _, stem = classname[: -len(".ipynb")].rpartition(".")
        return f"{head.replace('.', '/')}/{stem}.ipynb"
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        rel = "/".join(parts[:cut]) + ".py"
        if (ROOT / rel).is_file():
            return rel
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    sums: Counter[str] = Counter()
    for case in ET.parse(argv[0]).getroot().iter("testcase"):
        rel = file_of(case.get("classname") or "")
        if rel is not None:
            sums[rel] += float(case.get("time") or 0.0)
    OUT.write_text(json.dumps({k: round(v, 1) for k, v in sorted(sums.items())}, indent=0)
                   + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(sums)} files, {sum(sums.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
