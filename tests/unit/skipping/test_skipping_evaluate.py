"""Per-operator tests of the stats evaluator, on self-describing one-file stats fixtures."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from hudi_layout.skipping.evaluate import IN_PREDICATE_LIMIT, evaluate
from hudi_layout.skipping.ir import And, Eq, In, Literal, Not, Ref
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.stats import ColumnStats, StatsTable
from hudi_layout.skipping.visitors import visit


def one(type_: pa.DataType, lo: object, hi: object, nc: int | None, vc: int | None,
        truncated: bool = False, nan_exact: bool | None = None) -> ColumnStats:
    return ColumnStats.from_pylists(type_, [lo], [hi], [nc], [vc], truncated=truncated,
                                    nan_exact=None if nan_exact is None else [nan_exact])


# Every column is one file's statistics, named after what is special about them.
STATS = StatsTable(1, {
    "no_nulls": one(pa.int64(), 10, 20, 0, 5),
    "some_nulls": one(pa.int64(), 10, 20, 2, 5),
    "all_nulls": one(pa.int64(), None, None, 5, 5),
    "no_stats": one(pa.int64(), None, None, None, None),
    "unknown_null_count": one(pa.int64(), 10, 20, None, 5),
    "single_value": one(pa.int64(), 7, 7, 0, 5),
    "single_value_with_nulls": one(pa.int64(), 7, 7, 2, 5),
    "doubles": one(pa.float64(), 1.0, 2.0, 0, 5),
    "nan_max": one(pa.float64(), 1.0, float("nan"), 0, 5),
    "all_nan": one(pa.float64(), float("nan"), float("nan"), 0, 5),
    "single_double": one(pa.float64(), 1.5, 1.5, 0, 5),
    "zeros": one(pa.float64(), -0.0, -0.0, 0, 5, nan_exact=True),
    "zeros_other_writer": one(pa.float64(), -0.0, -0.0, 0, 5),
    "exact_doubles": one(pa.float64(), 1.0, 2.0, 0, 5, nan_exact=True),
    "exact_nan_max": one(pa.float64(), 1.0, float("nan"), 0, 5, nan_exact=True),
    "exact_all_nan": one(pa.float64(), float("nan"), float("nan"), 1, 5, nan_exact=True),
    "exact_single": one(pa.float64(), 1.5, 1.5, 0, 5, nan_exact=True),
    "exact_floats": one(pa.float32(), 0.10000000149011612, 0.5, 0, 5, nan_exact=True),
    "decimals": one(pa.decimal128(10, 2), Decimal("1.25"), Decimal("9.99"), 0, 5),
    "abc_prefixed": one(pa.string(), "abc1", "abc9", 0, 5),
    "strings": one(pa.string(), "apple", "melon", 0, 5),
    "truncated": one(pa.string(), "ab", "ab", 0, 5, truncated=True),
    "blobs": one(pa.binary(), b"\x01", b"\x05", 0, 5),
    "dates": one(pa.date32(), dt.date(2024, 1, 10), dt.date(2024, 1, 20), 0, 5),
    "timestamps": one(pa.timestamp("us"), dt.datetime(1960, 1, 1), dt.datetime(1969, 12, 31, 23), 0, 5),
    "timestamps_utc": one(pa.timestamp("us", tz="UTC"), dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 12), 0, 5),
    "timestamps_ns": one(pa.timestamp("ns"), dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 5), 0, 5),
    "all_true": one(pa.bool_(), True, True, 0, 5),
    "empty_file": one(pa.int64(), None, None, 0, 0),
})


def might(sql: str) -> bool:
    return bool(evaluate(from_sql(sql), STATS).might_match[0])


CASES = [
    # (filter, expected might-match, why)
    ("no_nulls = 15", True, "15 lies in [10, 20]"),
    ("no_nulls = 5", False, "5 < min"),
    ("no_nulls = 25", False, "25 > max"),
    ("25 = no_nulls", False, "literal on the left"),
    ("all_nulls = 1", False, "no non-null value"),
    ("empty_file = 1", False, "no rows"),
    ("no_stats = 1", True, "unknown stats"),
    ("some_nulls = 10", True, "min is inclusive"),
    ("no_nulls <=> 25", False, "<=> v is = v"),
    ("no_nulls <=> NULL", False, "<=> NULL is IS NULL, no nulls"),
    ("some_nulls <=> NULL", True, "has nulls"),
    ("no_nulls = NULL", False, "= NULL is never TRUE"),
    ("no_nulls != 15", True, "other values exist"),
    ("single_value != 7", False, "only 7 in the file"),
    ("single_value_with_nulls != 7", False, "NULL != 7 is NULL, so nulls do not help"),
    ("NOT (single_value_with_nulls <=> 7)", True, "NOT (c <=> v) is TRUE for the null rows"),
    ("NOT (single_value <=> 7)", False, "no nulls, only 7"),
    ("no_nulls < 10", False, "min = 10"),
    ("no_nulls < 11", True, ""),
    ("no_nulls <= 10", True, "min inclusive"),
    ("no_nulls <= 9", False, ""),
    ("no_nulls > 20", False, "max = 20"),
    ("no_nulls > 19", True, ""),
    ("no_nulls >= 20", True, ""),
    ("no_nulls >= 21", False, ""),
    ("5 > no_nulls", False, "mirrored: no_nulls < 5"),
    ("no_nulls BETWEEN 21 AND 30", False, ""),
    ("no_nulls NOT BETWEEN 10 AND 20", False, "all values in [10, 20]"),
    ("no_nulls IN (1, 2, 30)", False, "all outside"),
    ("no_nulls IN (1, 12)", True, ""),
    ("no_nulls IN (NULL)", False, "IN (NULL) never TRUE"),
    ("single_value NOT IN (7, 8)", False, "the only value is listed"),
    ("single_value NOT IN (8)", True, ""),
    ("no_nulls NOT IN (1, NULL)", False, "NOT IN with a NULL is never TRUE"),
    ("no_nulls IS NULL", False, "null_count = 0"),
    ("some_nulls IS NULL", True, ""),
    ("no_nulls IS NOT NULL", True, ""),
    ("all_nulls IS NOT NULL", False, "null_count = value_count"),
    ("all_nulls IS NULL", True, ""),
    ("no_stats IS NULL", True, "unknown"),
    ("no_stats IS NOT NULL", True, "unknown"),
    ("no_nulls = 15.5D", True, "int column, double literal"),
    ("no_nulls = 25.5D", False, "int column, double literal above max"),
    ("no_nulls > 19.5", True, "int column, decimal literal 19.5 < 20"),
    ("no_nulls > 20.5", False, "int column, decimal literal above max"),
    ("doubles = 1", True, "double column, int literal"),
    ("doubles = 3", False, ""),
    ("doubles < 1.0D", False, "min = 1.0"),
    ("doubles > 2.0D", True, "max of a double may ignore NaN, and NaN > 2.0 in Spark"),
    ("doubles >= 5.0D", True, "same: never trust a double max for >, >="),
    ("doubles = CAST('NaN' AS DOUBLE)", True, "NaN literal: unknown"),
    ("doubles < CAST('NaN' AS DOUBLE)", True, "NaN literal: unknown"),
    ("nan_max = 50.0D", True, "NaN bound: unknown"),
    ("nan_max < 0.5D", True, "NaN bound: unknown"),
    ("all_nan < 0.5D", True, "NaN bound: unknown"),
    ("single_double != 1.5D", True, "a NaN row (invisible to min/max) is != 1.5"),
    ("single_double NOT IN (1.5D)", True, "same for NOT IN"),
    ("zeros = 0.0D", True, "-0.0 = 0.0 in Spark"),
    ("zeros < 0.0D", False, "-0.0 is not < 0.0"),
    ("zeros != 0.0D", False, "-0.0 = 0.0, and NaN-exact bounds show no NaN"),
    ("zeros_other_writer < 0.0D", True, "0.0 / 0.0 from another writer may be NaN-poisoned statistics"),
    ("zeros_other_writer > 1.0D", True, "same"),
    ("exact_doubles > 2.0D", False, "NaN-exact bounds without NaN: max is an upper bound"),
    ("exact_doubles >= 2.0D", True, "2.0 may be there"),
    ("exact_doubles >= 2.5D", False, ""),
    ("exact_doubles > 1.5D", True, ""),
    ("exact_doubles = CAST('NaN' AS DOUBLE)", False, "no NaN in the file"),
    ("exact_doubles >= CAST('NaN' AS DOUBLE)", False, "only NaN is >= NaN"),
    ("exact_doubles > CAST('NaN' AS DOUBLE)", False, "nothing is > NaN"),
    ("doubles > CAST('NaN' AS DOUBLE)", False, "nothing is > NaN, whoever wrote the stats"),
    ("exact_doubles < CAST('NaN' AS DOUBLE)", True, "every number is < NaN"),
    ("exact_doubles IN (CAST('NaN' AS DOUBLE), 7.0D)", False, "no NaN, 7 above max"),
    ("exact_doubles NOT IN (1.0D, 2.0D)", True, "values between 1 and 2 are not in the list"),
    ("exact_nan_max > 50.0D", True, "the file holds a NaN, and NaN > 50"),
    ("exact_nan_max = CAST('NaN' AS DOUBLE)", True, ""),
    ("exact_nan_max < 0.5D", False, "min = 1.0"),
    ("exact_all_nan < 0.5D", False, "every non-null value is NaN"),
    ("exact_all_nan != 0.5D", True, "NaN != 0.5"),
    ("exact_all_nan < CAST('NaN' AS DOUBLE)", False, "NaN is not < NaN"),
    ("exact_all_nan != CAST('NaN' AS DOUBLE)", False, "NaN = NaN in Spark"),
    ("exact_all_nan NOT IN (CAST('NaN' AS DOUBLE))", False, ""),
    ("exact_all_nan = CAST('NaN' AS DOUBLE)", True, ""),
    ("exact_single != 1.5D", False, "NaN-exact: no NaN hides behind min = max = 1.5"),
    ("exact_single NOT IN (1.5D, 3.0D)", False, "same for NOT IN"),
    ("exact_floats > 0.5D", False, "float column, double literal, NaN-exact"),
    ("exact_floats <= CAST(0.1 AS FLOAT)", True, "the float literal is 0.1f, the min itself"),
    ("exact_floats < 0.1F", False, "0.1F is the float nearest 0.1, the min"),
    ("decimals = 1.25", True, ""),
    ("decimals = 1.249", False, "below min, exact decimal comparison"),
    ("decimals > 9.99", False, ""),
    ("decimals < 1.3D", True, "decimal column, double literal"),
    ("decimals = 5", True, "decimal column, int literal"),
    ("strings = 'banana'", True, ""),
    ("strings = 'zebra'", False, ""),
    ("strings LIKE 'b%'", True, ""),
    ("strings LIKE 'n%'", False, "'n' > 'melon'"),
    ("strings LIKE 'a%'", True, "min starts with the prefix"),
    ("strings LIKE '0%'", False, "below min, which does not start with it"),
    ("strings LIKE 'apples%'", True, "min < 'apples' <= max"),
    ("strings NOT LIKE 'a%'", True, ""),
    ("abc_prefixed NOT LIKE 'abc%'", False, "min and max start with abc"),
    ("strings LIKE '%x'", True, "unsupported pattern"),
    ("strings = 1", True, "string column, int literal: cannot compare"),
    ("truncated = 'abz'", True, "max may be a prefix of 'abz…'"),
    ("truncated > 'abz'", True, "real max could be 'abzz'"),
    ("truncated < 'ab'", False, "min is a lower bound even when truncated"),
    ("truncated != 'ab'", True, "cannot prove all values equal"),
    ("blobs = X'03'", True, ""),
    ("blobs = X'07'", False, ""),
    ("dates = DATE '2024-01-15'", True, ""),
    ("dates = '2024-01-25'", False, "string literal cast to date"),
    ("dates < TIMESTAMP '2024-01-10 00:00:00'", False, "date widened to timestamp"),
    ("dates < TIMESTAMP '2024-01-10 00:00:01'", True, ""),
    ("timestamps < TIMESTAMP '1960-01-01 00:00:00'", False, "pre-1970 values"),
    ("timestamps >= '1969-12-31 23:00:00'", True, ""),
    ("timestamps > DATE '1970-01-01'", False, "date literal widened"),
    ("timestamps_utc = TIMESTAMP '2024-01-01 11:00:00'", True, "naive literal = UTC"),
    ("timestamps_utc = TIMESTAMP '2024-01-01 13:00:00+05:00'", False, "08:00 UTC"),
    ("timestamps_utc = TIMESTAMP '2024-01-01 15:00:00+05:00'", True, "10:00 UTC"),
    ("timestamps_ns > TIMESTAMP '2024-01-01 00:00:00'", True, "5 ns past midnight: no truncation to us"),
    ("all_true = FALSE", False, ""),
    ("all_true", True, "bare boolean column"),
    ("NOT all_true", False, "NOT c ≡ c = FALSE"),
    ("all_true = 1", True, "boolean vs int: cannot compare"),
    ("unknown_column = 1", True, "column without stats"),
    ("upper(strings) = 'X'", True, "function of a column"),
    ("NOT upper(strings) = 'X'", True, "negated unsupported"),
]


@pytest.mark.parametrize(("sql", "expected", "why"), CASES, ids=[c[0] for c in CASES])
def test_operator(sql: str, expected: bool, why: str) -> None:
    assert might(sql) is expected, f"{'Should read' if expected else 'Should skip'}: {sql} ({why})"


def test_and_or_combine_per_file() -> None:
    assert not might("no_nulls = 15 AND strings = 'zebra'"), "Should skip: one conjunct cannot match"
    assert might("no_nulls = 5 OR strings = 'banana'"), "Should read: one disjunct might match"
    assert not might("no_nulls = 5 OR strings = 'zebra'"), "Should skip: neither disjunct can match"


def test_in_list_over_limit_is_not_used() -> None:
    big = In(Ref("no_nulls"), tuple(Literal(v) for v in range(100, 100 + IN_PREDICATE_LIMIT + 1)))
    assert evaluate(big, STATS).might_match[0], "Should read: IN list over the limit"
    small = In(Ref("no_nulls"), tuple(Literal(v) for v in range(100, 100 + IN_PREDICATE_LIMIT)))
    assert not evaluate(small, STATS).might_match[0], "Should skip: all values above max"


def test_reasons_name_the_excluding_leaf() -> None:
    stats = StatsTable(3, {"x": ColumnStats.from_pylists(pa.int64(), [0, 10, 20], [9, 19, 29], [0, 0, 0], [5, 5, 5])})
    result = evaluate(from_sql("x >= 10 AND (x < 15 OR x = 35)"), stats)
    assert result.might_match.tolist() == [False, True, False]
    assert result.reasons == {0: "x >= 10", 2: "x < 15 and x = 35"}


def test_evaluator_refuses_a_raw_not() -> None:
    from hudi_layout.skipping.evaluate import _StatsVisitor

    with pytest.raises(TypeError, match="rewrite_not"):
        visit(Not(Eq(Ref("no_nulls"), Literal(1))), _StatsVisitor(STATS))


def test_vectorised_over_many_files() -> None:
    n = 10_000
    lo = np.arange(n, dtype=np.int64) * 10
    stats = StatsTable(n, {"k": ColumnStats(pa.array(lo), pa.array(lo + 9), pa.array(np.zeros(n, np.int64)),
                                            pa.array(np.full(n, 100, np.int64)))})
    result = evaluate(And(from_sql("k >= 50000"), from_sql("k < 50020")), stats)
    assert np.flatnonzero(result.might_match).tolist() == [5000, 5001]


# ---------------------------------------------------------------------------------------------- Hudi bugs


def test_hudi_18791_starts_with_keeps_file_whose_values_all_start_with_prefix() -> None:
    # Hudi 1.1 used `min <= p AND max >= p`: min 'abc1' > 'abc' wrongly pruned this file.
    assert might("abc_prefixed LIKE 'abc%'"), "Should read: every value starts with 'abc'"
    assert might("abc_prefixed LIKE 'abc5%'"), "Should read: 'abc5…' lies between the bounds"
    assert not might("abc_prefixed LIKE 'abd%'"), "Should skip: 'abd' > max"


def test_hudi_19645_is_null_with_unknown_null_count_keeps_file() -> None:
    assert might("unknown_null_count IS NULL"), "Should read: null count unknown"
    assert might("no_stats IS NULL"), "Should read: no stats at all"


def test_hudi_18755_missing_stats_entry_is_unknown_not_all_null() -> None:
    stats = StatsTable(2, {"c": ColumnStats.from_pylists(pa.int64(), [1, None], [5, None], [0, None], [5, None])})
    for sql in ("c = 100", "c IS NOT NULL", "c IS NULL", "c != 3", "c > 50"):
        assert evaluate(from_sql(sql), stats).might_match[1], f"Should read: file 1 has no stats entry ({sql})"


def test_hudi_20296_column_without_stats_inside_a_conjunction() -> None:
    assert not might("no_stats = 1 AND no_nulls = 99"), "Should skip: the conjunct with stats cannot match"
    assert might("no_stats = 1 OR no_nulls = 99"), "Should read: the disjunct without stats might match"
    assert might("unknown_column = 1 OR no_nulls = 99"), "Should read: unknown column in a disjunction"


def test_truncated_flag_on_a_non_text_column_is_ignored() -> None:
    stats = StatsTable(1, {"n": one(pa.int64(), 1, 5, 0, 5, truncated=True)})
    assert not evaluate(from_sql("n > 5"), stats).might_match[0], "Should skip: truncation means nothing for ints"


@pytest.mark.parametrize("column", ["no_nulls", "some_nulls", "all_nulls", "no_stats"])
def test_an_empty_in_list_is_false_for_every_row_and_its_negation_true(column: str) -> None:
    """Spark 4 evaluates ``c IN ()`` to FALSE for every row, a NULL ``c`` included, so ``NOT (c IN ())`` keeps
    every row: a file of NULLs was dropped for it (three-valued logic; a probe, session 31)."""
    from hudi_layout.skipping.ir import NotIn
    from hudi_layout.skipping.oracle import evaluate_row

    empty_in = In(Ref(column), ())
    assert not evaluate(empty_in, STATS).might_match[0]
    for negated in (NotIn(Ref(column), ()), Not(empty_in)):
        assert evaluate(negated, STATS).might_match[0]
    assert evaluate_row(Not(empty_in), {column: None}) is True and evaluate_row(empty_in, {column: None}) is False
