"""The Spark half of executing a clustering plan: read each group, lay it out, write new base files.

For each group of the plan (one Spark job per group, groups run concurrently from driver threads):
read exactly the group's base files, add the curve key (or use the columns themselves for ``linear``),
range-partition into the group's ``numOutputFileGroups``, sort within each partition, and write new base
files (new file ids) through the executor-side writer, which keeps each row's ``_hoodie_commit_time``,
``_hoodie_commit_seqno``, ``_hoodie_record_key`` and ``_hoodie_partition_path`` and rewrites
``_hoodie_file_name`` (Hudi's ``preserveHoodieMetadata``). The transaction around it (resume, conflict
check, replacecommit, metrics) is :func:`hudi_layout.services.clustering.execute_plan`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout import options as cfg
from hudi_layout.clustering.metrics import GroupMetrics, PhaseTimer
from hudi_layout.clustering.plan import ClusteringGroup, ClusteringPlanSpec
from hudi_layout.clustering.qdtree import (
    BuildStats,
    QdTree,
    build_qdtree_for_files,
    cells_of_one_file,
    code_spaces_of,
    fill_leaves,
    layout_for,
    query_shapes,
    workload_boxes,
)
from hudi_layout.curves import bits_for_weights, default_bits_per_column, from_sortable_int64, parse_curve
from hudi_layout.curves.region import ColumnReduction, CurveRegions, CurveShape, encoding_family
from hudi_layout.errors import CorruptFileError, InvalidArgumentError, UnsupportedTableError
from hudi_layout.format.properties import TableProperties
from hudi_layout.options import LayoutStrategy
from hudi_layout.scan.merge import MergeSpec, merge_spec_for_table
from hudi_layout.skipping.ir import Predicate
from hudi_layout.spark.curve_key import KEY_COLUMN, CurveParams, check_key_columns, normalise_strategy
from hudi_layout.spark.curve_sort import (
    Input,
    MergedInput,
    Sketch,
    balanced_bins,
    count_rows,
    footer_summary,
    params_from_sketch,
    reduce_partitions,
    sample_files,
    sketch,
    task_count,
    write_curve_sorted,
    write_qdtree_sorted,
)
from hudi_layout.spark.range_layout import curve_layout
from hudi_layout.spark.read import SliceInput, glob_literal, merged_slices_frame, spark_schema
from hudi_layout.spark.write_job import (
    datetime_rebase_write_mode,
    run_file_writer,
    spark_to_arrow_schema,
    spark_to_arrow_schema_of,
)
from hudi_layout.table.commit_protocol import PendingWrite
from hudi_layout.table.fs_view import FileSlice
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.writer.base_file_writer import (
    COMMIT_SEQNO_COLUMN,
    COMMIT_TIME_COLUMN,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
    WriteSpec,
    WrittenFile,
)
from hudi_layout.writer.metadata_sync import stats_columns_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

PRESERVED_META = (COMMIT_TIME_COLUMN, COMMIT_SEQNO_COLUMN, RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN)
#: fewest uniformly sampled rows a group's layout is computed from (curve bounds, qdtree leaf curves and cells:
#: ~85 rows per file of a 10M-row group, so a sampled median leaves a one-file cell within ~10% of its size)
EXECUTION_SAMPLE_ROWS = 100_000


def is_merged_group(group: ClusteringGroup) -> bool:
    """A group with a Merge-on-Read slice that has log files (or no base file): its rows are merged first."""
    return any(s.log_file_names or not s.base_file_name for s in group.slices)


def _check_inputs_exist(group: ClusteringGroup, base: Path) -> None:
    for s in group.slices:
        files = ([s.base_file_path] if s.base_file_name else []) + list(s.log_file_paths(base))
        missing = [f for f in files if not Path(f).is_file()]
        if missing or not files:
            what = missing[0] if missing else "(no base file, no log file)"
            raise CorruptFileError(
                f"clustering input {what} of file group {s.partition_path}/{s.file_id} is missing",
                hint="the plan is stale; roll it back with Hudi or remove it")


@dataclass(frozen=True)
class MergeInputs:
    """What reading Merge-on-Read groups needs: the table's base path, the merge spec of the preserved columns
    and the Spark schema of the merged rows (the table schema, as the read path reads it)."""

    base_path: Path
    spec: MergeSpec
    schema: StructType

    @classmethod
    def for_table(cls, table: HudiTable, data_columns: Sequence[str]) -> MergeInputs:
        from pyspark.sql.types import StructType

        columns = [*data_columns, *PRESERVED_META]
        full = spark_schema(table, include_meta=True)
        if full is None:
            raise CorruptFileError(f"{table.base_path}: the table has no schema")
        fields = {f.name: f for f in full.fields}
        return cls(table.base_path, merge_spec_for_table(table, columns=columns),
                   StructType([fields[c] for c in columns]))

    def inputs(self, group: ClusteringGroup, *, merge_all: bool = True) -> list[Input]:
        return [MergedInput(SliceInput.of(s, self.base_path), self.spec, self._weight(s))
                if merge_all or s.log_file_names or not s.base_file_name else s.base_file_path
                for s in group.slices]

    @staticmethod
    def _weight(s: FileSlice) -> int:
        # rows of the base file (footer) plus about one row per 100 log bytes: only balances tasks
        rows = pq.read_metadata(s.base_file_path).num_rows if s.base_file_name else 0
        return max(1, rows + s.log_size_bytes // 100)


def _stored_values_reader(spark: SparkSession) -> Any:
    """Spark's parquet reader for rows a clustering rewrites: dates and timestamps as the files store them,
    whatever the session's ``spark.sql.parquet.datetimeRebaseModeInRead`` / ``int96RebaseModeInRead`` (a
    ``LEGACY`` session shifted the dates before 1582 of files without Spark's calendar marker by days, and the
    rewrite stored them shifted; files Spark < 3 wrote in the old calendar are still converted, as their
    footers say). The Arrow paths read stored values anyway (docs/read-semantics.md)."""
    return spark.read.option("datetimeRebaseMode", "CORRECTED").option("int96RebaseMode", "CORRECTED")


def _group_frame(spark: SparkSession, group: ClusteringGroup, data_columns: Sequence[str], base: Path,
                 merge: MergeInputs | None, table_schema: pa.Schema | None = None,
                 schema_only: bool = False) -> DataFrame:
    """The group's rows as Spark reads them (data columns + the meta columns clustering preserves). Spark
    lists every input file (no job); with ``schema_only`` only the first: the curve and qdtree paths use only
    the schema of this frame. A group with Merge-on-Read slices is read merged (every slice through the merge,
    so all rows share the table schema).

    With the table's schema, files are read with it: files written before a column was added give nulls, a
    widened column comes back widened (schema evolution), whatever file Spark would infer a schema from."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    _check_inputs_exist(group, base)
    if merge is not None and is_merged_group(group):
        inputs = [SliceInput.of(s, base) for s in group.slices]
        return merged_slices_frame(spark, inputs, merge.spec, merge.schema)
    paths = [s.base_file_path for s in group.slices]
    if schema_only:  # Spark need not list and stat every input file (~0.5 s for 1,000 files)
        paths = paths[:1]
    if table_schema is not None:
        missing = [c for c in PRESERVED_META if c not in pq.read_schema(paths[0]).names]
        read = pa.schema([*[pa.field(c, pa.string()) for c in PRESERVED_META],
                          *[table_schema.field(c) for c in data_columns]])
        df = _stored_values_reader(spark).schema(from_arrow_schema(read)).parquet(*map(glob_literal, paths))
    else:
        df = _stored_values_reader(spark).parquet(*map(glob_literal, paths))
        missing = [c for c in PRESERVED_META if c not in df.columns]
    if missing:
        raise UnsupportedTableError(
            f"base files of partition {group.partition_path!r} lack Hudi meta columns {missing} "
            "(hoodie.populate.meta.fields=false); hudi_layout cannot preserve record metadata for them")
    return df.select(*[F.col(f"`{c}`") for c in data_columns], *[F.col(c) for c in PRESERVED_META])


