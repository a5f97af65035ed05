"""Order-preservation properties of encode_column against Spark ORDER BY semantics."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from decimal import Context, Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.curves import MAX_CODE, NAN_CODE, encode_column, encoded_range
from hudi_layout.errors import InvalidArgumentError

SETTINGS = settings(max_examples=100, deadline=None)

NULL_LAST = (1,)
NULL_FIRST = (-1,)


def check_order(
    values: list[Any], arrow_type: pa.DataType, key: Callable[[Any], Any], *, strict: bool, nulls_first: bool
) -> None:
    """Sort by the Spark reference key; codes must be non-decreasing, equal on ties, strict if exact."""
    codes = encode_column(pa.array(values, type=arrow_type), nulls_first=nulls_first)
    assert codes.dtype == np.uint64 and codes.shape == (len(values),)

    def ref(v: Any) -> Any:
        if v is None:
            return NULL_FIRST if nulls_first else NULL_LAST
        return (0, key(v))

    order = sorted(range(len(values)), key=lambda i: ref(values[i]))
    for a, b in zip(order, order[1:]):
        ka, kb = ref(values[a]), ref(values[b])
        ca, cb = int(codes[a]), int(codes[b])
        if ka == kb:
            assert ca == cb, (values[a], values[b])
        else:
            assert ca <= cb, (values[a], values[b], hex(ca), hex(cb))
            if strict and values[a] is not None and values[b] is not None:
                assert ca < cb, (values[a], values[b])
    for v, c in zip(values, codes):
        if v is None:
            assert c == (np.uint64(0) if nulls_first else MAX_CODE)


def nullable(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(st.one_of(st.none(), strategy, strategy, strategy), max_size=40)


INT_TYPES = [(pa.int8(), 8), (pa.int16(), 16), (pa.int32(), 32), (pa.int64(), 64)]


@pytest.mark.parametrize("arrow_type,width", INT_TYPES, ids=str)
@SETTINGS
@pytest.mark.property
@given(data=st.data(), nulls_first=st.booleans())
def test_integers_strict(arrow_type: pa.DataType, width: int, data: Any, nulls_first: bool) -> None:
    ints = st.integers(-(2 ** (width - 1)), 2 ** (width - 1) - 1)
    values = data.draw(nullable(ints))
    check_order(values, arrow_type, lambda v: v, strict=True, nulls_first=nulls_first)


def test_integer_widths_share_one_code_space() -> None:
    vals = [-128, -1, 0, 1, 127]
    expected = encode_column(pa.array(vals, pa.int64()))
    for t in (pa.int8(), pa.int16(), pa.int32()):
        assert np.array_equal(encode_column(pa.array(vals, t)), expected)
    assert int(expected[2]) == 1 << 63


def float_key(v: float) -> Any:
    return (1, 0.0) if math.isnan(v) else (0, v + 0.0)


@pytest.mark.parametrize("width", [32, 64])
@SETTINGS
@pytest.mark.property
@given(data=st.data(), nulls_first=st.booleans())
def test_floats_spark_order(width: int, data: Any, nulls_first: bool) -> None:
    floats = st.floats(width=width, allow_nan=True, allow_infinity=True)
    values = data.draw(nullable(floats))
    arrow_type = pa.float32() if width == 32 else pa.float64()
    check_order(values, arrow_type, float_key, strict=True, nulls_first=nulls_first)


def test_float_special_values() -> None:
    nan_payload = np.frombuffer(np.uint64(0xFFF8_0000_0000_0001).tobytes(), np.float64)[0]
    arr = pa.array([0.0, -0.0, float("nan"), -float("nan"), nan_payload, float("inf"), None])
    codes = encode_column(arr)
    assert codes[0] == codes[1] == np.uint64(1 << 63)
    assert codes[2] == codes[3] == codes[4] == NAN_CODE
    assert codes[5] < codes[2] < codes[6] == MAX_CODE


@pytest.mark.parametrize("precision,scale", [(5, 2), (10, 0), (18, 4), (19, 0), (20, 3), (38, 0), (38, 10)])
@SETTINGS
@pytest.mark.property
@given(data=st.data(), nulls_first=st.booleans())
def test_decimals(precision: int, scale: int, data: Any, nulls_first: bool) -> None:
    limit = 10**precision - 1
    unscaled = st.integers(-limit, limit)
    ctx = Context(prec=60)  # the default 28 digits would round 38-digit values
    values = [None if u is None else Decimal(u).scaleb(-scale, ctx) for u in data.draw(nullable(unscaled))]
    check_order(
        values, pa.decimal128(precision, scale), lambda v: v, strict=precision <= 18, nulls_first=nulls_first
    )


def test_decimal_high_precision_keeps_top_bits() -> None:
    # precision 38 keeps the top 64 bits of the 128-bit value: values far apart stay ordered.
    t = pa.decimal128(38, 0)
    big = [Decimal(-(10**37)), Decimal(-(2**64)), Decimal(0), Decimal(2**64), Decimal(10**37)]
    codes = encode_column(pa.array(big, t))
    assert np.all(np.diff(codes.astype(object)) > 0)
    # precision 19 drops one low bit only
    codes19 = encode_column(pa.array([Decimal(10), Decimal(12), Decimal(-10)], pa.decimal128(19, 0)))
    assert codes19[2] < codes19[0] < codes19[1]


@SETTINGS
@pytest.mark.property
@given(values=nullable(st.dates()), nulls_first=st.booleans())
def test_date32(values: list[dt.date | None], nulls_first: bool) -> None:
    check_order(values, pa.date32(), lambda v: v, strict=True, nulls_first=nulls_first)


@pytest.mark.parametrize(
    "unit,tz", [("s", None), ("ms", "UTC"), ("us", None), ("us", "Europe/Berlin"), ("ns", "UTC")]
)
@SETTINGS
@pytest.mark.property
@given(data=st.data(), nulls_first=st.booleans())
def test_timestamps(unit: str, tz: str | None, data: Any, nulls_first: bool) -> None:
    # Values in the unit's ticks; s/ms/us are exact within the microsecond range, ns floors (monotone).
    us_per_tick = {"s": 10**6, "ms": 10**3, "us": 1, "ns": 1}[unit]
    bound = (2**63 - 1) // us_per_tick
    ticks = data.draw(nullable(st.integers(-bound, bound)))
    # Python datetimes cannot hold the full range: the reference order is the ticks' order.
    arr = pa.array(ticks, pa.int64()).cast(pa.timestamp(unit, tz=tz))
    codes = encode_column(arr, nulls_first=nulls_first)
    _check_codes(ticks, codes, strict=unit != "ns", nulls_first=nulls_first)


def _check_codes(values: list[Any], codes: np.ndarray, *, strict: bool, nulls_first: bool) -> None:
    def ref(v: Any) -> Any:
        return (NULL_FIRST if nulls_first else NULL_LAST) if v is None else (0, v)

    order = sorted(range(len(values)), key=lambda i: ref(values[i]))
    for a, b in zip(order, order[1:]):
        if ref(values[a]) == ref(values[b]):
            assert codes[a] == codes[b]
        else:
            assert codes[a] <= codes[b]
            if strict and values[a] is not None and values[b] is not None:
                assert codes[a] < codes[b]


def test_timestamp_units_agree_on_microseconds() -> None:
    micros = [-1_500_000, 0, 1_700_000_000_000_000]
    expected = encode_column(pa.array(micros, pa.timestamp("us")))
    assert np.array_equal(expected, encode_column(pa.array(micros, pa.timestamp("us", tz="UTC"))))
    secs = encode_column(pa.array([m // 10**6 for m in micros], pa.timestamp("s", tz="UTC")))
    nanos = encode_column(pa.array([m * 1000 + 999 for m in micros], pa.timestamp("ns")))
    assert np.array_equal(nanos, expected)
    assert np.array_equal(secs, encode_column(pa.array([-2_000_000, 0, micros[2]], pa.timestamp("us"))))
    # Seconds beyond the microsecond range saturate instead of wrapping around.
    extreme = encode_column(pa.array([-(2**62), -(2**61), 0, 2**61, 2**62], pa.timestamp("s")))
    assert np.all(extreme[:-1] <= extreme[1:]) and extreme[0] < extreme[2] < extreme[-1]


@SETTINGS
@pytest.mark.property
@given(values=nullable(st.booleans()), nulls_first=st.booleans())
def test_booleans(values: list[bool | None], nulls_first: bool) -> None:
    check_order(values, pa.bool_(), lambda v: v, strict=True, nulls_first=nulls_first)


STRING_TYPES = [pa.string(), pa.large_string()] + ([pa.string_view()] if hasattr(pa, "string_view") else [])
BINARY_TYPES = [pa.binary(), pa.large_binary()] + ([pa.binary_view()] if hasattr(pa, "binary_view") else [])


@pytest.mark.parametrize("arrow_type", STRING_TYPES, ids=str)
@SETTINGS
@pytest.mark.property
@given(values=nullable(st.text(max_size=12)), nulls_first=st.booleans())
def test_strings_by_utf8_bytes(arrow_type: pa.DataType, values: list[str | None], nulls_first: bool) -> None:
    check_order(values, arrow_type, lambda v: v.encode("utf-8"), strict=False, nulls_first=nulls_first)


@pytest.mark.parametrize("arrow_type", BINARY_TYPES, ids=str)
@SETTINGS
@pytest.mark.property
@given(values=nullable(st.binary(max_size=12)), nulls_first=st.booleans())
def test_binaries(arrow_type: pa.DataType, values: list[bytes | None], nulls_first: bool) -> None:
    check_order(values, arrow_type, lambda v: v, strict=False, nulls_first=nulls_first)


@SETTINGS
@pytest.mark.property
@given(values=nullable(st.binary(max_size=8).filter(lambda b: not b.endswith(b"\x00"))))
def test_short_binaries_are_exact(values: list[bytes | None]) -> None:
    """Up to 8 bytes without trailing NULs nothing collapses, so the map is strict."""
    check_order(values, pa.binary(), lambda v: v, strict=True, nulls_first=False)


def test_string_prefix_encoding() -> None:
    codes = encode_column(pa.array(["", "a", "ab", "abcdefgh", "abcdefghij", "é", None]))
    assert codes[0] == 0
    assert codes[1] == np.uint64(0x61 << 56)
    assert codes[2] == np.uint64(0x6162 << 48)
    assert codes[3] == codes[4] == np.uint64(0x6162636465666768)  # common 8-byte prefix collapses
    assert codes[5] == np.uint64(0xC3A9 << 48)
    assert codes[6] == MAX_CODE


@pytest.mark.parametrize(
    "arr",
    [
        pa.array(["x", None, "hello world", "", "abc", None, "zzzzzzzzzzz"]),
        pa.array([5, None, -3, 7, 0, None, 1], pa.int32()),
        pa.array([1.5, None, -0.0, float("nan"), 2.0, None, -7.0]),
        pa.array([Decimal("1.25"), None, Decimal("-3.50"), Decimal("0"), None, Decimal("9"), Decimal("2")]),
        pa.array([True, None, False, True, None, False, True]),
    ],
    ids=["string", "int32", "double", "decimal", "bool"],
)
def test_slices_and_chunks(arr: pa.Array) -> None:
    full = encode_column(arr)
    for start in range(len(arr)):
        for stop in range(start, len(arr) + 1):
            assert np.array_equal(encode_column(arr.slice(start, stop - start)), full[start:stop])
    chunked = pa.chunked_array([arr.slice(0, 3), arr.slice(3, 0), arr.slice(3)])
    assert np.array_equal(encode_column(chunked), full)
    assert encode_column(pa.chunked_array([], type=arr.type)).shape == (0,)


def test_other_exact_types() -> None:
    fixed = encode_column(pa.array([b"abd", None, b"abc"], pa.binary(3)))
    assert fixed.tolist() == [0x616264 << 40, 2**64 - 1, 0x616263 << 40]
    assert encode_column(pa.array([0, 2**64 - 2, None], pa.uint64())).tolist() == [0, 2**64 - 2, 2**64 - 1]
    times = encode_column(pa.array([dt.time(0, 0, 1), dt.time(0, 0, 0)], pa.time64("us")))
    assert times.tolist() == [2**63 + 1_000_000, 2**63]
    dates64 = encode_column(pa.array([dt.date(1969, 12, 31), dt.date(1970, 1, 1)], pa.date64()))
    assert dates64.tolist() == [2**63 - 86_400_000, 2**63]


def test_dictionary_and_null_type() -> None:
    d = pa.array(["b", "a", None, "b"]).dictionary_encode()
    assert np.array_equal(encode_column(d), encode_column(pa.array(["b", "a", None, "b"])))
    assert np.array_equal(encode_column(pa.nulls(3)), np.full(3, MAX_CODE))
    assert np.array_equal(encode_column(pa.nulls(3), nulls_first=True), np.zeros(3, np.uint64))


@pytest.mark.parametrize(
    "arr",
    [
        pa.array([[1, 2]]),
        pa.array([{"a": 1}]),
        pa.array([[("k", 1)]], type=pa.map_(pa.string(), pa.int64())),
    ],
    ids=["list", "struct", "map"],
)
def test_unsupported_types_name_type_and_column(arr: pa.Array) -> None:
    with pytest.raises(InvalidArgumentError) as exc:
        encode_column(arr, name="tags")
    assert str(arr.type) in str(exc.value) and "tags" in str(exc.value)


def test_non_arrow_input_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="pyarrow"):
        encode_column([1, 2, 3])  # type: ignore[arg-type]


def test_encoded_range_ignores_nulls() -> None:
    arr = pa.chunked_array([pa.array([3, None, -2], pa.int64()), pa.array([None, 10], pa.int64())])
    lo, hi = encoded_range(arr)  # type: ignore[misc]
    assert lo == (1 << 63) - 2 and hi == (1 << 63) + 10
    assert encoded_range(pa.array([None, None], pa.int64())) is None


def test_million_strings_fast() -> None:
    import time

    rng = np.random.default_rng(1)
    n = 1_000_000
    lengths = rng.integers(0, 20, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    data = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    encode_column(arr[:1000])
    start = time.perf_counter()
    codes = encode_column(arr)
    elapsed = time.perf_counter() - start
    assert codes.shape == (1_000_000,)
    assert elapsed < 0.5, f"1M strings took {elapsed:.3f}s"  # ~20 ms typically; generous for busy CI
