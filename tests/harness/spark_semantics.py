"""Predicates of the harness and their meaning, written from Spark SQL's rules (not from hudi_layout's code).

A predicate is a small tree (:class:`Cmp`, :class:`Between`, :class:`InList`, :class:`NullCheck`,
:class:`Prefix`, :class:`And`, :class:`Or`, :class:`Not`) over typed columns (:class:`Col`) and typed literals
(:class:`Lit`). :func:`evaluate` gives its three-valued truth for one row (a dict of plain Python values);
:func:`to_sql`, :func:`to_column` and :func:`to_tuples` render it for the three ``where`` front ends.

Spark's rules implemented here:

* three-valued logic: a comparison with NULL is NULL; ``AND`` is FALSE if either side is FALSE, ``OR`` is
  TRUE if either side is TRUE, otherwise NULL wins; ``NOT NULL`` is NULL; ``<=>`` is never NULL;
* ``IN`` is TRUE when an element equals the value, else NULL when the value or an element is NULL, else
  FALSE; ``NOT IN`` is its negation (so never TRUE when the list holds a NULL);
* floating point: NaN equals NaN and is greater than every other value (+inf included); -0.0 equals 0.0;
* implicit widening for the literal kinds the generator pairs with each column: integers with integers and
  decimals compare exactly; an integer column against a double literal is widened to double (Java's
  round-to-nearest long -> double); a float column against a double literal is widened exactly; a float
  column against an integer literal narrows the integer to float (Spark's int -> float cast);
* strings compare by UTF-8 bytes (the same order as Python's code-point order); ``LIKE 'p%'`` is a prefix
  test; booleans order FALSE < TRUE; dates by day; timestamps by UTC microsecond; binary values by unsigned
  bytes, a shorter value before every longer one it begins (Python's ``bytes`` order);
* an integral column compared (``<``, ``<=``, ``>``, ``>=``) with a decimal literal beyond the 64-bit range is a
  constant TRUE or FALSE, even for NULL values (Spark's analyzer folds it; found by the soak in session 10);
* the session time zone (``spark.sql.session.timeZone``, :func:`set_session_zone`): a date compared with a
  timestamp is midnight of that day in the zone, and timestamp text without an offset is a wall-clock time
  in the zone (:func:`lit_sql` writes a timestamp literal so; with an explicit offset where the wall-clock
  time is ambiguous or does not exist there).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

Truth = bool | None

INTEGRAL = ("int", "long")
FLOATING = ("float", "double")
KINDS = ("int", "long", "double", "float", "decimal", "string", "bool", "date", "timestamp", "binary")

#: Spark SQL type names of the kinds (for CAST(NULL AS ...) and Column casts)
SQL_TYPE = {"int": "INT", "long": "BIGINT", "double": "DOUBLE", "float": "FLOAT", "decimal": "DECIMAL(10,2)",
            "string": "STRING", "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP", "binary": "BINARY"}

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

#: the session time zone of the predicates' meaning (one per process, as the harness's one SparkSession)
_SESSION_ZONE: list[dt.tzinfo] = [dt.timezone.utc]


def set_session_zone(name: str) -> None:
    """Read predicates as Spark does in a session whose ``spark.sql.session.timeZone`` is ``name`` (a region id
    or ``+HH:MM``); the caller sets the session's zone to the same value."""
    if name[:1] in "+-":
        sign = -1 if name[0] == "-" else 1
        hours, minutes = (int(x) for x in name[1:].split(":"))
        _SESSION_ZONE[0] = dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))
    else:
        _SESSION_ZONE[0] = dt.timezone.utc if name == "UTC" else ZoneInfo(name)


def session_zone() -> dt.tzinfo:
    return _SESSION_ZONE[0]


# ---------------------------------------------------------------------------------------------- the tree

@dataclass(frozen=True)
class Col:
    name: str
    kind: str


@dataclass(frozen=True)
class Lit:
    """``value`` None is a typed NULL of ``kind``."""

    value: Any
    kind: str


@dataclass(frozen=True)
class Cmp:
    op: str  # = != < <= > >= <=>
    col: Col
    lit: Lit
    lit_left: bool = False  # render as ``lit <mirrored op> col``


@dataclass(frozen=True)
class Between:
    col: Col
    low: Lit
    high: Lit
    negated: bool = False


@dataclass(frozen=True)
class InList:
    col: Col
    lits: tuple[Lit, ...]
    negated: bool = False


