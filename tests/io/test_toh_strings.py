"""read_toh writes packed members' texts as JSON string literals column-wise: byte for byte
what canonical_json writes, for any text (escapes, control characters, non-ASCII)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit._base.json import canonical_json
from replaykit.io.toh import _json_strings

_CHARS = st.characters(codec="utf-8", categories=None, exclude_categories=("Cs",))
_TRICKY = st.sampled_from(['"', "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f",
                           "\x7f", "\u2028", "é", "😀", "a"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.one_of(_CHARS, _TRICKY), max_size=12), max_size=40))
def test_json_strings_equal_canonical_json(texts: list[str]) -> None:
    got = _json_strings(pa.array(texts, pa.large_string())).to_pylist()
    assert got == [canonical_json(t) for t in texts]


def test_json_strings_mixed_rows_keep_their_order() -> None:
    texts = ["plain", 'say "hi"', "tab\there", "\x02ctl", "", "back\\slash", "end"]
    got = _json_strings(pa.array(texts, pa.string())).to_pylist()
    assert got == ['"plain"', '"say \\"hi\\""', '"tab\\there"', '"\\u0002ctl"', '""',
                   '"back\\\\slash"', '"end"']
