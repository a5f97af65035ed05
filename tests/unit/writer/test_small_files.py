"""Small-file packing plans (hudi_layout.writer.small_files), without Spark or files: which slices are small,
how many new records each takes, the record-size estimate; and a property test that a plan never assigns
more records than there are, nor more than a file's room."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hudi_layout.table.fs_view import FileSlice
from hudi_layout.writer.small_files import (
    DEFAULT_RECORD_SIZE,
    average_record_size,
    plan_packing,
    small_file_groups,
)

T = "20260101000000000"


def sl(part: str, fid: str, size: int, *, logs: tuple[str, ...] = (), base: bool = True) -> FileSlice:
    name = f"{fid}_0-1-0_{T}.parquet" if base else ""
    return FileSlice(partition_path=part, file_id=fid, base_file_name=name, base_file_path=f"/t/{part}/{name}",
                     commit_time=T, size_bytes=size, log_file_names=logs)


def test_small_slices_exclude_big_logged_baseless_and_excluded_groups_smallest_first() -> None:
    slices = [sl("a", "big", 500), sl("a", "f2", 300), sl("a", "f1", 100), sl("a", "logs", 50, logs=(".f.log",)),
              sl("a", "nobase", 0, base=False), sl("a", "held", 10), sl("b", "g", 200)]
    small = small_file_groups(slices, 400, excluded={("a", "held")})
    assert [s.file_id for s in small["a"]] == ["f1", "f2"]
    assert [s.file_id for s in small["b"]] == ["g"]
    assert small_file_groups(slices, 0) == {}


def test_plan_fills_each_file_to_its_room_then_leaves_the_rest() -> None:
    small = {"a": [sl("a", "f1", 100), sl("a", "f2", 600)], "b": [sl("b", "g", 900)]}
    plan = plan_packing({"a": 100, "b": 5, "c": 7}, small, max_file_size=1000, record_size=10)
    assert [(t.slice.file_id, t.records) for t in plan["a"]] == [("f1", 90), ("f2", 10)]
    assert [(t.slice.file_id, t.records) for t in plan["b"]] == [("g", 5)]
    assert "c" not in plan
    # a file at (or over) the max size takes nothing
    assert plan_packing({"a": 3}, {"a": [sl("a", "full", 1000)]}, 1000, 10) == {}


def test_record_size_is_the_newest_base_file_commits_else_hudis_default() -> None:
    def meta(*stats):
        return {"partitionToWriteStats": {"a": [{"path": p, "fileSizeInBytes": b, "numWrites": n}
                                                for p, b, n in stats]}}

    logs_only = meta(("a/.f_1.log.1_0-1-0", 999, 1))
    newest = meta(("a/f_0-1-0_1.parquet", 3000, 10), ("a/g_0-1-0_1.parquet", 1000, 10))
    older = meta(("a/f_0-1-0_0.parquet", 100, 100))
    assert average_record_size([logs_only, newest, older]) == 200.0
    assert average_record_size([logs_only, {}]) == DEFAULT_RECORD_SIZE


@given(st.dictionaries(st.sampled_from("abc"), st.integers(0, 500)),
       st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 1200)), max_size=8),
       st.integers(1, 50))
def test_a_plan_never_assigns_more_than_there_is_or_than_fits(inserts, files, record_size) -> None:
    slices = [sl(p, f"f{i}", size) for i, (p, size) in enumerate(files)]
    small = small_file_groups(slices, 1000)
    plan = plan_packing(inserts, small, max_file_size=1000, record_size=record_size)
    for part, targets in plan.items():
        assert sum(t.records for t in targets) <= inserts[part]
        for t in targets:
            assert 0 < t.records and t.slice.size_bytes + t.records * record_size <= 1000
        assert len({t.slice.file_id for t in targets}) == len(targets)
