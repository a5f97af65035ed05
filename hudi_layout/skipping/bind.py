"""Check a predicate's columns against a table schema (the front ends' optional ``schema=`` argument).

Binding resolves each column name to the schema's spelling (exact match first, then a unique
case-insensitive one, as Spark does by default) and raises :class:`InvalidArgumentError` naming the
first unknown column. Literal conversion happens at evaluation time (:mod:`.coerce`), where a literal
that cannot be compared only disables skipping for that leaf.

One rule of Spark's analyzer is applied here, because it changes which rows match: Spark's type coercion
(``DecimalPrecision``, integral vs decimal literal) turns ``<``, ``<=``, ``>``, ``>=`` between an integral
column and a decimal literal outside the range of a 64-bit integer into the constant TRUE or FALSE, *NULLs
included*: ``l > -9223372036854775808.25`` keeps the rows whose ``l`` is NULL (Spark 4.3, checked). Skipping a
file of NULLs for it would drop rows Spark returns, so the leaf becomes :class:`AlwaysTrue` /
:class:`AlwaysFalse` as in Spark (docs/read-semantics.md).

A second rule, only when a session time zone is given (``bind(..., time_zone=...)``, what a read does):
Spark's analyzer reads datetime text without an offset, and a date compared with a timestamp, in the
session time zone (``spark.sql.session.timeZone``). Every literal compared with a date or timestamp column
is therefore resolved once, against the column's type (:func:`resolve_session_time`): for a timestamp
column an instant (an aware ``datetime``), for a ``timestamp_ntz`` or date column a wall-clock time in that
zone (a naive ``datetime``). Without a zone nothing is resolved and a naive datetime means UTC (:mod:`.ir`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.coerce import parse_timestamp_text
from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    ComparisonPredicate,
    Gt,
    GtEq,
    LeafPredicate,
    Literal,
    Lt,
    LtEq,
    Predicate,
    Ref,
    SetPredicate,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.to_sql import predicate_to_sql
from hudi_layout.skipping.visitors import LeafRewriter, visit


def _field_names(schema: pa.Schema) -> list[str]:
    """Top-level names plus dotted paths of nested struct fields."""
    names: list[str] = []

    def walk(prefix: str, field: pa.Field) -> None:
        name = f"{prefix}{field.name}"
        names.append(name)
        if pa.types.is_struct(field.type):
            for child in field.type:
                walk(f"{name}.", child)

    for f in schema:
        walk("", f)
    return names


def resolve_column(name: str, schema: pa.Schema) -> str:
    """The schema's spelling of ``name``; raises :class:`InvalidArgumentError` if it is not there."""
    names = _field_names(schema)
    if name in names:
        return name
    folded = [n for n in names if n.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    if folded:
        raise InvalidArgumentError(f"column {name!r} is ambiguous: {folded}")
    raise InvalidArgumentError(f"unknown column {name!r}", hint=f"columns: {', '.join(names)}")


@dataclasses.dataclass(frozen=True)
class TextVsDatetime:
    """Where a session compares text with a date / timestamp column as strings (the column cast to text), not
    as datetimes: ``in_lists`` without ANSI mode (``spark.sql.ansi.enabled=false``: Spark's ``IN`` finds the
    common type of the column and the list, text), ``everywhere`` with
    ``spark.sql.legacy.typeCoercion.datetimeToString.enabled=true``. Such leaves never skip: the planner reads
    the text as a datetime (session 29's probe: ``ts NOT IN ('2020-01-01')`` without ANSI, 10 rows for Spark's
    20)."""

    in_lists: bool = False
    everywhere: bool = False

    @classmethod
    def of_session(cls, settings: Mapping[str, str]) -> TextVsDatetime:
        def setting(key: str, default: str) -> bool:
            return str(settings.get(key, default)).strip().lower() == "true"

        return cls(not setting("spark.sql.ansi.enabled", "true"),
                   setting("spark.sql.legacy.typeCoercion.datetimeToString.enabled", "false"))

    def compares_as_text(self, pred: LeafPredicate, column_type: pa.DataType | None) -> bool:
        if column_type is None or not _is_datetime(column_type):
            return False
        literals = _compared_literals(pred)
        if not literals or not any(isinstance(lit.value, str) for lit in literals):
            return False
        return self.everywhere or (self.in_lists and isinstance(pred, SetPredicate))


class _BindVisitor(LeafRewriter):
    """Resolves columns; with ``resolve_time``, date / timestamp literals in ``zone`` (``None``: unreadable)."""

    def __init__(self, schema: pa.Schema, resolve_time: bool, zone: _dt.tzinfo | None,
                 text_vs_datetime: TextVsDatetime) -> None:
        self.schema = schema
        self.resolve_time = resolve_time
        self.zone = zone
        self.text_vs_datetime = text_vs_datetime

    def visit_leaf(self, pred: LeafPredicate) -> Predicate:
        name = resolve_column(pred.term.name, self.schema)
        column_type = _field_type(name, self.schema)
        folded = spark_integral_decimal_fold(pred, column_type)
        if folded is not None:
            return folded
        # every concrete leaf is a dataclass with a ``term`` field
        bound = pred if name == pred.term.name else dataclasses.replace(cast(Any, pred), term=Ref(name))
        if self.text_vs_datetime.compares_as_text(bound, column_type):
            return _session_dependent(bound, "the session compares text with this column as strings")
        return resolve_session_time(bound, column_type, self.zone) if self.resolve_time else bound


#: a literal whose meaning in the session cannot be known here (the leaf then never skips)
_UNKNOWN = object()


def session_zone(time_zone: str) -> _dt.tzinfo | None:
    """The ``tzinfo`` of a ``spark.sql.session.timeZone`` value: a region id (``America/Los_Angeles``) or an
    offset (``+05:30``, ``-08``, ``UTC+01:00``, ``Z``); ``None`` for one we cannot read."""
    text = time_zone.strip()
    if text.upper() in ("Z", "UTC", "GMT", "UT", "ETC/UTC", "ETC/GMT"):
        return _dt.timezone.utc
    m = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?", text, flags=re.IGNORECASE)
    if m is not None:
        sign = -1 if m.group(1) == "-" else 1
        delta = _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0), seconds=int(m.group(4) or 0))
        return _dt.timezone(sign * delta) if delta < _dt.timedelta(hours=18, seconds=1) else None
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def require_time_zone(time_zone: str, name: str = "time_zone") -> _dt.tzinfo:
    """The zone of a time zone the caller named explicitly (``name`` says where, for the message); an error
    when we cannot read it (a session's zone we cannot read only stops its time leaves from skipping, but a
    zone the user typed is a mistake to report, not to plan around)."""
    zone = session_zone(time_zone)
    if zone is None:
        raise InvalidArgumentError(f"{name} {time_zone!r} is not a time zone",
                                   hint="a region id (America/New_York) or an offset (+05:30), as Spark takes")
    return zone


