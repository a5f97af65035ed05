"""Record keys and partition values as text: one rule for both write paths.

Hudi keys a record by the text of its key fields and files it under the text of its partition fields.
``hudi_layout.write`` computes that text with Spark expressions (:mod:`hudi_layout.spark.write_job`), the data
source writer with Arrow in its tasks (:func:`arrow_key_text`); both must give the same text for the same
value, or an upsert through one misses the rows the other wrote. Until session 15 they did not: the data
source wrote ``1e-300`` and ``2020-01-01 00:00:00.000000Z`` where ``hudi_layout.write`` wrote ``1.0E-300`` and
``2020-01-01 00:00:00``.

The text is Spark's ``CAST(value AS STRING)`` with one change: a timestamp (with time zone) is written as its
UTC wall-clock time whatever the session's zone (:data:`SPARK_UTC_TEXT`). Spark's cast renders it in the
session zone, so the same instant got another key and another partition folder in another session: an upsert
from a Los Angeles session duplicated the rows a UTC session had written. The UTC text is what the cast gives
in a UTC session (the zone ``hudi_layout.get_spark()`` sets), so tables written that way keep their keys.
Timestamps without a zone, dates, integers, decimals, strings and booleans are Spark's cast as it is. Floating
point values are Java's ``Double.toString`` / ``Float.toString`` (``1.0E-300``, ``-0.0``, ``NaN``), which
Arrow's formatting does not reproduce: the data source writer refuses them as key or partition fields
(:func:`refuse_unformattable`); ``hudi_layout.write`` takes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from hudi_layout.errors import InvalidArgumentError

#: Spark SQL for the UTC text of the timestamp column ``{col}``, independent of the session zone: the
#: instant's whole days and remaining seconds added to the zone-less epoch, then Spark's own
#: ``timestamp_ntz`` -> string cast (``yyyy-MM-dd HH:mm:ss`` and the fraction without trailing zeros)
SPARK_UTC_TEXT = ("CAST(TIMESTAMP_NTZ'1970-01-01 00:00:00' + make_dt_interval("
                  "CAST(floor(unix_micros({col}) / 86400000000) AS INT), 0, 0, "
                  "CAST(unix_micros({col}) - floor(unix_micros({col}) / 86400000000) * 86400000000 AS DECIMAL(18, 6))"
                  " / 1000000) AS STRING)")


def refuse_unformattable(schema: pa.Schema, fields: Sequence[str], role: str) -> None:
    """The data source writer's check, before anything is written: ``role`` (``record key`` / ``partition
    path``) fields whose text only Spark's cast gives (floating point) are refused by name."""
    for name in fields:
        if name in schema.names and pa.types.is_floating(schema.field(name).type):
            raise InvalidArgumentError(
                f"{role} field {name!r} is {schema.field(name).type}: the data source writer cannot write its "
                "values as the text hudi_layout.write gives them (Java's number formatting)",
                hint="write with hudi_layout.write(df, path, options), or key / partition by a column of another "
                     "type")


def arrow_key_text(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``values`` as the text :mod:`hudi_layout.spark.write_job` gives them (module docstring); NULL stays NULL."""
    t = values.type
    if pa.types.is_timestamp(t):
        wall = values.cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us")) if t.tz else \
            values.cast(pa.timestamp("us"))
        seconds = pc.floor_temporal(wall, unit="second")
        text = pc.strftime(seconds.cast(pa.timestamp("s")), format="%Y-%m-%d %H:%M:%S")
        fraction = pc.subtract(wall.cast(pa.int64()), seconds.cast(pa.timestamp("us")).cast(pa.int64()))
        digits = pc.utf8_rtrim(pc.utf8_lpad(fraction.cast(pa.string()), width=6, padding="0"), characters="0")
        return pc.if_else(pc.equal(fraction, 0), text, pc.binary_join_element_wise(text, digits, "."))
    if pa.types.is_floating(t):
        raise InvalidArgumentError(f"{t} values have no Arrow text equal to Spark's (refuse_unformattable)")
    return pc.cast(values, pa.string())


def stored_key_text_problem(base_file: str, record_keys: Sequence[str], partition_fields: Sequence[str],
                            partition_path: str, key_of: Callable[[pa.RecordBatch], tuple[str | None, str]]
                            ) -> str | None:
    """Does a table's stored key text follow this rule? Reads the first row of ``base_file`` (its
    ``_hoodie_record_key`` and the key / partition fields) and compares the stored key and ``partition_path``
    with ``key_of(row)`` (the key and partition path this rule gives). A description of the first difference,
    or ``None``. Earlier writes formatted zoned timestamps in their session's zone: rows written now would be
    filed again beside them, so a write refuses such a table instead."""
    import pyarrow.parquet as pq

    columns = ["_hoodie_record_key", *dict.fromkeys([*record_keys, *partition_fields])]
    pf = pq.ParquetFile(base_file)
    if pf.metadata.num_rows == 0 or not set(columns) <= set(pf.schema_arrow.names):
        return None
    first = next(pf.iter_batches(batch_size=1, columns=columns))
    key, path = key_of(first.select(columns[1:]))
    stored = first.column(0)[0].as_py()
    if pa.types.is_null(first.column(0).type) or stored is None:
        return None
    if key != stored:
        return f"record key {stored!r} where this write gives {key!r}"
    if path.strip("/") != partition_path.strip("/"):
        return f"partition folder {partition_path!r} where this write gives {path!r}"
    return None
