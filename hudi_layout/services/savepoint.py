"""Savepoints (Hudi's ``savepoint`` action, docs/savepoints.md): pin one commit's snapshot against cleaning.

``create`` (under the table lock) lists the files a read as of a completed commit ``T`` needs, writes
``T.savepoint.inflight`` and then the completed savepoint with that list (Avro ``HoodieSavepointMetadata``) in one
atomic rename. From then on no clean, ours or Hudi's, deletes those files, so time travel to ``T`` keeps working
whatever the retention settings, and a restore (ours or Hudi's) can take the table back to ``T``. ``delete`` removes the
completed file, then the inflight one (Hudi's order); the next clean may delete what it pinned.

Hudi's rules are kept: only a completed commit (``commit`` / ``deltacommit`` / ``replacecommit``) can be
savepointed, and not one older than the earliest commit the last clean retained (its files may be gone). We
also refuse while a clean is pending (its plan was made without the new savepoint), while a write requested
before ``T`` is still pending (its files, committed later, would count as of ``T`` and not be pinned), and when
a read as of ``T`` already misses a cleaned file.

``restore`` (Hudi's ``restore`` action) takes the table back to a savepoint: under the table lock it writes
``R.restore.requested`` (Avro ``HoodieRestorePlan``: every write-timeline instant requested after ``T``, newest
first) and ``R.restore.inflight``, drops the metadata table (rebuilt at the end), then per instant removes its
timeline files first (from then on its files are uncommitted for every reader) and its data files after, and
completes ``R_C.restore`` (``HoodieRestoreMetadata``). Killed anywhere, the pending restore stops every other
command; running the same restore again finishes it.
"""

from __future__ import annotations

import getpass
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudi_layout.errors import CommitConflictError, InvalidArgumentError, UnsupportedTableError
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import Action, require
from hudi_layout.format.clean_metadata import decode_clean_metadata, decode_cleaner_plan
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import State, new_instant_time
from hudi_layout.format.properties import TableProperties, load_properties, metadata_table_exists
from hudi_layout.format.savepoint_metadata import (
    RestorePlan,
    SavepointMetadata,
    decode_restore_plan,
    restore_metadata_bytes,
    restore_plan_bytes,
    savepoint_metadata_bytes,
)
from hudi_layout.table.commit_protocol import (
    files_named_with,
    instant_path,
    latest_time_with_metadata,
    pending_write_instants,
    refuse_pending_restore,
    rollback_metadata_record,
    timeline_dir,
    write_completed_instant,
)
from hudi_layout.table.faults import crash_point
from hudi_layout.table.fs_view import FileSystemView
from hudi_layout.table.locks import TableLock, writer_is_alive
from hudi_layout.table.paths import table_dir
from hudi_layout.table.savepoints import completed_savepoints, pending_savepoints
from hudi_layout.table.timeline import Timeline
from hudi_layout.writer.metadata_sync import drop_metadata_table_locked

#: the actions a savepoint can pin (Hudi's completed commits timeline)
SAVEPOINTABLE_ACTIONS = (inst.COMMIT, inst.DELTA_COMMIT, inst.REPLACE_COMMIT)
#: the instants a restore rolls back when requested after its savepoint (Hudi's write timeline)
RESTORED_ACTIONS = frozenset({inst.COMMIT, inst.DELTA_COMMIT, inst.REPLACE_COMMIT, inst.CLUSTERING, inst.COMPACTION,
                              inst.LOG_COMPACTION})


@dataclass(frozen=True)
class SavepointInfo:
    """One savepoint of a table, as ``list`` shows it."""

    instant_time: str
    #: "completed", or "inflight" for one begun and never completed (it pins nothing)
    state: str
    savepointed_by: str = ""
    #: milliseconds since the epoch
    savepointed_at_ms: int = 0
    comments: str = ""
    files: int = 0
    partitions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _writable(path: str) -> tuple[Path, TableProperties]:
    """The table's base folder and properties, refused before any lock unless we may write its timeline."""
    base = table_dir(path)
    props = load_properties(base / ".hoodie")
    require(props, Action.SAVEPOINT)
    return base, props


