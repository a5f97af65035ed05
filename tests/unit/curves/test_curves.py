"""zorder and hilbert against per-row reference implementations, plus curve properties."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.curves import from_sortable_int64, hilbert, keys_to_arrow, to_sortable_int64, zorder
from hudi_layout.errors import InvalidArgumentError

SETTINGS = settings(max_examples=120, deadline=None)


def ref_interleave(point: list[int], bits: int) -> int:
    key = 0
    for b in range(bits - 1, -1, -1):
        for v in point:
            key = (key << 1) | ((v >> b) & 1)
    return key


def ref_hilbert(point: list[int], bits: int) -> int:
    """Skilling's AxesToTranspose, verbatim per row, then the transpose interleaved."""
    x = list(point)
    n = len(x)
    if n == 1:
        return x[0]
    m = 1 << (bits - 1)
    q = m
    while q > 1:
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    return ref_interleave([v ^ t for v in x], bits)


def key_as_int(key: object, total_bits: int) -> int:
    if isinstance(key, np.bytes_ | bytes):
        raw = bytes(key)
        nbytes = (total_bits + 7) // 8
        raw = raw + b"\x00" * (nbytes - len(raw))  # numpy strips trailing NULs
        return int.from_bytes(raw, "big") >> (8 * nbytes - total_bits)
    return int(key)  # type: ignore[call-overload]


@st.composite
def points(draw: st.DrawFn, max_dims: int = 9) -> tuple[list[list[int]], int]:
    n = draw(st.integers(1, max_dims))
    bits = draw(st.integers(1, 64 if n <= 2 else 40))
    row = st.lists(st.integers(0, 2**bits - 1), min_size=n, max_size=n)
    rows = draw(st.lists(row, min_size=1, max_size=12))
    return rows, bits


def as_columns(rows: list[list[int]]) -> list[np.ndarray]:
    return [np.array(col, dtype=np.uint64) for col in zip(*rows)]


def test_zorder_golden_example() -> None:
    y, x = np.array([214], np.uint64), np.array([97], np.uint64)
    key = zorder([y, x], 8)
    assert key.dtype == np.uint64 and int(key[0]) == 0b1011011000101001 == 46633


@SETTINGS
@pytest.mark.property
@given(points())
def test_zorder_matches_reference(case: tuple[list[list[int]], int]) -> None:
    rows, bits = case
    keys = zorder(as_columns(rows), bits)
    total = len(rows[0]) * bits
    if total <= 64:
        assert keys.dtype == np.uint64
    else:
        assert keys.dtype == np.dtype(f"S{(total + 7) // 8}")
    assert [key_as_int(k, total) for k in keys] == [ref_interleave(r, bits) for r in rows]


@SETTINGS
@pytest.mark.property
@given(points())
def test_hilbert_matches_reference(case: tuple[list[list[int]], int]) -> None:
    rows, bits = case
    keys = hilbert(as_columns(rows), bits)
    total = len(rows[0]) * bits
    assert [key_as_int(k, total) for k in keys] == [ref_hilbert(r, bits) for r in rows]


@SETTINGS
@pytest.mark.property
@given(points(max_dims=6))
def test_byte_keys_sort_like_the_integer_keys(case: tuple[list[list[int]], int]) -> None:
    rows, bits = case
    total = len(rows[0]) * bits
    for curve in (zorder, hilbert):
        keys = curve(as_columns(rows), bits)
        ints = [key_as_int(k, total) for k in keys]
        by_key = sorted(range(len(rows)), key=lambda i: (keys[i], i))
        by_int = sorted(range(len(rows)), key=lambda i: (ints[i], i))
        assert by_key == by_int
        assert np.argsort(keys, kind="stable").tolist() == by_int  # numpy compares S bytes unsigned
        arrow = keys_to_arrow(keys)
        by_arrow = sorted(range(len(rows)), key=lambda i: (arrow[i].as_py(), i))
        assert by_arrow == by_int


def grid(n: int, bits: int) -> np.ndarray:
    return np.array(list(itertools.product(range(1 << bits), repeat=n)), dtype=np.uint64)


@pytest.mark.parametrize("n,bits", [(2, 4), (3, 3), (4, 2), (5, 2), (8, 1), (2, 1), (2, 6)])
def test_hilbert_is_a_bijection_with_unit_steps(n: int, bits: int) -> None:
    pts = grid(n, bits)
    keys = hilbert([pts[:, j] for j in range(n)], bits)
    assert np.array_equal(np.sort(keys), np.arange(pts.shape[0], dtype=np.uint64))
    walk = pts[np.argsort(keys)].astype(np.int64)
    steps = np.abs(np.diff(walk, axis=0))
    assert np.all(steps.sum(axis=1) == 1)  # exactly one coordinate changes, by exactly 1
    assert np.all(walk[0] == 0)


@pytest.mark.parametrize("n,bits", [(2, 4), (3, 3), (4, 2)])
def test_zorder_is_a_bijection(n: int, bits: int) -> None:
    pts = grid(n, bits)
    keys = zorder([pts[:, j] for j in range(n)], bits)
    assert np.array_equal(np.sort(keys), np.arange(pts.shape[0], dtype=np.uint64))


def test_one_dimension_is_identity() -> None:
    col = np.array([5, 0, 255, 17], dtype=np.uint64)
    assert np.array_equal(hilbert([col], 8), col)
    assert np.array_equal(zorder([col], 8), col)


def test_large_inputs_chunk_consistently() -> None:
    rng = np.random.default_rng(3)
    cols = [rng.integers(0, 2**20, 200_001, dtype=np.uint64) for _ in range(3)]
    for curve in (zorder, hilbert):
        full = curve(cols, 20)
        idx = rng.choice(200_001, 50)
        sub = curve([c[idx] for c in cols], 20)
        assert np.array_equal(full[idx], sub)


def test_empty_input() -> None:
    empty = np.empty(0, dtype=np.uint64)
    assert zorder([empty, empty], 8).shape == (0,)
    assert hilbert([empty, empty], 8).shape == (0,)
    assert hilbert([empty] * 9, 8).shape == (0,)


@pytest.mark.parametrize("curve", [zorder, hilbert])
def test_validation(curve) -> None:  # type: ignore[no-untyped-def]
    a = np.array([1, 2], dtype=np.uint64)
    with pytest.raises(InvalidArgumentError, match="2\\*\\*1"):
        curve([a, a], 1)
    with pytest.raises(InvalidArgumentError, match="length"):
        curve([a, a[:1]], 8)
    with pytest.raises(InvalidArgumentError, match="at least one"):
        curve([], 8)
    with pytest.raises(InvalidArgumentError, match="bits"):
        curve([a], 0)
    with pytest.raises(InvalidArgumentError, match="negative"):
        curve([np.array([-1])], 8)
    with pytest.raises(InvalidArgumentError, match="dtype"):
        curve([np.array([1.0])], 8)


@SETTINGS
@pytest.mark.property
@given(st.lists(st.integers(0, 2**64 - 1), max_size=30))
def test_to_sortable_int64_preserves_order(values: list[int]) -> None:
    u = np.array(values, dtype=np.uint64)
    s = to_sortable_int64(u)
    assert s.dtype == np.int64
    assert np.array_equal(np.argsort(s, kind="stable"), np.argsort(u, kind="stable"))
    arrow = keys_to_arrow(u)
    assert arrow.type == pa.int64() and arrow.to_pylist() == s.tolist()
    back = from_sortable_int64(s)
    assert back.dtype == np.uint64 and np.array_equal(back, u)
