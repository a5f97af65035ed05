"""The ``hudi_layout`` Spark data source and ``hudi_layout.read``: filtered reads give exactly the rows of a
plain full read filtered by Spark (pushdown prunes files, never rows), and skipping really happens on a
sorted column."""

from __future__ import annotations

import pytest

import hudi_layout
from tests.helpers.integration import hudi_rs_read, hudi_rs_slices, our_slices

pytestmark = pytest.mark.integration

N = 10_000
OPTS = {"hoodie.table.name": "ds", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "grp"}

PREDICATES = [
    "k > 5500",  # the prototype bug: 4499 rows, pushdown must not drop any
    "k = 42",
    "k < 1234",
    "k BETWEEN 2000 AND 2999",
    "k IN (1, 5000, 9999, 123456)",
    "v IS NULL",
    "v IS NOT NULL AND k >= 9000",
    "cat LIKE 'p%'",
    "(k < 100 OR k > 9900) AND NOT (cat = 'pa')",
    "NOT (k >= 10)",
    "grp = 'g1' AND k < 3000",
    "name >= 'name_09990'",
    "d < DATE'2020-01-05'",
    "k = 20000",  # nothing matches
]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """10000 rows written through ``df.write.format("hudi_layout")``; ``k`` range-partitioned into 8 tasks
    so each base file holds a narrow ``k`` range (what column stats can skip on)."""
    path = str(tmp_path_factory.mktemp("datasource") / "t")
    df = spark.range(0, N).selectExpr(
        "id", "CAST(id AS INT) AS k",
        "format_string('name_%05d', id) AS name",
        "CASE WHEN id % 3 = 0 THEN 'pa' WHEN id % 3 = 1 THEN 'pb' ELSE 'qa' END AS cat",
        "CASE WHEN id % 17 = 0 THEN NULL ELSE CAST(id AS DOUBLE) / 7 END AS v",
        "date_add(DATE'2020-01-01', CAST(id % 40 AS INT)) AS d",
        "CASE WHEN id % 2 = 0 THEN 'g0' ELSE 'g1' END AS grp",
    ).repartitionByRange(8, "k")
    df.write.format("hudi_layout").options(**OPTS).mode("append").save(path)
    return path


@pytest.fixture(scope="module")
def reference(spark, table):
    """A plain full read by an independent reader (hudi-rs), as a Spark DataFrame."""
    return spark.createDataFrame(hudi_rs_read(table).drop_columns(
        [c for c in hudi_rs_read(table).column_names if c.startswith("_hoodie")]))


def ids(df) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


def test_write_through_format_is_a_hudi_table(table):
    got = hudi_rs_read(table)
    assert got.num_rows == N
    assert sorted(got.column("id").to_pylist()) == list(range(N))
    assert hudi_rs_slices(table) == our_slices(table)
    assert len(our_slices(table)) >= 8  # 8 tasks x their partitions


def test_prototype_bug_pushdown_keeps_all_rows(spark, table):
    df = spark.read.format("hudi_layout").load(table).where("k > 5500")
    assert df.count() == 4499
    assert ids(df) == list(range(5501, N))


@pytest.mark.parametrize("where", PREDICATES)
def test_filtered_reads_equal_full_read_filtered(spark, table, reference, where):
    want = ids(reference.where(where))
    via_format = ids(spark.read.format("hudi_layout").load(table).where(where))
    via_read = ids(hudi_layout.read(table, spark=spark, where=where))
    assert via_format == want, f"data source: {len(via_format)} rows, want {len(want)}"
    assert via_read == want, f"hudi_layout.read: {len(via_read)} rows, want {len(want)}"


def test_explain_shows_skipping_on_sorted_column(spark, table):
    plan = hudi_layout.explain(table, "k BETWEEN 2000 AND 2999")
    assert plan.files_total == len(our_slices(table))
    assert plan.files_after_partition_pruning == plan.files_total
    assert 0 < plan.files_after_column_stats < plan.files_after_partition_pruning / 2, plan.render()
    # the candidate files hold every matching row
    assert plan.rows_in_candidate_files is not None and plan.rows_in_candidate_files >= 1000
    # partition pruning too
    plan2 = hudi_layout.explain(table, "grp = 'g1' AND k < 1000")
    assert plan2.files_after_partition_pruning == plan.files_total // 2
    assert plan2.files_after_column_stats < plan2.files_after_partition_pruning
    # the data source's reader prunes the same way with the filters of its scan where Spark keeps a read
    # plan per scan; Spark 4 replays it for later scans, so there it plans every file (issue 17, finding 1)
    from pyspark.sql.datasource import GreaterThanOrEqual, LessThanOrEqual

    from hudi_layout.scan.query import ReadQuery
    from hudi_layout.spark.datasource import HudiLayoutReader, PruningReader, read_plan_is_per_scan

    pushed = [GreaterThanOrEqual(("k",), 2000), LessThanOrEqual(("k",), 2999)]
    reader = PruningReader(table, None, ReadQuery())
    assert list(reader.pushFilters(pushed)) == pushed  # every filter back: Spark still filters rows
    assert sum(len(p.paths) for p in reader.partitions()) == plan.files_read
    # the reader Spark 4 gets takes no filters (and so also reads in sessions without filter pushdown)
    assert sum(len(p.paths) for p in HudiLayoutReader(table, None, ReadQuery()).partitions()) == plan.files_total
    assert "pushFilters" not in vars(HudiLayoutReader)
    assert read_plan_is_per_scan() is False


