"""The Spark DataFrame of a scan plan: only the candidate files, read by Spark's native parquet reader.

:func:`hudi_layout.api.read` plans the scan on the driver with :func:`hudi_layout.scan.plan.plan_scan`
(partition pruning + ``column_stats``) and hands the plan to :func:`dataframe_for_plan`, which reads only the
candidate base files and applies the filter to rows. File pruning is inexact by design (it only drops files
that *cannot* match), so Spark always filters the rows itself. Merge-on-Read slices with log files are merged
in Spark tasks (:func:`merged_slices_frame`, never on the driver) and unioned with the plain base files.

Per-query overhead is kept small: the DataFrame is built with few py4j round trips (the Spark schema is
converted once per table schema, the meta columns are left out of the read schema instead of being dropped
afterwards, and the path list is sent to the JVM in one piece).

**Float columns never reach the parquet row-group filter.** Spark pushes comparisons down to parquet-java,
which drops row groups by footer min/max and dictionaries without Spark's float order: writers leave NaN out of
min/max (NaN is greater than every number in Spark) and a dictionary holding -0.0 does not contain 0.0, so
``d > 5`` or ``d = 0`` lose rows. Files we write carry no float statistics; files of other writers may. So the
DataFrame exposes each top-level float / double column as ``nanvl(c, c)``: the same value bit for bit (NaN and
-0.0 included), but an expression, which Spark does not push into the scan; filters on it run on the rows.
Every other column keeps its pushdown. A struct holding a float field is rebuilt the same way (its float
fields wrapped, NULL kept NULL); list and map elements are never pushed down by Spark.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError, one_line_errors
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.options import QueryType
from hudi_layout.scan.merge import MergeSpec, iter_merge_file_slice
from hudi_layout.scan.plan import ScanPlan, merge_spec_for_plan, read_inputs, table_schema, to_predicate
from hudi_layout.skipping.to_sql import predicate_to_sql
from hudi_layout.table.fs_view import FileSlice
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.writer.base_file_writer import COMMIT_TIME_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def spark_schema(table: HudiTable, include_meta: bool, as_of: str | None = None):
    """Spark ``StructType`` of the table (meta columns first when ``include_meta``; for time travel, as of
    ``as_of``: :meth:`HudiTable.schema`), None without a schema.

    Without a usable table schema (an Avro type the converter does not take, such as arrays and maps) the
    schema of the newest base file stands in, as for :func:`dataframe_for_plan`."""
    schema = table_schema(table, as_of)
    if schema is not None:
        return _spark_schema(schema, include_meta)
    slices = table.latest_file_slices()
    if not slices:
        return None
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema

    newest = max(slices, key=lambda s: s.commit_time)
    file_schema = pq.read_schema(newest.base_file_path)
    fields = [f for f in file_schema if include_meta or f.name not in META_COLUMNS]
    return from_arrow_schema(pa.schema(fields))


@functools.lru_cache(maxsize=32)
def _spark_schema(schema: pa.Schema, include_meta: bool):
    """Arrow -> Spark conversion, once per schema (``StructType`` is not mutated by readers)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    fields = [pa.field(c, pa.string()) for c in META_COLUMNS] if include_meta else []
    return from_arrow_schema(pa.schema([*fields, *schema]))


def _guarded(column: Any, data_type: Any) -> Any | None:
    """``column`` as an expression Spark does not push into a parquet scan, with the same value; None when the
    type holds no float a pushed filter could reach (struct fields are pushed; list and map elements are not)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType, StructType

    if isinstance(data_type, (DoubleType, FloatType)):
        return F.nanvl(column, column)
    if not isinstance(data_type, StructType):
        return None
    fields = []
    changed = False
    for f in data_type.fields:
        inner = _guarded(column.getField(f.name), f.dataType)
        changed |= inner is not None
        fields.append((inner if inner is not None else column.getField(f.name)).alias(f.name))
    if not changed:
        return None
    return F.when(column.isNull(), F.lit(None).cast(data_type)).otherwise(F.struct(*fields))


def _guard_floats(df: DataFrame) -> DataFrame:
    """``df`` with every float column, and every struct holding one, rebuilt as an expression of the same value
    (``nanvl(c, c)``; NaN and -0.0 kept) under its own name, in place: Spark filters those rows itself instead
    of pushing the comparison to parquet's row-group filter (see the module docstring)."""
    from pyspark.sql import functions as F

    exprs = []
    changed = False
    for f in df.schema.fields:
        col = F.col(f"`{f.name}`")
        guarded = _guarded(col, f.dataType)
        changed |= guarded is not None
        exprs.append(guarded.alias(f.name) if guarded is not None else col)
    return df.select(*exprs) if changed else df


