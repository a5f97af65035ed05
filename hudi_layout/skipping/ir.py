"""The predicate IR: small immutable nodes that every front end produces and every evaluator consumes.

Semantics are Spark SQL's, row by row, with three-valued logic: a row passes a filter only when the
predicate is TRUE (NULL and FALSE both drop the row). Column values and literals are plain Python values:
``int``, ``float``, ``decimal.Decimal``, ``str``, ``bytes``, ``bool``, ``datetime.date``,
``datetime.datetime`` and ``None`` (SQL NULL).

Conventions worth knowing:

* **Timestamps.** An *aware* ``datetime`` literal is an instant (``TIMESTAMP '... +05:00'``, a Spark
  timestamp value). A *naive* one is a wall-clock time (``TIMESTAMP '...'`` text, ``TIMESTAMP_NTZ``), which
  Spark reads in the session time zone (``spark.sql.session.timeZone``) against a timestamp column, and a
  ``DATE`` compared with a timestamp is midnight in that zone. A read resolves these once, when it binds the
  predicate to the table schema with the session's zone (:func:`~.bind.bind`); unresolved, a naive datetime
  means UTC (our sessions' zone, and the only reading without a session).
* **Floats** follow Spark, not IEEE: NaN equals NaN and is greater than every other value, and ``-0.0``
  equals ``0.0``. This makes the order total, which is what lets :meth:`Predicate.__invert__` turn
  ``NOT (c < v)`` into ``c >= v`` exactly: for a NULL ``c`` both sides are NULL, for a NaN ``c`` both give
  the same answer (``NaN < 1.0`` is FALSE, ``NaN >= 1.0`` is TRUE).
* **Literal on the left** is mirrored by the front ends (``5 < c`` becomes ``c > 5``); nodes always hold
  the column first.
* :class:`Unsupported` is a leaf we cannot reason about (a function of a column, an unusual LIKE pattern).
  Its truth value is unknown, and so is its negation's: evaluators always answer "might match".
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar

from hudi_layout.errors import InvalidArgumentError

LiteralValue = int | float | Decimal | str | bytes | bool | _dt.date | _dt.datetime | None
_LITERAL_TYPES = (int, float, Decimal, str, bytes, bool, _dt.date, _dt.datetime)


@dataclass(frozen=True, slots=True)
class Ref:
    """A column, by name. Nested fields use dotted names (``"a.b"``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Literal:
    """A typed constant; ``Literal(None)`` is SQL NULL."""

    value: Any

    def __post_init__(self) -> None:
        if self.value is not None and not isinstance(self.value, _LITERAL_TYPES):
            kind = type(self.value).__name__
            raise InvalidArgumentError(f"unsupported literal type {kind}: {self.value!r}")

    @property
    def is_null(self) -> bool:
        return self.value is None

    @property
    def is_nan(self) -> bool:
        return isinstance(self.value, float) and math.isnan(self.value)

    def __str__(self) -> str:
        v = self.value
        if v is None:
            return "NULL"
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        if isinstance(v, bytes):
            return "X'" + v.hex().upper() + "'"
        if isinstance(v, _dt.datetime):
            return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
        if isinstance(v, _dt.date):
            return f"DATE '{v.isoformat()}'"
        return repr(v) if isinstance(v, float) else str(v)


def lit(value: Any) -> Literal:
    """Wrap ``value`` as a :class:`Literal` unless it already is one."""
    return value if isinstance(value, Literal) else Literal(value)


class Predicate:
    """Base of every boolean node."""

    __slots__ = ()

    def __invert__(self) -> Predicate:
        raise NotImplementedError

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)


# ---------------------------------------------------------------------------------------------- constants


@dataclass(frozen=True, slots=True)
class AlwaysTrue(Predicate):
    def __invert__(self) -> Predicate:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "TRUE"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(Predicate):
    def __invert__(self) -> Predicate:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "FALSE"


