"""Filtered reads that open only the files that can match.

``read(spark, path, where=...)`` — the default and the fast path: plan the scan on the driver with
:func:`hudi_layout.scan.plan_scan` (partition pruning + ``column_stats``), then hand only the candidate
base files to Spark's native parquet reader and apply the filter to rows there. File pruning is inexact
by design (it only drops files that *cannot* match), so Spark always filters the rows itself.

``explain(path, where)`` returns the scan plan (files total / after partition pruning / after column
stats, candidate files, rows in them, and why each dropped file was dropped).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..scan import ScanPlan, plan_scan, table_schema, to_predicate
from ..table.hudi_table import HudiTable
from .base_file_writer import META_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def spark_schema(table: HudiTable, include_meta: bool):
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = table_schema(table)
    if schema is None:
        return None
    import pyarrow as pa

    fields = [pa.field(c, pa.string()) for c in META_COLUMNS] if include_meta else []
    return from_arrow_schema(pa.schema([*fields, *schema]))


def _row_filter(where: Any):
    """The filter Spark applies to rows (same meaning as the one used for pruning)."""
    from pyspark.sql import functions as F

    if where is None:
        return None
    if isinstance(where, str):
        return F.expr(where)
    if type(where).__name__ == "Column":
        return where
    from ..skipping.to_sql import predicate_to_sql

    return F.expr(predicate_to_sql(to_predicate(where)))  # tuples or a predicate tree


def read(spark: SparkSession, path: str, where: Any = None, *, columns: Sequence[str] | None = None,
         skipping: bool = True, include_meta: bool = False) -> DataFrame:
    """A DataFrame of the rows of the table at ``path`` matching ``where``.

    Args:
        spark: the session.
        path: table base path.
        where: SQL text (``"src_port BETWEEN 1000 AND 1999"``), a PySpark ``Column``, hudi-rs style tuples
            ``[("col", "=", 1)]``, or a :mod:`hudi_layout.skipping` predicate. ``None`` reads everything.
        columns: project these columns (default: all data columns).
        skipping: use the column_stats index (partition pruning always applies).
        include_meta: keep the five ``_hoodie_*`` meta columns.
    """
    table = HudiTable(path)
    plan = plan_scan(path, where, use_column_stats=skipping, spark=spark, table=table)
    return dataframe_for_plan(spark, table, plan, where, columns=columns, include_meta=include_meta)


def dataframe_for_plan(spark: SparkSession, table: HudiTable, plan: ScanPlan, where: Any = None, *,
                       columns: Sequence[str] | None = None, include_meta: bool = False) -> DataFrame:
    schema = spark_schema(table, include_meta=True)
    if not plan.candidate_files or schema is None:
        df = spark.createDataFrame([], schema) if schema is not None else spark.createDataFrame([], "dummy int")
    else:
        df = spark.read.schema(schema).parquet(*plan.candidate_files)
    row_filter = _row_filter(where)
    if row_filter is not None:
        df = df.where(row_filter)
    if not include_meta:
        df = df.drop(*META_COLUMNS)
    if columns:
        df = df.select(*[f"`{c}`" for c in columns])
    return df


def explain(path: str, where: Any = None, *, spark: SparkSession | None = None, skipping: bool = True) -> ScanPlan:
    """The scan plan of a filtered read (no data is read). ``print(plan.render())`` for a report."""
    return plan_scan(path, where, use_column_stats=skipping, spark=spark)
