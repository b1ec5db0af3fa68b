"""Fixtures: authored or recorded tool outputs that serve divergent tool calls during a replay.

:class:`Fixture` and :class:`FixtureRegistry` (which fixture serves a call), and
:func:`read_isplay_fixtures`, which checks ``isplay.fixtures/v1`` files (parsed by the isplay
loader) and returns one row per fixture.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import pyarrow as pa

from .._base.json import args_hash as _args_hash
from .._base.json import canonical_json, json_type, loads
from ..eventlog.log import to_pandas
from ..io.isplay import FIXTURES_FORMAT, read_side_document
from ._validate import Invalid, want_obj, want_str
from .vocab import FIXTURE_PROVENANCES

__all__ = ["FIXTURES_SCHEMA", "Fixture", "FixtureRegistry", "read_isplay_fixtures"]


@dataclass(frozen=True)
class Fixture:
    """One tool output for replay, matched by project, tool, optional scope and a matcher.

    Exactly one of ``args_hash`` (the call's :func:`replaykit._base.json.args_hash` must equal it)
    and ``args_subset`` (every key/value given must appear in the call's arguments) is set.
    ``provenance`` is one of ``analyst``, ``ai``, ``simulator``, ``live``.

    Example:
        >>> fx = Fixture("fx-1", "proj", "lookup", output={"ok": True},
        ...              args_subset={"id": "C-1"}, provenance="analyst")
        >>> fx.matches({"id": "C-1", "extra": 2})
        True

    Raises:
        ValueError: no matcher or both matchers, or an unknown provenance.
    """

    fixture_id: str
    project_id: str
    tool_name: str
    output: Any = None
    args_hash: str | None = None
    args_subset: Mapping[str, Any] | None = None
    scope_replay_id: str | None = None
    scope_branch_id: str | None = None
    is_error: bool = False
    provenance: str = "analyst"
    created_by: str | None = None
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if (self.args_hash is None) == (self.args_subset is None):
            raise ValueError(f"fixture {self.fixture_id!r}: give exactly one of args_hash / "
                             "args_subset")
        if self.provenance not in FIXTURE_PROVENANCES:
            raise ValueError(f"fixture {self.fixture_id!r}: provenance must be one of "
                             f"{FIXTURE_PROVENANCES}, got {self.provenance!r}")

    def matches(self, args: Any, args_hash: str | None = None) -> bool:
        """True when this fixture's matcher accepts a call with ``args``."""
        if self.args_hash is not None:
            return self.args_hash == (args_hash or _args_hash(args))
        if not isinstance(args, Mapping):
            return False
        assert self.args_subset is not None
        return all(k in args and canonical_json(args[k]) == canonical_json(v)
                   for k, v in self.args_subset.items())

    def to_dict(self) -> dict[str, Any]:
        """The fixture in ``isplay.fixtures/v1`` entry shape."""
        out: dict[str, Any] = {"fixtureId": self.fixture_id, "projectId": self.project_id,
                               "toolName": self.tool_name}
        if self.scope_replay_id or self.scope_branch_id:
            out["scope"] = ({"replayId": self.scope_replay_id} if self.scope_replay_id
                            else {"branchId": self.scope_branch_id})
        out["matcher"] = ({"argsHash": self.args_hash} if self.args_hash is not None
                          else {"argsSubset": dict(self.args_subset or {})})
        out["output"] = self.output
        if self.is_error:
            out["isError"] = True
        out["provenance"] = self.provenance
        if self.created_by:
            out["createdBy"] = self.created_by
        if self.note:
            out["note"] = self.note
        out.update(self.extra)
        return out


class FixtureRegistry:
    """An immutable set of fixtures and the rule that picks one for a tool call.

    Resolution (:meth:`resolve`): candidates have the call's project (when the replay knows
    one) and tool name, and a scope that is empty or names this replay / this branch; among
    those whose matcher accepts the call, a replay-scoped fixture beats a branch-scoped one,
    which beats an unscoped one; then an ``args_hash`` matcher beats an ``args_subset`` one;
    then the first in registry order.

    Example:
        >>> reg = FixtureRegistry.from_file("data/isplay/fixtures.json")  # doctest: +SKIP
        >>> reg.resolve(project_id="proj-claims", tool_name="claim-lookup",
        ...             args={"claimId": "C-104"}).provenance  # doctest: +SKIP
        'live'
    """

    def __init__(self, fixtures: Iterable[Fixture] = ()) -> None:
        self._fixtures: tuple[Fixture, ...] = tuple(fixtures)
        ids = [f.fixture_id for f in self._fixtures]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate fixture ids: {dup}")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
                  ) -> FixtureRegistry:
        """Fixtures of ``isplay.fixtures/v1`` file(s).

        Raises:
            LoadError: a bad fixture file (see :func:`replaykit.read_isplay_fixtures`).
        """
        return cls.from_df(read_isplay_fixtures(path))

    @classmethod
    def from_df(cls, df: pd.DataFrame) -> FixtureRegistry:
        """Fixtures from a frame shaped like :func:`replaykit.read_isplay_fixtures`' result."""
        out = []
        for r in df.to_dict("records"):  # one row per fixture (a handful)
            def s(v: Any) -> Any:
                return None if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA \
                    else v
            out.append(Fixture(
                fixture_id=r["fixture_id"], project_id=r["project_id"], tool_name=r["tool_name"],
                output=loads(r["output"]), args_hash=s(r.get("args_hash")),
                args_subset=loads(r["args_subset"]) if s(r.get("args_subset")) else None,
                scope_replay_id=s(r.get("scope_replay_id")),
                scope_branch_id=s(r.get("scope_branch_id")), is_error=bool(r["is_error"]),
                provenance=str(r["provenance"]), created_by=s(r.get("created_by")),
                note=s(r.get("note")),
                extra=loads(r["extra"]) if s(r.get("extra")) else {}))
        return cls(out)

    @classmethod
    def coerce(cls, value: FixtureRegistry | Iterable[Fixture] | str | os.PathLike[str] | None
               ) -> FixtureRegistry:
        """A registry from a registry, fixtures, a fixtures file path, or None (empty)."""
        if value is None:
            return cls()
        if isinstance(value, FixtureRegistry):
            return value
        if isinstance(value, (str, os.PathLike)):
            return cls.from_file(value)
        if isinstance(value, pd.DataFrame):
            return cls.from_df(value)
        return cls(value)

    def __len__(self) -> int:
        return len(self._fixtures)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._fixtures)

    def add(self, *fixtures: Fixture) -> FixtureRegistry:
        """A new registry with ``fixtures`` appended (a fixture with an existing id replaces it)."""
        new_ids = {f.fixture_id for f in fixtures}
        return FixtureRegistry([f for f in self._fixtures if f.fixture_id not in new_ids]
                               + list(fixtures))

    def merge(self, other: FixtureRegistry | Iterable[Fixture] | str | None) -> FixtureRegistry:
        """This registry plus ``other``'s fixtures (``other`` wins on equal ids)."""
        return self.add(*FixtureRegistry.coerce(other))

    def resolve(self, *, tool_name: str, args: Any, project_id: str | None = None,
                args_hash: str | None = None, branch_id: str | None = None,
                replay_id: str | None = None) -> Fixture | None:
        """The fixture serving a call, or None (rule in the class docstring)."""
        h = args_hash or _args_hash(args)
        best: tuple[int, int, int] | None = None
        pick = None
        for i, f in enumerate(self._fixtures):  # registries are small
            if f.tool_name != tool_name:
                continue
            if project_id is not None and f.project_id != project_id:
                continue
            if f.scope_replay_id is not None:
                if f.scope_replay_id != replay_id:
                    continue
                scope_rank = 0
            elif f.scope_branch_id is not None:
                if f.scope_branch_id != branch_id:
                    continue
                scope_rank = 1
            else:
                scope_rank = 2
            if not f.matches(args, h):
                continue
            key = (scope_rank, 0 if f.args_hash is not None else 1, i)
            if best is None or key < best:
                best, pick = key, f
        return pick

    def to_df(self) -> pd.DataFrame:
        """One row per fixture: id, project, tool, scope, matcher, provenance, output JSON."""
        return pd.DataFrame([
            {"fixture_id": f.fixture_id, "project_id": f.project_id, "tool_name": f.tool_name,
             "scope_replay_id": f.scope_replay_id, "scope_branch_id": f.scope_branch_id,
             "args_hash": f.args_hash,
             "args_subset": canonical_json(dict(f.args_subset)) if f.args_subset else None,
             "output": canonical_json(f.output), "is_error": f.is_error,
             "provenance": f.provenance, "created_by": f.created_by}
            for f in self._fixtures])

    def with_scope(self, fixture_id: str, **changes: Any) -> FixtureRegistry:
        """A copy where one fixture has ``changes`` applied (e.g. a scope)."""
        return FixtureRegistry([replace(f, **changes) if f.fixture_id == fixture_id else f
                                for f in self._fixtures])

    def __repr__(self) -> str:
        return f"FixtureRegistry({len(self._fixtures)} fixtures)"


