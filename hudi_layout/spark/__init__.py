"""Spark layer: session defaults, curve-key columns, the executor-side writer, ingestion, reads, data source."""

from __future__ import annotations

from typing import Any

__all__ = ["get_spark", "with_curve_key", "write", "read"]


def __getattr__(name: str) -> Any:
    if name == "get_spark":
        from .session import get_spark

        return get_spark
    if name == "with_curve_key":
        from .curve_key import with_curve_key

        return with_curve_key
    if name == "write":
        from .ingest import write

        return write
    if name == "read":
        from .read import read

        return read
    raise AttributeError(name)
