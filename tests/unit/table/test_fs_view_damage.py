"""The file-system view on tables holding files a listing sees but no commit made (a second attempt of a
Spark task, a straggler) or damaged ones (a zero-byte base file). Session 19: such a copy of a base file was
read next to the committed one (14 keys twice, then made permanent by a clustering); hudi-rs, reading the
metadata table's file list, reads each key once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_layout as hl
from hudi_layout.errors import CorruptFileError
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.integration import hudi_rs_read
from tests.helpers.live_ops import run_write

OPTS = {"hoodie.table.name": "d", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.max.file.size": "3000"}


def _table(tmp_path: Path, metadata: bool = True) -> Path:
    base = tmp_path / "t"
    opts = {**OPTS, "hoodie.metadata.enable": str(metadata).lower()}
    run_write(str(base), pa.table({"id": list(range(40)), "p": ["a", "b"] * 20, "v": list(range(40))}), opts)
    run_write(str(base), pa.table({"id": [0, 2], "p": ["a", "a"], "v": [100, 102]}),
              {"hoodie.datasource.write.operation": "upsert"})
    return base


def _ids(base: Path) -> list[int]:
    return sorted(hudi_rs_read(str(base)).column("id").to_pylist())


@pytest.mark.parametrize("copy_kind", ["retried task (same file group)", "straggler (another file group)"])
def test_a_copy_of_a_base_file_no_commit_lists_is_not_read(tmp_path: Path, copy_kind: str) -> None:
    base = _table(tmp_path)
    before = HudiTable(str(base)).file_slices()
    want = _ids(base)
    victim = max(before, key=lambda s: s.commit_time)
    src = Path(victim.base_file_path)
    file_id, token, rest = src.name.split("_", 2)
    if copy_kind.startswith("retried"):
        copy = src.with_name(f"{file_id}_9-9-9_{rest}")
    else:
        copy = src.with_name(f"{file_id[:-1]}{'1' if file_id[-1] != '1' else '2'}_{token}_{rest}")
    shutil.copy(src, copy)
    after = HudiTable(str(base)).file_slices()
    assert [s.base_file_name for s in after] == [s.base_file_name for s in before]
    assert sorted(r["id"] for r in _rows_read(base)) == want
    assert hl.explain(str(base), "v >= 0").files_total == len(before)


def _rows_read(base: Path) -> list[dict]:
    import pyarrow.parquet as pq

    rows: list[dict] = []
    for s in HudiTable(str(base)).file_slices():
        rows += pq.read_table(s.base_file_path, columns=["id"]).to_pylist()
    return rows


def test_a_zero_byte_latest_base_file_is_refused_naming_it(tmp_path: Path) -> None:
    base = _table(tmp_path, metadata=False)
    victim = max(HudiTable(str(base)).file_slices(), key=lambda s: s.commit_time)
    Path(victim.base_file_path).write_bytes(b"")
    with pytest.raises(CorruptFileError, match=victim.base_file_name):
        HudiTable(str(base)).file_slices()
    with pytest.raises(CorruptFileError, match="0 bytes"):
        hl.explain(str(base), "v > 3")


def test_a_partition_folder_without_its_partition_metadata_is_refused(tmp_path: Path) -> None:
    """A copy that leaves out dot-files drops ``.hoodie_partition_metadata``: the folder's rows vanished from
    reads (60 of 90) and an upsert of one of its keys filed it a second time (session 19)."""
    from tests.helpers.integration import tree_snapshot

    base = _table(tmp_path)
    marker = next((base / "a").glob(".hoodie_partition_metadata*"))
    marker.unlink()
    with pytest.raises(CorruptFileError, match="'a'.*hoodie_partition_metadata"):
        HudiTable(str(base)).file_slices()
    with pytest.raises(CorruptFileError, match="hoodie_partition_metadata"):
        hl.explain(str(base), "v > 3")
    before = tree_snapshot(str(base))
    with pytest.raises(CorruptFileError):
        run_write(str(base), pa.table({"id": [4], "p": ["a"], "v": [7]}),
                  {"hoodie.datasource.write.operation": "upsert"})
    assert tree_snapshot(str(base)) == before


def test_a_missing_metadata_partition_folder_refuses_changes_and_index_rebuild_mends_it(tmp_path: Path,
                                                                                        capsys) -> None:
    """``.hoodie/metadata/column_stats`` deleted while the table still lists it: an upsert raised a bare
    FileNotFoundError (the command: a 26-line traceback), a clustering left its plan behind (session 19)."""
    from hudi_layout.tools.cli import main
    from tests.helpers.integration import tree_snapshot

    base = _table(tmp_path)
    shutil.rmtree(base / ".hoodie" / "metadata" / "column_stats")
    before = tree_snapshot(str(base))
    with pytest.raises(CorruptFileError, match="column_stats"):
        run_write(str(base), pa.table({"id": [4], "p": ["a"], "v": [7]}),
                  {"hoodie.datasource.write.operation": "upsert"})
    with pytest.raises(CorruptFileError, match="column_stats"):
        hl.clean(str(base))
    assert tree_snapshot(str(base)) == before
    assert main(["cluster", str(base), "--columns", "v", "--schedule-only"]) == 2
    assert "index PATH --rebuild" in capsys.readouterr().err
    assert tree_snapshot(str(base)) == before
    assert main(["index", str(base), "--rebuild"]) == 0
    run_write(str(base), pa.table({"id": [4], "p": ["a"], "v": [7]}), {"hoodie.datasource.write.operation": "upsert"})
    assert 4 in _ids(base)


def test_a_missing_output_of_a_completed_replacecommit_is_refused(tmp_path: Path) -> None:
    """The files a clustering or an overwrite wrote replace whole file groups; one deleted from storage lost
    its rows in silence (60 of 90 after a clustered file was deleted, session 19)."""
    base = _table(tmp_path)
    result = run_write(str(base), pa.table({"id": [500, 501], "p": ["a", "a"], "v": [1, 2]}),
                       {"hoodie.datasource.write.operation": "insert_overwrite"})
    (new,) = [s for s in HudiTable(str(base)).file_slices() if s.commit_time == result.instant_time]
    Path(new.base_file_path).unlink()
    with pytest.raises(CorruptFileError, match=f"{new.base_file_name}.*instant {result.instant_time}"):
        HudiTable(str(base)).file_slices()
    shutil.rmtree(base / "a")  # the whole partition folder gone
    with pytest.raises(CorruptFileError, match="missing"):
        hl.explain(str(base), "v > 3")


def test_a_missing_latest_base_file_of_an_ordinary_commit_is_refused(tmp_path: Path) -> None:
    """The newest base file of a file group deleted from storage: the view fell back to the group's previous
    slice, 4 rows with their old values (session 19); a file a clean deleted is not damage (time travel to
    it refuses with the clean's error, tested elsewhere)."""
    base = _table(tmp_path, metadata=False)
    newest = max(HudiTable(str(base)).file_slices(), key=lambda s: s.commit_time)
    Path(newest.base_file_path).unlink()
    with pytest.raises(CorruptFileError, match=f"{newest.base_file_name}.*is missing"):
        hl.explain(str(base), "v > 3")


def test_a_partition_folder_that_is_a_symbolic_link_is_refused_not_left_out(tmp_path: Path) -> None:
    """A partition moved to another disk and linked back: the listing walked past the link, and reads answered
    200 of 300 rows (path probe, session 32). Links inside a table are refused by name (writes through them were
    refused already); the base path itself may be a link."""
    from hudi_layout.errors import UnsupportedTableError
    from tests.helpers.live_tables import LiveTable

    t = LiveTable.create(tmp_path / "t")
    t.insert({"region=us": 2, "region=eu": 1})
    (tmp_path / "t" / "region=eu").rename(tmp_path / "other")
    (tmp_path / "t" / "region=eu").symlink_to(tmp_path / "other")
    with pytest.raises(UnsupportedTableError, match="'region=eu' .* is a symbolic link"):
        HudiTable(t.base).file_slices()
    (tmp_path / "t" / "region=eu").unlink()
    (tmp_path / "other").rename(tmp_path / "t" / "region=eu")
    (tmp_path / "link").symlink_to(tmp_path / "t")
    assert len(HudiTable(tmp_path / "link").file_slices()) == 3
