"""Projections: named state fields, each of a kind with a column-wise and a scalar implementation.

A projection is a set of named fields. Each field has a *kind*:

=============  =========================================================================
kind           state value
=============  =========================================================================
counter        int: sum of ``value`` (1 by default) over matching events; with ``by=`` a
               dict key -> sum (a keyed counter)
last           the value of the latest matching event whose value is not null
max / min      the largest / smallest non-null value seen on matching events
collection     a list of items: added by ``add`` events, removed by ``remove`` events,
               keyed; in order of (effective) addition
reducer        the escape hatch: ``fn(previous, event) -> new`` run on matching events
=============  =========================================================================

Events are matched with :func:`on` (kinds, source types, column conditions), never by Python
per row in the column-wise engine. Values come from a canonical column (``"tool_name"``), a
constant (``1``) or a payload path (:func:`from_payload`). Events a field does not match leave
it unchanged, so unknown event types fold as no-ops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._base.json import loads
from ..errors import SchemaError
from ..schema import EVENTS_SCHEMA
from ._frozen import FrozenDict, freeze

__all__ = [
    "NOTNULL",
    "Collection",
    "Counter",
    "Field",
    "FromPayload",
    "Last",
    "Max",
    "Min",
    "On",
    "Projection",
    "Reducer",
    "agent",
    "collection",
    "counter",
    "from_payload",
    "harness",
    "last",
    "maximum",
    "minimum",
    "on",
    "projection",
    "reducer",
    "resolve_projections",
]


class _NotNull:
    def __repr__(self) -> str:
        return "NOTNULL"

    def __reduce__(self) -> str:  # unpickles as the module's singleton (Dask workers)
        return "NOTNULL"


#: Use as a ``where`` value: the column must not be null (``on(where={"finish": NOTNULL})``).
NOTNULL: Any = _NotNull()

_COLUMNS = set(EVENTS_SCHEMA.names)
PayloadType = Literal["str", "int", "float", "bool"]


@dataclass(frozen=True)
class On:
    """Which events a field reacts to: ``(kind in kinds OR type in types) AND where``.

    ``kinds=None`` and ``types=None`` together mean every event. ``where`` maps a canonical
    column to a required value (``True``/``False``, a string, an int) or :data:`NOTNULL`.
    """

    kinds: frozenset[str] | None = None
    types: frozenset[str] | None = None
    where: tuple[tuple[str, Any], ...] = ()

    def matches(self, row: Mapping[str, Any]) -> bool:
        """Scalar test of one event row (a dict of canonical columns)."""
        if self.kinds is not None or self.types is not None:
            hit = (self.kinds is not None and row["kind"] in self.kinds) or (
                self.types is not None and row["type"] in self.types
            )
            if not hit:
                return False
        for col, want in self.where:
            got = row[col]
            if want is NOTNULL:
                if got is None:
                    return False
            elif got is None or got != want or isinstance(got, bool) != isinstance(want, bool):
                return False
        return True


def _names(values: str | Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    return frozenset([values] if isinstance(values, str) else values)


def on(
    kinds: str | Iterable[str] | None = None,
    types: str | Iterable[str] | None = None,
    where: Mapping[str, Any] | None = None,
) -> On:
    """Build an event matcher.

    >>> on(kinds="tool_call").matches({"kind": "tool_call", "type": "tool.called"})
    True

    Raises:
        ValueError: ``where`` names a column that is not canonical.
    """
    where_items = tuple(sorted((where or {}).items()))
    for col, _ in where_items:
        if col not in _COLUMNS:
            raise ValueError(f"on(where=...) names {col!r}, which is not a canonical column")
    return On(_names(kinds), _names(types), where_items)


@dataclass(frozen=True)
class FromPayload:
    """A value read from the event's JSON payload at a dotted ``path``, of a declared type."""

    path: str
    type: PayloadType = "str"

    def scalar(self, row: Mapping[str, Any]) -> Any:
        data = row.get("__data__")
        if data is None:
            text = row.get("payload")
            data = loads(text) if text else {}
            if isinstance(row, dict):
                row["__data__"] = data  # type: ignore[index]
        node: Any = data
        for part in self.path.split("."):
            if not isinstance(node, dict):
                if node is None:
                    return None
                raise _payload_type_error(self)
            node = node.get(part)
            if node is None:
                return None
        ok = {
            "str": isinstance(node, str),
            "int": isinstance(node, int) and not isinstance(node, bool),
            "float": isinstance(node, (int, float)) and not isinstance(node, bool),
            "bool": isinstance(node, bool),
        }[self.type]
        if not ok:
            raise _payload_type_error(self)
        return float(node) if self.type == "float" else node


