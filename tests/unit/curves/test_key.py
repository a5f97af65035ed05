"""curve_key end to end, including the golden 256x256 layout test."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hudi_layout.curves import (
    curve_key,
    default_bits_per_column,
    encode_column,
    encoded_range,
    parse_curve,
    sample_bounds,
    scale_to_bits,
    zorder,
)
from hudi_layout.errors import InvalidArgumentError


def grid_columns(offset_y: int = 0, offset_x: int = 0) -> tuple[pa.Array, pa.Array]:
    ys, xs = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    rng = np.random.default_rng(11)
    perm = rng.permutation(65536)  # the input order must not matter
    y = pa.array(ys.ravel()[perm] + offset_y, pa.int64())
    x = pa.array(xs.ravel()[perm] + offset_x, pa.int32())
    return y, x


def file_spans(keys: np.ndarray, y: pa.Array, x: pa.Array, files: int = 64) -> tuple[int, int]:
    order = np.argsort(keys, kind="stable")
    ys = y.to_numpy()[order].reshape(files, -1)
    xs = x.to_numpy()[order].reshape(files, -1)
    span_y = int((ys.max(axis=1) - ys.min(axis=1) + 1).max())
    span_x = int((xs.max(axis=1) - xs.min(axis=1) + 1).max())
    return span_y, span_x


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_golden_layout_256x256_into_64_perfect_blocks(curve: str, bits: int) -> None:
    # Offsets make the raw codes useless without min/max scaling (ports 1024..1279, years 2000..2255).
    y, x = grid_columns(offset_y=2000, offset_x=1024)
    ranges = [encoded_range(y), encoded_range(x)]
    keys = curve_key([y, x], curve=curve, bits_per_column=bits, ranges=ranges)  # type: ignore[arg-type]
    assert keys.dtype == np.uint64
    assert np.unique(keys).size == 65536
    assert file_spans(keys, y, x) == (32, 32)  # every file is a perfect 32x32 block


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
@pytest.mark.parametrize("bits", [5, 8, 12])
def test_golden_layout_with_sampled_bounds(curve: str, bits: int) -> None:
    """bits=5: 32 quantile buckets of 8 values per axis; 8 and 12: one bucket per distinct value."""
    y, x = grid_columns(offset_y=-128, offset_x=10**9)
    bounds = [sample_bounds(encode_column(c), bits) for c in (y, x)]
    keys = curve_key([y, x], curve=curve, bits_per_column=bits, bounds=bounds)
    assert file_spans(keys, y, x) == (32, 32)


def test_sampled_bounds_from_a_partial_sample_stay_close() -> None:
    y, x = grid_columns(offset_y=-128, offset_x=10**9)
    rng = np.random.default_rng(5)
    bounds = [sample_bounds(rng.choice(encode_column(c), 5_000), 4) for c in (y, x)]
    keys = curve_key([y, x], curve="hilbert", bits_per_column=4, bounds=bounds)
    order = np.argsort(keys, kind="stable")
    ys = y.to_numpy()[order].reshape(64, -1)
    xs = x.to_numpy()[order].reshape(64, -1)
    mean_span = ((np.ptp(ys, axis=1) + 1).mean() + (np.ptp(xs, axis=1) + 1).mean()) / 2
    assert mean_span < 48  # perfect is 32 (full data), DIRECT gives 256; sample noise makes cells uneven


def test_hudi_direct_layout_is_poor_on_offset_columns() -> None:
    """Without ranges curve_key uses Hudi's DIRECT top bits: the small-range columns barely interleave."""
    y, x = grid_columns(offset_y=2000, offset_x=1024)
    keys = curve_key([y, x], curve="zorder", bits_per_column=32)
    span_y, span_x = file_spans(keys, y, x)
    assert (span_y, span_x) == (256, 256)  # all keys tie: files span everything


def test_curve_names() -> None:
    assert parse_curve("Z-Order") == parse_curve("zorder") == parse_curve("z_order") == "zorder"
    assert parse_curve(" HILBERT ") == "hilbert"
    with pytest.raises(InvalidArgumentError, match="peano"):
        parse_curve("peano")
    with pytest.raises(InvalidArgumentError):
        curve_key([pa.array([1])], curve="linear")


def test_default_bits() -> None:
    assert [default_bits_per_column(n) for n in (1, 2, 3, 4, 8, 64, 65)] == [32, 32, 21, 16, 8, 1, 1]
    keys = curve_key([pa.array([1, 2]), pa.array([3.0, 4.0]), pa.array(["a", "b"])], curve="hilbert")
    assert keys.dtype == np.uint64


def test_byte_keys_when_bits_exceed_64() -> None:
    cols = [pa.array([1, 2, 3], pa.int64()) for _ in range(3)]
    keys = curve_key(cols, curve="zorder", bits_per_column=32)
    assert keys.dtype == np.dtype("S12")
    assert list(np.argsort(keys)) == [0, 1, 2]


def test_ranges_clamp_nulls_to_an_end() -> None:
    col = pa.array([5, None, 1, 9], pa.int64())
    rng = encoded_range(col)
    last = curve_key([col], curve="zorder", bits_per_column=8, ranges=[rng])
    assert last.tolist() == [127, 255, 0, 255]
    first = curve_key([col], curve="zorder", bits_per_column=8, ranges=[rng], nulls_first=True)
    assert first.tolist() == [127, 0, 0, 255]
    all_null = curve_key([pa.nulls(2, pa.int64()), col.slice(0, 2)], curve="hilbert", ranges=[None, rng])
    assert all_null.shape == (2,)


def test_matches_manual_pipeline() -> None:
    a = pa.array(np.random.default_rng(2).normal(size=1000))
    b = pa.array([f"k{i % 97}" for i in range(1000)])
    ra, rb = encoded_range(a), encoded_range(b)
    assert ra is not None and rb is not None
    manual = zorder([scale_to_bits(encode_column(a), *ra, 16), scale_to_bits(encode_column(b), *rb, 16)], 16)
    assert np.array_equal(curve_key([a, b], curve="z-order", bits_per_column=16, ranges=[ra, rb]), manual)


def test_argument_errors_name_the_problem() -> None:
    col = pa.array([1, 2])
    with pytest.raises(InvalidArgumentError, match="not both"):
        curve_key([col], curve="zorder", ranges=[(0, 1)], bounds=[np.array([], np.uint64)])
    with pytest.raises(InvalidArgumentError, match="2 ranges given for 1 columns"):
        curve_key([col], curve="zorder", ranges=[(0, 1), (0, 1)])
    with pytest.raises(InvalidArgumentError, match="at least one"):
        curve_key([], curve="zorder")
    with pytest.raises(InvalidArgumentError, match="bits_per_column"):
        curve_key([col], curve="zorder", bits_per_column=0)
    with pytest.raises(InvalidArgumentError, match="'tags'"):
        curve_key([col, pa.array([[1], [2]])], curve="zorder", names=["id", "tags"])
