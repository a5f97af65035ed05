"""Variable-length integers used by HFile: protobuf base-128 varints and Hadoop ``WritableUtils`` VLongs.

Spec: ``docs/hudi-format.md`` §6.5 (Hadoop VLong: index key lengths, cell MVCC) and §6.6/§6.7
(protobuf varints: file info and trailer framing).

Decoders take ``(buf, pos)`` and return ``(value, new_pos)``; they raise ``HFileFormatError`` on truncation.
"""

from __future__ import annotations

from hudi_layout.errors import HFileFormatError
from hudi_layout.format.varint import Buffer
from hudi_layout.format.varint import read_uvarint as _read_uvarint


def read_uvarint(buf: Buffer, pos: int, *, what: str = "varint") -> tuple[int, int]:
    """Decode an unsigned protobuf varint (up to 64 bits) at ``pos``."""
    return _read_uvarint(buf, pos, what=what, error=HFileFormatError)


def encode_uvarint(value: int) -> bytes:
    """Encode a non-negative int (negative values are taken as 64-bit two's complement, as protobuf does)."""
    if value < 0:
        value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_vlong(buf: Buffer, pos: int, *, what: str = "vlong") -> tuple[int, int]:
    """Decode a Hadoop ``WritableUtils.readVLong`` value at ``pos``.

    First byte ``b`` (signed): ``b >= -112`` is the value itself; otherwise ``n = -111 - b`` (positive) or
    ``n = -119 - b`` (negative, stored one's-complemented) is the total size and ``n - 1`` big-endian bytes follow.
    """
    if pos >= len(buf):
        raise HFileFormatError(f"truncated {what} at offset {pos}: buffer ends at {len(buf)}")
    first = buf[pos]
    if first >= 0x80:
        first -= 0x100
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    end = pos + size
    if end > len(buf):
        raise HFileFormatError(f"truncated {what} at offset {pos}: needs {size} bytes, buffer ends at {len(buf)}")
    value = int.from_bytes(buf[pos + 1:end], "big")
    if negative:
        value = ~value
    return value, end


def encode_vlong(value: int) -> bytes:
    """Encode like Hadoop ``WritableUtils.writeVLong``."""
    if -112 <= value <= 127:
        return (value & 0xFF).to_bytes(1, "big")
    length = -112
    if value < 0:
        value = ~value
        length = -120
    tmp = value
    while tmp != 0:
        tmp >>= 8
        length -= 1
    nbytes = (-(length + 120)) if length < -120 else (-(length + 112))
    return (length & 0xFF).to_bytes(1, "big") + value.to_bytes(nbytes, "big")