def _payload_type_error(value: FromPayload) -> SchemaError:
    return SchemaError(
        [
            f"payload field {value.path!r} is not always a {value.type} (or null) on the events "
            "a projection field reads it from; declare the right type with "
            "from_payload(path, type=...) or use a reducer() field"
        ]
    )


def from_payload(path: str, type: PayloadType = "str") -> FromPayload:  # noqa: A002
    """A field value read from ``payload`` at dotted ``path`` (``"usage.input_tokens"``).

    ``type`` is one of ``"str"``, ``"int"``, ``"float"``, ``"bool"``; a missing field is null.
    Extraction is column-wise (:func:`replaykit._base.json.payload_fields`) on the matching rows.
    """
    if type not in ("str", "int", "float", "bool"):
        raise ValueError(f"from_payload type must be str, int, float or bool, got {type!r}")
    return FromPayload(path, type)


Value = Any  # int/float/bool constant | canonical column name | FromPayload


def _check_value(value: Value, what: str) -> None:
    if isinstance(value, str) and value not in _COLUMNS:
        raise ValueError(
            f"{what}={value!r} is not a canonical column; use one of "
            f"{sorted(_COLUMNS)} or from_payload('path')"
        )


def scalar_value(value: Value, row: Mapping[str, Any]) -> Any:
    """The value of ``value`` on one event row (scalar reference path)."""
    if isinstance(value, FromPayload):
        return value.scalar(row)
    if isinstance(value, str):
        return row[value]
    return value


# ---------------------------------------------------------------------------------- fields
@dataclass(frozen=True)
class Field:
    """Base of the field kinds. ``name`` is filled in when the field joins a projection."""

    on: On = field(default_factory=On)
    name: str = ""

    kind: str = "field"

    def named(self, name: str) -> Field:
        from dataclasses import replace

        return replace(self, name=name)

    # scalar protocol: mutable working state <-> frozen output
    def init(self) -> Any:
        raise NotImplementedError

    def apply(self, acc: Any, row: dict[str, Any]) -> Any:
        raise NotImplementedError

    def out(self, acc: Any) -> Any:
        return acc

    def load(self, frozen: Any) -> Any:
        return frozen


@dataclass(frozen=True)
class Counter(Field):
    """Sum of an integer ``value`` over matching events (``by=``: one sum per key)."""

    value: Value = 1
    by: Value | None = None
    kind: str = "counter"

    def init(self) -> Any:
        return {} if self.by is not None else 0

    def _amount(self, row: dict[str, Any]) -> int:
        v = scalar_value(self.value, row)
        if v is None:
            return 0
        if isinstance(v, bool) or not isinstance(v, int):
            raise SchemaError([f"counter {self.name!r} needs integer values, got {v!r}"])
        return v

    def apply(self, acc: Any, row: dict[str, Any]) -> Any:
        if not self.on.matches(row):
            return acc
        if self.by is None:
            return acc + self._amount(row)
        key = scalar_value(self.by, row)
        if key is None:
            return acc
        key = str(key)
        acc[key] = acc.get(key, 0) + self._amount(row)
        return acc

    def out(self, acc: Any) -> Any:
        return FrozenDict(acc) if self.by is not None else acc

    def load(self, frozen: Any) -> Any:
        return dict(frozen) if self.by is not None else frozen


