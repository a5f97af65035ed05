"""Bring a literal and a column's statistics to one comparable Arrow type (Spark's implicit widening).

:func:`comparison_operands` answers "cast the min/max arrays to this type and compare with this scalar",
or ``None`` when the pair is not comparable here (the evaluator then answers "might match"; evaluation
never raises on a type mismatch).

Widening follows Spark: int vs double → double (a monotone, possibly lossy cast, as Spark does),
int vs decimal and decimal vs decimal → a decimal wide enough for both (exact), decimal vs double →
double, date vs timestamp → timestamp, a string literal vs a date/timestamp column → the string parsed as
date/timestamp. A naive datetime left here is UTC: a read has already resolved wall-clock times in its
session's zone (:func:`~.bind.bind`, :mod:`.ir`).
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_MAX_DECIMAL128 = 38
_MAX_DECIMAL256 = 76


@dataclass(frozen=True, slots=True)
class Operands:
    """Cast the statistics to ``cmp_type`` and compare with ``scalar``.

    ``lossy`` allows a monotone lossy cast (int → double, as Spark does); bounds stay bounds.
    """

    cmp_type: pa.DataType
    scalar: pa.Scalar
    lossy: bool = False


def cast_stats(values: pa.Array, ops: Operands) -> pa.Array | None:
    """``values`` cast to ``ops.cmp_type``, or ``None`` when the cast fails (→ unknown)."""
    if values.type == ops.cmp_type:
        return values
    try:
        return pc.cast(values, ops.cmp_type, safe=not ops.lossy)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def comparison_operands(col_type: pa.DataType, value: Any) -> Operands | None:
    """How to compare a column of ``col_type`` with the Python literal ``value``; ``None`` = not here."""
    if value is None:
        return None
    try:
        return _operands(col_type, value)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, OverflowError):
        return None


def _operands(t: pa.DataType, v: Any) -> Operands | None:
    if pa.types.is_boolean(t):
        return Operands(t, pa.scalar(v, pa.bool_())) if isinstance(v, bool) else None
    if isinstance(v, bool):
        return None
    if pa.types.is_integer(t):
        return _integer_operands(t, v)
    if pa.types.is_floating(t):
        if isinstance(v, (int, float, Decimal)) and not _is_nan(v):
            return Operands(pa.float64(), pa.scalar(float(v), pa.float64()))
        return None
    if pa.types.is_decimal(t):
        return _decimal_operands(t, v)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return Operands(t, pa.scalar(v, t)) if isinstance(v, str) else None
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        raw = v.encode() if isinstance(v, str) else v
        return Operands(pa.binary(), pa.scalar(raw, pa.binary())) if isinstance(raw, bytes) else None
    if pa.types.is_date(t):
        return _date_operands(v)
    if pa.types.is_timestamp(t):
        return _timestamp_operands(t, v)
    return None


def _is_nan(v: Any) -> bool:
    return (isinstance(v, float) and math.isnan(v)) or (isinstance(v, Decimal) and v.is_nan())


def _integer_operands(t: pa.DataType, v: Any) -> Operands | None:
    if isinstance(v, int):
        if pa.types.is_uint64(t) or not -(2**63) <= v < 2**63:
            return None
        return Operands(pa.int64(), pa.scalar(v, pa.int64()))
    if isinstance(v, float):
        return None if math.isnan(v) else Operands(pa.float64(), pa.scalar(v, pa.float64()), lossy=True)
    if isinstance(v, Decimal):
        return _decimal_common(20, 0, v)
    return None


def _decimal_operands(t: pa.DataType, v: Any) -> Operands | None:
    if isinstance(v, float):
        return None if math.isnan(v) else Operands(pa.float64(), pa.scalar(v, pa.float64()), lossy=True)
    if isinstance(v, int):
        v = Decimal(v)
    if not isinstance(v, Decimal):
        return None
    return _decimal_common(t.precision - t.scale, t.scale, v)


def _decimal_common(col_int_digits: int, col_scale: int, v: Decimal) -> Operands | None:
    """A decimal type holding both the column's values and ``v`` exactly."""
    if not v.is_finite():
        return None
    sign, digits, exponent = v.as_tuple()
    assert isinstance(exponent, int)
    lit_scale = max(0, -exponent)
    lit_int_digits = max(1, len(digits) + exponent)
    scale = max(col_scale, lit_scale)
    precision = max(col_int_digits, lit_int_digits) + scale
    if precision > _MAX_DECIMAL256:
        return None
    wide = precision > _MAX_DECIMAL128
    dtype = pa.decimal256(precision, scale) if wide else pa.decimal128(precision, scale)
    return Operands(dtype, pa.scalar(v, dtype))


def _date_operands(v: Any) -> Operands | None:
    if isinstance(v, str):
        v = _parse_date_or_timestamp(v, want_date=True)
    if isinstance(v, _dt.datetime):
        return Operands(pa.timestamp("us"), pa.scalar(_naive_utc(v), pa.timestamp("us")))
    if isinstance(v, _dt.date):
        return Operands(pa.date32(), pa.scalar(v, pa.date32()))
    return None


def _timestamp_operands(t: pa.TimestampType, v: Any) -> Operands | None:
    if isinstance(v, str):
        v = _parse_date_or_timestamp(v, want_date=False)
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        v = _dt.datetime(v.year, v.month, v.day)
    if not isinstance(v, _dt.datetime):
        return None
    naive = _naive_utc(v)
    if t.tz is not None:
        return Operands(t, pa.scalar(naive.replace(tzinfo=_dt.timezone.utc), t))
    return Operands(t, pa.scalar(naive, t))


def _naive_utc(v: _dt.datetime) -> _dt.datetime:
    """A naive datetime is already UTC; an aware one is converted to UTC and made naive."""
    if v.tzinfo is None:
        return v
    return v.astimezone(_dt.timezone.utc).replace(tzinfo=None)


def parse_timestamp_text(text: str) -> _dt.datetime | None:
    """Spark's string -> timestamp cast, for the ISO forms (naive without an offset; ``None`` when it does not
    parse)."""
    v = _parse_date_or_timestamp(text, want_date=False)
    return v if isinstance(v, _dt.datetime) else None


def _parse_date_or_timestamp(text: str, *, want_date: bool) -> _dt.date | _dt.datetime | None:
    """Spark's string → date / timestamp cast, for the ISO forms (``None`` when it does not parse)."""
    text = text.strip()
    try:
        if want_date:
            return _dt.date.fromisoformat(text[:10]) if len(text) == 10 or text[10:11] in (" ", "T") else None
        return _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
