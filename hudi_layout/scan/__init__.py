"""Reading tables without Spark: scan planning (``plan``) and the Merge-on-Read file-slice merge (``merge``).

The scan-planning names stay importable from here (``from hudi_layout.scan import plan_scan``); they are
loaded on first use so ``import hudi_layout.scan.merge`` inside an executor does not pull in the planner.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_PLAN_EXPORTS = ("ScanPlan", "plan_scan", "to_predicate", "table_schema", "load_column_stats")

__all__ = list(_PLAN_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _PLAN_EXPORTS:
        return getattr(import_module("hudi_layout.scan.plan"), name)
    raise AttributeError(f"module 'hudi_layout.scan' has no attribute {name!r}")