_GLOB_CHARACTERS = re.compile(r"([\\?*\[\]{}])")


def glob_literal(path: str) -> str:
    """``path`` as a Hadoop glob pattern that matches only itself: Spark's file sources read every path as a
    pattern, and a partition folder of a table that does not URL-encode its partition paths may hold
    ``\\ ? * [ ] { }`` (session 30's probe: ``hl.read`` of a partition ``b\\c`` or ``[ab]`` failed deep in Spark,
    ``a?b`` also read a sibling ``a:b``). Hadoop's glob takes a backslash as an escape. Spark's
    ``__globPaths__=false`` reader option is no way out: on Spark 4.3 it read some files two or three times."""
    return _GLOB_CHARACTERS.sub(r"\\\1", path)


def _read_parquet(spark: SparkSession, schema: Any, paths: Sequence[str]) -> DataFrame:
    """``spark.read.schema(schema).parquet(*paths)`` with the path list sent to the JVM in a constant number of
    py4j calls (PySpark converts a Python list element by element: ~0.1 ms per path, 0.1-0.15 s for 1000
    files). Falls back to the public call where the JVM gateway is not available (e.g. Spark Connect)."""
    reader = spark.read.schema(schema) if schema is not None else spark.read
    paths = [glob_literal(p) for p in paths]
    helpers = _jvm_helpers(spark)
    if helpers is None or not hasattr(reader, "_jreader") or any("\n" in p for p in paths):
        return reader.parquet(*paths)
    pattern, to_list, python_utils = helpers
    jpaths = python_utils.toSeq(pattern.splitAsStream("\n".join(paths)).collect(to_list))
    return reader._df(reader._jreader.parquet(jpaths))


_JVM_HELPERS: dict[int, tuple[Any, Any, tuple[Any, Any, Any]]] = {}


def _jvm_helpers(spark: SparkSession) -> tuple[Any, Any, Any] | None:
    """Per-gateway JVM objects (a newline ``Pattern``, ``Collectors.toList()``, ``PythonUtils``), looked up once:
    every ``jvm.a.b.C`` attribute walk is itself a py4j round trip."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
        return None
    gateway = getattr(sc, "_gateway", None)
    jvm = getattr(sc, "_jvm", None)
    if gateway is None or jvm is None:
        return None
    got = _JVM_HELPERS.get(id(gateway))
    if got is not None and got[0] is gateway:
        return got[2]
    helpers = (jvm.java.util.regex.Pattern.compile("\n"), jvm.java.util.stream.Collectors.toList(),
               jvm.PythonUtils)
    _JVM_HELPERS[id(gateway)] = (gateway, jvm, helpers)
    return helpers


@dataclass(frozen=True)
class SliceInput:
    """One file slice for an executor to merge: its base file (``""`` for a log-only slice) and log files
    (absolute paths, in any order)."""

    base_file: str
    log_files: tuple[str, ...]

    @classmethod
    def of(cls, sl: FileSlice, base_path: str | Path) -> SliceInput:
        return cls(sl.base_file_path, tuple(sl.log_file_paths(base_path)))

    def batches(self, spec: MergeSpec, max_rows: int = 65_536) -> Iterator[pa.RecordBatch]:
        """The merged rows as Arrow batches of at most ``max_rows``, the base file merged a chunk at a time
        (:func:`~hudi_layout.scan.merge.iter_merge_file_slice`: a read of a large slice holds its logs and one
        chunk, not the whole file); runs in an executor."""
        for table in iter_merge_file_slice(self.base_file or None, self.log_files, spec=spec):
            yield from table.to_batches(max_chunksize=max_rows)


def merged_slices_frame(spark: SparkSession, inputs: Sequence[SliceInput], spec: MergeSpec,
                        schema: StructType) -> DataFrame:
    """The merged rows of Merge-on-Read slices as a DataFrame with Spark ``schema``, merged in executors.

    The slice list and the merge spec travel with the task's function (PySpark broadcasts a large one by
    itself); the job is ``spark.range`` over slice indices, a few tasks per core, each merging its slices a
    chunk at a time (:meth:`SliceInput.batches`) and yielding Arrow batches cast to ``schema`` (the same schema
    as the native parquet read of the other slices, so the two union). ``spec.columns`` must be the names of
    ``schema``. No row reaches the driver.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    if list(spec.output_schema.names) != list(schema.names):
        raise InvalidArgumentError(f"merge columns {spec.output_schema.names} differ from the frame's "
                                   f"{schema.names}")
    target = to_arrow_schema(schema, timezone="UTC")
    n = len(inputs)
    if n == 0:
        return spark.createDataFrame([], schema)
    slices = tuple(inputs)

    @one_line_errors
    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in batches:
            for i in ids.column(0).to_pylist():
                for batch in slices[i].batches(spec, _MERGED_BATCH_ROWS):
                    yield _as_target(batch, target)

    parts = max(1, min(n, _task_count(spark)))
    return spark.range(0, n, 1, parts).mapInArrow(mapper, schema)


