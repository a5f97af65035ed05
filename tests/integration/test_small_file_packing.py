"""Small-file packing (``hoodie.parquet.small.file.limit``): an upsert's new keys go into the partition's small
base files first, as Hudi's upsert partitioner assigns them, on both paths of the upsert (broadcast merge,
tag-and-shuffle), on Copy-on-Write and Merge-on-Read tables; hudi-rs reads the same rows; file groups of a
pending clustering, slices with log files and groups this write updates are never packed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hudi_layout as hl
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.clustering import kill_group, wait_for
from tests.helpers.integration import hudi_rs_read
from tests.integration.test_live_writes import read_ours, read_rs

pytestmark = pytest.mark.integration

SCHEMA = "id long, name string, v int, ts long, p string"
OPTS = {"hoodie.table.name": "pack", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.parquet.max.file.size": "60000"}
UPSERT = {"hoodie.datasource.write.operation": "upsert"}
PACK = {**UPSERT, "hoodie.parquet.small.file.limit": "40000"}


def rows(ids, *, ts=1, name="n"):
    return [(i, f"{name}{i}", i % 97, ts, ["a", "b"][i % 2]) for i in ids]


def model(*batches) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for batch in batches:
        for r in batch:
            out[r[0]] = r[1:]
    return out


def groups(path) -> dict[tuple[str, str], str]:
    return {s.file_group: s.base_file_name for s in HudiTable(str(path)).file_slices()}


def last_commit(path) -> dict:
    t = HudiTable(str(path))
    return t.timeline.read_commit_metadata(list(t.timeline.completed().commits_and_replaces())[-1])


def write_stats(meta) -> list[dict]:
    return [st for stats in meta["partitionToWriteStats"].values() for st in stats]


@pytest.mark.parametrize("path_kind", ["broadcast merge", "tag and shuffle"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_new_keys_fill_small_files_before_new_file_groups(spark, tmp_path, monkeypatch, path_kind,
                                                          table_type) -> None:
    import hudi_layout.spark.upsert_job as upsert_job

    if path_kind == "tag and shuffle":
        monkeypatch.setattr(upsert_job, "BROADCAST_MERGE_ROWS", 0)
    path = tmp_path / "t"
    opts = {**OPTS, "hoodie.datasource.write.table.type": table_type}
    first = rows(range(0, 400))
    hl.write(spark.createDataFrame(first, SCHEMA), str(path), opts)
    before = groups(path)
    assert len(before) >= 2  # small files in both partitions
    # updates of 10 keys and 200 new keys: the new ones are packed into the two small files
    second = rows(range(0, 20, 2), ts=2, name="u") + rows(range(1000, 1200), ts=2, name="i")
    result = hl.write(spark.createDataFrame(second, SCHEMA), str(path), {**opts, **PACK})
    after = groups(path)
    assert set(after) == set(before), "new file groups were opened although the small files had room"
    assert result.records_inserted == 200
    want = model(first, second)
    assert read_rs(path) == want
    assert read_ours(spark, path) == want
    assert read_ours(spark, path, "id >= 1100 AND id < 1110") == {k: v for k, v in want.items()
                                                                    if 1100 <= k < 1110}
    stats = write_stats(last_commit(path))
    assert sum(st["numInserts"] for st in stats) == 200
    assert all(st["prevCommit"] != "null" for st in stats if st["numInserts"])
    # the next plain upsert (packing off) opens new file groups again
    third = rows(range(2000, 2050), ts=3, name="j")
    hl.write(spark.createDataFrame(third, SCHEMA), str(path), {**opts, **UPSERT})
    assert len(groups(path)) > len(after)
    assert read_rs(path) == model(first, second, third)


def test_packing_stops_at_the_max_file_size_and_opens_new_groups(spark, tmp_path) -> None:
    path = tmp_path / "t"
    first = rows(range(0, 200))
    hl.write(spark.createDataFrame(first, SCHEMA), str(path), OPTS)
    before = groups(path)
    many = rows(range(10_000, 16_000), ts=2, name="i")
    hl.write(spark.createDataFrame(many, SCHEMA), str(path), {**OPTS, **PACK})
    after = groups(path)
    assert set(before) < set(after), "the small files were not kept and extended"
    assert all(after[g] != before[g] for g in before), "a small file was not packed"
    sizes = {s.file_group: s.size_bytes for s in HudiTable(str(path)).file_slices()}
    assert all(sizes[g] <= 1.5 * 60000 for g in before), sizes
    assert read_rs(path) == model(first, many)


def test_groups_under_pending_clustering_and_slices_with_logs_are_not_packed(spark, tmp_path) -> None:
    path = tmp_path / "t"
    opts = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    first = rows(range(0, 400))
    hl.write(spark.createDataFrame(first, SCHEMA), str(path), opts)
    # an update of partition a's group appends a log file: that slice is no longer small for packing
    upd = rows([0, 2], ts=2, name="u")
    hl.write(spark.createDataFrame(upd, SCHEMA), str(path), {**opts, **UPSERT})
    with_logs = {s.file_group for s in HudiTable(str(path)).file_slices() if s.has_log_files}
    assert with_logs
    before = groups(path)
    new = rows(range(5000, 5100), ts=3, name="i")
    hl.write(spark.createDataFrame(new, SCHEMA), str(path), {**opts, **PACK})
    after = groups(path)
    assert all(after[g] == before[g] for g in with_logs)
    assert read_rs(path) == model(first, upd, new)
    # a pending clustering's groups are left alone too
    cow = tmp_path / "cow"
    hl.write(spark.createDataFrame(first, SCHEMA), str(cow), OPTS)
    from hudi_layout.clustering.schedule import schedule_clustering

    assert schedule_clustering(str(cow), {"hoodie.table.name": "pack"}, columns=["v"], include_all_files=True)
    before = groups(cow)
    more = rows(range(7000, 7100), ts=3, name="i")
    hl.write(spark.createDataFrame(more, SCHEMA), str(cow), {**OPTS, **PACK})
    after = groups(cow)
    assert all(after[g] == before[g] for g in before)
    assert read_rs(cow) == model(first, more)


def test_insert_packs_keeps_every_row_and_leaves_out_delete_markers(spark, tmp_path) -> None:
    """``insert`` with a limit packs too (Hudi's insert uses the same partitioner): every row is kept (a key
    stored already is stored again, as any insert does), rows marked ``_hoodie_is_deleted`` are left out."""
    path = tmp_path / "t"
    schema = SCHEMA + ", _hoodie_is_deleted boolean"
    first = rows(range(0, 400))
    hl.write(spark.createDataFrame([(*r, False) for r in first], schema), str(path), OPTS)
    before = groups(path)
    new = rows(range(6000, 6150), ts=2, name="i")
    again = rows([4], ts=3, name="again")
    marked = rows([6500, 6501], ts=2, name="gone")
    batch = [(*r, False) for r in new + again] + [(*r, True) for r in marked]
    result = hl.write(spark.createDataFrame(batch, schema), str(path),
                      {**OPTS, "hoodie.datasource.write.operation": "insert",
                       "hoodie.parquet.small.file.limit": "40000"})
    assert set(groups(path)) == set(before), "new file groups were opened although the small files had room"
    assert result.records_inserted == len(new) + len(again)
    for label, got in (("hudi-rs", hudi_rs_read(path).to_pylist()),
                       ("hl.read", [r.asDict() for r in hl.read(str(path), spark=spark).collect()])):
        ids = sorted(r["id"] for r in got)
        assert ids == sorted([r[0] for r in first + new + again]), label
        assert sorted(r["name"] for r in got if r["id"] == 4) == ["again4", "n4"], label


def test_the_data_source_writer_refuses_packing_and_writes_nothing(spark, tmp_path) -> None:
    """The data source's tasks write rows as they come: an insert through it with a limit is refused in one
    line (accepting the option there would ignore it), and the table is left as it was."""
    path = tmp_path / "t"
    hl.write(spark.createDataFrame(rows(range(0, 100)), SCHEMA), str(path), OPTS)
    listing = sorted(str(p) for p in path.rglob("*"))
    with pytest.raises(Exception, match="small.file.limit=40000 is not supported by the data source writer"):
        spark.createDataFrame(rows(range(200, 210)), SCHEMA).write.format("hudi_layout").mode("append").options(
            **OPTS, **{"hoodie.datasource.write.operation": "insert",
                       "hoodie.parquet.small.file.limit": "40000"}).save(str(path))
    assert sorted(str(p) for p in path.rglob("*")) == listing


DOOMED_PACKING = textwrap.dedent("""
    import sys
    import hudi_layout
    path = sys.argv[1]
    spark = hudi_layout.get_spark(master="local[1]", extra_conf={"spark.driver.memory": "1g",
                                                                 "spark.sql.shuffle.partitions": "1"})
    rows = [(i, f"i{i}", i % 97, 2, ["a", "b"][i % 2]) for i in range(5000, 5600)]
    batch = spark.createDataFrame(rows, "id long, name string, v int, ts long, p string")
    print("UPSERTING", flush=True)
    hudi_layout.write(batch, path, {"hoodie.datasource.write.operation": "upsert",
                                    "hoodie.parquet.small.file.limit": "40000"})
    print("COMPLETED", flush=True)
