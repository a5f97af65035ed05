"""Decompression bombs: every inflate stops at the declared size (or the ceiling) with one clear error."""

from __future__ import annotations

import gzip
import io
import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import fastavro
import pytest

from hudi_layout.errors import CorruptFileError, HFileFormatError
from hudi_layout.format import bounded
from hudi_layout.format.avro_container import read_container
from hudi_layout.format.bounded import GZIP, RAW_DEFLATE, DecompressionLimitError, inflate
from hudi_layout.metadata.hfile import block as blk
from hudi_layout.metadata.hfile.compression import GZ
from hudi_layout.metadata.hfile.reader import HFileReader
from hudi_layout.metadata.hfile.writer import write_hfile

ZEROS_64M_GZ = gzip.compress(b"\0" * (64 << 20), compresslevel=9)  # ~64 KB that inflates to 64 MiB


def test_inflate_round_trips_and_checks_the_declared_size():
    raw = b"hudi" * 10_000
    assert inflate(gzip.compress(raw), wbits=GZIP, what="x", expected_size=len(raw)) == raw
    assert inflate(gzip.compress(raw[:10]) + gzip.compress(raw[10:]), wbits=GZIP, what="x") == raw  # 2 members
    with pytest.raises(CorruptFileError, match="declared 5"):
        inflate(gzip.compress(b"abc"), wbits=GZIP, what="x", expected_size=5)
    with pytest.raises(CorruptFileError, match="truncated"):
        inflate(gzip.compress(raw)[:-20], wbits=GZIP, what="x")
    with pytest.raises(CorruptFileError, match="corrupt"):
        inflate(b"\x1f\x8b garbage", wbits=GZIP, what="x")


def test_a_lying_block_stops_right_after_its_declared_size():
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(DecompressionLimitError, match="f.hfile: .*declared size of 1000"):
        inflate(ZEROS_64M_GZ, wbits=GZIP, what="f.hfile: block at offset 0", expected_size=1000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.perf_counter() - start < 0.5
    assert peak < 8 << 20, peak


def test_a_huge_declared_size_is_refused_before_inflating():
    with pytest.raises(DecompressionLimitError, match="declares 3221225472"):
        inflate(ZEROS_64M_GZ, wbits=GZIP, what="f", expected_size=3 << 30)


def test_unstated_sizes_stop_at_the_ceiling(monkeypatch):
    monkeypatch.setattr(bounded, "MAX_INFLATED_BYTES", 1 << 20)
    raw_deflate = zlib.compressobj(9, zlib.DEFLATED, RAW_DEFLATE)
    payload = raw_deflate.compress(b"\0" * (8 << 20)) + raw_deflate.flush()
    with pytest.raises(DecompressionLimitError, match="limit for a block of unstated size"):
        inflate(payload, wbits=RAW_DEFLATE, what="t.commit")


def _block_declaring(uncompressed: int, payload: bytes) -> bytes:
    """An HFile DATA block whose header declares ``uncompressed`` bytes, with valid CRC32C checksums."""
    import crc32c

    data_with_header = blk.HEADER_SIZE + len(payload)
    on_disk = len(payload) + 4
    header = struct.pack(">8siiqbii", blk.DATA, on_disk, uncompressed, -1, blk.CHECKSUM_CRC32C, 1 << 30,
                         data_with_header)
    body = header + payload
    return body + struct.pack(">I", crc32c.crc32c(body))


@pytest.mark.parametrize("declared", [1000, 2_000_000_000])
def test_hfile_block_bomb_is_one_error_naming_the_file(declared):
    data = _block_declaring(declared, ZEROS_64M_GZ)
    header = blk.read_header(data, 0, name="/t/.hoodie/metadata/column_stats/x.hfile")
    start = time.perf_counter()
    with pytest.raises(HFileFormatError, match=r"^/t/\.hoodie/metadata/column_stats/x\.hfile: block at offset 0"):
        blk.read_block(data, header, GZ, name="/t/.hoodie/metadata/column_stats/x.hfile")
    assert time.perf_counter() - start < 0.5


def test_hfile_checksums_are_verified_by_default(tmp_path: Path):
    items = [(f"k{i:05d}".encode(), b"v" * 50) for i in range(2000)]
    raw = bytearray(write_hfile(None, items, codec="GZ"))
    assert HFileReader(bytes(raw)).get(b"k00010") == b"v" * 50
    raw[blk.HEADER_SIZE + 30] ^= 0xFF  # one bit pattern inside the first data block's payload
    with pytest.raises(HFileFormatError, match="checksum mismatch"):
        HFileReader(bytes(raw), name="damaged.hfile").get(b"k00010")


def _container(codec: str, records: list[dict]) -> bytes:
    buf = io.BytesIO()
    schema = {"type": "record", "name": "R", "fields": [{"name": "s", "type": "string"}]}
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    return buf.getvalue()


def test_avro_container_codecs():
    recs = [{"s": "x" * 100}, {"s": "y"}]
    assert read_container(_container("null", recs), "t") == recs
    assert read_container(_container("deflate", recs), "t") == recs
    with pytest.raises(CorruptFileError, match="codec 'bzip2' is not supported"):
        read_container(_container("bzip2", recs), "t")


def test_avro_deflate_bomb_stops(monkeypatch):
    monkeypatch.setattr(bounded, "MAX_INFLATED_BYTES", 1 << 20)
    data = _container("deflate", [{"s": "z" * (4 << 20)}])
    assert len(data) < 64 << 10
    with pytest.raises(DecompressionLimitError, match="20260101.commit: Avro block"):
        read_container(data, "20260101.commit")
    # a well-formed header but a schema that is not JSON
    bad = data.replace(b'"type"', b"'type'", 1)
    with pytest.raises(CorruptFileError):
        read_container(bad, "t")


def test_log_data_block_counts_and_lengths_are_checked():
    from hudi_layout.format import log_format as L

    ok = L.LogBlock(L.BlockType.AVRO_DATA, content=struct.pack(">ii", 3, 2) + struct.pack(">i", 1) + b"a"
                    + struct.pack(">i", 0))
    assert L.data_block_records(ok) == [b"a", b""]
    for content in (struct.pack(">ii", 3, 2_000_000_000),                      # count beyond the bytes
                    struct.pack(">ii", 3, 1) + struct.pack(">i", -4) + b"xxxx",  # negative length (looped)
                    struct.pack(">ii", 3, 1) + struct.pack(">i", 99) + b"x", b"\x00"):
        with pytest.raises(ValueError):
            L.data_block_records(L.LogBlock(L.BlockType.AVRO_DATA, content=content))
    with pytest.raises(ValueError):
        L.delete_block_payload(L.LogBlock(L.BlockType.DELETE, content=struct.pack(">ii", 3, 50) + b"x"))
