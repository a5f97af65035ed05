"""Issue #11 as a new user (and an attacker) meets it, through the public API and the CLI only.

Each test reproduces one finding of the issue; before the fix each failed (files outside the table, a
stuck instant, options silently ignored, a deleted folder, a raw traceback).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_layout
from hudi_layout import errors
from tests.helpers.integration import data_only, diff_snapshots, hudi_rs_read, rows_digest, tree_snapshot

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "reg", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"}


def rows(ps: list[str], start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + len(ps)), pa.int32()), "p": ps})


def cli(*args: str, capsys) -> tuple[int, list[str]]:
    from hudi_layout.tools.cli import main

    code = main(list(args))
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("value", ["../ESCAPED", "/abs"])
def test_cli_ingest_of_hostile_partition_value(spark, tmp_path: Path, capsys, value: str):
    """Finding 1: exit 2 with one line + hint; nothing beside the table, at the root, or left in .hoodie
    (the other hostile values, without Spark: tests/unit/writer/test_write_safety.py)."""
    src = tmp_path / "part.parquet"
    pq.write_table(rows(["ok", value]), src)
    table = tmp_path / "T"
    root_before = set(os.listdir("/"))
    code, err = cli("ingest", str(src), str(table), "--record-key", "id", "--partition-by", "p", capsys=capsys)
    assert code == 2, err
    assert err[0].startswith("error:") and "partition" in err[0] and len(err) == 2 and err[1].startswith("hint:")
    assert sorted(os.listdir(tmp_path)) == ["part.parquet"], os.listdir(tmp_path)  # no sibling, no table
    assert set(os.listdir("/")) == root_before


def test_url_encoded_hostile_values_are_written_and_read_back(spark, tmp_path: Path):
    table = tmp_path / "T"
    values = ["../ESCAPED", "/abs", ".hoodie", ".", "a/b", "é😀"]
    hudi_layout.write(spark.createDataFrame(rows(values)), str(table),
                      {**OPTS, "hoodie.datasource.write.partitionpath.urlencode": "true"})
    assert sorted(os.listdir(tmp_path)) == ["T"]
    for reader in (hudi_rs_read(table), hudi_layout.read(str(table), spark=spark).toArrow()):
        assert sorted(zip(reader.column("id").to_pylist(), reader.column("p").to_pylist())) == list(
            enumerate(values))
    got = hudi_layout.read(str(table), where="p = '../ESCAPED'", spark=spark).toArrow()  # pruning decodes
    assert got.column("id").to_pylist() == [0]


def test_bad_option_leaves_nothing_pending(spark, tmp_path: Path, capsys):
    """Finding 3: a bad option fails before begin_write: no instant, no temp folder, no held heartbeat."""
    table = tmp_path / "T"
    hudi_layout.write(spark.createDataFrame(rows(["a"])), str(table), OPTS)
    before = tree_snapshot(table)
    with pytest.raises(errors.InvalidArgumentError):
        hudi_layout.write(spark.createDataFrame(rows(["b"], 5)), str(table),
                          {**OPTS, "hoodie.parquet.max.file.size": "abc"})
    assert diff_snapshots(before, tree_snapshot(table)) == []
    hudi_layout.write(spark.createDataFrame(rows(["c"], 9)), str(table), OPTS)  # no rollback needed
    tl = os.listdir(table / ".hoodie" / "timeline")
    assert not [f for f in tl if f.endswith(".rollback")], tl


def test_conflicting_table_name_is_refused(spark, tmp_path: Path):
    """Finding 6: appending with another table name (or key, partition field...) is an error."""
    table = tmp_path / "T"
    hudi_layout.write(spark.createDataFrame(rows(["a"])), str(table), OPTS)
    before = tree_snapshot(table)
    with pytest.raises(errors.InvalidArgumentError, match=r"hoodie.table.name='other' but the table has 'reg'"):
        hudi_layout.write(spark.createDataFrame(rows(["b"], 5)), str(table), {**OPTS, "hoodie.table.name": "other"})
    assert diff_snapshots(before, tree_snapshot(table)) == []


def test_failed_first_write_keeps_existing_empty_folder(spark, tmp_path: Path):
    """Finding 7: never delete what we did not create."""
    folder = tmp_path / "mine"
    folder.mkdir()
    with pytest.raises(errors.HudiLayoutError):
        hudi_layout.write(spark.createDataFrame(rows(["ok", "../x"])), str(folder), OPTS)
    assert folder.is_dir() and os.listdir(folder) == []
    assert sorted(os.listdir(tmp_path)) == ["mine"]


def test_failed_first_write_rows_never_visible(spark, tmp_path: Path):
    """Finding 2 (core): files of a first write that never completed are not "archived" commits."""
    table = tmp_path / "T"
    hudi_layout.write(spark.createDataFrame(rows(["a", "b"])), str(table), OPTS)
    first = hudi_layout.HudiTable(str(table)).file_slices()[0]
    # a late file of an earlier, failed instant (older than every instant on the timeline)
    src = Path(first.base_file_path)
    late = src.with_name(src.name.replace(first.commit_time, "20000101000000000").replace(first.file_id, "late-0"))
    late.write_bytes(src.read_bytes())
    assert rows_digest(data_only(hudi_layout.read(str(table), spark=spark).toArrow())) == rows_digest(
        data_only(hudi_rs_read(table)))
    assert hudi_layout.read(str(table), spark=spark).count() == 2


def test_decompression_bomb_is_one_line_in_explain_and_inspect(spark, tmp_path: Path, capsys, monkeypatch):
    """Finding 5: an MDT block that would inflate past what it may is never inflated: loading the index fails
    with one error naming the file; ``inspect`` reports it, ``explain`` plans without the index (no file
    skipped) and says why."""
    from hudi_layout.format import bounded
    from hudi_layout.table import cache

    table = tmp_path / "T"
    hudi_layout.write(spark.createDataFrame(rows(["a", "b"])), str(table), OPTS)
    monkeypatch.setattr(bounded, "MAX_INFLATED_BYTES", 64)  # every real MDT block is now a "bomb"
    monkeypatch.setattr(cache, "_enabled", False)  # decode the files now, not arrays cached by the write
    from hudi_layout.tools.cli import main

    assert main(["inspect", str(table)]) == 0
    out = capsys.readouterr().out
    assert "index        unreadable:" in out and ".hoodie/metadata/column_stats/" in out and "inflated bytes" in out
    assert main(["explain", str(table), "id = 1"]) == 0
    out = capsys.readouterr().out
    assert "column_stats index not used" in out and ".hoodie/metadata/column_stats/" in out
    assert "inflated bytes" in out
    with pytest.raises(errors.CorruptFileError, match=r"\.hoodie/metadata/column_stats/.*inflated bytes"):
        hudi_layout.ColumnStatsIndex(str(table)).load_column("id")


def test_missing_table_errors_carry_a_hint_also_through_the_data_source(spark, tmp_path: Path, capsys):
    """Finding 8: one line + hint from the CLI; through ``spark.read.format("hudi_layout")`` the Spark error's
    first line is our error (no worker traceback), and the CLI turns such errors back into ours."""
    code, err = cli("inspect", str(tmp_path / "missing"), capsys=capsys)
    assert code == 2 and "not a Hudi table" in err[0] and err[1].startswith("hint:")
    from hudi_layout.spark.datasource import register

    register(spark)
    with pytest.raises(Exception) as e:  # noqa: B017 - Spark's AnalysisException
        spark.read.format("hudi_layout").load(str(tmp_path / "missing")).count()
    first = str(e.value).strip().splitlines()[0]
    assert "NotAHudiTableError" in first and "not a Hudi table" in first, str(e.value)[:500]
    assert "Traceback" not in str(e.value)
    ours = errors.from_spark_error_text(str(e.value))
    assert isinstance(ours, errors.NotAHudiTableError) and ours.hint


def test_a_bad_sql_statement_in_the_cli_is_one_line(spark, tmp_path: Path, capfd):
    """PySpark logs a failed SQL statement with the JVM's whole stack trace (a JSON record on stderr) before
    raising; the CLI's query says it in one line and a hint and exits 2, nothing more (found by hand in session
    13; the hint since session 24)."""
    from hudi_layout.tools.cli import main

    table = tmp_path / "T"
    hudi_layout.write(spark.createDataFrame(rows(["a", "b"])), str(table), OPTS)
    capfd.readouterr()
    for sql in ("SELECT count(*) FROM t WHERE p >= X'zz'", "SELECT nope FROM t"):
        assert main(["query", str(table), sql]) == 2
        err = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 2 and err[0].startswith("error: [") and err[1].startswith("hint: "), err


def test_a_bad_spark_master_in_the_cli_is_one_line(spark, tmp_path: Path):
    """A malformed --master made spark-submit print a JVM stack trace and PySpark a Python one (exit 1); an
    unreachable one, after Spark's retries, a py4j traceback. Both are one line and a hint, exit 2 (the
    unreachable case takes Spark's ~60 s of retries, so only the malformed one runs here)."""
    import subprocess
    import sys

    table = tmp_path / "T"
    hudi_layout.write(spark.createDataFrame(rows(["a"])), str(table), OPTS)
    cli_path = Path(sys.executable).parent / "hudi-layout"
    got = subprocess.run([str(cli_path), "query", str(table), "SELECT 1", "--master", "bogus"],
                         capture_output=True, text=True, timeout=300)
    err = [line for line in got.stderr.splitlines() if line.strip() and "incubator" not in line]
    assert got.returncode == 2, got.stderr
    assert err == ["error: 'bogus' is not a Spark master URL",
                   "hint: local, local[N], local[*], spark://HOST:PORT, yarn or k8s://HOST:PORT"], err


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4, 2]", "local-cluster[2,1,1024]",
                                    "spark://h:7077", "spark://a:7077,b:7077", "yarn", "k8s://https://h:443"])
