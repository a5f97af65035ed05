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
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.clustering.metrics import GroupMetrics, PhaseTimer
from hudi_layout.clustering.plan import ClusteringGroup, ClusteringPlanSpec
from hudi_layout.clustering.qdtree import (
    BuildStats,
    QdTree,
    build_qdtree,
    code_spaces_of,
    layout_for,
    workload_boxes,
)
from hudi_layout.curves import bits_for_weights, default_bits_per_column, from_sortable_int64, parse_curve
from hudi_layout.curves.region import ColumnReduction, CurveRegions, CurveShape, encoding_family
from hudi_layout.errors import CorruptFileError, InvalidArgumentError, UnsupportedTableError
from hudi_layout.format.properties import TableProperties
from hudi_layout.options import LayoutStrategy
from hudi_layout.skipping.ir import Predicate
from hudi_layout.spark.curve_key import KEY_COLUMN, CurveParams, check_key_columns, normalise_strategy
from hudi_layout.spark.curve_sort import (
    Sketch,
    balanced_bins,
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
from hudi_layout.spark.write_job import run_file_writer, spark_to_arrow_schema, spark_to_arrow_schema_of
from hudi_layout.table.commit_protocol import PendingWrite
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

PRESERVED_META = (COMMIT_TIME_COLUMN, COMMIT_SEQNO_COLUMN, RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN)


def _group_frame(spark: SparkSession, group: ClusteringGroup, data_columns: Sequence[str]) -> DataFrame:
    """The group's rows as Spark reads them (data columns + the meta columns clustering preserves). Spark
    lists every input file (cheap, no job); the curve path uses only the schema of this frame."""
    from pyspark.sql import functions as F

    paths = []
    for s in group.slices:
        if not s.base_file_path or not Path(s.base_file_path).is_file():
            raise CorruptFileError(
                f"clustering input {s.partition_path}/{s.base_file_name or '(no base file)'} of file group "
                f"{s.file_id} is missing", hint="the plan is stale; roll it back with Hudi or remove it")
        if s.log_file_names:
            raise UnsupportedTableError(
                f"file group {s.file_id} has log files; clustering MERGE_ON_READ slices is not supported")
        paths.append(s.base_file_path)
    df = spark.read.parquet(*paths)
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
                        spec: WriteSpec, opts: Mapping[str, str], paths: list[str], file_rows: list[int],
                        parts: int, timer: PhaseTimer) -> list[WrittenFile]:
    """A group of a ``qdtree`` plan: the plan's tree, each leaf's curve from a sample of the group."""
    cols = list(plan.sort_columns)
    if not plan.options.qdtree_cuts:
        raise InvalidArgumentError(
            f"the clustering plan has {cfg.LAYOUT_STRATEGY.key}=qdtree but no tree ({cfg.QDTREE_CUTS.key})",
            hint="schedule qdtree clusterings with hudi_layout.cluster(..., strategy='qdtree', workload=...)")
    tree = QdTree.from_json(plan.options.qdtree_cuts)
    check_key_columns(df, cols)
    arrow = spark_to_arrow_schema(df.select(*[f"`{c}`" for c in cols]))
    if list(tree.columns) != cols or tree.code_spaces != code_spaces_of(arrow, cols):
        raise UnsupportedTableError(
            f"the plan's qdtree cuts columns {list(tree.columns)} ({', '.join(tree.code_spaces)}); the table has "
            f"{cols} ({', '.join(code_spaces_of(arrow, cols))})", hint="reschedule the clustering")
    rows = sum(file_rows)
    bins = balanced_bins(list(zip(paths, file_rows)), task_count(spark))
    with timer.phase("sketch"):
        sk = _tree_samples.pop((frozenset(paths), tuple(cols)), None) or sketch(
            spark, bins, cols, rows, max(100_000, plan.options.curve_sample_size))
        layout = layout_for(tree, list(sk.sample), weights=plan.options.weights_for(cols))
    with timer.phase("write"):
        return write_qdtree_sorted(spark, bins, df.schema, layout, sk, parts, spec, spec.max_rows_per_file)


