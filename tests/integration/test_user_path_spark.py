"""The user's path with Spark: a pending plan is resumed instead of "nothing to cluster", the result notes
too few files per partition, the clustering service reports each action, async clustering of a write runs
in the background, and our errors come back through the data source as one line."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hudi_layout
from hudi_layout.errors import InvalidArgumentError, from_spark_error_text
from hudi_layout.services import clustering as svc
from hudi_layout.services.clustering_service import ClusteringService, ServiceEvent, stop_async_clustering
from tests.helpers.clustering import completed_replacecommits, hudi_rs_arrow, write_options

pytestmark = pytest.mark.integration

TARGET = "hoodie.clustering.plan.strategy.target.file.max.bytes"


def rows(k: int, n: int = 400) -> pa.Table:
    rng = np.random.default_rng(k)
    return pa.table({"id": pa.array([f"r{k}_{i:05d}" for i in range(n)]),
                     "x": pa.array(rng.integers(0, 1000, n), pa.int32()),
                     "y": pa.array(rng.integers(0, 1000, n), pa.int32())})


def test_cluster_resumes_a_pending_plan_and_notes_too_few_files(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_layout.write(spark.createDataFrame(rows(0, 3000)).repartition(6), path, write_options("t"))
    # an interrupted run leaves a plan behind (scheduling needs no Spark)
    run = svc.run_clustering(lambda: pytest.fail("scheduling must not start Spark"), path, ["x", "y"],
                             "hilbert", schedule_only=True)
    assert run.scheduled is not None and [p.instant_time for p in run.waiting] == [run.scheduled]
    waiting = svc.run_clustering(lambda: pytest.fail("nothing to execute"), path, ["x", "y"], resume=False)
    assert waiting.new is None and [p.instant_time for p in waiting.waiting] == [run.scheduled]
    m = hudi_layout.cluster(path, ["x", "y"], spark=spark, strategy="hilbert")
    assert m is not None and m.instant_time == run.scheduled  # the pending plan ran, no second plan
    assert completed_replacecommits(path) == [run.scheduled] and svc.pending_clusterings(path) == []
    assert m.files_out == 1 and len(m.notes) == 1 and TARGET in m.notes[0]  # Hudi's 1 GiB target: one file
    assert m.to_dict()["notes"] == list(m.notes)
    assert hudi_rs_arrow(path).num_rows == 3000
    many = hudi_layout.cluster(path, ["x", "y"], spark=spark, options={TARGET: 8192})
    assert many is not None and many.files_out >= 4 and many.notes == ()


def test_clustering_service_reports_each_action(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "svc")
    opts = write_options("svc", **{"hoodie.clustering.async.max.commits": 2,
                                   "hoodie.clustering.plan.strategy.sort.columns": "x,y"})
    events: list[ServiceEvent] = []
    table = write_options("svc")  # a write refuses the service's options (session 30)
    hudi_layout.write(spark.createDataFrame(rows(1)).coalesce(2), path, table)
    service = ClusteringService(path, opts, spark=spark, poll_seconds=0, on_event=events.append)
    service.step()
    service.step()  # same state: no second idle line
    hudi_layout.write(spark.createDataFrame(rows(2)).coalesce(2), path, table)
    service.step()
    service.step()
    actions = [e.action for e in events]
    assert actions == ["idle", "scheduled", "executed", "idle"], actions
    assert "1 of 2 commits" in events[0].line() and events[1].instant_time == events[2].instant_time
    assert events[2].to_dict()["files_out"] >= 1


def test_async_clustering_of_a_write_runs_in_the_writing_process(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "async")
    with pytest.raises(InvalidArgumentError, match="plan.strategy.sort.columns"):
        hudi_layout.write(spark.createDataFrame(rows(3)), path,
                          write_options("a", **{"hoodie.clustering.async.enabled": "true"}))
    assert not Path(path).exists()  # refused before anything was written
    with pytest.raises(InvalidArgumentError, match="'nope', which the written rows do not have"):
        hudi_layout.write(spark.createDataFrame(rows(3)), path, write_options(
            "a", **{"hoodie.clustering.async.enabled": "true",
                    "hoodie.clustering.plan.strategy.sort.columns": "x,nope"}))
    assert not Path(path).exists()  # a column the rows lack: refused before, not logged by the thread later
    opts = write_options("a", **{"hoodie.clustering.async.enabled": "true", "hoodie.clustering.async.max.commits": 2,
                                 "hoodie.clustering.plan.strategy.sort.columns": "x,y"})
    try:
        hudi_layout.write(spark.createDataFrame(rows(4)).coalesce(2), path, opts)
        hudi_layout.write(spark.createDataFrame(rows(5)).coalesce(2), path, opts)
        deadline = time.monotonic() + 240
        while not completed_replacecommits(path) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        stop_async_clustering(path, timeout=240)
    assert len(completed_replacecommits(path)) == 1
    assert hudi_rs_arrow(path).num_rows == 800


def test_data_source_errors_come_back_as_our_one_line(spark, tmp_path: Path, capsys) -> None:
    df = spark.createDataFrame(rows(6, 10))
    writer = df.write.format("hudi_layout").mode("append")
    for key, value, expected in (("hoodie.datasource.write.operation", "upsert", "upsert"),
                                 ("hoodie.clustering.inline", "true", "not run by the hudi_layout data source")):
        with pytest.raises(Exception) as caught:
            writer.option("hoodie.datasource.write.recordkey.field", "id").option(key, value).save(
                str(tmp_path / "ds"))
        found = from_spark_error_text(str(caught.value))
        assert found is not None and expected in str(found), str(caught.value)[:800]
    # an uncaught one: the interpreter hook prints our lines first, not Spark's traceback
    sys.excepthook(type(caught.value), caught.value, caught.value.__traceback__)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: hoodie.clustering.inline=true") and err[1].startswith("hint: ")


def test_cluster_takes_strategy_method_and_columns_from_the_options(spark, tmp_path: Path) -> None:
    """``hoodie.layout.optimize.strategy`` / ``...curve.build.method`` and the sort-column option were accepted by
    ``cluster`` and had no effect (session 29's probe): the keyword defaults (z-order, direct) always won, and
    without ``columns`` the command only resumed pending plans. Now the argument, else the option, else z-order /
    direct; an argument the option contradicts is refused, before anything is written (the CLI likewise)."""
    from hudi_layout.clustering.schedule import load_pending_plans
    from hudi_layout.tools.cli import main as cli_main

    path = str(tmp_path / "t")
    hudi_layout.write(spark.createDataFrame(rows(0, 600)).repartition(3), path, write_options("t"))
    opts = {"hoodie.layout.optimize.strategy": "hilbert", "hoodie.layout.optimize.curve.build.method": "sample",
            "hoodie.clustering.plan.strategy.sort.columns": "y,x"}
    run = svc.run_clustering(lambda: pytest.fail("scheduling must not start Spark"), path, None, options=opts,
                             schedule_only=True)
    (instant, plan), = load_pending_plans(path)
    assert instant == run.scheduled
    assert (plan.options.layout_strategy, plan.options.curve_build_method, plan.options.sort_columns) == \
        ("hilbert", "sample", ("y", "x"))
    svc.abandon_pending_clustering(path)
    for strategy, method in (("z-order", None), (None, "direct")):
        with pytest.raises(InvalidArgumentError, match="disagree"):
            hudi_layout.cluster(path, ["x"], spark=spark, strategy=strategy, method=method, options=opts)
    assert svc.pending_clusterings(path) == []
    assert cli_main(["cluster", path, "--columns", "x", "--strategy", "linear", "-o",
                     "hoodie.layout.optimize.strategy=hilbert"]) == 2
    assert cli_main(["cluster", path, "--dry-run", "-o", "hoodie.clustering.plan.strategy.sort.columns=x,y",
                     "-o", "hoodie.layout.optimize.strategy=hilbert"]) == 0
    assert svc.pending_clusterings(path) == []


def test_execute_pending_refuses_options_its_plan_overrides(spark, tmp_path: Path) -> None:
    """A pending plan runs as it was scheduled; ``execute_pending`` took a contradicting layout or sort-column
    option without effect (session 29's probe). Refused before anything runs; an agreeing one is fine."""
    path = str(tmp_path / "t")
    hudi_layout.write(spark.createDataFrame(rows(0, 300)).repartition(2), path, write_options("t"))
    run = svc.run_clustering(lambda: pytest.fail("scheduling must not start Spark"), path, ["x", "y"], "linear",
                             schedule_only=True)
    for bad in ({"hoodie.layout.optimize.strategy": "hilbert"}, {"hoodie.clustering.plan.strategy.sort.columns": "y"}):
        with pytest.raises(InvalidArgumentError, match="contradicts pending clustering"):
            hudi_layout.execute_pending(path, spark=spark, options=bad)
    assert [p.instant_time for p in svc.pending_clusterings(path)] == [run.scheduled]
    done = hudi_layout.execute_pending(path, spark=spark, options={"hoodie.layout.optimize.strategy": "linear"})
    assert [m.instant_time for m in done] == [run.scheduled]


def test_inline_clustering_settings_are_checked_before_the_write_and_never_fail_it_after(spark, tmp_path: Path,
                                                                                        caplog) -> None:
    """``hoodie.clustering.inline=true`` without sort columns, or with qdtree and no workload, was accepted; the
    write committed its rows and then raised, so a caller retrying it wrote them twice (session 29's probe).
    Such settings are refused before anything is written; a clustering that fails once the write has
    completed (a partition the table lacks) is a warning, not an error."""
    path = str(tmp_path / "t")
    base = write_options("t", partition="p")
    frame = spark.range(0, 20).selectExpr("CAST(id AS STRING) AS id", "CAST(id % 3 AS INT) AS x", "id % 2 AS p")
    for bad in ({"hoodie.clustering.inline": "true"},
                {"hoodie.clustering.inline": "true", "hoodie.clustering.plan.strategy.sort.columns": "x",
                 "hoodie.layout.optimize.strategy": "qdtree"}):
        with pytest.raises(InvalidArgumentError, match="needs"):
            hudi_layout.write(frame, path, {**base, **bad})
        assert not Path(path).exists()
    late = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1",
            "hoodie.clustering.plan.strategy.sort.columns": "x",
            "hoodie.clustering.plan.strategy.partition.selected": "p=9"}
    hudi_layout.write(frame, path, {**base, **late})
    assert hudi_rs_arrow(path).num_rows == 20
    assert completed_replacecommits(path) == []


def test_read_columns_with_meta_columns_and_include_meta(spark, tmp_path: Path) -> None:
    """``hl.read(columns=[...])``: a meta column named there failed inside Spark with a stack trace,
    ``include_meta=True`` was ignored beside ``columns``, and ``columns=[]`` read every column (session 29's
    probe)."""
    from hudi_layout.format.meta_fields import META_COLUMNS

    path = str(tmp_path / "t")
    hudi_layout.write(spark.createDataFrame(rows(0, 20)), path, write_options("t"))
    assert hudi_layout.read(path, spark=spark, columns=["_hoodie_record_key", "x"]).columns == \
        ["_hoodie_record_key", "x"]
    assert hudi_layout.read(path, spark=spark, columns=["x"], include_meta=True).columns == [*META_COLUMNS, "x"]
    with pytest.raises(InvalidArgumentError, match="names no column"):
        hudi_layout.read(path, spark=spark, columns=[])
