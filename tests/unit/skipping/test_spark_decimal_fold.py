"""Spark folds ``integral <op> decimal literal beyond the 64-bit range`` to a constant, NULL rows included
(its analyzer's DecimalPrecision rule; checked on Spark 4.3: ``l > -9223372036854775808.25BD`` keeps rows whose
``l`` is NULL). Binding applies the same rule, so skipping never drops a file of NULLs that Spark would return."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from hudi_layout.skipping import ir
from hudi_layout.skipping.bind import bind
from hudi_layout.skipping.sql import from_sql

SCHEMA = pa.schema([("l", pa.int64()), ("i", pa.int32()), ("d", pa.float64()), ("dec", pa.decimal128(10, 2)),
                    ("s", pa.struct([("n", pa.int16())])), ("u", pa.uint64())])
BELOW = Decimal("-9223372036854775808.25")
ABOVE = Decimal("9223372036854775808.5")


@pytest.mark.parametrize("pred, want", [
    (ir.Gt(ir.Ref("l"), ir.lit(BELOW)), ir.AlwaysTrue()),
    (ir.GtEq(ir.Ref("l"), ir.lit(BELOW)), ir.AlwaysTrue()),
    (ir.Lt(ir.Ref("l"), ir.lit(BELOW)), ir.AlwaysFalse()),
    (ir.LtEq(ir.Ref("l"), ir.lit(BELOW)), ir.AlwaysFalse()),
    (ir.Gt(ir.Ref("l"), ir.lit(ABOVE)), ir.AlwaysFalse()),
    (ir.Lt(ir.Ref("i"), ir.lit(ABOVE)), ir.AlwaysTrue()),
    (ir.Lt(ir.Ref("s.n"), ir.lit(2**64)), ir.AlwaysTrue()),  # an integer literal this large is a decimal
])
def test_out_of_range_decimal_comparisons_fold_like_spark(pred, want) -> None:
    assert bind(pred, SCHEMA) == want


@pytest.mark.parametrize("pred", [
    ir.Eq(ir.Ref("l"), ir.lit(ABOVE)),  # Spark folds only <, <=, >, >=
    ir.NotEq(ir.Ref("l"), ir.lit(ABOVE)),
    ir.Gt(ir.Ref("i"), ir.lit(Decimal("-2147483648.5"))),  # beyond int, inside long: an ordinary comparison
    ir.Gt(ir.Ref("d"), ir.lit(BELOW)),  # not an integral column
    ir.Gt(ir.Ref("dec"), ir.lit(BELOW)),
    ir.Gt(ir.Ref("l"), ir.lit(-1e30)),  # a double literal: no folding in Spark
    ir.Gt(ir.Ref("l"), ir.lit(5)),
    ir.Gt(ir.Ref("u"), ir.lit(ABOVE)),  # Spark reads uint64 as decimal(20, 0): compared exactly, not folded
])
def test_other_comparisons_stay(pred) -> None:
    assert bind(pred, SCHEMA) == pred


def test_sql_text_is_folded_inside_not_and_between() -> None:
    pred = from_sql("NOT (l <= -9223372036854775808.25BD) AND l BETWEEN -9223372036854775809 AND 5",
                SCHEMA)
    assert "9223372036854775808" not in str(pred) and "l <= 5" in str(pred)