def test_read_meta_columns_and_projection(spark, table):
    """The read schema leaves the meta columns out unless they are asked for."""
    with_meta = hudi_layout.read(table, "k < 10", spark=spark, include_meta=True)
    assert with_meta.columns[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                     "_hoodie_partition_path", "_hoodie_file_name"]
    assert with_meta.count() == 10
    plain = hudi_layout.read(table, "k < 10", spark=spark)
    assert not [c for c in plain.columns if c.startswith("_hoodie")] and plain.count() == 10
    assert hudi_layout.read(table, "k < 10", spark=spark, columns=["id", "k"]).columns == ["id", "k"]


def test_a_given_schema_may_leave_out_add_and_widen_columns_and_nothing_else(spark, table, reference):
    """``.schema(...)`` on the data source: fewer columns, a column the table lacks (nulls), a widening the
    table's own schema may take (int -> long) read right; a narrowing or another type is refused at load in one
    line naming the column (it failed in a worker with an Arrow traceback, or cast silently)."""
    wide = spark.read.format("hudi_layout").schema("id long, k long, extra string").load(table)
    got = wide.where("k >= 9990").collect()
    assert sorted(r["k"] for r in got) == list(range(9990, N)) and {r["extra"] for r in got} == {None}
    assert sorted(r["id"] for r in spark.read.format("hudi_layout").schema("id long").load(table)
                  .where("id < 5").collect()) == [0, 1, 2, 3, 4]
    for given, column in (("id int, k int", "id"), ("id long, k string", "k"), ("id long, v float", "v")):
        with pytest.raises(Exception, match=f"reads column '{column}' as"):
            spark.read.format("hudi_layout").schema(given).load(table).collect()
    assert reference.count() == N


def test_a_dataframe_loaded_before_a_widening_reads_its_version(spark, tmp_path):
    """A DataFrame loaded while ``k`` was an int carries that schema; after a write widened ``k`` to long, the
    given-schema check compared it with the newest schema and refused it as a user's narrowing (soak 112). It is
    checked against the schema of the version the DataFrame was loaded at."""
    path = str(tmp_path / "t")
    (spark.range(0, 50).selectExpr("id", "CAST(id AS INT) AS k", "'g0' AS grp")
     .write.format("hudi_layout").options(**OPTS).mode("append").save(path))
    frame = spark.read.format("hudi_layout").load(path)
    hudi_layout.write(spark.range(50, 60).selectExpr("id", "id * 1000000000000 AS k", "'g0' AS grp"), path,
                      {"hoodie.datasource.write.operation": "insert"})
    assert sorted(r["k"] for r in frame.where("k >= 45").collect()) == [45, 46, 47, 48, 49]
    assert spark.read.format("hudi_layout").load(path).count() == 60
    with pytest.raises(Exception, match="reads column 'k' as int"):
        spark.read.format("hudi_layout").schema("id long, k int").load(path).collect()


def test_read_sees_a_new_commit(spark, tmp_path):
    """The scan cache is re-validated on every read: rows of a new commit are never skipped."""
    path = str(tmp_path / "t")

    def append(lo: int, hi: int) -> None:
        (spark.range(lo, hi).selectExpr("id", "CAST(id AS INT) AS k", "'g0' AS grp")
         .write.format("hudi_layout").options(**OPTS).mode("append").save(path))

    append(0, 100)
    assert hudi_layout.read(path, "k >= 1000", spark=spark).count() == 0
    assert hudi_layout.explain(path, "k >= 1000").files_after_column_stats == 0
    append(1000, 1100)
    assert hudi_layout.read(path, "k >= 1000", spark=spark).count() == 100
    assert hudi_layout.read(path, "k < 1000", spark=spark).count() == 100


def test_not_in_an_empty_list_keeps_a_file_of_nulls(spark, tmp_path) -> None:
    """Spark 4: ``v IN ()`` is FALSE for every row, NULL included, so ``NOT (v IN ())`` is every row; the planner
    used three-valued logic and dropped the file whose ``v`` is all NULL (a probe, session 31)."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    opts = {"hoodie.table.name": "e", "hoodie.datasource.write.recordkey.field": "id"}
    hudi_layout.write(spark.createDataFrame([(1, 10), (2, 20)], "id long, v long"), path, opts)
    hudi_layout.write(spark.createDataFrame([(3, None), (4, None)], "id long, v long"), path, opts)
    for pred in (~F.col("v").isin([]), [("v", "NOT IN", [])]):
        assert ids(hudi_layout.read(path, pred, spark=spark)) == [1, 2, 3, 4]
    assert ids(hudi_layout.read(path, F.col("v").isin([]), spark=spark)) == []
    assert ids(spark.read.format("hudi_layout").load(path).where(~F.col("v").isin([]))) == [1, 2, 3, 4]
