"""Schema evolution on write, end to end: a write adds a nullable column and widens int -> long,
int -> double, float -> double; the new schema is committed; every reader (hl.read, the data source, SQL,
hudi-rs) returns the new schema for old files (missing column null, widened values cast); old files are never
skipped for a predicate on the new column; clustering afterwards keeps every row and the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_layout
from hudi_layout import ColumnStatsIndex, HudiTable
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.schema_evolution import conform_batch
from tests.helpers.integration import hudi_rs_table

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "evo", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"}


def v1(n: int = 200) -> pa.Table:
    return pa.table({"id": [f"k{i:04d}" for i in range(n)], "p": [["x", "y"][i % 2] for i in range(n)],
                     "a": pa.array(range(n), pa.int32()), "b": pa.array([i * 3 for i in range(n)], pa.int32()),
                     "f": pa.array([i / 4 for i in range(n)], pa.float32()),
                     "s": [f"s{i}" for i in range(n)]})


def v2(start: int = 200, n: int = 100) -> pa.Table:
    r = range(start, start + n)
    return pa.table({"id": [f"k{i:04d}" for i in r], "p": [["x", "y"][i % 2] for i in r],
                     "a": pa.array([i + 2**40 for i in r], pa.int64()),
                     "b": pa.array([i * 3 + 0.5 for i in r], pa.float64()),
                     "f": pa.array([i / 4 for i in r], pa.float64()),
                     "s": [f"s{i}" for i in r], "c": [f"c{i}" for i in r]})


TARGET = pa.schema([("id", pa.string()), ("p", pa.string()), ("a", pa.int64()), ("b", pa.float64()),
                    ("f", pa.float64()), ("s", pa.string()), ("c", pa.string())])


def expected() -> dict[str, dict]:
    rows = conform_batch(v1(), TARGET).to_pylist() + conform_batch(v2(), TARGET).to_pylist()
    return {r["id"]: r for r in rows}


def as_rows(table: pa.Table) -> dict[str, dict]:
    t = table.select(TARGET.names)
    out = {r["id"]: r for r in t.to_pylist()}
    assert len(out) == t.num_rows
    return out


def _write(spark, table: pa.Table, path: Path, files: int) -> None:
    hudi_layout.write(spark.createDataFrame(table).repartition(files), str(path), OPTS)


@pytest.fixture(scope="module")
def evolved(spark, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("evo") / "t"
    _write(spark, v1(), path, 4)
    _write(spark, v2(), path, 2)
    return path


def test_commit_records_the_new_schema(evolved: Path) -> None:
    schema = json.loads(HudiTable(str(evolved)).schema())
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert types["a"] == ["null", "long"] and types["b"] == ["null", "double"] and types["f"] == ["null", "double"]
    assert types["c"] == ["null", "string"]
    assert [f["name"] for f in schema["fields"]] == TARGET.names


def test_every_reader_returns_the_new_schema(spark, evolved: Path) -> None:
    want = expected()
    df = hudi_layout.read(str(evolved), spark=spark)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("id", "string"), ("p", "string"), ("a", "bigint"), ("b", "double"), ("f", "double"), ("s", "string"),
        ("c", "string")]
    assert as_rows(df.toArrow()) == want
    ds = spark.read.format("hudi_layout").load(str(evolved))
    assert as_rows(ds.toArrow()) == want
    ds.createOrReplaceTempView("evo")
    assert spark.sql("SELECT count(*) AS n FROM evo WHERE c IS NULL").collect()[0].n == 200
    assert spark.sql("SELECT sum(a) AS s FROM evo WHERE a > 1000").collect()[0].s == sum(
        r["a"] for r in want.values() if r["a"] > 1000)
    # hudi-rs: each batch in its file's schema; with the table schema applied the rows are the same
    batches = hudi_rs_table(evolved).read()
    got = pa.Table.from_batches([conform_batch(b, TARGET) for b in batches])
    assert as_rows(got) == want


def test_time_travel_reads_the_schema_of_then(spark, evolved: Path) -> None:
    """Hudi's Spark reads take the schema as of ``as.of.instant`` (``TableSchemaResolver.getTableAvroSchema(
    timestamp)``): a travel to before the evolution has no column ``c`` and the old types. Until session 18 we
    returned the latest schema (a null ``c``, widened types), so a filter on ``c`` answered where Hudi fails."""
    from hudi_layout.errors import HudiLayoutError, from_spark_error_text

    first = min(i.requested_time for i in HudiTable(str(evolved)).timeline.completed().commits_and_replaces())
    then = {"as.of.instant": first}
    old = [("id", "string"), ("p", "string"), ("a", "int"), ("b", "int"), ("f", "float"), ("s", "string")]
    df = hudi_layout.read(str(evolved), spark=spark, options=then)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == old
    assert as_rows(conform_batch(df.toArrow(), TARGET)) == {k: r for k, r in expected().items() if r["c"] is None}
    ds = spark.read.format("hudi_layout").options(**then).load(str(evolved))
    assert [(f.name, f.dataType.simpleString()) for f in ds.schema.fields] == old
    assert ds.where("a >= 100").count() == 100
    with pytest.raises(Exception) as e:
        hudi_layout.read(str(evolved), "c IS NULL", spark=spark, options=then)
    err = e.value if isinstance(e.value, HudiLayoutError) else from_spark_error_text(str(e.value))
    assert err is not None and "'c'" in str(err), str(e.value)[:300]
    # the projection is checked against the schema of then, in one line (was Spark's analysis error)
    with pytest.raises(InvalidArgumentError, match="'c' not in the table at that instant"):
        hudi_layout.read(str(evolved), spark=spark, options=then, columns=["id", "c"])
    assert hudi_layout.read(str(evolved), spark=spark, options=then, columns=["id", "f"]).count() == 200
    for when in ("99991231235959999", "20000101000000000"):  # no instant by then: Hudi takes the latest
        latest = hudi_layout.read(str(evolved), spark=spark, options={"as.of.instant": when})
        assert [f.name for f in latest.schema.fields] == TARGET.names


@pytest.mark.parametrize("where", ["c = 'c250'", "c IS NULL", "a > 1000", "b = 3.0", "f >= 10.0 AND c IS NULL"])
def test_predicates_on_new_and_widened_columns(spark, evolved: Path, where: str) -> None:
    want = expected()
    plan = hudi_layout.explain(str(evolved), where)
    old_files = {s.base_file_name for s in HudiTable(str(evolved)).file_slices()
                 if "c" not in pq.read_schema(s.base_file_path).names}
    kept = {Path(f).name for f in plan.candidate_files}
    if where.startswith("c "):
        assert old_files <= kept  # no statistics for the new column in old files: never skipped
    got = as_rows(hudi_layout.read(str(evolved), where, spark=spark).toArrow())
    oracle = spark.createDataFrame(pa.Table.from_pylist(list(want.values()), schema=TARGET)).where(where)
    assert got == as_rows(oracle.toArrow())


def test_clustering_after_evolution(spark, evolved: Path, tmp_path: Path) -> None:
    import shutil

    path = tmp_path / "copy"
    shutil.copytree(evolved, path)
    hudi_layout.cluster(str(path), ["a", "c"], spark=spark, strategy="z-order")
    want = expected()
    assert as_rows(hudi_layout.read(str(path), spark=spark).toArrow()) == want
    assert json.loads(HudiTable(str(path)).schema())["fields"][-1]["name"] == "c"
    batches = hudi_rs_table(path).read()
    assert as_rows(pa.Table.from_batches([conform_batch(b, TARGET) for b in batches])) == want
    # every clustered file carries the new column, so the index has its statistics for all live files
    live = {s.base_file_name for s in HudiTable(str(path)).file_slices()}
    assert set(ColumnStatsIndex(str(path)).load_column("c").column("file_name").to_pylist()) == live
    hudi_layout.cluster(str(path), ["b", "s"], spark=spark, strategy="linear")
    assert as_rows(hudi_layout.read(str(path), spark=spark).toArrow()) == want


def test_data_source_writes_evolve_too(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "ds")
    opts = {"hoodie.table.name": "ds", "hoodie.datasource.write.recordkey.field": "id"}
    spark.range(0, 10).selectExpr("CAST(id AS STRING) AS id", "CAST(id AS INT) AS a") \
        .write.format("hudi_layout").options(**opts).mode("append").save(path)
    spark.range(10, 20).selectExpr("CAST(id AS STRING) AS id", "id AS a", "'new' AS c") \
        .write.format("hudi_layout").options(**opts).mode("append").save(path)
    df = spark.read.format("hudi_layout").load(path)
    assert df.schema.simpleString() == "struct<id:string,a:bigint,c:string>"
    assert sorted(tuple(r) for r in df.collect()) == sorted(
        [(str(i), i, None) for i in range(10)] + [(str(i), i, "new") for i in range(10, 20)])


@pytest.mark.parametrize("copy_chunks", ["true", "false"])
@pytest.mark.parametrize("broadcast", [True, False], ids=["broadcast_merge", "tag_and_shuffle"])
def test_upserts_into_files_written_before_the_evolution_keep_the_new_columns(
        spark, evolved: Path, tmp_path: Path, monkeypatch, copy_chunks: str, broadcast: bool) -> None:
    """An upsert of rows stored in files older than the new column (and the widening) set the new column and a
    value beyond the old int range: both are kept (they were dropped and refused before: the rewrite kept the
    old file's columns and types), and the new slices carry the table's schema and statistics."""
    import shutil

    import hudi_layout.spark.upsert_job as upsert_job

    if not broadcast:
        monkeypatch.setattr(upsert_job, "BROADCAST_MERGE_ROWS", 0)
    path = tmp_path / "up"
    shutil.copytree(evolved, path)
    want = expected()
    ids = ["k0003", "k0010", "k0151", "k0250"]  # three in old files, one in a new file
    rows = [{**want[i], "a": 2**35 + n, "c": f"set{n}", "s": f"up{n}"} for n, i in enumerate(ids)]
    hudi_layout.write(spark.createDataFrame(pa.Table.from_pylist(rows, schema=TARGET)), str(path),
                      {"hoodie.datasource.write.operation": "upsert",
                       "hudi_layout.merge.copy.unchanged.columns": copy_chunks})
    want.update({r["id"]: r for r in rows})
    assert as_rows(hudi_layout.read(str(path), spark=spark).toArrow()) == want
    got = pa.Table.from_batches([conform_batch(b, TARGET) for b in hudi_rs_table(path).read()])
    assert as_rows(got) == want
    plan = hudi_layout.explain(str(path), "c = 'set0'")
    assert plan.files_read >= 1
    assert as_rows(hudi_layout.read(str(path), "c = 'set0'", spark=spark).toArrow()) == {"k0003": want["k0003"]}


def test_deletes_rewrite_files_written_before_the_evolution_in_the_new_schema(spark, tmp_path: Path) -> None:
    """A delete rewrites the file groups holding its keys; one written before the table evolved (a new column,
    int -> long, float -> double and string -> binary here) is rewritten in the table's schema, as an upsert's
    rewrite is. Before, it kept its old types and the statistics of the string -> binary column failed the
    commit (found by the read-path harness once it widened string -> binary)."""
    path = tmp_path / "del"
    first = v1(40)
    _write(spark, first, path, 2)
    later = v2(40, 10).set_column(5, "s", pa.array([f"s{i}".encode() for i in range(40, 50)], pa.binary()))
    _write(spark, later, path, 1)
    gone = pa.concat_tables([first.select(["id", "p"]).slice(0, 3), later.select(["id", "p"]).slice(0, 2)])
    hudi_layout.write(spark.createDataFrame(gone), str(path), {"hoodie.datasource.write.operation": "delete"})
    schema = TARGET.set(TARGET.get_field_index("s"), pa.field("s", pa.binary()))
    want = {r["id"]: r for r in conform_batch(pa.concat_tables([conform_batch(first.slice(3), schema),
                                                                 conform_batch(later.slice(2), schema)]),
                                              schema).to_pylist()}
    got = hudi_layout.read(str(path), spark=spark).toArrow().select(schema.names)
    assert got.schema.field("s").type == pa.binary()
    assert {r["id"]: r for r in got.to_pylist()} == want
    rs = pa.Table.from_batches([conform_batch(b, schema) for b in hudi_rs_table(path).read()])
    assert {r["id"]: r for r in rs.to_pylist()} == want
    slices = HudiTable(path).file_slices()
    rewritten = [f for f in slices if f.commit_time == max(x.commit_time for x in slices)]
    assert rewritten  # the delete's slices: in the table's schema
    for f in rewritten:
        file_schema = pq.read_schema(f.base_file_path)
        assert file_schema.field("s").type == pa.binary() and file_schema.field("a").type == pa.int64()
    for column in ("s", "b"):  # exact statistics in every live file, rewritten or not (b: int -> double)
        stats = {r["file_name"]: r for r in ColumnStatsIndex(path).load_column(column).to_pylist()}
        for f in slices:
            values = [v.encode() if isinstance(v, str) else v for v in
                      pq.read_table(f.base_file_path, columns=[column]).column(column).to_pylist()]
            assert (stats[f.base_file_name]["min"], stats[f.base_file_name]["max"]) == (min(values), max(values))
    where = f"s >= X'{b's1'.hex()}'"
    assert sorted(r["id"] for r in hudi_layout.read(str(path), where, spark=spark).toArrow().to_pylist()) == \
        sorted(i for i, r in want.items() if r["s"] >= b"s1")


@pytest.mark.parametrize("broadcast", [True, False], ids=["broadcast_merge", "tag_and_shuffle"])
def test_an_upsert_may_evolve_the_schema_like_an_insert(spark, tmp_path: Path, monkeypatch, broadcast: bool) -> None:
    """An upsert whose rows bring a new column (and a widened one) evolves the table as an insert does, as
    Hudi's upserts do: the updated rows carry the new values, the stored rows it did not touch read the new
    column as null (their files were rewritten with it or not at all), the new rows too; every reader agrees
    and a predicate on the new column finds its rows. (It was refused, "schema evolution is not supported",
    until session 12: the merge kept stored rows with their old columns before session 11.)"""
    import hudi_layout.spark.upsert_job as upsert_job

    if not broadcast:
        monkeypatch.setattr(upsert_job, "BROADCAST_MERGE_ROWS", 0)
    path = tmp_path / "t"
    _write(spark, v1(), path, 4)
    old = {r["id"]: r for r in conform_batch(v1(), TARGET).to_pylist()}
    ids = ["k0003", "k0010", "k0151"]
    rows = [{**old[i], "a": 2**35 + n, "b": n + 0.25, "f": n / 8, "c": f"new{n}", "s": f"up{n}"}
            for n, i in enumerate(ids)]
    rows.append({"id": "k9000", "p": "x", "a": 1, "b": 2.0, "f": 3.0, "s": "fresh", "c": None})
    result = hudi_layout.write(spark.createDataFrame(pa.Table.from_pylist(rows, schema=TARGET)), str(path),
                               {"hoodie.datasource.write.operation": "upsert"})
    assert result.records_updated == 3 and result.records_inserted == 1
    want = {**old, **{r["id"]: r for r in rows}}
    schema = json.loads(HudiTable(str(path)).schema())
    assert [f["name"] for f in schema["fields"] if not f["name"].startswith("_hoodie")] == TARGET.names
    assert as_rows(hudi_layout.read(str(path), spark=spark).toArrow()) == want
    src = spark.read.format("hudi_layout").load(str(path)).toArrow()
    assert as_rows(src) == want
    got = pa.Table.from_batches([conform_batch(b, TARGET) for b in hudi_rs_table(path).read()])
    assert as_rows(got) == want
    for where, expect in [("c = 'new1'", {"k0010"}), ("c IS NULL", set(want) - set(ids)),
                          ("a > 2147483647", set(ids))]:
        assert set(as_rows(hudi_layout.read(str(path), where, spark=spark).toArrow())) == expect, where


def test_an_upsert_without_a_table_column_is_refused(spark, tmp_path: Path) -> None:
    """Dropping a column is not schema evolution: an upsert lacking a table column is refused naming it, and
    nothing is written."""
    from hudi_layout.errors import SchemaMismatchError

    path = tmp_path / "t"
    _write(spark, v1(), path, 2)

    def files() -> list[tuple[str, int]]:
        return sorted((str(p.relative_to(path)), p.stat().st_size) for p in path.rglob("*") if p.is_file())

    before = files()
    with pytest.raises(SchemaMismatchError, match="'s'"):
        hudi_layout.write(spark.createDataFrame(v1(5).drop_columns(["s"])), str(path),
                          {"hoodie.datasource.write.operation": "upsert"})
    assert files() == before


def test_sql_tables_follow_an_evolution_written_by_hudi_layout_write(spark, tmp_path: Path) -> None:
    """A SQL table's schema is what Spark's catalog stored at CREATE TABLE, and Spark's optimizer decides some
    filters from it alone: with ``a`` stored as int, ``a >= 2**39`` became ``false`` and the scan was dropped,
    so after a widening the query returned no rows (found by the read-path soak in session 12; the reader's
    refusal never ran). ``hudi_layout.write`` now gives the session's SQL tables over the table its new schema
    after a commit that evolved it: the new column is there, widened values are read, the filter is right."""
    path = tmp_path / "sql"
    _write(spark, v1(20), path, 2)
    spark.sql("DROP TABLE IF EXISTS evo_before")
    spark.sql("CREATE DATABASE IF NOT EXISTS evo_db")
    spark.sql("DROP TABLE IF EXISTS evo_db.evo_loc")
    spark.sql(f"CREATE TABLE evo_before USING hudi_layout OPTIONS (path '{path}')")
    spark.sql(f"CREATE TABLE evo_db.evo_loc USING hudi_layout LOCATION '{path}'")
    assert spark.sql("SELECT count(*) AS n FROM evo_before WHERE a >= 3").collect()[0].n == 17
    added = pa.table({"id": ["k9000"], "p": ["x"], "a": pa.array([7], pa.int32()), "b": pa.array([1], pa.int32()),
                      "f": pa.array([0.5], pa.float32()), "s": ["s"], "c": ["new"]})
    _write(spark, added, path, 1)
    widened = pa.table({"id": ["k9001"], "p": ["y"], "a": pa.array([2**40], pa.int64()),
                        "b": pa.array([1], pa.int32()), "f": pa.array([0.5], pa.float32()), "s": ["s"], "c": ["w"]})
    _write(spark, widened, path, 1)
    for t in ("evo_before", "evo_db.evo_loc"):
        assert spark.table(t).schema["a"].dataType.simpleString() == "bigint" and "c" in spark.table(t).columns
        assert spark.sql(f"SELECT max(a) AS m FROM {t}").collect()[0].m == 2**40
        assert [r.id for r in spark.sql(f"SELECT id FROM {t} WHERE a >= {2**39}").collect()] == ["k9001"]
        assert spark.sql(f"SELECT count(*) AS n FROM {t} WHERE c = 'new'").collect()[0].n == 1
    spark.sql("DROP TABLE evo_before")
    spark.sql("DROP TABLE evo_db.evo_loc")


def test_sql_tables_over_a_table_evolved_elsewhere_refuse_or_are_created_again(spark, tmp_path: Path) -> None:
    """A widening this session's ``hudi_layout.write`` did not make (here: a write through the data source, whose
    commit runs outside this process; or another engine) leaves the catalog's int: a query whose scan runs is
    refused with one line naming the column and how to re-create the table (it failed in the workers with an
    Arrow overflow before session 11); re-created, the table reads the new schema."""
    path = tmp_path / "sql"
    _write(spark, v1(20), path, 2)
    spark.sql("DROP TABLE IF EXISTS evo_stale")
    spark.sql(f"CREATE TABLE evo_stale USING hudi_layout LOCATION '{path}'")
    widened = pa.table({"id": ["k9001"], "p": ["y"], "a": pa.array([2**40], pa.int64()),
                        "b": pa.array([1], pa.int32()), "f": pa.array([0.5], pa.float32()), "s": ["s"]})
    spark.createDataFrame(widened).write.format("hudi_layout").mode("append").save(str(path))
    with pytest.raises(Exception) as info:
        spark.sql("SELECT max(a) AS m FROM evo_stale").collect()
    message = str(info.value)
    assert "column 'a' was int" in message and "bigint" in message and "CREATE TABLE" in message
    assert "not in range" not in message  # not the workers' overflow
    spark.sql("DROP TABLE evo_stale")
    spark.sql(f"CREATE TABLE evo_stale USING hudi_layout LOCATION '{path}'")
    assert spark.sql("SELECT max(a) AS m FROM evo_stale").collect()[0].m == 2**40
    spark.sql("DROP TABLE evo_stale")


def test_reconcile_schema_casts_a_batch_of_an_older_schema_to_the_table(spark, tmp_path: Path) -> None:
    """hoodie.datasource.write.reconcile.schema=true, as Hudi does it: a batch of the table's first schema (a
    int32, no column c) into the evolved table (a long, c string) is refused by default, written with the
    option (a cast to long, c null); an upsert of such a batch sets c to null; the data source writer refuses
    the option in one line. Until session 13 the option was accepted with any value and ignored."""
    import shutil

    from hudi_layout.errors import SchemaMismatchError

    path = tmp_path / "rec"
    _write(spark, v1(20), path, 1)
    _write(spark, v2(20, 5), path, 1)  # a: long, b: double, f: double, c added
    lagging = v1(30).slice(25)  # ids k0025..k0029 in the first schema
    before = sorted(p.name for p in path.rglob("*") if p.is_file())
    with pytest.raises(SchemaMismatchError):
        hudi_layout.write(spark.createDataFrame(lagging), str(path), OPTS)
    assert sorted(p.name for p in path.rglob("*") if p.is_file()) == before
    reconcile = {"hoodie.datasource.write.reconcile.schema": "true"}
    hudi_layout.write(spark.createDataFrame(lagging), str(path), {**OPTS, **reconcile})
    update = v1(2).slice(1).set_column(2, "a", pa.array([7], pa.int32()))  # k0001 in the first schema
    hudi_layout.write(spark.createDataFrame(update), str(path),
                      {**OPTS, **reconcile, "hoodie.datasource.write.operation": "upsert"})
    want = expected_of([v1(20), v2(20, 5), lagging])
    want["k0001"] = {**want["k0001"], "a": 7, "c": None}
    got = as_rows(hudi_layout.read(str(path), spark=spark).toArrow())
    assert got == want
    rs = pa.Table.from_batches([conform_batch(b, TARGET) for b in hudi_rs_table(path).read()])
    assert as_rows(rs) == want
    assert '"c"' in (HudiTable(path).schema() or "")
    copy = tmp_path / "ds"
    shutil.copytree(path, copy)
    with pytest.raises(Exception, match="reconcile.schema=true is not supported by the data source writer"):
        spark.createDataFrame(lagging).write.format("hudi_layout").mode("append").options(
            **OPTS, **reconcile).save(str(copy))


def expected_of(tables: list[pa.Table]) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for t in tables:
        rows.update({r["id"]: r for r in conform_batch(t, TARGET).to_pylist()})
    return rows


def _schema_history(path: Path, *versions: list[tuple[int, str, str]]) -> None:
    """A ``.hoodie/.schema`` history as Hudi's schema-on-read writer keeps it (one completed
    ``<instant>.schemacommit`` per schema change, each holding every version so far, newest first)."""
    docs: list[dict] = []
    for n, fields in enumerate(versions):
        docs.insert(0, {"max_column_id": max(i for i, _n, _t in fields), "version-id": 20250101000000000 + n,
                        "type": "record", "fields": [{"id": i, "name": name, "optional": True, "type": t}
                                                     for i, name, t in fields]})
        (path / ".hoodie" / ".schema" / f"{20250101000000000 + n}.schemacommit").write_text(
            json.dumps({"schemas": docs}))


def test_tables_whose_hudi_internal_schema_renamed_columns_are_refused_on_every_path(spark, tmp_path: Path) -> None:
    """Hudi's schema on read (``ALTER TABLE ... RENAME COLUMN``) matches file columns by id; we match them by
    name, so after a rename files written before it would answer NULL under the new name (the history is in
    ``.hoodie/.schema``; until session 18 it was not looked at). Such a table is refused with one line on every
    path; a history that only adds and widens columns reads as before, and a write that would change the
    schema of such a table is refused (we do not extend the history)."""
    import contextlib
    import io

    from hudi_layout.errors import UnsupportedTableError, from_spark_error_text
    from hudi_layout.tools import cli

    path = tmp_path / "t"
    _write(spark, v1(40), path, 2)
    columns = [(0, "id", "string"), (1, "p", "string"), (2, "a", "int"), (3, "b", "int"), (4, "f", "float"),
               (5, "s", "string")]
    _schema_history(path, columns, [*columns, (6, "extra", "string")][:-1])  # two versions, names kept
    assert hudi_layout.read(str(path), "a >= 0", spark=spark).count() == 40
    with pytest.raises(UnsupportedTableError, match="would change the schema"):
        _write(spark, v2(40, 5), path, 1)  # adds column c
    hudi_layout.write(spark.createDataFrame(v1(45).slice(40)), str(path), OPTS)  # the same schema: written
    before = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}

    _schema_history(path, columns, [(0, "id", "string"), (1, "p", "string"), (2, "a2", "int"), *columns[3:]])
    attempts = {
        "read": lambda: hudi_layout.read(str(path), "a2 >= 0", spark=spark).count(),
        "data source": lambda: spark.read.format("hudi_layout").load(str(path)).count(),
        "explain": lambda: hudi_layout.explain(str(path), "a2 >= 0"),
        "write": lambda: hudi_layout.write(spark.createDataFrame(v1(50).slice(45)), str(path), OPTS),
        "cluster": lambda: hudi_layout.cluster(str(path), ["a"], spark=spark),
    }
    for what, attempt in attempts.items():
        with pytest.raises(Exception) as e:
            attempt()
        err = e.value if isinstance(e.value, UnsupportedTableError) else from_spark_error_text(str(e.value))
        assert isinstance(err, UnsupportedTableError) and "renamed a / a2" in str(err), (what, str(e.value)[:300])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["query", str(path), "SELECT count(*) FROM t"]) == 2
    assert "renamed a / a2" in err.getvalue() and "Traceback" not in err.getvalue()
    after = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
    assert after == before, (after - before, before - after)  # nothing written, nothing left behind
