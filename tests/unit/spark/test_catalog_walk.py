"""The catalog walk after a write (SQL tables over the path) must not create Spark's warehouse folder in the
caller's current folder: a never-used in-memory catalog is not listed (session 31's probe)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hudi_layout.spark.datasource import _catalog_may_hold_tables


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class _Session:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)


def _session(warehouse: str, implementation: str = "in-memory") -> Any:
    return _Session({"spark.sql.warehouse.dir": warehouse, "spark.sql.catalogImplementation": implementation})


def test_a_never_used_in_memory_catalog_is_not_listed(tmp_path: Path) -> None:
    missing = tmp_path / "spark-warehouse"
    assert not _catalog_may_hold_tables(_session(f"file:{missing}"))
    missing.mkdir()
    assert _catalog_may_hold_tables(_session(f"file:{missing}"))
    assert _catalog_may_hold_tables(_session(str(missing)))
    assert _catalog_may_hold_tables(_session("hdfs://nn/warehouse"))
    assert _catalog_may_hold_tables(_session(f"file:{tmp_path / 'absent'}", implementation="hive"))
