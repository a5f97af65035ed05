"""Clustering without Spark: plan options and strategy (Hudi's size-based), bin packing, scheduling on the
timeline, and the metrics of an execution. Executing a plan is :mod:`hudi_layout.services.clustering`."""

from __future__ import annotations

from hudi_layout.clustering.metrics import ClusteringMetrics, GroupMetrics

__all__ = ["ClusteringMetrics", "GroupMetrics"]
