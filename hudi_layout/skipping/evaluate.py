"""Vectorised stats evaluation: which files *might* hold a row matching a predicate.

Three-valued and fail-open: for every file the answer is :data:`ROWS_MIGHT_MATCH` unless the statistics
prove that no row can satisfy the predicate (:data:`ROWS_CANNOT_MATCH`). Unknown (missing column, null
stats entry, NaN bound, literal of a type we cannot compare, :class:`~.ir.Unsupported`) never skips.

NOT is pushed into the leaves first (:func:`~.visitors.rewrite_not`); the evaluator itself refuses a raw
``Not``. Then, per leaf, one boolean array ``cannot[i]`` is computed for all files at once, and
``cannot(A AND B) = cannot(A) | cannot(B)``, ``cannot(A OR B) = cannot(A) & cannot(B)``.

Leaf rules (``min``/``max``/``nc``/``vc`` per file; "all_null" = ``nc == vc``, both known):

=====================  ====================================================================
predicate              cannot match when
=====================  ====================================================================
``c = v``, ``c <=> v``  all_null or ``min > v`` or ``max < v``
``c != v``             all_null or ``min == max == v`` (floats: only NaN-exact bounds)
``c < v``              all_null or ``min >= v``
``c <= v``             all_null or ``min > v``
``c > v``              all_null or ``max <= v`` (floats: only NaN-exact bounds without NaN)
``c >= v``             all_null or ``max < v`` (floats: only NaN-exact bounds without NaN)
``c IN (vs)``          all_null or every ``vi`` is outside ``[min, max]`` (lists > 200: never)
``c NOT IN (vs)``      all_null or ``min == max`` and that value is in the list; always when a
                       NULL is in the list (``NOT IN`` with a NULL is never TRUE)
``c IS NULL``          ``nc == 0`` (unknown nc → might: apache/hudi#19645)
``c IS NOT NULL``      all_null
``c LIKE 'p%'``        all_null or ``max < p`` or (``min > p`` and ``min`` does not start with p);
                       the might-form is ``max >= p AND (min < p OR startswith(min, p))``, the
                       fix of apache/hudi#18791
``c NOT LIKE 'p%'``    all_null or both ``min`` and ``max`` start with ``p``
comparison with NULL   always (``c = NULL`` is never TRUE)
=====================  ====================================================================

Floating-point columns follow Spark's order (NaN equal to itself and above every number, -0.0 = 0.0). A
float ``max`` is an upper bound only when the file's bounds are NaN-exact (:mod:`.stats`) and ``max`` is
not NaN; ``min = max = 0.0`` from another writer is not trusted at all. NaN literals: ``c > NaN`` is never
TRUE; ``c = NaN`` / ``c >= NaN`` / ``c IN (.., NaN)`` need a NaN, which a NaN-exact file without NaN does
not hold; ``c < NaN`` / ``c != NaN`` need a non-NaN value, which a NaN-exact all-NaN file does not hold.

:attr:`Evaluation.notes` says, for every leaf that could not be used on some files, why (a column without
statistics, a literal that does not compare with the column, float bounds that may hide NaN, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_layout.skipping.coerce import Operands, cast_stats, comparison_operands
from hudi_layout.skipping.ir import (
    ComparisonPredicate,
    Eq,
    Gt,
    GtEq,
    In,
    IsNotNull,
    IsNull,
    LeafPredicate,
    Lt,
    LtEq,
    NotEq,
    NotIn,
    NotStartsWith,
    NullSafeEq,
    Predicate,
    SetPredicate,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.stats import ColumnStats, StatsTable, is_textual
from hudi_layout.skipping.visitors import BooleanExpressionVisitor, rewrite_not, visit

ROWS_MIGHT_MATCH = True
ROWS_CANNOT_MATCH = False

IN_PREDICATE_LIMIT = 200
"""IN / NOT IN lists longer than this are not used for skipping (cost guard, as in pyiceberg)."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    """``might_match[i]`` for every file; ``reasons[i]`` names the leaf that excluded each dropped file;
    ``notes`` why leaves could not be used on some files (see the module docstring)."""

    might_match: np.ndarray
    reasons: dict[int, str]
    notes: tuple[str, ...] = ()


def stats_evaluator(pred: Predicate) -> Callable[[StatsTable], Evaluation]:
    """Normalise ``pred`` once; return a function evaluating it against any :class:`StatsTable`."""
    normalised = rewrite_not(pred)

    def evaluate_stats(stats: StatsTable) -> Evaluation:
        visitor = _StatsVisitor(stats)
        result = visit(normalised, visitor)
        cannot = result.cannot
        reasons = {int(i): str(result.reasons[i]) for i in np.flatnonzero(cannot)}
        return Evaluation(might_match=~cannot, reasons=reasons, notes=tuple(visitor.notes))

    return evaluate_stats


def evaluate(pred: Predicate, stats: StatsTable) -> Evaluation:
    """Evaluate ``pred`` against ``stats`` (see :func:`stats_evaluator`)."""
    return stats_evaluator(pred)(stats)


# ---------------------------------------------------------------------------------------------- internals


@dataclass(frozen=True, slots=True)
class _Result:
    cannot: np.ndarray  # bool[N]
    reasons: np.ndarray  # object[N]: reason string where cannot, else None


def _to_bool(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow result as numpy; NULL (unknown) becomes False, i.e. "cannot prove"."""
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


