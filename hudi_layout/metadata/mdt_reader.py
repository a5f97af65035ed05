"""Read the metadata table (``<base>/.hoodie/metadata``): ``files`` and ``column_stats`` partitions.

Spec: docs/hudi-format.md §5.1–§5.8. The MDT is a MOR table of HFiles. Per MDT file group we read the latest
base HFile written by a completed MDT instant, then the log files of that slice in order, applying only log
blocks whose ``INSTANT_TIME`` passes the reader sync rule (§5.7,
``HoodieTableMetadataUtil.getValidInstantTimestamps``):

* requested times of *completed* data-table instants;
* MDT partition-initialisation deltacommits (``00000000000000…``);
* completed MDT deltacommits whose time is an ``indexing`` instant of the data timeline (async indexing);
* completed MDT rollback / restore instants;

and which are themselves completed on the MDT timeline (or older than its first active instant = archived).
Blocks named by a rollback COMMAND block (same file group) are ignored. Instants rolled back on the data
table are *not* treated as valid (Java adds them because its MDT rollback already removed their blocks; a
left-over block of a rolled-back write must not resurrect deleted files).

Only MDT partitions listed in the data table's ``hoodie.table.metadata.partitions`` are used.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudi_layout.errors import CorruptFileError, UnsupportedTableError
from hudi_layout.format import log_format as L
from hudi_layout.format.file_naming import LogFileName, log_sort_key, try_parse_log_file_name
from hudi_layout.format.instant import Instant
from hudi_layout.format.properties import TableProperties, load_properties
from hudi_layout.metadata import keys as K
from hudi_layout.metadata.hfile.reader import HFileReader
from hudi_layout.metadata.merge import DeletedKeys, delete_block_keys, merge_column_stats, merge_files
from hudi_layout.metadata.records import ColumnStat, FileInfo, MetadataRecord, decode_record
from hudi_layout.table.timeline import Timeline

SOLO_COMMIT_TIMESTAMP = "00000000000000"
#: the deltacommits that create our metadata table's partitions (``files`` first, then ``column_stats``)
FILES_INIT_INSTANT = "00000000000000000"
COLUMN_STATS_INIT_INSTANT = "00000000000000001"
METADATA_DIR = "metadata"
SCHEMA_INFO_KEY = b"schema"


# ---------------------------------------------------------------------------------------------- timeline


def instant_files(hoodie_dir: Path, props: TableProperties) -> list[Instant]:
    """Every instant file (all states) of the timeline in ``hoodie_dir`` (data table or MDT), sorted, as the
    table layer's :class:`~hudi_layout.table.timeline.Timeline` lists it."""
    return list(Timeline.of_table(hoodie_dir, props).files)


def column_stats_init_extra(base_path: str | os.PathLike[str]) -> dict[str, Any]:
    """``extraMetadata`` of the completed deltacommit that created the column_stats partition of the table at
    ``base_path`` (hudi_layout's :data:`COLUMN_STATS_INIT_INSTANT`); empty when there is none (no metadata
    table, one another writer built, or that instant archived)."""
    mdt_hoodie = Path(base_path) / ".hoodie" / METADATA_DIR / ".hoodie"
    if not (mdt_hoodie / "hoodie.properties").is_file():
        return {}
    timeline = Timeline.load(mdt_hoodie)
    for instant in timeline.completed():
        if instant.requested_time == COLUMN_STATS_INIT_INSTANT and instant.action == "deltacommit":
            extra = timeline.read_commit_metadata_shared(instant).get("extraMetadata")
            return dict(extra) if isinstance(extra, dict) else {}
    return {}


@dataclass(frozen=True)
class SyncState:
    """Which MDT instants are readable, and MDT completion times (for file slicing)."""

    valid: frozenset[str]
    mdt_completion: dict[str, str]  # MDT requested time -> completion time (completed instants only)
    mdt_first_active: str | None

    def block_visible(self, instant_time: str | None) -> bool:
        if not instant_time:
            return False
        if instant_time not in self.valid:
            return False
        if instant_time in self.mdt_completion:
            return True
        # not completed in the MDT: only acceptable when older than the active MDT timeline (archived)
        return self.mdt_first_active is not None and instant_time < self.mdt_first_active


