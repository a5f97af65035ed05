"""Which stored dates and timestamps of a parquet file Spark reads as other values (its calendar rebase).

Spark 3 and later count dates and timestamps in the proleptic Gregorian calendar; Spark 2 (and Spark 3 writing
with ``spark.sql.parquet.datetimeRebaseModeInWrite=LEGACY``) stored them in the old hybrid Julian / Gregorian
calendar. Spark's parquet reader decides per file from its footer key-value entries (``DataSourceUtils
.getRebaseSpec`` in apache/spark):

* no ``org.apache.spark.version`` entry: the session's ``...RebaseModeInRead`` setting decides (the read
  layer handles a ``LEGACY`` session, :func:`hudi_layout.skipping.bind.legacy_calendar_unknown`);
* a version below ``3.0.0``, or an ``org.apache.spark.legacyDateTime`` entry: dates and INT64 timestamps are
  converted from the hybrid calendar on every read, whatever the session says; the same for ``INT96``
  timestamps with a version below ``3.1.0`` or an ``org.apache.spark.legacyINT96`` entry.

The conversion leaves dates from 1582-10-15 and timestamps from 1900-01-01T00:00:00Z alone in every time
zone (Spark's rebase tables end there), so a file is only read differently from its stored values - and from
the statistics of the ``column_stats`` index, and from what Arrow copies - when it also holds older values.
:func:`calendar_shift_reason` says when that is the case, from the footer alone (its row-group statistics).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.errors import InvalidArgumentError, UnsupportedTableError

#: the footer entry naming the Spark version that wrote the file (ours name the installed pyspark's)
SPARK_VERSION_FOOTER_KEY = "org.apache.spark.version"
#: the footer entry of files Spark 3 wrote with ``datetimeRebaseModeInWrite=LEGACY``
SPARK_LEGACY_DATETIME_KEY = "org.apache.spark.legacyDateTime"
#: the footer entry of files Spark 3 wrote with ``int96RebaseModeInWrite=LEGACY``
SPARK_LEGACY_INT96_KEY = "org.apache.spark.legacyINT96"

#: 1582-10-15 in days since the epoch: Spark's rebase leaves this date and later ones alone
FIRST_UNSHIFTED_DAY = -141_427
#: 1900-01-01T00:00:00Z in seconds since the epoch: the last switch of Spark's rebase tables in every zone
FIRST_UNSHIFTED_SECOND = -2_208_988_800
#: units per second of each Arrow timestamp unit, and parquet's names of those units (logical and converted types)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_PARQUET_UNITS = {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns",
                  "MILLISECONDS": "ms", "MICROSECONDS": "us", "NANOSECONDS": "ns"}


def _footer_text(footer: Mapping[bytes, bytes] | Mapping[str, str] | None, key: str) -> str | None:
    for k, v in (footer or {}).items():
        name = k.decode("utf-8", "replace") if isinstance(k, bytes) else k
        if name == key:
            return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return None


def spark_rebase_reasons(footer: Mapping[bytes, bytes] | Mapping[str, str] | None) -> tuple[str | None, str | None]:
    """Why Spark converts this file's dates and INT64 timestamps, and why its INT96 timestamps, on every read
    (each None when it does not). Spark compares version texts as strings; so does this."""
    version = _footer_text(footer, SPARK_VERSION_FOOTER_KEY)
    if version is None:
        return None, None

    def reason(min_version: str, key: str) -> str | None:
        if version < min_version:
            return f"written by Spark {version} (before {min_version}), in the hybrid Julian calendar"
        if _footer_text(footer, key) is not None:
            return f"written in the hybrid Julian calendar (its footer holds {key})"
        return None

    return reason("3.0.0", SPARK_LEGACY_DATETIME_KEY), reason("3.1.0", SPARK_LEGACY_INT96_KEY)


def _seconds_unit(column: pq.ColumnSchema) -> int | None:
    """Units per second of an INT64 timestamp column of instants (None: not one). Wall-clock timestamps
    (``isAdjustedToUTC=false``, Spark's ``timestamp_ntz``) are never converted: Spark 3.4 brought the type in
    with the proleptic calendar only (checked: ``LEGACY`` writes and reads them unchanged)."""
    logical = column.logical_type
    if logical is not None and str(logical.type) == "TIMESTAMP":
        try:
            spec = json.loads(logical.to_json())
        except (TypeError, ValueError):
            return None
        if not spec.get("isAdjustedToUTC", True):
            return None
        unit = _PARQUET_UNITS.get(str(spec.get("timeUnit", "")).upper())
        return None if unit is None else _PER_SECOND[unit]
    converted = str(column.converted_type or "")  # the old annotation: instants
    unit = _PARQUET_UNITS.get(converted.removeprefix("TIMESTAMP_")) if converted.startswith("TIMESTAMP_") else None
    return None if unit is None else _PER_SECOND[unit]


def _first_unshifted(column: pq.ColumnSchema, dates_shift: bool, int96_shifts: bool) -> int | None:
    """The smallest stored value of ``column`` Spark reads unchanged, in its physical units; ``-1 << 63`` for
    INT96 (no usable statistics: every value counts as old); None when Spark reads the column as stored."""
    physical = str(column.physical_type)
    if physical == "INT96":
        return -(1 << 63) if int96_shifts else None
    if not dates_shift:
        return None
    logical = str(column.logical_type.type) if column.logical_type is not None else ""
    if physical == "INT32" and (logical == "DATE" or str(column.converted_type or "") == "DATE"):
        return FIRST_UNSHIFTED_DAY
    unit = _seconds_unit(column) if physical == "INT64" else None
    return None if unit is None else FIRST_UNSHIFTED_SECOND * unit


def _old_value_columns(meta: pq.FileMetaData, dates: bool, int96: bool, unknown_is_old: bool) -> list[str]:
    """Paths of the ``dates`` (date / INT64 timestamp) and ``int96`` columns whose row-group statistics show a
    value before 1582-10-15 / 1900-01-01 UTC; a column without statistics (INT96 columns never have usable
    ones) counts as old when ``unknown_is_old``. All-null row groups count as new."""
    old: list[str] = []
    for i in range(meta.num_columns):
        column = meta.schema.column(i)
        first = _first_unshifted(column, dates, int96)
        if first is None:
            continue
        for rg in range(meta.num_row_groups):
            chunk = meta.row_group(rg).column(i)
            stats = chunk.statistics
            if stats is not None and stats.has_null_count and stats.null_count == chunk.num_values:
                continue  # only nulls
            known = stats is not None and stats.has_min_max and first != -(1 << 63)
            if (int(stats.min_raw) < first) if known else unknown_is_old:
                old.append(column.path)
                break
    return sorted(old)


def calendar_shift_reason(meta: pq.FileMetaData) -> str | None:
    """Why Spark reads some stored date or timestamp of this file as another value (None: Spark reads every
    one as stored): the footer makes Spark convert it from the hybrid calendar *and* a row group's statistics
    show a value before the conversion's end (or show nothing, for a column that is not all null)."""
    dates, int96 = spark_rebase_reasons(meta.metadata)
    if dates is None and int96 is None:
        return None
    old = _old_value_columns(meta, dates is not None, int96 is not None, unknown_is_old=True)
    if not old:
        return None
    why = dates if dates is not None else int96
    return f"{why}; Spark shifts its dates before 1582-10-15 / timestamps before 1900 in {old} by days on every read"


def old_datetime_columns(meta: pq.FileMetaData) -> list[str]:
    """The date and timestamp columns of a parquet file whose statistics show values before 1582-10-15 /
    1900-01-01 UTC (columns without statistics are left out): what a rewrite of the file would write."""
    return _old_value_columns(meta, True, True, unknown_is_old=False)


def calendar_applies_to(t: pa.DataType) -> bool:
    """Is ``t`` a type whose values Spark's calendar settings convert: dates and timestamps of instants, not
    wall-clock timestamps (``timestamp_ntz``: Arrow timestamps without a zone), which Spark never converts."""
    return pa.types.is_date(t) or (pa.types.is_timestamp(t) and t.tz is not None)


def holds_unshifted_only(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Per value of a date or timestamp array (statistics' minimums): True where Spark's calendar conversion
    would leave that value and every larger one alone. Nulls stay null."""
    t = values.type
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        days = pc.cast(pc.cast(values, pa.date32()), pa.int32())
        return pc.greater_equal(days, FIRST_UNSHIFTED_DAY)
    if pa.types.is_timestamp(t):
        return pc.greater_equal(pc.cast(values, pa.int64()), FIRST_UNSHIFTED_SECOND * _PER_SECOND[t.unit])
    return pa.array([True] * len(values), pa.bool_())


def require_stored_calendar(meta: pq.FileMetaData, path: str, action: str, *, reads: bool = False) -> None:
    """Refuse to ``action`` (read with Arrow, rewrite) a base file whose stored dates Spark reads as other
    values (:func:`calendar_shift_reason`): Arrow takes the stored values, so a read would answer other dates
    than Spark's and a rewrite would change them for every Spark reader. A linear clustering reads its rows
    through Spark's own parquet reader, which converts them, and writes them in the proleptic calendar; for
    ``reads``, ``hudi_layout.read`` reads such Copy-on-Write files through that reader too."""
    reason = calendar_shift_reason(meta)
    if reason is not None:
        also = "; or read it with hudi_layout.read, which reads base files through Spark" if reads else ""
        raise UnsupportedTableError(
            f"cannot {action} base file {path}: {reason}",
            hint="rewrite the table once with a linear clustering (hudi-layout cluster PATH --strategy linear "
                 f"--columns COLUMNS), which reads such files through Spark's calendar conversion{also}")


#: Spark's setting for the calendar of the dates and timestamps its parquet writer stores
DATETIME_REBASE_WRITE_SETTING = "spark.sql.parquet.datetimeRebaseModeInWrite"


def _datetime_minimums(name: str, array: pa.Array | pa.ChunkedArray) -> list[tuple[str, pa.Scalar]]:
    """(column path, minimum) of every date / timestamp leaf of ``array`` (inside structs and lists too) that
    Spark's calendar setting applies to (not wall-clock ``timestamp_ntz`` ones)."""
    t = array.type
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if calendar_applies_to(t):
        return [(name, pc.min(array))]
    if pa.types.is_struct(t):
        return [m for i in range(t.num_fields)
                for m in _datetime_minimums(f"{name}.{t.field(i).name}", array.field(i))]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _datetime_minimums(f"{name}[]", pc.list_flatten(array))
    if pa.types.is_map(t):
        return (_datetime_minimums(f"{name}.key", array.keys)
                + _datetime_minimums(f"{name}.value", array.items))
    return []


def refuse_unwritable_datetimes(table: pa.Table, mode: str) -> None:
    """Honour the session's :data:`DATETIME_REBASE_WRITE_SETTING` for the rows of one file we write. Our
    files store every date and timestamp in the proleptic Gregorian calendar (Spark 3's ``CORRECTED``, the
    default of Spark 4). ``EXCEPTION`` makes Spark refuse dates before 1582-10-15 and timestamps before
    1900-01-01T00:00:00Z; so do we. ``LEGACY`` asks for the hybrid calendar for exactly those values, which we
    do not write (the values, their statistics and every Arrow path would disagree with what Spark reads):
    refused too, rather than written in the other calendar in silence. Later values are stored alike in
    every mode, so they pass."""
    mode = (mode or "CORRECTED").strip().upper()
    if mode == "CORRECTED":
        return
    for i, field in enumerate(table.schema):
        for path, low in _datetime_minimums(field.name, table.column(i)):
            if not low.is_valid or holds_unshifted_only(pa.array([low])).to_pylist()[0]:
                continue
            what = "dates before 1582-10-15" if pa.types.is_date(low.type) else "timestamps before 1900-01-01 UTC"
            raise unwritable_datetimes_error(f"column {path!r} holds {what}", mode)


def unwritable_datetimes_error(subject: str, mode: str) -> InvalidArgumentError:
    """The refusal of :func:`refuse_unwritable_datetimes` (``subject``: what holds the old values)."""
    if mode == "LEGACY":
        return InvalidArgumentError(
            f"{subject}, and the session's {DATETIME_REBASE_WRITE_SETTING}=LEGACY asks for them in the old hybrid "
            "calendar, which hudi_layout does not write",
            hint=f"set {DATETIME_REBASE_WRITE_SETTING}=CORRECTED (Spark 4's default) for this write: Spark 3+, "
                 "Hudi and hudi-rs read the values as given")
    return InvalidArgumentError(
        f"{subject}, which the session's {DATETIME_REBASE_WRITE_SETTING}={mode} refuses (as Spark's parquet "
        "writer does)",
        hint=f"set {DATETIME_REBASE_WRITE_SETTING}=CORRECTED to store them in the proleptic Gregorian calendar "
             "that Spark 3+ reads")
