"""Front end for hudi-rs style filter tuples: ``[("col", "op", value), ...]``, ANDed together.

Operators (case-insensitive): ``=``/``==``, ``!=``/``<>``, ``<``, ``<=``, ``>``, ``>=``, ``<=>``,
``IN``, ``NOT IN`` (value: a list/tuple/set), ``IS NULL``, ``IS NOT NULL`` (value ignored, may be
omitted: ``("col", "IS NULL")``), ``STARTS WITH``. Values are typed Python values (unlike hudi-rs,
which keeps strings).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.bind import bind
from hudi_layout.skipping.ir import (
    ComparisonPredicate,
    Eq,
    Gt,
    GtEq,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Lt,
    LtEq,
    NotEq,
    NotIn,
    NullSafeEq,
    Predicate,
    Ref,
    StartsWith,
    and_,
)

_COMPARISONS: dict[str, type[ComparisonPredicate]] = {
    "=": Eq, "==": Eq, "!=": NotEq, "<>": NotEq, "<": Lt, "<=": LtEq, ">": Gt, ">=": GtEq,
    "<=>": NullSafeEq, "STARTS WITH": StartsWith,
}


def from_tuple(filter_: Sequence[Any]) -> Predicate:
    """One ``(column, op, value)`` (or ``(column, "IS [NOT] NULL")``) tuple as a predicate."""
    if len(filter_) not in (2, 3) or not isinstance(filter_[0], str) or not isinstance(filter_[1], str):
        raise InvalidArgumentError(f"a filter must be (column, op, value), got {filter_!r}")
    column, op = Ref(filter_[0]), " ".join(filter_[1].upper().split())
    value = filter_[2] if len(filter_) == 3 else None
    if op == "IS NULL":
        return IsNull(column)
    if op == "IS NOT NULL":
        return IsNotNull(column)
    if len(filter_) != 3:
        raise InvalidArgumentError(f"operator {filter_[1]!r} needs a value: {filter_!r}")
    if op in ("IN", "NOT IN"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InvalidArgumentError(f"{op} needs a list of values, got {value!r}")
        literals = tuple(Literal(v) for v in value)
        return In(column, literals) if op == "IN" else NotIn(column, literals)
    kind = _COMPARISONS.get(op)
    if kind is None:
        ops = ", ".join(sorted(_COMPARISONS))
        raise InvalidArgumentError(f"unknown filter operator {filter_[1]!r}",
                                   hint=f"one of {ops}, IN, NOT IN, IS [NOT] NULL")
    return kind(column, Literal(value))


def from_tuples(filters: Iterable[Sequence[Any]], schema: pa.Schema | None = None) -> Predicate:
    """AND of the filter tuples; with ``schema``, unknown columns raise :class:`InvalidArgumentError`."""
    pred = and_([from_tuple(f) for f in filters])
    return bind(pred, schema) if schema is not None else pred
