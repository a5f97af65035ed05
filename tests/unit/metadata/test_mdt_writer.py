"""Round trips through MetadataWriter -> mdt_reader / ColumnStatsIndex, plus hudi-rs as an independent reader."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_layout.errors import CommitConflictError, UnsupportedTableError
from hudi_layout.format.properties import TableProperties, load_properties
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.metadata.mdt_reader import MetadataTableReader
from hudi_layout.metadata.mdt_writer import MetadataWriter, check_maintainable
from tests.helpers.mdt_tables import INDEXED, create_table, write_batch

INDEX_COLUMNS = INDEXED

D = dt.date
Dec = decimal.Decimal


def _rows(i: int) -> dict[str, list[tuple]]:
    return {"region=us": [(f"a{i}", i * 10 + 1, D(2024, 1, i + 1), Dec("1.50"), 0.5),
                          (f"b{i}", None, None, Dec("-3.25"), None)],
            "region=eu": [(f"c{i}", 5 - i, D(2023, 5, 1), None, -1.0)]}


def _parquet_files(base: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for root, _d, files in os.walk(base):
        rel = os.path.relpath(root, base)
        if not rel.startswith(".hoodie"):
            for f in files:
                if f.endswith(".parquet"):
                    out.setdefault("" if rel == "." else rel, set()).add(f)
    return out


def _check_against_disk(base: Path, columns: list[str] = INDEXED) -> None:
    reader = MetadataTableReader(base)
    listing = {p: set(f) for p, f in reader.files_listing().items()}
    assert listing == _parquet_files(base)
    idx = ColumnStatsIndex(base, reader=reader)
    for c in columns:
        t = idx.load_column(c)
        assert t.num_rows == sum(len(v) for v in listing.values())
        for row in t.to_pylist():
            col = pq.read_table(base / row["partition"] / row["file_name"], columns=[c]).column(c)
            mm = pc.min_max(col)
            assert (row["min"], row["max"], row["null_count"], row["value_count"]) == \
                (mm["min"].as_py(), mm["max"].as_py(), col.null_count, len(col))


def test_round_trip(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t")
    assert load_properties(base / ".hoodie").metadata_partitions == ["column_stats", "files"]
    for i in range(3):
        write_batch(base, _rows(i))
    _check_against_disk(base)
    idx = ColumnStatsIndex(base)
    assert idx.indexed_columns() == INDEXED
    only_us = idx.load_column("amt", partitions=["region=us"])
    assert set(only_us.column("partition").to_pylist()) == {"region=us"} and only_us.num_rows == 3
    assert str(only_us.schema.field("min").type) == "decimal128(10, 2)"
    assert idx.load_column("region").num_rows == 0  # not in columns_to_index
    long = idx.load(["v", "d"])
    assert long.num_rows == 12 and set(long.column("column").to_pylist()) == {"v", "d"}


def test_round_trip_arrow_tables(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t")
    for i in range(2):
        write_batch(base, _rows(i), as_tables=True)
    _check_against_disk(base)
    assert ColumnStatsIndex(base).load_column("region").num_rows == 0  # not in columns_to_index


def test_non_partitioned(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t", partitioned=False)
    write_batch(base, {"": [("a", 1, D(2024, 1, 1), Dec("1.00"), 1.0)]})
    reader = MetadataTableReader(base)
    assert reader.all_partitions() == [""]
    _check_against_disk(base)
    assert ColumnStatsIndex(base).load_column("v").column("partition").to_pylist() == [""]


def test_failed_write_is_invisible_then_rolled_back(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t")
    write_batch(base, _rows(0))
    t_failed = write_batch(base, _rows(1), fail_before_complete=True)
    # the MDT deltacommit completed but the data instant did not: readers must ignore it
    mdt_logs = list((base / ".hoodie/metadata/files").glob(f".files-*_{t_failed}.log.*"))
    assert mdt_logs
    reader = MetadataTableReader(base)
    assert all(t_failed not in n for f in reader.files_listing().values() for n in f)
    assert all(t_failed not in n for n in ColumnStatsIndex(base).load_column("v").column("file_name").to_pylist())
    # the next write rolls the failed instant back (commit protocol -> rollback_metadata_instant)
    write_batch(base, _rows(2))
    assert not list((base / ".hoodie/metadata").rglob(f".*_{t_failed}.log.*"))
    assert not [p for p in (base / ".hoodie/metadata/.hoodie/timeline").iterdir() if p.name.startswith(t_failed)]
    _check_against_disk(base)


def test_compaction_keeps_contents(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t", max_delta_commits=3)
    for i in range(4):
        write_batch(base, _rows(i), max_delta_commits=3)
    commits = [p.name for p in (base / ".hoodie/metadata/.hoodie/timeline").iterdir() if p.name.endswith(".commit")]
    assert len(commits) == 1
    reader = MetadataTableReader(base)
    assert all(sl.base_file is not None for sl in reader.file_slices("column_stats"))
    assert sum(len(sl.log_files) for sl in reader.file_slices("column_stats")) <= 2  # only the 4th write
    _check_against_disk(base)
    # tombstones (replaced file) survive a later compaction as a removal
    victim_part, victim = next((p, sorted(f)[0]) for p, f in reader.files_listing().items())
    (base / victim_part / victim).unlink()
    write_batch(base, _rows(9), replace={victim_part: [victim]}, max_delta_commits=3)
    MetadataWriter(base, columns_to_index=INDEXED).compact()
    _check_against_disk(base)


def test_compaction_refused_while_data_write_pending(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t")
    write_batch(base, _rows(0))
    write_batch(base, _rows(1), fail_before_complete=True)
    with pytest.raises(CommitConflictError):
        MetadataWriter(base).compact()


def test_check_maintainable() -> None:
    ok = TableProperties({"hoodie.table.name": "t", "hoodie.table.version": "9",
                          "hoodie.table.metadata.partitions": "column_stats,files"})
    check_maintainable(ok)
    for bad in ("files,record_index", "files,partition_stats", "secondary_index_x", "bloom_filters", "expr_index_y"):
        props = TableProperties({"hoodie.table.name": "t", "hoodie.table.version": "9",
                                 "hoodie.table.metadata.partitions": bad})
        with pytest.raises(UnsupportedTableError, match="cannot be maintained"):
            check_maintainable(props)
    with pytest.raises(UnsupportedTableError):
        check_maintainable(TableProperties({"hoodie.table.name": "t", "hoodie.table.version": "6"}))


def test_refuses_real_fixture_with_record_index(fixture_table) -> None:
    with pytest.raises(UnsupportedTableError, match="record_index|partition_stats|secondary"):
        MetadataWriter(fixture_table("cow_v9_txns_simple_meta.zip"))


def test_hudi_rs_reads_our_mdt(tmp_path: Path) -> None:
    hudi = pytest.importorskip("hudi")
    base = create_table(tmp_path / "t", max_delta_commits=2)
    for i in range(3):
        write_batch(base, _rows(i), max_delta_commits=2)
    table = hudi.HudiTableBuilder.from_base_uri(str(base)).with_hudi_options(
        {"hoodie.metadata.enable": "true"}).build()
    assert len(table.get_file_slices()) == 6
    assert sum(b.num_rows for b in table.read()) == 9
    stats = table.compute_table_stats()  # derived from our MDT files partition
    assert stats is not None and stats[1] > 0
    # hudi-rs lists file slices from the MDT: hide one data file from the MDT and it disappears
    logs = sorted((base / ".hoodie/metadata/files").glob(".files-0000-0_2*.log.*"))
    logs[-1].unlink()
    table = hudi.HudiTableBuilder.from_base_uri(str(base)).with_hudi_options(
        {"hoodie.metadata.enable": "true"}).build()
    assert len(table.get_file_slices()) == 4


def test_index_definition_written(tmp_path: Path) -> None:
    import json

    base = create_table(tmp_path / "t")
    props = load_properties(base / ".hoodie")
    defs = json.loads((base / props["hoodie.table.index.defs.path"]).read_text())["indexDefinitions"]
    assert defs["column_stats"]["sourceFields"] == INDEX_COLUMNS and defs["column_stats"]["version"] == "V2"


def test_v8_table_round_trip(tmp_path: Path) -> None:
    from hudi_layout.metadata.schema import metadata_record_schema_str
    from hudi_layout.table.create import create_table_layout, table_properties_for
    from tests.helpers.mdt_tables import SCHEMA

    base = tmp_path / "t8"
    create_table_layout(base, table_properties_for(table_name="t8", schema=SCHEMA, record_key_fields=["id"],
                                                   partition_fields=["region"], hive_style=True, table_version=8))
    w = MetadataWriter(base, columns_to_index=INDEXED)
    from hudi_layout.metadata.mdt_writer import update_data_table_properties

    update_data_table_properties(base, w.initialize())
    assert w.schema_text == metadata_record_schema_str(8)
    for i in range(2):
        write_batch(base, _rows(i))
    _check_against_disk(base)
    MetadataWriter(base).compact()
    _check_against_disk(base)


def test_initialize_rebuilds_unpublished_mdt(tmp_path: Path) -> None:
    from hudi_layout.table.create import create_table_layout, table_properties_for
    from tests.helpers.mdt_tables import SCHEMA

    base = tmp_path / "t"
    create_table_layout(base, table_properties_for(table_name="t", schema=SCHEMA, record_key_fields=["id"],
                                                   partition_fields=["region"], hive_style=True))
    MetadataWriter(base).initialize()  # crash before the data table properties were updated
    updates = MetadataWriter(base).initialize()
    assert updates["hoodie.table.metadata.partitions"] == "column_stats,files"


def test_many_partitions_load_by_one_scan_and_the_same_rows(tmp_path: Path, monkeypatch) -> None:
    """Above PARTITION_SCANS_LIMIT partitions a column is one key-range scan filtered to the partitions asked
    for: a scan per partition decoded the blocks again for each (1,500 partitions: 27 s, 5.5 GB; the scale
    probe, session 31). The rows are those of the per-partition scans."""
    import hudi_layout.metadata.column_stats_index as csi

    base = create_table(tmp_path / "t")
    write_batch(base, {f"region=r{i:02d}": [(f"k{i}", i, D(2024, 1, 1 + i % 28), Dec("1.00"), float(i))]
                       for i in range(20)})
    asked = [f"region=r{i:02d}" for i in range(0, 20, 2)] + ["region=missing"]
    idx = ColumnStatsIndex(base)

    def rows(t):  # type: ignore[no-untyped-def]
        return sorted((r["partition"], r["file_name"], r["min"], r["max"]) for r in t.to_pylist())

    monkeypatch.setattr(csi, "PARTITION_SCANS_LIMIT", 4)
    one_scan = rows(idx.load_column("v", partitions=asked))
    monkeypatch.setattr(csi, "PARTITION_SCANS_LIMIT", 1000)
    per_partition = rows(idx.load_column("v", partitions=asked))
    assert one_scan == per_partition and len(one_scan) == 10
