"""Small helpers to create the MDT as a Hudi MOR table and write its timeline files (§5.1, §5.7, §2.2–§2.3).

Kept apart from :mod:`.mdt_writer` so the writer reads as the MDT protocol, not file plumbing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.capabilities import MAINTAINABLE_MDT_PARTITIONS, require_metadata_maintainable
from hudi_layout.format.commit_metadata import commit_metadata_bytes
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import State, instant_file_name
from hudi_layout.format.properties import TableProperties, load_properties, metadata_table_exists, write_properties
from hudi_layout.metadata.mdt_reader import instant_files, lagging_data_instants

MAINTAINABLE_PARTITIONS = MAINTAINABLE_MDT_PARTITIONS


def require_mdt_writable(base: Path, props: TableProperties) -> None:
    """Before a change to a table whose metadata table exists: the MDT is one we keep in sync
    (:func:`check_maintainable`) and every completed partition it lists has its folder (session 19: with
    ``column_stats`` deleted, an upsert failed with a Python traceback and a clustering left its plan on the
    timeline), and no completed data instant waits for its MDT deltacommit (:func:`.mdt_reader.
    lagging_data_instants`: writing on would keep Hudi's readers and hudi-rs missing that commit's files)."""
    check_maintainable(props)
    mdt_hoodie = base / ".hoodie" / "metadata" / ".hoodie"
    lagging = lagging_data_instants(instant_files(base / ".hoodie", props),
                                    instant_files(mdt_hoodie, load_properties(mdt_hoodie)))
    if lagging:
        raise CorruptFileError(
            f"{base}: the metadata table never completed its deltacommit for data instant(s) "
            f"{', '.join(lagging)}, so readers that list files through it miss their files",
            hint="rebuild it with 'hudi-layout index PATH --rebuild'")
    for name in props.metadata_partitions:
        folder = base / ".hoodie" / "metadata" / name
        if not folder.is_dir():
            raise CorruptFileError(
                f"{base}: the metadata table lists partition {name!r} (hoodie.table.metadata.partitions) but "
                f"its folder {folder} is missing", hint="rebuild the index with 'hudi-layout index PATH --rebuild'")



def require_mdt_writable_if_present(base: Path) -> None:
    """:func:`require_mdt_writable` when the table has a metadata table: what a command checks before it takes
    the table lock, so a refused command leaves no lock file (session 30's interop probe)."""
    if metadata_table_exists(base):
        require_mdt_writable(base, load_properties(base / ".hoodie"))

def check_maintainable(props: TableProperties) -> None:
    """Raise unless every MDT partition the table lists (completed or inflight) is one we can keep in sync
    (the rule is :func:`hudi_layout.format.capabilities.metadata_table_refusal`)."""
    require_metadata_maintainable(props)


def mdt_properties(data: TableProperties) -> dict[str, str]:
    """``hoodie.properties`` of the MDT for a v8/v9 data table (checksum is added on write)."""
    return {
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
        "hoodie.table.initial.version": str(data.version),
        "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.archivelog.folder": "history",
        "hoodie.timeline.layout.version": "2",
        "hoodie.timeline.history.path": "history",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        "hoodie.table.recordkey.fields": "key",
        "hoodie.table.name": f"{data.table_name}_metadata",
        "hoodie.timeline.path": "timeline",
        "hoodie.populate.meta.fields": "false",
        "hoodie.table.base.file.format": "HFILE",
        "hoodie.record.merge.mode": "CUSTOM",
        "hoodie.table.version": str(data.version),
    }


def create_mdt_dirs(mdt_dir: Path, data: TableProperties) -> Path:
    """Create the MDT skeleton; returns its timeline dir."""
    hoodie = mdt_dir / ".hoodie"
    timeline = hoodie / "timeline"
    for d in (timeline / "history", hoodie / ".aux" / ".bootstrap" / ".partitions",
              hoodie / ".aux" / ".bootstrap" / ".fileids", hoodie / ".schema", hoodie / ".temp",
              hoodie / ".heartbeat"):
        d.mkdir(parents=True, exist_ok=True)
    write_properties(hoodie, mdt_properties(data))
    return timeline


def write_instant(timeline_dir: Path, requested_time: str, action: str, state: State, content: bytes = b"",
                  completion_time: str | None = None) -> Path:
    name = instant_file_name(requested_time, action, state, completion_time, 2)
    path = timeline_dir / name
    atomic_write(path, content)
    return path


def commit_bytes(partition_to_stats: dict[str, list[dict[str, Any]]], operation: str, table_version: int,
                 extra: dict[str, str] | None = None) -> bytes:
    return commit_metadata_bytes({"partitionToWriteStats": partition_to_stats, "compacted": False,
                                  "extraMetadata": extra or {}, "operationType": operation}, table_version)


def log_write_stat(mdt_partition: str, file_id: str, log_name: str, size: int, num_writes: int,
                   instant_time: str) -> dict[str, Any]:
    return {"fileId": file_id, "path": f"{mdt_partition}/{log_name}", "prevCommit": instant_time,
            "numWrites": num_writes, "numDeletes": 0, "numUpdateWrites": num_writes, "totalWriteBytes": size,
            "totalWriteErrors": 0, "partitionPath": mdt_partition, "totalLogRecords": 0,
            "totalUpdatedRecordsCompacted": 0, "numInserts": 0, "totalLogBlocks": 0,
            "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0, "fileSizeInBytes": size, "logVersion": 1,
            "logOffset": 0, "baseFile": "", "logFiles": [log_name],
            "runtimeStats": {"totalScanTime": 0, "totalCreateTime": 0, "totalUpsertTime": 0},
            "totalLogFilesCompacted": 0, "totalLogReadTimeMs": 0, "totalLogSizeCompacted": 0, "numUpdates": 0}


def base_write_stat(mdt_partition: str, file_id: str, base_name: str, size: int, num_writes: int,
                    log_files_compacted: int = 0) -> dict[str, Any]:
    return {"fileId": file_id, "path": f"{mdt_partition}/{base_name}", "prevCommit": "null",
            "numWrites": num_writes, "numDeletes": 0, "numUpdateWrites": 0, "totalWriteBytes": size,
            "totalWriteErrors": 0, "partitionPath": mdt_partition, "totalLogRecords": 0,
            "totalUpdatedRecordsCompacted": 0, "numInserts": num_writes, "totalLogBlocks": 0,
            "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0, "fileSizeInBytes": size,
            "runtimeStats": {"totalScanTime": 0, "totalCreateTime": 0, "totalUpsertTime": 0},
            "totalLogFilesCompacted": log_files_compacted, "totalLogReadTimeMs": 0,
            "totalLogSizeCompacted": 0,
            "numUpdates": 0}


INDEX_DEFS_PATH = ".hoodie/.index_defs/index.json"


def write_index_defs(base_path: Path, columns: list[str], table_version: int) -> str:
    """Record the column_stats index definition (v8+ ``.index_defs/index.json``, merged into an existing
    file); returns the path relative to the base, for ``hoodie.table.index.defs.path``."""
    import json

    path = base_path / INDEX_DEFS_PATH
    doc: dict[str, Any] = {"indexDefinitions": {}}
    if path.is_file():
        try:
            doc = json.loads(path.read_text())
            doc.setdefault("indexDefinitions", {})
        except ValueError:
            doc = {"indexDefinitions": {}}
    doc["indexDefinitions"]["column_stats"] = {
        "indexName": "column_stats", "indexType": "column_stats", "indexFunction": "column_stats",
        "sourceFields": list(columns), "indexOptions": {}, "version": "V2" if table_version >= 9 else "V1"}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(doc, indent=2).encode("utf-8"))
    return INDEX_DEFS_PATH
