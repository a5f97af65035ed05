"""File-system view: which files a snapshot reader sees (docs/hudi-format.md §4.7, docs/mor-read.md).

Rules (``AbstractTableFileSystemView`` / ``HoodieFileGroup`` / hudi-rs ``fs_view.rs``):

1. partitions = folders holding ``.hoodie_partition_metadata`` (the base path itself when non-partitioned);
2. a base file is committed iff its instant is a completed commit/deltacommit/replacecommit on the active
   timeline, or it is archived: not on the active timeline at all, older than its first commit instant,
   held by the archived timeline (:meth:`Timeline.archive_covers`), and named by no rollback on the active
   timeline. Hudi's Java view stops at "older than the first instant"; that alone would make the files of a
   failed *first* write (rolled back, or still being finished by an orphaned executor) visible, which
   hudi-rs (completed instants only) never shows. With ``as_of`` also ``instant <= as_of`` (time travel:
   requested times, as hudi-rs), with ``completed_by`` also a completion time ``<= completed_by`` (a
   snapshot pinned when it was taken);
3. the latest slice of a file group starts at its latest committed base file;
4. file groups listed in ``partitionToReplaceFileIds`` of completed replacecommits (visible by the same
   rules) are dropped. Pending clustering changes nothing for readers.

Merge-on-Read file groups also have log files (``.cdc`` change logs are not data logs and are left out):

* **v8/v9** (timeline layout 2): a log file is named after the deltacommit that wrote it, and belongs to the
  slice of the newest base instant at or before that deltacommit's *completion* time (Hudi 1.x's
  ``HoodieFileGroup.getBaseInstantTime``; hudi-rs the same). A deltacommit requested before a compaction and
  completed after it therefore belongs to the compaction's new slice. Logs of deltacommits that are not
  committed (by rule 2) are left out.
* **v6** (layout 1): a log file is named after the base instant of its slice, and its blocks come from
  several deltacommits (the merge filters them by instant).
* A slice waiting for a **pending compaction** (logs written after the compaction was scheduled, named
  after it in v6, completing after it in v8/v9) is merged with the slice before it, as Hudi's
  ``getLatestMergedFileSlicesBeforeOrOn`` does: base file and logs of the previous slice plus the new logs.
* A file group with committed logs but no committed base file yet is a **log-only slice** (empty
  ``base_file_name``).

Log files are ordered as Hudi orders them (:func:`~hudi_layout.format.file_naming.log_sort_key`). Files are
listed from storage (not from the metadata table's ``files`` partition).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hudi_layout.errors import CorruptFileError, UnsupportedTableError
from hudi_layout.format.file_naming import (
    BaseFileName,
    LogFileName,
    log_sort_key,
    try_parse_base_file_name,
    try_parse_data_log_file_name,
    try_parse_log_file_name,
)
from hudi_layout.format.instant import WRITE_ACTIONS, Instant
from hudi_layout.table.partition_metadata import has_partition_metadata
from hudi_layout.table.timeline import Timeline, visible_at


@dataclass(frozen=True)
class FileSlice:
    """The latest committed slice of one file group: a base file and, for MOR, the log files merged with it.

    ``base_file_name`` / ``base_file_path`` are empty for a log-only slice; ``commit_time`` is the slice's base
    instant (the base file's instant; for a log-only slice, the instant of its first log file).
    """

    partition_path: str  # "" for non-partitioned tables
    file_id: str
    base_file_name: str
    base_file_path: str  # absolute
    commit_time: str
    size_bytes: int  # of the base file (0 without one)
    log_file_names: tuple[str, ...] = ()  # in Hudi's log-file order
    log_size_bytes: int = 0  # all log files together

    @property
    def file_group(self) -> tuple[str, str]:
        return (self.partition_path, self.file_id)

    @property
    def has_base_file(self) -> bool:
        return bool(self.base_file_name)

    @property
    def has_log_files(self) -> bool:
        return bool(self.log_file_names)

    @property
    def relative_path(self) -> str:
        """Path of the base file relative to the table base (``region=us/<name>`` or ``<name>``), as in write
        stats; of the first log file for a log-only slice."""
        name = self.base_file_name or (self.log_file_names[0] if self.log_file_names else "")
        return f"{self.partition_path}/{name}" if self.partition_path else name

    @property
    def file_names(self) -> tuple[str, ...]:
        """Base file name (if any) and log file names: every file whose rows the slice's readers see."""
        return ((self.base_file_name,) if self.base_file_name else ()) + self.log_file_names

    def log_file_paths(self, base_path: str | os.PathLike[str]) -> list[str]:
        """Absolute paths of the log files, for the table at ``base_path``."""
        pdir = Path(base_path) / self.partition_path if self.partition_path else Path(base_path)
        return [str(pdir / n) for n in self.log_file_names]

    @property
    def total_size_bytes(self) -> int:
        return self.size_bytes + self.log_size_bytes


def list_partitions(base_path: str | os.PathLike[str]) -> list[str]:
    """Relative partition paths (``""`` for the base path itself), sorted. Hidden folders are skipped.

    A folder is a partition when it holds Hudi's ``.hoodie_partition_metadata`` (written before any data file
    of the partition). A folder holding Hudi base or log files without it is damage (a copy that left out
    dot-files): Hudi's listing would skip it, its metadata table would not, so reads would lose its rows and an
    upsert would file its keys a second time (session 19). Refused, naming the folder."""
    base = Path(base_path)
    out: list[str] = []
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = os.path.relpath(root, base)
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        for d in dirs:
            if os.path.islink(os.path.join(root, d)) and _holds_partitions(os.path.join(root, d)):
                name = f"{rel}/{d}" if rel else d
                raise UnsupportedTableError(
                    f"partition folder {name!r} of table {base} is a symbolic link (to "
                    f"{os.path.realpath(os.path.join(root, d))}): hudi_layout neither reads nor writes through "
                    "links inside a table (a write there could land outside it), and leaving it out would lose its "
                    "rows", hint="put the folder itself back in the table (move it, or mount the other disk at "
                                 "that path); Hudi and hudi-rs follow such links")
        if has_partition_metadata(root):
            out.append(rel)
        elif any(_is_hudi_data_file(f) for f in files):
            raise CorruptFileError(
                f"folder {rel or '(the base path)'!r} of table {base} holds Hudi data files but no "
                ".hoodie_partition_metadata, so it is not a partition to Hudi's listing (a copy that left out "
                "dot-files?)", hint="restore its .hoodie_partition_metadata (copy one from another partition "
                                    "folder of the table), or move the folder out of the table")
    return sorted(out)


def _holds_partitions(folder: str, max_depth: int = 4) -> bool:
    """Whether ``folder`` (followed, as a link target) is or holds a partition, or Hudi data files, within
    ``max_depth`` levels (partition paths are a few fields deep; a link to a large unrelated tree costs little)."""
    top = folder.rstrip(os.sep).count(os.sep)
    for root, dirs, files in os.walk(folder, followlinks=False):
        if root.rstrip(os.sep).count(os.sep) - top >= max_depth:
            dirs[:] = []
        else:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
        if has_partition_metadata(root) or any(_is_hudi_data_file(f) for f in files):
            return True
    return False


def _is_hudi_data_file(name: str) -> bool:
    if name.startswith("."):
        lf = try_parse_log_file_name(name)
        return lf is not None and lf.extension == "log"
    return try_parse_base_file_name(name) is not None


@dataclass(frozen=True)
class _Listed:
    name: str
    instant: str
    size: int


@dataclass(frozen=True)
class _Log:
    name: LogFileName
    file_name: str
    size: int


@dataclass(frozen=True)
class _SliceRules:
    """What deciding a file group's latest slice needs from the timeline (computed once per view call)."""

    committed: Callable[[str], bool]
    #: requested time -> completion time of completed write instants (layout 2 only)
    completion: Mapping[str, str]
    #: pending compactions visible to the query: requested time -> their file groups (``None``: unknown)
    pending_compactions: Mapping[str, frozenset[tuple[str, str]] | None]
    by_completion_time: bool


@dataclass(frozen=True)
class View:
    """What :meth:`FileSystemView.view` returns."""

    slices: list[FileSlice]
    #: ``(clean time, file name)`` of the files this (past) view needs that a completed clean deleted
    cleaned_away: list[tuple[str, str]]


class FileSystemView:
    """Computes latest file slices from a storage listing and a :class:`Timeline`."""

    def __init__(self, base_path: str | os.PathLike[str], timeline: Timeline,
                 base_file_extension: str = ".parquet") -> None:
        self.base_path = Path(base_path)
        self.timeline = timeline
        self.base_file_extension = base_file_extension

    def is_committed_fn(self, as_of: str | None = None, completed_by: str | None = None) -> Callable[[str], bool]:
        """The rule of step 2 as a predicate on a file's instant time (shared with the cleaner, which must
        never delete a file this view would show, nor keep one it can never show)."""
        return self._is_committed_fn(as_of, completed_by)

    def _is_committed_fn(self, as_of: str | None, completed_by: str | None = None) -> Callable[[str], bool]:
        tl = self.timeline
        commits = tl.commits_and_replaces()
        completed = {i.requested_time for i in commits.completed() if i.action in WRITE_ACTIONS
                     and visible_at(i, completed_by)}
        on_timeline = {f.requested_time for f in tl.files}
        first = commits.first()
        first_time = first.requested_time if first is not None else None

        archived: dict[str, bool] = {}
        rolled_back: list[frozenset[str]] = []

        def is_archived(t: str) -> bool:
            if t not in archived:
                if not rolled_back:
                    rolled_back.append(tl.rolled_back_times())
                archived[t] = tl.archive_covers(t) and t not in rolled_back[0]
            return archived[t]

        def committed(t: str) -> bool:
            if as_of is not None and t > as_of:
                return False
            if t in completed:
                return True
            return t not in on_timeline and first_time is not None and t < first_time and is_archived(t)

        return committed

    def _slice_rules(self, as_of: str | None, completed_by: str | None = None) -> _SliceRules:
        tl = self.timeline
        completion = {i.requested_time: i.completion_time for i in tl.commits_and_replaces().completed()
                      if i.completion_time and visible_at(i, completed_by)}
        pending = {t: fgs for t, fgs in tl.pending_compactions().items() if as_of is None or t <= as_of}
        return _SliceRules(self._is_committed_fn(as_of, completed_by), completion, pending, tl.layout_version >= 2)

    def file_slices(self, as_of: str | None = None, partitions: Iterable[str] | None = None, *,
                    completed_by: str | None = None) -> list[FileSlice]:
        return self.view(as_of, partitions, completed_by=completed_by, check_cleans=False).slices

    def view(self, as_of: str | None = None, partitions: Iterable[str] | None = None, *,
             completed_by: str | None = None, check_cleans: bool = True) -> View:
        """The slices of :meth:`file_slices` and, for a past view (``as_of`` / ``completed_by``) with
        ``check_cleans``, the files of that view that a completed clean deleted (:attr:`View.cleaned_away`).

        A clean only deletes slices that are no longer the latest (superseded by a newer base file, or their file
        group replaced), so a past view misses one when the deleted file was committed by the bound and neither
        its supersession nor its group's replacement was. Without this check such a view would just leave the
        file out: fewer rows, in silence. The latest view never misses any. The check uses this view's own
        listing: the newer base files of a file group are the listed ones plus the deleted ones."""
        rules = self._slice_rules(as_of, completed_by)
        replaced = self.timeline.replaced_file_groups(as_of, completed_by=completed_by)
        past = as_of is not None or completed_by is not None
        cleaned_files = self.timeline.cleaned_files()
        deleted, known = (_cleaned_candidates(cleaned_files, rules, replaced) if check_cleans and past
                          else ({}, {}))
        parts = list_partitions(self.base_path) if partitions is None else list(partitions)
        outputs = self.timeline.write_outputs(as_of, completed_by=completed_by)
        cleaned = {(part, name) for _t, part, name in cleaned_files}
        for part in sorted(set(outputs) - set(parts)):  # a partition folder that is gone altogether
            if partitions is None or not (self.base_path / part).is_dir():
                _require_outputs(part, {}, outputs[part], replaced, cleaned)
        written: dict[str, frozenset[str] | None] = {}
        slices: list[FileSlice] = []
        for part in parts:
            pdir = self.base_path / part if part else self.base_path
            bases: dict[str, list[_Listed]] = {}
            logs: dict[str, list[_Log]] = {}
            files = self._data_files(pdir)
            if files is None:
                continue
            for e, bf, lf in files:
                if lf is not None:
                    logs.setdefault(lf.file_id, []).append(_Log(lf, e.name, e.stat().st_size))
                    continue
                if bf is None or not rules.committed(bf.instant_time):
                    continue
                bases.setdefault(bf.file_id, []).append(_Listed(e.name, bf.instant_time, e.stat().st_size))
                if (part, bf.file_id) in deleted:
                    known[(part, bf.file_id)].add(bf.instant_time)
            _require_outputs(part, bases, outputs.get(part, ()), replaced, cleaned)
            for file_id in sorted(set(bases) | set(logs)):
                if (part, file_id) in replaced:
                    continue
                if file_id in bases:
                    bases[file_id] = self._listed_by_their_commits(part, bases[file_id], written)
                sl = _latest_slice(part, pdir, file_id, bases.get(file_id, []), logs.get(file_id, []), rules)
                if sl is not None:
                    slices.append(sl)
        slices.sort(key=lambda s: (s.partition_path, s.file_id))
        listed = None if partitions is None else set(parts)
        cleaned_away = sorted((clean_time, name) for group, files in deleted.items()
                              if listed is None or group[0] in listed
                              for instant, clean_time, name in files
                              if not any(b > instant for b in known[group]))  # the group's latest at the bound
        return View(slices, cleaned_away)

    def _listed_by_their_commits(self, part: str, bases: list[_Listed],
                                 written: dict[str, frozenset[str] | None]) -> list[_Listed]:
        """``bases`` (one file group's committed base files) without the newest ones their instant's commit does
        not list: a second attempt of a Spark task (retry, speculation, a straggler) writes a copy of a file
        under the same instant, and only one is committed. Hudi removes the others through its markers and
        readers of its metadata table never see them; a listing does (session 19: 14 keys read twice, then made
        permanent by a clustering). Only the files that can be the slice's base are checked, newest first,
        each instant's list read once per view. A zero-byte base file there is damage, refused."""
        kept = sorted(bases, key=lambda b: (b.instant, b.name), reverse=True)
        while kept:
            newest = kept[0]
            if not self._listed_by_its_commit(newest.instant, newest.name, written):
                kept.pop(0)
                continue
            if newest.size == 0:
                rel = f"{part}/{newest.name}" if part else newest.name
                raise CorruptFileError(f"base file {rel} of a completed commit is empty (0 bytes): the table is "
                                       "damaged", hint="restore the file from a backup, or roll the table back to "
                                       "an earlier instant with Hudi")
            break
        return kept

    def _listed_by_its_commit(self, instant_time: str, name: str, written: dict[str, frozenset[str] | None]) -> bool:
        """Whether the completed write of ``instant_time`` lists base file ``name`` in its write stats (true when
        that write is not on the active timeline or its metadata names no file: nothing can be said then);
        ``written`` caches each instant's list for one pass."""
        instant = self._completed_writes_by_time.get(instant_time)
        if instant is None:
            return True
        if instant_time not in written:
            written[instant_time] = self.timeline.files_written(instant)
        names = written[instant_time]
        return names is None or name in names

    def _data_files(self, pdir: Path) -> list[tuple[os.DirEntry[str], BaseFileName | None, LogFileName | None]] | None:
        """The base files (by extension) and data log files of partition folder ``pdir``, each with its parsed
        name (``None`` for a base-file extension whose name does not parse); ``None`` when the folder is gone."""
        try:
            entries = list(os.scandir(pdir))
        except FileNotFoundError:
            return None
        out: list[tuple[os.DirEntry[str], BaseFileName | None, LogFileName | None]] = []
        for e in entries:
            if not e.is_file():
                continue
            if e.name.startswith("."):
                lf = try_parse_data_log_file_name(e.name)
                if lf is not None:
                    out.append((e, None, lf))
            elif e.name.endswith(self.base_file_extension):
                out.append((e, try_parse_base_file_name(e.name), None))
        return out

    def committed_files(self) -> dict[str, dict[str, int]]:
        """Every committed data file on storage, by partition (name -> size): older slices' and replaced file
        groups' files too, not only the latest slices (what the ``files`` partition of a metadata table built
        over an existing table lists, as Hudi's bootstrap of it does: a reader that lists files through it,
        hudi-rs once it exists, finds a past view's files there only).

        A base file counts when its instant is committed (step 2's rule) and its commit lists it (a straggler copy
        does not, :meth:`_listed_by_its_commit`); a version 8 / 9 log file when the deltacommit in its name is
        committed (older versions name a log after its base instant, which says nothing of its blocks: none)."""
        committed = self._is_committed_fn(None)
        named_logs = self.timeline.layout_version >= 2
        written: dict[str, frozenset[str] | None] = {}
        out: dict[str, dict[str, int]] = {}
        for part in list_partitions(self.base_path):
            files = self._data_files(self.base_path / part if part else self.base_path)
            if files is None:
                continue
            listed = out.setdefault(part, {})
            for e, bf, lf in files:
                if lf is not None:
                    if named_logs and committed(lf.instant_time):
                        listed[e.name] = e.stat().st_size
                elif bf is not None and committed(bf.instant_time) and \
                        self._listed_by_its_commit(bf.instant_time, e.name, written):
                    listed[e.name] = e.stat().st_size
        return out

    @functools.cached_property
    def _completed_writes_by_time(self) -> dict[str, Instant]:
        return {i.requested_time: i for i in self.timeline.commits_and_replaces().completed()
                if i.action in WRITE_ACTIONS}

    def pending_clustering_file_groups(self) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for _inst, plan in self.timeline.pending_clustering():
            for group in plan.get("inputGroups") or []:
                for sl in group.get("slices") or []:
                    out.add((sl.get("partitionPath") or "", sl["fileId"]))
        return out

    def pending_compaction_of(self) -> Callable[[tuple[str, str]], str]:
        """For a file group ``(partition, fileId)``, the requested time of the pending compaction that will
        rewrite it (the oldest, if several name it), or ``""``. A plan that cannot be read is taken to cover
        every group not named by a readable one."""
        by_group: dict[tuple[str, str], str] = {}
        unknown = ""
        for instant, fgs in sorted(self.timeline.pending_compactions().items(), reverse=True):
            if fgs is None:
                unknown = instant
                continue
            by_group.update(dict.fromkeys(fgs, instant))
        return lambda group: by_group.get(group, unknown)

    def pending_compaction_file_groups(self) -> set[tuple[str, str]] | None:
        """``{(partition, fileId)}`` in pending compaction plans; ``None`` when some plan cannot be read (then
        any file group may be under compaction)."""
        out: set[tuple[str, str]] = set()
        for fgs in self.timeline.pending_compactions().values():
            if fgs is None:
                return None
            out |= fgs
        return out


def _require_outputs(part: str, bases: Mapping[str, list[_Listed]], outputs: Iterable[tuple[str, str, str]],
                     replaced: set[tuple[str, str]], cleaned: set[tuple[str, str]]) -> None:
    """Every base file a completed write listed in ``part`` is on storage, unless a completed clean deleted it
    (a past view then refuses with the clean's own error), its file group was replaced, or the group has a
    newer base file. A missing one is damage that would pass in silence: the view would fall back to the
    group's previous slice (old values), or, for a clustering's output, lose its rows, the groups it replaced
    being hidden (session 19: 60 of 90 rows after one clustered file was deleted). Hudi, listing files from its
    metadata table, fails on both."""
    newest: dict[str, str] = {}
    for file_id, listed in bases.items():
        newest[file_id] = max(b.instant for b in listed)
    for file_id, instant, name in outputs:
        if newest.get(file_id, "") >= instant or (part, file_id) in replaced or (part, name) in cleaned:
            continue
        rel = f"{part}/{name}" if part else name
        raise CorruptFileError(f"base file {rel}, written by the completed instant {instant}, is missing: the "
                               "table is damaged", hint="restore the file from a backup, or roll the table back "
                                                        "to before that instant with Hudi")


def _cleaned_candidates(cleaned_files: list[tuple[str, str, str]], rules: _SliceRules,
                        replaced: set[tuple[str, str]]
                        ) -> tuple[dict[tuple[str, str], list[tuple[str, str, str]]], dict[tuple[str, str], set[str]]]:
    """Files completed cleans deleted (``cleaned_files``: :meth:`Timeline.cleaned_files`) that a view with
    ``rules`` could show: ``(partition, fileId)`` ->
    ``[(instant the file counts from, clean time, name)]`` for file groups the view does not see replaced, and
    per such group the committed base instants among the deleted files (the listing adds the rest)."""
    deleted: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    bases: dict[tuple[str, str], set[str]] = {}
    for clean_time, part, name in cleaned_files:
        bf = try_parse_base_file_name(name)
        lf = None if bf is not None else try_parse_log_file_name(name)
        if bf is not None:
            group, instant = (part, bf.file_id), bf.instant_time
            bases.setdefault(group, set()).add(instant)
        elif lf is not None and lf.extension == "log" and not lf.is_cdc:
            group, instant = (part, lf.file_id), lf.instant_time
        else:
            continue
        if group not in replaced and rules.committed(instant):
            deleted.setdefault(group, []).append((instant, clean_time, name))
    known = {g: {b for b in bases.get(g, ()) if rules.committed(b)} for g in deleted}
    return deleted, known


def _under_pending_compaction(rules: _SliceRules, instant: str, file_group: tuple[str, str]) -> bool:
    if instant not in rules.pending_compactions:
        return False
    fgs = rules.pending_compactions[instant]
    return fgs is None or file_group in fgs


def _latest_slice(part: str, pdir: Path, file_id: str, bases: list[_Listed], logs: list[_Log],
                  rules: _SliceRules) -> FileSlice | None:
    """The latest committed slice of one file group (merged with a pending compaction's logs), or ``None``."""
    base = max(bases, key=lambda b: b.instant) if bases else None
    fg = (part, file_id)
    if rules.by_completion_time:
        # v8/v9: every committed log whose deltacommit completed at or after the latest base instant; logs that
        # complete after a pending compaction was scheduled sit in its (base-less) slice and are merged with
        # this one, so they are simply included.
        committed_logs = [lg for lg in logs if rules.committed(lg.name.instant_time)]
        if base is not None:
            chosen = [lg for lg in committed_logs
                      if rules.completion.get(lg.name.instant_time, lg.name.instant_time) >= base.instant]
        else:
            chosen = committed_logs
        start = base.instant if base is not None else min((lg.name.instant_time for lg in chosen), default="")
    else:
        # v6: logs are named after their slice's base instant; a slice is committed when that instant is
        # (base file or log-only slice), and logs named after a pending compaction of this file group that is
        # newer than the latest slice belong to it (merged with it).
        instants = {lg.name.instant_time for lg in logs if rules.committed(lg.name.instant_time)}
        if base is not None:
            instants.add(base.instant)
        if not instants:
            return None
        start = max(instants)
        if base is not None and base.instant != start:
            base = None  # a newer log-only slice (cannot happen with Hudi's writers; be exact anyway)
        chosen = [lg for lg in logs if lg.name.instant_time == start
                  or (lg.name.instant_time > start and _under_pending_compaction(rules, lg.name.instant_time, fg))]
    if base is None and not chosen:
        return None
    chosen.sort(key=lambda lg: log_sort_key(lg.name))
    return FileSlice(part, file_id, base.name if base else "", str(pdir / base.name) if base else "", start,
                     base.size if base else 0, tuple(lg.file_name for lg in chosen),
                     sum(lg.size for lg in chosen))
