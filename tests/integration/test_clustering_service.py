"""Async clustering service and inline clustering while data keeps arriving.

A writer process appends small batches with unique ids while a ``ClusteringService`` process clusters every
2 commits; SIGTERM stops the service cleanly (exit code 0). No row may be lost or duplicated and at least
one clustering must complete. Inline clustering (``hoodie.clustering.inline``) is tested in-process.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hudi_layout
from hudi_layout.clustering.schedule import schedule_clustering
from hudi_layout.services.clustering_service import commits_since_last_clustering
from tests.helpers.clustering import (
    completed_replacecommits,
    hudi_rs_arrow,
    pending_clusterings,
    rows_digest,
    start_python,
    tail,
    wait_for,
    write_options,
)

pytestmark = pytest.mark.integration

COMMITS = 12  # enough for several service rounds: a clustering every few commits
ROWS_PER_COMMIT = 500


def batch(k: int, rows: int = ROWS_PER_COMMIT) -> pa.Table:
    """Commit ``k``'s rows: unique ids ``b{k}_{i}``, a random 2-D point and a payload."""
    rng = np.random.default_rng(1000 + k)
    return pa.table({
        "id": pa.array([f"b{k:03d}_{i:05d}" for i in range(rows)]),
        "x": pa.array(rng.integers(0, 1000, rows), pa.int32()),
        "y": pa.array(rng.integers(0, 1000, rows), pa.int32()),
        "v": pa.array(rng.random(rows), pa.float64()),
    })


#: the writer's options (the table's), and the service's (the table's and its own; a write refuses them)
WRITE_OPTIONS = write_options("svc")
OPTIONS = write_options("svc", **{
    "hoodie.clustering.async.max.commits": 2,
    "hoodie.clustering.plan.strategy.sort.columns": "x,y",
    "hoodie.layout.optimize.strategy": "z-order",
})

WRITER_CODE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])
import hudi_layout
from hudi_layout.spark.session import get_spark
from tests.integration.test_clustering_service import WRITE_OPTIONS, batch
spark = get_spark(app_name="svc-writer", master="local[1]", ui=False,
                  extra_conf={"spark.sql.shuffle.partitions": "2"})
path, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for k in range(first, last):
    hudi_layout.write(spark.createDataFrame(batch(k)).coalesce(1), path, WRITE_OPTIONS)
    print("COMMIT", k, time.time(), flush=True)
    time.sleep(1.0)  # keep the writer busy for as long as the service needs to cluster
print("WRITER_DONE", flush=True)
"""

SERVICE_CODE = r"""
import json, sys, logging
sys.path.insert(0, sys.argv[2])
logging.basicConfig(level=logging.INFO)
import hudi_layout
from hudi_layout.spark.session import get_spark
from tests.integration.test_clustering_service import OPTIONS
spark = get_spark(app_name="svc-clustering", master="local[1]", ui=False,
                  extra_conf={"spark.sql.shuffle.partitions": "2"})
svc = hudi_layout.ClusteringService(sys.argv[1], OPTIONS, spark=spark, poll_seconds=2)
svc.install_signal_handlers()
print("SERVICE_READY", flush=True)
stats = svc.run()
print("SERVICE_STATS", json.dumps({"executed": stats.executed, "scheduled": stats.scheduled,
                                   "failures": stats.failures}), flush=True)
