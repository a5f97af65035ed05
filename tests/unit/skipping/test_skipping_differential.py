"""Differential property test (polars ``test_skip_batch_predicate_parametric`` style).

Random rows of random types are split into "files"; stats are computed the way the writer computes them
(``pyarrow.compute.min_max``: nulls skipped, NaN skipped unless the file is all NaN; ``null_count``;
``value_count`` = rows); some files lose their stats entry. A random predicate tree is evaluated on the
stats (through :func:`prune`, with the stats rows shuffled) and on the rows (the oracle). Property: no row
the oracle matches lives in a dropped file — i.e. filter(all files) == filter(kept files).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.skipping.evaluate import evaluate
from hudi_layout.skipping.ir import (
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
    Predicate,
    Ref,
    StartsWith,
    Unsupported,
)
from hudi_layout.skipping.oracle import evaluate_rows
from hudi_layout.skipping.pruning import prune
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.stats import ColumnStats, StatsTable

_PREFIXES = ["", "abc", "abcabc", "ab", "b", "é", "\U0001F600"]

TYPES: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "int": (pa.int64(), st.one_of(st.integers(-20, 20), st.integers(-(2**63), 2**63 - 1))),
    "double": (pa.float64(), st.one_of(
        st.sampled_from([float("nan"), float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.5]),
        st.floats(-10, 10), st.floats(allow_nan=True, allow_infinity=True))),
    "decimal": (pa.decimal128(10, 2), st.decimals(min_value=-1000, max_value=1000, places=2,
                                                   allow_nan=False, allow_infinity=False)),
    "string": (pa.string(), st.builds(lambda p, s: p + s, st.sampled_from(_PREFIXES),
                                      st.text(alphabet="abcé\U0001F600", max_size=4))),
    "binary": (pa.binary(), st.builds(lambda p, s: p.encode() + s, st.sampled_from(_PREFIXES),
                                      st.binary(max_size=3))),
    "date": (pa.date32(), st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1))),
    "timestamp": (pa.timestamp("us"), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1))),
    "timestamp_tz": (pa.timestamp("us", tz="UTC"), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1))),
    "bool": (pa.bool_(), st.booleans()),
}

# Literals of another type that Spark would widen (or that must simply not break evaluation).
CROSS_LITERALS: dict[str, st.SearchStrategy[Any]] = {
    "int": st.one_of(st.floats(-25, 25), st.sampled_from([float("nan"), 2.5, -0.0]),
                     st.decimals(-25, 25, places=1, allow_nan=False, allow_infinity=False)),
    "double": st.one_of(st.integers(-20, 20), st.decimals(-20, 20, places=1, allow_nan=False, allow_infinity=False)),
    "decimal": st.one_of(st.integers(-1000, 1000), st.floats(-1000, 1000),
                         st.decimals(-1000, 1000, places=3, allow_nan=False, allow_infinity=False)),
    "string": st.one_of(st.integers(), st.binary(max_size=2)),
    "binary": st.text(alphabet="abé", max_size=3),
    "date": st.one_of(st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1)),
                      st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1)).map(dt.date.isoformat), st.just("junk")),
    "timestamp": st.one_of(st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1)),
                           st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1)).map(str)),
    "timestamp_tz": st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1),
                                 timezones=st.sampled_from([dt.timezone.utc, dt.timezone(dt.timedelta(hours=5))])),
    "bool": st.integers(0, 1),
}


def _file_stats(values: list[Any], type_: pa.DataType) -> tuple[Any, Any, int, int]:
    arr = pa.array(values, type_)
    mm = pc.min_max(arr)
    return mm["min"].as_py(), mm["max"].as_py(), arr.null_count, len(arr)


@st.composite
def literal_for(draw: st.DrawFn, kind: str, values: list[Any]) -> Any:
    non_null = [v for v in values if v is not None]
    choices = [TYPES[kind][1], CROSS_LITERALS[kind], st.none()]
    if non_null:
        choices = [st.sampled_from(non_null)] * 3 + choices
    return draw(st.one_of(*choices))


_LEAF_OPS = ["eq", "ne", "nseq", "lt", "le", "gt", "ge", "in", "notin", "isnull", "notnull", "sw", "nsw",
             "unsupported"]
_COMPARISONS = {"eq": Eq, "ne": NotEq, "nseq": NullSafeEq, "lt": Lt, "le": LtEq, "gt": Gt, "ge": GtEq}


def draw_leaf(draw: st.DrawFn, rnd: Any, column: str, kind: str, values: list[Any]) -> Predicate:
    ref = Ref(column)
    op = rnd.choice(_LEAF_OPS)  # uniform: hypothesis' own choice favours the first operator
    if op == "isnull":
        return IsNull(ref)
    if op == "notnull":
        return IsNotNull(ref)
    if op == "unsupported":
        return Unsupported(f"f({column})")
    if op in ("in", "notin"):
        lits = tuple(Literal(draw(literal_for(kind, values))) for _ in range(draw(st.integers(1, 4))))
        return In(ref, lits) if op == "in" else NotIn(ref, lits)
    if op in ("sw", "nsw"):
        texts = [v for v in values if isinstance(v, (str, bytes))]
        if texts and draw(st.booleans()):
            text = draw(st.sampled_from(texts))
            prefix: Any = text[:draw(st.integers(0, len(text)))]
        else:
            prefix = draw(st.sampled_from(_PREFIXES))
        return StartsWith(ref, Literal(prefix)) if op == "sw" else NotStartsWith(ref, Literal(prefix))
    return _COMPARISONS[op](ref, Literal(draw(literal_for(kind, values))))


def draw_predicate(draw: st.DrawFn, columns: dict[str, tuple[str, list[Any]]], depth: int = 3,
                   rnd: Any = None) -> Predicate:
    rnd = rnd or draw(st.randoms(use_true_random=False))
    shape = rnd.choice([0, 0, 1, 2, 3]) if depth > 0 else 0
    if shape == 0:
        name = rnd.choice(sorted(columns))
        return draw_leaf(draw, rnd, name, *columns[name])
    if shape == 1:
        return Not(draw_predicate(draw, columns, depth - 1, rnd))
    kind = And if shape == 2 else Or
    return kind(draw_predicate(draw, columns, depth - 1, rnd), draw_predicate(draw, columns, depth - 1, rnd))


@st.composite
def scenario(draw: st.DrawFn, a_kind: str | None = None) -> tuple[
        list[dict[str, Any]], list[list[int]], dict[str, str], Predicate, set[tuple[str, int]]]:
    kinds = {"a": a_kind or draw(st.sampled_from(sorted(TYPES))), "b": draw(st.sampled_from(sorted(TYPES)))}
    n_rows = draw(st.integers(1, 20))
    columns: dict[str, list[Any]] = {}
    for name, kind in kinds.items():
        columns[name] = draw(st.lists(st.one_of(st.none(), TYPES[kind][1]) if draw(st.booleans())
                                      else TYPES[kind][1], min_size=n_rows, max_size=n_rows))
    if draw(st.booleans()):  # sorted data makes skipping likely, so the property is not vacuous
        order = sorted(range(n_rows), key=lambda i: (columns["a"][i] is None, _sort_key(columns["a"][i])))
        columns = {k: [v[i] for i in order] for k, v in columns.items()}
    rows = [{k: columns[k][i] for k in columns} for i in range(n_rows)]
    cuts = sorted(draw(st.sets(st.integers(1, max(1, n_rows - 1)), max_size=5)))
    bounds = [0, *[c for c in cuts if c < n_rows], n_rows]
    files = [list(range(bounds[i], bounds[i + 1])) for i in range(len(bounds) - 1)]
    missing = draw(st.sets(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, len(files) - 1)), max_size=2))
    pred = draw_predicate(draw, {k: (kinds[k], columns[k]) for k in kinds})
    return rows, files, kinds, pred, missing


def _sort_key(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return (1, 0.0)
    if isinstance(v, dt.datetime):
        return (0, v.replace(tzinfo=None))
    return (0, v)


def _nan_exact_file_stats(values: list[Any], type_: pa.DataType) -> tuple[Any, Any, int, int]:
    """hudi_layout's writer: NaN-free min (NaN when every value is NaN), max NaN iff some value is NaN."""
    lo, hi, nc, vc = _file_stats(values, type_)
    if any(isinstance(v, float) and v != v for v in values):
        hi = float("nan")
    return lo, hi, nc, vc


