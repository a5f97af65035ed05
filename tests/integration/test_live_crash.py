"""Crash safety of upserts: a writer SIGKILLed after tagging, in the middle of the file-group rewrites, before
the metadata table is updated, or before the instant completes leaves the table readable with every row exactly
once (the rows before the upsert); the next writer rolls the failed instant back and the retried upsert applies.

The doomed writers run in subprocesses started together (one Spark start-up each for the two Spark phases; the
two phases inside ``complete_write`` run the same transaction without Spark, tests/helpers/live_ops.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import hudi_layout as hl
from tests.helpers.clustering import kill_group
from tests.helpers.integration import hudi_rs_read, timeline_files

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
OPTS = {"hoodie.table.name": "crash", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.parquet.max.file.size": "20000"}
ROWS = 3000

ROW_SQL = ("SELECT id, concat('{prefix}', CAST(id AS STRING)) AS name, CAST(id % 97 AS INT) AS v, "
           "CAST({ts} AS BIGINT) AS ts, CASE id % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'c' END AS p "
           "FROM range(0, {rows}, {step})")
BASE_SQL = ROW_SQL.format(prefix="n", ts=1, rows=ROWS, step=1)
BATCH_SQL = ROW_SQL.format(prefix="u", ts=9, rows=ROWS, step=2)

DOOMED_SPARK = textwrap.dedent("""
    import sys
    import hudi_layout
    path = sys.argv[1]
    spark = hudi_layout.get_spark(master="local[1]", extra_conf={"spark.driver.memory": "1g",
                                                                 "spark.sql.shuffle.partitions": "1"})
    batch = spark.sql(sys.argv[2])
    print("UPSERTING", flush=True)
    hudi_layout.write(batch, path, {"hoodie.datasource.write.operation": "upsert"})
    print("COMPLETED", flush=True)
""")

DOOMED_NO_SPARK = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from tests.helpers.live_ops import run_write
    path, rows = sys.argv[1], int(sys.argv[2])
    ids = list(range(0, rows, 2))
    batch = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"u{i}" for i in ids],
                      "v": pa.array([i % 97 for i in ids], pa.int32()), "ts": pa.array([9] * len(ids), pa.int64()),
                      "p": [["a", "b", "c"][i % 3] for i in ids]})
    print("UPSERTING", flush=True)
    run_write(path, batch, {"hoodie.datasource.write.operation": "upsert"})
    print("COMPLETED", flush=True)
""")


def snapshot(path) -> dict[int, str]:
    got = hudi_rs_read(path).to_pylist()
    out = {r["id"]: r["name"] for r in got}
    assert len(out) == len(got), "a key is read twice"
    return out


def merge_markers(path: Path) -> list[Path]:
    return list((path / ".hoodie" / ".temp").glob("*/**/*.marker.MERGE"))


def instant_files(path: Path, instant: str) -> list[Path]:
    return [p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts and instant in p.name]


@pytest.fixture(scope="module")
def crashed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("live_crash")
    scenarios = {"after_tagging": "spark", "mid_writes": "spark", "before_mdt": "plain", "before_complete": "plain"}
    tables, procs, before = {}, {}, {}
    for name in scenarios:
        path = root / name
        hl.write(spark.sql(BASE_SQL), str(path), OPTS)
        tables[name] = path
        before[name] = (snapshot(path), set(timeline_files(path)))
    env_base = {**os.environ, "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env_base.pop("HUDI_LAYOUT_FAULT", None)
    for name, kind in scenarios.items():
        env = dict(env_base)
        if name == "after_tagging":
            env["HUDI_LAYOUT_FAULT"] = "upsert.after_tagging@group"
        elif kind == "plain":
            env["HUDI_LAYOUT_FAULT"] = name
        if kind == "spark":
            cmd = [sys.executable, "-c", DOOMED_SPARK, str(tables[name]), BATCH_SQL]
        else:
            cmd = [sys.executable, "-c", DOOMED_NO_SPARK, str(tables[name]), str(ROWS)]
        procs[name] = subprocess.Popen(cmd, cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       start_new_session=True)
    # mid_writes: kill the driver's whole process group once the first rewritten file group is announced
    deadline = time.time() + 600
    while time.time() < deadline and not merge_markers(tables["mid_writes"]):
        if procs["mid_writes"].poll() is not None:
            break
        time.sleep(0.05)
    kill_group(procs["mid_writes"])
    outputs = {}
    for name, proc in procs.items():
        try:
            out, _ = proc.communicate(timeout=600)
        finally:
            kill_group(proc)
        outputs[name] = (proc.returncode, out.decode(errors="replace"))
    return tables, before, outputs


@pytest.mark.parametrize("phase", ["after_tagging", "mid_writes", "before_mdt", "before_complete"])
def test_sigkill_during_an_upsert_keeps_every_row_exactly_once(spark, crashed, phase) -> None:
    tables, before, outputs = crashed
    path = tables[phase]
    code, out = outputs[phase]
    assert "COMPLETED" not in out, out[-3000:]
    assert code == -signal.SIGKILL, out[-3000:]
    rows_before, timeline_before = before[phase]
    assert snapshot(path) == rows_before  # the killed upsert is invisible
    failed = sorted({f.split(".")[0] for f in set(timeline_files(path)) - timeline_before})
    assert len(failed) == 1, failed
    instant = failed[0]
    if phase == "mid_writes":
        assert instant_files(path, instant) or merge_markers(path), "the kill came before any file was written"
    # the next writer rolls the failed upsert back, then the retried upsert applies exactly once
    hl.write(spark.sql(BATCH_SQL), str(path), {"hoodie.datasource.write.operation": "upsert"})
    assert not instant_files(path, instant)
    assert any(f.endswith(".rollback") for f in timeline_files(path))
    mdt_timeline = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    assert not any(p.name.startswith(instant) for p in mdt_timeline.iterdir())
    got = snapshot(path)
    assert len(got) == ROWS
    assert all(got[i] == (f"u{i}" if i % 2 == 0 else f"n{i}") for i in range(ROWS))
