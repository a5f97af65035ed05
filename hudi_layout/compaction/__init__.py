"""Merge-on-Read compaction without Spark: which file slices to compact (the plan) and scheduling it.

The Spark job that merges the slices is :mod:`hudi_layout.spark.compaction_job`; the transaction around it
(execute, commit, metrics) is :mod:`hudi_layout.services.compaction`. See docs/compaction.md.
"""

from hudi_layout.compaction.plan import CompactionMetrics, PlanSelection, PlanStrategy, select_operations
from hudi_layout.compaction.schedule import schedule_compaction

__all__ = ["CompactionMetrics", "PlanSelection", "PlanStrategy", "schedule_compaction", "select_operations"]
