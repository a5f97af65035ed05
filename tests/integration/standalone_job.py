"""Ingest -> cluster -> skipping query, printed as one JSON line (run by test_standalone_cluster.py).

Usage: python standalone_job.py MASTER WORKDIR ROWS
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    master, work, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import hudi_layout as hl
    from hudi_layout.tools.sample_data import conn_df

    spark = hl.get_spark("hudi_layout-standalone-test", master=master,
                         extra_conf={"spark.sql.shuffle.partitions": "4", "spark.executor.memory": "1g",
                                     "spark.cores.max": "2"})
    path = f"{work}/conn"
    res = hl.write(conn_df(spark, rows, partitions=8), path,
                   {"hoodie.table.name": "conn", "hoodie.datasource.write.recordkey.field": "id"})
    m = hl.cluster(path, ["src_port", "dst_port"], spark=spark, strategy="z-order", method="direct",
                   options={"hoodie.clustering.plan.strategy.target.file.max.bytes":
                            str(max(1, res.bytes_written // 8))})
    where = "src_port < 8000 AND dst_port < 8000"
    plan = hl.explain(path, where)
    count = hl.read(path, where, spark=spark).count()
    full = spark.read.parquet(*[s.base_file_path for s in hl.HudiTable(path).file_slices()]).where(where).count()
    print("RESULT " + json.dumps({
        "master": spark.sparkContext.master, "files_written": res.files_written, "files_out": m.files_out,
        "records": m.records, "count": count, "full_count": full, "files_total": plan.files_total,
        "files_after": plan.files_read}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
