"""HFile v3 block framing: 33-byte header, (compressed) payload, per-chunk checksums.

Spec: ``docs/hudi-format.md`` §6.3. Header::

    magic[8] | onDiskSizeWithoutHeader i32 | uncompressedSizeWithoutHeader i32 | prevBlockOffset i64
    | checksumType i8 | bytesPerChecksum i32 | onDiskDataSizeWithHeader i32

followed by ``onDiskDataSizeWithHeader - 33`` payload bytes and then 4 checksum bytes per ``bytesPerChecksum``
chunk of header+payload (checksum type 2 = CRC32C, big-endian, as HBase writes).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import crc32c

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile.compression import compress, decompress
from hudi_layout.metadata.hfile.varint import Buffer

HEADER_SIZE = 33
_HEADER = struct.Struct(">8siiqbii")

DATA = b"DATABLK*"
ENCODED_DATA = b"DATABLKE"
LEAF_INDEX = b"IDXLEAF2"
INTERMEDIATE_INDEX = b"IDXINTE2"
ROOT_INDEX = b"IDXROOT2"
META = b"METABLKc"
FILE_INFO = b"FILEINF2"
KNOWN_MAGICS = frozenset(
    {DATA, ENCODED_DATA, LEAF_INDEX, INTERMEDIATE_INDEX, ROOT_INDEX, META, FILE_INFO, b"BLMFBLK2", b"BLMFMET2"})

CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2
DEFAULT_BYTES_PER_CHECKSUM = 16384


@dataclass(frozen=True)
class BlockHeader:
    offset: int
    magic: bytes
    on_disk_size_without_header: int
    uncompressed_size_without_header: int
    prev_block_offset: int
    checksum_type: int
    bytes_per_checksum: int
    on_disk_data_size_with_header: int

    @property
    def on_disk_size_with_header(self) -> int:
        return self.on_disk_size_without_header + HEADER_SIZE

    @property
    def next_offset(self) -> int:
        return self.offset + self.on_disk_size_with_header


def read_header(data: Buffer, offset: int, *, name: str, expected: bytes | None = None) -> BlockHeader:
    if offset < 0 or offset + HEADER_SIZE > len(data):
        raise HFileFormatError(
            f"{name}: block header at offset {offset} runs past end of file ({len(data)} bytes)")
    magic, on_disk, uncompressed, prev, ck_type, bpc, data_with_header = _HEADER.unpack_from(data, offset)
    if expected is not None and magic != expected:
        raise HFileFormatError(f"{name}: block at offset {offset}: expected magic {expected!r}, got {magic!r}")
    if magic not in KNOWN_MAGICS:
        raise HFileFormatError(f"{name}: unknown block magic {magic!r} at offset {offset}")
    if data_with_header < HEADER_SIZE or data_with_header - HEADER_SIZE > on_disk or uncompressed < 0:
        raise HFileFormatError(
            f"{name}: block at offset {offset}: inconsistent sizes (onDiskSizeWithoutHeader {on_disk}, "
            f"onDiskDataSizeWithHeader {data_with_header}, uncompressed {uncompressed})")
    if offset + HEADER_SIZE + on_disk > len(data):
        raise HFileFormatError(
            f"{name}: block {magic!r} at offset {offset} needs {HEADER_SIZE + on_disk} bytes, "
            f"file ends at {len(data)}")
    return BlockHeader(offset, magic, on_disk, uncompressed, prev, ck_type, bpc, data_with_header)


def verify_checksums(data: Buffer, header: BlockHeader, *, name: str) -> None:
    """Check the CRC32C/CRC32 chunk checksums of one block (no-op for checksum type NULL)."""
    if header.checksum_type == CHECKSUM_NULL:
        return
    if header.checksum_type == CHECKSUM_CRC32:
        func = zlib.crc32
    elif header.checksum_type == CHECKSUM_CRC32C:
        func = crc32c.crc32c
    else:
        raise HFileFormatError(
            f"{name}: block at offset {header.offset}: unknown checksum type {header.checksum_type}")
    start = header.offset
    end = start + header.on_disk_data_size_with_header
    bpc = header.bytes_per_checksum
    if bpc <= 0:
        raise HFileFormatError(f"{name}: block at offset {start}: bytesPerChecksum {bpc} is not positive")
    ck_pos = end
    for chunk in range(start, end, bpc):
        actual = func(bytes(data[chunk:min(chunk + bpc, end)])) & 0xFFFFFFFF
        (stored,) = struct.unpack_from(">I", data, ck_pos)
        if stored != actual:
            raise HFileFormatError(
                f"{name}: checksum mismatch for block at offset {start}, chunk at {chunk}: "
                f"expected {stored:#010x}, computed {actual:#010x}")
        ck_pos += 4


def read_block(data: Buffer, header: BlockHeader, codec: int, *, name: str, verify: bool = True) -> bytes:
    """Return the uncompressed body of the block described by ``header``, after checking its checksums
    (blocks written without checksums, as Hudi 1.1 writes them, have none to check)."""
    if verify:
        verify_checksums(data, header, name=name)
    start = header.offset + HEADER_SIZE
    payload = data[start:header.offset + header.on_disk_data_size_with_header]
    return decompress(codec, payload, header.uncompressed_size_without_header, name=name, offset=header.offset)


def encode_block(magic: bytes, body: bytes, codec: int, prev_block_offset: int,
                 *, bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM) -> bytes:
    """Frame ``body`` as a complete on-disk block with CRC32C checksums (checksum type 2)."""
    payload = compress(codec, body)
    data_with_header = HEADER_SIZE + len(payload)
    n_chunks = (data_with_header + bytes_per_checksum - 1) // bytes_per_checksum
    on_disk_without_header = len(payload) + 4 * n_chunks
    header = _HEADER.pack(magic, on_disk_without_header, len(body), prev_block_offset, CHECKSUM_CRC32C,
                          bytes_per_checksum, data_with_header)
    block = bytearray(header)
    block += payload
    view = memoryview(block)
    sums = bytearray()
    for chunk in range(0, data_with_header, bytes_per_checksum):
        sums += struct.pack(">I", crc32c.crc32c(view[chunk:min(chunk + bytes_per_checksum, data_with_header)]))
    view.release()
    block += sums
    return bytes(block)