def _is_savepointed(timeline: Timeline, instant_time: str) -> bool:
    return any(s.instant_time == instant_time for s in completed_savepoints(timeline))


def _refuse_pending_clean(base: Path, timeline: Timeline, then: str) -> None:
    """A pending clean was planned without what is about to change (a new savepoint, a restore)."""
    pending = next(iter(timeline.pending().actions(inst.CLEAN)), None)
    if pending is not None:
        raise UnsupportedTableError(f"{base}: clean {pending.requested_time} is pending; it was planned before this "
                                    f"{then}", hint=f"finish it first ('hudi-layout clean PATH'), then {then}")


def list_savepoints(path: str) -> list[SavepointInfo]:
    """Every savepoint on the table's timeline, oldest first (inflight ones included, marked so)."""
    base = table_dir(path)
    timeline = Timeline.of_table(base / ".hoodie", load_properties(base / ".hoodie"))
    out = [SavepointInfo(s.instant_time, "completed", s.metadata.savepointed_by, s.metadata.savepointed_at_ms,
                         s.metadata.comments, s.metadata.file_count, len(s.metadata.files))
           for s in completed_savepoints(timeline)]
    out += [SavepointInfo(i.requested_time, "inflight") for i in pending_savepoints(timeline)]
    return sorted(out, key=lambda s: s.instant_time)


def _lookup_window(base: Path, timeline: Timeline) -> str:
    """Hudi's bound: the earliest commit the last clean retained (its plan's, when pending); without a clean,
    the first completed commit."""
    last = timeline.actions(inst.CLEAN).last()
    if last is None:
        first = timeline.commits_and_replaces().completed().first()
        return first.requested_time if first is not None else ""
    if last.is_completed:
        meta = decode_clean_metadata(timeline.read_bytes(last), str(timeline.path_of(last)))
        return meta.earliest_commit_to_retain
    for f in timeline.instant_files(last.requested_time):
        if f.state is State.REQUESTED:
            plan = decode_cleaner_plan(timeline.read_bytes(f), base, str(timeline.path_of(f)))
            return (plan.earliest_instant_to_retain or ("", ""))[0]
    return ""


def create_savepoint(path: str, instant_time: str | None = None, *, user: str | None = None,
                     comment: str = "") -> SavepointInfo:
    """Savepoint the completed commit ``instant_time`` (default: the latest completed commit). A savepoint left
    inflight at that instant by a process that stopped is completed."""
    base, props = _writable(path)
    with TableLock(base):
        props = load_properties(base / ".hoodie")
        refuse_pending_restore(base, props)  # a half-restored table pins nothing new
        timeline = Timeline.of_table(base / ".hoodie", props)
        commits = timeline.commits_and_replaces().completed().actions(*SAVEPOINTABLE_ACTIONS)
        if instant_time is None:
            last = commits.last()
            if last is None:
                raise InvalidArgumentError(f"{base}: the table has no completed commit to savepoint",
                                           hint="write to the table first")
            instant_time = last.requested_time
        target = commits.get(instant_time)
        if target is None:
            raise InvalidArgumentError(
                f"{base}: {instant_time} is not a completed commit of the table, so it cannot be savepointed",
                hint="pick a completed commit, deltacommit or replacecommit time ('hudi-layout inspect PATH' "
                     "lists them)")
        if _is_savepointed(timeline, instant_time):
            raise InvalidArgumentError(f"{base}: commit {instant_time} is savepointed already",
                                       hint="'hudi-layout savepoint list PATH' shows the savepoints")
        _refuse_pending_clean(base, timeline, "savepoint")
        earlier = sorted(i.requested_time for i in pending_write_instants(base, props)
                         if i.requested_time < instant_time)
        if earlier:
            raise UnsupportedTableError(
                f"{base}: write {earlier[0]} requested before {instant_time} is still pending: once it completes, a "
                f"read as of {instant_time} includes its files, which this savepoint could not pin",
                hint="savepoint after it completes or is rolled back")
        window = _lookup_window(base, timeline)
        if window and instant_time < window:
            raise InvalidArgumentError(
                f"{base}: commit {instant_time} is older than the earliest commit the last clean retained "
                f"({window}); its files may be gone", hint=f"savepoint a commit at or after {window}")
        view = FileSystemView(base, timeline, props.base_file_extension).view(instant_time)
        if view.cleaned_away:
            clean_time, name = view.cleaned_away[-1]
            raise InvalidArgumentError(
                f"{base}: a read as of {instant_time} needs {len(view.cleaned_away)} file(s) the clean at "
                f"{clean_time} deleted (e.g. {name})", hint="savepoint a later commit")
        files: dict[str, list[str]] = {}
        for sl in view.slices:
            files.setdefault(sl.partition_path, []).extend(sl.file_names)
        metadata = SavepointMetadata(user if user is not None else _user(), int(time.time() * 1000), comment,
                                     {p: tuple(names) for p, names in files.items()})
        inflight = instant_path(base, props, instant_time, inst.SAVEPOINT, State.INFLIGHT)
        if not inflight.exists():
            atomic_write(inflight, b"", base / ".hoodie" / ".temp")
        write_completed_instant(base, props, instant_time, inst.SAVEPOINT, savepoint_metadata_bytes(metadata))
    return SavepointInfo(instant_time, "completed", metadata.savepointed_by, metadata.savepointed_at_ms, comment,
                         metadata.file_count, len(metadata.files))


