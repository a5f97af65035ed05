"""Bad input: every refusal is one clear ``hudi_layout.errors`` error naming the problem, and nothing on
disk changes (directory tree, sizes, mtimes and contents compared before and after)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_layout
from hudi_layout import errors
from tests.helpers.integration import (
    data_only,
    diff_snapshots,
    hudi_rs_read,
    our_slices,
    rows_digest,
    timeline_files,
    tree_snapshot,
)

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "bad", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"}


def rows(n=30, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int32()),
                     "name": [f"n{i}" for i in range(start, start + n)],
                     "v": pa.array([i / 2 for i in range(n)], pa.float64()),
                     "p": [["x", "y"][i % 2] for i in range(n)]})


@pytest.fixture(scope="module")
def base_table(spark, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bad_input") / "table"
    hudi_layout.write(spark.createDataFrame(rows()), str(path), OPTS)
    return path


@pytest.fixture()
def table(base_table, tmp_path) -> Path:
    """A private copy (mtimes preserved) of the module's table."""
    dest = tmp_path / "table"
    shutil.copytree(base_table, dest)
    return dest


def assert_refused(spark, path: Path, df, exc_type, pattern: str, opts=None, mode="append"):
    """The write raises ``exc_type`` with a one-line message matching ``pattern``; ``path`` is untouched."""
    before = tree_snapshot(path)
    existed = path.exists()
    with pytest.raises(exc_type) as info:
        hudi_layout.write(df, str(path), OPTS if opts is None else opts, mode=mode)
    message = str(info.value)
    assert isinstance(info.value, errors.HudiLayoutError)
    assert "\n" not in message.strip(), message
    assert re.search(pattern, message, re.IGNORECASE), message
    assert diff_snapshots(before, tree_snapshot(path)) == []
    assert path.exists() == existed
    return message


def test_existing_path_that_is_a_file(spark, tmp_path):
    path = tmp_path / "a_file"
    path.write_text("hello")
    assert_refused(spark, path, spark.createDataFrame(rows()), errors.NotAHudiTableError, "not a directory")
    assert path.read_text() == "hello"


def test_non_empty_non_hudi_folder(spark, tmp_path):
    path = tmp_path / "folder"
    (path / "sub").mkdir(parents=True)
    (path / "data.csv").write_text("a,b\n1,2\n")
    assert_refused(spark, path, spark.createDataFrame(rows()), errors.NotAHudiTableError, "not a Hudi table")


def test_unknown_table_version(spark, table):
    props = table / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    props.write_text(re.sub(r"hoodie\.table\.version=\d+", "hoodie.table.version=42", text))
    assert_refused(spark, table, spark.createDataFrame(rows(5, 100)), errors.UnsupportedTableError, r"version 42")


@pytest.mark.parametrize("change,pattern", [
    ("missing", r"column 'v' of table .* is missing from the data"),
    ("type", r"column 'v' cannot change from double"),
    ("narrow", r"column 'v' is float in the data but double .* narrowing"),
])
def test_schema_mismatch_on_append(spark, table, change, pattern):
    """Schema evolution accepts new columns and safe widenings (tests/integration/test_schema_evolution.py);
    everything else is one error naming the column, before anything is written."""
    df = spark.createDataFrame(rows(5, 100))
    if change == "missing":
        df = df.drop("v")
    elif change == "type":
        df = df.withColumn("v", df["v"].cast("string"))
    else:
        df = df.withColumn("v", df["v"].cast("float"))
    assert_refused(spark, table, df, errors.SchemaMismatchError, pattern)


def test_missing_record_key_column(spark, table, tmp_path):
    df = spark.createDataFrame(rows(5, 100)).drop("id")
    assert_refused(spark, table, df, errors.HudiLayoutError, r"\bid\b")
    # on a new table too (nothing created)
    assert_refused(spark, tmp_path / "new", df, errors.InvalidArgumentError, r"record key field 'id'")


