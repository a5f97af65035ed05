"""The compaction plan: Hudi's Avro form (round trip, and the plan Hudi 1.x wrote into a fixture table) and
which slices a plan takes."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from hudi_layout.compaction import PlanStrategy, select_operations
from hudi_layout.errors import CorruptFileError
from hudi_layout.format.compaction_plan import CompactionOperation, compaction_plan_bytes, decode_compaction_plan
from hudi_layout.options import CompactionPlanStrategy, parse_compaction_strategies
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
    ops = select_operations(slices, excluded={("p=1", "d")}).operations
    assert [op.file_id for op in ops] == ["c", "b"]
    assert ops[0].base_file is None and ops[0].log_files == (".c_002.log.1_0", ".c_003.log.1_0")
    assert ops[1].metrics["TOTAL_LOG_FILES"] == 1.0 and ops[1].metrics["TOTAL_LOG_FILES_SIZE"] == 10.0
    assert select_operations([slices[0]], set()).operations == ()


MB = 1024 * 1024


def _sized(fid: str, part: str, base_mb: float, logs: int, log_bytes: int) -> FileSlice:
    size = int(base_mb * MB)
    return FileSlice(partition_path=part, file_id=fid, base_file_name=f"{fid}_0_001.parquet" if size else "",
                     base_file_path=f"/t/{part}/{fid}_0_001.parquet", commit_time="001", size_bytes=size,
                     log_file_names=tuple(f".{fid}_00{k}.log.1_0" for k in range(2, 2 + logs)),
                     log_size_bytes=log_bytes)


SLICES = [_sized("a", "p=1", 10.5, 1, 300), _sized("b", "p=1", 20.9, 3, 100),
          _sized("c", "p=2", 0, 2, 2 * MB + 5), _sized("d", "p=3", 5.2, 5, 50)]


def _ids(strategy: PlanStrategy) -> list[str]:
    return [op.file_id for op in select_operations(SLICES, set(), strategy).operations]


def test_metrics_are_whole_megabytes_as_hudi_writes_them() -> None:
    """Hudi floors read and write MB separately (its v9 fixture plan: 0.0 MB for KB-sized slices); a slice
    without a base file is estimated to write hoodie.parquet.max.file.size."""
    ops = {op.file_id: op.metrics for op in select_operations(SLICES, set()).operations}
    assert ops["a"]["TOTAL_IO_READ_MB"] == 10 and ops["a"]["TOTAL_IO_WRITE_MB"] == 10
    assert ops["c"]["TOTAL_IO_READ_MB"] == 2 and ops["c"]["TOTAL_IO_WRITE_MB"] == 120
    assert ops["c"]["TOTAL_IO_MB"] == 122


def test_each_hudi_plan_strategy_takes_its_slices() -> None:
    assert _ids(PlanStrategy()) == ["c", "a", "b", "d"]  # largest logs first, unbounded in practice
    assert _ids(PlanStrategy(log_size_threshold=100)) == ["c", "a", "b"]  # >= the threshold, as Hudi's code
    num = (CompactionPlanStrategy.LOG_FILE_NUM,)
    assert _ids(PlanStrategy(chain=num)) == ["d", "b", "c", "a"]
    assert _ids(PlanStrategy(chain=num, log_num_threshold=3)) == ["d", "b"]
    # the IO bound takes slices while budget remains: the one that crosses it is still taken
    assert _ids(PlanStrategy(target_io_mb=100)) == ["c"]
    assert _ids(PlanStrategy(target_io_mb=123)) == ["c", "a"]
    assert _ids(PlanStrategy(chain=(CompactionPlanStrategy.BOUNDED_IO,), target_io_mb=50)) == ["a", "b"]
    assert _ids(PlanStrategy(chain=(CompactionPlanStrategy.UNBOUNDED,), target_io_mb=1)) == ["a", "b", "c", "d"]
    chained = PlanStrategy(chain=(CompactionPlanStrategy.LOG_FILE_NUM, CompactionPlanStrategy.LOG_FILE_SIZE),
                           log_num_threshold=2, log_size_threshold=100)
    assert _ids(chained) == ["c", "b"]


def test_left_out_partitions_are_recorded_for_hudis_incremental_planning() -> None:
    selection = select_operations(SLICES, set(), PlanStrategy(target_io_mb=123))
    assert selection.missing_partitions == ("p=1", "p=3")
    plan = compaction_plan_bytes(selection.operations, {}, selection.missing_partitions)
    from hudi_layout.format.commit_metadata import decode_avro_container

    assert decode_avro_container(plan, "plan")["missingSchedulePartitions"] == ["p=1", "p=3"]


@pytest.mark.parametrize(("text", "chain"), [
    ("org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy",
     (CompactionPlanStrategy.LOG_FILE_SIZE,)),
    (" logfilenumbasedcompactionstrategy , BoundedIOCompactionStrategy",
     (CompactionPlanStrategy.LOG_FILE_NUM, CompactionPlanStrategy.BOUNDED_IO)),
])
def test_strategy_names_are_hudis_class_names(text: str, chain: tuple[CompactionPlanStrategy, ...]) -> None:
    assert parse_compaction_strategies(text) == chain


@pytest.mark.parametrize("text", ["org.apache.hudi.table.action.compact.strategy.DayBasedCompactionStrategy",
                                  "BoundedPartitionAwareCompactionStrategy", "com.example.Mine", ""])
def test_strategies_we_do_not_implement_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="compaction strategy"):
        parse_compaction_strategies(text)