def _write_group(spark: SparkSession, df: DataFrame, group: ClusteringGroup, plan: ClusteringPlanSpec,
                 spec: WriteSpec, opts: Mapping[str, str], timer: PhaseTimer | None = None
                 ) -> tuple[list[WrittenFile], CurveRegions | None]:
    """Lay the group out and write it as ``numOutputFileGroups`` files.

    The rows are range-partitioned into a few partitions per core (not one per output file: per-task
    overhead dominated that) and sorted within each; the writer cuts each sorted partition into files of
    ``rows_per_file`` rows, so files are still contiguous ranges of the layout order. Curve layouts take
    the Arrow path of :mod:`hudi_layout.spark.curve_sort`; linear (and no sort columns) use Spark's own
    range partitioning and sort.
    """
    timer = timer or PhaseTimer()
    n = max(1, group.num_output_file_groups)
    paths = [s.base_file_path for s in group.slices]
    cols = list(plan.sort_columns)
    kind = normalise_strategy(plan.options.layout_strategy) if cols else LayoutStrategy.LINEAR
    qdtree = kind.needs_workload
    bits = curve_bits(plan, cols) if cols and kind.is_curve else 64
    curve = bool(cols) and kind.is_curve and len(cols) > 1 and (
        sum(bits) if isinstance(bits, tuple) else len(cols) * bits) <= 64
    if curve:
        check_key_columns(df, cols)
    with timer.phase("footers"):
        footers = footer_summary(paths, cols if curve else ())
    file_rows = list(footers.rows)
    rows = sum(file_rows)
    spec = replace(spec, max_rows_per_file=max(1, -(-rows // n)))
    parts = reduce_partitions(n, group.total_bytes, spark, cfg.SORT_TASK_MAX_BYTES.get(opts))
    if qdtree:
        return _write_qdtree_group(spark, df, group, plan, spec, opts, paths, file_rows, parts, timer), None
    if curve:
        method = plan.options.curve_build_method.strip().lower()
        bins = balanced_bins(list(zip(paths, file_rows)), task_count(spark))
        if method == "direct":
            # min/max from the footers of every file; the sample only places the range-partition bounds
            # (load balance, not layout), so a random tenth-or-so of the files is enough
            sample_rows = 100_000
            sk_paths, sk_rows = sample_files(paths, file_rows, 10 * sample_rows)
            sk_bins = balanced_bins(list(zip(sk_paths, sk_rows)), task_count(spark))
        else:  # Hudi's sample method: a uniform row sample of the whole group
            sample_rows = max(100_000, plan.options.curve_sample_size)
            sk_bins, sk_rows = bins, file_rows
        with timer.phase("sketch"):
            sk = sketch(spark, sk_bins, cols, sum(sk_rows), sample_rows)
        if method == "direct":
            sk = replace(sk, ranges=tuple(f if f is not None else s for f, s in zip(footers.ranges, sk.ranges)))
        params = params_from_sketch(sk, cols, kind, method, bits)
        with timer.phase("write"):
            written = write_curve_sorted(spark, bins, df.schema, params, sk, parts,
                                         replace(spec, layout_key_column=KEY_COLUMN))
        return written, curve_regions(params, spark_to_arrow_schema_of(df.schema), written)
    if not cols:
        frame = df.repartition(parts) if parts > 1 else df.coalesce(1)
    elif kind == "linear" or len(cols) == 1:
        quoted = [f"`{c}`" for c in cols]
        frame = df.repartitionByRange(parts, *quoted).sortWithinPartitions(*quoted)
    else:  # a curve key wider than 64 bits: Spark range-partitions the byte keys
        frame = curve_layout(df, cols, parts, strategy=plan.options.layout_strategy,
                             method=plan.options.curve_build_method, sample_size=plan.options.curve_sample_size,
                             row_count=rows)
    with timer.phase("write"):
        return run_file_writer(frame, spec), None


def run_groups(spark: SparkSession, base: Path, props: TableProperties, opts: Mapping[str, str], pending: PendingWrite,
                plan: ClusteringPlanSpec, data_columns: Sequence[str]
                ) -> tuple[list[GroupMetrics], list[WrittenFile], list[CurveRegions]]:
    """Run every group; returns per-group metrics, the files written and the curve regions to record."""
    def run(group: ClusteringGroup) -> tuple[GroupMetrics, list[WrittenFile], CurveRegions | None]:
        t0 = time.time()
        timer = PhaseTimer()
        with timer.phase("frame"):
            df = _group_frame(spark, group, data_columns)
        schema = spark_to_arrow_schema(df.select(*[f"`{c}`" for c in data_columns]))
        spark.sparkContext.setJobDescription(
            f"hudi_layout clustering {pending.instant_time} partition {group.partition_path or '(root)'}")
        spec = WriteSpec(
            base_path=str(base), instant_time=pending.instant_time, data_columns=tuple(data_columns),
            max_file_size=cfg.MAX_FILE_SIZE.get(opts), compression=cfg.PARQUET_CODEC.get(opts),
            stats_columns=stats_columns_for(props, opts, schema), preserve_commit_metadata=True)
        written, regions = _write_group(spark, df, group, plan, spec, opts, timer)
        return GroupMetrics(group.partition_path, len(group.slices), len(written), group.total_bytes,
                            sum(w.file_size for w in written), sum(w.num_records for w in written),
                            time.time() - t0, dict(timer.seconds)), written, regions

    parallelism = max(1, min(len(plan.groups), int(opts.get("hoodie.clustering.max.parallelism", 15))))
    with ThreadPoolExecutor(max_workers=parallelism) as pool:
        results = list(pool.map(run, plan.groups))
    return ([r[0] for r in results], [w for r in results for w in r[1]],
            [r[2] for r in results if r[2] is not None])


def data_schema(spark: SparkSession, plan: ClusteringPlanSpec, data_columns: Sequence[str]) -> pa.Schema:
    """Arrow schema of the data columns as Spark reads the plan's first input file (the commit's schema)."""
    return spark_to_arrow_schema(spark.read.parquet(plan.groups[0].slices[0].base_file_path).select(
        *[f"`{c}`" for c in data_columns]))


#: the last tree-building sample, keyed by (files, columns): a clustering scheduled and executed at once
#: (``cluster``) lays out the same files, so its single group reuses it instead of sampling again
_tree_samples: dict[tuple[frozenset[str], tuple[str, ...]], Sketch] = {}


def build_workload_tree(spark: SparkSession, base_files: Sequence[str], columns: Sequence[str],
                        predicates: Sequence[tuple[Predicate, float]], schema: pa.Schema, *, output_files: int,
                        sample_rows: int, min_leaf_files: float = 0.5) -> tuple[QdTree, BuildStats]:
    """Choose the qdtree cuts for ``columns`` on a sample of ``base_files`` (one Spark job: the curve sort's
    sketch), aiming at ``output_files`` files, no leaf below ``min_leaf_files`` of a file."""
    cols = list(columns)
    footers = footer_summary(list(base_files))
    bins = balanced_bins(list(zip(base_files, footers.rows)), task_count(spark))
    sk = sketch(spark, bins, cols, sum(footers.rows), sample_rows)
    _tree_samples.clear()
    _tree_samples[(frozenset(base_files), tuple(cols))] = sk
    boxes = workload_boxes(predicates, cols, schema)
    sampled = sk.sample[0].size if sk.sample else 0
    per_file = sampled / max(1, output_files)
    return build_qdtree(list(sk.sample), cols, code_spaces_of(schema, cols), boxes, rows_per_file=per_file,
                        min_leaf_rows=max(1.0, min_leaf_files * per_file),
                        max_leaves=max(1, int(output_files / max(min_leaf_files, 1e-3))))
