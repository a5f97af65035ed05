"""KeyValue cells inside DATABLK* blocks.

Spec: ``docs/hudi-format.md`` §6.4::

    keyLength i32 | valueLength i32 | key | value | [tagsLength i16 | tags] | [mvcc Hadoop-VLong]
    key = rowLength i16 | row | familyLength i8 | family | qualifier | timestamp i64 | keyType i8

Tags are present only when file info has ``hfile.MAX_TAGS_LEN`` (HBase v3 rule; Hudi never writes them), the
MVCC vlong only when ``KEY_VALUE_VERSION == 1`` (always, in Hudi files). Users see the row bytes as the key.
"""

from __future__ import annotations

import struct

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile.varint import read_vlong

_CELL_HEAD = struct.Struct(">IIH")
LATEST_TIMESTAMP = 0x7FFFFFFFFFFFFFFF
KEY_TYPE_PUT = 4
_KEY_TAIL = struct.pack(">BqB", 0, LATEST_TIMESTAMP, KEY_TYPE_PUT)  # empty family + qualifier, ts, Put
MAX_ROW_LENGTH = 0x7FFF


def parse_cells(body: bytes, *, mvcc: bool = True, tags: bool = False,
                name: str = "<hfile>", offset: int = 0) -> tuple[list[bytes], list[bytes]]:
    """Decode every cell of an uncompressed data block body into parallel ``(rows, values)`` lists.

    This is the hot loop of every HFile read (column-stats loads scan hundreds of thousands of cells), so it
    avoids per-cell function calls beyond one ``unpack_from`` and keeps validation to one comparison.
    """
    rows: list[bytes] = []
    values: list[bytes] = []
    add_row = rows.append
    add_value = values.append
    unpack = _CELL_HEAD.unpack_from
    end = len(body)
    limit = end - 10  # a cell head (klen, vlen, rowlen) needs 10 bytes
    pos = 0
    while pos <= limit:
        klen, vlen, rlen = unpack(body, pos)
        if rlen + 2 > klen:
            raise HFileFormatError(
                f"{name}: data block at offset {offset}: cell at body offset {pos} has row length {rlen} "
                f"larger than its key length {klen} - 2")
        kstart = pos + 10
        add_row(body[kstart:kstart + rlen])
        vstart = pos + 8 + klen
        pos = vstart + vlen
        add_value(body[vstart:pos])
        if tags:
            if pos + 2 > end:
                pos = end + 1  # truncated: reported below
                break
            pos += 2 + ((body[pos] << 8) | body[pos + 1])
        if mvcc:
            if pos >= end:
                pos = end + 1  # missing mvcc byte: reported below
                break
            b = body[pos]
            if b < 0x80 or b >= 0x90:  # single-byte vlong (the usual 0x00)
                pos += 1
            else:
                _, pos = read_vlong(body, pos, what=f"{name} cell mvcc")
    if pos != end:
        raise HFileFormatError(
            f"{name}: data block at offset {offset}: cells end at body offset {pos}, "
            f"expected exactly the uncompressed size {end}")
    return rows, values


def encode_key(row: bytes) -> bytes:
    """Full KeyValue key for ``row`` as HBase/Hudi write it (empty family/qualifier, latest ts, Put)."""
    return struct.pack(">H", len(row)) + row + _KEY_TAIL


def encode_cell(row: bytes, value: bytes) -> bytes:
    """One cell with a zero MVCC byte (``KEY_VALUE_VERSION = 1``, ``MAX_MEMSTORE_TS_KEY = 0``)."""
    klen = len(row) + 12
    return _CELL_HEAD.pack(klen, len(value), len(row)) + row + _KEY_TAIL + value + b"\x00"
