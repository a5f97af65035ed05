"""The file-system view of Merge-on-Read tables: which log files make up the latest slice of a file group.

Hand-made tables (``tests/helpers/mor_builder.py``) are read through the view + :func:`merge_file_slice` and
compared with hudi-rs, which builds its own slices from the same files.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.mor_builder import Deletes, MorTable, Upserts, make_mor_table, row

DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"


def _table(tmp_path: Path, version: int, **kw: Any) -> MorTable:
    if version == 6:
        kw.setdefault("payload_class", DEFAULT_PAYLOAD)
    return make_mor_table(tmp_path / f"v{version}", version=version, **kw)


def _rows(table: Any, columns: list[str]) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in table.select(columns).to_pylist())


def _same_as_hudi_rs(t: MorTable, **kw: Any) -> list[tuple]:
    ours = _rows(t.read_ours(**kw), ["id", "ts", "name"])
    assert ours == _rows(t.read_hudi_rs(**kw), ["id", "ts", "name"])
    return ours


def _only_slice(t: MorTable, **kw: Any):
    (sl,) = HudiTable(t.base).file_slices(**kw)
    return sl


def test_log_files_are_ordered_by_version_number_not_by_name(tmp_path: Path) -> None:
    t = _table(tmp_path, 9)
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="v1")])]})
    first = t.base / c2.log_paths[0]
    # the same deltacommit rolled its log over to versions 2 and 10 (a log file per size limit)
    for version, name in ((2, "v2"), (10, "v10")):
        t2 = t.block_schema_text()
        from hudi_layout.format.log_blocks import encode_avro_data_block

        meta = {"_hoodie_commit_time": c2.instant, "_hoodie_commit_seqno": f"{c2.instant}_{version}",
                "_hoodie_record_key": "a", "_hoodie_partition_path": "", "_hoodie_file_name": fid}
        (first.parent / first.name.replace(".log.1_", f".log.{version}_")).write_bytes(
            encode_avro_data_block(c2.instant, t2, [{**meta, **row("a", 2, name=name)}]))
    sl = _only_slice(t)
    assert [n.split(".log.")[1] for n in sl.log_file_names] == ["1_0-0-0", "2_0-0-0", "10_0-0-0"]
    assert sl.log_size_bytes == sum((first.parent / n).stat().st_size for n in sl.log_file_names)
    # equal ordering values: the last write wins, and the last write is log.10
    assert _same_as_hudi_rs(t) == [("a", 2, "v10")]


def test_cdc_logs_are_not_data_logs(tmp_path: Path) -> None:
    t = _table(tmp_path, 9)
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 2)])]})
    log = t.base / c2.log_paths[0]
    shutil.copy(log, log.with_name(log.name + ".cdc"))
    assert _only_slice(t).log_file_names == (log.name,)


@pytest.mark.parametrize("version", [9, 8])
def test_logs_of_uncommitted_deltacommits_are_left_out(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    done = t.deltacommit(logs={fid: [Upserts([row("a", 2)])]})
    t.deltacommit(logs={fid: [Upserts([row("a", 3)])]}, complete=False)
    assert _only_slice(t).log_file_names == tuple(p.rsplit("/", 1)[-1] for p in done.log_paths)
    assert _same_as_hudi_rs(t) == [("a", 2, "a")]


@pytest.mark.parametrize("version", [9, 8, 6])
def test_log_only_file_groups(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version, partition_field="region",
               fields=(("id", "string"), ("ts", "long"), ("name", "string"), ("region", "string")))
    c1 = t.deltacommit(inserts={"region=us": [row("a", 1, region="us")]},
                       log_inserts={"region=eu": [row("x", 1, region="eu"), row("y", 1, region="eu")]})
    us, eu = c1.file_ids
    t.deltacommit(logs={eu: [Upserts([row("x", 5, name="x5", region="eu")]), Deletes(["y"])]})
    t.deltacommit(log_inserts={"region=eu": [row("z", 1, region="eu")]}, complete=False)  # never committed
    slices = HudiTable(t.base).file_slices()
    assert [(s.partition_path, s.file_id, s.has_base_file, len(s.log_file_names)) for s in slices] == [
        ("region=eu", eu, False, 1 if version == 6 else 2), ("region=us", us, True, 0)]
    log_only = slices[0]
    assert log_only.commit_time == c1.instant and log_only.base_file_path == "" and log_only.size_bytes == 0
    assert log_only.relative_path == f"region=eu/{log_only.log_file_names[0]}"
    assert _same_as_hudi_rs(t) == [("a", 1, "a"), ("x", 5, "x5")]


@pytest.mark.parametrize("version", [9, 6])
def test_completed_compaction_starts_a_new_slice(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    comp = t.compact(fid, [row("a", 2, name="a2"), row("b", 1)])
    after = t.deltacommit(logs={fid: [Upserts([row("b", 3, name="b3")])]})
    sl = _only_slice(t)
    assert sl.commit_time == comp.instant and sl.base_file_name.endswith(f"_{comp.instant}.parquet")
    assert sl.log_file_names == tuple(p.rsplit("/", 1)[-1] for p in after.log_paths)
    assert _same_as_hudi_rs(t) == [("a", 2, "a2"), ("b", 3, "b3")]


@pytest.mark.parametrize("version", [9, 6])
def test_slice_waiting_for_a_pending_compaction_is_merged_with_the_slice_before(tmp_path: Path,
                                                                                version: int) -> None:
    """Logs written after a compaction was scheduled (named after it in v6, completing after it in v8/v9)
    belong to the compaction's slice, which has no base file yet: readers merge them with the slice before
    (base file and logs), as Hudi's ``getLatestMergedFileSlicesBeforeOrOn`` does."""
    t = _table(tmp_path, version)
    c1 = t.deltacommit(inserts={"": [row("a", 1), row("b", 1), row("c", 1)]})
    fid = c1.file_ids[0]
    before = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    comp = t.schedule_compaction([fid])
    after = t.deltacommit(logs={fid: [Upserts([row("b", 3, name="b3")]), Deletes(["c"])]})
    sl = _only_slice(t)
    names = [p.rsplit("/", 1)[-1] for p in (*before.log_paths, *after.log_paths)]
    assert sl.commit_time == c1.instant and sl.base_file_name.endswith(f"_{c1.instant}.parquet")
    assert list(sl.log_file_names) == names
    if version == 6:
        assert names[1].startswith(f".{fid}_{comp}.log.")
    expected = [("a", 2, "a2"), ("b", 3, "b3")]
    assert _rows(t.read_ours(), ["id", "ts", "name"]) == expected
    # hudi-rs 0.5 agrees on v8/v9; on v6 it leaves out the logs named after the pending compaction (their
    # update and delete are lost until the compaction completes), where Hudi merges them
    if version >= 8:
        assert _same_as_hudi_rs(t) == expected
    else:
        assert _rows(t.read_hudi_rs(), ["id", "ts", "name"]) == [("a", 2, "a2"), ("b", 1, "b"), ("c", 1, "c")]
    # once the compaction completes (its base holds what was merged before it), the old logs drop out
    t.finish_compaction(comp, {fid: [row("a", 2, name="a2"), row("b", 1), row("c", 1)]})
    sl = _only_slice(t)
    assert sl.commit_time == comp and list(sl.log_file_names) == names[1:]
    assert _same_as_hudi_rs(t) == expected