def resolve_session_time(pred: LeafPredicate, column_type: pa.DataType | None, zone: _dt.tzinfo | None) -> Predicate:
    """``pred`` with its literals read as Spark reads them in a session of time zone ``zone`` (see the module
    docstring); a leaf whose meaning we cannot pin down (the zone unreadable, an offset given to a
    ``timestamp_ntz`` column) becomes :class:`Unsupported`, which never skips a file."""
    if column_type is None:
        return pred
    if not _is_datetime(column_type):
        return pred
    literals = _compared_literals(pred)
    if literals is None:
        return pred
    values = [_session_value(lit.value, column_type, zone) for lit in literals]
    if any(v is _UNKNOWN for v in values):
        return _session_dependent(pred)
    if all(v is lit.value for v, lit in zip(values, literals)):
        return pred
    if isinstance(pred, ComparisonPredicate):
        return dataclasses.replace(pred, literal=Literal(values[0]))
    return dataclasses.replace(cast(SetPredicate, pred), literals=tuple(Literal(v) for v in values))


def _compared_literals(pred: LeafPredicate) -> tuple[Literal, ...] | None:
    """The literals a leaf compares its column with (``None`` for a prefix test or a null check, which hold no
    date or timestamp)."""
    if isinstance(pred, ComparisonPredicate) and not isinstance(pred, StartsWith):
        return (pred.literal,)
    if isinstance(pred, SetPredicate):
        return pred.literals
    return None


