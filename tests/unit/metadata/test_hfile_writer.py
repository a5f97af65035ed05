"""HFileWriter round trips through HFileReader, layout checks against §6.9, and the small codecs."""

from __future__ import annotations

import io
import struct
from bisect import bisect_left
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile import HUDI_COMPARATOR, HFileReader, HFileTrailer, HFileWriter, write_hfile
from hudi_layout.metadata.hfile import block as blk
from hudi_layout.metadata.hfile.reader import prefix_successor
from hudi_layout.metadata.hfile.varint import encode_uvarint, encode_vlong, read_uvarint, read_vlong


def make_items(n: int, *, key_pad: int = 0, value_len: int = 40) -> list[tuple[bytes, bytes]]:
    return [(b"k" * key_pad + b"key-%08d" % i, (b"v%d-" % i).ljust(value_len, b"x")) for i in range(n)]


def assert_lookups(reader: HFileReader, items: list[tuple[bytes, bytes]]) -> None:
    keys = [k for k, _ in items]
    probes = set(keys[:: max(1, len(keys) // 60)]) | {b"", b"\xff", keys[-1] + b"\x00"} if keys else {b"", b"a"}
    index = reader.data_block_index
    for e in index[:: max(1, len(index) // 60)]:
        probes |= {e.row, e.row[:-1], e.row + b"\x00"}
    for key in sorted(probes):
        i = bisect_left(keys, key)
        expected = items[i][1] if i < len(keys) and keys[i] == key else None
        assert reader.get(key) == expected, key
        assert list(islice(reader.seek(key), 5)) == items[i:i + 5], key
        for prefix in (key, key[:-2]):
            lo = bisect_left(keys, prefix)
            hi = lo
            while hi < len(keys) and keys[hi].startswith(prefix):
                hi += 1
            assert reader.scan_items(prefix) == items[lo:hi], prefix


@pytest.mark.parametrize("codec", ["GZ", "NONE"])
@pytest.mark.parametrize("block_size", [1024, 64 * 1024, 1 << 20])
def test_round_trip(codec: str, block_size: int) -> None:
    items = make_items(3000)
    data = write_hfile(None, items, block_size=block_size, codec=codec, file_info={b"schema": b'{"type":"null"}'})
    reader = HFileReader(data, verify_checksums=True)
    reader.verify()
    assert reader.items() == items
    assert list(reader) == items
    assert reader.num_entries == 3000
    assert reader.file_info[b"schema"] == b'{"type":"null"}'
    assert reader.last_key == items[-1][0]
    assert reader.raw_bytes == data
    t = reader.trailer
    with pytest.raises(AttributeError):
        t.entry_count = 1  # type: ignore[misc]  # frozen
    assert (t.major_version, t.minor_version) == (3, 3)
    assert t.comparator_class_name == HUDI_COMPARATOR
    assert t.compression_codec == (1 if codec == "GZ" else 2)
    assert t.first_data_block_offset == 0
    assert t.last_data_block_offset == reader.data_block_index[-1].offset
    if block_size == 1024:
        assert reader.num_data_blocks > 50
    assert_lookups(reader, items)


@pytest.mark.parametrize("codec", ["GZ", "NONE"])
def test_empty_and_single_entry(codec: str) -> None:
    empty = HFileReader(write_hfile(None, [], codec=codec))
    assert empty.num_entries == 0 and list(empty) == [] and empty.num_data_blocks == 0
    assert empty.get(b"x") is None and list(empty.seek(b"")) == [] and empty.scan_values(b"") == []
    assert empty.trailer.first_data_block_offset == -1 and empty.trailer.last_data_block_offset == -1
    assert empty.last_key is None
    empty.verify()
    one = HFileReader(write_hfile(None, [(b"only", b"value")], codec=codec), verify_checksums=True)
    assert one.items() == [(b"only", b"value")]
    assert one.get(b"only") == b"value" and one.get(b"onl") is None and one.get(b"only\x00") is None
    assert one.scan_items(b"on") == [(b"only", b"value")]


@pytest.mark.parametrize("max_entries, min_levels", [(4, 3), (16, 2)])
def test_multi_level_index(max_entries: int, min_levels: int) -> None:
    items = make_items(2000, key_pad=200, value_len=10)
    data = write_hfile(None, items, block_size=1024, max_index_entries_per_block=max_entries)
    reader = HFileReader(data, verify_checksums=True)
    reader.verify()
    assert reader.trailer.num_data_index_levels >= min_levels
    assert reader.trailer.data_index_count <= max_entries
    assert reader.num_data_blocks > max_entries ** (min_levels - 1)
    assert reader.items() == items
    assert_lookups(reader, items)


def test_multi_level_by_index_byte_size() -> None:
    """Large keys overflow the default 128 KB root index without any entry-count limit."""
    items = make_items(400, key_pad=2000, value_len=10)
    reader = HFileReader(write_hfile(None, items, block_size=4096))
    assert reader.trailer.num_data_index_levels >= 2
    assert reader.items() == items
    assert_lookups(reader, items)


def test_hbase_layout_details() -> None:
    items = make_items(500)
    data = write_hfile(None, items, block_size=4096)
    reader = HFileReader(data)
    first = blk.read_header(data, 0, name="t", expected=blk.DATA)
    assert first.checksum_type == blk.CHECKSUM_CRC32C and first.bytes_per_checksum == 16384
    assert first.prev_block_offset == -1
    second = blk.read_header(data, first.next_offset, name="t", expected=blk.DATA)
    assert second.prev_block_offset == 0
    assert data[blk.HEADER_SIZE:blk.HEADER_SIZE + 2] == b"\x1f\x8b"  # gzip stream
    # index keys and LASTKEY are full KeyValue keys: rowLen | row | famLen 0 | ts | Put
    key = reader.root_index[0].key
    assert key == struct.pack(">H", 12) + b"key-00000000" + b"\x00" + b"\x7f" + b"\xff" * 7 + b"\x04"
    assert reader.file_info[b"hfile.LASTKEY"][-10:] == b"\x00\x7f" + b"\xff" * 7 + b"\x04"
    assert reader.file_info[b"KEY_VALUE_VERSION"] == b"\x00\x00\x00\x01"
    assert reader.file_info[b"MAX_MEMSTORE_TS_KEY"] == bytes(8)
    assert struct.unpack(">i", reader.file_info[b"hfile.AVG_KEY_LEN"])[0] == 24
    assert reader.meta_index == [] and reader.trailer.meta_index_count == 0
    assert reader.trailer.load_on_open_data_offset == reader.root_index_offset


def test_writer_targets(tmp_path: Path) -> None:
    items = make_items(10)
    path = tmp_path / "a.hfile"
    data = write_hfile(path, items)
    assert path.read_bytes() == data
    with HFileWriter(tmp_path / "b.hfile", codec="NONE") as w:
        w.extend(items)
    assert HFileReader(tmp_path / "b.hfile").items() == items
    buf = io.BytesIO()
    w = HFileWriter(buf)
    w.extend(items)
    w.close()
    assert HFileReader(buf.getvalue()).items() == items
    assert write_hfile(None, items) == data  # deterministic


def test_writer_rejects_bad_input() -> None:
    w = HFileWriter(None)
    w.append(b"b", b"1")
    with pytest.raises(ValueError, match="strictly increasing"):
        w.append(b"b", b"2")
    with pytest.raises(ValueError, match="strictly increasing"):
        w.append(b"a", b"2")
    with pytest.raises(ValueError):
        HFileWriter(None, codec="SNAPPY")
    with pytest.raises(ValueError):
        w.append(b"x" * 40000, b"")


def test_duplicates_spanning_blocks_get_first_value() -> None:
    """Like HBase's non_unique test file, but with runs of one key crossing block boundaries."""
    items = [(b"key-%03d" % (i // 25), b"value-%05d" % i) for i in range(1000)]
    w = HFileWriter(None, block_size=256, unique_keys=False)
    w.extend(items)
    w.close()
    reader = HFileReader(w.getvalue())
    assert reader.items() == items
    for k in range(40):
        key = b"key-%03d" % k
        assert reader.get(key) == b"value-%05d" % (25 * k)
        assert reader.scan_values(key) == [b"value-%05d" % i for i in range(25 * k, 25 * k + 25)]
        assert next(reader.seek(key)) == (key, b"value-%05d" % (25 * k))


def test_unsupported_codec_and_bad_magic() -> None:
    data = bytearray(write_hfile(None, make_items(5)))
    t = HFileTrailer.parse(bytes(data))
    bad = bytes(data[:-4096]) + HFileTrailer(**{**t.__dict__, "compression_codec": 3}).serialize()
    with pytest.raises(HFileFormatError, match="SNAPPY"):
        HFileReader(bad)
    data[0:8] = b"XXXXXXXX"
    with pytest.raises(HFileFormatError, match="magic"):
        HFileReader(bytes(data)).get(b"key-00000001")
    with pytest.raises(HFileFormatError, match="smaller than"):
        HFileReader(b"short")


def test_trailer_round_trip() -> None:
    t = HFileTrailer(file_info_offset=123456, load_on_open_data_offset=1000, entry_count=2 ** 40,
                     data_index_count=7, num_data_index_levels=2, comparator_class_name=HUDI_COMPARATOR,
                     compression_codec=1, first_data_block_offset=-1, last_data_block_offset=-1)
    raw = t.serialize()
    assert len(raw) == 4096 and raw[-4:] == b"\x03\x00\x00\x03"
    assert HFileTrailer.parse(bytes(10) + raw) == t


@pytest.mark.parametrize("value", [0, 1, -1, 127, -112, -113, 128, 255, 256, -129, 2 ** 31, -(2 ** 40), 2 ** 63 - 1,
                                   -(2 ** 63)])
def test_vlong_round_trip(value: int) -> None:
    enc = encode_vlong(value)
    assert read_vlong(enc + b"tail", 0) == (value, len(enc))


def test_uvarint_round_trip() -> None:
    for value in (0, 1, 127, 128, 300, 2 ** 32, 2 ** 64 - 1):
        enc = encode_uvarint(value)
        assert read_uvarint(enc, 0) == (value, len(enc))
    with pytest.raises(HFileFormatError, match="truncated"):
        read_uvarint(b"\x80\x80", 0)


def test_prefix_successor() -> None:
    assert prefix_successor(b"ab") == b"ac"
    assert prefix_successor(b"a\xff\xff") == b"b"
    assert prefix_successor(b"\xff") is None and prefix_successor(b"") is None


keys_strategy = st.lists(st.binary(min_size=0, max_size=40), min_size=0, max_size=300, unique=True).map(sorted)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.property
@given(keys=keys_strategy, block_size=st.sampled_from([64, 512, 4096]), codec=st.sampled_from(["GZ", "NONE"]),
       max_entries=st.sampled_from([None, 2, 3, 8]))
def test_hypothesis_round_trip(keys: list[bytes], block_size: int, codec: str, max_entries: int | None) -> None:
    items = [(k, k[::-1] + b"|%d" % i) for i, k in enumerate(keys)]
    data = write_hfile(None, items, block_size=block_size, codec=codec, max_index_entries_per_block=max_entries)
    reader = HFileReader(data, verify_checksums=True)
    assert reader.items() == items
    assert reader.num_entries == len(items)
    for k, v in items[:: max(1, len(items) // 20)]:
        assert reader.get(k) == v
        assert reader.get(k + b"\x00") == (dict(items).get(k + b"\x00"))
    for prefix in {k[:1] for k in keys[:10]} | {b""}:
        assert reader.scan_items(prefix) == [kv for kv in items if kv[0].startswith(prefix)]
