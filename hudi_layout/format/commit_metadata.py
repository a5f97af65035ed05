"""Encode/decode the content of timeline files (docs/hudi-format.md §2.3, §3, §4.1).

* v6 (layout 1) commit / deltacommit / replacecommit: Jackson pretty-printed JSON.
* v8/v9: Avro object container file, codec ``null``, exactly one record.
* Requested replace / clustering plans and rollback plan/metadata: Avro in every version.

Decoders accept both encodings (sniffing the ``Obj\\x01`` magic) so callers need not know the version;
an empty file decodes to ``{}`` (requested commits, clustering inflight are empty).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro

from hudi_layout.errors import CorruptFileError, InvalidArgumentError
from hudi_layout.format.avro_container import read_container
from hudi_layout.format.avro_schemas import SCHEMAS, WRITE_STAT_FIELDS, parsed_schema
from hudi_layout.format.capabilities import READ_VERSIONS

AVRO_MAGIC = b"Obj\x01"

#: ``extraMetadata`` key (value ``"true"``) on every commit and replacecommit hudi_layout writes: the float and
#: double ``column_stats`` records of the files it wrote are NaN-exact (``max`` is NaN exactly when the file
#: holds a NaN), so a reader may take a non-NaN ``max`` as an upper bound. Statistics of files whose commit does
#: not carry it (other writers) may leave NaN out and are only used where NaN cannot change the answer.
NAN_EXACT_STATS_KEY = "hudi_layout.column_stats.nan_exact"

#: ``extraMetadata`` key of the metadata table's column_stats initialisation deltacommit written by ``index
#: --read-floats``: every base file of the data table whose commit time is at most this instant got NaN-exact
#: float records from its data. It is the newest completed instant older than every instant pending at that
#: moment, so a file written later (a newer instant, by any writer) is never covered by it.
NAN_EXACT_THROUGH_KEY = "hudi_layout.column_stats.nan_exact_through"

#: key order Hudi 0.14/0.15 (Jackson, v6) writes for a HoodieWriteStat / HoodieDeltaWriteStat
V6_WRITE_STAT_KEYS: tuple[str, ...] = (
    "fileId", "path", "cdcStats", "prevCommit", "numWrites", "numDeletes", "numUpdateWrites", "numInserts",
    "totalWriteBytes", "totalWriteErrors", "tempPath", "partitionPath", "totalLogRecords",
    "totalLogFilesCompacted", "totalLogSizeCompacted", "totalUpdatedRecordsCompacted", "totalLogBlocks",
    "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes", "minEventTime", "maxEventTime",
    "runtimeStats",
)
V6_DELTA_WRITE_STAT_KEYS: tuple[str, ...] = ("logVersion", "logOffset", "baseFile", "logFiles")
V6_RUNTIME_STATS_KEYS: tuple[str, ...] = ("totalScanTime", "totalUpsertTime", "totalCreateTime")
_V6_TOP_KEYS = ("partitionToWriteStats", "compacted", "extraMetadata", "operationType",
                "partitionToReplaceFileIds")


@dataclass(frozen=True)
class WriteStat:
    """The HoodieWriteStat fields a base-file writer fills; :meth:`to_dict` gives the full record.

    ``path`` is partition-relative (``region=us/<file>.parquet``, or just the name when non-partitioned);
    ``prev_commit`` is the string ``"null"`` for a new file group, as Hudi writes it.
    """

    file_id: str
    path: str
    partition_path: str
    num_writes: int
    file_size_in_bytes: int
    num_inserts: int = 0
    num_update_writes: int = 0
    num_deletes: int = 0
    prev_commit: str = "null"
    prev_base_file: str | None = None
    total_write_errors: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    total_create_time_ms: int = 0
    total_upsert_time_ms: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {name: None for name in WRITE_STAT_FIELDS}
        d.update(
            fileId=self.file_id, path=self.path, prevCommit=self.prev_commit, numWrites=self.num_writes,
            numDeletes=self.num_deletes, numUpdateWrites=self.num_update_writes,
            totalWriteBytes=self.file_size_in_bytes, totalWriteErrors=self.total_write_errors,
            partitionPath=self.partition_path, totalLogRecords=0, totalUpdatedRecordsCompacted=0,
            numInserts=self.num_inserts, totalLogBlocks=0, totalCorruptLogBlock=0, totalRollbackBlocks=0,
            fileSizeInBytes=self.file_size_in_bytes, prevBaseFile=self.prev_base_file,
            minEventTime=self.min_event_time, maxEventTime=self.max_event_time,
            runtimeStats={"totalScanTime": 0, "totalCreateTime": self.total_create_time_ms,
                          "totalUpsertTime": self.total_upsert_time_ms},
            totalLogFilesCompacted=0, totalLogReadTimeMs=0, totalLogSizeCompacted=0, numUpdates=0,
        )
        d.update(self.extra)
        return d


def write_stat_from_dict(d: Mapping[str, Any]) -> WriteStat:
    rt = d.get("runtimeStats") or {}
    return WriteStat(
        file_id=d.get("fileId") or "", path=d.get("path") or "", partition_path=d.get("partitionPath") or "",
        num_writes=int(d.get("numWrites") or 0), file_size_in_bytes=int(d.get("fileSizeInBytes") or 0),
        num_inserts=int(d.get("numInserts") or 0), num_update_writes=int(d.get("numUpdateWrites") or 0),
        num_deletes=int(d.get("numDeletes") or 0), prev_commit=d.get("prevCommit") or "null",
        prev_base_file=d.get("prevBaseFile"), total_write_errors=int(d.get("totalWriteErrors") or 0),
        min_event_time=d.get("minEventTime"), max_event_time=d.get("maxEventTime"),
        total_create_time_ms=int(rt.get("totalCreateTime") or 0),
        total_upsert_time_ms=int(rt.get("totalUpsertTime") or 0),
    )


# ---------------------------------------------------------------------------------------------- JSON (v6)

def jackson_pretty(value: Any, indent: int = 0) -> str:
    """JSON like Jackson's ``DefaultPrettyPrinter``: ``"k" : v``, 2-space objects, ``[ a, b ]`` arrays."""
    pad = "  " * indent
    if isinstance(value, Mapping):
        if not value:
            return "{ }"
        items = [f'{pad}  {json.dumps(str(k), ensure_ascii=False)} : {jackson_pretty(v, indent + 1)}'
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def _v6_write_stat(stat: Mapping[str, Any]) -> dict[str, Any]:
    keys = list(V6_WRITE_STAT_KEYS)
    if any(stat.get(k) is not None for k in V6_DELTA_WRITE_STAT_KEYS):
        keys += list(V6_DELTA_WRITE_STAT_KEYS)
    if "recordsStats" in stat:  # HoodieDeltaWriteStat in 0.15 also serialises this (Option wrapper)
        keys.append("recordsStats")
    out = {k: stat.get(k) for k in keys}
    rt = stat.get("runtimeStats")
    if isinstance(rt, Mapping):
        out["runtimeStats"] = {k: rt.get(k, 0) for k in V6_RUNTIME_STATS_KEYS}
    return out


def _v6_document(metadata: Mapping[str, Any], replace: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    p2ws = metadata.get("partitionToWriteStats") or {}
    doc["partitionToWriteStats"] = {p: [_v6_write_stat(s) for s in stats] for p, stats in p2ws.items()}
    doc["compacted"] = bool(metadata.get("compacted") or False)
    doc["extraMetadata"] = dict(metadata.get("extraMetadata") or {})
    doc["operationType"] = metadata.get("operationType")
    if replace:
        doc["partitionToReplaceFileIds"] = {p: list(v) for p, v in
                                            (metadata.get("partitionToReplaceFileIds") or {}).items()}
    return doc


# ------------------------------------------------------------------------------------------------- Avro

def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _avro_bytes(b: bytes) -> bytes:
    return _zigzag(len(b)) + b


def avro_container_bytes(schema_name: str, record: Mapping[str, Any]) -> bytes:
    """One-record Avro container file, codec null, as Java's ``DataFileWriter`` lays it out for Hudi's
    ``TimelineMetadataUtils``: header metadata holds only ``avro.schema`` (compact JSON in .avsc field
    order, so the embedded schema text matches Java's), one block, random sync marker."""
    body = io.BytesIO()
    try:
        fastavro.schemaless_writer(body, parsed_schema(schema_name), dict(record))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidArgumentError(f"record does not fit Avro schema {schema_name}: {exc}") from exc
    schema_json = json.dumps(SCHEMAS[schema_name], separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    sync = os.urandom(16)
    data = body.getvalue()
    return b"".join([
        AVRO_MAGIC, _zigzag(1), _avro_bytes(b"avro.schema"), _avro_bytes(schema_json), _zigzag(0), sync,
        _zigzag(1), _avro_bytes(data), sync,
    ])


def decode_avro_container(data: bytes, what: str = "timeline file") -> dict[str, Any]:
    """The single record of an Avro container; ``{}`` for an empty file."""
    if not data:
        return {}
    try:
        records = read_container(data, what)
    except CorruptFileError:
        raise
    except Exception as exc:  # fastavro raises assorted errors on garbage
        raise CorruptFileError(f"{what}: not a readable Avro container file: {exc}") from exc
    if len(records) != 1:
        raise CorruptFileError(f"{what}: expected one Avro record, found {len(records)}")
    rec = records[0]
    if not isinstance(rec, dict):
        raise CorruptFileError(f"{what}: Avro record is not a record")
    return rec


def decode_timeline_content(data: bytes, what: str = "timeline file") -> dict[str, Any]:
    """Decode any timeline file: Avro container, JSON (v6), or empty (→ ``{}``)."""
    if not data or not data.strip():
        return {}
    if data.startswith(AVRO_MAGIC):
        return decode_avro_container(data, what)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptFileError(f"{what}: neither Avro nor JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise CorruptFileError(f"{what}: JSON content is not an object")
    return doc


def _with_commit_defaults(metadata: Mapping[str, Any], replace: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "partitionToWriteStats": {p: [_full_write_stat(s) for s in stats]
                                  for p, stats in (metadata.get("partitionToWriteStats") or {}).items()},
        "compacted": bool(metadata.get("compacted") or False),
        "extraMetadata": dict(metadata.get("extraMetadata") or {}),
        "version": metadata.get("version"),  # Java leaves it null
        "operationType": metadata.get("operationType"),
    }
    if replace:
        rec["partitionToReplaceFileIds"] = {p: list(v) for p, v in
                                            (metadata.get("partitionToReplaceFileIds") or {}).items()}
    return rec


def _full_write_stat(stat: Mapping[str, Any] | WriteStat) -> dict[str, Any]:
    if isinstance(stat, WriteStat):
        return stat.to_dict()
    d = {name: stat.get(name) for name in WRITE_STAT_FIELDS}
    return d


def _is_json_version(table_version: int) -> bool:
    if table_version not in READ_VERSIONS:
        raise InvalidArgumentError(f"unsupported table version {table_version} (want 6, 8 or 9)")
    return table_version < 8


def commit_metadata_bytes(metadata: Mapping[str, Any], table_version: int) -> bytes:
    """Bytes of a (delta)commit file (completed, or inflight workload profile) for ``table_version``.

    ``metadata`` uses Hudi's field names; write stats may be dicts or :class:`WriteStat`.
    """
    if _is_json_version(table_version):
        doc = _v6_document(_with_commit_defaults(metadata, False), replace=False)
        return jackson_pretty(doc).encode("utf-8")
    return avro_container_bytes("HoodieCommitMetadata", _with_commit_defaults(metadata, False))


def replace_commit_metadata_bytes(metadata: Mapping[str, Any], table_version: int) -> bytes:
    """Bytes of a completed replacecommit (also clustering) for ``table_version``."""
    if _is_json_version(table_version):
        doc = _v6_document(_with_commit_defaults(metadata, True), replace=True)
        return jackson_pretty(doc).encode("utf-8")
    return avro_container_bytes("HoodieReplaceCommitMetadata", _with_commit_defaults(metadata, True))


def requested_replace_bytes(metadata: Mapping[str, Any]) -> bytes:
    """``T.replacecommit.requested`` / ``T.clustering.requested`` (Avro HoodieRequestedReplaceMetadata).

    ``metadata`` = ``{"operationType": "CLUSTER", "clusteringPlan": {...}, "extraMetadata": {},
    "version": 1}``;
    missing plan fields take their Avro defaults. Insert-overwrite writes ``{}`` → all-null record.
    """
    rec = {"operationType": metadata.get("operationType"), "clusteringPlan": metadata.get("clusteringPlan"),
           "extraMetadata": metadata.get("extraMetadata"), "version": metadata.get("version")}
    return avro_container_bytes("HoodieRequestedReplaceMetadata", rec)


def clustering_plan_metadata(plan: Mapping[str, Any], extra_metadata: Mapping[str, str] | None = None
                             ) -> dict[str, Any]:
    """Wrap a HoodieClusteringPlan dict as the requested-replace record Hudi writes for clustering."""
    return {"operationType": "CLUSTER", "clusteringPlan": dict(plan),
            "extraMetadata": dict(extra_metadata or {}), "version": 1}


def rollback_plan_bytes(plan: Mapping[str, Any]) -> bytes:
    """``T.rollback.requested`` (Avro HoodieRollbackPlan)."""
    return avro_container_bytes("HoodieRollbackPlan", plan)


def rollback_metadata_bytes(metadata: Mapping[str, Any]) -> bytes:
    """Completed ``T.rollback`` (Avro HoodieRollbackMetadata)."""
    return avro_container_bytes("HoodieRollbackMetadata", metadata)


def decode_commit_metadata(data: bytes, what: str = "commit file") -> dict[str, Any]:
    """Commit / deltacommit / replacecommit content, JSON or Avro; missing top-level keys filled."""
    doc = decode_timeline_content(data, what)
    doc.setdefault("partitionToWriteStats", {})
    doc.setdefault("extraMetadata", {})
    for k in ("partitionToWriteStats", "extraMetadata", "partitionToReplaceFileIds"):
        if k in doc and doc[k] is None:
            doc[k] = {}
    return doc


def decode_requested_replace(data: bytes, what: str = "requested replace file") -> dict[str, Any]:
    return decode_avro_container(data, what) if data else {}


def decode_rollback_plan(data: bytes, what: str = "rollback plan") -> dict[str, Any]:
    return decode_avro_container(data, what)


def decode_rollback_metadata(data: bytes, what: str = "rollback metadata") -> dict[str, Any]:
    return decode_avro_container(data, what)


def write_stats(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """All write stats of a commit, flattened."""
    return [s for stats in (metadata.get("partitionToWriteStats") or {}).values() for s in (stats or [])]


def replaced_file_ids(metadata: Mapping[str, Any]) -> set[tuple[str, str]]:
    """``{(partition, fileId)}`` from ``partitionToReplaceFileIds`` (empty for non-replace commits)."""
    p2r = metadata.get("partitionToReplaceFileIds") or {}
    return {(p, fid) for p, ids in p2r.items() for fid in ids or []}


__all__ = [
    "WriteStat", "write_stat_from_dict", "jackson_pretty", "avro_container_bytes", "decode_avro_container",
    "decode_timeline_content", "commit_metadata_bytes", "replace_commit_metadata_bytes",
    "requested_replace_bytes", "clustering_plan_metadata", "rollback_plan_bytes", "rollback_metadata_bytes",
    "decode_commit_metadata", "decode_requested_replace", "decode_rollback_plan", "decode_rollback_metadata",
    "write_stats", "replaced_file_ids",
]
