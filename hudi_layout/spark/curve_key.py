"""Curve-key columns on Spark DataFrames: ``with_curve_key(df, columns, curve=..., method=...)``.

The key is computed on Arrow batches in the executors (``mapInArrow`` + numpy, see
:mod:`hudi_layout.curves`), never with a row-at-a-time Python UDF. The reduction of each column to a
fixed number of bits must be the same for every batch, so it is decided first, on the driver, from
metadata-sized inputs:

* ``direct`` — one cheap aggregate gives each column's min and max; every column is then shifted by its
  min and scaled to its range, so all columns use their top bits (Hudi's plain DIRECT leaves e.g. a port
  column's 48 constant high bits in front; pass ``hudi_direct=True`` to reproduce that).
* ``sample`` — a sample of about ``sample_size`` rows of the key columns (Hudi's
  ``hoodie.layout.optimize.build.curve.sample.size``) gives quantile boundaries per column; each value
  maps to its rank bucket, so skewed columns and strings with long shared prefixes spread over the curve.
  Like Spark's own range partitioner, the sampled key values (not the rows) travel to the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from hudi_layout.curves import (
    curve_key,
    curve_key_from_codes,
    default_bits_per_column,
    encode_column,
    encoded_range,
    from_sortable_int64,
    parse_curve,
    sample_bounds,
    to_sortable_int64,
)
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.options import LayoutStrategy, parse_layout_strategy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

KEY_COLUMN = "_hudi_layout_curve_key"
MAX_CURVE_COLUMNS = 8
_UNSUPPORTED = ("array", "map", "struct", "variant", "interval", "calendarinterval", "null", "void")


def normalise_strategy(curve: str | LayoutStrategy) -> LayoutStrategy:
    return parse_layout_strategy(curve)


def check_key_columns(df: DataFrame, columns: Sequence[str]) -> None:
    """Clear errors for unknown columns, unsupported types and too many columns."""
    if not columns:
        raise InvalidArgumentError("at least one column is needed to build a curve key")
    fields = {f.name: f for f in df.schema.fields}
    for c in columns:
        if c not in fields:
            raise InvalidArgumentError(
                f"unknown column {c!r} (columns: {', '.join(fields)})", hint="check --columns")
        type_name = fields[c].dataType.typeName()
        if type_name in _UNSUPPORTED:
            raise InvalidArgumentError(
                f"column {c!r} has type {fields[c].dataType.simpleString()}, which cannot be clustered "
                "(supported: numbers, decimal, string, binary, boolean, date, timestamp)")
    if len(set(columns)) != len(columns):
        raise InvalidArgumentError(f"columns repeat: {list(columns)}")
    if len(columns) > MAX_CURVE_COLUMNS:
        raise InvalidArgumentError(
            f"{len(columns)} columns given; a curve key takes at most {MAX_CURVE_COLUMNS}")


@dataclass(frozen=True)
class CurveParams:
    """Global reduction parameters shared by every batch (picklable)."""

    curve: str
    columns: tuple[str, ...]
    #: bits per column: one width for all, or one per column (column weights)
    bits: int | tuple[int, ...]
    ranges: tuple[tuple[int, int] | None, ...] | None = None
    bounds: tuple[np.ndarray, ...] | None = None

    @property
    def key_is_long(self) -> bool:
        if isinstance(self.bits, tuple):
            return sum(self.bits) <= 64
        return len(self.columns) * self.bits <= 64

    def keys(self, table: pa.Table | pa.RecordBatch) -> np.ndarray:
        """Curve keys of the rows of ``table`` (which holds at least :attr:`columns`)."""
        cols = [table.column(table.schema.get_field_index(c)) for c in self.columns]
        return curve_key(cols, curve=self.curve, bits_per_column=self.bits,
                         ranges=list(self.ranges) if self.ranges is not None else None,
                         bounds=list(self.bounds) if self.bounds is not None else None, names=self.columns)

    def keys_from_codes(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """Curve keys from per-column ``uint64`` codes (as :func:`~hudi_layout.curves.encode_column` makes)."""
        return curve_key_from_codes(codes, curve=self.curve, bits_per_column=self.bits,
                                    ranges=list(self.ranges) if self.ranges is not None else None,
                                    bounds=list(self.bounds) if self.bounds is not None else None)


def _range_params(df: DataFrame, columns: Sequence[str]) -> list[tuple[int, int] | None]:
    from pyspark.sql import functions as F

    aggs: list[Any] = []
    for c in columns:
        aggs += [F.min(F.col(f"`{c}`")).alias(f"mn{len(aggs)}"), F.max(F.col(f"`{c}`")).alias(f"mx{len(aggs)}")]
    row = df.agg(*aggs).toArrow()  # one row: the per-column min and max
    ranges: list[tuple[int, int] | None] = []
    for j, c in enumerate(columns):
        mn = row.column(2 * j)
        mx = row.column(2 * j + 1)
        both = pa.chunked_array([mn.combine_chunks(), mx.combine_chunks().cast(mn.type)])
        ranges.append(encoded_range(both, name=c))
    return ranges


def _sample_params(df: DataFrame, columns: Sequence[str], sample_size: int, bits: int,
                   row_count: int | None) -> list[np.ndarray]:
    names = list(columns)
    total = row_count if row_count is not None else df.count()
    fraction = 1.0 if total <= sample_size else min(1.0, 1.2 * sample_size / total)
    sampled = df.select(*[f"`{c}`" for c in names]).sample(withReplacement=False, fraction=fraction, seed=17)

    def encode(batches: Any) -> Any:
        for b in batches:
            yield pa.RecordBatch.from_arrays(
                [pa.array(to_sortable_int64(encode_column(b.column(i), name=n))) for i, n in enumerate(names)],
                names=[f"c{i}" for i in range(len(names))])

    schema = ", ".join(f"c{i} long" for i in range(len(names)))
    codes = sampled.mapInArrow(encode, schema).toArrow()  # sampled codes only: metadata-sized
    out = []
    for i in range(len(names)):
        signed = codes.column(i).to_numpy() if codes.num_rows else np.empty(0, np.int64)
        out.append(sample_bounds(from_sortable_int64(signed), bits))
    return out


def curve_params(df: DataFrame, columns: Sequence[str], *, curve: str = "zorder", method: str = "direct",
                 sample_size: int = 200_000, bits_per_column: int | None = None, hudi_direct: bool = False,
                 row_count: int | None = None) -> CurveParams:
    """Decide the per-column reduction (one aggregate or one sample job)."""
    check_key_columns(df, columns)
    kind = parse_curve(curve)
    bits = bits_per_column or default_bits_per_column(len(columns))
    m = method.strip().lower()
    if m not in ("direct", "sample"):
        raise InvalidArgumentError(f"unknown curve build method {method!r}: expected direct or sample")
    if m == "direct":
        if hudi_direct:
            return CurveParams(kind, tuple(columns), bits)
        return CurveParams(kind, tuple(columns), bits, ranges=tuple(_range_params(df, columns)))
    bounds = _sample_params(df, columns, sample_size, bits, row_count)
    return CurveParams(kind, tuple(columns), bits, bounds=tuple(bounds))


def key_mapper(params: CurveParams, key_column: str = KEY_COLUMN):
    """``mapInArrow`` function appending the curve key to every batch."""

    def mapper(batches: Any) -> Any:
        for b in batches:
            key = params.keys(b)
            if key.dtype == np.uint64:
                arr = pa.array(to_sortable_int64(key))
            else:
                arr = pa.array(list(key), pa.binary()) if len(key) else pa.array([], pa.binary())
            yield pa.RecordBatch.from_arrays([*b.columns, arr], names=[*b.schema.names, key_column])

    return mapper


def with_curve_key(df: DataFrame, columns: Sequence[str], curve: str = "zorder", method: str = "direct", *,
                   sample_size: int = 200_000, key_column: str = KEY_COLUMN, bits_per_column: int | None = None,
                   hudi_direct: bool = False, row_count: int | None = None,
                   params: CurveParams | None = None) -> DataFrame:
    """``df`` plus a sortable curve-key column ``key_column``.

    ``curve`` is ``zorder``/``z-order``, ``hilbert`` or ``linear`` (for linear the key is a struct of the
    columns, which Spark orders lexicographically). The key is a ``long`` when the curve fits 64 bits,
    else ``binary``; either way ordering by it orders rows along the curve.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    strategy = normalise_strategy(curve)
    check_key_columns(df, columns)
    if strategy == "linear":
        return df.withColumn(key_column, F.struct(*[F.col(f"`{c}`") for c in columns]))
    params = params or curve_params(df, columns, curve=strategy, method=method, sample_size=sample_size,
                                    bits_per_column=bits_per_column, hudi_direct=hudi_direct,
                                    row_count=row_count)
    key_type = LongType() if params.key_is_long else BinaryType()
    out_schema = StructType([*df.schema.fields, StructField(key_column, key_type, False)])
    return df.mapInArrow(key_mapper(params, key_column), out_schema)
