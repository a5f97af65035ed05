"""Clean plan / clean metadata Avro (docs/hudi-format-live-tables.md §1.2, §1.3) and the path gate of a plan."""

from __future__ import annotations

import io
import os
from pathlib import Path

import fastavro
import pytest

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.clean_metadata import (
    CleanerPlan,
    CleanMetadata,
    CleanPartitionResult,
    clean_metadata_bytes,
    cleaner_plan_bytes,
    contained_file,
    decode_clean_metadata,
    decode_cleaner_plan,
)
from hudi_layout.format.commit_metadata import avro_container_bytes

NAME = "3f1c2a4e-1111-2222-3333-444455556666-0_0-1-0_20260101000000000.parquet"


def _records(data: bytes) -> tuple[dict, list[dict]]:
    reader = fastavro.reader(io.BytesIO(data))
    return reader.writer_schema, list(reader)


def test_plan_round_trip_and_java_shape(tmp_path: Path) -> None:
    plan = CleanerPlan("KEEP_LATEST_COMMITS", ("20260101000000001", "replacecommit"), "20260101000000009",
                       {"region=us": (str(tmp_path / "region=us" / NAME),), "": (str(tmp_path / NAME),)})
    data = cleaner_plan_bytes(plan)
    schema, (rec,) = _records(data)
    assert schema["name"] == "org.apache.hudi.avro.model.HoodieCleanerPlan"
    assert [f["name"] for f in schema["fields"]] == [
        "earliestInstantToRetain", "lastCompletedCommitTimestamp", "policy", "filesToBeDeletedPerPartition",
        "version", "filePathsToBeDeletedPerPartition", "partitionsToBeDeleted", "extraMetadata"]
    # what Java 1.x writes: version 2, the deprecated map empty, absolute paths, ECTR state COMPLETED
    assert rec["version"] == 2 and rec["filesToBeDeletedPerPartition"] == {}
    assert rec["earliestInstantToRetain"] == {"timestamp": "20260101000000001", "action": "replacecommit",
                                              "state": "COMPLETED"}
    assert rec["filePathsToBeDeletedPerPartition"]["region=us"] == [
        {"filePath": str(tmp_path / "region=us" / NAME), "isBootstrapBaseFile": False}]
    back = decode_cleaner_plan(data, tmp_path)
    assert back == CleanerPlan("KEEP_LATEST_COMMITS", ("20260101000000001", "replacecommit"),
                               "20260101000000009", plan.files_to_delete, (), None)
    assert back.file_names() == {"region=us": [NAME], "": [NAME]}


def test_plan_version_1_names_become_paths(tmp_path: Path) -> None:
    rec = {"earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
           "filesToBeDeletedPerPartition": {"2024/01/02": [NAME]}, "version": 1,
           "filePathsToBeDeletedPerPartition": None, "partitionsToBeDeleted": None, "extraMetadata": None}
    plan = decode_cleaner_plan(avro_container_bytes("HoodieCleanerPlan", rec), tmp_path)
    assert plan.files_to_delete == {"2024/01/02": (str(tmp_path / "2024" / "01" / "02" / NAME),)}
    assert plan.earliest_instant_to_retain is None


def test_java_file_uri_paths_are_accepted(tmp_path: Path) -> None:
    rec = CleanerPlan("KEEP_LATEST_COMMITS", None, "", {"p": (f"file:{tmp_path}/p/{NAME}",)}).to_record()
    plan = decode_cleaner_plan(avro_container_bytes("HoodieCleanerPlan", rec), tmp_path)
    assert plan.files_to_delete == {"p": (f"{tmp_path}/p/{NAME}",)}


def test_clean_metadata_round_trip() -> None:
    meta = CleanMetadata("20260101000000010", 12, "20260101000000001", "20260101000000009",
                         {"p": CleanPartitionResult("p", "KEEP_LATEST_COMMITS", (NAME, "x.parquet"), (NAME,),
                                                    ("x.parquet",))})
    data = clean_metadata_bytes(meta)
    schema, (rec,) = _records(data)
    assert [f["name"] for f in schema["fields"]] == [
        "startCleanTime", "timeTakenInMillis", "totalFilesDeleted", "earliestCommitToRetain",
        "lastCompletedCommitTimestamp", "partitionMetadata", "version", "bootstrapPartitionMetadata",
        "extraMetadata"]
    assert rec["version"] == 2 and rec["totalFilesDeleted"] == 1
    assert rec["partitionMetadata"]["p"] == {
        "partitionPath": "p", "policy": "KEEP_LATEST_COMMITS", "deletePathPatterns": [NAME, "x.parquet"],
        "successDeleteFiles": [NAME], "failedDeleteFiles": ["x.parquet"], "isPartitionDeleted": False}
    assert decode_clean_metadata(data) == meta
    assert decode_clean_metadata(b"") == CleanMetadata("", 0, "", "")


def test_contained_file_accepts_data_files_of_the_partition(tmp_path: Path) -> None:
    (tmp_path / "region=us").mkdir()
    assert contained_file(tmp_path, "region=us", str(tmp_path / "region=us" / NAME)) == \
        tmp_path.resolve() / "region=us" / NAME
    assert contained_file(tmp_path, "", str(tmp_path / NAME)) == tmp_path.resolve() / NAME
    log = ".3f1c2a4e-1111-2222-3333-444455556666-0_20260101000000000.log.1_0-1-0"
    assert contained_file(tmp_path, "region=us", str(tmp_path / "region=us" / log)).name == log


@pytest.mark.parametrize(("partition", "path"), [
    ("region=us", "{b}/region=eu/" + NAME),           # listed under another partition
    ("region=us", "{b}/region=us/../region=eu/" + NAME),
    ("", "{b}/.hoodie/" + NAME),                        # into .hoodie
    (".hoodie", "{b}/.hoodie/" + NAME),
    ("../other", "{b}/../other/" + NAME),              # outside the table
    ("", "/etc/" + NAME),
    ("", "{b}/hoodie.properties"),                      # not a data file
    ("region=us", "region=us/" + NAME),                 # relative
])
def test_contained_file_refuses_everything_else(tmp_path: Path, partition: str, path: str) -> None:
    base = tmp_path / "t"
    (base / "region=us").mkdir(parents=True)
    with pytest.raises(CorruptFileError):
        contained_file(base, partition, path.format(b=base))


def test_contained_file_refuses_a_symlinked_partition(tmp_path: Path) -> None:
    base = tmp_path / "t"
    base.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", base / "p")
    with pytest.raises(CorruptFileError):
        contained_file(base, "p", str(base / "p" / NAME))
