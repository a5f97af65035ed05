"""Column-stats min/max values ↔ the Avro wrapper union of ``HoodieMetadataColumnStats`` (§5.5).

Two encodings:

* **V2** (table version 9, ``valueType`` present): the wrapper only carries the *primitive* (IntWrapper,
  LongWrapper, BytesWrapper, StringWrapper, ...); the logical type is ``valueType.typeOrdinal`` (Java enum
  ``org.apache.hudi.stats.ValueType``) plus ``additionalInfo`` (``"p,s"`` for decimals).
* **V1** (table version 8, no ``valueType``): the wrapper *is* the type: DateWrapper (days),
  TimestampMicrosWrapper (micros), DecimalWrapper (Avro ``decimal(30,15)`` bytes), plain wrappers otherwise.

A :class:`StatValue` is what goes on the wire: ``(wrapper name, primitive value)``. Decoding returns typed
Python values (``datetime.date``, ``decimal.Decimal``, ints for timestamps in the unit of the type, ...) and
:func:`arrow_type_of` says which Arrow type the decoded values of a column have.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import pyarrow as pa

from hudi_layout.format.decimals import from_unscaled, to_unscaled


class ValueType(IntEnum):
    """Ordinals of ``org.apache.hudi.stats.ValueType`` (stored as ``valueType.typeOrdinal``)."""

    V1 = 0
    NULL = 1
    BOOLEAN = 2
    INT = 3
    LONG = 4
    FLOAT = 5
    DOUBLE = 6
    STRING = 7
    BYTES = 8
    FIXED = 9
    DECIMAL = 10
    UUID = 11
    DATE = 12
    TIME_MILLIS = 13
    TIME_MICROS = 14
    TIMESTAMP_MILLIS = 15
    TIMESTAMP_MICROS = 16
    TIMESTAMP_NANOS = 17
    LOCAL_TIMESTAMP_MILLIS = 18
    LOCAL_TIMESTAMP_MICROS = 19
    LOCAL_TIMESTAMP_NANOS = 20


# Which primitive wrapper each V2 value type is stored in (ValueType.java's primitiveWrapperType).
V2_WRAPPER: dict[ValueType, str] = {
    ValueType.BOOLEAN: "BooleanWrapper", ValueType.INT: "IntWrapper", ValueType.LONG: "LongWrapper",
    ValueType.FLOAT: "FloatWrapper", ValueType.DOUBLE: "DoubleWrapper", ValueType.STRING: "StringWrapper",
    ValueType.BYTES: "BytesWrapper", ValueType.FIXED: "BytesWrapper", ValueType.DECIMAL: "BytesWrapper",
    ValueType.UUID: "StringWrapper", ValueType.DATE: "IntWrapper", ValueType.TIME_MILLIS: "IntWrapper",
    ValueType.TIME_MICROS: "LongWrapper", ValueType.TIMESTAMP_MILLIS: "LongWrapper",
    ValueType.TIMESTAMP_MICROS: "LongWrapper", ValueType.TIMESTAMP_NANOS: "LongWrapper",
    ValueType.LOCAL_TIMESTAMP_MILLIS: "LongWrapper", ValueType.LOCAL_TIMESTAMP_MICROS: "LongWrapper",
    ValueType.LOCAL_TIMESTAMP_NANOS: "LongWrapper",
}
#: the same, keyed by plain ints (lookups by ordinal without building enum members)
_V2_WRAPPER_BY_ORDINAL: dict[int, str] = {int(k): v for k, v in V2_WRAPPER.items()}

V1_DECIMAL_SCALE = 15  # DecimalWrapper is decimal(30,15)
V1_DECIMAL_PRECISION = 30


def v1_holds_exactly(t: pa.DataType) -> bool:
    """Whether the V1 form (v8 tables) holds every value of column type ``t`` exactly: a decimal's statistics are
    a ``DecimalWrapper`` of type decimal(30, 15), which rounds more than 15 decimals and cannot hold more than 15
    integral digits (``decimal(38, 18)``, Spark's common wide type). Such a column gets no V1 records from our
    writers, and V1 records of it (Hudi's) are not used for skipping (session 30: a probe found the rounding)."""
    return not pa.types.is_decimal(t) or (t.scale <= V1_DECIMAL_SCALE
                                          and t.precision - t.scale <= V1_DECIMAL_PRECISION - V1_DECIMAL_SCALE)
_EPOCH_DATE = _dt.date(1970, 1, 1)


@dataclass(frozen=True)
class TypeInfo:
    """``HoodieValueTypeInfo``: ordinal + optional extra (``"precision,scale"`` for DECIMAL)."""

    ordinal: int
    additional_info: str | None = None


@dataclass(frozen=True)
class StatValue:
    """One wrapped min or max as written: wrapper record name + primitive Avro value."""

    wrapper: str
    value: Any


# ---------------------------------------------------------------------------------------------- types


def value_type_for_arrow(t: pa.DataType) -> TypeInfo | None:
    """V2 value type for an Arrow column type; ``None`` = unsupported (no stats record for the column)."""
    if pa.types.is_boolean(t):
        return TypeInfo(ValueType.BOOLEAN)
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) \
            or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return TypeInfo(ValueType.INT)
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return TypeInfo(ValueType.LONG)
    if pa.types.is_float32(t):
        return TypeInfo(ValueType.FLOAT)
    if pa.types.is_float64(t):
        return TypeInfo(ValueType.DOUBLE)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return TypeInfo(ValueType.STRING)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return TypeInfo(ValueType.BYTES)
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return TypeInfo(ValueType.FIXED)
    if pa.types.is_decimal(t):
        return TypeInfo(ValueType.DECIMAL, f"{t.precision},{t.scale}")
    if pa.types.is_date32(t):
        return TypeInfo(ValueType.DATE)
    if pa.types.is_time32(t) and t.unit == "ms":
        return TypeInfo(ValueType.TIME_MILLIS)
    if pa.types.is_time64(t) and t.unit == "us":
        return TypeInfo(ValueType.TIME_MICROS)
    if pa.types.is_timestamp(t):
        utc = t.tz is not None
        unit = {"ms": "MILLIS", "us": "MICROS", "ns": "NANOS"}.get(t.unit)
        if unit is None:
            return None
        return TypeInfo(ValueType[("TIMESTAMP_" if utc else "LOCAL_TIMESTAMP_") + unit])
    return None


_VT_CACHE: dict[pa.DataType, TypeInfo | None] = {}


def cached_value_type_for_arrow(t: pa.DataType) -> TypeInfo | None:
    try:
        return _VT_CACHE[t]
    except KeyError:
        info = _VT_CACHE[t] = value_type_for_arrow(t)
        return info


def arrow_type_of(info: TypeInfo | None, wrapper: str | None = None) -> pa.DataType:
    """Arrow type of decoded values for a V2 type info, or (V1) for the wrapper name."""
    if info is None or info.ordinal == ValueType.V1:
        return _V1_ARROW.get(wrapper or "", pa.null())
    vt = ValueType(info.ordinal)
    if vt == ValueType.DECIMAL:
        p, s = _precision_scale(info)
        return pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
    return _V2_ARROW[vt]


_V2_ARROW: dict[ValueType, pa.DataType] = {
    ValueType.NULL: pa.null(), ValueType.BOOLEAN: pa.bool_(), ValueType.INT: pa.int32(),
    ValueType.LONG: pa.int64(), ValueType.FLOAT: pa.float32(), ValueType.DOUBLE: pa.float64(),
    ValueType.STRING: pa.string(), ValueType.BYTES: pa.binary(), ValueType.FIXED: pa.binary(),
    ValueType.UUID: pa.string(), ValueType.DATE: pa.date32(), ValueType.TIME_MILLIS: pa.time32("ms"),
    ValueType.TIME_MICROS: pa.time64("us"), ValueType.TIMESTAMP_MILLIS: pa.timestamp("ms", tz="UTC"),
    ValueType.TIMESTAMP_MICROS: pa.timestamp("us", tz="UTC"),
    ValueType.TIMESTAMP_NANOS: pa.timestamp("ns", tz="UTC"),
    ValueType.LOCAL_TIMESTAMP_MILLIS: pa.timestamp("ms"),
    ValueType.LOCAL_TIMESTAMP_MICROS: pa.timestamp("us"),
    ValueType.LOCAL_TIMESTAMP_NANOS: pa.timestamp("ns"),
}
_V1_ARROW: dict[str, pa.DataType] = {
    "BooleanWrapper": pa.bool_(), "IntWrapper": pa.int32(), "LongWrapper": pa.int64(),
    "FloatWrapper": pa.float32(), "DoubleWrapper": pa.float64(), "BytesWrapper": pa.binary(),
    "StringWrapper": pa.string(), "DateWrapper": pa.date32(), "LocalDateWrapper": pa.date32(),
    "DecimalWrapper": pa.decimal128(30, V1_DECIMAL_SCALE), "TimeMicrosWrapper": pa.time64("us"),
    "TimestampMicrosWrapper": pa.timestamp("us", tz="UTC"),
}


def _precision_scale(info: TypeInfo) -> tuple[int, int]:
    try:
        p, s = (info.additional_info or "").split(",")
        return int(p), int(s)
    except ValueError:
        return 38, 0


# ------------------------------------------------------------------------------------------- encoding


def unscaled_to_bytes(unscaled: int) -> bytes:
    """Minimal big-endian two's complement (Java ``BigInteger.toByteArray``)."""
    n = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(n, "big", signed=True)


def _to_int(value: Any, unit_per_sec: int) -> int:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - _dt.datetime(1970, 1, 1)
        seconds = delta.days * 86400 + delta.seconds
        return seconds * unit_per_sec + delta.microseconds * unit_per_sec // 1_000_000
    if isinstance(value, _dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return micros * unit_per_sec // 1_000_000
    if isinstance(value, _dt.date):
        return (value - _EPOCH_DATE).days
    return int(value)  # already a number (e.g. pandas/numpy scalar or raw epoch value)


def _unscaled(value: Any, scale: int) -> int:
    return to_unscaled(value, scale)


def encode_v2(value: Any, info: TypeInfo) -> StatValue | None:
    """Wrap a typed min/max for V2; ``None`` value → ``None`` (Avro null branch)."""
    if value is None:
        return None
    vt = info.ordinal  # plain int compares equal to the IntEnum members (no enum construction per value)
    if vt == ValueType.STRING:
        if not isinstance(value, str):  # str(bytes) would store its repr: a wrong bound, never a valid one
            raise _mismatch(value, info)
        return StatValue("StringWrapper", value)
    if vt == ValueType.LONG or vt == ValueType.INT:
        if isinstance(value, float):  # int() would truncate a double bound
            raise _mismatch(value, info)
        return StatValue(_V2_WRAPPER_BY_ORDINAL[vt], int(value))
    wrapper = _V2_WRAPPER_BY_ORDINAL[vt]
    if vt == ValueType.DECIMAL:
        return StatValue(wrapper, unscaled_to_bytes(_unscaled(value, _precision_scale(info)[1])))
    if vt == ValueType.DATE:
        return StatValue(wrapper, _to_int(value, 1))
    if vt in (ValueType.TIME_MILLIS, ValueType.TIMESTAMP_MILLIS, ValueType.LOCAL_TIMESTAMP_MILLIS):
        return StatValue(wrapper, _to_int(value, 1000))
    if vt in (ValueType.TIME_MICROS, ValueType.TIMESTAMP_MICROS, ValueType.LOCAL_TIMESTAMP_MICROS):
        return StatValue(wrapper, _to_int(value, 1_000_000))
    if vt in (ValueType.TIMESTAMP_NANOS, ValueType.LOCAL_TIMESTAMP_NANOS):
        return StatValue(wrapper, _to_int(value, 1_000_000_000))
    if vt == ValueType.BOOLEAN:
        return StatValue(wrapper, bool(value))
    if vt in (ValueType.INT, ValueType.LONG):
        return StatValue(wrapper, int(value))
    if vt in (ValueType.FLOAT, ValueType.DOUBLE):
        return StatValue(wrapper, float(value))
    if vt == ValueType.UUID:  # strings returned above
        return StatValue(wrapper, str(value))
    if isinstance(value, str):  # bytes(str) raises a bare TypeError deep in a commit
        raise _mismatch(value, info)
    return StatValue(wrapper, bytes(value))


def _mismatch(value: Any, info: TypeInfo) -> TypeError:
    """A statistic whose Python type does not fit the column's type: the file it describes was written in
    another schema than the one the commit types its statistics by. Failing the commit is the only safe
    answer (a bound converted anyway could make readers skip files that hold matching rows)."""
    return TypeError(f"column_stats value {value!r:.80} ({type(value).__name__}) does not fit the column's type "
                     f"(Hudi value type {info.ordinal}): the written files disagree on the schema")


def encode_v1(value: Any, info: TypeInfo) -> StatValue | None:
    """Wrap a typed min/max for V1 (v8 tables): the wrapper name carries the logical type."""
    if value is None:
        return None
    vt = ValueType(info.ordinal)
    if vt == ValueType.DECIMAL:
        return StatValue("DecimalWrapper", unscaled_to_bytes(_unscaled(value, V1_DECIMAL_SCALE)))
    if vt == ValueType.DATE:
        return StatValue("DateWrapper", _to_int(value, 1))
    if vt in (ValueType.TIMESTAMP_MICROS, ValueType.LOCAL_TIMESTAMP_MICROS):
        return StatValue("TimestampMicrosWrapper", _to_int(value, 1_000_000))
    if vt == ValueType.TIME_MICROS:
        return StatValue("TimeMicrosWrapper", _to_int(value, 1_000_000))
    if vt == ValueType.TIME_MILLIS:
        return StatValue("IntWrapper", _to_int(value, 1000))
    if vt in (ValueType.TIMESTAMP_MILLIS, ValueType.LOCAL_TIMESTAMP_MILLIS):
        return StatValue("LongWrapper", _to_int(value, 1000))
    if vt in (ValueType.TIMESTAMP_NANOS, ValueType.LOCAL_TIMESTAMP_NANOS):
        return StatValue("LongWrapper", _to_int(value, 1_000_000_000))
    return encode_v2(value, info)


def encode(value: Any, info: TypeInfo, index_version: int) -> StatValue | None:
    """``index_version`` 2 = V2 (v9 tables), 1 = V1 (v8 tables)."""
    return encode_v2(value, info) if index_version >= 2 else encode_v1(value, info)


# ------------------------------------------------------------------------------------------- decoding


def bytes_to_unscaled(raw: bytes) -> int:
    return int.from_bytes(raw, "big", signed=True) if raw else 0


def decode(wrapper: str | None, value: Any, info: TypeInfo | None) -> Any:
    """Typed Python value from a wire (wrapper, primitive) pair. Returns what pyarrow accepts for
    :func:`arrow_type_of`: ints for dates/times/timestamps are converted to date / Decimal where needed."""
    if wrapper is None or value is None:
        return None
    if info is None or info.ordinal == ValueType.V1:
        if wrapper in ("DateWrapper", "LocalDateWrapper"):
            return _EPOCH_DATE + _dt.timedelta(days=value)
        if wrapper == "DecimalWrapper":
            if isinstance(value, decimal.Decimal):  # fastavro applied the logical type
                return value
            return from_unscaled(bytes_to_unscaled(value), V1_DECIMAL_SCALE)
        return value
    vt = ValueType(info.ordinal)
    if vt == ValueType.DECIMAL:
        _, scale = _precision_scale(info)
        return from_unscaled(bytes_to_unscaled(value), scale)
    if vt == ValueType.DATE:
        return _EPOCH_DATE + _dt.timedelta(days=value)
    return value