class _Bounds:
    """One column's statistics, with the per-file proofs the leaf rules need (all-file numpy arrays)."""

    def __init__(self, stats: ColumnStats) -> None:
        self.stats = stats
        self.type = stats.min.type
        self.is_float = pa.types.is_floating(self.type)
        self.truncated = stats.truncated and is_textual(self.type)  # truncation only means something there
        n = len(stats)
        nc, vc = (pa.nulls(n, pa.int64()) if pa.types.is_null(a.type) else a.cast(pa.int64())
                  for a in (stats.null_count, stats.value_count))
        self.no_nulls = _to_bool(pc.equal(nc, 0))
        self.all_null = _to_bool(pc.equal(nc, vc))
        self.missing = _to_bool(pc.or_(pc.is_null(stats.min), pc.is_null(stats.max))) & ~self.all_null
        none = np.zeros(n, dtype=bool)
        if self.is_float:
            self.min_nan = _to_bool(pc.is_nan(stats.min))
            self.max_nan = _to_bool(pc.is_nan(stats.max))
            self.nan_exact = none if stats.nan_exact is None else _to_bool(stats.nan_exact)
            # another writer's 0.0 / 0.0 for a file with values may be NaN-poisoned footer statistics
            zeros = _to_bool(pc.and_(pc.equal(stats.min, 0.0), pc.equal(stats.max, 0.0)))
            self.untrusted = zeros & ~self.all_null & ~self.nan_exact
        else:
            self.min_nan = self.max_nan = self.untrusted = none
            self.nan_exact = np.ones(n, dtype=bool)
        self.nan_bound = self.min_nan | self.max_nan
        #: ``max`` bounds every value, NaN included (floats: NaN-exact bounds of a file without NaN)
        self.upper_bounds_all = self.nan_exact & ~self.max_nan & ~self.untrusted
        self._cast_cache: dict[tuple[pa.DataType, bool], tuple[pa.Array | None, pa.Array | None]] = {}

    def operands(self, value: Any) -> tuple[Operands, pa.Array, pa.Array] | None:
        ops = comparison_operands(self.type, value)
        if ops is None:
            return None
        key = (ops.cmp_type, ops.lossy)
        if key not in self._cast_cache:
            self._cast_cache[key] = (cast_stats(self.stats.min, ops), cast_stats(self.stats.max, ops))
        lo, hi = self._cast_cache[key]
        if lo is None or hi is None:
            return None
        return ops, lo, hi

    # Each proof is True only where the stats show it for every non-null value of the file.

    def all_gt(self, value: Any, *, strict: bool = True) -> np.ndarray:
        """Every non-null value > v (``strict``) or >= v: from ``min`` (NaN is greatest, so it agrees)."""
        got = self.operands(value)
        if got is None:
            return self._none()
        ops, lo, _ = got
        # NaN-exact bounds keep NaN out of min unless every value is NaN; others may hide it anywhere
        trusted = ~self.min_nan & self.nan_exact | ~self.nan_bound & ~self.untrusted
        proof = _to_bool((pc.greater if strict else pc.greater_equal)(lo, ops.scalar)) & trusted
        return proof | self.only_nan()  # NaN is greater than every number

    def all_lt(self, value: Any, *, strict: bool = True, nan_satisfies: bool) -> np.ndarray:
        """Every non-null value < v (``strict``) or <= v: from ``max``.

        ``nan_satisfies``: the predicate being decided is TRUE for NaN rows, so for floats only files whose
        ``max`` bounds NaN too (NaN-exact, no NaN) can be proven.
        """
        got = self.operands(value)
        if got is None:
            return self._none()
        ops, _, hi = got
        proof = _to_bool((pc.less if strict else pc.less_equal)(hi, ops.scalar)) & ~self.nan_bound & \
            ~self.untrusted
        if self.is_float and nan_satisfies:
            proof &= self.upper_bounds_all
        if self.truncated:
            proof &= ~self._is_prefix_of(hi, ops.scalar.as_py())
        return proof

    def all_equal(self, value: Any) -> np.ndarray:
        """Every non-null value == v (``min == max == v``); floats only with NaN-exact bounds, never truncated."""
        if self.truncated:
            return self._none()
        got = self.operands(value)
        if got is None:
            return self._none()
        ops, lo, hi = got
        proof = _to_bool(pc.and_(pc.equal(lo, ops.scalar), pc.equal(hi, ops.scalar)))
        return proof & self.upper_bounds_all if self.is_float else proof

    def no_nan(self) -> np.ndarray:
        """Provably no NaN in the file (NaN-exact bounds, ``max`` not NaN)."""
        return self.nan_exact & ~self.max_nan if self.is_float else np.ones(len(self.stats), dtype=bool)

    def only_nan(self) -> np.ndarray:
        """Provably every non-null value is NaN (NaN-exact bounds with a NaN ``min``)."""
        return self.nan_exact & self.min_nan if self.is_float else self._none()

    def starts_with(self, which: str, prefix: str | bytes) -> np.ndarray:
        """``min`` or ``max`` starts with ``prefix`` (only string/binary columns)."""
        values = self.stats.min if which == "min" else self.stats.max
        if isinstance(prefix, str):
            return _to_bool(pc.starts_with(values, pattern=prefix))
        return np.array([v is not None and v.startswith(prefix) for v in values.to_pylist()], dtype=bool)

    def prefix_literal(self, value: Any) -> str | bytes | None:
        """The StartsWith prefix in the column's Python type, or None when the column is not textual."""
        t = self.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return value if isinstance(value, str) else None
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
            return value.encode() if isinstance(value, str) else value if isinstance(value, bytes) else None
        return None

    @staticmethod
    def _is_prefix_of(bounds: pa.Array, value: Any) -> np.ndarray:
        return np.array([b is not None and value.startswith(b) for b in bounds.to_pylist()], dtype=bool)

    def _none(self) -> np.ndarray:
        return np.zeros(len(self.stats), dtype=bool)

    def limits(self, pred: LeafPredicate) -> list[str]:
        """Why ``pred`` cannot be decided on some files (for :attr:`Evaluation.notes`)."""
        out: list[str] = []
        n = len(self.stats)
        missing = int(self.missing.sum())
        if missing:
            out.append(f"{pred}: {missing} of {n} files have no min/max for {pred.term}; they are kept")
        values: list[Any] = []
        if isinstance(pred, SetPredicate):
            values = [lit.value for lit in pred.literals if lit.value is not None]
            if len(values) > IN_PREDICATE_LIMIT:
                out.append(f"{pred.term} {pred.op} (...): lists of more than {IN_PREDICATE_LIMIT} values are "
                           "not used for skipping")
                return out
        elif isinstance(pred, ComparisonPredicate) and pred.literal.value is not None:
            values = [pred.literal.value]
        if isinstance(pred, (StartsWith, NotStartsWith)):
            if self.prefix_literal(pred.literal.value) is None:
                out.append(f"{pred}: LIKE on a {self.type} column is not used for skipping")
            return out
        for v in values:
            if not (self.is_float and _is_nan(v)) and comparison_operands(self.type, v) is None:
                out.append(f"{pred}: the literal {v!r} ({type(v).__name__}) does not compare with the {self.type} "
                           f"column {pred.term} here; no file is skipped by it")
                break
        if self.is_float:
            needs_upper = isinstance(pred, (Gt, GtEq, NotEq, NotIn)) or any(_is_nan(v) for v in values)
            loose = int((~self.upper_bounds_all & ~self.all_null & ~self.missing).sum())
            if needs_upper and loose:
                out.append(f"{pred}: {loose} of {n} files have float statistics that may leave out NaN (not "
                           "written by hudi_layout, or the file holds a NaN); they are kept")
            untrusted = int(self.untrusted.sum())
            if untrusted:
                out.append(f"{pred.term}: {untrusted} files from another writer have min = max = 0.0, which "
                           "may stand for NaN-poisoned statistics; they are kept")
        if self.truncated and isinstance(pred, (Gt, GtEq, Eq, NullSafeEq, In, NotEq, NotIn)):
            out.append(f"{pred.term}: string statistics are truncated; values beyond max are possible")
        return out


