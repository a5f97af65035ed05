"""Space-filling curves for clustering: order-preserving encodings, bit reduction, z-order, Hilbert.

Pipeline (numpy + pyarrow only, no Spark): :func:`encode_column` maps an Arrow column to order-preserving
``uint64`` codes; :func:`scale_to_bits` (min/max scaling) or :func:`bucketize` with
:func:`sample_bounds` (sampled quantiles) reduce them to ``bits`` bits per column spread over the whole
``[0, 2**bits)``; :func:`zorder` / :func:`hilbert` interleave the coordinates. :func:`curve_key` does
all of it for one Arrow batch.

Why the scaling step: Hudi's ``DIRECT`` method (:func:`hudi_direct_bits`) interleaves the top bits of the
raw 64-bit codes, so a column holding 0-65535 (a port) keeps 48 constant high bits and only joins the
curve after the other columns' bits; files then span its whole range. Scaling each column's observed
``[lo, hi]`` to ``[0, 2**bits)`` makes every column's top bit split its real range. See
:mod:`hudi_layout.curves.reduce`.
"""

from __future__ import annotations

from hudi_layout.curves.encoding import MAX_CODE, NAN_CODE, encode_column, encoded_range
from hudi_layout.curves.hilbert import hilbert
from hudi_layout.curves.key import curve_key, curve_key_from_codes, default_bits_per_column, parse_curve
from hudi_layout.curves.reduce import bucketize, hudi_direct_bits, sample_bounds, scale_to_bits
from hudi_layout.curves.weighted import bits_for_weights, normalise_bits, weighted_index
from hudi_layout.curves.zorder import from_sortable_int64, keys_to_arrow, to_sortable_int64, zorder

__all__ = [
    "MAX_CODE",
    "NAN_CODE",
    "bits_for_weights",
    "bucketize",
    "curve_key",
    "curve_key_from_codes",
    "default_bits_per_column",
    "encode_column",
    "encoded_range",
    "hilbert",
    "hudi_direct_bits",
    "keys_to_arrow",
    "normalise_bits",
    "parse_curve",
    "sample_bounds",
    "scale_to_bits",
    "to_sortable_int64",
    "from_sortable_int64",
    "weighted_index",
    "zorder",
]
