"""A clustering executor killed with SIGKILL at three points leaves a readable table (every row exactly once,
for hudi-rs and for our reader), and the next run completes the interrupted clustering from its plan.

(a) during the file writes (a DIRECT marker of the clustering exists under ``.hoodie/.temp/<T>/``);
(b) ``HUDI_LAYOUT_FAULT=before_mdt``: all files written, metadata table not yet updated, nothing committed;
(c) ``HUDI_LAYOUT_FAULT=before_complete``: metadata table deltacommit written, data instant not completed.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

import hudi_layout
from hudi_layout import HudiTable
from tests.helpers.clustering import (
    completed_replacecommits,
    grid_table,
    hudi_rs_arrow,
    kill_group,
    pending_clusterings,
    rows_digest,
    start_python,
    table_bytes,
    tail,
    timeline_files,
    wait_for,
    write_arrow,
    write_options,
)

pytestmark = pytest.mark.integration

SIDE = 48
N_ROWS = SIDE * SIDE

CLUSTER_CODE = r"""
import sys
import hudi_layout
from hudi_layout.spark.session import get_spark
spark = get_spark(app_name="fault-victim", master="local[1]", ui=False,
                  extra_conf={"spark.sql.shuffle.partitions": "2"})
print("SPARK_READY", flush=True)
m = hudi_layout.cluster(sys.argv[1], ["x", "y"], spark=spark, strategy="hilbert",
                        options={"hoodie.clustering.plan.strategy.target.file.max.bytes": sys.argv[2]})
print("CLUSTERED", m.instant_time, flush=True)
"""


@pytest.fixture(scope="module")
def source_table(spark, tmp_path_factory) -> tuple[Path, dict[str, object]]:
    path = tmp_path_factory.mktemp("fault-src") / "grid"
    write_arrow(spark, grid_table(SIDE), path, write_options("faults"), files=8)
    ours = hudi_layout.read(str(path), spark=spark).toArrow()
    rs = hudi_rs_arrow(path)
    return path, {"ours": rows_digest(ours), "hudi-rs": rows_digest(rs)}


def _check_rows(spark, path: Path, expected: dict[str, object]) -> None:
    ours = hudi_layout.read(str(path), spark=spark).toArrow()
    rs = hudi_rs_arrow(path)
    for name, t in (("ours", ours), ("hudi-rs", rs)):
        ids = t.column("id").to_pylist()
        assert len(ids) == N_ROWS and len(set(ids)) == N_ROWS, f"{name}: {len(ids)} rows, {len(set(ids))} ids"
    assert rows_digest(ours) == expected["ours"]
    assert rows_digest(rs) == expected["hudi-rs"]


def _base_files_of(path: Path, t: str) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob(f"*_{t}.parquet") if ".hoodie" not in p.parts}


def _markers(path: Path) -> list[Path]:
    tmp = path / ".hoodie" / ".temp"
    return [p for p in tmp.rglob("*.marker.*")] if tmp.is_dir() else []


_ALL_FAULTS = os.environ.get("HUDI_LAYOUT_FAULTS") == "all"
_long = pytest.mark.skipif(not _ALL_FAULTS, reason="long fault case: HUDI_LAYOUT_FAULTS=all runs it "
                                                  "(CI kills a clustering during its writes and before completing)")


@pytest.mark.parametrize("fault", ["during_writes", pytest.param("before_mdt", marks=_long), "before_complete"])
def test_killed_clustering_is_recovered(spark, tmp_path: Path, source_table, fault):
    src, expected = source_table
    path = tmp_path / "grid"
    shutil.copytree(src, path)
    commits_before = [f for f in timeline_files(path)]
    target = max(1, table_bytes(path) // 24)  # ~24 output files: a long enough write phase to hit
    env = {} if fault == "during_writes" else {"HUDI_LAYOUT_FAULT": fault}
    log = tmp_path / "victim.log"
    proc = start_python(CLUSTER_CODE, str(path), str(target), log=log, **env)
    try:
        if fault == "during_writes":
            hit = wait_for(lambda: bool(_markers(path)), timeout=300, interval=0.02, proc=proc)
            assert hit, f"no marker appeared:\n{tail(log)}"
            kill_group(proc)
        else:
            proc.wait(timeout=300)  # the fault hook SIGKILLs the driver itself
            assert proc.returncode == -signal.SIGKILL, tail(log)
            kill_group(proc)  # and its JVM
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert "CLUSTERED" not in tail(log), "the clustering finished before it could be killed"

    pending = pending_clusterings(path)
    assert len(pending) == 1, timeline_files(path)
    t = pending[0]
    assert t not in completed_replacecommits(path)
    if fault != "during_writes":
        assert _base_files_of(path, t), "all files should have been written before the fault"
    # readable, every row exactly once, none of the dead attempt's files visible
    _check_rows(spark, path, expected)
    assert all(s.commit_time != t for s in HudiTable(str(path)).file_slices())

    done = hudi_layout.execute_pending(str(path), spark=spark)
    assert [m.instant_time for m in done] == [t]
    assert completed_replacecommits(path) == [t]
    assert pending_clusterings(path) == []
    _check_rows(spark, path, expected)
    slices = HudiTable(str(path)).file_slices()
    assert {s.commit_time for s in slices} == {t}
    assert len(slices) == done[0].files_out
    # the killed attempt's files were rolled back: only the committed files of T are on disk
    assert _base_files_of(path, t) == {s.relative_path for s in slices}
    assert not (path / ".hoodie" / ".temp" / t).exists()
    assert set(commits_before) <= set(timeline_files(path))
