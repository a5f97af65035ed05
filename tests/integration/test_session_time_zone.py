"""Timestamp and date predicates in sessions outside UTC, through every read entry point, in one sequence.

Spark reads ``TIMESTAMP '...'`` text without an offset, text compared with a timestamp column and a date
compared with a timestamp in ``spark.sql.session.timeZone``. Until session 14 our SQL-text and ``Column``
front ends read them as UTC: in ``America/Los_Angeles`` ``hl.read(path, "ts < TIMESTAMP '2020-01-01
00:00:00'")`` returned 200 of Spark's 224 rows (files holding rows between midnight UTC and 08:00 UTC were
skipped), 24 of 72 questions over four zones were wrong. The oracle is Spark itself over the table's parquet
files (one commit, so the files are the snapshot), which shares no code with our reads; the session keeps
changing zone between questions, as a user's does.
"""

from __future__ import annotations

import glob
import os

import pytest
from pyspark.sql import functions as F

import hudi_layout as hl

pytestmark = pytest.mark.integration

ZONES = ["America/Los_Angeles", "Asia/Kolkata", "Pacific/Kiritimati", "-03:30"]
QUESTIONS = [
    "ts < TIMESTAMP '2020-01-01 00:00:00'", "ts >= TIMESTAMP '2020-01-01 00:00:00'",
    "ts = TIMESTAMP '2020-01-01 03:00:00'", "ts BETWEEN '2020-01-01 00:00:00' AND '2020-01-01 06:00:00'",
    "ts < '2020-01-01'", "ts >= DATE '2020-01-02'", "ts < DATE '2020-01-02'",
    "d = DATE '2020-01-01'", "d < TIMESTAMP '2020-01-01 05:00:00'", "d >= TIMESTAMP '2020-01-01 05:00:00'",
    "ts IN (TIMESTAMP '2020-01-01 03:00:00', TIMESTAMP '2020-01-02 03:00:00')",
    "ts <= TIMESTAMP_NTZ '2020-01-01 00:00:00'", "ts > TIMESTAMP '2020-01-01 00:00:00+05:00'",
    "ts < CAST('2020-01-01 02:00:00' AS TIMESTAMP)", "ntz < TIMESTAMP '2020-01-01 00:00:00'",
    "ntz >= TIMESTAMP '2020-01-01 00:00:00+05:00'", "ntz = '2020-01-01 03:00:00'", "d = '2020-01-01'",
    "ts = '2020-03-08 02:30:00' OR ts = TIMESTAMP '2020-11-01 01:30:00'",  # a DST gap and overlap (US zones)
]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """480 rows, one every 15 minutes from 2019-12-30 00:00 UTC plus the DST edges of 2020 in Los Angeles, in
    49 files of about 10 rows (each file a 2.5 hour window, so skipping decides a lot)."""
    path = str(tmp_path_factory.mktemp("tz") / "t")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    base = spark.range(0, 480).selectExpr("id", "timestamp_seconds(1577664000 + id * 900) AS ts")
    edges = spark.createDataFrame([(1000, "2020-03-08 10:30:00"), (1001, "2020-11-01 08:30:00"),
                                   (1002, "2020-11-01 09:30:00")], "id long, t string") \
        .selectExpr("id", "CAST(t AS TIMESTAMP) AS ts")
    df = base.unionByName(edges).selectExpr("id", "ts", "CAST(ts AS TIMESTAMP_NTZ) AS ntz",
                                            "CAST(ts AS DATE) AS d", "'p' AS part").repartitionByRange(49, "ts")
    hl.write(df, path, {"hoodie.table.name": "tz", "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.datasource.write.partitionpath.field": "part"})
    yield path
    spark.conf.set("spark.sql.session.timeZone", "UTC")


def ids(df) -> list[int]:
    return sorted(r[0] for r in df.select("id").collect())