def compute_sync_state(data_instants: Iterable[Instant], mdt_instants: Iterable[Instant]) -> SyncState:
    data = list(data_instants)
    mdt = list(mdt_instants)
    valid = {i.requested_time for i in data if i.is_completed}
    indexing = {i.requested_time for i in data if i.action == "indexing"}
    completion: dict[str, str] = {}
    for i in mdt:
        if not i.is_completed:
            continue
        completion[i.requested_time] = i.completion_time or i.requested_time
        if i.requested_time.startswith(SOLO_COMMIT_TIMESTAMP):
            valid.add(i.requested_time)
        elif i.action in ("rollback", "restore"):
            valid.add(i.requested_time)
        elif i.action == "deltacommit" and i.requested_time in indexing:
            valid.add(i.requested_time)
    first = min((i.requested_time for i in mdt), default=None)
    return SyncState(frozenset(valid), completion, first)


def lagging_data_instants(data_instants: Iterable[Instant], mdt_instants: Iterable[Instant]) -> list[str]:
    """Data instants that completed while their MDT deltacommit never did (it is still requested or inflight).

    Writers complete the MDT deltacommit first and the data instant after it, so the reverse state is left
    only by hands (a copied or edited timeline): the MDT then lists files without that commit's, and every
    reader that lists through it (Hudi's, hudi-rs) misses them, whatever later commits add.
    """
    done_data = {i.requested_time for i in data_instants if i.is_completed}
    mdt = list(mdt_instants)
    done_mdt = {i.requested_time for i in mdt if i.is_completed}
    return sorted({i.requested_time for i in mdt if i.action == "deltacommit" and not i.is_completed
                   and i.requested_time in done_data and i.requested_time not in done_mdt})


# ---------------------------------------------------------------------------------------------- slices


@dataclass(frozen=True)
class MdtFileSlice:
    partition: str  # MDT partition (files, column_stats, ...)
    file_id: str
    base_file: Path | None
    base_instant: str | None
    log_files: tuple[Path, ...] = ()


def _base_file_parts(name: str) -> tuple[str, str] | None:
    """``(file id, instant)`` of an MDT base HFile name (``<fileId>_<token>_<instant>.hfile``)."""
    if not name.endswith(".hfile") or name.startswith("."):
        return None
    stem = name[: -len(".hfile")]
    parts = stem.split("_")
    if len(parts) < 3:
        return None
    return "_".join(parts[:-2]), parts[-1]


def latest_file_slices(partition_dir: Path, partition: str, sync: SyncState) -> list[MdtFileSlice]:
    """Latest slice per file group: newest base HFile of a completed MDT instant + the log files written by
    MDT deltacommits that completed after that base's instant (v8/v9 completion-time slicing)."""
    bases: dict[str, tuple[str, Path]] = {}
    logs: dict[str, list[tuple[LogFileName, Path]]] = {}
    try:
        names = os.listdir(partition_dir)
    except FileNotFoundError:
        return []
    for name in names:
        if name.startswith("."):
            ln = try_parse_log_file_name(name)
            if ln is not None:
                logs.setdefault(ln.file_id, []).append((ln, partition_dir / name))
            continue
        parts = _base_file_parts(name)
        if parts is None:
            continue
        fid, instant = parts
        if instant not in sync.mdt_completion:
            continue  # base from a pending / failed compaction
        if fid not in bases or instant > bases[fid][0]:
            bases[fid] = (instant, partition_dir / name)
    out = []
    for fid in sorted(set(bases) | set(logs)):
        base_instant, base_path = bases.get(fid, (None, None))
        selected = []
        for ln, p in logs.get(fid, []):
            done = sync.mdt_completion.get(ln.instant_time)
            if base_instant is not None and done is not None and done <= base_instant:
                continue  # compacted into the base
            if base_instant is not None and done is None and ln.instant_time <= base_instant:
                continue
            selected.append((ln, p))
        selected.sort(key=lambda t: log_sort_key(t[0]))
        out.append(MdtFileSlice(partition, fid, base_path, base_instant, tuple(p for _, p in selected)))
    return out


