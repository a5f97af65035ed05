from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_layout.errors import NotAHudiTableError
from hudi_layout.format.commit_metadata import clustering_plan_metadata, commit_metadata_bytes, requested_replace_bytes
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.partition_metadata import (
    read_partition_metadata,
    write_partition_metadata,
)


def test_file_slices_match_expected(fixture_table, expected_tables, shared_rows_digest) -> None:
    """The acceptance check: every fixture's latest slices (and COW row digest) match EXPECTED.json."""
    rows_digest = shared_rows_digest
    for zip_name, exp in expected_tables.items():
        table = HudiTable(fixture_table(zip_name))
        slices = table.file_slices()
        assert sorted(f"{s.partition_path}/{s.base_file_name}" for s in slices) == sorted(exp["file_slices"]), \
            zip_name
        for s in slices:
            assert Path(s.base_file_path).is_file() and s.size_bytes == Path(s.base_file_path).stat().st_size
            assert s.base_file_name.endswith(f"_{s.commit_time}.parquet")
        if exp["file_slices"]:
            assert table.data_columns() == exp["data_columns"], zip_name
        if exp["table_type"] != "COPY_ON_WRITE":
            continue
        if not slices:
            assert exp["rows_digest_sha256_16"] is None
            continue
        data = pa.concat_tables([pq.read_table(s.base_file_path) for s in slices], promote_options="default")
        assert data.num_rows == exp["snapshot_rows"], zip_name
        assert rows_digest(data) == exp["rows_digest_sha256_16"], zip_name


@pytest.mark.parametrize("zip_name", ["cow_v9_txns_simple_meta.zip",
                                      "cow_v6_simplekeygen_nonhivestyle_overwritetable.zip",
                                      "mor_parquet_v6_nonpartitioned.zip", "cow_v8_complexkeygen_hivestyle.zip"])
def test_cross_check_hudi_rs(fixture_table, zip_name: str) -> None:
    hudi = pytest.importorskip("hudi")
    base = fixture_table(zip_name)
    theirs = hudi.HudiTableBuilder.from_base_uri(str(base)).build().get_file_slices()
    ours = HudiTable(base).file_slices()
    assert sorted(s.base_file_relative_path() for s in theirs) == sorted(s.relative_path for s in ours)
    assert sorted((s.partition_path, s.file_id, s.creation_instant_time) for s in theirs) == \
        sorted((s.partition_path, s.file_id, s.commit_time) for s in ours)


def test_partitions_and_schema(fixture_table) -> None:
    t = HudiTable(fixture_table("cow_v9_timebasedkeygen_nonhivestyle.zip"))
    assert all(p.count("/") == 3 for p in t.partitions())
    t2 = HudiTable(fixture_table("cow_v6_nonpartitioned.zip"))
    assert t2.partitions() == [""] and not t2.is_partitioned
    assert t2.schema_dict()["type"] == "record"
    empty = HudiTable(fixture_table("cow_v8_empty.zip"))
    assert empty.file_slices() == [] and empty.schema() == empty.properties.create_schema


def test_as_of_and_pending_invisible(fixture_table) -> None:
    base = fixture_table("cow_v9_txns_simple_meta.zip")
    t = HudiTable(base)
    now = t.file_slices()
    # as of the clustering's requested time - 1: clustered files invisible, inputs visible again
    before = t.file_slices(as_of="20260307162454798")
    assert {s.commit_time for s in before}.isdisjoint({"20260307162454799"})
    assert {s.file_group for s in now} != {s.file_group for s in before}
    # a pending instant's files are invisible: copy a slice under a pending instant name
    tl_dir = base / ".hoodie" / "timeline"
    pending = "20991231000000000"
    (tl_dir / f"{pending}.commit.requested").write_bytes(b"")
    src = Path(now[0].base_file_path)
    shutil.copy(src, src.with_name(src.name.replace(now[0].commit_time, pending)))
    assert t.reload().file_slices() == now
    # ... and visible once completed (by a commit whose metadata lists it; session 19: a file its commit does
    # not list is a task's second copy, never committed)
    copy = src.with_name(src.name.replace(now[0].commit_time, pending)).name
    rel = f"{now[0].partition_path}/{copy}" if now[0].partition_path else copy
    unlisted = {"partitionToWriteStats": {now[0].partition_path: [{"path": "elsewhere.parquet"}]},
                "operationType": "UPSERT"}
    (tl_dir / f"{pending}_{pending[:-1]}1.commit").write_bytes(commit_metadata_bytes(unlisted, 9))
    assert t.reload().file_slices() == now
    listed = {"partitionToWriteStats": {now[0].partition_path: [{"path": rel, "fileId": now[0].file_id}]},
              "operationType": "UPSERT"}
    (tl_dir / f"{pending}_{pending[:-1]}1.commit").write_bytes(commit_metadata_bytes(listed, 9))
    after = t.reload().file_slices()
    assert any(s.commit_time == pending for s in after) and len(after) == len(now)


