"""Scan planning without Spark: which base files a query must open, and why the others are skipped.

``plan_scan(path, where)`` lists the latest file slices, prunes partitions with predicates on partition
columns, then prunes files with the ``column_stats`` index of the metadata table, then (for files a curve
clustering wrote) with their recorded curve-key ranges (:mod:`hudi_layout.scan.curve_region`). Every step fails
open: a column without stats, a file missing from the index, a predicate we cannot translate, or an
index we cannot read keeps the file (and the reason is recorded in the report).

Per-query cost: the file slices, the schema and the loaded column_stats arrays come from the in-process
cache of :mod:`hudi_layout.table.cache`, re-validated by a few directory listings on every call (a new
commit or MDT deltacommit is never missed). Row counts are informational and only computed when asked
(``with_row_counts``, on for ``explain``, off for ``read``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout import options as cfg
from hudi_layout.errors import CleanedAwayError, HudiLayoutError, InvalidArgumentError, UnsupportedTableError
from hudi_layout.format.capabilities import Action, require, require_no_bootstrap_skeletons
from hudi_layout.format.commit_metadata import NAN_EXACT_STATS_KEY, NAN_EXACT_THROUGH_KEY
from hudi_layout.format.instant import RESTORE
from hudi_layout.format.properties import constant_partition_columns
from hudi_layout.format.schema_conversion import readable_arrow_schema
from hudi_layout.format.spark_calendar import calendar_applies_to, calendar_shift_reason, holds_unshifted_only
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.metadata.mdt_reader import column_stats_init_extra
from hudi_layout.metadata.stats_values import v1_holds_exactly
from hudi_layout.scan.curve_region import prune_by_curve_region
from hudi_layout.scan.merge import MergeSpec, merge_spec_for_table, with_meta_columns
from hudi_layout.scan.query import IncrementalSelection, QueryType, ReadQuery, select_incremental
from hudi_layout.skipping.bind import (
    TextVsDatetime,
    bind,
    legacy_calendar_unknown,
    require_time_zone,
    session_time_unknown,
    session_zone,
)
from hudi_layout.skipping.ir import AlwaysTrue, Predicate, Unsupported
from hudi_layout.skipping.partitions import prune_partitions
from hudi_layout.skipping.pruning import PruneResult, prune
from hudi_layout.skipping.spark_column import (
    from_spark_column,
    jvm_zone,
    session_read_options,
    session_rebases_legacy,
    session_settings,
    session_time_zone,
)
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.sql_lexer import SqlDialect
from hudi_layout.skipping.to_sql import predicate_to_sql
from hudi_layout.skipping.tuples import from_tuples
from hudi_layout.skipping.visitors import referenced_columns
from hudi_layout.table import cache as table_cache
from hudi_layout.table import workload_log
from hudi_layout.table.fs_view import FileSlice, View
from hudi_layout.table.hudi_table import HudiTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScanPlan:
    """What a filtered read of a table opens. ``candidate_files`` are absolute paths."""

    table_path: str
    predicate: str
    files_total: int
    files_after_partition_pruning: int
    files_after_column_stats: int
    candidate_files: list[str]
    candidate_slices: list[FileSlice]
    rows_in_candidate_files: int | None
    rows_total: int | None
    dropped_by_partition: dict[str, str] = field(default_factory=dict)
    dropped_by_column_stats: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: Arrow schema of the table's data columns (None without a schema); reused to build the DataFrame
    schema: pa.Schema | None = field(default=None, repr=False, compare=False)
    #: files left after the curve-region step (``None``: the step did not run)
    files_after_curve_region: int | None = None
    dropped_by_curve_region: dict[str, str] = field(default_factory=dict)
    #: what the read returns (query type, instants); see :mod:`hudi_layout.scan.query`
    query: ReadQuery = field(default_factory=ReadQuery, compare=False)
    #: for an incremental read: the commits whose rows it returns (rows are filtered by commit time)
    incremental: IncrementalSelection | None = field(default=None, repr=False, compare=False)
    #: the columns the filter names (meta columns included): the read keeps those it filters on
    filter_columns: tuple[str, ...] = field(default=(), compare=False)

    @property
    def files_read(self) -> int:
        """File slices the read opens (after every pruning step; counted as ``files_total`` is)."""
        return len(self.candidate_slices)

    @property
    def files_skipped(self) -> int:
        return self.files_total - self.files_read

    def dropped_by_step(self) -> dict[str, tuple[str, str]]:
        """Every dropped file (relative path, or partition for partition pruning) -> (step, reason)."""
        out: dict[str, tuple[str, str]] = {}
        for step, dropped in (("partition", self.dropped_by_partition), ("column_stats", self.dropped_by_column_stats),
                              ("curve_region", self.dropped_by_curve_region)):
            for name, why in dropped.items():
                out[name] = (step, why)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "table_path": self.table_path,
            "predicate": self.predicate,
            "files_total": self.files_total,
            "files_after_partition_pruning": self.files_after_partition_pruning,
            "files_after_column_stats": self.files_after_column_stats,
            "files_after_curve_region": self.files_after_curve_region,
            "files_read": self.files_read,
            "candidate_files": self.candidate_files,
            "rows_in_candidate_files": self.rows_in_candidate_files,
            "rows_total": self.rows_total,
            "dropped_by_partition": self.dropped_by_partition,
            "dropped_by_column_stats": self.dropped_by_column_stats,
            "dropped_by_curve_region": self.dropped_by_curve_region,
            "notes": self.notes,
            "query": self.query.describe(),
            "seconds": round(self.seconds, 4),
        }

    def render(self, max_dropped: int = 10) -> str:
        """A readable multi-line report (used by ``hudi-layout explain``)."""
        lines = [
            f"table                          {self.table_path}",
            f"query                          {self.query.describe()}",
            f"predicate                      {self.predicate}",
            f"files_total                    {self.files_total}",
            f"files_after_partition_pruning  {self.files_after_partition_pruning}",
            f"files_after_column_stats       {self.files_after_column_stats}",
        ]
        if self.files_after_curve_region is not None:
            lines.append(f"files_after_curve_region       {self.files_after_curve_region}")
        if self.files_total:
            pct = 100.0 * (self.files_total - self.files_read) / self.files_total
            lines.append(f"skipped                        {pct:.1f}% of files")
        if self.rows_in_candidate_files is not None:
            lines.append(f"rows in candidate files        {self.rows_in_candidate_files}"
                         + (f" of {self.rows_total}" if self.rows_total is not None else ""))
        lines.append(f"planning time                  {self.seconds * 1000:.1f} ms")
        for title, dropped in (("dropped by partition pruning", self.dropped_by_partition),
                               ("dropped by column stats", self.dropped_by_column_stats),
                               ("dropped by curve region", self.dropped_by_curve_region)):
            if dropped:
                lines.append(f"{title} ({len(dropped)}):")
                for name, why in list(dropped.items())[:max_dropped]:
                    lines.append(f"  {name}: {why}")
                if len(dropped) > max_dropped:
                    lines.append(f"  ... {len(dropped) - max_dropped} more")
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)


def to_predicate(where: Any, schema: pa.Schema | None = None, spark: Any = None,
                 settings: Mapping[str, str] | None = None) -> Predicate:
    """Accept SQL text (read as the session's parser reads it: ``settings``, the session's
    :func:`session_settings`), a PySpark Column, hudi-rs style tuples, or a predicate tree."""
    if where is None:
        return AlwaysTrue()
    if isinstance(where, Predicate):
        return where
    if isinstance(where, str):
        try:
            pred = from_sql(where, dialect=SqlDialect.of_session(settings or {}))
        except InvalidArgumentError:
            if spark is None or not _spark_parses(spark, where):
                raise
            # Spark SQL our parser does not take (COLLATE, ``::`` casts, subqueries, struct fields, intervals):
            # planned as unknown (no file skipped for it); Spark applies it to the rows as given
            return Unsupported(where, where)
        return bind(pred, schema) if schema is not None else pred
    if isinstance(where, (list, tuple)):
        items = [where] if where and isinstance(where[0], str) else where
        return from_tuples(items, schema)
    if type(where).__name__ == "Column":
        return from_spark_column(where, spark, settings=settings)
    raise InvalidArgumentError(f"unsupported filter {where!r}: give SQL text, a Column, tuples or a predicate")


def _spark_parses(spark: Any, text: str) -> bool:
    """Does Spark's own SQL parser take ``text`` as an expression (through py4j; pyspark is not imported)?"""
    try:
        spark._jsparkSession.sessionState().sqlParser().parseExpression(text)
    except Exception:  # noqa: BLE001 - a ParseException (or no JVM at hand): not Spark SQL we can vouch for
        return False
    return True


