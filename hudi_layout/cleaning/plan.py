"""Which files a clean deletes: Hudi's ``CleanPlanner`` rules on a snapshot of the table, plus two guards.

docs/hudi-format-live-tables.md §1.5 (Hudi's rules) and docs/cleaning.md (ours). :func:`plan_clean` is a pure
function of a :class:`TableState` (gathered under the table lock by :func:`gather_state`) and a
:class:`~hudi_layout.cleaning.config.CleanConfig`:

1. **Earliest commit to retain (ECTR)** on the completed commits timeline: KEEP_LATEST_COMMITS takes the
   instant at position ``count - N`` (when more than N completed), capped below the earliest pending commit
   (a pending clustering plan counts); KEEP_LATEST_BY_HOURS takes the first completed instant requested at or
   after ``now - hours``; KEEP_LATEST_FILE_VERSIONS has none.
2. **Policy candidates.** By commits/hours: every slice of a file group replaced by a replacecommit requested
   before the ECTR; in other live groups, every slice older than the ECTR except the latest slice and the newest
   slice before the ECTR (time travel to any retained instant finds its files). By file versions: every slice
   of a replaced group; in other groups all but the newest N slices.
3. **Never deleted:** files a pending clustering plan reads (they are also live slices, so the policy keeps them
   anyway; this is the explicit second lock); files of pending instants (never committed, never candidates);
   every slice one of whose files a completed **savepoint** lists (by file name, as Hudi's ``CleanPlanner``).
4. **Grace period (running readers):** a candidate is kept while the instant that took it out of the latest
   snapshot (the group's next slice, or the replacecommit) completed less than ``grace_seconds`` ago. A reader
   of any engine that listed the table before that instant has the grace period to finish its scan.
5. **Merge-on-Read:** a slice's committed log files are deleted with its base file (Hudi's ``CleanPlanner`` lists
   both), a log-only slice older than the group's first base file (a compaction's) as a slice of its own, the
   log-only slices of a replaced group with the group; file groups a pending compaction reads are
   never cleaned; logs of pending or rolled-back deltacommits are never deleted.
6. **Orphans:** base files of rolled-back or aborted instants (not committed by the file-system view's rule,
   not pending, and older than the newest instant on the timeline when the state was gathered, so a write that
   starts after the listing can never lose a file) are deleted as well; no reader can ever see them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hudi_layout.cleaning.config import CleanConfig
from hudi_layout.format import instant as inst
from hudi_layout.format.file_naming import try_parse_base_file_name, try_parse_data_log_file_name
from hudi_layout.format.instant import Instant, format_instant_time, parse_instant_time
from hudi_layout.format.properties import TableProperties
from hudi_layout.options import CleaningPolicy
from hudi_layout.table.fs_view import FileSystemView, list_partitions
from hudi_layout.table.savepoints import completed_savepoints, savepointed_file_names
from hudi_layout.table.timeline import Timeline

#: the commits timeline instants that cap the ECTR while pending (Hudi leaves out compactions)
_PENDING_CAPPING = frozenset({inst.COMMIT, inst.DELTA_COMMIT, inst.REPLACE_COMMIT, inst.CLUSTERING})
#: the long-ago moment of an instant that is no longer on the active timeline (archived)
_ARCHIVED = datetime.min


@dataclass(frozen=True)
class CompletedInstant:
    """A completed instant of the commits timeline."""

    requested_time: str
    action: str
    #: wall-clock completion in the table's timeline zone (naive), for the grace period
    completed_at: datetime


@dataclass(frozen=True)
class DataFile:
    """A base file found on storage."""

    partition: str
    name: str
    file_id: str
    instant: str
    #: visible to a snapshot reader by the file-system view's rule (docs/hudi-format.md §4.7)
    committed: bool
    size: int = 0


@dataclass(frozen=True)
class LogFile:
    """A committed log file found on storage (Merge-on-Read), with the slice it belongs to."""

    partition: str
    name: str
    file_id: str
    #: base instant of its slice: the newest committed base file of its group whose instant is at or before
    #: the completion of the deltacommit that wrote the log (Hudi 1.x's ``HoodieFileGroup.getBaseInstantTime``);
    #: "" when the group had no base file then (a log-only slice)
    slice_instant: str
    size: int = 0


@dataclass(frozen=True)
class TableState:
    """Everything :func:`plan_clean` looks at, read at one moment under the table lock."""

    #: completed commit / deltacommit / replacecommit instants, by requested time
    completed: tuple[CompletedInstant, ...]
    #: requested times of pending commits-timeline instants (writes and clustering plans, not compactions)
    pending: tuple[str, ...]
    #: requested time of every instant file on the timeline (any action, any state)
    timeline_times: frozenset[str]
    files: tuple[DataFile, ...]
    #: file group ``(partition, fileId)`` -> requested time of the (earliest) completed replacecommit replacing it
    replaced: Mapping[tuple[str, str], str]
    #: ``(partition, file name)`` that a pending clustering plan reads
    protected: frozenset[tuple[str, str]]
    #: the moment of planning, naive, in the table's timeline zone
    now: datetime
    #: committed log files (Merge-on-Read): deleted with the base file of their slice
    logs: tuple[LogFile, ...] = ()
    #: file groups ``(partition, fileId)`` a pending compaction reads: never cleaned; ``None``: some compaction
    #: plan could not be read, so no file group of the table is cleaned
    compacting: frozenset[tuple[str, str]] | None = frozenset()
    #: names of the files completed savepoints list (never deleted, nor the rest of their slices)
    savepointed: frozenset[str] = frozenset()
    #: requested times of the completed savepoints (recorded in the plan, as Hudi does)
    savepoint_times: tuple[str, ...] = ()

    @property
    def newest_timeline_time(self) -> str:
        return max(self.timeline_times, default="")


@dataclass(frozen=True)
class PlannedClean:
    """The outcome of planning: what to delete, and why the rest stays."""

    policy: CleaningPolicy
    earliest_commit_to_retain: CompletedInstant | None
    last_completed_commit: str
    #: partition -> names of the files to delete (sorted)
    to_delete: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: candidates kept because they left the latest snapshot less than the grace period ago
    deferred: int = 0
    #: candidates kept because a pending clustering plan reads them
    protected: int = 0
    #: files of rolled-back / aborted instants among ``to_delete``
    orphans: int = 0
    bytes_to_delete: int = 0
    #: candidates kept because a savepoint lists them (or another file of their slice)
    savepointed: int = 0
    #: requested times of the savepoints the plan honoured
    savepoint_times: tuple[str, ...] = ()

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.to_delete.values())


def earliest_commit_to_retain(state: TableState, config: CleanConfig) -> CompletedInstant | None:
    """``CleanerUtils.getEarliestCommitToRetain`` (docs/hudi-format-live-tables.md §1.5)."""
    done = state.completed
    if config.policy is CleaningPolicy.KEEP_LATEST_COMMITS:
        n = config.commits_retained
        if len(done) <= n:
            return None
        nth = done[len(done) - n]
        if state.pending:
            first_pending = min(state.pending)
            if nth.requested_time > first_pending:
                before = [i for i in done if i.requested_time < first_pending]
                return before[-1] if before else None
        return nth
    if config.policy is CleaningPolicy.KEEP_LATEST_BY_HOURS:
        cutoff = format_instant_time(state.now - timedelta(hours=config.hours_retained))
        return next((i for i in done if i.requested_time >= cutoff), None)
    return None


def plan_clean(state: TableState, config: CleanConfig) -> PlannedClean:
    """What a clean run now would delete (see the module docstring)."""
    ectr = earliest_commit_to_retain(state, config)
    completed_at = {i.requested_time: i.completed_at for i in state.completed}

    def completion(t: str) -> datetime:
        if t in completed_at:
            return completed_at[t]
        return state.now if t in state.timeline_times else _ARCHIVED

    groups: dict[tuple[str, str], list[DataFile]] = {}
    for f in state.files:
        if f.committed:
            groups.setdefault((f.partition, f.file_id), []).append(f)
    if state.compacting is None:
        groups = {}
    else:
        for key in state.compacting:  # Hudi keeps every slice a pending compaction needs
            groups.pop(key, None)
    # a log-only slice (logs written before the group had a base file, e.g. before its first compaction) is the
    # oldest slice of its group: an entry without a base file (name ""), cleaned by the policy like any slice
    # (Hudi's CleanPlanner counts every file slice); a replaced group's are deleted with the group below
    log_only = {(lg.partition, lg.file_id) for lg in state.logs if not lg.slice_instant}
    for key in log_only & set(groups):
        if key not in state.replaced:
            groups[key].append(DataFile(key[0], "", key[1], "", True))
    # (file, moment it left the latest snapshot)
    candidates: list[tuple[DataFile, datetime]] = []

    def whole_group(files: list[DataFile], replaced_at: str) -> None:
        for i, f in enumerate(files):
            candidates.append((f, completion(files[i - 1].instant if i else replaced_at)))

    for key, files in groups.items():
        files.sort(key=lambda f: f.instant, reverse=True)  # newest first
        replaced_at = state.replaced.get(key)
        if config.policy is CleaningPolicy.KEEP_LATEST_FILE_VERSIONS:
            if replaced_at is not None:
                whole_group(files, replaced_at)
            else:
                for i in range(config.file_versions_retained, len(files)):
                    candidates.append((files[i], completion(files[i - 1].instant)))
            continue
        if ectr is None:
            continue
        if replaced_at is not None:
            if replaced_at < ectr.requested_time:
                whole_group(files, replaced_at)
            continue  # replaced at or after the ECTR: a retained instant may still read it (Hudi keeps it all)
        latest = files[0].instant
        before_ectr = next((f.instant for f in files if f.instant < ectr.requested_time), None)
        for i, f in enumerate(files):
            if f.instant in (latest, before_ectr) or f.instant >= ectr.requested_time:
                continue
            candidates.append((f, completion(files[i - 1].instant)))

    # a slice's log files go with its base file; a replaced group's log-only slices with the group
    logs_of: dict[tuple[str, str, str], list[LogFile]] = {}
    for lg in state.logs:
        logs_of.setdefault((lg.partition, lg.file_id, lg.slice_instant), []).append(lg)
    candidate_names = {(f.partition, f.name) for f, _ in candidates}
    whole_groups = {key for key, files in groups.items()
                    if key in state.replaced and all((f.partition, f.name) in candidate_names for f in files)}
    cutoff = state.now - timedelta(seconds=config.grace_seconds)
    chosen: dict[str, list[str]] = {}
    deferred = protected = orphans = size = savepointed = 0
    kept_groups: set[tuple[str, str]] = set()
    for f, left_at in candidates:
        slice_logs = logs_of.get((f.partition, f.file_id, f.instant), [])
        slice_names = [f.name, *(lg.name for lg in slice_logs)]
        if any((f.partition, n) in state.protected for n in slice_names):
            protected += 1
            kept_groups.add((f.partition, f.file_id))
        elif any(n in state.savepointed for n in slice_names if n):
            savepointed += 1
            kept_groups.add((f.partition, f.file_id))
        elif left_at > cutoff:
            deferred += 1
            kept_groups.add((f.partition, f.file_id))
        else:
            chosen.setdefault(f.partition, [])
            if f.name:  # "" : a log-only slice, whose log files are all there is
                chosen[f.partition].append(f.name)
            size += f.size
            for lg in slice_logs:
                chosen[f.partition].append(lg.name)
                size += lg.size
    for key in sorted(whole_groups - kept_groups):
        if any(lg.name in state.savepointed for lg in logs_of.get((*key, ""), [])):
            savepointed += 1
            continue
        for lg in logs_of.get((*key, ""), []):
            chosen.setdefault(lg.partition, []).append(lg.name)
            size += lg.size
    pending = set(state.pending)
    newest = state.newest_timeline_time
    for f in state.files:
        # a rollback removes its target's instant files, so an orphan's instant is off the timeline; anything
        # on it (pending, or some other state) is left alone, and so is anything newer than the listing
        if f.committed or f.instant in pending or f.instant in state.timeline_times or not newest \
                or f.instant > newest:
            continue
        chosen.setdefault(f.partition, []).append(f.name)
        orphans += 1
        size += f.size
    return PlannedClean(config.policy, ectr, state.completed[-1].requested_time if state.completed else "",
                        {p: tuple(sorted(set(names))) for p, names in sorted(chosen.items())},
                        deferred, protected, orphans, size, savepointed, state.savepoint_times)


# ------------------------------------------------------------------------------------------ gathering


def timeline_now(props: TableProperties) -> datetime:
    """Now, naive, in the table's timeline zone (``hoodie.table.timeline.timezone``)."""
    if props.timeline_timezone == "UTC":
        return datetime.now(timezone.utc).replace(tzinfo=None)
    return datetime.now()


