"""Curve-region math against brute force on small grids: BIGMIN, the Hilbert cover, code intervals,
coarsened reductions, and the stored JSON."""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.curves import encode_column, sample_bounds
from hudi_layout.curves.reduce import bucketize, scale_to_bits
from hudi_layout.curves.region import (
    U64_MAX,
    ColumnReduction,
    CurveRegions,
    CurveShape,
    constraint_codes,
    cover_intervals,
    decode_regions,
    encode_regions,
    merge_intervals,
    prefix_codes,
    ranges_meet_box,
    zorder_bigmin,
)
from hudi_layout.errors import InvalidArgumentError

SHAPES = [(3, 3), (2, 3), (3, 2, 2), (4, 3), (2, 2, 2), (1, 3), (4,)]


def _grid(shape: CurveShape) -> tuple[np.ndarray, np.ndarray]:
    pts = np.array(list(itertools.product(*[range(1 << b) for b in shape.bits])), dtype=np.uint64)
    return pts, shape.keys([pts[:, j] for j in range(len(shape.bits))])


@st.composite
def shape_and_box(draw: st.DrawFn) -> tuple[CurveShape, list[int], list[int]]:
    shape = CurveShape(draw(st.sampled_from(["zorder", "hilbert"])), draw(st.sampled_from(SHAPES)))
    lo = [draw(st.integers(0, (1 << b) - 1)) for b in shape.bits]
    hi = [draw(st.integers(a, (1 << b) - 1)) for a, b in zip(lo, shape.bits)]
    return shape, lo, hi


def _box_keys(shape: CurveShape, lo: list[int], hi: list[int]) -> np.ndarray:
    pts, keys = _grid(shape)
    inside = np.all((pts >= np.array(lo, np.uint64)) & (pts <= np.array(hi, np.uint64)), axis=1)
    return np.sort(keys[inside])


@pytest.mark.parametrize("kind", ["zorder", "hilbert"])
@pytest.mark.parametrize("bits", SHAPES)
def test_keys_are_a_bijection_and_cells_are_aligned_key_blocks(kind: str, bits: tuple[int, ...]) -> None:
    """The property the cover relies on: at every level boundary, each grid cell is one aligned key block."""
    shape = CurveShape(kind, bits)
    pts, keys = _grid(shape)
    assert np.unique(keys).size == len(pts) and int(keys.max()) < 1 << shape.total_bits
    top = max(bits)
    fixed = 0
    for level in range(top - 1, -1, -1):
        fixed += sum(1 for b in bits if b > level)
        free = shape.total_bits - fixed
        cell = tuple(pts[:, j] >> np.uint64(min(b, level)) for j, b in enumerate(bits))
        prefix = keys >> np.uint64(free)
        groups: dict[tuple[int, ...], set[int]] = {}
        for i in range(len(pts)):
            groups.setdefault(tuple(int(c[i]) for c in cell), set()).add(int(prefix[i]))
        assert all(len(v) == 1 for v in groups.values())


@settings(max_examples=300, deadline=None)
@given(shape_and_box())
def test_bigmin_is_the_next_key_in_the_box(case: tuple[CurveShape, list[int], list[int]]) -> None:
    shape, lo, hi = case
    if shape.kind != "zorder":
        shape = CurveShape("zorder", shape.bits)
    inside = _box_keys(shape, lo, hi)
    z = np.arange(1 << shape.total_bits, dtype=np.uint64)
    big, found = zorder_bigmin(z, lo, hi, shape)
    idx = np.searchsorted(inside, z)
    assert np.array_equal(found, idx < inside.size)
    assert np.array_equal(big[found], inside[idx[found]])