@dataclass(frozen=True, slots=True)
class Unsupported(Predicate):
    """A leaf we cannot evaluate against statistics; always "might match", and so is its negation.

    ``text`` describes it; ``sql`` is its exact Spark SQL text when known (SQL front end, ``F.expr``), so
    :func:`~.to_sql.predicate_to_sql` can still render it. ``sql`` does not take part in equality.
    """

    text: str
    sql: str | None = field(default=None, compare=False)

    def __invert__(self) -> Predicate:
        return Unsupported(f"NOT ({self.text})", None if self.sql is None else f"NOT ({self.sql})")

    def __str__(self) -> str:
        return f"<unsupported: {self.text}>"


# ---------------------------------------------------------------------------------------------- logic


@dataclass(frozen=True, slots=True)
class And(Predicate):
    left: Predicate
    right: Predicate

    def __invert__(self) -> Predicate:
        return Or(~self.left, ~self.right)

    def __str__(self) -> str:
        return f"({self.left} AND {self.right})"


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    left: Predicate
    right: Predicate

    def __invert__(self) -> Predicate:
        return And(~self.left, ~self.right)

    def __str__(self) -> str:
        return f"({self.left} OR {self.right})"


@dataclass(frozen=True, slots=True)
class Not(Predicate):
    """Logical negation. Evaluators never see it: :func:`~.visitors.rewrite_not` pushes it into the leaves."""

    child: Predicate

    def __invert__(self) -> Predicate:
        return self.child

    def __str__(self) -> str:
        return f"NOT {self.child}"


# ---------------------------------------------------------------------------------------------- leaves


class LeafPredicate(Predicate):
    """A predicate on one column."""

    __slots__ = ()
    term: Ref


@dataclass(frozen=True, slots=True)
class IsNull(LeafPredicate):
    term: Ref

    def __invert__(self) -> Predicate:
        return IsNotNull(self.term)

    def __str__(self) -> str:
        return f"{self.term} IS NULL"


@dataclass(frozen=True, slots=True)
class IsNotNull(LeafPredicate):
    term: Ref

    def __invert__(self) -> Predicate:
        return IsNull(self.term)

    def __str__(self) -> str:
        return f"{self.term} IS NOT NULL"


@dataclass(frozen=True, slots=True)
class ComparisonPredicate(LeafPredicate):
    """``term <op> literal``. Subclasses set :attr:`op`."""

    term: Ref
    literal: Literal
    op: ClassVar[str] = "?"

    def __str__(self) -> str:
        return f"{self.term} {self.op} {self.literal}"


