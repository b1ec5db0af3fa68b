"""Random one-step mutations of decoded JSON lines and text-level damage, shared by the
differential tests of the JSON-lines scanners (Claude Code, Codex, Phoenix): each passes the
values and keys its format's shapes turn on; the random draws are the same for every format."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any


def mutate(obj: Any, rng: random.Random, values: Sequence[Any], keys: Sequence[str]) -> Any:
    """A copy of ``obj`` with one random change at a random depth: a member changed deeper,
    replaced by one of ``values`` or deleted, or one of ``keys`` set to one of ``values``; a
    list item changed or deleted; a scalar replaced."""
    if isinstance(obj, dict) and obj:
        obj = dict(obj)
        key = rng.choice(list(obj))
        op = rng.random()
        if op < 0.45:
            obj[key] = mutate(obj[key], rng, values, keys)
        elif op < 0.65:
            obj[key] = rng.choice(values)
        elif op < 0.8:
            del obj[key]
        else:
            obj[rng.choice(keys)] = rng.choice(values)
        return obj
    if isinstance(obj, list) and obj:
        obj = list(obj)
        i = rng.randrange(len(obj))
        if rng.random() < 0.7:
            obj[i] = mutate(obj[i], rng, values, keys)
        else:
            del obj[i]
        return obj
    return rng.choice(values)


def raw_mutation(line: str, rng: random.Random, dup_key: str = "type",
                 dup_value: str = "x") -> str:
    """Damage at the text level: cut, a stray byte, a BOM, ``dup_key`` given twice (first
    as ``dup_value``), NaN."""
    op = rng.randrange(5)
    if op == 0:
        return line[: rng.randrange(len(line))]
    if op == 1:
        i = rng.randrange(len(line))
        return line[:i] + rng.choice(["\x00", "}", '"', "\\", "\u2028"]) + line[i:]
    if op == 2:
        return "\ufeff" + line
    if op == 3:
        return line.replace(f'"{dup_key}":', f'"{dup_key}":"{dup_value}","{dup_key}":', 1)
    return line.replace("1", "NaN", 1)
