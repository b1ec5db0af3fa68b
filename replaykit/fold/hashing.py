"""``state_hash``: a structured 64-bit hash of a state, defined by canonical JSON.

Definition (also in docs/fold.md). All arithmetic is on unsigned 64-bit integers, mod 2**64.

* ``M(x)`` - the splitmix64 finaliser (``x ^= x >> 30; x *= 0xBF58476D1CE4E5B9;
  x ^= x >> 27; x *= 0x94D049BB133111EB; x ^= x >> 31``).
* ``H(text)`` - for the UTF-8 bytes ``b_0 .. b_{L-1}`` of a text:
  ``M(sum_i (b_i + 1) * P**i  +  L * K)`` with ``P = 0x100000001B3`` and
  ``K = 0x9E3779B97F4A7C15``.
* ``E(x)`` - one element: a dict is the set of its entries,
  ``M(sum_k M(H(canonical_json(k)) ^ H(canonical_json(v))))``; anything else
  ``H(canonical_json(x))``.
* ``V(value)`` - one field's value: a list/tuple is the multiset of its elements,
  ``M(sum E(item))``; anything else ``E(value)``.
* ``state_hash(state) = M(sum over fields of M(H(canonical_json(name)) ^ V(value)))``.

Sums make collections and dicts order-independent and let the column-wise engine keep a
*running* hash: a keyed collection adds ``E(item)`` when an item is added and subtracts it when
it is removed (a segmented cumulative sum), a keyed counter swaps its entry ``(key, old)`` for
``(key, new)``, and the state's sum changes only at the rows where some field changes.
``H`` over many texts is numpy work on the Arrow string buffers (no Python object per text).
Not a cryptographic hash: it detects accidental differences, not adversarial ones.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._base import native as _native
from .._base.json import canonical_json

__all__ = ["element_hash", "hash_ints", "hash_json", "hash_texts", "json_texts", "mix", "pair",
           "state_hash", "text_hash", "value_hash"]

_U = np.uint64
P = _U(0x100000001B3)
K = _U(0x9E3779B97F4A7C15)
_P_INV = _U(pow(int(P), -1, 2**64))
_POW = np.ones(1, dtype=np.uint64)
_INV = np.ones(1, dtype=np.uint64)
_BLOCK = 1 << 18
_POW_LOCK = threading.Lock()
_ESCAPE = r'["\\\x00-\x1f]'  # characters canonical JSON escapes inside a string


def mix(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """splitmix64 finaliser ``M`` of a uint64 array (a new array, or in place with ``out=x``)."""
    x = np.array(x, dtype=np.uint64, copy=True) if out is None else out
    tmp = np.empty_like(x)  # one scratch buffer for the three shifts
    np.right_shift(x, _U(30), out=tmp)
    x ^= tmp
    x *= _U(0xBF58476D1CE4E5B9)
    np.right_shift(x, _U(27), out=tmp)
    x ^= tmp
    x *= _U(0x94D049BB133111EB)
    np.right_shift(x, _U(31), out=tmp)
    x ^= tmp
    return x


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Tables of ``P**k`` and ``P**-k`` (P is odd, so invertible mod 2**64), k < n."""
    with _POW_LOCK:  # fold hashes fields on two threads: grow both tables together
        return _grow_powers(n)


def _grow_powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    global _POW, _INV
    if len(_POW) < n:
        m = max(n, 2 * len(_POW))
        for name, base in (("_POW", P), ("_INV", _P_INV)):
            pw = np.empty(m, dtype=np.uint64)
            pw[0] = 1
            pw[1:] = np.cumprod(np.full(m - 1, base, dtype=np.uint64))  # wraps mod 2**64
            globals()[name] = pw
    return _POW, _INV