# ---------------------------------------------------------------------------------------------- reader


@dataclass
class _Source:
    """One HFile to read from (a base file or an HFILE_DATA block)."""

    reader: HFileReader
    schema: str
    instant: str | None
    data: bytes = b""  # the complete HFile bytes (for position-based fast scans)


@dataclass
class MetadataTableReader:
    """Reader for one data table's MDT. Cheap to construct; file groups are opened lazily."""

    base_path: Path
    data_props: TableProperties = field(init=False)
    mdt_props: TableProperties = field(init=False)
    sync: SyncState = field(init=False)

    def __init__(self, base_path: str | os.PathLike[str], *, data_props: TableProperties | None = None,
                 data_instants: list[Instant] | None = None) -> None:
        self.base_path = Path(base_path)
        hoodie = self.base_path / ".hoodie"
        self.data_props = data_props or load_properties(hoodie)
        self.mdt_dir = hoodie / METADATA_DIR
        self.mdt_props = load_properties(self.mdt_dir / ".hoodie")
        if data_instants is None:
            data_instants = instant_files(hoodie, self.data_props)
        self.mdt_instants = instant_files(self.mdt_dir / ".hoodie", self.mdt_props)
        self.sync = compute_sync_state(data_instants, self.mdt_instants)
        self._sources: dict[str, list[list[_Source]]] = {}

    # -- availability --------------------------------------------------------------------------------------

    @property
    def partitions(self) -> list[str]:
        return list(self.data_props.metadata_partitions)

    def has_partition(self, name: str) -> bool:
        return name in self.data_props.metadata_partitions and (self.mdt_dir / name).is_dir()

    def _require(self, name: str) -> None:
        if not self.has_partition(name):
            raise UnsupportedTableError(
                f"{self.base_path}: metadata table partition {name!r} is not available "
                f"(hoodie.table.metadata.partitions={','.join(self.partitions) or '<empty>'})")

    def file_slices(self, partition: str) -> list[MdtFileSlice]:
        return latest_file_slices(self.mdt_dir / partition, partition, self.sync)

    # -- sources -------------------------------------------------------------------------------------------

    def _group_sources(self, partition: str) -> list[list[_Source]]:
        """Per file group, the ordered HFiles to merge (base first, then visible log blocks)."""
        cached = self._sources.get(partition)
        if cached is not None:
            return cached
        groups: list[list[_Source]] = []
        for sl in self.file_slices(partition):
            sources: list[_Source] = []
            if sl.base_file is not None:
                data = sl.base_file.read_bytes()
                r = HFileReader(data, name=str(sl.base_file))
                schema = r.file_info.get(SCHEMA_INFO_KEY, b"").decode("utf-8")
                sources.append(_Source(r, schema, sl.base_instant, data))
            blocks: list[tuple[Path, L.LogBlock]] = []
            for lf in sl.log_files:
                blocks.extend((lf, b) for b in L.read_log_file(str(lf)) if b.type != L.BlockType.CORRUPTED)
            rolled_back = {b.target_instant_time for _lf, b in blocks if b.is_rollback and
                           self.sync.block_visible(b.instant_time)}
            for lf, b in blocks:
                it = b.instant_time
                if b.type not in (L.BlockType.HFILE_DATA, L.BlockType.DELETE) or it in rolled_back \
                        or not self.sync.block_visible(it):
                    continue
                if b.type == L.BlockType.DELETE:
                    deleted = delete_block_keys(b)  # usually the empty init marker
                    if deleted:
                        sources.append(_Source(DeletedKeys(deleted), "", it, b""))  # type: ignore[arg-type]
                    continue
                where = f"{lf} (HFILE_DATA block at offset {b.offset}, instant {it})"
                try:
                    r = HFileReader(b.content, name=where)
                except CorruptFileError:
                    raise
                except Exception as e:  # noqa: BLE001
                    raise CorruptFileError(f"{where}: not a readable HFile: {e}") from e
                schema = b.header.get(L.HeaderKey.SCHEMA) or r.file_info.get(SCHEMA_INFO_KEY, b"").decode()
                sources.append(_Source(r, schema, it, b.content))
            groups.append(sources)
        self._sources[partition] = groups
        return groups

    # -- files partition -----------------------------------------------------------------------------------

    def _files_records(self) -> dict[str, dict[str, FileInfo]]:
        self._require(K.FILES)
        merged: dict[str, dict[str, FileInfo]] = {}
        for sources in self._group_sources(K.FILES):
            for src in sources:
                for key, value in src.reader.items():
                    k = key.decode("utf-8")
                    if not value:
                        merged.pop(k, None)
                        continue
                    rec = decode_record(k, value, src.schema)
                    if rec.files is None:
                        continue
                    merged[k] = merge_files(merged.get(k), rec.files)
        return merged

    def files_record(self, key: str) -> dict[str, FileInfo]:
        """One merged ``files`` record by point lookups (e.g. ``__all_partitions__`` or a partition)."""
        self._require(K.FILES)
        merged: dict[str, FileInfo] | None = None
        kb = key.encode("utf-8")
        for sources in self._group_sources(K.FILES):
            for src in sources:
                value = src.reader.get(kb)
                if value is None:
                    continue
                if not value:
                    merged = None
                    continue
                rec = decode_record(key, value, src.schema)
                if rec.files is not None:
                    merged = merge_files(merged, rec.files)
        return merged or {}

    def all_partitions(self) -> list[str]:
        """Data partition paths ("" for non-partitioned) listed in ``__all_partitions__``."""
        entry = self.files_record(K.ALL_PARTITIONS_KEY)
        return sorted(K.data_partition_path(p) for p, fi in entry.items() if not fi.is_deleted)

    def files_listing(self) -> dict[str, dict[str, int]]:
        """``{partition path: {file name: size}}`` of live files (``""`` = non-partitioned)."""
        out: dict[str, dict[str, int]] = {}
        for key, entries in self._files_records().items():
            if key == K.ALL_PARTITIONS_KEY:
                continue
            live = {name: fi.size for name, fi in entries.items() if not fi.is_deleted}
            out[K.data_partition_path(key)] = live
        return out

    # -- column_stats partition ----------------------------------------------------------------------------

    def column_stats_items(self, prefixes: Iterable[str]
                           ) -> Iterator[tuple[str, list[tuple[bytes, bytes, str]]]]:
        """Raw cells per prefix: ``(prefix, [(key, value, schema), ...])`` in merge order (oldest first)."""
        self._require(K.COLUMN_STATS)
        groups = self._group_sources(K.COLUMN_STATS)
        for prefix in prefixes:
            pb = prefix.encode("ascii")
            cells: list[tuple[bytes, bytes, str]] = []
            for sources in groups:
                for src in sources:
                    cells.extend((k, v, src.schema) for k, v in src.reader.scan_items(pb))
            yield prefix, cells

    def column_stats(self, prefixes: Iterable[str], *,
                     include_deleted: bool = False) -> dict[str, ColumnStat]:
        """Merged column_stats records (by key) for every key under the given prefixes."""
        merged: dict[str, ColumnStat] = {}
        for _prefix, cells in self.column_stats_items(prefixes):
            for k, v, schema in cells:
                key = k.decode("ascii")
                if not v:
                    merged.pop(key, None)
                    continue
                rec = decode_record(key, v, schema)
                if rec.column_stats is None:
                    continue
                old = merged.get(key)
                merged[key] = rec.column_stats if old is None else merge_column_stats(old, rec.column_stats)
        if not include_deleted:
            merged = {k: v for k, v in merged.items() if not v.is_deleted}
        return merged

    def records(self, partition: str) -> Iterator[MetadataRecord]:
        """Every visible record of an MDT partition, unmerged, in merge order (debugging / tests)."""
        for sources in self._group_sources(partition):
            for src in sources:
                for key, value in src.reader.items():
                    if value:
                        yield decode_record(key.decode("utf-8"), value, src.schema)