def test_null_record_key_on_existing_table(spark, table):
    before_rows = rows_digest(data_only(hudi_rs_read(table)))
    before_slices = our_slices(table)
    before_timeline = timeline_files(table)
    df = spark.createDataFrame(pa.table({"id": pa.array([1000, None, 1002], pa.int32()),
                                         "name": ["a", "b", "c"], "v": [1.0, 2.0, 3.0], "p": ["x", "y", "x"]}))
    with pytest.raises(errors.InvalidArgumentError) as info:
        hudi_layout.write(df, str(table), OPTS)
    assert "record key is null" in str(info.value) and "\n" not in str(info.value)
    # the table stays as before: same rows, same files, no new (or pending) data instant
    assert rows_digest(data_only(hudi_rs_read(table))) == before_rows
    assert our_slices(table) == before_slices
    assert timeline_files(table) == before_timeline
    assert not list((table / ".hoodie" / ".temp").glob("2*"))


def test_null_record_key_on_new_table_leaves_nothing(spark, tmp_path):
    path = tmp_path / "new_table"
    df = spark.createDataFrame(pa.table({"id": pa.array([1, None], pa.int32()), "p": ["x", "y"]}))
    with pytest.raises(errors.InvalidArgumentError, match="record key is null"):
        hudi_layout.write(df, str(path), OPTS)
    assert not path.exists()


@pytest.mark.parametrize("column,ddl", [
    ("m", "map<string,int>"), ("arr", "array<int>"), ("st", "struct<a:int,b:string>")])
def test_unsupported_column_types_name_the_column(spark, tmp_path, column, ddl):
    df = spark.sql(f"SELECT CAST(id AS INT) AS id, 'x' AS p, CAST(NULL AS {ddl}) AS {column} FROM range(3)")
    assert_refused(spark, tmp_path / "new", df, errors.InvalidArgumentError, rf"\b{column}\b")


@pytest.mark.parametrize("collation", ["UTF8_LCASE", "UNICODE_CI", "UTF8_BINARY_RTRIM"])
def test_collated_strings_are_refused_naming_the_column(spark, tmp_path, collation):
    """Hudi's schemas keep plain strings: a collated column was written as one, and ``s = 'abc'`` stopped
    matching ``ABC`` after the write (session 16); the data source writer refuses it too."""
    df = spark.sql(f"SELECT CAST(id AS INT) AS id, 'x' AS p, CAST('ABC' AS STRING COLLATE {collation}) AS s "
                   "FROM range(3)")
    assert_refused(spark, tmp_path / "new", df, errors.InvalidArgumentError, rf"'s' .*collation {collation}")
    with pytest.raises(Exception, match=f"collation {collation}"):
        df.write.format("hudi_layout").options(**OPTS).mode("overwrite").save(str(tmp_path / "ds"))
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("expr, spark_type", [("parse_json('{\"a\": 1}')", "variant"),
                                               ("INTERVAL '1-2' YEAR TO MONTH", "interval year to month"),
                                               ("INTERVAL '1 02:03:04' DAY TO SECOND", "interval day to second"),
                                               ("TIME '12:34:56'", "time(6)")])
def test_spark_types_a_hudi_table_cannot_hold_are_named_as_spark_names_them(spark, tmp_path, expr, spark_type):
    """Until session 17 these were refused in Arrow's words (a variant as ``struct<value: binary not null,
    ...>``, a day-time interval as ``duration[us]``, a time as ``time64[ns]``)."""
    df = spark.sql(f"SELECT CAST(id AS INT) AS id, 'x' AS p, {expr} AS v FROM range(3)")
    assert_refused(spark, tmp_path / "new", df, errors.InvalidArgumentError,
                   rf"'v' is of Spark type {re.escape(spark_type)}")
    with pytest.raises(Exception, match=re.escape(f"Spark type {spark_type}")):
        df.write.format("hudi_layout").options(**OPTS).mode("overwrite").save(str(tmp_path / "ds"))
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("column", ["dst port", "a.b", "1st", "größe"])
def test_column_names_avro_cannot_hold_are_refused_naming_the_column(spark, tmp_path, column):
    """Hudi keeps the table schema as Avro, whose names are ``[A-Za-z_][A-Za-z0-9_]*``: such a column used to
    fail deep in the write (a dotted name) or be written into a schema no Avro reader takes (session 14)."""
    df = spark.sql(f"SELECT CAST(id AS INT) AS id, 'x' AS p, id AS `{column}` FROM range(3)")
    assert_refused(spark, tmp_path / "new", df, errors.InvalidArgumentError, "cannot be a Hudi column")


