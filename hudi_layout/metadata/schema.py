"""The ``HoodieMetadataRecord`` Avro schema, as Hudi 1.x writes it (docs/hudi-format.md §5.3).

Source of truth: ``hudi: hudi-common/src/main/avro/HoodieMetadata.avsc``; checked field by field against the
writer schema embedded (file-info key ``schema``) in the v9 fixture MDT HFiles (see tests).

Two forms:

* **v9** (table version 9, column-stats index version V2): ``HoodieMetadataColumnStats`` ends with
  ``valueType: [null, HoodieValueTypeInfo{typeOrdinal, additionalInfo}]``.
* **v8** (table version 8, index version V1): same record without ``valueType``.

Readers must decode with the *writer* schema found in the file (HFile file info / log block header);
these constants are what *we* write.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

import fastavro

NAMESPACE = "org.apache.hudi.avro.model"

_JSTRING: dict[str, Any] = {"type": "string", "avro.java.string": "String"}

# Order matters: it is the union branch index used on the wire (1 = BooleanWrapper ... 13 = ArrayWrapper).
WRAPPER_NAMES: tuple[str, ...] = (
    "BooleanWrapper", "IntWrapper", "LongWrapper", "FloatWrapper", "DoubleWrapper", "BytesWrapper",
    "StringWrapper", "DateWrapper", "DecimalWrapper", "TimeMicrosWrapper", "TimestampMicrosWrapper",
    "LocalDateWrapper",
)
_WRAPPER_VALUE_TYPES: dict[str, Any] = {
    "BooleanWrapper": "boolean",
    "IntWrapper": "int",
    "LongWrapper": "long",
    "FloatWrapper": "float",
    "DoubleWrapper": "double",
    "BytesWrapper": "bytes",
    "StringWrapper": _JSTRING,
    "DateWrapper": "int",
    "DecimalWrapper": {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
    "TimeMicrosWrapper": {"type": "long", "logicalType": "time-micros"},
    "TimestampMicrosWrapper": "long",
    "LocalDateWrapper": "int",
}


def _nullable(t: Any) -> list[Any]:
    return ["null", t]


def _opt_string(name: str) -> dict[str, Any]:
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


def _wrapper_union_first_use() -> list[Any]:
    branches: list[Any] = ["null"]
    for name in WRAPPER_NAMES:
        branches.append({"type": "record", "name": name,
                         "fields": [{"name": "value", "type": _WRAPPER_VALUE_TYPES[name]}]})
    branches.append({
        "type": "record", "name": "ArrayWrapper",
        "fields": [{"name": "wrappedValues",
                    "type": ["null", {"type": "array", "items": ["null", *WRAPPER_NAMES]}],
                    "default": None}],
    })
    return branches


def _column_stats_record(with_value_type: bool) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [
        {"name": "fileName", "type": _nullable(_JSTRING), "default": None},
        {"name": "columnName", "type": _nullable(_JSTRING), "default": None},
        {"name": "minValue", "type": _wrapper_union_first_use(), "default": None},
        {"name": "maxValue", "type": ["null", *WRAPPER_NAMES, "ArrayWrapper"], "default": None},
        {"name": "valueCount", "type": ["null", "long"], "default": None},
        {"name": "nullCount", "type": ["null", "long"], "default": None},
        {"name": "totalSize", "type": ["null", "long"], "default": None},
        {"name": "totalUncompressedSize", "type": ["null", "long"], "default": None},
        {"name": "isDeleted", "type": "boolean"},
        {"name": "isTightBound", "type": "boolean", "default": False},
    ]
    if with_value_type:
        fields.append({
            "name": "valueType",
            "type": ["null", {"type": "record", "name": "HoodieValueTypeInfo", "fields": [
                {"name": "typeOrdinal", "type": "int"},
                {"name": "additionalInfo", "type": _nullable(_JSTRING), "default": None},
            ]}],
            "default": None,
        })
    return {"type": "record", "name": "HoodieMetadataColumnStats", "fields": fields}


def metadata_record_schema(table_version: int = 9) -> dict[str, Any]:
    """Plain-JSON ``HoodieMetadataRecord`` schema for the given data-table version (8 or 9)."""
    return copy.deepcopy(_schema_json(table_version >= 9))


@lru_cache(maxsize=2)
def _schema_json(with_value_type: bool) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "HoodieMetadataRecord",
        "namespace": NAMESPACE,
        "doc": "A record saved within the Metadata Table",
        "fields": [
            _opt_string("_hoodie_commit_time"),
            _opt_string("_hoodie_commit_seqno"),
            _opt_string("_hoodie_record_key"),
            _opt_string("_hoodie_partition_path"),
            _opt_string("_hoodie_file_name"),
            {"name": "key", "type": _JSTRING},
            {"name": "type", "type": "int", "doc": "Type of the metadata record"},
            {"name": "filesystemMetadata", "type": ["null", {
                "type": "map",
                "values": {"type": "record", "name": "HoodieMetadataFileInfo", "fields": [
                    {"name": "size", "type": "long"},
                    {"name": "isDeleted", "type": "boolean"},
                ]},
                "avro.java.string": "String",
            }]},
            {"name": "BloomFilterMetadata", "type": ["null", {
                "type": "record", "name": "HoodieMetadataBloomFilter", "fields": [
                    {"name": "type", "type": _JSTRING},
                    {"name": "timestamp", "type": _JSTRING},
                    {"name": "bloomFilter", "type": "bytes"},
                    {"name": "isDeleted", "type": "boolean"},
                ]}], "default": None},
            {"name": "ColumnStatsMetadata", "type": ["null", _column_stats_record(with_value_type)],
             "default": None},
            {"name": "recordIndexMetadata", "type": ["null", {
                "type": "record", "name": "HoodieRecordIndexInfo", "fields": [
                    {"name": "partitionName", "type": _nullable(_JSTRING), "default": None},
                    {"name": "fileIdHighBits", "type": ["null", "long"], "default": None},
                    {"name": "fileIdLowBits", "type": ["null", "long"], "default": None},
                    {"name": "fileIndex", "type": ["null", "int"], "default": None},
                    {"name": "fileId", "type": _nullable(_JSTRING), "default": None},
                    {"name": "instantTime", "type": ["null", "long"], "default": None},
                    {"name": "fileIdEncoding", "type": "int", "default": 0},
                    {"name": "position", "type": ["null", "long"], "default": None},
                ]}], "default": None},
            {"name": "SecondaryIndexMetadata", "type": ["null", {
                "type": "record", "name": "HoodieSecondaryIndexInfo", "fields": [
                    {"name": "isDeleted", "type": "boolean"},
                ]}], "default": None},
        ],
    }


def metadata_record_schema_str(table_version: int = 9) -> str:
    """Compact JSON text, as stored in HFile file info ``schema`` and the log-block ``SCHEMA`` header."""
    return _schema_text(table_version >= 9)


@lru_cache(maxsize=2)
def _schema_text(with_value_type: bool) -> str:
    return json.dumps(_schema_json(with_value_type), separators=(",", ":"))


@lru_cache(maxsize=16)
def parsed_schema_from_text(schema_text: str) -> Any:
    """fastavro-parsed schema, cached by its JSON text (writer schemas repeat across files)."""
    return fastavro.parse_schema(json.loads(schema_text))


def parsed_schema(table_version: int = 9) -> Any:
    return parsed_schema_from_text(metadata_record_schema_str(table_version))
