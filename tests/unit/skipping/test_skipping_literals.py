"""Numeric literals and CASTs mean what Spark makes of them, or the SQL front end refuses them (issue 17, 7).

Expected values were checked against Spark 4.3 (``SELECT <literal>``): the types Spark gives unsuffixed and
suffixed numbers, its range errors (INVALID_NUMERIC_LITERAL_RANGE, DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION),
and the float rounding of ``F`` literals and of casts to FLOAT (correctly rounded from the text, not through a
double).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import Eq, Literal, LtEq, Ref, Unsupported
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.sql_literals import NO_CAST, cast_literal, nearest_float32, parse_number


@pytest.mark.parametrize("text", ["1e999", "-1e999", "1e999D", "1e39F", "-3.5e38F", "128Y", "-129Y", "32768S",
                                  "9223372036854775808L", "-9223372036854775809L",
                                  "1234567890123456789012345678901234567890",
                                  "123456789012345678901234567890.123456789BD"])
def test_literals_spark_refuses_are_refused(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="literal"):
        from_sql(f"x = {text}")


@pytest.mark.parametrize(("text", "value"), [
    ("-128Y", -128), ("127Y", 127), ("-32768S", -32768), ("-9223372036854775808L", -(2**63)),
    ("2147483648", 2147483648), ("99999999999999999999", 99999999999999999999),
    ("1.5", Decimal("1.5")), ("12.", Decimal("12")), ("1.0E10BD", Decimal("1.0E10")),
    ("1E2", 100.0), (".5e1", 5.0), ("1e-400", 0.0), ("4.9e-324D", 5e-324),
    ("3.4e38F", float(np.float32(3.4e38))), ("0.1F", float(np.float32(0.1))),
])
def test_literal_values(text: str, value: object) -> None:
    pred = from_sql(f"x = {text}")
    assert pred == Eq(Ref("x"), Literal(value))
    assert type(pred.literal.value) is type(value)


def test_negative_zero_literal() -> None:
    value = from_sql("x = -1e-400").literal.value
    assert value == 0.0 and str(value) == "-0.0"


def test_float_literals_are_rounded_once_from_the_text() -> None:
    # just above the midpoint between 1.0f and its successor: through a double it would round down to 1.0f
    text = "1.0000000596046447753906251"
    up = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    assert float(np.float32(float(text))) == 1.0  # the double rounding this avoids
    assert parse_number(text + "F") == up
    assert nearest_float32(Decimal(text)) == up
    assert from_sql(f"x <= CAST({text} AS FLOAT)") == LtEq(Ref("x"), Literal(up))
    assert from_sql(f"x <= CAST('{text}' AS FLOAT)") == LtEq(Ref("x"), Literal(up))
    assert from_sql("x <= CAST(0.1D AS FLOAT)") == LtEq(Ref("x"), Literal(float(np.float32(0.1))))


@pytest.mark.parametrize(("value", "type_name", "args", "want"), [
    (300, "TINYINT", [], NO_CAST), (127, "TINYINT", [], 127), (2.7, "INT", [], 2), (-2.7, "INT", [], -2),
    ("2.7", "INT", [], NO_CAST), (" 12 ", "INT", [], 12), ("1_000", "INT", [], NO_CAST),
    (1e10, "INT", [], NO_CAST), (float("nan"), "INT", [], NO_CAST), (2**40, "BIGINT", [], 2**40),
    (Decimal("123.456"), "DECIMAL", [4, 1], Decimal("123.5")), (Decimal("1234.5"), "DECIMAL", [4, 1], NO_CAST),
    ("1e999", "DOUBLE", [], float("inf")), ("NaN", "FLOAT", [], "nan"),
])
def test_cast_folding(value: object, type_name: str, args: list[int], want: object) -> None:
    got = cast_literal(value, type_name, args)
    if want == "nan":
        assert got != got
    else:
        assert got is want if want is NO_CAST else got == want


def test_casts_spark_may_refuse_are_not_used_for_skipping() -> None:
    assert isinstance(from_sql("x = CAST(300 AS TINYINT)"), Unsupported)
    assert isinstance(from_sql("x = CAST('2.7' AS INT)"), Unsupported)