def test_v6_pending_compaction_of_another_file_group_changes_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path, 6)
    c1 = t.deltacommit(inserts={"": [row("a", 1)]})
    c2 = t.deltacommit(inserts={"": [row("b", 1)]})
    a, b = c1.file_ids[0], c2.file_ids[0]
    t.schedule_compaction([a])
    t.deltacommit(logs={b: [Upserts([row("b", 2, name="b2")])]})  # still named after b's base instant
    slices = {s.file_id: s for s in HudiTable(t.base).file_slices()}
    assert slices[b].log_file_names and all(f"_{c2.instant}.log." in n for n in slices[b].log_file_names)
    assert _same_as_hudi_rs(t) == [("a", 1, "a"), ("b", 2, "b2")]


def test_time_travel_before_a_compaction_reads_the_old_slice(tmp_path: Path) -> None:
    t = _table(tmp_path, 9)
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    t.compact(fid, [row("a", 2, name="a2")])
    t.deltacommit(logs={fid: [Upserts([row("a", 3, name="a3")])]})
    sl = _only_slice(t, as_of=c2.completion)
    assert sl.log_file_names == (c2.log_paths[0],)
    assert _same_as_hudi_rs(t, as_of=c2.completion) == [("a", 2, "a2")]
    assert _same_as_hudi_rs(t) == [("a", 3, "a3")]


def test_unreadable_pending_compaction_plan_counts_for_every_file_group(tmp_path: Path) -> None:
    """A v6 pending compaction whose plan cannot be read: logs named after it are still merged (a compaction
    the view cannot see into may cover any file group)."""
    t = _table(tmp_path, 6)
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    comp = t.schedule_compaction([fid])
    (t.timeline / f"{comp}.compaction.requested").write_bytes(b"")
    t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    assert HudiTable(t.base).fs_view.pending_compaction_file_groups() is None
    assert _rows(t.read_ours(), ["id", "ts", "name"]) == [("a", 2, "a2")]


def test_pending_compaction_of_names_each_groups_plan(tmp_path: Path) -> None:
    """Which pending compaction holds a file group (what a write checks before it appends there); an
    unreadable plan is taken to hold every group no readable plan names."""
    t = _table(tmp_path, 9)
    a = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    b = t.deltacommit(inserts={"": [row("b", 1)]}).file_ids[0]
    c = t.deltacommit(inserts={"": [row("c", 1)]}).file_ids[0]
    first = t.schedule_compaction([a])
    of = HudiTable(t.base).fs_view.pending_compaction_of()
    assert (of(("", a)), of(("", b))) == (first, "")
    broken = t.schedule_compaction([b])
    (t.timeline / f"{broken}.compaction.requested").write_bytes(b"")
    of = HudiTable(t.base).fs_view.pending_compaction_of()
    assert (of(("", a)), of(("", b)), of(("", c))) == (first, broken, broken)
