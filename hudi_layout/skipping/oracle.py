"""Row-level reference evaluator with Spark SQL semantics, in plain Python.

It is the oracle of the differential tests (no file a matching row lives in may be skipped) and is
deliberately written independently of the vectorised evaluator: no Arrow, no statistics.

Semantics: three-valued logic; a row matches only when the predicate is TRUE. Doubles use Spark's total
order (NaN = NaN, NaN greater than everything, -0.0 = 0.0). Mixed types widen like Spark (int vs float →
float, int vs Decimal → exact, date vs datetime → datetime, a string literal vs a date/datetime value →
parsed); naive datetimes are UTC (a UTC session's reading; :func:`~.bind.bind` resolves others first).
Pairs that do not compare give NULL. An :class:`~.ir.Unsupported` leaf is taken as TRUE for every row (the
stats evaluator keeps every file for it and for its negation, so the
differential property holds whatever value is assumed).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    ComparisonPredicate,
    Eq,
    Gt,
    GtEq,
    In,
    IsNotNull,
    IsNull,
    Lt,
    LtEq,
    Not,
    NotEq,
    NotIn,
    NotStartsWith,
    NullSafeEq,
    Or,
    Predicate,
    StartsWith,
    Unsupported,
)

Truth = bool | None  # None = SQL NULL


def evaluate_rows(pred: Predicate, rows: Sequence[Mapping[str, Any]]) -> list[bool]:
    """For each row (column name → Python value), whether ``pred`` is TRUE for it."""
    return [evaluate_row(pred, row) is True for row in rows]


def evaluate_row(pred: Predicate, row: Mapping[str, Any]) -> Truth:
    """Three-valued truth of ``pred`` for one row; a column missing from ``row`` is NULL."""
    if isinstance(pred, AlwaysTrue):
        return True
    if isinstance(pred, AlwaysFalse):
        return False
    if isinstance(pred, Unsupported):
        return True
    if isinstance(pred, Not):
        return _not(evaluate_row(pred.child, row))
    if isinstance(pred, And):
        return _and(evaluate_row(pred.left, row), evaluate_row(pred.right, row))
    if isinstance(pred, Or):
        return _or(evaluate_row(pred.left, row), evaluate_row(pred.right, row))
    value = row.get(pred.term.name)  # type: ignore[attr-defined]
    if isinstance(pred, IsNull):
        return value is None
    if isinstance(pred, IsNotNull):
        return value is not None
    if isinstance(pred, (In, NotIn)):
        found = _in(value, [lit.value for lit in pred.literals])
        return found if isinstance(pred, In) else _not(found)
    assert isinstance(pred, ComparisonPredicate)
    lit = pred.literal.value
    if isinstance(pred, NullSafeEq):
        if value is None or lit is None:
            return value is None and lit is None
        return compare(value, lit) == 0
    if isinstance(pred, (StartsWith, NotStartsWith)):
        hit = _starts_with(value, lit)
        return hit if isinstance(pred, StartsWith) else _not(hit)
    c = compare(value, lit)
    if c is None:
        return None
    if isinstance(pred, Eq):
        return c == 0
    if isinstance(pred, NotEq):
        return c != 0
    if isinstance(pred, Lt):
        return c < 0
    if isinstance(pred, LtEq):
        return c <= 0
    if isinstance(pred, Gt):
        return c > 0
    if isinstance(pred, GtEq):
        return c >= 0
    raise TypeError(f"unknown predicate {pred!r}")


def compare(value: Any, literal: Any) -> int | None:
    """Spark comparison of a column value with a literal: -1, 0, 1, or None (NULL / not comparable)."""
    if value is None or literal is None:
        return None
    pair = _widen(value, literal)
    if pair is None:
        return None
    a, b = pair
    if isinstance(a, float):
        return _compare_doubles(a, b)
    return (a > b) - (a < b)


def _compare_doubles(a: float, b: float) -> int:
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    return (a > b) - (a < b)  # -0.0 == 0.0 in Python already


def _widen(a: Any, b: Any) -> tuple[Any, Any] | None:
    if isinstance(a, bool) or isinstance(b, bool):
        return (a, b) if isinstance(a, bool) and isinstance(b, bool) else None
    numbers = (int, float, Decimal)
    if isinstance(a, numbers) and isinstance(b, numbers):
        if isinstance(a, float) or isinstance(b, float):
            return float(a), float(b)
        return Decimal(a), Decimal(b)
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    if isinstance(a, bytes) and isinstance(b, (bytes, str)):
        return a, b.encode() if isinstance(b, str) else b
    if isinstance(a, _dt.date) and isinstance(b, str):
        b = _parse(b, want_date=not isinstance(a, _dt.datetime))
        if b is None:
            return None
    if isinstance(a, _dt.date) and isinstance(b, _dt.date):
        if isinstance(a, _dt.datetime) or isinstance(b, _dt.datetime):
            return _as_utc_naive(a), _as_utc_naive(b)
        return a, b
    return None


def _as_utc_naive(v: _dt.date) -> _dt.datetime:
    if not isinstance(v, _dt.datetime):
        return _dt.datetime(v.year, v.month, v.day)
    if v.tzinfo is None:
        return v
    return v.astimezone(_dt.timezone.utc).replace(tzinfo=None)


def _parse(text: str, *, want_date: bool) -> _dt.date | None:
    text = text.strip()
    try:
        if want_date:
            return _dt.date.fromisoformat(text[:10]) if len(text) == 10 or text[10:11] in (" ", "T") else None
        return _dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def _starts_with(value: Any, prefix: Any) -> Truth:
    if value is None or prefix is None:
        return None
    if isinstance(value, bytes) and isinstance(prefix, str):
        prefix = prefix.encode()
    if isinstance(value, str) and isinstance(prefix, str):
        return value.startswith(prefix)
    if isinstance(value, bytes) and isinstance(prefix, bytes):
        return value.startswith(prefix)
    return None


def _in(value: Any, literals: list[Any]) -> Truth:
    if not literals:  # Spark 4: ``c IN ()`` is FALSE for every row, NULL included (a probe, session 31)
        return False
    if value is None:
        return None
    saw_null = False
    for lit in literals:
        c = compare(value, lit)
        if c == 0:
            return True
        saw_null = saw_null or c is None
    return None if saw_null else False


def _not(a: Truth) -> Truth:
    return None if a is None else not a


def _and(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False
