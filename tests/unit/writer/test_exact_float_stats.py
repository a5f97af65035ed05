"""The per-file reader behind ``index --read-floats``: NaN-exact float statistics from a base file's data, across
row groups, for the indexed float columns only (others are the footers' job)."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout.writer.metadata_sync import exact_float_stats, float_columns_to_read

NAN = float("nan")


def _file(tmp_path: Path, table: pa.Table) -> str:
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=2)  # several row groups: the bounds span them
    return str(path)


def test_bounds_nulls_and_nan_across_row_groups(tmp_path: Path) -> None:
    table = pa.table({"id": pa.array([1, 2, 3, 4, 5], pa.int64()),
                      "x": pa.array([3.0, None, -1.5, NAN, 2.0], pa.float64()),
                      "f": pa.array([None, None, 0.5, 1.5, None], pa.float32()),
                      "all_nan": pa.array([NAN, None, NAN, NAN, NAN], pa.float64())})
    got = {s.column: s for s in exact_float_stats(_file(tmp_path, table), "p", "f.parquet", {})}
    assert set(got) == {"x", "f", "all_nan"}  # `id` is an integer: its footer bounds are exact
    x = got["x"]
    assert (x.min, x.null_count, x.value_count, x.arrow_type) == (-1.5, 1, 5, pa.float64())
    assert math.isnan(x.max)  # NaN is the greatest value in Spark: `x > 100` must keep this file
    f = got["f"]
    assert (f.min, f.max, f.null_count, f.arrow_type) == (0.5, 1.5, 3, pa.float32())
    assert math.isnan(got["all_nan"].min) and math.isnan(got["all_nan"].max)
    assert all(s.partition == "p" and s.file_name == "f.parquet" and s.total_size > 0 for s in got.values())


def test_only_the_listed_columns_are_read() -> None:
    schema = pa.schema([("a", pa.float64()), ("b", pa.float32()), ("c", pa.int32())])
    opts = {"hoodie.metadata.index.column.stats.column.list": "b,c"}
    assert float_columns_to_read(schema, opts) == ["b"]
    assert float_columns_to_read(schema, {}) == ["a", "b"]
