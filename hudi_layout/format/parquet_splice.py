"""Build a parquet file from column chunks of two others, byte for byte (docs/parquet-splice.md).

A Copy-on-Write update rewrites a whole base file, though an upsert usually changes a few of its columns.
Parquet stores each column of a row group as one contiguous chunk of pages whose headers hold no file
offsets, and the footer (``FileMetaData``, Thrift compact) says where every chunk starts. So a file whose
rows stay in place can reuse the unchanged columns' chunks of the old file as they are and take the changed
columns' chunks from a small file written with only those columns; only the footer is new: the old footer
with each chunk's offsets moved, the row group's sizes summed, and the caller's key-value metadata.

Only the simple case is spliced (:func:`splice_layout` says why not otherwise): flat columns, no
encryption, chunks inside the file (an old page index or bloom filter is not carried over: they lie outside
the chunks, and the new file has none, as a file our writer writes); the fresh file must have the same row
groups (the caller writes it with the old file's row-group sizes), and the caller rewrites the file the
ordinary way when it cannot. Field ids are parquet-format's ``parquet.thrift``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from hudi_layout.format.thrift_compact import (
    BINARY,
    LIST,
    STRUCT,
    Raw,
    Shape,
    ThriftDecodeError,
    ThriftList,
    ThriftStruct,
    decode_raw,
    read_struct,
    write_struct,
)

MAGIC = b"PAR1"

# FileMetaData
_FMD_SCHEMA, _FMD_ROW_GROUPS, _FMD_KEY_VALUE, _FMD_CREATED_BY = 2, 4, 5, 6
_FMD_ENCRYPTION = (8, 9)
# RowGroup
_RG_COLUMNS, _RG_TOTAL_BYTE_SIZE, _RG_NUM_ROWS, _RG_FILE_OFFSET, _RG_TOTAL_COMPRESSED = 1, 2, 3, 5, 6
# ColumnChunk: file_path, file_offset, meta_data; 4-7 page index, 8-9 encryption
_CC_FILE_PATH, _CC_FILE_OFFSET, _CC_META = 1, 2, 3
_CC_REFUSED = frozenset((_CC_FILE_PATH, 8, 9))  # chunks in another file; encryption
#: the page index (OffsetIndex / ColumnIndex offsets and lengths): stored outside the chunks, not copied, so
#: the spliced file has none (as a file our writer writes)
_CC_DROPPED = frozenset((4, 5, 6, 7))
# ColumnMetaData
_CMD_CODEC = 4
_CMD_UNCOMPRESSED, _CMD_COMPRESSED, _CMD_DATA_PAGE, _CMD_INDEX_PAGE, _CMD_DICT_PAGE = 6, 7, 9, 10, 11
_CMD_REFUSED = frozenset((_CMD_INDEX_PAGE,))
#: bloom filter offset / length: the filter is stored outside the chunk, not copied (a new file has none)
_CMD_DROPPED = frozenset((14, 15))
_CMD_NUM_VALUES, _CMD_STATISTICS = 5, 12
# Statistics: null_count, max_value, min_value, is_max_value_exact, is_min_value_exact
_ST_NULLS, _ST_MAX, _ST_MIN, _ST_MAX_EXACT, _ST_MIN_EXACT = 3, 5, 6, 7, 8
# SchemaElement
_SE_TYPE, _SE_NUM_CHILDREN, _SE_NAME = 1, 5, 4
#: parquet physical types whose statistics :func:`chunk_statistics` decodes
_INT32, _INT64, _BYTE_ARRAY = 1, 2, 6

# What a splice decodes; everything else (statistics, encodings, column orders, key-value metadata) stays raw
# bytes and is written back as read.
_CMD_SHAPE: Shape = {f: None for f in (_CMD_CODEC, _CMD_NUM_VALUES, _CMD_UNCOMPRESSED, _CMD_COMPRESSED,
                                       _CMD_DATA_PAGE, _CMD_INDEX_PAGE, _CMD_DICT_PAGE)}
_CC_SHAPE: Shape = {_CC_FILE_OFFSET: None, _CC_META: _CMD_SHAPE}
_RG_SHAPE: Shape = {_RG_COLUMNS: _CC_SHAPE, _RG_TOTAL_BYTE_SIZE: None, _RG_NUM_ROWS: None, _RG_FILE_OFFSET: None,
                    _RG_TOTAL_COMPRESSED: None}
# the schema stays raw too: files of one table share it, so it is decoded once (:func:`_flat_schema`)
_FOOTER_SHAPE: Shape = {_FMD_ROW_GROUPS: _RG_SHAPE, _FMD_CREATED_BY: None}

@dataclass(frozen=True)
class RowGroupLayout:
    """One row group: its struct, its column chunks and each chunk's (start, length) in the file."""

    group: ThriftStruct
    chunks: tuple[ThriftStruct, ...]
    ranges: tuple[tuple[int, int], ...]
    num_rows: int


