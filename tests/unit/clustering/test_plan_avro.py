"""HoodieClusteringPlan Avro: our plans round-trip, and Hudi's real plan parses to the same shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_layout.clustering.plan import (
    SORT_AND_SIZE_EXECUTION_STRATEGY,
    ClusteringOptions,
    from_avro_plan,
    plan_clustering,
)
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.commit_metadata import (
    clustering_plan_metadata,
    decode_requested_replace,
    requested_replace_bytes,
)
from hudi_layout.table.fs_view import FileSlice

MB = 1024 * 1024


def _table_with_files(base: Path) -> list[FileSlice]:
    out = []
    files = [("region=us", "aaaa-0", 3000), ("region=us", "bbbb-0", 2000), ("region=eu", "cccc-0", 10)]
    for part, fid, size in files:
        d = base / part
        d.mkdir(parents=True, exist_ok=True)
        name = f"{fid}_0-0-0_20240101000000000.parquet"
        (d / name).write_bytes(b"x" * size)
        out.append(FileSlice(part, fid, name, str(d / name), "20240101000000000", size))
    return out


def test_round_trip(tmp_path: Path) -> None:
    slices = _table_with_files(tmp_path)
    o = ClusteringOptions.from_options({}, columns="x,y", strategy="hilbert", method="sample")
    plan = plan_clustering(slices, o, set())
    assert plan is not None
    avro = plan.to_avro_plan()
    assert avro["strategy"] == {
        "strategyClassName": SORT_AND_SIZE_EXECUTION_STRATEGY,
        "strategyParams": {"hoodie.clustering.plan.strategy.sort.columns": "x,y",
                           "hoodie.layout.optimize.strategy": "hilbert",
                           "hoodie.layout.optimize.curve.build.method": "sample",
                           "hoodie.layout.optimize.build.curve.sample.size": "200000"},
        "version": 1}
    assert avro["preserveHoodieMetadata"] is True and avro["version"] == 1 and avro["extraMetadata"] == {}
    assert avro["missingSchedulePartitions"] == []
    g_eu, g_us = avro["inputGroups"]
    assert [s["fileId"] for s in g_us["slices"]] == ["aaaa-0", "bbbb-0"]
    first = g_us["slices"][0]
    assert first == {"dataFilePath": f"file:{tmp_path}/region=us/aaaa-0_0-0-0_20240101000000000.parquet",
                     "deltaFilePaths": [], "fileId": "aaaa-0", "partitionPath": "region=us",
                     "bootstrapFilePath": "", "version": 1}
    assert set(g_us["metrics"]) == {"TOTAL_IO_READ_MB", "TOTAL_IO_WRITE_MB", "TOTAL_IO_MB",
                                    "TOTAL_LOG_FILES_SIZE", "TOTAL_LOG_FILES"}
    assert g_us["numOutputFileGroups"] == 1 and g_us["version"] == 1 and g_us["extraMetadata"] is None

    data = requested_replace_bytes(clustering_plan_metadata(avro))
    decoded = decode_requested_replace(data)
    assert decoded["operationType"] == "CLUSTER" and decoded["clusteringPlan"] == avro
    back = from_avro_plan(decoded, tmp_path, {"hoodie.layout.optimize.strategy": "z-order"})  # plan wins
    assert back.options.sort_columns == ("x", "y") and back.options.layout_strategy == "hilbert"
    assert back.options.curve_build_method == "sample"
    assert back.file_groups == plan.file_groups
    assert [g.total_bytes for g in back.groups] == [g.total_bytes for g in plan.groups] == [10, 5000]
    assert back.to_avro_plan() == avro
    # the parsed slices are the table's slices
    assert {s.base_file_path for g in back.groups for s in g.slices} == {s.base_file_path for s in slices}


def test_no_sort_columns_gives_empty_params(tmp_path: Path) -> None:
    plan = plan_clustering(_table_with_files(tmp_path), ClusteringOptions.from_options({}), set())
    assert plan is not None and plan.to_avro_plan()["strategy"]["strategyParams"] == {}


def test_not_a_clustering_plan() -> None:
    with pytest.raises(InvalidArgumentError, match="not a clustering plan"):
        from_avro_plan({"operationType": None, "clusteringPlan": None}, "/tmp")


def test_real_hudi_plan(fixture_table) -> None:  # type: ignore[no-untyped-def]
    base: Path = fixture_table("cow_v9_txns_simple_meta.zip")
    req = base / ".hoodie" / "timeline" / "20260307162454799.clustering.requested"
    decoded = decode_requested_replace(req.read_bytes())
    raw_plan = decoded["clusteringPlan"]
    plan = from_avro_plan(decoded, base, {"hoodie.layout.optimize.strategy": "hilbert"})
    assert plan.options.layout_strategy == "linear"  # no sort columns in the plan: executed unsorted
    assert plan.strategy_class == SORT_AND_SIZE_EXECUTION_STRATEGY and plan.sort_columns == ()
    assert [(g.partition_path, [s.file_id for s in g.slices]) for g in plan.groups] == [
        ("region=apac", ["7dcb7583-60a5-4c3e-b173-87f1d23ee9e0-0", "07838327-b037-4532-a9df-3c5b05dd823d-0"]),
        ("region=eu", ["d28b4196-9d69-4bce-953f-848063c813b9-0"]),
        ("region=us", ["a4ab4ec1-e213-4941-a4eb-5679f437421f-0", "c7bbe63e-fa43-40ba-94a9-03158165edc6-0"]),
    ]
    # slices resolved under *our* base path, with their real sizes, not the scheduler's /tmp/v9-gen paths
    s0 = plan.groups[0].slices[0]
    assert s0.base_file_path == str(base / "region=apac" / s0.base_file_name)
    assert s0.size_bytes == 438522 and s0.commit_time == "20260307162453568"
    # re-encoding changes nothing but the absolute data file paths
    ours = plan.to_avro_plan()
    for g_ours, g_raw in zip(ours["inputGroups"], raw_plan["inputGroups"]):
        for a, b in zip(g_ours["slices"], g_raw["slices"]):
            assert a["dataFilePath"].rsplit("/", 2)[-2:] == b["dataFilePath"].rsplit("/", 2)[-2:]
            a["dataFilePath"] = b["dataFilePath"]
    assert ours == raw_plan

    # our planner over the same input slices reproduces Hudi's grouping (same sizes, same order)
    inputs = [s for g in plan.groups for s in g.slices]
    replanned = plan_clustering(inputs, ClusteringOptions.from_options({}), set())
    assert replanned is not None
    assert [[s.file_id for s in g.slices] for g in replanned.groups] == [
        [s.file_id for s in g.slices] for g in plan.groups]
    assert replanned.to_avro_plan()["strategy"] == raw_plan["strategy"]
