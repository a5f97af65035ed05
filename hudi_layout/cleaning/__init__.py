"""Cleaning without Spark: Hudi's ``clean`` action (plan, delete, metadata table, complete), its policies, the
grace period that protects running readers, and the automatic trigger after commits (docs/cleaning.md)."""

from __future__ import annotations

from hudi_layout.cleaning.config import CleanConfig
from hudi_layout.cleaning.execute import CleanResult, clean, clean_if_due
from hudi_layout.cleaning.plan import PlannedClean, gather_state, plan_clean

__all__ = ["CleanConfig", "CleanResult", "PlannedClean", "clean", "clean_if_due", "gather_state", "plan_clean"]