def table_schema(table: HudiTable, as_of: str | None = None) -> pa.Schema | None:
    """Arrow schema of the table's latest Avro schema (or, for time travel, its schema ``as_of`` that instant:
    :meth:`HudiTable.schema`), cached per timeline state; None if unavailable."""
    schema_json = table.cached_schema(as_of)
    return _arrow_schema(schema_json) if schema_json else None


@functools.lru_cache(maxsize=32)
def _arrow_schema(schema_json: str) -> pa.Schema | None:
    """:func:`~hudi_layout.format.schema_conversion.readable_arrow_schema`, cached; None when unreadable."""
    try:
        return readable_arrow_schema(schema_json)
    except HudiLayoutError:
        return None


def _rows_of(slices: Sequence[FileSlice], row_counts: dict[str, int]) -> int | None:
    """Rows in the base files of ``slices`` (``None`` when unknown: a count is missing, or a slice has log
    files, whose merge may add or remove rows)."""
    total = 0
    for s in slices:
        if s.has_log_files or not s.has_base_file:
            return None
        n = row_counts.get(s.base_file_name)
        if n is None:
            return None
        total += n
    return total


def _row_counts(table: HudiTable, slices: Sequence[FileSlice]) -> dict[str, int]:
    """Rows per base file from the write stats of the commits that wrote ``slices`` (no data file is opened;
    only the instants named in the base file names are decoded)."""
    counts: dict[str, int] = {}
    wanted = {s.commit_time for s in slices}
    try:
        for instant in table.timeline.completed():
            if instant.action not in ("commit", "replacecommit", "deltacommit") or (
                    instant.requested_time not in wanted):
                continue
            counts.update(table.timeline.rows_written(instant))
    except HudiLayoutError as e:  # counts are informational only
        log.debug("row counts unavailable: %s", e)
    return counts