def test_prepped_upsert_and_global_index_refused(spark, table):
    opts = {**OPTS, "hoodie.datasource.write.operation": "upsert_prepped"}
    assert_refused(spark, table, spark.createDataFrame(rows(5)), errors.UnsupportedTableError, "upsert_prepped",
                   opts=opts)
    opts = {**OPTS, "hoodie.datasource.write.operation": "upsert", "hoodie.index.type": "GLOBAL_BLOOM"}
    assert_refused(spark, table, spark.createDataFrame(rows(5)), errors.UnsupportedTableError, "GLOBAL_BLOOM",
                   opts=opts)


def test_append_to_v6_table_refused(spark, fixture_table):
    path = fixture_table("cow_v6_nonpartitioned.zip")
    df = spark.createDataFrame(rows(3)).drop("p")
    assert_refused(spark, path, df, errors.UnsupportedTableError, r"version 6", opts={})


def test_append_to_mor_table_with_foreign_indexes_refused(spark, fixture_table):
    path = fixture_table("mor_avro_v9_txns_simple_meta.zip")
    df = spark.createDataFrame(hudi_layout.read(str(path), spark=spark).limit(3).toArrow())  # the table's columns
    assert_refused(spark, path, df, errors.UnsupportedTableError, r"record_index", opts={})


def test_overwrite_of_non_hudi_folder_refused(spark, tmp_path):
    path = tmp_path / "folder"
    path.mkdir()
    (path / "keep.txt").write_text("important")
    assert_refused(spark, path, spark.createDataFrame(rows()), errors.NotAHudiTableError, "not a Hudi table",
                   mode="overwrite")


# --------------------------------------------------------------- session 24's probe of every command's input


def _cli(args: list[str], capsys) -> tuple[int, list[str]]:
    from hudi_layout.tools.cli import main

    code = main(args)
    return code, capsys.readouterr().err.strip().splitlines()


def _refused_in_one_line(code: int, err: list[str], *words: str) -> None:
    assert code == 2, err
    assert len(err) == 2 and err[0].startswith("error:") and err[1].startswith("hint:"), err
    assert all(w in err[0] for w in words), err


def test_commands_on_a_mistyped_path_create_nothing(spark, tmp_path, capsys, monkeypatch):
    """H1: a lock belongs to a table: ``compact --abandon``, ``execute-pending`` and ``clustering-service`` on a
    path that is no table made ``PATH/.hoodie/.locks/table.lock`` (a relative typo in the current folder)."""
    monkeypatch.chdir(tmp_path)
    for args in (["compact", "typo", "--abandon", "1"], ["execute-pending", "typo"],
                 ["clustering-service", "typo", "--columns", "id", "--max-iterations", "1"],
                 ["compact", str(tmp_path / "afile"), "--abandon", "1"]):
        (tmp_path / "afile").write_text("x")
        before = tree_snapshot(tmp_path)
        code, err = _cli(args, capsys)
        _refused_in_one_line(code, err, "not a Hudi table")
        assert diff_snapshots(before, tree_snapshot(tmp_path)) == [], args