def _completed_at(timeline: Timeline, instant: Instant, props: TableProperties) -> datetime:
    if instant.completion_time:
        return parse_instant_time(instant.completion_time)
    try:  # legacy completed name without a completion time: the file's own time
        mtime = timeline.path_of(instant).stat().st_mtime
    except FileNotFoundError:
        return _ARCHIVED
    if props.timeline_timezone == "UTC":
        return datetime.fromtimestamp(mtime, timezone.utc).replace(tzinfo=None)
    return datetime.fromtimestamp(mtime)


def gather_state(base_path: str | os.PathLike[str], props: TableProperties, *,
                 now: datetime | None = None, list_files: bool = True) -> TableState:
    """Read the timeline and list every partition (call under the table lock for a consistent picture).
    ``list_files=False`` reads the timeline only (enough for :func:`earliest_commit_to_retain`)."""
    base = Path(base_path)
    timeline = Timeline.of_table(base / ".hoodie", props)
    commits = timeline.commits_and_replaces()
    completed = tuple(CompletedInstant(i.requested_time, i.action, _completed_at(timeline, i, props))
                      for i in commits.completed())
    pending = tuple(i.requested_time for i in commits.pending() if i.action in _PENDING_CAPPING)
    view = FileSystemView(base, timeline, props.base_file_extension)
    committed = view.is_committed_fn()
    files: list[DataFile] = []
    found_logs: list[tuple[str, str, str, str, int]] = []  # partition, name, file id, instant, size
    for part in list_partitions(base) if list_files else ():
        pdir = base / part if part else base
        for entry in os.scandir(pdir):
            if not entry.is_file(follow_symlinks=False):
                continue
            if props.is_mor and entry.name.startswith("."):
                log = try_parse_data_log_file_name(entry.name)
                if log is not None:
                    found_logs.append((part, entry.name, log.file_id, log.instant_time,
                                       entry.stat(follow_symlinks=False).st_size))
                continue
            if not entry.name.endswith(props.base_file_extension):
                continue
            parsed = try_parse_base_file_name(entry.name)
            if parsed is None:
                continue
            files.append(DataFile(part, entry.name, parsed.file_id, parsed.instant_time,
                                  committed(parsed.instant_time), entry.stat(follow_symlinks=False).st_size))
    logs = _committed_logs(found_logs, files, timeline, committed)
    replaced: dict[tuple[str, str], str] = {}
    for i in timeline.completed().actions(inst.REPLACE_COMMIT) if list_files else ():
        meta = timeline.read_commit_metadata_shared(i)
        for part, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
            for fid in ids or ():
                replaced.setdefault((part, fid), i.requested_time)
    protected: set[tuple[str, str]] = set()
    for _inst, plan in timeline.pending_clustering() if list_files else ():
        for group in plan.get("inputGroups") or []:
            for sl in group.get("slices") or []:
                part = sl.get("partitionPath") or ""
                for p in [sl.get("dataFilePath"), *(sl.get("deltaFilePaths") or [])]:
                    if p:
                        protected.add((part, p.rstrip("/").rsplit("/", 1)[-1]))
    compacting: frozenset[tuple[str, str]] | None = frozenset()
    if props.is_mor and list_files:
        under = view.pending_compaction_file_groups()
        compacting = None if under is None else frozenset(under)
    savepoints = completed_savepoints(timeline)
    return TableState(completed, pending, frozenset(f.requested_time for f in timeline.files), tuple(files),
                      replaced, frozenset(protected), now or timeline_now(props), logs, compacting,
                      savepointed_file_names(savepoints), tuple(s.instant_time for s in savepoints))


def _committed_logs(found: list[tuple[str, str, str, str, int]], files: list[DataFile], timeline: Timeline,
                    committed: Callable[[str], bool]) -> tuple[LogFile, ...]:
    """The committed log files among ``found``, each with the base instant of its slice (table versions 8 / 9:
    a log belongs to the newest committed base file of its group at or before its deltacommit's completion).
    Logs of pending or rolled-back deltacommits are left out: never deleted by a clean."""
    if not found:
        return ()
    completion = timeline.completion_times()
    bases: dict[tuple[str, str], list[str]] = {}
    for f in files:
        if f.committed:
            bases.setdefault((f.partition, f.file_id), []).append(f.instant)
    out = []
    for part, name, file_id, instant, size in found:
        if not committed(instant):
            continue
        done = completion.get(instant, instant)
        owner = max((b for b in bases.get((part, file_id), []) if b <= done), default="")
        out.append(LogFile(part, name, file_id, owner, size))
    return tuple(out)
