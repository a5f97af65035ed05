"""The active timeline: listing instant files, filtering, reading their content (docs/hudi-format.md §2).

Layout 1 (v6) keeps instant files directly in ``.hoodie/``; layout 2 (v8/v9) in ``.hoodie/timeline/``
(``hoodie.timeline.path``). The same class serves the metadata table (pass its ``.hoodie`` dir).

Like Hudi's ``HoodieActiveTimeline``, :attr:`Timeline.instants` holds one entry per requested time: the
most advanced state found on storage (a completed clustering shows as its ``replacecommit``). All files,
including superseded requested/inflight ones, are in :attr:`Timeline.files`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudi_layout.errors import CorruptFileError, NotAHudiTableError
from hudi_layout.format import commit_metadata as cm
from hudi_layout.format.clean_metadata import decode_clean_metadata
from hudi_layout.format.compaction_plan import CompactionOperation, decode_compaction_plan
from hudi_layout.format.file_naming import try_parse_base_file_name
from hudi_layout.format.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    WRITE_ACTIONS,
    Instant,
    State,
    parse_instant_file_name,
)
from hudi_layout.format.properties import TableProperties, load_properties, table_config_exists
from hudi_layout.table import cache as table_cache

#: Hudi's ``getCommitsTimeline`` actions: everything that writes data files
COMMIT_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING, COMPACTION, LOG_COMPACTION})
CLUSTER_OPERATION = "CLUSTER"
#: LSM timeline data files (Hudi 1.x ``LSMTimeline``): ``<min instant>_<max instant>_<layer>.parquet``
_LSM_ARCHIVE_FILE = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")


def resolve_hoodie_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` may be a table base path or its ``.hoodie`` dir (also of the metadata table)."""
    p = Path(path)
    if p.name == ".hoodie":
        return p
    if (p / ".hoodie").is_dir():
        return p / ".hoodie"
    raise NotAHudiTableError(f"{p}: not a Hudi table (no .hoodie directory)")


#: longest ``extraMetadata`` value a :class:`WriteSummary` keeps (hudi_layout's own markers are short; the
#: schema is not)
_SMALL_EXTRA = 256


@dataclass(frozen=True)
class WriteSummary:
    """The small part of a completed write's metadata: ``(partition, file name)`` of each file its write stats
    list, ``(file name, numWrites)`` where given, and its short ``extraMetadata`` entries."""

    files: tuple[tuple[str, str], ...]
    rows: tuple[tuple[str, int], ...]
    extra: dict[str, str]


