"""HFile block indexes: root (IDXROOT2, also used for the meta index) and leaf/intermediate (IDXLEAF2/IDXINTE2).

Spec: ``docs/hudi-format.md`` §6.5.

- root body: ``count x { blockOffset i64 | onDiskSize i32 (incl. header) | keyLen Hadoop-VLong | key }``, possibly
  followed by HBase "mid-key" metadata, which we ignore;
- non-root body: ``numEntries i32 | (numEntries + 1) x i32 relative offsets | entries { offset i64 | size i32 | key }``.

Index keys may be full KeyValue keys (HBase), ``rowLen || row`` keys (Hudi 1.1 native writer) or shortened
"fake" keys (row shortened, keyType 0xFF). Either way the row is ``key[2 : 2 + rowLen]``, and lookups compare rows
only (as Hudi's ``Key.compareTo`` does).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile.varint import encode_vlong, read_vlong

_ENTRY_HEAD = struct.Struct(">qi")


@dataclass(frozen=True)
class IndexEntry:
    offset: int
    size: int  # on-disk size including the 33-byte header
    key: bytes  # the raw index key as stored

    @property
    def row(self) -> bytes:
        return key_row(self.key)


def key_row(key: bytes) -> bytes:
    """Row bytes of an index key / KeyValue key (``rowLen i16 | row | ...``)."""
    if len(key) < 2:
        return b""
    n = (key[0] << 8) | key[1]
    return key[2:2 + n]


def parse_root_index(body: bytes, count: int, *, name: str, offset: int) -> list[IndexEntry]:
    entries: list[IndexEntry] = []
    pos = 0
    for i in range(count):
        if pos + 12 > len(body):
            raise HFileFormatError(
                f"{name}: root index block at offset {offset}: entry {i} of {count} starts at body offset {pos}, "
                f"past body end {len(body)}")
        blk_off, blk_size = _ENTRY_HEAD.unpack_from(body, pos)
        key_len, pos = read_vlong(body, pos + 12, what=f"{name} root index key length")
        if key_len < 0 or pos + key_len > len(body):
            raise HFileFormatError(
                f"{name}: root index block at offset {offset}: entry {i} key length {key_len} at body offset {pos} "
                f"overruns body of {len(body)} bytes")
        entries.append(IndexEntry(blk_off, blk_size, body[pos:pos + key_len]))
        pos += key_len
    return entries


def parse_nonroot_index(body: bytes, *, name: str, offset: int) -> list[IndexEntry]:
    if len(body) < 4:
        raise HFileFormatError(f"{name}: index block at offset {offset}: body of {len(body)} bytes has no count")
    (n,) = struct.unpack_from(">i", body, 0)
    entries_start = 4 + 4 * (n + 1)
    if n < 0 or entries_start > len(body):
        raise HFileFormatError(
            f"{name}: index block at offset {offset}: entry count {n} does not fit the {len(body)}-byte body")
    rel = struct.unpack_from(f">{n + 1}i", body, 4)
    entries: list[IndexEntry] = []
    for i in range(n):
        start = entries_start + rel[i]
        end = entries_start + rel[i + 1]
        if start + 12 > end or end > len(body):
            raise HFileFormatError(
                f"{name}: index block at offset {offset}: entry {i} spans body bytes {start}..{end}, "
                f"expected at least 12 bytes within {len(body)}")
        blk_off, blk_size = _ENTRY_HEAD.unpack_from(body, start)
        entries.append(IndexEntry(blk_off, blk_size, body[start + 12:end]))
    return entries


def encode_root_index(entries: list[IndexEntry]) -> bytes:
    out = bytearray()
    for e in entries:
        out += _ENTRY_HEAD.pack(e.offset, e.size)
        out += encode_vlong(len(e.key))
        out += e.key
    return bytes(out)


def encode_nonroot_index(entries: list[IndexEntry]) -> bytes:
    rel = [0]
    for e in entries:
        rel.append(rel[-1] + 12 + len(e.key))
    out = bytearray(struct.pack(f">i{len(rel)}i", len(entries), *rel))
    for e in entries:
        out += _ENTRY_HEAD.pack(e.offset, e.size)
        out += e.key
    return bytes(out)


def root_entry_size(key: bytes) -> int:
    return 12 + len(encode_vlong(len(key))) + len(key)
