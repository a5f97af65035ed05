"""Decompression with a ceiling: no file we read can make us inflate more than its format declares.

A compressed block of a few MB can inflate to GBs (a "decompression bomb"), and a reader that trusts it
spends that memory and time before noticing anything. Every decompression of file content (HFile blocks,
Avro container blocks of timeline files) goes through :func:`inflate`, which stops as soon as the output
would pass the size the format declares (or, where the format declares none, :data:`MAX_INFLATED_BYTES`)
and raises :class:`~hudi_layout.errors.CorruptFileError` naming the file.
"""

from __future__ import annotations

import zlib

from hudi_layout.errors import CorruptFileError

#: largest inflated block we accept when the format states no size (Avro container blocks of timeline
#: files), and the largest size a header may declare. Hudi's HFile blocks are ~64 KB-1 MB and its timeline
#: blocks hold one commit's metadata, so this only stops hostile or broken files.
MAX_INFLATED_BYTES = 256 * 1024 * 1024

#: zlib ``wbits`` for the stream formats we meet: gzip (HFile GZ blocks) and raw deflate (Avro "deflate")
GZIP = 31
RAW_DEFLATE = -15

_CHUNK = 1 << 20


class DecompressionLimitError(CorruptFileError):
    """A compressed block inflates past its declared size or past :data:`MAX_INFLATED_BYTES`."""


def inflate(payload: bytes | bytearray | memoryview, *, wbits: int, what: str, expected_size: int | None = None,
            limit: int | None = None) -> bytes:
    """Inflate ``payload`` (gzip members back to back are allowed for ``GZIP``), never producing more than
    ``expected_size`` bytes (when given) or ``limit``. With ``expected_size`` the output must be exactly that
    long. ``what`` names the file and block in errors."""
    if limit is None:
        limit = MAX_INFLATED_BYTES
    if expected_size is not None:
        if expected_size < 0:
            raise CorruptFileError(f"{what}: negative declared size {expected_size}")
        if expected_size > limit:
            raise DecompressionLimitError(
                f"{what}: declares {expected_size} inflated bytes, more than the {limit} this reader accepts",
                hint="the file is corrupt or hostile; it was not decompressed")
    ceiling = limit if expected_size is None else expected_size
    if expected_size is not None:
        # the usual case, one stream of exactly the declared size, in one call and without copies; the output
        # is capped one byte past the declared size, anything else re-inflates below and fails there
        d = zlib.decompressobj(wbits)
        try:
            whole = d.decompress(payload, expected_size + 1)
        except zlib.error as exc:
            raise CorruptFileError(f"{what}: corrupt compressed data: {exc}") from exc
        if d.eof and len(whole) == expected_size and (wbits != GZIP or not d.unused_data.strip(b"\x00")):
            return whole
    out = bytearray()
    data = memoryview(payload)
    try:
        while True:
            d = zlib.decompressobj(wbits)
            pending: bytes | memoryview = data
            while not d.eof:
                chunk = d.decompress(pending, min(_CHUNK, ceiling - len(out) + 1))
                pending = d.unconsumed_tail
                out += chunk
                if len(out) > ceiling:
                    raise _too_big(what, ceiling, expected_size)
                if not chunk and not pending and not d.eof:
                    raise CorruptFileError(f"{what}: compressed stream is truncated")
            rest = d.unused_data
            if wbits != GZIP or not rest.strip(b"\x00"):
                break
            data = memoryview(rest)  # another gzip member follows
    except zlib.error as exc:
        raise CorruptFileError(f"{what}: corrupt compressed data: {exc}") from exc
    if expected_size is not None and len(out) != expected_size:
        raise CorruptFileError(f"{what}: inflates to {len(out)} bytes, declared {expected_size}")
    return bytes(out)


def _too_big(what: str, ceiling: int, expected_size: int | None) -> DecompressionLimitError:
    if expected_size is not None:
        msg = f"{what}: inflates past its declared size of {expected_size} bytes"
    else:
        msg = f"{what}: inflates past {ceiling} bytes, the limit for a block of unstated size"
    return DecompressionLimitError(msg, hint="the file is corrupt or hostile; decompression was stopped")
