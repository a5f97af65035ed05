"""When clustering runs: inline after every N commits, or an async service that runs until stopped.

* Inline (``hoodie.clustering.inline=true``): after a write completes, if at least
  ``hoodie.clustering.inline.max.commits`` commits landed since the last clustering, schedule and execute
  one right away, in the writer's process.
* Async (``hudi-layout clustering-service PATH``): a loop that, every ``poll_seconds``, executes pending
  plans (including plans an earlier, crashed run left inflight: they are rolled back to requested and run
  again) and schedules a new plan once ``hoodie.clustering.async.max.commits`` commits landed since the
  last clustering. SIGTERM / SIGINT stop it cleanly between steps; a kill mid-step is recovered by the
  next run through the commit protocol.

Sort columns and layout come from ``hoodie.clustering.plan.strategy.sort.columns`` and
``hoodie.layout.optimize.*`` (the same keys Hudi uses).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.clustering.metrics import ClusteringMetrics
from hudi_layout.errors import CommitConflictError, HudiLayoutError
from hudi_layout.services.clustering import execute_pending, schedule_and_execute
from hudi_layout.spark.session import is_spark_session, session_or_default
from hudi_layout.table.hudi_table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def commits_since_last_clustering(path: str) -> int:
    """Completed data commits after the latest clustering was requested (pending ones count as done)."""
    table = HudiTable(path)
    last_clustering = ""
    for i in table.timeline.instants:
        if table.timeline.is_clustering(i) and i.requested_time > last_clustering:
            last_clustering = i.requested_time
    return sum(1 for i in table.timeline.completed() if i.action in ("commit", "deltacommit")
               and i.requested_time > last_clustering)


def maybe_cluster_inline(spark: SparkSession, path: str, opts: Mapping[str, str]) -> ClusteringMetrics | None:
    """Called by the writer after each completed commit when ``hoodie.clustering.inline`` is on."""
    if commits_since_last_clustering(path) < cfg.CLUSTERING_INLINE_MAX_COMMITS.get(opts):
        return None
    log.info("inline clustering of %s", path)
    return schedule_and_execute(spark, path, opts)


@dataclass
class ServiceStats:
    started: float = field(default_factory=time.time)
    scheduled: int = 0
    executed: int = 0
    failures: int = 0
    runs: list[ClusteringMetrics] = field(default_factory=list)


class ClusteringService:
    """The async clustering loop on the table at ``path``. ``run()`` blocks until :meth:`stop` (or SIGTERM /
    SIGINT). ``spark`` defaults to the active session, else a new one; the previous spelling
    ``ClusteringService(spark, path, options)`` still works with a :class:`DeprecationWarning`."""

    def __init__(self, path: str, *positional: Any, spark: SparkSession | None = None,
                 options: Mapping[str, Any] | None = None, poll_seconds: float = 10.0,
                 max_iterations: int | None = None) -> None:
        rest = list(positional)
        if is_spark_session(path):  # deprecated: ClusteringService(spark, path, options)
            warnings.warn("ClusteringService(spark, path, ...) is deprecated; call ClusteringService(path, "
                          "options, spark=spark)", DeprecationWarning, stacklevel=2)
            if not rest:
                raise TypeError("ClusteringService(spark, path): path is missing")
            spark, path = path, rest.pop(0)  # type: ignore[assignment]
        if rest:
            if len(rest) > 1 or options is not None:
                raise TypeError("ClusteringService() takes the table path and the options")
            options = rest[0]
        self.spark = session_or_default(spark)
        self.path = str(Path(path).absolute())
        self.opts = cfg.resolve_options(options)
        self.poll_seconds = poll_seconds
        self.max_iterations = max_iterations
        self._stop = threading.Event()
        self.stats = ServiceStats()

    def stop(self, *_: Any) -> None:
        log.info("clustering service stopping")
        self._stop.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def step(self) -> None:
        """One iteration: finish pending plans, then schedule + run a new one if enough commits landed."""
        for m in execute_pending(self.spark, self.path, self.opts):
            self.stats.executed += 1
            self.stats.runs.append(m)
            log.info("executed clustering %s: %d files -> %d files in %.1fs", m.instant_time, m.files_in,
                     m.files_out, m.seconds)
            if self._stop.is_set():
                return
        if commits_since_last_clustering(self.path) >= cfg.CLUSTERING_ASYNC_MAX_COMMITS.get(self.opts):
            new = schedule_and_execute(self.spark, self.path, self.opts)
            if new is not None:
                self.stats.scheduled += 1
                self.stats.executed += 1
                self.stats.runs.append(new)
                log.info("clustered %s: %d files -> %d files in %.1fs", new.instant_time, new.files_in,
                         new.files_out, new.seconds)

    def run(self) -> ServiceStats:
        iterations = 0
        log.info("clustering service started on %s (every %.0fs)", self.path, self.poll_seconds)
        while not self._stop.is_set():
            try:
                self.step()
            except CommitConflictError as e:
                self.stats.failures += 1
                log.warning("clustering conflicted with a concurrent commit, will retry: %s", e)
            except HudiLayoutError as e:
                self.stats.failures += 1
                log.error("clustering failed: %s", e)
            iterations += 1
            if self.max_iterations is not None and iterations >= self.max_iterations:
                break
            self._stop.wait(self.poll_seconds)
        log.info("clustering service stopped: %d executed, %d failures", self.stats.executed, self.stats.failures)
        return self.stats
