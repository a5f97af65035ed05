"""Check a predicate's columns against a table schema (the front ends' optional ``schema=`` argument).

Binding resolves each column name to the schema's spelling (exact match first, then a unique
case-insensitive one, as Spark does by default) and raises :class:`InvalidArgumentError` naming the
first unknown column. Literal conversion happens at evaluation time (:mod:`.coerce`), where a literal
that cannot be compared only disables skipping for that leaf.

One rule of Spark's analyzer is applied here, because it changes which rows match: Spark's type coercion
(``DecimalPrecision``, integral vs decimal literal) turns ``<``, ``<=``, ``>``, ``>=`` between an integral
column and a decimal literal outside the range of a 64-bit integer into the constant TRUE or FALSE, *NULLs
included*: ``l > -9223372036854775808.25`` keeps the rows whose ``l`` is NULL (Spark 4.3, checked). Skipping a
file of NULLs for it would drop rows Spark returns, so the leaf becomes :class:`AlwaysTrue` /
:class:`AlwaysFalse` as in Spark (docs/read-semantics.md).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any, cast

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    Gt,
    GtEq,
    LeafPredicate,
    Lt,
    LtEq,
    Predicate,
    Ref,
)
from hudi_layout.skipping.visitors import LeafRewriter, visit


def _field_names(schema: pa.Schema) -> list[str]:
    """Top-level names plus dotted paths of nested struct fields."""
    names: list[str] = []

    def walk(prefix: str, field: pa.Field) -> None:
        name = f"{prefix}{field.name}"
        names.append(name)
        if pa.types.is_struct(field.type):
            for child in field.type:
                walk(f"{name}.", child)

    for f in schema:
        walk("", f)
    return names


def resolve_column(name: str, schema: pa.Schema) -> str:
    """The schema's spelling of ``name``; raises :class:`InvalidArgumentError` if it is not there."""
    names = _field_names(schema)
    if name in names:
        return name
    folded = [n for n in names if n.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    if folded:
        raise InvalidArgumentError(f"column {name!r} is ambiguous: {folded}")
    raise InvalidArgumentError(f"unknown column {name!r}", hint=f"columns: {', '.join(names)}")


class _BindVisitor(LeafRewriter):
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def visit_leaf(self, pred: LeafPredicate) -> Predicate:
        name = resolve_column(pred.term.name, self.schema)
        folded = spark_integral_decimal_fold(pred, _field_type(name, self.schema))
        if folded is not None:
            return folded
        # every concrete leaf is a dataclass with a ``term`` field
        return pred if name == pred.term.name else dataclasses.replace(cast(Any, pred), term=Ref(name))


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def spark_integral_decimal_fold(pred: LeafPredicate, column_type: pa.DataType | None) -> Predicate | None:
    """Spark's constant for ``integral_column <op> decimal_literal`` when the literal lies outside the 64-bit
    range (see the module docstring), else ``None``. An integer literal outside that range is a decimal
    literal in Spark SQL too."""
    # Spark's integral types; a uint64 column reaches Spark as decimal(20, 0), which it does not fold
    if column_type is None or not pa.types.is_integer(column_type) or pa.types.is_uint64(column_type):
        return None
    if not isinstance(pred, (Lt, LtEq, Gt, GtEq)):
        return None
    value = pred.literal.value
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        return None
    below, above = value < _LONG_MIN, value > _LONG_MAX
    if not below and not above:
        return None
    upward = isinstance(pred, (Gt, GtEq))  # column > literal: TRUE below the range, FALSE above it
    return AlwaysTrue() if upward == below else AlwaysFalse()


def _field_type(name: str, schema: pa.Schema) -> pa.DataType | None:
    """The type of a top-level column or a dotted struct field path, if the schema has it."""
    if name in schema.names:
        return schema.field(name).type
    parts = name.split(".")
    if parts[0] not in schema.names:
        return None
    t: pa.DataType = schema.field(parts[0]).type
    for part in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            return None
        t = t.field(part).type
    return t



def bind(pred: Predicate, schema: pa.Schema) -> Predicate:
    """``pred`` with every column resolved against ``schema`` (see the module docstring)."""
    return visit(pred, _BindVisitor(schema))
