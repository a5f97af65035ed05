"""One visitor kind for every transformation of the IR, and the small transformations built on it.

:class:`BooleanExpressionVisitor` is visited post-order by :func:`visit`: children first, then the node
with its children's results. Leaves go to :meth:`~BooleanExpressionVisitor.visit_leaf`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import singledispatch
from typing import Generic, TypeVar

from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    LeafPredicate,
    Not,
    Or,
    Predicate,
    Unsupported,
)

T = TypeVar("T")


class BooleanExpressionVisitor(ABC, Generic[T]):
    """Post-order visitor over a predicate tree."""

    @abstractmethod
    def visit_true(self) -> T:
        """Result for :class:`AlwaysTrue`."""

    @abstractmethod
    def visit_false(self) -> T:
        """Result for :class:`AlwaysFalse`."""

    @abstractmethod
    def visit_not(self, child: T) -> T:
        """Result for ``NOT child`` given the child's result."""

    @abstractmethod
    def visit_and(self, left: T, right: T) -> T:
        """Result for ``left AND right``."""

    @abstractmethod
    def visit_or(self, left: T, right: T) -> T:
        """Result for ``left OR right``."""

    @abstractmethod
    def visit_leaf(self, pred: LeafPredicate) -> T:
        """Result for a predicate on one column."""

    @abstractmethod
    def visit_unsupported(self, pred: Unsupported) -> T:
        """Result for a leaf we cannot reason about."""


class LeafRewriter(BooleanExpressionVisitor[Predicate]):
    """Rebuilds the tree unchanged except for what :meth:`visit_leaf` returns (bind, literal rewrites)."""

    def visit_true(self) -> Predicate:
        return AlwaysTrue()

    def visit_false(self) -> Predicate:
        return AlwaysFalse()

    def visit_not(self, child: Predicate) -> Predicate:
        return Not(child)

    def visit_and(self, left: Predicate, right: Predicate) -> Predicate:
        return And(left, right)

    def visit_or(self, left: Predicate, right: Predicate) -> Predicate:
        return Or(left, right)

    def visit_unsupported(self, pred: Unsupported) -> Predicate:
        return pred


@singledispatch
def visit(pred: Predicate, visitor: BooleanExpressionVisitor[T]) -> T:
    """Apply ``visitor`` to ``pred`` post-order."""
    if isinstance(pred, LeafPredicate):
        return visitor.visit_leaf(pred)
    raise TypeError(f"not a predicate node: {pred!r}")


@visit.register
def _(pred: AlwaysTrue, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_true()


@visit.register
def _(pred: AlwaysFalse, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_false()


@visit.register
def _(pred: Unsupported, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_unsupported(pred)


@visit.register
def _(pred: Not, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_not(visit(pred.child, visitor))


@visit.register
def _(pred: And, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_and(visit(pred.left, visitor), visit(pred.right, visitor))


@visit.register
def _(pred: Or, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_or(visit(pred.left, visitor), visit(pred.right, visitor))


# ---------------------------------------------------------------------------------------------- rewrite_not


class _RewriteNotVisitor(BooleanExpressionVisitor[Predicate]):
    def visit_true(self) -> Predicate:
        return AlwaysTrue()

    def visit_false(self) -> Predicate:
        return AlwaysFalse()

    def visit_not(self, child: Predicate) -> Predicate:
        # ``child`` is already NOT-free, so inverting it (De Morgan on And/Or) keeps it NOT-free.
        return ~child

    def visit_and(self, left: Predicate, right: Predicate) -> Predicate:
        return And(left, right)

    def visit_or(self, left: Predicate, right: Predicate) -> Predicate:
        return Or(left, right)

    def visit_leaf(self, pred: LeafPredicate) -> Predicate:
        return pred

    def visit_unsupported(self, pred: Unsupported) -> Predicate:
        return pred


def rewrite_not(pred: Predicate) -> Predicate:
    """Push every NOT into the leaves (De Morgan + each leaf's ``__invert__``).

    Exact under Spark's three-valued logic: a row satisfies the result exactly when it satisfies ``pred``
    (see the module docstring of :mod:`~.ir` for why ``NOT (c < v)`` may become ``c >= v``).
    """
    return visit(pred, _RewriteNotVisitor())


# ---------------------------------------------------------------------------------------------- columns


class _ReferencedColumns(BooleanExpressionVisitor[frozenset[str]]):
    def visit_true(self) -> frozenset[str]:
        return frozenset()

    def visit_false(self) -> frozenset[str]:
        return frozenset()

    def visit_not(self, child: frozenset[str]) -> frozenset[str]:
        return child

    def visit_and(self, left: frozenset[str], right: frozenset[str]) -> frozenset[str]:
        return left | right

    def visit_or(self, left: frozenset[str], right: frozenset[str]) -> frozenset[str]:
        return left | right

    def visit_leaf(self, pred: LeafPredicate) -> frozenset[str]:
        return frozenset((pred.term.name,))

    def visit_unsupported(self, pred: Unsupported) -> frozenset[str]:
        return frozenset()


def referenced_columns(pred: Predicate) -> frozenset[str]:
    """Names of the columns the predicate's evaluable leaves refer to."""
    return visit(pred, _ReferencedColumns())


# ---------------------------------------------------------------------------------------------- unsupported


class _HasUnsupported(BooleanExpressionVisitor[bool]):
    def visit_true(self) -> bool:
        return False

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child: bool) -> bool:
        return child

    def visit_and(self, left: bool, right: bool) -> bool:
        return left or right

    def visit_or(self, left: bool, right: bool) -> bool:
        return left or right

    def visit_leaf(self, pred: LeafPredicate) -> bool:
        return False

    def visit_unsupported(self, pred: Unsupported) -> bool:
        return True


def has_unsupported(pred: Predicate) -> bool:
    """Does ``pred`` hold an :class:`Unsupported` leaf?"""
    return visit(pred, _HasUnsupported())
