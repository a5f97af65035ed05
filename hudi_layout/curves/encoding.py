"""Order-preserving fixed-width encodings of Arrow column values to ``uint64`` codes.

Every supported Spark-compatible Arrow type maps to a ``numpy.uint64`` code such that sorting by the code
(unsigned) is consistent with Spark's ``ORDER BY`` on the original values:

* ``a < b``  ⇒ ``enc(a) <= enc(b)`` (monotone non-decreasing), and
* ``a == b`` ⇒ ``enc(a) == enc(b)``;
* for the exact (non-truncating) types the map is strictly increasing: ``a < b`` ⇒ ``enc(a) < enc(b)``.

Exact types: integers, booleans, dates, times, durations, timestamps in s/ms/us (within the int64
microsecond range; beyond it they saturate), floats, and decimals of precision <= 18. Truncating
(monotone but lossy) types: strings / binaries (first 8 bytes), decimals of precision > 18 (low bits
dropped), and timestamps finer than microseconds (floored to microseconds).

Because the encoding is monotone, it commutes with ``min``/``max``: the code of Spark's ``min(col)`` is
the minimum of the codes, so a global range can be computed either way.

Nulls map to the maximum code ``2**64 - 1`` by default (nulls sort last, as in Hudi's direct method; note
that Spark's own ``ASC`` default is ``NULLS FIRST``); with ``nulls_first=True``
they map to ``0``. A real value may tie with the null code (with nulls last: a binary starting with
eight ``0xff`` bytes; with nulls first: the empty string, int64's minimum, unsigned 0); for layout
purposes a tie only means the null rows share a curve cell with those values, which is harmless.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError

SIGN_BIT = np.uint64(1 << 63)
MAX_CODE = np.uint64((1 << 64) - 1)
#: Code of every NaN: above +inf (0xFFF0...) and below the null code, as Spark sorts NaN greatest.
NAN_CODE = np.uint64(0xFFF8_0000_0000_0000)

# _PREFIX_MASKS[k] keeps the top k bytes of a big-endian uint64 (k = 0..8).
_PREFIX_MASKS = np.array(
    [((1 << (8 * k)) - 1) << (64 - 8 * k) for k in range(9)], dtype=np.uint64
)

_TIME_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def encode_column(
    array: pa.Array | pa.ChunkedArray, *, nulls_first: bool = False, name: str | None = None
) -> np.ndarray:
    """Encode ``array`` to order-preserving ``uint64`` codes (one per row).

    Supported types and their code, before nulls are substituted:

    * int8/16/32/64 (and uint8..64, date32/date64, time32/64, duration): the value as int64 with the sign
      bit flipped (uint64 values as they are). All integer widths share one code space, so an int column
      that evolved to bigint keeps its codes.
    * float32/float64: IEEE-754 total order on float64 (float32 widens exactly): positives get the sign bit
      set, negatives have all bits flipped; ``-0.0`` is normalised to ``0.0`` and every NaN maps to one
      code above ``+inf`` (Spark sorts NaN greatest).
    * decimal (precision <= 38): the unscaled integer. For precision <= 18 it fits int64 and is encoded
      exactly like an integer. For precision > 18 the 128-bit two's complement value is arithmetically
      shifted right by ``bits_needed(precision) - 64`` bits (at most 64: for precision 38 this is the top
      64 bits), then sign-flipped: monotone non-decreasing, lossy in the dropped low bits.
    * timestamp (any unit, with or without time zone): microseconds since the epoch (UTC instant);
      s/ms are multiplied up (saturating at the int64 limits), ns is floored to microseconds.
    * boolean: ``False`` < ``True``, encoded as the integers 0 and 1.
    * string / large_string / binary / large_binary (and view types): the first 8 bytes, big-endian,
      zero-padded on the right, so lexicographic (UTF-8 byte) order is preserved. Values sharing their
      first 8 bytes collapse onto one code, and ``b"a"`` ties with ``b"a\\x00"``.
    * dictionary arrays are decoded first; the null type encodes every row as null.

    Nulls get ``2**64 - 1`` (last) or ``0`` with ``nulls_first=True``; a real value may tie with them.

    Raises :class:`InvalidArgumentError` for unsupported types (list, map, struct, ...), naming the type
    and ``name`` when given.
    """
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks == 0:
            return np.empty(0, dtype=np.uint64)
        parts = [encode_column(c, nulls_first=nulls_first, name=name) for c in array.chunks]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    if not isinstance(array, pa.Array):
        raise InvalidArgumentError(
            f"encode_column expects a pyarrow Array or ChunkedArray{_for(name)}, "
            f"got {type(array).__name__}"
        )
    codes = _encode_values(array, name)
    if array.null_count:
        mask = array.is_null().to_numpy(zero_copy_only=False)
        codes[mask] = np.uint64(0) if nulls_first else MAX_CODE
    return codes


def encoded_range(
    array: pa.Array | pa.ChunkedArray, *, name: str | None = None
) -> tuple[int, int] | None:
    """``(min, max)`` code over the non-null values of ``array``; ``None`` when every value is null.

    This is the per-column ``(lo, hi)`` that :func:`hudi_layout.curves.scale_to_bits` expects; merge
    ranges of several batches with ``(min(los), max(his))``.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], type=array.type)
    if array.null_count:
        array = array.drop_null()
    codes = encode_column(array, name=name)
    if codes.size == 0:
        return None
    return int(codes.min()), int(codes.max())


