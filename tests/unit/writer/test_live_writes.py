"""Upsert, delete, insert_overwrite and delete_partition through the write transaction, without Spark
(tests/helpers/live_ops.py runs the executor code in-process): rows read back by hudi-rs, commit metadata,
exact column_stats for the new slices, conflicts with pending clustering and concurrent writers, and options
that are refused before anything changes on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_layout.clustering.schedule import schedule_clustering
from hudi_layout.errors import CommitConflictError, InvalidArgumentError, NotAHudiTableError, UnsupportedTableError
from hudi_layout.format.commit_metadata import decode_commit_metadata
from hudi_layout.format.properties import load_properties
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.writer.transaction import WriteSession
from tests.helpers.integration import base_files_on_disk, hudi_rs_read, timeline_files, tree_snapshot
from tests.helpers.live_ops import _merge, combine, keyed, run_write

OPTS = {"hoodie.table.name": "live", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.parquet.max.file.size": "3000"}
UPSERT = {"hoodie.datasource.write.operation": "upsert"}
DELETE = {"hoodie.datasource.write.operation": "delete"}


def rows(ids, *, ts=1, name="n", p=None) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"{name}{i}" for i in ids], pa.string()),
                     "ts": pa.array([ts] * len(ids), pa.int64()),
                     "p": pa.array([p or ["a", "b"][i % 2] for i in ids], pa.string())})


def snapshot(path) -> dict[int, dict]:
    t = hudi_rs_read(path)
    got = t.to_pylist()
    out = {r["id"]: r for r in got}
    assert len(out) == len(got), "a key is read twice"
    return out


def commit_meta(path, instant) -> dict:
    tdir = Path(path) / ".hoodie" / "timeline"
    (f,) = [p for p in tdir.iterdir() if p.name.startswith(instant) and p.name.endswith(("commit", "replacecommit"))
            and "_" in p.name.split(".")[0]]
    return decode_commit_metadata(f.read_bytes())


@pytest.fixture()
def table(tmp_path) -> str:
    path = str(tmp_path / "t")
    run_write(path, rows(range(40)), OPTS)
    return path


def test_new_table_records_ordering_field_and_event_time(tmp_path) -> None:
    v9 = str(tmp_path / "v9")
    run_write(v9, rows(range(3)), {**OPTS, **UPSERT})
    props = load_properties(Path(v9) / ".hoodie")
    assert props["hoodie.table.ordering.fields"] == "ts"
    assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert "hoodie.table.precombine.field" not in props
    v8 = str(tmp_path / "v8")
    run_write(v8, rows(range(3)), {**OPTS, "hoodie.table.version": "8"})
    props8 = load_properties(Path(v8) / ".hoodie")
    assert props8["hoodie.table.precombine.field"] == "ts"
    assert props8["hoodie.record.merge.strategy.id"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    assert props8["hoodie.compaction.payload.class"].endswith("DefaultHoodieRecordPayload")
    run_write(v8, pa.concat_tables([rows([1], ts=0, name="stale"), rows([2], ts=3, name="new")]), UPSERT)
    assert {k: v["name"] for k, v in snapshot(v8).items()} == {0: "n0", 1: "n1", 2: "new2"}
    plain = str(tmp_path / "plain")
    run_write(plain, rows(range(3)), {k: v for k, v in OPTS.items() if "precombine" not in k})
    assert load_properties(Path(plain) / ".hoodie")["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"


def test_upsert_updates_in_place_inserts_new_keys_and_records_write_stats(table) -> None:
    before = {s.file_group: s for s in HudiTable(table).file_slices()}
    batch = pa.concat_tables([rows([1, 2], ts=5, name="u"), rows([2], ts=7, name="v"), rows([100], name="new")])
    result = run_write(table, batch, UPSERT)
    got = snapshot(table)
    assert len(got) == 41
    assert got[1]["name"] == "u1" and got[2]["name"] == "v2" and got[100]["name"] == "new100"
    assert got[3]["name"] == "n3" and got[3]["_hoodie_commit_time"] != result.instant_time
    assert got[1]["_hoodie_commit_time"] == result.instant_time
    assert (result.records_updated, result.records_inserted, result.file_groups_rewritten) == (2, 1, 2)
    meta = commit_meta(table, result.instant_time)
    assert meta["operationType"] == "UPSERT"
    stats = [s for ss in meta["partitionToWriteStats"].values() for s in ss]
    merged = [s for s in stats if s["prevCommit"] != "null"]
    assert len(merged) == 2 and all(s["numUpdateWrites"] == 1 and s["numInserts"] == 0 for s in merged)
    for s in merged:
        old = before[(s["partitionPath"], s["fileId"])]
        assert s["prevCommit"] == old.commit_time and s["prevBaseFile"] == old.base_file_name
        assert s["numWrites"] == pq.ParquetFile(Path(table) / s["path"]).metadata.num_rows
    (new,) = [s for s in stats if s["prevCommit"] == "null"]
    assert new["numInserts"] == 1
    # the rewritten slice keeps the file id and the rows' order
    for s in merged:
        old = before[(s["partitionPath"], s["fileId"])]
        old_keys = pq.read_table(old.base_file_path, columns=["_hoodie_record_key"]).column(0).to_pylist()
        new_keys = pq.read_table(Path(table) / s["path"], columns=["_hoodie_record_key"]).column(0).to_pylist()
        assert new_keys == old_keys


def test_new_slices_get_exact_column_stats_in_the_same_commit(table) -> None:
    result = run_write(table, rows([4, 6], ts=9, name="zz"), UPSERT)
    live = {s.base_file_name: s for s in HudiTable(table).file_slices()}
    stats = ColumnStatsIndex(table).load_column("name")
    by_file = {f: (lo, hi) for f, lo, hi in zip(stats.column("file_name").to_pylist(),
                                                stats.column("min").to_pylist(), stats.column("max").to_pylist())}
    rewritten = [n for n in live if result.instant_time in n]
    assert rewritten
    for name in live:
        values = pq.read_table(live[name].base_file_path, columns=["name"]).column(0).to_pylist()
        assert by_file[name] == (min(values), max(values))


def test_event_time_keeps_newer_stored_rows_and_soft_deletes_follow_the_ordering(tmp_path) -> None:
    path = str(tmp_path / "t")
    data = rows(range(6), ts=5).append_column("_hoodie_is_deleted", pa.array([False] * 6))
    run_write(path, data, OPTS)
    older = rows([0, 1], ts=4, name="old").append_column("_hoodie_is_deleted", pa.array([False, True]))
    newer = rows([2, 3], ts=6, name="new").append_column("_hoodie_is_deleted", pa.array([False, True]))
    result = run_write(path, pa.concat_tables([older, newer]), UPSERT)
    got = snapshot(path)
    assert sorted(got) == [0, 1, 2, 4, 5]
    assert got[0]["name"] == "n0" and got[1]["name"] == "n1" and got[2]["name"] == "new2"
    assert (result.records_updated, result.records_deleted) == (1, 1)


def test_delete_takes_keys_only_keeps_the_schema_and_may_empty_a_file_group(table) -> None:
    slices = HudiTable(table).file_slices()
    victim = slices[0]
    victim_ids = [int(k) for k in pq.read_table(victim.base_file_path, columns=["_hoodie_record_key"])
                  .column(0).to_pylist()]
    keys = pa.table({"id": pa.array([*victim_ids, 999], pa.int64()),
                     "p": [victim.partition_path] * (len(victim_ids) + 1)})
    result = run_write(table, keys, DELETE)
    assert result.records_deleted == len(victim_ids)
    got = snapshot(table)
    assert len(got) == 40 - len(victim_ids) and not set(victim_ids) & set(got)
    meta = commit_meta(table, result.instant_time)
    assert meta["operationType"] == "DELETE"
    assert [f["name"] for f in json.loads(meta["extraMetadata"]["schema"])["fields"]] == ["id", "name", "ts", "p"]
    (empty,) = [s for s in HudiTable(table).file_slices() if s.file_id == victim.file_id]
    assert pq.ParquetFile(empty.base_file_path).metadata.num_rows == 0


def test_insert_overwrite_replaces_only_the_partitions_present(table) -> None:
    before = {s.file_id for s in HudiTable(table).file_slices() if s.partition_path == "a"}
    result = run_write(table, rows([1000, 1002], p="a", name="o"), {"hoodie.datasource.write.operation":
                                                                     "insert_overwrite"})
    got = snapshot(table)
    assert sorted(i for i in got if got[i]["p"] == "a") == [1000, 1002]
    assert len([i for i in got if got[i]["p"] == "b"]) == 20
    meta = commit_meta(table, result.instant_time)
    assert meta["operationType"] == "INSERT_OVERWRITE"
    assert set(meta["partitionToReplaceFileIds"]) == {"a"} and set(meta["partitionToReplaceFileIds"]["a"]) == before
    assert any(n.endswith(".replacecommit") and n.startswith(result.instant_time) for n in timeline_files(table))


def marked(table: pa.Table, flags) -> pa.Table:
    return table.append_column("_hoodie_is_deleted", pa.array(list(flags), pa.bool_()))


def test_insert_overwrite_empties_a_partition_whose_rows_are_all_delete_markers(tmp_path) -> None:
    """Hudi's create handle counts a delete-marked record as a delete and writes nothing for it, but the handle
    still writes its (empty) file and reports the partition, so insert_overwrite replaces that partition: it
    ends empty. Before session 19 we wrote no file there and the partition kept its old rows."""
    path = str(tmp_path / "t")
    run_write(path, marked(rows(range(20)), [False] * 20), OPTS)
    incoming = pa.concat_tables([marked(rows([100, 102], p="a"), [True, True]),
                                 marked(rows([101, 103, 105], p="b"), [False, True, False])])
    result = run_write(path, incoming, {"hoodie.datasource.write.operation": "insert_overwrite"})
    got = snapshot(path)
    assert sorted(got) == [101, 105]  # a: replaced by nothing; b: replaced by its unmarked rows
    meta = commit_meta(path, result.instant_time)
    assert set(meta["partitionToReplaceFileIds"]) == {"a", "b"}
    stats = {p: s for p, ss in meta["partitionToWriteStats"].items() for s in ss}
    assert (stats["a"]["numWrites"], stats["a"]["numDeletes"]) == (0, 2)
    assert (stats["b"]["numWrites"], stats["b"]["numDeletes"]) == (2, 1)
    assert result.records_deleted == 3
    (empty,) = [s for s in HudiTable(path).file_slices() if s.partition_path == "a"]
    assert pq.ParquetFile(empty.base_file_path).metadata.num_rows == 0
    stats_a = ColumnStatsIndex(path).load_column("name", ["a"]).to_pylist()
    assert [(r["file_name"], r["value_count"], r["min"], r["max"]) for r in stats_a] == \
        [(empty.base_file_name, 0, None, None)]  # indexed, and no row of it can match anything
    # a plain insert of marked rows only writes nothing (no file group is needed for answers)
    insert = run_write(path, marked(rows([200], p="c"), [True]), {"hoodie.datasource.write.operation": "insert"})
    assert sorted(snapshot(path)) == [101, 105]
    assert "c" not in {s.partition_path for s in HudiTable(path).file_slices()}
    assert insert.records_deleted == 0
    # the emptied partition takes new rows again
    run_write(path, marked(rows([300], p="a"), [False]), UPSERT)
    assert sorted(snapshot(path)) == [101, 105, 300]


def test_delete_partition_by_name_wildcard_or_rows_and_unknown_names_refused(table, tmp_path) -> None:
    empty = rows([])
    run_write(table, empty, {"hoodie.datasource.write.operation": "delete_partition",
                             "hoodie.datasource.write.partitions.to.delete": "a"})
    assert {r["p"] for r in snapshot(table).values()} == {"b"}
    run_write(table, empty, {"hoodie.datasource.write.operation": "delete_partition",
                             "hoodie.datasource.write.partitions.to.delete": "*"})
    assert hudi_rs_read(table).num_rows == 0
    other = str(tmp_path / "o")
    run_write(other, rows(range(10)), OPTS)
    run_write(other, rows([1]), {"hoodie.datasource.write.operation": "delete_partition"}, partitions_in_data=["b"])
    assert {r["p"] for r in snapshot(other).values()} == {"a"}
    before = tree_snapshot(other)
    with pytest.raises(InvalidArgumentError, match="matches no partition"):
        run_write(other, empty, {"hoodie.datasource.write.operation": "delete_partition",
                                 "hoodie.datasource.write.partitions.to.delete": "zz"})
    assert tree_snapshot(other) == before


def test_upsert_into_a_file_group_under_pending_clustering_is_rejected_before_writing(table) -> None:
    scheduled = schedule_clustering(table, {"hoodie.clustering.plan.strategy.partition.selected": "a"},
                                    columns=["name"], include_all_files=True)
    assert scheduled is not None
    plan_time, _plan = scheduled
    files_before = base_files_on_disk(table)
    with pytest.raises(CommitConflictError, match=f"pending clustering {plan_time}") as err:
        run_write(table, rows([2], ts=9), UPSERT)  # id 2 lives in partition a
    assert "hudi-layout cluster" in (err.value.hint or "") and "--abandon-pending" in (err.value.hint or "")
    assert base_files_on_disk(table) == files_before
    run_write(table, rows([3], ts=9, name="ok"), UPSERT)  # partition b is not being clustered
    assert snapshot(table)[3]["name"] == "ok3"


def _started_upsert(path, batch):
    session = WriteSession.start(path, UPSERT, batch.schema, False)
    written, tagged = _merge(session, keyed(session, batch))
    return session, written, tagged


def test_a_concurrent_update_of_the_same_file_group_makes_the_later_commit_fail(table) -> None:
    session, written, tagged = _started_upsert(table, rows([2], ts=9, name="first"))
    run_write(table, rows([2], ts=8, name="second"), UPSERT)  # commits first
    with pytest.raises(CommitConflictError, match="got a new slice"):
        session.commit(written, tagged=tagged)
    session.abort()
    assert snapshot(table)[2]["name"] == "second2"
    assert not any(session.pending.instant_time in f for f in base_files_on_disk(table))


def test_a_write_that_read_a_newer_slice_than_its_own_instant_fails(table) -> None:
    """Upsert A starts (its instant is taken), upsert B starts later, finishes first, and only then A reads the
    file group: A merges B's slice, which is still the latest at A's commit, so the slice check passes. But
    A's new slice is named after A's earlier instant, and readers take the slice with the latest instant: B's
    slice would stay the latest and A's update would vanish (found by a probe of threads writing one table in
    session 13: an upsert and a delete lost, read back identically by hl.read and hudi-rs). A must fail."""
    batch = rows([2], ts=9, name="first")
    session = WriteSession.start(table, UPSERT, batch.schema, False)  # A's instant
    run_write(table, rows([2], ts=9, name="second"), UPSERT)  # B: a later instant, committed first
    written, tagged = _merge(session, keyed(session, batch))  # A reads B's slice
    with pytest.raises(CommitConflictError, match="completed after this write started"):
        session.commit(written, tagged=tagged)
    session.abort()
    assert snapshot(table)[2]["name"] == "second2"
    assert hudi_rs_read(table).filter(pc.equal(pc.field("id"), 2)).column("name").to_pylist() == ["second2"]


def test_concurrent_inserts_of_the_same_new_key_cannot_both_commit(table) -> None:
    session, written, tagged = _started_upsert(table, rows([500], name="first"))
    run_write(table, rows([500], name="second"), UPSERT)
    with pytest.raises(CommitConflictError, match="may hold the same new keys"):
        session.commit(written, tagged=tagged)
    session.abort()
    assert snapshot(table)[500]["name"] == "second500"


def test_clustering_scheduled_after_tagging_rejects_the_upsert_at_commit(table) -> None:
    session, written, tagged = _started_upsert(table, rows([2], ts=9, name="late"))
    schedule_clustering(table, {}, columns=["name"], include_all_files=True)
    with pytest.raises(CommitConflictError, match="pending clustering"):
        session.commit(written, tagged=tagged)
    session.abort()
    assert snapshot(table)[2]["name"] == "n2"


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"hoodie.index.type": "GLOBAL_SIMPLE"}, UnsupportedTableError, "GLOBAL_SIMPLE"),
    ({"hoodie.index.type": "RECORD_INDEX"}, UnsupportedTableError, "RECORD_INDEX"),
    ({"hoodie.combine.before.upsert": "false"}, InvalidArgumentError, "combine.before.upsert"),
    ({"hoodie.datasource.write.payload.class": "org.x.MyPayload"}, InvalidArgumentError, "MyPayload"),
    ({"hoodie.datasource.write.precombine.field": "name"}, InvalidArgumentError, "conflicts? with (the )?table"),
    ({"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}, InvalidArgumentError, "conflicts with the table"),
    ({"hoodie.datasource.write.operation": "upsert_prepped"}, UnsupportedTableError, "upsert_prepped"),
])
def test_refused_options_change_nothing(table, options, error, match) -> None:
    before = tree_snapshot(table)
    with pytest.raises(error, match=match):
        run_write(table, rows([1], ts=9), {**UPSERT, **options})
    assert tree_snapshot(table) == before


def test_other_refusals(table, tmp_path) -> None:
    with pytest.raises(InvalidArgumentError, match="drop.duplicates"):
        run_write(table, rows([1]), {"hoodie.datasource.write.insert.drop.duplicates": "true"})
    with pytest.raises(InvalidArgumentError, match="mode='overwrite'"):
        run_write(table, rows([1]), UPSERT, overwrite=True)
    with pytest.raises(NotAHudiTableError, match="no Hudi table"):
        run_write(str(tmp_path / "missing"), rows([1]), {**OPTS, **DELETE})
    assert not (tmp_path / "missing").exists()
    with pytest.raises(InvalidArgumentError, match="CUSTOM"):
        run_write(str(tmp_path / "custom"), rows([1]), {**OPTS, "hoodie.record.merge.mode": "CUSTOM"})
    from hudi_layout.format.capabilities import datasource_operation_refusal
    from hudi_layout.options import WriteOperation

    why = datasource_operation_refusal(WriteOperation.UPSERT)
    assert why is not None and "hudi_layout.write" in (why.hint or "")
    assert datasource_operation_refusal(WriteOperation.INSERT_OVERWRITE) is None


def test_combine_keeps_the_largest_ordering_value_then_the_later_row(table) -> None:
    session = WriteSession.start(table, UPSERT, rows([]).schema, False)
    try:
        batch = keyed(session, pa.concat_tables([rows([1], ts=3, name="a"), rows([1], ts=3, name="b"),
                                                 rows([1], ts=2, name="c")]))
        assert combine(session, batch).column("name").to_pylist() == ["b1"]
    finally:
        session.abort()


def test_partition_delete_and_table_overwrite_of_groups_under_pending_clustering_fail_first(table) -> None:
    schedule_clustering(table, {"hoodie.clustering.plan.strategy.partition.selected": "a"}, columns=["name"],
                        include_all_files=True)
    timeline = timeline_files(table)
    with pytest.raises(CommitConflictError, match="pending clustering"):
        run_write(table, rows([]), {"hoodie.datasource.write.operation": "delete_partition",
                                    "hoodie.datasource.write.partitions.to.delete": "a"})
    with pytest.raises(CommitConflictError, match="pending clustering"):
        run_write(table, rows([5]), {}, overwrite=True)
    assert timeline_files(table) == timeline
    run_write(table, rows([]), {"hoodie.datasource.write.operation": "delete_partition",
                                "hoodie.datasource.write.partitions.to.delete": "b"})
    assert {v["p"] for v in snapshot(table).values()} == {"a"}


def test_double_ordering_values_compare_as_java_does(tmp_path) -> None:
    """Hudi compares ordering values with ``compareTo``: for doubles NaN is above +Infinity and -0.0 below 0.0.
    Session 19: a stored NaN lost to an incoming 5.0, a stored 0.0 to an incoming -0.0, and within a batch 5.0
    beat NaN."""
    nan = float("nan")
    path = str(tmp_path / "t")

    def batch(ids, ts, name):
        return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"{name}{i}" for i in ids],
                         "ts": pa.array(ts, pa.float64()), "p": ["a"] * len(ids)})

    run_write(path, batch([1, 2, 3], [nan, 0.0, 1.0], "stored"), OPTS)
    run_write(path, batch([1, 2, 3, 4, 4], [5.0, -0.0, nan, 5.0, nan], "new"), UPSERT)
    got = {i: r["name"] for i, r in snapshot(path).items()}
    assert got == {1: "stored1", 2: "stored2", 3: "new3", 4: "new4"}
    assert pc.is_nan(pa.array([snapshot(path)[4]["ts"]])).to_pylist() == [True]  # the NaN record won the batch



@pytest.mark.parametrize(("extra", "match"), [
    ({"hoodie.clustering.plan.strategy.sort.columns": "name"}, "only with hoodie.clustering.inline=true"),
    ({"hoodie.layout.optimize.strategy": "hilbert"}, "only with hoodie.clustering.inline=true"),
    ({"hoodie.clustering.inline.max.commits": "2"}, "only with hoodie.clustering.inline=true"),
    ({"hoodie.clustering.async.max.commits": "2"}, "only with hoodie.clustering.inline=true"),
    ({"hoodie.compaction.strategy": "UnBoundedCompactionStrategy"}, "Merge-on-Read"),
    ({"hudi_layout.mor.max.log.files.per.slice": "2"}, "applies to Merge-on-Read tables"),
    ({"hoodie.compact.inline": "true"}, "applies to Merge-on-Read tables"),
    ({"hoodie.compact.inline.max.delta.commits": "2"}, "applies to Merge-on-Read tables"),
    ({"hudi_layout.workload.log.enable": "true"}, "not used by a write"),
])
def test_options_a_write_would_ignore_are_refused_before_anything_is_written(table, extra, match) -> None:
    """Session 29's options probe (F7 / F8): options of another command, or Merge-on-Read settings on a
    Copy-on-Write table, went through a write without effect."""
    before = tree_snapshot(table)
    with pytest.raises(InvalidArgumentError, match=match):
        run_write(table, rows([1], ts=5), {**OPTS, **UPSERT, **extra})
    assert tree_snapshot(table) == before


def test_options_of_what_a_write_runs_are_taken(tmp_path) -> None:
    """With inline clustering (or inline compaction of a Merge-on-Read table) on, the write takes their
    options; ``hoodie.compact.inline=false`` on Copy-on-Write says what the table does anyway."""
    cow = str(tmp_path / "cow")
    run_write(cow, rows(range(4)), {**OPTS, "hoodie.compact.inline": "false"})
    mor = str(tmp_path / "mor")
    mor_opts = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    run_write(mor, rows(range(4)), {**mor_opts, "hudi_layout.mor.max.log.files.per.slice": "2"})
    with pytest.raises(InvalidArgumentError, match="only with hoodie.compact.inline=true"):
        run_write(mor, rows([1], ts=5), {**mor_opts, **UPSERT, "hoodie.compaction.target.io": "10"})
    with pytest.raises(InvalidArgumentError, match="is used only with hoodie.compact.inline=true"):
        run_write(mor, rows([1], ts=5), {**mor_opts, **UPSERT, "hoodie.compact.inline.max.delta.commits": "9"})
    run_write(mor, rows([1], ts=5), {**mor_opts, **UPSERT, "hoodie.compact.inline": "true",
                                     "hoodie.compact.inline.max.delta.commits": "9",
                                     "hoodie.compaction.target.io": "10"})
    assert snapshot(mor)[1]["ts"] == 5


@pytest.mark.parametrize("keygen", ["TIMESTAMP", "org.apache.hudi.keygen.TimestampBasedKeyGenerator", "CUSTOM",
                                    "org.example.MyKeyGenerator"])
def test_a_table_whose_key_generator_derives_partition_paths_is_not_written(table, keygen) -> None:
    """Session 30's interop probe: an upsert into a Hudi table with a timestamp key generator wrote the key again
    under a folder of the field's raw text (read twice), and a delete looked for it there. Writes are refused;
    cleaning (which writes no record) still runs."""
    props = Path(table) / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"hoodie.table.keygenerator.type={keygen}\n")
    before = tree_snapshot(table)
    for options in (UPSERT, DELETE, {}):
        with pytest.raises(UnsupportedTableError, match="key generator"):
            run_write(table, rows([1], ts=5), options)
    assert tree_snapshot(table) == before
    from hudi_layout.services.cleaning import clean

    clean(table, {"hoodie.cleaner.commits.retained": "1"})


def test_the_timestamp_keygen_fixture_is_refused_naming_its_key_generator(fixture_table) -> None:
    path = str(fixture_table("cow_v9_timebasedkeygen_nonhivestyle.zip"))
    before = tree_snapshot(path)
    with pytest.raises(UnsupportedTableError, match="TIMESTAMP"):
        run_write(path, hudi_rs_read(path).slice(0, 1).drop_columns(
            [c for c in hudi_rs_read(path).column_names if c.startswith("_hoodie_")]),
            {**UPSERT, "hoodie.metadata.enable": "false"})
    assert tree_snapshot(path) == before


def test_delete_partition_by_rows_takes_their_partitions_literally(tmp_path) -> None:
    """Session 30's probe: the partitions of the rows went through the option's trimming and wildcards, so the
    rows of ``a*`` deleted ``ab`` and ``abc`` too, and the rows of `` a`` deleted ``a`` and kept `` a``."""
    path = str(tmp_path / "t")
    names = ["a*", "ab", "abc", "b", " a", "a"]
    data = pa.table({"id": pa.array(range(6), pa.int64()), "name": pa.array(names), "ts": pa.array([1] * 6),
                     "p": pa.array(names)})
    run_write(path, data, OPTS)
    run_write(path, rows([]), {"hoodie.datasource.write.operation": "delete_partition"}, partitions_in_data=["a*"])
    assert sorted(r["p"] for r in snapshot(path).values()) == sorted(n for n in names if n != "a*")
    run_write(path, rows([]), {"hoodie.datasource.write.operation": "delete_partition"}, partitions_in_data=[" a"])
    assert sorted(r["p"] for r in snapshot(path).values()) == ["a", "ab", "abc", "b"]
    # typed names are trimmed (Hudi's list), so " a" could name " a" or "a": refused while both exist
    run_write(path, data.slice(4, 1), {"hoodie.datasource.write.operation": "insert"})
    before = tree_snapshot(path)
    with pytest.raises(InvalidArgumentError, match="names two partitions"):
        run_write(path, rows([]), {"hoodie.datasource.write.operation": "delete_partition",
                                   "hoodie.datasource.write.partitions.to.delete": "b, a"})
    assert tree_snapshot(path) == before


def test_a_write_refused_after_it_created_the_metadata_table_leaves_the_table_without_it(tmp_path) -> None:
    """Session 30's interop probe: a write into a table without a metadata table creates one when it starts, and
    a refusal after that (a null record key here; a pending clustering of a file group it updates; a failed Spark
    job) left the new MDT and a changed hoodie.properties."""
    path = str(tmp_path / "t")
    run_write(path, rows(range(6)), {**OPTS, "hoodie.metadata.enable": "false"})
    props = (Path(path) / ".hoodie" / "hoodie.properties").read_text()
    bad = pa.table({"id": pa.array([1, None], pa.int64()), "name": pa.array(["x", "y"]),
                    "ts": pa.array([2, 2], pa.int64()), "p": pa.array(["a", "b"])})
    with pytest.raises((InvalidArgumentError, ValueError), match="null"):  # Spark's path: InvalidArgumentError
        run_write(path, bad, UPSERT)
    assert not (Path(path) / ".hoodie" / "metadata").exists()
    assert load_properties(Path(path) / ".hoodie").metadata_partitions == load_properties_text(props)
    run_write(path, rows([1], ts=5), UPSERT)  # the next write creates it and keeps it
    assert (Path(path) / ".hoodie" / "metadata").exists()
    assert snapshot(path)[1]["ts"] == 5


def load_properties_text(text: str) -> list[str]:
    line = next((ln for ln in text.splitlines() if ln.startswith("hoodie.table.metadata.partitions=")), "")
    return [p for p in line.partition("=")[2].split(",") if p]


@pytest.mark.parametrize("version", ["9", "8"])
def test_wide_decimal_statistics_are_exact_or_absent(tmp_path, version) -> None:
    """Session 30's probe: a ``decimal(38, 18)`` value with more than 28 digits was scaled in Python's default
    decimal context (28 digits), so the index held a rounded maximum and ``dec = <the value>`` skipped the file
    holding it. Version 9 now stores it exactly; a version-8 index (decimal(30, 15)) cannot hold it, so no record
    is written and Hudi's records of such a column are not used."""
    from decimal import Decimal

    from hudi_layout.scan.plan import plan_scan

    path = str(tmp_path / "t")
    big = Decimal("12345678901234567890.123456789012345678")
    values = [big, Decimal("-99999999999999999999.999999999999999999"), Decimal("0.000000000000000001")]
    t = pa.table({"id": pa.array(range(3), pa.int64()), "dec": pa.array(values, pa.decimal128(38, 18)),
                  "p": pa.array(["a", "b", "c"])})
    run_write(path, t, {**{k: v for k, v in OPTS.items() if "precombine" not in k}, "hoodie.table.version": version})
    stats = ColumnStatsIndex(path).load_column("dec")
    if version == "9":
        assert sorted(zip(stats.column("min").to_pylist(), stats.column("max").to_pylist())) == \
            sorted((v, v) for v in values)
    else:
        assert stats.num_rows == 0
    for where, want in ((f"dec = {big}", 1), ("dec > 12345678901234567890.123456789012345677", 1), ("dec > 0", 2),
                        ("dec < 0.000000000000000001", 1), ("dec = 0.000000000000000001", 1)):
        assert plan_scan(path, where, with_row_counts=False).files_read >= want, where


def test_a_refused_write_with_metadata_disabled_keeps_the_metadata_table(table) -> None:
    """Session 30's interop probe: ``hoodie.metadata.enable=false`` deleted the metadata table when the write
    started, so a write refused later (a null key here) had still deleted it. The commit drops it now."""
    mdt = Path(table) / ".hoodie" / "metadata"
    assert mdt.exists()
    before = tree_snapshot(str(mdt))
    bad = pa.table({"id": pa.array([1, None], pa.int64()), "name": pa.array(["x", "y"]),
                    "ts": pa.array([2, 2], pa.int64()), "p": pa.array(["a", "b"])})
    with pytest.raises((InvalidArgumentError, ValueError), match="null"):
        run_write(table, bad, {**UPSERT, "hoodie.metadata.enable": "false"})
    assert tree_snapshot(str(mdt)) == before
    assert "column_stats" in load_properties(Path(table) / ".hoodie").metadata_partitions
    run_write(table, rows([1], ts=5), {**UPSERT, "hoodie.metadata.enable": "false"})  # the commit drops it
    assert not mdt.exists() and not load_properties(Path(table) / ".hoodie").metadata_partitions
    assert snapshot(table)[1]["ts"] == 5
