"""The Spark Column front end, against a real (local) SparkSession."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import (
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
    NullSafeEq,
    Or,
    Ref,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.spark_column import from_spark_column

pytestmark = pytest.mark.integration

A, S = Ref("a"), Ref("s")


def test_spark_column_translation(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    cases = [
        (F.col("a") > 1, Gt(A, Literal(1))),
        (F.lit(1) < F.col("a"), Gt(A, Literal(1))),
        (F.col("a") != 1, Not(Eq(A, Literal(1)))),
        (F.col("a").eqNullSafe(None), NullSafeEq(A, Literal(None))),
        (F.col("a").between(1, 5), And(GtEq(A, Literal(1)), LtEq(A, Literal(5)))),
        (F.col("a").isin(1, 2), In(A, (Literal(1), Literal(2)))),
        (~F.col("a").isNull() | F.col("a").isNotNull(), Or(Not(IsNull(A)), IsNotNull(A))),
        (F.col("s").startswith("ab"), StartsWith(S, Literal("ab"))),
        (F.col("s").like("ab%"), StartsWith(S, Literal("ab"))),
        (F.col("st.f") == "x", Eq(Ref("st.f"), Literal("x"))),
        (F.col("d") >= F.lit(dt.date(2024, 1, 2)), GtEq(Ref("d"), Literal(dt.date(2024, 1, 2)))),
        (F.col("t") < F.lit(dt.datetime(1969, 7, 20, 20, 17, 40, 123456)),
         # a Spark timestamp value is an instant (the driver's zone is UTC here, as PySpark reads naive values in it)
         Lt(Ref("t"), Literal(dt.datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=dt.timezone.utc)))),
        (F.col("x") == F.lit(Decimal("1.50")), Eq(Ref("x"), Literal(Decimal("1.50")))),
        (F.col("d") == F.lit("2024-01-01").cast("date"), Eq(Ref("d"), Literal(dt.date(2024, 1, 1)))),
        (F.col("b"), Eq(Ref("b"), Literal(True))),
        (F.lit(True), AlwaysTrue()),
        (F.expr("a > 1 AND s LIKE 'x%'"), And(Gt(A, Literal(1)), StartsWith(S, Literal("x")))),
        ((F.col("a") > 1) & (F.upper(F.col("s")) == "X"), And(Gt(A, Literal(1)), Unsupported("=(upper(s), 'X')"))),
    ]
    for col, expected in cases:
        assert from_spark_column(col, spark) == expected, str(col)
    for col in (F.col("s").endswith("x"), F.col("s").contains("x"), F.col("a") + 1 > 2, F.col("a") == F.col("b"),
                F.col("s").like("%x"), F.col("a").cast("int") == 1):
        assert isinstance(from_spark_column(col, spark), Unsupported), str(col)


def test_spark_column_schema_binding(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    with pytest.raises(InvalidArgumentError, match="'nope'"):
        from_spark_column(F.col("nope") == 1, spark, schema=pa.schema([("a", pa.int64())]))


ROWS = [
    {"id": 0, "i": 1, "d": 1.0, "dec": Decimal("1.50"), "s": "abc", "b": b"\x01\x02", "dt": dt.date(2024, 1, 1),
     "ts": dt.datetime(1969, 12, 31, 23, 30), "flag": True},
    {"id": 1, "i": 3, "d": float("nan"), "dec": Decimal("-2.00"), "s": "a_c", "b": b"\x02", "dt": dt.date(2024, 1, 3),
     "ts": dt.datetime(2024, 1, 1, 12), "flag": False},
    {"id": 2, "i": None, "d": -0.0, "dec": None, "s": "é", "b": None, "dt": None, "ts": None, "flag": None},
    {"id": 3, "i": -5, "d": float("inf"), "dec": Decimal("9.99"), "s": None, "b": b"", "dt": dt.date(1900, 1, 1),
     "ts": dt.datetime(1900, 1, 1), "flag": True},
    {"id": 4, "i": 2, "d": None, "dec": Decimal("0.00"), "s": "b", "b": b"\xff", "dt": dt.date(2024, 1, 2),
     "ts": dt.datetime(1970, 1, 1), "flag": False},
]
QUERIES = [
    "d > 1.0D", "d = CAST('NaN' AS DOUBLE)", "d < CAST('NaN' AS DOUBLE)", "d = 0.0D", "NOT (d < 1.0D)", "d != 2.0D",
    "d NOT IN (1.0D, 2.0D)", "d IN (CAST('NaN' AS DOUBLE))", "d >= CAST('Infinity' AS DOUBLE)", "i > 2.5",
    "i = 2.0D", "dec > 1", "dec = 1.5D", "dec <= -2", "s LIKE 'ab%'", "s NOT LIKE 'ab%'", "s >= 'b'", "s < 'é'",
    "s LIKE 'a\\\\_%'", "dt < TIMESTAMP '2024-01-02 00:00:00'", "dt = '2024-01-01'", "ts < DATE '1970-01-01'",
    "ts >= TIMESTAMP '1969-12-31 23:00:00+00:00'", "flag", "NOT flag", "flag IS TRUE", "NOT (flag IS TRUE)",
    "i IN (1, NULL)", "i NOT IN (1, NULL)", "i <=> NULL", "NOT (i <=> 1)", "b = X'0102'", "b < X'02'",
    "i BETWEEN 1 AND 3", "NOT (i BETWEEN 1 AND 3) OR s IS NULL",
]


def test_oracle_and_predicate_to_sql_agree_with_spark(spark) -> None:  # type: ignore[no-untyped-def]
    """Spark itself is the reference: the oracle's row semantics and the SQL we render must match it."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from hudi_layout.skipping.oracle import evaluate_rows
    from hudi_layout.skipping.sql import from_sql
    from hudi_layout.skipping.to_sql import predicate_to_sql

    schema = T.StructType([
        T.StructField("id", T.LongType()), T.StructField("i", T.LongType()), T.StructField("d", T.DoubleType()),
        T.StructField("dec", T.DecimalType(10, 2)), T.StructField("s", T.StringType()),
        T.StructField("b", T.BinaryType()), T.StructField("dt", T.DateType()), T.StructField("ts", T.TimestampType()),
        T.StructField("flag", T.BooleanType()),
    ])
    df = spark.createDataFrame([tuple(r[f.name] for f in schema) for r in ROWS], schema)
    exprs = []
    for n, q in enumerate(QUERIES):
        exprs.append(F.coalesce(F.expr(q), F.lit(False)).alias(f"q{n}"))
        exprs.append(F.coalesce(F.expr(predicate_to_sql(from_sql(q))), F.lit(False)).alias(f"r{n}"))
    got = {row["id"]: row for row in df.select("id", *exprs).collect()}
    for n, q in enumerate(QUERIES):
        spark_rows = [got[r["id"]][f"q{n}"] for r in ROWS]
        assert evaluate_rows(from_sql(q), ROWS) == spark_rows, f"oracle differs from Spark on {q}"
        assert [got[r["id"]][f"r{n}"] for r in ROWS] == spark_rows, f"rendered SQL differs on {q}"


def test_a_java_sql_literal_whose_conversion_cannot_be_asked_is_not_a_literal() -> None:
    """``java.sql`` dates and timestamps are converted with Spark's own functions through the literal's py4j
    gateway; an object without one (or a failing call) is no literal, so the leaf never skips (no traceback)."""
    from hudi_layout.skipping import spark_column

    class _Class:
        def getName(self) -> str:  # noqa: N802 - py4j's name
            return "java.sql.Timestamp"

    class _NoGateway:
        def getClass(self) -> _Class:  # noqa: N802 - py4j's name
            return _Class()

    with pytest.raises(spark_column._NotLiteral):
        spark_column._java_value(_NoGateway())
