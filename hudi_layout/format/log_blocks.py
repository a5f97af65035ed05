"""Content of data-table log blocks: decode (and encode) AVRO_DATA, PARQUET_DATA, DELETE and COMMAND blocks.

The framing (magic, sizes, header/footer maps, corrupt regions) is :mod:`hudi_layout.format.log_format`;
this module turns one framed block's ``content`` into Arrow rows or deleted keys. See ``docs/mor-read.md``.

Content layouts (all integers big-endian):

* AVRO_DATA, content version 3: ``int32 version | int32 count | count x (int32 length | Avro binary datum)``;
  every datum is written with the block's ``SCHEMA`` header (the writer schema, meta fields included).
* PARQUET_DATA: one complete parquet file (``PAR1 ... PAR1``), no version prefix.
* DELETE, content version 3: ``int32 version | int32 length | Avro HoodieDeleteRecordList``. Versions 1 and
  2 hold Java-serialized (Kryo) objects that only a JVM can read: refused.
* COMMAND: empty content; header ``COMMAND_BLOCK_TYPE = 0`` (rollback) and ``TARGET_INSTANT_TIME``.

``HoodieDeleteRecord.orderingVal`` is a union of *wrapper records* (``{"value": x}``), in Hudi's order
``null, Boolean, Int, Long, Float, Double, Bytes, String, Date, Decimal, TimeMicros, TimestampMicros,
ArrayWrapper`` (the last one, for several ordering fields, holds a list of the same wrappers). Java writes a
delete without an ordering value as ``IntWrapper(0)`` ("natural order": the delete wins whatever the
record's ordering value).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout.errors import CorruptFileError, UnsupportedTableError
from hudi_layout.format.log_format import ROLLBACK_COMMAND, BlockType, HeaderKey, LogBlock, encode_block

#: content version of AVRO_DATA and DELETE blocks written by Hudi 0.11 and later (the only one we read)
CONTENT_VERSION = 3
_NAMESPACE = "org.apache.hudi.avro.model"

# ------------------------------------------------------------------------------------ Avro -> Arrow schema

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null(),
}


def _full_name(spec: Mapping[str, Any], namespace: str | None) -> tuple[str, str | None]:
    name = str(spec["name"])
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    ns = spec.get("namespace", namespace)
    return (f"{ns}.{name}" if ns else name), ns


def _decimal_type(spec: Mapping[str, Any]) -> pa.DataType:
    precision, scale = int(spec["precision"]), int(spec.get("scale", 0))
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def _arrow_type(t: Any, names: dict[str, pa.DataType], namespace: str | None, where: str) -> pa.DataType:
    """Arrow type of one Avro type, as Spark writes the same column into parquet (every field nullable)."""
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        if len(branches) != 1:
            raise UnsupportedTableError(f"{where}: Avro union {json.dumps(t)} has more than one non-null branch",
                                        hint="only nullable unions [null, T] can be read")
        return _arrow_type(branches[0], names, namespace, where)
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t]
        for candidate in (t, f"{namespace}.{t}" if namespace else t):
            if candidate in names:
                return names[candidate]
        raise CorruptFileError(f"{where}: Avro schema refers to unknown type {t!r}")
    if not isinstance(t, Mapping):
        raise CorruptFileError(f"{where}: bad Avro type {t!r}")
    base = t.get("type")
    logical = t.get("logicalType")
    if logical == "decimal" and base in ("bytes", "fixed"):
        out = _decimal_type(t)
        if base == "fixed":
            names[_full_name(t, namespace)[0]] = out
        return out
    if logical == "date" and base == "int":
        return pa.date32()
    if logical in ("timestamp-millis", "timestamp-micros") and base == "long":
        return pa.timestamp("us", tz="UTC")
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and base == "long":
        return pa.timestamp("us")
    if logical == "time-millis" and base == "int":
        return pa.time32("ms")
    if logical == "time-micros" and base == "long":
        return pa.time64("us")
    if base == "record":
        full, ns = _full_name(t, namespace)
        fields = [pa.field(f["name"], _arrow_type(f["type"], names, ns, where)) for f in t.get("fields", [])]
        out = pa.struct(fields)
        names[full] = out
        return out
    if base == "array":
        return pa.list_(pa.field("element", _arrow_type(t["items"], names, namespace, where)))
    if base == "map":
        return pa.map_(pa.string(), _arrow_type(t["values"], names, namespace, where))
    if base == "enum":
        names[_full_name(t, namespace)[0]] = pa.string()
        return pa.string()
    if base == "fixed":
        out = pa.binary(int(t["size"]))
        names[_full_name(t, namespace)[0]] = out
        return out
    return _arrow_type(base, names, namespace, where)


def arrow_schema_for_avro(schema: str | Mapping[str, Any], *, where: str = "Avro schema") -> pa.Schema:
    """Arrow schema of an Avro record schema (nested types included; every field nullable)."""
    if isinstance(schema, str):
        return _arrow_schema_cached(schema, where)
    return _arrow_schema_of(schema, where)


@lru_cache(maxsize=64)
def _arrow_schema_cached(schema_text: str, where: str) -> pa.Schema:
    try:
        parsed = json.loads(schema_text)
    except json.JSONDecodeError as exc:
        raise CorruptFileError(f"{where}: schema is not JSON: {exc}") from exc
    return _arrow_schema_of(parsed, where)


def _arrow_schema_of(schema: Mapping[str, Any], where: str) -> pa.Schema:
    if schema.get("type") != "record":
        raise CorruptFileError(f"{where}: top-level Avro schema is not a record")
    struct_type = _arrow_type(schema, {}, None, where)
    return pa.schema(list(struct_type))


@lru_cache(maxsize=64)
def _parsed_avro(schema_text: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text))


# ------------------------------------------------------------------------------------ data blocks


def _require_version(block: LogBlock, content: bytes, where: str) -> None:
    if len(content) < 8:
        raise CorruptFileError(f"{where}: {block.type.name} block at offset {block.offset} is truncated")
    (version,) = struct.unpack_from(">i", content, 0)
    if version != CONTENT_VERSION:
        raise UnsupportedTableError(
            f"{where}: {block.type.name} block at offset {block.offset} has content version {version}; "
            f"only version {CONTENT_VERSION} (Hudi 0.11 and later) can be read",
            hint="compact the table with Hudi so the old log blocks are merged into base files")


def block_schema_text(block: LogBlock, where: str) -> str:
    schema = block.header.get(HeaderKey.SCHEMA)
    if not schema:
        raise CorruptFileError(f"{where}: {block.type.name} block at offset {block.offset} has no SCHEMA header")
    return schema


def decode_avro_data_block(block: LogBlock, *, where: str = "<log>") -> pa.Table:
    """AVRO_DATA content -> Arrow table in the block's writer schema."""
    content = block.content
    _require_version(block, content, where)
    schema_text = block_schema_text(block, where)
    parsed = _parsed_avro(schema_text)
    arrow_schema = arrow_schema_for_avro(schema_text, where=f"{where}: block schema")
    (count,) = struct.unpack_from(">i", content, 4)
    stream = io.BytesIO(content)
    pos = 8
    rows: list[Any] = []
    try:
        for _ in range(count):
            (length,) = struct.unpack_from(">i", content, pos)
            pos += 4
            if length < 0 or pos + length > len(content):
                raise ValueError("record runs past the end of the block")
            stream.seek(pos)
            rows.append(fastavro.schemaless_reader(stream, parsed, None))
            if stream.tell() != pos + length:
                raise ValueError("record length does not match its Avro encoding")
            pos += length
    except (ValueError, EOFError, struct.error, IndexError, KeyError) as exc:
        raise CorruptFileError(f"{where}: AVRO_DATA block at offset {block.offset}: {exc}") from exc
    try:
        return pa.Table.from_pylist(rows, schema=arrow_schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CorruptFileError(f"{where}: AVRO_DATA block at offset {block.offset}: {exc}") from exc


def decode_parquet_data_block(block: LogBlock, *, columns: Sequence[str] | None = None,
                              where: str = "<log>") -> pa.Table:
    """PARQUET_DATA content -> Arrow table (``columns`` present in the block only)."""
    try:
        pf = pq.ParquetFile(pa.BufferReader(block.content))
        wanted = None if columns is None else [c for c in columns if c in pf.schema_arrow.names]
        return pf.read(columns=wanted)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptFileError(f"{where}: PARQUET_DATA block at offset {block.offset}: {exc}") from exc


# ------------------------------------------------------------------------------------ delete blocks

_SCALAR_WRAPPERS: tuple[tuple[str, Any], ...] = (
    ("BooleanWrapper", "boolean"), ("IntWrapper", "int"), ("LongWrapper", "long"), ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"), ("BytesWrapper", "bytes"), ("StringWrapper", "string"), ("DateWrapper", "int"),
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", "long"), ("TimestampMicrosWrapper", "long"),
)
#: the wrappers an ArrayWrapper element may hold (HoodieMetadata.avsc adds LocalDateWrapper at the end)
_ARRAY_ITEM_WRAPPERS = tuple(n for n, _ in _SCALAR_WRAPPERS) + ("LocalDateWrapper",)


def _delete_record_list_schema() -> dict[str, Any]:
    def wrapper(name: str, value_type: Any) -> dict[str, Any]:
        return {"type": "record", "name": name, "namespace": _NAMESPACE,
                "fields": [{"name": "value", "type": value_type}]}

    scalar = [wrapper(n, t) for n, t in _SCALAR_WRAPPERS]
    local_date = wrapper("LocalDateWrapper", "int")
    array_wrapper = {
        "type": "record", "name": "ArrayWrapper", "namespace": _NAMESPACE,
        "fields": [{"name": "wrappedValues", "default": None, "type": [
            "null", {"type": "array", "items": ["null", *[f"{_NAMESPACE}.{n}" for n, _ in _SCALAR_WRAPPERS],
                                                local_date]}]}],
    }
    return {
        "type": "record", "name": "HoodieDeleteRecordList", "namespace": _NAMESPACE,
        "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": {
            "type": "record", "name": "HoodieDeleteRecord", "fields": [
                {"name": "recordKey", "type": ["null", "string"], "default": None},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "orderingVal", "type": ["null", *scalar, array_wrapper], "default": None},
            ]}}}],
    }


