"""CLI commands that need no Spark (explain, inspect, report, index) on real fixture tables, and errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hudi_layout.tools.cli import main
from hudi_layout.tools.layout_report import overlap


def test_explain_json_on_a_fixture_with_column_stats(fixture_table, capsys) -> None:
    path = fixture_table("cow_v9_txns_simple_meta.zip")
    assert main(["explain", str(path), "WHERE region = 'us'", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["files_total"] >= plan["files_after_partition_pruning"] >= plan["files_after_column_stats"]
    assert plan["files_after_partition_pruning"] < plan["files_total"]


def test_inspect_and_report(fixture_table, tmp_path: Path, capsys) -> None:
    path = fixture_table("cow_v9_txns_simple_meta.zip")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "COPY_ON_WRITE" in out and "column_stats" in out
    assert "defaults " in out  # which defaults file is in use
    assert main(["report", str(path), "--columns", "amount,txn_id", "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "layout_report.md").is_file() and (tmp_path / "r" / "layout_boxes.png").is_file()
    capsys.readouterr()
    assert main(["report", str(path), "--columns", "amount,txn_id,region", "--out", str(tmp_path / "q"),
                 "--where", "amount > 100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pictures"]["query"] == "query_files.png" and (tmp_path / "q" / "query_files.png").is_file()
    md = (tmp_path / "q" / "layout_report.md").read_text()
    assert "![files read by the query](query_files.png)" in md


def test_report_refuses_unknown_columns_and_partitions(fixture_table, tmp_path: Path, capsys) -> None:
    path = fixture_table("cow_v9_txns_simple_meta.zip")
    assert main(["report", str(path), "--columns", "amount,nope", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "no column 'nope'" in err and "hint: columns:" in err
    assert main(["report", str(path), "--columns", "amount,txn_id", "--out", str(tmp_path / "r"),
                 "--partition", "nowhere"]) == 2
    assert "no partition 'nowhere'" in capsys.readouterr().err


def test_errors_are_one_line_with_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["inspect", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("error:") and "not a Hudi table" in err[0]
    (tmp_path / "plain").mkdir()
    assert main(["explain", str(tmp_path / "plain"), "x = 1"]) == 2
    assert main(["index", str(tmp_path / "plain"), "--option", "novalue"]) == 2


@pytest.mark.parametrize("argv", [["explain", "T", "x = 1", "--max-dropped", "-1"],
                                  ["query", "T", "SELECT 1", "--limit", "-5"],
                                  ["clustering-service", "T", "--poll-seconds", "0"],
                                  ["clustering-service", "T", "--max-iterations", "0"]])
def test_counts_and_intervals_out_of_range_are_refused(argv: list[str], capsys) -> None:
    """``--max-dropped -1`` listed the wrong files and said "... 3 more" (Python's negative slicing; a probe)."""
    assert main(argv) == 2 and "expected" in capsys.readouterr().err


def test_ingest_of_an_empty_folder_is_one_line_before_spark(tmp_path: Path, capsys) -> None:
    """Spark said UNABLE_TO_INFER_SCHEMA (naming neither the folder nor the way out); the check runs before any
    Spark start, so this test needs none. Nothing is created."""
    source = tmp_path / "in"
    (source / ".hidden").mkdir(parents=True)
    (source / "_SUCCESS").write_text("")
    assert main(["ingest", str(source), str(tmp_path / "t"), "--record-key", "id"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: input folder {source} holds no data files",
                   "hint: point at a parquet file or a folder of them (--format parquet|csv|json)"]
    assert not (tmp_path / "t").exists()


def test_index_never_drops_hudis_other_indexes_and_a_no_op_leaves_nothing(fixture_table, capsys) -> None:
    """``index --rebuild`` dropped the record index, secondary indexes and partition stats of a Hudi-written
    metadata table without a word (their definitions left in .index_defs); ``index`` on a table with a metadata
    table made a lock file for a no-op (a probe, session 31)."""
    from tests.helpers.integration import diff_snapshots, tree_snapshot

    path = fixture_table("cow_v9_txns_simple_meta.zip")
    before = tree_snapshot(path)
    assert main(["index", str(path)]) == 0 and "already has a metadata table" in capsys.readouterr().out
    assert main(["index", str(path), "--rebuild"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "record_index" in err[0] and "secondary_index" in err[0] and err[1].startswith("hint:")
    assert diff_snapshots(before, tree_snapshot(path)) == []


def test_index_builds_column_stats_for_a_table_without_it(fixture_table, capsys) -> None:
    path = fixture_table("cow_v9_txns_simple_nometa.zip")
    assert main(["index", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "built" and result["files"] > 0
    from hudi_layout import ColumnStatsIndex, HudiTable

    names = {s.base_file_name for s in HudiTable(path).file_slices()}
    stats = ColumnStatsIndex(str(path)).load_column("txn_id")
    assert names <= set(stats.column("file_name").to_pylist())


@pytest.mark.parametrize("lo,hi,avg,mx", [
    ([0, 10, 20], [9, 19, 29], 27 / 29, 1),
    ([0, 0, 0], [29, 29, 29], 3.0, 3),
    ([5], [5], 1.0, 1),
])
def test_overlap_depth(lo, hi, avg, mx) -> None:
    got = overlap(np.array(lo, np.uint64), np.array(hi, np.uint64))
    assert got[0] == pytest.approx(avg) and got[1] == mx


def test_ingest_checks_its_input_before_starting_spark(tmp_path: Path, capsys, monkeypatch) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import hudi_layout.tools.cli as cli

    monkeypatch.setattr(cli, "_spark", lambda args: pytest.fail("Spark must not start for bad input"))
    ns = tmp_path / "ns.parquet"
    pq.write_table(pa.table({"id": [1, 2], "t": pa.array([1, 2], pa.timestamp("ns"))}), ns)
    assert main(["ingest", str(ns), str(tmp_path / "t"), "--record-key", "id"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "nanosecond timestamps" in err[0] and "coerce_timestamps='us'" in err[1]
    ok = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"id": [1, 2]}), ok)
    assert main(["ingest", str(ok), str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "needs a record key" in err[0] and "--record-key" in err[1]
    assert main(["ingest", str(tmp_path / "missing.parquet"), str(tmp_path / "t"), "--record-key", "id"]) == 2
    assert not (tmp_path / "t").exists()


def test_cluster_dry_run_and_schedule_only_need_no_spark(fixture_table, capsys, monkeypatch) -> None:
    import hudi_layout.tools.cli as cli

    monkeypatch.setattr(cli, "_spark", lambda args: pytest.fail("planning must not start Spark"))
    path = str(fixture_table("cow_v9_txns_simple_meta.zip"))
    # its metadata table has partitions hudi_layout cannot maintain: a plan is refused before it is written
    assert main(["cluster", path, "--columns", "amount,txn_id", "--schedule-only"]) == 2
    assert "record_index" in capsys.readouterr().err
    # the preview says so too (session 30: it said "would cluster"), and previews the run that drops the MDT
    assert main(["cluster", path, "--columns", "amount,txn_id", "--dry-run"]) == 2
    assert "record_index" in capsys.readouterr().err
    assert main(["cluster", path, "--columns", "amount,txn_id", "--dry-run", "--json",
                 "-o", "hoodie.metadata.enable=false"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["plan"]["slices"] > 0 and plan["pending"] == []
    assert main(["cluster", path, "--columns", "amount,txn_id", "--schedule-only",
                 "-o", "hoodie.metadata.enable=false"]) == 0
    assert "scheduled clustering" in capsys.readouterr().out
    assert main(["cluster", path, "--columns", "amount,txn_id", "--no-resume"]) == 0
    out = capsys.readouterr().out
    assert "pending: clustering" in out and "nothing new to cluster" in out


def test_write_operations_parse() -> None:
    from hudi_layout.tools.cli import build_parser

    p = build_parser()
    a = p.parse_args(["write", "src", "table", "--operation", "upsert", "--precombine-field", "ts"])
    assert (a.source, a.path, a.operation, a.precombine_field) == ("src", "table", "upsert", "ts")
    a = p.parse_args(["ingest", "table", "--operation", "delete_partition", "--partitions-to-delete", "d=1"])
    assert (a.source, a.path, a.partitions_to_delete) == (None, "table", "d=1")
    a = p.parse_args(["execute-pending", "table", "--instant", "20240101000000000"])
    assert (a.path, a.instant) == ("table", "20240101000000000")


def test_spark_conf_flag_is_checked_before_spark_starts(fixture_table, capsys, monkeypatch) -> None:
    import hudi_layout.spark.session as session

    monkeypatch.setattr(session, "get_spark", lambda *a, **k: pytest.fail("Spark must not start for bad input"))
    path = fixture_table("cow_v9_txns_simple_meta.zip")
    assert main(["query", str(path), "SELECT 1", "--conf", "sql.session.timeZone=UTC"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "--conf expects spark.KEY=VALUE" in err[0] and "spark.sql.session.timeZone" in err[1]


def test_report_on_a_table_whose_metadata_table_lost_its_properties_uses_the_footers(tmp_path) -> None:
    """Session 19: the report said "not a Hudi table" about the base path the user gave; explain read on."""
    import pyarrow as pa

    from tests.helpers.live_ops import run_write

    base = tmp_path / "t"
    run_write(str(base), pa.table({"id": list(range(20)), "v": list(range(20))}),
              {"hoodie.table.name": "r", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.parquet.max.file.size": "2000"})
    (base / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties").unlink()
    assert main(["report", str(base), "--columns", "v,id", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "layout_report.md").is_file()


def test_a_misspelt_query_is_not_called_a_change_and_usage_errors_are_one_line(tmp_path: Path, capsys) -> None:
    """``query T "SELEC ..."`` said "this one is a change" and pointed to ingest; argparse's usage errors printed
    a usage block and no hint (a probe, session 31)."""
    assert main(["query", str(tmp_path), "SELEC count(*) FROM t"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "SELEC" in err[0] and "change" not in err[0] and err[1].startswith("hint:")
    assert main(["explian", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("error:") and err[1].startswith("hint:")
