"""Dates before 1582 and Spark's parquet rebase settings: every answer is Spark's over the same files.

Spark's parquet reader shifts the dates and timestamps of a file by days (the old hybrid calendar) when
``spark.sql.parquet.datetimeRebaseModeInRead`` is ``LEGACY`` and the file does not name a Spark version of 3 or
later in its footer; with ``EXCEPTION`` it refuses such values. Until session 16 our base files named none:
in a LEGACY session ``hl.read`` answered ``d = DATE '1500-06-05'`` with 0 of Spark's 20 rows (statistics and
folders hold the stored values), and in an EXCEPTION session every read of an old date failed. Now our files
carry the marker, and a LEGACY session's date / timestamp leaves never skip (files of other writers, and ours
written before, may lack it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import glob
import io
import pathlib

import pyarrow.parquet as pq
import pytest

import hudi_layout as hl
from hudi_layout.format.spark_calendar import SPARK_LEGACY_DATETIME_KEY, SPARK_VERSION_FOOTER_KEY
from hudi_layout.tools import cli
from tests.helpers.integration import hudi_rs_read

pytestmark = pytest.mark.integration

REBASE_KEYS = ("spark.sql.parquet.datetimeRebaseModeInRead", "spark.sql.parquet.int96RebaseModeInRead")
DAYS = [dt.date(1000, 1, 1), dt.date(1200, 3, 1), dt.date(1500, 6, 15), dt.date(1582, 10, 4),
        dt.date(1582, 10, 15), dt.date(1700, 1, 1), dt.date(2000, 1, 1), dt.date(1, 1, 1)]
QUESTIONS = ["d = DATE '1000-01-01'", "d < DATE '1582-10-15'", "d = DATE '1500-06-15'", "d = DATE '1500-06-05'",
             "d = DATE '0999-12-27'", "d BETWEEN DATE '0999-12-01' AND DATE '1000-01-31'", "d >= DATE '1582-10-05'",
             "ts < TIMESTAMP '1500-06-16 00:00:00'", "ts = TIMESTAMP '1000-01-01 12:00:00'",
             "ts = TIMESTAMP '0999-12-27 12:00:00'", "d = DATE '0001-01-03'", "d IS NULL", "d IN (DATE '1200-02-23')"]


def _write(spark, path: str) -> list[str]:
    rows = [(i, None if i % 19 == 0 else DAYS[i % len(DAYS)],
             dt.datetime.combine(DAYS[(i * 3) % len(DAYS)], dt.time(12), tzinfo=dt.timezone.utc)) for i in range(160)]
    df = spark.createDataFrame(rows, "id BIGINT, d DATE, ts TIMESTAMP").repartition(8, "d")
    hl.write(df, path, {"hoodie.table.name": "rebase", "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.parquet.max.file.size": "2000"})
    return sorted(glob.glob(f"{path}/**/*.parquet", recursive=True))


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def _answers_match(spark, path: str, files: list[str], *, data_source: bool) -> None:
    truth = spark.read.parquet(*files)
    for q in QUESTIONS:
        want = _ids(truth.where(q))
        assert _ids(hl.read(path, q, spark=spark)) == want, q
        if data_source:
            assert _ids(spark.read.format("hudi_layout").load(path).where(q)) == want, q


@pytest.fixture
def rebase_mode(spark):
    before = {k: spark.conf.get(k) for k in REBASE_KEYS}

    def set_mode(mode: str) -> None:
        for k in REBASE_KEYS:
            spark.conf.set(k, mode)

    yield set_mode
    for k, v in before.items():
        spark.conf.set(k, v)


def test_our_files_say_their_calendar_and_read_alike_in_every_mode(spark, tmp_path, rebase_mode):
    path = str(tmp_path / "t")
    files = _write(spark, path)
    assert len(files) > 1
    for f in files:
        assert (pq.read_metadata(f).metadata or {}).get(SPARK_VERSION_FOOTER_KEY.encode(), b"") >= b"3.0.0"
    for mode in ("LEGACY", "EXCEPTION", "CORRECTED"):
        rebase_mode(mode)
        _answers_match(spark, path, files, data_source=True)
        assert DAYS[2] in {r.d for r in hl.read(path, spark=spark).select("d").collect()}, mode
    # the independent reader (Arrow, proleptic) reads the values as written
    assert set(hudi_rs_read(path).column("d").to_pylist()) == set(DAYS) | {None}


def test_files_without_the_marker_are_not_skipped_by_dates_in_a_legacy_session(spark, tmp_path, rebase_mode):
    path = str(tmp_path / "t")
    files = _write(spark, path)
    for f in files:  # as another writer's files (or ours before the marker): the same rows, no marker
        table = pq.read_table(f)
        meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != SPARK_VERSION_FOOTER_KEY.encode()}
        pq.write_table(table.replace_schema_metadata(meta), f)
        assert SPARK_VERSION_FOOTER_KEY.encode() not in (pq.read_metadata(f).metadata or {})
    rebase_mode("LEGACY")
    shifted = {r.d for r in spark.read.parquet(*files).select("d").collect()}
    assert dt.date(1500, 6, 5) in shifted and DAYS[2] not in shifted  # Spark does rebase them
    _answers_match(spark, path, files, data_source=False)
    plan = hl.explain(path, "d = DATE '1500-06-05'", spark=spark)
    assert plan.files_after_column_stats == plan.files_total
    rebase_mode("CORRECTED")
    _answers_match(spark, path, files, data_source=True)
    assert hl.explain(path, "d = DATE '1500-06-15'", spark=spark).files_after_column_stats < len(files)


@pytest.mark.parametrize("strategy", ["linear", "z-order"])
def test_clustering_and_upserts_in_a_legacy_session_keep_the_stored_dates(spark, tmp_path, rebase_mode, strategy):
    """A clustering rewrites rows: the linear layout read them with Spark's parquet reader, which in a LEGACY
    session shifted the old dates of files without the marker by days, and stored them shifted (59 of 90 rows
    changed, session 16). The rewrite now reads stored values (the curve paths and upserts read with Arrow)."""
    path = str(tmp_path / "t")
    files = _write(spark, path)
    for f in files:  # files of another writer (or ours before the marker)
        table = pq.read_table(f)
        meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != SPARK_VERSION_FOOTER_KEY.encode()}
        pq.write_table(table.replace_schema_metadata(meta), f)
    before = {r["id"]: r["d"] for r in hudi_rs_read(path).select(["id", "d"]).to_pylist()}
    rebase_mode("LEGACY")
    hl.cluster(path, ["d", "id"], spark=spark, strategy=strategy,
               options={"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)})
    hl.write(spark.createDataFrame([(1, dt.date(1200, 1, 1), None)], "id BIGINT, d DATE, ts TIMESTAMP"), path,
             {"hoodie.table.name": "rebase", "hoodie.datasource.write.recordkey.field": "id",
              "hoodie.datasource.write.operation": "upsert"})
    after = {r["id"]: r["d"] for r in hudi_rs_read(path).select(["id", "d"]).to_pylist()}
    assert after == {**before, 1: dt.date(1200, 1, 1)}


def test_column_literals_of_old_datetimes_mean_what_spark_makes_of_them(spark, tmp_path):
    """``F.lit(datetime)`` reaches Spark as a ``java.sql.Timestamp``, and for times before 1582 Spark keeps the
    old calendar's local fields: ``F.lit(1270-07-23 13:26 UTC)`` is an instant 7 days earlier. The planner
    took the Timestamp's own instant and skipped files holding rows Spark matched (``ts > F.lit(...)``: 110 of
    Spark's 133 rows, session 16); it now converts the literal with Spark's own function."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    start = dt.datetime(1270, 7, 10, tzinfo=dt.timezone.utc)
    rows = [(i, start + dt.timedelta(hours=6 * i), (start + dt.timedelta(hours=6 * i)).date()) for i in range(160)]
    hl.write(spark.createDataFrame(rows, "id BIGINT, ts TIMESTAMP, d DATE").repartitionByRange(16, "ts"), path,
             {"hoodie.table.name": "lit", "hoodie.datasource.write.recordkey.field": "id",
              "hoodie.parquet.max.file.size": "1500"})
    truth = spark.read.parquet(*glob.glob(f"{path}/**/*.parquet", recursive=True))
    at = dt.datetime(1270, 7, 23, 13, 26, 23, tzinfo=dt.timezone.utc)
    questions = [F.col("ts") > F.lit(at), F.col("ts") < F.lit(at), F.col("ts") > F.lit(at.replace(tzinfo=None)),
                 F.col("ts").between(F.lit(start), F.lit(at)), F.col("d") > F.lit(at.date()),
                 F.col("d") == F.lit(at.date()), F.col("ts").isin([start + dt.timedelta(hours=60), at])]
    for question in questions:
        want = _ids(truth.where(question))
        assert _ids(hl.read(path, question, spark=spark)) == want, str(question)
    assert _ids(truth.where(questions[0])) != _ids(truth.where(F.col("ts") > F.lit(at.isoformat()).cast("timestamp")))


