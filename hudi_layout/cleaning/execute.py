"""Run a clean as a Hudi ``clean`` action: plan, delete, metadata table, complete (docs/cleaning.md).

Sequence of one clean ``T`` (docs/hudi-format-live-tables.md §1.1, §1.6):

1. under the table lock: finish no clean another live process owns; roll back writes whose writer died;
   gather the table state and plan (:mod:`.plan`); nothing eligible -> no instant at all (as Hudi). Otherwise
   write ``T.clean.requested`` (the Avro ``HoodieCleanerPlan``) and hold a heartbeat for ``T``;
2. ``T.clean.inflight`` (empty, as Hudi 1.x), then delete the planned files (outside the lock);
3. under the table lock: the metadata-table deltacommit ``T`` (``files`` deletions, ``column_stats``
   tombstones for every deleted file x every column that may be indexed), then the completed
   ``T_C.clean`` (Avro ``HoodieCleanMetadata``) in one atomic rename.

A crash anywhere leaves a pending clean; Hudi and we re-execute a pending plan (never roll it back): the next
clean (manual or automatic) reads ``T.clean.requested``, checks every path again, deletes what is left,
writes the MDT deltacommit unless it already completed (a half-written one is removed first), and completes
``T``. Until then readers are unaffected: every planned file was already out of every retained snapshot, and
the MDT blocks of ``T`` stay invisible while ``T`` is pending (sync rule, docs/hudi-format.md §5.7).

Crash points for the fault-injection tests (``table/faults.py``): ``HUDI_LAYOUT_FAULT=clean_after_plan |
clean_mid_deletes | clean_before_mdt | clean_before_complete`` SIGKILLs the process at that step.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from hudi_layout import options as cfg
from hudi_layout.cleaning.config import CleanConfig
from hudi_layout.cleaning.plan import (
    PlannedClean,
    earliest_commit_to_retain,
    gather_state,
    plan_clean,
    timeline_now,
)
from hudi_layout.errors import CommitConflictError, CorruptFileError, HudiLayoutError
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import (
    Action,
    Refusal,
    clean_timeline_refusal,
    refusal,
    require,
)
from hudi_layout.format.clean_metadata import (
    SAVEPOINTED_TIMESTAMPS,
    CleanerPlan,
    CleanMetadata,
    CleanPartitionResult,
    clean_metadata_bytes,
    cleaner_plan_bytes,
    contained_file,
    decode_cleaner_plan,
)
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import Instant, State, new_instant_time
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.format.properties import TableProperties, load_properties, metadata_table_exists
from hudi_layout.format.schema_conversion import readable_arrow_schema
from hudi_layout.metadata import stats_values as sv
from hudi_layout.metadata.mdt_clean import obsolete_files as obsolete_mdt_files
from hudi_layout.metadata.mdt_reader import instant_files
from hudi_layout.metadata.mdt_timeline import require_mdt_writable
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS, MetadataWriter, rollback_metadata_instant
from hudi_layout.metadata.records import column_stats_tombstone
from hudi_layout.options import CleaningPolicy
from hudi_layout.table.commit_protocol import (
    instant_path,
    latest_time_with_metadata,
    rollback_failed_writes,
    timeline_dir,
    write_completed_instant,
)
from hudi_layout.table.faults import crash_point
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import Heartbeat, TableLock, writer_is_alive
from hudi_layout.table.savepoints import pending_savepoints
from hudi_layout.table.timeline import Timeline

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CleanResult:
    """What one clean instant did."""

    instant_time: str
    policy: str
    earliest_commit_to_retain: str
    files_deleted: int
    partitions: tuple[str, ...]
    seconds: float
    #: the clean was planned earlier (by a process that stopped) and finished here
    resumed: bool = False
    #: eligible files kept because they left the latest snapshot within the grace period (new cleans only)
    deferred_by_grace: int = 0
    bytes_deleted: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --------------------------------------------------------------------------------------------- timeline


def _clean_file(base: Path, props: TableProperties, t: str, state: State) -> Path:
    return instant_path(base, props, t, inst.CLEAN, state)


def pending_cleans(timeline: Timeline) -> list[Instant]:
    """Pending clean instants, oldest first."""
    return list(timeline.pending().actions(inst.CLEAN))


def _load_timeline(base: Path, props: TableProperties) -> Timeline:
    return Timeline.of_table(base / ".hoodie", props)


def _check_cleanable(base: Path, props: TableProperties, timeline: Timeline) -> None:
    require(props, Action.CLEAN)
    why = _savepoint_refusal(timeline)
    if why is not None:
        raise why.error()
    if metadata_table_exists(base):
        require_mdt_writable(base, props)


def _savepoint_refusal(timeline: Timeline) -> Refusal | None:
    return clean_timeline_refusal(i.requested_time for i in pending_savepoints(timeline))


def _abandon_hint(base: Path, props: TableProperties, t: str) -> str:
    return (f"inspect {timeline_dir(base, props)}/{t}.clean.requested; deleting {t}.clean.requested and "
            f"{t}.clean.inflight abandons that clean (no file is deleted)")


# --------------------------------------------------------------------------------------------- entry


def clean(base_path: str | os.PathLike[str], options: Mapping[str, str] | None = None, *,
          now: datetime | None = None, lock: TableLock | None = None, thorough: bool = True) -> list[CleanResult]:
    """Finish every pending clean whose process is gone, then plan and run a new one when anything is eligible.

    ``options`` are resolved Hudi options (the cleaner keys of :mod:`hudi_layout.options`); ``now`` (naive, in
    the table's timeline zone) is for tests of the grace period. ``thorough=False`` (the automatic clean after
    a commit) skips listing the partitions while the policy has no earliest commit to retain yet, as Hudi does;
    orphans of aborted writes are then found by a later clean. Returns what each clean instant did (oldest
    first); an empty list when there was nothing to delete."""
    config = CleanConfig.from_options(options or {})
    base = Path(base_path).absolute()
    lock = lock or TableLock(base)
    results = _finish_pending(base, lock, options or {})
    scheduled = _schedule(base, config, lock, now, thorough)
    if scheduled is not None:
        t, plan, planned, heartbeat = scheduled
        results.append(_execute(base, t, plan, heartbeat, lock, options or {}, resumed=False,
                                deferred=planned.deferred))
    _clean_metadata_table(base, lock, config, now)
    return results


def _finish_pending(base: Path, lock: TableLock, opts: Mapping[str, str]) -> list[CleanResult]:
    """Re-execute pending cleans left by processes that died (Hudi's ``runPendingClean``), oldest first."""
    results: list[CleanResult] = []
    while True:
        with lock:
            props = load_properties(base / ".hoodie")
            timeline = _load_timeline(base, props)
            todo = [i for i in pending_cleans(timeline) if not writer_is_alive(base, i.requested_time)]
            if not todo:
                return results
            _check_cleanable(base, props, timeline)
            t = todo[0].requested_time
            heartbeat = Heartbeat(base, t)
        log.info("finishing clean %s left pending", t)
        try:
            requested = _clean_file(base, props, t, State.REQUESTED)
            if not requested.is_file():
                raise CorruptFileError(f"{requested} is missing")
            plan = decode_cleaner_plan(requested.read_bytes(), base, f"{base}: clean plan {t}")
        except BaseException as e:
            heartbeat.stop()
            if isinstance(e, CorruptFileError):
                raise CorruptFileError(f"{e}; the pending clean {t} cannot be finished",
                                       hint=_abandon_hint(base, props, t)) from e
            raise
        results.append(_execute(base, t, plan, heartbeat, lock, opts, resumed=True))


def _schedule(base: Path, config: CleanConfig, lock: TableLock, now: datetime | None, thorough: bool
              ) -> tuple[str, CleanerPlan, PlannedClean, Heartbeat] | None:
    with lock:
        props = load_properties(base / ".hoodie")
        _check_cleanable(base, props, _load_timeline(base, props))
        if any(writer_is_alive(base, i.requested_time) for i in pending_cleans(_load_timeline(base, props))):
            return None  # another process is cleaning right now
        rollback_failed_writes(base, props, lock=lock, hooks=COMMIT_HOOKS)
        if not thorough and config.policy is not CleaningPolicy.KEEP_LATEST_FILE_VERSIONS:
            history = gather_state(base, props, now=now, list_files=False)
            if earliest_commit_to_retain(history, config) is None:
                return None  # not enough history to delete anything yet (as Hudi): no partition listing
        planned = plan_clean(gather_state(base, props, now=now), config)
        if not planned.to_delete:
            if planned.deferred:
                log.info("clean of %s: %d eligible file(s) kept for the grace period", base, planned.deferred)
            return None
        ectr = planned.earliest_commit_to_retain
        plan = CleanerPlan(
            policy=planned.policy.value,
            earliest_instant_to_retain=(ectr.requested_time, ectr.action) if ectr is not None else None,
            last_completed_commit=planned.last_completed_commit,
            files_to_delete={p: tuple(str((base / p if p else base) / n) for n in names)
                             for p, names in planned.to_delete.items()},
            extra_metadata=({SAVEPOINTED_TIMESTAMPS: ",".join(planned.savepoint_times)}
                            if planned.savepoint_times else None))
        t = new_instant_time(latest_time_with_metadata(base, props), use_utc=props.timeline_timezone == "UTC")
        heartbeat = Heartbeat(base, t)
        try:
            timeline_dir(base, props).mkdir(parents=True, exist_ok=True)
            atomic_write(_clean_file(base, props, t, State.REQUESTED), cleaner_plan_bytes(plan),
                         base / ".hoodie" / ".temp")
        except BaseException:
            heartbeat.stop()
            raise
    try:
        crash_point("clean_after_plan")
    except BaseException:
        heartbeat.stop()
        raise
    return t, plan, planned, heartbeat


def _execute(base: Path, t: str, plan: CleanerPlan, heartbeat: Heartbeat, lock: TableLock,
             opts: Mapping[str, str], *, resumed: bool, deferred: int = 0) -> CleanResult:
    started = time.time()
    try:
        props = load_properties(base / ".hoodie")
        # every path is checked before the first delete: a plan is data read from storage
        try:
            targets = {p: [contained_file(base, p, f) for f in paths] for p, paths in plan.files_to_delete.items()}
        except CorruptFileError as e:
            raise CorruptFileError(f"{e}; clean {t} deletes nothing", hint=_abandon_hint(base, props, t)) from e
        inflight = _clean_file(base, props, t, State.INFLIGHT)
        if not inflight.exists():
            atomic_write(inflight, b"", base / ".hoodie" / ".temp")
        deleted: dict[str, list[str]] = {}
        failed: dict[str, list[str]] = {}
        size = 0
        total = sum(len(v) for v in targets.values())
        done = 0
        for part, paths in targets.items():
            for path in paths:
                try:
                    size += path.stat().st_size
                    path.unlink()
                except FileNotFoundError:
                    pass  # deleted by an earlier attempt of this plan
                except OSError as e:
                    log.warning("clean %s could not delete %s: %s", t, path, e)
                    failed.setdefault(part, []).append(path.name)
                    continue
                deleted.setdefault(part, []).append(path.name)
                done += 1
                if done * 2 >= total:
                    crash_point("clean_mid_deletes")
        crash_point("clean_before_mdt")
        names = plan.file_names()
        with lock:
            if not _clean_file(base, props, t, State.INFLIGHT).exists():
                raise CommitConflictError(f"clean {t} is no longer pending (finished by another process)")
            if metadata_table_exists(base):
                _write_metadata(base, t, names, opts)
            crash_point("clean_before_complete")
            metadata = CleanMetadata(
                start_clean_time=t, time_taken_ms=int((time.time() - started) * 1000),
                earliest_commit_to_retain=(plan.earliest_instant_to_retain or ("", ""))[0],
                last_completed_commit=plan.last_completed_commit,
                partitions={p: CleanPartitionResult(p, plan.policy, tuple(n), tuple(deleted.get(p, ())),
                                                    tuple(failed.get(p, ())))
                            for p, n in names.items()},
                extra_metadata=plan.extra_metadata)
            write_completed_instant(base, props, t, inst.CLEAN, clean_metadata_bytes(metadata))
        _compact_metadata_if_due(base, lock, opts)
    finally:
        heartbeat.stop()
    return CleanResult(t, plan.policy, (plan.earliest_instant_to_retain or ("", ""))[0],
                       sum(len(v) for v in deleted.values()), tuple(sorted(targets)), time.time() - started,
                       resumed=resumed, deferred_by_grace=deferred, bytes_deleted=size)


# --------------------------------------------------------------------------------------------- metadata


def tombstone_columns(base: Path, props: TableProperties, opts: Mapping[str, str]) -> list[str]:
    """Every column that may have column_stats records: the index definition's columns, the configured list,
    the meta columns and every data column of a type with statistics (a superset is harmless: a tombstone of a
    key that never existed is dropped by the next MDT compaction)."""
    cols: list[str] = list(META_COLUMNS)
    cols += cfg.split_fields(cfg.COLUMN_STATS_COLUMNS.get(opts))
    defs_path = props.get("hoodie.table.index.defs.path")
    if defs_path and (base / defs_path).is_file():
        try:
            defs = json.loads((base / defs_path).read_text())["indexDefinitions"]
            cols += list((defs.get("column_stats") or {}).get("sourceFields") or [])
        except (ValueError, KeyError, TypeError):
            pass
    schema_json = HudiTable(base).schema()
    if schema_json:
        cols += [f.name for f in readable_arrow_schema(schema_json)
                 if sv.cached_value_type_for_arrow(f.type) is not None]
    return list(dict.fromkeys(cols))


def _write_metadata(base: Path, t: str, names: Mapping[str, list[str]], opts: Mapping[str, str]) -> None:
    """The MDT deltacommit of clean ``t`` (call under the table lock); skipped when it already completed."""
    props = load_properties(base / ".hoodie")
    mdt_hoodie = base / ".hoodie" / "metadata" / ".hoodie"
    mdt_instants = instant_files(mdt_hoodie, load_properties(mdt_hoodie))
    if any(i.requested_time == t and i.is_completed and i.action == inst.DELTA_COMMIT for i in mdt_instants):
        return  # an earlier attempt of this clean got that far
    rollback_metadata_instant(base, t)  # remove a half-written attempt
    writer = MetadataWriter(base, props)
    tombstones = []
    if "column_stats" in props.metadata_partitions:
        index_version = 2 if props.version >= 9 else 1
        columns = tombstone_columns(base, props, opts)
        tombstones = [column_stats_tombstone(p, n, c, index_version)
                      for p, files in names.items() for n in files for c in columns]
    writer.write_deltacommit(t, {}, tombstones, files_deleted={p: list(v) for p, v in names.items()})


def _compact_metadata_if_due(base: Path, lock: TableLock, opts: Mapping[str, str]) -> None:
    if not metadata_table_exists(base):
        return
    with lock:
        props = load_properties(base / ".hoodie")
        writer = MetadataWriter(base, props, max_delta_commits=cfg.MDT_COMPACT_MAX_DELTA_COMMITS.get(opts))
        if writer.deltacommits_since_compaction() < writer.max_delta_commits:
            return
        try:
            writer.compact(new_instant_time(latest_time_with_metadata(base, props),
                                            use_utc=props.timeline_timezone == "UTC"))
        except CommitConflictError:  # a write is pending: a later commit compacts
            return


def _clean_metadata_table(base: Path, lock: TableLock, config: CleanConfig, now: datetime | None) -> int:
    """Delete the metadata table's file slices that its latest compaction made obsolete (grace period
    included, :mod:`hudi_layout.metadata.mdt_clean`); returns how many files went."""
    if not metadata_table_exists(base):
        return 0
    with lock:
        props = load_properties(base / ".hoodie")
        paths = obsolete_mdt_files(base, now or timeline_now(props), config.grace_seconds)
        for p in paths:
            p.unlink(missing_ok=True)
    if paths:
        log.info("cleaned %d obsolete metadata-table file(s) of %s", len(paths), base)
    return len(paths)


# --------------------------------------------------------------------------------------------- trigger


def commits_since_last_clean(timeline: Timeline) -> int:
    """Completed commits requested after the last completed clean (all of them when there was none)."""
    last = timeline.completed().actions(inst.CLEAN).last()
    since = last.requested_time if last is not None else ""
    return sum(1 for i in timeline.completed().commits_and_replaces() if i.requested_time > since)


def clean_if_due(base_path: str | os.PathLike[str], options: Mapping[str, str] | None = None
                 ) -> list[CleanResult]:
    """The automatic clean after a commit (``hoodie.clean.automatic``): finish pending cleans, and clean when
    ``hoodie.clean.max.commits`` commits completed since the last clean. Tables we cannot clean are skipped.

    The commit before it is complete whatever happens here: a clean that fails on purpose (a lock timeout, a
    damaged pending plan) is logged as a warning naming the fix, not raised as if the write had failed
    (``hudi-layout clean PATH`` shows the same error)."""
    opts = options or {}
    config = CleanConfig.from_options(opts)
    if not config.automatic:
        return []
    base = Path(base_path).absolute()
    props = load_properties(base / ".hoodie")
    timeline = _load_timeline(base, props)
    why = refusal(props, Action.CLEAN) or _savepoint_refusal(timeline)
    if why is not None:
        log.warning("no automatic clean of %s: %s", base, why.message)
        return []
    if not pending_cleans(timeline) and commits_since_last_clean(timeline) < config.max_commits:
        return []
    try:
        return clean(base, opts, thorough=False)
    except HudiLayoutError as e:
        log.warning("automatic clean of %s failed: %s%s", base, e, f" (hint: {e.hint})" if e.hint else "")
        return []
