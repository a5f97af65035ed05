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
         Lt(Ref("t"), Literal(dt.datetime(1969, 7, 20, 20, 17, 40, 123456)))),
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