def _derived_partition_fields(props: Any) -> list[str]:
    """Partition fields whose path value is derived from the column (timestamp key generators format it,
    e.g. ``2024/01/15/10`` for ``ts_str = '2024-01-15T10:30:00.000Z'``): the path cannot be compared with
    predicates on the column."""

    constant = set(constant_partition_columns(props))
    return [f for f in props.partition_fields if f not in constant]


def plan_scan(path: str | Path, where: Any = None, *, use_column_stats: bool = True, spark: Any = None,
              table: HudiTable | None = None, with_row_counts: bool = True, query: ReadQuery | None = None,
              options: Mapping[str, Any] | None = None, use_curve_region: bool | None = None,
              source: str = "scan", time_zone: str | None = None) -> ScanPlan:
    """Plan a filtered read of the table at ``path``; see the module docstring.

    ``query`` (or Hudi's read ``options``, parsed into one (with a ``query``, ``options`` may hold only
    :data:`~hudi_layout.options.READ_SETTINGS`): ``hoodie.datasource.query.type``, ``as.of.instant``,
    ``hoodie.datasource.read.begin.instanttime`` / ``end.instanttime``, ``hoodie.enable.data.skipping``) says
    which instants the read sees; the default is the latest snapshot. ``with_row_counts`` fills
    ``rows_in_candidate_files`` / ``rows_total`` from the commits' write stats (informational; reads turn it off).
    ``use_curve_region`` (default: ``hudi_layout.skipping.curve.region.enable``, from the read options or the
    defaults file; on) adds the curve-region step after column_stats; it runs only when column_stats are used.
    ``source`` names the caller in the opt-in query log. ``time_zone``: the zone date and timestamp text is read
    in (a ``spark.sql.session.timeZone`` value); default the session's (``spark``, else the active one), else UTC.
    """
    started = time.perf_counter()
    if time_zone is not None:
        require_time_zone(time_zone)
    in_session = session_settings(spark)  # one JVM round trip for every session setting the plan asks about
    if query is None:
        # Hudi's Spark reads take the session's hoodie.* read settings beneath the read's options
        query = ReadQuery.from_options(cfg.read_options_beneath_session(
            {**cfg.defaults_file_read_options(), **session_read_options(in_session)}, options))
    elif options and set(options) - cfg.READ_SETTING_KEYS:
        raise InvalidArgumentError("give either a read query or read options, not both",
                                   hint="with a read query, only hudi_layout's read settings may be given as "
                                        "options (options.READ_SETTINGS)")
    table = table or HudiTable(str(path))
    props = table.properties
    require(props, Action.READ, query_type=query.query_type)
    schema = table_schema(table, query.schema_as_of)
    # a filter may name the meta columns too (``_hoodie_commit_time > '...'``), where the files hold them
    filter_schema = with_meta_columns(schema) if schema is not None and props.populate_meta_fields else schema
    pred = to_predicate(where, spark=spark, settings=in_session)  # bound below, once, with the zone
    # date / timestamp literals are read in the session's time zone, as Spark reads them (bind)
    time_zone = time_zone or session_time_zone(spark, in_session)
    if filter_schema is not None:
        pred = bind(pred, filter_schema, time_zone, zone_rules=jvm_zone(spark, time_zone),
                    text_vs_datetime=TextVsDatetime.of_session(in_session))
    elif time_zone is not None and session_zone(time_zone) is not _dt.timezone.utc:
        pred = session_time_unknown(pred)  # no column types to read them against
    if session_rebases_legacy(in_session):  # Spark shifts old dates of some files away from their statistics
        pred = legacy_calendar_unknown(pred, filter_schema)
    settings = read_settings(options)
    if cfg.WORKLOAD_LOG_ENABLE.get(settings) and not isinstance(pred, AlwaysTrue) and source != REPLAY_SOURCE:
        _record_query(table, pred, source, settings)
    slices, incremental = _slices_for(table, query)
    require_no_bootstrap_skeletons((s.base_file_name for s in slices), "read")
    notes: list[str] = []
    if incremental is not None and incremental.full_table_scan:
        notes.append(f"a clean reached the incremental range: {cfg.INCREMENTAL_FALLBACK.key}=true reads the "
                     "latest snapshot's rows of the commits in range (rows rewritten since are not returned)")
    fields = props.partition_fields
    derived = _derived_partition_fields(props)
    if derived:
        notes.append(f"partition paths of {derived} are formatted by the key generator (not the column "
                     "values); partitions are not pruned, column_stats are used for those columns")
    kept_slices: list[FileSlice] = slices
    dropped_part: dict[str, str] = {}
    if fields and not derived and not isinstance(pred, AlwaysTrue):
        kept_slices, dropped_part = _prune_partitions(pred, slices, props, filter_schema)
    after_partitions = len(kept_slices)

    dropped_stats: dict[str, str] = {}
    wanted = sorted(referenced_columns(pred) - (set(fields) - set(derived)))
    if props.version < 9 and filter_schema is not None:  # the V1 index form rounds wide decimals
        rounded = [c for c in wanted if c in filter_schema.names
                   and not v1_holds_exactly(filter_schema.field(c).type)]
        if rounded:
            notes.append(f"the column_stats of {', '.join(rounded)} are not used: a version-{props.version} table "
                         "stores decimal statistics as decimal(30, 15), which rounds this column's values")
            wanted = [c for c in wanted if c not in rounded]
    if wanted and kept_slices and not (use_column_stats and query.use_column_stats):
        notes.append("the column_stats index is not used (skipping turned off); every file in the kept "
                     "partitions is read")
    elif wanted and kept_slices:
        if "column_stats" not in props.metadata_partitions:
            notes.append("the table has no column_stats index; every file in the kept partitions is read")
        else:
            try:
                kept_slices, dropped_stats, stat_notes = _prune_by_stats(table, pred, kept_slices, wanted,
                                                                         filter_schema)
                notes.extend(stat_notes)
            except HudiLayoutError as e:
                notes.append(f"column_stats index not used ({e}); no file skipped by statistics")
    after_stats = len(kept_slices)
    after_region: int | None = None
    dropped_region: dict[str, str] = {}
    if use_curve_region is None:
        use_curve_region = cfg.CURVE_REGION_ENABLE.get(settings)
    if use_column_stats and query.use_column_stats and use_curve_region and wanted and kept_slices \
            and schema is not None:
        region = prune_by_curve_region(table, pred, kept_slices, filter_schema)
        if region.judged:
            kept_slices, dropped_region, after_region = region.kept, region.dropped, len(region.kept)
    counts = _row_counts(table, slices) if with_row_counts else {}
    return ScanPlan(
        table_path=str(table.base_path),
        predicate=str(pred),
        files_total=len(slices),
        files_after_partition_pruning=after_partitions,
        files_after_column_stats=after_stats,
        candidate_files=[s.base_file_path for s in kept_slices if s.base_file_path],
        candidate_slices=kept_slices,
        rows_in_candidate_files=_rows_of(kept_slices, counts) if with_row_counts else None,
        rows_total=_rows_of(slices, counts) if with_row_counts else None,
        dropped_by_partition=dropped_part,
        dropped_by_column_stats=dropped_stats,
        notes=notes,
        seconds=time.perf_counter() - started,
        schema=schema,
        files_after_curve_region=after_region,
        dropped_by_curve_region=dropped_region,
        query=query,
        incremental=incremental,
        filter_columns=tuple(sorted(referenced_columns(pred))),
    )