def test_master_urls_spark_accepts_pass_the_check(master: str):
    from hudi_layout.spark.session import _MASTER_URL

    assert _MASTER_URL.match(master)


def _inspect_says(table: Path, reason: str, capsys) -> bool:
    """``inspect`` names a state that refuses every change, with its hint, before a write fails on it."""
    from hudi_layout.tools.cli import main

    assert main(["inspect", str(table)]) == 0
    out = capsys.readouterr().out.splitlines()
    refused = [k for k, line in enumerate(out) if line.startswith("CHANGES REFUSED:") and reason in line]
    return len(refused) == 1 and out[refused[0] + 1].startswith("  hint:")


def test_odd_table_configs_read_and_write_as_hudi_does(spark, tmp_path: Path, capsys):
    """Session 19's odd states, each as Hudi's Java code meets it: only ``hoodie.properties.backup`` left (an
    update cut short) is the table's config for reads *and* writes; a pending ``restore`` stops every change
    in one line (the CLI exits 2 and nothing on disk moves) while reads go on."""
    from hudi_layout.format.instant import State, instant_file_name

    table = tmp_path / "T"
    hudi_layout.write(spark.createDataFrame(rows(["a", "b"])), str(table), OPTS)
    hoodie = table / ".hoodie"
    (hoodie / "hoodie.properties").rename(hoodie / "hoodie.properties.backup")
    hudi_layout.write(spark.createDataFrame(rows(["b", "c"], 1)), str(table),
                      {**OPTS, "hoodie.datasource.write.operation": "upsert"})
    assert sorted(hudi_rs_read(table).column("id").to_pylist()) == [0, 1, 2]

    (hoodie / "timeline" / instant_file_name("20990101000000000", "restore", State.REQUESTED)).write_bytes(b"")
    src = tmp_path / "more.parquet"
    pq.write_table(rows(["d"], 7), src)
    before = tree_snapshot(table)
    for args in (("ingest", str(src), str(table), "--operation", "upsert"), ("clean", str(table)),
                 ("cluster", str(table), "--columns", "id")):
        code, err = cli(*args, capsys=capsys)
        assert code == 2 and len(err) == 2, (args, err)
        assert "a restore is pending" in err[0] and err[1].startswith("hint: finish the restore"), err
    assert _inspect_says(table, "a restore is pending", capsys)
    assert diff_snapshots(before, tree_snapshot(table)) == []
    assert sorted(hudi_layout.read(str(table), spark=spark).toArrow().column("id").to_pylist()) == [0, 1, 2]