def _plant_old_file(t: HudiTable, instant: str = "20000101000000000") -> None:
    """A copy of a live base file named with an instant older than the active timeline."""
    now = t.file_slices()
    old = Path(now[0].base_file_path)
    archived_name = old.name.replace(now[0].commit_time, instant).replace(now[0].file_id, "arch-0")
    shutil.copy(old, old.with_name(archived_name))


def test_old_instants_are_committed_only_when_the_archive_holds_them(fixture_table) -> None:
    """Files older than the active timeline are Hudi's archived commits only if an archived timeline
    exists; without one they are what a failed first write left behind (issue #11)."""
    base = fixture_table("cow_v6_complexkeygen_hivestyle.zip")
    t = HudiTable(base)
    _plant_old_file(t)
    assert not any(s.file_id == "arch-0" for s in t.reload().file_slices())  # empty .hoodie/archived
    (base / ".hoodie" / "archived" / ".commits_.archive.1_1-0-1").write_bytes(b"")
    assert any(s.file_id == "arch-0" for s in t.reload().file_slices())


def test_lsm_history_ranges_and_rollbacks_decide_archived(fixture_table) -> None:
    base = fixture_table("cow_v9_txns_simple_meta.zip")
    t = HudiTable(base)
    _plant_old_file(t, "20000101000000000")
    history = base / ".hoodie" / "timeline" / "history"
    (history / "19990101000000000_19991231000000000_0.parquet").write_bytes(b"")
    assert not any(s.file_id == "arch-0" for s in t.reload().file_slices())  # outside every archive range
    (history / "19990101000000000_20000102000000000_0.parquet").write_bytes(b"")
    assert any(s.file_id == "arch-0" for s in t.reload().file_slices())
    # a rollback on the active timeline naming the instant: a failed write, never visible
    from hudi_layout.format.commit_metadata import rollback_metadata_bytes

    meta = {"startRollbackTime": "20000101000000001", "timeTakenInMillis": 1, "totalFilesDeleted": 0,
            "commitsRollback": ["20000101000000000"], "partitionMetadata": {}, "version": 1,
            "instantsRollback": [{"commitTime": "20000101000000000", "action": "commit"}]}
    (base / ".hoodie" / "timeline" / "20000101000000001_20000101000000002.rollback").write_bytes(
        rollback_metadata_bytes(meta))
    assert not any(s.file_id == "arch-0" for s in t.reload().file_slices())


def test_pending_clustering_groups(fixture_table) -> None:
    base = fixture_table("cow_v6_complexkeygen_hivestyle.zip")
    t = HudiTable(base)
    s = t.file_slices()[0]
    plan = {"inputGroups": [{"slices": [{"dataFilePath": s.base_file_path, "deltaFilePaths": [], "fileId": s.file_id,
                                         "partitionPath": s.partition_path, "bootstrapFilePath": "", "version": 1}],
                             "metrics": {}, "numOutputFileGroups": 1, "extraMetadata": None, "version": 1}],
            "strategy": {"strategyClassName": "S", "strategyParams": {}, "version": 1}}
    (base / ".hoodie" / "20991231000000000.replacecommit.requested").write_bytes(
        requested_replace_bytes(clustering_plan_metadata(plan)))
    t.reload()
    assert t.pending_clustering_file_groups() == {s.file_group}
    assert t.file_slices()[0] == s


def test_partition_metadata(tmp_path: Path) -> None:
    d = tmp_path / "a=1" / "b=2"
    assert write_partition_metadata(d, "20240101000000000", 2)
    assert not write_partition_metadata(d, "20240101000000001", 2)
    md = read_partition_metadata(d)
    assert (md.commit_time, md.partition_depth) == ("20240101000000000", 2)
    assert write_partition_metadata(d, "20240101000000001", 2, overwrite=True)
    assert read_partition_metadata(d).commit_time == "20240101000000001"
    assert [p.name for p in d.iterdir()] == [".hoodie_partition_metadata"]


def test_not_a_table(tmp_path: Path) -> None:
    with pytest.raises(NotAHudiTableError, match="hoodie.properties"):
        HudiTable(tmp_path)
    with pytest.raises(NotAHudiTableError):
        HudiTable(tmp_path / "missing")


def test_foreign_files_ignored(fixture_table) -> None:
    base = fixture_table("cow_v8_nonpartitioned.zip")
    t = HudiTable(base)
    now = t.file_slices()
    src = Path(now[0].base_file_path)
    for junk in ("x_1_2.parquet", "part-00000-abc.parquet", ".hidden.parquet", "notes.txt"):
        shutil.copy(src, base / junk)
    (base / ".hoodie" / ".temp" / "sub").mkdir(parents=True, exist_ok=True)
    assert t.reload().file_slices() == now
    assert t.partitions() == [""]