def _mark_hybrid(files: list[str]) -> None:
    """The same stored values with the footer entry Spark 3 writes in ``datetimeRebaseModeInWrite=LEGACY``
    (a table another writer built that way): Spark now converts them from the hybrid calendar on every read,
    while the column_stats index keeps the stored values (as Hudi's index of such files does)."""
    for f in files:
        meta = {k: v for k, v in (pq.read_metadata(f).metadata or {}).items() if k != b"ARROW:schema"}
        meta[SPARK_LEGACY_DATETIME_KEY.encode()] = b""
        pq.write_table(pq.read_table(f).replace_schema_metadata(meta), f)


def _as_spark_sees(df) -> list[tuple]:
    # text, not Python dates: Spark's conversion turns 0001-01-01 into year 0, which Python cannot hold
    return sorted(tuple(r) for r in df.selectExpr("id", "string(d)", "string(ts)").collect())


def test_files_spark_reads_in_the_hybrid_calendar_are_never_answered_or_rewritten_from_stored_dates(spark, tmp_path):
    """Files whose footers make Spark convert their dates from the hybrid calendar (Spark < 3, or Spark 3 with
    ``datetimeRebaseModeInWrite=LEGACY``): before session 17 ``hl.read`` skipped them by their statistics
    (stored values: 5 of 13 questions wrong), the data source answered their stored dates (8 of 13 wrong),
    and a z-order clustering rewrote 94 of 160 rows with other dates as Spark sees them. Now reads never skip
    them by date statistics, and every Arrow path (data source, upsert, curve clustering) refuses them with
    one line; a linear clustering reads them through Spark and writes what Spark saw."""
    from hudi_layout.errors import UnsupportedTableError, from_spark_error_text

    path = str(tmp_path / "t")
    files = _write(spark, path)
    marked = [f for i, f in enumerate(files)
              if i % 2 == 0 or DAYS[2] in pq.read_table(f, columns=["d"])["d"].to_pylist()]
    assert len(marked) < len(files)
    _mark_hybrid(marked)
    truth = spark.read.parquet(*files)
    assert truth.where("d = DATE '1500-06-05'").count() > 0  # Spark converts them
    _answers_match(spark, path, files, data_source=False)
    notes = " ".join(hl.explain(path, "d = DATE '1500-06-05'", spark=spark).notes)
    assert "hybrid calendar" in notes
    seen = _as_spark_sees(truth)
    stored = sorted(hudi_rs_read(path).select(["id", "d"]).to_pylist(), key=lambda r: r["id"])

    def refused(run) -> UnsupportedTableError:
        with pytest.raises(Exception) as e:
            run()
        err = e.value if isinstance(e.value, UnsupportedTableError) else from_spark_error_text(str(e.value))
        assert isinstance(err, UnsupportedTableError) and SPARK_LEGACY_DATETIME_KEY in str(err), str(e.value)[:300]
        assert sorted(hudi_rs_read(path).select(["id", "d"]).to_pylist(), key=lambda r: r["id"]) == stored
        return err

    assert "hudi_layout.read" in (refused(lambda: spark.read.format("hudi_layout").load(path).count()).hint or "")
    marked_id = pq.read_table(marked[0], columns=["id"]).column(0)[0].as_py()
    refused(lambda: hl.write(spark.createDataFrame([(marked_id, dt.date(1200, 1, 1), None)],
                                                   "id BIGINT, d DATE, ts TIMESTAMP"), path,
                             {"hoodie.table.name": "rebase", "hoodie.datasource.write.recordkey.field": "id",
                              "hoodie.datasource.write.operation": "upsert"}))
    refused(lambda: hl.cluster(path, ["d", "id"], spark=spark, strategy="z-order"))
    hl.cluster(path, ["d", "id"], spark=spark, strategy="linear")
    assert _as_spark_sees(hl.read(path, spark=spark)) == seen
    latest = hl.explain(path, spark=spark).candidate_files
    _answers_match(spark, path, latest, data_source=True)
    hl.cluster(path, ["d", "id"], spark=spark, strategy="z-order")  # proleptic files now: curves may rewrite
    assert _as_spark_sees(hl.read(path, spark=spark)) == seen


