"""Savepoints (Hudi's ``savepoint`` action, docs/savepoints.md): pin one commit's snapshot against cleaning.

``create`` (under the table lock) lists the files a read as of a completed commit ``T`` needs, writes
``T.savepoint.inflight`` and then the completed savepoint with that list (Avro ``HoodieSavepointMetadata``) in one
atomic rename. From then on no clean, ours or Hudi's, deletes those files, so time travel to ``T`` keeps working
whatever the retention settings, and Hudi's restore can take the table back to ``T``. ``delete`` removes the
completed file, then the inflight one (Hudi's order); the next clean may delete what it pinned.

Hudi's rules are kept: only a completed commit (``commit`` / ``deltacommit`` / ``replacecommit``) can be
savepointed, and not one older than the earliest commit the last clean retained (its files may be gone). We
also refuse while a clean is pending (its plan was made without the new savepoint) and when a read as of ``T``
already misses a cleaned file. Restoring to a savepoint is not ours: Hudi's ``restore`` (hudi-cli or
``CALL rollback_to_savepoint``) does it.
"""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hudi_layout.errors import InvalidArgumentError, UnsupportedTableError
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import Action, require
from hudi_layout.format.clean_metadata import decode_clean_metadata, decode_cleaner_plan
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import State, instant_file_name, new_instant_time
from hudi_layout.format.properties import TableProperties, load_properties
from hudi_layout.format.savepoint_metadata import SavepointMetadata, savepoint_metadata_bytes
from hudi_layout.table.commit_protocol import latest_time_with_metadata, timeline_dir
from hudi_layout.table.fs_view import FileSystemView
from hudi_layout.table.locks import TableLock
from hudi_layout.table.paths import table_dir
from hudi_layout.table.savepoints import completed_savepoints, pending_savepoints
from hudi_layout.table.timeline import Timeline

#: the actions a savepoint can pin (Hudi's completed commits timeline)
SAVEPOINTABLE_ACTIONS = (inst.COMMIT, inst.DELTA_COMMIT, inst.REPLACE_COMMIT)


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


def _load(path: str) -> tuple[Path, TableProperties, Timeline]:
    base = table_dir(path)
    props = load_properties(base / ".hoodie")
    return base, props, Timeline.load(base / ".hoodie", props.timeline_layout_version, props.timeline_path)


def _file(base: Path, props: TableProperties, t: str, state: State, completion: str | None = None) -> Path:
    return timeline_dir(base, props) / instant_file_name(t, inst.SAVEPOINT, state, completion,
                                                         layout_version=props.timeline_layout_version)


def list_savepoints(path: str) -> list[SavepointInfo]:
    """Every savepoint on the table's timeline, oldest first (inflight ones included, marked so)."""
    _base, _props, timeline = _load(path)
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
    base, props, _timeline = _load(path)
    require(props, Action.SAVEPOINT)
    with TableLock(base):
        props = load_properties(base / ".hoodie")
        timeline = Timeline.load(base / ".hoodie", props.timeline_layout_version, props.timeline_path)
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
        if any(s.instant_time == instant_time for s in completed_savepoints(timeline)):
            raise InvalidArgumentError(f"{base}: commit {instant_time} is savepointed already",
                                       hint="'hudi-layout savepoint list PATH' shows the savepoints")
        pending_clean = next(iter(timeline.pending().actions(inst.CLEAN)), None)
        if pending_clean is not None:
            raise UnsupportedTableError(
                f"{base}: clean {pending_clean.requested_time} is pending; it was planned without this savepoint",
                hint="finish it first ('hudi-layout clean PATH'), then savepoint")
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
        temp = base / ".hoodie" / ".temp"
        inflight = _file(base, props, instant_time, State.INFLIGHT)
        if not inflight.exists():
            atomic_write(inflight, b"", temp)
        completion = new_instant_time(latest_time_with_metadata(base, props),
                                      use_utc=props.timeline_timezone == "UTC")
        atomic_write(_file(base, props, instant_time, State.COMPLETED,
                           completion if props.timeline_layout_version >= 2 else None),
                     savepoint_metadata_bytes(metadata), temp)
    return SavepointInfo(instant_time, "completed", metadata.savepointed_by, metadata.savepointed_at_ms, comment,
                         metadata.file_count, len(metadata.files))


def delete_savepoint(path: str, instant_time: str) -> None:
    """Remove the savepoint at ``instant_time`` (completed or left inflight); the files it pinned become the
    cleaner's to judge again."""
    base, props, _timeline = _load(path)
    require(props, Action.SAVEPOINT)
    with TableLock(base):
        timeline = Timeline.load(base / ".hoodie", props.timeline_layout_version, props.timeline_path)
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