def _for(name: str | None) -> str:
    return f" for column {name!r}" if name else ""


def _encode_values(arr: pa.Array, name: str | None) -> np.ndarray:
    """Codes for every slot of ``arr``; null slots hold arbitrary codes (overwritten by the caller)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        return _encode_values(arr.dictionary_decode(), name)
    if pa.types.is_null(t):
        return np.zeros(n, dtype=np.uint64)
    if pa.types.is_boolean(t):
        vals = arr.fill_null(False).to_numpy(zero_copy_only=False)
        return vals.astype(np.uint64) ^ SIGN_BIT
    if pa.types.is_signed_integer(t) or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return _signed(_primitive(arr, _int_dtype(t.bit_width)))
    if pa.types.is_unsigned_integer(t):
        return _primitive(arr, np.dtype(f"<u{t.bit_width // 8}")).astype(np.uint64)
    if pa.types.is_timestamp(t):
        return _signed(_to_micros(_primitive(arr, np.dtype("<i8")), t.unit))
    if pa.types.is_floating(t):
        if t.bit_width == 16:
            return _encode_float(_primitive(arr, np.dtype("<f2")).astype(np.float64))
        return _encode_float(_primitive(arr, np.dtype(f"<f{t.bit_width // 8}")).astype(np.float64, copy=True))
    if pa.types.is_decimal(t):
        return _encode_decimal(arr, name)
    if _is_binary_like(t):
        return _encode_prefix(arr)
    raise InvalidArgumentError(
        f"unsupported Arrow type {t}{_for(name)}: curve encoding supports integers, floats, decimals, "
        "dates, timestamps, booleans, strings and binaries"
    )


def _int_dtype(bit_width: int) -> np.dtype:
    return np.dtype(f"<i{bit_width // 8}")


def _primitive(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    """Zero-copy numpy view of a fixed-width Arrow array's value buffer (honouring the slice offset)."""
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(n, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + n)[arr.offset :]


def _signed(values: np.ndarray) -> np.ndarray:
    """Signed integers -> uint64 with the sign bit flipped (unsigned order == signed order)."""
    return values.astype(np.int64).view(np.uint64) ^ SIGN_BIT


