"""Encode column_stats records from Arrow tables (the bulk write path of :class:`.mdt_writer.MetadataWriter`).

Input is the same shape :meth:`ColumnStatsIndex.load_column` returns — one table per column with
``partition, file_name, min, max, null_count, value_count`` (+ optional ``total_size``,
``total_uncompressed_size``), ``min``/``max`` typed as the column. Type conversions (dates, timestamps,
decimals → Avro primitives) are done per column with Arrow casts; the per-record Python work is only string
concatenation, which keeps a 400k-record commit to a few seconds.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.metadata import keys as K
from hudi_layout.metadata import stats_values as sv
from hudi_layout.metadata.records import (
    _CS_HEAD,
    _WRAPPER_INDEX,
    _bytes,
    _long,
    _opt_str,
    _str,
    _value_type_bytes,
)

REQUIRED = ("partition", "file_name", "min", "max", "null_count", "value_count")


def _unscaled_ints(arr: pa.Array, to_scale: int | None) -> list[int | None]:
    """Unscaled integers of a decimal128 array, optionally rescaled to ``to_scale`` (V1: 15)."""
    arr = arr.cast(pa.decimal128(38, arr.type.scale)) if arr.type.precision > 38 else arr
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    raw = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * 16:(arr.offset + len(arr)) * 16].tobytes()
    factor = 10 ** (to_scale - arr.type.scale) if to_scale is not None else 1
    valid = arr.is_valid().to_pylist()
    out: list[int | None] = []
    for i, ok in enumerate(valid):
        out.append(int.from_bytes(raw[16 * i:16 * i + 16], "little", signed=True) * factor if ok else None)
    return out


def _primitives(arr: pa.Array, info: sv.TypeInfo, index_version: int) -> tuple[str, list[Any]]:
    """(wrapper record name, Avro primitive values with None for nulls) for one min or max column."""
    vt = info.ordinal
    if vt == sv.ValueType.DECIMAL:
        v1 = index_version < 2
        ints = _unscaled_ints(arr, sv.V1_DECIMAL_SCALE if v1 else None)
        return ("DecimalWrapper" if v1 else "BytesWrapper",
                [None if x is None else sv.unscaled_to_bytes(x) for x in ints])
    if vt in (sv.ValueType.DATE, sv.ValueType.TIME_MILLIS):
        values = arr.cast(pa.int32()).to_pylist()
    elif vt in (sv.ValueType.TIME_MICROS, sv.ValueType.TIMESTAMP_MILLIS, sv.ValueType.TIMESTAMP_MICROS,
                sv.ValueType.TIMESTAMP_NANOS, sv.ValueType.LOCAL_TIMESTAMP_MILLIS,
                sv.ValueType.LOCAL_TIMESTAMP_MICROS, sv.ValueType.LOCAL_TIMESTAMP_NANOS):
        values = arr.cast(pa.int64()).to_pylist()
    elif vt == sv.ValueType.FIXED:
        values = [None if x is None else bytes(x) for x in arr.to_pylist()]
    else:
        values = arr.to_pylist()
    sample = next((x for x in values if x is not None), None)
    if sample is None:
        return "", values
    # the wrapper for this type: ask the scalar encoder once (epoch ints pass through unchanged)
    wrapped = sv.encode(sample, info, index_version)
    assert wrapped is not None
    return wrapped.wrapper, values


def _encoder(wrapper: str) -> Callable[[Any], bytes]:
    if not wrapper:
        return lambda _v: b"\x00"
    head = _long(_WRAPPER_INDEX[wrapper])
    if wrapper == "BooleanWrapper":
        return lambda v: b"\x00" if v is None else head + (b"\x01" if v else b"\x00")
    if wrapper == "FloatWrapper":
        return lambda v: b"\x00" if v is None else head + struct.pack("<f", v)
    if wrapper == "DoubleWrapper":
        return lambda v: b"\x00" if v is None else head + struct.pack("<d", v)
    if wrapper == "StringWrapper":
        return lambda v: b"\x00" if v is None else head + _str(v)
    if wrapper in ("BytesWrapper", "DecimalWrapper"):
        return lambda v: b"\x00" if v is None else head + _bytes(v)
    return lambda v: b"\x00" if v is None else head + _long(int(v))


def _ints(table: pa.Table, name: str) -> list[int]:
    if name not in table.column_names:
        return [0] * table.num_rows
    return [0 if x is None else int(x) for x in table.column(name).to_pylist()]


def encode_column_table(column: str, table: pa.Table, *, index_version: int, table_version: int
                        ) -> dict[str, bytes]:
    """``{record key: Avro value}`` for one column's stats table; empty when the type is not indexable."""
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        raise InvalidArgumentError(f"column_stats table for {column!r} lacks columns {missing}")
    if table.num_rows == 0:
        return {}
    typ = table.schema.field("min").type
    info = sv.cached_value_type_for_arrow(typ)
    if info is None:
        return {}
    mins = table.column("min").combine_chunks()
    maxs = table.column("max").combine_chunks().cast(typ)
    w_min, v_min = _primitives(mins, info, index_version)
    w_max, v_max = _primitives(maxs, info, index_version)
    enc_min, enc_max = _encoder(w_min), _encoder(w_max)
    vt_bytes = _value_type_bytes(info if index_version >= 2 else None) if table_version >= 9 else b""
    tail = vt_bytes + b"\x00\x00"
    col_bytes = _opt_str(column)
    parts = table.column("partition").to_pylist()
    names = [n.rsplit("/", 1)[-1] for n in table.column("file_name").to_pylist()]
    ncs, vcs = _ints(table, "null_count"), _ints(table, "value_count")
    tss, tus = _ints(table, "total_size"), _ints(table, "total_uncompressed_size")
    out: dict[str, bytes] = {}
    prefix = K.column_partition_prefix
    fid = K.file_index_id
    for i, name in enumerate(names):
        part = parts[i] or ""
        out[prefix(column, part) + fid(name)] = b"".join((
            _CS_HEAD, _opt_str(name), col_bytes, enc_min(v_min[i]), enc_max(v_max[i]),
            b"\x02", _long(vcs[i]), b"\x02", _long(ncs[i]), b"\x02", _long(tss[i]), b"\x02", _long(tus[i]),
            b"\x00\x00", tail))
    return out