def _slices_for(table: HudiTable, query: ReadQuery) -> tuple[list[FileSlice], IncrementalSelection | None]:
    """The file slices a read of ``query`` sees (and, for an incremental read, what it selects)."""
    if query.is_incremental:
        first = select_incremental(table.timeline, query)
        end_view = table.fs_view.view(None, completed_by=first.end)
        if end_view.cleaned_away and query.fallback_full_scan and not table.is_mor:
            # Hudi's full table scan: the latest snapshot's rows of the commits in range (and, from 'earliest',
            # of the archived ones)
            latest = table.latest_file_slices()
            selection = select_incremental(table.timeline, query, [s.commit_time for s in latest])
            return latest, dataclasses.replace(selection, full_table_scan=True)
        view = _past_view(table, query, None, first.end, end_view)
        selection = select_incremental(table.timeline, query, [s.commit_time for s in view])
        if table.is_mor and selection.archived_before is not None:
            raise UnsupportedTableError(
                f"an incremental read of MERGE_ON_READ table {table.properties.table_name!r} from 'earliest' "
                f"reaches commits archived off the timeline (before {selection.archived_before}), whose log "
                "blocks the merge cannot tell apart from pending ones",
                hint=f"begin at an active instant, or read a snapshot as of {selection.end} (as.of.instant)")
        return selection.slices(view, merge_logs=table.is_mor), selection
    if query.as_of is not None or query.completed_by is not None:
        return _past_view(table, query, query.as_of, query.completed_by), None
    return table.latest_file_slices(), None


