"""The fixed-size HFile trailer (last 4096 bytes): ``TRABLK"$`` + delimited ``TrailerProto`` + version int.

Spec: ``docs/hudi-format.md`` §6.7. All proto fields are optional (proto2); missing ones read as 0, except
the first/last data block offsets, which default to -1 (HBase writes 2^64-1 for empty files).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile.proto import WIRE_LEN, delimited, field_bytes, field_varint, iter_fields
from hudi_layout.metadata.hfile.varint import Buffer, read_uvarint

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
SUPPORTED_MAJOR_VERSION = 3

HUDI_COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"

_U64 = (1 << 64) - 1

# field number -> attribute name, proto type ("u" unsigned varint, "s" string, "b" bytes)
_FIELDS: dict[int, tuple[str, str]] = {
    1: ("file_info_offset", "u"),
    2: ("load_on_open_data_offset", "u"),
    3: ("uncompressed_data_index_size", "u"),
    4: ("total_uncompressed_bytes", "u"),
    5: ("data_index_count", "u"),
    6: ("meta_index_count", "u"),
    7: ("entry_count", "u"),
    8: ("num_data_index_levels", "u"),
    9: ("first_data_block_offset", "u"),
    10: ("last_data_block_offset", "u"),
    11: ("comparator_class_name", "s"),
    12: ("compression_codec", "u"),
    13: ("encryption_key", "b"),
}


@dataclass(frozen=True)
class HFileTrailer:
    """Decoded trailer. ``first/last_data_block_offset`` are -1 when the file has no data block."""

    file_info_offset: int = 0
    load_on_open_data_offset: int = 0
    uncompressed_data_index_size: int = 0
    total_uncompressed_bytes: int = 0
    data_index_count: int = 0
    meta_index_count: int = 0
    entry_count: int = 0
    num_data_index_levels: int = 1
    first_data_block_offset: int = -1
    last_data_block_offset: int = -1
    comparator_class_name: str = ""
    compression_codec: int = 2
    encryption_key: bytes = b""
    major_version: int = SUPPORTED_MAJOR_VERSION
    minor_version: int = 3

    @classmethod
    def parse(cls, data: Buffer, *, name: str = "<hfile>") -> HFileTrailer:
        """Parse the trailer from the whole file contents ``data``."""
        size = len(data)
        if size < TRAILER_SIZE:
            raise HFileFormatError(
                f"{name}: file is {size} bytes, smaller than the {TRAILER_SIZE}-byte HFile trailer")
        base = size - TRAILER_SIZE
        magic = bytes(data[base:base + 8])
        if magic != TRAILER_MAGIC:
            raise HFileFormatError(
                f"{name}: bad trailer magic at offset {base}: expected {TRAILER_MAGIC!r}, got {magic!r}")
        (version,) = struct.unpack_from(">i", data, size - 4)
        major, minor = version & 0x00FFFFFF, (version >> 24) & 0xFF
        if major != SUPPORTED_MAJOR_VERSION:
            raise HFileFormatError(
                f"{name}: HFile major version at offset {size - 4}: expected {SUPPORTED_MAJOR_VERSION}, got {major}")
        length, pos = read_uvarint(data, base + 8, what=f"{name} trailer length")
        end = pos + length
        if end > size - 4:
            raise HFileFormatError(
                f"{name}: trailer proto at offset {pos} declares {length} bytes, overrunning the trailer")
        values: dict[str, object] = {}
        for number, wire, value in iter_fields(data, pos, end, what=f"{name} TrailerProto"):
            spec = _FIELDS.get(number)
            if spec is None:
                continue
            attr, kind = spec
            if (kind == "u") != (wire != WIRE_LEN):
                raise HFileFormatError(f"{name}: TrailerProto field {number} ({attr}) has wire type {wire}")
            if kind == "s":
                assert isinstance(value, bytes)
                values[attr] = value.decode("utf-8", "replace")
            elif kind == "u" and attr in ("first_data_block_offset", "last_data_block_offset") and value == _U64:
                values[attr] = -1
            else:
                values[attr] = value
        return cls(major_version=major, minor_version=minor, **values)  # type: ignore[arg-type]

    def serialize(self) -> bytes:
        """Encode as the 4096-byte trailer block (all fields written, like HBase)."""
        msg = bytearray()
        for number, (attr, kind) in _FIELDS.items():
            value = getattr(self, attr)
            if kind == "u":
                msg += field_varint(number, value & _U64)
            elif kind == "s":
                msg += field_bytes(number, value.encode("utf-8"))
            elif value:  # encryption key: omitted when empty, as HBase does
                msg += field_bytes(number, value)
        body = TRAILER_MAGIC + delimited(bytes(msg))
        if len(body) > TRAILER_SIZE - 4:
            raise ValueError(f"trailer proto too large: {len(body)} bytes")
        version = (self.minor_version << 24) | self.major_version
        return body + bytes(TRAILER_SIZE - 4 - len(body)) + struct.pack(">i", version)
