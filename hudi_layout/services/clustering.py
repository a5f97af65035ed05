"""Clustering as a transaction: schedule a plan, execute it (or plans left pending before), commit, metrics.

:func:`execute_plan` takes ownership of a pending plan (scheduled by us or by Hudi), runs the Spark job of
:mod:`hudi_layout.spark.clustering_job`, and completes one replacecommit listing the new files and every
replaced file id, after the metadata table's deltacommit for the same instant. A failure (or a kill) leaves
the clustering inflight; the next run rolls its files back and executes the same plan again.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.clustering.metrics import ClusteringMetrics, GroupMetrics, PhaseTimer
from hudi_layout.clustering.plan import ClusteringPlanSpec
from hudi_layout.clustering.schedule import (
    load_pending_plans,
    prepare_clustering_options,
    schedule_clustering,
    table_arrow_schema,
)
from hudi_layout.clustering.workload import Workload, as_workload
from hudi_layout.curves.region import CURVE_REGIONS_KEY, encode_regions
from hudi_layout.errors import CommitConflictError, HudiLayoutError, InvalidArgumentError
from hudi_layout.format.capabilities import Action, require, require_metadata_maintainable
from hudi_layout.format.commit_metadata import replace_commit_metadata_bytes
from hudi_layout.format.properties import load_properties
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS, update_data_table_properties
from hudi_layout.options import CurveBuildMethod, LayoutStrategy, parse_layout_strategy
from hudi_layout.spark.clustering_job import build_workload_tree, data_schema, run_groups
from hudi_layout.table.commit_protocol import PendingWrite, complete_write, resume_clustering, rollback_failed_writes
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock, writer_is_alive
from hudi_layout.writer.metadata_sync import compact_metadata_if_due, mdt_exists, metadata_update_hook
from hudi_layout.writer.transaction import commit_metadata_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

def execute_pending(spark: SparkSession, path: str, options: Mapping[str, Any] | None = None,
                    *, only: str | None = None) -> list[ClusteringMetrics]:
    """Execute every pending clustering plan whose executor is not alive (oldest first)."""
    base = Path(path).absolute()
    drop_metadata_table_if_disabled(str(base), cfg.resolve_options(options))
    rollback_failed_writes(base, hooks=COMMIT_HOOKS)  # inflight clusterings of dead executors go back to requested
    done = []
    for instant_time, plan in load_pending_plans(base, options):
        if only is not None and instant_time != only:
            continue
        if writer_is_alive(base, instant_time):
            continue
        log.info("executing clustering %s (%d groups)", instant_time, len(plan.groups))
        done.append(execute_plan(spark, str(base), instant_time, plan, options))
    return done


def resolve_workload(path: str, workload: Any, opts: Mapping[str, str]) -> Workload | None:
    """The workload of a clustering: the argument (predicates, a :class:`Workload`, a file path, or ``"log"``
    for the table's query log), else the ``hudi_layout.layout.workload`` option; ``None`` when neither."""
    value = workload if workload is not None else (cfg.WORKLOAD.get(opts).strip() or None)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == cfg.WORKLOAD_FROM_LOG:
        return Workload.from_log(path)
    return as_workload(value)


def prepare_layout_options(spark: SparkSession, path: str, opts: Mapping[str, str], *, columns: Sequence[str] | str,
                           strategy: LayoutStrategy, method: str | CurveBuildMethod, workload: Any,
                           include_all_files: bool) -> dict[str, str]:
    """Options with what a plan must record resolved from the workload: the qdtree's cuts (a Spark job over
    a sample of the table) and column weights asked to come from the workload. Validates first."""
    out = dict(opts)
    table = HudiTable(path)
    checked = prepare_clustering_options(table, out, columns=columns, strategy=strategy, method=method,
                                         include_all_files=include_all_files, resolve=False)
    wants_weights = checked.weights_from_workload or (checked.is_qdtree and not checked.column_weights)
    if not (checked.is_qdtree or checked.weights_from_workload):
        return out
    found = resolve_workload(path, workload, out)
    if found is None:
        if checked.is_qdtree:
            raise InvalidArgumentError(
                "strategy qdtree lays the table out for a workload, and none was given",
                hint=f"pass workload=[...] / --workload FILE, or set {cfg.WORKLOAD.key} (a file, or 'log')")
        raise InvalidArgumentError(
            f"{cfg.CURVE_COLUMN_WEIGHTS.key}={cfg.WEIGHTS_FROM_WORKLOAD} needs a workload",
            hint=f"pass workload=[...] / --workload FILE, or set {cfg.WORKLOAD.key}")
    schema = table_arrow_schema(table)
    if schema is None:
        raise InvalidArgumentError(f"{path} has no schema yet; write data before clustering it")
    cols = list(checked.sort_columns)
    predicates = found.predicates(schema)
    if wants_weights:
        weights = found.column_weights(cols, schema)
        out[cfg.CURVE_COLUMN_WEIGHTS.key] = ",".join(f"{c}:{w:.6g}" for c, w in weights.items())
    if checked.is_qdtree:
        partitions = [p for p in table.partitions() if checked.selects_partition(p)]
        slices = [s for s in table.file_slices(partitions=partitions) if s.base_file_name]
        if not slices:
            return out
        total = sum(s.size_bytes for s in slices)
        output_files = max(1, -(-total // checked.target_file_max_bytes))
        tree, stats = build_workload_tree(spark, [s.base_file_path for s in slices], cols, predicates, schema,
                                          output_files=output_files,
                                          sample_rows=cfg.QDTREE_SAMPLE_SIZE.get(out),
                                          min_leaf_files=cfg.QDTREE_MIN_LEAF_FILES.get(out))
        log.info("qdtree for %s: %d leaves, estimated workload cost %.0f -> %.0f files", path, stats.leaves,
                 stats.cost_before, stats.cost_after)
        out[cfg.QDTREE_CUTS.key] = tree.to_json()
    return out


def cluster(spark: SparkSession, path: str, columns: Sequence[str] | str,
            strategy: str | LayoutStrategy = LayoutStrategy.Z_ORDER,
            method: str | CurveBuildMethod = CurveBuildMethod.DIRECT, options: Mapping[str, Any] | None = None, *,
            include_all_files: bool = True, workload: Any = None) -> ClusteringMetrics | None:
    """Schedule a clustering of ``path`` on ``columns`` and execute it. Returns what it did (``None`` when
    no file group qualified).

    ``include_all_files`` (default True here, unlike Hudi's scheduler) plans every file group regardless
    of ``hoodie.clustering.plan.strategy.small.file.limit``: asking to lay a table out along a curve means
    the whole table. Set it to False for Hudi's small-files-only behaviour. ``workload`` (predicates, a
    :class:`~hudi_layout.clustering.workload.Workload`, a file path or ``"log"``) drives ``strategy="qdtree"``
    and column weights ``"workload"``.
    """
    opts = cfg.resolve_options(options)
    drop_metadata_table_if_disabled(path, opts)
    layout = parse_layout_strategy(strategy, what="strategy")
    timer = PhaseTimer()
    with timer.phase("prepare"):
        opts = prepare_layout_options(spark, path, opts, columns=columns, strategy=layout, method=method,
                                      workload=workload, include_all_files=include_all_files)
    with timer.phase("schedule"):
        scheduled = schedule_clustering(path, opts, columns=columns, strategy=layout, method=method,
                                        include_all_files=include_all_files, resolve=False)
    if scheduled is None:
        return None
    instant_time, plan = scheduled
    done = execute_plan(spark, str(Path(path).absolute()), instant_time, plan, opts)
    return replace(done, phases={**timer.seconds, **done.phases})


def schedule_and_execute(spark: SparkSession, path: str, opts: Mapping[str, str]) -> ClusteringMetrics | None:
    """Schedule a clustering from the options alone (sort columns and layout keys) and execute it."""
    columns = cfg.split_fields(cfg.SORT_COLUMNS.get(opts))
    if not columns:
        raise InvalidArgumentError(
            f"{cfg.SORT_COLUMNS.key} must name the columns to cluster by for inline/async clustering")
    opts = prepare_layout_options(spark, path, opts, columns=columns, strategy=cfg.LAYOUT_STRATEGY.get(opts),
                                  method=cfg.CURVE_BUILD_METHOD.get(opts), workload=None, include_all_files=False)
    scheduled = schedule_clustering(path, opts, resolve=False)
    if scheduled is None:
        return None
    instant_time, plan = scheduled
    return execute_plan(spark, str(Path(path).absolute()), instant_time, plan, opts)


def drop_metadata_table_if_disabled(path: str, opts: Mapping[str, str]) -> bool:
    """``hoodie.metadata.enable=false`` on a table that has an MDT: delete it, as Hudi's writer does, so
    no index can go stale. The data table's ``hoodie.table.metadata.partitions`` is cleared first."""
    if "hoodie.metadata.enable" not in opts or cfg.METADATA_ENABLE.get(opts):
        return False
    base = Path(path).absolute()
    mdt = base / ".hoodie" / "metadata"
    if not mdt.exists():
        return False
    with TableLock(base):
        update_data_table_properties(base, {"hoodie.table.metadata.partitions": "",
                                            "hoodie.table.metadata.partitions.inflight": ""})
        shutil.rmtree(mdt)
    log.warning("hoodie.metadata.enable=false: deleted the metadata table of %s", base)
    return True


def _check_inputs_current(base: Path, plan: ClusteringPlanSpec) -> None:
    """Conflict check (under the table lock): every input file group must still be live and unchanged."""
    table = HudiTable(str(base))
    live = {s.file_group: s.base_file_name for s in table.file_slices()}
    for group in plan.groups:
        for s in group.slices:
            current = live.get((s.partition_path, s.file_id))
            if current is None:
                raise CommitConflictError(
                    f"file group {s.partition_path}/{s.file_id} was replaced by another commit while clustering")
            if current != s.base_file_name:
                raise CommitConflictError(
                    f"file group {s.partition_path}/{s.file_id} got a new base file {current} while clustering")


def execute_plan(spark: SparkSession, base_path: str, instant_time: str, plan: ClusteringPlanSpec,
                 options: Mapping[str, Any] | None = None, *, lock: TableLock | None = None) -> ClusteringMetrics:
    """Execute the pending clustering ``instant_time`` (scheduled by us or by Hudi)."""
    started = time.time()
    opts = cfg.resolve_options(options)
    base = Path(base_path).absolute()
    props = load_properties(base / ".hoodie")
    require(props, Action.CLUSTER)
    if mdt_exists(base):
        require_metadata_maintainable(props)  # refuse MDT partitions we cannot keep in sync before writing anything
    table = HudiTable(str(base))
    data_columns = table.data_columns()
    timer = PhaseTimer()
    with timer.phase("start"):
        pending = resume_clustering(base, instant_time, lock=lock, hooks=COMMIT_HOOKS)
    try:
        with timer.phase("groups"):
            metrics, written, regions = run_groups(spark, base, props, opts, pending, plan, data_columns)
        with timer.phase("commit"):
            replaced: dict[str, list[str]] = {}
            for g in plan.groups:
                for s in g.slices:
                    replaced.setdefault(s.partition_path, []).append(s.file_id)
            schema = data_schema(spark, plan, data_columns)
            meta = commit_metadata_for(written, arrow_to_avro_schema_json(schema, props.table_name), "CLUSTER",
                                       replaced)
            if regions:  # each file's curve-key range, for curve-region pruning (docs/layouts.md)
                meta["extraMetadata"][CURVE_REGIONS_KEY] = encode_regions(regions)
            payload = replace_commit_metadata_bytes(meta, props.version)
            mdt_hook = metadata_update_hook(props, opts, written, replaced)

            def before_complete(p: PendingWrite) -> None:
                _check_inputs_current(base, plan)
                mdt_hook(p)

            complete_write(pending, payload, committed_files=[w.relative_path for w in written],
                           before_complete=before_complete)
        with timer.phase("metadata_compaction"):
            compact_metadata_if_due(base, opts)
    except BaseException:
        pending.heartbeat.stop(delete=True)
        # Back to "requested": delete this attempt's files, keep the plan for the next run.
        try:
            rollback_failed_writes(base, lock=pending.lock, hooks=COMMIT_HOOKS)
        except HudiLayoutError:  # pragma: no cover - the next run retries
            log.exception("could not roll back clustering %s", instant_time)
        raise
    return ClusteringMetrics(
        instant_time=instant_time, strategy=plan.options.layout_strategy,
        method=plan.options.curve_build_method, columns=tuple(plan.sort_columns), groups=len(plan.groups),
        files_in=sum(m.files_in for m in metrics), files_out=sum(m.files_out for m in metrics),
        bytes_in=sum(m.bytes_in for m in metrics), bytes_out=sum(m.bytes_out for m in metrics),
        records=sum(m.records for m in metrics), seconds=time.time() - started, group_metrics=tuple(metrics),
        phases={**timer.seconds, **group_phases(metrics)})


def group_phases(metrics: Sequence[GroupMetrics]) -> dict[str, float]:
    """The groups' phases summed (``group.<phase>``); groups run concurrently, so sums may exceed wall time."""
    out: dict[str, float] = {}
    for m in metrics:
        for k, v in m.phases.items():
            out[f"group.{k}"] = out.get(f"group.{k}", 0.0) + v
    return out