@dataclass(frozen=True)
class Last(Field):
    """The latest non-null ``value`` among matching events (``initial`` before any)."""

    value: Value = None
    initial: Any = None
    kind: str = "last"

    def init(self) -> Any:
        return self.initial

    def apply(self, acc: Any, row: dict[str, Any]) -> Any:
        if not self.on.matches(row):
            return acc
        v = scalar_value(self.value, row)
        return acc if v is None else v


@dataclass(frozen=True)
class Max(Field):
    """The largest non-null ``value`` among matching events (``initial`` before any)."""

    value: Value = None
    initial: Any = None
    kind: str = "max"

    def init(self) -> Any:
        return self.initial

    def _better(self, v: Any, acc: Any) -> bool:
        return v > acc

    def apply(self, acc: Any, row: dict[str, Any]) -> Any:
        if not self.on.matches(row):
            return acc
        v = scalar_value(self.value, row)
        if v is None:
            return acc
        if acc is None or self._better(v, acc):
            return v
        return acc


@dataclass(frozen=True)
class Min(Max):
    """The smallest non-null ``value`` among matching events (``initial`` before any)."""

    kind: str = "min"

    def _better(self, v: Any, acc: Any) -> bool:
        return v < acc


@dataclass(frozen=True)
class Collection(Field):
    """Keyed items added by ``add`` events and removed by ``remove`` events.

    Adding a key that is present and removing one that is absent are no-ops. Items are the key
    (a string) or, with ``item={name: value}``, a dict ``{key_name: key, name: value, ...}``
    whose values are taken from the (effective) add event. Order: order of addition.
    """

    add: On = field(default_factory=On)
    remove: On | None = None
    key: Value = "ref_id"
    remove_key: Value | None = None
    item: tuple[tuple[str, Value], ...] = ()
    key_name: str = "id"
    kind: str = "collection"

    def init(self) -> Any:
        return {}

    def _item(self, key: str, row: dict[str, Any]) -> Any:
        if not self.item:
            return key
        d = {self.key_name: key}
        for name, value in self.item:
            d[name] = scalar_value(value, row)
        return FrozenDict(d)

    def apply(self, acc: Any, row: dict[str, Any]) -> Any:
        if self.add.matches(row):
            key = scalar_value(self.key, row)
            if key is not None:
                key = str(key)
                if key not in acc:
                    acc[key] = self._item(key, row)
        if self.remove is not None and self.remove.matches(row):
            rkey = self.remove_key if self.remove_key is not None else self.key
            key = scalar_value(rkey, row)
            if key is not None:
                acc.pop(str(key), None)
        return acc

    def out(self, acc: Any) -> Any:
        return tuple(acc.values())

    def load(self, frozen: Any) -> Any:
        if not self.item:
            return {k: k for k in frozen}
        return {it[self.key_name]: it for it in frozen}


@dataclass(frozen=True)
class Reducer(Field):
    """Escape hatch: ``fn(previous, event) -> new`` on matching events, in order.

    ``event`` is a dict of the canonical columns of the row. ``fn`` must be pure: the same
    inputs must give the same output (:func:`replaykit.check_determinism` catches the rest).
    Values are frozen (dict -> read-only dict, list -> tuple) before they are stored.
    """

    fn: Callable[[Any, dict[str, Any]], Any] | None = None
    initial: Any = None
    kind: str = "reducer"

    def init(self) -> Any:
        return freeze(self.initial)

    def apply(self, acc: Any, row: dict[str, Any]) -> Any:
        if not self.on.matches(row):
            return acc
        event = {k: v for k, v in row.items() if k != "__data__"}
        return freeze(self.fn(acc, event))  # type: ignore[misc]


# ------------------------------------------------------------------------------ factories
def _on(kinds: Any, types: Any, where: Any) -> On:
    return on(kinds, types, where)


def counter(
    *,
    kinds: str | Iterable[str] | None = None,
    types: str | Iterable[str] | None = None,
    where: Mapping[str, Any] | None = None,
    value: Value = 1,
    by: Value | None = None,
) -> Counter:
    """A counter field: adds ``value`` (1, an int column, or an int payload path) per event.

    With ``by=`` (a column or payload path giving a key) the state is a dict key -> sum.

    >>> counter(kinds="tool_call").kind
    'counter'
    """
    _check_value(value, "value")
    if by is not None:
        _check_value(by, "by")
    return Counter(on=_on(kinds, types, where), value=value, by=by)