DELETE_RECORD_LIST_SCHEMA: dict[str, Any] = _delete_record_list_schema()
_DELETE_LIST_PARSED = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)


@dataclass(frozen=True)
class OrderingValue:
    """One ``orderingVal`` of a delete record: the wrapper's short name and its value.

    ``value`` is the raw Avro value (``DateWrapper``: days, ``TimestampMicrosWrapper``: microseconds,
    ``DecimalWrapper``: :class:`decimal.Decimal`); an ``ArrayWrapper`` holds a tuple of ``OrderingValue | None``.
    """

    kind: str
    value: Any

    @property
    def is_natural(self) -> bool:
        """Java's default ``Integer 0``: the delete carries no ordering value and wins on merge."""
        return self.kind == "IntWrapper" and self.value == 0

    @property
    def parts(self) -> tuple[OrderingValue | None, ...]:
        """The per-field values (one for a scalar wrapper)."""
        return tuple(self.value) if self.kind == "ArrayWrapper" else (self,)

    def to_avro(self) -> tuple[str, dict[str, Any]]:
        if self.kind == "ArrayWrapper":
            items = [None if v is None else v.to_avro() for v in self.value]
            return f"{_NAMESPACE}.ArrayWrapper", {"wrappedValues": items}
        return f"{_NAMESPACE}.{self.kind}", {"value": self.value}


