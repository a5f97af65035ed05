"""hudi_layout: space-filling-curve clustering, a column_stats index and data skipping for Apache Hudi.

Public entry points (imported lazily so that ``import hudi_layout`` stays cheap and Spark-free):

* :class:`HudiTable` — read a table's properties, timeline and file slices (no Spark).
* :func:`write` — append / overwrite a Spark DataFrame as a Copy-on-Write Hudi table.
* :func:`cluster` — lay a table out along z-order, Hilbert or linear order (a Hudi clustering).
* :func:`read` / :func:`explain` — filtered reads that open only candidate files / the scan plan.
* :class:`ColumnStatsIndex` — the metadata table's column statistics as Arrow tables.
* :func:`get_spark` — a SparkSession with the defaults hudi_layout needs.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "HudiTable": ("hudi_layout.table.hudi_table", "HudiTable"),
    "ColumnStatsIndex": ("hudi_layout.metadata.column_stats_index", "ColumnStatsIndex"),
    "write": ("hudi_layout.spark.ingest", "write"),
    "read": ("hudi_layout.spark.read", "read"),
    "explain": ("hudi_layout.spark.read", "explain"),
    "plan_scan": ("hudi_layout.scan", "plan_scan"),
    "cluster": ("hudi_layout.clustering.api", "cluster"),
    "execute_pending": ("hudi_layout.clustering.api", "execute_pending"),
    "ClusteringService": ("hudi_layout.clustering.triggers", "ClusteringService"),
    "get_spark": ("hudi_layout.spark.session", "get_spark"),
    "with_curve_key": ("hudi_layout.spark.curve_key", "with_curve_key"),
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        module, attr = _EXPORTS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'hudi_layout' has no attribute {name!r}")