_MERGED_BATCH_ROWS = 65_536


def _as_target(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``target``'s types (Spark checks the batches of ``mapInArrow`` against its
    schema, nullability included)."""
    cols = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, target)]
    return pa.RecordBatch.from_arrays(cols, schema=target)


def _task_count(spark: SparkSession, per_core: int = 4) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism) * per_core)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return 8


def _row_filter(where: Any):
    """The filter Spark applies to rows (same meaning as the one used for pruning)."""
    from pyspark.sql import functions as F

    if where is None:
        return None
    if isinstance(where, str):
        return F.expr(where)
    if type(where).__name__ == "Column":
        return where
    return F.expr(predicate_to_sql(to_predicate(where)))  # tuples or a predicate tree


def dataframe_for_plan(spark: SparkSession, table: HudiTable, plan: ScanPlan, where: Any = None, *,
                       columns: Sequence[str] | None = None, include_meta: bool = False,
                       query_type: QueryType | None = None) -> DataFrame:
    """The rows of the plan's candidate slices, with the row filter applied by Spark (and, for an incremental
    plan, the commit-time filter); float columns guarded as the module docstring says.

    Slices without log files are read by Spark's parquet reader. On a snapshot or incremental read of a
    Merge-on-Read table, the slices with log files (and log-only slices) are merged in Spark tasks
    (:func:`merged_slices_frame`; :func:`~hudi_layout.scan.plan.read_inputs` splits them) and unioned with
    them; the row filter applies *after* the merge (a filter below it could drop the newer version of a row
    and let the older one through). ``read_optimized`` reads the base files only.
    ``query_type`` defaults to the plan's.
    """
    from pyspark.sql import functions as F

    arrow = plan.schema if plan.schema is not None else table_schema(table)
    incremental = plan.incremental
    # the read schema carries the meta columns only when they are wanted, the filter names one, or an
    # incremental read filters on the commit time
    read_meta = include_meta or incremental is not None or bool(set(plan.filter_columns) & set(META_COLUMNS))
    plain, merged = read_inputs(table, plan, query_type)
    files = [s.base_file_path for s in plain]
    if arrow is None and not files and not merged:
        from pyspark.sql.types import StructType

        df = spark.createDataFrame([], StructType([]))  # no schema and no data: no rows, no columns
    elif arrow is None:
        df = _read_parquet(spark, None, files)  # no usable table schema: the files' own
    else:
        schema = _spark_schema(arrow, read_meta)
        frames = [_read_parquet(spark, schema, files)] if files else []
        if merged:
            spec = merge_spec_for_plan(table, plan, schema.names)
            inputs = [SliceInput.of(s, table.base_path) for s in merged]
            frames.append(merged_slices_frame(spark, inputs, spec, schema))
        df = frames[0] if frames else spark.createDataFrame([], schema)
        for other in frames[1:]:
            df = df.union(other)
    df = _guard_floats(df)
    if incremental is not None:
        keep = F.col(COMMIT_TIME_COLUMN).isin(sorted(incremental.commit_times))
        if incremental.archived_before is not None:
            keep = keep | (F.col(COMMIT_TIME_COLUMN) < F.lit(incremental.archived_before))
        df = df.where(keep)
    row_filter = _row_filter(where)
    if row_filter is not None:  # before the meta columns go: it may name them
        df = df.where(row_filter)
    if not include_meta:
        meta = [c for c in df.columns if c in META_COLUMNS]
        if meta:
            df = df.drop(*meta)
    if columns:
        df = df.select(*[f"`{c}`" for c in columns])
    return df
