"""Numbers for people, shared by the report's sections (:mod:`._core`, :mod:`._cohort`):
:func:`fmt_number` and :func:`people_frame` live in :mod:`replaykit._base.display`
(``rk.for_people`` uses them too), :func:`cut_words` here."""

from __future__ import annotations

from .._base.display import EXACT_MINUS_ONE, _isna, fmt_number, people_frame

__all__ = ["EXACT_MINUS_ONE", "_isna", "cut_words", "fmt_number", "people_frame"]


def cut_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis
    (a single word longer than the limit is cut inside it).

    >>> cut_words("the quick brown fox jumps", 16)
    'the quick brown\u2026'
    >>> cut_words("short", 16)
    'short'
    """
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 1)]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip() + "\u2026"
