from __future__ import annotations

import pytest

from hudi_layout.metadata import keys as K
from hudi_layout.metadata.mdt_reader import MetadataTableReader

META_ZIPS = ["cow_v9_txns_simple_meta.zip", "cow_v9_txns_nonpart_meta.zip", "cow_v9_timebasedkeygen_nonhivestyle.zip",
             "cow_v9_txns_simple_overwrite.zip", "mor_avro_v9_txns_simple_meta.zip"]


def test_worked_example() -> None:
    key = K.column_stats_key("currency", "region=us",
                             "b5f376f3-c7d2-40c9-b867-75a98f6a26be-0_1-27-53_20260307162504409.parquet")
    assert key == "/m6lxu4Dh5w=" + "431THTTwO5Q=" + "V4z2ncHSnSnzuLNScMrN9Q=="
    assert len(key) == K.COLUMN_STATS_KEY_LEN
    assert K.partition_index_id("") == K.partition_index_id(".") == "FXThHwelITM="
    assert K.column_partition_prefix("currency", "region=us") == key[:24]
    assert K.partition_stats_key("currency", "region=us") == key[:24]
    assert K.column_stats_key("c", "p", "dir/f.parquet") == K.column_stats_key("c", "p", "f.parquet")


def test_java_hashcode() -> None:
    assert K.java_string_hashcode("") == 0
    assert K.java_string_hashcode("hello") == 99162322
    assert K.java_string_hashcode("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE
    assert K.java_string_hashcode("\U0001F600") == 31 * 0xD83D + 0xDE00  # surrogate pair = 2 code units
    # Math.abs(Math.abs(MIN_VALUE) % n): MIN_VALUE % 3 == -2 in Java -> 2
    assert K.file_group_index("polygenelubricants", 3) == 2
    assert K.file_group_index("polygenelubricants", 2) == 0
    assert K.file_group_id("column_stats", 1) == "col-stats-0001-0"
    assert K.file_group_id("files", 0) == "files-0000-0"


@pytest.mark.parametrize("zip_name", META_ZIPS)
def test_fixture_keys_recomputed(fixture_table, zip_name: str) -> None:
    base = fixture_table(zip_name)
    reader = MetadataTableReader(base)
    partitions = reader.all_partitions()
    by_pid = {K.partition_index_id(p): p for p in partitions}
    n = 0
    for sl in reader.file_slices("column_stats"):
        groups = len(reader.file_slices("column_stats"))
        for src in reader._group_sources("column_stats")[[s.file_id for s in reader.file_slices("column_stats")]
                                                         .index(sl.file_id)]:
            for kb, value in src.reader.items():
                from hudi_layout.metadata.records import decode_record

                key = kb.decode()
                cs = decode_record(key, value, src.schema).column_stats
                part = by_pid[key[12:24]]
                assert key == K.column_stats_key(cs.column, part, cs.file_name)
                assert K.file_group_id("column_stats", K.file_group_index(key, groups)) == sl.file_id
                n += 1
    assert n > 50