def _to_micros(values: np.ndarray, unit: str) -> np.ndarray:
    per_s = _TIME_UNIT_PER_SECOND[unit]
    if per_s == 1_000_000:
        return values
    if per_s > 1_000_000:
        return np.floor_divide(values, per_s // 1_000_000)
    factor = 1_000_000 // per_s
    info = np.iinfo(np.int64)
    # Saturate instead of overflowing: clipping before the multiply keeps the map monotone.
    return np.clip(values, -(-info.min // factor), info.max // factor) * factor


def _encode_float(x: np.ndarray) -> np.ndarray:
    """IEEE-754 total order on float64, with -0.0 == 0.0 and all NaNs equal and greatest."""
    x[x == 0.0] = 0.0  # -0.0 == 0.0 compares true, so this normalises the sign of zero
    bits = x.view(np.uint64)
    negative = (bits >> np.uint64(63)).astype(bool)
    codes = np.where(negative, ~bits, bits | SIGN_BIT)
    nan = np.isnan(x)
    if nan.any():
        codes[nan] = NAN_CODE
    return codes


def _decimal_bits_needed(precision: int) -> int:
    """Bits of a two's complement integer holding every unscaled value of the given precision."""
    return (10**precision - 1).bit_length() + 1


def _encode_decimal(arr: pa.Array, name: str | None) -> np.ndarray:
    t = arr.type
    if t.precision > 38:
        raise InvalidArgumentError(
            f"unsupported decimal precision {t.precision}{_for(name)} (type {t}): at most 38 is supported"
        )
    if not isinstance(t, pa.Decimal128Type):
        arr = arr.cast(pa.decimal128(t.precision, t.scale))
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(n, dtype=np.uint64)
    # 16 little-endian bytes per value: (low word, high word) pairs of the two's complement integer.
    words = np.frombuffer(buf, dtype="<u8", count=2 * (arr.offset + n))[2 * arr.offset :]
    lo, hi = words[0::2], words[1::2]
    shift = _decimal_bits_needed(t.precision) - 64
    if shift <= 0:
        return lo ^ SIGN_BIT  # the value fits int64: its low word is its int64 two's complement
    # Arithmetic right shift of the 128-bit value by `shift` (1..64); the result fits int64.
    if shift == 64:
        return hi ^ SIGN_BIT
    s = np.uint64(shift)
    return ((hi << np.uint64(64 - shift)) | (lo >> s)) ^ SIGN_BIT


def _is_binary_like(t: pa.DataType) -> bool:
    checks = [pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary]
    for extra in ("is_string_view", "is_binary_view", "is_fixed_size_binary"):
        fn = getattr(pa.types, extra, None)
        if fn is not None:
            checks.append(fn)
    return any(check(t) for check in checks)


def _encode_prefix(arr: pa.Array) -> np.ndarray:
    """First 8 bytes of each value as a big-endian uint64, zero-padded on the right.

    Works on the raw offsets/data buffers: one strided unaligned gather of 8 bytes per row from the
    (zero-padded) data buffer, then a mask that clears the bytes past each value's end.
    """
    t = arr.type
    n = len(arr)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    if pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        starts = (np.arange(n, dtype=np.int64) + arr.offset) * width
        lengths = np.full(n, width, dtype=np.int64)
        data_buf = arr.buffers()[1]
    else:
        if not (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) and not (
            pa.types.is_string(t) or pa.types.is_binary(t)
        ):
            arr = arr.cast(pa.large_binary())  # view types
            t = arr.type
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        off_dtype = np.dtype("<i8") if large else np.dtype("<i4")
        offsets = np.frombuffer(arr.buffers()[1], dtype=off_dtype, count=arr.offset + n + 1)[arr.offset :]
        starts = offsets[:-1].astype(np.int64)
        lengths = np.diff(offsets).astype(np.int64)
        data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    if not data.size:
        starts = np.zeros(n, dtype=np.int64)
    elif arr.null_count:
        # Valid values lie inside the data buffer; be defensive about offsets of null slots.
        starts = np.clip(starts, 0, data.size)
    padded = np.zeros(data.size + 8, dtype=np.uint8)
    padded[: data.size] = data
    # Overlapping big-endian uint64 view: element i is bytes padded[i:i+8].
    windows = np.ndarray(shape=(data.size + 1,), dtype=">u8", buffer=padded, strides=(1,))
    codes = windows[starts].astype(np.uint64)
    return codes & _PREFIX_MASKS[np.minimum(np.maximum(lengths, 0), 8)]