def read_inputs(table: HudiTable, plan: ScanPlan, query_type: QueryType | None = None
                ) -> tuple[list[FileSlice], list[FileSlice]]:
    """The plan's candidate slices as a read of ``query_type`` (default: the plan's) takes them: ``(slices
    whose base file is read as it is, slices merged with their log files)``. Snapshot (time travel included)
    and incremental reads of a Merge-on-Read table merge every slice with log files or no base file yet;
    ``read_optimized`` (Hudi's meaning) and Copy-on-Write reads take base files only."""
    query_type = query_type or plan.query.query_type
    slices = plan.candidate_slices
    if not table.is_mor or query_type is QueryType.READ_OPTIMIZED:
        return [s for s in slices if s.has_base_file], []
    return ([s for s in slices if s.has_base_file and not s.has_log_files],
            [s for s in slices if s.has_log_files or not s.has_base_file])


def merge_spec_for_plan(table: HudiTable, plan: ScanPlan, columns: Sequence[str]) -> MergeSpec:
    """The merge of ``plan``'s log-file slices (:func:`read_inputs`): the blocks of the instants the plan's
    view sees (time travel, a pinned DataFrame); for an incremental plan only the blocks and rows of the
    commits it selected (Hudi's and hudi-rs's incremental reads of MOR tables)."""
    spec = merge_spec_for_table(table, as_of=plan.query.as_of, completed_by=plan.query.completed_by,
                                columns=columns)
    if plan.incremental is not None and not plan.incremental.full_table_scan:
        spec = dataclasses.replace(spec, incremental_instants=plan.incremental.commit_times)
    return spec