def curve_regions(params: CurveParams, arrow: pa.Schema, written: Sequence[WrittenFile]) -> CurveRegions | None:
    """What the commit records for curve-region pruning: the curve of ``params`` and each file's key range."""
    if not params.key_is_long:
        return None
    n = len(params.columns)
    if params.ranges is not None:
        reductions = tuple(ColumnReduction.from_range(r) for r in params.ranges)
    elif params.bounds is not None:
        reductions = tuple(ColumnReduction.from_bounds(b) for b in params.bounds)
    else:
        reductions = tuple(ColumnReduction("top") for _ in range(n))
    files = {}
    for w in written:
        if w.key_range is None:
            return None  # a file without its range: record nothing rather than a partial picture
        lo, hi = from_sortable_int64(np.array(w.key_range, np.int64))
        files[w.file_name] = (int(lo), int(hi))
    bits = params.bits if isinstance(params.bits, tuple) else (int(params.bits),) * n
    return CurveRegions(columns=tuple(params.columns),
                        types=tuple(encoding_family(arrow.field(c).type) for c in params.columns),
                        shape=CurveShape(parse_curve(params.curve), bits), reductions=reductions, files=files)


def curve_bits(plan: ClusteringPlanSpec, cols: Sequence[str]) -> int | tuple[int, ...]:
    """Bits per column of the curve: equal, or from the plan's column weights."""
    if plan.options.weights_from_workload:
        raise InvalidArgumentError(
            f"the clustering plan asks for column weights from the workload ({cfg.CURVE_COLUMN_WEIGHTS.key}="
            f"{cfg.WEIGHTS_FROM_WORKLOAD}) but records none", hint="reschedule it with hudi_layout.cluster")
    weights = plan.options.weights_for(cols)
    return default_bits_per_column(len(cols)) if weights is None else bits_for_weights(weights)