def _session_value(v: Any, column_type: pa.DataType, zone: _dt.tzinfo | None) -> Any:
    """One literal against a date / timestamp column (see :func:`resolve_session_time`)."""
    instant_column = pa.types.is_timestamp(column_type) and column_type.tz is not None
    if isinstance(v, str):
        parsed = parse_timestamp_text(v)
        if parsed is None:
            return v  # not a datetime: the evaluator cannot compare it either
        if not instant_column:
            # a date column casts the text to a date (its offset ignored); a timestamp_ntz column: unknown
            return _UNKNOWN if parsed.tzinfo is not None and pa.types.is_timestamp(column_type) else v
        v = parsed
    if isinstance(v, _dt.datetime):
        if instant_column:
            if v.tzinfo is not None:
                return v
            return _UNKNOWN if zone is None else _in_utc(v.replace(tzinfo=zone))
        if zone is None:
            return _UNKNOWN
        wall = v if v.tzinfo is None else v.astimezone(zone).replace(tzinfo=None)
        return wall if offset_fixed_around(wall, zone) else _UNKNOWN
    if isinstance(v, _dt.date) and instant_column:
        return _UNKNOWN if zone is None else _in_utc(_dt.datetime(v.year, v.month, v.day, tzinfo=zone))
    return v


def _in_utc(v: _dt.datetime) -> Any:
    """The instant ``v`` names, in UTC: a bound predicate holds no session zone object (the JVM's rules live in
    the driver), and a time too near ``datetime``'s range to convert is unknown."""
    try:
        return v.astimezone(_dt.timezone.utc)
    except OverflowError:
        return _UNKNOWN


#: beyond this distance from a wall-clock time, no zone's offset change can reorder it against another one
#: (offsets span UTC-12 .. UTC+14), plus an hour of margin
_OFFSET_REACH = _dt.timedelta(hours=27)
_OFFSET_STEP = _dt.timedelta(minutes=15)


def offset_fixed_around(wall: _dt.datetime, zone: _dt.tzinfo) -> bool:
    """Whether ``zone`` keeps one UTC offset for the wall-clock times within :data:`_OFFSET_REACH` of ``wall``
    (sampled every 15 minutes; no zone changes its offset twice within that).

    A date or ``timestamp_ntz`` column compared with a timestamp (an instant, or ``TIMESTAMP '...'`` text) is
    compared by Spark as instants: each column value is read as a wall-clock time in the session zone, a time
    that a daylight-saving gap skips moving forward and a repeated one taking the earlier offset (Python's
    ``fold=0`` reads both the same way). That reading is not order-preserving across a gap, so the wall-clock
    comparison skipping does (file bounds are wall-clock values) equals Spark's only when the offset is fixed
    near the literal: then ``wall_a < wall`` and ``instant(wall_a) < instant(wall)`` agree for every
    ``wall_a``, near or far (session 29's probe: ``ntz < TIMESTAMP '2020-11-01 01:15:00-08:00'`` in
    Los Angeles read 60 of 100 rows). Elsewhere the leaf does not skip."""
    fixed_between = getattr(zone, "offset_fixed_between", None)  # a zone that can answer it directly
    if fixed_between is not None:
        return bool(fixed_between(wall - _OFFSET_REACH, wall + _OFFSET_REACH))
    try:
        first = (wall - _OFFSET_REACH).replace(tzinfo=zone).utcoffset()
        steps = int(2 * _OFFSET_REACH / _OFFSET_STEP)
        return all((wall - _OFFSET_REACH + i * _OFFSET_STEP).replace(tzinfo=zone).utcoffset() == first
                   for i in range(1, steps + 1))
    except OverflowError:  # within a day of datetime's range
        return False


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def spark_integral_decimal_fold(pred: LeafPredicate, column_type: pa.DataType | None) -> Predicate | None:
    """Spark's constant for ``integral_column <op> decimal_literal`` when the literal lies outside the 64-bit
    range (see the module docstring), else ``None``. An integer literal outside that range is a decimal
    literal in Spark SQL too."""
    # Spark's integral types; a uint64 column reaches Spark as decimal(20, 0), which it does not fold
    if column_type is None or not pa.types.is_integer(column_type) or pa.types.is_uint64(column_type):
        return None
    if not isinstance(pred, (Lt, LtEq, Gt, GtEq)):
        return None
    value = pred.literal.value
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        return None
    below, above = value < _LONG_MIN, value > _LONG_MAX
    if not below and not above:
        return None
    upward = isinstance(pred, (Gt, GtEq))  # column > literal: TRUE below the range, FALSE above it
    return AlwaysTrue() if upward == below else AlwaysFalse()


