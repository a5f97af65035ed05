from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pytest

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.avro_schemas import SCHEMAS, WRITE_STAT_FIELDS
from hudi_layout.format.commit_metadata import (
    WriteStat,
    clustering_plan_metadata,
    commit_metadata_bytes,
    decode_commit_metadata,
    decode_requested_replace,
    decode_rollback_metadata,
    decode_rollback_plan,
    decode_timeline_content,
    replace_commit_metadata_bytes,
    replaced_file_ids,
    requested_replace_bytes,
    rollback_metadata_bytes,
    rollback_plan_bytes,
    write_stat_from_dict,
)
from hudi_layout.table.timeline import Timeline

STAT = WriteStat(file_id="abc-0", path="region=us/abc-0_0-1-2_20240101000000000.parquet",
                 partition_path="region=us", num_writes=5, file_size_in_bytes=1234, num_inserts=5)


def _meta() -> dict:
    return {"partitionToWriteStats": {"region=us": [STAT.to_dict()]}, "compacted": False,
            "extraMetadata": {"schema": '{"type":"record"}'}, "operationType": "INSERT"}


@pytest.mark.parametrize("version", [6, 8, 9])
def test_commit_roundtrip(version: int) -> None:
    data = commit_metadata_bytes(_meta(), version)
    assert data.startswith(b"{" if version == 6 else b"Obj\x01")
    back = decode_commit_metadata(data)
    assert back["operationType"] == "INSERT"
    assert back["extraMetadata"] == {"schema": '{"type":"record"}'}
    stat = back["partitionToWriteStats"]["region=us"][0]
    assert write_stat_from_dict(stat) == STAT
    if version == 6:
        assert b'"operationType" : "INSERT"' in data
        json.loads(data)
    else:
        assert set(stat) == set(WRITE_STAT_FIELDS)
        reader = fastavro.reader(io.BytesIO(data))
        assert reader.codec == "null" and len(list(reader)) == 1


@pytest.mark.parametrize("version", [6, 9])
def test_replace_roundtrip(version: int) -> None:
    meta = {**_meta(), "operationType": "CLUSTER", "partitionToReplaceFileIds": {"region=us": ["x-0", "y-0"]}}
    back = decode_commit_metadata(replace_commit_metadata_bytes(meta, version))
    assert replaced_file_ids(back) == {("region=us", "x-0"), ("region=us", "y-0")}
    assert back["operationType"] == "CLUSTER"


def test_requested_replace_roundtrip() -> None:
    plan = {
        "inputGroups": [{"slices": [{"dataFilePath": "file:/t/p/a.parquet", "deltaFilePaths": [], "fileId": "a-0",
                                     "partitionPath": "p", "bootstrapFilePath": "", "version": 1}],
                         "metrics": {"TOTAL_IO_MB": 0.0}, "numOutputFileGroups": 1, "extraMetadata": None,
                         "version": 1}],
        "strategy": {"strategyClassName": "S", "strategyParams": {}, "version": 1},
        "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True, "missingSchedulePartitions": [],
    }
    back = decode_requested_replace(requested_replace_bytes(clustering_plan_metadata(plan)))
    assert back["operationType"] == "CLUSTER" and back["clusteringPlan"] == plan
    empty = decode_requested_replace(requested_replace_bytes({}))
    assert empty == {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}


def test_rollback_roundtrip() -> None:
    plan = {"instantToRollback": {"commitTime": "20240101000000000", "action": "commit"},
            "RollbackRequests": [{"partitionPath": "p", "fileId": "a-0", "latestBaseInstant": "20240101000000000",
                                  "filesToBeDeleted": ["p/a.parquet"], "logBlocksToBeDeleted": None}],
            "version": 1}
    assert decode_rollback_plan(rollback_plan_bytes(plan)) == plan
    meta = {"startRollbackTime": "20240101000000001", "timeTakenInMillis": 5, "totalFilesDeleted": 1,
            "commitsRollback": ["20240101000000000"],
            "partitionMetadata": {"p": {"partitionPath": "p", "successDeleteFiles": ["p/a.parquet"],
                                        "failedDeleteFiles": [], "rollbackLogFiles": None, "writtenLogFiles": None}},
            "version": 1, "instantsRollback": [{"commitTime": "20240101000000000", "action": "commit"}]}
    assert decode_rollback_metadata(rollback_metadata_bytes(meta)) == meta