def _stats_table(name: str, kind: str, rows: list[dict[str, Any]], files: list[list[int]],
                 missing: set[tuple[str, int]], order: list[int], nan_exact: bool = False) -> pa.Table:
    type_ = TYPES[kind][0]
    file_stats = _nan_exact_file_stats if nan_exact else _file_stats
    out: dict[str, list[Any]] = {"file_name": [], "min": [], "max": [], "null_count": [], "value_count": []}
    for f in order:
        if (name, f) in missing:
            continue
        lo, hi, nc, vc = file_stats([rows[i][name] for i in files[f]], type_)
        for key, value in zip(out, (f"f{f}", lo, hi, nc, vc), strict=True):
            out[key].append(value)
    return pa.table({"file_name": pa.array(out["file_name"], pa.string()), "min": pa.array(out["min"], type_),
                     "max": pa.array(out["max"], type_), "null_count": pa.array(out["null_count"], pa.int64()),
                     "value_count": pa.array(out["value_count"], pa.int64())})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.property
@given(scenario(), st.randoms(use_true_random=False))
def test_no_matching_row_is_in_a_dropped_file(case: Any, rnd: Any) -> None:
    _check_no_wrong_skip(case, rnd)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.property
@given(scenario(a_kind="double"), st.randoms(use_true_random=False))
def test_no_matching_row_is_in_a_dropped_file_doubles_with_nan(case: Any, rnd: Any) -> None:
    """Doubles get their own run: NaN (ignored by min/max, greatest in Spark) is the classic wrong skip."""
    _check_no_wrong_skip(case, rnd)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario(a_kind="double"), st.randoms(use_true_random=False))
