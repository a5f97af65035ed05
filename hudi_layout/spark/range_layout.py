"""Lay rows out along a curve: range-partition by curve key into ``n`` parts and sort within each part.

Spark's ``repartitionByRange`` samples its input to find partition bounds, and that sampling job recomputes
the whole lineage — including the Python pass that computes the curve key — so the key would be computed
twice. We avoid that: the bounds come from the curve keys of a *sample of the key columns only* (taken and
keyed on the driver, like Spark's own range partitioner does with its sample), and the executors' single
key pass also emits, for each row, an integer whose Spark hash sends the row to exactly its range
partition. ``repartition(n, that_column)`` then places every row in its range with one shuffle and no
second pass.

The "preimage" integers (``pmod(hash(v), n) == p`` for each partition ``p``) are found by a tiny Spark job
with Spark's own ``hash`` function, so they are exact for the running Spark version by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from hudi_layout.curves import to_sortable_int64
from hudi_layout.spark.curve_key import (
    KEY_COLUMN,
    CurveParams,
    check_key_columns,
    curve_params,
    normalise_strategy,
    with_curve_key,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PARTITION_COLUMN = "_hudi_layout_range_partition"
_preimage_cache: dict[tuple[int, int], np.ndarray] = {}


def hash_preimages(spark: SparkSession, n: int) -> np.ndarray:
    """``v[p]`` such that Spark sends int ``v[p]`` to partition ``p`` of ``repartition(n, col)``."""
    cache_key = (id(spark), n)
    if cache_key in _preimage_cache:
        return _preimage_cache[cache_key]
    from pyspark.sql import functions as F

    span = max(64, 16 * n)
    while True:
        rows = (spark.range(0, span, 1, 1)
                .select(F.col("id").cast("int").alias("v"))
                .select("v", F.pmod(F.hash("v"), F.lit(n)).alias("p"))
                .groupBy("p").agg(F.min("v").alias("v"))
                .toArrow())  # n rows at most: one preimage per partition
        if rows.num_rows == n:
            break
        span *= 4
    out = np.empty(n, dtype=np.int32)
    out[np.asarray(rows.column("p"))] = np.asarray(rows.column("v"))
    _preimage_cache[cache_key] = out
    return out


def key_bounds(df: DataFrame, params: CurveParams, n: int, *, row_count: int | None = None,
               sample_rows: int | None = None) -> np.ndarray:
    """``n - 1`` ascending uint64 bounds splitting the curve keys of ``df`` into ``n`` equal-count ranges."""
    if n <= 1:
        return np.empty(0, dtype=np.uint64)
    want = sample_rows or min(1_000_000, max(20_000, 200 * n))
    total = row_count if row_count is not None else df.count()
    fraction = 1.0 if total <= want else min(1.0, 1.1 * want / total)
    sample = df.select(*[f"`{c}`" for c in params.columns]).sample(False, fraction, seed=7).toArrow()
    if sample.num_rows == 0:
        return np.empty(0, dtype=np.uint64)
    keys = params.keys(sample)
    keys = np.sort(keys)
    idx = (np.arange(1, n) * keys.size) // n
    return keys[np.minimum(idx, keys.size - 1)]


def _mapper(params: CurveParams, bounds: np.ndarray, preimages: np.ndarray):
    def mapper(batches: Any) -> Any:
        for b in batches:
            key = params.keys(b)
            part = np.searchsorted(bounds, key, side="right") if bounds.size else np.zeros(key.size, np.int64)
            yield pa.RecordBatch.from_arrays(
                [*b.columns, pa.array(to_sortable_int64(key)), pa.array(preimages[part])],
                names=[*b.schema.names, KEY_COLUMN, PARTITION_COLUMN])

    return mapper


def curve_layout(df: DataFrame, columns: Sequence[str], n: int, *, strategy: str = "z-order",
                 method: str = "direct", sample_size: int = 200_000, row_count: int | None = None,
                 hudi_direct: bool = False) -> DataFrame:
    """``df`` range-partitioned into ``n`` partitions along the curve and sorted within each (key dropped).

    ``linear`` (or a single column) uses Spark's ``repartitionByRange`` + ``sortWithinPartitions`` on the
    columns themselves.
    """
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    check_key_columns(df, columns)
    kind = normalise_strategy(strategy)
    n = max(1, int(n))
    if kind == "linear" or len(columns) == 1:
        cols = [f"`{c}`" for c in columns]
        return df.repartitionByRange(n, *cols).sortWithinPartitions(*cols)
    if row_count is None:
        row_count = df.count()
    params = curve_params(df, columns, curve=kind, method=method, sample_size=sample_size,
                          hudi_direct=hudi_direct, row_count=row_count)
    if not params.key_is_long:  # very wide keys (explicit bits): let Spark range-partition the bytes
        keyed = with_curve_key(df, columns, kind, method, params=params)
        return keyed.repartitionByRange(n, KEY_COLUMN).sortWithinPartitions(KEY_COLUMN).drop(KEY_COLUMN)
    bounds = key_bounds(df, params, n, row_count=row_count)
    spark = df.sparkSession
    preimages = hash_preimages(spark, n)
    schema = StructType([*df.schema.fields, StructField(KEY_COLUMN, LongType(), False),
                         StructField(PARTITION_COLUMN, IntegerType(), False)])
    keyed = df.mapInArrow(_mapper(params, bounds, preimages), schema)
    return (keyed.repartition(n, PARTITION_COLUMN)
            .sortWithinPartitions(KEY_COLUMN)
            .drop(KEY_COLUMN, PARTITION_COLUMN))