def test_corrupt() -> None:
    with pytest.raises(CorruptFileError):
        decode_timeline_content(b"garbage")
    with pytest.raises(CorruptFileError):
        decode_timeline_content(b"Obj\x01garbage")
    assert decode_timeline_content(b"") == {}


def _fixture_dirs(base: Path) -> list[Path]:
    dirs = [base / ".hoodie"]
    if (base / ".hoodie" / "metadata" / ".hoodie").is_dir():
        dirs.append(base / ".hoodie" / "metadata" / ".hoodie")
    return dirs


def test_decode_every_fixture_timeline_file(fixture_table, expected_tables) -> None:
    for zip_name in expected_tables:
        base = fixture_table(zip_name)
        for hoodie in _fixture_dirs(base):
            tl = Timeline.load(hoodie)
            for f in tl.files:
                data = tl.read_bytes(f)
                doc = decode_timeline_content(data, str(tl.path_of(f)))
                if data.startswith(b"Obj\x01"):
                    name = fastavro.reader(io.BytesIO(data)).writer_schema["name"].rsplit(".", 1)[-1]
                    if name in SCHEMAS and name != "HoodieRequestedReplaceMetadata":
                        # our schema can write what Java wrote, and reads back identically
                        enc = {"HoodieCommitMetadata": lambda d: commit_metadata_bytes(d, 9),
                               "HoodieReplaceCommitMetadata": lambda d: replace_commit_metadata_bytes(d, 9),
                               "HoodieRollbackPlan": rollback_plan_bytes,
                               "HoodieRollbackMetadata": rollback_metadata_bytes}[name]
                        assert decode_timeline_content(enc(doc)) == doc, f.file_name
                    elif name == "HoodieRequestedReplaceMetadata":
                        again = decode_requested_replace(requested_replace_bytes(doc))
                        if doc.get("clusteringPlan") and "missingSchedulePartitions" not in doc["clusteringPlan"]:
                            again["clusteringPlan"].pop("missingSchedulePartitions")
                        assert again == doc
                elif data.strip() and f.action in ("commit", "deltacommit", "replacecommit"):
                    # v6 JSON: re-encoding gives the same document
                    replace_doc = "partitionToReplaceFileIds" in doc
                    enc6 = replace_commit_metadata_bytes if replace_doc else commit_metadata_bytes
                    again = json.loads(enc6(doc, 6))
                    for stats in doc["partitionToWriteStats"].values():
                        for s in stats:
                            s.pop("recordsStats", None)
                    assert again == doc, f.file_name


def test_v6_json_byte_exact(fixture_table) -> None:
    base = fixture_table("cow_v6_simplekeygen_nonhivestyle_overwritetable.zip")
    tl = Timeline.load(base)
    for inst in tl.completed():
        raw = tl.read_bytes(inst)
        enc = replace_commit_metadata_bytes if inst.action == "replacecommit" else commit_metadata_bytes
        assert enc(decode_commit_metadata(raw), 6) == raw


def _strip_sync(data: bytes) -> bytes:
    return data.replace(data[-16:], b"")  # one-block container: the sync marker is the last 16 bytes


def test_avro_bytes_identical_to_java(fixture_table) -> None:
    """Re-encoding Java-written v9 timeline files gives the same bytes (except the random sync marker)."""
    base = fixture_table("cow_v9_txns_simple_meta.zip")
    tl = Timeline.load(base)
    checked = 0
    for f in tl.files:
        data = tl.read_bytes(f)
        if not data.startswith(b"Obj\x01"):
            continue
        if f.action == "commit" and f.is_completed:
            ours = commit_metadata_bytes(decode_commit_metadata(data), 9)
        elif f.action == "replacecommit" and f.is_completed:
            ours = replace_commit_metadata_bytes(decode_commit_metadata(data), 9)
        elif f.action in ("clustering", "replacecommit") and f.is_requested:
            ours = requested_replace_bytes(decode_requested_replace(data))
        else:
            continue
        assert _strip_sync(ours) == _strip_sync(data), f.file_name
        checked += 1
    assert checked >= 10
