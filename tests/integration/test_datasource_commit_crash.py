"""The data source's ``commit`` runs in a Spark Python worker. When that worker dies right after the instant
completed, Spark calls ``abort`` in another worker on a pickled copy that still sees the write pending; that
rollback deleted the data files of the completed commit (hl.read and every write then refused the damaged
table, hudi-rs silently lost the rows). Found by session 27's crash probe; ``abort_write`` now checks the
timeline first. Runs in a subprocess: the crash point reaches the workers through the JVM's environment."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hudi_layout as hl
from tests.helpers.integration import hudi_rs_read

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import os, sys
    os.environ["HUDI_LAYOUT_FAULT"] = "commit.after_complete"  # the JVM and its Python workers inherit it
    import hudi_layout as hl
    spark = hl.get_spark(master="local[1]", extra_conf={"spark.driver.memory": "1g",
                                                        "spark.sql.shuffle.partitions": "1"})
    del os.environ["HUDI_LAYOUT_FAULT"]  # not this driver
    path = sys.argv[1]
    opts = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p"}
    hl.write(spark.sql("SELECT id, CAST(id % 3 AS STRING) AS p FROM range(0, 100)"), path, opts)
    w = spark.sql("SELECT id, CAST(id % 3 AS STRING) AS p FROM range(100, 200)").write.format("hudi_layout")
    for k, v in {**opts, "hoodie.datasource.write.operation": "insert"}.items():
        w = w.option(k, v)
    try:
        w.mode("append").save(path)
    except Exception:
        print("SAVE FAILED")  # the commit worker was killed: Spark reports the write as failed
""")


def test_a_commit_worker_killed_after_completing_leaves_the_commit_whole(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    env = {**os.environ, "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("HUDI_LAYOUT_FAULT", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SAVE FAILED" in done.stdout  # the kill landed
    assert sorted(hudi_rs_read(path).column("id").to_pylist()) == list(range(200))
    assert hl.read(str(path), spark=spark).count() == 200
    hl.write(spark.sql("SELECT id, CAST(id % 3 AS STRING) AS p FROM range(0, 2)"), str(path),
             {"hoodie.datasource.write.operation": "upsert"})
    assert sorted(r["id"] for r in hl.read(str(path), spark=spark).collect()) == list(range(200))