@dataclass(frozen=True, slots=True)
class Eq(ComparisonPredicate):
    op: ClassVar[str] = "="

    def __invert__(self) -> Predicate:
        return NotEq(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class NotEq(ComparisonPredicate):
    op: ClassVar[str] = "!="

    def __invert__(self) -> Predicate:
        return Eq(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class NullSafeEq(ComparisonPredicate):
    """``c <=> v``: never NULL; TRUE when both sides are NULL or both equal."""

    op: ClassVar[str] = "<=>"

    def __invert__(self) -> Predicate:
        if self.literal.is_null:
            return IsNotNull(self.term)
        # NOT (c <=> v) is TRUE for NULL rows too, unlike c != v.
        return Or(IsNull(self.term), NotEq(self.term, self.literal))


@dataclass(frozen=True, slots=True)
class Lt(ComparisonPredicate):
    op: ClassVar[str] = "<"

    def __invert__(self) -> Predicate:
        return GtEq(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class LtEq(ComparisonPredicate):
    op: ClassVar[str] = "<="

    def __invert__(self) -> Predicate:
        return Gt(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class Gt(ComparisonPredicate):
    op: ClassVar[str] = ">"

    def __invert__(self) -> Predicate:
        return LtEq(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class GtEq(ComparisonPredicate):
    op: ClassVar[str] = ">="

    def __invert__(self) -> Predicate:
        return Lt(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class StartsWith(ComparisonPredicate):
    """``c LIKE 'prefix%'`` (the literal is the prefix, a ``str`` or ``bytes``)."""

    op: ClassVar[str] = "STARTS WITH"

    def __invert__(self) -> Predicate:
        return NotStartsWith(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class NotStartsWith(ComparisonPredicate):
    op: ClassVar[str] = "NOT STARTS WITH"

    def __invert__(self) -> Predicate:
        return StartsWith(self.term, self.literal)


@dataclass(frozen=True, slots=True)
class SetPredicate(LeafPredicate):
    term: Ref
    literals: tuple[Literal, ...]
    op: ClassVar[str] = "?"

    def __str__(self) -> str:
        return f"{self.term} {self.op} ({', '.join(str(v) for v in self.literals)})"


@dataclass(frozen=True, slots=True)
class In(SetPredicate):
    """``c IN (v1, ...)``: TRUE if some ``vi`` equals ``c``; a NULL in the list never makes it TRUE."""

    op: ClassVar[str] = "IN"

    def __invert__(self) -> Predicate:
        return NotIn(self.term, self.literals)


@dataclass(frozen=True, slots=True)
class NotIn(SetPredicate):
    """``c NOT IN (v1, ...)``: never TRUE when the list holds a NULL (SQL semantics)."""

    op: ClassVar[str] = "NOT IN"

    def __invert__(self) -> Predicate:
        return In(self.term, self.literals)


# ---------------------------------------------------------------------------------------------- builders


def _build_balanced_tree(kind: type[And] | type[Or], items: Sequence[Predicate]) -> Predicate:
    """Combine ``items`` pairwise so depth stays O(log n): a 10 000-way AND must not hit RecursionError."""
    if len(items) == 1:
        return items[0]
    mid = len(items) // 2
    return kind(_build_balanced_tree(kind, items[:mid]), _build_balanced_tree(kind, items[mid:]))


def and_(*preds: Predicate | Iterable[Predicate]) -> Predicate:
    """AND of the arguments (predicates or iterables of them), balanced, with TRUE/FALSE folded away."""
    items = [p for p in _flatten(preds) if not isinstance(p, AlwaysTrue)]
    if any(isinstance(p, AlwaysFalse) for p in items):
        return AlwaysFalse()
    return _build_balanced_tree(And, items) if items else AlwaysTrue()


def or_(*preds: Predicate | Iterable[Predicate]) -> Predicate:
    """OR of the arguments, balanced, with TRUE/FALSE folded away."""
    items = [p for p in _flatten(preds) if not isinstance(p, AlwaysFalse)]
    if any(isinstance(p, AlwaysTrue) for p in items):
        return AlwaysTrue()
    return _build_balanced_tree(Or, items) if items else AlwaysFalse()


def _flatten(preds: Iterable[Predicate | Iterable[Predicate]]) -> list[Predicate]:
    out: list[Predicate] = []
    for p in preds:
        if isinstance(p, Predicate):
            out.append(p)
        else:
            out.extend(p)
    return out


def between(column: str | Ref, low: Any, high: Any) -> Predicate:
    """``column BETWEEN low AND high`` (inclusive), i.e. ``column >= low AND column <= high``."""
    ref = column if isinstance(column, Ref) else Ref(column)
    return And(GtEq(ref, lit(low)), LtEq(ref, lit(high)))


_MIRRORED: dict[type[ComparisonPredicate], type[ComparisonPredicate]] = {
    Eq: Eq, NotEq: NotEq, NullSafeEq: NullSafeEq, Lt: Gt, LtEq: GtEq, Gt: Lt, GtEq: LtEq,
}


def mirrored(kind: type[ComparisonPredicate]) -> type[ComparisonPredicate]:
    """The operator to use when the literal is on the left: ``v < c`` is ``c > v``."""
    try:
        return _MIRRORED[kind]
    except KeyError as e:
        raise InvalidArgumentError(f"{kind.__name__} cannot take its literal on the left") from e