class _StatsVisitor(BooleanExpressionVisitor[_Result]):
    """Per-call state only (the stats table and a bounds cache); a fresh visitor for every evaluation."""

    def __init__(self, stats: StatsTable) -> None:
        self.stats = stats
        self.n = stats.num_files
        self._bounds: dict[str, _Bounds | None] = {}
        self.notes: dict[str, None] = {}  # ordered set

    def _result(self, cannot: np.ndarray, reason: str) -> _Result:
        reasons = np.full(self.n, None, dtype=object)
        reasons[cannot] = reason
        return _Result(cannot, reasons)

    def visit_true(self) -> _Result:
        return self._result(np.zeros(self.n, dtype=bool), "")

    def visit_false(self) -> _Result:
        return self._result(np.ones(self.n, dtype=bool), "FALSE")

    def visit_not(self, child: _Result) -> _Result:
        raise TypeError("NOT must be rewritten away before stats evaluation (use rewrite_not)")

    def visit_and(self, left: _Result, right: _Result) -> _Result:
        # A file is excluded by either side; report the left side's reason when both exclude it.
        return _Result(left.cannot | right.cannot, np.where(left.cannot, left.reasons, right.reasons))

    def visit_or(self, left: _Result, right: _Result) -> _Result:
        cannot = left.cannot & right.cannot
        reasons = np.full(self.n, None, dtype=object)
        for i in np.flatnonzero(cannot):
            reasons[i] = f"{left.reasons[i]} and {right.reasons[i]}"
        return _Result(cannot, reasons)

    def visit_unsupported(self, pred: Unsupported) -> _Result:
        self.notes[f"{pred.text}: not a test on one column's min / max (a function, a column comparison or "
                   "an unusual pattern); not used for skipping"] = None
        return self.visit_true()

    def visit_leaf(self, pred: LeafPredicate) -> _Result:
        name = pred.term.name
        if name not in self._bounds:
            col = self.stats.column(name)
            self._bounds[name] = _Bounds(col) if col is not None else None
        bounds = self._bounds[name]
        if bounds is None:
            if self.n:
                self.notes[f"{pred}: column {name} has no statistics in the index; not used for skipping"] = None
            return self.visit_true()
        for note in bounds.limits(pred):
            self.notes[note] = None
        return self._result(_cannot_match(pred, bounds), str(pred))