@dataclass(frozen=True)
class Timeline:
    """An immutable, filterable snapshot of one table's active timeline."""

    hoodie_dir: Path
    timeline_dir: Path
    layout_version: int
    instants: tuple[Instant, ...]
    files: tuple[Instant, ...] = field(repr=False, default=())

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, path: str | os.PathLike[str], layout_version: int | None = None,
             timeline_path: str | None = None) -> Timeline:
        """List the timeline of the table at ``path`` (base path or ``.hoodie`` dir).

        ``layout_version``/``timeline_path`` default to the values in that dir's ``hoodie.properties``.
        """
        hoodie = resolve_hoodie_dir(path)
        if layout_version is None or (layout_version >= 2 and timeline_path is None
                                      and table_config_exists(hoodie)):
            props = load_properties(hoodie)
            layout_version = props.timeline_layout_version if layout_version is None else layout_version
            timeline_path = props.timeline_path if timeline_path is None else timeline_path
        tdir = hoodie if layout_version < 2 else hoodie / (timeline_path or "timeline")
        files: list[Instant] = []
        try:
            entries = list(os.scandir(tdir))
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if not entry.is_file():
                continue
            inst = parse_instant_file_name(entry.name)
            if inst is not None:
                files.append(inst)
        files.sort(key=lambda i: i.sort_key)
        return cls(hoodie, tdir, layout_version, _collapse(files), tuple(files))

    @classmethod
    def of_table(cls, hoodie_dir: str | os.PathLike[str], props: TableProperties) -> Timeline:
        """The timeline under ``hoodie_dir`` in the layout its already loaded ``props`` give (no second read of
        ``hoodie.properties``)."""
        return cls.load(hoodie_dir, props.timeline_layout_version, props.timeline_path)

    def reload(self) -> Timeline:
        return Timeline.load(self.hoodie_dir, self.layout_version,
                             None if self.layout_version < 2 else self.timeline_dir.name)

    # ------------------------------------------------------------------ filtering

    def _with(self, instants: Iterable[Instant]) -> Timeline:
        return Timeline(self.hoodie_dir, self.timeline_dir, self.layout_version, tuple(instants), self.files)

    def filter(self, pred: Callable[[Instant], bool]) -> Timeline:
        return self._with(i for i in self.instants if pred(i))

    def completed(self) -> Timeline:
        return self.filter(lambda i: i.is_completed)

    def pending(self) -> Timeline:
        return self.filter(lambda i: i.is_pending)

    def actions(self, *actions: str) -> Timeline:
        wanted = frozenset(actions)
        return self.filter(lambda i: i.action in wanted)

    def commits_and_replaces(self) -> Timeline:
        """Instants that write data: commit, deltacommit, replacecommit, clustering, (log)compaction."""
        return self.filter(lambda i: i.action in COMMIT_ACTIONS)

    def completion_times(self) -> dict[str, str]:
        """Requested time -> :func:`completed_at` of every completed commits-timeline instant (what the version 8
        / 9 slice rule compares a log file's instant with)."""
        return {i.requested_time: completed_at(i) for i in self.commits_and_replaces().completed()}

    def before_or_at(self, instant_time: str) -> Timeline:
        return self.filter(lambda i: i.requested_time <= instant_time)

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def __bool__(self) -> bool:
        return bool(self.instants)

    def last(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    def first(self) -> Instant | None:
        return self.instants[0] if self.instants else None

    def last_completed(self) -> Instant | None:
        return self.completed().last()

    def first_completed(self) -> Instant | None:
        return self.completed().first()

    def get(self, requested_time: str) -> Instant | None:
        for i in self.instants:
            if i.requested_time == requested_time:
                return i
        return None

    def contains(self, requested_time: str) -> bool:
        return self.get(requested_time) is not None

    def instant_files(self, requested_time: str) -> list[Instant]:
        """Every timeline file of one instant (requested, inflight, completed)."""
        return [f for f in self.files if f.requested_time == requested_time]

    def max_instant_time(self) -> str | None:
        """Greatest requested or completion time on the timeline (floor for a new instant time)."""
        times = [t for f in self.files for t in (f.requested_time, f.completion_time) if t]
        return max(times) if times else None

    # ------------------------------------------------------------------ content

    def path_of(self, instant: Instant) -> Path:
        return self.timeline_dir / instant.file_name

    def read_bytes(self, instant: Instant) -> bytes:
        p = self.path_of(instant)
        try:
            return p.read_bytes()
        except FileNotFoundError as exc:
            raise CorruptFileError(f"timeline file {p} vanished (instant {instant})") from exc

    def read_commit_metadata(self, instant: Instant) -> dict[str, Any]:
        """Commit/deltacommit/replacecommit metadata (JSON v6, Avro v8/9); ``{}`` for empty files."""
        return cm.decode_commit_metadata(self.read_bytes(instant), str(self.path_of(instant)))

    def read_commit_metadata_shared(self, instant: Instant) -> dict[str, Any]:
        """:meth:`read_commit_metadata` through the in-process cache for completed instants (their files are
        immutable; see :mod:`hudi_layout.table.cache`). The dict may be shared: do not mutate it."""
        if not instant.is_completed:
            return self.read_commit_metadata(instant)
        return table_cache.commit_metadata(self.path_of(instant), lambda: self.read_commit_metadata(instant))

    def write_summary(self, instant: Instant) -> WriteSummary:
        """What plans and views ask of a completed write (:class:`WriteSummary`), from one decode of its metadata
        and cached beside it: a plan asks it of every commit that wrote a candidate file, and the decoded
        metadata itself is cached for a few instants only (session 29's growth benchmark: 400 commits were
        decoded three times per cold plan, and twice per warm one)."""
        def decode() -> WriteSummary:
            meta = self.read_commit_metadata_shared(instant)
            files, rows = [], []
            for stat in cm.write_stats(meta):
                part, _, name = str(stat.get("path") or "").rpartition("/")
                if name:
                    files.append((str(stat.get("partitionPath") or part), name))
                    if stat.get("numWrites") is not None:
                        rows.append((name, int(stat["numWrites"])))
            extra = {str(k): str(v) for k, v in (meta.get("extraMetadata") or {}).items()
                     if v is not None and len(str(v)) <= _SMALL_EXTRA}
            return WriteSummary(tuple(files), tuple(rows), extra)

        if not instant.is_completed:
            return decode()
        got: WriteSummary = table_cache.commit_metadata(self.path_of(instant), decode, view="write summary")
        return got

    def _written(self, instant: Instant) -> tuple[tuple[str, str], ...]:
        """``(partition, file name)`` of every file the completed write ``instant`` lists in its write stats
        (their ``path``)."""
        return self.write_summary(instant).files

    def rows_written(self, instant: Instant) -> tuple[tuple[str, int], ...]:
        """``(file name, numWrites)`` of every file the completed write ``instant`` lists."""
        return self.write_summary(instant).rows

    def extra_metadata_value(self, instant: Instant, key: str) -> str:
        """One short ``extraMetadata`` entry of a completed instant ("" when absent; entries longer than
        :data:`_SMALL_EXTRA` characters, such as the schema, are not kept)."""
        return self.write_summary(instant).extra.get(key, "")

    def files_written(self, instant: Instant) -> frozenset[str] | None:
        """Names of the files the completed write ``instant`` committed (its write stats); None when its
        metadata names none (nothing can be said about its files then)."""
        return frozenset(name for _part, name in self._written(instant)) or None

    def cleaned_files(self) -> list[tuple[str, str, str]]:
        """``(clean time, partition, file name)`` of every data file a completed clean on this timeline deleted
        (``successDeleteFiles`` of its ``HoodieCleanMetadata``; cached per completed clean file)."""
        out: list[tuple[str, str, str]] = []
        for inst in self.completed().actions(CLEAN):
            def decode(inst: Instant = inst) -> dict[str, Any]:
                md = decode_clean_metadata(self.read_bytes(inst), str(self.path_of(inst)))
                return {"deleted": [(p, n) for p, r in md.partitions.items() for n in r.deleted]}
            deleted = table_cache.commit_metadata(self.path_of(inst), decode)["deleted"]
            out += [(inst.requested_time, part, name) for part, name in deleted]
        return out

    def _requested_file(self, requested_time: str) -> Instant | None:
        for f in self.files:
            if f.requested_time == requested_time and f.state is State.REQUESTED and \
                    f.action in (REPLACE_COMMIT, CLUSTERING):
                return f
        return None

    def read_requested_replace(self, instant: Instant | str) -> dict[str, Any]:
        """Decoded ``T.replacecommit.requested`` / ``T.clustering.requested`` (``{}`` if absent/empty)."""
        t = instant if isinstance(instant, str) else instant.requested_time
        req = self._requested_file(t)
        if req is None:
            return {}
        return cm.decode_requested_replace(self.read_bytes(req), str(self.path_of(req)))

    def read_clustering_plan(self, instant: Instant | str) -> dict[str, Any] | None:
        """The HoodieClusteringPlan of a clustering instant, else ``None``."""
        req = self.read_requested_replace(instant)
        if req.get("operationType") == CLUSTER_OPERATION and req.get("clusteringPlan") is not None:
            return req["clusteringPlan"]
        return None

    def is_clustering(self, instant: Instant) -> bool:
        """True for v8+ ``clustering`` instants and replacecommits whose plan/metadata says CLUSTER."""
        if instant.action == CLUSTERING:
            return True
        if instant.action != REPLACE_COMMIT:
            return False
        if any(f.action == CLUSTERING for f in self.instant_files(instant.requested_time)):
            return True
        if instant.is_completed:
            return self.read_commit_metadata_shared(instant).get("operationType") == CLUSTER_OPERATION
        return self.read_requested_replace(instant).get("operationType") == CLUSTER_OPERATION

    def pending_clustering(self) -> list[tuple[Instant, dict[str, Any]]]:
        """Pending clustering instants with their plans (v8+ ``clustering.*`` and v6-style replacecommits)."""
        out: list[tuple[Instant, dict[str, Any]]] = []
        for inst in self.pending().actions(CLUSTERING, REPLACE_COMMIT):
            plan = self.read_clustering_plan(inst)
            if plan is not None:
                out.append((inst, plan))
        return out

    def pending_compactions(self) -> dict[str, frozenset[tuple[str, str]] | None]:
        """Pending compactions (requested time -> ``{(partition, fileId)}`` of their plan's operations).

        ``None`` for a plan that cannot be read (empty or damaged ``compaction.requested``): callers must then
        treat every file group as possibly under that compaction."""
        out: dict[str, frozenset[tuple[str, str]] | None] = {}
        for inst in self.pending().actions(COMPACTION):
            try:
                ops = self.compaction_plan(inst.requested_time)
            except CorruptFileError:
                out[inst.requested_time] = None
                continue
            out[inst.requested_time] = frozenset(op.file_group for op in ops)
        return out

    def compaction_plan(self, requested_time: str) -> tuple[CompactionOperation, ...]:
        """The operations of compaction ``requested_time``'s plan (:class:`CorruptFileError` when it has none or
        cannot be read)."""
        req = next((f for f in self.instant_files(requested_time)
                    if f.action == COMPACTION and f.state is State.REQUESTED), None)
        if req is None:
            raise CorruptFileError(f"{self.timeline_dir}: compaction {requested_time} has no requested plan")
        return decode_compaction_plan(self.read_bytes(req), str(self.path_of(req)))

    def read_rollback_plan(self, instant: Instant) -> dict[str, Any]:
        for f in self.instant_files(instant.requested_time):
            if f.action == "rollback" and f.state is State.REQUESTED:
                return cm.decode_rollback_plan(self.read_bytes(f), str(self.path_of(f)))
        return {}

    def read_rollback_metadata(self, instant: Instant) -> dict[str, Any]:
        return cm.decode_rollback_metadata(self.read_bytes(instant), str(self.path_of(instant)))

    def rolled_back_times(self) -> frozenset[str]:
        """Instant times that a rollback on the active timeline names: ``commitsRollback`` /
        ``instantsRollback`` of completed rollbacks, ``instantToRollback`` of pending ones. Files of these
        instants belong to failed writes, whatever their age."""
        out: set[str] = set()
        for f in self.files:
            if f.action != ROLLBACK:
                continue
            if f.state is State.COMPLETED:
                meta = table_cache.commit_metadata(self.path_of(f), functools.partial(self._decode_any, f))
                out.update(str(t) for t in meta.get("commitsRollback") or [])
                out.update(str(i.get("commitTime")) for i in meta.get("instantsRollback") or [] if i)
            elif f.state is State.REQUESTED:
                try:
                    plan = cm.decode_timeline_content(self.read_bytes(f), str(self.path_of(f)))
                except CorruptFileError:
                    continue  # being written; the completed file (or the next rollback) will say
                target = (plan.get("instantToRollback") or {}).get("commitTime")
                if target:
                    out.add(str(target))
        return frozenset(out)

    def _decode_any(self, instant: Instant) -> dict[str, Any]:
        return cm.decode_timeline_content(self.read_bytes(instant), str(self.path_of(instant)))

    def archive_covers(self, instant_time: str) -> bool:
        """Whether the archived timeline may hold ``instant_time``.

        v8+ (LSM timeline, ``<timeline>/history``): some archive file ``<min>_<max>_<level>.parquet`` spans it.
        v6 (``.hoodie/archived``): any archive log file exists (their names carry no times, and Hudi's own
        rule - older than the active timeline means archived - is kept for such tables). No archive at all
        (every table hudi_layout creates, until Hudi archives it): nothing is archived.
        """
        if self.layout_version >= 2:
            history = self.timeline_dir / "history"
            try:
                names = os.listdir(history)
            except FileNotFoundError:
                return False
            for name in names:
                m = _LSM_ARCHIVE_FILE.match(name)
                if m and m.group(1) <= instant_time <= m.group(2):
                    return True
            return False
        archived = self.hoodie_dir / "archived"
        try:
            return any(n.startswith(".commits_.archive") for n in os.listdir(archived))
        except FileNotFoundError:
            return False

    def write_outputs(self, as_of: str | None = None, *,
                      completed_by: str | None = None) -> dict[str, list[tuple[str, str, str]]]:
        """Base files the completed writes (commits, deltacommits, replacecommits) visible with ``as_of`` /
        ``completed_by`` list in their write stats: partition -> ``[(file id, instant, file name)]`` (each
        instant's list is cached beside its metadata, the whole answer per timeline state). Read-only!"""
        key = (frozenset(f.file_name for f in self.instants), as_of, completed_by)
        return table_cache.table_value(self.timeline_dir, "write outputs", key,
                                       lambda: self._write_outputs(as_of, completed_by))

    def _write_outputs(self, as_of: str | None, completed_by: str | None) -> dict[str, list[tuple[str, str, str]]]:
        out: dict[str, list[tuple[str, str, str]]] = {}
        for inst in self.commits_and_replaces().completed():
            if inst.action not in WRITE_ACTIONS:
                continue
            if (as_of is not None and inst.requested_time > as_of) or not visible_at(inst, completed_by):
                continue
            for part, name in self._written(inst):
                parsed = try_parse_base_file_name(name)
                if parsed is not None and parsed.instant_time == inst.requested_time:
                    out.setdefault(part, []).append((parsed.file_id, parsed.instant_time, name))
        return out

    def replaced_file_groups(self, as_of: str | None = None, *,
                             completed_by: str | None = None) -> set[tuple[str, str]]:
        """``{(partition, fileId)}`` replaced by completed replacecommits (requested time ≤ ``as_of``, completed
        by ``completed_by``)."""
        out: set[tuple[str, str]] = set()
        for inst in self.completed().actions(REPLACE_COMMIT):
            if as_of is not None and inst.requested_time > as_of:
                continue
            if not visible_at(inst, completed_by):
                continue
            out |= cm.replaced_file_ids(self.read_commit_metadata_shared(inst))
        return out


def completed_at(instant: Instant) -> str:
    """When a completed instant became visible: its completion time, or (layout 1, which records none) its
    requested time."""
    return instant.completion_time or instant.requested_time


def visible_at(instant: Instant, completed_by: str | None) -> bool:
    """Whether a completed instant had completed by ``completed_by`` (``None``: no bound)."""
    return completed_by is None or completed_at(instant) <= completed_by


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


def _collapse(files: list[Instant]) -> tuple[Instant, ...]:
    """One instant per requested time, in its most advanced state. A savepoint is the exception: it takes the
    requested time of the commit it pins, so it is an instant of its own beside that commit (folded together,
    the completed savepoint hid the completed commit and a read fell back to the files before it)."""
    best: dict[tuple[str, bool], Instant] = {}
    for f in files:
        key = (f.requested_time, f.action == SAVEPOINT)
        cur = best.get(key)
        if cur is None or _STATE_RANK[f.state] > _STATE_RANK[cur.state]:
            best[key] = f
    return tuple(sorted(best.values(), key=lambda i: (i.sort_key, i.action == SAVEPOINT)))
