"""Hudi's compaction plan (``<T>.compaction.requested``): which file slices a compaction merges.

A Merge-on-Read compaction is scheduled as an Avro ``HoodieCompactionPlan`` (one record in an Avro container,
codec ``null``, in every table version): one ``HoodieCompactionOperation`` per file slice, naming the slice's
base instant, its base file (``dataFilePath``, ``null`` for a slice of log files only) and its log files
(``deltaFilePaths``), both as bare file names relative to ``partitionPath``. The ``inflight`` file is empty;
the completed instant is a ``commit`` whose write stats name each new base file (``prevCommit`` the slice's
base instant, ``prevBaseFile`` its old base file). See docs/hudi-format-live-tables.md §8.

The same codec serves the data table and its metadata table (whose compactions merge HFile slices).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastavro

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.commit_metadata import decode_avro_container

_S = {"type": "string", "avro.java.string": "String"}

#: Hudi's ``HoodieCompactionPlan.avsc`` / ``HoodieCompactionOperation.avsc`` (hudi-common/src/main/avro)
COMPACTION_PLAN_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieCompactionPlan", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "operations", "default": None, "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "HoodieCompactionOperation", "fields": [
                {"name": "baseInstantTime", "type": ["null", _S]},
                {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": _S}], "default": None},
                {"name": "dataFilePath", "type": ["null", _S], "default": None},
                {"name": "fileId", "type": ["null", _S]},
                {"name": "partitionPath", "type": ["null", _S], "default": None},
                {"name": "metrics", "type": ["null", {"type": "map", "values": "double",
                                                      "avro.java.string": "String"}], "default": None},
                {"name": "bootstrapFilePath", "type": ["null", _S], "default": None},
            ]}}]},
        {"name": "extraMetadata",
         "type": ["null", {"type": "map", "values": _S, "avro.java.string": "String"}],
         "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "strategy", "default": None, "type": ["null", {
            "type": "record", "name": "HoodieCompactionStrategy", "fields": [
                {"name": "compactorClassName", "type": ["null", _S], "default": None},
                {"name": "strategyParams", "type": ["null", {"type": "map", "values": _S,
                                                             "avro.java.string": "String"}], "default": None},
                {"name": "version", "type": ["int", "null"], "default": 1},
            ]}]},
        {"name": "preserveHoodieMetadata", "type": ["boolean", "null"], "default": False},
        {"name": "missingSchedulePartitions", "type": ["null", {"type": "array", "items": _S}],
         "default": None},
    ],
}

#: the plan version Hudi 1.x writes
PLAN_VERSION = 2
#: ``operationType`` of a compaction's completed commit (Hudi's ``WriteOperationType.COMPACT``)
COMPACT_OPERATION = "COMPACT"


@dataclass(frozen=True)
class CompactionOperation:
    """One file slice of a compaction plan: merge ``base_file`` (``None``: log files only) with ``log_files``
    (names in the slice's partition folder) into a new base file of file group ``file_id``."""

    partition_path: str
    file_id: str
    base_instant: str
    base_file: str | None
    log_files: tuple[str, ...]
    #: Hudi's plan metrics (``TOTAL_LOG_FILES``, ``TOTAL_LOG_FILES_SIZE``, ``TOTAL_IO_MB``, ...)
    metrics: Mapping[str, float] = field(default_factory=dict)

    @property
    def file_group(self) -> tuple[str, str]:
        return self.partition_path, self.file_id

    def to_record(self) -> dict[str, Any]:
        return {"baseInstantTime": self.base_instant, "deltaFilePaths": list(self.log_files),
                "dataFilePath": self.base_file, "fileId": self.file_id, "partitionPath": self.partition_path,
                "metrics": {k: float(v) for k, v in self.metrics.items()}, "bootstrapFilePath": None}


def operation_from_record(rec: Mapping[str, Any], where: str) -> CompactionOperation:
    file_id = rec.get("fileId")
    base_instant = rec.get("baseInstantTime")
    if not file_id or not base_instant:
        raise CorruptFileError(f"{where}: a compaction operation lacks its fileId or baseInstantTime")
    if rec.get("bootstrapFilePath"):
        raise CorruptFileError(f"{where}: compaction of bootstrapped file group {file_id} "
                               "(bootstrapFilePath) is not supported")
    return CompactionOperation(partition_path=rec.get("partitionPath") or "", file_id=file_id,
                               base_instant=base_instant, base_file=rec.get("dataFilePath") or None,
                               log_files=tuple(rec.get("deltaFilePaths") or ()),
                               metrics=dict(rec.get("metrics") or {}))


def compaction_plan_bytes(operations: Sequence[CompactionOperation | Mapping[str, Any]],
                          extra_metadata: Mapping[str, str] | None = None,
                          missing_partitions: Sequence[str] = ()) -> bytes:
    """The ``compaction.requested`` content for ``operations``. ``missing_partitions``: partitions holding
    slices with log files that the plan strategy left out (Hudi's ``missingSchedulePartitions``, which its
    incremental planning scans again next time)."""
    records = [op.to_record() if isinstance(op, CompactionOperation) else dict(op) for op in operations]
    rec = {"operations": records, "extraMetadata": dict(extra_metadata or {}), "version": PLAN_VERSION,
           "strategy": None, "preserveHoodieMetadata": False,
           "missingSchedulePartitions": list(missing_partitions)}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(COMPACTION_PLAN_SCHEMA), [rec], codec="null")
    return buf.getvalue()


def decode_compaction_plan(data: bytes, where: str) -> tuple[CompactionOperation, ...]:
    """The operations of a ``compaction.requested`` file; an empty or unreadable plan is corrupt (a compaction
    whose slices are unknown cannot be executed, and may cover any file group)."""
    plan = decode_avro_container(data, where) if data else {}
    ops = plan.get("operations")
    if ops is None:
        raise CorruptFileError(f"{where}: the compaction plan is empty or has no operations")
    return tuple(operation_from_record(op, where) for op in ops)