# ------------------------------------------------------------------ fixture files

_FIXTURE_KEYS = ("fixtureId", "projectId", "toolName", "scope", "matcher", "output", "isError",
                 "provenance", "createdBy", "note")
_HASH_RE = re.compile(r"^[0-9a-f]{32}$")

FIXTURES_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("fixture_id", pa.string(), nullable=False),
        pa.field("project_id", pa.string(), nullable=False),
        pa.field("tool_name", pa.string(), nullable=False),
        pa.field("scope_replay_id", pa.string()),
        pa.field("scope_branch_id", pa.string()),
        pa.field("args_hash", pa.string()),
        pa.field("args_subset", pa.string()),
        pa.field("output", pa.large_string()),
        pa.field("is_error", pa.bool_(), nullable=False),
        pa.field("provenance", pa.string(), nullable=False),
        pa.field("created_by", pa.string()),
        pa.field("note", pa.string()),
        pa.field("extra", pa.string()),
        pa.field("source", pa.string(), nullable=False),
    ]
)


def _fixture_row(fx: Any, k: int, src: str) -> dict[str, Any]:
    where = f"fixtures[{k}]"
    if not isinstance(fx, dict):
        raise Invalid(where, "not_object", f"must be an object, got {json_type(fx)}",
                      "Write each fixture as an object.")
    dot = f"{where}."
    row: dict[str, Any] = {
        "fixture_id": want_str(fx, "fixtureId", dot),
        # "" is the project of a replay whose branch names none (fixture_spec prints it)
        "project_id": want_str(fx, "projectId", dot, empty_ok=True),
        "tool_name": want_str(fx, "toolName", dot),
    }
    scope = want_obj(fx, "scope", dot, required=False) or {}
    unknown = sorted(set(scope) - {"replayId", "branchId"})
    if unknown:
        raise Invalid(f"{where}.scope.{unknown[0]}", "unknown_field",
                      "is not a scope key", "Scope a fixture by 'replayId' or 'branchId'.")
    if len(scope) > 1:
        raise Invalid(f"{where}.scope", "bad_value", "names both replayId and branchId",
                      "Scope a fixture to one replay or one branch (or omit scope).")
    row["scope_replay_id"] = want_str(scope, "replayId", f"{where}.scope.", required=False)
    row["scope_branch_id"] = want_str(scope, "branchId", f"{where}.scope.", required=False)
    matcher = want_obj(fx, "matcher", dot)
    assert matcher is not None
    keys = set(matcher)
    if keys not in ({"argsHash"}, {"argsSubset"}):
        raise Invalid(f"{where}.matcher", "bad_matcher",
                      f"must hold exactly one of argsHash / argsSubset, got keys {sorted(keys)}",
                      'Write {"argsHash": "<32 hex>"} or {"argsSubset": {...}}.')
    h = matcher.get("argsHash")
    if h is not None and (not isinstance(h, str) or not _HASH_RE.match(h)):
        raise Invalid(f"{where}.matcher.argsHash", "bad_args_hash",
                      f"must be 32 lowercase hex characters, got {json_type(h)}",
                      "Compute it with replaykit._base.json.args_hash(args), or match with "
                      "argsSubset.")
    subset = matcher.get("argsSubset")
    if "argsSubset" in matcher and not isinstance(subset, dict):
        raise Invalid(f"{where}.matcher.argsSubset", "bad_type",
                      f"must be an object, got {json_type(subset)}",
                      "Give the argument values the call must contain.")
    row["args_hash"] = h
    row["args_subset"] = canonical_json(subset) if subset is not None else None
    if "output" not in fx:
        raise Invalid(f"{where}.output", "missing_field", "is required (the tool output)",
                      "Add the output the tool should return (any JSON value).")
    row["output"] = canonical_json(fx["output"])
    is_err = fx.get("isError", False)
    if not isinstance(is_err, bool):
        raise Invalid(f"{where}.isError", "bad_type",
                      f"must be true or false, got {json_type(is_err)}", "Use a boolean.")
    row["is_error"] = is_err
    prov = fx.get("provenance")
    if prov not in FIXTURE_PROVENANCES:
        raise Invalid(f"{where}.provenance", "unknown_provenance",
                      f"must be one of {', '.join(FIXTURE_PROVENANCES)}, got {json_type(prov)}",
                      "Say where the output came from.")
    row["provenance"] = prov
    row["created_by"] = want_str(fx, "createdBy", dot, required=False)
    row["note"] = want_str(fx, "note", dot, required=False, empty_ok=True)
    extra = {key: v for key, v in fx.items() if key not in _FIXTURE_KEYS}
    row["extra"] = canonical_json(extra) if extra else None
    row["source"] = src
    return row


