"""scale_to_bits, hudi_direct_bits, sample_bounds and bucketize."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.curves import (
    bucketize,
    encode_column,
    encoded_range,
    hudi_direct_bits,
    sample_bounds,
    scale_to_bits,
)
from hudi_layout.errors import InvalidArgumentError

U64 = st.integers(0, 2**64 - 1)
SETTINGS = settings(max_examples=200, deadline=None)


@SETTINGS
@pytest.mark.property
@given(
    codes=st.lists(U64, min_size=1, max_size=50),
    a=U64,
    b=U64,
    bits=st.integers(1, 64),
)
def test_scale_is_monotone_and_in_range(codes: list[int], a: int, b: int, bits: int) -> None:
    lo, hi = min(a, b), max(a, b)
    arr = np.array(sorted(codes), dtype=np.uint64)
    out = scale_to_bits(arr, lo, hi, bits)
    assert out.dtype == np.uint64
    assert all(int(x) <= int(y) for x, y in zip(out, out[1:]))
    assert all(int(x) < 2**bits for x in out)
    ends = scale_to_bits(np.array([lo, hi], dtype=np.uint64), lo, hi, bits)
    assert int(ends[0]) == 0
    if hi > lo:
        k = (hi - lo).bit_length()
        if k + bits <= 64 or bits <= 32:
            assert int(ends[1]) == 2**bits - 1  # exact stretch: hi -> top of the range
        else:
            assert int(ends[1]) >= 2 ** (bits - 1)  # shift: top bit always used


@SETTINGS
@pytest.mark.property
@given(
    lo=st.integers(0, 2**64 - 2**16),
    span=st.integers(1, 2**16 - 1),
    bits=st.integers(16, 32),
    data=st.data(),
)
def test_scale_is_lossless_when_range_fits(lo: int, span: int, bits: int, data: st.DataObject) -> None:
    hi = lo + span
    values = data.draw(st.lists(st.integers(lo, hi), min_size=2, max_size=30, unique=True))
    out = scale_to_bits(np.array(sorted(values), dtype=np.uint64), lo, hi, bits)
    assert all(int(x) < int(y) for x, y in zip(out, out[1:]))


def test_port_column_uses_top_bits_but_hudi_direct_does_not() -> None:
    ports = encode_column(pa.array(np.arange(65536), pa.int32()))
    lo, hi = encoded_range(pa.array(np.arange(65536), pa.int32()))  # type: ignore[misc]
    scaled = scale_to_bits(ports, lo, hi, 16)
    assert np.array_equal(scaled, np.arange(65536, dtype=np.uint64))  # lossless, full 16-bit range
    direct = hudi_direct_bits(ports, 16)
    assert np.unique(direct).size == 1  # 48 constant high bits: the port contributes nothing
    assert int(scale_to_bits(ports, lo, hi, 8)[-1]) == 255
    assert np.unique(hudi_direct_bits(ports, 64)).size == 65536


def test_scale_clamps_out_of_range_codes_and_constant_column() -> None:
    codes = np.array([0, 10, 15, 20, 2**64 - 1], dtype=np.uint64)
    assert scale_to_bits(codes, 10, 20, 4).tolist() == [0, 0, 7, 15, 15]
    assert scale_to_bits(codes, 7, 7, 8).tolist() == [0] * 5


def test_scale_rejects_bad_arguments() -> None:
    codes = np.zeros(2, np.uint64)
    with pytest.raises(InvalidArgumentError):
        scale_to_bits(codes, 5, 4, 8)
    with pytest.raises(InvalidArgumentError):
        scale_to_bits(codes, 0, 2**64, 8)
    with pytest.raises(InvalidArgumentError):
        scale_to_bits(codes, 0, 1, 0)
    with pytest.raises(InvalidArgumentError):
        scale_to_bits(codes, 0, 1, 65)
    with pytest.raises(InvalidArgumentError):
        scale_to_bits(np.array([1.5]), 0, 1, 8)


def test_hudi_direct_bits() -> None:
    codes = np.array([0, 1 << 63, 2**64 - 1], dtype=np.uint64)
    assert hudi_direct_bits(codes, 1).tolist() == [0, 1, 1]
    assert hudi_direct_bits(codes, 8).tolist() == [0, 128, 255]


@SETTINGS
@pytest.mark.property
@given(sample=st.lists(U64, max_size=300), bits=st.integers(1, 10))
def test_sample_bounds_shape(sample: list[int], bits: int) -> None:
    bounds = sample_bounds(np.array(sample, dtype=np.uint64), bits)
    assert bounds.dtype == np.uint64
    assert bounds.size <= 2**bits - 1
    assert np.all(bounds[1:] > bounds[:-1])
    distinct = sorted(set(sample))
    if len(distinct) <= 2**bits:
        assert bounds.tolist() == distinct[1:]


@SETTINGS
@pytest.mark.property
@given(
    codes=st.lists(U64, min_size=1, max_size=60),
    sample=st.lists(U64, max_size=100),
    bits=st.integers(1, 12),
)
def test_bucketize_monotone_and_spread(codes: list[int], sample: list[int], bits: int) -> None:
    bounds = sample_bounds(np.array(sample, dtype=np.uint64), bits)
    arr = np.array(sorted(codes), dtype=np.uint64)
    ids = bucketize(arr, bounds)
    assert np.all(ids[1:] >= ids[:-1]) and int(ids.max()) <= bounds.size
    spread = bucketize(arr, bounds, bits)
    assert np.all(spread[1:] >= spread[:-1]) and all(int(x) < 2**bits for x in spread)
    if bounds.size:
        # the top bucket reaches the top of the coordinate range
        top = bucketize(np.array([2**64 - 1], dtype=np.uint64), bounds, bits)
        assert int(top[0]) == 2**bits - 1


def test_few_distinct_values_spread_over_top_bits() -> None:
    bounds = sample_bounds(np.array([5, 5, 9, 9, 100], dtype=np.uint64), 8)
    assert bounds.tolist() == [9, 100]
    assert bucketize(np.array([0, 5, 9, 50, 100, 1000], dtype=np.uint64), bounds, 8).tolist() == [
        0, 0, 127, 127, 255, 255,
    ]


def test_sampling_balances_skewed_column() -> None:
    rng = np.random.default_rng(7)
    values = np.floor(rng.lognormal(0, 2.5, 200_000)).astype(np.int64)
    codes = encode_column(pa.array(values))
    bounds = sample_bounds(rng.choice(codes, 20_000), 4)
    counts = np.bincount(bucketize(codes, bounds).astype(np.int64))
    # lognormal: most rows sit at small values; quantile buckets stay within a few x of n / 16,
    # except where one heavy value covers several quantiles (deduplicated into one bucket).
    big = counts[counts > 0]
    assert big.size >= 8
    lo, hi = encoded_range(pa.array(values))  # type: ignore[misc]
    minmax = np.bincount(scale_to_bits(codes, lo, hi, 4).astype(np.int64), minlength=16)
    assert minmax[0] > 0.9 * values.size  # min/max scaling leaves almost everything in one cell
    assert big.max() < 0.5 * values.size


def test_sampling_spreads_strings_with_shared_prefix() -> None:
    names = [f"user{i:04d}" for i in range(10_000)]  # 4 shared bytes, then 4 digits
    codes = encode_column(pa.array(names))
    assert np.unique(hudi_direct_bits(codes, 8)).size == 1
    bounds = sample_bounds(codes[::7], 8)
    ids = bucketize(codes, bounds, 8)
    assert int(ids.min()) == 0 and int(ids.max()) == 255
    counts = np.bincount(bucketize(codes, bounds).astype(np.int64))
    assert counts.max() <= 3 * 10_000 / 256


def test_bucketize_rejects_unsorted_or_too_many_bounds() -> None:
    with pytest.raises(InvalidArgumentError, match="sorted"):
        bucketize(np.zeros(1, np.uint64), np.array([3, 1], dtype=np.uint64))
    with pytest.raises(InvalidArgumentError, match="buckets"):
        bucketize(np.zeros(1, np.uint64), np.arange(4, dtype=np.uint64), 2)


def test_bucketize_lookup_table_matches_binary_search_and_leaves_with_its_bounds() -> None:
    """Narrow bounds (a 16-bit port's codes) get a lookup table; its buckets are searchsorted's, for codes
    below, inside and above the bounds, and the table is dropped when its bounds array is."""
    import gc

    from hudi_layout.curves import reduce as reduce_mod

    rng = np.random.default_rng(5)
    base = np.uint64(1 << 63)
    for span in (1, 300, 65_536, (1 << 17) + 5):  # the last is too wide for a table
        sample = base + rng.integers(0, span, 20_000).astype(np.uint64)
        bounds = sample_bounds(sample, 12)
        codes = base + rng.integers(0, span + 40, 50_000).astype(np.uint64) - np.uint64(20)
        expected = np.searchsorted(bounds, codes, side="right").astype(np.uint64)
        assert np.array_equal(bucketize(codes, bounds), expected)
        assert np.array_equal(bucketize(codes, bounds, 12), scale_to_bits(expected, 0, bounds.size, 12))
        assert np.array_equal(bucketize(codes[:10], bounds), expected[:10])  # few codes: no table built
        assert np.array_equal(bucketize(codes, bounds), expected)
        has_table = reduce_mod._bucket_tables.get(id(bounds)) is not None
        assert has_table == (bounds.size > 0 and int(bounds[-1] - bounds[0]) < (1 << 17))
        key = id(bounds)
        del bounds
        gc.collect()
        assert key not in reduce_mod._bucket_tables
