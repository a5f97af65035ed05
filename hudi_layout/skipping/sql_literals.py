"""Literal helpers for :mod:`.sql` and :mod:`.spark_column`: number text, typed literals, CAST, LIKE."""

from __future__ import annotations

import datetime as _dt
import re
import sys
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import numpy as np

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.decimals import EXACT, quantized
from hudi_layout.skipping.ir import Eq, Literal, Predicate, Ref, StartsWith
from hudi_layout.skipping.sql_lexer import NUMBER


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


_INT_RANGES = {"Y": 8, "S": 16, "L": 64}
_MAX_DECIMAL_PRECISION = 38
_FLOAT32_MAX = Decimal(float(np.finfo(np.float32).max))
_FLOAT64_MAX = Decimal(sys.float_info.max)


def parse_number(text: str, *, negative: bool = False, exponent_decimal: bool = False) -> int | float | Decimal:
    """A numeric literal as Spark's parser reads it (``negative``: a minus sign written before it;
    ``exponent_decimal``: ``spark.sql.legacy.exponentLiteralAsDecimal.enabled``, an exponent makes a DECIMAL).

    Spark's types: an integer is INT, else BIGINT, else DECIMAL(p, 0); ``Y``/``S``/``L`` force TINYINT /
    SMALLINT / BIGINT; ``1.5`` is DECIMAL; an exponent or ``D`` makes a DOUBLE, ``F`` a FLOAT (the nearest
    float32, correctly rounded from the text); ``BD`` a DECIMAL. Literals Spark refuses to parse (out of their
    type's range, a decimal precision above 38) raise :class:`InvalidArgumentError` with Spark's reason, so a
    plan never gives a meaning to a query Spark would reject.
    """
    m = NUMBER.fullmatch(text)
    assert m is not None
    body, exponent, suffix = m.group(1), m.group(2) or "", (m.group(3) or "").upper()
    sign = "-" if negative else ""
    exact = Decimal(sign + body + exponent)
    shown = sign + text
    if suffix in _INT_RANGES or (not suffix and not exponent and "." not in body):
        if suffix and ("." in body or exponent):
            raise InvalidArgumentError(f"invalid numeric literal {shown}")
        value = int(exact)
        bits = _INT_RANGES.get(suffix, 64)
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            if suffix:
                raise _out_of_range(shown, {"Y": "tinyint", "S": "smallint", "L": "bigint"}[suffix])
            _check_decimal_precision(exact, shown)  # an unsuffixed integer beyond BIGINT is a DECIMAL(p, 0)
        return value
    if suffix == "F":
        if abs(exact) > _FLOAT32_MAX:
            raise _out_of_range(shown, "float")
        return nearest_float32(exact)
    if suffix == "D" or exponent and suffix != "BD" and not (exponent_decimal and not suffix):
        if abs(exact) > _FLOAT64_MAX:
            raise _out_of_range(shown, "double")
        return float(exact)
    _check_decimal_precision(exact, shown)
    return exact


def _out_of_range(text: str, type_name: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"numeric literal {text} is outside the range of type {type_name}",
                                hint="Spark refuses this literal too; write a value the type can hold")


def _check_decimal_precision(value: Decimal, text: str) -> None:
    _sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    integral = max(0, len(digits) + exponent)
    if max(1, integral + scale) > _MAX_DECIMAL_PRECISION:
        raise InvalidArgumentError(f"decimal literal {text} needs precision {integral + scale}, more than 38",
                                   hint="Spark refuses this literal too")


def nearest_float32(value: Decimal | float) -> float:
    """The float32 nearest to ``value`` (ties to even), as Java's ``Float.parseFloat`` / ``(float) double``
    give it; NaN and infinities pass through. Going through a double first could round twice."""
    if isinstance(value, float):
        with np.errstate(over="ignore"):
            return float(np.float32(value))
    if not value.is_finite():
        return float(value)
    with np.errstate(over="ignore"):
        guess = np.float32(float(value))
    if not np.isfinite(guess):
        return float(guess)
    best, best_err = guess, abs(EXACT.subtract(Decimal(float(guess)), value))
    for toward in (np.float32(np.inf), np.float32(-np.inf)):
        cand = np.nextafter(guess, toward)
        if not np.isfinite(cand):
            continue
        err = abs(EXACT.subtract(Decimal(float(cand)), value))
        if err < best_err or (err == best_err and int(cand.view(np.uint32)) % 2 == 0):
            best, best_err = cand, err
    return float(best)


