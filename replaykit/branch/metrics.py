"""Replay metrics: definitions (scalar reference versions) and the comparability rules.

The bulk, column-wise versions live in :mod:`replaykit.branch.compare`; these scalar functions
define each metric on two plain sequences and are the reference the tests compare against.
Precise definitions with worked examples: docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = [
    "COMPARABILITY",
    "NON_COMPARABLE_DISTANCE",
    "changed_descendants",
    "classify",
    "first_divergence_step",
    "levenshtein",
    "tool_argument_changed",
    "tool_sequence_distance",
]

#: Above this normalised tool-sequence distance a replay is ``non_comparable``.
NON_COMPARABLE_DISTANCE = 0.5

#: The four comparability classes: meaning and the advice a report should follow.
COMPARABILITY: dict[str, dict[str, str]] = {
    "exact": {
        "meaning": "Every event signature matched the base run, under policies that execute "
                   "nothing live.",
        "advice": "Strong replay evidence, provided the capture itself is good.",
    },
    "aligned": {
        "meaning": "Tool calls (tool and arguments) and the terminal state match, but some "
                   "event content differs.",
        "advice": "Good for broad comparison; cite the replay policy.",
    },
    "diverged_but_comparable": {
        "meaning": "The replay diverged, yet stayed close enough for downstream comparison.",
        "advice": "Cite the first divergence step and the changed descendants.",
    },
    "non_comparable": {
        "meaning": "The replay did not finish (paused or failed) or drifted beyond the "
                   "distance bound.",
        "advice": "Make no causal claim; narrow the intervention or pick a later checkpoint.",
    },
}


def levenshtein(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Edit distance (insert, delete, substitute; cost 1 each) between two sequences.

    >>> levenshtein(["lookup", "risk", "siu"], ["lookup", "risk", "approve"])
    1
    """
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def first_divergence_step(base: Sequence[Hashable], replay: Sequence[Hashable]) -> int:
    """First position whose event signatures differ (a missing event counts); -1 if none.

    >>> first_divergence_step("abc", "abd"), first_divergence_step("ab", "abc"), \
first_divergence_step("ab", "ab")
    (2, 2, -1)
    """
    for i in range(max(len(base), len(replay))):
        if i >= len(base) or i >= len(replay) or base[i] != replay[i]:
            return i
    return -1


def changed_descendants(base: Sequence[Hashable], replay: Sequence[Hashable]) -> int:
    """Positions after the first divergence whose signatures differ (or exist on one side).

    >>> changed_descendants("abcde", "abXdY")
    1
    """
    first = first_divergence_step(base, replay)
    if first < 0:
        return 0
    return sum(
        1 for i in range(first + 1, max(len(base), len(replay)))
        if i >= len(base) or i >= len(replay) or base[i] != replay[i]
    )


def tool_sequence_distance(base: Sequence[Hashable], replay: Sequence[Hashable],
                           *, normalised: bool = False) -> float:
    """Edit distance between tool sequences; normalised divides by the longer length.

    >>> tool_sequence_distance(["a", "b"], ["a", "c", "d"]), \
tool_sequence_distance(["a", "b"], ["a", "c", "d"], normalised=True)
    (2, 0.6666666666666666)
    """
    d = levenshtein(base, replay)
    if not normalised:
        return d
    n = max(len(base), len(replay))
    return d / n if n else 0.0


def tool_argument_changed(base: Sequence[tuple[str, str]], replay: Sequence[tuple[str, str]]
                          ) -> int:
    """1 when, at the first position where (tool, args hash) differ, the tool is the same
    on both sides (so the arguments changed); else 0.

    >>> tool_argument_changed([("a", "h1"), ("b", "h2")], [("a", "h1"), ("b", "h9")])
    1
    """
    i = first_divergence_step(base, replay)
    if i < 0 or i >= len(base) or i >= len(replay):
        return 0
    return int(base[i][0] == replay[i][0] and base[i][1] != replay[i][1])


def classify(*, status: str, exact_policies: bool, first_divergence: int,
             signature_distance: int, normalised_distance: float, same_terminal: bool) -> str:
    """The comparability class of one replay (rules applied in order; docs/metrics.md).

    1. ``non_comparable``: status is not ``completed``, or the normalised tool-sequence
       distance is above :data:`NON_COMPARABLE_DISTANCE`.
    2. ``exact``: no divergence (first_divergence == -1) and exact policies.
    3. ``aligned``: the (tool, args hash) sequences are equal and the terminal event matches.
    4. ``diverged_but_comparable``: everything else.

    >>> classify(status="paused", exact_policies=True, first_divergence=-1,
    ...          signature_distance=0, normalised_distance=0.0, same_terminal=True)
    'non_comparable'
    """
    if status != "completed" or normalised_distance > NON_COMPARABLE_DISTANCE:
        return "non_comparable"
    if first_divergence == -1 and exact_policies:
        return "exact"
    if signature_distance == 0 and same_terminal:
        return "aligned"
    return "diverged_but_comparable"
