"""MDT merge rules (docs/hudi-format.md §5.4, §5.5) and DELETE blocks, shared by reader and writer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hudi_layout.errors import UnsupportedTableError
from hudi_layout.format import log_format as L
from hudi_layout.format.log_blocks import decode_delete_block
from hudi_layout.metadata import colstats_vec as V
from hudi_layout.metadata import keys as K
from hudi_layout.metadata.records import (
    TYPE_COLUMN_STATS,
    TYPE_FILES,
    ColumnStat,
    FileInfo,
    MetadataRecord,
    decode_record,
    encode_record,
    schema_form,
)
from hudi_layout.metadata.schema import metadata_record_schema_str
from hudi_layout.metadata.stats_values import decode


def merge_files(older: dict[str, FileInfo] | None, newer: dict[str, FileInfo]) -> dict[str, FileInfo]:
    """``HoodieMetadataPayload.combineFileSystemMetadata`` applied newer-onto-older (§5.4)."""
    if older is None:
        return dict(newer)
    out = dict(older)
    for name, info in newer.items():
        old = out.get(name)
        if old is None:
            out[name] = info
        elif info.is_deleted:
            del out[name]
        else:
            out[name] = FileInfo(max(old.size, info.size), False)
    return out


def merge_column_stats(older: ColumnStat | None, newer: ColumnStat) -> ColumnStat:
    """``mergeColumnStatsRecords``: a tombstone on either side → newer wins; else widen the range."""
    if older is None or older.is_deleted or newer.is_deleted:
        return newer
    def pick(a: Any, b: Any, fn: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        da, db = decode(a.wrapper, a.value, older.value_type), decode(b.wrapper, b.value, newer.value_type)
        try:
            return a if fn(da, db) else b
        except TypeError:
            return b

    def add(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return ColumnStat(newer.file_name, newer.column, pick(older.min, newer.min, lambda a, b: a <= b),
                      pick(older.max, newer.max, lambda a, b: a >= b),
                      add(older.value_count, newer.value_count),
                      add(older.null_count, newer.null_count), add(older.total_size, newer.total_size),
                      add(older.total_uncompressed_size, newer.total_uncompressed_size), False,
                      newer.is_tight_bound, newer.value_type or older.value_type)


class DeletedKeys:
    """A DELETE log block seen through the HFileReader read API: every key maps to the empty value ``b""``,
    which the merge code treats as "remove this key" (HoodieDeleteRecordList semantics)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._keys = sorted({k.encode("utf-8") for k in keys})
        self.file_info: dict[bytes, bytes] = {}

    def items(self) -> list[tuple[bytes, bytes]]:
        return [(k, b"") for k in self._keys]

    def scan_items(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        return [(k, b"") for k in self._keys if k.startswith(prefix)]

    def get(self, key: bytes) -> bytes | None:
        return b"" if key in self._keys else None


def delete_block_keys(block: L.LogBlock) -> list[str]:
    """The record keys a DELETE block of the MDT removes (decoded by the one delete-list codec of
    :mod:`hudi_layout.format.log_blocks`; the MDT's empty init marker has none)."""
    if L.delete_block_payload(block) in (b"", b"\x00"):
        return []
    batch = decode_delete_block(block, where=f"metadata table DELETE block of instant {block.instant_time}")
    return [k for k in batch.record_keys if k is not None]


def _tombstone_flags(values: list[bytes], form: int) -> list[bool]:
    """``isDeleted`` of column_stats values written with schema ``form`` (vectorised; per-record fallback)."""
    if not values:
        return []
    try:
        return [bool(x) for x in V.decode_column_stats(values, form).is_deleted]
    except V._Unsupported:
        schema = metadata_record_schema_str(form)
        out = []
        for v in values:
            cs = decode_record("", v, schema).column_stats
            out.append(bool(cs is not None and cs.is_deleted))
        return out


def merge_group(sources: list[Any], table_version: int, *, where: str = "metadata table") -> dict[str, bytes]:
    """Merged records of one file group. Keys present once, in a source written with our schema form,
    are copied as raw bytes (the common case: nothing to merge); the rest is decoded, merged with the
    MDT merge rules and re-encoded. Deleted file entries and column_stats tombstones are dropped."""
    target_form = 9 if table_version >= 9 else 8
    cells: dict[str, list[tuple[bytes, str]]] = {}
    for src in sources:
        for kb, value in src.reader.items():
            cells.setdefault(kb.decode("utf-8"), []).append((value, src.schema))
    out: dict[str, bytes] = {}
    single = [key for key, versions in cells.items()
              if len(versions) == 1 and versions[0][0] and schema_form(versions[0][1]) == target_form
              and len(key) == K.COLUMN_STATS_KEY_LEN and key != K.ALL_PARTITIONS_KEY]
    for key, dead in zip(single, _tombstone_flags([cells[k][0][0] for k in single], target_form)):
        # a key written once is copied as raw bytes (the common case: nothing to merge), unless it is a
        # tombstone (a clean's or a rollback's for a file whose stats are already gone): compaction drops those
        if not dead:
            out[key] = cells[key][0][0]
    done = set(single)
    for key, versions in cells.items():
        if key in done:
            continue
        merged_files: dict[str, Any] | None = None
        merged_cs: Any = None
        rtype = None
        for value, schema in versions:
            if not value:  # DELETE block: forget everything older
                merged_files, merged_cs, rtype = None, None, None
                continue
            rec = decode_record(key, value, schema)
            rtype = rec.type
            if rec.files is not None:
                merged_files = merge_files(merged_files, rec.files)
            elif rec.column_stats is not None:
                merged_cs = rec.column_stats if merged_cs is None else merge_column_stats(merged_cs,
                                                                                          rec.column_stats)
            else:
                raise UnsupportedTableError(f"{where}: cannot compact record type {rec.type} ({key})")
        if merged_files is not None:
            live = {n: fi for n, fi in merged_files.items() if not fi.is_deleted}
            out[key] = encode_record(MetadataRecord(key, rtype or TYPE_FILES, files=live), table_version)
        elif merged_cs is not None and not merged_cs.is_deleted:
            out[key] = encode_record(MetadataRecord(key, TYPE_COLUMN_STATS, column_stats=merged_cs),
                                     table_version)
    return out
