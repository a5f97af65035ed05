"""The only package that imports pyspark at runtime: session defaults, curve keys and curve sort, the write
and clustering jobs, reads of a scan plan, and the Python data source."""

from __future__ import annotations

from typing import Any

__all__ = ["get_spark", "with_curve_key"]


def __getattr__(name: str) -> Any:
    if name == "get_spark":
        from hudi_layout.spark.session import get_spark

        return get_spark
    if name == "with_curve_key":
        from hudi_layout.spark.curve_key import with_curve_key

        return with_curve_key
    raise AttributeError(name)