def test_every_entry_point_reads_timestamps_in_the_session_zone(spark, table):
    files = glob.glob(os.path.join(table, "**", "*.parquet"), recursive=True)
    assert len(files) >= 40
    plain = spark.read.parquet(*files)
    file_of = {r[0]: r[1] for r in plain.select("id", "_hoodie_file_name").collect()}
    loaded = spark.read.format("hudi_layout").load(table)  # loaded once, asked in every zone
    loaded.createOrReplaceTempView("tz_loaded")
    spark.sql("DROP TABLE IF EXISTS tz_sql")
    spark.sql(f"CREATE TABLE tz_sql USING hudi_layout LOCATION '{table}'")

    def frame_for(entry: str, q: str):
        if entry == "read(sql)":
            return hl.read(table, q, spark=spark)
        if entry == "read(Column)":
            return hl.read(table, F.expr(q), spark=spark)
        if entry == "data source":
            return spark.read.format("hudi_layout").load(table).where(q)
        if entry == "loaded DataFrame":
            return loaded.where(q)
        return spark.sql(f"SELECT id FROM {'tz_loaded' if entry == 'temp view' else 'tz_sql'} WHERE {q}")

    wrong: list[str] = []
    skipped = 0
    asked = 0
    try:
        for zone in ZONES:
            spark.conf.set("spark.sql.session.timeZone", zone)
            # Spark's answers to every question at once (the oracle), then each question through our reads
            flags = plain.selectExpr("id", *[f"coalesce({q}, false) AS q{i}" for i, q in enumerate(QUESTIONS)])
            rows = flags.collect()
            for i, q in enumerate(QUESTIONS):
                want = sorted(r[0] for r in rows if r[i + 1])
                # the data source paths in turn (they read through Python workers: slower)
                other = ("data source", "loaded DataFrame", "temp view", "SQL table")[(asked := asked + 1) % 4]
                for entry in ("read(sql)", "read(Column)", other):
                    got = ids(frame_for(entry, q))
                    if got != want:
                        wrong.append(f"{zone} {entry} {q}: {len(got)} rows, Spark {len(want)}")
                plan = hl.explain(table, q)  # no session given: the active one's zone
                candidates = {os.path.basename(p) for p in plan.candidate_files}
                missing = {file_of[row_id] for row_id in want} - candidates
                if missing:
                    wrong.append(f"{zone} explain {q}: {len(missing)} files with matching rows dropped")
                skipped += len(candidates) < len(files)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        spark.sql("DROP TABLE IF EXISTS tz_sql")
    assert not wrong, "\n".join(wrong)
    assert skipped >= len(ZONES) * 12  # the questions still skip files


def test_tuples_and_get_spark_keep_the_session_zone(spark, table):
    """hudi-rs style tuples carry text read in the session zone too; ``get_spark()`` on a running session
    leaves its zone alone (it used to reset it to UTC)."""
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
        hl.get_spark()
        assert spark.conf.get("spark.sql.session.timeZone") == "America/Los_Angeles"
        got = ids(hl.read(table, [("ts", "<", "2020-01-01 00:00:00")], spark=spark))
        want = ids(hl.read(table, "ts < TIMESTAMP '2020-01-01 00:00:00'", spark=spark, skipping=False))
        assert got == want and len(want) == 224
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_the_command_line_reads_timestamps_in_the_zone_it_is_given(spark, table):
    """``hudi-layout query --conf spark.sql.session.timeZone=...`` (its sessions are UTC otherwise)."""
    import contextlib
    import io

    from hudi_layout.tools.cli import main

    sql = "SELECT count(*) AS n FROM t WHERE ts < TIMESTAMP '2020-01-01 00:00:00'"
    counts = {}
    try:
        for zone in ("UTC", "America/Los_Angeles"):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert main(["query", table, sql, "--conf", f"spark.sql.session.timeZone={zone}"]) == 0
            counts[zone] = int([c for c in out.getvalue().split("|") if c.strip().isdigit()][0])
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert counts == {"UTC": 192, "America/Los_Angeles": 224}


