"""Column-chunk numbering of parquet files with nested columns: footer statistics of a flat column after a
struct, list or map come from its own chunk (they came from the nested column's leaves before)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout.format.parquet_columns import leaf_index
from hudi_layout.metadata.mdt_writer import FileColumnStats
from hudi_layout.writer.metadata_sync import footer_stats

NESTED = pa.table({
    "s": pa.array([{"a": 100, "b": {"c": 7.5, "d": "z"}}, {"a": 200, "b": None}],
                  pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.float64()), ("d", pa.string())]))])),
    "v": pa.array([5, 6], pa.int64()),
    "l": pa.array([[1000, 2000], []], pa.list_(pa.int64())),
    "m": pa.array([[("k", 9000)], None], pa.map_(pa.string(), pa.int64())),
    "w": pa.array(["x", "y"], pa.string()),
})


def test_leaf_index_counts_every_leaf_of_nested_columns(tmp_path: Path) -> None:
    path = tmp_path / "n.parquet"
    pq.write_table(NESTED, path)
    meta = pq.ParquetFile(path).metadata
    got = leaf_index(meta.schema.to_arrow_schema())
    assert got == {"v": 3, "w": 7}  # s: 3 leaves (a, b.c, b.d); v; l: 1; m: key + value
    assert all(meta.schema.column(i).path == name for name, i in got.items())


def test_footer_stats_of_flat_columns_after_nested_ones(tmp_path: Path) -> None:
    path = tmp_path / "n.parquet"
    pq.write_table(NESTED, path)
    stats = {s.column: s for s in footer_stats(str(path), "", "n.parquet", {}, FileColumnStats)}
    assert set(stats) == {"v", "w"}  # nested columns get no record
    assert (stats["v"].min, stats["v"].max) == (5, 6)  # not s.b.c's 7.5 / s.a's bounds
    assert (stats["w"].min, stats["w"].max) == ("x", "y")
