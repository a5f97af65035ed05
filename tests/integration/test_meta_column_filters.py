"""Filters on Hudi's meta columns (``_hoodie_commit_time > '...'``, ``_hoodie_record_key = ...``) through
``hl.read``, as Hudi users write them.

Until session 14 ``hl.read`` refused them ("unknown column '_hoodie_commit_time'"): the planner bound filters
to the data columns only. They are now bound to the meta columns too (where the table populates them), prune
by the column_stats the index keeps for them, and the row filter runs before the meta columns are dropped
from the result. The oracle is hudi-rs's read of the table, filtered by Spark.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import hudi_layout as hl
from tests.helpers.integration import hudi_rs_read

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "meta", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part"}


def test_filters_on_meta_columns_prune_and_match_hudi_rs(spark, tmp_path):
    path = str(tmp_path / "t")
    rows = spark.range(0, 800).selectExpr("id", "CAST(id AS INT) AS k", "IF(id % 2 = 0, 'a', 'b') AS part")
    hl.write(rows.repartitionByRange(16, "id"), path, OPTS)
    hl.write(rows.where("id < 120").withColumn("k", F.col("k") + 5000), path,
             {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    hl.write(rows.where("id >= 790"), path, {**OPTS, "hoodie.datasource.write.operation": "delete"})
    hl.write(spark.range(800, 900).selectExpr("id", "CAST(id AS INT) AS k", "'a' AS part"), path, OPTS)
    hl.cluster(path, ["k"], strategy="linear", spark=spark)

    reference = spark.createDataFrame(hudi_rs_read(path))
    commits = sorted({r[0] for r in reference.select("_hoodie_commit_time").collect()})
    assert len(commits) >= 3
    questions = [f"_hoodie_commit_time = '{commits[1]}'", f"_hoodie_commit_time > '{commits[0]}'",
                 f"_hoodie_commit_time <= '{commits[0]}' AND k < 300", "_hoodie_record_key = '42'",
                 "_hoodie_record_key IN ('7', '799', '850')", "_hoodie_partition_path = 'b' AND k > 5100",
                 f"_hoodie_commit_time >= '{commits[-1]}' OR k = 3"]
    total = len(hl.HudiTable(path).file_slices())
    pruned = 0
    for q in questions:
        want = sorted(r[0] for r in reference.where(q).select("id").collect())
        assert want, q
        for where in (q, F.expr(q)):
            got = hl.read(path, where, spark=spark)
            assert not [c for c in got.columns if c.startswith("_hoodie")]  # filtered on, not returned
            assert sorted(r[0] for r in got.select("id").collect()) == want, q
        with_meta = hl.read(path, q, spark=spark, include_meta=True)
        assert sorted(r[0] for r in with_meta.select("id").collect()) == want, q
        plan = hl.explain(path, q)
        pruned += plan.files_read < total
    got = hl.read(path, [("_hoodie_record_key", "=", "42")], spark=spark)
    assert [r[0] for r in got.select("id").collect()] == [42]
    assert pruned >= 2  # the index's meta-column statistics skip files (the clustering mixed the commits)
