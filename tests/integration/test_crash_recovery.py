"""Crash recovery: a writer SIGKILLed at any point leaves the table readable with its earlier commits; the
next writer rolls the failed instant back (files, pending instant, markers, MDT entries) and records a
completed rollback; a dead writer never blocks a later one, and a live one is never rolled back.

The doomed writers run in subprocesses (their own local[1] Spark) started together, so the suite pays one
Spark start-up for all scenarios. Faults after the file writes use the ``HUDI_LAYOUT_FAULT`` hook of
``hudi_layout.table.commit_protocol.complete_write``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_layout
from tests.helpers.clustering import kill_group
from tests.helpers.integration import (
    base_files_on_disk,
    data_only,
    hudi_rs_read,
    hudi_rs_slices,
    our_slices,
    rows_digest,
    timeline_files,
)

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
OPTS = {"hoodie.table.name": "crash", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"}

DOOMED = textwrap.dedent("""
    import sys
    import hudi_layout
    path, n, max_size = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    spark = hudi_layout.get_spark(master="local[1]", extra_conf={"spark.driver.memory": "1g",
                                                                 "spark.sql.shuffle.partitions": "1"})
    df = spark.range(0, n, 1, 2).selectExpr(
        "CAST(id + 100000 AS INT) AS id", "concat('n', CAST(id AS STRING)) AS name",
        "CAST(id AS DOUBLE) / 3 AS v", "CASE WHEN id % 2 = 0 THEN 'x' ELSE 'y' END AS p")
    print("WRITING", flush=True)
    hudi_layout.write(df, path, {"hoodie.parquet.max.file.size": max_size})
    print("COMPLETED", flush=True)
""")

# Faults inside complete_write happen on the driver after the executors are done, so these writers skip
# Spark start-up: the same WriteSession (validation, begin, commit + MDT hook) the data source uses, fed by
# the executor-side base-file writer run in-process.
DOOMED_NO_SPARK = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from hudi_layout.writer.base_file_writer import write_partition
    from hudi_layout.spark.datasource import _key_and_partition
    from hudi_layout.writer.transaction import WriteSession
    path, n, max_size = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    data = pa.table({"id": pa.array(range(100000, 100000 + n), pa.int32()),
                     "name": [f"n{i}" for i in range(n)], "v": [i / 3 for i in range(n)],
                     "p": [["x", "y"][i % 2] for i in range(n)]})
    session = WriteSession.start(path, {"hoodie.parquet.max.file.size": max_size}, data.schema, False)
    batches = (_key_and_partition(b, session.record_keys, session.spec.partition_rule)
               for b in data.to_batches(max_chunksize=1000))
    rows = [r for out in write_partition(session.spec, batches) for r in out.to_pylist()]
    print("WRITING", flush=True)
    session.commit(rows)
    print("COMPLETED", flush=True)
""")


def rows(n=200, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int32()),
                     "name": [f"n{i}" for i in range(start, start + n)],
                     "v": pa.array([i / 2 for i in range(n)], pa.float64()),
                     "p": [["x", "y"][i % 2] for i in range(n)]})


def markers(path: Path) -> list[Path]:
    return list((path / ".hoodie" / ".temp").glob("*/**/*.marker.*"))


def pending_instants(path: Path) -> set[str]:
    files = timeline_files(path)
    done = {f.split(".")[0].split("_")[0] for f in files if f.endswith((".commit", ".replacecommit"))}
    return {f.split(".")[0] for f in files if f.endswith((".requested", ".inflight"))
            and f.split(".")[1] in ("commit", "replacecommit")} - done