@dataclass(frozen=True)
class SpliceLayout:
    """A parquet file's footer, parsed, when it is simple enough to splice."""

    footer: ThriftStruct
    groups: tuple[RowGroupLayout, ...]
    #: leaf column names in file order, and their schema elements
    names: tuple[str, ...]
    schema_elements: tuple[ThriftStruct, ...]

    @property
    def row_group_rows(self) -> tuple[int, ...]:
        return tuple(g.num_rows for g in self.groups)

    def codecs(self, column: int) -> set[int]:
        """The compression codec ids of ``column``'s chunks."""
        return {int(g.chunks[column].get(_CC_META).get(_CMD_CODEC)) for g in self.groups}


def read_footer(data: bytes | memoryview, shape: Shape | None = None) -> ThriftStruct:
    """The ``FileMetaData`` of parquet file bytes ``data`` (``shape``: the fields to decode, None: all)."""
    if len(data) < 12 or bytes(data[:4]) != MAGIC or bytes(data[-4:]) != MAGIC:
        raise ThriftDecodeError("not a parquet file (no PAR1 magic)")
    length = int.from_bytes(bytes(data[-8:-4]), "little")
    start = len(data) - 8 - length
    if start < 4:
        raise ThriftDecodeError("parquet footer length beyond the file")
    footer, end = read_struct(data, start, len(data) - 8, shape)
    if end != len(data) - 8:
        raise ThriftDecodeError("parquet footer does not end where its length says")
    return footer


def splice_layout(data: bytes | memoryview) -> SpliceLayout | None:
    """The layout of ``data`` (a whole parquet file) when its chunks can be reused by :func:`splice`; None when
    the file has another shape (no rows, nested columns, encryption, an index page, chunks elsewhere)."""
    try:
        footer = read_footer(data, _FOOTER_SHAPE)
    except ThriftDecodeError:
        return None
    if any(footer.has(f) for f in _FMD_ENCRYPTION):
        return None
    groups = footer.get(_FMD_ROW_GROUPS)
    schema = footer.get(_FMD_SCHEMA)
    if not isinstance(groups, ThriftList) or not groups.values or not isinstance(schema, Raw):
        return None
    try:
        flat = _flat_schema(schema.data)
    except ThriftDecodeError:
        return None
    if flat is None:
        return None  # nested columns: a chunk is not a column
    names, leaves = flat
    footer_start = len(data) - 8 - int.from_bytes(bytes(data[-8:-4]), "little")
    layouts = []
    for group in groups.values:
        columns = group.get(_RG_COLUMNS)
        if not isinstance(columns, ThriftList) or len(columns.values) != len(leaves):
            return None
        ranges = []
        for chunk in columns.values:
            meta = chunk.get(_CC_META)
            if not chunk.field_ids().isdisjoint(_CC_REFUSED) or not isinstance(meta, ThriftStruct) or \
                    not meta.field_ids().isdisjoint(_CMD_REFUSED):
                return None
            start = _chunk_start(meta)
            length = meta.get(_CMD_COMPRESSED)
            if start is None or not isinstance(length, int) or start < 4 or length < 0 or \
                    start + length > footer_start:
                return None
            ranges.append((start, length))
        layouts.append(RowGroupLayout(group, tuple(columns.values), tuple(ranges), int(group.get(_RG_NUM_ROWS))))
    return SpliceLayout(footer, tuple(layouts), names, leaves)


@functools.lru_cache(maxsize=64)
def _flat_schema(raw: bytes) -> tuple[tuple[str, ...], tuple[ThriftStruct, ...]] | None:
    """Leaf names and schema elements of a raw ``FileMetaData.schema`` list; None when a column is nested."""
    schema = decode_raw(LIST, Raw(raw))
    root, *leaves = schema.values
    if root.get(_SE_NUM_CHILDREN) != len(leaves) or any(e.has(_SE_NUM_CHILDREN) for e in leaves):
        return None
    return tuple(e.get(_SE_NAME).decode() for e in leaves), tuple(leaves)


