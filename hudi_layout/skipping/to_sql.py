"""Render a predicate as Spark SQL text with the same row semantics (for ``F.expr`` / ``DataFrame.filter``).

Literals are written so Spark reads them back exactly: doubles as ``CAST('<repr>' AS DOUBLE)`` (NaN and
infinities included), decimals as plain decimal literals, strings with backslash escapes (Spark's default
``escapedStringLiterals=false``; in predicates, strings holding a backslash or quote as the cast of their bytes,
which any parser setting reads the same), bytes as ``X'..'``, dates as ``DATE '...'`` and timestamps as
``TIMESTAMP '... +00:00'`` (naive = UTC, so the text does not depend on the session time zone). Dotted
column names become backquoted nested paths (`` `a`.`b` ``).

``IN ()`` / ``NOT IN ()`` (not valid SQL) are written as ``false`` / ``true``: Spark 4 evaluates ``c IN ()``
to FALSE for every row, a NULL ``c`` included (``spark.sql.legacy.nullInEmptyListBehavior=false``), as
:mod:`.oracle` defines them. An :class:`~.ir.Unsupported` leaf is written from
its ``sql`` text; without one it cannot be rendered and :class:`InvalidArgumentError` is raised.
"""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal
from typing import Any

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import (
    ComparisonPredicate,
    In,
    IsNotNull,
    IsNull,
    LeafPredicate,
    NotStartsWith,
    Predicate,
    Ref,
    SetPredicate,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.visitors import BooleanExpressionVisitor, visit


def column_sql(ref: Ref) -> str:
    """`` `a`.`b` `` for ``Ref("a.b")``."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in ref.name.split("."))


def literal_sql(value: Any) -> str:
    """A Spark SQL literal for a Python literal value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        if abs(value) >= 10**38:  # Spark reads an integer literal beyond BIGINT as a DECIMAL(p, 0), p <= 38
            raise InvalidArgumentError(f"integer literal {value} has no SQL form (more than 38 digits)")
        return str(value)
    if isinstance(value, float):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity") if math.isinf(value) \
            else repr(value)
        return f"CAST('{text}' AS DOUBLE)"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidArgumentError(f"decimal literal {value} has no SQL form")
        return f"{value:f}BD"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    if isinstance(value, _dt.datetime):  # an instant with its offset; a wall-clock time as Spark reads it
        if value.tzinfo is None:
            return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
        utc = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return f"TIMESTAMP '{utc.isoformat(sep=' ')}+00:00'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    raise InvalidArgumentError(f"no SQL form for literal {value!r}")


def _parser_proof_sql(value: Any) -> str:
    """:func:`literal_sql`, except that a string holding a backslash or a quote is written as the cast of its
    UTF-8 bytes (``CAST(X'..' AS STRING)``), which reads back the same whatever the session's
    ``spark.sql.parser.escapedStringLiterals``: with it on, Spark keeps the backslashes of ``'it\\'s'`` and the
    row filter of ``hl.read(path, [("s", "=", "it's")])`` matched nothing (session 29's probe)."""
    if isinstance(value, str) and ("\\" in value or "'" in value):
        return f"CAST(X'{value.encode().hex().upper()}' AS STRING)"
    return literal_sql(value)


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return _parser_proof_sql(escaped + "%")


class _ToSql(BooleanExpressionVisitor[str]):
    def visit_true(self) -> str:
        return "TRUE"

    def visit_false(self) -> str:
        return "FALSE"

    def visit_not(self, child: str) -> str:
        return f"(NOT {child})"

    def visit_and(self, left: str, right: str) -> str:
        return f"({left} AND {right})"

    def visit_or(self, left: str, right: str) -> str:
        return f"({left} OR {right})"

    def visit_unsupported(self, pred: Unsupported) -> str:
        if pred.sql is None:
            raise InvalidArgumentError(f"cannot write {pred} as SQL (its source was not SQL text)")
        return f"({pred.sql})"

    def visit_leaf(self, pred: LeafPredicate) -> str:
        col = column_sql(pred.term)
        if isinstance(pred, IsNull):
            return f"({col} IS NULL)"
        if isinstance(pred, IsNotNull):
            return f"({col} IS NOT NULL)"
        if isinstance(pred, SetPredicate):
            if not pred.literals:
                return "false" if isinstance(pred, In) else "true"
            values = ", ".join(_parser_proof_sql(v.value) for v in pred.literals)
            return f"({col} {'IN' if isinstance(pred, In) else 'NOT IN'} ({values}))"
        if isinstance(pred, (StartsWith, NotStartsWith)):
            prefix = pred.literal.value
            negate = "NOT " if isinstance(pred, NotStartsWith) else ""
            if isinstance(prefix, str):
                return f"({col} {negate}LIKE {_like_prefix(prefix)})"
            return f"({negate}startswith({col}, {literal_sql(prefix)}))"
        if isinstance(pred, ComparisonPredicate):
            return f"({col} {pred.op} {_parser_proof_sql(pred.literal.value)})"
        raise InvalidArgumentError(f"no SQL form for {pred!r}")


def predicate_to_sql(pred: Predicate) -> str:
    """Spark SQL text for ``pred`` (see the module docstring)."""
    return visit(pred, _ToSql())


__all__ = ["column_sql", "literal_sql", "predicate_to_sql"]