WRITE_MODE_KEY = "spark.sql.parquet.datetimeRebaseModeInWrite"


@pytest.fixture
def write_mode(spark):
    before = spark.conf.get(WRITE_MODE_KEY)
    yield lambda mode: spark.conf.set(WRITE_MODE_KEY, mode)
    spark.conf.set(WRITE_MODE_KEY, before)


def _tree(path: str) -> dict[str, int]:
    root = pathlib.Path(path)
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()} \
        if root.exists() else {}


@pytest.mark.parametrize("mode", ["EXCEPTION", "LEGACY"])
def test_the_sessions_write_calendar_is_honoured(spark, tmp_path, write_mode, mode):
    """``spark.sql.parquet.datetimeRebaseModeInWrite``: ``EXCEPTION`` refuses dates before 1582-10-15 and
    timestamps before 1900 as Spark's writer does; ``LEGACY`` asks for them in the hybrid calendar, which we do
    not write, so they are refused too (until session 17 both were ignored: the values were written proleptic).
    Every write path honours it (insert, upsert, the data source's tasks, clustering before its plan is
    written); later values are stored alike in every mode and pass. A refusal leaves the disk as it was."""
    from hudi_layout.errors import InvalidArgumentError, from_spark_error_text

    path = str(tmp_path / "t")
    opts = {"hoodie.table.name": "wm", "hoodie.datasource.write.recordkey.field": "id"}
    schema = "id BIGINT, d DATE, ts TIMESTAMP"
    modern = spark.createDataFrame([(i, dt.date(2000, 1, 1 + i), None) for i in range(4)], schema).coalesce(1)
    old_date = spark.createDataFrame([(1, dt.date(1500, 1, 1), None)], schema)
    old_ts = spark.createDataFrame([(2, None, dt.datetime(1899, 12, 31, 23, tzinfo=dt.timezone.utc))], schema)

    def refused(run, what: str) -> None:
        before = _tree(path)
        with pytest.raises(Exception) as e:
            run()
        err = e.value if isinstance(e.value, InvalidArgumentError) else from_spark_error_text(str(e.value))
        assert isinstance(err, InvalidArgumentError), str(e.value)[:300]
        assert f"{WRITE_MODE_KEY}={mode}" in str(err) and what in str(err) and "CORRECTED" in (err.hint or "")
        assert _tree(path) == before

    def refused_without_failed_tasks(run, what: str) -> None:
        """Refused, and no Spark task failed: a failed task prints Spark's ERROR lines with Python and Java
        stack traces in the user's session (an insert is refused on the driver; a refusal inside a task comes
        back as a result row or commit message since session 18)."""
        sc = spark.sparkContext
        group = f"calendar-{mode}-{len(what)}-{id(run)}"
        sc.setJobGroup(group, "write calendar")
        try:
            refused(run, what)
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        tracker = sc.statusTracker()
        jobs = tracker.getJobIdsForGroup(group)
        assert jobs and all(tracker.getJobInfo(j).status == "SUCCEEDED" for j in jobs)
        failed = [s for j in jobs for s in tracker.getJobInfo(j).stageIds
                  if tracker.getStageInfo(s) is not None and tracker.getStageInfo(s).numFailedTasks]
        assert not failed, failed

    write_mode(mode)
    refused(lambda: hl.write(old_date, path, opts), "dates before 1582-10-15")  # a new table: not created
    assert not pathlib.Path(path).exists()
    hl.write(modern, path, opts)
    refused_without_failed_tasks(lambda: hl.write(old_ts, path, opts), "timestamps before 1900")
    refused_without_failed_tasks(
        lambda: hl.write(old_date, path, {**opts, "hoodie.datasource.write.operation": "upsert"}), "dates")
    refused_without_failed_tasks(
        lambda: old_date.write.format("hudi_layout").options(**opts).mode("append").save(path), "dates")
    write_mode("CORRECTED")
    hl.write(old_date, path, {**opts, "hoodie.datasource.write.operation": "upsert"})
    write_mode(mode)
    refused(lambda: hl.cluster(path, ["d"], spark=spark, strategy="linear"), "clustering input")
    refused(lambda: hl.cluster(path, ["d"], spark=spark, strategy="z-order"), "clustering input")
    before = _tree(path)  # the command: exit 2, one line, and no pending plan left behind
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["cluster", path, "--columns", "d"]) == 2
    assert f"{WRITE_MODE_KEY}={mode}" in err.getvalue() and "Traceback" not in err.getvalue()
    assert _tree(path) == before
    # an upsert of another key that rewrites the file holding the old date writes that date again: refused
    rows = hudi_rs_read(path).select(["id", "_hoodie_file_name"]).to_pylist()
    holder = {r["_hoodie_file_name"] for r in rows if r["id"] == 1}
    neighbour = min(r["id"] for r in rows if r["_hoodie_file_name"] in holder and r["id"] != 1)
    refused_without_failed_tasks(lambda: hl.write(modern.where(f"id = {neighbour}"), path, {
        **opts, "hoodie.datasource.write.operation": "upsert"}), "dates before 1582-10-15")  # in the merge task
    write_mode("CORRECTED")
    hl.cluster(path, ["d"], spark=spark, strategy="z-order")
    assert sorted(r.id for r in hl.read(path, spark=spark).collect()) == [0, 1, 2, 3]
