"""Unsigned base-128 varints (LEB128): protobuf's varint, which HFile's trailer and file info use, and Thrift
compact protocol's integers and lengths (docs/parquet-splice.md). One decoder; each format names its error."""

from __future__ import annotations

Buffer = bytes | bytearray | memoryview


def read_uvarint(buf: Buffer, pos: int, *, what: str = "varint",
                 error: type[Exception] = ValueError) -> tuple[int, int]:
    """The unsigned varint (up to 64 bits) at ``pos`` and the position after it; ``error`` on truncation or
    a varint longer than 10 bytes."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise error(f"truncated {what} at offset {pos}: expected more bytes, buffer ends at {end}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise error(f"{what} at offset {pos} is longer than 10 bytes")
