from __future__ import annotations

from pathlib import Path

import pytest

from hudi_layout.format import log_format as L
from hudi_layout.metadata.hfile.reader import HFileReader
from hudi_layout.metadata.hfile.writer import write_hfile


def _mdt_logs(base: Path) -> list[Path]:
    return sorted(p for p in (base / ".hoodie" / "metadata").rglob(".*.log.*"))


@pytest.mark.parametrize("zip_name", ["cow_v9_txns_simple_meta.zip", "mor_avro_v9_txns_simple_meta.zip"])
def test_fixture_logs_parse_and_reencode(fixture_table, zip_name: str) -> None:
    kinds = set()
    for path in _mdt_logs(fixture_table(zip_name)):
        data = path.read_bytes()
        blocks = list(L.iter_blocks(data))
        assert blocks and all(b.type != L.BlockType.CORRUPTED for b in blocks)
        assert b"".join(L.encode_block(b.type, b.header, b.content, b.footer) for b in blocks) == data
        for b in blocks:
            kinds.add(b.type)
            if b.type == L.BlockType.HFILE_DATA:
                r = HFileReader(b.content)
                assert len(r.items()) == r.num_entries
                assert b.header[L.HeaderKey.SCHEMA].startswith("{")
        name = L.parse_log_file_name(path.name)
        assert name is not None and name.name == path.name
        assert name.instant_time == blocks[0].instant_time
    assert {L.BlockType.HFILE_DATA, L.BlockType.DELETE} <= kinds


def test_init_block_bytes() -> None:
    block = L.delete_block("00000000000000000")
    (b,) = L.iter_blocks(block)
    assert b.type == L.BlockType.DELETE and b.content == bytes.fromhex("00000003 00000001 00")
    assert L.delete_block_payload(b) == b"\x00"


def test_truncated_and_garbage_tail_is_corrupt_not_fatal() -> None:
    hf = write_hfile(None, [(b"a", b"1"), (b"b", b"2")], codec="GZ")
    good = L.hfile_data_block("20240101000000000", "{}", hf)
    rb = L.rollback_block("20240101000000001", "20240101000000000")
    for tail in (good[: len(good) // 2], b"#HUDI#\x00\x00", b"junk"):
        blocks = list(L.iter_blocks(good + rb + tail))
        assert [b.type for b in blocks] == [L.BlockType.HFILE_DATA, L.BlockType.COMMAND, L.BlockType.CORRUPTED]
        assert blocks[1].is_rollback and blocks[1].target_instant_time == "20240101000000000"
    # corrupt block in the middle: the reader resyncs on the next magic
    blocks = list(L.iter_blocks(good[:100] + good))
    assert [b.type for b in blocks] == [L.BlockType.CORRUPTED, L.BlockType.HFILE_DATA]


def test_avro_data_block_records() -> None:
    import struct

    content = struct.pack(">ii", 3, 2) + struct.pack(">i", 2) + b"ab" + struct.pack(">i", 1) + b"c"
    (b,) = L.iter_blocks(L.encode_block(L.BlockType.AVRO_DATA, {L.HeaderKey.INSTANT_TIME: "1"}, content))
    assert L.data_block_records(b) == [b"ab", b"c"]


def test_log_names() -> None:
    assert L.log_file_name("col-stats-0000-0", "20260307162524292", 1, "0-243-626") == \
        ".col-stats-0000-0_20260307162524292.log.1_0-243-626"
    n = L.parse_log_file_name(".abc-0_20240101.log.12_1-2-3")
    assert n == L.LogFileName("abc-0", "20240101", 12, "1-2-3")
    assert L.parse_log_file_name("x.parquet") is None
    assert L.parse_log_file_name(".f_1.log.1") == L.LogFileName("f", "1", 1, None)
