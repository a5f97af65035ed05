"""Column weights: bits per column and the compound curve index."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hudi_layout.curves import (
    bits_for_weights,
    curve_key,
    default_bits_per_column,
    encoded_range,
    hilbert,
    weighted_index,
    zorder,
)
from hudi_layout.errors import InvalidArgumentError


def test_bits_for_weights() -> None:
    assert bits_for_weights([1, 1, 1, 1]) == (default_bits_per_column(4),) * 4
    assert bits_for_weights([2, 1, 1, 1]) == (16, 15, 15, 15)  # twice as heavy: one more top bit
    assert bits_for_weights([4, 1]) == (32, 30)
    assert bits_for_weights([1, 1000]) == (22, 32)
    assert bits_for_weights([3, 2, 2, 3]) == (16, 15, 15, 16)  # log2(2/3) = -0.58 rounds to -1
    assert sum(bits_for_weights([5, 1, 1, 1, 1, 1])) <= 64
    for bad in ([], [0, 1], [-1, 1], [float("nan")]):
        with pytest.raises(InvalidArgumentError):
            bits_for_weights(bad)


@pytest.mark.parametrize("kind", ["zorder", "hilbert"])
def test_equal_bits_is_the_plain_curve(kind: str) -> None:
    rng = np.random.default_rng(1)
    cols = [rng.integers(0, 1 << 12, 5000).astype(np.uint64) for _ in range(3)]
    plain = zorder(cols, 12) if kind == "zorder" else hilbert(cols, 12)
    assert np.array_equal(weighted_index(cols, 12, kind), plain)
    assert np.array_equal(weighted_index(cols, (12, 12, 12), kind), plain)


@pytest.mark.parametrize("kind", ["zorder", "hilbert"])
def test_the_heavier_column_splits_first(kind: str) -> None:
    """64 x 64 grid cut into 8 files: with equal bits each file is 16 x 32 or 32 x 16 (z: 32 x 16); giving
    y one more bit makes y split first, so files are thinner in y than in x."""
    ys, xs = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    y = ys.ravel().astype(np.uint64)
    x = xs.ravel().astype(np.uint64)
    heavy = weighted_index([y, x >> np.uint64(1)], (6, 5), kind)
    order = np.argsort(heavy, kind="stable")
    ys_f = y[order].reshape(8, -1)
    xs_f = x[order].reshape(8, -1)
    span_y = int((ys_f.max(axis=1) - ys_f.min(axis=1) + 1).max())
    span_x = int((xs_f.max(axis=1) - xs_f.min(axis=1) + 1).max())
    assert span_y < span_x
    assert np.unique(heavy).size == 64 * 32


def test_curve_key_takes_bits_per_column() -> None:
    a = pa.array(np.arange(1000))
    b = pa.array(np.arange(1000)[::-1].copy())
    ranges = [encoded_range(a), encoded_range(b)]
    keys = curve_key([a, b], curve="hilbert", bits_per_column=(20, 12), ranges=ranges)  # type: ignore[arg-type]
    assert keys.dtype == np.uint64 and int(keys.max()) < 1 << 32
    with pytest.raises(InvalidArgumentError, match="bits_per_column"):
        curve_key([a, b], curve="zorder", bits_per_column=(40, 30), ranges=ranges)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="bits_per_column"):
        curve_key([a, b], curve="zorder", bits_per_column=(4,), ranges=ranges)  # type: ignore[arg-type]
