"""The FILEINF2 block body: ``"PBUF"`` + delimited ``InfoProto { repeated BytesBytesPair map_entry = 1 }``.

Spec: ``docs/hudi-format.md`` §6.6.
"""

from __future__ import annotations

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile.proto import WIRE_LEN, delimited, field_bytes, iter_fields
from hudi_layout.metadata.hfile.varint import read_uvarint

PBUF_MAGIC = b"PBUF"

LASTKEY = b"hfile.LASTKEY"
AVG_KEY_LEN = b"hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = b"hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = b"hfile.CREATE_TIME_TS"
MAX_TAGS_LEN = b"hfile.MAX_TAGS_LEN"
KEY_VALUE_VERSION = b"KEY_VALUE_VERSION"
MAX_MEMSTORE_TS_KEY = b"MAX_MEMSTORE_TS_KEY"


def parse_file_info(body: bytes, *, name: str, offset: int) -> dict[bytes, bytes]:
    if body[:4] != PBUF_MAGIC:
        raise HFileFormatError(
            f"{name}: file info block at offset {offset}: expected body magic {PBUF_MAGIC!r}, got {body[:4]!r}")
    length, pos = read_uvarint(body, 4, what=f"{name} file info length")
    end = pos + length
    if end > len(body):
        raise HFileFormatError(
            f"{name}: file info block at offset {offset}: InfoProto of {length} bytes overruns body of {len(body)}")
    info: dict[bytes, bytes] = {}
    for number, wire, value in iter_fields(body, pos, end, what=f"{name} InfoProto"):
        if number != 1 or wire != WIRE_LEN:
            continue
        assert isinstance(value, bytes)
        first = second = b""
        for f2, w2, v2 in iter_fields(value, 0, len(value), what=f"{name} BytesBytesPair"):
            if w2 == WIRE_LEN and f2 == 1:
                first = v2  # type: ignore[assignment]
            elif w2 == WIRE_LEN and f2 == 2:
                second = v2  # type: ignore[assignment]
        info[first] = second
    return info


def encode_file_info(info: dict[bytes, bytes]) -> bytes:
    """Entries sorted by key, like HBase's ``TreeMap`` with the byte comparator."""
    msg = bytearray()
    for key in sorted(info):
        msg += field_bytes(1, field_bytes(1, key) + field_bytes(2, info[key]))
    return PBUF_MAGIC + delimited(bytes(msg))
