"""Record keys and partition folders are the same text on every write path and in every session zone.

Until session 15 a timestamp key or partition value was Spark's cast in the *session* zone (an upsert from a
Los Angeles session of rows a UTC session wrote filed them under other folders: 18 rows for 12 keys), and the
data source writer formatted keys with Arrow (``2020-01-01 00:00:00.000000Z``, ``1e-300``) where
``hudi_layout.write`` had Spark's text (``2020-01-01 00:00:00``, ``1.0E-300``): an upsert through one missed
the rows the other wrote.
"""

from __future__ import annotations

import datetime as dt
import os
import random

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import hudi_layout as hl
from hudi_layout.writer.key_text import SPARK_UTC_TEXT, arrow_key_text

pytestmark = pytest.mark.integration

UTC = dt.timezone.utc


def test_the_utc_text_is_the_utc_cast_in_every_zone_and_in_arrow(spark):
    rng = random.Random(7)
    micros = [rng.randint(-62135596800_000000, 253402300799_999999) for _ in range(500)]
    micros += [0, -1, 1, 500_000, -500_000, 86_400_000_000 - 1, 1577836800_000010]
    df = spark.createDataFrame([(m,) for m in micros], "m BIGINT").withColumn("ts", F.timestamp_micros("m"))
    want = {r.m: r.t for r in df.select("m", F.col("ts").cast("string").alias("t")).collect()}  # UTC session
    try:
        for zone in ("America/Los_Angeles", "Asia/Kolkata", "UTC"):
            spark.conf.set("spark.sql.session.timeZone", zone)
            got = {r.m: r.t for r in df.select("m", F.expr(SPARK_UTC_TEXT.format(col="ts")).alias("t")).collect()}
            assert got == want, zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    arrow = arrow_key_text(pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))).to_pylist()
    assert dict(zip(micros, arrow)) == want


def _options(**extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "k", "hoodie.datasource.write.recordkey.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "pts",
            "hoodie.datasource.write.partitionpath.urlencode": "true", **extra}


def test_upserts_from_other_zones_and_paths_find_the_rows(spark, tmp_path):
    rows = [(dt.datetime(2020, 1, 1, tzinfo=UTC) + dt.timedelta(minutes=90 * i, microseconds=i % 2),
             dt.datetime(2020, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i % 3), dt.datetime(2020, 1, 1, i % 4), f"v{i}")
             for i in range(12)]
    schema = "ts TIMESTAMP, pts TIMESTAMP, ntz TIMESTAMP_NTZ, v STRING"
    by_write, by_source = str(tmp_path / "write"), str(tmp_path / "source")
    try:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        hl.write(spark.createDataFrame(rows, schema), by_write, _options())
        spark.createDataFrame(rows, schema).write.format("hudi_layout").options(**_options()).mode("append") \
            .save(by_source)
        assert sorted(os.listdir(by_write)) == sorted(os.listdir(by_source))
        for zone in ("America/Los_Angeles", "Asia/Kolkata"):
            spark.conf.set("spark.sql.session.timeZone", zone)
            update = spark.createDataFrame([(t, p, n, v + zone) for t, p, n, v in rows[:6]], schema)
            for path in (by_write, by_source):
                hl.write(update, path, {"hoodie.datasource.write.operation": "upsert"})
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    for path in (by_write, by_source):
        got = hl.read(path, spark=spark).select("ts", "v").collect()
        assert len(got) == 12 and len({r.ts for r in got}) == 12, path
        assert sum(r.v.endswith("Asia/Kolkata") for r in got) == 6
        assert len([d for d in os.listdir(path) if d != ".hoodie"]) == 3


def test_the_data_source_refuses_floating_point_keys_with_one_line(spark, tmp_path):
    df = spark.createDataFrame([(1.5, "a")], "d DOUBLE, v STRING")
    with pytest.raises(Exception, match="record key field 'd' is double") as e:
        df.write.format("hudi_layout").options(**{"hoodie.table.name": "k",
                                                  "hoodie.datasource.write.recordkey.field": "d"}).mode("append").save(
            str(tmp_path / "t"))
    assert "Traceback" not in str(e.value).split("\n")[0]
    assert not (tmp_path / "t" / ".hoodie" / "timeline").exists() or not [
        f for f in os.listdir(tmp_path / "t" / ".hoodie" / "timeline") if f.endswith(".commit")]
    hl.write(df, str(tmp_path / "w"), {"hoodie.table.name": "k", "hoodie.datasource.write.recordkey.field": "d"})