def test_refusals_of_a_plan_or_instant_roll_nothing_back(spark, table, capsys):
    """H2 / M11: ``compact --abandon <no such plan>`` and ``execute-pending --instant <no such plan>`` rolled back
    every failed write first (deleting its files, writing a rollback instant); they now refuse before."""
    tdir = table / ".hoodie" / "timeline"
    for state in ("requested", "inflight"):
        (tdir / f"20240101000000000.commit.{state}").write_bytes(b"")
    before = tree_snapshot(table)
    code, err = _cli(["compact", str(table), "--abandon", "garbage"], capsys)
    _refused_in_one_line(code, err, "Copy-on-Write")  # refused before any rollback
    code, err = _cli(["execute-pending", str(table), "--instant", "garbage"], capsys)
    _refused_in_one_line(code, err, "no pending clustering plan garbage")
    assert diff_snapshots(before, tree_snapshot(table)) == []


def test_index_of_a_column_that_is_not_there_is_refused(spark, table, capsys):
    """H3: ``index --rebuild --columns nope`` dropped the index and rebuilt it with no records."""
    before = tree_snapshot(table)
    for args, words in ((["index", str(table), "--rebuild", "--columns", "nope"], ("'nope' is not a column",)),
                        (["index", str(table), "--rebuild", "-o", "hoodie.metadata.enable=false"], ("index",)),
                        (["index", str(table), "--rebuild", "-o", "hoodie.metadata.enable=perhaps"], ("perhaps",)),
                        (["clean", str(table), "-o", "hoodie.cleaner.commits.retained=abc"], ("abc",)),
                        (["clean", str(table), "-o", "hoodie.parquet.max.file.size=100"], ("not used by clean",))):
        code, err = _cli(args, capsys)
        _refused_in_one_line(code, err, *words)
    assert diff_snapshots(before, tree_snapshot(table)) == []


def test_an_input_folder_with_a_file_that_is_not_parquet(spark, tmp_path, capsys):
    """H4: Spark failed the job with a 177-line traceback; files Spark skips (``_SUCCESS``, dot-files) pass."""
    import pyarrow.parquet as pq

    src = tmp_path / "in"
    src.mkdir()
    pq.write_table(rows(), src / "part-0.parquet")
    (src / "_SUCCESS").write_text("")
    (src / "notes.txt").write_text("hello")
    code, err = _cli(["ingest", str(src), str(tmp_path / "T"), "--record-key", "id"], capsys)
    _refused_in_one_line(code, err, "notes.txt", "not a parquet file")
    assert not (tmp_path / "T").exists()


def test_query_refuses_statements_that_write(spark, table, tmp_path, capsys, monkeypatch):
    """H6: ``INSERT OVERWRITE DIRECTORY`` into the table folder replaced a data file; ``CREATE TABLE AS``
    wrote a warehouse folder into the current one."""
    monkeypatch.chdir(tmp_path)
    before, cwd_before = tree_snapshot(table), tree_snapshot(tmp_path)
    for sql in (f"INSERT OVERWRITE DIRECTORY '{table}/x' USING parquet SELECT id FROM t",
                "CREATE TABLE copy AS SELECT * FROM t", "WITH c AS (SELECT * FROM t) INSERT INTO x SELECT * FROM c",
                "SET spark.sql.shuffle.partitions=1"):
        code, err = _cli(["query", str(table), sql], capsys)
        _refused_in_one_line(code, err, "change")
    assert diff_snapshots(before, tree_snapshot(table)) == []
    assert diff_snapshots(cwd_before, tree_snapshot(tmp_path)) == []


def test_clustering_service_refuses_before_it_starts(spark, table, capsys):
    """H5: a bad column, option value or poll interval failed only when a clustering was due (hours later)."""
    before = tree_snapshot(table)
    for args, words in ((["--columns", "nope"], ("nope",)), (["--columns", "id", "--poll-seconds", "-5"], ("-5",)),
                        (["--columns", "id", "-o", "hoodie.clustering.async.max.commits=abc"], ("abc",))):
        code, err = _cli(["clustering-service", str(table), *args, "--max-iterations", "1"], capsys)
        _refused_in_one_line(code, err, *words)
    assert diff_snapshots(before, tree_snapshot(table)) == []


