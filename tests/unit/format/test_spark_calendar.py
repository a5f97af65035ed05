"""Which stored dates and timestamps Spark reads as other values: the footer rule and the value bounds."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_layout.errors import InvalidArgumentError, UnsupportedTableError
from hudi_layout.format.spark_calendar import (
    SPARK_LEGACY_DATETIME_KEY,
    SPARK_LEGACY_INT96_KEY,
    SPARK_VERSION_FOOTER_KEY,
    calendar_shift_reason,
    holds_unshifted_only,
    refuse_unwritable_datetimes,
    require_stored_calendar,
    spark_rebase_reasons,
)

UTC = dt.timezone.utc


@pytest.mark.parametrize("footer, dates, int96", [
    ({}, False, False),                                                    # the session decides
    ({SPARK_LEGACY_DATETIME_KEY: ""}, False, False),                       # without a version: the session
    ({SPARK_VERSION_FOOTER_KEY: "4.3.0"}, False, False),
    ({SPARK_VERSION_FOOTER_KEY: "2.4.8"}, True, True),
    ({SPARK_VERSION_FOOTER_KEY: "3.0.3"}, False, True),                    # INT96 until 3.1.0
    ({SPARK_VERSION_FOOTER_KEY: "3.5.1", SPARK_LEGACY_DATETIME_KEY: ""}, True, False),
    ({SPARK_VERSION_FOOTER_KEY: "3.5.1", SPARK_LEGACY_INT96_KEY: ""}, False, True),
    ({SPARK_VERSION_FOOTER_KEY.encode(): b"3.5.1", SPARK_LEGACY_DATETIME_KEY.encode(): b""}, True, False),
])
def test_the_footer_rule_is_sparks(footer, dates, int96):
    got = spark_rebase_reasons(footer)
    assert (got[0] is not None, got[1] is not None) == (dates, int96)


def _file(tmp_path, values: dict[str, pa.Array], footer: dict[str, str], **kw) -> pq.FileMetaData:
    path = tmp_path / "f.parquet"
    table = pa.table(values)
    with pq.ParquetWriter(path, table.schema, **kw) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata(footer)
    return pq.read_metadata(path)


LEGACY = {SPARK_VERSION_FOOTER_KEY: "3.5.1", SPARK_LEGACY_DATETIME_KEY: ""}


@pytest.mark.parametrize("values, shifted", [
    ({"d": pa.array([dt.date(1582, 10, 15), dt.date(2020, 1, 1)])}, False),
    ({"d": pa.array([dt.date(1582, 10, 14), dt.date(2020, 1, 1)])}, True),
    ({"d": pa.array([None, None], pa.date32())}, False),
    ({"ts": pa.array([dt.datetime(1900, 1, 1, tzinfo=UTC)], pa.timestamp("us", "UTC"))}, False),
    ({"ts": pa.array([dt.datetime(1899, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)], pa.timestamp("us", "UTC"))}, True),
    ({"ts": pa.array([dt.datetime(1899, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)], pa.timestamp("ms", "UTC"))}, True),
    ({"ts": pa.array([dt.datetime(1900, 1, 1, tzinfo=UTC)], pa.timestamp("ms", "UTC"))}, False),
    ({"ts": pa.array([dt.datetime(1000, 1, 1)], pa.timestamp("ms"))}, False),  # wall clock: never converted
    ({"n": pa.array([-10**9, 1])}, False),                                    # not a date
])
def test_a_file_is_shifted_when_it_holds_old_values_and_its_footer_says_so(tmp_path, values, shifted):
    meta = _file(tmp_path, values, LEGACY)
    assert (calendar_shift_reason(meta) is not None) == shifted
    assert calendar_shift_reason(_file(tmp_path, values, {SPARK_VERSION_FOOTER_KEY: "4.3.0"})) is None
    assert calendar_shift_reason(_file(tmp_path, values, {})) is None


def test_without_statistics_a_date_column_counts_as_old(tmp_path):
    meta = _file(tmp_path, {"d": pa.array([dt.date(2020, 1, 1)])}, LEGACY, write_statistics=False)
    assert "['d']" in (calendar_shift_reason(meta) or "")


def test_int96_columns_follow_their_own_rule(tmp_path):
    values = {"ts": pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("ns"))}
    assert calendar_shift_reason(_file(tmp_path, values, {SPARK_VERSION_FOOTER_KEY: "3.0.3"},
                                       use_deprecated_int96_timestamps=True)) is not None
    assert calendar_shift_reason(_file(tmp_path, values, {SPARK_VERSION_FOOTER_KEY: "3.1.1"},
                                       use_deprecated_int96_timestamps=True)) is None
    # the same Spark 3.0 file with INT64 timestamps: dates are proleptic from 3.0.0
    assert calendar_shift_reason(_file(tmp_path, values, {SPARK_VERSION_FOOTER_KEY: "3.0.3"})) is None


def test_the_refusal_names_the_file_and_the_footer_entry(tmp_path):
    meta = _file(tmp_path, {"d": pa.array([dt.date(1500, 1, 1)])}, LEGACY)
    with pytest.raises(UnsupportedTableError, match=f"base file /t/f.parquet.*{SPARK_LEGACY_DATETIME_KEY}") as e:
        require_stored_calendar(meta, "/t/f.parquet", "rewrite")
    assert "linear" in (e.value.hint or "")


def test_bounds_of_values_spark_leaves_alone():
    days = pa.array([dt.date(1582, 10, 14), dt.date(1582, 10, 15), None])
    assert holds_unshifted_only(days).to_pylist() == [False, True, None]
    for unit, per_s in (("s", 1), ("ms", 1_000), ("us", 1_000_000), ("ns", 1_000_000_000)):
        edge = -2_208_988_800 * per_s
        ts = pa.array([edge - 1, edge], pa.int64()).cast(pa.timestamp(unit, "UTC"))
        assert holds_unshifted_only(ts).to_pylist() == [False, True], unit


def test_wall_clock_timestamps_are_never_converted(tmp_path):
    """Spark writes and reads ``timestamp_ntz`` unchanged in every mode (checked on Spark 4.3: LEGACY stored
    1000-01-01 00:00 as its proleptic micros and read it back so)."""
    old_ntz = {"t": pa.array([dt.datetime(1000, 1, 1)], pa.timestamp("us"))}
    assert calendar_shift_reason(_file(tmp_path, old_ntz, LEGACY)) is None
    for mode in ("EXCEPTION", "LEGACY"):
        refuse_unwritable_datetimes(pa.table(old_ntz), mode)
        with pytest.raises(InvalidArgumentError, match=f"datetimeRebaseModeInWrite={mode}"):
            refuse_unwritable_datetimes(pa.table({"t": pa.array([dt.datetime(1000, 1, 1)],
                                                                pa.timestamp("us", "UTC"))}), mode)