def _chunk_start(meta: ThriftStruct) -> int | None:
    data_page = meta.get(_CMD_DATA_PAGE)
    if not isinstance(data_page, int):
        return None
    dictionary = meta.get(_CMD_DICT_PAGE)
    # some writers store 0 for "no dictionary page"; a dictionary page always precedes the data pages
    return dictionary if isinstance(dictionary, int) and 0 < dictionary < data_page else data_page


def _moved(chunk: ThriftStruct, delta: int) -> ThriftStruct:
    """A copy of a ColumnChunk whose pages now start ``delta`` bytes later, without references to what lies
    outside the chunk (page index, bloom filter): the splice copies chunks only."""
    meta = chunk.get(_CC_META)
    moved_meta = ThriftStruct([[f, t, v + delta if f in (_CMD_DATA_PAGE, _CMD_DICT_PAGE) and v > 0 else v]
                               for f, t, v in meta.fields if f not in _CMD_DROPPED])
    return ThriftStruct([[f, t, moved_meta if f == _CC_META else
                          (v + delta if f == _CC_FILE_OFFSET and v > 0 else v)]
                         for f, t, v in chunk.fields if f not in _CC_DROPPED])


@dataclass(frozen=True)
class SplicedFile:
    """The new file as pieces to write in order (views into the two files' bytes, and the new footer), so no
    chunk is copied in memory before it reaches the file."""

    pieces: tuple[bytes | memoryview, ...]
    size: int
    #: per leaf column: (compressed, uncompressed) chunk bytes, as the footer records them
    chunk_sizes: dict[str, tuple[int, int]]

    def to_bytes(self) -> bytes:
        return b"".join(self.pieces)


def splice(old: bytes | memoryview, old_layout: SpliceLayout, fresh: bytes | memoryview, fresh_layout: SpliceLayout,
           key_value: Sequence[tuple[str, str]]) -> SplicedFile:
    """A parquet file with ``old``'s schema and rows whose columns are ``fresh``'s chunks where ``fresh`` has the
    column (same name) and ``old``'s elsewhere, and ``key_value`` as its key-value metadata.

    The caller guarantees the rows: ``fresh`` holds the same rows in the same order, and the chunks taken from
    ``old`` hold the values the new file must have. Checked here: the row groups have the same row counts, and
    a column taken from ``fresh`` has the same schema element (physical and logical type, repetition) as in
    ``old``."""
    if not same_columns(old_layout, fresh_layout):
        raise ValueError("the fresh file's columns or row groups do not match the old file's")
    fresh_at = {name: i for i, name in enumerate(fresh_layout.names)}
    old_view, fresh_view = memoryview(old), memoryview(fresh)
    pieces: list[bytes | memoryview] = [MAGIC]
    at = len(MAGIC)
    sizes: dict[str, tuple[int, int]] = {}
    groups: list[ThriftStruct] = []
    for g, old_group in enumerate(old_layout.groups):
        group_start = at
        chunks: list[ThriftStruct] = []
        total_uncompressed = total_compressed = 0
        for i, name in enumerate(old_layout.names):
            j = fresh_at.get(name)
            src, layout, k = (old_view, old_group, i) if j is None else (fresh_view, fresh_layout.groups[g], j)
            start, length = layout.ranges[k]
            chunk = _moved(layout.chunks[k], at - start)
            pieces.append(src[start:start + length])
            at += length
            chunks.append(chunk)
            meta = chunk.get(_CC_META)
            compressed, uncompressed = int(meta.get(_CMD_COMPRESSED)), int(meta.get(_CMD_UNCOMPRESSED))
            before = sizes.get(name, (0, 0))
            sizes[name] = (before[0] + compressed, before[1] + uncompressed)
            total_compressed += compressed
            total_uncompressed += uncompressed
        new_group = ThriftStruct([list(f) for f in old_group.group.fields])
        new_group.set(_RG_COLUMNS, ThriftList(STRUCT, chunks))
        new_group.set(_RG_TOTAL_BYTE_SIZE, total_uncompressed)
        if new_group.has(_RG_FILE_OFFSET):
            new_group.set(_RG_FILE_OFFSET, group_start)
        if new_group.has(_RG_TOTAL_COMPRESSED):
            new_group.set(_RG_TOTAL_COMPRESSED, total_compressed)
        groups.append(new_group)
    footer = ThriftStruct([list(f) for f in old_layout.footer.fields])
    footer.set(_FMD_ROW_GROUPS, ThriftList(STRUCT, groups))
    kv = [ThriftStruct([[1, BINARY, k.encode()], [2, BINARY, v.encode()]]) for k, v in key_value]
    if kv:
        footer.set(_FMD_KEY_VALUE, ThriftList(STRUCT, kv), LIST)
    else:
        footer.remove(_FMD_KEY_VALUE)
    created_by = fresh_layout.footer.get(_FMD_CREATED_BY)
    if created_by is not None:
        footer.set(_FMD_CREATED_BY, created_by, BINARY)
    encoded = write_struct(footer)
    pieces += [encoded, len(encoded).to_bytes(4, "little"), MAGIC]
    return SplicedFile(tuple(pieces), at + len(encoded) + 4 + len(MAGIC), sizes)