def typed_literal(kind: str, text: str) -> _dt.date | _dt.datetime:
    """``DATE '...'`` / ``TIMESTAMP '...'``: a timestamp with an offset is that instant (an aware ``datetime``),
    one without stays naive, a wall-clock time the read resolves in the session time zone (see :mod:`.ir`).
    ``TIMESTAMP_NTZ '...'`` is always the wall-clock time written: Spark drops an offset there (until session 29
    it was read as an instant, and ``ntz <= TIMESTAMP_NTZ '2020-03-08 05:00:00+01:00'`` skipped every file in
    Los Angeles; a probe)."""
    try:
        if kind == "DATE":
            return _dt.date.fromisoformat(text.strip())
        value = _dt.datetime.fromisoformat(text.strip().replace("z", "Z"))
        return value.replace(tzinfo=None) if kind == "TIMESTAMP_NTZ" else value
    except ValueError as e:
        raise InvalidArgumentError(f"invalid {kind} literal {text!r}") from e


NO_CAST = object()
_INT_BITS = {"TINYINT": 8, "BYTE": 8, "SMALLINT": 16, "SHORT": 16, "INT": 32, "INTEGER": 32, "BIGINT": 64,
             "LONG": 64}
_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")


def cast_literal(v: Any, type_name: str, args: list[int]) -> Any:
    """Fold ``CAST(literal AS type)`` (``type_name`` upper-case SQL, ``args`` its parameters) as Spark does.

    Returns ``NO_CAST`` when we do not know how, or when Spark's answer depends on the session (an integral
    overflow, text that is no number, a decimal that does not fit: an error in ANSI mode, something else
    without): the caller then makes the expression Unsupported, which never skips a file.
    """
    if v is None:
        return None
    try:
        if type_name in _INT_BITS:
            if isinstance(v, str):
                if not _INT_TEXT.fullmatch(v):
                    return NO_CAST
                value = int(v.strip())
            elif isinstance(v, bool):
                value = int(v)
            elif isinstance(v, (float, Decimal)):
                value = int(v)  # truncates toward zero, as Spark; NaN / infinities raise
            elif isinstance(v, int):
                value = v
            else:
                return NO_CAST
            bits = _INT_BITS[type_name]
            return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else NO_CAST
        if type_name in ("FLOAT", "REAL"):
            if isinstance(v, str):
                return nearest_float32(Decimal(v.strip()))
            return nearest_float32(v if isinstance(v, (float, Decimal)) else Decimal(v))
        if type_name == "DOUBLE":
            return float(Decimal(v.strip())) if isinstance(v, str) else float(v)
        if type_name in ("DECIMAL", "DEC", "NUMERIC"):
            precision = args[0] if args else 10
            scale = args[1] if len(args) > 1 else 0
            rounded = quantized(Decimal(str(v).strip()), scale, ROUND_HALF_UP)
            integral = rounded.adjusted() + 1 if rounded != 0 else 0
            return rounded if rounded.is_finite() and integral <= precision - scale else NO_CAST
        if type_name in ("STRING", "VARCHAR", "CHAR"):
            if isinstance(v, _dt.datetime):  # Spark renders it in the session time zone
                return NO_CAST
            # Spark's text of the value; until session 29 Python's str() was taken, which differs for booleans
            # ('True'), bytes ("b'..'") and floats ('1e+20' for Spark's '1.0E20'): files were skipped (a probe)
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, bytes):  # the bytes as UTF-8; invalid UTF-8 is not folded (ValueError below)
                return v.decode("utf-8")
            if isinstance(v, (float, Decimal)):  # Java's number formatting: not folded
                return NO_CAST
            return v.isoformat() if isinstance(v, _dt.date) else str(v)
        if type_name == "DATE":
            if isinstance(v, str):
                return typed_literal("DATE", v)
            if isinstance(v, _dt.datetime):  # a wall-clock time's date; an instant's depends on the session
                return v.date() if v.tzinfo is None else NO_CAST
            return v
        if type_name == "TIMESTAMP_NTZ":
            if isinstance(v, str):
                return typed_literal("TIMESTAMP_NTZ", v)
            # an instant's wall-clock time depends on the session's zone: not folded
            return NO_CAST if isinstance(v, _dt.datetime) and v.tzinfo is not None else v
        if type_name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return typed_literal("TIMESTAMP", v) if isinstance(v, str) else v
        if type_name in ("BOOLEAN", "BOOL") and isinstance(v, str) and v.strip().lower() in ("true", "false"):
            return v.strip().lower() == "true"
        if type_name == "BINARY" and isinstance(v, str):
            return v.encode()
    except (ValueError, TypeError, OverflowError, InvalidOperation, InvalidArgumentError):
        return NO_CAST
    return NO_CAST


def like_predicate(column: Ref, pattern: str, escape: str) -> Predicate | None:
    """``LIKE`` as ``=`` (no wildcard) or ``StartsWith`` (one trailing ``%``); ``None`` otherwise."""
    prefix: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern):
            prefix.append(pattern[i + 1])
            i += 2
            continue
        if c == "_" or (c == "%" and i != len(pattern) - 1):
            return None
        if c == "%":
            return StartsWith(column, Literal("".join(prefix)))
        prefix.append(c)
        i += 1
    return Eq(column, Literal("".join(prefix)))
