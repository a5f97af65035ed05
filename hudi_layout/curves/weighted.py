"""Curves whose columns get different numbers of bits: column weights turned into bits, and the curve index.

Why weights become *extra top bits* (and not bits proportional to the weight)
------------------------------------------------------------------------------
Only the top ``log2(files)`` bits of a curve key decide which file a row lands in (about 10 bits for 1000
files). If column ``j`` gets ``k_j`` of those bits, a point query on ``j`` reads about ``files / 2**k_j``
files. Minimising the workload's cost ``sum_j w_j * files / 2**k_j`` subject to ``sum_j k_j = const`` gives
``w_j / 2**k_j`` equal for all columns, i.e. ``k_j = c + log2(w_j)``: a column filtered twice as often
deserves **one more** of the top bits, not twice as many bits. :func:`bits_for_weights` therefore gives
column ``j`` ``base + round(log2(w_j / max(w)))`` bits, with ``base`` as large as the 64-bit key allows.

The compound curve (:func:`weighted_index`)
--------------------------------------------
Levels are numbered by bit position, from the widest column's top bit down to 0. A column takes part in
level ``l`` when it has more than ``l`` bits, so the top levels split only the heavier columns: their
extra bits come first. Levels where *every* column takes part (the lowest ``min(bits)`` levels) form an
ordinary z-order or Hilbert index of the low bits; levels above them are interleaved z-style (a Hilbert
step over a subset of the dimensions would need the compact Hilbert index of Hamilton & Rau-Chaplin, 2008;
the skipping effect - the heavier column splits first - is the same). With equal bits the index is exactly
:func:`~hudi_layout.curves.zorder` / :func:`~hudi_layout.curves.hilbert`.

Both parts have the property the region pruning of :mod:`hudi_layout.curves.region` relies on: the top
bits of the index up to any level boundary depend only on the coordinates' bits at and above that level,
so every cell of the level grid is one aligned, contiguous block of keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hudi_layout.curves.hilbert import hilbert
from hudi_layout.curves.zorder import check_columns, interleave
from hudi_layout.errors import InvalidArgumentError

#: a curve key is one uint64
MAX_KEY_BITS = 64
#: the widest coordinate a column gets (the encodings' useful resolution)
MAX_COLUMN_BITS = 32


def normalise_bits(bits: int | Sequence[int], ncols: int) -> tuple[int, ...]:
    """``bits`` as one width per column (an int applies to every column); checks 1..64 per column."""
    if isinstance(bits, (int, np.integer)) and not isinstance(bits, bool):
        out = (int(bits),) * ncols
    else:
        out = tuple(int(b) for b in bits)  # type: ignore[union-attr]
    if len(out) != ncols:
        raise InvalidArgumentError(f"{len(out)} bit widths given for {ncols} curve columns")
    for b in out:
        if not 1 <= b <= 64:
            raise InvalidArgumentError(f"bits per column must be in [1, 64], got {list(out)}")
    return out


def bits_for_weights(weights: Sequence[float], *, key_bits: int = MAX_KEY_BITS,
                     max_bits: int = MAX_COLUMN_BITS) -> tuple[int, ...]:
    """Bits per column for column ``weights`` (> 0): ``base + round(log2(w / max(w)))``, ``base`` maximal such
    that the key fits ``key_bits`` and no column exceeds ``max_bits``; every column keeps at least one bit.

    Equal weights give :func:`~hudi_layout.curves.default_bits_per_column` for every column.
    """
    ws = [float(w) for w in weights]
    if not ws:
        raise InvalidArgumentError("a curve needs at least one column")
    if any(not math.isfinite(w) or w <= 0 for w in ws):
        raise InvalidArgumentError(f"column weights must be positive numbers, got {ws}")
    top = max(ws)
    offsets = [round(math.log2(w / top)) for w in ws]  # <= 0
    best: tuple[int, ...] | None = None
    for base in range(1, max_bits + 1):
        bits = tuple(max(1, base + o) for o in offsets)
        if sum(bits) > key_bits:
            break
        best = bits
    if best is None:
        raise InvalidArgumentError(f"{len(ws)} columns do not fit a {key_bits}-bit curve key")
    return best


def weighted_index(columns: Sequence[np.ndarray], bits: int | Sequence[int], kind: str) -> np.ndarray:
    """Curve index (``uint64``) of coordinates where column ``j`` has ``bits[j]`` bits (see the module doc).

    ``kind`` is ``"zorder"`` or ``"hilbert"``. The key has ``sum(bits)`` bits (at most 64), the first column's
    top bit most significant among the bits of one level.
    """
    widths = normalise_bits(bits, len(columns))
    low = min(widths)
    cols = check_columns(columns, max(widths))
    for j, (c, b) in enumerate(zip(cols, widths)):
        if b < 64 and c.size and int(c.max()) >> b:
            raise InvalidArgumentError(f"curve column {j} has value {int(c.max())} >= 2**{b}")
    n = len(cols)
    if sum(widths) > MAX_KEY_BITS:
        raise InvalidArgumentError(f"bits {list(widths)} make a {sum(widths)}-bit key; at most 64 fit")
    if len(set(widths)) == 1:
        return hilbert(cols, low) if kind == "hilbert" else interleave(cols, low)
    mask = np.uint64((1 << low) - 1)
    low_cols = [c & mask for c in cols]
    low_key = hilbert(low_cols, low) if kind == "hilbert" else interleave(low_cols, low)
    key = np.zeros(cols[0].shape[0], dtype=np.uint64)
    one = np.uint64(1)
    for level in range(max(widths) - 1, low - 1, -1):
        for j in range(n):
            if widths[j] > level:
                key = (key << one) | ((cols[j] >> np.uint64(level)) & one)
    return (key << np.uint64(n * low)) | low_key


def level_plan(bits: Sequence[int]) -> list[tuple[int, ...]]:
    """The columns taking part in each level, top level first (``len == max(bits)``)."""
    return [tuple(j for j, b in enumerate(bits) if b > level) for level in range(max(bits) - 1, -1, -1)]
