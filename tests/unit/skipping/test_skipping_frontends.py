"""Front ends: SQL text, hudi-rs style tuples, Spark data source filters."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.datasource import from_datasource_filters
from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Eq,
    Gt,
    GtEq,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Lt,
    LtEq,
    Not,
    NotEq,
    NotIn,
    NullSafeEq,
    Or,
    Ref,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.tuples import from_tuples

A, B = Ref("a"), Ref("b")


@pytest.mark.parametrize(("text", "expected"), [
    ("a = 1", Eq(A, Literal(1))),
    ("a == 1", Eq(A, Literal(1))),
    ("1 < a", Gt(A, Literal(1))),
    ("1 >= a", LtEq(A, Literal(1))),
    ("a <> 'x'", NotEq(A, Literal("x"))),
    ("a != -2", NotEq(A, Literal(-2))),
    ("a <=> NULL", NullSafeEq(A, Literal(None))),
    ("a = 1.50", Eq(A, Literal(Decimal("1.50")))),
    ("a = 1e3", Eq(A, Literal(1000.0))),
    ("a = 10L", Eq(A, Literal(10))),
    ("a = 2.5D", Eq(A, Literal(2.5))),
    ("a = 2.5BD", Eq(A, Literal(Decimal("2.5")))),
    ("a = .5", Eq(A, Literal(Decimal(".5")))),
    ("a = 'it''s'", Eq(A, Literal("it's"))),
    ("a = 'it\\'s'", Eq(A, Literal("it's"))),
    ('a = "dq"', Eq(A, Literal("dq"))),
    ("a = X'0aFF'", Eq(A, Literal(b"\x0a\xff"))),
    ("a = true", Eq(A, Literal(True))),
    ("a = DATE '2024-01-31'", Eq(A, Literal(dt.date(2024, 1, 31)))),
    ("a < TIMESTAMP '1969-07-20 20:17:40'", Lt(A, Literal(dt.datetime(1969, 7, 20, 20, 17, 40)))),
    ("a = CAST('7' AS INT)", Eq(A, Literal(7))),
    ("a = cast('1.255' as decimal(5, 2))", Eq(A, Literal(Decimal("1.26")))),
    ("a = CAST('2024-02-01' AS DATE)", Eq(A, Literal(dt.date(2024, 2, 1)))),
    ("a = CAST(1 AS DOUBLE)", Eq(A, Literal(1.0))),
    ("`a` = 1", Eq(A, Literal(1))),
    ("`we``ird col` = 1", Eq(Ref("we`ird col"), Literal(1))),
    ("s.f.g = 1", Eq(Ref("s.f.g"), Literal(1))),
    ("a IN (1, 2, NULL)", In(A, (Literal(1), Literal(2), Literal(None)))),
    ("a NOT IN ('x')", Not(In(A, (Literal("x"),)))),
    ("a BETWEEN 1 AND 5", And(GtEq(A, Literal(1)), LtEq(A, Literal(5)))),
    ("a NOT BETWEEN 1 AND 5", Not(And(GtEq(A, Literal(1)), LtEq(A, Literal(5))))),
    ("a IS NULL", IsNull(A)),
    ("a is not null", IsNotNull(A)),
    ("a IS TRUE", NullSafeEq(A, Literal(True))),
    ("a IS NOT FALSE", Not(NullSafeEq(A, Literal(False)))),
    ("a IS DISTINCT FROM 3", Not(NullSafeEq(A, Literal(3)))),
    ("a LIKE 'ab%'", StartsWith(A, Literal("ab"))),
    ("a LIKE 'ab'", Eq(A, Literal("ab"))),
    ("a LIKE 'a\\%b%'", StartsWith(A, Literal("a%b"))),
    ("a LIKE 'a!_b%' ESCAPE '!'", StartsWith(A, Literal("a_b"))),
    ("a NOT LIKE 'ab%'", Not(StartsWith(A, Literal("ab")))),
    ("a LIKE 'a%b'", Unsupported("a LIKE 'a%b'")),
    ("a LIKE 'a_%'", Unsupported("a LIKE 'a_%'")),
    ("a RLIKE '^x'", Unsupported("a RLIKE '^x'")),
    ("NOT a = 1 AND b = 2 OR a = 3",
     Or(And(Not(Eq(A, Literal(1))), Eq(B, Literal(2))), Eq(A, Literal(3)))),
    ("a = 1 AND (b = 2 OR b = 3)", And(Eq(A, Literal(1)), Or(Eq(B, Literal(2)), Eq(B, Literal(3))))),
    ("((a > 1))", Gt(A, Literal(1))),
    ("a", Eq(A, Literal(True))),
    ("NOT a", Not(Eq(A, Literal(True)))),
    ("TRUE", AlwaysTrue()),
    ("NULL", AlwaysFalse()),
    ("a = b", Unsupported("a = b")),
    ("a + 1 > 3", Unsupported("a + 1 > 3")),
    ("abs(a) < 3", Unsupported("abs(a) < 3")),
    ("a IN (b, 1)", Unsupported("a IN (b, 1)")),
    ("CAST(a AS INT) = 1", Unsupported("CAST(a AS INT) = 1")),
    ("coalesce(a, 0) = 1 AND b = 2", And(Unsupported("coalesce(a, 0) = 1"), Eq(B, Literal(2)))),
    ("CASE WHEN a > 1 THEN 1 ELSE 0 END = 1", Unsupported("CASE WHEN a > 1 THEN 1 ELSE 0 END = 1")),
    ("date = DATE '2024-01-01'", Eq(Ref("date"), Literal(dt.date(2024, 1, 1)))),
    ("a = 1 -- trailing comment", Eq(A, Literal(1))),
])
def test_sql(text: str, expected: object) -> None:
    assert from_sql(text) == expected


@pytest.mark.parametrize(("text", "token"), [
    ("", "end of input"), ("a =", "end of input"), ("a = = 1", "'='"), ("(a = 1", "end of input"),
    ("a = 'open", "unterminated"), ("a = 1 b", "'b'"), ("a NOT 1", "'1'"), ("a = DATE 'x'", "DATE"),
    ("a IN (SELECT 1)", "SELECT"), ("a = 1 ;", "';'"), ("a = 1a", "'1a'"),
])
def test_sql_errors_name_the_token(text: str, token: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        from_sql(text)
    assert token in str(err.value)


def test_sql_with_schema_resolves_and_rejects_columns() -> None:
    schema = pa.schema([("Price", pa.int64()), ("s", pa.struct([("f", pa.string())]))])
    assert from_sql("price > 1 AND s.f = 'x'", schema) == And(Gt(Ref("Price"), Literal(1)),
                                                              Eq(Ref("s.f"), Literal("x")))
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        from_sql("nope = 1", schema)


def test_tuples() -> None:
    pred = from_tuples([("a", "=", 1), ("b", "not in", [1, 2]), ("c", "IS NULL"), ("d", ">=", dt.date(2024, 1, 1)),
                        ("e", "<>", "x")])
    assert pred == And(And(Eq(A, Literal(1)), NotIn(B, (Literal(1), Literal(2)))),
                       And(IsNull(Ref("c")), And(GtEq(Ref("d"), Literal(dt.date(2024, 1, 1))),
                                                 NotEq(Ref("e"), Literal("x")))))
    assert from_tuples([]) == AlwaysTrue()


@pytest.mark.parametrize("bad", [[("a", "~", 1)], [("a", "IN", 1)], [("a", "=")], [("a",)], [("a", "=", [1])]])
def test_tuple_errors(bad: list) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidArgumentError):
        from_tuples(bad)


def test_tuples_with_schema_rejects_unknown_column() -> None:
    with pytest.raises(InvalidArgumentError, match="'zz'"):
        from_tuples([("zz", "=", 1)], pa.schema([("a", pa.int64())]))


def test_datasource_filters() -> None:
    ds = pytest.importorskip("pyspark.sql.datasource")
    pred = from_datasource_filters([
        ds.EqualTo(("a",), 1), ds.EqualNullSafe(("b",), None), ds.GreaterThan(("a",), 0),
        ds.GreaterThanOrEqual(("a",), 0), ds.LessThan(("a",), 9), ds.LessThanOrEqual(("a",), 9),
        ds.In(("a",), (1, 2)), ds.IsNull(("n", "x")), ds.IsNotNull(("a",)), ds.Not(ds.EqualTo(("a",), 5)),
        ds.StringStartsWith(("s",), "ab"), ds.StringEndsWith(("s",), "z"), ds.StringContains(("s",), "q"),
        ds.EqualTo(("a",), [1, 2]),
    ])
    leaves = []

    def collect(p) -> None:  # type: ignore[no-untyped-def]
        if isinstance(p, And):
            collect(p.left)
            collect(p.right)
        else:
            leaves.append(p)

    collect(pred)
    assert leaves[:11] == [
        Eq(A, Literal(1)), NullSafeEq(B, Literal(None)), Gt(A, Literal(0)), GtEq(A, Literal(0)), Lt(A, Literal(9)),
        LtEq(A, Literal(9)), In(A, (Literal(1), Literal(2))), IsNull(Ref("n.x")), IsNotNull(A),
        Not(Eq(A, Literal(5))), StartsWith(Ref("s"), Literal("ab"))]
    assert all(isinstance(p, Unsupported) for p in leaves[11:]) and len(leaves) == 14