def hash_texts(texts: Any) -> np.ndarray:
    """``H`` of every text of a string array (Arrow or a Python list), as numpy uint64.

    >>> int(hash_texts(["{}"])[0]) == int(hash_texts(pa.array(["{}"]))[0])
    True
    """
    arr = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(
        list(texts), pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    arr = _plain_strings(arr)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    off, data = _offsets(arr)
    if _native.enabled():  # the native core: one pass over the bytes, GIL released
        got = _native.core().text_hashes(off.view(np.uint8), data)
        return np.frombuffer(got, dtype=np.uint64)
    lens = np.diff(off)
    h = lens.astype(np.uint64) * K
    h += _poly_strings(data, off, lens)
    return mix(h, out=h)


def _poly_strings(data: np.ndarray, off: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """:func:`_poly` of every string (``off``: n + 1 offsets from 0 into ``data``): strings of
    one common length as a matrix product with the power table, else in blocks of about
    ``_BLOCK`` bytes (bounded temporaries and power tables)."""
    n = len(lens)
    total = int(off[-1]) if n else 0
    if n == 0 or total == 0:
        return np.zeros(n, dtype=np.uint64)
    width = int(lens[0])
    if width and total == width * n:  # the lengths sum to n * lens[0]: check they are equal
        if int(lens.min()) == int(lens.max()):
            return _poly_fixed(data[:total].reshape(n, width))
    out = np.empty(n, dtype=np.uint64)
    cuts = np.searchsorted(off, np.arange(0, total, _BLOCK), side="right") - 1
    cuts = np.unique(np.append(cuts, n))
    if cuts[0] > 0:
        out[: cuts[0]] = 0  # leading empty strings
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        out[a:b] = _poly(data, off[a:b + 1], lens[a:b])
    return out


def _poly_fixed(mat: np.ndarray) -> np.ndarray:
    """:func:`_poly` of the rows of an (n, width) uint8 matrix: ``(mat + 1) @ P**arange``
    (uint64 arithmetic wraps mod 2**64, as the sums do), in row blocks."""
    n, width = mat.shape
    pw = _powers(width)[0][:width]
    out = np.empty(n, dtype=np.uint64)
    rows = max(1, _BLOCK // width)
    for a in range(0, n, rows):
        blk = mat[a:a + rows].astype(np.uint64)
        blk += _U(1)
        np.matmul(blk, pw, out=out[a:a + rows])
    return out


def _poly(data: np.ndarray, off: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """sum_i (b_i + 1) * P**i of the strings ``data[off[j]:off[j+1]]`` (uint64, wrapping).

    Weighted by the byte's position in the block (a slice of the power table, no gather),
    then each string's sum is shifted back by ``P**-start``.
    """
    b0, b1 = int(off[0]), int(off[-1])
    if b1 == b0:
        return np.zeros(len(lens), dtype=np.uint64)
    # P**-k for every start k in 0 .. b1 - b0 inclusive: an empty last string starts at b1
    pw, inv = _powers(b1 - b0 + 1)
    w = data[b0:b1].astype(np.uint64)
    w += _U(1)
    w *= pw[: b1 - b0]
    cs = np.zeros(b1 - b0 + 1, dtype=np.uint64)
    np.cumsum(w, out=cs[1:])
    rel = off - b0
    out = cs[rel[1:]] - cs[rel[:-1]]
    out *= inv[rel[:-1]]
    return out


def _plain_strings(arr: pa.Array) -> pa.Array:
    """``arr`` as string or large_string (offsets + data buffers): string views are cast."""
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr
    if getattr(pa.types, "is_string_view", lambda _: False)(t):
        return arr.cast(pa.large_string())
    return arr


def _offsets(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    n = len(arr)
    odt = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], dtype=odt, count=n + 1, offset=arr.offset * odt().itemsize)
    off = off.astype(np.int64)
    total = int(off[-1] - off[0])
    data = (np.frombuffer(bufs[2], dtype=np.uint8, count=total, offset=int(off[0]))
            if total else np.zeros(0, np.uint8))
    return off - off[0], data


def hash_ints(values: np.ndarray) -> np.ndarray:
    """``H(canonical_json(v))`` of every integer of a numpy integer array, without text.

    The same numbers as ``hash_texts(json_texts(pa.array(values)))``: the decimal digits are
    taken from the least significant one up (``m % 10``), which is the order in which the
    polynomial ``sum (b_i + 1) * P**i`` is evaluated by Horner's rule from its last byte;
    a ``-`` sign is the first byte. One pass per decimal digit of the largest magnitude.

    >>> int(hash_ints(np.array([-42]))[0]) == text_hash("-42")
    True
    """
    v = np.asarray(values)
    if v.dtype.kind == "u":
        mag = v.astype(np.uint64)
        neg = None
    else:
        v = v.astype(np.int64, copy=False)
        neg = v < 0
        mag = v.astype(np.uint64)
        np.negative(mag, out=mag, where=neg)  # two's complement: |v| also for -2**63
    acc = np.zeros(len(mag), dtype=np.uint64)
    length = np.zeros(len(mag), dtype=np.uint64)
    digit = np.empty_like(mag)
    step = np.empty_like(mag)
    first = True
    while first or mag.any():
        active = (mag > 0) | first  # zero is the one digit "0"
        np.remainder(mag, _U(10), out=digit)
        np.floor_divide(mag, _U(10), out=mag)
        np.multiply(acc, P, out=step)
        step += digit
        step += _U(ord("0") + 1)
        np.copyto(acc, step, where=active)
        length += active
        first = False
    if neg is not None and neg.any():
        np.multiply(acc, P, out=step)
        step += _U(ord("-") + 1)
        np.copyto(acc, step, where=neg)
        length += neg
    acc += length * K
    return mix(acc, out=acc)


def hash_json(arr: pa.Array) -> np.ndarray:
    """``H(canonical_json(v))`` for every value of an Arrow array (null: ``H("null")``).

    Strings without characters to escape are hashed from their own bytes (the two quotes
    are added arithmetically: no JSON text is built); everything else via :func:`json_texts`.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = _plain_strings(arr)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) or (
            arr.null_count) or len(arr) == 0:
        return hash_texts(json_texts(arr))
    off, data = _offsets(arr)
    if len(data) and ((data < 32) | (data == 34) | (data == 92)).any():
        return hash_texts(json_texts(arr))
    lens = np.diff(off)
    h = _poly_strings(data, off, lens)
    quote = _U(ord('"') + 1)
    pw = _powers(int(lens.max()) + 2)[0] if len(lens) else _POW
    h *= P  # the string's bytes sit at positions 1 .. L
    h += quote
    h += quote * pw[lens + 1]
    h += (lens + 2).astype(np.uint64) * K
    return mix(h, out=h)


def json_texts(arr: pa.Array) -> pa.Array:
    """Canonical JSON text of every value of an Arrow array (null -> ``null``), column-wise.

    Integers, booleans and strings are rendered with Arrow kernels (strings needing escapes,
    which are rare, go through :func:`canonical_json`); other types once per distinct value.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = _plain_strings(arr)
    t = arr.type
    if len(arr) == 0:
        return pa.array([], pa.string())
    if pa.types.is_dictionary(t):
        texts = json_texts(arr.dictionary).take(arr.indices)
    elif pa.types.is_null(t):
        return pa.array(np.full(len(arr), "null", dtype=object), pa.string())
    elif pa.types.is_integer(t):
        texts = pc.cast(arr, pa.string())
    elif pa.types.is_boolean(t):
        texts = pc.if_else(arr, pa.scalar("true"), pa.scalar("false"))
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        quote = pa.scalar('"', t)  # separators of the column's own type (string/large_string)
        texts = pc.binary_join_element_wise(quote, arr, quote, pa.scalar("", t))
        bad = pc.fill_null(pc.match_substring_regex(arr, _ESCAPE), False)
        if pc.any(bad).as_py():
            fixed = [canonical_json(s) for s in arr.filter(bad).to_pylist()]
            texts = pc.replace_with_mask(texts, bad, pa.array(fixed, texts.type))
    else:
        enc = arr.dictionary_encode()
        uniq = [canonical_json(v) for v in enc.dictionary.to_pylist()]
        texts = pa.array(uniq, pa.string()).take(enc.indices)
    if texts.null_count:
        texts = pc.fill_null(texts, "null")
    return texts


def _sum(h: np.ndarray) -> np.uint64:
    return np.add.reduce(h, dtype=np.uint64) if len(h) else _U(0)


def text_hash(text: str) -> int:
    """``H`` of one text."""
    return int(hash_texts([text])[0])


def pair(name_hash: Any, value_hashes: np.ndarray) -> np.ndarray:
    """``M(name_hash ^ value_hash)`` for many value hashes: one (name, value) entry."""
    g = np.bitwise_xor(np.asarray(value_hashes, dtype=np.uint64), _U(name_hash))
    return mix(g, out=g)


def _entries(d: Mapping[str, Any], value: Any) -> np.uint64:
    """``sum M(H(json(k)) ^ value(v))`` over the entries of a dict."""
    if not d:
        return _U(0)
    names = hash_texts([canonical_json(k) for k in d])
    vals = np.array([value(v) for v in d.values()], dtype=np.uint64)
    return _sum(mix(names ^ vals))


def element_hash(x: Any) -> int:
    """``E(x)``: a dict is the set of its entries, ``M(sum M(H(json(k)) ^ H(json(v))))``;
    anything else ``H(canonical_json(x))``."""
    if isinstance(x, Mapping):
        return int(mix(np.array([_entries(x, lambda v: text_hash(canonical_json(v)))],
                                np.uint64))[0])
    return text_hash(canonical_json(x))


def value_hash(value: Any) -> int:
    """``V(value)``: the hash of one field's value (see the module docstring)."""
    if isinstance(value, (list, tuple)):
        return int(mix(np.array([_sum(np.array([element_hash(x) for x in value],
                                               np.uint64))], np.uint64))[0])
    return element_hash(value)


def state_hash(state: Mapping[str, Any]) -> int:
    """The ``state_hash`` of one materialised state (an int in ``[0, 2**64)``).

    The column-wise :func:`replaykit.fold` computes the same number for every event, so
    ``state_hash(frame.at(run, seq, tenant_id=t))`` equals that row's ``state_hash``; the
    scalar reducer, ``step()`` and ``seek()`` states hash alike.

    >>> state_hash({"n": 1}) == state_hash({"n": 1}) != state_hash({"n": 2})
    True
    """
    return int(mix(np.array([_entries(state, value_hash)], np.uint64))[0])