def _past_view(table: HudiTable, query: ReadQuery, as_of: str | None, completed_by: str | None,
               view: View | None = None) -> list[FileSlice]:
    """The slices of a past view (``view``, when the caller has it already); refused when a clean deleted some
    of its files (reading what is left would lose rows silently)."""
    if completed_by is not None and as_of is None and not query.is_incremental:
        _refuse_if_restored_since(table, completed_by)
    view = view or table.fs_view.view(as_of, completed_by=completed_by)
    if not view.cleaned_away:
        return view.slices
    clean_time, name = view.cleaned_away[-1]
    if query.is_incremental:
        what = f"the incremental read up to {completed_by}"
    elif as_of is not None:
        what = f"{cfg.AS_OF_INSTANT.key}={as_of}"
    else:
        what = f"the snapshot taken when this DataFrame was loaded (instants completed by {completed_by})"
    fallback = (f", or set {cfg.INCREMENTAL_FALLBACK.key}=true to read the latest snapshot's rows of the commits "
                "in range (Copy-on-Write tables)") if query.is_incremental and not table.is_mor else ""
    raise CleanedAwayError(
        f"{what} needs {len(view.cleaned_away)} file(s) that the clean at {clean_time} deleted (e.g. {name}): "
        "that version of the table is no longer readable",
        hint="time travel to a later instant (see 'hudi-layout inspect PATH'), reload the DataFrame, or keep "
             f"more history with hoodie.cleaner.commits.retained{fallback}")


def _refuse_if_restored_since(table: HudiTable, completed_by: str) -> None:
    """A DataFrame pinned to the snapshot it was loaded at (instants completed by ``completed_by``) cannot be read
    after a restore to a savepoint completed since: the instants it saw may be rolled back and their files gone,
    and what remains is another version of the table, which it must not return in silence."""
    for r in table.timeline.completed().actions(RESTORE):
        if (r.completion_time or r.requested_time) > completed_by:
            raise CleanedAwayError(
                f"the table was restored to a savepoint (restore {r.requested_time}) after this DataFrame was "
                "loaded: that version of the table is no longer readable", hint="reload the DataFrame")


def read_settings(options: Mapping[str, Any] | None = None) -> dict[str, str]:
    """hudi_layout's read-side settings (:data:`~hudi_layout.options.READ_SETTINGS`): the defaults file
    (``conf/hudi-layout-defaults.conf`` or ``$HUDI_LAYOUT_CONF``, re-read only when its size or modification
    time changes), overridden by the same keys given as read ``options``."""
    given = {k: cfg.option_text(v) for k, v in (options or {}).items()
             if v is not None and k in cfg.READ_SETTING_KEYS}
    return {**cfg.defaults_file_values(), **given} if given else cfg.defaults_file_values()




#: the ``source`` of plans that replay a workload (the layout report): not queries, so never logged (each report
#: run added one to every logged predicate's weight; layout probe, session 32)
REPLAY_SOURCE = "report"


def _record_query(table: HudiTable, pred: Predicate, source: str, settings: dict[str, str]) -> None:
    """Append the query to the table's opt-in log; never raises (a read must not fail for its log)."""
    try:
        text = predicate_to_sql(pred)
    except Exception as e:  # noqa: BLE001 - an unrenderable predicate is simply not recorded
        log.debug("predicate not recorded: %s", e)
        return
    workload_log.record(table.base_path, text, source, max_bytes=cfg.WORKLOAD_LOG_MAX_BYTES.get(settings))