def test_explain_takes_the_zone_without_a_session(spark, table, capsys):
    """``explain`` plans without Spark: ``time_zone=`` (``--time-zone`` on the command line) is its session zone."""
    import json

    from hudi_layout.tools.cli import main

    q = "ts < TIMESTAMP '2020-01-01 00:00:00'"
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
        in_session = hl.explain(table, q)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    given = hl.explain(table, q, time_zone="America/Los_Angeles")
    assert given.candidate_files == in_session.candidate_files != hl.explain(table, q).candidate_files
    assert main(["explain", table, q, "--time-zone", "America/Los_Angeles", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files_after_column_stats"] == given.files_after_column_stats
    assert main(["explain", table, q, "--time-zone", "Mars/Olympus"]) == 2
    assert "is not a time zone" in capsys.readouterr().err


def test_date_partitions_are_pruned_in_the_session_zone(spark, tmp_path):
    """Partition pruning reads the same literals (a table partitioned by a date, hive style and not)."""
    df = spark.range(0, 240).selectExpr("id", "timestamp_seconds(1577750400 + id * 1800) AS ts",
                                        "CAST(timestamp_seconds(1577750400 + id * 1800) AS DATE) AS d")
    questions = ["d < TIMESTAMP '2020-01-02 05:00:00'", "d >= TIMESTAMP '2020-01-02 05:00:00'",
                 "d > TIMESTAMP '2020-01-02 00:00:00+09:00'", "d = '2020-01-02'"]
    wrong = []
    try:
        for hive in ("true", "false"):
            path = str(tmp_path / f"hive_{hive}")
            hl.write(df, path, {"hoodie.table.name": "tp", "hoodie.datasource.write.recordkey.field": "id",
                                "hoodie.datasource.write.partitionpath.field": "d",
                                "hoodie.datasource.write.hive_style_partitioning": hive})
            files = glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True)
            for zone in ("Asia/Kolkata", "America/Los_Angeles"):
                spark.conf.set("spark.sql.session.timeZone", zone)
                plain = spark.read.parquet(*files)
                for q in questions:
                    want = ids(plain.where(q))
                    got = ids(hl.read(path, q, spark=spark))
                    if got != want:
                        wrong.append(f"hive={hive} {zone} {q}: {len(got)} rows, Spark {len(want)}")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert not wrong, "\n".join(wrong)


def test_datetime_text_is_read_with_the_jvms_zone_rules_not_the_oss(spark, tmp_path):
    """Spark reads datetime text with java.time's tz database; Python's zoneinfo reads the OS's, which can be
    another release (here the JDK's 2025a against tzdata 2025b): in Asia/Tehran,
    ``TIMESTAMP '1978-12-15 12:00:00'`` was 08:00Z for Spark and 08:30Z for the planner, and the read skipped
    the file holding the matching rows (session 29's probe). With a session, the planner takes the JVM's rules;
    the answer equals Spark's over the same rows whatever the two databases say."""
    path = str(tmp_path / "tehran")
    opts = {"hoodie.table.name": "tehran", "hoodie.datasource.write.recordkey.field": "id"}
    for lo, start in ((0, "1978-12-15 07:40:00"), (10, "1978-12-15 08:10:00")):
        hl.write(spark.range(lo, lo + 10).selectExpr(
            "id", f"TIMESTAMP '{start}+00:00' + make_interval(0, 0, 0, 0, 0, CAST(id % 10 AS INT), 0) AS ts"),
            path, opts)
    plain = spark.read.parquet(*glob.glob(path + "/*.parquet"))
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tehran")
    try:
        for where in ("ts >= TIMESTAMP '1978-12-15 12:00:00'", "ts < TIMESTAMP '1978-12-15 12:00:00'",
                      "ts = TIMESTAMP '1978-12-15 12:15:00'"):
            assert hl.read(path, where, spark=spark).count() == plain.where(where).count(), where
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