@pytest.fixture(scope="module")
def crashed(spark, tmp_path_factory):
    """Three tables with one good commit each, then one doomed writer per table, run concurrently:
    ``files`` (SIGKILL of the whole process group while base files are being written),
    ``before_mdt`` and ``before_complete`` (self-SIGKILL inside complete_write; no Spark needed)."""
    root = tmp_path_factory.mktemp("crash")
    scenarios = {"files": ("2000000", "262144", None),
                 "before_mdt": ("3000", "125829120", "before_mdt"),
                 "before_complete": ("3000", "125829120", "before_complete")}
    tables, procs, before = {}, {}, {}
    for name in scenarios:
        path = root / name
        hudi_layout.write(spark.createDataFrame(rows()), str(path), OPTS)
        tables[name] = path
        before[name] = {"digest": rows_digest(data_only(hudi_rs_read(path))), "slices": our_slices(path),
                        "timeline": timeline_files(path)}
    env_base = {**os.environ, "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env_base.pop("HUDI_LAYOUT_FAULT", None)
    logs = {}
    for name, (n, max_size, fault) in scenarios.items():
        env = dict(env_base)
        if fault:
            env["HUDI_LAYOUT_FAULT"] = fault
        logs[name] = open(root / f"{name}.log", "wb")  # noqa: SIM115
        script = DOOMED_NO_SPARK if fault else DOOMED
        procs[name] = subprocess.Popen([sys.executable, "-c", script, str(tables[name]), n, max_size],
                                       cwd=str(PROJECT), env=env, stdout=logs[name], stderr=subprocess.STDOUT,
                                       start_new_session=True)
    try:
        deadline, killed = time.time() + 300, False
        while time.time() < deadline:
            p = procs["files"]
            if not killed and p.poll() is None and markers(tables["files"]):
                os.killpg(p.pid, signal.SIGKILL)
                killed = True
            if all(p.poll() is not None for p in procs.values()):
                break
            time.sleep(0.01)
    finally:
        for p in procs.values():
            kill_group(p)  # the JVMs of self-killed drivers too
        for f in logs.values():
            f.close()
    outcome = {name: (root / f"{name}.log").read_text(errors="replace") for name in scenarios}
    for name, text in outcome.items():
        assert "WRITING" in text and "COMPLETED" not in text, f"{name} writer was not killed mid-write:\n{text[-3000:]}"
        assert procs[name].returncode == -signal.SIGKILL, (name, procs[name].returncode, text[-3000:])
    return tables, before


def failed_instant(path: Path) -> str:
    pend = pending_instants(path)
    assert len(pend) == 1, pend
    return pend.pop()


def check_intact(spark, path: Path, before: dict) -> None:
    """Readable by hudi-rs and by us, with exactly the earlier commits."""
    assert rows_digest(data_only(hudi_rs_read(path))) == before["digest"]
    assert hudi_rs_slices(path) == before["slices"]
    assert our_slices(path) == before["slices"]
    assert hudi_layout.read(str(path), spark=spark).count() == 200
    assert {r["file_name"] for r in hudi_layout.ColumnStatsIndex(path).load_column("id").to_pylist()} == {
        p.rsplit("/", 1)[-1] for p in before["slices"]}


def recover_and_check(spark, path: Path, before: dict, t: str, *, files_expected: bool) -> None:
    """The next write rolls ``t`` back completely and commits its own rows."""
    stray = {f for f in base_files_on_disk(path) if f.endswith(f"_{t}.parquet")}
    assert bool(stray) == files_expected
    hudi_layout.write(spark.createDataFrame(rows(50, start=10_000)), str(path), OPTS)
    on_disk = base_files_on_disk(path)
    assert not {f for f in on_disk if t in f}, "files of the failed instant were not deleted"
    tl = timeline_files(path)
    assert not [f for f in tl if f.startswith(t)], tl  # pending instant gone
    rollbacks = [f for f in tl if f.endswith(".rollback")]
    assert len(rollbacks) == 1, tl
    assert not (path / ".hoodie" / ".temp" / t).exists()
    # data: earlier rows + the new ones, seen identically by hudi-rs and by us
    want = rows_digest(pa.concat_tables([rows(), rows(50, start=10_000)]))
    assert rows_digest(data_only(hudi_rs_read(path))) == want
    assert hudi_rs_slices(path) == our_slices(path) == on_disk
    assert hudi_layout.read(str(path), spark=spark).count() == 250
    # MDT: no entry of the failed instant; the column stats cover exactly the live files
    for col in ("id", "_hoodie_record_key"):
        names = {r["file_name"] for r in hudi_layout.ColumnStatsIndex(path).load_column(col).to_pylist()}
        assert names == {f.rsplit("/", 1)[-1] for f in on_disk}, col
    mdt_timeline = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    mdt_done = [f.name for f in mdt_timeline.iterdir() if f.name.startswith(t) and f.name.endswith(".deltacommit")]
    assert not mdt_done, f"MDT deltacommit of the failed instant is still completed: {mdt_done}"


def test_killed_during_file_writes(spark, crashed):
    tables, before = crashed
    path = tables["files"]
    t = failed_instant(path)
    assert markers(path), "the writer was killed after its markers were removed"
    check_intact(spark, path, before["files"])
    recover_and_check(spark, path, before["files"], t, files_expected=True)


def test_killed_after_files_before_mdt(spark, crashed):
    """Also: the dead writer does not block a later writer, and a LIVE concurrent writer is not rolled back."""
    from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
    from hudi_layout.table.commit_protocol import abort_write, begin_write
    from hudi_layout.table.locks import writer_is_alive

    tables, before = crashed
    path = tables["before_mdt"]
    t = failed_instant(path)
    check_intact(spark, path, before["before_mdt"])
    live = begin_write(path, "commit", rollback_failed=False, hooks=COMMIT_HOOKS)  # a concurrent writer still at work
    try:
        assert writer_is_alive(path, live.instant_time) and not writer_is_alive(path, t)
        recover_and_check(spark, path, before["before_mdt"], t, files_expected=True)
        assert live.instant_time in pending_instants(path), "a live writer's instant was rolled back"
    finally:
        abort_write(live)
    assert not pending_instants(path)


def test_killed_after_mdt_before_complete(spark, crashed):
    tables, before = crashed
    path = tables["before_complete"]
    t = failed_instant(path)
    mdt_timeline = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    assert [f for f in os.listdir(mdt_timeline) if f.startswith(t + "_") and f.endswith(".deltacommit")], \
        "fault hook did not fire after the MDT update"
    # readers ignore the MDT entries of an instant the data timeline never completed
    check_intact(spark, path, before["before_complete"])
    recover_and_check(spark, path, before["before_complete"], t, files_expected=True)