def _write_qdtree_group(spark: SparkSession, df: DataFrame, group: ClusteringGroup, plan: ClusteringPlanSpec,
                        spec: WriteSpec, paths: list[Input], file_rows: list[int], parts: int, timer: PhaseTimer,
                        types: Sequence[pa.DataType] | None = None, merged: bool = False) -> list[WrittenFile]:
    """A group of a ``qdtree`` plan: the plan's tree, its leaves cut into one-file cells along the workload's
    shapes (when the plan's tree records them) and each leaf's curve, both from a sample of the group. A merged
    (Merge-on-Read) group is sketched in full: its row count comes from the merged rows, not from footers."""
    cols = list(plan.sort_columns)
    if not plan.options.qdtree_cuts:
        raise InvalidArgumentError(
            f"the clustering plan has {cfg.LAYOUT_STRATEGY.key}=qdtree but no tree ({cfg.QDTREE_CUTS.key})",
            hint="schedule qdtree clusterings with hudi_layout.cluster(..., strategy='qdtree', workload=...)")
    tree = QdTree.from_json(plan.options.qdtree_cuts)
    arrow = spark_to_arrow_schema(df.select(*[f"`{c}`" for c in cols]))
    if list(tree.columns) != cols or tree.code_spaces != code_spaces_of(arrow, cols):
        raise UnsupportedTableError(
            f"the plan's qdtree cuts columns {list(tree.columns)} ({', '.join(tree.code_spaces)}); the table has "
            f"{cols} ({', '.join(code_spaces_of(arrow, cols))})", hint="reschedule the clustering")
    rows = sum(file_rows)
    bins = balanced_bins(list(zip(paths, file_rows)), task_count(spark))
    n = max(1, group.num_output_file_groups)
    with timer.phase("sketch"):
        cached = None if merged else _tree_samples.pop((frozenset(map(str, paths)), tuple(cols)), None)
        sk = cached or sketch(spark, bins, cols, rows, max(EXECUTION_SAMPLE_ROWS, plan.options.curve_sample_size),
                              types=types)
        one_file = cells_of_one_file(tree, n)
        tree = fill_leaves(tree, list(sk.sample), n)
        layout = layout_for(tree, list(sk.sample), weights=plan.options.weights_for(cols), one_file_cells=one_file)
    spec = replace(spec, max_rows_per_file=max(1, -(-(sk.rows if merged else rows) // n)))
    with timer.phase("write"):
        return write_qdtree_sorted(spark, bins, df.schema, layout, sk, parts, spec, spec.max_rows_per_file)


def _layout_kind(plan: ClusteringPlanSpec) -> LayoutStrategy:
    """The plan's layout (``linear`` without sort columns)."""
    return normalise_strategy(plan.options.layout_strategy) if plan.sort_columns else LayoutStrategy.LINEAR


def _is_arrow_curve(plan: ClusteringPlanSpec) -> bool:
    """Does the plan lay its groups out along a 64-bit curve key (the Arrow path of the curve sort)?"""
    cols = list(plan.sort_columns)
    if not (_layout_kind(plan).is_curve and len(cols) > 1):
        return False
    bits = curve_bits(plan, cols)
    return (sum(bits) if isinstance(bits, tuple) else len(cols) * bits) <= 64


def _takes_arrow_path(plan: ClusteringPlanSpec) -> bool:
    """Curve and qdtree groups are read, shuffled and written by pyarrow in the tasks: Spark's frame of such
    a group serves only for its schema."""
    return _layout_kind(plan).needs_workload or _is_arrow_curve(plan)


def _write_group(spark: SparkSession, df: DataFrame, group: ClusteringGroup, plan: ClusteringPlanSpec,
                 spec: WriteSpec, opts: Mapping[str, str], merge: MergeInputs | None = None,
                 timer: PhaseTimer | None = None) -> tuple[list[WrittenFile], CurveRegions | None]:
    """Lay the group out and write it as ``numOutputFileGroups`` files; also returns the curve regions to
    record for curve-region pruning (``None`` when the layout is not a 64-bit curve).

    The rows are range-partitioned into a few partitions per core (not one per output file: per-task
    overhead dominated that) and sorted within each; the writer cuts each sorted partition into files of
    ``rows_per_file`` rows, so files are still contiguous ranges of the layout order. Curve and qdtree layouts
    take the Arrow path of :mod:`hudi_layout.spark.curve_sort`; linear (and no sort columns) use Spark's own
    range partitioning and sort. Merge-on-Read groups are read merged: every row count comes from a job over
    the merged rows (log blocks add and delete rows) and the curve ranges from all rows, not from footers.
    """
    timer = timer or PhaseTimer()
    n = max(1, group.num_output_file_groups)
    merged = merge is not None and is_merged_group(group)
    paths: list[Input] = merge.inputs(group) if merge is not None and merged else \
        [s.base_file_path for s in group.slices]
    cols = list(plan.sort_columns)
    kind = _layout_kind(plan)
    qdtree = kind.needs_workload
    bits = curve_bits(plan, cols) if kind.is_curve else 64
    curve = _is_arrow_curve(plan)
    method = plan.options.curve_build_method.strip().lower()
    types = None
    if curve or qdtree:
        check_key_columns(df, cols)
        arrow = spark_to_arrow_schema(df)
        types = [arrow.field(c).type for c in cols]
    with timer.phase("footers"):  # the footers' column ranges serve only the direct method
        footers = footer_summary(paths, cols if curve and method == "direct" else (), types)
    file_rows = list(footers.rows)
    rows = sum(file_rows)
    parts = reduce_partitions(n, group.total_bytes, spark, cfg.SORT_TASK_MAX_BYTES.get(opts))
    if qdtree:
        return _write_qdtree_group(spark, df, group, plan, spec, paths, file_rows, parts, timer, types,
                                   merged), None
    if merged and not curve:
        rows = count_rows(spark, balanced_bins(list(zip(paths, file_rows)), task_count(spark)), RECORD_KEY_COLUMN)
    spec = replace(spec, max_rows_per_file=max(1, -(-rows // n)))
    if curve:
        bins = balanced_bins(list(zip(paths, file_rows)), task_count(spark))
        key_spec = replace(spec, layout_key_column=KEY_COLUMN)
        if merged:  # no footer knows the merged rows: sketch them all (exact ranges and row count)
            sample_rows = max(EXECUTION_SAMPLE_ROWS, plan.options.curve_sample_size)
            with timer.phase("sketch"):
                sk = sketch(spark, bins, cols, rows, sample_rows, types=types)
            key_spec = replace(key_spec, max_rows_per_file=max(1, -(-sk.rows // n)))
            params = params_from_sketch(sk, cols, kind, method, bits)
            with timer.phase("write"):
                written = write_curve_sorted(spark, bins, df.schema, params, sk, parts, key_spec)
            return written, curve_regions(params, spark_to_arrow_schema_of(df.schema), written)
        if method == "direct":
            # min/max from the footers of every file; the sample only places the range-partition bounds
            # (load balance, not layout), so a random tenth-or-so of the files is enough
            sample_rows = EXECUTION_SAMPLE_ROWS
            sk_paths, sk_rows = sample_files(paths, file_rows, 10 * sample_rows)
            sk_bins = balanced_bins(list(zip(sk_paths, sk_rows)), task_count(spark))
        else:  # Hudi's sample method: a uniform row sample of the whole group
            sample_rows = max(EXECUTION_SAMPLE_ROWS, plan.options.curve_sample_size)
            sk_bins, sk_rows = bins, file_rows
        with timer.phase("sketch"):
            sk = sketch(spark, sk_bins, cols, sum(sk_rows), sample_rows, types=types)
        if method == "direct":
            sk = replace(sk, ranges=tuple(f if f is not None else s for f, s in zip(footers.ranges, sk.ranges)))
        params = params_from_sketch(sk, cols, kind, method, bits)
        with timer.phase("write"):
            written = write_curve_sorted(spark, bins, df.schema, params, sk, parts, key_spec)
        return written, curve_regions(params, spark_to_arrow_schema_of(df.schema), written)
    if not cols:
        frame = df.repartition(parts) if parts > 1 else df.coalesce(1)
    elif kind == LayoutStrategy.LINEAR or len(cols) == 1:
        quoted = [f"`{c}`" for c in cols]
        frame = df.repartitionByRange(parts, *quoted).sortWithinPartitions(*quoted)
    else:  # a curve key wider than 64 bits: Spark range-partitions the byte keys
        frame = curve_layout(df, cols, parts, strategy=plan.options.layout_strategy,
                             method=plan.options.curve_build_method, sample_size=plan.options.curve_sample_size,
                             row_count=rows)
    with timer.phase("write"):
        return run_file_writer(frame, spec), None


def run_groups(spark: SparkSession, base: Path, props: TableProperties, opts: Mapping[str, str], pending: PendingWrite,
                plan: ClusteringPlanSpec, data_columns: Sequence[str], merge: MergeInputs | None = None,
                table_schema: pa.Schema | None = None
                ) -> tuple[list[GroupMetrics], list[WrittenFile], list[CurveRegions]]:
    """Execute every group (concurrently); returns per-group metrics, the files written and the curve regions
    to record. ``merge`` (Merge-on-Read tables) reads slices with log files merged."""
    def run(group: ClusteringGroup) -> tuple[GroupMetrics, list[WrittenFile], CurveRegions | None]:
        t0 = time.time()
        timer = PhaseTimer()
        with timer.phase("frame"):
            df = _group_frame(spark, group, data_columns, base, merge, table_schema,
                              schema_only=_takes_arrow_path(plan))
        schema = spark_to_arrow_schema(df.select(*[f"`{c}`" for c in data_columns]))
        spark.sparkContext.setJobDescription(
            f"hudi_layout clustering {pending.instant_time} partition {group.partition_path or '(root)'}")
        spec = WriteSpec(
            base_path=str(base), instant_time=pending.instant_time, data_columns=tuple(data_columns),
            max_file_size=cfg.MAX_FILE_SIZE.get(opts), compression=cfg.PARQUET_CODEC.get(opts),
            compression_min_saving=cfg.PARQUET_MIN_SAVING.get(opts),
            stats_columns=stats_columns_for(props, opts, schema), preserve_commit_metadata=True,
            gate=pending.file_gate, datetime_rebase_mode=datetime_rebase_write_mode(spark))
        written, regions = _write_group(spark, df, group, plan, spec, opts, merge, timer)
        return GroupMetrics(group.partition_path, len(group.slices), len(written), group.total_bytes,
                            sum(w.file_size for w in written), sum(w.num_records for w in written),
                            time.time() - t0, dict(timer.seconds)), written, regions

    parallelism = max(1, min(len(plan.groups), cfg.CLUSTERING_MAX_PARALLELISM.get(opts)))
    with ThreadPoolExecutor(max_workers=parallelism) as pool:
        results = list(pool.map(run, plan.groups))
    return ([r[0] for r in results], [w for r in results for w in r[1]],
            [r[2] for r in results if r[2] is not None])


def data_schema(spark: SparkSession, plan: ClusteringPlanSpec, data_columns: Sequence[str],
                merge: MergeInputs | None = None) -> pa.Schema:
    """Arrow schema of the data columns as Spark reads the plan's first input file (the commit's schema); of
    the merged rows when the plan has Merge-on-Read groups."""
    if merge is not None and any(is_merged_group(g) for g in plan.groups):
        full = spark_to_arrow_schema_of(merge.schema)
        return pa.schema([full.field(c) for c in data_columns])
    return spark_to_arrow_schema(spark.read.parquet(glob_literal(plan.groups[0].slices[0].base_file_path)).select(
        *[f"`{c}`" for c in data_columns]))


#: the last tree-building sample, keyed by (files, columns): a clustering scheduled and executed at once
#: (``cluster``) lays out the same files, so its single group reuses it instead of sampling again
_tree_samples: dict[tuple[frozenset[str], tuple[str, ...]], Sketch] = {}


def build_workload_tree(spark: SparkSession, base_files: Sequence[str], columns: Sequence[str],
                        predicates: Sequence[tuple[Predicate, float]], schema: pa.Schema, *, output_files: int,
                        sample_rows: int, min_leaf_files: float, lookahead: int,
                        leaf_cells: bool, shape_weight: float = 0.0) -> tuple[QdTree, BuildStats]:
    """Choose the qdtree cuts for ``columns`` on a sample of ``base_files`` (one Spark job: the curve sort's
    sketch, which also keeps rows of each workload box), aiming at ``output_files`` files, no leaf below
    ``min_leaf_files`` of a file, ``lookahead`` moves tried per upper node. The cuts are chosen on
    ``sample_rows`` uniform rows (and the boxes' rows); the sketch keeps at least 100,000 uniform rows for the
    execution (leaf curves and cells). ``leaf_cells``: record the workload's query shapes in the tree, so the
    execution cuts each leaf into one-file cells along them (:func:`~hudi_layout.clustering.qdtree.fill_leaves`),
    and let the cut search count them too, with ``shape_weight`` (``build_qdtree``)."""
    cols = list(columns)
    files = [f for f in base_files if f]  # a Merge-on-Read slice may have no base file yet
    types = [schema.field(c).type for c in cols]
    footers = footer_summary(files)
    bins: list[list[Input]] = balanced_bins(list(zip(files, footers.rows)), task_count(spark))
    boxes = workload_boxes(predicates, cols, schema)
    sk = sketch(spark, bins, cols, sum(footers.rows), max(EXECUTION_SAMPLE_ROWS, sample_rows), types=types,
                boxes=boxes, workload_rows=sample_rows)
    _tree_samples.clear()
    _tree_samples[(frozenset(files), tuple(cols))] = sk
    codes, weights = sk.workload if sk.workload is not None else (sk.sample, None)
    shapes = query_shapes(boxes, sk.sample) if leaf_cells else ()
    tree, stats = build_qdtree_for_files(list(codes), cols, code_spaces_of(schema, cols), boxes,
                                         output_files=output_files, min_leaf_files=min_leaf_files,
                                         lookahead=lookahead, row_weights=weights, shapes=shapes,
                                         shape_weight=shape_weight if leaf_cells else 0.0)
    return (tree.with_shapes(shapes) if leaf_cells else tree), stats
