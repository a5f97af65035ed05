"""Writes into Merge-on-Read tables (docs/mor-write.md): every write is a deltacommit of base files; an upsert or
delete rewrites each touched file group's slice merged with its log files into a new base file, which starts a
new slice (readers of table versions 8 / 9 leave the merged logs in the old one, by completion time); cleans
delete old slices with their log files.

Tables with log files are built by hand (``tests/helpers/mor_builder.py``: Avro and parquet data blocks, delete
blocks, a metadata table indexing base and log files). hudi-rs reads every table after every write and must
read what a plain-Python model says; time travel to before a write still reads the old slice with its logs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_layout as hl
from hudi_layout import HudiTable
from hudi_layout.errors import CommitConflictError, UnsupportedTableError
from tests.helpers.integration import diff_snapshots, hudi_rs_read, tree_snapshot
from tests.helpers.mor_builder import Deletes, MorTable, Upserts, make_mor_table, row
from tests.helpers.mor_samples import sample_mor_table

pytestmark = pytest.mark.integration

SCHEMA = "id string, ts long, name string, amount double"
OPTS = {"hoodie.table.name": "mor", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts"}
#: rewrite every touched slice (appending log files is the default: tests/integration/test_mor_log_appends.py)
REWRITE = {"hudi_layout.mor.max.log.files.per.slice": "0"}


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "ts", "name"))))


def ours(spark: Any, path: Path, **options: str) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["ts"], r["name"]) for r in hl.read(str(path), spark=spark, options=options).collect())


def hudi_rs_incremental(path: Path, begin: str, end: str) -> pa.Table:
    import hudi

    options = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(
        begin).with_end_timestamp(end)
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read(options))


def use_merge_path(monkeypatch: Any, merge_path: str) -> None:
    """``shuffle``: the tag-then-shuffle path of large batches even for these small ones; ``broadcast``: as is."""
    if merge_path == "shuffle":
        import hudi_layout.spark.upsert_job as upsert_job

        monkeypatch.setattr(upsert_job, "BROADCAST_MERGE_ROWS", 0)


def check_views_around(spark: Any, t: MorTable, instant: str, before: list[tuple[Any, ...]],
                       changed: list[tuple[Any, ...]]) -> None:
    """Time travel to the deltacommit before ``instant`` reads ``before``, and an incremental read over
    ``instant`` reads ``changed``: hudi-rs and ours alike."""
    timeline = os.listdir(t.timeline)
    last_before = max(n.split("_")[0] for n in timeline if n.endswith(".deltacommit") and not n.startswith(instant))
    assert rows_of(t.read_hudi_rs(as_of=last_before)) == before
    assert ours(spark, t.base, **{"as.of.instant": last_before}) == before
    done = {n.split("_")[0]: n.split("_")[1].split(".")[0] for n in timeline if n.endswith(".deltacommit")}
    incremental = {"hoodie.datasource.query.type": "incremental",
                   "hoodie.datasource.read.begin.instanttime": done[last_before],
                   "hoodie.datasource.read.end.instanttime": done[instant]}
    assert ours(spark, t.base, **incremental) == changed
    assert rows_of(hudi_rs_incremental(t.base, done[last_before], done[instant])) == changed


def with_logs(version: int, path: Path) -> tuple[MorTable, list[str]]:
    """Two file groups: a..e (slice with an Avro update, a parquet update and a delete) and f..h (no logs)."""
    t = make_mor_table(path, version=version, column_stats=True)
    g1 = t.deltacommit(inserts={"": [row(k, 1) for k in "abcde"]}).file_ids[0]
    g2 = t.deltacommit(inserts={"": [row(k, 1) for k in "fgh"]}).file_ids[0]
    t.deltacommit(logs={g1: [Upserts([row("a", 2, name="a2")])]})
    t.deltacommit(logs={g1: [Upserts([row("b", 3, name="b3")], fmt="parquet"), Deletes(["c"])]})
    return t, [g1, g2]


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize("merge_path", ["broadcast", "shuffle"])
def test_upsert_and_delete_rewrite_slices_merged_with_their_logs(spark, tmp_path: Path, monkeypatch,
                                                                 version: int, merge_path: str) -> None:
    use_merge_path(monkeypatch, merge_path)
    t, (g1, g2) = with_logs(version, tmp_path / "t")
    before = rows_of(hudi_rs_read(t.base))
    assert before == [("a", 2, "a2"), ("b", 3, "b3"), ("d", 1, "d"), ("e", 1, "e"), ("f", 1, "f"),
                      ("g", 1, "g"), ("h", 1, "h")]
    # d updated (kept from the base file), b older than its log's update (the log's value stays), c inserted
    # again (deleted in a log), z new; f in the other group untouched
    df = spark.createDataFrame([("d", 5, "d5", 5.0), ("b", 2, "b-old", 2.0), ("c", 4, "c4", 4.0),
                                ("z", 1, "z", 1.0)], SCHEMA)
    result = hl.write(df, str(t.base), {**OPTS, **REWRITE, "hoodie.datasource.write.operation": "upsert"})
    want = sorted([("a", 2, "a2"), ("b", 3, "b3"), ("c", 4, "c4"), ("d", 5, "d5"), ("e", 1, "e"),
                   ("f", 1, "f"), ("g", 1, "g"), ("h", 1, "h"), ("z", 1, "z")])
    assert rows_of(hudi_rs_read(t.base)) == want
    assert ours(spark, t.base) == want
    timeline = os.listdir(t.timeline)
    assert any(n.startswith(f"{result.instant_time}_") and n.endswith(".deltacommit") for n in timeline), timeline
    latest = {s.file_id: s for s in HudiTable(str(t.base)).file_slices()}
    assert latest[g1].commit_time == result.instant_time and not latest[g1].has_log_files
    assert latest[g2].commit_time < result.instant_time  # no key of it in the batch
    # time travel to before the upsert: the old slice, merged with its logs; incremental (version 8 / 9: by
    # completion time) over the upsert: the records it wrote, no merged log record
    check_views_around(spark, t, result.instant_time, before, [("c", 4, "c4"), ("d", 5, "d5"), ("z", 1, "z")])
    # a delete of a key only its log updated, and of one in the other group
    gone = spark.createDataFrame([("a", 0, None, None), ("g", 0, None, None)], SCHEMA)
    hl.write(gone, str(t.base), {**OPTS, "hoodie.datasource.write.operation": "delete"})
    want = [r for r in want if r[0] not in ("a", "g")]
    assert rows_of(hudi_rs_read(t.base)) == want and ours(spark, t.base) == want


@pytest.mark.parametrize("version", [8, 9])
def test_clean_deletes_old_slices_with_their_log_files(spark, tmp_path: Path, version: int) -> None:
    t, (g1, _g2) = with_logs(version, tmp_path / "t")
    logs = [p for p in t.base.iterdir() if p.name.startswith(f".{g1}_")]
    assert len(logs) == 2
    df = spark.createDataFrame([("d", 5, "d5", 5.0)], SCHEMA)
    hl.write(df, str(t.base), {**OPTS, **REWRITE, "hoodie.datasource.write.operation": "upsert"})
    hl.write(spark.createDataFrame([("e", 6, "e6", 6.0)], SCHEMA), str(t.base),
             {**OPTS, **REWRITE, "hoodie.datasource.write.operation": "upsert"})
    want = rows_of(hudi_rs_read(t.base))
    results = hl.clean(str(t.base), options={"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                             "hoodie.cleaner.fileversions.retained": "1",
                                             "hudi_layout.clean.grace.period.seconds": "0"})
    assert sum(r.files_deleted for r in results) == 4  # g1's first base file and its 2 logs, its second base
    assert not [p for p in logs if p.exists()]
    assert rows_of(hudi_rs_read(t.base)) == want and ours(spark, t.base) == want


def test_new_merge_on_read_table_takes_every_operation(spark, tmp_path: Path) -> None:
    path = tmp_path / "new"
    opts = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.datasource.write.partitionpath.field": "p"}
    schema = "id string, ts long, name string, p string"

    def write(rows: list[tuple[Any, ...]], operation: str, **extra: str) -> str:
        df = spark.createDataFrame(rows, schema)
        return hl.write(df, str(path), {**opts, "hoodie.datasource.write.operation": operation, **extra}).instant_time

    write([("a", 1, "a", "x"), ("b", 1, "b", "x"), ("c", 1, "c", "y")], "bulk_insert")
    write([("d", 1, "d", "y")], "insert")
    write([("a", 2, "a2", "x"), ("e", 1, "e", "z")], "upsert")
    write([("b", 0, None, "x")], "delete")
    write([("f", 1, "f", "y")], "insert_overwrite")
    write([], "delete_partition", **{"hoodie.datasource.write.partitions.to.delete": "z"})
    assert HudiTable(str(path)).properties.table_type == "MERGE_ON_READ"
    assert sorted(r[0] for r in rows_of(hudi_rs_read(path))) == ["a", "f"]
    actions = sorted({n.rsplit(".", 1)[-1] for n in os.listdir(path / ".hoodie" / "timeline")
                      if "_" in n and not n.startswith(".")})
    assert actions == ["deltacommit", "replacecommit"], actions
    # the data source writes deltacommits too
    spark.createDataFrame([("g", 1, "g", "x")], schema).write.format("hudi_layout").options(
        **{**opts, "hoodie.datasource.write.operation": "insert"}).mode("append").save(str(path))
    assert sorted(r[0] for r in rows_of(hudi_rs_read(path))) == ["a", "f", "g"]
    assert len([n for n in os.listdir(path / ".hoodie" / "timeline") if n.endswith(".deltacommit")]) == 5


def changes(before: dict[str, Any], path: Path) -> list[str]:
    """What changed on disk, besides the lock file any writer creates once."""
    return [d for d in diff_snapshots(before, tree_snapshot(path)) if ".locks" not in d]


def test_log_only_groups_and_rewrites_under_a_pending_compaction_are_refused(spark, tmp_path: Path) -> None:
    t = sample_mor_table(tmp_path / "t", groups=2, rows_per_group=20)  # has a log-only file group
    before = tree_snapshot(t.base)
    df = spark.createDataFrame([("k00005", 9, "x", 1, 1)], "id string, ts long, name string, x long, y long")
    with pytest.raises(UnsupportedTableError, match="no base file"):
        hl.write(df, str(t.base), {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert changes(before, t.base) == []
    u, (g1, _g2) = with_logs(9, tmp_path / "u")
    u.schedule_compaction([g1])
    before = tree_snapshot(u.base)
    # a write that would rewrite the compaction's group (this one appends no log files) is refused
    with pytest.raises(UnsupportedTableError, match="pending compaction"):
        hl.write(spark.createDataFrame([("d", 5, "d5", 5.0)], SCHEMA), str(u.base),
                 {**OPTS, **REWRITE, "hoodie.datasource.write.operation": "upsert"})
    assert changes(before, u.base) == []
    # a key of the other file group: written (the compaction's group is neither read into nor changed)
    hl.write(spark.createDataFrame([("f", 5, "f5", 5.0)], SCHEMA), str(u.base),
             {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert ("f", 5, "f5") in rows_of(hudi_rs_read(u.base))


def test_a_log_written_while_an_upsert_runs_fails_its_commit(spark, tmp_path: Path, monkeypatch) -> None:
    """A Hudi writer appends a log file to the file group between our read of its slice and our commit: its
    records are not in our new base file, and a log completed after our instant began would be read over it.
    The commit fails; the table keeps the other writer's change."""
    import hudi_layout.spark.upsert_job as upsert_job

    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    real = upsert_job.slice_reader

    def reader_then_log(table: Any) -> Any:
        read = real(table)
        t.deltacommit(logs={g1: [Upserts([row("e", 7, name="e7")])]})
        return read

    monkeypatch.setattr(upsert_job, "slice_reader", reader_then_log)
    with pytest.raises(CommitConflictError, match="log file"):
        hl.write(spark.createDataFrame([("d", 5, "d5", 5.0)], SCHEMA), str(t.base),
                 {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    got = rows_of(hudi_rs_read(t.base))
    assert ("e", 7, "e7") in got and ("d", 1, "d") in got


def test_index_of_a_merge_on_read_table_indexes_log_files_by_their_records(spark, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """``hudi-layout index`` on a MOR table without a metadata table: base files get statistics from their
    footers, log files from their data records (an update in a log moves a row out of its base file's range:
    skipping keeps its slice for a predicate it matches, and proves it out for one no record matches). The
    log files are read in a Spark job, not on the driver (which reads metadata only)."""
    from hudi_layout.services.index import build_column_stats_index
    from hudi_layout.writer import metadata_sync

    t = make_mor_table(tmp_path / "t", version=9, column_stats=False)
    g1 = t.deltacommit(inserts={"": [row(k, 1) for k in "abc"]}).file_ids[0]
    t.deltacommit(inserts={"": [row(k, 50) for k in "xyz"]})
    t.deltacommit(logs={g1: [Upserts([row("b", 70, name="b2")])]})

    def no_log_reads_on_the_driver(*_args: Any, **_kw: Any) -> Any:
        raise AssertionError("the driver read a log file")

    monkeypatch.setattr(metadata_sync, "read_log_file", no_log_reads_on_the_driver)  # Spark's workers import
    done = build_column_stats_index(str(t.base))  # their own copy of the module
    assert done["status"] == "built" and done["files"] == 3 and done["log_files_read"] == 1  # two base files, a log
    got = hl.read(str(t.base), "ts >= 60", spark=spark).collect()
    assert [(r["id"], r["name"]) for r in got] == [("b", "b2")]
    plan = hl.explain(str(t.base), "ts >= 60")
    assert plan.files_after_column_stats == 1  # the x, y, z file dropped by its statistics, g1 kept by its log
    assert hl.explain(str(t.base), "ts >= 80").files_after_column_stats == 0  # the log's ts is 70
    t.deltacommit(logs={g1: [Deletes(["a"])]}, unindexed_logs=True)
    build_column_stats_index(str(t.base), rebuild=True)  # a delete block: no values, its slice still proven out
    assert hl.explain(str(t.base), "ts >= 80").files_after_column_stats == 0
    assert [r["id"] for r in hl.read(str(t.base), "ts >= 60", spark=spark).collect()] == ["b"]
    theirs = hudi_rs_read(t.base)
    assert rows_of(theirs) == ours(spark, t.base)


def test_rollback_of_a_failed_deltacommit_deletes_its_log_files(spark, tmp_path: Path) -> None:
    """A Hudi writer died after writing a log file (its deltacommit pending, no heartbeat): our next write rolls
    the instant back and deletes the log too, as Hudi's version 8 / 9 rollback does (it stayed on disk before:
    a record of a failed write that an archived timeline could make visible)."""
    t, (g1, g2) = with_logs(9, tmp_path / "t")
    failed = t.deltacommit(logs={g2: [Upserts([row("f", 9, name="failed")])]}, complete=False)
    log = t.base / failed.log_paths[0]
    assert log.exists()
    hl.write(spark.createDataFrame([("d", 5, "d5", 5.0)], SCHEMA), str(t.base),
             {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert not log.exists()
    assert not [n for n in os.listdir(t.timeline) if n.startswith(failed.instant)]
    assert ("f", 1, "f") in rows_of(hudi_rs_read(t.base))


def test_widening_a_column_over_log_files_is_refused(spark, tmp_path: Path) -> None:
    """hudi-rs cannot read a log block written as int after the table's column became long (the latest
    snapshot and time travel alike), so a widening while log files exist is refused; the same write in the
    column's own type goes through."""
    fields = (("id", "string"), ("ts", "long"), ("name", "string"), ("qty", "int"))
    t = make_mor_table(tmp_path / "t", version=9, column_stats=True, fields=fields)
    g1 = t.deltacommit(inserts={"": [row(k, 1, qty=1) for k in "abc"]}).file_ids[0]
    t.deltacommit(inserts={"": [row(k, 1, qty=1) for k in "xyz"]})
    t.deltacommit(logs={g1: [Upserts([row("a", 2, name="a2", qty=2)])]})
    before = tree_snapshot(t.base)
    wide = spark.createDataFrame([("x", 5, "x5", 7)], "id string, ts long, name string, qty long")
    with pytest.raises(UnsupportedTableError, match=r"qty int32 -> int64.*hudi-rs"):
        hl.write(wide, str(t.base), {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert changes(before, t.base) == []
    same = spark.createDataFrame([("x", 5, "x5", 7)], "id string, ts long, name string, qty int")
    hl.write(same, str(t.base), {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert ("x", 5, "x5") in rows_of(hudi_rs_read(t.base))


def test_a_delete_without_ordering_value_wins_in_reads_and_rewrites(spark, tmp_path: Path) -> None:
    """Event time: a log record with ``_hoodie_is_deleted`` and a null ordering value deletes its key whatever
    the stored ordering value (Hudi's default ordering value; hudi-rs agrees). The read path kept the key
    (nulls lowest), and an upsert of another key of the file group then stored it again for every reader."""
    fields = (("id", "string"), ("ts", "long"), ("name", "string"), ("_hoodie_is_deleted", "boolean"))
    t = make_mor_table(tmp_path / "t", version=9, column_stats=True, fields=fields)
    g = t.deltacommit(inserts={"": [row(k, 8) for k in "abk"]}).file_ids[0]
    t.deltacommit(logs={g: [Upserts([row("k", None, name="gone", _hoodie_is_deleted=True)])]})
    assert [r[0] for r in rows_of(hudi_rs_read(t.base))] == ["a", "b"]
    assert [r[0] for r in ours(spark, t.base)] == ["a", "b"]
    df = spark.createDataFrame([("a", 9, "a9", False)], "id string, ts long, name string, _hoodie_is_deleted boolean")
    hl.write(df, str(t.base), {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert rows_of(hudi_rs_read(t.base)) == [("a", 9, "a9"), ("b", 8, "b")] == ours(spark, t.base)
    # the same record in a batch deletes the stored key too
    gone = spark.createDataFrame([("b", None, None, True)],
                                 "id string, ts long, name string, _hoodie_is_deleted boolean")
    hl.write(gone, str(t.base), {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert rows_of(hudi_rs_read(t.base)) == [("a", 9, "a9")] == ours(spark, t.base)


def test_a_write_that_creates_the_metadata_table_leaves_existing_logs_unindexed_and_their_slices_read(
        spark, tmp_path: Path) -> None:
    """A write that creates the metadata table over a Merge-on-Read table with log files reads no data on the
    driver: the logs get no statistics, so every query keeps their slices (until a compaction, or an index
    rebuild's Spark job, describes them), and no answer changes."""
    t = make_mor_table(tmp_path / "t", version=9, column_stats=False)
    g1 = t.deltacommit(inserts={"": [row(k, 1) for k in "abc"]}).file_ids[0]
    t.deltacommit(logs={g1: [Upserts([row("b", 70, name="b2")])]})
    hl.write(spark.createDataFrame([("q", 2, "q", 2.0)], SCHEMA), str(t.base),
             {**OPTS, "hoodie.datasource.write.operation": "insert"})
    assert "column_stats" in HudiTable(str(t.base)).properties.metadata_partitions
    plan = hl.explain(str(t.base), "ts >= 60")
    assert plan.files_after_column_stats == 1  # the slice with the log, kept; the new file proven out
    assert hl.explain(str(t.base), "ts >= 80").files_after_column_stats == 1  # no record of the log proves it out
    assert [(r["id"], r["name"]) for r in hl.read(str(t.base), "ts >= 60", spark=spark).collect()] == [("b", "b2")]
    assert rows_of(hudi_rs_read(t.base)) == ours(spark, t.base)


def test_log_blocks_take_the_parquet_codec_as_hudis_append_handle_does(spark, tmp_path: Path) -> None:
    """``hoodie.parquet.compression.codec`` reached base files only; parquet log blocks were always snappy
    (session 29's probe). Hudi's append handle compresses them with the same codec; hudi-rs reads them."""
    import io

    import pyarrow.parquet as pq

    from hudi_layout.format.log_format import BlockType, read_log_file

    path = tmp_path / "codec"
    opts = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    hl.write(spark.createDataFrame([("a", 1, "a", 1.0), ("b", 1, "b", 2.0)], SCHEMA), str(path), opts)
    hl.write(spark.createDataFrame([("a", 2, "a2", 3.0)], SCHEMA), str(path),
             {**opts, "hoodie.datasource.write.operation": "upsert", "hoodie.parquet.compression.codec": "zstd"})
    logs = [p for p in path.rglob("*.log.*")]
    assert logs
    codecs = {pq.ParquetFile(io.BytesIO(b.content)).metadata.row_group(0).column(0).compression
              for p in logs for b in read_log_file(str(p)) if b.type is BlockType.PARQUET_DATA}
    assert codecs == {"ZSTD"}
    assert rows_of(hudi_rs_read(path)) == [("a", 2, "a2"), ("b", 1, "b")]