def _cannot_match(pred: LeafPredicate, b: _Bounds) -> np.ndarray:
    """The leaf rules of the module docstring; True = proven that no row of the file satisfies ``pred``."""
    if isinstance(pred, IsNull) or (isinstance(pred, NullSafeEq) and pred.literal.is_null):
        return b.no_nulls.copy()
    if isinstance(pred, IsNotNull):
        return b.all_null.copy()
    if isinstance(pred, SetPredicate):
        return _cannot_match_set(pred, b)
    if not isinstance(pred, ComparisonPredicate):  # an unknown kind of leaf: nothing is proven
        return np.zeros_like(b.no_nulls)
    v = pred.literal.value
    if v is None:
        # Comparing with NULL is NULL for every row: never TRUE.
        return np.ones(len(b.stats), dtype=bool)
    if b.is_float and _is_nan(v):
        return b.all_null | _cannot_match_nan(pred, b)
    if isinstance(pred, (Eq, NullSafeEq)):
        return b.all_null | b.all_gt(v) | b.all_lt(v, nan_satisfies=False)
    if isinstance(pred, NotEq):
        return b.all_null | b.all_equal(v)
    if isinstance(pred, Lt):
        return b.all_null | b.all_gt(v, strict=False)
    if isinstance(pred, LtEq):
        return b.all_null | b.all_gt(v)
    if isinstance(pred, Gt):
        return b.all_null | b.all_lt(v, strict=False, nan_satisfies=True)
    if isinstance(pred, GtEq):
        return b.all_null | b.all_lt(v, nan_satisfies=True)
    if isinstance(pred, (StartsWith, NotStartsWith)):
        prefix = b.prefix_literal(v)
        if prefix is None:
            return b.all_null.copy()
        if isinstance(pred, StartsWith):
            # might ⇔ max >= p AND (min < p OR startswith(min, p))  — apache/hudi#18791
            above = b.all_gt(prefix) & ~b.starts_with("min", prefix)
            return b.all_null | b.all_lt(prefix, nan_satisfies=False) | above
        return b.all_null | (b.starts_with("min", prefix) & b.starts_with("max", prefix))
    return np.zeros(len(b.stats), dtype=bool)