"""


def _expected(commits: int) -> pa.Table:
    return pa.concat_tables([batch(k) for k in range(commits)])


def test_writer_and_async_service_together(spark, tmp_path: Path):
    path = tmp_path / "svc"
    here = str(Path(__file__).resolve().parents[2])  # the project root: tests.* imports
    hudi_layout.write(spark.createDataFrame(batch(0)).coalesce(1), str(path), WRITE_OPTIONS)
    writer_log, service_log = tmp_path / "writer.log", tmp_path / "service.log"
    service = start_python(SERVICE_CODE, str(path), here, log=service_log)
    writer = start_python(WRITER_CODE, str(path), "1", str(COMMITS), here, log=writer_log)
    try:
        assert writer.wait(timeout=400) == 0, tail(writer_log)
        # let the service catch up: a clustering after the last commits, none pending
        wait_for(lambda: completed_replacecommits(path) and not pending_clusterings(path)
                 and commits_since_last_clustering(str(path)) < 2, timeout=180, interval=1.0, proc=service)
        time.sleep(1.0)
        assert service.poll() is None, f"service died:\n{tail(service_log)}"
        service.send_signal(signal.SIGTERM)
        rc = service.wait(timeout=180)
        assert rc == 0, f"service exit code {rc}:\n{tail(service_log)}"
    finally:
        for p in (writer, service):
            if p.poll() is None:
                p.kill()
                p.wait(timeout=60)
    stats_lines = [ln for ln in service_log.read_text().splitlines() if ln.startswith("SERVICE_STATS ")]
    assert stats_lines, tail(service_log)
    stats = json.loads(stats_lines[-1].split(" ", 1)[1])
    assert stats["executed"] >= 1, stats

    assert len(completed_replacecommits(path)) >= 1
    expected = _expected(COMMITS)
    want_ids = sorted(expected.column("id").to_pylist())
    rs = hudi_rs_arrow(path)
    ours = hudi_layout.read(str(path), spark=spark).toArrow()
    for name, t in (("hudi-rs", rs), ("ours", ours)):
        assert t.num_rows == COMMITS * ROWS_PER_COMMIT, name
        assert sorted(t.column("id").to_pylist()) == want_ids, name
    assert rows_digest(rs.select(expected.column_names)) == rows_digest(expected)
    assert rows_digest(ours.select(expected.column_names)) == rows_digest(expected)


def _inline_options(name: str, *, max_commits: int) -> dict[str, str]:
    """Write options with inline Hilbert clustering on ``x, y`` every ``max_commits`` commits."""
    return write_options(name, **{"hoodie.clustering.inline": "true",
                                  "hoodie.clustering.inline.max.commits": max_commits,
                                  "hoodie.clustering.plan.strategy.sort.columns": "x,y",
                                  "hoodie.layout.optimize.strategy": "hilbert"})


def test_inline_clustering_every_two_commits(spark, tmp_path: Path):
    path = tmp_path / "inline"
    opts = _inline_options("inline", max_commits=2)
    hudi_layout.write(spark.createDataFrame(batch(0, 300)).coalesce(2), str(path), opts)
    assert completed_replacecommits(path) == []
    hudi_layout.write(spark.createDataFrame(batch(1, 300)).coalesce(2), str(path), opts)
    first = completed_replacecommits(path)
    assert len(first) == 1
    hudi_layout.write(spark.createDataFrame(batch(2, 300)).coalesce(2), str(path), opts)
    assert completed_replacecommits(path) == first  # one commit since the last clustering
    hudi_layout.write(spark.createDataFrame(batch(3, 300)).coalesce(2), str(path), opts)
    assert len(completed_replacecommits(path)) == 2
    assert pending_clusterings(path) == []
    expected = pa.concat_tables([batch(k, 300) for k in range(4)])
    rs = hudi_rs_arrow(path)
    assert rs.num_rows == expected.num_rows
    assert rows_digest(rs.select(expected.column_names)) == rows_digest(expected)


def test_inline_clustering_first_runs_a_plan_its_dead_predecessor_left_pending(spark, tmp_path: Path):
    """An inline clustering killed after its plan leaves the plan pending, and updates to its groups are
    refused until it runs. The next write with inline clustering on runs it first (Hudi's writer does the same,
    ``runAnyPendingClustering``), even when no new clustering is due yet."""
    path = tmp_path / "resume"
    opts = _inline_options("resume", max_commits=3)
    hudi_layout.write(spark.createDataFrame(batch(0, 300)).coalesce(2), str(path), opts)
    scheduled = schedule_clustering(str(path), opts, columns="x,y", include_all_files=True)
    assert scheduled is not None  # a plan no process executes: its writer died after writing it
    assert pending_clusterings(path) == [scheduled[0]]
    hudi_layout.write(spark.createDataFrame(batch(1, 300)).coalesce(2), str(path), opts)  # new keys only
    assert pending_clusterings(path) == []
    assert completed_replacecommits(path) == [scheduled[0]]
    expected = pa.concat_tables([batch(k, 300) for k in range(2)])
    for name, t in (("hudi-rs", hudi_rs_arrow(path)), ("ours", hudi_layout.read(str(path), spark=spark).toArrow())):
        assert t.num_rows == expected.num_rows, name
        assert rows_digest(t.select(expected.column_names)) == rows_digest(expected), name