def last(
    value: Value,
    *,
    kinds: str | Iterable[str] | None = None,
    types: str | Iterable[str] | None = None,
    where: Mapping[str, Any] | None = None,
    initial: Any = None,
) -> Last:
    """A last-value field: the latest non-null ``value`` on matching events."""
    _check_value(value, "value")
    return Last(on=_on(kinds, types, where), value=value, initial=initial)


def maximum(
    value: Value,
    *,
    kinds: str | Iterable[str] | None = None,
    types: str | Iterable[str] | None = None,
    where: Mapping[str, Any] | None = None,
    initial: Any = None,
) -> Max:
    """A running maximum of the non-null ``value`` on matching events."""
    _check_value(value, "value")
    return Max(on=_on(kinds, types, where), value=value, initial=initial)


def minimum(
    value: Value,
    *,
    kinds: str | Iterable[str] | None = None,
    types: str | Iterable[str] | None = None,
    where: Mapping[str, Any] | None = None,
    initial: Any = None,
) -> Min:
    """A running minimum of the non-null ``value`` on matching events."""
    _check_value(value, "value")
    return Min(on=_on(kinds, types, where), value=value, initial=initial)


def collection(
    *,
    add: On,
    remove: On | None = None,
    key: Value = "ref_id",
    remove_key: Value | None = None,
    item: Mapping[str, Value] | None = None,
    key_name: str = "id",
) -> Collection:
    """A keyed collection: ``add``/``remove`` are :func:`on` matchers, ``key`` names the item.

    >>> collection(add=on(kinds="tool_call"), remove=on(kinds="tool_result")).kind
    'collection'
    """
    _check_value(key, "key")
    if remove_key is not None:
        _check_value(remove_key, "remove_key")
    for name, v in (item or {}).items():
        _check_value(v, f"item[{name!r}]")
    return Collection(
        add=add,
        remove=remove,
        key=key,
        remove_key=remove_key,
        item=tuple((item or {}).items()),
        key_name=key_name,
    )


def reducer(
    fn: Callable[[Any, dict[str, Any]], Any],
    *,
    initial: Any = None,
    kinds: str | Iterable[str] | None = None,
    types: str | Iterable[str] | None = None,
    where: Mapping[str, Any] | None = None,
) -> Reducer:
    """A custom scalar reducer field (the escape hatch): ``fn(previous, event) -> new``.

    It runs row by row on matching events in both engines, so keep ``on`` narrow.
    """
    if not callable(fn):
        raise TypeError("reducer(fn) needs a callable fn(previous, event) -> new")
    return Reducer(on=_on(kinds, types, where), fn=fn, initial=initial)


# ---------------------------------------------------------------------------- projections
class Projection:
    """A named set of state fields.

    Either call :func:`projection` or subclass and declare fields as class attributes::

        class Tools(rk.Projection):
            calls = rk.fold.counter(kinds="tool_call")
            last = rk.fold.last("tool_name", kinds="tool_call")

    Attributes:
        name: the projection's name.
        fields: field name -> :class:`Field`, in declaration order.
    """

    name: str = ""
    fields: dict[str, Field]

    def __init__(self, name: str | None = None, fields: Mapping[str, Field] | None = None):
        declared: dict[str, Field] = {}
        for klass in reversed(type(self).__mro__):
            for attr, value in vars(klass).items():
                if isinstance(value, Field):
                    declared[attr] = value
        declared.update(fields or {})
        if not declared:
            raise ValueError("a projection needs at least one field")
        for fname, f in declared.items():
            if not isinstance(f, Field):
                raise TypeError(f"field {fname!r} is {type(f).__name__}, not a projection field")
        self.fields = {fname: f.named(fname) for fname, f in declared.items()}
        self.name = name or type(self).name or type(self).__name__

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={f.kind}" for n, f in self.fields.items())
        return f"Projection({self.name!r}: {inner})"


