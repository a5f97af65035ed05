"""The broadcast merge of a small upsert / delete batch (``hudi_layout.writer.merge.merge_broadcast``), without
Spark: which files it rewrites, what it reports found, and that it agrees with the per-file merge."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_layout.format.merge_config import MergeMode
from hudi_layout.writer.base_file_writer import TaskIdentity, WriteSpec, write_partition
from hudi_layout.writer.merge import (
    DELETE_FLAG_COLUMN,
    SEQUENCE_COLUMN,
    MergeRules,
    MergeTarget,
    combine_records,
    key_lookup,
    merge_broadcast,
)

T0 = "20260101000000000"
T1 = "20260102000000000"
COMMIT = MergeRules(MergeMode.COMMIT_TIME_ORDERING)
EVENT = MergeRules(MergeMode.EVENT_TIME_ORDERING, ("ts",))


def _spec(base, instant: str) -> WriteSpec:
    return WriteSpec(base_path=str(base), instant_time=instant, data_columns=("id", "ts", "v"),
                     stats_columns=("id", "ts", "v"), max_rows_per_file=4)


def _rows(ids, part, ts=0, v="old") -> pa.Table:
    n = len(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "ts": pa.array([ts] * n, pa.int64()),
                     "v": pa.array([v] * n, pa.string()),
                     "_hoodie_record_key": pa.array([str(i) for i in ids], pa.string()),
                     "_hoodie_partition_path": pa.array([part] * n, pa.string())})


@pytest.fixture()
def table_files(tmp_path) -> list[MergeTarget]:
    """Two partitions, files of at most 4 rows: p=a ids 0..9, p=b ids 100..105."""
    spec = _spec(tmp_path, T0)
    out = []
    for part, ids in (("a", range(10)), ("b", range(100, 106))):
        for batch in write_partition(spec, iter(_rows(list(ids), part).to_batches()), TaskIdentity()):
            for r in batch.to_pylist():
                path = str(tmp_path / part / r["file_name"])
                out.append(MergeTarget(part, r["file_id"], r["file_name"], path, T0))
    return out


def _batch(records: list[tuple[int, str, int, str, bool]]) -> pa.Table:
    """(id, partition, ts, v, delete) records, combined as the driver does."""
    t = pa.table({"id": pa.array([r[0] for r in records], pa.int64()),
                  "ts": pa.array([r[2] for r in records], pa.int64()),
                  "v": pa.array([r[3] for r in records], pa.string()),
                  "_hoodie_record_key": pa.array([str(r[0]) for r in records], pa.string()),
                  "_hoodie_partition_path": pa.array([r[1] for r in records], pa.string()),
                  DELETE_FLAG_COLUMN: pa.array([r[4] for r in records], pa.bool_()),
                  SEQUENCE_COLUMN: pa.array(np.arange(len(records)), pa.int64())})
    return combine_records(t, COMMIT)


def _read(path: str) -> dict[int, str]:
    t = pq.read_table(path, columns=["id", "v"])
    return dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


@pytest.mark.parametrize("chunk_rows", [1, 5, 1_000_000], ids=["file_by_file", "chunks", "one_lookup"])
def test_only_files_holding_a_key_are_rewritten_and_found_keys_are_reported(tmp_path, table_files,
                                                                           chunk_rows) -> None:
    batch = _batch([(1, "a", 0, "new", False), (9, "a", 0, "new", False), (101, "b", 0, "new", False),
                    (5, "b", 0, "no such key in b", False), (500, "a", 0, "brand new", False)])
    result = merge_broadcast(_spec(tmp_path, T1), table_files, batch, COMMIT, chunk_rows=chunk_rows)
    keys = batch.column("_hoodie_record_key").to_pylist()
    parts = batch.column("_hoodie_partition_path").to_pylist()
    assert sorted((parts[i], keys[i]) for i in result.found) == [("a", "1"), ("a", "9"), ("b", "101")]
    rewritten = {(r["partition_path"], r["file_id"]) for r in result.written}
    holding = {(t.partition_path, t.file_id) for t in table_files
               if {1, 9, 101} & set(_read(t.base_file_path))}
    assert rewritten == holding and len(rewritten) == 3
    for r in result.written:
        got = _read(str(tmp_path / r["partition_path"] / r["file_name"]))
        assert all(v == ("new" if k in (1, 9, 101) else "old") for k, v in got.items())
        assert r["num_updates"] == sum(k in (1, 9, 101) for k in got) and r["prev_commit"] == T0
    assert result.sequence_numbers_used == 3


def test_deletes_and_losing_records_count_as_found(tmp_path, table_files) -> None:
    batch = _batch([(2, "a", 0, "x", True), (3, "a", -1, "older", False), (104, "b", 5, "newer", False)])
    result = merge_broadcast(_spec(tmp_path, T1), table_files, batch, EVENT)
    assert len(result.found) == 3  # the stale record for 3 is found (not a new key) but loses
    merged = {}
    for r in result.written:
        merged.update(_read(str(tmp_path / r["partition_path"] / r["file_name"])))
    assert 2 not in merged and merged[104] == "newer"
    assert sum(r["num_deletes"] for r in result.written) == 1
    assert sum(r["num_updates"] for r in result.written) == 1


def test_no_targets_or_no_batch_rows_write_nothing(tmp_path, table_files) -> None:
    spec = _spec(tmp_path, T1)
    empty = _batch([(1, "a", 0, "x", False)]).slice(0, 0)
    assert merge_broadcast(spec, table_files, empty, COMMIT).written == []
    result = merge_broadcast(spec, [], _batch([(1, "a", 0, "x", False)]), COMMIT)
    assert result.written == [] and len(result.found) == 0


def test_the_new_slice_does_not_carry_the_old_footer_metadata(tmp_path, table_files) -> None:
    """A Java writer's bloom filter (or the old key range) describes the old file, not the new slice."""
    first = next(t for t in table_files if t.partition_path == "a" and 0 in _read(t.base_file_path))
    stored = pq.read_table(first.base_file_path)
    pq.write_table(stored.replace_schema_metadata({"org.apache.hudi.bloomfilter": "stale",
                                                   "hoodie_min_record_key": "0"}), first.base_file_path)
    batch = _batch([(0, "a", 0, "new", True)])  # delete the smallest key of the file
    result = merge_broadcast(_spec(tmp_path, T1), [first], batch, COMMIT)
    (row,) = result.written
    meta = pq.ParquetFile(str(tmp_path / "a" / row["file_name"])).metadata.metadata
    assert b"org.apache.hudi.bloomfilter" not in meta
    assert meta[b"hoodie_min_record_key"] == b"1"