@settings(max_examples=300, deadline=None)
@given(shape_and_box(), st.sampled_from([1 << 20, 64, 4, 1]))
def test_cover_holds_every_key_of_the_box_and_is_exact_without_budget(
        case: tuple[CurveShape, list[int], list[int]], budget: int) -> None:
    shape, lo, hi = case
    inside = _box_keys(shape, lo, hi)
    starts, ends = cover_intervals(lo, hi, shape, budget)
    assert np.all(starts[1:] > ends[:-1] + np.uint64(1)) if starts.size > 1 else True
    covered = np.zeros(1 << shape.total_bits, dtype=bool)
    for a, b in zip(starts, ends):
        covered[int(a):int(b) + 1] = True
    assert covered[inside].all()
    if budget == 1 << 20:
        assert covered.sum() == inside.size


@settings(max_examples=300, deadline=None)
@given(shape_and_box(), st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 4095)), min_size=1, max_size=20))
def test_ranges_meet_box_matches_brute_force(case: tuple[CurveShape, list[int], list[int]],
                                              ranges: list[tuple[int, int]]) -> None:
    shape, lo, hi = case
    inside = _box_keys(shape, lo, hi)
    top = (1 << shape.total_bits) - 1
    kmin = np.array([min(a, b, top) for a, b in ranges], np.uint64)
    kmax = np.array([min(max(a, b), top) for a, b in ranges], np.uint64)
    got = ranges_meet_box(kmin, kmax, lo, hi, shape)
    want = [bool(((inside >= a) & (inside <= b)).any()) for a, b in zip(kmin, kmax)]
    assert got.tolist() == want


def test_empty_box_meets_nothing_and_merge_joins_adjacent_intervals() -> None:
    shape = CurveShape("hilbert", (3, 3))
    assert not ranges_meet_box(np.array([0], np.uint64), np.array([63], np.uint64), [4, 0], [3, 7], shape).any()
    s, e = merge_intervals(np.array([5, 0, 3, 10], np.uint64), np.array([6, 2, 4, 12], np.uint64))
    assert s.tolist() == [0, 10] and e.tolist() == [6, 12]
    s, e = merge_intervals(np.array([0, U64_MAX], np.uint64), np.array([U64_MAX, U64_MAX], np.uint64))
    assert s.tolist() == [0] and e.tolist() == [U64_MAX]


# ------------------------------------------------------------------------------------------ value -> code

VALUES = {
    "int": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "uint": (pa.uint16(), st.integers(0, 2**16 - 1)),
    "double": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    "string": (pa.string(), st.text(alphabet="ab\x00\xff\u00e9", max_size=10)),
    "binary": (pa.binary(), st.binary(max_size=10)),
    "date": (pa.date32(), st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1))),
    "ts": (pa.timestamp("ms"), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1))),
}


def _spark_cmp(a: object, b: object) -> int:
    if isinstance(a, float):
        assert isinstance(b, float)
        ka = (1, 0.0) if a != a else (0, a + 0.0)
        kb = (1, 0.0) if b != b else (0, b + 0.0)
        return (ka > kb) - (ka < kb)
    if isinstance(a, str):
        assert isinstance(b, str)
        a, b = a.encode(), b.encode()
    return (a > b) - (a < b)  # type: ignore[operator]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(VALUES)), st.data())
def test_every_satisfying_value_has_a_code_in_the_interval(kind: str, data: st.DataObject) -> None:
    t, values = VALUES[kind]
    lit = data.draw(values)
    xs = data.draw(st.lists(values, min_size=1, max_size=20)) + [lit]
    codes = encode_column(pa.array(xs, t))
    for op in ("=", "<", "<=", ">", ">="):
        got = constraint_codes(op, lit, t, t)
        assert got is not None
        for x, c in zip(xs, codes):
            r = _spark_cmp(x, lit)
            ok = {"=": r == 0, "<": r < 0, "<=": r <= 0, ">": r > 0, ">=": r >= 0}[op]
            if ok:
                assert got[0] <= int(c) <= got[1], (op, x, lit)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\u00e9", min_size=1, max_size=10), st.lists(st.text(alphabet="ab\u00e9", max_size=12)))