NATURAL_ORDER = OrderingValue("IntWrapper", 0)


def _ordering_from_avro(raw: Any) -> OrderingValue | None:
    if raw is None:
        return None
    name, rec = raw
    kind = str(name).rsplit(".", 1)[-1]
    if kind == "ArrayWrapper":
        values = rec.get("wrappedValues") or []
        return OrderingValue(kind, tuple(_ordering_from_avro(v) for v in values))
    return OrderingValue(kind, rec["value"])


@dataclass(frozen=True)
class DeleteBatch:
    """The keys one DELETE block removes, with their ordering values (``None`` when absent)."""

    record_keys: tuple[str | None, ...]
    partition_paths: tuple[str | None, ...]
    ordering_values: tuple[OrderingValue | None, ...]

    def __len__(self) -> int:
        return len(self.record_keys)


def decode_delete_block(block: LogBlock, *, where: str = "<log>") -> DeleteBatch:
    """DELETE content (version 3) -> :class:`DeleteBatch`; versions 1/2 (Kryo) are refused."""
    content = block.content
    if len(content) < 8:
        raise CorruptFileError(f"{where}: DELETE block at offset {block.offset} is truncated")
    version, length = struct.unpack_from(">ii", content, 0)
    if version in (1, 2):
        raise UnsupportedTableError(
            f"{where}: DELETE block at offset {block.offset} has content version {version} "
            "(Java/Kryo-serialized keys written by Hudi before 0.11), which only a JVM can read",
            hint="compact the table with Hudi so the old log blocks are merged into base files")
    _require_version(block, content, where)
    if length < 0 or 8 + length > len(content):
        raise CorruptFileError(f"{where}: DELETE block at offset {block.offset}: payload runs past the block")
    payload = content[8:8 + length]
    stream = io.BytesIO(payload)
    try:
        doc: Any = fastavro.schemaless_reader(stream, _DELETE_LIST_PARSED, None, return_record_name=True)
    except (ValueError, EOFError, IndexError, KeyError, struct.error) as exc:
        raise CorruptFileError(f"{where}: DELETE block at offset {block.offset}: {exc}") from exc
    if stream.tell() != len(payload):
        raise CorruptFileError(f"{where}: DELETE block at offset {block.offset}: "
                               f"{len(payload) - stream.tell()} bytes left after the delete list")
    records = doc["deleteRecordList"]
    return DeleteBatch(tuple(r["recordKey"] for r in records), tuple(r["partitionPath"] for r in records),
                       tuple(_ordering_from_avro(r["orderingVal"]) for r in records))


