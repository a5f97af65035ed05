"""hudi_layout: space-filling-curve clustering, a column_stats index and data skipping for Apache Hudi.

Public entry points (from :mod:`hudi_layout.api`, imported lazily so that ``import hudi_layout`` stays
cheap and Spark-free):

* :class:`HudiTable` — read a table's properties, timeline and file slices (no Spark).
* :func:`write` — append / overwrite a Spark DataFrame as a Copy-on-Write Hudi table.
* :func:`cluster` — lay a table out along z-order, Hilbert or linear order (a Hudi clustering).
* :func:`read` / :func:`explain` — filtered reads that open only candidate files / the scan plan.
* :func:`compact` — merge a Merge-on-Read table's log files into new base files (a Hudi compaction).
* :func:`clean` — delete file slices no retained instant needs (a Hudi clean; no Spark).
* :func:`savepoint` / :func:`delete_savepoint` / :func:`savepoints` — pin a commit's files against cleaning;
  :func:`restore_to_savepoint` takes the table back to one (Hudi's restore).
* :class:`ColumnStatsIndex` — the metadata table's column statistics as Arrow tables (latest file slices).
* :func:`get_spark` — a SparkSession with the defaults hudi_layout needs.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: public names, all from :mod:`hudi_layout.api` (imported on first use)
_EXPORTS = (
    "HudiTable", "ColumnStatsIndex", "write", "read", "explain", "plan_scan", "cluster", "execute_pending",
    "ClusteringService", "get_spark", "with_curve_key", "clean", "compact", "build_column_stats_index",
    "CleanResult", "ClusteringMetrics", "CompactionMetrics", "ScanPlan", "WriteResult",
    "savepoint", "delete_savepoint", "savepoints", "SavepointInfo", "restore_to_savepoint", "RestoreResult",
)

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module("hudi_layout.api"), name)
    raise AttributeError(f"module 'hudi_layout' has no attribute {name!r}")