""")


def test_a_writer_killed_while_packing_leaves_every_row_once_and_the_retry_packs(spark, tmp_path) -> None:
    """SIGKILL once the first small file group's new base file is announced (its MERGE marker): the table reads
    as before, each key once; the next write rolls the failed instant back and the same upsert then packs."""
    path = tmp_path / "t"
    first = rows(range(0, 400))
    hl.write(spark.createDataFrame(first, SCHEMA), str(path), OPTS)
    before = read_rs(path)
    project = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(project) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("HUDI_LAYOUT_FAULT", None)
    proc = subprocess.Popen([sys.executable, "-c", DOOMED_PACKING, str(path)], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        marked = wait_for(lambda: list((path / ".hoodie" / ".temp").glob("*/**/*.marker.MERGE")), 600, proc=proc)
    finally:
        kill_group(proc)
    out = proc.communicate(timeout=60)[0].decode(errors="replace")
    assert marked and "COMPLETED" not in out, out[-3000:]
    assert read_rs(path) == before
    assert read_ours(spark, path) == before
    new = [(i, f"i{i}", i % 97, 2, ["a", "b"][i % 2]) for i in range(5000, 5600)]
    groups_before = groups(path)
    hl.write(spark.createDataFrame(new, SCHEMA), str(path), {**OPTS, **PACK})
    assert read_rs(path) == model(first, new)
    assert read_ours(spark, path) == model(first, new)
    assert any(groups(path)[g] != name for g, name in groups_before.items()), "nothing was packed"
