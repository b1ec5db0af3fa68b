"""How shared output (reports, their reproducibility stamp, saved replay results) names
files: relative to the folder the user passed, or by file name, never by an absolute path of
the machine that made it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shared_name", "shared_source"]


def shared_name(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
                ) -> str:
    """How a shared page names a file: relative to ``root`` (the folder the user passed) when
    it is inside it, else by its file name; never by an absolute path of this machine.

    >>> shared_name("/home/ana/runs/2025/a.json", "/home/ana/runs")
    'runs/2025/a.json'
    >>> shared_name("/home/ana/runs/2025/a.json")
    'a.json'
    """
    q = Path(path)
    if root is not None:
        r = Path(root)
        try:
            return str(Path(r.name) / q.relative_to(r)) if r.name else q.name
        except ValueError:
            pass
    return q.name or str(q)


def shared_source(source: str | None, root: str | os.PathLike[str] | None = None) -> str | None:
    """A ``source`` column value (``<format>:<path>``) as a shared page shows it: the path
    part through :func:`shared_name`. Values that name no file stay as they are.

    >>> shared_source("isplay:/tmp/x/claims.json")
    'isplay:claims.json'
    >>> shared_source("replay:rp-1")
    'replay:rp-1'
    """
    if not source or ":" not in source:
        return source
    fmt, rest = source.split(":", 1)
    if not (rest.startswith(("/", "~")) or (len(rest) > 2 and rest[1] == ":")
            or os.sep in rest or "/" in rest):
        return source
    return f"{fmt}:{shared_name(rest, root)}"
