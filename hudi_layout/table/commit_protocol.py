"""The commit protocol: every change to a table becomes visible atomically, or not at all.

Sequence for one write (see docs/ARCHITECTURE.md):

1. under the table lock: roll back writes whose writer died, pick a new instant time ``T``, write
   ``T.<action>.requested`` and the inflight file, start a heartbeat for ``T``;
2. (outside the lock) executors write data files, each announced by a DIRECT marker first;
3. under the table lock: the caller's conflict check, the metadata-table deltacommit for ``T``, then the
   completed instant file, written to a temporary name and renamed into the timeline (one atomic
   ``rename``), then the marker folder is removed.

Readers only see files of completed instants, so a crash before step 3's rename leaves the table as it
was; the next writer rolls the pending instant back (deleting its files, its MDT entries and its
pending instant files, and recording a completed ``rollback`` instant as Hudi does).

The metadata table lives in a layer above this one: removing a failed instant's MDT entries is a hook the
caller passes (:class:`CommitHooks`). Rolling back an instant of a table that has a metadata table without
that hook raises before anything is touched (fail closed), so no caller can silently leave entries behind.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hudi_layout.errors import CommitConflictError, CorruptFileError, InvalidArgumentError, UnsupportedTableError
from hudi_layout.format import instant as inst
from hudi_layout.format.commit_metadata import (
    commit_metadata_bytes,
    decode_requested_replace,
    decode_timeline_content,
    rollback_metadata_bytes,
    rollback_plan_bytes,
)
from hudi_layout.format.file_naming import try_parse_base_file_name, try_parse_data_log_file_name
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import Instant, State, instant_file_name, new_instant_time, parse_instant_file_name
from hudi_layout.format.properties import (
    TableProperties,
    load_properties,
    metadata_table_exists,
    recover_table_config,
)
from hudi_layout.format.savepoint_metadata import decode_restore_plan
from hudi_layout.table.faults import crash_point
from hudi_layout.table.file_guard import FileGate, close_gate, open_gate
from hudi_layout.table.locks import Heartbeat, TableLock, heartbeat_path, writer_is_alive

WRITE_ACTIONS = (inst.COMMIT, inst.DELTA_COMMIT, inst.REPLACE_COMMIT, inst.CLUSTERING, inst.COMPACTION)


@dataclass(frozen=True)
class CommitHooks:
    """What the commit protocol delegates to the layers above it (which it may not import)."""

    #: removes what a failed data instant wrote into the metadata table: ``rollback_metadata(base, instant)``.
    #: Required to roll back instants of a table that has a metadata table.
    rollback_metadata: Callable[[Path, str], object] | None = None


NO_HOOKS = CommitHooks()


def timeline_dir(base_path: str | os.PathLike[str], props: TableProperties) -> Path:
    hoodie = Path(base_path) / ".hoodie"
    return hoodie / props.timeline_path if props.timeline_layout_version >= 2 else hoodie


def instant_path(base_path: str | os.PathLike[str], props: TableProperties, instant_time: str, action: str,
                 state: State, completion_time: str | None = None) -> Path:
    """Where the timeline file of ``instant_time`` / ``action`` in ``state`` lives (the table's layout)."""
    return timeline_dir(base_path, props) / instant_file_name(instant_time, action, state, completion_time,
                                                              layout_version=props.timeline_layout_version)


def write_completed_instant(base: Path, props: TableProperties, instant_time: str, action: str,
                            payload: bytes) -> None:
    """Complete ``instant_time`` / ``action`` in one atomic rename: the completed file (``T_C.action`` on layout
    2, with a completion time above every instant of the table and its metadata table; ``T.action`` on layout
    1) holding ``payload``. Call under the table lock."""
    completion = new_instant_time(latest_time_with_metadata(base, props), use_utc=props.timeline_timezone == "UTC")
    atomic_write(instant_path(base, props, instant_time, action, State.COMPLETED,
                              completion if props.timeline_layout_version >= 2 else None),
                 payload, base / ".hoodie" / ".temp")


def list_instants(base_path: str | os.PathLike[str], props: TableProperties) -> list[Instant]:
    """Every instant file of the active timeline, parsed and sorted (requested time, then state)."""
    tdir = timeline_dir(base_path, props)
    if not tdir.is_dir():
        return []
    out = []
    for entry in os.scandir(tdir):
        if entry.is_file():
            parsed = parse_instant_file_name(entry.name)
            if parsed is not None:
                out.append(parsed)
    out.sort(key=lambda i: i.sort_key)
    return out


def latest_time_on_timeline(instants: Iterable[Instant]) -> str | None:
    latest: str | None = None
    for i in instants:
        for t in (i.requested_time, i.completion_time):
            if t and (latest is None or t > latest):
                latest = t
    return latest


def latest_time_with_metadata(base: Path, props: TableProperties) -> str | None:
    """Greatest instant time on the data timeline and on the metadata table's timeline.

    New instants (data writes under the table lock, MDT compactions under the same lock) are generated
    above both, so a data instant can never collide with an MDT-only instant such as a compaction.
    """
    latest = latest_time_on_timeline(list_instants(base, props))
    mdt_timeline = base / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    if mdt_timeline.is_dir():
        for entry in os.scandir(mdt_timeline):
            parsed = parse_instant_file_name(entry.name)
            if parsed is None:
                continue
            for t in (parsed.requested_time, parsed.completion_time):
                if t and (latest is None or t > latest):
                    latest = t
    return latest


class HeartbeatHandle(Protocol):
    """What a pending write needs of its heartbeat (a :class:`Heartbeat`, or a stand-in in another process)."""

    def stop(self, *, delete: bool = True) -> None: ...


@dataclass
class PendingWrite:
    """A started, not yet completed instant owned by this process."""

    base_path: Path
    props: TableProperties
    instant_time: str
    action: str
    heartbeat: HeartbeatHandle
    lock: TableLock
    completed: bool = False
    extra_cleanup: list[Path] = field(default_factory=list)
    hooks: CommitHooks = NO_HOOKS
    #: the heartbeat token of this attempt (executors compare it before creating files)
    token: str = ""

    @property
    def timeline(self) -> Path:
        return timeline_dir(self.base_path, self.props)

    @property
    def file_gate(self) -> FileGate:
        """What executors check before each file they create (see :mod:`hudi_layout.table.file_guard`)."""
        inflight = self.timeline / instant_file_name(self.instant_time, self.action, State.INFLIGHT,
                                                     layout_version=self.props.timeline_layout_version)
        heartbeat = self.base_path / ".hoodie" / ".heartbeat" / self.instant_time
        return FileGate(str(self.base_path), self.instant_time, str(inflight), str(heartbeat), self.token)

    @property
    def marker_dir(self) -> Path:
        return self.base_path / ".hoodie" / ".temp" / self.instant_time


def begin_write(
    base_path: str | os.PathLike[str],
    action: str,
    *,
    requested_bytes: bytes = b"",
    inflight_bytes: bytes | None = None,
    lock: TableLock | None = None,
    rollback_failed: bool = True,
    hooks: CommitHooks = NO_HOOKS,
) -> PendingWrite:
    """Start instant ``T`` for ``action`` (commit, replacecommit or clustering) and return its handle.

    ``inflight_bytes=None`` writes Hudi's default inflight content for the action (an empty commit
    metadata workload profile for commits, nothing for clustering). ``hooks`` serve the rollbacks of failed
    writes done here and by :func:`abort_write`.
    """
    base = Path(base_path)
    lock = lock or TableLock(base)
    with lock:
        props = load_properties(base / ".hoodie")
        if rollback_failed:
            rollback_failed_writes(base, props, lock=lock, hooks=hooks)
        t = new_instant_time(latest_time_with_metadata(base, props), use_utc=props.timeline_timezone == "UTC")
        tdir = timeline_dir(base, props)
        tdir.mkdir(parents=True, exist_ok=True)
        layout = props.timeline_layout_version
        if inflight_bytes is None:
            if action in (inst.COMMIT, inst.DELTA_COMMIT) or (action == inst.REPLACE_COMMIT and props.version >= 8):
                inflight_bytes = commit_metadata_bytes({"partitionToWriteStats": {}, "extraMetadata": {}},
                                                       props.version)
            else:
                inflight_bytes = b""
        heartbeat = Heartbeat(base, t)
        pending = PendingWrite(base, props, t, action, heartbeat, lock, hooks=hooks, token=heartbeat.token)
        tmp = base / ".hoodie" / ".temp"
        try:
            atomic_write(tdir / instant_file_name(t, action, State.REQUESTED, layout_version=layout),
                          requested_bytes, tmp)
            crash_point("begin.after_requested")
            atomic_write(tdir / instant_file_name(t, action, State.INFLIGHT, layout_version=layout),
                          inflight_bytes, tmp)
            (base / ".hoodie" / ".temp" / t).mkdir(parents=True, exist_ok=True)
            open_gate(base, t)
        except BaseException:
            abort_write(pending)  # e.g. a full disk: leave nothing behind, release the heartbeat
            raise
    crash_point("begin.after_inflight")
    return pending


def resume_clustering(base_path: str | os.PathLike[str], instant_time: str, *,
                      lock: TableLock | None = None, hooks: CommitHooks = NO_HOOKS) -> PendingWrite:
    """Take ownership of a pending clustering plan ``instant_time`` and move it to inflight."""
    return _resume_plan(Path(base_path), instant_time, "clustering", lock=lock, hooks=hooks)


def resume_compaction(base_path: str | os.PathLike[str], instant_time: str, *,
                      lock: TableLock | None = None, hooks: CommitHooks = NO_HOOKS) -> PendingWrite:
    """Take ownership of a pending compaction plan ``instant_time`` (ours or Hudi's) and move it to inflight.

    An inflight compaction whose executor is gone is rolled back to its plan first (its files deleted), as
    Hudi's compactor does before it runs a plan again; this includes one Hudi executed without a heartbeat,
    which :func:`rollback_failed_writes` leaves alone (asking to execute it is the user's decision)."""
    return _resume_plan(Path(base_path), instant_time, "compaction", lock=lock, hooks=hooks)


def _resume_plan(base: Path, instant_time: str, kind: str, *, lock: TableLock | None,
                 hooks: CommitHooks) -> PendingWrite:
    lock = lock or TableLock(base)
    with lock:
        props = load_properties(base / ".hoodie")
        if writer_is_alive(base, instant_time):
            raise CommitConflictError(f"{kind} {instant_time} is being executed by another process")
        if any(i.requested_time == instant_time and i.is_completed for i in list_instants(base, props)):
            # another process executed the plan since the caller saw it pending (the gap between a plan and
            # its execution): running it again would write a second set of its files
            raise CommitConflictError(f"{kind} {instant_time} was completed by another process meanwhile",
                                      hint="nothing left to do for it; hudi-layout inspect shows the table")
        rollback_failed_writes(base, props, lock=lock, hooks=hooks)
        tdir = timeline_dir(base, props)
        layout = props.timeline_layout_version
        if kind == "compaction":
            action = inst.COMPACTION
            stale = next((i for i in pending_write_instants(base, props)
                          if i.requested_time == instant_time and i.state is State.INFLIGHT), None)
            if stale is not None:  # executed before without a heartbeat (Hudi's executor), now gone
                _rollback_instant(base, props, stale, record=False, keep_plan=True, hooks=hooks)
        else:
            action = inst.CLUSTERING if layout >= 2 and (
                tdir / instant_file_name(instant_time, inst.CLUSTERING, State.REQUESTED)).exists() \
                else inst.REPLACE_COMMIT
        req = tdir / instant_file_name(instant_time, action, State.REQUESTED, layout_version=layout)
        if not req.exists():
            raise InvalidArgumentError(f"no pending {kind} plan {instant_time} in {tdir}")
        heartbeat = Heartbeat(base, instant_time)
        infl = tdir / instant_file_name(instant_time, action, State.INFLIGHT, layout_version=layout)
        try:
            if not infl.exists():
                atomic_write(infl, b"", base / ".hoodie" / ".temp")
            (base / ".hoodie" / ".temp" / instant_time).mkdir(parents=True, exist_ok=True)
            open_gate(base, instant_time)
        except BaseException:
            heartbeat.stop()
            raise
    crash_point("cluster.after_inflight" if kind == "clustering" else "compact.after_inflight")
    return PendingWrite(base, props, instant_time, action, heartbeat, lock, hooks=hooks, token=heartbeat.token)


def complete_write(
    pending: PendingWrite,
    metadata_bytes: bytes | Callable[[], bytes],
    *,
    committed_files: Iterable[str] = (),
    before_complete: Callable[[PendingWrite], None] | None = None,
) -> str:
    """Finish ``pending``: run ``before_complete`` (conflict check + MDT update) under the lock, then
    make the instant visible with one atomic rename. Returns the completion time.

    ``metadata_bytes`` may be a function, called under the lock after ``before_complete`` (commit metadata that
    depends on the table's state at completion, e.g. its latest schema). ``committed_files`` are the
    partition-relative paths the commit metadata lists; any other file the
    markers name (a retried Spark task's leftovers) is deleted first, as Hudi's marker reconciliation does.

    The instant's file gate is closed first (waiting for file creations in progress), so no executor can add
    a file once the markers have been reconciled.

    Crash points (:mod:`hudi_layout.table.faults`): ``before_mdt`` (files written, MDT not updated),
    ``before_complete`` (MDT updated, instant still pending), ``commit.after_complete`` (committed, markers
    and heartbeat not yet cleaned up).
    """
    base = pending.base_path
    with pending.lock:
        _check_still_pending(pending)
        close_gate(base, pending.instant_time)
        _reconcile_markers(pending, set(committed_files))
        crash_point("before_mdt")
        if before_complete is not None:
            before_complete(pending)
        if callable(metadata_bytes):
            metadata_bytes = metadata_bytes()
        instants = list_instants(base, pending.props)
        completion = new_instant_time(latest_time_on_timeline(instants),
                                      use_utc=pending.props.timeline_timezone == "UTC")
        done_action = inst.COMPLETED_ACTION.get(pending.action, pending.action)
        layout = pending.props.timeline_layout_version
        name = instant_file_name(pending.instant_time, done_action, State.COMPLETED,
                                 completion if layout >= 2 else None, layout_version=layout)
        crash_point("before_complete")
        atomic_write(pending.timeline / name, metadata_bytes, base / ".hoodie" / ".temp")
        pending.completed = True
        crash_point("commit.after_complete")
        shutil.rmtree(pending.marker_dir, ignore_errors=True)
    pending.heartbeat.stop()
    return completion


def _check_still_pending(pending: PendingWrite) -> None:
    """Refuse to complete an instant that someone rolled back (e.g. after judging this writer dead)."""
    layout = pending.props.timeline_layout_version
    infl = pending.timeline / instant_file_name(pending.instant_time, pending.action, State.INFLIGHT,
                                                layout_version=layout)
    if not infl.exists():
        raise CommitConflictError(
            f"instant {pending.instant_time} is no longer inflight (rolled back by another process); "
            "its files may be gone, so it cannot complete")


def _marker_files(marker_dir: Path) -> list[str]:
    out: list[str] = []
    if not marker_dir.is_dir():
        return out
    for root, _dirs, files in os.walk(marker_dir):
        rel_root = os.path.relpath(root, marker_dir)
        for f in files:
            if ".marker." in f:
                data_name = f.split(".marker.")[0]
                out.append(data_name if rel_root == "." else f"{rel_root}/{data_name}")
    return out


def _reconcile_markers(pending: PendingWrite, committed: set[str]) -> None:
    for rel in _marker_files(pending.marker_dir):
        if rel not in committed:
            try:
                (pending.base_path / rel).unlink()
            except FileNotFoundError:
                pass


def abort_write(pending: PendingWrite) -> None:
    """Roll back our own failed write right away (bad input found mid-write, an exception...).

    Never an instant the timeline shows completed: ``pending.completed`` is this object's view, and a copy
    of it (the data source writer is pickled into Spark's Python workers; Spark calls ``abort`` in another
    worker when the one running ``commit`` dies) may not know that the commit finished. Rolling back a
    completed instant deleted its data files under a completed commit (crash probe, session 27)."""
    if pending.completed:
        return
    try:
        with pending.lock:
            instant = _instant_to_undo(pending)
            if instant is not None:  # None: its commit completed in another process, nothing to undo
                _rollback_instant(pending.base_path, pending.props, instant, record=False, hooks=pending.hooks)
    finally:
        pending.heartbeat.stop()  # whatever happened: never keep holding the heartbeat of a dead instant


def _instant_to_undo(pending: PendingWrite) -> Instant | None:
    """The pending write's instant as the timeline shows it now (one listing): None when it completed, a
    ``requested`` stand-in when none of its files is there yet."""
    mine = [i for i in list_instants(pending.base_path, pending.props) if i.requested_time == pending.instant_time]
    if any(i.is_completed for i in mine):
        return None
    for i in mine:
        if i.is_pending:
            return i
    return Instant(pending.instant_time, pending.action, State.REQUESTED, None, "")


def _is_plan(base: Path, props: TableProperties, i: Instant) -> bool:
    """A clustering or a compaction: a plan that stays when its execution fails (it goes back to requested)."""
    if i.action in (inst.CLUSTERING, inst.COMPACTION):
        return True
    if i.action != inst.REPLACE_COMMIT:
        return False
    req = timeline_dir(base, props) / instant_file_name(i.requested_time, i.action, State.REQUESTED,
                                                        layout_version=props.timeline_layout_version)
    try:
        data = req.read_bytes()
    except FileNotFoundError:
        return False
    if not data:
        return False
    return (decode_requested_replace(data).get("operationType") or "") == "CLUSTER"


def pending_write_instants(base: Path, props: TableProperties) -> list[Instant]:
    """Pending instants of write actions, one per requested time (the most advanced state)."""
    instants = list_instants(base, props)
    completed = {i.requested_time for i in instants if i.is_completed}
    by_time: dict[str, Instant] = {}
    for i in instants:
        if i.is_pending and i.action in WRITE_ACTIONS and i.requested_time not in completed:
            prev = by_time.get(i.requested_time)
            if prev is None or i.state is State.INFLIGHT:
                by_time[i.requested_time] = i
    return sorted(by_time.values(), key=lambda i: i.requested_time)


def rollback_failed_writes(base_path: str | os.PathLike[str], props: TableProperties | None = None, *,
                           lock: TableLock | None = None, hooks: CommitHooks = NO_HOOKS) -> list[str]:
    """Roll back every pending write whose writer is gone. Returns the rolled-back instant times.

    A pending *clustering* or *compaction* that was never started (requested only) is a plan, not a failure:
    it stays. An inflight one whose executor died goes back to requested (its files are deleted) so the
    next run executes the same plan again, as Hudi does. An inflight compaction without any heartbeat file
    was started by Hudi's compactor (ours always leaves one until it is done): it is left to its executor.

    First, a rollback that was itself interrupted (a pending ``rollback`` instant: rollbacks run under the
    table lock, so its process is gone) is finished; last, marker folders of instants that are no longer
    pending (left by a crash after completion, or re-created by an executor that outlived its writer) are
    swept, deleting the files their markers name when those belong to no completed instant.
    """
    base = Path(base_path)
    lock = lock or TableLock(base)
    done = []
    with lock:
        props = props or load_properties(base / ".hoodie")
        refuse_pending_restore(base, props)
        recover_table_config(base / ".hoodie")
        done.extend(_finish_interrupted_rollbacks(base, props, hooks))
        for i in pending_write_instants(base, props):
            if writer_is_alive(base, i.requested_time):
                continue
            plan = _is_plan(base, props, i)
            if plan and i.state is State.REQUESTED:
                continue
            if i.action == inst.COMPACTION and not heartbeat_path(base, i.requested_time).exists():
                continue  # executed by Hudi, which keeps no heartbeat for compactions: never ours to undo
            _rollback_instant(base, props, i, record=not plan, keep_plan=plan, hooks=hooks)
            done.append(i.requested_time)
        _sweep_stray_markers(base, props)
    return done


def refuse_pending_restore(base: Path, props: TableProperties) -> None:
    """Refuse to change a table whose ``restore`` is pending, as Hudi's writers do before any new instant.

    A restore rolls back every instant after a savepoint, one by one; cut short, it leaves some of them
    undone, and only Hudi's restore (run again to the same savepoint) knows which ones were meant to go.
    Every operation that changes the table passes through :func:`rollback_failed_writes` first, so this one
    check stops them all before they touch anything. Reads go on, as Hudi's readers do.
    """
    restores = [i for i in list_instants(base, props) if i.action == inst.RESTORE]
    done = {i.requested_time for i in restores if i.is_completed}  # a completed one keeps its other state files
    pending = sorted({i.requested_time for i in restores} - done)
    if pending:
        target = pending_restore_target(base, props, pending[0])
        how = (f"run 'hudi-layout savepoint restore {base} {target}' again (or Hudi's restore to that savepoint)"
               if target else "finish the restore with Hudi (run the same restore to its savepoint again)")
        raise UnsupportedTableError(
            f"{base}: a restore is pending (instant {', '.join(pending)}); the table may be half restored, "
            "so hudi_layout changes nothing until it is finished", hint=f"{how}, then retry")


def pending_restore_target(base: Path, props: TableProperties, restore_time: str) -> str:
    """The savepoint a pending restore goes back to, from its ``restore.requested`` plan ("" when unreadable)."""
    path = instant_path(base, props, restore_time, inst.RESTORE, State.REQUESTED)
    try:
        return decode_restore_plan(path.read_bytes(), str(path)).savepoint_time
    except (OSError, CorruptFileError):
        return ""


def rollback_pending_instant(base_path: str | os.PathLike[str], instant_time: str, *,
                             lock: TableLock | None = None, hooks: CommitHooks = NO_HOOKS) -> bool:
    """Roll back one pending instant for good, plan included (a Hudi ``rollback`` instant records it): how a
    pending clustering is abandoned. Refused while its writer is alive; ``False`` when it is not pending."""
    base = Path(base_path)
    lock = lock or TableLock(base)
    with lock:
        props = load_properties(base / ".hoodie")
        if writer_is_alive(base, instant_time):
            raise CommitConflictError(f"instant {instant_time} is being written by a live process",
                                      hint="stop that writer (or wait for it) first")
        target = next((i for i in pending_write_instants(base, props) if i.requested_time == instant_time), None)
        if target is None:
            return False
        _rollback_instant(base, props, target, record=True, keep_plan=False, hooks=hooks)
    return True


def _files_of_instant(base: Path, t: str, *, with_logs: bool = False) -> list[Path]:
    """Data files named with instant ``t``: from markers, plus a scan of partition folders. ``with_logs`` (a
    Merge-on-Read table of version 8 / 9, whose log files are named after the deltacommit that wrote them):
    its log files too, as Hudi's rollback of a failed deltacommit deletes them. A version-6 log file is named
    after its slice's base instant and holds committed blocks: never taken."""
    found: dict[str, Path] = {}
    for rel in _marker_files(base / ".hoodie" / ".temp" / t):
        if _named_with(rel.rsplit("/", 1)[-1], with_logs) == t and ".." not in rel.split("/"):
            found[rel] = base / rel
    for p in files_named_with(base, frozenset({t}), with_logs=with_logs).get(t, []):
        found[str(p.relative_to(base))] = p
    return list(found.values())


def _named_with(name: str, with_logs: bool) -> str | None:
    """The instant time a data file's name carries: a base file's; with ``with_logs`` a (version 8 / 9) log
    file's, the deltacommit that wrote it."""
    parsed = try_parse_base_file_name(name)
    if parsed is not None:
        return parsed.instant_time
    log = try_parse_data_log_file_name(name) if with_logs else None
    return log.instant_time if log is not None else None


def files_named_with(base: Path, times: frozenset[str], *, with_logs: bool) -> dict[str, list[Path]]:
    """Data files whose names carry one of the instant ``times`` (base files; with ``with_logs``, the log files
    of a Merge-on-Read table of version 8 / 9, named after the deltacommit that wrote them), by that time: one
    walk of the partition folders (a restore undoes many instants at once)."""
    found: dict[str, list[Path]] = {}
    for root, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            t = _named_with(f, with_logs)
            if t in times:
                found.setdefault(t, []).append(Path(root) / f)
    return found


def rollback_metadata_record(base: Path, rollback_time: str, instant_time: str, action: str,
                             deleted: Sequence[Path], started: float) -> dict[str, Any]:
    """The ``HoodieRollbackMetadata`` record of rolling back ``instant_time`` (a rollback instant's, or one
    entry of a restore's), its deleted files grouped by partition."""
    by_partition: dict[str, dict[str, Any]] = {}
    for p in deleted:
        part = partition_of(base, p)
        entry = by_partition.setdefault(part, {"partitionPath": part, "successDeleteFiles": [],
                                               "failedDeleteFiles": [], "rollbackLogFiles": None,
                                               "writtenLogFiles": None})
        entry["successDeleteFiles"].append(str(p))
    return {
        "startRollbackTime": rollback_time,
        "timeTakenInMillis": int((time.time() - started) * 1000),
        "totalFilesDeleted": len(deleted),
        "commitsRollback": [instant_time],
        "partitionMetadata": by_partition,
        "version": 1,
        "instantsRollback": [{"commitTime": instant_time, "action": action}],
    }


def partition_of(base: Path, p: Path) -> str:
    rel = p.relative_to(base)
    return "" if len(rel.parts) == 1 else str(rel.parent)


def _rollback_instant(base: Path, props: TableProperties, i: Instant, *, record: bool,
                      keep_plan: bool = False, rollback_time: str | None = None,
                      hooks: CommitHooks = NO_HOOKS) -> None:
    """Undo pending instant ``i``: close its file gate, delete its files (markers + a listing of every
    partition), its MDT entries, its pending instant files, markers and heartbeat. With ``record``, this is
    a Hudi rollback instant (requested plan, inflight, completed metadata); ``rollback_time`` resumes an
    interrupted one. Every step is idempotent, so a rollback killed anywhere is finished by the next one.

    Crash points: ``rollback.after_plan``, ``rollback.after_inflight``, ``rollback.mid_delete``,
    ``rollback.after_files``, ``rollback.after_mdt``, ``rollback.before_complete``.
    """
    t = i.requested_time
    has_mdt = metadata_table_exists(base)
    if has_mdt and hooks.rollback_metadata is None:
        raise UnsupportedTableError(
            f"{base}: cannot roll back instant {t}: the table has a metadata table and no metadata rollback "
            "hook was given", hint="pass hooks=CommitHooks(rollback_metadata=...) to the commit protocol")
    start = time.time()
    tdir = timeline_dir(base, props)
    layout = props.timeline_layout_version
    tmp = base / ".hoodie" / ".temp"
    close_gate(base, t)  # executors still creating files finish first; none can start afterwards
    files = _files_of_instant(base, t, with_logs=props.is_mor and props.version >= 8)
    if record and rollback_time is None:
        instants = list_instants(base, props)
        rollback_time = new_instant_time(latest_time_on_timeline(instants),
                                         use_utc=props.timeline_timezone == "UTC")
        by_partition: dict[str, list[str]] = {}
        for p in files:
            by_partition.setdefault(partition_of(base, p), []).append(str(p))
        plan = {
            "instantToRollback": {"commitTime": t, "action": i.action},
            "RollbackRequests": [
                {"partitionPath": part, "fileId": None, "latestBaseInstant": t, "filesToBeDeleted": paths,
                 "logBlocksToBeDeleted": None}
                for part, paths in sorted(by_partition.items())
            ],
            "version": 1,
        }
        atomic_write(tdir / instant_file_name(rollback_time, inst.ROLLBACK, State.REQUESTED, layout_version=layout),
                      rollback_plan_bytes(plan), tmp)
        crash_point("rollback.after_plan")
    if record and rollback_time is not None:
        infl = tdir / instant_file_name(rollback_time, inst.ROLLBACK, State.INFLIGHT, layout_version=layout)
        if not infl.exists():
            atomic_write(infl, b"", tmp)
        crash_point("rollback.after_inflight")
    for n, p in enumerate(files):
        try:
            p.unlink()
        except FileNotFoundError:
            pass
        if n == 0:
            crash_point("rollback.mid_delete")
    crash_point("rollback.after_files")
    if has_mdt and hooks.rollback_metadata is not None:
        # removes what the failed instant wrote into the metadata table (readers ignore it anyway)
        hooks.rollback_metadata(base, t)
    crash_point("rollback.after_mdt")
    if keep_plan:
        infl = tdir / instant_file_name(t, i.action, State.INFLIGHT, layout_version=layout)
        infl.unlink(missing_ok=True)
    else:
        for state in (State.INFLIGHT, State.REQUESTED):
            (tdir / instant_file_name(t, i.action, state, layout_version=layout)).unlink(missing_ok=True)
    shutil.rmtree(base / ".hoodie" / ".temp" / t, ignore_errors=True)
    (base / ".hoodie" / ".heartbeat" / t).unlink(missing_ok=True)
    crash_point("rollback.before_complete")
    if record and rollback_time is not None:
        instants = list_instants(base, props)
        completion = new_instant_time(latest_time_on_timeline(instants), use_utc=props.timeline_timezone == "UTC")
        meta = rollback_metadata_record(base, rollback_time, t, i.action, files, start)
        atomic_write(tdir / instant_file_name(rollback_time, inst.ROLLBACK, State.COMPLETED,
                                               completion if layout >= 2 else None, layout_version=layout),
                      rollback_metadata_bytes(meta), tmp)


def _finish_interrupted_rollbacks(base: Path, props: TableProperties, hooks: CommitHooks) -> list[str]:
    """Complete every pending ``rollback`` instant (its process died: rollbacks hold the table lock)."""
    done = []
    instants = list_instants(base, props)
    completed = {i.requested_time for i in instants if i.is_completed}
    tdir = timeline_dir(base, props)
    layout = props.timeline_layout_version
    for i in instants:
        if i.action != inst.ROLLBACK or i.state is not State.REQUESTED or i.requested_time in completed:
            continue
        try:
            plan = decode_timeline_content(
                (tdir / instant_file_name(i.requested_time, inst.ROLLBACK, State.REQUESTED,
                                          layout_version=layout)).read_bytes(), "rollback plan")
        except Exception:  # noqa: BLE001 - a plan cut short by the crash: nothing was deleted under it yet
            plan = {}
        target = plan.get("instantToRollback") or {}
        t, action = target.get("commitTime"), target.get("action") or inst.COMMIT
        if not t:
            for state in (State.INFLIGHT, State.REQUESTED):
                (tdir / instant_file_name(i.requested_time, inst.ROLLBACK, state,
                                          layout_version=layout)).unlink(missing_ok=True)
            continue
        if str(t) in completed:  # never undo a completed write
            continue
        _rollback_instant(base, props, Instant(str(t), str(action), State.INFLIGHT, None, ""), record=True,
                          rollback_time=i.requested_time, hooks=hooks)
        done.append(str(t))
    return done


def _sweep_stray_markers(base: Path, props: TableProperties) -> None:
    """Remove marker folders (and gates) of instants that are not pending; delete the files such markers
    name unless their instant completed (then reconciliation already kept exactly the committed ones) or may
    have: an instant older than the active timeline was archived, committed or not, and its files may be live
    (session 19: a marker folder a crash left behind, then Hudi's archival of its instant, made the next write
    delete that commit's live files)."""
    temp = base / ".hoodie" / ".temp"
    if not temp.is_dir():
        return
    instants = list_instants(base, props)
    pending = {i.requested_time for i in pending_write_instants(base, props)}
    completed = {i.requested_time for i in instants if i.is_completed}
    active_from = min((i.requested_time for i in instants), default=None)
    for entry in os.scandir(temp):
        t = entry.name
        if not entry.is_dir() or not t.isdigit() or t in pending:
            continue
        close_gate(base, t)
        archived = active_from is None or t < active_from
        if t not in completed and not archived:
            for rel in _marker_files(Path(entry.path)):
                parsed = try_parse_base_file_name(rel.rsplit("/", 1)[-1])
                if parsed is not None and parsed.instant_time == t and ".." not in rel.split("/"):
                    (base / rel).unlink(missing_ok=True)
        shutil.rmtree(entry.path, ignore_errors=True)
