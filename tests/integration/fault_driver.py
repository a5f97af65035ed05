"""The doomed writer of the fault-injection tests: one operation on one table, in its own process.

    python tests/integration/fault_driver.py OP TABLE [--start N] [--rows N] [--spark] [--max-file-size B]

OP is ``ingest`` (append rows ``start .. start+rows``), ``overwrite`` (replace the table with them),
``cluster`` (z-order on ``v, id``; starts Spark) or ``rollback`` (what every writer does first: roll back
the writes of dead writers). Without ``--spark`` the executor-side writer runs in this process (the
same WriteSession the data source uses), so driver-side crash points cost no Spark start-up.
``HUDI_LAYOUT_FAULT`` names crash points of :mod:`hudi_layout.table.faults`.

The process prints ``READY`` once Spark (if any) is up, ``WRITING`` right before the operation and
``DONE`` after it; crash points come from ``HUDI_LAYOUT_FAULT`` (see ``hudi_layout.table.faults``). Rows are
:func:`fault_rows`, so the test computes exactly which rows a table must hold.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pyarrow as pa

OPTS = {"hoodie.table.name": "faults", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.metadata.compact.max.delta.commits": "3"}


def fault_rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({"id": pa.array(ids, pa.int32()), "name": [f"n{i}" for i in ids],
                     "v": pa.array([i / 3 for i in ids], pa.float64()),
                     "p": [("x", "y", "z")[i % 3] for i in ids]})


SPARK_ROWS_SQL = ("CAST(id AS INT) AS id", "concat('n', CAST(id AS STRING)) AS name",
                  "CAST(id AS DOUBLE) / 3 AS v", "CASE id % 3 WHEN 0 THEN 'x' WHEN 1 THEN 'y' ELSE 'z' END AS p")


def _write_without_spark(path: str, data: pa.Table, opts: dict[str, str], overwrite: bool) -> None:
    from hudi_layout.writer.base_file_writer import key_and_partition_values as _key_and_partition
    from hudi_layout.writer.base_file_writer import write_partition
    from hudi_layout.writer.transaction import WriteSession

    session = WriteSession.start(path, opts, data.schema, overwrite)
    try:
        batches = (_key_and_partition(b, session.record_keys, session.spec.partition_rule)
                   for b in data.to_batches(max_chunksize=500))
        rows = [r for out in write_partition(session.spec, batches) for r in out.to_pylist()]
        session.commit(rows)
    except BaseException:
        session.abort()
        raise


def _late_writer_driver(args: argparse.Namespace) -> int:
    """Start a write, hand its executor work to a process in another session (as PySpark's worker daemon
    is), then wait to be killed: the executor outlives this driver."""
    import pickle
    import subprocess

    from hudi_layout.writer.transaction import WriteSession

    opts = {**OPTS, "hoodie.parquet.max.file.size": args.max_file_size}
    data = fault_rows(args.start, args.rows)
    session = WriteSession.start(args.table, opts, data.schema, False)
    spec_file = Path(args.table).parent / "late-writer.spec"
    spec_file.write_bytes(pickle.dumps(session.spec))
    with open(Path(args.table).parent / "w.log.executor", "wb") as log:
        subprocess.Popen([sys.executable, __file__, "ingest", args.table, "--executor", str(spec_file),
                          "--start", str(args.start), "--rows", str(args.rows)], stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    print("WRITING", flush=True)
    import time

    while True:
        time.sleep(1)


def _late_executor(spec_file: str, start: int, rows: int) -> int:
    """Write small batches slowly, one new file each, reporting every creation refused by the file gate."""
    import pickle
    import time

    from hudi_layout.writer.base_file_writer import key_and_partition_values as _key_and_partition
    from hudi_layout.writer.base_file_writer import write_partition

    spec = pickle.loads(Path(spec_file).read_bytes())
    data = fault_rows(start, rows)
    refused = 0
    print("EXECUTOR_WRITING", flush=True)
    for i, batch in enumerate(data.to_batches(max_chunksize=100)):
        prepared = _key_and_partition(batch, ["id"], spec.partition_rule)
        try:
            for _ in write_partition(spec, iter([prepared])):
                pass
            print(f"WROTE {i}", flush=True)
        except Exception as e:  # noqa: BLE001 - report and keep trying, as a stubborn late task would
            refused += 1
            print(f"REFUSED {i}: {str(e).splitlines()[0][:200]}", flush=True)
            if refused >= 5:
                return 0
        time.sleep(0.1)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("op", choices=["ingest", "overwrite", "cluster", "rollback", "late-writer"])
    ap.add_argument("--executor", help="(late-writer) run as the executor of the pickled spec in this file")
    ap.add_argument("table")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--max-file-size", default="125829120")
    ap.add_argument("--partitions", type=int, default=2, help="Spark input partitions (tasks)")
    args = ap.parse_args(argv)
    if args.executor:
        return _late_executor(args.executor, args.start, args.rows)
    if args.op == "late-writer":
        return _late_writer_driver(args)
    opts = {**OPTS, "hoodie.parquet.max.file.size": args.max_file_size}
    spark = None
    if args.spark or args.op == "cluster":
        import hudi_layout

        spark = hudi_layout.get_spark(master=os.environ.get("FAULT_MASTER", "local[2]"), extra_conf={
            "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    print("READY", flush=True)
    import hudi_layout

    print("WRITING", flush=True)
    if args.op == "cluster":
        hudi_layout.cluster(args.table, ["v", "id"], spark=spark, strategy="z-order", options=opts)
    elif args.op == "rollback":
        from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
        from hudi_layout.table.commit_protocol import rollback_failed_writes

        rollback_failed_writes(args.table, hooks=COMMIT_HOOKS)
    elif spark is not None:
        df = spark.range(args.start, args.start + args.rows, 1, args.partitions).selectExpr(*SPARK_ROWS_SQL)
        hudi_layout.write(df, args.table, opts, mode="overwrite" if args.op == "overwrite" else "append")
    else:
        _write_without_spark(args.table, fault_rows(args.start, args.rows), opts, args.op == "overwrite")
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
