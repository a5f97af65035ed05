"""Reading Avro object container files (timeline metadata) with bounded decompression.

Container layout (Avro spec, "Object Container Files"): ``Obj\\x01``, a metadata map (``avro.schema``,
``avro.codec``), a 16-byte sync marker, then blocks of ``record count (long) | byte size (long) | data |
sync``. Hudi writes timeline files with the ``null`` codec; ``deflate`` blocks state no inflated size, so
they are inflated through :func:`hudi_layout.format.bounded.inflate` with its ceiling instead of handing
them to fastavro (which would inflate whatever a block holds). Other codecs are refused by name.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.bounded import RAW_DEFLATE, inflate

MAGIC = b"Obj\x01"
SYNC_SIZE = 16


class _Cursor:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def long(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= len(self.data) or shift > 63:
                raise CorruptFileError(f"{self.what}: truncated or malformed Avro long at byte {self.pos}")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptFileError(f"{self.what}: Avro length {n} at byte {self.pos} runs past the end")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def _metadata(cur: _Cursor) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    while True:
        count = cur.long()
        if count == 0:
            return out
        if count < 0:
            count = -count
            cur.long()  # byte size of the block, unused
        for _ in range(count):
            key = cur.take(cur.long()).decode("utf-8", "replace")
            out[key] = cur.take(cur.long())


def read_container(data: bytes, what: str) -> list[Any]:
    """Every record of an Avro container file, decoded with its writer schema."""
    if not data.startswith(MAGIC):
        raise CorruptFileError(f"{what}: not an Avro container file (no Obj\\x01 magic)")
    cur = _Cursor(data, what)
    cur.pos = len(MAGIC)
    meta = _metadata(cur)
    codec = meta.get("avro.codec", b"null").decode("utf-8", "replace")
    if codec == "null":  # nothing to inflate: fastavro reads it as is
        return list(fastavro.reader(io.BytesIO(data)))
    if codec != "deflate":
        raise CorruptFileError(f"{what}: Avro codec {codec!r} is not supported (Hudi writes 'null')")
    try:
        schema = fastavro.parse_schema(json.loads(meta["avro.schema"]))
    except (KeyError, ValueError) as exc:
        raise CorruptFileError(f"{what}: Avro header has no usable schema: {exc}") from exc
    sync = cur.take(SYNC_SIZE)
    records: list[Any] = []
    while cur.pos < len(data):
        count = cur.long()
        size = cur.long()
        start = cur.pos
        block = inflate(cur.take(size), wbits=RAW_DEFLATE, what=f"{what}: Avro block at byte {start}")
        if count < 0 or count > len(block) + 1:
            raise CorruptFileError(f"{what}: Avro block at byte {start} claims {count} records")
        body = io.BytesIO(block)
        records.extend(fastavro.schemaless_reader(body, schema, None) for _ in range(count))
        if cur.take(SYNC_SIZE) != sync:
            raise CorruptFileError(f"{what}: Avro block at byte {start} is not followed by the sync marker")
    return records