def _cannot_match_nan(pred: LeafPredicate, b: _Bounds) -> np.ndarray:
    """A comparison of a float column with NaN, in Spark's order (NaN is the greatest value, equal to itself)."""
    if isinstance(pred, Gt):
        return np.ones(len(b.stats), dtype=bool)  # nothing is greater than NaN
    if isinstance(pred, (Eq, NullSafeEq, GtEq)):
        return b.no_nan()  # only NaN satisfies
    if isinstance(pred, (Lt, NotEq)):
        return b.only_nan()  # every value but NaN satisfies
    return np.zeros(len(b.stats), dtype=bool)  # <= NaN holds for every non-null value


def _cannot_match_set(pred: SetPredicate, b: _Bounds) -> np.ndarray:
    values = [lit.value for lit in pred.literals]
    non_null = [v for v in values if v is not None]
    if isinstance(pred, In):
        if not non_null:
            return np.ones(len(b.stats), dtype=bool)
        if len(non_null) > IN_PREDICATE_LIMIT:
            return b.all_null.copy()
        outside = np.ones(len(b.stats), dtype=bool)
        for v in non_null:
            if b.is_float and _is_nan(v):
                outside &= b.no_nan()
            else:
                outside &= b.all_gt(v) | b.all_lt(v, nan_satisfies=False)
        return b.all_null | outside
    assert isinstance(pred, NotIn)
    if not values:  # ``c NOT IN ()`` is TRUE for every row, NULL included (Spark 4; session 31's probe)
        return np.zeros(len(b.stats), dtype=bool)
    if len(non_null) < len(values):
        return np.ones(len(b.stats), dtype=bool)
    if len(non_null) > IN_PREDICATE_LIMIT:
        return b.all_null.copy()
    inside = np.zeros(len(b.stats), dtype=bool)
    for v in non_null:
        if b.is_float and _is_nan(v):
            inside |= b.only_nan()
        else:
            inside |= b.all_equal(v)
    return b.all_null | inside
