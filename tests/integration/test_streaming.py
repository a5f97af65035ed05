"""Structured Streaming: ``foreachBatch`` with ``hudi_layout.write`` is the way in (docs/live-writes.md,
"Streaming"); ``writeStream`` / ``readStream`` of the format are refused naming what to use instead (Spark's
default answer was a NOT_IMPLEMENTED wrapped in tracebacks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hudi_layout as hl
from tests.helpers.integration import hudi_rs_read

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "s", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "upsert"}
SCHEMA = "id long, ts long, v string"


def test_foreach_batch_upserts_every_micro_batch_and_the_format_refuses_streams(spark, tmp_path: Path) -> None:
    source, path = tmp_path / "in", str(tmp_path / "t")
    source.mkdir()
    for n, rows in enumerate([[(1, 1, "a"), (2, 1, "b")], [(2, 2, "b2"), (3, 1, "c")]]):
        (source / f"{n}.json").write_text("\n".join(json.dumps({"id": i, "ts": t, "v": v}) for i, t, v in rows))
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))

    def upsert(batch, _batch_id):  # type: ignore[no-untyped-def]
        hl.write(batch, path, OPTS)

    query = (stream.writeStream.foreachBatch(upsert).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(180)
    want = [(1, "a"), (2, "b2"), (3, "c")]
    assert sorted((r["id"], r["v"]) for r in hl.read(path, spark=spark).collect()) == want
    rs = hudi_rs_read(path)
    assert sorted(zip(rs.column("id").to_pylist(), rs.column("v").to_pylist())) == want

    sink = (stream.writeStream.format("hudi_layout").option("checkpointLocation", str(tmp_path / "cp2"))
            .trigger(availableNow=True).start(path))
    with pytest.raises(Exception, match="foreachBatch"):
        sink.awaitTermination(180)
    reader = spark.readStream.format("hudi_layout").load(path).writeStream.format("noop").start()
    with pytest.raises(Exception, match="incremental query"):
        reader.awaitTermination(180)
