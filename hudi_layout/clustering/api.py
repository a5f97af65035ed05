"""One-shot clustering: schedule a plan and execute it (and any plan left pending before)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config as cfg
from ..errors import InvalidArgumentError
from ..table.commit_protocol import rollback_failed_writes
from ..table.locks import TableLock, writer_is_alive
from .executor import ClusteringMetrics, execute_plan
from .schedule import load_pending_plans, schedule_clustering

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

_STRATEGY_NAMES = {"z-order": "z-order", "zorder": "z-order", "z_order": "z-order", "hilbert": "hilbert",
                   "linear": "linear"}


def _normalise(strategy: str) -> str:
    key = strategy.strip().lower()
    if key not in _STRATEGY_NAMES:
        raise InvalidArgumentError(f"unknown strategy {strategy!r}: expected linear, z-order or hilbert")
    return _STRATEGY_NAMES[key]


def execute_pending(spark: SparkSession, path: str, options: Mapping[str, Any] | None = None,
                    *, only: str | None = None) -> list[ClusteringMetrics]:
    """Execute every pending clustering plan whose executor is not alive (oldest first)."""
    base = Path(path).absolute()
    drop_metadata_table_if_disabled(str(base), cfg.resolve_options(options))
    rollback_failed_writes(base)  # inflight clusterings of dead executors go back to requested
    done = []
    for instant_time, plan in load_pending_plans(base, options):
        if only is not None and instant_time != only:
            continue
        if writer_is_alive(base, instant_time):
            continue
        log.info("executing clustering %s (%d groups)", instant_time, len(plan.groups))
        done.append(execute_plan(spark, str(base), instant_time, plan, options))
    return done


def cluster(spark: SparkSession, path: str, columns: Sequence[str] | str, strategy: str = "z-order",
            method: str = "direct", options: Mapping[str, Any] | None = None, *,
            include_all_files: bool = True) -> ClusteringMetrics | None:
    """Schedule a clustering of ``path`` on ``columns`` and execute it. Returns what it did (``None`` when
    no file group qualified).

    ``include_all_files`` (default True here, unlike Hudi's scheduler) plans every file group regardless
    of ``hoodie.clustering.plan.strategy.small.file.limit``: asking to lay a table out along a curve means
    the whole table. Set it to False for Hudi's small-files-only behaviour.
    """
    opts = cfg.resolve_options(options)
    drop_metadata_table_if_disabled(path, opts)
    scheduled = schedule_clustering(path, opts, columns=columns, strategy=_normalise(strategy), method=method,
                                    include_all_files=include_all_files, resolve=False)
    if scheduled is None:
        return None
    instant_time, plan = scheduled
    return execute_plan(spark, str(Path(path).absolute()), instant_time, plan, opts)


def drop_metadata_table_if_disabled(path: str, opts: Mapping[str, str]) -> bool:
    """``hoodie.metadata.enable=false`` on a table that has an MDT: delete it, as Hudi's writer does, so
    no index can go stale. The data table's ``hoodie.table.metadata.partitions`` is cleared first."""
    if "hoodie.metadata.enable" not in opts or cfg.METADATA_ENABLE.get(opts):
        return False
    import shutil

    from ..metadata.mdt_writer import update_data_table_properties

    base = Path(path).absolute()
    mdt = base / ".hoodie" / "metadata"
    if not mdt.exists():
        return False
    with TableLock(base):
        update_data_table_properties(base, {"hoodie.table.metadata.partitions": "",
                                            "hoodie.table.metadata.partitions.inflight": ""})
        shutil.rmtree(mdt)
    log.warning("hoodie.metadata.enable=false: deleted the metadata table of %s", base)
    return True
