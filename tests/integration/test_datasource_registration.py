"""``spark.read.format("hudi_layout")`` in a session the user built, with Spark's defaults.

Until session 14 this failed twice over: the format was unknown until something of ours had registered it
(a JVM ``ClassNotFoundException: hudi_layout.DefaultSource`` traceback), and once registered every read
failed with ``DATA_SOURCE_PUSHDOWN_DISABLED`` because our reader took pushed filters while Spark's default
leaves ``spark.sql.python.filterPushdown.enabled`` off. Spark now registers the source by itself from the
top-level module ``pyspark_hudi_layout`` (as for any installed package whose module name starts with
``pyspark_``), and the reader takes no filters while no plan may be pruned by them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import hudi_layout as hl

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

USER_SESSION = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
df = spark.read.format("hudi_layout").load(sys.argv[1])
print("rows", df.count(), df.where("id < 10").count(), sorted(r.g for r in df.where("id = 7").collect()))
spark.sql(f"CREATE TABLE t USING hudi_layout LOCATION '{sys.argv[1]}'")
print("sql", spark.sql("SELECT count(*) FROM t WHERE g = 1").collect()[0][0])
"""


def test_a_users_own_session_reads_the_format_without_registering(spark, tmp_path):
    path = str(tmp_path / "t")
    hl.write(spark.range(0, 100).selectExpr("id", "id % 3 AS g"), path,
             {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"})
    script = tmp_path / "user_session.py"
    script.write_text(USER_SESSION)
    # the project root on the path, as an installed wheel puts pyspark_hudi_layout.py in site-packages (the
    # editable install of the dev environment maps modules by an import hook, which Spark's lookup cannot list)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep), "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run([sys.executable, str(script), path], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "rows 100 10 [1]" in out.stdout and "sql 33" in out.stdout, out.stdout


def test_a_new_session_of_the_same_context_reads_the_format(spark, tmp_path: Path) -> None:
    """``spark.newSession()`` finds the format by itself too (Spark discovers ``pyspark_hudi_layout`` per
    session). In the project's own venv it did not until session 28: the editable install hid the module from
    that discovery, and every read in the new session failed with a ~180-line ``DATA_SOURCE_NOT_FOUND``."""
    path = str(tmp_path / "t")
    hl.write(spark.range(5).selectExpr("id", "id AS ts"), path,
             {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"})
    other = spark.newSession()
    assert other.read.format("hudi_layout").load(path).count() == 5