def delete_savepoint(path: str, instant_time: str) -> None:
    """Remove the savepoint at ``instant_time`` (completed or left inflight); the files it pinned become the
    cleaner's to judge again."""
    base, props = _writable(path)
    with TableLock(base):
        refuse_pending_restore(base, props)  # the restore may still need its savepoint
        timeline = Timeline.of_table(base / ".hoodie", props)
        files = [f for f in timeline.instant_files(instant_time) if f.action == inst.SAVEPOINT]
        if not files:
            raise InvalidArgumentError(f"{base}: there is no savepoint at {instant_time}",
                                       hint="'hudi-layout savepoint list PATH' shows the savepoints")
        # the completed file first: a stop in between leaves an inflight savepoint, which pins nothing and
        # which the next delete (or create) at the same instant finishes
        for f in sorted(files, key=lambda f: f.state is not State.COMPLETED):
            timeline.path_of(f).unlink(missing_ok=True)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


# ------------------------------------------------------------------------------------------------- restore


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did."""

    restore_time: str
    savepoint_time: str
    #: ``(requested time, action)`` of the instants rolled back, newest first
    rolled_back: tuple[tuple[str, str], ...]
    files_deleted: int
    seconds: float
    #: the restore was begun by a process that stopped and finished here
    resumed: bool = False
    #: savepoints of rolled-back commits, deleted with them
    savepoints_deleted: tuple[str, ...] = ()
    #: what rebuilding the metadata table returned (empty when the table had none)
    index: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "rolled_back": [list(i) for i in self.rolled_back]}


def restore_to_savepoint(path: str, instant_time: str, *,
                         rebuild_index: Callable[[str], dict[str, Any]] | None = None) -> RestoreResult:
    """Take the table back to its savepoint at ``instant_time`` (see the module docstring); ``rebuild_index``
    builds the metadata table again afterwards (given the table path) when the table had one."""
    base, props = _writable(path)
    started = time.time()
    with TableLock(base):
        props = load_properties(base / ".hoodie")
        timeline = Timeline.of_table(base / ".hoodie", props)
        restore_time, plan, resumed = _restore_plan(base, props, timeline, instant_time)
        # a resumed restore may have dropped the metadata table already: it is built again then too
        had_mdt = metadata_table_exists(base) or resumed
        crash_point("restore.after_plan")
        if metadata_table_exists(base):
            drop_metadata_table_locked(base, why=None)
        crash_point("restore.after_mdt")
        undone = frozenset(t for t, _a in plan.instants)
        files = files_named_with(base, undone, with_logs=props.is_mor and props.version >= 8)
        later_savepoints = sorted({f.requested_time for f in timeline.files
                                   if f.action == inst.SAVEPOINT and f.requested_time in undone})
        rolled: dict[tuple[str, str], dict[str, Any]] = {}
        deleted = 0
        for n, (t, action) in enumerate(plan.instants):  # newest first
            one_started = time.time()
            # the instant leaves the timeline first: from then on its files are uncommitted for every reader
            for f in sorted(timeline.instant_files(t), key=lambda f: f.state is not State.COMPLETED):
                timeline.path_of(f).unlink(missing_ok=True)
            if n == 0:
                crash_point("restore.mid_instants")
            for p in files.get(t, []):
                p.unlink(missing_ok=True)
            deleted += len(files.get(t, []))
            shutil.rmtree(base / ".hoodie" / ".temp" / t, ignore_errors=True)
            (base / ".hoodie" / ".heartbeat" / t).unlink(missing_ok=True)
            rolled[(t, action)] = rollback_metadata_record(base, restore_time, t, action, files.get(t, []),
                                                           one_started)
        crash_point("restore.before_complete")
        write_completed_instant(base, props, restore_time, inst.RESTORE,
                                restore_metadata_bytes(restore_time, int((time.time() - started) * 1000), rolled))
    index: dict[str, Any] = {}
    if had_mdt and rebuild_index is not None:
        index = rebuild_index(str(base))
    return RestoreResult(restore_time, plan.savepoint_time, plan.instants, deleted, time.time() - started,
                         resumed, tuple(later_savepoints), index)


def _restore_plan(base: Path, props: TableProperties, timeline: Timeline, savepoint_time: str
                  ) -> tuple[str, RestorePlan, bool]:
    """The restore to run (call under the table lock): a pending one to ``savepoint_time`` is resumed (its plan
    as written); otherwise a new plan is checked and written. Returns (restore time, plan, resumed)."""
    pending = list(timeline.pending().actions(inst.RESTORE))
    if pending:
        r = pending[0].requested_time
        requested = instant_path(base, props, r, inst.RESTORE, State.REQUESTED)
        plan = decode_restore_plan(requested.read_bytes(), str(requested))
        if plan.savepoint_time != savepoint_time:
            raise UnsupportedTableError(
                f"{base}: restore {r} to savepoint {plan.savepoint_time or '?'} is pending; it must finish first",
                hint=f"hudi-layout savepoint restore {base} {plan.savepoint_time}")
        inflight = instant_path(base, props, r, inst.RESTORE, State.INFLIGHT)
        if not inflight.exists():
            atomic_write(inflight, b"", base / ".hoodie" / ".temp")
        return r, plan, True
    if not _is_savepointed(timeline, savepoint_time):
        raise InvalidArgumentError(f"{base}: there is no savepoint at {savepoint_time}",
                                   hint="'hudi-layout savepoint list PATH' shows the savepoints")
    live = [i.requested_time for i in timeline.pending() if writer_is_alive(base, i.requested_time)]
    if live:
        raise CommitConflictError(f"{base}: instant {live[0]} is being written by a live process",
                                  hint="stop that writer (or wait for it), then restore")
    _refuse_pending_clean(base, timeline, "restore")
    undo = sorted(((i.requested_time, i.action) for i in timeline
                   if i.requested_time > savepoint_time and i.action in RESTORED_ACTIONS), reverse=True)
    plan = RestorePlan(savepoint_time, tuple(undo))
    r = new_instant_time(latest_time_with_metadata(base, props), use_utc=props.timeline_timezone == "UTC")
    temp = base / ".hoodie" / ".temp"
    timeline_dir(base, props).mkdir(parents=True, exist_ok=True)
    atomic_write(instant_path(base, props, r, inst.RESTORE, State.REQUESTED), restore_plan_bytes(plan), temp)
    atomic_write(instant_path(base, props, r, inst.RESTORE, State.INFLIGHT), b"", temp)
    return r, plan, False