def test_no_matching_row_is_in_a_dropped_file_nan_exact_doubles(case: Any, rnd: Any) -> None:
    """Doubles with NaN-exact bounds (hudi_layout's writer): ``>``, ``>=``, ``!=``, ``NOT IN`` and NaN
    literals skip files, and still never a file with a matching row."""
    _check_no_wrong_skip(case, rnd, nan_exact=True)


def _check_no_wrong_skip(case: Any, rnd: Any, nan_exact: bool = False) -> None:
    rows, files, kinds, pred, missing = case
    order = list(range(len(files)))
    rnd.shuffle(order)
    stats = {name: _stats_table(name, kind, rows, files, missing, order, nan_exact)
             for name, kind in kinds.items()}
    names = [f"f{i}" for i in range(len(files))]
    result = prune(pred, names, stats, nan_exact_files=set(names) if nan_exact else None)
    matches = evaluate_rows(pred, rows)
    for f, reason in result.dropped.items():
        hits = [rows[i] for i in files[f] if matches[i]]
        assert not hits, f"file {f} dropped by {reason!r} but rows {hits} match {pred}"
    assert sorted([*result.kept, *result.dropped]) == list(range(len(files)))


@settings(max_examples=80, deadline=None)
@pytest.mark.property
@given(st.lists(st.one_of(st.none(), TYPES["string"][1]), min_size=1, max_size=25), st.integers(1, 3),
       st.data())
def test_truncated_string_stats_never_drop_a_matching_file(values: list[Any], keep: int, data: Any) -> None:
    """Stats cut to ``keep`` characters (naive truncation) and flagged ``truncated`` stay safe."""
    values = sorted(values, key=lambda v: (v is None, v or ""))
    files = [values[i:i + 4] for i in range(0, len(values), 4)]
    cut = [_file_stats(f, pa.string()) for f in files]
    stats = ColumnStats.from_pylists(
        pa.string(), [None if c[0] is None else c[0][:keep] for c in cut],
        [None if c[1] is None else c[1][:keep] for c in cut], [c[2] for c in cut], [c[3] for c in cut],
        truncated=True)
    pred = draw_predicate(data.draw, {"s": ("string", values)})
    result = evaluate(pred, StatsTable(len(files), {"s": stats}))
    for f, rows in enumerate(files):
        if not result.might_match[f]:
            assert not any(evaluate_rows(pred, [{"s": v} for v in rows])), (pred, rows, result.reasons[f])


def test_skipping_actually_skips_on_sorted_data() -> None:
    rows = [{"a": i, "s": f"k{i:04d}"} for i in range(1000)]
    files = [list(range(i, i + 100)) for i in range(0, 1000, 100)]
    stats = {name: _stats_table(name, kind, rows, files, set(), list(range(10)))
             for name, kind in (("a", "int"), ("s", "string"))}
    names = [f"f{i}" for i in range(10)]
    for sql, expected_kept in [("a = 150", [1]), ("a BETWEEN 250 AND 420", [2, 3, 4]), ("a > 899", [9]),
                               ("s LIKE 'k05%'", [5]), ("a IN (5, 995)", [0, 9]), ("a < 100 OR s = 'k0999'", [0, 9]),
                               ("NOT (a >= 100)", [0])]:
        pred = from_sql(sql)
        result = prune(pred, names, stats)
        assert result.kept == expected_kept, f"{sql}: kept {result.kept}"
        matches = np.array(evaluate_rows(pred, rows))
        assert matches.any() and all(matches[i] == False for f in result.dropped for i in files[f])  # noqa: E712


def test_nan_exact_flag_never_vouches_for_missing_stats() -> None:
    """Regression (found by the property test above): a NaN-exact file without a stats row for the column must
    be kept for ``a = NaN`` - the flag says the writer's bounds count NaN, not that a missing row means none."""
    from hudi_layout.skipping.ir import Eq, Literal, Ref

    empty = pa.table({"file_name": pa.array([], pa.string()), "min": pa.array([], pa.float64()),
                      "max": pa.array([], pa.float64()), "null_count": pa.array([], pa.int64()),
                      "value_count": pa.array([], pa.int64())})
    res = prune(Eq(Ref("a"), Literal(float("nan"))), ["f0"], {"a": empty}, nan_exact_files={"f0"})
    assert res.kept == [0] and not res.dropped
