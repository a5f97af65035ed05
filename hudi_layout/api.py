"""The public functions of hudi_layout: thin wrappers over the services, with one argument order.

Every table-level function takes the table path first and the SparkSession as the keyword ``spark=``
(default: the active session, else :func:`get_spark`); :func:`write` keeps the data first, as ``df.write``
does. The spellings of the previous release (``read(spark, path, where)``, ``cluster(spark, path, columns)``,
``execute_pending(spark, path)``) still work for one release and warn with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanResult
from hudi_layout.clustering.metrics import ClusteringMetrics
from hudi_layout.compaction import CompactionMetrics
from hudi_layout.errors import InvalidArgumentError, check_argument_types
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.options import split_fields
from hudi_layout.scan.plan import ScanPlan, plan_scan
from hudi_layout.services import cleaning as _cleaning
from hudi_layout.services import clustering as _clustering
from hudi_layout.services import compaction as _compaction
from hudi_layout.services import savepoint as _savepoint
from hudi_layout.services.clustering_service import ClusteringService
from hudi_layout.services.index import build_column_stats_index
from hudi_layout.services.savepoint import RestoreResult, SavepointInfo
from hudi_layout.services.write import write
from hudi_layout.spark.curve_key import with_curve_key
from hudi_layout.spark.read import dataframe_for_plan, spark_schema
from hudi_layout.spark.session import get_spark, is_spark_session, session_or_default
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.writer.transaction import WriteResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CleanResult", "ClusteringMetrics", "ClusteringService", "ColumnStatsIndex", "CompactionMetrics",
           "HudiTable", "RestoreResult", "SavepointInfo", "ScanPlan", "WriteResult", "build_column_stats_index",
           "clean", "cluster", "compact", "delete_savepoint", "execute_pending", "explain", "get_spark", "plan_scan",
           "read", "restore_to_savepoint", "savepoint", "savepoints", "with_curve_key", "write"]


_log = logging.getLogger("hudi_layout")


def _legacy(name: str, new_form: str) -> None:
    warnings.warn(f"{name}(spark, path, ...) is deprecated; call {new_form} (spark is a keyword now)",
                  DeprecationWarning, stacklevel=3)


def read(path: str, *positional: Any, where: Any = None, spark: SparkSession | None = None,
         columns: Sequence[str] | None = None, skipping: bool = True, include_meta: bool = False,
         options: Mapping[str, Any] | None = None) -> DataFrame:
    """``read(path, where=None, *, spark=None, ...)``: a DataFrame of the rows of the table at ``path`` matching
    ``where``; only candidate files are read. ``where`` may also be the second positional argument.

    Args:
        path: table base path.
        where: SQL text (``"src_port BETWEEN 1000 AND 1999"``), a PySpark ``Column``, hudi-rs style tuples
            ``[("col", "=", 1)]``, or a :mod:`hudi_layout.skipping` predicate. ``None`` reads everything.
        spark: the session (default: the active one, else :func:`get_spark`).
        columns: project these columns (default: all data columns).
        skipping: use the column_stats index (partition pruning always applies).
        include_meta: keep the five ``_hoodie_*`` meta columns.
        options: Hudi read options: ``hoodie.datasource.query.type`` (``snapshot``, the default: Merge-on-Read
            slices merged with their log files; ``read_optimized``: base files only; ``incremental``),
            ``as.of.instant`` (time travel), ``hoodie.datasource.read.begin.instanttime`` / ``end.instanttime``
            (incremental; ``hoodie.datasource.read.incr.fallback.fulltablescan.enable`` when a clean reached the
            range), ``hoodie.enable.data.skipping``; any other ``hoodie.*`` key is refused (docs/read-semantics.md).
            Time travel returns the table's schema as of its instant, as Hudi does.
    """
    rest = list(positional)
    if is_spark_session(path):  # deprecated: read(spark, path, where)
        _legacy("read", "read(path, where, spark=spark)")
        if not rest:
            raise TypeError("read(spark, path): path is missing")
        spark, path = path, rest.pop(0)  # type: ignore[assignment]
    if rest:
        if len(rest) > 1 or where is not None:
            raise TypeError("read() takes the table path and one filter (where)")
        where = rest[0]
    check_argument_types(path=path, options=options, columns=columns)
    if isinstance(columns, str):
        columns = split_fields(columns)
    if columns is not None:  # session 29's probe: [] read every column, and meta columns in it failed in Spark
        if not columns:
            raise InvalidArgumentError("columns=[] names no column", hint="leave columns unset to read them all")
        named_meta = [c for c in columns if c in META_COLUMNS]
        if include_meta:  # the meta columns first, as without columns, then the projection
            columns = [*META_COLUMNS, *[c for c in columns if c not in META_COLUMNS]]
        include_meta = include_meta or bool(named_meta)
    session = session_or_default(spark)
    table = HudiTable(path)
    plan = plan_scan(path, where, use_column_stats=skipping, spark=session, table=table, with_row_counts=False,
                     options=options, source="read")
    if columns is not None:  # against the schema the read returns: a time-travel read has the schema of then
        known = set(META_COLUMNS) | (set(plan.schema.names) if plan.schema is not None
                                     else set(spark_schema(table, include_meta=True).fieldNames()))
        missing = [c for c in columns if c not in known]
        if missing:
            then = " at that instant" if plan.query.as_of is not None else ""
            raise InvalidArgumentError(f"columns: {', '.join(map(repr, missing))} not in the table{then}",
                                       hint=f"columns: {', '.join(sorted(known - set(META_COLUMNS)))}")
    return dataframe_for_plan(session, table, plan, where, columns=columns, include_meta=include_meta)


def explain(path: str, where: Any = None, *, spark: SparkSession | None = None, skipping: bool = True,
            options: Mapping[str, Any] | None = None, time_zone: str | None = None) -> ScanPlan:
    """The scan plan of a filtered read (no data is read, no Spark needed unless ``where`` is a Column).
    ``options``: Hudi read options, as for :func:`read`. ``time_zone``: the zone date and timestamp text is read
    in, as a session's ``spark.sql.session.timeZone`` (default: ``spark``'s or the active session's, else UTC).
    ``print(plan.render())`` for a report."""
    check_argument_types(path=path, options=options)
    return plan_scan(path, where, use_column_stats=skipping, spark=spark, options=options, source="explain",
                     time_zone=time_zone)


def cluster(path: str, columns: Sequence[str] | str | None = None, *legacy: Any, spark: SparkSession | None = None,
            strategy: str | None = None, method: str | None = None, options: Mapping[str, Any] | None = None,
            include_all_files: bool = True, resume: bool = True, abandon_pending: bool = False,
            workload: Any = None, column_weights: Mapping[str, float] | str | None = None
            ) -> ClusteringMetrics | None:
    """Schedule a clustering of ``path`` on ``columns`` and execute it. Returns what it did: the new
    clustering, or the last pending plan it resumed instead, or ``None`` (no file group qualified).

    ``strategy`` is ``linear``, ``z-order``, ``hilbert`` or ``qdtree`` (a layout cut along the ``workload``'s
    predicates, see docs/layouts.md); ``method`` is ``direct`` or ``sample``. Unset, they come from the options
    ``hoodie.layout.optimize.strategy`` / ``...curve.build.method``, else z-order / direct; ``columns`` unset
    come from ``hoodie.clustering.plan.strategy.sort.columns`` (an argument the option contradicts is refused).
    ``include_all_files`` (default True here, unlike Hudi's scheduler) plans every file group regardless
    of ``hoodie.clustering.plan.strategy.small.file.limit``: asking to lay a table out along a curve means
    the whole table. Set it to False for Hudi's small-files-only behaviour.

    Plans an interrupted run left pending (their executor is gone; or plans Hudi scheduled) are never
    skipped silently: ``resume`` (default True, like the retry of Hudi's clustering job) executes them instead
    of a new plan (no ``columns`` needed); ``abandon_pending=True`` rolls them back first (a Hudi ``rollback``
    instant each); ``resume=False`` leaves them and logs a warning naming them.

    ``workload``: SQL ``WHERE`` predicates (``["dst_port = 443", ("src_ip LIKE '10.%'", 2.0)]``), a
    :class:`~hudi_layout.clustering.workload.Workload`, a file of predicates, or ``"log"`` (the table's query
    log). ``column_weights``: ``{"src_port": 2}`` (a column twice as heavy gets one more of the curve's top
    bits) or ``"workload"`` (derived from the workload).
    """
    if is_spark_session(path):  # cluster(spark, path, columns, strategy, method, options)
        _legacy("cluster", "cluster(path, columns, spark=spark, ...)")
        if not legacy:
            raise TypeError("cluster(spark, path, columns): columns are missing")
        old = list(legacy[1:])
        spark, path, columns = path, columns, legacy[0]  # type: ignore[assignment]
        if old:
            strategy = old.pop(0)
        if old:
            method = old.pop(0)
        if old:
            options = old.pop(0)
        if old:
            raise TypeError("cluster() got too many positional arguments")
    elif legacy:
        raise TypeError(f"cluster() takes 2 positional arguments but {2 + len(legacy)} were given")
    check_argument_types(path=path, options=options, columns=columns)
    if column_weights is not None:
        options = dict(options or {})
        options[cfg.CURVE_COLUMN_WEIGHTS.key] = (
            column_weights if isinstance(column_weights, str)
            else ",".join(f"{c}:{w}" for c, w in column_weights.items()))
    run = _clustering.run_clustering(lambda: session_or_default(spark), path, columns, strategy, method, options,
                                     include_all_files=include_all_files, resume=resume,
                                     abandon_pending=abandon_pending, workload=workload)
    for waiting in run.waiting:
        _log.warning("%s", waiting.describe())
    return run.new or (run.resumed[-1] if run.resumed else None)


def execute_pending(path: str, *legacy: Any, spark: SparkSession | None = None,
                    options: Mapping[str, Any] | None = None, only: str | None = None) -> list[ClusteringMetrics]:
    """Execute every pending clustering plan of ``path`` whose executor is not alive (oldest first)."""
    if is_spark_session(path):  # execute_pending(spark, path, options)
        _legacy("execute_pending", "execute_pending(path, spark=spark)")
        if not legacy:
            raise TypeError("execute_pending(spark, path): path is missing")
        spark, path = path, legacy[0]  # type: ignore[assignment]
        if len(legacy) > 1:
            options = legacy[1]
        if len(legacy) > 2:
            raise TypeError("execute_pending() got too many positional arguments")
    elif legacy:
        raise TypeError(f"execute_pending() takes 1 positional argument but {1 + len(legacy)} were given")
    check_argument_types(path=path, options=options)
    return _clustering.execute_pending(session_or_default(spark), path, options, only=only)


def compact(path: str, *, spark: SparkSession | None = None, options: Mapping[str, Any] | None = None,
            schedule_only: bool = False, instant: str | None = None) -> list[CompactionMetrics]:
    """Compact the Merge-on-Read table at ``path`` (Hudi's ``compaction`` action): execute the compaction plans
    left pending (by hudi_layout or by Hudi), then merge every file slice that has log files into a new base
    file of its file group, one ``commit``. Snapshot reads then scan base files only; the old slices stay for
    time travel until a clean removes them. ``schedule_only``: write the plan and return (a later call executes
    it); ``instant``: execute that pending plan only. Returns one :class:`CompactionMetrics` per plan (empty:
    no slice had log files). See docs/compaction.md."""
    check_argument_types(path=path, options=options)
    return _compaction.compact(session_or_default(spark), path, options, schedule_only=schedule_only,
                               instant=instant)


def savepoint(path: str, instant_time: str | None = None, *, comment: str = "",
              user: str | None = None) -> SavepointInfo:
    """Savepoint a completed commit of the table at ``path`` (default: the latest), Hudi's ``savepoint`` action
    (no Spark): no clean deletes the files a read as of that commit needs, so time travel to it keeps working
    and a restore (:func:`restore_to_savepoint`, or Hudi's) can take the table back to it. See docs/savepoints.md."""
    check_argument_types(path=path)
    _check_text(instant_time=instant_time, comment=comment, user=user)
    return _savepoint.create_savepoint(path, instant_time, user=user, comment=comment)


def delete_savepoint(path: str, instant_time: str) -> None:
    """Remove the savepoint at ``instant_time``; later cleans may delete the files it kept."""
    check_argument_types(path=path)
    _check_text(instant_time=instant_time)
    _savepoint.delete_savepoint(path, instant_time)


def restore_to_savepoint(path: str, instant_time: str, *, spark: SparkSession | None = None) -> RestoreResult:
    """Take the table at ``path`` back to its savepoint at ``instant_time`` (Hudi's ``restore``): every instant
    requested after it is rolled back, newest first, its files deleted; the metadata table is dropped and built
    again (a Spark job only for Merge-on-Read log files). Killed anywhere, the same call finishes it; until then
    every other command refuses to change the table. See docs/savepoints.md."""
    check_argument_types(path=path)
    _check_text(instant_time=instant_time)
    return _savepoint.restore_to_savepoint(
        path, instant_time,
        rebuild_index=lambda p: build_column_stats_index(p, spark=lambda: session_or_default(spark)))


def savepoints(path: str) -> list[SavepointInfo]:
    """The table's savepoints, oldest first."""
    check_argument_types(path=path)
    return _savepoint.list_savepoints(path)


def _check_text(**values: Any) -> None:
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise InvalidArgumentError(f"{name} must be a string, not {type(value).__name__}")


def clean(path: str, *, options: Mapping[str, Any] | None = None) -> list[CleanResult]:
    """Clean the table at ``path`` now (Hudi's ``clean`` action; no Spark): finish cleans left pending, then
    delete the file slices the cleaner policy no longer retains (``hoodie.cleaner.policy``,
    ``hoodie.cleaner.commits.retained`` (10), ``hoodie.cleaner.fileversions.retained`` (3), and
    ``hudi_layout.clean.grace.period.seconds`` (600) for readers still running). Returns one
    :class:`CleanResult` per clean instant; an empty list when nothing was eligible. See docs/cleaning.md."""
    check_argument_types(path=path, options=options)
    return _cleaning.clean(path, options)