def test_report_checks_every_argument_before_it_writes(spark, table, tmp_path, capsys):
    """M1 / M2 / L4: a bad --where left pictures behind, --out naming a file was a traceback, and --out inside
    the table wrote the report into its base path."""
    (tmp_path / "file").write_text("x")
    for args, words in ((["--out", str(tmp_path / "out"), "--where", "id = = 1"], ()),
                        (["--out", str(tmp_path / "file")], ("is a file",)),
                        (["--out", str(table / "report")], ("inside the table",))):
        before = tree_snapshot(tmp_path)
        code, err = _cli(["report", str(table), "--columns", "id,v", *args], capsys)
        assert code == 2 and err[0].startswith("error:") and all(w in err[0] for w in words), err
        assert diff_snapshots(before, tree_snapshot(tmp_path)) == [], args


def test_the_python_api_names_a_wrong_argument_type(spark, table):
    """M9: a pyarrow table, an options list, a path number or a missing column were raw ``AttributeError`` /
    ``TypeError`` / ``AnalysisException`` from deep inside; each is now one :class:`InvalidArgumentError`."""
    cases = [lambda: hudi_layout.write(rows(), str(table), OPTS),
             lambda: hudi_layout.write(spark.createDataFrame(rows()), str(table), ["k=v"]),
             lambda: hudi_layout.read(str(table), spark=spark, options=["x"]),
             lambda: hudi_layout.read(str(table), spark=spark, columns=["nope"]),
             lambda: hudi_layout.clean(None),
             lambda: hudi_layout.cluster(str(table), 5, spark=spark)]
    before = tree_snapshot(table)
    for case in cases:
        with pytest.raises(errors.InvalidArgumentError) as info:
            case()
        assert info.value.hint, info.value
    assert diff_snapshots(before, tree_snapshot(table)) == []
    got = hudi_layout.read(str(table), spark=spark, columns="id,p").toArrow()  # a comma list, as cluster takes
    assert got.column_names == ["id", "p"] and got.num_rows == 30


def test_conflicting_flags_and_unknown_table_types_are_refused(spark, table, tmp_path, capsys):
    """M6 / M7: flags one operation ignores in silence, and a table type no reader knows."""
    import pyarrow.parquet as pq

    src = tmp_path / "in.parquet"
    pq.write_table(rows(), src)
    before = tree_snapshot(table)
    for args, words in ((["ingest", str(src), str(table), "--operation", "upsert", "--partitions-to-delete", "x"],
                         ("delete_partition only",)),
                        (["ingest", str(src), str(table), "--operation", "delete_partition",
                          "--partitions-to-delete", "x"], ("not both",)),
                        (["cluster", str(table), "--columns", "id", "--dry-run", "--schedule-only"], ("--dry-run",)),
                        (["compact", str(table), "--abandon", "1", "--schedule-only"], ("--abandon",))):
        code, err = _cli(args, capsys)
        _refused_in_one_line(code, err, *words)
    assert diff_snapshots(before, tree_snapshot(table)) == []
    props = table / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.type=COPY_ON_WRITE", "hoodie.table.type=FOO"))
    code, err = _cli(["inspect", str(table)], capsys)
    _refused_in_one_line(code, err, "FOO", "not a Hudi table type")


def test_malformed_csv_fails_the_ingest_in_one_line(spark, tmp_path, capsys):
    """M10: Spark's PERMISSIVE default turned a short row and an unterminated quote into nulls, and a table was
    created; the CLI reads CSV / JSON FAILFAST, and Spark's failure is its cause in one line."""
    src = tmp_path / "bad.csv"
    src.write_text('id,p\n1,a\n2\n"x,y\n')
    code, err = _cli(["ingest", str(src), str(tmp_path / "T"), "--format", "csv", "--record-key", "id"], capsys)
    err = [line for line in err if not line.startswith("WARNING")]
    _refused_in_one_line(code, err, "Malformed CSV record")
    assert not (tmp_path / "T").exists()
