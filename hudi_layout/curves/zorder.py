"""Z-order (Morton) bit interleaving of per-column curve coordinates, vectorised over rows.

The key takes bit ``bits - 1`` of column 0, then bit ``bits - 1`` of column 1, ..., then bit ``bits - 2``
of column 0, and so on: the first column's most significant bit is the key's most significant bit.

When ``len(columns) * bits <= 64`` the key is a ``uint64`` array (the key sits in the low
``len(columns) * bits`` bits). Otherwise it is a fixed-width big-endian byte key (numpy ``S{nbytes}``,
zero-padded on the right up to a whole byte) whose lexicographic byte order is the curve order.
Python ``bytes`` taken from an ``S`` array lose trailing zero bytes; that still preserves order
(a stripped key is a prefix of any larger key it would tie with), but :func:`keys_to_arrow` keeps them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError

_ROW_CHUNK = 1 << 16


def check_columns(columns: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    """Validate curve coordinates: 1-D, equal length, unsigned, every value below ``2**bits``."""
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 64:
        raise InvalidArgumentError(f"bits must be an integer in [1, 64], got {bits!r}")
    if isinstance(columns, np.ndarray) and columns.ndim == 1:
        columns = [columns]
    cols = [np.asarray(c) for c in columns]
    if not cols:
        raise InvalidArgumentError("a curve needs at least one column")
    n_rows = cols[0].shape[0] if cols[0].ndim == 1 else -1
    out = []
    for j, c in enumerate(cols):
        if c.ndim != 1 or c.shape[0] != n_rows:
            raise InvalidArgumentError(
                f"curve column {j} has shape {c.shape}; all columns must be 1-D of length {n_rows}"
            )
        if c.dtype.kind not in "ui":
            raise InvalidArgumentError(f"curve column {j} has dtype {c.dtype}; expected unsigned integers")
        if c.dtype.kind == "i" and c.size and c.min() < 0:
            raise InvalidArgumentError(f"curve column {j} has negative values; expected unsigned integers")
        c = c.astype(np.uint64, copy=False)
        if bits < 64 and c.size and int(c.max()) >> bits:
            raise InvalidArgumentError(
                f"curve column {j} has value {int(c.max())} >= 2**{bits}; reduce it first "
                "(scale_to_bits / bucketize)"
            )
        out.append(c)
    return out


@functools.cache
def _spread_plan(n: int, bits: int) -> tuple[tuple[np.uint64, np.uint64], ...]:
    """Shift/mask steps moving bit ``i`` of a ``bits``-bit value to bit ``i * n`` ("magic bits").

    Blocks of contiguous source bits are halved each step: the upper half of every block moves left by
    ``half * (n - 1)``; after the step with half size ``h``, source bit ``i`` sits at
    ``(i // h) * h * n + i % h``, which for ``h = 1`` is ``i * n``.
    """
    steps = []
    h = (1 << max(bits - 1, 0).bit_length()) // 2
    while h >= 1:
        mask = 0
        for i in range(bits):
            mask |= 1 << ((i // h) * h * n + i % h)
        steps.append((np.uint64(h * (n - 1)), np.uint64(mask)))
        h //= 2
    return tuple(steps)


def spread_bits(x: np.ndarray, n: int, bits: int) -> np.ndarray:
    """Bit ``i`` of each value (``i < bits``) moved to bit ``i * n``; requires ``(bits - 1) * n < 64``."""
    x = x.astype(np.uint64, copy=True)
    if n == 1:
        return x
    tmp = np.empty_like(x)
    for shift, mask in _spread_plan(n, bits):
        np.left_shift(x, shift, out=tmp)
        np.bitwise_or(x, tmp, out=x)
        np.bitwise_and(x, mask, out=x)
    return x


def interleave(cols: list[np.ndarray], bits: int) -> np.ndarray:
    """Interleave validated coordinates (see :func:`zorder`); no validation."""
    n = len(cols)
    if n * bits <= 64:
        if n == 1:
            return cols[0].copy()
        rows = cols[0].shape[0]
        key = np.zeros(rows, dtype=np.uint64)
        # Row chunks that stay in cache make the ~20 passes per column several times faster.
        for start in range(0, rows, _ROW_CHUNK):
            stop = min(start + _ROW_CHUNK, rows)
            part = key[start:stop]
            for j, c in enumerate(cols):
                part |= spread_bits(c[start:stop], n, bits) << np.uint64(n - 1 - j)
        return key
    return _interleave_bytes(cols, bits)


def _interleave_bytes(cols: list[np.ndarray], bits: int) -> np.ndarray:
    n = len(cols)
    total = n * bits
    nbytes = (total + 7) // 8
    rows = cols[0].shape[0]
    out = np.empty((rows, nbytes), dtype=np.uint8)
    for start in range(0, rows, _ROW_CHUNK):
        stop = min(start + _ROW_CHUNK, rows)
        m = stop - start
        bitmat = np.empty((m, bits, n), dtype=np.uint8)
        for j, c in enumerate(cols):
            be = c[start:stop].astype(">u8").view(np.uint8).reshape(m, 8)
            bitmat[:, :, j] = np.unpackbits(be, axis=1)[:, 64 - bits :]
        out[start:stop] = np.packbits(bitmat.reshape(m, total), axis=1)
    return out.view(f"S{nbytes}").reshape(rows)


def zorder(columns: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Z-order key of ``bits``-bit unsigned coordinates, first column's most significant bit first.

    Returns ``uint64`` when ``len(columns) * bits <= 64``, else a big-endian ``S{ceil(n*bits/8)}`` key.
    Example: columns ``(y, x)`` with ``y = 214 = 0b11010110``, ``x = 97 = 0b01100001`` and ``bits=8``
    give ``0b1011011000101001 == 46633``.
    """
    return interleave(check_columns(columns, bits), bits)


def keys_to_arrow(keys: np.ndarray) -> pa.Array:
    """Arrow form of curve keys whose Spark sort order is the curve order.

    ``uint64`` keys become ``int64`` with the sign bit flipped (signed order == unsigned order); byte keys
    (``S`` dtype) become ``binary`` with every value the full key width (no zero stripping).
    """
    keys = np.asarray(keys)
    if keys.dtype == np.uint64:
        return pa.array(to_sortable_int64(keys), type=pa.int64())
    if keys.dtype.kind == "S":
        width = keys.dtype.itemsize
        data = np.ascontiguousarray(keys).view(np.uint8)
        offsets = np.arange(0, (keys.shape[0] + 1) * width, width, dtype=np.int32)
        return pa.Array.from_buffers(
            pa.binary(), keys.shape[0], [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
    raise InvalidArgumentError(f"curve keys must be uint64 or fixed-width bytes, got dtype {keys.dtype}")


def to_sortable_int64(u: np.ndarray) -> np.ndarray:
    """Flip the sign bit of ``uint64`` values and view them as ``int64``: signed order == unsigned order."""
    u = np.asarray(u)
    if u.dtype != np.uint64:
        raise InvalidArgumentError(f"to_sortable_int64 expects uint64, got dtype {u.dtype}")
    return (u ^ np.uint64(1 << 63)).view(np.int64)


def from_sortable_int64(s: np.ndarray) -> np.ndarray:
    """Inverse of :func:`to_sortable_int64`: ``int64`` values back to the ``uint64`` codes they order like."""
    return np.asarray(s).astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
