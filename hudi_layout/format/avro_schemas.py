"""Avro schemas of Hudi's timeline files, as Python dicts (parsed by fastavro once, on first use).

Field names, order, unions and defaults follow ``hudi-common/src/main/avro/*.avsc`` as embedded by Hudi
1.1 in real timeline files (strings carry ``"avro.java.string": "String"`` like Java's generated classes).
Readers never need these (container files embed their writer schema); writers do.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import fastavro

NS = "org.apache.hudi.avro.model"
STR: dict[str, Any] = {"type": "string", "avro.java.string": "String"}


def _f(name: str, t: Any, **kw: Any) -> dict[str, Any]:
    return {"name": name, "type": t, **kw}


def _nullable(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", t], "default": None}


def _version() -> dict[str, Any]:
    return {"name": "version", "type": ["int", "null"], "default": 1}


def _str_map() -> dict[str, Any]:
    return {"type": "map", "values": STR, "avro.java.string": "String"}


def _long(name: str) -> dict[str, Any]:
    return _nullable(name, "long")


RUNTIME_STATS: dict[str, Any] = {
    "type": "record", "name": "HoodieRuntimeStats",
    "fields": [_long("totalScanTime"), _long("totalCreateTime"), _long("totalUpsertTime")],
}

WRITE_STAT: dict[str, Any] = {
    "type": "record", "name": "HoodieWriteStat",
    "fields": [
        _nullable("fileId", STR), _nullable("path", STR), _nullable("prevCommit", STR),
        _long("numWrites"), _long("numDeletes"), _long("numUpdateWrites"), _long("totalWriteBytes"),
        _long("totalWriteErrors"), _nullable("partitionPath", STR), _long("totalLogRecords"),
        _long("totalLogFiles"), _long("totalUpdatedRecordsCompacted"), _long("numInserts"),
        _long("totalLogBlocks"), _long("totalCorruptLogBlock"), _long("totalRollbackBlocks"),
        _long("fileSizeInBytes"), _nullable("logVersion", "int"), _long("logOffset"),
        _nullable("baseFile", STR),
        _nullable("logFiles", {"type": "array", "items": STR, "default": None}),
        _nullable("cdcStats", {"type": "map", "values": "long", "avro.java.string": "String",
                               "default": None}),
        _nullable("prevBaseFile", STR), _long("minEventTime"), _long("maxEventTime"),
        _nullable("runtimeStats", RUNTIME_STATS),
        _long("totalLogFilesCompacted"), _long("totalLogReadTimeMs"), _long("totalLogSizeCompacted"),
        _nullable("tempPath", STR), _long("numUpdates"),
    ],
}

#: field names of HoodieWriteStat, in Avro order
WRITE_STAT_FIELDS: tuple[str, ...] = tuple(f["name"] for f in WRITE_STAT["fields"])


def _commit_fields(with_replace: bool) -> list[dict[str, Any]]:
    fields = [
        _nullable("partitionToWriteStats", {"type": "map", "values": {"type": "array", "items": WRITE_STAT},
                                            "avro.java.string": "String"}),
        _nullable("compacted", "boolean"),
        _nullable("extraMetadata", {**_str_map(), "default": None} if not with_replace else _str_map()),
        _version(),
        _nullable("operationType", STR),
    ]
    if with_replace:
        fields.append(_nullable("partitionToReplaceFileIds",
                                {"type": "map", "values": {"type": "array", "items": STR},
                                 "avro.java.string": "String"}))
    return fields


COMMIT_METADATA: dict[str, Any] = {"type": "record", "name": "HoodieCommitMetadata", "namespace": NS,
                                   "fields": _commit_fields(False)}
REPLACE_COMMIT_METADATA: dict[str, Any] = {"type": "record", "name": "HoodieReplaceCommitMetadata",
                                           "namespace": NS, "fields": _commit_fields(True)}

SLICE_INFO: dict[str, Any] = {
    "type": "record", "name": "HoodieSliceInfo",
    "fields": [
        _nullable("dataFilePath", STR),
        _nullable("deltaFilePaths", {"type": "array", "items": STR}),
        {"name": "fileId", "type": ["null", STR]},
        _nullable("partitionPath", STR),
        _nullable("bootstrapFilePath", STR),
        _version(),
    ],
}
CLUSTERING_GROUP: dict[str, Any] = {
    "type": "record", "name": "HoodieClusteringGroup",
    "fields": [
        _nullable("slices", {"type": "array", "items": SLICE_INFO}),
        _nullable("metrics", {"type": "map", "values": "double", "avro.java.string": "String"}),
        {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
        _nullable("extraMetadata", _str_map()),
        _version(),
    ],
}
CLUSTERING_STRATEGY: dict[str, Any] = {
    "type": "record", "name": "HoodieClusteringStrategy",
    "fields": [_nullable("strategyClassName", STR), _nullable("strategyParams", _str_map()), _version()],
}
CLUSTERING_PLAN: dict[str, Any] = {
    "type": "record", "name": "HoodieClusteringPlan",
    "fields": [
        _nullable("inputGroups", {"type": "array", "items": CLUSTERING_GROUP}),
        _nullable("strategy", CLUSTERING_STRATEGY),
        _nullable("extraMetadata", _str_map()),
        _version(),
        _nullable("preserveHoodieMetadata", "boolean"),
        _nullable("missingSchedulePartitions", {"type": "array", "items": STR}),
    ],
}
REQUESTED_REPLACE_METADATA: dict[str, Any] = {
    "type": "record", "name": "HoodieRequestedReplaceMetadata", "namespace": NS,
    "fields": [_nullable("operationType", STR), _nullable("clusteringPlan", CLUSTERING_PLAN),
               _nullable("extraMetadata", _str_map()), _version()],
}

INSTANT_INFO: dict[str, Any] = {
    "type": "record", "name": "HoodieInstantInfo",
    "fields": [_f("commitTime", STR), _f("action", STR)],
}
ROLLBACK_REQUEST: dict[str, Any] = {
    "type": "record", "name": "HoodieRollbackRequest",
    "fields": [
        _f("partitionPath", STR),
        _nullable("fileId", STR),
        _nullable("latestBaseInstant", STR),
        {"name": "filesToBeDeleted", "default": [], "type": {"type": "array", "default": [], "items": STR}},
        _nullable("logBlocksToBeDeleted", {"type": "map", "values": "long", "avro.java.string": "String"}),
    ],
}
ROLLBACK_PLAN: dict[str, Any] = {
    "type": "record", "name": "HoodieRollbackPlan", "namespace": NS,
    "fields": [
        _nullable("instantToRollback", INSTANT_INFO),
        _nullable("RollbackRequests", {"type": "array", "items": ROLLBACK_REQUEST}),
        _version(),
    ],
}
ROLLBACK_PARTITION_METADATA: dict[str, Any] = {
    "type": "record", "name": "HoodieRollbackPartitionMetadata",
    "fields": [
        _f("partitionPath", STR),
        _f("successDeleteFiles", {"type": "array", "items": STR}),
        _f("failedDeleteFiles", {"type": "array", "items": STR}),
        _nullable("rollbackLogFiles", {"type": "map", "values": "long", "avro.java.string": "String"}),
        _nullable("writtenLogFiles", {"type": "map", "values": "long", "avro.java.string": "String"}),
    ],
}
ROLLBACK_METADATA: dict[str, Any] = {
    "type": "record", "name": "HoodieRollbackMetadata", "namespace": NS,
    "fields": [
        _f("startRollbackTime", STR),
        _f("timeTakenInMillis", "long"),
        _f("totalFilesDeleted", "int"),
        _f("commitsRollback", {"type": "array", "items": STR}),
        _f("partitionMetadata", {"type": "map", "values": ROLLBACK_PARTITION_METADATA,
                                 "avro.java.string": "String"}),
        _version(),
        {"name": "instantsRollback", "default": [],
         "type": {"type": "array", "default": [], "items": INSTANT_INFO}},
    ],
}

# --- clean (docs/hudi-format-live-tables.md §1.2, §1.3): the newest .avsc field lists --------------------
ACTION_INSTANT: dict[str, Any] = {
    "type": "record", "name": "HoodieActionInstant",
    "fields": [_f("timestamp", STR), _f("action", STR), _f("state", STR)],
}
CLEAN_FILE_INFO: dict[str, Any] = {
    "type": "record", "name": "HoodieCleanFileInfo",
    "fields": [_nullable("filePath", STR), _nullable("isBootstrapBaseFile", "boolean")],
}
CLEANER_PLAN: dict[str, Any] = {
    "type": "record", "name": "HoodieCleanerPlan", "namespace": NS,
    "fields": [
        _nullable("earliestInstantToRetain", ACTION_INSTANT),
        {"name": "lastCompletedCommitTimestamp", "type": STR, "default": ""},
        _f("policy", STR),
        _nullable("filesToBeDeletedPerPartition",
                  {"type": "map", "values": {"type": "array", "items": STR}, "avro.java.string": "String"}),
        _version(),
        _nullable("filePathsToBeDeletedPerPartition",
                  {"type": "map", "values": {"type": "array", "items": CLEAN_FILE_INFO},
                   "avro.java.string": "String"}),
        _nullable("partitionsToBeDeleted", {"type": "array", "items": STR}),
        _nullable("extraMetadata", {**_str_map(), "default": None}),
    ],
}
CLEAN_PARTITION_METADATA: dict[str, Any] = {
    "type": "record", "name": "HoodieCleanPartitionMetadata",
    "fields": [
        _f("partitionPath", STR), _f("policy", STR),
        _f("deletePathPatterns", {"type": "array", "items": STR}),
        _f("successDeleteFiles", {"type": "array", "items": STR}),
        _f("failedDeleteFiles", {"type": "array", "items": STR}),
        _nullable("isPartitionDeleted", "boolean"),
    ],
}
CLEAN_METADATA: dict[str, Any] = {
    "type": "record", "name": "HoodieCleanMetadata", "namespace": NS,
    "fields": [
        _f("startCleanTime", STR), _f("timeTakenInMillis", "long"), _f("totalFilesDeleted", "int"),
        _f("earliestCommitToRetain", STR),
        {"name": "lastCompletedCommitTimestamp", "type": STR, "default": ""},
        _f("partitionMetadata", {"type": "map", "values": CLEAN_PARTITION_METADATA, "avro.java.string": "String"}),
        _version(),
        _nullable("bootstrapPartitionMetadata",
                  {"type": "map", "values": "HoodieCleanPartitionMetadata", "avro.java.string": "String",
                   "default": None}),
        _nullable("extraMetadata", {**_str_map(), "default": None}),
    ],
}

SAVEPOINT_METADATA: dict[str, Any] = {
    "type": "record", "name": "HoodieSavepointMetadata", "namespace": NS,
    "fields": [
        _f("savepointedBy", STR), _f("savepointedAt", "long"), _f("comments", STR),
        _f("partitionMetadata", {"type": "map", "avro.java.string": "String", "values": {
            "type": "record", "name": "HoodieSavepointPartitionMetadata",
            "fields": [_f("partitionPath", STR), _f("savepointDataFile", {"type": "array", "items": STR})]}}),
        _version(),
    ],
}

# --- restore (HoodieRestorePlan.avsc, HoodieRestoreMetadata.avsc): undo every instant after a savepoint ------
RESTORE_PLAN: dict[str, Any] = {
    "type": "record", "name": "HoodieRestorePlan", "namespace": NS,
    "fields": [
        {"name": "instantsToRollback", "default": [], "type": {"type": "array", "default": [], "items": INSTANT_INFO}},
        {"name": "version", "type": ["int", "null"], "default": 2},
        {"name": "savepointToRestoreTimestamp", "type": [STR, "null"], "default": None},
    ],
}
RESTORE_METADATA: dict[str, Any] = {
    "type": "record", "name": "HoodieRestoreMetadata", "namespace": NS,
    "fields": [
        _f("startRestoreTime", STR), _f("timeTakenInMillis", "long"),
        _f("instantsToRollback", {"type": "array", "items": STR}),
        # the rollback metadata record (and the HoodieInstantInfo inside it) is defined here, used by name below
        _f("hoodieRestoreMetadata", {"type": "map", "avro.java.string": "String", "values": {
            "type": "array", "items": ["null", ROLLBACK_METADATA]}}),
        _version(),
        {"name": "restoreInstantInfo", "default": [], "type": {"type": "array", "items": "HoodieInstantInfo"}},
        _nullable("extraMetadata", _str_map()),
    ],
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "HoodieCommitMetadata": COMMIT_METADATA,
    "HoodieReplaceCommitMetadata": REPLACE_COMMIT_METADATA,
    "HoodieRequestedReplaceMetadata": REQUESTED_REPLACE_METADATA,
    "HoodieRollbackPlan": ROLLBACK_PLAN,
    "HoodieRollbackMetadata": ROLLBACK_METADATA,
    "HoodieCleanerPlan": CLEANER_PLAN,
    "HoodieCleanMetadata": CLEAN_METADATA,
    "HoodieSavepointMetadata": SAVEPOINT_METADATA,
    "HoodieRestorePlan": RESTORE_PLAN,
    "HoodieRestoreMetadata": RESTORE_METADATA,
}


@cache
def parsed_schema(name: str) -> Any:
    """fastavro-parsed schema by short record name (``HoodieCommitMetadata`` ...)."""
    return fastavro.parse_schema(SCHEMAS[name], _write_hint=False)


def record_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """A record of ``schema`` with every field at its Avro default (``None`` where no default)."""
    out: dict[str, Any] = {}
    for f in schema["fields"]:
        d = f.get("default")
        out[f["name"]] = list(d) if isinstance(d, list) else d
    return out