def projection(name: str, **fields: Field) -> Projection:
    """Declare a projection from keyword fields.

    >>> p = projection("tools", calls=counter(kinds="tool_call"))
    >>> list(p.fields)
    ['calls']

    Raises:
        ValueError: no fields given.
        TypeError: a value is not a field.
    """
    return Projection(name, fields)


def resolve_projections(projections: Any) -> list[Field]:
    """Flatten one projection / class / list of them into the list of fields of the state.

    Raises:
        ValueError: two projections declare the same field name.
        TypeError: something is not a projection.
    """
    if projections is None:
        raise TypeError("projections is required, e.g. projections=rk.agent()")
    items = projections if isinstance(projections, (list, tuple)) else [projections]
    out: dict[str, Field] = {}
    for p in items:
        if isinstance(p, type) and issubclass(p, Projection):
            p = p()
        if not isinstance(p, Projection):
            raise TypeError(f"expected a Projection, got {type(p).__name__}")
        for fname, f in p.fields.items():
            if fname in out:
                raise ValueError(
                    f"field {fname!r} is declared by more than one projection; rename one"
                )
            out[fname] = f
    return list(out.values())


# ------------------------------------------------------------------------------ built-ins
def harness() -> Projection:
    """The pleach client's hydrated harness state.

    Fields (names as the reference client spells them): ``interrupts`` (pending: raised and not
    yet resolved, items ``{id, kind, reason}``), ``subagents`` (spawned and not yet completed,
    ``{id, label}``), ``exports`` (``{id, format, uri}``), ``userCards`` (``{id, title}``) and
    ``eventCount``. Zero state: ``{"interrupts": [], "subagents": [], "exports": [],
    "userCards": [], "eventCount": 0}``. On other formats only ``eventCount`` moves.
    """
    return projection(
        "harness",
        interrupts=collection(
            add=on(types="interrupt.raised"),
            remove=on(types="interrupt.resolved"),
            key="ref_id",
            item={"kind": from_payload("kind"), "reason": from_payload("reason")},
        ),
        subagents=collection(
            add=on(types="subagent.spawned"),
            remove=on(types="subagent.completed"),
            key="ref_id",
            item={"label": from_payload("label")},
        ),
        exports=collection(
            add=on(types="export.created"),
            key=from_payload("export_id"),
            item={"format": from_payload("format"), "uri": from_payload("uri")},
        ),
        userCards=collection(
            add=on(types="user_card.shown"),
            key=from_payload("card_id"),
            item={"title": from_payload("title")},
        ),
        eventCount=counter(),
    )


def agent() -> Projection:
    """Format-agnostic agent state, from canonical columns only (works on every format).

    Fields: ``turn``, ``step`` (latest non-null), ``model_calls`` (rows closing a model call:
    ``finish`` set), ``tool_calls``, ``tool_calls_by_tool`` (dict), ``open_tool_calls``
    (called, no result yet; items ``{id, tool}``), ``last_tool``, ``input_tokens``,
    ``output_tokens`` (cumulative), ``errors`` (rows with ``is_error``), ``last_finish``,
    ``pending_approvals`` and ``active_subagents`` (ids).
    """
    return projection(
        "agent",
        turn=last("turn"),
        step=last("step"),
        model_calls=counter(where={"finish": NOTNULL}),
        tool_calls=counter(kinds="tool_call"),
        tool_calls_by_tool=counter(kinds="tool_call", by="tool_name"),
        open_tool_calls=collection(
            add=on(kinds="tool_call"),
            remove=on(kinds="tool_result"),
            key="ref_id",
            item={"tool": "tool_name"},
        ),
        last_tool=last("tool_name", kinds="tool_call"),
        input_tokens=counter(value="input_tokens"),
        output_tokens=counter(value="output_tokens"),
        errors=counter(where={"is_error": True}),
        last_finish=last("finish"),
        pending_approvals=collection(
            add=on(kinds="approval_request"), remove=on(kinds="approval_decision"), key="ref_id"
        ),
        active_subagents=collection(
            add=on(kinds="subagent_start"), remove=on(kinds="subagent_end"), key="ref_id"
        ),
    )
