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

import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.errors import HudiLayoutError, InvalidArgumentError
from hudi_layout.format.properties import constant_partition_columns
from hudi_layout.format.schema_conversion import avro_to_arrow_schema
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.scan.curve_region import prune_by_curve_region
from hudi_layout.skipping.bind import bind
from hudi_layout.skipping.ir import AlwaysTrue, Predicate
from hudi_layout.skipping.partitions import prune_partitions
from hudi_layout.skipping.pruning import prune
from hudi_layout.skipping.spark_column import from_spark_column
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.to_sql import predicate_to_sql
from hudi_layout.skipping.tuples import from_tuples
from hudi_layout.skipping.visitors import referenced_columns
from hudi_layout.table import cache as table_cache
from hudi_layout.table import workload_log
from hudi_layout.table.fs_view import FileSlice
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

    @property
    def files_read(self) -> int:
        """Files the read opens (after every pruning step)."""
        return len(self.candidate_files)

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
            "seconds": round(self.seconds, 4),
        }

    def render(self, max_dropped: int = 10) -> str:
        """A readable multi-line report (used by ``hudi-layout explain``)."""
        lines = [
            f"table                          {self.table_path}",
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


def to_predicate(where: Any, schema: pa.Schema | None = None, spark: Any = None) -> Predicate:
    """Accept SQL text, a PySpark Column, hudi-rs style tuples, or a predicate tree."""
    if where is None:
        return AlwaysTrue()
    if isinstance(where, Predicate):
        return where
    if isinstance(where, str):
        return from_sql(where, schema)
    if isinstance(where, (list, tuple)):
        items = [where] if where and isinstance(where[0], str) else where
        return from_tuples(items, schema)
    if type(where).__name__ == "Column":
        return from_spark_column(where, spark)
    raise InvalidArgumentError(f"unsupported filter {where!r}: give SQL text, a Column, tuples or a predicate")


def table_schema(table: HudiTable) -> pa.Schema | None:
    """Arrow schema of the table's latest Avro schema (cached per timeline state), None if unavailable."""
    schema_json = table.cached_schema()
    return _arrow_schema(schema_json) if schema_json else None


@functools.lru_cache(maxsize=32)
def _arrow_schema(schema_json: str) -> pa.Schema | None:
    try:
        return avro_to_arrow_schema(schema_json)
    except InvalidArgumentError:
        return None


def _rows_of(slices: Sequence[FileSlice], row_counts: dict[str, int]) -> int | None:
    total = 0
    for s in slices:
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
            meta = table.timeline.read_commit_metadata_shared(instant)
            for stats in (meta.get("partitionToWriteStats") or {}).values():
                for s in stats or []:
                    path = s.get("path") or ""
                    if path and s.get("numWrites") is not None:
                        counts[path.rsplit("/", 1)[-1]] = int(s["numWrites"])
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
              table: HudiTable | None = None, with_row_counts: bool = True, use_curve_region: bool | None = None,
              source: str = "scan") -> ScanPlan:
    """Plan a filtered read of the table at ``path``; see the module docstring.

    ``with_row_counts`` fills ``rows_in_candidate_files`` / ``rows_total`` from the commits' write stats
    (informational; :func:`hudi_layout.read` turns it off, they stay ``None``). ``use_curve_region`` (default:
    ``hudi_layout.skipping.curve.region.enable``, on) adds the curve-region step after column_stats; it runs
    only with ``use_column_stats``. ``source`` names the caller in the opt-in query log.
    """
    started = time.perf_counter()
    table = table or HudiTable(str(path))
    schema = table_schema(table)
    pred = to_predicate(where, schema, spark)
    if schema is not None:
        pred = bind(pred, schema)
    settings = read_settings()
    if cfg.WORKLOAD_LOG_ENABLE.get(settings) and not isinstance(pred, AlwaysTrue):
        _record_query(table, pred, source, settings)
    slices = table.latest_file_slices()
    notes: list[str] = []
    props = table.properties
    fields = props.partition_fields
    derived = _derived_partition_fields(props)
    if derived:
        notes.append(f"partition paths of {derived} are formatted by the key generator (not the column "
                     "values); partitions are not pruned, column_stats are used for those columns")
    kept_slices: list[FileSlice] = slices
    dropped_part: dict[str, str] = {}
    if fields and not derived and not isinstance(pred, AlwaysTrue):
        kept_slices, dropped_part = _prune_partitions(pred, slices, props, schema)
    after_partitions = len(kept_slices)

    dropped_stats: dict[str, str] = {}
    wanted = sorted(referenced_columns(pred) - (set(fields) - set(derived)))
    if use_column_stats and wanted and kept_slices:
        if "column_stats" not in props.metadata_partitions:
            notes.append("the table has no column_stats index; every file in the kept partitions is read")
        else:
            try:
                kept_slices, dropped_stats = _prune_by_stats(table, pred, kept_slices, wanted, schema)
            except HudiLayoutError as e:
                notes.append(f"column_stats index not used ({e}); no file skipped by statistics")
    after_stats = len(kept_slices)
    after_region: int | None = None
    dropped_region: dict[str, str] = {}
    if use_curve_region is None:
        use_curve_region = cfg.CURVE_REGION_ENABLE.get(settings)
    if use_column_stats and use_curve_region and wanted and kept_slices and schema is not None:
        region = prune_by_curve_region(table, pred, kept_slices, schema)
        if region.judged:
            kept_slices, dropped_region, after_region = region.kept, region.dropped, len(region.kept)
    counts = _row_counts(table, slices) if with_row_counts else {}
    return ScanPlan(
        table_path=str(table.base_path),
        predicate=str(pred),
        files_total=len(slices),
        files_after_partition_pruning=after_partitions,
        files_after_column_stats=after_stats,
        candidate_files=[s.base_file_path for s in kept_slices],
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
    )


_settings_cache: dict[str, tuple[tuple[str, int, int], dict[str, str]]] = {}


def read_settings() -> dict[str, str]:
    """The read path's options: the defaults file (``conf/hudi-layout-defaults.conf`` or
    ``$HUDI_LAYOUT_CONF``), re-read only when its size or modification time changes."""
    path = cfg.default_conf_path()
    if path is None:
        return {}
    try:
        st = path.stat()
    except OSError:
        return {}
    key = (str(path), st.st_size, st.st_mtime_ns)
    got = _settings_cache.get("conf")
    if got is not None and got[0] == key:
        return got[1]
    try:
        values = cfg.read_defaults_file(path)
    except (OSError, HudiLayoutError) as e:
        log.debug("defaults file %s not read: %s", path, e)
        values = {}
    _settings_cache["conf"] = (key, values)
    return values


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
                    schema: pa.Schema | None) -> tuple[list[FileSlice], dict[str, str]]:
    """Drop the files whose column_stats prove that no row matches ``pred``."""
    stats = load_column_stats(table, columns, slices)
    res = prune(pred, [s.base_file_name for s in slices], stats, schema)
    dropped = {slices[i].relative_path: why for i, why in res.dropped.items()}
    return [slices[i] for i in res.kept], dropped


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
        return index.load_column(column, list(partitions) if partitions is not None else None)

    return {c: table_cache.column_stats(table.base_path, c, partitions, key, functools.partial(load, c))
            for c in columns}
