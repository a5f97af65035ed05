"""Front end for Spark Python data source filters (``pyspark.sql.datasource.Filter`` subclasses).

The filters are matched by class name, so this module does not import pyspark. Each filter has an
``attribute`` tuple of name parts (``("a", "b")`` → column ``"a.b"``) and, except the null checks and
``Not``, a ``value``. ``StringEndsWith``, ``StringContains`` and any filter class we do not know become
:class:`~.ir.Unsupported` ("might match"). A list of filters is ANDed, as Spark pushes them.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    Not,
    NullSafeEq,
    Predicate,
    Ref,
    StartsWith,
    Unsupported,
    and_,
)

_COMPARISONS: dict[str, type[ComparisonPredicate]] = {
    "EqualTo": Eq, "EqualNullSafe": NullSafeEq, "GreaterThan": Gt, "GreaterThanOrEqual": GtEq,
    "LessThan": Lt, "LessThanOrEqual": LtEq, "StringStartsWith": StartsWith,
}


def _ref(attribute: Any) -> Ref:
    return Ref(".".join(attribute) if isinstance(attribute, (tuple, list)) else str(attribute))


def from_datasource_filter(f: Any) -> Predicate:
    """One data source filter as a predicate."""
    kind = type(f).__name__
    if kind == "Not":
        return Not(from_datasource_filter(f.child))
    if kind == "IsNull":
        return IsNull(_ref(f.attribute))
    if kind == "IsNotNull":
        return IsNotNull(_ref(f.attribute))
    try:
        if kind == "In":
            return In(_ref(f.attribute), tuple(Literal(v) for v in f.value))
        if kind in _COMPARISONS:
            return _COMPARISONS[kind](_ref(f.attribute), Literal(f.value))
    except (InvalidArgumentError, TypeError):
        pass  # a value we cannot type (array, struct…): unknown, not an error
    return Unsupported(repr(f))


def from_datasource_filters(filters: Iterable[Any], schema: pa.Schema | None = None) -> Predicate:
    """AND of the filters; with ``schema``, unknown columns raise :class:`InvalidArgumentError`."""
    pred = and_([from_datasource_filter(f) for f in filters])
    return bind(pred, schema) if schema is not None else pred