def test_a_vanished_log_file_in_an_old_read_says_what_to_do(spark, tmp_path: Path):
    """A Merge-on-Read DataFrame planned before a clean (grace period 0) deleted one of its log files fails
    in its task; the error crosses Spark as one tagged line with its hint, for ``hl.read`` as for the data
    source."""
    from tests.helpers.mor_builder import Upserts, make_mor_table, row

    t = make_mor_table(tmp_path / "t")
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    df = hudi_layout.read(str(t.base), spark=spark)
    for log in [p for p in t.base.iterdir() if ".log." in p.name]:
        log.unlink()
    with pytest.raises(Exception) as err:
        df.collect()
    found = errors.from_spark_error_text(str(err.value))
    assert found is not None and "log file vanished" in str(found), str(err.value)[-2000:]
    assert found.hint == "plan the read again"


def test_a_metadata_table_behind_a_completed_commit_is_refused_until_rebuilt(spark, tmp_path: Path, capsys):
    """Session 19's last odd state: the MDT deltacommit of a completed data commit is pending (a hand-edited
    timeline; writers complete the MDT first). Readers that list through the MDT (hudi-rs here) miss that
    commit's files, and writing on kept them missing for good: now every change is refused in one line until
    ``index --rebuild``, after which hudi-rs reads right and writes go on."""
    table = tmp_path / "T"
    upsert = {**OPTS, "hoodie.datasource.write.operation": "upsert"}
    hudi_layout.write(spark.createDataFrame(rows(["a", "b", "c"])), str(table), OPTS)
    hudi_layout.write(spark.createDataFrame(rows(["a", "b"], 3)), str(table), upsert)
    mdt_timeline = table / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    last = max(f for f in os.listdir(mdt_timeline) if f.endswith(".deltacommit"))
    (mdt_timeline / last).unlink()
    expected = [(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "b")]
    before = tree_snapshot(table)
    with pytest.raises(errors.CorruptFileError, match="never completed its deltacommit") as err:
        hudi_layout.write(spark.createDataFrame(rows(["d"], 5)), str(table), upsert)
    assert "index PATH --rebuild" in (err.value.hint or "")
    code, lines = cli("clean", str(table), capsys=capsys)
    assert code == 2 and "never completed" in lines[0] and lines[1].startswith("hint:"), lines
    assert _inspect_says(table, "never completed its deltacommit", capsys)
    assert diff_snapshots(before, tree_snapshot(table)) == []
    got = hudi_layout.read(str(table), spark=spark).toArrow()
    assert sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist())) == expected
    code, lines = cli("index", str(table), "--rebuild", capsys=capsys)
    assert code == 0, lines
    by_rs = hudi_rs_read(table)
    assert sorted(zip(by_rs.column("id").to_pylist(), by_rs.column("p").to_pylist())) == expected
    hudi_layout.write(spark.createDataFrame(rows(["d"], 5)), str(table), upsert)
    assert sorted(hudi_rs_read(table).column("id").to_pylist()) == [0, 1, 2, 3, 4, 5]