@dataclass(frozen=True)
class NullCheck:
    col: Col
    negated: bool = False  # IS NOT NULL


@dataclass(frozen=True)
class Prefix:
    """``col LIKE 'prefix%'`` (the prefix holds no ``%``, ``_`` or backslash)."""

    col: Col
    prefix: str
    negated: bool = False


@dataclass(frozen=True)
class ColCmp:
    """``col op other``: two columns (of kinds the generator also pairs as column and literal)."""

    op: str  # = != < <= > >= <=>
    col: Col
    other: Col


@dataclass(frozen=True)
class LikeAny:
    """``col LIKE ANY ('p1%', ...)`` (prefixes as :class:`Prefix`); ``negated`` renders ``NOT (...)``."""

    col: Col
    prefixes: tuple[str, ...]
    negated: bool = False


@dataclass(frozen=True)
class CoalesceCmp:
    """``coalesce(col, fill) op lit`` (``fill`` of the column's kind)."""

    op: str  # = != < <= > >=
    col: Col
    fill: Lit
    lit: Lit


@dataclass(frozen=True)
class LengthCmp:
    """``length(col) op n`` (characters of a string, bytes of a binary value)."""

    op: str  # = != < <= > >=
    col: Col
    n: int


@dataclass(frozen=True)
class And:
    left: Any
    right: Any


@dataclass(frozen=True)
class Or:
    left: Any
    right: Any


@dataclass(frozen=True)
class Not:
    child: Any


#: the leaves hudi_layout's planner cannot turn into statistics tests (functions, two columns, LIKE ANY): they
#: must never skip a file, and every front end must keep their meaning, negated or not
UnknownLeaf = ColCmp | LikeAny | CoalesceCmp | LengthCmp

Pred = Cmp | Between | InList | NullCheck | Prefix | ColCmp | LikeAny | CoalesceCmp | LengthCmp | And | Or | Not

