"""Small deterministic text helpers shared by the generators."""

from __future__ import annotations

import random
from typing import Any

_WORDS = (
    "the agent reads file config json and then runs tests again because output changed "
    "check results parse error retry tool call model stream token cache branch replay "
    "state fold step turn user asks for a summary of the last run with details über café "
    "naïve 数据 résumé \"quoted\" path/to/src main.py utils.py README.md"
).split()
_PATHS = ("src/app.py", "src/util/io.py", "tests/test_app.py", "README.md", "docs/guide.md")


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    """A sentence of ``lo``..``hi`` words (may contain quotes and non-ASCII characters)."""
    n = rng.randint(lo, hi)
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def tool_args(rng: random.Random, tool: str) -> dict[str, Any]:
    """Plausible arguments for ``tool``."""
    if tool == "bash":
        return {"command": f"pytest -q {rng.choice(_PATHS)} -k {rng.choice(_WORDS)}",
                "timeout": rng.choice([30, 60, 120])}
    if tool == "grep":
        return {"pattern": rng.choice(_WORDS), "path": rng.choice(_PATHS), "flags": ["-n"]}
    if tool == "write_file":
        return {"path": rng.choice(_PATHS), "content": sentence(rng, 5, 40) + "\n"}
    if tool == "web_search":
        return {"query": sentence(rng, 2, 6), "max_results": rng.randint(3, 10)}
    if tool == "list_dir":
        return {"path": rng.choice(("src", "tests", "docs", "."))}
    return {"path": rng.choice(_PATHS), "offset": rng.randint(0, 400), "limit": 200}


def tool_output(rng: random.Random, tool: str, failed: bool) -> str:
    """A plausible tool result text (multi-line)."""
    if failed:
        return f"Error: {tool} failed\n" + sentence(rng, 3, 12)
    lines = rng.randint(1, 8)
    return "\n".join(sentence(rng, 2, 12) for _ in range(lines))
