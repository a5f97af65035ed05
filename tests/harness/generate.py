"""Random rows of every supported column type and random predicates over them (plain ``random.Random``).

Rows mix a few repeated values (so equality and IN hit), uniform values, the type's extremes and specials:
NULL everywhere, NaN / +-inf / -0.0 / +0.0 in float and double columns, strings sharing a prefix longer than
64 characters, unicode (up to 4-byte UTF-8) and the empty string, dates and timestamps before and after the
epoch, decimals of both signs.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from .spark_semantics import (
    EPOCH,
    Between,
    Cmp,
    CoalesceCmp,
    Col,
    ColCmp,
    InList,
    LengthCmp,
    LikeAny,
    Lit,
    Not,
    NullCheck,
    Pred,
    Prefix,
    to_float32,
)
from .spark_semantics import And as AndP
from .spark_semantics import Or as OrP

#: (name, kind) of the harness table; ``id`` is the record key, ``part`` the partition column
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "long"), ("i", "int"), ("l", "long"), ("d", "double"), ("f", "float"), ("s", "string"),
    ("b", "bool"), ("dt", "date"), ("ts", "timestamp"), ("dec", "decimal"), ("part", "string"),
)
KIND = dict(COLUMNS)
ARROW_TYPES = {"long": pa.int64(), "int": pa.int32(), "double": pa.float64(), "float": pa.float32(),
               "string": pa.string(), "bool": pa.bool_(), "date": pa.date32(),
               "timestamp": pa.timestamp("us", tz="UTC"), "decimal": pa.decimal128(10, 2), "binary": pa.binary()}
ARROW_SCHEMA = pa.schema([pa.field(n, ARROW_TYPES[k]) for n, k in COLUMNS])

LONG_PREFIX = "customer/region=europe-west/segment=enterprise/account-group/" + "x" * 12  # > 64 chars
UNICODE = ["é", "中文", "😀", "Ω", "ß", "\u00a0", "z"]
SPECIAL_DOUBLES = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 5e-324, -1e308, 1e308]
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
DATE_LO, DATE_HI = dt.date(1900, 1, 1), dt.date(2100, 12, 31)
TS_LO, TS_HI = -2_208_988_800_000_000, 4_133_980_799_000_000  # 1900-01-01 .. 2100-12-31 (UTC micros)
#: older values, one in ten: dates and timestamps from 1000-01-01 (before the Gregorian switch of 1582)
OLD_DATE_LO = dt.date(1000, 1, 1)
OLD_TS_LO = -30_610_224_000_000_000  # 1000-01-01 00:00:00 UTC
#: values of ``part``: besides NULL, the empty string (Hudi files it with NULL in the default partition) and
#: values that spell a default partition's folder name (session 15: partition pruning read those as NULL)
PARTITIONS = ("p0", "p1", "p2", "p0", "p1", "p2", "", "default", "__HIVE_DEFAULT_PARTITION__")


def _maybe_null(rng: random.Random, value: Any, rate: float = 0.08) -> Any:
    return None if rng.random() < rate else value


def _int(rng: random.Random, bits: int) -> int:
    lo, hi = INT32 if bits == 32 else INT64
    r = rng.random()
    if r < 0.5:
        return rng.randint(-50, 50)
    if r < 0.9:
        return rng.randint(lo // 2**8, hi // 2**8)
    return rng.choice([lo, hi, lo + 1, hi - 1, 0, -1, 1])


def _double(rng: random.Random) -> float:
    r = rng.random()
    if r < 0.12:
        return rng.choice(SPECIAL_DOUBLES)
    if r < 0.5:
        return float(rng.randint(-20, 20)) / 4
    return rng.gauss(0, 300)


def _string(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.05:
        return ""
    if r < 0.45:
        return LONG_PREFIX + rng.choice(["", "a", "b", "ab", "b" * 5]) + str(rng.randint(0, 40))
    if r < 0.6:
        return "".join(rng.choice(UNICODE) for _ in range(rng.randint(1, 4)))
    if r < 0.7:
        return rng.choice(["it's", "back\\slash", "per%cent", "under_score", "tab\tend"])
    return "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 8)))


def _binary(rng: random.Random) -> bytes:
    """Bytes with the edges of binary statistics: empty, 0x00 and 0xff runs longer than a truncated bound
    (0xff has no prefix successor), bytes above 0x7f (unsigned order), ASCII near a long common prefix."""
    r = rng.random()
    if r < 0.05:
        return b""
    if r < 0.3:
        return bytes([rng.choice([0x00, 0xFF])]) * rng.choice([1, 3, 66]) + rng.choice([b"", b"\x00", b"\x01", b"\xff"])
    if r < 0.5:
        return LONG_PREFIX.encode() + rng.choice([b"", b"a", b"\x80", b"\xff"]) + bytes([rng.randint(0, 255)])
    if r < 0.7:
        return bytes(rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]) for _ in range(rng.randint(1, 4)))
    return "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 8))).encode()


def _date(rng: random.Random) -> dt.date:
    r = rng.random()
    if r < 0.4:
        return dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(-20, 20))
    if r < 0.5:  # before the Gregorian switch and around it (Spark's LEGACY rebase would move these)
        return OLD_DATE_LO + dt.timedelta(days=rng.randint(0, (DATE_LO - OLD_DATE_LO).days))
    return DATE_LO + dt.timedelta(days=rng.randint(0, (DATE_HI - DATE_LO).days))


def _timestamp(rng: random.Random) -> dt.datetime:
    r = rng.random()
    if r < 0.4:
        us = 1_577_836_800_000_000 + rng.randint(-10, 10) * 3_600_000_000 + rng.choice([0, 1, 999_999])
    elif r < 0.5:  # before 1900: local mean time offsets of seconds in the session zones, and before 1582
        us = rng.randint(OLD_TS_LO, TS_LO)
    else:
        us = rng.randint(TS_LO, TS_HI)
    return EPOCH + dt.timedelta(microseconds=us)


def _decimal(rng: random.Random) -> Decimal:
    if rng.random() < 0.4:
        return Decimal(rng.randint(-400, 400)).scaleb(-2)
    return Decimal(rng.randint(-9_999_999_999, 9_999_999_999)).scaleb(-2)


def random_value(rng: random.Random, kind: str) -> Any:
    if kind == "int":
        return _int(rng, 32)
    if kind == "long":
        return _int(rng, 64)
    if kind == "double":
        return _double(rng)
    if kind == "float":
        return to_float32(_double(rng))
    if kind == "string":
        return _string(rng)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "binary":
        return _binary(rng)
    if kind == "date":
        return _date(rng)
    if kind == "timestamp":
        return _timestamp(rng)
    if kind == "decimal":
        return _decimal(rng)
    raise AssertionError(kind)


#: kinds a column added by schema evolution may have (every kind of the fixed columns, and binary)
ADDED_KINDS = tuple(ARROW_TYPES)
#: the widenings schema evolution may apply to the fixed columns (column: the kinds it may become)
WIDENINGS = {"i": ("long", "double"), "f": ("double",), "s": ("binary",)}


def random_rows(rng: random.Random, first_id: int, n: int, added: Sequence[tuple[str, str]] = (),
                widened: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """``n`` rows with ids ``first_id ..``; every non-key column may be NULL. ``added``: (name, kind) of the
    columns schema evolution added, after the fixed ones; ``widened``: fixed columns' new kinds."""
    rows = []
    for k in range(n):
        row: dict[str, Any] = {"id": first_id + k}
        for name, kind in _kinds(widened)[1:]:
            if name == "part":
                row[name] = _maybe_null(rng, rng.choice(PARTITIONS), 0.05)
            else:
                row[name] = _maybe_null(rng, random_value(rng, kind))
        for name, kind in added:
            row[name] = _maybe_null(rng, random_value(rng, kind), 0.2)
        rows.append(row)
    return rows


