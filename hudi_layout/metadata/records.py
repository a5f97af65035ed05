"""``HoodieMetadataRecord`` values: typed builders, a hand-rolled Avro encoder, fast + generic decoders.

Spec: docs/hudi-format.md §5.3–§5.5. Values are Avro *binary datums* (no container) of the writer schema in
the HFile file info / log block header. We write the schema from :mod:`.schema`; on read we use a hand-written
decoder when the writer schema is structurally one of our known forms (v8 / v9) — ~10× faster than
``fastavro.schemaless_reader`` — and fall back to fastavro for anything else.

Record keys are always taken from the HFile cell, never from the Avro ``key`` field (written as ``""``).
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro

from hudi_layout.errors import CorruptFileError
from hudi_layout.metadata import keys as K
from hudi_layout.metadata import stats_values as sv
from hudi_layout.metadata.schema import WRAPPER_NAMES, metadata_record_schema, parsed_schema_from_text
from hudi_layout.metadata.stats_values import StatValue, TypeInfo

TYPE_ALL_PARTITIONS = 1
TYPE_FILES = 2
TYPE_COLUMN_STATS = 3
TYPE_BLOOM_FILTER = 4
TYPE_RECORD_INDEX = 5
TYPE_PARTITION_STATS = 6

_WRAPPER_INDEX = {name: i + 1 for i, name in enumerate(WRAPPER_NAMES)}  # union branch (0 = null)
_WRAPPER_INDEX["ArrayWrapper"] = len(WRAPPER_NAMES) + 1
_INDEX_WRAPPER = {i: n for n, i in _WRAPPER_INDEX.items()}


@dataclass(frozen=True)
class FileInfo:
    size: int
    is_deleted: bool = False


@dataclass(frozen=True)
class ColumnStat:
    """Decoded ``HoodieMetadataColumnStats`` (wire form: min/max are still wrapped)."""

    file_name: str | None
    column: str | None
    min: StatValue | None
    max: StatValue | None
    value_count: int | None
    null_count: int | None
    total_size: int | None = None
    total_uncompressed_size: int | None = None
    is_deleted: bool = False
    is_tight_bound: bool = False
    value_type: TypeInfo | None = None


@dataclass(frozen=True)
class MetadataRecord:
    """One MDT record. ``files`` for types 1/2, ``column_stats`` for 3/6; ``raw`` for anything else."""

    key: str
    type: int
    files: dict[str, FileInfo] | None = None
    column_stats: ColumnStat | None = None
    raw: Any = None


# ---------------------------------------------------------------------------------------------- builders


def files_partition_record(partition: str, files: dict[str, int], deleted: list[str] | tuple[str, ...] = ()
                           ) -> MetadataRecord:
    """``files`` record for one data partition: new/changed files with sizes + tombstones."""
    entries = {name: FileInfo(int(size), False) for name, size in files.items()}
    for name in deleted:
        entries[name] = FileInfo(0, True)
    return MetadataRecord(K.files_key(partition), TYPE_FILES, files=entries)


def all_partitions_record(partitions: list[str] | tuple[str, ...], deleted: list[str] | tuple[str, ...] = ()
                          ) -> MetadataRecord:
    entries = {K.partition_identifier(p): FileInfo(0, False) for p in partitions}
    for p in deleted:
        entries[K.partition_identifier(p)] = FileInfo(0, True)
    return MetadataRecord(K.ALL_PARTITIONS_KEY, TYPE_ALL_PARTITIONS, files=entries)


def column_stats_record(partition: str, file_name: str, column: str, min: Any, max: Any,
                        null_count: int, value_count: int, total_size: int = 0,
                        total_uncompressed_size: int = 0, arrow_type: Any = None, index_version: int = 2,
                        *, value_type: TypeInfo | None = None) -> MetadataRecord | None:
    """column_stats record from *typed* min/max. Returns ``None`` when the type is not indexable.

    ``arrow_type`` (a ``pa.DataType``) decides the encoding; pass ``value_type`` instead to skip inference.
    ``index_version`` 2 = V2 (v9 tables, writes ``valueType``), 1 = V1 (v8 tables).
    """
    info = value_type or (sv.cached_value_type_for_arrow(arrow_type) if arrow_type is not None else None)
    if info is None or (index_version < 2 and arrow_type is not None and not sv.v1_holds_exactly(arrow_type)):
        return None
    stat = ColumnStat(
        file_name=file_name, column=column,
        min=sv.encode(min, info, index_version), max=sv.encode(max, info, index_version),
        value_count=int(value_count), null_count=int(null_count), total_size=int(total_size),
        total_uncompressed_size=int(total_uncompressed_size), is_deleted=False, is_tight_bound=False,
        value_type=info if index_version >= 2 else None,
    )
    key = K.column_stats_key(column, partition, file_name)
    return MetadataRecord(key, TYPE_COLUMN_STATS, column_stats=stat)


def column_stats_tombstone(partition: str, file_name: str, column: str, index_version: int = 2
                           ) -> MetadataRecord:
    stat = ColumnStat(file_name=file_name, column=column, min=None, max=None, value_count=None,
                      null_count=None, is_deleted=True,
                      value_type=TypeInfo(1) if index_version >= 2 else None)
    key = K.column_stats_key(column, partition, file_name)
    return MetadataRecord(key, TYPE_COLUMN_STATS, column_stats=stat)


# ---------------------------------------------------------------------------------------------- encoder


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [_varint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF) for n in range(-8192, 8192)]


def _long(n: int) -> bytes:
    if -8192 <= n < 8192:
        return _SMALL[n + 8192]
    return _varint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _bytes(b: bytes) -> bytes:
    return _long(len(b)) + b


def _str(s: str) -> bytes:
    return _bytes(s.encode("utf-8"))


@lru_cache(maxsize=1 << 17)
def _opt_str(s: str | None) -> bytes:
    return b"\x00" if s is None else b"\x02" + _str(s)


@lru_cache(maxsize=256)
def _value_type_bytes(vt: TypeInfo | None) -> bytes:
    return b"\x00" if vt is None else b"\x02" + _long(vt.ordinal) + _opt_str(vt.additional_info)


def _opt_long(n: int | None) -> bytes:
    return b"\x00" if n is None else b"\x02" + _long(n)


def _wrapped(v: StatValue | None) -> bytes:
    if v is None:
        return b"\x00"
    idx = _WRAPPER_INDEX[v.wrapper]
    head = _long(idx)
    w, x = v.wrapper, v.value
    if w == "BooleanWrapper":
        return head + (b"\x01" if x else b"\x00")
    if w in ("IntWrapper", "LongWrapper", "DateWrapper", "TimeMicrosWrapper", "TimestampMicrosWrapper",
             "LocalDateWrapper"):
        return head + _long(int(x))
    if w == "FloatWrapper":
        return head + struct.pack("<f", x)
    if w == "DoubleWrapper":
        return head + struct.pack("<d", x)
    if w == "StringWrapper":
        return head + _str(x)
    if w in ("BytesWrapper", "DecimalWrapper"):
        return head + _bytes(bytes(x))
    raise ValueError(f"cannot encode wrapper {w}")


_CS_HEAD = b"\x00" * 5 + b"\x00" + b"\x06" + b"\x00\x00\x02"  # meta nulls, key "", type 3, no files/bloom


def encode_column_stats_value(file_name: str, column: str, mn: StatValue | None, mx: StatValue | None,
                              value_count: int, null_count: int, total_size: int,
                              total_uncompressed_size: int,
                              value_type: TypeInfo | None, table_version: int = 9) -> bytes:
    """Fast path of :func:`encode_record` for one live column_stats record (no intermediate objects)."""
    tail = _value_type_bytes(value_type) if table_version >= 9 else b""
    return b"".join((_CS_HEAD, _opt_str(file_name), _opt_str(column), _wrapped(mn), _wrapped(mx),
                     b"\x02", _long(value_count), b"\x02", _long(null_count), b"\x02", _long(total_size),
                     b"\x02", _long(total_uncompressed_size), b"\x00\x00", tail, b"\x00\x00"))


def encode_record(rec: MetadataRecord, table_version: int = 9) -> bytes:
    """Avro binary datum of :func:`.schema.metadata_record_schema` (``key`` is ``""``, as in Hudi 1.x)."""
    out = [b"\x00" * 5, _str(""), _long(rec.type)]
    if rec.files is not None:
        out.append(b"\x02")
        if rec.files:
            out.append(_long(len(rec.files)))
            for name, fi in rec.files.items():
                out.append(_str(name) + _long(fi.size) + (b"\x01" if fi.is_deleted else b"\x00"))
        out.append(b"\x00")
    else:
        out.append(b"\x00")
    out.append(b"\x00")  # BloomFilterMetadata
    cs = rec.column_stats
    if cs is not None:
        out.append(b"\x02")
        out.append(_opt_str(cs.file_name) + _opt_str(cs.column) + _wrapped(cs.min) + _wrapped(cs.max))
        out.append(_opt_long(cs.value_count) + _opt_long(cs.null_count) + _opt_long(cs.total_size)
                   + _opt_long(cs.total_uncompressed_size))
        out.append(b"\x01" if cs.is_deleted else b"\x00")
        out.append(b"\x01" if cs.is_tight_bound else b"\x00")
        if table_version >= 9:
            out.append(_value_type_bytes(cs.value_type))
    else:
        out.append(b"\x00")
    out.append(b"\x00\x00")  # recordIndexMetadata, SecondaryIndexMetadata
    return b"".join(out)


# ---------------------------------------------------------------------------------------------- decoders


def _strip(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: _strip(v) for k, v in o.items() if k not in ("doc", "default", "avro.java.string")}
    if isinstance(o, list):
        return [_strip(x) for x in o]
    return o


@lru_cache(maxsize=16)
def schema_form(schema_text: str) -> int | None:
    """9 / 8 when the writer schema is structurally our v9 / v8 form (fast path allowed), else None."""
    try:
        got = _strip(json.loads(schema_text))
    except ValueError:
        return None
    for version in (9, 8):
        if got == _strip(metadata_record_schema(version)):
            return version
    return None


class _Buf:
    __slots__ = ("b", "p")

    def __init__(self, b: bytes, p: int = 0) -> None:
        self.b, self.p = b, p


def _rd_long(buf: _Buf) -> int:
    b, p = buf.b, buf.p
    c = b[p]
    p += 1
    n = c & 0x7F
    shift = 7
    while c & 0x80:
        c = b[p]
        p += 1
        n |= (c & 0x7F) << shift
        shift += 7
    buf.p = p
    return (n >> 1) ^ -(n & 1)


def _rd_bytes(buf: _Buf) -> bytes:
    n = _rd_long(buf)
    p = buf.p
    buf.p = p + n
    return buf.b[p:p + n]


def _rd_opt_str(buf: _Buf) -> str | None:
    return _rd_bytes(buf).decode("utf-8") if _rd_long(buf) else None


def _rd_opt_long(buf: _Buf) -> int | None:
    return _rd_long(buf) if _rd_long(buf) else None


def _rd_wrapped(buf: _Buf) -> StatValue | None:
    idx = _rd_long(buf)
    if idx == 0:
        return None
    w = _INDEX_WRAPPER.get(idx)
    if w is None or w == "ArrayWrapper":
        raise _FallBack()
    if w == "BooleanWrapper":
        v: Any = buf.b[buf.p] != 0
        buf.p += 1
    elif w == "FloatWrapper":
        v = struct.unpack_from("<f", buf.b, buf.p)[0]
        buf.p += 4
    elif w == "DoubleWrapper":
        v = struct.unpack_from("<d", buf.b, buf.p)[0]
        buf.p += 8
    elif w == "StringWrapper":
        v = _rd_bytes(buf).decode("utf-8")
    elif w in ("BytesWrapper", "DecimalWrapper"):
        v = _rd_bytes(buf)
    else:
        v = _rd_long(buf)
    return StatValue(w, v)


class _FallBack(Exception):
    pass


def _fast_decode(key: str, data: bytes, form: int) -> MetadataRecord:
    buf = _Buf(data)
    for _ in range(5):
        if _rd_long(buf):
            _rd_bytes(buf)
    _rd_bytes(buf)  # key field (ignored)
    rtype = _rd_long(buf)
    files: dict[str, FileInfo] | None = None
    if _rd_long(buf):
        files = {}
        while True:
            n = _rd_long(buf)
            if n == 0:
                break
            if n < 0:
                n = -n
                _rd_long(buf)
            for _ in range(n):
                name = _rd_bytes(buf).decode("utf-8")
                size = _rd_long(buf)
                deleted = buf.b[buf.p] != 0
                buf.p += 1
                files[name] = FileInfo(size, deleted)
    if _rd_long(buf):
        raise _FallBack()  # bloom filter record: not ours to fast-decode
    cs: ColumnStat | None = None
    if _rd_long(buf):
        fname = _rd_opt_str(buf)
        col = _rd_opt_str(buf)
        mn = _rd_wrapped(buf)
        mx = _rd_wrapped(buf)
        vc = _rd_opt_long(buf)
        nc = _rd_opt_long(buf)
        ts = _rd_opt_long(buf)
        tus = _rd_opt_long(buf)
        deleted = buf.b[buf.p] != 0
        tight = buf.b[buf.p + 1] != 0
        buf.p += 2
        vt = None
        if form >= 9 and _rd_long(buf):
            vt = TypeInfo(_rd_long(buf), _rd_opt_str(buf))
        cs = ColumnStat(fname, col, mn, mx, vc, nc, ts, tus, deleted, tight, vt)
    return MetadataRecord(key, rtype, files=files, column_stats=cs)


def _from_fastavro(key: str, d: dict[str, Any]) -> MetadataRecord:
    files = None
    if d.get("filesystemMetadata") is not None:
        files = {k: FileInfo(v["size"], v["isDeleted"]) for k, v in d["filesystemMetadata"].items()}
    cs = None
    c = d.get("ColumnStatsMetadata")
    if c is not None:
        def wrapped(x: Any) -> StatValue | None:
            if x is None:
                return None
            name, val = x
            return StatValue(name.rsplit(".", 1)[-1], val["value"] if "value" in val else val)

        vt = c.get("valueType")
        cs = ColumnStat(c.get("fileName"), c.get("columnName"), wrapped(c.get("minValue")),
                        wrapped(c.get("maxValue")), c.get("valueCount"), c.get("nullCount"),
                        c.get("totalSize"), c.get("totalUncompressedSize"), bool(c.get("isDeleted")),
                        bool(c.get("isTightBound", False)),
                        TypeInfo(vt["typeOrdinal"], vt.get("additionalInfo")) if vt else None)
    return MetadataRecord(key, d["type"], files=files, column_stats=cs, raw=d)


def decode_record(key: str, data: bytes, schema_text: str) -> MetadataRecord:
    """Decode one value with the writer schema (JSON text); key comes from the HFile cell."""
    form = schema_form(schema_text)
    if form is not None:
        try:
            return _fast_decode(key, data, form)
        except (_FallBack, IndexError):
            pass
    try:
        d = fastavro.schemaless_reader(io.BytesIO(data), parsed_schema_from_text(schema_text), None,
                                       return_record_name=True, return_record_name_override=True)
    except Exception as e:  # noqa: BLE001 - fastavro raises many types on garbage
        raise CorruptFileError(f"cannot decode metadata record for key {key!r}: {e}") from e
    if not isinstance(d, dict):
        raise CorruptFileError(f"metadata record for key {key!r} is not an Avro record")
    return _from_fastavro(key, d)