def _field_type(name: str, schema: pa.Schema) -> pa.DataType | None:
    """The type of a top-level column or a dotted struct field path, if the schema has it."""
    if name in schema.names:
        return schema.field(name).type
    parts = name.split(".")
    if parts[0] not in schema.names:
        return None
    t: pa.DataType = schema.field(parts[0]).type
    for part in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            return None
        t = t.field(part).type
    return t



def bind(pred: Predicate, schema: pa.Schema, time_zone: str | None = None, *,
         zone_rules: _dt.tzinfo | None = None, text_vs_datetime: TextVsDatetime | None = None) -> Predicate:
    """``pred`` with every column resolved against ``schema``; with ``time_zone`` (the session's), its date and
    timestamp literals resolved in that zone (see the module docstring). ``zone_rules``: that zone's rules as
    the session's JVM has them (``spark_column.jvm_zone``), used instead of the OS's tz database, which can
    differ from the JDK's (session 29's probe: Asia/Tehran in 1978, half an hour apart). ``text_vs_datetime``:
    where the session compares text with datetime columns as strings (:class:`TextVsDatetime`)."""
    zone = zone_rules if zone_rules is not None and time_zone is not None else \
        None if time_zone is None else session_zone(time_zone)
    return visit(pred, _BindVisitor(schema, time_zone is not None, zone, text_vs_datetime or TextVsDatetime()))


def _session_dependent(pred: LeafPredicate, why: str = "depends on the session time zone") -> Unsupported:
    """``pred`` as a leaf that never skips, keeping its SQL text (the query log records it)."""
    try:
        sql: str | None = predicate_to_sql(pred)
    except InvalidArgumentError:
        sql = None
    return Unsupported(f"{pred} ({why})", sql)


def _is_datetime(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date32(t) or pa.types.is_date64(t)


def _may_be_datetime(literals: tuple[Literal, ...]) -> bool:
    """Without the column's type: may these literals be a date or timestamp (a ``date``, ``datetime`` or text)?"""
    return any(isinstance(lit.value, (str, _dt.date)) for lit in literals)


class _CalendarRebased(LeafRewriter):
    def __init__(self, schema: pa.Schema | None) -> None:
        self.schema = schema

    def visit_leaf(self, pred: LeafPredicate) -> Predicate:
        literals = _compared_literals(pred)
        if literals is None:
            return pred
        column_type = None if self.schema is None else _field_type(pred.term.name, self.schema)
        dated = _may_be_datetime(literals) if column_type is None else _is_datetime(column_type)
        return _session_dependent(pred, "dates and timestamps rebased by the session's LEGACY parquet "
                                        "datetime rebase mode") if dated else pred


def legacy_calendar_unknown(pred: Predicate, schema: pa.Schema | None) -> Predicate:
    """``pred`` with every leaf comparing a date or timestamp column with a value made :class:`Unsupported`:
    for a session whose ``spark.sql.parquet.datetimeRebaseModeInRead`` (or ``int96RebaseModeInRead``) is
    ``LEGACY``. Spark then shifts the dates and timestamps before 1582 (1900 for INT96) of every file that
    does not say it was written in the proleptic Gregorian calendar (another writer's, or ours before the
    footer marker of :func:`~hudi_layout.writer.base_file_writer.hudi_footer_metadata`) by days, away from the
    statistics and partition folders, which keep the stored values. Without column types (``schema`` None),
    every leaf whose value may be a date or timestamp (a ``date``, ``datetime`` or text) never skips."""
    return visit(pred, _CalendarRebased(schema))


class _SessionTimeUnknown(LeafRewriter):
    def visit_leaf(self, pred: LeafPredicate) -> Predicate:
        literals = _compared_literals(pred)
        if literals is not None and _may_be_datetime(literals):
            return _session_dependent(pred)
        return pred


def session_time_unknown(pred: Predicate) -> Predicate:
    """``pred`` with every leaf whose literal may be a date or timestamp (a ``date``, ``datetime`` or text)
    made :class:`Unsupported`: for a session outside UTC when the column types are not known."""
    return visit(pred, _SessionTimeUnknown())