MIRROR = {"=": "=", "!=": "!=", "<=>": "<=>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


# ---------------------------------------------------------------------------------------------- values

def to_float32(x: float | int) -> float:
    """The float32 nearest to ``x`` (round to nearest even, like Java's casts), as a Python float."""
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def _common_kind(col_kind: str, lit_kind: str) -> str:
    """The type Spark compares a ``col_kind`` column and a ``lit_kind`` literal in (for the generated pairs)."""
    if col_kind == lit_kind:
        return "long" if col_kind == "int" else col_kind
    pair = {col_kind, lit_kind}
    if pair <= {"int", "long"}:
        return "long"
    if pair <= {"int", "long", "decimal"}:
        return "decimal"
    if "double" in pair:
        return "double"
    if pair <= {"float", "int", "long"}:
        return "float"
    if pair == {"date", "timestamp"}:
        return "timestamp"
    raise AssertionError(f"the generator never pairs a {col_kind} column with a {lit_kind} literal")


def _as(kind: str, value: Any, from_kind: str) -> Any:
    """``value`` (of ``from_kind``) in the comparison type ``kind``."""
    if kind == "double":
        return float(value)  # int -> double rounds to nearest even, as Java; float32 -> double is exact
    if kind == "float":
        return value if from_kind == "float" else to_float32(value)
    if kind == "decimal":
        return Decimal(value)
    if kind == "timestamp":
        if from_kind == "date":  # midnight in the session zone (Spark's date -> timestamp cast)
            return micros(dt.datetime(value.year, value.month, value.day, tzinfo=session_zone()))
        return micros(value)
    return value


def micros(ts: dt.datetime) -> int:
    """UTC microseconds since the epoch of an aware datetime."""
    return (ts.astimezone(dt.timezone.utc) - EPOCH) // dt.timedelta(microseconds=1)


def _fp_key(x: float) -> tuple[int, float]:
    """Spark's total order of doubles: NaN above everything, -0.0 equal to 0.0."""
    return (1, 0.0) if math.isnan(x) else (0, x + 0.0)


def compare(value: Any, col_kind: str, lit: Lit) -> int | None:
    """-1 / 0 / 1 for ``value <=> lit`` in Spark's order, None when either is NULL."""
    if value is None or lit.value is None:
        return None
    kind = _common_kind(col_kind, lit.kind)
    a, b = _as(kind, value, col_kind), _as(kind, lit.value, lit.kind)
    if kind in FLOATING:
        a, b = _fp_key(a), _fp_key(b)
    return (a > b) - (a < b)


# ---------------------------------------------------------------------------------------------- 3VL

def _and(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _not(a: Truth) -> Truth:
    return None if a is None else not a


_OPS: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0, "!=": lambda c: c != 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0,
    ">": lambda c: c > 0, ">=": lambda c: c >= 0,
}


def evaluate(pred: Pred, row: Mapping[str, Any]) -> Truth:
    """Three-valued truth of ``pred`` for ``row``."""
    if isinstance(pred, And):
        return _and(evaluate(pred.left, row), evaluate(pred.right, row))
    if isinstance(pred, Or):
        return _or(evaluate(pred.left, row), evaluate(pred.right, row))
    if isinstance(pred, Not):
        return _not(evaluate(pred.child, row))
    value = row.get(pred.col.name)  # a column added after the row was written reads as NULL
    kind = pred.col.kind
    if isinstance(pred, ColCmp):
        other = Lit(row.get(pred.other.name), pred.other.kind)
        if pred.op == "<=>":
            return (value is None and other.value is None) if value is None or other.value is None \
                else compare(value, kind, other) == 0
        return _cmp_truth(pred.op, value, kind, other)
    if isinstance(pred, LikeAny):
        got = None if value is None else any(value.startswith(p) for p in pred.prefixes)
        return _not(got) if pred.negated else got
    if isinstance(pred, CoalesceCmp):
        return _cmp_truth(pred.op, pred.fill.value if value is None else value, kind, pred.lit)
    if isinstance(pred, LengthCmp):
        return None if value is None else _OPS[pred.op]((len(value) > pred.n) - (len(value) < pred.n))
    if isinstance(pred, NullCheck):
        return (value is not None) if pred.negated else (value is None)
    if isinstance(pred, Prefix):
        got = None if value is None else value.startswith(pred.prefix)
        return _not(got) if pred.negated else got
    if isinstance(pred, Between):
        got = _and(_cmp_truth(">=", value, kind, pred.low), _cmp_truth("<=", value, kind, pred.high))
        return _not(got) if pred.negated else got
    if isinstance(pred, InList):
        got = _in(value, kind, pred.lits)
        return _not(got) if pred.negated else got
    assert isinstance(pred, Cmp)
    if pred.op == "<=>":
        if value is None or pred.lit.value is None:
            return value is None and pred.lit.value is None
        return compare(value, kind, pred.lit) == 0
    return _cmp_truth(pred.op, value, kind, pred.lit)


def _spark_folded(op: str, kind: str, lit: Lit) -> Truth:
    """Spark's analyzer (DecimalPrecision) turns ``<``, ``<=``, ``>``, ``>=`` between an integral column and a
    decimal literal beyond the 64-bit range into a constant, NULL values included (checked on Spark 4.3:
    ``l > -9223372036854775808.25BD`` keeps the rows whose ``l`` is NULL). ``None``: no folding."""
    if kind not in INTEGRAL or lit.kind != "decimal" or lit.value is None or op not in ("<", "<=", ">", ">="):
        return None
    if lit.value < -(2**63):
        return op in (">", ">=")
    if lit.value > 2**63 - 1:
        return op in ("<", "<=")
    return None


def _cmp_truth(op: str, value: Any, kind: str, lit: Lit) -> Truth:
    folded = _spark_folded(op, kind, lit)
    if folded is not None:
        return folded
    c = compare(value, kind, lit)
    return None if c is None else _OPS[op](c)


def _in(value: Any, kind: str, lits: Sequence[Lit]) -> Truth:
    if value is None:
        return None
    saw_null = False
    for lit in lits:
        c = compare(value, kind, lit)
        if c is None:
            saw_null = True
        elif c == 0:
            return True
    return None if saw_null else False


def matching(pred: Pred | None, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows for which ``pred`` is TRUE (every row for ``None``)."""
    return list(rows) if pred is None else [r for r in rows if evaluate(pred, r) is True]


def columns_of(pred: Pred) -> set[str]:
    if isinstance(pred, (And, Or)):
        return columns_of(pred.left) | columns_of(pred.right)
    if isinstance(pred, Not):
        return columns_of(pred.child)
    if isinstance(pred, ColCmp):
        return {pred.col.name, pred.other.name}
    return {pred.col.name}


# ---------------------------------------------------------------------------------------------- SQL text

def _repr_double(x: float) -> str:
    if math.isnan(x):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(x):
        return "CAST('Infinity' AS DOUBLE)" if x > 0 else "CAST('-Infinity' AS DOUBLE)"
    return f"{x!r}D" if x != 0 else ("-0.0D" if math.copysign(1, x) < 0 else "0.0D")


def lit_sql(lit: Lit) -> str:
    v, k = lit.value, lit.kind
    if v is None:
        return f"CAST(NULL AS {SQL_TYPE[k]})"
    if k == "int":
        return str(v)
    if k == "long":
        return f"{v}L"
    if k == "double":
        return _repr_double(v)
    if k == "float":
        return f"CAST({_repr_double(v)} AS FLOAT)"
    if k == "decimal":
        return f"{v:f}BD"
    if k == "string":
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if k == "bool":
        return "TRUE" if v else "FALSE"
    if k == "date":
        return f"DATE'{v.isoformat()}'"
    if k == "timestamp":
        return f"TIMESTAMP'{timestamp_text(v)}'"
    if k == "binary":
        return f"X'{v.hex().upper()}'"
    raise AssertionError(k)


def timestamp_text(v: dt.datetime) -> str:
    """The instant ``v`` as Spark timestamp text: the wall-clock time in the session zone when that names
    ``v`` alone, else UTC with an explicit offset (a DST overlap or gap; pre-1900 local mean times)."""
    zone = session_zone()
    wall = v.astimezone(zone).replace(tzinfo=None)
    if wall.year >= 1900 and wall.replace(tzinfo=zone) == v and wall.replace(tzinfo=zone, fold=1) == v:
        return wall.isoformat(sep=" ")
    return v.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ") + "+00:00"


def col_sql(col: Col) -> str:
    return f"`{col.name}`"


def to_sql(pred: Pred) -> str:
    """Spark SQL text, in the session zone (:func:`set_session_zone`)."""
    if isinstance(pred, And):
        return f"({to_sql(pred.left)} AND {to_sql(pred.right)})"
    if isinstance(pred, Or):
        return f"({to_sql(pred.left)} OR {to_sql(pred.right)})"
    if isinstance(pred, Not):
        return f"(NOT {to_sql(pred.child)})"
    c = col_sql(pred.col)
    if isinstance(pred, ColCmp):
        return f"{c} {pred.op} {col_sql(pred.other)}"
    if isinstance(pred, LikeAny):
        text = f"{c} LIKE ANY ({', '.join(lit_sql(Lit(p + '%', 'string')) for p in pred.prefixes)})"
        return f"(NOT {text})" if pred.negated else text
    if isinstance(pred, CoalesceCmp):
        return f"coalesce({c}, {lit_sql(pred.fill)}) {pred.op} {lit_sql(pred.lit)}"
    if isinstance(pred, LengthCmp):
        return f"length({c}) {pred.op} {pred.n}"
    if isinstance(pred, NullCheck):
        return f"{c} IS {'NOT ' if pred.negated else ''}NULL"
    if isinstance(pred, Prefix):
        return f"{c} {'NOT ' if pred.negated else ''}LIKE {lit_sql(Lit(pred.prefix + '%', 'string'))}"
    if isinstance(pred, Between):
        return f"{c} {'NOT ' if pred.negated else ''}BETWEEN {lit_sql(pred.low)} AND {lit_sql(pred.high)}"
    if isinstance(pred, InList):
        items = ", ".join(lit_sql(x) for x in pred.lits)
        return f"{c} {'NOT ' if pred.negated else ''}IN ({items})"
    assert isinstance(pred, Cmp)
    if pred.lit_left:
        return f"{lit_sql(pred.lit)} {MIRROR[pred.op]} {c}"
    return f"{c} {pred.op} {lit_sql(pred.lit)}"


# ---------------------------------------------------------------------------------------------- Column

#: before it, ``F.lit(datetime)`` goes through ``java.sql.Timestamp`` and Spark keeps the hybrid calendar's
#: local fields (1270-07-23 13:26 UTC became an instant 7 days earlier; tests/integration/test_calendar_rebase.py)
GREGORIAN_SWITCH = dt.datetime(1582, 10, 16, tzinfo=dt.timezone.utc)


def _lit_column(lit: Lit) -> Any:
    from pyspark.sql import functions as F

    v, k = lit.value, lit.kind
    if v is None:
        return F.lit(None).cast(SQL_TYPE[k])
    if k in ("int",):
        return F.lit(v).cast("int")
    if k == "long":
        return F.lit(v).cast("bigint")
    if k == "float":
        return F.lit(v).cast("float")  # an exact float32 value: the double -> float cast is exact
    if k == "decimal":
        return F.lit(v)
    if k == "timestamp":
        v = v.astimezone(dt.timezone.utc)
        if v < GREGORIAN_SWITCH:  # PySpark's F.lit(datetime) keeps the old calendar's fields: another instant
            return F.timestamp_micros(F.lit(micros(v)))
        return F.lit(v)
    if k == "binary":
        return F.lit(bytearray(v))
    return F.lit(v)


def to_column(pred: Pred) -> Any:
    """A PySpark ``Column`` with the same meaning."""
    from pyspark.sql import functions as F

    if isinstance(pred, And):
        return to_column(pred.left) & to_column(pred.right)
    if isinstance(pred, Or):
        return to_column(pred.left) | to_column(pred.right)
    if isinstance(pred, Not):
        return ~to_column(pred.child)
    c = F.col(col_sql(pred.col))
    if isinstance(pred, ColCmp):
        return c.eqNullSafe(F.col(col_sql(pred.other))) if pred.op == "<=>" else \
            _column_cmp(pred.op, c, F.col(col_sql(pred.other)))
    if isinstance(pred, LikeAny):  # no Column method: Spark's own parser, as a user would write it
        return F.expr(to_sql(pred))
    if isinstance(pred, CoalesceCmp):
        return _column_cmp(pred.op, F.coalesce(c, _lit_column(pred.fill)), _lit_column(pred.lit))
    if isinstance(pred, LengthCmp):
        return _column_cmp(pred.op, F.length(c), F.lit(pred.n))
    if isinstance(pred, NullCheck):
        return c.isNotNull() if pred.negated else c.isNull()
    if isinstance(pred, Prefix):
        got = c.startswith(pred.prefix)
        return ~got if pred.negated else got
    if isinstance(pred, Between):
        got = c.between(_lit_column(pred.low), _lit_column(pred.high))
        return ~got if pred.negated else got
    if isinstance(pred, InList):
        got = c.isin(*[_lit_column(x) for x in pred.lits])
        return ~got if pred.negated else got
    assert isinstance(pred, Cmp)
    lit = _lit_column(pred.lit)
    op = MIRROR[pred.op] if pred.lit_left else pred.op
    left, right = (lit, c) if pred.lit_left else (c, lit)
    if op == "<=>":
        return left.eqNullSafe(right)
    return _column_cmp(op, left, right)


def _column_cmp(op: str, left: Any, right: Any) -> Any:
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[op]


# ---------------------------------------------------------------------------------------------- tuples

def _tuple_value(lit: Lit, col_kind: str) -> tuple[bool, Any]:
    """A Python value a hudi-rs style tuple can carry with the same meaning, or (False, None)."""
    if lit.value is None:
        return False, None
    same = {("int", "int"), ("long", "long"), ("long", "int"), ("int", "long"), ("double", "double"),
            ("decimal", "decimal"), ("string", "string"), ("bool", "bool"), ("date", "date"),
            ("timestamp", "timestamp"), ("double", "int"), ("decimal", "int"), ("float", "double"),
            ("binary", "binary")}
    if (col_kind, lit.kind) in same:
        return True, lit.value
    return False, None


def to_tuples(pred: Pred) -> list[tuple[Any, ...]] | None:
    """hudi-rs style ``[(column, op, value), ...]`` (ANDed) when ``pred`` is a conjunction of simple leaves
    whose literals a plain Python value expresses exactly; else None."""
    out: list[tuple[Any, ...]] = []

    def walk(p: Pred) -> bool:
        if isinstance(p, And):
            return walk(p.left) and walk(p.right)
        if isinstance(p, NullCheck):
            out.append((p.col.name, "IS NOT NULL" if p.negated else "IS NULL"))
            return True
        if isinstance(p, Prefix) and not p.negated:
            out.append((p.col.name, "STARTS WITH", p.prefix))
            return True
        if isinstance(p, InList):
            values = []
            for lit in p.lits:
                ok, v = _tuple_value(lit, p.col.kind)
                if not ok:
                    return False
                values.append(v)
            out.append((p.col.name, "NOT IN" if p.negated else "IN", values))
            return True
        if isinstance(p, Cmp):
            ok, v = _tuple_value(p.lit, p.col.kind)
            if not ok:
                return False
            out.append((p.col.name, p.op, v))
            return True
        return False

    return out if walk(pred) and out else None