def _prune_partitions(pred: Predicate, slices: list[FileSlice], props: Any, schema: pa.Schema | None
                      ) -> tuple[list[FileSlice], dict[str, str]]:
    parts = sorted({s.partition_path for s in slices})
    res = prune_partitions(pred, parts, props.partition_fields, hive_style=props.hive_style_partitioning,
                           schema=schema, url_decode=props.url_encode_partitioning)
    kept_parts = {parts[i] for i in res.kept}
    dropped = {parts[i]: why for i, why in res.dropped.items()}
    return [s for s in slices if s.partition_path in kept_parts], dropped


def _prune_by_stats(table: HudiTable, pred: Predicate, slices: list[FileSlice], columns: list[str],
                    schema: pa.Schema | None) -> tuple[list[FileSlice], dict[str, str], list[str]]:
    """Drop the slices whose column_stats prove that no row matches ``pred``; notes on what could not be used.

    A Merge-on-Read slice is dropped only when its base file *and every log file* are proven not to match:
    each row of the merged slice is one whole record of one of those files (the base row, or the log record
    that won; deletes only remove rows), so if no record of any file can match, no merged row can. A log
    file without statistics keeps its slice (Hudi indexes log files in ``column_stats`` with the values of
    the records they hold, so an update that moves a row into the predicate's range is in its log's stats).
    """
    stats = load_column_stats(table, columns, slices)
    files = [name for s in slices for name in s.file_names]
    owner = [i for i, s in enumerate(slices) for _ in s.file_names]
    nan_exact = nan_exact_files(table, slices)
    res = prune(pred, files, stats, schema, nan_exact_files=nan_exact)
    res = _calendar_shifted_kept(pred, files, stats, schema, slices, res, nan_exact)
    not_proven = {owner[j] for j in res.kept}
    kept: list[FileSlice] = []
    dropped: dict[str, str] = {}
    first_file: dict[int, int] = {}
    for j, i in enumerate(owner):
        first_file.setdefault(i, j)
    for i, s in enumerate(slices):
        if i in not_proven or i not in first_file:
            kept.append(s)
            continue
        why = res.dropped[first_file[i]]
        dropped[s.relative_path] = f"{why} (and in its {len(s.log_file_names)} log file(s))" \
            if s.has_log_files else why
    return kept, dropped, list(res.notes)


