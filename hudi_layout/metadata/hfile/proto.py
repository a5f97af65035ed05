"""A minimal hand-written protobuf (proto2 wire format) codec for the two HFile messages.

Spec: ``docs/hudi-format.md`` §6.6 (``InfoProto`` in the file info block) and §6.7 (``TrailerProto``).
Only wire types 0 (varint), 1 (fixed64), 2 (length-delimited) and 5 (fixed32) are understood; unknown fields
of those types are skipped, anything else is a format error.
"""

from __future__ import annotations

from collections.abc import Iterator

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile.varint import Buffer, encode_uvarint, read_uvarint

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LEN = 2
WIRE_FIXED32 = 5


def iter_fields(buf: Buffer, start: int, end: int, *, what: str) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field_number, wire_type, value)``; value is an int, or bytes for length-delimited fields."""
    pos = start
    while pos < end:
        tag, pos = read_uvarint(buf, pos, what=f"{what} tag")
        field, wire = tag >> 3, tag & 7
        if wire == WIRE_VARINT:
            value, pos = read_uvarint(buf, pos, what=f"{what} field {field}")
            yield field, wire, value
        elif wire == WIRE_LEN:
            length, pos = read_uvarint(buf, pos, what=f"{what} field {field} length")
            if pos + length > end:
                raise HFileFormatError(
                    f"{what} field {field} at offset {pos}: length {length} runs past message end {end}")
            yield field, wire, bytes(buf[pos:pos + length])
            pos += length
        elif wire == WIRE_FIXED64:
            if pos + 8 > end:
                raise HFileFormatError(f"{what} field {field} at offset {pos}: truncated fixed64")
            yield field, wire, int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wire == WIRE_FIXED32:
            if pos + 4 > end:
                raise HFileFormatError(f"{what} field {field} at offset {pos}: truncated fixed32")
            yield field, wire, int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        else:
            raise HFileFormatError(f"{what} at offset {pos}: unsupported protobuf wire type {wire} (field {field})")
    if pos != end:
        raise HFileFormatError(f"{what}: message overran its declared end {end} (at {pos})")


def field_varint(number: int, value: int) -> bytes:
    return encode_uvarint(number << 3 | WIRE_VARINT) + encode_uvarint(value)


def field_bytes(number: int, value: bytes) -> bytes:
    return encode_uvarint(number << 3 | WIRE_LEN) + encode_uvarint(len(value)) + value


def delimited(message: bytes) -> bytes:
    """``writeDelimitedTo`` framing: varint length, then the message."""
    return encode_uvarint(len(message)) + message
