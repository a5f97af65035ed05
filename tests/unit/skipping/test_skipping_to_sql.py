"""predicate_to_sql: rendering, and a round trip through our own SQL parser with the same row results."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import (
    And,
    Eq,
    Gt,
    In,
    Literal,
    NotIn,
    NotStartsWith,
    Predicate,
    Ref,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.oracle import evaluate_rows
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.to_sql import literal_sql, predicate_to_sql
from hudi_layout.skipping.visitors import has_unsupported

# a sibling test module (tests/skipping is on sys.path under pytest's default import mode)
from tests.unit.skipping.test_skipping_differential import TYPES, draw_predicate


@pytest.mark.parametrize(("value", "sql"), [
    (None, "NULL"), (True, "TRUE"), (-3, "-3"), (1.5, "CAST('1.5' AS DOUBLE)"),
    (math.nan, "CAST('NaN' AS DOUBLE)"), (-math.inf, "CAST('-Infinity' AS DOUBLE)"),
    (Decimal("1E+3"), "1000BD"), (Decimal("-0.50"), "-0.50BD"), ("it's \\ %", "'it\\'s \\\\ %'"),
    (b"\x00\xff", "X'00FF'"), (dt.date(2024, 1, 2), "DATE '2024-01-02'"),
    (dt.datetime(1969, 7, 20, 20, 17, 40), "TIMESTAMP '1969-07-20 20:17:40'"),  # wall-clock: the session's zone
    (dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))), "TIMESTAMP '2024-01-01 10:00:00+00:00'"),
])
def test_literal_sql(value: Any, sql: str) -> None:
    assert literal_sql(value) == sql


def test_integer_literals_beyond_spark_decimals_have_no_sql_form() -> None:
    assert literal_sql(10**38 - 1) == "9" * 38
    assert from_sql(f"x = {literal_sql(-(10**38) + 1)}") is not None
    with pytest.raises(InvalidArgumentError, match="no SQL form"):
        literal_sql(10**38)  # our parser, like Spark's, refuses 39 digits: the round trip found it


def test_rendering() -> None:
    pred = And(StartsWith(Ref("a.b"), Literal("x_%")), NotIn(Ref("c`d"), (Literal(1),)))
    # the LIKE pattern holds backslashes: written as its UTF-8 bytes, which every parser setting reads the same
    assert predicate_to_sql(pred) == "((`a`.`b` LIKE CAST(X'785C5F5C2525' AS STRING)) AND (`c``d` NOT IN (1)))"
    assert predicate_to_sql(In(Ref("a"), ())) == "false" and predicate_to_sql(NotIn(Ref("a"), ())) == "true"
    assert predicate_to_sql(NotStartsWith(Ref("b"), Literal(b"\x01"))) == "(NOT startswith(`b`, X'01'))"
    assert predicate_to_sql(from_sql("upper(s) = 'X'")) == "(upper(s) = 'X')"
    with pytest.raises(InvalidArgumentError, match="cannot write"):
        predicate_to_sql(Unsupported("f(x)"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.property
@given(st.data())
def test_round_trip_through_sql_keeps_row_results(data: Any) -> None:
    kinds = {"a": data.draw(st.sampled_from(sorted(TYPES))), "b": data.draw(st.sampled_from(sorted(TYPES)))}
    n = data.draw(st.integers(1, 8))
    columns = {k: data.draw(st.lists(st.one_of(st.none(), TYPES[kind][1]), min_size=n, max_size=n))
               for k, kind in kinds.items()}
    rows = [{k: columns[k][i] for k in columns} for i in range(n)]
    pred: Predicate = draw_predicate(data.draw, {k: (kinds[k], columns[k]) for k in kinds})
    if has_unsupported(pred):
        return  # generated opaque leaves carry no SQL text
    try:
        text = predicate_to_sql(pred)
    except InvalidArgumentError as e:  # a literal Spark's parser has no form for (an integer of 39 digits)
        assert "has no SQL form" in str(e)
        return
    back = from_sql(text)
    if has_unsupported(back):
        assert "binary" in kinds.values(), "only a bytes prefix renders as a function we do not parse back"
        return
    assert evaluate_rows(back, rows) == evaluate_rows(pred, rows), predicate_to_sql(pred)


def test_round_trip_equality_on_plain_cases() -> None:
    for text in ["a = 1 AND b IN ('x', NULL)", "NOT (s LIKE 'a\\\\%b%')", "t >= TIMESTAMP '1900-01-01 00:00:00'",
                 "x = 1.25 OR x <=> NULL OR d < DATE '2024-02-29'"]:
        pred = from_sql(text)
        assert from_sql(predicate_to_sql(pred)) == pred
    assert from_sql(predicate_to_sql(Eq(Ref("z"), Literal(-0.0)))) == Eq(Ref("z"), Literal(-0.0))


def test_strings_with_backslashes_or_quotes_read_back_the_same_under_any_parser_setting() -> None:
    """``spark.sql.parser.escapedStringLiterals=true`` keeps the backslashes of ``'it\\'s'``: the row filter of
    ``hl.read(path, [("s", "=", "it's")])`` matched nothing (session 29's probe). Such strings are written as
    the cast of their UTF-8 bytes, which our parser folds back to the string (it folded ``CAST(X'..' AS
    STRING)`` as Python's ``"b'..'"`` text before, a skipping error of its own)."""
    for value in ("it's", "a\\b", "\\'", "plain", "é'中"):
        for pred in (Eq(Ref("s"), Literal(value)), In(Ref("s"), (Literal(value), Literal("x"))),
                     StartsWith(Ref("s"), Literal(value))):
            text = predicate_to_sql(pred)
            assert ("X'" in text) == ("'" in value or "\\" in value), text
            assert from_sql(text) == pred
    assert from_sql("s = CAST(X'41' AS STRING)") == Eq(Ref("s"), Literal("A"))
    assert isinstance(from_sql("s = CAST(X'FF' AS STRING)"), Unsupported)  # not UTF-8: not folded


@pytest.mark.parametrize(("text", "folded"), [("CAST(true AS STRING)", "true"),
                                              ("CAST(X'706C61696E' AS STRING)", "plain"), ("CAST(12 AS STRING)", "12"),
                                              ("CAST(DATE '2020-01-02' AS STRING)", "2020-01-02")])
def test_cast_to_string_folds_to_sparks_text(text: str, folded: str) -> None:
    """``CAST(true AS STRING)`` was folded with Python's ``str()`` as ``'True'`` (Spark: ``'true'``) and skipped
    every file holding ``'true'`` (session 29's probe); bytes as ``"b'..'"``; floats and decimals, whose text
    follows Java's formatting, are not folded."""
    assert from_sql(f"s = {text}") == Eq(Ref("s"), Literal(folded))
    for unfolded in ("CAST(1e20 AS STRING)", "CAST(1e-5 AS STRING)", "CAST(CAST(0.1 AS FLOAT) AS STRING)",
                     "CAST(1.50 AS STRING)"):
        assert isinstance(from_sql(f"s = {unfolded}"), Unsupported), unfolded


def test_exponent_literals_are_decimals_in_sessions_that_say_so() -> None:
    """``spark.sql.legacy.exponentLiteralAsDecimal.enabled=true``: Spark reads ``4.0000000000000000001E18`` as an
    exact decimal; the planner read a double, 4e18, and skipped a file holding 4000000000000000001 (session 29's
    probe)."""
    from hudi_layout.skipping.sql_lexer import SqlDialect

    legacy = SqlDialect.of_session({"spark.sql.legacy.exponentLiteralAsDecimal.enabled": "true"})
    assert from_sql("l > 4.0000000000000000001E18", dialect=legacy) == \
        Gt(Ref("l"), Literal(Decimal("4.0000000000000000001E18")))
    assert from_sql("l > 4.0000000000000000001E18") == Gt(Ref("l"), Literal(4e18))
    assert from_sql("l > 1.5E3D", dialect=legacy) == Gt(Ref("l"), Literal(1500.0))
