"""prune(): aligning stats tables to files; partition pruning."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.partitions import parse_partition_path, partition_stats, prune_partitions
from hudi_layout.skipping.pruning import prune
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.tuples import from_tuples


def stats_table(rows: list[tuple[str, object, object, int | None, int | None]], type_: pa.DataType) -> pa.Table:
    names, lo, hi, nc, vc = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [], [])
    return pa.table({"file_name": pa.array(names, pa.string()), "min": pa.array(lo, type_), "max": pa.array(hi, type_),
                     "null_count": pa.array(nc, pa.int64()), "value_count": pa.array(vc, pa.int64())})


FILES = ["f0.parquet", "f1.parquet", "f2.parquet", "f3.parquet"]
PRICE = stats_table([("f2.parquet", 200, 299, 0, 10), ("f0.parquet", 0, 99, 0, 10), ("f1.parquet", 100, 199, 0, 10)],
                    pa.int64())


def test_rows_in_any_order_missing_file_is_kept() -> None:
    result = prune(from_sql("price >= 150 AND price < 180"), FILES, {"price": PRICE})
    assert result.kept == [1, 3], "f3 has no stats row: unknown, kept"
    assert result.dropped == {0: "price >= 150", 2: "price < 180"}


def test_duplicate_rows_for_a_file_are_ambiguous_and_kept() -> None:
    dup = stats_table([("f0.parquet", 0, 9, 0, 1), ("f0.parquet", 0, 9, 0, 1), ("f1.parquet", 0, 9, 0, 1)], pa.int64())
    assert prune(from_sql("price > 50"), FILES[:2], {"price": dup}).kept == [0]


def test_stats_rows_for_unknown_files_are_ignored() -> None:
    extra = stats_table([("other.parquet", 0, 9, 0, 1), ("f0.parquet", 500, 600, 0, 1)], pa.int64())
    assert prune(from_sql("price < 100"), FILES[:1], {"price": extra}).kept == []


def test_unreferenced_and_missing_columns() -> None:
    assert prune(from_sql("qty = 1"), FILES, {"price": PRICE}).kept == [0, 1, 2, 3]
    assert prune(from_sql("qty = 1 AND price > 250"), FILES, {"price": PRICE}).kept == [2, 3]


def test_schema_binds_columns_and_types_the_stats() -> None:
    schema = pa.schema([("Price", pa.int32()), ("day", pa.date32())])
    days = stats_table([("f0.parquet", "2024-01-01", "2024-01-31", 0, 5)], pa.string())
    assert prune(from_tuples([("price", ">", 250)]), FILES, {"Price": PRICE}, schema).kept == [2, 3]
    assert prune(from_sql("day >= '2024-02-01'"), FILES[:1], {"day": days}, schema).kept == []
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        prune(from_sql("nope = 1"), FILES, {"price": PRICE}, schema)


def test_stats_table_without_required_columns_is_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="null_count"):
        prune(from_sql("price = 1"), FILES, {"price": PRICE.drop_columns(["null_count"])})


def test_no_files() -> None:
    assert prune(from_sql("price = 1"), [], {"price": PRICE}).kept == []


# ---------------------------------------------------------------------------------------------- partitions

SCHEMA = pa.schema([("region", pa.string()), ("day", pa.date32()), ("hour", pa.int32())])
HIVE = ["region=us/day=2024-01-01/hour=3", "region=eu/day=2024-01-02/hour=7",
        "region=__HIVE_DEFAULT_PARTITION__/day=2024-01-03/hour=1", "region=us/day=not-a-date/hour=2", "garbage"]


def test_parse_partition_path() -> None:
    assert parse_partition_path("a=1/b=x%2Fy", ["a", "b"], hive_style=True, url_decode=True) == {"a": "1", "b": "x/y"}
    assert parse_partition_path("1/x", ["a", "b"], hive_style=False) == {"a": "1", "b": "x"}
    assert parse_partition_path("2024/01/05", ["day"], hive_style=False) == {"day": "2024/01/05"}
    assert parse_partition_path("a=1", ["a", "b"], hive_style=True) is None
    assert parse_partition_path("__HIVE_DEFAULT_PARTITION__", ["a"], hive_style=False) == {"a": None}


@pytest.mark.parametrize(("sql", "kept"), [
    ("region = 'us'", [0, 3, 4]),
    ("region IS NULL", [2, 4]),
    ("region IS NOT NULL AND hour > 2", [0, 1, 4]),
    ("day >= DATE '2024-01-02'", [1, 2, 3, 4]),
    ("day = '2024-01-01' OR hour = 7", [0, 1, 3, 4]),
    ("region = 'eu' AND day = DATE '2024-01-02' AND hour = 7", [1, 4]),
    ("price = 5", [0, 1, 2, 3, 4]),
])
def test_prune_partitions(sql: str, kept: list[int]) -> None:
    assert prune_partitions(from_sql(sql), HIVE, ["region", "day", "hour"], hive_style=True, schema=SCHEMA).kept == kept


def test_partition_stats_are_min_equals_max() -> None:
    stats = partition_stats(HIVE[:3], ["region", "day", "hour"], hive_style=True, schema=SCHEMA)
    day = stats.columns["day"]
    assert day.min.to_pylist() == day.max.to_pylist() == [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
    # the default partition of a string column: NULL, '' or a value spelling a default folder's name
    region = stats.columns["region"]
    assert region.null_count.to_pylist() == [0, 0, None]
    assert region.min.to_pylist() == ["us", "eu", ""] and region.max.to_pylist() == ["us", "eu", "default"]


@pytest.mark.parametrize("folder", ["__HIVE_DEFAULT_PARTITION__", "default"])
def test_a_string_default_partition_may_hold_empty_strings_and_its_own_name(folder: str) -> None:
    """Hudi files NULL and '' alike in the default partition, and a value may spell the folder's name itself
    (session 15: ``ps = ''`` skipped every partition); a typed column's default partition holds only NULLs."""
    paths = [f"region={folder}/hour={folder}", "region=us/hour=3"]
    fields = ["region", "hour"]

    def kept(sql: str) -> list[int]:
        return prune_partitions(from_sql(sql), paths, fields, hive_style=True, schema=SCHEMA).kept

    for sql in ("region = ''", "region = '__HIVE_DEFAULT_PARTITION__'", "region = 'default'", "region IS NULL",
                "region IS NOT NULL", "region < 'a'", "region IN ('', 'x')", "region <=> ''", "NOT region = 'x'"):
        assert 0 in kept(sql), sql
    assert kept("region = 'us'") == [1] and kept("region > 'e'") == [1]
    assert kept("hour = 3") == [1] and kept("hour IS NOT NULL") == [1] and kept("hour IS NULL") == [0]


def test_file_name_column_may_be_large_string_or_dictionary() -> None:
    for names in (pa.array(["f1.parquet"], pa.large_string()), pa.array(["f1.parquet"]).dictionary_encode()):
        table = stats_table([("f1.parquet", 0, 9, 0, 1)], pa.int64()).set_column(0, "file_name", names)
        assert prune(from_sql("price > 50"), FILES[:2], {"price": table}).kept == [0]
