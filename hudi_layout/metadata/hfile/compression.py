"""HFile compression codecs (trailer field 12). Only NONE and GZ are supported.

Spec: ``docs/hudi-format.md`` §6.3 (every block, including index and file info blocks, is compressed with the
file codec; GZ payloads are gzip streams ``1f 8b ...``) and §6.7 (codec ids).
"""

from __future__ import annotations

import gzip

from hudi_layout.errors import CorruptFileError, HFileFormatError
from hudi_layout.format.bounded import GZIP, inflate

CODEC_NAMES = {0: "LZO", 1: "GZ", 2: "NONE", 3: "SNAPPY", 4: "LZ4", 5: "BZIP2", 6: "ZSTD"}
CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}
GZ = 1
NONE = 2


def codec_id(name: str) -> int:
    """Codec name ('GZ', 'NONE', case-insensitive) -> trailer id; only writable codecs are accepted."""
    cid = CODEC_IDS.get(name.upper())
    if cid not in (GZ, NONE):
        raise ValueError(f"unsupported HFile codec {name!r}: expected 'GZ' or 'NONE'")
    return cid


def check_codec(codec: int, *, name: str) -> None:
    if codec not in (GZ, NONE):
        label = CODEC_NAMES.get(codec, "unknown")
        raise HFileFormatError(
            f"{name}: unsupported compression codec {codec} ({label}) in trailer: expected 1 (GZ) or 2 (NONE)")


def decompress(codec: int, payload: bytes | bytearray | memoryview, expected_size: int, *, name: str,
               offset: int) -> bytes:
    """Decompress one block payload to exactly ``expected_size`` bytes (the header's
    uncompressedSizeWithoutHeader); inflating stops as soon as it would pass that size (see
    :mod:`hudi_layout.format.bounded`)."""
    what = f"{name}: block at offset {offset}"
    if codec == NONE:
        out = bytes(payload)
    elif codec == GZ:
        try:
            return inflate(payload, wbits=GZIP, what=what, expected_size=expected_size)
        except CorruptFileError as exc:
            raise HFileFormatError(str(exc), hint=exc.hint) from exc
    else:
        check_codec(codec, name=name)
        raise AssertionError("unreachable")
    if len(out) != expected_size:
        raise HFileFormatError(
            f"{name}: block at offset {offset} decompresses to {len(out)} bytes, "
            f"expected uncompressedSizeWithoutHeader {expected_size}")
    return out


def compress(codec: int, raw: bytes) -> bytes:
    if codec == NONE:
        return raw
    if codec == GZ:
        # mtime=0 keeps output deterministic; Hadoop's GzipCodec writes a plain single-member gzip stream.
        return gzip.compress(raw, compresslevel=6, mtime=0)
    raise ValueError(f"cannot compress with codec {codec}")
