"""Glue between our writes and the metadata table (MDT): which columns to index, creating the MDT, and
the deltacommit that every data commit writes just before it completes.

Rules we follow (docs/hudi-format.md §5):
* the MDT is created (``files`` + ``column_stats``) on a table's first write unless
  ``hoodie.metadata.enable=false``; once it exists we always keep it current, whatever the options say,
  so it can never go stale behind our back;
* a table whose MDT holds partitions we cannot maintain (record_index, secondary / expression indexes,
  bloom_filters, partition_stats) is refused before anything is written;
* indexed columns: ``hoodie.metadata.index.column.stats.column.list`` if set, else Hudi's default — the
  meta fields ``_hoodie_commit_time``, ``_hoodie_partition_path``, ``_hoodie_record_key`` plus the first
  ``hoodie.metadata.index.column.stats.max.columns.to.index`` (32) data columns of supported types.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout import options as cfg
from hudi_layout import progress
from hudi_layout.errors import (
    CommitConflictError,
    CorruptFileError,
    HudiLayoutError,
    InvalidArgumentError,
    UnsupportedTableError,
)
from hudi_layout.format import meta_fields
from hudi_layout.format.capabilities import require_metadata_maintainable
from hudi_layout.format.instant import new_instant_time
from hudi_layout.format.log_blocks import decode_avro_data_block, decode_parquet_data_block
from hudi_layout.format.log_format import BlockType, read_log_file
from hudi_layout.format.parquet_columns import leaf_index
from hudi_layout.format.properties import TableProperties, load_properties, metadata_table_exists
from hudi_layout.metadata.mdt_timeline import require_mdt_writable
from hudi_layout.metadata.mdt_writer import FileColumnStats, MetadataWriter, update_data_table_properties
from hudi_layout.table.commit_protocol import latest_time_with_metadata
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock
from hudi_layout.writer.base_file_writer import StatsAccumulator, WrittenFile, stats_supported

log = logging.getLogger(__name__)

INDEXED_META_FIELDS = (meta_fields.COMMIT_TIME, meta_fields.PARTITION_PATH, meta_fields.RECORD_KEY)


def stats_columns_for(props: TableProperties, opts: Mapping[str, str], schema: pa.Schema) -> tuple[str, ...]:
    """Columns whose statistics the executors compute for this write (none when no index is kept)."""
    enabled = cfg.METADATA_ENABLE.get(opts) and cfg.COLUMN_STATS_ENABLE.get(opts)
    if not enabled and "column_stats" not in props.metadata_partitions:
        return ()
    return indexed_columns(opts, schema)


def refuse_unhonoured_index_options(props: TableProperties, opts: Mapping[str, str], schema: pa.Schema) -> None:
    """Index options a write could not honour, refused before anything is written (session 29's probe found
    them taken without effect): a listed column the table does not have, and
    ``hoodie.metadata.index.column.stats.enable=false`` on a table that keeps the index (every write keeps it
    exact; Hudi's writer would delete it, which hudi_layout does only for the whole metadata table)."""
    missing = [c for c in cfg.split_fields(cfg.COLUMN_STATS_COLUMNS.get(opts))
               if c not in schema.names and c not in INDEXED_META_FIELDS]
    if missing:
        raise InvalidArgumentError(f"option {cfg.COLUMN_STATS_COLUMNS.key} names {', '.join(map(repr, missing))}, "
                                   "which the table does not have", hint=f"columns: {', '.join(schema.names)}")
    if "column_stats" in props.metadata_partitions and cfg.METADATA_ENABLE.get(opts) \
            and cfg.COLUMN_STATS_ENABLE.is_given(opts) and not cfg.COLUMN_STATS_ENABLE.get(opts):
        raise InvalidArgumentError(
            f"{cfg.COLUMN_STATS_ENABLE.key}=false: the table keeps a column_stats index, which every write keeps "
            "exact", hint=f"drop the option, or set {cfg.METADATA_ENABLE.key}=false to delete the metadata table")


def indexed_columns(opts: Mapping[str, str], schema: pa.Schema) -> tuple[str, ...]:
    """``hoodie.metadata.index.column.stats.column.list``, else Hudi's default set (see module docstring)."""
    listed = cfg.split_fields(cfg.COLUMN_STATS_COLUMNS.get(opts))
    if listed:
        return tuple(c for c in listed if c in schema.names or c in INDEXED_META_FIELDS)
    limit = cfg.COLUMN_STATS_MAX_COLUMNS.get(opts)
    data = [f.name for f in schema if not f.name.startswith("_hoodie_") and stats_supported(f.type)][:limit]
    return (*INDEXED_META_FIELDS, *data)


def _writer(base: Path, props: TableProperties, opts: Mapping[str, str]) -> MetadataWriter:
    listed = cfg.split_fields(cfg.COLUMN_STATS_COLUMNS.get(opts))
    return MetadataWriter(base, props, columns_to_index=listed or None,
                          file_group_count=cfg.COLUMN_STATS_FILE_GROUPS.get(opts),
                          max_delta_commits=cfg.MDT_COMPACT_MAX_DELTA_COMMITS.get(opts))


def prepare_metadata_table(base: Path, props: TableProperties, opts: Mapping[str, str]) -> TableProperties:
    """Refuse MDTs we cannot maintain; create the MDT on first use (indexing existing files).

    Returns the table properties as they now are (re-read when the MDT was created, which changes them).
    With ``hoodie.metadata.enable=false`` nothing is checked or created: the write's commit drops an MDT
    (:func:`drop_metadata_table_locked`), so a write refused before it keeps the table as it was.
    """
    if not cfg.METADATA_ENABLE.get(opts):
        return props
    require_metadata_maintainable(props)
    if metadata_table_exists(base):
        require_mdt_writable(base, props)
        if "column_stats" not in props.metadata_partitions or "files" not in props.metadata_partitions:
            raise UnsupportedTableError(
                f"{base}: the metadata table exists but hoodie.table.metadata.partitions lists "
                f"{props.metadata_partitions or 'nothing'}; hudi_layout maintains exactly files + column_stats",
                hint="rebuild the index with 'hudi-layout index PATH'")
        return props
    if not cfg.METADATA_ENABLE.get(opts):
        return props
    with TableLock(base):
        props = load_properties(base / ".hoodie")
        if metadata_table_exists(base):
            return props
        # a write reads no data on the driver: log files of existing slices get no records here (their
        # slices are read by every query until a compaction or an 'index --rebuild' describes them)
        existing = existing_file_stats(base, props, opts)
        writer = _writer(base, props, opts)
        updates = writer.initialize(existing.files, existing.stats)
        update_data_table_properties(base, updates)
    return load_properties(base / ".hoodie")


@dataclass(frozen=True)
class DataFileToRead:
    """A file whose statistics only its data can give, for a Spark task to read (``spark/index_job.py``):
    a log file (no statistics of its own) or a base file's float columns (footers leave NaN out)."""

    partition: str
    file_name: str
    path: str
    size: int


@dataclass
class ExistingFiles:
    """What indexing an existing table starts from, from one listing (``table``; None for a table without
    commits): every committed file (``files``: partition -> name -> size), the footer statistics of the
    latest base files, those base files, and the log files of the latest slices, which only a read of their
    data can describe. A log file without a stats record keeps its slice in every plan."""

    table: HudiTable | None = None
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    stats: list[Any] = field(default_factory=list)
    base_files: list[DataFileToRead] = field(default_factory=list)
    log_files: list[DataFileToRead] = field(default_factory=list)


def existing_file_stats(base: Path, props: TableProperties, opts: Mapping[str, str]) -> ExistingFiles:
    """Files and footer statistics of the table's current base files (for indexing an existing table).

    Reads parquet footers only: the driver reads no data. A column whose footer has no statistics gets no
    stats record, so data skipping keeps that file; log files are returned for a Spark job to describe
    (:func:`log_file_stats`), or stay without records (their slices are then always read).
    """
    out = ExistingFiles()
    files, stats = out.files, out.stats
    try:
        table = HudiTable(str(base))
        slices = table.file_slices()
    except Exception:  # a brand-new table has no commits yet
        return out
    out.table = table
    read_bytes = 0
    # every committed file, not only the latest slices: hudi-rs lists a past view's files through the metadata
    # table once it exists (its time travel to before an upsert read 5 of 10 rows with the latest slices only)
    for part, names in table.fs_view.committed_files().items():
        files.setdefault(part, {}).update(names)
    for i, s in enumerate(slices, start=1):
        listed = files.setdefault(s.partition_path, {})
        for log_name, log_path in zip(s.log_file_names, s.log_file_paths(base)):
            listed[log_name] = size = os.stat(log_path).st_size
            out.log_files.append(DataFileToRead(s.partition_path, log_name, str(log_path), size))
        if not s.base_file_name:
            continue
        listed[s.base_file_name] = s.size_bytes
        out.base_files.append(DataFileToRead(s.partition_path, s.base_file_name, s.base_file_path, s.size_bytes))
        stats.extend(footer_stats(s.base_file_path, s.partition_path, s.base_file_name, opts,
                                  FileColumnStats))
        read_bytes += s.size_bytes
        if progress.is_listened():
            progress.report(progress.Progress("index: reading parquet footers", i, len(slices), "files",
                                              files=i, bytes=read_bytes, finished=i == len(slices)))
    return out


def table_types(table: HudiTable) -> dict[str, pa.DataType]:
    """The table's column types (meta columns: strings); empty when its schema is unknown."""
    from hudi_layout.format.schema_conversion import readable_arrow_schema

    text = table.schema()
    types = {c: pa.string() for c in INDEXED_META_FIELDS}
    if text:
        types.update({f.name: f.type for f in readable_arrow_schema(text)})
    return types


def log_file_stats(path: str, partition: str, file_name: str, opts: Mapping[str, str],
                   types: Mapping[str, pa.DataType]) -> list[FileColumnStats]:
    """Column statistics of a log file's data records, as Hudi's writers index a log (every AVRO_DATA and
    PARQUET_DATA block's records; delete and command blocks hold no values). A superset of what the slice's
    merged rows can hold from this file: records of blocks a rollback voided or a merge discards count too, which
    only keeps the slice more often. A column whose values are not in the table's type, a file with another kind
    of data block, or one that cannot be read get no statistics (the slice is kept). Reads the file's data:
    runs in Spark tasks (``spark/index_job.py``)."""
    try:
        blocks = read_log_file(path, name=file_name)
        tables = []
        for block in blocks:
            if block.type is BlockType.AVRO_DATA:
                tables.append(decode_avro_data_block(block, where=file_name))
            elif block.type is BlockType.PARQUET_DATA:
                tables.append(decode_parquet_data_block(block, where=file_name))
            elif block.type not in (BlockType.DELETE, BlockType.COMMAND):
                return []
    except HudiLayoutError:
        return []
    wanted = indexed_columns(opts, pa.schema([pa.field(n, t) for n, t in types.items()]))
    rows = sum(t.num_rows for t in tables)
    out: list[FileColumnStats] = []
    for name in wanted:
        t = types.get(name)
        if t is None or not stats_supported(t):
            continue
        acc = StatsAccumulator()
        for table in tables:
            if name not in table.column_names or table.schema.field(name).type != t:
                break
            acc.update(table.column(name))
        else:
            st = acc.result(rows)
            out.append(FileColumnStats(partition, file_name, name, st["min"], st["max"], st["null_count"],
                                       st["value_count"], t))
    return out


def footer_stats(path: str, partition: str, file_name: str, opts: Mapping[str, str], cls: Any) -> list[Any]:
    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError: not parquet, truncated, unreadable
        raise CorruptFileError(f"base file {path} cannot be read as parquet: {str(e).splitlines()[0]}",
                               hint="the file is damaged: restore it from a copy (the index was not changed)") from e
    schema = meta.schema.to_arrow_schema()
    wanted = set(indexed_columns(opts, schema))
    leaves = leaf_index(schema)
    out = []
    for name in schema.names:
        if name not in wanted or not stats_supported(schema.field(name).type) or name not in leaves:
            continue
        ci = leaves[name]
        lo = hi = None
        nulls = 0
        ok = True
        size = usize = 0
        for rg in range(meta.num_row_groups):
            col = meta.row_group(rg).column(ci)
            size += col.total_compressed_size
            usize += col.total_uncompressed_size
            st = col.statistics
            if st is None or not st.has_min_max or st.null_count is None:
                if st is not None and st.null_count is not None and st.null_count == col.num_values:
                    nulls += st.null_count  # an all-null chunk has no min/max but is fully described
                    continue
                ok = False
                break
            nulls += st.null_count
            a, b = st.min, st.max
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or b > hi else hi
        if not ok:
            continue
        t = schema.field(name).type
        if pa.types.is_floating(t):
            continue  # footers drop NaN from min/max: no safe upper bound, so no record (file kept)
        out.append(cls(partition, file_name, name, lo, hi, nulls, meta.num_rows, t, size, usize))
    return out


def float_columns_to_read(schema: pa.Schema, opts: Mapping[str, str]) -> list[str]:
    """The indexed columns of a base file (``schema``: its own) that are float / double there: the ones
    :func:`footer_stats` leaves without a record."""
    wanted = set(indexed_columns(opts, schema))
    return [f.name for f in schema if f.name in wanted and pa.types.is_floating(f.type)]


def exact_float_stats(path: str, partition: str, file_name: str, opts: Mapping[str, str]
                      ) -> list[FileColumnStats]:
    """NaN-exact statistics of a base file's indexed float / double columns, read from its data one column
    chunk at a time with the writers' own accumulator, so a rebuilt index says what the writer said. Runs in
    Spark tasks (``spark/index_job.py``): the driver reads no data."""
    handle = pq.ParquetFile(path)
    meta = handle.metadata
    schema = meta.schema.to_arrow_schema()
    leaves = leaf_index(schema)
    out: list[FileColumnStats] = []
    for name in float_columns_to_read(schema, opts):
        ci = leaves[name]
        acc = StatsAccumulator()
        size = usize = 0
        for rg in range(meta.num_row_groups):
            chunk = meta.row_group(rg).column(ci)
            size += chunk.total_compressed_size
            usize += chunk.total_uncompressed_size
            acc.update(handle.read_row_group(rg, columns=[name]).column(0))
        st = acc.result(meta.num_rows)
        out.append(FileColumnStats(partition, file_name, name, st["min"], st["max"], st["null_count"],
                                   st["value_count"], schema.field(name).type, size, usize))
    return out


def _column_stats(written: Sequence[WrittenFile], schema_types: Mapping[str, pa.DataType]) -> list[Any]:
    out = []
    for w in written:
        for column, st in w.stats.items():
            t = schema_types.get(column)
            if t is None:
                continue
            out.append(FileColumnStats(w.partition_path, w.file_name, column, st["min"], st["max"],
                                       st["null_count"], st["value_count"], t, st.get("total_size", 0),
                                       st.get("total_uncompressed_size", 0)))
    return out


def metadata_update_hook(props: TableProperties, opts: Mapping[str, str], written: Sequence[WrittenFile],
                         replaced: Mapping[str, Sequence[str]] | None = None,
                         schema: pa.Schema | None = None) -> Callable[[Any], None]:
    """The ``before_complete`` step: write the MDT deltacommit for this instant (if the table has an MDT)."""

    def hook(pending: Any) -> None:
        base = Path(pending.base_path)
        if not metadata_table_exists(base):
            return
        current = load_properties(base / ".hoodie")
        types = _types_of(base, written, schema)
        files_added: dict[str, dict[str, int]] = {}
        for w in written:
            files_added.setdefault(w.partition_path, {})[w.file_name] = w.file_size
        writer = _writer(base, current, opts)
        writer.write_deltacommit(pending.instant_time, files_added, _column_stats(written, types),
                                 partitions_added=sorted(files_added))

    return hook


def _types_of(base: Path, written: Sequence[WrittenFile], schema: pa.Schema | None) -> dict[str, pa.DataType]:
    if schema is None:  # a base file's, or for a log file the base file of its slice (log files are not parquet)
        for w in written:
            name = w.prev_base_file if w.is_log_file else w.file_name
            if not name:
                continue
            schema = pq.read_schema(base / w.partition_path / name if w.partition_path else base / name)
            break
    return {f.name: f.type for f in schema} if schema is not None else {}


def compact_metadata_if_due(base: Path, opts: Mapping[str, str]) -> None:
    """After a commit: compact the MDT once enough deltacommits piled up (under the table lock)."""
    if not metadata_table_exists(base):
        return
    with TableLock(base):
        props = load_properties(base / ".hoodie")
        writer = _writer(base, props, opts)
        if writer.deltacommits_since_compaction() < writer.max_delta_commits:
            return
        instant = new_instant_time(latest_time_with_metadata(base, props),
                                   use_utc=props.timeline_timezone == "UTC")
        try:
            writer.compact(instant)
        except CommitConflictError:  # a data write is pending: compact after a later commit
            return


def metadata_timeline_state(base: Path) -> frozenset[tuple[str, int]]:
    """The files (relative name, size) under the metadata table's ``.hoodie`` folder: any commit to the MDT
    changes it (:func:`drop_metadata_table_created_by`)."""
    root = base / ".hoodie" / "metadata" / ".hoodie"
    if not root.is_dir():
        return frozenset()
    return frozenset((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file())


def drop_metadata_table_created_by(base: Path, created: frozenset[tuple[str, int]]) -> bool:
    """A write that created the metadata table and was then refused or failed (a pending clustering of a file
    group it updates, a null record key, a failed Spark job) leaves the table without it again, as it found it,
    when nothing else committed to the MDT since (``created``: :func:`metadata_timeline_state` right after the
    creation). Until session 30 such a refusal left a new MDT and a changed ``hoodie.properties`` (a probe)."""
    with TableLock(base):
        return metadata_timeline_state(base) == created and drop_metadata_table_locked(base, why=None)


def drop_metadata_table_if_disabled(path: str, opts: Mapping[str, str]) -> bool:
    """``hoodie.metadata.enable=false`` on a table that has an MDT: delete it, as Hudi's writer does, so
    no index can go stale. The data table's ``hoodie.table.metadata.partitions`` is cleared first. Every command
    that takes the option calls it (writes since session 29: they kept and updated the MDT)."""
    if "hoodie.metadata.enable" not in opts or cfg.METADATA_ENABLE.get(opts):
        return False
    base = Path(path).absolute()
    if not (base / ".hoodie" / "metadata").exists():
        return False
    with TableLock(base):
        return drop_metadata_table_locked(base)


def drop_metadata_table_locked(base: Path, *, why: str | None = "hoodie.metadata.enable=false") -> bool:
    """Delete the metadata table of ``base`` (its partitions cleared from ``hoodie.properties`` first; a warning
    names ``why`` when given); the caller holds the table lock. A write with ``hoodie.metadata.enable=false``
    calls it in its commit, under the lock of the commit: until session 30 the write dropped the MDT when it
    started, so a write refused later (a null key, a pending clustering of a group it updates) had still deleted
    it, with Hudi's record index (a probe)."""
    mdt = base / ".hoodie" / "metadata"
    if not mdt.exists():
        return False
    update_data_table_properties(base, {"hoodie.table.metadata.partitions": "",
                                        "hoodie.table.metadata.partitions.inflight": ""})
    shutil.rmtree(mdt)
    if why:
        log.warning("%s: deleted the metadata table of %s", why, base)
    return True
