"""Hudi log files: block framing, block types, file naming (docs/hudi-format.md §1.6, §5.8).

Block layout (big-endian)::

    "#HUDI#" | blockSize i64 | version i32 | type i32 | header | contentLength i64 | content
             | footer | totalBlockLength i64

``blockSize`` counts every byte after itself up to and including ``totalBlockLength``. A block that is cut
short (a crash mid-append) or whose sizes do not add up is reported as CORRUPTED and skipped — the reader
then searches for the next magic, like Hudi's ``HoodieLogFileReader``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum

from hudi_layout.format.file_naming import LOG_FILE_RE as LOG_FILE_RE
from hudi_layout.format.file_naming import LogFileName as LogFileName
from hudi_layout.format.file_naming import log_sort_key as log_sort_key
from hudi_layout.format.file_naming import make_log_file_name, try_parse_log_file_name

MAGIC = b"#HUDI#"
LOG_BLOCK_VERSION = 1
DATA_BLOCK_VERSION = 3  # version prefix of AVRO_DATA / DELETE content


class BlockType(IntEnum):
    COMMAND = 0
    DELETE = 1
    CORRUPTED = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


ROLLBACK_COMMAND = "0"


@dataclass(frozen=True)
class LogBlock:
    """One block; ``content`` is the raw payload (an entire HFile for HFILE_DATA)."""

    type: BlockType
    header: dict[int, str] = field(default_factory=dict)
    content: bytes = b""
    footer: dict[int, str] = field(default_factory=dict)
    offset: int = 0

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def is_rollback(self) -> bool:
        return self.type == BlockType.COMMAND and \
            self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND


# ---------------------------------------------------------------------------------------------- encode


def _encode_map(m: dict[int, str]) -> bytes:
    out = [struct.pack(">i", len(m))]
    for k, v in m.items():
        b = v.encode("utf-8")
        out.append(struct.pack(">ii", int(k), len(b)) + b)
    return b"".join(out)


def encode_block(block_type: BlockType, header: dict[int, str], content: bytes,
                 footer: dict[int, str] | None = None) -> bytes:
    body = (struct.pack(">ii", LOG_BLOCK_VERSION, int(block_type)) + _encode_map(header)
            + struct.pack(">q", len(content)) + content + _encode_map(footer or {}))
    block_size = len(body) + 8
    total = len(MAGIC) + 8 + len(body)
    return MAGIC + struct.pack(">q", block_size) + body + struct.pack(">q", total)


def hfile_data_block(instant_time: str, schema_text: str, hfile_bytes: bytes) -> bytes:
    return encode_block(BlockType.HFILE_DATA,
                        {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_text}, hfile_bytes)


def delete_block(instant_time: str, avro_delete_list: bytes = b"\x00") -> bytes:
    """DELETE block; the default content is the empty ``HoodieDeleteRecordList`` of MDT init blocks."""
    content = struct.pack(">ii", DATA_BLOCK_VERSION, len(avro_delete_list)) + avro_delete_list
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant_time}, content)


def rollback_block(instant_time: str, target_instant_time: str) -> bytes:
    return encode_block(BlockType.COMMAND, {HeaderKey.INSTANT_TIME: instant_time,
                                            HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
                                            HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND}, b"")


# ---------------------------------------------------------------------------------------------- decode


def _decode_map(data: bytes, pos: int, end: int) -> tuple[dict[int, str], int]:
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if n < 0 or n > 1024:
        raise ValueError("bad header count")
    out: dict[int, str] = {}
    for _ in range(n):
        k, ln = struct.unpack_from(">ii", data, pos)
        pos += 8
        if ln < 0 or pos + ln > end:
            raise ValueError("header entry overruns block")
        out[k] = data[pos:pos + ln].decode("utf-8")
        pos += ln
    return out, pos


def _parse_block(data: bytes, start: int) -> tuple[LogBlock, int]:
    """Parse a well-formed block at ``start`` (magic included); raise ValueError/struct.error if not."""
    pos = start + len(MAGIC)
    (block_size,) = struct.unpack_from(">q", data, pos)
    pos += 8
    end = pos + block_size
    if block_size < 8 + 8 + 4 + 8 + 4 + 8 or end > len(data):
        raise ValueError("block runs past end of file")
    version, btype = struct.unpack_from(">ii", data, pos)
    pos += 8
    header, pos = _decode_map(data, pos, end)
    (clen,) = struct.unpack_from(">q", data, pos)
    pos += 8
    if clen < 0 or pos + clen > end:
        raise ValueError("content overruns block")
    content = data[pos:pos + clen]
    pos += clen
    footer, pos = _decode_map(data, pos, end) if version >= 1 else ({}, pos)
    (total,) = struct.unpack_from(">q", data, pos)
    pos += 8
    if pos != end or total != end - start - 8:
        raise ValueError("block length mismatch")
    return LogBlock(BlockType(btype), header, content, footer, start), end


def iter_blocks(data: bytes, *, name: str = "<log>") -> Iterator[LogBlock]:
    """Yield the blocks of a log file; corrupt or truncated regions come out as one CORRUPTED block each."""
    pos = 0
    n = len(data)
    while pos < n:
        if data.startswith(MAGIC, pos):
            try:
                block, nxt = _parse_block(data, pos)
            except (ValueError, struct.error):
                block, nxt = None, -1
            if block is not None:
                yield block
                pos = nxt
                continue
        nxt_magic = data.find(MAGIC, pos + 1)
        end = n if nxt_magic < 0 else nxt_magic
        yield LogBlock(BlockType.CORRUPTED, {}, data[pos:end], {}, pos)
        pos = end


def read_log_file(path: str, *, name: str | None = None) -> list[LogBlock]:
    with open(path, "rb") as fh:
        data = fh.read()
    return list(iter_blocks(data, name=name or path))


def data_block_records(block: LogBlock) -> list[bytes]:
    """AVRO_DATA content → list of Avro binary datums (block version 3: count + length-prefixed records).

    Every count and length is checked against the bytes actually present, so a damaged block fails with
    ``ValueError`` instead of looping or allocating what its header claims."""
    data = block.content
    if len(data) < 8:
        raise ValueError(f"AVRO_DATA block at offset {block.offset} is {len(data)} bytes, too short")
    _version, count = struct.unpack_from(">ii", data, 0)
    pos = 8
    if count < 0 or count * 4 > len(data) - pos:
        raise ValueError(f"AVRO_DATA block at offset {block.offset} claims {count} records in {len(data)} bytes")
    out = []
    for _ in range(count):
        if pos + 4 > len(data):
            raise ValueError(f"AVRO_DATA block at offset {block.offset} ends inside a record length")
        (ln,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if ln < 0 or pos + ln > len(data):
            raise ValueError(f"AVRO_DATA block at offset {block.offset}: record length {ln} overruns the block")
        out.append(data[pos:pos + ln])
        pos += ln
    return out


def delete_block_payload(block: LogBlock) -> bytes:
    """DELETE content → the Avro ``HoodieDeleteRecordList`` datum."""
    data = block.content
    if len(data) < 8:
        raise ValueError(f"DELETE block at offset {block.offset} is {len(data)} bytes, too short")
    _version, ln = struct.unpack_from(">ii", data, 0)
    if ln < 0 or 8 + ln > len(data):
        raise ValueError(f"DELETE block at offset {block.offset}: payload length {ln} overruns the block")
    return data[8:8 + ln]


# ---------------------------------------------------------------------------------------------- naming
# Log-file names have one grammar, in :mod:`hudi_layout.format.file_naming`; these names keep this module's API
# (``parse_log_file_name`` here returns ``None`` for a name that is not a log file).

parse_log_file_name = try_parse_log_file_name
log_file_name = make_log_file_name
