"""read_toh's column-wise reading (packed rows and the frequent simple event lines proven by
Arrow, see replaykit/io/toh/_templates.py) gives exactly what the row-wise reading gives: the
same events, runs and quarantine (or the same error), on the real corpus, on generated logs
and on lines mutated to break the proofs in every way the row-wise checks care about."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest
from _toh_mutations import _VALUES, _mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import replaykit as rk
from replaykit.datasets import generate_toh
from replaykit.errors import ReplayKitError
from replaykit.io.toh import _lines
from replaykit.io.toh._packed import PACKED_PREFIXES, prove_packed
from replaykit.io.toh._templates import TEMPLATES, prove_rows


def _load(path: Path, columnwise: bool, errors: str) -> tuple[str, tuple[pa.Table, ...] | str]:
    old = _lines.COLUMNWISE
    _lines.COLUMNWISE = columnwise
    try:
        log = rk.read_toh(path, owner="t", errors=errors, progress=False)  # type: ignore[arg-type]
    except ReplayKitError as exc:
        return "error", f"{type(exc).__name__}: {exc}"
    finally:
        _lines.COLUMNWISE = old
    return "log", (log.table, log.runs, log.quarantine)


def _assert_same(path: Path) -> None:
    for errors in ("quarantine", "raise"):
        kind_a, a = _load(path, False, errors)
        kind_b, b = _load(path, True, errors)
        assert kind_a == kind_b, (errors, a, b)
        if kind_a == "error":
            assert a == b
            continue
        for ta, tb in zip(a, b, strict=True):
            assert isinstance(ta, pa.Table) and isinstance(tb, pa.Table)
            assert ta.schema.equals(tb.schema), errors
            assert ta.equals(tb), (errors, [c for c in ta.column_names
                                            if not ta.column(c).equals(tb.column(c))])


@pytest.mark.corpus
# the corpus holds a child session whose parent log is not in it: the loader says so
@pytest.mark.filterwarnings("ignore::replaykit.io.toh.OrphanRunWarning")
def test_corpus_columnwise_equals_rowwise(toh_corpus: Path) -> None:
    _assert_same(toh_corpus)
    for d in sorted({p.parent for p in toh_corpus.rglob("*.jsonl")})[:40]:
        _assert_same(d)


def test_generated_log_is_proven_and_equal(tmp_path: Path) -> None:
    f = tmp_path / "session.jsonl"
    generate_toh(f, events=6000, seed=7)
    lines = f.read_bytes().split(b"\n")[:-1]
    packed = [i for i, raw in enumerate(lines) if raw.startswith(PACKED_PREFIXES)]
    proof = prove_packed(lines, packed)
    assert proof is not None and proof.line.tolist() == packed  # every packed row proven
    proven = 0
    for t in TEMPLATES:
        cand = [i for i, raw in enumerate(lines) if raw.startswith(f'{{"type":"{t}",'.encode())]
        got = prove_rows(lines, cand, t)
        assert got is not None and got.line.tolist() == cand, t
        proven += len(cand)
    assert proven + len(packed) > len(lines) / 2  # the column-wise reading does the bulk
    _assert_same(f)


# ---- mutations: each line of a small generated log, changed in ways the proofs must catch
def _text(obj: object, rng: random.Random) -> str:
    style = rng.random()
    if style < 0.8:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if style < 0.9:
        return json.dumps(obj)  # spaces, \\u escapes
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + " "


_BASE: list[str] = []


def _base_lines(tmp: Path) -> list[str]:
    if not _BASE:
        f = tmp / "base.jsonl"
        generate_toh(f, events=400, seed=3)
        _BASE.extend(f.read_text(encoding="utf-8").splitlines())
    return _BASE


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_mut=st.integers(1, 6))
def test_mutated_lines_read_the_same_both_ways(tmp_path: Path, seed: int, n_mut: int) -> None:
    rng = random.Random(seed)
    lines = list(_base_lines(tmp_path))
    for _ in range(n_mut):
        i = rng.randrange(1, len(lines))
        op = rng.random()
        if op < 0.8:
            try:
                obj = json.loads(lines[i])
            except ValueError:  # already truncated
                continue
            lines[i] = _text(_mutate(obj, rng), rng)
        elif op < 0.9:
            lines[i] = lines[i][: rng.randrange(len(lines[i]))]  # truncated
        else:
            lines[i] = lines[i].replace("\u00e9", "\\u00e9")  # same value, other bytes
    f = tmp_path / f"m{seed}.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    _assert_same(f)


def _leaf_variants(obj: object) -> list[object]:
    """``obj`` with each leaf replaced by each edge value, each key dropped, an extra key added
    to each object and each object's keys reversed (one change per variant)."""
    out: list[object] = []
    if isinstance(obj, dict):
        keys = list(obj)
        out.append(dict(reversed(list(obj.items()))))
        out.append({**obj, "extra": 1})
        for k in keys:
            out.append({q: v for q, v in obj.items() if q != k})
            for v in _leaf_variants(obj[k]):
                out.append({**obj, k: v})
    elif isinstance(obj, list):
        if obj:
            out += [[v, *obj[1:]] for v in _leaf_variants(obj[0])]
            out.append([])
    else:
        out += [v for v in _VALUES if not (type(v) is type(obj) and v == obj)]
    return out


def test_every_leaf_edge_value_reads_the_same(tmp_path: Path) -> None:
    """One file per variant (a line Arrow cannot read sends its whole type to the row-wise
    reading, so variants sharing a file would hide each other)."""
    base = _base_lines(tmp_path)
    seen: dict[str, str] = {}
    for line in base[1:]:
        o = json.loads(line)
        c = o.get("data", {}).get("chunk", {})
        seen.setdefault(f"{o['type']}/{c.get('type')}", line)
    d = tmp_path / "variants"
    d.mkdir()
    n = 0
    for line in seen.values():
        for v in _leaf_variants(json.loads(line)):
            text = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
            (d / f"v{n}.jsonl").write_text("\n".join([base[0], line, text, line]) + "\n",
                                           encoding="utf-8", errors="surrogatepass")
            n += 1
    assert n > 1000
    _assert_same(d)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 1), st.integers(0, 2)), max_size=9))
def test_ascending_is_lexsort_leaving_rows_in_place(rows: list[tuple[int, int, int]]) -> None:
    import numpy as np

    from replaykit.io.toh._assemble import _ascending

    keys = [np.array([r[i] for r in rows], dtype=np.int64) for i in range(3)]
    pos = np.arange(len(rows))
    assert _ascending(*keys) == bool((np.lexsort((pos, keys[2], keys[1], keys[0])) == pos).all())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | st.text(alphabet=st.sampled_from(
    ['a', '\u00e9', '"', '\\', '\n', '\x01', '\x1f', ' ', '\U0001f600', '\x7f'])), max_size=20),
    st.integers(0, 5))  # fmt: skip
def test_escape_scan_matches_the_regex(texts: list[str | None], offset: int) -> None:
    import numpy as np
    import pyarrow.compute as pc

    from replaykit.io.toh._packed import _NEEDS_ESCAPE, _needs_escape

    a = pa.array(texts, pa.large_string()).slice(min(offset, len(texts)))
    want = np.asarray(pc.fill_null(pc.match_substring_regex(a, _NEEDS_ESCAPE), False),
                      dtype=bool) if len(a) else np.zeros(0, bool)  # fmt: skip
    assert _needs_escape(a).tolist() == want.tolist()
