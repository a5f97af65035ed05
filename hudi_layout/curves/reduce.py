"""Reduce 64-bit column codes to ``bits`` bits per column before interleaving them on a curve.

Why not just take the top bits (Hudi's ``DIRECT`` build method)?
------------------------------------------------------------------
Hudi's direct method (``hoodie.layout.optimize.curve.build.method=direct``) converts each value to a
64-bit sortable code and interleaves the codes as they are, i.e. it keeps the *top* bits of each code
(:func:`hudi_direct_bits`). A ``port`` column holding 0-65535 encodes to ``0x8000_0000_0000_xxxx``: its
48 high bits are constant. In the interleaved key those constant bits occupy the most significant
positions, so the port only starts to influence the order after the other columns have contributed 48
of their bits each - in practice the curve degenerates into a sort by the other column(s), and with a
reduced bit budget (say 32 bits per column) the port contributes nothing at all. Files then span the
whole port range and min/max data skipping on it is useless.

Min/max scaling (:func:`scale_to_bits`) fixes this: given the column's global code range ``[lo, hi]``
(one cheap min/max pass), it maps ``lo`` to 0 and ``hi`` to the top of ``[0, 2**bits)`` monotonically,
so every column's most significant bit splits its *observed* range in two and all columns take part in
the curve from the first bit on.

Skewed columns (and strings sharing long prefixes) are better served by the sampled method
(``build.method=sample``): :func:`sample_bounds` takes quantile boundaries from a sample and
:func:`bucketize` maps each code to its quantile bucket, so buckets hold similar row counts.

All functions are exact integer arithmetic on ``uint64`` (no floats), hence monotone non-decreasing:
``a <= b`` ⇒ ``f(a) <= f(b)``.
"""

from __future__ import annotations

import weakref

import numpy as np

from hudi_layout.errors import InvalidArgumentError

_U64_MAX = (1 << 64) - 1


def _check_bits(bits: int, *, lo: int = 1, hi: int = 64) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not lo <= int(bits) <= hi:
        raise InvalidArgumentError(f"bits must be an integer in [{lo}, {hi}], got {bits!r}")
    return int(bits)


def _as_u64(codes: np.ndarray, what: str = "codes") -> np.ndarray:
    codes = np.asarray(codes)
    if codes.dtype != np.uint64:
        if codes.dtype.kind not in "ui" or (codes.dtype.kind == "i" and codes.size and codes.min() < 0):
            raise InvalidArgumentError(f"{what} must be unsigned 64-bit codes, got dtype {codes.dtype}")
        codes = codes.astype(np.uint64)
    return codes


def hudi_direct_bits(codes: np.ndarray, bits: int) -> np.ndarray:
    """Hudi's plain ``DIRECT`` reduction: the top ``bits`` bits of each 64-bit code (for comparison)."""
    bits = _check_bits(bits)
    codes = _as_u64(codes)
    if bits == 64:
        return codes.copy()
    return codes >> np.uint64(64 - bits)


def scale_to_bits(codes: np.ndarray, lo: int, hi: int, bits: int) -> np.ndarray:
    """Map codes in ``[lo, hi]`` monotonically onto ``[0, 2**bits)``, using the whole output range.

    Codes outside ``[lo, hi]`` are clamped first (so nulls, encoded as ``2**64 - 1`` and excluded from
    the range, land in the top cell). With ``d = code - lo`` and ``R = hi - lo``:

    * ``bitlen(R) + bits <= 64`` (e.g. any range with ``bits <= 32``): the exact linear stretch
      ``d * (2**bits - 1) // R``: ``lo`` → 0, ``hi`` → ``2**bits - 1``, strictly increasing (lossless)
      whenever the range has at most ``2**bits`` values;
    * a wider range with ``bits <= 32``: ``d`` and ``R`` are first shifted right until ``R`` has
      ``64 - bits`` significant bits (>= 32, far more precision than the output keeps), then stretched
      as above;
    * ``bits > 32`` and a wide range: a plain shift that puts ``R``'s top bit at bit ``bits - 1``
      (``d >> (bitlen(R) - bits)`` or ``d << (bits - bitlen(R))``); ``hi`` then lands in
      ``[2**(bits - 1), 2**bits)``, i.e. the top bit is always used (a 128-bit multiply would be needed
      for the exact stretch, and the shift loses at most a factor 2 of the output range).

    A constant column (``lo == hi``) maps to 0.
    """
    bits = _check_bits(bits)
    lo, hi = int(lo), int(hi)
    if not 0 <= lo <= hi <= _U64_MAX:
        raise InvalidArgumentError(f"scale_to_bits needs 0 <= lo <= hi < 2**64, got lo={lo}, hi={hi}")
    codes = _as_u64(codes)
    d = np.clip(codes, np.uint64(lo), np.uint64(hi)) - np.uint64(lo)
    r = hi - lo
    if r == 0:
        return np.zeros_like(d)
    k = r.bit_length()
    m = (1 << bits) - 1
    if k + bits <= 64:
        return d * np.uint64(m) // np.uint64(r)
    if bits <= 32:
        t = k + bits - 64  # > 0: keep 64 - bits significant bits of the range
        return (d >> np.uint64(t)) * np.uint64(m) // np.uint64(r >> t)
    if k >= bits:
        return d >> np.uint64(k - bits)
    return d << np.uint64(bits - k)


