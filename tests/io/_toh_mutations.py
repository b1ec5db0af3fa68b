"""Random one-step mutations of decoded toh event lines, shared by the toh tests that
compare two readings of the mutated log (column-wise vs line by line, native vs reference)."""

from __future__ import annotations

import random

#: values a mutation puts in place of another: edge integers, floats, strings that need
#: escaping, lone surrogates, containers and words the toh shapes key on
_VALUES = [0, -1, 1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**64, 1.5, 1.0, True, None,
           "", "x", 'q"uote', "back\\slash", "\u00e9", "\x01", "\ud800", [], {}, [1], ["a"],
           {"kind": "error"}, {"kind": 3}, "error", "finish", "usage", "text-delta"]


def _mutate(obj: object, rng: random.Random) -> object:
    """A copy of ``obj`` with one random change at a random depth."""
    if isinstance(obj, dict) and obj:
        obj = dict(obj)
        key = rng.choice(list(obj))
        op = rng.random()
        if op < 0.45:
            obj[key] = _mutate(obj[key], rng)
        elif op < 0.6:
            obj[key] = rng.choice(_VALUES)
        elif op < 0.7:
            del obj[key]
        elif op < 0.8:
            obj[rng.choice(["extra", "seq", "seq0", "time", "time0", "cacheKey"])] = \
                rng.choice(_VALUES)  # fmt: skip
        else:
            items = list(obj.items())
            rng.shuffle(items)
            obj = dict(items)
        return obj
    if isinstance(obj, list) and obj:
        obj = list(obj)
        i = rng.randrange(len(obj))
        if rng.random() < 0.7:
            obj[i] = _mutate(obj[i], rng)
        else:
            del obj[i]
        return obj
    return rng.choice(_VALUES)
