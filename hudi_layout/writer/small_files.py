"""Small-file packing of an upsert's new keys or an insert's rows (``hoodie.parquet.small.file.limit``), as
Hudi's upsert partitioner assigns inserts (docs/live-writes.md, "Small files").

Pure planning, no I/O: which file groups of a partition are small, how many new records each can take, and
which of the new records go where. The Spark layer executes the plan: each chosen file group is rewritten as a
new base file holding its stored rows and the new records (:func:`hudi_layout.writer.merge.pack_file_group`),
inside the write's own instant; the records left over go to new file groups as before.

A file group is small when its latest slice has a base file smaller than the limit, no log files (Hudi's
rule for an index that does not index log files: such a slice's inserts would need a log), no pending
clustering or compaction, and this write does not rewrite it for its updates already. It takes
``(hoodie.parquet.max.file.size - base file size) / average record size`` new records, smallest file first;
the average record size comes from the newest commit that wrote base files (bytes / records written), else
Hudi's ``hoodie.copyonwrite.record.size.estimate`` default of 1024 bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from hudi_layout.table.fs_view import FileSlice

#: Hudi's ``hoodie.copyonwrite.record.size.estimate`` default: bytes per record when no commit tells
DEFAULT_RECORD_SIZE = 1024


@dataclass(frozen=True)
class PackTarget:
    """A small file group and how many of the write's new records it takes."""

    slice: FileSlice
    records: int


def small_file_groups(slices: Iterable[FileSlice], limit: int,
                      excluded: Collection[tuple[str, str]] = ()) -> dict[str, list[FileSlice]]:
    """The small latest slices per partition path, smallest first (then by file id: a stable order).
    ``excluded``: file groups that may not be packed (pending clustering or compaction, rewritten by this
    write already)."""
    out: dict[str, list[FileSlice]] = {}
    if limit <= 0:
        return out
    for s in slices:
        if not s.base_file_name or s.has_log_files or s.file_group in excluded:
            continue
        if s.size_bytes < limit:
            out.setdefault(s.partition_path, []).append(s)
    for group in out.values():
        group.sort(key=lambda s: (s.size_bytes, s.file_id))
    return out


def plan_packing(inserts: Mapping[str, int], small: Mapping[str, Sequence[FileSlice]], max_file_size: int,
                 record_size: float) -> dict[str, list[PackTarget]]:
    """For each partition path with new records (``inserts``: how many), the small file groups that take
    some: each up to its room, ``(max_file_size - size) / record_size`` records, until none are left."""
    per_record = max(1.0, float(record_size))
    out: dict[str, list[PackTarget]] = {}
    for part, count in inserts.items():
        left = int(count)
        for s in small.get(part, ()):
            if left <= 0:
                break
            room = int(max(0, max_file_size - s.size_bytes) / per_record)
            take = min(room, left)
            if take > 0:
                out.setdefault(part, []).append(PackTarget(s, take))
                left -= take
    return out


def average_record_size(commits: Iterable[Mapping[str, object]]) -> float:
    """Bytes per record of the newest commit (commit metadata dicts, newest first) that wrote base files;
    :data:`DEFAULT_RECORD_SIZE` when none did."""
    for meta in commits:
        stats = meta.get("partitionToWriteStats") or {}
        size = records = 0
        if isinstance(stats, Mapping):
            for part_stats in stats.values():
                for st in part_stats or ():
                    if not isinstance(st, Mapping) or not str(st.get("path") or "").endswith(".parquet"):
                        continue
                    size += int(st.get("fileSizeInBytes") or 0)
                    records += int(st.get("numWrites") or 0)
        if size > 0 and records > 0:
            return size / records
    return float(DEFAULT_RECORD_SIZE)
