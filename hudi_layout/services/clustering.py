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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.clustering.metrics import ClusteringMetrics, few_files_note
from hudi_layout.clustering.plan import ClusteringPlanSpec, plan_clustering
from hudi_layout.clustering.schedule import load_pending_plans, prepare_clustering_options, schedule_clustering
from hudi_layout.errors import CommitConflictError, HudiLayoutError, InvalidArgumentError
from hudi_layout.format.capabilities import Action, require, require_metadata_maintainable
from hudi_layout.format.commit_metadata import replace_commit_metadata_bytes
from hudi_layout.format.properties import load_properties
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS, update_data_table_properties
from hudi_layout.options import CurveBuildMethod, LayoutStrategy, parse_layout_strategy
from hudi_layout.spark.clustering_job import data_schema, run_groups
from hudi_layout.spark.progress import watch
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


def cluster(spark: SparkSession, path: str, columns: Sequence[str] | str,
            strategy: str | LayoutStrategy = LayoutStrategy.Z_ORDER,
            method: str | CurveBuildMethod = CurveBuildMethod.DIRECT, options: Mapping[str, Any] | None = None, *,
            include_all_files: bool = True, resume: bool = True) -> ClusteringMetrics | None:
    """Schedule a clustering of ``path`` on ``columns`` and execute it. Returns what it did: the new
    clustering, or the last pending plan it resumed instead, or ``None`` (no file group qualified).

    ``resume`` (default): pending plans whose executor is gone run instead of a new plan.

    ``include_all_files`` (default True here, unlike Hudi's scheduler) plans every file group regardless
    of ``hoodie.clustering.plan.strategy.small.file.limit``: asking to lay a table out along a curve means
    the whole table. Set it to False for Hudi's small-files-only behaviour.
    """
    run = run_clustering(lambda: spark, path, columns, strategy, method, options,
                         include_all_files=include_all_files, resume=resume)
    for waiting in run.waiting:
        log.warning("%s", waiting.describe())
    return run.new or (run.resumed[-1] if run.resumed else None)


def schedule_and_execute(spark: SparkSession, path: str, opts: Mapping[str, str]) -> ClusteringMetrics | None:
    """Schedule a clustering from the options alone (sort columns and layout keys) and execute it."""
    columns = cfg.split_fields(cfg.SORT_COLUMNS.get(opts))
    if not columns:
        raise InvalidArgumentError(
            f"{cfg.SORT_COLUMNS.key} must name the columns to cluster by for inline/async clustering")
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
    pending = resume_clustering(base, instant_time, lock=lock, hooks=COMMIT_HOOKS)
    try:
        with watch(spark, f"clustering {instant_time} ({plan.num_slices} files, {plan.total_bytes / 1e6:.1f} MB)"):
            metrics, written = run_groups(spark, base, props, opts, pending, plan, data_columns)
        replaced: dict[str, list[str]] = {}
        for g in plan.groups:
            for s in g.slices:
                replaced.setdefault(s.partition_path, []).append(s.file_id)
        schema = data_schema(spark, plan, data_columns)
        meta = commit_metadata_for(written, arrow_to_avro_schema_json(schema, props.table_name), "CLUSTER",
                                   replaced)
        payload = replace_commit_metadata_bytes(meta, props.version)
        mdt_hook = metadata_update_hook(props, opts, written, replaced)

        def before_complete(p: PendingWrite) -> None:
            _check_inputs_current(base, plan)
            mdt_hook(p)

        complete_write(pending, payload, committed_files=[w.relative_path for w in written],
                       before_complete=before_complete)
        compact_metadata_if_due(base, opts)
    except BaseException:
        pending.heartbeat.stop(delete=True)
        # Back to "requested": delete this attempt's files, keep the plan for the next run.
        try:
            rollback_failed_writes(base, lock=pending.lock, hooks=COMMIT_HOOKS)
        except HudiLayoutError:  # pragma: no cover - the next run retries
            log.exception("could not roll back clustering %s", instant_time)
        raise
    note = few_files_note(tuple(metrics), cfg.TARGET_FILE_MAX_BYTES.get(opts), cfg.TARGET_FILE_MAX_BYTES.key)
    return ClusteringMetrics(
        instant_time=instant_time, strategy=plan.options.layout_strategy,
        method=plan.options.curve_build_method, columns=tuple(plan.sort_columns), groups=len(plan.groups),
        files_in=sum(m.files_in for m in metrics), files_out=sum(m.files_out for m in metrics),
        bytes_in=sum(m.bytes_in for m in metrics), bytes_out=sum(m.bytes_out for m in metrics),
        records=sum(m.records for m in metrics), seconds=time.time() - started, group_metrics=tuple(metrics),
        notes=(note,) if note else ())


