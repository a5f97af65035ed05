"""Acceptance: MDT contents of real Hudi tables equal what is on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_layout.format.instant import Instant, State
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.metadata.mdt_reader import MetadataTableReader, compute_sync_state

META_ZIPS = ["cow_v9_txns_simple_meta.zip", "cow_v9_txns_nonpart_meta.zip", "cow_v9_timebasedkeygen_nonhivestyle.zip",
             "cow_v9_txns_simple_overwrite.zip", "mor_avro_v9_txns_simple_meta.zip"]


# Hudi wrote no column_stats records for this file (its MDT deltacommit has no col-stats log files).
NOT_INDEXED = {"cow_v9_timebasedkeygen_nonhivestyle.zip":
               {"73a81ee8-5d9c-420e-bab2-4626f8756100-0_0-93-281_20260403183846789.parquet"}}


def _disk_files(base: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for root, _dirs, files in os.walk(base):
        rel = os.path.relpath(root, base)
        if rel.startswith(".hoodie"):
            continue
        for f in files:
            if f.endswith(".parquet") or ".log." in f:
                out.setdefault("" if rel == "." else rel, set()).add(f)
    return out


@pytest.mark.parametrize("zip_name", META_ZIPS)
def test_files_partition_equals_disk(fixture_table, expected_tables, zip_name: str) -> None:
    base = fixture_table(zip_name)
    reader = MetadataTableReader(base)
    listing = reader.files_listing()
    assert {p: set(f) for p, f in listing.items()} == _disk_files(base)
    for p, files in listing.items():
        for name, size in files.items():
            assert (base / p / name).stat().st_size == size
    assert sorted(reader.all_partitions()) == sorted(listing)


@pytest.mark.parametrize("zip_name", META_ZIPS)
def test_column_stats_equal_parquet(fixture_table, expected_tables, zip_name: str) -> None:
    base = fixture_table(zip_name)
    idx = ColumnStatsIndex(base)
    columns = idx.indexed_columns()
    assert len(columns) >= 15
    latest = {Path(p).name: p for p in expected_tables[zip_name]["file_slices"]}
    for column in columns:
        table = idx.load_column(column)
        rows = {r["file_name"]: r for r in table.to_pylist()}
        for name, rel in latest.items():
            if name in NOT_INDEXED.get(zip_name, ()):
                assert name not in rows
                continue
            row = rows[name]
            part = rel.rsplit("/", 1)[0].lstrip("/") if "/" in rel else ""
            assert row["partition"] == part
            col = pq.read_table(base / part / name, columns=[column]).column(column)
            mm = pc.min_max(col)
            assert (row["min"], row["max"], row["null_count"], row["value_count"]) == \
                (mm["min"].as_py(), mm["max"].as_py(), col.null_count, len(col)), (column, name)


def test_sync_rule() -> None:
    def i(t: str, action: str, state: State) -> Instant:
        return Instant(t, action, state, "29990101000000000" if state is State.COMPLETED else None)

    data = [i("20240101000000001", "commit", State.COMPLETED), i("20240101000000002", "commit", State.INFLIGHT),
            i("20240101000000004", "indexing", State.INFLIGHT)]
    mdt = [i("00000000000000000", "deltacommit", State.COMPLETED),
           i("20240101000000001", "deltacommit", State.COMPLETED),
           i("20240101000000002", "deltacommit", State.COMPLETED),
           i("20240101000000003", "deltacommit", State.COMPLETED),
           i("20240101000000004", "deltacommit", State.COMPLETED),
           i("20240101000000005", "deltacommit", State.INFLIGHT)]
    s = compute_sync_state(data, mdt)
    visible = {t for t in ("00000000000000000", "20240101000000001", "20240101000000002", "20240101000000003",
                           "20240101000000004", "20240101000000005") if s.block_visible(t)}
    # pending data write (…002) and an MDT-only deltacommit with no data instant (…003) are invisible
    assert visible == {"00000000000000000", "20240101000000001", "20240101000000004"}


@pytest.mark.shared
def test_delete_blocks_of_the_record_index_decode_with_the_one_delete_codec(fixture_table) -> None:
    """Hudi 1.x writes record-index key deletes as DELETE blocks whose ordering values are wrapper records
    (``IntWrapper(0)``); the MDT's delete-key reader uses the data-table log codec, so it reads them."""
    from hudi_layout.format.log_format import BlockType, read_log_file
    from hudi_layout.metadata.merge import delete_block_keys

    base = fixture_table("mor_avro_v9_txns_simple_meta.zip")
    keys: list[str] = []
    for log in sorted((base / ".hoodie" / "metadata" / "record_index").glob(".record-index-*.log.*")):
        for block in read_log_file(str(log)):
            if block.type is BlockType.DELETE:
                keys += delete_block_keys(block)
    assert keys and all(k.startswith("TXN-") for k in keys)
