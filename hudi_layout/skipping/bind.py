"""Check a predicate's columns against a table schema (the front ends' optional ``schema=`` argument).

Binding resolves each column name to the schema's spelling (exact match first, then a unique
case-insensitive one, as Spark does by default) and raises :class:`InvalidArgumentError` naming the
first unknown column. Literal conversion happens at evaluation time (:mod:`.coerce`), where a literal
that cannot be compared only disables skipping for that leaf.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import (
    LeafPredicate,
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
        # every concrete leaf is a dataclass with a ``term`` field
        return pred if name == pred.term.name else dataclasses.replace(cast(Any, pred), term=Ref(name))



def bind(pred: Predicate, schema: pa.Schema) -> Predicate:
    """``pred`` with every column resolved against ``schema`` (see the module docstring)."""
    return visit(pred, _BindVisitor(schema))