@dataclass(frozen=True)
class PendingClustering:
    """A clustering plan on the timeline that has not completed."""

    instant_time: str
    state: str
    file_groups: int
    #: a live process holds its heartbeat (it is being executed right now)
    running: bool

    def describe(self) -> str:
        who = "running in another process" if self.running else "waiting to be executed"
        return f"clustering {self.instant_time} ({self.state}, {self.file_groups} file groups) is {who}"


def pending_clusterings(path: str) -> list[PendingClustering]:
    """Every pending clustering of the table, oldest first (no Spark)."""
    table = HudiTable(path)
    return [PendingClustering(i.requested_time, i.state.value,
                              sum(len(g.get("slices") or []) for g in (plan.get("inputGroups") or [])),
                              writer_is_alive(table.base_path, i.requested_time))
            for i, plan in table.timeline.pending_clustering()]


@dataclass(frozen=True)
class ClusteringRun:
    """What :func:`run_clustering` did."""

    #: pending plans executed first (left by an earlier, interrupted run, or scheduled by Hudi)
    resumed: tuple[ClusteringMetrics, ...] = ()
    #: the clustering scheduled and executed by this run
    new: ClusteringMetrics | None = None
    #: a plan scheduled and left for later (``schedule_only``)
    scheduled: str | None = None
    #: pending plans left after the run (executing elsewhere, or not resumed)
    waiting: tuple[PendingClustering, ...] = ()


def preview_clustering(path: str, columns: Sequence[str] | str, strategy: str | LayoutStrategy = LayoutStrategy.Z_ORDER,
                       method: str | CurveBuildMethod = CurveBuildMethod.DIRECT,
                       options: Mapping[str, Any] | None = None, *,
                       include_all_files: bool = True) -> ClusteringPlanSpec | None:
    """The plan :func:`cluster` would schedule now, without writing anything (no Spark)."""
    table = HudiTable(path)
    opts = prepare_clustering_options(table, options, columns=columns,
                                      strategy=parse_layout_strategy(strategy, what="strategy"), method=method,
                                      include_all_files=include_all_files)
    partitions = [p for p in table.partitions() if opts.selects_partition(p)]
    return plan_clustering(table.file_slices(partitions=partitions), opts, table.pending_clustering_file_groups())


def run_clustering(spark: Callable[[], SparkSession], path: str, columns: Sequence[str] | str,
                   strategy: str | LayoutStrategy = LayoutStrategy.Z_ORDER,
                   method: str | CurveBuildMethod = CurveBuildMethod.DIRECT,
                   options: Mapping[str, Any] | None = None, *, include_all_files: bool = True,
                   resume: bool = True, schedule_only: bool = False) -> ClusteringRun:
    """Cluster the table: pending plans whose executor is gone run first (``resume``, like the retry of
    Hudi's clustering job), and when none did, a new plan is scheduled and executed.

    ``spark`` is called only when a plan is executed, so checking, planning and scheduling never start
    Spark. With ``resume=False`` pending plans are left alone (and reported in ``waiting``); with
    ``schedule_only`` the new plan is written to the timeline and not executed.
    """
    opts = cfg.resolve_options(options)
    drop_metadata_table_if_disabled(path, opts)
    layout = parse_layout_strategy(strategy, what="strategy")
    base = Path(path).absolute()
    resumed: list[ClusteringMetrics] = []
    if resume and not schedule_only:
        rollback_failed_writes(base, hooks=COMMIT_HOOKS)  # inflight plans of dead executors -> requested
        for instant_time, plan in load_pending_plans(base, opts):
            if writer_is_alive(base, instant_time):
                continue
            log.info("resuming pending clustering %s (%d groups)", instant_time, len(plan.groups))
            resumed.append(execute_plan(spark(), str(base), instant_time, plan, opts))
    if resumed:  # as HoodieClusteringJob's retry of the last failed clustering: that run replaces a new one
        return ClusteringRun(tuple(resumed), None, None, tuple(pending_clusterings(str(base))))
    scheduled = schedule_clustering(path, opts, columns=columns, strategy=layout, method=method,
                                    include_all_files=include_all_files, resolve=False)
    new = None
    if scheduled is not None and not schedule_only:
        instant_time, plan = scheduled
        new = execute_plan(spark(), str(base), instant_time, plan, opts)
    return ClusteringRun(tuple(resumed), new, scheduled[0] if scheduled and schedule_only else None,
                         tuple(pending_clusterings(str(base))))
