"""Compaction as a transaction: execute pending compaction plans, schedule a new one, commit, metrics.

A Merge-on-Read table's updates pile up as log files that every snapshot read merges; a compaction merges
each planned slice into a new base file of its file group (Hudi's ``compaction`` action: a plan in
``<T>.compaction.requested``, then ``<T>.compaction.inflight``, completed as the ``commit`` ``<T>_<C>``). The
old slices stay readable (time travel) until a clean removes them. A failure (or a kill) leaves the plan
pending: the next run rolls its files back and executes the same plan again, as Hudi's compactor does. Plans
Hudi scheduled are executed the same way. See docs/compaction.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanConfig, clean_if_due
from hudi_layout.clustering.metrics import PhaseTimer
from hudi_layout.compaction import CompactionMetrics, PlanStrategy, schedule_compaction
from hudi_layout.errors import CommitConflictError, HudiLayoutError, InvalidArgumentError
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import (
    Action,
    require,
    require_no_bootstrap_skeletons,
)
from hudi_layout.format.commit_metadata import commit_metadata_bytes
from hudi_layout.format.compaction_plan import COMPACT_OPERATION, CompactionOperation
from hudi_layout.format.properties import load_properties, metadata_table_exists
from hudi_layout.format.schema_conversion import avro_to_arrow_schema
from hudi_layout.metadata.mdt_timeline import require_mdt_writable, require_mdt_writable_if_present
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
from hudi_layout.spark.compaction_job import compaction_merge_spec, compaction_targets, run_compaction
from hudi_layout.spark.progress import watch
from hudi_layout.spark.write_job import datetime_rebase_write_mode
from hudi_layout.table.commit_protocol import (
    complete_write,
    resume_compaction,
    rollback_failed_writes,
    rollback_pending_instant,
)
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import writer_is_alive
from hudi_layout.table.paths import table_dir
from hudi_layout.writer.base_file_writer import WriteSpec, WrittenFile
from hudi_layout.writer.metadata_sync import (
    compact_metadata_if_due,
    drop_metadata_table_if_disabled,
    metadata_update_hook,
    stats_columns_for,
)
from hudi_layout.writer.transaction import commit_metadata_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

def compact(spark: SparkSession, path: str, options: Mapping[str, Any] | None = None, *,
            schedule_only: bool = False, instant: str | None = None) -> list[CompactionMetrics]:
    """Execute every pending compaction plan whose executor is gone (oldest first; scheduled by hudi_layout
    or by Hudi), then schedule a compaction of every slice with log files and execute it. ``schedule_only``:
    write the plan only; ``instant``: execute that pending plan only. Returns one result per plan."""
    if schedule_only and instant is not None:
        raise InvalidArgumentError("schedule_only and instant exclude each other: one schedules a new plan, the "
                                   "other executes a pending one", hint="give one of them")
    base = table_dir(path)
    opts = cfg.resolve_options(options)
    cfg.validate_all(opts)
    cfg.refuse_options_unused_by(options, cfg.COMPACT)
    props = load_properties(base / ".hoodie")
    cfg.refuse_table_config_conflicts(props, options, props.table_name)
    require(props, Action.COMPACT)
    CleanConfig.from_options(opts)  # bad cleaner options: refused before anything
    strategy = PlanStrategy.from_options(opts)
    drop_metadata_table_if_disabled(str(base), opts)
    require_mdt_writable_if_present(base)  # before the table lock: a refused compaction changes nothing
    results: list[CompactionMetrics] = []
    if not schedule_only:
        pending = pending_compactions(base)
        if instant is not None and instant not in pending:
            raise InvalidArgumentError(f"no pending compaction {instant} in {base}",
                                       hint="hudi-layout compact PATH lists nothing to do when none is pending; "
                                            "omit --instant to schedule one")
        for t in pending:
            if instant is not None and t != instant:
                continue
            if writer_is_alive(base, t):
                if instant is not None:
                    raise CommitConflictError(f"compaction {t} of {base} is being executed by another process",
                                              hint="wait for it; hudi-layout inspect shows when it is done")
                log.warning("compaction %s of %s is being executed by another process; skipped", t, base)
                continue
            results.append(execute_compaction(spark, str(base), t, opts, resumed=True))
    if instant is not None:
        return results
    try:
        scheduled = schedule_compaction(base, strategy=strategy)
    except CommitConflictError as exc:
        if not results:
            raise
        # the pending plans ran and are committed: report them, not a failure to plan one more
        log.warning("no new compaction of %s scheduled after the pending ones: %s", base, exc)
        return results
    if scheduled is None:
        return results
    t, ops = scheduled
    if schedule_only:
        results.append(_scheduled_only(base, t, ops))
        return results
    try:
        results.append(execute_compaction(spark, str(base), t, opts))
    except CommitConflictError as exc:
        if not HudiTable(str(base)).timeline.completed().contains(t):
            raise
        # another process ran this plan in the gap between its scheduling and its execution here
        log.warning("compaction %s of %s was executed by another process: %s", t, base, exc)
    return results


def deltacommits_since_last_compaction(base: Path) -> int:
    """Completed deltacommits requested after the latest completed compaction (Hudi's ``NUM_COMMITS`` trigger
    of inline compaction)."""
    completed = HudiTable(str(base)).timeline.completed()
    # on a Merge-on-Read table a completed ``commit`` is a compaction (writes are deltacommits, clusterings
    # replacecommits), as Hudi's commit timeline of such a table says
    last = max((i.requested_time for i in completed if i.action == inst.COMMIT), default="")
    return sum(1 for i in completed if i.action == inst.DELTA_COMMIT and i.requested_time > last)


def maybe_compact_inline(spark: SparkSession, path: str, opts: Mapping[str, str]) -> list[CompactionMetrics]:
    """Called by the writer after each completed commit of a Merge-on-Read table when ``hoodie.compact.inline``
    is on: :func:`compact` once enough deltacommits completed since the last compaction."""
    base = table_dir(path)
    if deltacommits_since_last_compaction(base) < cfg.COMPACT_INLINE_MAX_DELTA_COMMITS.get(opts):
        return []
    log.info("inline compaction of %s", base)
    try:
        return compact(spark, str(base), cfg.options_used_by(opts, cfg.COMPACT))
    except CommitConflictError as exc:  # another write is pending: the next write's turn compacts
        log.warning("inline compaction of %s skipped: %s", base, exc)
        return []


def pending_compactions(base: Path) -> list[str]:
    """Requested times of pending compactions, oldest first (inflight ones of dead executors of ours back to
    requested first)."""
    rollback_failed_writes(base, hooks=COMMIT_HOOKS)
    return sorted(HudiTable(str(base)).timeline.pending_compactions())


def abandon_pending_compaction(path: str, instant: str) -> bool:
    """Roll back pending compaction ``instant`` with its plan (Hudi CLI's ``compaction unschedule``; a rollback
    instant records it). Its file groups take writes again; their log files stay in their slices."""
    base = table_dir(path)
    table = HudiTable(str(base))
    require(table.properties, Action.COMPACT)  # nothing is touched in a table we do not write
    if instant not in table.timeline.pending_compactions():
        return False  # checked before any rollback of failed writes: a refusal changes nothing
    return rollback_pending_instant(base, instant, hooks=COMMIT_HOOKS)


def _scheduled_only(base: Path, t: str, ops: Sequence[CompactionOperation]) -> CompactionMetrics:
    return CompactionMetrics(instant_time=t, slices=len(ops), log_files=sum(len(op.log_files) for op in ops),
                             bytes_in=sum(size for _t, size in compaction_targets(base, ops)), bytes_out=0,
                             records=0, seconds=0.0, executed=False)


def execute_compaction(spark: SparkSession, base_path: str, instant_time: str, opts: Mapping[str, str], *,
                       resumed: bool = False) -> CompactionMetrics:
    """Execute pending compaction ``instant_time``: merge its slices in one Spark job, then (under the table
    lock) check that no planned file group got another base file meanwhile, write the metadata table's
    deltacommit and complete the ``commit``."""
    started = time.time()
    base = table_dir(base_path)
    props = load_properties(base / ".hoodie")
    require(props, Action.COMPACT)
    if metadata_table_exists(base):
        require_mdt_writable(base, props)
    timer = PhaseTimer()
    with timer.phase("plan"):
        table = HudiTable(str(base))
        if not table.timeline.pending().actions(inst.COMPACTION).contains(instant_time):  # no plan decoded twice
            done = table.timeline.completed().contains(instant_time)
            raise CommitConflictError(
                f"compaction {instant_time} of {base} is no longer pending: another process "
                + ("completed it" if done else "rolled it back (abandoned it)"),
                hint="nothing left to do for it" if done else "run hudi-layout compact again to schedule a new plan")
        ops = table.timeline.compaction_plan(instant_time)
        require_no_bootstrap_skeletons((op.base_file for op in ops if op.base_file), "compact")
        targets = compaction_targets(base, ops)
    with timer.phase("start"):
        pending = resume_compaction(base, instant_time, hooks=COMMIT_HOOKS)
    try:
        table = HudiTable(str(base))
        schema_json = table.schema()
        schema = avro_to_arrow_schema(schema_json) if schema_json else None
        data_columns = tuple(table.data_columns())
        spec = WriteSpec(
            base_path=str(base), instant_time=instant_time, data_columns=data_columns,
            max_file_size=cfg.MAX_FILE_SIZE.get(opts), compression=cfg.PARQUET_CODEC.get(opts),
            compression_min_saving=cfg.PARQUET_MIN_SAVING.get(opts),
            stats_columns=stats_columns_for(props, opts, schema) if schema is not None else (),
            data_schema=schema, gate=pending.file_gate, datetime_rebase_mode=datetime_rebase_write_mode(spark))
        merge = compaction_merge_spec(table, instant_time)
        what = f"compaction {instant_time} ({len(ops)} file slices)"
        with timer.phase("merge"), watch(spark, what):
            spark.sparkContext.setJobDescription(f"hudi_layout {what}")
            written = run_compaction(spark, spec, targets, merge, int(spark.sparkContext.defaultParallelism))
        with timer.phase("commit"):
            mdt_hook = metadata_update_hook(props, opts, written, schema=schema)

            def payload() -> bytes:
                current = HudiTable(str(base)).schema() or schema_json or ""
                return commit_metadata_bytes(compaction_commit_metadata(written, ops, current), props.version)

            def before_complete(p: Any) -> None:
                check_plan_current(base, ops)
                mdt_hook(p)

            complete_write(pending, payload, committed_files=[w.relative_path for w in written],
                           before_complete=before_complete)
        with timer.phase("metadata_compaction"):
            compact_metadata_if_due(base, opts)
    except BaseException:
        # back to "requested": this attempt's files are deleted, the plan stays for the next run (the
        # heartbeat file stays until then: a compaction without one is taken for Hudi's and left alone)
        pending.heartbeat.stop(delete=False)
        try:
            rollback_failed_writes(base, hooks=COMMIT_HOOKS)
        except HudiLayoutError:  # pragma: no cover - the next run retries
            log.exception("could not roll back compaction %s", instant_time)
        raise
    clean_if_due(base, opts)  # hoodie.clean.automatic
    return CompactionMetrics(
        instant_time=instant_time, slices=len(ops), log_files=sum(len(op.log_files) for op in ops),
        bytes_in=sum(size for _t, size in targets), bytes_out=sum(w.file_size for w in written),
        records=sum(w.num_records for w in written), seconds=time.time() - started, resumed=resumed,
        phases=tuple(timer.seconds.items()))


def compaction_commit_metadata(written: Sequence[WrittenFile], ops: Sequence[CompactionOperation],
                               schema_json: str) -> dict[str, Any]:
    """Hudi's commit metadata of a compaction: ``compacted`` true, operation ``COMPACT``, per new base file
    the slice it replaced (``prevCommit`` / ``prevBaseFile``) and the log files it merged."""
    meta = commit_metadata_for(list(written), schema_json, COMPACT_OPERATION)
    meta["compacted"] = True
    by_group = {op.file_group: op for op in ops}
    for stats in meta["partitionToWriteStats"].values():
        for stat in stats:
            op = by_group.get((stat["partitionPath"] or "", stat["fileId"]))
            if op is None:
                continue
            stat["prevCommit"] = op.base_instant
            stat["prevBaseFile"] = op.base_file
            stat["numInserts"] = 0
            stat["totalLogFilesCompacted"] = len(op.log_files)
            stat["totalLogSizeCompacted"] = int(op.metrics.get("TOTAL_LOG_FILES_SIZE", 0))
    return meta


def check_plan_current(base: Path, ops: Sequence[CompactionOperation]) -> None:
    """Under the lock, before the commit: every planned file group still has the planned slice as its latest
    (no other base file, no replacement). hudi_layout's writes refuse planned groups, so only another tool
    could have changed one; the new base file would then hide that change."""
    table = HudiTable(str(base))
    partitions = sorted({op.partition_path for op in ops})
    latest = {s.file_group: s.commit_time for s in table.file_slices(partitions=partitions)}
    for op in ops:
        now = latest.get(op.file_group)
        if now != op.base_instant:
            where = f"{op.partition_path + '/' if op.partition_path else ''}{op.file_id}"
            what = "was replaced" if now is None else f"got a new slice {now}"
            raise CommitConflictError(f"file group {where} {what} while the compaction ran (it merged the slice "
                                      f"of {op.base_instant})",
                                      hint="abandon this compaction (hudi-layout compact --abandon INSTANT) and "
                                           "run hudi-layout compact again")
