"""The compaction plan: Hudi's Avro form (round trip, and the plan Hudi 1.x wrote into a fixture table) and
which slices a plan takes."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from hudi_layout.compaction import select_operations
from hudi_layout.errors import CorruptFileError
from hudi_layout.format.compaction_plan import CompactionOperation, compaction_plan_bytes, decode_compaction_plan
from hudi_layout.table.fs_view import FileSlice


def _slice(fid: str, base: str = "", logs: tuple[str, ...] = (), log_size: int = 0, part: str = "p=1") -> FileSlice:
    return FileSlice(partition_path=part, file_id=fid, base_file_name=base, base_file_path=f"/t/{part}/{base}",
                     commit_time="001", size_bytes=100 if base else 0, log_file_names=logs, log_size_bytes=log_size)


def test_a_plan_round_trips_through_hudis_avro_form() -> None:
    ops = (CompactionOperation("p=1", "f1", "001", "f1_0-1-2_001.parquet", (".f1_002.log.1_0-1-1",),
                               {"TOTAL_LOG_FILES": 1.0}),
           CompactionOperation("", "f2", "003", None, (".f2_003.log.1_0-1-1", ".f2_004.log.1_0-1-1")))
    assert decode_compaction_plan(compaction_plan_bytes(ops), "plan") == ops


def test_an_empty_or_damaged_plan_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="no operations"):
        decode_compaction_plan(b"", "x.compaction.requested")
    with pytest.raises(CorruptFileError):
        decode_compaction_plan(b"Obj\x01garbage", "x.compaction.requested")


def test_the_plan_hudi_wrote_reads(shared_dir: Path) -> None:
    """The v9 Merge-on-Read fixture holds a compaction Hudi 1.x scheduled and completed."""
    z = shared_dir / "fixtures" / "hudi-tables" / "mor_avro_v9_txns_simple_meta.zip"
    if not z.exists():
        pytest.skip(f"{z} not found")
    with zipfile.ZipFile(z) as zf:
        data = zf.read("v9_txns_simple_meta/.hoodie/timeline/20260307162618152.compaction.requested")
    ops = decode_compaction_plan(data, "fixture plan")
    assert [(op.partition_path, op.base_instant, len(op.log_files)) for op in ops] == [
        ("region=us", "20260307162557587", 2), ("region=apac", "20260307162557587", 1)]
    assert ops[0].base_file == "3e93c8a9-fda0-4e8a-91dc-b4ade7dab76d-0_1-27-53_20260307162557587.parquet"
    assert ops[0].metrics["TOTAL_LOG_FILES_SIZE"] == 3855.0
    # and ours encodes what it decoded back to the same operations
    assert decode_compaction_plan(compaction_plan_bytes(ops), "again") == ops


def test_slices_with_log_files_are_planned_largest_logs_first() -> None:
    slices = [_slice("a", "a_0_001.parquet"),
              _slice("b", "b_0_001.parquet", (".b_002.log.1_0",), 10),
              _slice("c", "", (".c_002.log.1_0", ".c_003.log.1_0"), 50),
              _slice("d", "d_0_001.parquet", (".d_002.log.1_0",), 30)]
    ops = select_operations(slices, excluded={("p=1", "d")})
    assert [op.file_id for op in ops] == ["c", "b"]
    assert ops[0].base_file is None and ops[0].log_files == (".c_002.log.1_0", ".c_003.log.1_0")
    assert ops[1].metrics["TOTAL_LOG_FILES"] == 1.0 and ops[1].metrics["TOTAL_LOG_FILES_SIZE"] == 10.0
    assert select_operations([slices[0]], set()) == ()