@pytest.mark.parametrize("chunk_rows", [1, 3, 1_000_000])
def test_key_lookup_reports_each_holding_item_whatever_the_chunk(chunk_rows) -> None:
    """The one lookup loop of both tagging paths: per item holding a key, its keys, the hit rows and each hit's
    position in the looked-up set; items without a hit are left out."""
    stored = {"f1": ["a", "b", "c"], "f2": ["x", "y"], "f3": ["c", "z"]}
    lookup = pc.SetLookupOptions(pa.array(["z", "c", "q"]))
    got = [(item, keys.to_pylist(), rows.tolist(), at.tolist()) for item, keys, rows, at in
           key_lookup(list(stored), lambda f: pa.array(stored[f]), lookup, chunk_rows)]
    assert got == [("f1", ["a", "b", "c"], [2], [1]), ("f3", ["c", "z"], [0, 1], [1, 0])]


@pytest.mark.parametrize("chunk_rows", [1, 1_000_000])
def test_a_key_stored_twice_has_every_copy_updated_by_the_broadcast_merge(tmp_path, chunk_rows) -> None:
    """The merge takes each stored row's record from the key lookup (no second hash per file): a key a plain
    insert stored twice in one file, and keys in any stored order, still get their own record everywhere."""
    spec = _spec(tmp_path, T0)
    stored = _rows([7, 3, 7, 5], "a")
    (meta,) = [r for b in write_partition(spec, iter(stored.to_batches()), TaskIdentity()) for r in b.to_pylist()]
    target = MergeTarget("a", meta["file_id"], meta["file_name"], str(tmp_path / "a" / meta["file_name"]), T0)
    batch = _batch([(5, "a", 0, "five", False), (7, "a", 0, "seven", False), (9, "a", 0, "absent", False)])
    result = merge_broadcast(_spec(tmp_path, T1), [target], batch, COMMIT, chunk_rows=chunk_rows)
    (row,) = result.written
    t = pq.read_table(str(tmp_path / "a" / row["file_name"]), columns=["id", "v"])
    assert list(zip(t.column("id").to_pylist(), t.column("v").to_pylist())) == \
        [(7, "seven"), (3, "old"), (7, "seven"), (5, "five")]
    assert row["num_updates"] == 3 and len(result.found) == 2


def test_a_key_stored_in_two_file_groups_of_one_task_updates_both(tmp_path) -> None:
    """The shuffle path: a key stored in two file groups (plain inserts allow it) reaches the task once per group
    (the tagging join), all of its records with each; both groups take the winner. Before, the task combined the
    records across groups and only one group was rewritten (the other kept the old value)."""
    from hudi_layout.writer.merge import MERGE_TARGET_COLUMN, merge_partition

    spec = _spec(tmp_path, T0)
    targets = {}
    for i in range(2):
        for b in write_partition(spec, iter(_rows([7, 10 + i], "a").to_batches()), TaskIdentity(i)):
            for r in b.to_pylist():
                targets[r["file_name"]] = MergeTarget("a", r["file_id"], r["file_name"],
                                                      str(tmp_path / "a" / r["file_name"]), T0)
    assert len(targets) == 2
    records = pa.table({"id": pa.array([7, 7], pa.int64()), "ts": pa.array([1, 2], pa.int64()),
                        "v": pa.array(["first", "second"]), "_hoodie_record_key": pa.array(["7", "7"]),
                        "_hoodie_partition_path": pa.array(["a", "a"]), DELETE_FLAG_COLUMN: pa.array([False, False]),
                        SEQUENCE_COLUMN: pa.array([0, 1], pa.int64())})
    routed = pa.concat_tables([records.append_column(MERGE_TARGET_COLUMN, pa.array([name] * 2))
                               for name in targets])
    out = list(merge_partition(_spec(tmp_path, T1), iter(routed.to_batches()), targets, COMMIT))
    written = [r for b in out for r in b.to_pylist()]
    assert len(written) == 2, written
    for r in written:
        assert _read(str(tmp_path / "a" / r["file_name"]))[7] == "second"
