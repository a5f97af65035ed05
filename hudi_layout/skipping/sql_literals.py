"""Literal helpers for :mod:`.sql` and :mod:`.spark_column`: number text, typed literals, CAST, LIKE."""

from __future__ import annotations

import datetime as _dt
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import Eq, Literal, Predicate, Ref, StartsWith
from hudi_layout.skipping.sql_lexer import NUMBER


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def parse_number(text: str) -> int | float | Decimal:
    m = NUMBER.fullmatch(text)
    assert m is not None
    body, exponent, suffix = m.group(1), m.group(2) or "", (m.group(3) or "").upper()
    if suffix == "BD":
        return Decimal(body + exponent)
    if suffix in ("D", "F") or exponent:
        return float(body + exponent)
    if "." in body:
        return Decimal(body)
    if suffix in ("L", "S", "Y"):
        return int(body)
    return int(body)


def typed_literal(kind: str, text: str) -> _dt.date | _dt.datetime:
    """``DATE '...'`` / ``TIMESTAMP '...'``; a timestamp with an offset becomes naive UTC (see :mod:`.ir`)."""
    try:
        if kind == "DATE":
            return _dt.date.fromisoformat(text.strip())
        value = _dt.datetime.fromisoformat(text.strip().replace("z", "Z"))
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return value
    except ValueError as e:
        raise InvalidArgumentError(f"invalid {kind} literal {text!r}") from e


NO_CAST = object()
_INT_TYPES = {"TINYINT", "BYTE", "SMALLINT", "SHORT", "INT", "INTEGER", "BIGINT", "LONG"}


def cast_literal(v: Any, type_name: str, args: list[int]) -> Any:
    """Fold ``CAST(literal AS type)`` (``type_name`` upper-case SQL, ``args`` its parameters).

    Returns ``NO_CAST`` when we do not know how (the caller makes the expression Unsupported).
    """
    if v is None:
        return None
    try:
        if type_name in _INT_TYPES:
            return int(v.strip()) if isinstance(v, str) else int(v)
        if type_name in ("FLOAT", "REAL", "DOUBLE"):
            return float(v)
        if type_name in ("DECIMAL", "DEC", "NUMERIC"):
            scale = args[1] if len(args) > 1 else 0
            return Decimal(str(v).strip()).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
        if type_name in ("STRING", "VARCHAR", "CHAR"):
            return v.isoformat() if isinstance(v, _dt.date) else str(v)
        if type_name == "DATE":
            if isinstance(v, str):
                return typed_literal("DATE", v)
            return v.date() if isinstance(v, _dt.datetime) else v
        if type_name in ("TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"):
            return typed_literal("TIMESTAMP", v) if isinstance(v, str) else v
        if type_name in ("BOOLEAN", "BOOL") and isinstance(v, str) and v.strip().lower() in ("true", "false"):
            return v.strip().lower() == "true"
        if type_name == "BINARY" and isinstance(v, str):
            return v.encode()
    except (ValueError, TypeError, InvalidOperation, InvalidArgumentError):
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
