"""A predicate as a union of boxes: per column, the bounds every matching row must satisfy.

:func:`predicate_boxes` over-approximates the rows a predicate can match by a list of boxes; a box maps
some of the given columns to a conjunction of :class:`Bound` (``>=``, ``>``, ``<=``, ``<``, ``=`` or a
``LIKE`` prefix). Every row the predicate is TRUE for satisfies all bounds of at least one box. An empty
list means no row can match; ``[{}]`` means "no constraint known". Curve-region pruning
(:mod:`hudi_layout.scan`) and the workload-aware layout (:mod:`hudi_layout.clustering.qdtree`) both start
from it; they turn bounds into code intervals with :func:`hudi_layout.curves.region.constraint_codes`.

Why it is safe to loosen: a leaf we cannot express (``!=``, ``NOT IN``, ``IS NULL``, a function of a
column, a literal of another type) becomes "no constraint"; ``A AND B`` with too many box combinations
keeps only the side with fewer boxes (a superset of the conjunction); ``A OR B`` with too many boxes becomes
"no constraint". Every bound is null-rejecting: a NULL in the column makes the leaf NULL, never TRUE.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudi_layout.skipping.coerce import comparison_operands
from hudi_layout.skipping.ir import (
    ComparisonPredicate,
    Eq,
    Gt,
    GtEq,
    In,
    LeafPredicate,
    Lt,
    LtEq,
    NullSafeEq,
    Predicate,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.visitors import BooleanExpressionVisitor, rewrite_not, visit

#: boxes kept for one predicate (an IN list or an OR of ranges); beyond it the predicate is unconstrained
MAX_BOXES = 32

_OPS: dict[type[ComparisonPredicate], str] = {Eq: "=", NullSafeEq: "=", Lt: "<", LtEq: "<=", Gt: ">", GtEq: ">="}


@dataclass(frozen=True)
class Bound:
    """``column <op> value`` where ``value`` is compared as ``value_type`` (``None`` for a ``prefix``)."""

    op: str
    value: Any
    value_type: pa.DataType | None = None

    def __str__(self) -> str:
        return f"{self.op} {self.value!r}"


Box = Mapping[str, tuple[Bound, ...]]


def predicate_boxes(pred: Predicate, columns: Collection[str], schema: pa.Schema,
                    max_boxes: int = MAX_BOXES) -> list[dict[str, tuple[Bound, ...]]]:
    """Boxes over ``columns`` covering every row ``pred`` can be TRUE for (see the module docstring).

    ``pred`` should be bound to ``schema`` (:func:`~hudi_layout.skipping.bind.bind`); columns are matched
    exactly, then case-insensitively.
    """
    types: dict[str, pa.DataType] = {}
    for name in columns:
        if name in schema.names:
            types[name] = schema.field(name).type
    folded = {n.lower(): n for n in types}
    return visit(rewrite_not(pred), _BoxVisitor(types, folded, max_boxes))


def _product(left: list[dict[str, tuple[Bound, ...]]], right: list[dict[str, tuple[Bound, ...]]]
             ) -> list[dict[str, tuple[Bound, ...]]]:
    out = []
    for a in left:
        for b in right:
            merged = dict(a)
            for col, bounds in b.items():
                merged[col] = merged.get(col, ()) + bounds
            out.append(merged)
    return out


class _BoxVisitor(BooleanExpressionVisitor[list[dict[str, tuple[Bound, ...]]]]):
    def __init__(self, types: dict[str, pa.DataType], folded: dict[str, str], max_boxes: int) -> None:
        self.types = types
        self.folded = folded
        self.max_boxes = max_boxes

    def visit_true(self) -> list[dict[str, tuple[Bound, ...]]]:
        return [{}]

    def visit_false(self) -> list[dict[str, tuple[Bound, ...]]]:
        return []

    def visit_not(self, child: list[dict[str, tuple[Bound, ...]]]) -> list[dict[str, tuple[Bound, ...]]]:
        raise TypeError("NOT must be rewritten away first (rewrite_not)")

    def visit_and(self, left: list[dict[str, tuple[Bound, ...]]], right: list[dict[str, tuple[Bound, ...]]]
                  ) -> list[dict[str, tuple[Bound, ...]]]:
        if len(left) * len(right) > self.max_boxes:
            return left if len(left) <= len(right) else right
        return _product(left, right)

    def visit_or(self, left: list[dict[str, tuple[Bound, ...]]], right: list[dict[str, tuple[Bound, ...]]]
                 ) -> list[dict[str, tuple[Bound, ...]]]:
        if len(left) + len(right) > self.max_boxes or any(not b for b in left) or any(not b for b in right):
            return [{}]  # too many boxes, or one side unconstrained (it absorbs the other)
        return left + right

    def visit_unsupported(self, pred: Unsupported) -> list[dict[str, tuple[Bound, ...]]]:
        return [{}]

    def visit_leaf(self, pred: LeafPredicate) -> list[dict[str, tuple[Bound, ...]]]:
        name = pred.term.name
        name = name if name in self.types else self.folded.get(name.lower(), "")
        if not name:
            return [{}]
        col_type = self.types[name]
        if isinstance(pred, In):
            values = [lit.value for lit in pred.literals if lit.value is not None]
            if not values:
                return []  # c IN (NULL, ...) is never TRUE
            if len(values) > self.max_boxes:
                return [{}]
            return [_one(name, _bound("=", v, col_type)) for v in values]
        if isinstance(pred, StartsWith):
            v = pred.literal.value
            if isinstance(v, (str, bytes)) and v:
                return [_one(name, Bound("prefix", v))]
            return [{}]
        if isinstance(pred, ComparisonPredicate) and type(pred) in _OPS:
            if pred.literal.is_null:
                # c <=> NULL is c IS NULL (no bound); any other comparison with NULL is never TRUE
                return [{}] if isinstance(pred, NullSafeEq) else []
            bound = _bound(_OPS[type(pred)], pred.literal.value, col_type)
            return [_one(name, bound)]
        return [{}]


def _one(name: str, bound: Bound | None) -> dict[str, tuple[Bound, ...]]:
    """A box with one bound (or none: unconstrained)."""
    return {name: (bound,)} if bound is not None else {}


def _bound(op: str, value: Any, col_type: pa.DataType) -> Bound | None:
    """The bound with the literal brought to the type the comparison runs in (Spark's widening)."""
    ops = comparison_operands(col_type, value)
    if ops is None:
        return None
    return Bound(op, ops.scalar.as_py(), ops.cmp_type)
