"""File-system view: which base files a snapshot reader sees (docs/hudi-format.md §4.7).

Rules (``AbstractTableFileSystemView`` / hudi-rs ``fs_view.rs``):

1. partitions = folders holding ``.hoodie_partition_metadata`` (the base path itself when non-partitioned);
2. a base file is committed iff its instant is a completed commit/deltacommit/replacecommit on the active
   timeline, or it is older than the first instant of the active commits timeline (archived) and not on
   the timeline at all; with ``as_of`` also ``instant <= as_of`` (time travel: requested times, as hudi-rs),
   with ``completed_by`` also a completion time ``<= completed_by`` (a snapshot pinned when it was taken);
3. latest committed base file per (partition, fileId);
4. file groups listed in ``partitionToReplaceFileIds`` of completed replacecommits (visible by the same
   rules) are dropped. Pending clustering changes nothing for readers.

Files are listed from storage (not from the metadata table's ``files`` partition).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from hudi_layout.format.file_naming import try_parse_base_file_name, try_parse_log_file_name
from hudi_layout.format.instant import WRITE_ACTIONS
from hudi_layout.table.partition_metadata import has_partition_metadata
from hudi_layout.table.timeline import Timeline, visible_at


@dataclass(frozen=True)
class FileSlice:
    """The latest committed base file of one file group (plus, for MOR, its log files' names)."""

    partition_path: str  # "" for non-partitioned tables
    file_id: str
    base_file_name: str
    base_file_path: str  # absolute
    commit_time: str  # instant time in the base file name
    size_bytes: int
    log_file_names: tuple[str, ...] = ()

    @property
    def file_group(self) -> tuple[str, str]:
        return (self.partition_path, self.file_id)

    @property
    def relative_path(self) -> str:
        """Path relative to the table base (``region=us/<name>`` or ``<name>``), as in write stats."""
        return f"{self.partition_path}/{self.base_file_name}" if self.partition_path else self.base_file_name


def list_partitions(base_path: str | os.PathLike[str]) -> list[str]:
    """Relative partition paths (``""`` for the base path itself), sorted. Hidden folders are skipped."""
    base = Path(base_path)
    out: list[str] = []
    for root, dirs, _files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if has_partition_metadata(root):
            rel = os.path.relpath(root, base)
            out.append("" if rel == "." else rel.replace(os.sep, "/"))
    return sorted(out)


@dataclass(frozen=True)
class _Listed:
    name: str
    instant: str
    size: int


class FileSystemView:
    """Computes latest file slices from a storage listing and a :class:`Timeline`."""

    def __init__(self, base_path: str | os.PathLike[str], timeline: Timeline,
                 base_file_extension: str = ".parquet") -> None:
        self.base_path = Path(base_path)
        self.timeline = timeline
        self.base_file_extension = base_file_extension

    def _is_committed_fn(self, as_of: str | None, completed_by: str | None = None) -> Callable[[str], bool]:
        tl = self.timeline
        commits = tl.commits_and_replaces()
        completed = {i.requested_time for i in commits.completed() if i.action in WRITE_ACTIONS
                     and visible_at(i, completed_by)}
        on_timeline = {f.requested_time for f in tl.files}
        first = commits.first()
        first_time = first.requested_time if first is not None else None

        def committed(t: str) -> bool:
            if as_of is not None and t > as_of:
                return False
            if t in completed:
                return True
            return t not in on_timeline and first_time is not None and t < first_time

        return committed

    def file_slices(self, as_of: str | None = None, partitions: Iterable[str] | None = None, *,
                    completed_by: str | None = None) -> list[FileSlice]:
        committed = self._is_committed_fn(as_of, completed_by)
        replaced = self.timeline.replaced_file_groups(as_of, completed_by=completed_by)
        parts = list_partitions(self.base_path) if partitions is None else list(partitions)
        slices: list[FileSlice] = []
        for part in parts:
            pdir = self.base_path / part if part else self.base_path
            latest: dict[str, _Listed] = {}
            logs: dict[str, list[tuple[str, str]]] = {}
            try:
                entries = list(os.scandir(pdir))
            except FileNotFoundError:
                continue
            for e in entries:
                if not e.is_file():
                    continue
                name = e.name
                if name.startswith("."):
                    lf = try_parse_log_file_name(name)
                    if lf is not None:
                        logs.setdefault(lf.file_id, []).append((lf.instant_time, name))
                    continue
                if not name.endswith(self.base_file_extension):
                    continue
                bf = try_parse_base_file_name(name)
                if bf is None or not committed(bf.instant_time):
                    continue
                cur = latest.get(bf.file_id)
                if cur is None or bf.instant_time > cur.instant:
                    latest[bf.file_id] = _Listed(name, bf.instant_time, e.stat().st_size)
            for file_id, lst in latest.items():
                if (part, file_id) in replaced:
                    continue
                log_names = tuple(sorted(n for t, n in logs.get(file_id, ())
                                         if t >= lst.instant and (t == lst.instant or committed(t))))
                slices.append(FileSlice(part, file_id, lst.name, str(pdir / lst.name), lst.instant, lst.size,
                                        log_names))
        slices.sort(key=lambda s: (s.partition_path, s.file_id))
        return slices

    def pending_clustering_file_groups(self) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for _inst, plan in self.timeline.pending_clustering():
            for group in plan.get("inputGroups") or []:
                for sl in group.get("slices") or []:
                    out.add((sl.get("partitionPath") or "", sl["fileId"]))
        return out
