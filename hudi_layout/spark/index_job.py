"""The Spark job of ``index --read-floats``: NaN-exact float / double statistics of existing base files.

Parquet footers leave NaN out of min / max, so they give no safe bound for a float column (NaN is the
greatest value in Spark: ``x > 5`` matches it). The index builder reads footers on the driver and leaves those
columns without records; this job reads the float columns themselves, a column chunk at a time, in Spark tasks
(files binned by size, about four bins per core) with the writers' accumulator
(:func:`~hudi_layout.writer.metadata_sync.exact_float_stats`). Only the statistics come back to the driver.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from hudi_layout.metadata.mdt_writer import FileColumnStats
from hudi_layout.spark.curve_sort import balanced_bins, task_count
from hudi_layout.writer.metadata_sync import exact_float_stats

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: float types by the name a task reports them with
_FLOAT_TYPES = {str(t): t for t in (pa.float16(), pa.float32(), pa.float64())}

_RESULT = pa.schema([("partition", pa.string()), ("file_name", pa.string()), ("column", pa.string()),
                     ("type", pa.string()), ("min", pa.float64()), ("max", pa.float64()),
                     ("null_count", pa.int64()), ("value_count", pa.int64()), ("total_size", pa.int64()),
                     ("total_uncompressed_size", pa.int64())])


def read_float_stats(spark: SparkSession, files: Sequence[tuple[str, str, str, int]],
                     opts: Mapping[str, str]) -> list[FileColumnStats]:
    """Statistics of the indexed float columns of ``files`` (``(partition, file name, path, size)``)."""
    if not files:
        return []
    where = {path: (part, name) for part, name, path, _ in files}
    bins = balanced_bins([(path, size) for _, _, path, size in files], task_count(spark))
    options = dict(opts)

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in batches:
            for task in ids.column(0).to_pylist():
                rows = [st for path in bins[task] for st in exact_float_stats(path, *where[path], options)]
                if rows:
                    yield pa.RecordBatch.from_pylist(
                        [{"partition": st.partition, "file_name": st.file_name, "column": st.column,
                          "type": str(st.arrow_type), "min": st.min, "max": st.max, "null_count": st.null_count,
                          "value_count": st.value_count, "total_size": st.total_size,
                          "total_uncompressed_size": st.total_uncompressed_size} for st in rows], schema=_RESULT)

    ddl = ("`partition` string, file_name string, `column` string, type string, min double, max double, "
           "null_count long, value_count long, total_size long, total_uncompressed_size long")
    rows = spark.range(0, len(bins), 1, len(bins)).mapInArrow(mapper, ddl).toArrow()
    return [FileColumnStats(r["partition"], r["file_name"], r["column"], r["min"], r["max"], r["null_count"],
                            r["value_count"], _FLOAT_TYPES[r["type"]], r["total_size"],
                            r["total_uncompressed_size"])
            for r in rows.to_pylist()]
