"""One call from Arrow columns to curve keys, as the Spark layer uses it on every Arrow batch.

Keys of different batches are only comparable if every batch reduces its columns the same way, so the
reduction parameters must be global: per-column code ranges from a min/max pass (``ranges``, see
:func:`~hudi_layout.curves.encoding.encoded_range`) or quantile bounds from a sample (``bounds``, see
:func:`~hudi_layout.curves.reduce.sample_bounds`). With neither, Hudi's ``DIRECT`` reduction (top bits)
is used, which is global but wastes bits on constant high bits (see :mod:`hudi_layout.curves.reduce`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from hudi_layout.curves.encoding import encode_column
from hudi_layout.curves.hilbert import hilbert
from hudi_layout.curves.reduce import bucketize, hudi_direct_bits, scale_to_bits
from hudi_layout.curves.weighted import normalise_bits, weighted_index
from hudi_layout.curves.zorder import zorder
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.options import LayoutStrategy


def parse_curve(curve: str) -> str:
    """Normalise a curve name (:class:`~hudi_layout.options.LayoutStrategy` spellings, ``linear`` excluded):
    ``"zorder"``/``"z-order"``/``"z_order"`` → ``"zorder"``, ``"hilbert"``."""
    strategy = None
    if isinstance(curve, str):
        try:
            strategy = LayoutStrategy.parse(curve)
        except InvalidArgumentError:
            strategy = None
    if strategy is None or not strategy.is_curve:
        raise InvalidArgumentError(f"unknown curve {curve!r}: expected 'zorder', 'z-order' or 'hilbert'")
    return "zorder" if strategy is LayoutStrategy.Z_ORDER else "hilbert"


def default_bits_per_column(ncols: int) -> int:
    """``min(64 // ncols, 32)`` (at least 1): the widest width whose key still fits a ``uint64``."""
    if ncols < 1:
        raise InvalidArgumentError("a curve needs at least one column")
    return max(1, min(64 // ncols, 32))


def curve_key(
    batch_columns: Sequence[pa.Array | pa.ChunkedArray],
    *,
    curve: str,
    bits_per_column: int | Sequence[int] | None = None,
    ranges: Sequence[tuple[int, int] | None] | None = None,
    bounds: Sequence[np.ndarray] | None = None,
    nulls_first: bool = False,
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """Curve key of each row of ``batch_columns``.

    Each column is encoded with :func:`encode_column`, reduced to ``bits_per_column`` bits with
    :func:`scale_to_bits` (``ranges``: one ``(lo, hi)`` code pair per column; ``None`` for an all-null
    column) or :func:`bucketize` (``bounds``: one sorted bounds array per column), or with Hudi's
    direct top bits when neither is given, then interleaved by ``curve`` (``"zorder"``/``"z-order"``/
    ``"hilbert"``, case-insensitive). ``bits_per_column`` may give one width per column (column weights, see
    :mod:`hudi_layout.curves.weighted`); the key then has ``sum(bits)`` <= 64 bits.

    Returns ``uint64`` when ``ncols * bits_per_column <= 64`` (convert with
    :func:`~hudi_layout.curves.zorder.to_sortable_int64` for a Spark ``long``), else big-endian ``S{n}``
    byte keys. ``names`` only improve error messages.
    """
    cols = list(batch_columns)
    if not cols:
        raise InvalidArgumentError("curve_key needs at least one column")
    if names is not None and len(names) != len(cols):
        raise InvalidArgumentError(f"{len(names)} names given for {len(cols)} columns")
    codes = [encode_column(array, nulls_first=nulls_first, name=names[j] if names is not None else None)
             for j, array in enumerate(cols)]
    return curve_key_from_codes(codes, curve=curve, bits_per_column=bits_per_column, ranges=ranges,
                                bounds=bounds)


def curve_key_from_codes(
    codes: Sequence[np.ndarray],
    *,
    curve: str,
    bits_per_column: int | Sequence[int] | None = None,
    ranges: Sequence[tuple[int, int] | None] | None = None,
    bounds: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """:func:`curve_key` of columns already encoded with :func:`encode_column` (``uint64`` codes).

    Used where codes travel instead of values (e.g. a sample of codes taken on the executors).
    """
    kind = parse_curve(curve)
    ncols = len(codes)
    if ncols == 0:
        raise InvalidArgumentError("curve_key needs at least one column")
    width_arg = default_bits_per_column(ncols) if bits_per_column is None else bits_per_column
    if isinstance(width_arg, bool) or not isinstance(width_arg, (int, np.integer, tuple, list)):
        raise InvalidArgumentError(f"bits_per_column must be an integer in [1, 64], got {bits_per_column!r}")
    try:
        widths = normalise_bits(width_arg, ncols)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"bits_per_column is invalid: {e}") from None
    if len(set(widths)) > 1 and sum(widths) > 64:
        raise InvalidArgumentError(f"bits_per_column {list(widths)} make a {sum(widths)}-bit key; columns with "
                                   "different widths must fit 64 bits together")
    if ranges is not None and bounds is not None:
        raise InvalidArgumentError("give either ranges (min/max scaling) or bounds (sampling), not both")
    for what, given in (("ranges", ranges), ("bounds", bounds)):
        if given is not None and len(given) != ncols:
            raise InvalidArgumentError(f"{len(given)} {what} given for {ncols} columns")
    reduced = []
    for j, column_codes in enumerate(codes):
        bits = widths[j]
        c = np.asarray(column_codes, dtype=np.uint64)
        if ranges is not None:
            rng = ranges[j]
            if rng is None:  # all-null column: every row gets the same coordinate
                reduced.append(np.zeros(c.shape[0], dtype=np.uint64))
                continue
            reduced.append(scale_to_bits(c, rng[0], rng[1], bits))
        elif bounds is not None:
            reduced.append(bucketize(c, bounds[j], bits))
        else:
            reduced.append(hudi_direct_bits(c, bits))
    if len(set(widths)) > 1:
        return weighted_index(reduced, widths, kind)
    if kind == "zorder":
        return zorder(reduced, widths[0])
    return hilbert(reduced, widths[0])