def test_index_rebuild_names_the_float_columns_it_cannot_describe(spark, tmp_path: Path, capsys) -> None:
    """Session 25's probe F1: our writers index a double column exactly (NaN included), but a rebuild reads
    footers only, which hold no NaN-safe bound, so the rebuilt index dropped the column without a word. It
    still drops it (the files stay candidates: never a wrong answer), and now says so, naming the column."""
    from hudi_layout.metadata.column_stats_index import ColumnStatsIndex

    table = tmp_path / "F"
    data = pa.table({"id": [1, 2, 3], "p": ["a", "b", "a"], "v": [0.5, float("nan"), 2.0], "n": [1, 2, 3]})
    hudi_layout.write(spark.createDataFrame(data), str(table), OPTS)
    assert "v" in ColumnStatsIndex(str(table)).indexed_columns()
    from hudi_layout.tools.cli import main

    code = main(["index", str(table), "--rebuild"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and any(line.startswith("note: column v (double:") for line in lines), lines
    assert not any("column n " in line or "column id " in line for line in lines), lines
    index = ColumnStatsIndex(str(table))
    assert "v" not in index.indexed_columns() and "n" in index.indexed_columns()
    assert hudi_layout.read(str(table), "v > 1.0", spark=spark).count() == 2  # NaN sorts above every number


def test_a_file_uri_is_the_table_on_every_command_and_other_schemes_are_refused(spark, tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """``hl.write(df, "file:///abs/t")`` wrote a stray table under ``./file:/abs/t`` while every reader of the real
    table missed the rows (a probe, session 31): writes, upserts, the data source, clustering and cleaning take a
    ``file:`` URI as the local path; ``s3://`` is refused before anything is written."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t"
    uri = path.as_uri()  # file:///...
    opts = {"hoodie.table.name": "u", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "v"}
    schema = "id long, v long"
    hudi_layout.write(spark.createDataFrame([(i, 1) for i in range(10)], schema), str(path), opts)
    hudi_layout.write(spark.createDataFrame([(i, 1) for i in range(10, 15)], schema), uri, opts)
    hudi_layout.write(spark.createDataFrame([(0, 2)], schema), uri, {**opts, "hoodie.datasource.write.operation":
                                                                     "upsert"})
    spark.createDataFrame([(20, 1)], schema).write.format("hudi_layout").options(**opts).mode("append").save(uri)
    hudi_layout.cluster(uri, ["v"], strategy="linear", spark=spark)
    hudi_layout.clean(uri)
    got = {r["id"]: r["v"] for r in hudi_rs_read(path).to_pylist()}
    assert got == {**{i: 1 for i in range(15)}, 0: 2, 20: 1}
    assert sorted(os.listdir(tmp_path)) == ["t"], "nothing outside the table"
    before = tree_snapshot(tmp_path)
    with pytest.raises(errors.InvalidArgumentError, match="s3"):
        hudi_layout.write(spark.createDataFrame([(1, 1)], schema), "s3://bucket/t", opts)
    assert diff_snapshots(before, tree_snapshot(tmp_path)) == []
