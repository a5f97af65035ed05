"""The Spark job of ``index``: statistics that only a file's data can give.

* Log files of Merge-on-Read slices hold no statistics of their own: their records are decoded and described
  with :func:`~hudi_layout.writer.metadata_sync.log_file_stats`, as Hudi's writers index a log.
* Float / double columns of base files (``--read-floats``): parquet footers leave NaN out of min / max, so
  they give no safe bound (NaN is the greatest value in Spark: ``x > 5`` matches it). Those columns are read a
  column chunk at a time with the writers' NaN-exact accumulator
  (:func:`~hudi_layout.writer.metadata_sync.exact_float_stats`).

Files are binned by size (about four bins per core) and read in Spark tasks; only the statistics come back to
the driver, which reads metadata only.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from hudi_layout.metadata.mdt_writer import FileColumnStats
from hudi_layout.spark.curve_sort import balanced_bins, task_count
from hudi_layout.writer.metadata_sync import DataFileToRead, exact_float_stats, log_file_stats

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_RESULT = pa.schema([("stats", pa.binary())])


def read_data_stats(spark: SparkSession, *, float_files: Sequence[DataFileToRead] = (),
                    log_files: Sequence[DataFileToRead] = (), types: Mapping[str, pa.DataType] | None = None,
                    opts: Mapping[str, str]) -> list[FileColumnStats]:
    """Statistics of the indexed float columns of ``float_files`` (base files) and of the indexed columns of
    ``log_files`` (``types``: the table's column types, which a log's values must have to be described)."""
    work = {f.path: ("float", f) for f in float_files} | {f.path: ("log", f) for f in log_files}
    if not work:
        return []
    bins = balanced_bins([(path, f.size) for path, (_kind, f) in work.items()], task_count(spark))
    options, table_types = dict(opts), dict(types or {})

    def describe(path: str) -> list[FileColumnStats]:
        kind, f = work[path]
        if kind == "float":
            return exact_float_stats(f.path, f.partition, f.file_name, options)
        return log_file_stats(f.path, f.partition, f.file_name, options, table_types)

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in batches:
            for task in ids.column(0).to_pylist():
                rows = [st for path in bins[task] for st in describe(path)]
                if rows:  # statistics of any type travel as one pickled list per task
                    yield pa.RecordBatch.from_pylist([{"stats": pickle.dumps(rows)}], schema=_RESULT)

    out = spark.range(0, len(bins), 1, len(bins)).mapInArrow(mapper, "stats binary").toArrow()
    return [st for blob in out.column("stats").to_pylist() for st in pickle.loads(blob)]