def _calendar_shifted_kept(pred: Predicate, files: list[str], stats: dict[str, pa.Table], schema: pa.Schema | None,
                           slices: Sequence[FileSlice], res: PruneResult, nan_exact: set[str]) -> PruneResult:
    """``res`` with the dropped base files put back that Spark reads with other dates than their statistics
    hold: files whose footers make Spark convert their values from the old hybrid calendar on every read
    (:mod:`hudi_layout.format.spark_calendar`), judged again with their date / timestamp comparisons unknown.
    Only a file whose statistics show a date before 1582-10-15 or a timestamp before 1900 in a compared
    column can be read differently, so only those files' footers are read (once per process)."""
    if not res.dropped:
        return res
    old: set[str] = set()
    for column in referenced_columns(pred):
        table = stats.get(column)
        kind = _datetime_type(schema, column)
        if table is None or kind is None or table.num_rows == 0:
            continue
        try:
            lows = pc.cast(table["min"], kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue  # pruning could not read these statistics either
        old_rows = pc.invert(pc.fill_null(holds_unshifted_only(lows), True))
        old.update(str(n) for n in pc.filter(table["file_name"], old_rows).to_pylist())
    if not old:
        return res
    path_of = {s.base_file_name: s.base_file_path for s in slices if s.base_file_name}
    suspects = [j for j in res.dropped if files[j] in old and files[j] in path_of
                and _calendar_shift(path_of[files[j]]) is not None]
    if not suspects:
        return res
    again = prune(legacy_calendar_unknown(pred, schema), [files[j] for j in suspects], stats, schema,
                  nan_exact_files=nan_exact)
    back = {suspects[k] for k in again.kept}
    if not back:
        return res
    note = (f"{len(back)} file(s) Spark reads in the old hybrid calendar (their footers say so) are not skipped by "
            "date / timestamp statistics")
    return PruneResult(sorted(set(res.kept) | back), {j: w for j, w in res.dropped.items() if j not in back},
                       (*res.notes, note))


def _datetime_type(schema: pa.Schema | None, column: str) -> pa.DataType | None:
    if schema is None or column not in schema.names:
        return None
    t = schema.field(column).type
    return t if calendar_applies_to(t) else None


def _calendar_shift(path: str) -> str | None:
    """:func:`~hudi_layout.format.spark_calendar.calendar_shift_reason` of a base file (an unreadable footer
    counts as shifted: the file is kept). Cached per file version: base files are never rewritten in place."""
    try:
        st = os.stat(path)
    except OSError:
        return "its footer cannot be read"
    return _calendar_shift_of(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=16_384)
def _calendar_shift_of(path: str, _mtime_ns: int, _size: int) -> str | None:
    try:
        return calendar_shift_reason(pq.read_metadata(path))
    except (OSError, pa.ArrowException):
        return "its footer cannot be read"


def nan_exact_files(table: HudiTable, slices: Sequence[FileSlice]) -> set[str]:
    """Base files whose float column_stats are NaN-exact: those written by a commit that says so in its
    ``extraMetadata`` (hudi_layout's commits do; see :data:`~hudi_layout.format.commit_metadata.NAN_EXACT_STATS_KEY`),
    and those an ``index --read-floats`` described from their data (commit time up to its
    :data:`~hudi_layout.format.commit_metadata.NAN_EXACT_THROUGH_KEY`). Unknown (an archived commit, unreadable
    metadata) is not NaN-exact."""
    wanted = {s.commit_time for s in slices}
    marked: set[str] = set()
    through = _nan_exact_through(table)
    if through:
        marked |= {t for t in wanted if t and t <= through}
    for instant in table.timeline.completed():
        if instant.requested_time not in wanted or instant.action not in ("commit", "replacecommit"):
            continue
        try:
            flag = table.timeline.extra_metadata_value(instant, NAN_EXACT_STATS_KEY)
        except HudiLayoutError:
            continue
        if flag.lower() == "true":
            marked.add(instant.requested_time)
    return {s.base_file_name for s in slices if s.commit_time in marked}


def _nan_exact_through(table: HudiTable) -> str:
    """The ``index --read-floats`` marker of the table's metadata table ("" without one), cached per state of
    the metadata table's timeline: one directory listing per plan instead of loading that timeline."""

    def read() -> str:
        try:
            return str(column_stats_init_extra(table.base_path).get(NAN_EXACT_THROUGH_KEY) or "")
        except HudiLayoutError:
            return ""

    key = table_cache.timeline_names(table.metadata_table_path / ".hoodie")
    return table_cache.table_value(Path(table.base_path), "nan_exact_through", key, read)


def load_column_stats(table: HudiTable, columns: Sequence[str], slices: Sequence[FileSlice]
                      ) -> dict[str, pa.Table]:
    """column_stats of ``columns`` for the partitions of ``slices``, through the validated cache (the key is
    the MDT state listed now, see :mod:`hudi_layout.table.cache`)."""
    partitions = tuple(sorted({s.partition_path for s in slices})) if table.properties.partition_fields else None
    key = table_cache.mdt_key(table.base_path) if table_cache.enabled() else None
    index: ColumnStatsIndex | None = None

    def load(column: str) -> pa.Table:
        nonlocal index
        if index is None:  # opening the MDT reader lists its timeline: only on a miss
            index = ColumnStatsIndex(str(table.base_path))
        # every record the index holds: pruning looks stats up by the names of the live slices it was given,
        # so the records of replaced / older slices are never used (no need to filter them here)
        return index.load_column(column, list(partitions) if partitions is not None else None, live_only=False)

    return {c: table_cache.column_stats(table.base_path, c, partitions, key, functools.partial(load, c))
            for c in columns}
