"""When clustering runs: inline after every N commits, or an async service that runs until stopped.

* Inline (``hoodie.clustering.inline=true``): after a write completes, first execute the pending plans whose
  executor is gone (an inline clustering killed after its plan leaves one; Hudi's writer runs them the same
  way before it schedules, ``runAnyPendingClustering``), then, if at least
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.clustering.metrics import ClusteringMetrics
from hudi_layout.clustering.plan import ClusteringOptions
from hudi_layout.clustering.schedule import prepare_clustering_options, schedule_clustering
from hudi_layout.errors import CommitConflictError, HudiLayoutError, InvalidArgumentError
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
from hudi_layout.services.clustering import execute_pending, execute_plan, schedule_and_execute
from hudi_layout.spark.session import is_spark_session, session_or_default
from hudi_layout.table.commit_protocol import rollback_failed_writes
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.paths import table_dir

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
    """Called by the writer after each completed commit when ``hoodie.clustering.inline`` is on: pending plans
    whose executor is gone first (their groups refuse updates until they run), then a new plan when due.
    Returns the metrics of the last clustering executed, if any. The write has completed by now: a pending plan
    that cannot run is left pending with a warning (its groups keep refusing updates, as before), not raised."""
    last_resumed: ClusteringMetrics | None = None
    try:
        resumed = execute_pending(spark, path, cfg.options_used_by(opts, cfg.CLUSTER))
        last_resumed = resumed[-1] if resumed else None
    except HudiLayoutError as exc:
        log.warning("inline clustering of %s left a pending plan as it is: %s", path, exc)
    if commits_since_last_clustering(path) < cfg.CLUSTERING_INLINE_MAX_COMMITS.get(opts):
        return last_resumed
    log.info("inline clustering of %s", path)
    try:
        return schedule_and_execute(spark, path, opts) or last_resumed
    except HudiLayoutError as exc:  # the write has completed: raising now would have its caller write it again
        log.warning("inline clustering of %s did not run: %s", path, exc)
        return last_resumed


@dataclass(frozen=True)
class ServiceEvent:
    """One action of the service, for its one-line-per-action output (``--json``: one object per line).

    ``action`` is ``started``, ``rolled_back``, ``scheduled``, ``executed``, ``idle``, ``failed`` or
    ``stopped``."""

    action: str
    instant_time: str | None = None
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.at)), "action": self.action,
                "instant": self.instant_time, "detail": self.detail, **dict(self.data)}

    def line(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.at))
        what = f" {self.instant_time}" if self.instant_time else ""
        return f"{stamp} {self.action:<11}{what}{': ' if self.detail else ''}{self.detail}"


EventSink = Callable[[ServiceEvent], None]


@dataclass
class ServiceStats:
    started: float = field(default_factory=time.time)
    scheduled: int = 0
    executed: int = 0
    rolled_back: int = 0
    failures: int = 0
    runs: list[ClusteringMetrics] = field(default_factory=list)


class ClusteringService:
    """The async clustering loop on the table at ``path``. ``run()`` blocks until :meth:`stop` (or SIGTERM /
    SIGINT). ``spark`` defaults to the active session, else a new one; the previous spelling
    ``ClusteringService(spark, path, options)`` still works with a :class:`DeprecationWarning`."""

    def __init__(self, path: str, *positional: Any, spark: SparkSession | None = None,
                 options: Mapping[str, Any] | None = None, poll_seconds: float = 10.0,
                 max_iterations: int | None = None, on_event: EventSink | None = None) -> None:
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
        self.opts = cfg.resolve_options(options)
        cfg.refuse_options_unused_by(options, cfg.SERVICE)  # before a session is started for nothing
        self.spark = session_or_default(spark)
        self.path = str(table_dir(path))
        self.poll_seconds = poll_seconds
        self.max_iterations = max_iterations
        self._stop = threading.Event()
        self._wake = threading.Event()
        self.stats = ServiceStats()
        self.on_event = on_event
        self._last_idle: str | None = None

    def _event(self, action: str, instant_time: str | None = None, detail: str = "",
               data: Mapping[str, Any] | None = None) -> None:
        if action != "idle":
            self._last_idle = None
        if self.on_event is not None:
            self.on_event(ServiceEvent(action, instant_time, detail, dict(data or {})))

    def _executed(self, m: ClusteringMetrics) -> None:
        self.stats.executed += 1
        self.stats.runs.append(m)
        log.info("executed clustering %s: %d files -> %d files in %.1fs", m.instant_time, m.files_in,
                 m.files_out, m.seconds)
        self._event("executed", m.instant_time, f"{m.files_in} files -> {m.files_out} files, {m.records:,} rows "
                    f"in {m.seconds:.1f}s" + "".join(f"; note: {n}" for n in m.notes), m.to_dict())

    def stop(self, *_: Any) -> None:
        log.info("clustering service stopping")
        self._stop.set()
        self._wake.set()

    def wake(self) -> None:
        """Check the table now instead of at the end of the current wait (a write just committed)."""
        self._wake.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def step(self) -> None:
        """One iteration: roll back what dead writers left, finish pending plans, then schedule + run a new
        one if enough commits landed."""
        for t in rollback_failed_writes(self.path, hooks=COMMIT_HOOKS):
            self.stats.rolled_back += 1
            self._event("rolled_back", t, "a failed write or an interrupted clustering (its plan stays)")
        for m in execute_pending(self.spark, self.path, cfg.options_used_by(self.opts, cfg.CLUSTER)):
            self._executed(m)
            if self._stop.is_set():
                return
        since = commits_since_last_clustering(self.path)
        needed = cfg.CLUSTERING_ASYNC_MAX_COMMITS.get(self.opts)
        if since >= needed:
            columns = cfg.split_fields(cfg.SORT_COLUMNS.get(self.opts))
            if not columns:
                raise InvalidArgumentError(
                    f"{cfg.SORT_COLUMNS.key} must name the columns to cluster by", hint="--columns a,b")
            scheduled = schedule_clustering(self.path, self.opts, resolve=False)
            if scheduled is not None:
                instant_time, plan = scheduled
                self.stats.scheduled += 1
                self._event("scheduled", instant_time, f"{plan.num_slices} files in {len(plan.groups)} groups "
                            f"-> {plan.num_output_file_groups} files, by {', '.join(plan.sort_columns)}")
                self._executed(execute_plan(self.spark, self.path, instant_time, plan, self.opts))
                return
        idle = f"{since} of {needed} commits since the last clustering"
        if idle != self._last_idle:
            self._event("idle", None, idle, {"commits_since_last_clustering": since, "needed": needed})
            self._last_idle = idle

    def validate(self) -> None:
        """Refuse what would only fail once a clustering is due (hours later in a long-running service): the
        table, every option value, the columns and strategy against the table, the polling interval. ``run``
        calls it first, so nothing is touched when it raises."""
        if not self.poll_seconds > 0:
            raise InvalidArgumentError(f"poll interval {self.poll_seconds!r} s: expected a positive number of seconds",
                                       hint="--poll-seconds 10")
        cfg.validate_all(self.opts)
        if not cfg.split_fields(cfg.SORT_COLUMNS.get(self.opts)):
            raise InvalidArgumentError(f"{cfg.SORT_COLUMNS.key} must name the columns to cluster by",
                                       hint="--columns a,b")
        prepare_clustering_options(HudiTable(self.path), self.opts, resolve=False)

    def run(self) -> ServiceStats:
        self.validate()
        iterations = 0
        log.info("clustering service started on %s (every %.0fs)", self.path, self.poll_seconds)
        self._event("started", None, f"{self.path}, every {self.poll_seconds:g}s")
        while not self._stop.is_set():
            try:
                self.step()
            except CommitConflictError as e:
                self.stats.failures += 1
                log.warning("clustering conflicted with a concurrent commit, will retry: %s", e)
                self._event("failed", None, f"conflict with a concurrent commit, will retry: {e}")
            except HudiLayoutError as e:
                self.stats.failures += 1
                log.error("clustering failed: %s", e)
                self._event("failed", None, str(e))
            iterations += 1
            if self.max_iterations is not None and iterations >= self.max_iterations:
                break
            self._wake.wait(self.poll_seconds)
            self._wake.clear()
        log.info("clustering service stopped: %d executed, %d failures", self.stats.executed, self.stats.failures)
        self._event("stopped", None, f"{self.stats.scheduled} scheduled, {self.stats.executed} executed, "
                    f"{self.stats.rolled_back} rolled back, {self.stats.failures} failures")
        return self.stats


# ------------------------------------------------------------------------ async clustering of a write

#: how long interpreter exit waits for a background clustering step to finish (then the plan stays
#: pending and the next run resumes it; nothing is lost)
ASYNC_STOP_TIMEOUT_SECONDS = 30.0
#: how often the background service looks at the table between writes
ASYNC_POLL_SECONDS = 30.0

_async_lock = threading.Lock()
_async: dict[str, tuple[ClusteringService, threading.Thread]] = {}
_atexit_registered = False


def check_async_options(opts: Mapping[str, str], columns: Sequence[str] | None = None) -> None:
    """Refuse ``hoodie.clustering.async.enabled=true`` without sort columns, and clustering after a write
    (async or inline) by columns the written rows do not have (``columns``), before anything is written: the
    background thread would only log it, hours later."""
    sort_columns = cfg.split_fields(cfg.SORT_COLUMNS.get(opts))
    clusters = cfg.CLUSTERING_ASYNC_ENABLED.get(opts) or cfg.CLUSTERING_INLINE.get(opts)
    if clusters and not sort_columns:  # inline too (session 29: it failed after the write's commit)
        service = cfg.CLUSTERING_ASYNC_ENABLED if cfg.CLUSTERING_ASYNC_ENABLED.get(opts) else cfg.CLUSTERING_INLINE
        raise InvalidArgumentError(
            f"{service.key}=true needs {cfg.SORT_COLUMNS.key} (the columns to cluster by)",
            hint=f"-o {cfg.SORT_COLUMNS.key}=a,b (and hoodie.layout.optimize.strategy=hilbert)")
    if clusters:
        checked = ClusteringOptions.from_options(opts)  # names, sizes, patterns: refused now, not after the commit
        if checked.is_qdtree and not (cfg.WORKLOAD.get(opts).strip() or checked.qdtree_cuts):
            raise InvalidArgumentError(
                "clustering after a write with strategy qdtree needs a workload, and none was given",
                hint=f"set {cfg.WORKLOAD.key} (a file of predicates, or 'log')")
    missing = [c for c in sort_columns if columns is not None and c not in columns]
    if clusters and missing:
        raise InvalidArgumentError(
            f"{cfg.SORT_COLUMNS.key} names {', '.join(map(repr, missing))}, which the written rows do not have",
            hint=f"columns: {', '.join(columns or ())}")


def ensure_async_clustering(spark: SparkSession, path: str, opts: Mapping[str, str]) -> ClusteringService:
    """``hoodie.clustering.async.enabled=true`` on a write: the clustering service of ``path`` runs in a
    background thread of this process for the life of its Spark session (one per table), woken after each
    write, stopped at interpreter exit (:data:`ASYNC_STOP_TIMEOUT_SECONDS`) or by
    :func:`stop_async_clustering`."""
    global _atexit_registered
    base = str(table_dir(path))
    with _async_lock:
        running = _async.get(base)
        if running is not None and running[1].is_alive() and running[0].spark is spark:
            running[0].opts = cfg.resolve_options(cfg.options_used_by(opts, cfg.SERVICE))
            running[0].wake()
            return running[0]
        service = ClusteringService(base, spark=spark, options=cfg.options_used_by(opts, cfg.SERVICE),
                                    poll_seconds=ASYNC_POLL_SECONDS,
                                    on_event=lambda e: log.info("async clustering: %s", e.line()))
        thread = threading.Thread(target=_run_in_background, args=(service,), daemon=True,
                                  name=f"hudi_layout-async-clustering:{Path(base).name}")
        _async[base] = (service, thread)
        if not _atexit_registered:
            import atexit

            atexit.register(stop_async_clustering)
            _atexit_registered = True
        thread.start()
        log.info("async clustering of %s runs in this process (%s)", base, thread.name)
        return service


def _run_in_background(service: ClusteringService) -> None:
    try:
        service.run()
    except Exception as e:  # the session stopped under us, or a bug: report once, never crash the writer
        if not service._stop.is_set():
            log.warning("async clustering of %s stopped: %s", service.path, e)


def stop_async_clustering(path: str | None = None, timeout: float = ASYNC_STOP_TIMEOUT_SECONDS) -> None:
    """Stop the background clustering of ``path`` (every table when ``None``), waiting up to ``timeout``
    seconds for a step in progress; a step cut short leaves its plan pending for the next run."""
    with _async_lock:
        keys = [str(table_dir(path))] if path is not None else list(_async)
        stopping = [_async.pop(k) for k in keys if k in _async]
    for service, _ in stopping:
        service.stop()
    deadline = time.monotonic() + timeout
    for service, thread in stopping:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            log.warning("async clustering of %s still busy at exit; its plan stays pending and the next "
                        "clustering run resumes it", service.path)
