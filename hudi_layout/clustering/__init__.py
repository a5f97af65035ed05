"""Clustering: plan (pure), schedule (timeline), execute (Spark), triggers (inline, async service)."""

from __future__ import annotations

from typing import Any

__all__ = ["cluster", "execute_pending", "ClusteringMetrics"]


def __getattr__(name: str) -> Any:  # lazy: keep `import hudi_layout.clustering.plan` Spark-free
    if name in ("cluster", "execute_pending"):
        from . import api

        return getattr(api, name)
    if name == "ClusteringMetrics":
        from .executor import ClusteringMetrics

        return ClusteringMetrics
    raise AttributeError(name)
