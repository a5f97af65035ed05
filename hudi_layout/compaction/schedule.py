"""Scheduling a compaction: the plan, written as ``<T>.compaction.requested`` under the table lock.

Hudi schedules a compaction only when no write older than it is still pending
(``ScheduleCompactionActionExecutor``: a deltacommit requested before the plan and completed after it would
belong to the compaction's new slice while its records may already sit in the old one). hudi_layout refuses
the same way: failed writes are rolled back first, and a live one makes scheduling fail with a hint to retry.
Once a plan exists, hudi_layout's writes refuse to change its file groups until it is executed
(``writer.transaction``), so nothing can slip between the plan and its commit.
"""

from __future__ import annotations

from pathlib import Path

from hudi_layout.compaction.plan import PlanStrategy, select_operations
from hudi_layout.errors import CommitConflictError, CorruptFileError
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import Action, require, require_metadata_maintainable
from hudi_layout.format.compaction_plan import CompactionOperation, compaction_plan_bytes
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import State, instant_file_name, new_instant_time
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
from hudi_layout.table.commit_protocol import (
    latest_time_with_metadata,
    pending_write_instants,
    rollback_failed_writes,
    timeline_dir,
)
from hudi_layout.table.faults import crash_point
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock

#: ``extraMetadata`` key of the plans hudi_layout writes (which tool scheduled it)
SCHEDULED_BY_KEY = "hudi_layout.scheduled.by"


def schedule_compaction(base_path: str | Path, *, lock: TableLock | None = None,
                        strategy: PlanStrategy | None = None
                        ) -> tuple[str, tuple[CompactionOperation, ...]] | None:
    """Write a compaction plan of the latest file slices with log files that ``strategy`` takes
    (:func:`select_operations`) and return ``(instant time, operations)``; ``None`` when it takes none
    (nothing is written)."""
    base = Path(base_path).absolute()
    table = HudiTable(str(base))
    require(table.properties, Action.COMPACT)
    if table.has_metadata_table:
        require_metadata_maintainable(table.properties)
    lock = lock or TableLock(base)
    with lock:
        rollback_failed_writes(base, lock=lock, hooks=COMMIT_HOOKS)
        table.reload()
        props = table.properties
        running = [i for i in pending_write_instants(base, props)
                   if i.action not in (inst.CLUSTERING, inst.COMPACTION) and not table.timeline.is_clustering(i)]
        if running:
            raise CommitConflictError(
                f"cannot schedule a compaction while write {running[0].requested_time} ({running[0].action}) is "
                "pending: its log files could land on both sides of the plan",
                hint="run the compaction again once that write has finished")
        excluded = table.pending_clustering_file_groups()
        compacting = table.fs_view.pending_compaction_file_groups()
        if compacting is None:
            raise CorruptFileError(f"{base}: a pending compaction's plan cannot be read",
                                   hint="roll back that compaction with Hudi first")
        selection = select_operations(table.file_slices(), excluded | compacting, strategy)
        ops = selection.operations
        if not ops:
            return None
        t = new_instant_time(latest_time_with_metadata(base, props), use_utc=props.timeline_timezone == "UTC")
        tdir = timeline_dir(base, props)
        tdir.mkdir(parents=True, exist_ok=True)
        name = instant_file_name(t, inst.COMPACTION, State.REQUESTED, layout_version=props.timeline_layout_version)
        atomic_write(tdir / name, compaction_plan_bytes(ops, {SCHEDULED_BY_KEY: "hudi_layout"},
                                                        selection.missing_partitions),
                     base / ".hoodie" / ".temp")
    crash_point("compact.after_plan")
    return t, ops
