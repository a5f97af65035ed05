"""Maintain the MDT (``files`` + ``column_stats``) for writes made by hudi_layout (§5.1–§5.8).

Protocol, called by the commit protocol while it holds the table lock:

* :meth:`MetadataWriter.initialize` once: create ``.hoodie/metadata`` (MOR, HFile), init deltacommits
  ``00000000000000000`` (files) and ``00000000000000001`` (column_stats), then the caller stores the returned
  data-table properties (or calls :func:`update_data_table_properties`).
* :meth:`MetadataWriter.write_deltacommit` per data instant T, **before** T completes: one log file per
  touched MDT file group with one HFILE_DATA block, then the MDT deltacommit T is completed. Readers ignore
  it until the data instant T completes (sync rule), so a crash in between is harmless.
* :meth:`MetadataWriter.maybe_compact` **after** T completed: compacts every file group into new base HFiles
  once ``max_delta_commits`` deltacommits accumulated. Refuses while data instants are pending — a
  compaction must never bake in (or drop) the blocks of a write that may still complete.
* :meth:`MetadataWriter.rollback` for a failed data instant: removes its MDT instant and log files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hudi_layout.errors import CommitConflictError, InvalidArgumentError
from hudi_layout.format import log_format as L
from hudi_layout.format.compaction_plan import compaction_plan_bytes
from hudi_layout.format.file_naming import make_log_file_name, try_parse_log_file_name
from hudi_layout.format.instant import State, new_instant_time
from hudi_layout.format.properties import TableProperties, load_properties, table_config_exists, write_properties
from hudi_layout.metadata import keys as K
from hudi_layout.metadata import mdt_timeline as T
from hudi_layout.metadata import stats_values as sv
from hudi_layout.metadata.colstats_encode import encode_column_table
from hudi_layout.metadata.hfile.writer import write_hfile
from hudi_layout.metadata.mdt_reader import (
    COLUMN_STATS_INIT_INSTANT,
    FILES_INIT_INSTANT,
    SOLO_COMMIT_TIMESTAMP,
    MetadataTableReader,
    instant_files,
)
from hudi_layout.metadata.merge import merge_group
from hudi_layout.metadata.records import (
    MetadataRecord,
    all_partitions_record,
    column_stats_record,
    column_stats_tombstone,
    encode_column_stats_value,
    encode_record,
    files_partition_record,
)
from hudi_layout.metadata.schema import metadata_record_schema_str
from hudi_layout.table.commit_protocol import CommitHooks
from hudi_layout.table.faults import crash_point
from hudi_layout.table.partition_metadata import write_partition_metadata

WRITE_TOKEN = "0-0-0"
DEFAULT_MAX_DELTA_COMMITS = 10

check_maintainable = T.check_maintainable


@dataclass(frozen=True)
class FileColumnStats:
    """Typed stats of one column of one base file, as executors report them."""

    partition: str
    file_name: str
    column: str
    min: Any
    max: Any
    null_count: int
    value_count: int
    arrow_type: Any  # pa.DataType
    total_size: int = 0
    total_uncompressed_size: int = 0


def update_data_table_properties(base_path: str | os.PathLike[str], updates: Mapping[str, str]) -> None:
    """Merge ``updates`` into the data table's ``hoodie.properties`` (backup + checksum sequence)."""
    hoodie = Path(base_path) / ".hoodie"
    props = load_properties(hoodie).to_dict()
    props.update(updates)
    write_properties(hoodie, props)