@dataclass(frozen=True)
class ChunkStatistics:
    """A column's min / max / null count over all row groups, from the footer (None min / max: all null)."""

    min: int | str | None
    max: int | str | None
    null_count: int


def chunk_statistics(layout: SpliceLayout, column: int, kind: str) -> ChunkStatistics | None:
    """The statistics the footer records for ``column``, decoded as ``kind`` (``"int"``: a signed INT32 /
    INT64 column, ``"string"``: a UTF-8 BYTE_ARRAY column), when they are exact: every chunk has a null count
    and, unless all its values are null, ``min_value`` / ``max_value`` marked exact (writers that truncate
    long values, or do not say, give None, and the caller computes the statistics from the values).

    Parquet orders signed integers by value and UTF-8 strings by unsigned bytes, which is code-point order:
    the same order as the statistics the writer computes (``base_file_writer.StatsAccumulator``)."""
    physical = layout.schema_elements[column].get(_SE_TYPE)
    if (kind, physical) not in (("int", _INT32), ("int", _INT64), ("string", _BYTE_ARRAY)):
        return None
    lo: int | str | None = None
    hi: int | str | None = None
    nulls = 0
    for group in layout.groups:
        meta = group.chunks[column].get(_CC_META)
        stats = decode_raw(STRUCT, meta.get(_CMD_STATISTICS))
        values = meta.get(_CMD_NUM_VALUES)
        if not isinstance(stats, ThriftStruct) or not isinstance(values, int):
            return None
        null_count = stats.get(_ST_NULLS)
        if not isinstance(null_count, int):
            return None
        nulls += null_count
        raw_min, raw_max = stats.get(_ST_MIN), stats.get(_ST_MAX)
        if raw_min is None and raw_max is None and null_count == values:
            continue  # every value null: no bounds
        if not isinstance(raw_min, bytes) or not isinstance(raw_max, bytes) or \
                stats.get(_ST_MIN_EXACT) is not True or stats.get(_ST_MAX_EXACT) is not True:
            return None
        if kind == "int":
            width = 4 if physical == _INT32 else 8
            if len(raw_min) != width or len(raw_max) != width:
                return None
            g_lo: int | str = int.from_bytes(raw_min, "little", signed=True)
            g_hi: int | str = int.from_bytes(raw_max, "little", signed=True)
        else:
            try:
                g_lo, g_hi = raw_min.decode("utf-8"), raw_max.decode("utf-8")
            except UnicodeDecodeError:
                return None
        lo = g_lo if lo is None or g_lo < lo else lo  # type: ignore[operator]
        hi = g_hi if hi is None or g_hi > hi else hi  # type: ignore[operator]
    return ChunkStatistics(lo, hi, nulls)


def same_columns(old: SpliceLayout, fresh: SpliceLayout) -> bool:
    """Whether every column of ``fresh`` is a column of ``old`` with the same schema element (physical and
    logical type, repetition) and the row groups hold the same numbers of rows: what :func:`splice` needs."""
    if fresh.row_group_rows != old.row_group_rows:
        return False
    at = {name: i for i, name in enumerate(old.names)}
    return all(name in at and element.fields == old.schema_elements[at[name]].fields
               for name, element in zip(fresh.names, fresh.schema_elements))