def test_prefix_codes_hold_every_value_with_the_prefix(prefix: str, xs: list[str]) -> None:
    lo, hi = prefix_codes(prefix)  # type: ignore[misc]
    xs = xs + [prefix, prefix + "zz"]
    for x, c in zip(xs, encode_column(pa.array(xs, pa.string()))):
        if x.startswith(prefix):
            assert lo <= int(c) <= hi


def test_constraint_codes_refuse_other_code_spaces() -> None:
    assert constraint_codes(">=", 2.5, pa.float64(), pa.int64()) is None  # int column, double comparison
    assert constraint_codes("<", dt.datetime(2020, 1, 1), pa.timestamp("us"), pa.date32()) is None
    assert constraint_codes("prefix", "a", None or pa.string(), pa.int32()) is None  # type: ignore[arg-type]
    assert constraint_codes(">=", 7, pa.int64(), pa.int16()) == (int(encode_column(pa.array([7]))[0]), U64_MAX)
    assert constraint_codes("<", -(2**63), pa.int64(), pa.int64()) == (1, 0)  # nothing is below the minimum
    with pytest.raises(InvalidArgumentError):
        constraint_codes("~", 1, pa.int64(), pa.int64())


# ------------------------------------------------------------------------------------------ reductions

@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**20), min_size=1, max_size=400), st.integers(1, 10), st.integers(1, 40),
       st.integers(0, 2**20), st.integers(0, 2**20))
def test_coarsened_bounds_give_a_coordinate_interval_holding_every_code(
        sample: list[int], bits: int, keep: int, a: int, b: int) -> None:
    lo, hi = min(a, b), max(a, b)
    bounds = sample_bounds(np.array(sample, np.uint64), bits)
    red = ColumnReduction.from_bounds(bounds, keep=keep)
    codes = np.arange(lo, hi + 1, max(1, (hi - lo) // 50), dtype=np.uint64)
    coords = bucketize(codes, bounds, bits) if bounds.size else np.zeros(codes.size, np.uint64)
    c_lo, c_hi = red.coordinate_interval(lo, hi, bits)
    assert np.all((coords >= c_lo) & (coords <= c_hi))
    back = ColumnReduction.from_json(red.to_json())
    assert back.coordinate_interval(lo, hi, bits) == (c_lo, c_hi)


def test_range_and_top_reductions() -> None:
    red = ColumnReduction.from_range((100, 1100))
    assert red.coordinate_interval(0, 99, 4) == (0, 0)
    assert red.coordinate_interval(600, 600, 4) == tuple(int(v) for v in scale_to_bits(
        np.array([600, 600], np.uint64), 100, 1100, 4))
    assert ColumnReduction.from_range(None).coordinate_interval(0, U64_MAX, 8) == (0, 0)
    assert ColumnReduction("top").coordinate_interval(1 << 60, 3 << 62, 4) == (1, 12)


def test_regions_json_round_trip_and_errors() -> None:
    regions = CurveRegions(columns=("a", "b"), types=("signed", "bytes"), shape=CurveShape("hilbert", (9, 8)),
                           reductions=(ColumnReduction.from_range((1, 9)),
                                       ColumnReduction.from_bounds(np.arange(1, 2000, dtype=np.uint64))),
                           files={"f1.parquet": (0, 17), "f2.parquet": (18, U64_MAX)})
    back = decode_regions(encode_regions([regions]))
    assert len(back) == 1 and back[0].files == regions.files and back[0].shape == regions.shape
    assert back[0].coordinate_box({"b": (5, 900)}) == regions.coordinate_box({"b": (5, 900)})
    for bad in ("{", '{"version": 2, "groups": []}', '{"version": 1, "groups": [{"curve": "x"}]}'):
        with pytest.raises(InvalidArgumentError):
            decode_regions(bad)
    with pytest.raises(InvalidArgumentError):
        CurveShape("hilbert", (40, 40))