class MetadataWriter:
    def __init__(self, base_path: str | os.PathLike[str], table_properties: TableProperties | None = None, *,
                 columns_to_index: list[str] | None = None, file_group_count: int = 2,
                 files_file_group_count: int = 1, max_delta_commits: int | None = None) -> None:
        self.base_path = Path(base_path)
        self.props = table_properties or load_properties(self.base_path / ".hoodie")
        check_maintainable(self.props)
        self.version = self.props.version
        self.index_version = 2 if self.version >= 9 else 1
        self.schema_text = metadata_record_schema_str(self.version)
        self.columns_to_index = list(columns_to_index) if columns_to_index is not None else None
        self.mdt_dir = self.base_path / ".hoodie" / "metadata"
        self.timeline_dir = self.mdt_dir / ".hoodie" / "timeline"
        self._group_counts = {K.FILES: files_file_group_count, K.COLUMN_STATS: file_group_count}
        cfg = self.props.get("hoodie.metadata.compact.max.delta.commits")
        self.max_delta_commits = max_delta_commits or (int(cfg) if cfg else DEFAULT_MAX_DELTA_COMMITS)

    # -- layout --------------------------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return table_config_exists(self.mdt_dir / ".hoodie")

    def file_group_ids(self, partition: str) -> list[str]:
        """File groups of an MDT partition: from disk when it exists, else the configured count."""
        d = self.mdt_dir / partition
        found: set[str] = set()
        if d.is_dir():
            for name in os.listdir(d):
                ln = try_parse_log_file_name(name) if name.startswith(".") else None
                if ln is not None:
                    found.add(ln.file_id)
                elif name.endswith(".hfile"):
                    found.add(name.split("_")[0])
        if found:
            return sorted(found)
        return [K.file_group_id(partition, i) for i in range(self._group_counts[partition])]

    # -- records -------------------------------------------------------------------------------------------

    def stats_records(self, stats: Iterable[FileColumnStats | MetadataRecord]) -> list[MetadataRecord]:
        """Typed stats -> records (unsupported types and columns outside ``columns_to_index`` skipped)."""
        out: list[MetadataRecord] = []
        for s in stats:
            if isinstance(s, MetadataRecord):
                col = s.column_stats.column if s.column_stats else None
                if self.columns_to_index is None or col in self.columns_to_index:
                    out.append(s)
                continue
            if self.columns_to_index is not None and s.column not in self.columns_to_index:
                continue
            rec = column_stats_record(s.partition, s.file_name, s.column, s.min, s.max, s.null_count,
                                      s.value_count, s.total_size, s.total_uncompressed_size, s.arrow_type,
                                      self.index_version)
            if rec is not None:  # unsupported type -> no stats for that column
                out.append(rec)
        return out

    def encode_cells(self, records: Iterable[FileColumnStats | MetadataRecord]) -> dict[str, bytes]:
        """``{key: Avro value}``; FileColumnStats take a direct encoding path (the bulk of every write)."""
        cells: dict[str, bytes] = {}
        wanted = set(self.columns_to_index) if self.columns_to_index is not None else None
        v2 = self.index_version >= 2
        for s in records:
            if isinstance(s, MetadataRecord):
                if s.column_stats is not None and wanted is not None and s.column_stats.column not in wanted:
                    continue
                cells[s.key] = encode_record(s, self.version)
                continue
            if wanted is not None and s.column not in wanted:
                continue
            info = sv.cached_value_type_for_arrow(s.arrow_type)
            if info is None or (not v2 and not sv.v1_holds_exactly(s.arrow_type)):
                continue
            name = s.file_name.rsplit("/", 1)[-1]
            cells[K.column_partition_prefix(s.column, s.partition) + K.file_index_id(name)] = \
                encode_column_stats_value(name, s.column, sv.encode(s.min, info, self.index_version),
                                          sv.encode(s.max, info, self.index_version), int(s.value_count),
                                          int(s.null_count), int(s.total_size),
                                          int(s.total_uncompressed_size),
                                          info if v2 else None, self.version)
        return cells

    def encode_tables(self, tables: Mapping[str, Any] | None) -> dict[str, bytes]:
        """Cells from per-column Arrow stats tables (see :mod:`.colstats_encode`)."""
        cells: dict[str, bytes] = {}
        for column, table in (tables or {}).items():
            if self.index_version < 2 and not sv.v1_holds_exactly(table.schema.field("min").type):
                continue  # see stats_values.v1_holds_exactly
            if self.columns_to_index is None or column in self.columns_to_index:
                cells.update(encode_column_table(column, table, index_version=self.index_version,
                                                 table_version=self.version))
        return cells

    def _write_group_logs(self, instant: str, partition: str,
                          records: Iterable[FileColumnStats | MetadataRecord],
                          *, all_groups: bool = False, extra: dict[str, bytes] | None = None
                          ) -> list[dict[str, Any]]:
        groups = self.file_group_ids(partition)
        buckets: dict[str, dict[str, bytes]] = {g: {} for g in groups} if all_groups else {}
        cells = dict(extra or {})
        cells.update(self.encode_cells(records))
        keys = list(cells)
        for key, gi in zip(keys, K.file_group_indices(keys, len(groups))):
            buckets.setdefault(groups[gi], {})[key] = cells[key]
        stats = []
        for fid, group_cells in sorted(buckets.items()):
            if group_cells:
                ordered = sorted(group_cells) if all(k.isascii() for k in group_cells) \
                    else sorted(group_cells, key=lambda s: s.encode("utf-8"))  # HFile order = UTF-8 bytes
                items = [(k.encode("utf-8"), group_cells[k]) for k in ordered]
                hfile = write_hfile(None, items, codec="GZ", file_info={b"schema": self.schema_text.encode()})
                block = L.hfile_data_block(instant, self.schema_text, hfile)
            else:
                block = L.delete_block(instant)
            name = self._new_log_name(partition, fid, instant)
            path = self.mdt_dir / partition / name
            with open(path, "wb") as fh:
                fh.write(block)
                fh.flush()
                os.fsync(fh.fileno())
            stats.append(T.log_write_stat(partition, fid, name, len(block), len(group_cells), instant))
        return stats

    def _new_log_name(self, partition: str, fid: str, instant: str) -> str:
        version = 1
        while (self.mdt_dir / partition / make_log_file_name(fid, instant, version, WRITE_TOKEN)).exists():
            version += 1
        return make_log_file_name(fid, instant, version, WRITE_TOKEN)

    def _write_base(self, partition: str, fid: str, instant: str,
                    records: dict[str, bytes]) -> tuple[str, int]:
        keys = sorted(records, key=lambda s: s.encode("utf-8"))
        info = {b"schema": self.schema_text.encode()}
        if keys:
            info[b"minRecordKey"] = keys[0].encode()
            info[b"maxRecordKey"] = keys[-1].encode()
        name = f"{fid}_{WRITE_TOKEN}_{instant}.hfile"
        data = write_hfile(self.mdt_dir / partition / name, [(k.encode(), records[k]) for k in keys],
                           codec="GZ", file_info=info)
        return name, len(data)

    # -- initialise ----------------------------------------------------------------------------------------

    def initialize(self, existing_files: Mapping[str, Mapping[str, int]] | None = None,
                   existing_stats: Iterable[FileColumnStats | MetadataRecord] = (),
                   column_stats_extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Create the MDT; returns the data-table properties to set once this returns. ``column_stats_extra``:
        ``extraMetadata`` of the column_stats initialisation deltacommit."""
        if self.exists:
            listed = set(self.props.metadata_partitions)
            if {K.FILES, K.COLUMN_STATS} <= listed:
                raise InvalidArgumentError(f"{self.mdt_dir}: metadata table already exists")
            # never published in hoodie.table.metadata.partitions (an earlier initialize crashed, or another
            # tool left it): no reader uses it, so rebuild from scratch
            import shutil

            shutil.rmtree(self.mdt_dir)
        T.create_mdt_dirs(self.mdt_dir, self.props)
        for part, init in ((K.FILES, FILES_INIT_INSTANT), (K.COLUMN_STATS, COLUMN_STATS_INIT_INSTANT)):
            write_partition_metadata(self.mdt_dir / part, FILES_INIT_INSTANT, 1)
            T.write_instant(self.timeline_dir, init, "deltacommit", State.REQUESTED)
            T.write_instant(self.timeline_dir, init, "deltacommit", State.INFLIGHT,
                            T.commit_bytes({}, "BULK_INSERT_PREPPED", self.version))
            if part == K.FILES:
                files = dict(existing_files or {})
                recs: list[Any] = [all_partitions_record(list(files))]
                recs += [files_partition_record(p, dict(f)) for p, f in files.items()]
            else:
                recs = list(existing_stats)
            stats = self._init_bases(part, init, recs)
            stats += self._write_group_logs(init, part, [], all_groups=True)
            by_part = {part: stats}
            extra = dict(column_stats_extra or {}) if part == K.COLUMN_STATS else None
            T.write_instant(self.timeline_dir, init, "deltacommit", State.COMPLETED,
                            T.commit_bytes(by_part, "BULK_INSERT_PREPPED", self.version, extra),
                            new_instant_time())
        updates = {"hoodie.table.metadata.partitions": ",".join(sorted(
            set(self.props.metadata_partitions) | {K.FILES, K.COLUMN_STATS})),
            "hoodie.table.metadata.partitions.inflight": ""}
        if self.columns_to_index is not None:
            updates["hoodie.table.index.defs.path"] = T.write_index_defs(
                self.base_path, self.columns_to_index,
                                                                         self.version)
        return updates

    def _init_bases(self, partition: str, instant: str, records: list[Any]) -> list[dict[str, Any]]:
        groups = self.file_group_ids(partition)
        buckets: dict[str, dict[str, bytes]] = {}
        cells = self.encode_cells(records)
        keys = list(cells)
        for key, gi in zip(keys, K.file_group_indices(keys, len(groups))):
            buckets.setdefault(groups[gi], {})[key] = cells[key]
        stats = []
        for fid, cells in sorted(buckets.items()):
            name, size = self._write_base(partition, fid, instant, cells)
            stats.append(T.base_write_stat(partition, fid, name, size, len(cells)))
        return stats

    # -- deltacommit ---------------------------------------------------------------------------------------

    def write_deltacommit(self, instant_time: str, files_added: Mapping[str, Mapping[str, int]],
                          column_stats: Iterable[FileColumnStats | MetadataRecord] = (), *,
                          files_deleted: Mapping[str, Iterable[str]] | None = None,
                          partitions_added: Iterable[str] = (), partitions_deleted: Iterable[str] = (),
                          column_stats_tables: Mapping[str, Any] | None = None,
                          operation: str = "UPSERT_PREPPED") -> list[Path]:
        """Write and complete MDT deltacommit ``instant_time``; returns the log files written.

        ``files_added``: ``{partition: {file name: size}}`` (partition ``""`` for non-partitioned);
        stats come as ``column_stats`` (FileColumnStats / records) and/or ``column_stats_tables``
        (``{column: pa.Table(partition, file_name, min, max, null_count, value_count[, total_size,
        total_uncompressed_size])}`` — the fast bulk path, same shape as ``ColumnStatsIndex.load_column``);
        ``files_deleted``: ``{partition: [file name, ...]}`` (replaced/cleaned files → tombstones, and
        column_stats tombstones for ``columns_to_index`` when known).
        """
        if not self.exists:
            raise InvalidArgumentError(f"{self.mdt_dir}: metadata table not initialised")
        if instant_time.startswith(SOLO_COMMIT_TIMESTAMP):
            raise InvalidArgumentError(f"instant {instant_time} is reserved for MDT initialisation")
        mdt_hoodie = self.mdt_dir / ".hoodie"
        existing = [i for i in instant_files(mdt_hoodie, load_properties(mdt_hoodie))
                    if i.requested_time == instant_time and i.is_completed]
        if existing:
            raise CommitConflictError(f"MDT deltacommit {instant_time} is already completed")
        deleted = {p: list(v) for p, v in (files_deleted or {}).items()}
        partitions = set(files_added) | set(deleted)
        file_recs = [files_partition_record(p, dict(files_added.get(p, {})), deleted.get(p, ()))
                     for p in sorted(partitions)]
        # like Hudi, list every partition this commit writes to in __all_partitions__ (idempotent merge)
        new_parts = sorted(set(partitions_added) | {p for p, f in files_added.items() if f})
        gone_parts = list(partitions_deleted)
        if new_parts or gone_parts:
            file_recs.append(all_partitions_record(new_parts, gone_parts))
        stat_recs: list[Any] = list(column_stats)
        if self.columns_to_index:
            for p, names in deleted.items():
                for name in names:
                    stat_recs.extend(column_stats_tombstone(p, name, c, self.index_version)
                                     for c in self.columns_to_index)
        T.write_instant(self.timeline_dir, instant_time, "deltacommit", State.REQUESTED)
        T.write_instant(self.timeline_dir, instant_time, "deltacommit", State.INFLIGHT,
                        T.commit_bytes({}, operation, self.version))
        by_part: dict[str, list[dict[str, Any]]] = {}
        if file_recs:
            by_part[K.FILES] = self._write_group_logs(instant_time, K.FILES, file_recs)
        table_cells = self.encode_tables(column_stats_tables)
        if stat_recs or table_cells:
            by_part[K.COLUMN_STATS] = self._write_group_logs(instant_time, K.COLUMN_STATS, stat_recs,
                                                             extra=table_cells)
        crash_point("mdt.after_log_append")
        T.write_instant(self.timeline_dir, instant_time, "deltacommit", State.COMPLETED,
                        T.commit_bytes(by_part, operation, self.version), new_instant_time(instant_time))
        return [self.mdt_dir / p / s["path"].split("/", 1)[1] for p, sts in by_part.items() for s in sts]

    # -- rollback ------------------------------------------------------------------------------------------

    def rollback(self, instant_time: str) -> list[Path]:
        """Remove the MDT traces of a failed data instant: completed file first (readers then ignore the
        blocks even if we crash midway), then its log files, then the pending instant files."""
        if instant_time.startswith(SOLO_COMMIT_TIMESTAMP) or not self.exists:
            return []
        removed: list[Path] = []
        inst = sorted(instant_files(self.mdt_dir / ".hoodie", load_properties(self.mdt_dir / ".hoodie")),
                      key=lambda i: -int(i.is_completed))
        for i in inst:
            if i.requested_time == instant_time and i.is_completed and i.action == "deltacommit":
                p = self.timeline_dir / i.file_name
                p.unlink(missing_ok=True)
                removed.append(p)
        for part in (K.FILES, K.COLUMN_STATS):
            d = self.mdt_dir / part
            if not d.is_dir():
                continue
            for name in os.listdir(d):
                ln = try_parse_log_file_name(name) if name.startswith(".") else None
                if ln is not None and ln.instant_time == instant_time:
                    (d / name).unlink()
                    removed.append(d / name)
        for i in inst:
            if i.requested_time == instant_time and not i.is_completed:
                p = self.timeline_dir / i.file_name
                p.unlink(missing_ok=True)
                removed.append(p)
        return removed

    # -- compaction ----------------------------------------------------------------------------------------

    def deltacommits_since_compaction(self) -> int:
        instants = instant_files(self.mdt_dir / ".hoodie", load_properties(self.mdt_dir / ".hoodie"))
        last = max((i.requested_time for i in instants if i.action == "commit" and i.is_completed),
                   default="")
        return sum(1 for i in instants if i.action == "deltacommit" and i.is_completed
                   and i.requested_time > last and not i.requested_time.startswith(SOLO_COMMIT_TIMESTAMP))

    def maybe_compact(self) -> str | None:
        """Compact when more than ``max_delta_commits`` deltacommits piled up and no data write is pending."""
        if self.deltacommits_since_compaction() < self.max_delta_commits:
            return None
        try:
            return self.compact()
        except CommitConflictError:
            return None

    def compact(self, instant_time: str | None = None) -> str:
        """Merge base + valid log data of every file group into new base HFiles (compaction → commit)."""
        data_instants = instant_files(self.base_path / ".hoodie", load_properties(self.base_path / ".hoodie"))
        done = {i.requested_time for i in data_instants if i.is_completed}
        # a pending clean counts too: its MDT deltacommit may already be written and must survive compaction
        pending = {i.requested_time for i in data_instants if i.is_pending} - done
        if pending:
            raise CommitConflictError(f"cannot compact the metadata table while data instants are pending: "
                                      f"{', '.join(sorted(pending))}")
        reader = MetadataTableReader(self.base_path, data_instants=data_instants)
        latest = max([i.requested_time for i in reader.mdt_instants] + [i.completion_time or ""
                                                                       for i in reader.mdt_instants])
        instant_time = instant_time or new_instant_time(latest)
        ops, merged_groups = [], []
        for part in (K.FILES, K.COLUMN_STATS):
            sources_by_group = reader._group_sources(part)
            for sl, sources in zip(reader.file_slices(part), sources_by_group):
                merged = self._merge_sources(sources)
                merged_groups.append((part, sl.file_id, merged, len(sl.log_files)))
                ops.append({"baseInstantTime": sl.base_instant or FILES_INIT_INSTANT,
                            "deltaFilePaths": [p.name for p in sl.log_files],
                            "dataFilePath": sl.base_file.name if sl.base_file else None, "fileId": sl.file_id,
                            "partitionPath": part, "metrics": {"TOTAL_LOG_FILES": float(len(sl.log_files))},
                            "bootstrapFilePath": None})
        T.write_instant(self.timeline_dir, instant_time, "compaction", State.REQUESTED,
                        compaction_plan_bytes(ops))
        T.write_instant(self.timeline_dir, instant_time, "compaction", State.INFLIGHT)
        by_part: dict[str, list[dict[str, Any]]] = {}
        for part, fid, merged, nlogs in merged_groups:
            name, size = self._write_base(part, fid, instant_time, merged)
            by_part.setdefault(part, []).append(T.base_write_stat(part, fid, name, size, len(merged), nlogs))
        T.write_instant(self.timeline_dir, instant_time, "commit", State.COMPLETED,
                        T.commit_bytes(by_part, "COMPACT", self.version), new_instant_time(instant_time))
        return instant_time

    def _merge_sources(self, sources: list[Any]) -> dict[str, bytes]:
        return merge_group(sources, self.version, where=str(self.mdt_dir))


def rollback_metadata_instant(base_path: str | os.PathLike[str], instant_time: str) -> list[Path]:
    """Module-level entry for the commit protocol's rollback: see :meth:`MetadataWriter.rollback`.

    Works without :func:`check_maintainable` (repairing a failed write is always allowed)."""
    writer = MetadataWriter.__new__(MetadataWriter)
    writer.base_path = Path(base_path)
    writer.mdt_dir = writer.base_path / ".hoodie" / "metadata"
    writer.timeline_dir = writer.mdt_dir / ".hoodie" / "timeline"
    return writer.rollback(instant_time)


#: The commit-protocol hooks of the metadata table: every writer of a table that may have an MDT passes these
#: (the table layer cannot import this package), so rollbacks of failed instants also remove their MDT entries.
COMMIT_HOOKS = CommitHooks(rollback_metadata=rollback_metadata_instant)