def sample_bounds(sample_codes: np.ndarray, bits: int) -> np.ndarray:
    """Sorted, deduplicated bucket boundaries (at most ``2**bits - 1``) from a sample of codes.

    If the sample has at most ``2**bits`` distinct values every distinct value gets its own bucket
    (boundaries = the distinct values but the smallest). Otherwise the boundaries are the sample's
    ``j / 2**bits`` quantiles (``j = 1 .. 2**bits - 1``, frequency weighted, as Hudi's range sampling),
    deduplicated - a heavy value therefore may swallow several buckets.

    Bucket ``i`` (see :func:`bucketize`) holds codes ``c`` with ``bounds[i-1] <= c < bounds[i]``.
    """
    bits = _check_bits(bits)
    s = np.sort(_as_u64(sample_codes, "sample_codes").ravel())
    if s.size == 0:
        return np.empty(0, dtype=np.uint64)
    buckets = 1 << bits
    distinct = np.unique(s)  # sorted
    if distinct.size <= buckets:
        return distinct[1:].copy()
    # distinct.size > buckets implies s.size > buckets, so bits is small here and j * n fits uint64.
    # Rank-based quantiles: boundary j is the element at rank ceil(j * n / buckets).
    j = np.arange(1, buckets, dtype=np.uint64)
    n = np.uint64(s.size)
    ranks = (j * n + np.uint64(buckets - 1)) // np.uint64(buckets)
    ranks = np.minimum(ranks, n - np.uint64(1)).astype(np.int64)
    return np.unique(s[ranks])


#: widest code span ``bounds[-1] - bounds[0]`` given a lookup table (2**17 ``uint32``: 512 KiB, cache-resident)
_TABLE_MAX_SPAN = 1 << 17
#: fewest codes in a call that builds a table (a curve-sort task buckets tens of thousands per batch)
_TABLE_MIN_CODES = 4096
#: lookup tables by ``id`` of the bounds array they serve; an entry leaves with its array (weakref finalizer),
#: so a later array at the same address never finds a stale table
_bucket_tables: dict[int, np.ndarray | None] = {}


def _bucket_table(bounds: np.ndarray, codes: int) -> np.ndarray | None:
    """``table[c - bounds[0]]`` = bucket of code ``c`` for ``bounds[0] <= c <= bounds[-1]``, built once per
    bounds array (the same array buckets every batch of a clustering task), when the span is narrow.

    A binary search over 65,535 bounds costs ~120 ns per code (cache misses); the table's gather ~15 ns.
    Only sorted 1-D ``uint64`` arrays get one (others take :func:`numpy.searchsorted`, which checks them), and
    only for a call with at least :data:`_TABLE_MIN_CODES` codes: building a table costs about a search of its
    span, wasted on a few codes bucketed once.
    """
    key = id(bounds)
    if key in _bucket_tables:
        return _bucket_tables[key]
    if codes < _TABLE_MIN_CODES:
        return None
    table = None
    if bounds.dtype == np.uint64 and bounds.ndim == 1 and bounds.size \
            and 0 <= int(bounds[-1]) - int(bounds[0]) < _TABLE_MAX_SPAN and not np.any(bounds[1:] < bounds[:-1]):
        span = np.arange(int(bounds[-1] - bounds[0]) + 1, dtype=np.uint64) + bounds[0]
        table = np.searchsorted(bounds, span, side="right").astype(np.uint32)
    weakref.finalize(bounds, _bucket_tables.pop, key, None)
    _bucket_tables[key] = table
    return table


def bucketize(codes: np.ndarray, bounds: np.ndarray, bits: int | None = None) -> np.ndarray:
    """Rank bucket of each code among ``bounds`` (sorted): ``#{b in bounds : b <= code}``.

    Monotone non-decreasing in the code. Without ``bits`` the result is the raw bucket id in
    ``[0, len(bounds)]``. With ``bits`` the ids are spread over ``[0, 2**bits)`` with
    :func:`scale_to_bits` (id 0 → 0, the last id → ``2**bits - 1``), so a column whose sample had few
    distinct values still uses the top bits of its curve coordinate. Pass ``bits`` when feeding the
    result to :func:`~hudi_layout.curves.zorder` / :func:`~hudi_layout.curves.hilbert`.

    A narrow ``uint64`` bounds array gets a lookup table on first use, kept while the array lives: bounds are
    treated as immutable, as :func:`sample_bounds` makes them.
    """
    given = bounds
    codes = _as_u64(codes)
    bounds = _as_u64(bounds, "bounds").ravel()
    table = _bucket_table(given, codes.size) if isinstance(given, np.ndarray) else None
    if table is not None:  # a narrow column (e.g. 16-bit ports): one gather instead of a binary search
        low = codes < bounds[0]
        ids = table[np.clip(codes, bounds[0], bounds[-1]) - bounds[0]].astype(np.uint64)
        ids[low] = 0
    else:
        if bounds.size > 1 and np.any(bounds[1:] < bounds[:-1]):
            raise InvalidArgumentError("bounds must be sorted ascending (use sample_bounds)")
        ids = np.searchsorted(bounds, codes, side="right").astype(np.uint64)
    if bits is None:
        return ids
    bits = _check_bits(bits)
    if bounds.size > (1 << bits) - 1:
        raise InvalidArgumentError(
            f"{bounds.size} bounds make {bounds.size + 1} buckets, more than 2**{bits}"
        )
    return scale_to_bits(ids, 0, bounds.size, bits)