# ------------------------------------------------------------------------------------ command blocks


def rollback_target(block: LogBlock, *, where: str = "<log>") -> str:
    """Target instant of a rollback COMMAND block; other commands are refused (Hudi defines none)."""
    kind = block.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
    if kind != ROLLBACK_COMMAND:
        raise UnsupportedTableError(f"{where}: COMMAND block at offset {block.offset} has unknown command {kind!r}")
    target = block.header.get(HeaderKey.TARGET_INSTANT_TIME)
    if not target:
        raise CorruptFileError(f"{where}: rollback block at offset {block.offset} has no TARGET_INSTANT_TIME")
    return target


# ------------------------------------------------------------------------------------ encoding


def _header(instant_time: str, schema_text: str | None, extra: Mapping[int, str] | None) -> dict[int, str]:
    header: dict[int, str] = {HeaderKey.INSTANT_TIME: instant_time}
    if schema_text is not None:
        header[HeaderKey.SCHEMA] = schema_text
    header.update(extra or {})
    return header


def encode_avro_data_block(instant_time: str, schema_text: str, records: Iterable[Mapping[str, Any]], *,
                           extra_header: Mapping[int, str] | None = None) -> bytes:
    """A framed AVRO_DATA block (content version 3) holding ``records`` written with ``schema_text``."""
    parsed = _parsed_avro(schema_text)
    datums = []
    for rec in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, dict(rec))
        datums.append(buf.getvalue())
    content = b"".join([struct.pack(">ii", CONTENT_VERSION, len(datums)),
                        *(struct.pack(">i", len(d)) + d for d in datums)])
    return encode_block(BlockType.AVRO_DATA, _header(instant_time, schema_text, extra_header), content)


def encode_parquet_data_block(instant_time: str, schema_text: str, table: pa.Table, *,
                              extra_header: Mapping[int, str] | None = None, compression: str = "snappy") -> bytes:
    """A framed PARQUET_DATA block: ``table`` as one in-memory parquet file, compressed with ``compression``
    (Hudi's append handle takes ``hoodie.parquet.compression.codec`` for these blocks too)."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=compression)
    return encode_block(BlockType.PARQUET_DATA, _header(instant_time, schema_text, extra_header), buf.getvalue())


def encode_delete_block(instant_time: str, deletes: Iterable[tuple[str | None, str | None, OrderingValue | None]], *,
                        schema_text: str | None = None, extra_header: Mapping[int, str] | None = None) -> bytes:
    """A framed DELETE block (content version 3) of ``(record_key, partition_path, ordering_value)``."""
    doc = {"deleteRecordList": [
        {"recordKey": key, "partitionPath": part, "orderingVal": None if ov is None else ov.to_avro()}
        for key, part, ov in deletes]}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _DELETE_LIST_PARSED, doc)
    payload = buf.getvalue()
    content = struct.pack(">ii", CONTENT_VERSION, len(payload)) + payload
    return encode_block(BlockType.DELETE, _header(instant_time, schema_text, extra_header), content)


def encode_rollback_block(instant_time: str, target_instant_time: str) -> bytes:
    """A framed rollback COMMAND block voiding every block of ``target_instant_time`` in the file slice."""
    return encode_block(BlockType.COMMAND, {HeaderKey.INSTANT_TIME: instant_time,
                                            HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
                                            HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND}, b"")