def read_isplay_fixtures(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> pd.DataFrame:
    """One row per fixture of ``isplay.fixtures/v1`` file(s): tool outputs for replay.

    Columns: fixture_id, project_id, tool_name, scope_replay_id, scope_branch_id, args_hash,
    args_subset (canonical JSON text), output (canonical JSON text), is_error, provenance
    (analyst / ai / simulator / live, categorical), created_by, note, extra (unknown fields as
    JSON text, or null), source. ``path`` may be a file or a list of files. Fixture files are
    all-or-nothing: the first problem raises.

    Raises:
        LoadError: naming the file, the JSON path (``fixtures[2].matcher``), a reason code
            (``unknown_provenance``, ``bad_matcher``, ``bad_args_hash``,
            ``duplicate_fixture_id``, ``missing_field``, ``bad_type``, ...) and a fix.
        FileNotFoundError: no such file.

    Example:
        >>> fx = read_isplay_fixtures("data/isplay/fixtures.json")  # doctest: +SKIP
        >>> fx.provenance.value_counts().to_dict()  # doctest: +SKIP
        {'analyst': 1, 'ai': 1, 'live': 1, 'simulator': 1}
    """
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for p in paths:
        src, obj = read_side_document(p, FIXTURES_FORMAT)
        fixtures = obj.get("fixtures")
        try:
            if not isinstance(fixtures, list):
                raise Invalid("fixtures", "bad_type",
                              f"must be an array, got {json_type(fixtures)}",
                              "List the fixtures (may be empty).")
            for k, fx in enumerate(fixtures):
                row = _fixture_row(fx, k, src)
                if row["fixture_id"] in seen:
                    raise Invalid(f"fixtures[{k}].fixtureId", "duplicate_fixture_id",
                                  f"{row['fixture_id']!r} was already defined in "
                                  f"{seen[row['fixture_id']]}", "Give each fixture its own id.")
                seen[row["fixture_id"]] = src
                rows.append(row)
        except Invalid as exc:
            raise exc.to_load_error(src) from None
    table = pa.Table.from_pylist(rows, schema=FIXTURES_SCHEMA)
    df = to_pandas(table)
    df["provenance"] = pd.Categorical(df["provenance"], categories=list(FIXTURE_PROVENANCES))
    return df
