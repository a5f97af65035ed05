"""IR construction, NOT push-down, balanced builders and column collection."""

from __future__ import annotations

import math

import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    And,
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
    NotEq,
    NotIn,
    NotStartsWith,
    NullSafeEq,
    Or,
    Ref,
    StartsWith,
    Unsupported,
    and_,
    between,
    mirrored,
    or_,
)
from hudi_layout.skipping.oracle import evaluate_row
from hudi_layout.skipping.visitors import referenced_columns, rewrite_not

A = Ref("a")


def test_nodes_are_frozen_and_hashable() -> None:
    pred = Eq(A, Literal(1))
    with pytest.raises(AttributeError):
        pred.term = Ref("b")  # type: ignore[misc]
    assert {pred, Eq(A, Literal(1))} == {pred}
    assert Eq(A, Literal(1)) != NotEq(A, Literal(1))


def test_literal_rejects_unsupported_types() -> None:
    with pytest.raises(InvalidArgumentError, match="list"):
        Literal([1, 2])


@pytest.mark.parametrize(("pred", "expected"), [
    (Not(Eq(A, Literal(1))), NotEq(A, Literal(1))),
    (Not(Lt(A, Literal(1))), GtEq(A, Literal(1))),
    (Not(LtEq(A, Literal(1))), Gt(A, Literal(1))),
    (Not(In(A, (Literal(1),))), NotIn(A, (Literal(1),))),
    (Not(IsNull(A)), IsNotNull(A)),
    (Not(StartsWith(A, Literal("x"))), NotStartsWith(A, Literal("x"))),
    (Not(NullSafeEq(A, Literal(None))), IsNotNull(A)),
    (Not(NullSafeEq(A, Literal(3))), Or(IsNull(A), NotEq(A, Literal(3)))),
    (Not(Not(Gt(A, Literal(1)))), Gt(A, Literal(1))),
    (Not(And(IsNull(A), Gt(A, Literal(1)))), Or(IsNotNull(A), LtEq(A, Literal(1)))),
    (Not(Or(IsNull(A), AlwaysFalse())), And(IsNotNull(A), AlwaysTrue())),
    (Not(Unsupported("f(a)")), Unsupported("NOT (f(a))")),
])
def test_rewrite_not(pred, expected) -> None:  # type: ignore[no-untyped-def]
    assert rewrite_not(pred) == expected


@pytest.mark.parametrize("value", [None, -1.0, 0.0, -0.0, 1.0, 2.0, math.nan, math.inf])
@pytest.mark.parametrize("kind", [Eq, NotEq, NullSafeEq, Lt, LtEq, Gt, GtEq])
@pytest.mark.parametrize("literal", [1.0, 0.0, math.nan, None])
def test_rewrite_not_is_exact_under_spark_semantics(kind, literal, value) -> None:  # type: ignore[no-untyped-def]
    """NOT(p) and its rewrite agree row by row, NULL and NaN included (Spark's total order for doubles)."""
    pred = Not(kind(A, Literal(literal)))
    row = {"a": value}
    assert evaluate_row(rewrite_not(pred), row) == evaluate_row(pred, row)


def test_between_is_sugar() -> None:
    assert between("a", 1, 5) == And(GtEq(A, Literal(1)), LtEq(A, Literal(5)))


def test_mirrored_operators() -> None:
    assert mirrored(Lt) is Gt and mirrored(GtEq) is LtEq and mirrored(Eq) is Eq
    with pytest.raises(InvalidArgumentError):
        mirrored(StartsWith)


def test_balanced_builder_keeps_depth_logarithmic() -> None:
    preds = [Eq(Ref(f"c{i}"), Literal(i)) for i in range(10_000)]
    tree = and_(preds)

    def depth(p) -> int:  # type: ignore[no-untyped-def]
        return 1 + max(depth(p.left), depth(p.right)) if isinstance(p, (And, Or)) else 1

    assert depth(tree) <= 15
    assert len(referenced_columns(tree)) == 10_000
    assert rewrite_not(Not(or_(preds))) is not None  # no RecursionError


def test_builders_fold_constants() -> None:
    assert and_() == AlwaysTrue() and or_() == AlwaysFalse()
    assert and_(IsNull(A), AlwaysFalse()) == AlwaysFalse()
    assert or_(IsNull(A), AlwaysTrue()) == AlwaysTrue()
    assert and_(IsNull(A), AlwaysTrue()) == IsNull(A)


def test_referenced_columns_ignores_unsupported() -> None:
    pred = Or(And(Eq(Ref("x"), Literal(1)), Unsupported("f(y)")), Not(IsNull(Ref("z"))))
    assert referenced_columns(pred) == {"x", "z"}