def _kinds(widened: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple((n, (widened or {}).get(n, k)) for n, k in COLUMNS)


def rows_to_arrow(rows: list[dict[str, Any]], added: Sequence[tuple[str, str]] = (),
                  widened: Mapping[str, str] | None = None) -> pa.Table:
    """The rows with the fixed columns (``widened``: their new kinds) and then ``added`` (a row without an
    added column has NULL there)."""
    if not added and not widened:
        return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
    schema = pa.schema([pa.field(n, ARROW_TYPES[k]) for n, k in (*_kinds(widened), *added)])
    return pa.Table.from_pylist(rows, schema=schema)


# ---------------------------------------------------------------------------------------------- predicates

#: literal kinds the generator pairs with each column kind (see spark_semantics for their comparison types)
LITERAL_KINDS = {
    "int": ("int", "int", "int", "long", "decimal", "double"),
    "long": ("long", "long", "int", "decimal"),
    "double": ("double", "double", "double", "int"),
    "float": ("float", "float", "double", "int"),
    "decimal": ("decimal", "decimal", "int"),
    "string": ("string",),
    "bool": ("bool",),
    "date": ("date", "date", "timestamp"),
    "timestamp": ("timestamp", "timestamp", "date"),
    "binary": ("binary",),
}


#: share of leaves the planner cannot plan (:meth:`PredicateGenerator.unknown`)
UNKNOWN_LEAF_RATE = 0.1


class PredicateGenerator:
    """Random predicate trees whose literals are mostly values present in ``sample`` (so they select)."""

    def __init__(self, rng: random.Random, sample: list[dict[str, Any]]) -> None:
        self.rng = rng
        self.sample = sample

    def _present(self, name: str) -> Any:
        values = [r.get(name) for r in self.sample if r.get(name) is not None] if self.sample else []
        return self.rng.choice(values) if values else None

    def literal(self, col: Col) -> Lit:
        rng = self.rng
        kind = rng.choice(LITERAL_KINDS[col.kind])
        if rng.random() < 0.03:
            return Lit(None, kind)
        base = self._present(col.name) if rng.random() < 0.7 else None
        if base is None:
            base = random_value(rng, col.kind)
        return Lit(self._convert(base, col.kind, kind), kind)

    def _convert(self, v: Any, col_kind: str, kind: str) -> Any:
        """A literal of ``kind`` near the column value ``v``."""
        rng = self.rng
        if kind == col_kind:
            if kind in ("int", "long") and rng.random() < 0.3:
                lo, hi = INT32 if kind == "int" else INT64
                return max(lo, min(hi, v + rng.choice([-1, 1])))
            if kind == "double" and rng.random() < 0.2:
                return rng.choice(SPECIAL_DOUBLES)
            if kind == "float" and rng.random() < 0.2:
                return to_float32(rng.choice(SPECIAL_DOUBLES))
            return v
        if kind == "int":  # an int literal for a long / double / float / decimal column
            if isinstance(v, float) and (v != v or abs(v) > 2**24):
                return rng.randint(-50, 50)
            return max(-(2**24), min(2**24, int(v)))
        if kind == "long":
            return int(v) * rng.choice([1, 2**20]) if abs(int(v)) < 2**40 else int(v)
        if kind == "decimal":
            if col_kind in ("int", "long"):
                return Decimal(int(v)) + rng.choice([Decimal("0"), Decimal("0.5"), Decimal("-0.25")])
            return Decimal(int(v))
        if kind == "double":
            if col_kind == "float":
                return rng.choice([float(v) + 0.1, float(v), 0.1, -0.1, float("nan"), -0.0])
            return float(v) + rng.choice([0.0, 0.5, -0.5])
        if kind == "date":  # date literal for a timestamp column
            return v.date() if isinstance(v, dt.datetime) else v
        if kind == "timestamp":  # a timestamp literal for a date column: near its midnight, in some zone
            hours = rng.choice([-14, -5, -1, 0, 0, 3, 12, 23, 24])
            return (dt.datetime(v.year, v.month, v.day, tzinfo=dt.timezone.utc)
                    + dt.timedelta(hours=hours, minutes=rng.choice([0, 0, 30, 59])))
        raise AssertionError((col_kind, kind))

    def _prefix(self, col: Col) -> str:
        rng = self.rng
        base = self._present(col.name) or "ab"
        clean = "".join(ch for ch in base if ch not in "%_\\")
        prefix = clean[: rng.randint(1, max(1, len(clean)))] if clean else "a"
        if rng.random() < 0.2:
            prefix = clean[:70] if len(clean) >= 70 else prefix
        return prefix

    def unknown(self, col: Col, columns: list[Col]) -> Pred:
        """A leaf the planner cannot test on statistics: two columns, LIKE ANY, coalesce, length."""
        rng = self.rng
        r = rng.random()
        if col.kind == "string" and r < 0.3:
            return LikeAny(col, tuple(self._prefix(col) for _ in range(rng.randint(1, 3))), rng.random() < 0.3)
        if col.kind in ("string", "binary") and r < 0.45:
            return LengthCmp(rng.choice(["=", "!=", "<", "<=", ">", ">="]), col, rng.randint(0, 12))
        others = [c for c in columns if c.name != col.name and c.kind in LITERAL_KINDS[col.kind]]
        if others and r < 0.75:
            return ColCmp(rng.choice(["=", "!=", "<", "<=", ">", ">=", "<=>"]), col, rng.choice(others))
        fill = self.literal(col)
        fill = fill if fill.kind == col.kind else Lit(random_value(rng, col.kind), col.kind)
        if col.kind == "bool":
            return CoalesceCmp(rng.choice(["=", "!="]), col, fill, Lit(rng.random() < 0.5, "bool"))
        return CoalesceCmp(rng.choice(["=", "!=", "<", "<=", ">", ">="]), col, fill, self.literal(col))

    def leaf(self, columns: list[Col]) -> Pred:
        rng = self.rng
        col = rng.choice(columns)
        if rng.random() < UNKNOWN_LEAF_RATE:
            return self.unknown(col, columns)
        r = rng.random()
        if r < 0.08:
            return NullCheck(col, rng.random() < 0.5)
        if col.kind == "string" and r < 0.25:
            return Prefix(col, self._prefix(col), rng.random() < 0.25)
        if r < 0.38:
            lits = tuple(self.literal(col) for _ in range(rng.randint(1, 4)))
            return InList(col, lits, rng.random() < 0.3)
        if r < 0.48 and col.kind != "bool":
            a, b = self.literal(col), self.literal(col)
            return Between(col, a, b, rng.random() < 0.2)
        op = rng.choice(["=", "!=", "<", "<=", ">", ">=", "<=>", ">", ">="])
        return Cmp(op, col, self.literal(col), lit_left=rng.random() < 0.15)

    def predicate(self, columns: list[Col], depth: int = 3) -> Pred:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.45:
            return self.leaf(columns)
        r = rng.random()
        if r < 0.45:
            return AndP(self.predicate(columns, depth - 1), self.predicate(columns, depth - 1))
        if r < 0.85:
            return OrP(self.predicate(columns, depth - 1), self.predicate(columns, depth - 1))
        return Not(self.predicate(columns, depth - 1))

    def conjunction(self, columns: list[Col]) -> Pred:
        """An AND of 1-3 simple leaves (the shape hudi-rs style tuples express)."""
        leaves = [self.leaf(columns) for _ in range(self.rng.randint(1, 3))]
        pred: Pred = leaves[0]
        for leaf in leaves[1:]:
            pred = AndP(pred, leaf)
        return pred


def all_columns(added: Sequence[tuple[str, str]] = (), widened: Mapping[str, str] | None = None) -> list[Col]:
    return [Col(n, k) for n, k in (*_kinds(widened), *added)]
