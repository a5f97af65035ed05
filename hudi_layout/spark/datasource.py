"""``spark.read.format("hudi_layout")`` / ``df.write.format("hudi_layout")``: Spark 4 Python data source.

Reading (docs/read-semantics.md):

* **A loaded DataFrame is a snapshot.** The data source is created once per relation (``load()``, or each
  query of a SQL table) and pins the instants *completed* by then; every scan of that DataFrame, filtered or
  not, reads that snapshot, as a parquet DataFrame keeps the files it listed. Hudi's read options choose the
  query (``hoodie.datasource.query.type`` snapshot / read_optimized / incremental, ``as.of.instant``,
  ``hoodie.datasource.read.begin.instanttime`` / ``end.instanttime``, ``hoodie.enable.data.skipping``); any
  other ``hoodie.*`` option is refused.
* **Pruning comes from this scan's filters only.** Spark hands a scan's filters to ``pushFilters``; we yield
  every one back (file pruning is inexact, Spark filters the rows). Spark 4 (checked on 4.3.0) keeps the read
  plan made during filter pushdown on the *relation* and replays it for later scans of the same DataFrame,
  view or SQL table reference, also for scans that push no filter. A plan pruned by one scan's filters would
  then cut rows from the next, so the reader plans every file of the snapshot and prunes nothing
  (:func:`read_plan_is_per_scan`, the one switch to flip once Spark scopes the plan to its scan).
  ``hudi_layout.read()`` always prunes.
* **SQL tables.** ``CREATE TABLE t USING hudi_layout OPTIONS (path '...')`` (or ``LOCATION '...'``) over an
  existing table: Spark gives the data source its options only when the table is created, not when it is
  queried, so the path and the read options travel in the table schema's metadata (the field metadata key
  :data:`TABLE_METADATA_KEY`), which Spark stores with the table and hands to every reader. Writes never take
  a path from there (a query's schema can carry another table's metadata): ``INSERT`` into such a table is
  refused with a pointer to ``hudi_layout.write`` / ``df.write.format("hudi_layout").save(path)``.

Candidate base files are read with pyarrow, in input partitions of about 128 MiB of files each. On a snapshot
of a Merge-on-Read table (``snapshot``, the default; ``read_optimized`` reads base files only) each slice with
log files is one input partition, merged in its task (the filters Spark applies come after the merge).

Writing: the writer is created on the driver, where it starts the Hudi instant; each task writes base
files with :mod:`hudi_layout.writer.base_file_writer` and returns its file metadata as the commit message; ``commit`` on
the driver completes the instant (and updates the metadata table), ``abort`` rolls it back. Operations:
``bulk_insert`` / ``insert`` (append), ``insert_overwrite_table`` (``mode("overwrite")``), ``insert_overwrite``
(``mode("overwrite")`` with that operation) and ``delete_partition`` (with
``hoodie.datasource.write.partitions.to.delete``). ``upsert`` and ``delete`` are refused with one line naming
``hudi_layout.write``: a task cannot start the Spark jobs that combine the batch and find the stored keys.

``hudi_layout.read()`` / ``hudi_layout.write()`` are the faster default paths (Spark's native parquet
reader; Spark-native key expressions); this data source exists for users who want the format API.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanConfig, clean_if_due
from hudi_layout.errors import (
    CleanedAwayError,
    HudiLayoutError,
    InvalidArgumentError,
    NotAHudiTableError,
    from_spark_error_text,
    one_line_errors,
)
from hudi_layout.format.capabilities import Action, require
from hudi_layout.format.instant import RESTORE
from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.format.schema_evolution import conform_batch, is_widening, widen_array
from hudi_layout.format.spark_calendar import require_stored_calendar
from hudi_layout.options import WriteOperation
from hudi_layout.scan.merge import MergeSpec
from hudi_layout.scan.plan import merge_spec_for_plan, plan_scan, read_inputs
from hudi_layout.scan.query import IncrementalSelection, ReadQuery, stream_frontier
from hudi_layout.skipping.datasource import from_datasource_filters
from hudi_layout.spark.read import SliceInput, spark_schema
from hudi_layout.spark.write_job import (
    datetime_rebase_write_mode,
    refusal_error,
    refuse_unwritable_spark_types,
    write_task,
)
from hudi_layout.table.fs_view import FileSlice
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import heartbeat_path
from hudi_layout.table.paths import local_table_path
from hudi_layout.table.timeline import completed_at
from hudi_layout.writer.base_file_writer import (
    COMMIT_TIME_COLUMN,
    META_COLUMNS,
    WriterInputError,
    key_and_partition_values,
)
from hudi_layout.writer.transaction import WriteSession

log = logging.getLogger(__name__)

SOURCE_NAME = "hudi_layout"
#: field metadata key carrying a SQL table's path and read options (see the module docstring)
TABLE_METADATA_KEY = "hudi_layout.table"
INCLUDE_META_OPTION = "includeMetaColumns"


def read_plan_is_per_scan() -> bool:
    """Whether Spark keeps a Python data source's read plan per scan, so the reader may prune with the filters
    pushed to it. No Spark version we know of does: on Spark 4 (checked on 4.3.0) a plan made while pushing one
    scan's filters is replayed for later scans of the same relation (issue 17, finding 1). Flip this, with a
    version check, once a Spark release scopes the plan to its scan."""
    return False


class _FilePartition(InputPartition):
    """Base files to read, and (incremental reads) the commits whose rows to keep. Spark pickles the read
    function before it asks for the partitions, so what ``read`` needs from planning travels here."""

    def __init__(self, paths: list[str], incremental: IncrementalSelection | None = None) -> None:
        super().__init__(json.dumps(paths))
        self.paths = paths
        self.incremental = incremental


class _SlicePartition(InputPartition):
    """A Merge-on-Read slice with log files (or none but logs): merged in the task that reads it."""

    def __init__(self, sl: SliceInput, spec: MergeSpec) -> None:
        super().__init__(json.dumps([sl.base_file, *sl.log_files]))
        self.slice = sl
        self.spec = spec


class HudiLayoutReader(DataSourceReader):
    """Plans one scan of the data source's snapshot (see the module docstring). It takes no filters: a session
    without ``spark.sql.python.filterPushdown.enabled`` (Spark's default is off) refuses to read through a
    reader that does (``DATA_SOURCE_PUSHDOWN_DISABLED``), and no plan may be pruned by them yet
    (:func:`read_plan_is_per_scan`); :class:`PruningReader` does."""

    def __init__(self, path: str, schema: Any, query: ReadQuery,
                 settings: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.schema = schema
        self.query = query
        #: hudi_layout's read settings given as options (curve-region step, query log): see options.READ_SETTINGS
        self.settings = dict(settings or {})
        self.filters: list[Any] = []

    @one_line_errors
    def partitions(self) -> list[InputPartition]:
        return self.plan_partitions()

    def plan_partitions(self) -> list[InputPartition]:
        """:meth:`partitions` without turning our errors into Spark's one-line form (the stream adds its hint)."""
        predicate = from_datasource_filters(self.filters) if self.filters else None
        table = HudiTable(self.path)
        plan = plan_scan(self.path, predicate, query=self.query, with_row_counts=False, table=table,
                         options=self.settings or None, source="datasource")
        plain, merged = read_inputs(table, plan)
        parts: list[InputPartition] = [_FilePartition(paths, plan.incremental) for paths in _bins(plain)]
        if merged:
            spec = merge_spec_for_plan(table, plan, [f.name for f in self.schema.fields])
            parts += [_SlicePartition(SliceInput.of(s, table.base_path), spec) for s in merged]
        return parts or [_FilePartition([])]

    @one_line_errors
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # Spark may replay a plan made for an earlier scan of this DataFrame (module docstring): a file of its
        # pinned snapshot that a clean deleted since is then found missing here, in the worker. One clear line.
        try:
            yield from self._read(partition)
        except FileNotFoundError as e:
            raise InvalidArgumentError(
                f"a file of this DataFrame's snapshot is gone ({str(e)[:300]}): a clean (or another process) "
                "removed it, so that version of the table is no longer readable",
                hint="load the DataFrame again (spark.read.format('hudi_layout').load(PATH)) to read the table "
                     "as it is now") from None

    def _read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        names = [f.name for f in self.schema.fields]
        # Spark checks batches against exactly this schema (nullability included; files say nullable)
        target = to_arrow_schema(self.schema, timezone="UTC")
        if isinstance(partition, _SlicePartition):
            for batch in partition.slice.batches(partition.spec):
                columns = [batch.column(n) if batch.schema.field(n).type == f.type
                           else widen_array(batch.column(n), f.type) for n, f in zip(names, target)]
                yield pa.RecordBatch.from_arrays(columns, schema=target)
            return
        paths = partition.paths if hasattr(partition, "paths") else json.loads(partition.value)
        selection = getattr(partition, "incremental", None)
        wanted = names if selection is None or COMMIT_TIME_COLUMN in names else [*names, COMMIT_TIME_COLUMN]
        for p in paths:
            pf = pq.ParquetFile(p)
            require_stored_calendar(pf.metadata, p, "read with Arrow", reads=True)
            present = [n for n in wanted if n in pf.schema_arrow.names]
            if not present:  # only columns added after this file was written: all null
                for rg in range(pf.metadata.num_row_groups):
                    rows = pf.metadata.row_group(rg).num_rows
                    yield pa.RecordBatch.from_arrays([pa.nulls(rows, f.type) for f in target], schema=target)
                continue
            for batch in pf.iter_batches(columns=present, batch_size=65_536):
                if selection is not None:
                    batch = batch.filter(_commit_time_mask(batch.column(COMMIT_TIME_COLUMN), selection))
                # files written before a schema change: missing columns are null, widened ones are cast
                yield conform_batch(batch, target)


#: bytes of base files one input partition reads (small files share a Python task; a large file has its own)
PARTITION_TARGET_BYTES = 128 * 1024 * 1024


def _bins(slices: Sequence[FileSlice], target: int = PARTITION_TARGET_BYTES) -> list[list[str]]:
    """Consecutive base files grouped into input partitions of about ``target`` bytes each."""
    out: list[list[str]] = []
    size = target
    for s in slices:
        if size >= target:
            out.append([])
            size = 0
        out[-1].append(s.base_file_path)
        size += max(1, s.size_bytes)
    return out


def _commit_time_mask(commit_times: pa.Array, selection: IncrementalSelection) -> pa.Array:
    mask = pc.is_in(commit_times, value_set=pa.array(sorted(selection.commit_times), pa.string()))
    if selection.archived_before is not None:
        mask = pc.or_(mask, pc.less(commit_times, pa.scalar(selection.archived_before)))
    return pc.fill_null(mask, False)


class PruningReader(HudiLayoutReader):
    """:class:`HudiLayoutReader` that prunes files with the filters Spark pushes (only where Spark keeps the
    plan per scan, :func:`read_plan_is_per_scan`; the session then needs
    ``spark.sql.python.filterPushdown.enabled=true``, which :func:`~hudi_layout.spark.session.get_spark` sets)."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 - Spark's name
        # Yield every filter back: pruning is by file, Spark filters the rows.
        self.filters = list(filters)
        yield from filters


class HudiLayoutDataSource(DataSource):
    """Options: ``path`` (or ``load(path)``), Hudi's read options (module docstring) or ``hoodie.*`` write
    options, ``includeMetaColumns``."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        #: the snapshot this relation reads: instants completed when it was created (None: no table yet)
        self.pinned = _latest_completion(options.get("path"))

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise InvalidArgumentError(
                "the hudi_layout data source needs a path: .load(path) / .save(path); a SQL table is created over "
                "an existing table without a column list: CREATE TABLE t USING hudi_layout OPTIONS (path '...') "
                "or LOCATION '...'")
        return path

    @one_line_errors
    def schema(self) -> Any:
        path = self._path()
        # Spark asks a stream for its schema too: its own keys (and query choice) are checked by streamReader,
        # a batch read's by reader
        read_options = _read_options({k: v for k, v in self.options.items()
                                      if cfg.canonical_key(k) not in cfg.STREAM_READ_KEYS})
        try:
            query = ReadQuery.from_options(read_options)
        except InvalidArgumentError:
            # options a stream takes (its micro-batches are incremental reads: the incremental fallback) or
            # refuses in its own line; a batch read's reader refuses them in this same line
            if not any(cfg.canonical_key(k) in cfg.STREAM_READ_KEYS for k in self.options):
                ReadQuery.from_options({**read_options, cfg.QUERY_TYPE.key: "incremental",
                                        cfg.BEGIN_INSTANT.key: "earliest"})
            query = ReadQuery()
        table = HudiTable(path)
        require(table.properties, Action.READ, query_type=query.query_type)  # one clear error at load()
        include_meta = _wants_meta_columns(self.options)
        schema = spark_schema(table, include_meta=include_meta, as_of=query.schema_as_of)
        if schema is None:
            raise InvalidArgumentError(f"{path}: the table has no schema the data source can read",
                                       hint="read it with hudi_layout.read(path), which uses the files' own schema")
        if "location" in self.options or "provider" in self.options:  # a SQL table being created
            schema = _with_table_metadata(schema, {"path": path, "options": {**read_options, **(
                {INCLUDE_META_OPTION: "true"} if include_meta else {})}})
        return schema

    @one_line_errors
    def reader(self, schema: Any) -> DataSourceReader:
        path = self.options.get("path")
        read_options = _read_options(self.options)
        if not path:  # a SQL table: Spark passes no options to its readers, the schema carries them
            stored = _table_metadata(schema)
            if stored is None:
                return HudiLayoutReader(self._path(), schema, ReadQuery())  # raises "needs a path"
            path, read_options = stored["path"], dict(stored.get("options") or {})
            table = HudiTable(path)  # one load of the timeline for the pin and the catalog check
            pinned: str | None = _pinned_completion(table)
        else:
            pinned = self.pinned
        include_meta = _wants_meta_columns(read_options)
        read_options.pop(INCLUDE_META_OPTION, None)
        query = ReadQuery.from_options(read_options, completed_by=pinned)
        if not self.options.get("path"):
            _require_catalog_types(schema, table, path, include_meta, query.schema_as_of)
        else:
            table = HudiTable(path)
            _require_readable_user_schema(schema, table, path, query.schema_as_of or _pin_instant(table, pinned))
        settings = {k: v for k, v in read_options.items() if k in cfg.READ_SETTING_KEYS}
        reader_class = PruningReader if read_plan_is_per_scan() else HudiLayoutReader
        return reader_class(path, schema, query, settings)

    @one_line_errors
    def writer(self, schema: Any, overwrite: bool) -> HudiLayoutWriter:
        if "path" in self.options and not str(self.options.get("path") or "").strip():
            raise InvalidArgumentError("the table path is empty: save(path) needs the table's base folder")
        if not self.options.get("path"):
            # SQL INSERT on a SQL table: Spark passes the writer no options, and the schema carries the table's
            # stored path only when Spark projects the query (``INSERT INTO t SELECT *`` of a matching source
            # keeps the source's columns as they are). Spark shows a data source's exception text, not our
            # hint: the way out goes into the message
            raise InvalidArgumentError(
                "writing through a SQL table of the hudi_layout data source is not supported (Spark passes the "
                "data source no path for it): write with hudi_layout.write(df, path) or "
                "df.write.format('hudi_layout').save(path)")
        return HudiLayoutWriter(self._path(), {k: v for k, v in self.options.items() if k != INCLUDE_META_OPTION},
                                schema, overwrite)

    @one_line_errors
    def streamWriter(self, schema: Any, overwrite: bool) -> Any:  # noqa: N802 - Spark's method name
        """Structured Streaming sinks are not built (Spark's default answer is a traceback-laden NOT_IMPLEMENTED):
        one line with the way that works, a ``foreachBatch`` that writes each micro-batch."""
        raise InvalidArgumentError(
            "writeStream.format('hudi_layout') is not supported: write each micro-batch with "
            ".foreachBatch(lambda batch, _id: hudi_layout.write(batch, path, options)); use the upsert operation, "
            "which gives the same table when Spark replays a batch after a failure (insert would store it twice)")

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802 - Spark's method name
        # pyspark (4.3.0) loses an exception raised here (its runner's ``finally`` then fails on the reader it
        # never got): a refusal is raised by the reader's first call instead
        try:
            return HudiLayoutStreamReader.from_options(self._path(), schema, self.options)
        except InvalidArgumentError as e:
            return _RefusedStreamReader(e)


#: Hudi's read options that choose the query: a stream chooses it itself (each micro-batch is incremental)
_STREAM_CHOSEN_KEYS = {o.key: o for o in (cfg.QUERY_TYPE, cfg.AS_OF_INSTANT, cfg.BEGIN_INSTANT, cfg.END_INSTANT)}


class HudiLayoutStreamReader(DataSourceStreamReader):
    """``spark.readStream.format("hudi_layout")``: Hudi's streaming source. An offset is a completion time
    (``{"completed": ...}``); each micro-batch is the incremental read of the commits completed in (start, end]
    (docs/read-semantics.md, "Streaming reads"), planned and read as the batch data source reads one, so a
    replayed batch (Spark restarting from its checkpoint) returns the same rows while its files are kept. The
    first start is ``hoodie.datasource.streaming.startoffset``."""

    def __init__(self, path: str, schema: Any, read_options: dict[str, str], settings: dict[str, str],
                 start: str, table_columns: dict[str, str] | None = None) -> None:
        self.path = path
        self.schema = schema
        self.read_options = read_options
        self.settings = settings
        self.start = start
        #: the table's columns (name -> Spark type) when the query started: a micro-batch after a schema change
        #: is refused (:meth:`_require_schema_of_start`)
        self.table_columns = table_columns or {}

    @classmethod
    def from_options(cls, path: str, schema: Any, options: Mapping[str, str]) -> HudiLayoutStreamReader:
        given = {cfg.canonical_key(k): v for k, v in options.items()}
        for key in _STREAM_CHOSEN_KEYS:
            names = (key, *_STREAM_CHOSEN_KEYS[key].aliases)
            if any(n in given for n in names) and not (key == cfg.QUERY_TYPE.key and all(
                    cfg.QUERY_TYPE.get({n: given[n]}) is cfg.QueryType.INCREMENTAL for n in names if n in given)):
                raise InvalidArgumentError(
                    f"option {key} does not apply to a streaming read: each micro-batch is the incremental read of "
                    "the commits completed since the previous one",
                    hint=f"start the stream with {cfg.STREAM_START_OFFSET.key}=earliest | latest | <instant>")
        read_options = _read_options({k: v for k, v in options.items()
                                      if cfg.canonical_key(k) not in cfg.STREAM_READ_KEYS
                                      and cfg.canonical_key(k) != cfg.QUERY_TYPE.key})
        read_options.pop(INCLUDE_META_OPTION, None)
        # every key is checked now, in one line, not at the first micro-batch
        ReadQuery.from_options({**read_options, cfg.QUERY_TYPE.key: "incremental", cfg.BEGIN_INSTANT.key: "earliest"})
        table = HudiTable(path)  # one load for the schema checks and the start
        _require_readable_user_schema(schema, table, path, None)  # .schema(...) on readStream too
        start = cfg.parse_stream_start(cfg.STREAM_START_OFFSET.get(
            {k: given[k] for k in given if k in cfg.STREAM_READ_KEYS}))
        if start == cfg.LATEST:
            start = stream_frontier(table.timeline)
        settings = {k: v for k, v in read_options.items() if k in cfg.READ_SETTING_KEYS}
        return cls(path, schema, {k: v for k, v in read_options.items() if k not in cfg.READ_SETTING_KEYS},
                   settings, start, _table_columns(table))

    def initialOffset(self) -> dict[str, str]:  # noqa: N802 - Spark's method name
        return {"completed": self.start}

    @one_line_errors
    def latestOffset(self, start: dict[str, str] | None = None, limit: Any = None) -> dict[str, str]:  # noqa: N802
        frontier = stream_frontier(HudiTable(self.path).timeline)
        if start is not None and frontier <= start.get("completed", cfg.EARLIEST):
            return dict(start)
        return {"completed": frontier}

    @one_line_errors
    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        begin, until = start.get("completed", cfg.EARLIEST), end["completed"]
        if until <= begin:
            return []
        query = ReadQuery.from_options({**self.read_options, cfg.QUERY_TYPE.key: "incremental",
                                        cfg.BEGIN_INSTANT.key: begin, cfg.END_INSTANT.key: until})
        self._require_schema_of_start()
        try:
            return HudiLayoutReader(self.path, self.schema, query, self.settings).plan_partitions()
        except CleanedAwayError as e:  # the batch reader's hint (time travel, reload) does not apply to a stream
            fallback = "" if HudiTable(self.path).is_mor else (
                f", or (Copy-on-Write) add {cfg.INCREMENTAL_FALLBACK.key}=true to read the latest rows of those "
                "commits")
            raise CleanedAwayError(str(e), hint="start a new query (a new checkpoint location) with "
                                               f"{cfg.STREAM_START_OFFSET.key}=<an instant after that clean>"
                                               f"{fallback}; keep more history with "
                                               "hoodie.cleaner.commits.retained for streams that fall behind") from None

    def _require_schema_of_start(self) -> None:
        """A streaming query's schema is fixed when it starts. After a write changed the table's schema, a
        widened column failed the micro-batch in a worker with an Arrow traceback and an added column was left
        out of the rows delivered (the stream probe, session 31): the micro-batch is refused in one line, before
        any row is read, so a restart (from the checkpoint) reads it with the new schema, as Delta's streaming
        source asks for a restart on a schema change."""
        now = _table_columns(HudiTable(self.path))
        changed = [f"{n}: {self.table_columns[n]} -> {t}" for n, t in now.items()
                   if n in self.table_columns and self.table_columns[n] != t]
        added = [n for n in now if n not in self.table_columns]
        if self.table_columns and (changed or added):
            raise InvalidArgumentError(
                f"the schema of {self.path} changed since this streaming query started ("
                + "; ".join([*changed, *(f"{n} added" for n in added)]) + ")",
                hint="restart the query: it resumes from its checkpoint and reads the next micro-batch with the "
                     "table's new schema")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from HudiLayoutReader(self.path, self.schema, ReadQuery(), self.settings).read(partition)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to release: the table keeps no reader state (a clean keeps what its policy retains)."""


def _table_columns(table: HudiTable) -> dict[str, str]:
    """The table's columns (meta columns included) and their Spark types, as text."""
    schema = spark_schema(table, include_meta=True)
    return {} if schema is None else {f.name: f.dataType.simpleString() for f in schema.fields}


class _RefusedStreamReader(DataSourceStreamReader):
    """A stream whose options were refused: Spark's first call gets the refusal, in one line."""

    def __init__(self, refusal: InvalidArgumentError) -> None:
        self.refusal = refusal

    @one_line_errors
    def initialOffset(self) -> dict[str, str]:  # noqa: N802 - Spark's method name
        raise self.refusal

    @one_line_errors
    def latestOffset(self, start: dict[str, str] | None = None, limit: Any = None) -> dict[str, str]:  # noqa: N802
        raise self.refusal

    @one_line_errors
    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        raise self.refusal

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        raise self.refusal


def _require_catalog_types(catalog: Any, table: HudiTable, path: str, include_meta: bool,
                           as_of: str | None = None) -> None:
    """A SQL table reads the table's latest commit with the schema the catalog stored when it was created. A
    column added since is simply not in it, but a column whose type was widened since (int -> long, float ->
    double, ...) would have to be narrowed back, which fails on values beyond the old type in the workers:
    refuse the query with one line that names the column and the way out (docs/schema-evolution.md)."""
    current = spark_schema(table, include_meta=include_meta, as_of=as_of)
    if current is None:
        return
    now = {f.name: f.dataType for f in current.fields}
    stored = {f.name for f in catalog.fields}
    gained = [f.name for f in catalog.fields if f.name not in now]
    lost = [name for name in now if name not in stored]
    if gained and lost:
        # ALTER TABLE ... RENAME COLUMN (or DROP + ADD) changes only Spark's catalog: the renamed column would
        # read as nulls. A column the catalog only gained (ADD COLUMNS) is null in every row, as Spark's own
        # ADD COLUMNS says, until a write gives it values; one it only lost is simply not read.
        raise InvalidArgumentError(
            f"the SQL table over {path} has column(s) {', '.join(map(repr, gained))} that the table does not, "
            f"and lacks its column(s) {', '.join(map(repr, lost))}: ALTER TABLE renames change only Spark's "
            "catalog, not the Hudi table, so the renamed column would read as nulls",
            hint=f"create the SQL table again with the table's own columns: DROP TABLE <name>; CREATE TABLE <name> "
                 f"USING hudi_layout LOCATION '{path}'")
    for f in catalog.fields:
        if f.name in now and now[f.name] != f.dataType:
            raise InvalidArgumentError(
                f"the SQL table over {path} was created when column {f.name!r} was "
                f"{f.dataType.simpleString()}; the table's schema has evolved and it is now "
                f"{now[f.name].simpleString()}",
                hint=f"create the SQL table again to take the new schema: DROP TABLE <name>; CREATE TABLE <name> "
                     f"USING hudi_layout LOCATION '{path}'")


def _pin_instant(table: HudiTable, pinned: str | None) -> str | None:
    """The requested time of the newest write a relation pinned at ``pinned`` sees: its schema is the one Spark
    asked for when the relation was loaded (a DataFrame loaded before a column was widened carries the narrower
    type, which is not a user's narrowing; soak 112)."""
    if pinned is None or pinned == cfg.EARLIEST:
        return None
    seen = [i.requested_time for i in table.timeline.completed().commits_and_replaces() if completed_at(i) <= pinned]
    return max(seen) if seen else None


def _require_readable_user_schema(given: Any, table: HudiTable, path: str, as_of: str | None) -> None:
    """A schema given with ``.schema(...)`` may leave columns out, add columns the table lacks (read as nulls, as
    Spark's parquet reader does) and widen a column the way the table's own schema may evolve (int -> long,
    int / float -> double, string -> binary). Any other type would be cast in the workers, where a value beyond
    it failed the query with an Arrow traceback (session 29's probe) and a lossy cast (long -> int of small
    values, long -> string) passed silently: refused here, in one line naming the column, before a task runs."""
    from pyspark.sql.pandas.types import to_arrow_type

    current = spark_schema(table, include_meta=True, as_of=as_of)
    if current is None:
        return
    now = {f.name: f.dataType for f in current.fields}
    for f in given.fields:
        stored = now.get(f.name)
        if stored is None or stored == f.dataType:
            continue
        if is_widening(to_arrow_type(stored), to_arrow_type(f.dataType)):
            continue
        raise InvalidArgumentError(
            f"the schema given to the hudi_layout data source reads column {f.name!r} as "
            f"{f.dataType.simpleString()}, but the table stores it as {stored.simpleString()}: only the table's "
            "type or a widening of it (int -> long, int / float -> double, string -> binary) can be read",
            hint=f"leave .schema(...) out (the table's schema is used), or cast after loading: "
                 f".load(path).withColumn({f.name!r}, col({f.name!r}).cast('{f.dataType.simpleString()}'))")


def _wants_meta_columns(options: Mapping[str, Any]) -> bool:
    """Whether data source or stored SQL-table options ask for the meta columns (``includeMetaColumns``); a value
    other than true / false is refused (``yes`` silently meant false before session 29)."""
    raw = options.get(INCLUDE_META_OPTION, options.get(INCLUDE_META_OPTION.lower(), "false"))
    try:
        return cfg.parse_bool(str(raw))
    except ValueError:
        raise InvalidArgumentError(f"option {INCLUDE_META_OPTION}={raw!r} is invalid: expected true or false",
                                   hint="includeMetaColumns=true adds Hudi's _hoodie_* columns") from None


def _read_options(options: Mapping[str, str]) -> dict[str, str]:
    """The Hudi read options among a data source's options (Spark's own keys, such as ``path``, left out;
    another table format's time-travel options refused, not left out)."""
    cfg.refuse_peer_read_keys(options)
    given = {k: v for k, v in options.items() if cfg.is_governed(k) or k == INCLUDE_META_OPTION}
    return {str(k): str(v) for k, v in cfg.read_options_beneath_session(cfg.defaults_file_read_options(),
                                                                        given).items()}


def _latest_completion(path: str | None) -> str | None:
    """The completion time of the table's last completed instant (the snapshot a new relation pins), or
    ``EARLIEST`` for a table without one; None where there is no table (a write creates it)."""
    if not path:
        return None
    try:
        table = HudiTable(path)
    except (NotAHudiTableError, OSError):
        return None
    return _pinned_completion(table)


def _pinned_completion(table: HudiTable) -> str:
    """The completion time of ``table``'s last completed write or restore (a restore changes what the table
    holds without a commit: a relation loaded after it pins its completion, so the read is not refused as one
    loaded before it), or ``EARLIEST`` without one."""
    timeline = table.timeline.completed()
    times = [completed_at(i) for i in timeline.commits_and_replaces()]
    times += [completed_at(i) for i in timeline.actions(RESTORE)]
    return max(times) if times else cfg.EARLIEST


def sync_sql_tables(spark: Any, path: str) -> list[str]:
    """Give the SQL tables of ``spark``'s catalog that read the table at ``path`` the table's current schema;
    returns their names. Called by ``hudi_layout.write`` after a commit that evolved the schema.

    A SQL table keeps the schema Spark's catalog stored at ``CREATE TABLE``, and Spark's optimizer decides
    some filters from those types alone: with ``i`` stored as ``int``, ``WHERE i >= 549755813888`` becomes
    ``false`` and the scan is dropped before any code of ours runs, so after ``i`` was widened to ``long``
    the query returned no rows where rows matched (found by the read-path soak, session 12; the reader's
    refusal of a stale type, :func:`_require_catalog_types`, only runs when the scan does). Hudi's own Spark
    tables follow the table's schema; here the catalog entry is altered the way ``ALTER TABLE ... ADD
    COLUMNS`` alters it (``SessionCatalog.alterTableDataSchema``), keeping every other property. A catalog
    this session does not see (another session's in-memory catalog; a table written through
    ``df.write.format("hudi_layout")``, whose commit runs outside this process) still needs the table created
    again: docs/schema-evolution.md. Never raises: the commit is done; a failure is logged with that way out.
    """
    try:
        return _sync_sql_tables(spark, path)
    except Exception as e:  # noqa: BLE001 - the write has committed; the catalog is a convenience on top
        log.warning("the schema of %s evolved; SQL tables over it were not updated (%s): drop and create them "
                    "again to read the new schema", path, str(e).splitlines()[0][:300] if str(e) else type(e))
        return []


def _local_path(p: str) -> str:
    """A catalog path (``file:/x``, ``file:///x`` or ``/x``) as an absolute local path, symbolic links resolved
    (a SQL table over a link to the table was not refreshed by a write through the real path; a probe)."""
    try:
        return os.path.realpath(local_table_path(p))
    except InvalidArgumentError:  # another scheme: compared as given
        return p


def _catalog_may_hold_tables(spark: Any) -> bool:
    """False when the session's in-memory catalog was never used: its warehouse folder does not exist yet, and
    listing the catalog would create it (``./spark-warehouse``, outside every table: a probe of session 31 found
    a schema-evolving ``hl.write`` leaving one in the caller's folder). A Hive or other catalog: True."""
    conf = spark.conf
    if (conf.get("spark.sql.catalogImplementation", "in-memory") or "").strip().lower() != "in-memory":
        return True
    warehouse = conf.get("spark.sql.warehouse.dir", None)
    if not warehouse:
        return True
    if "://" in warehouse and not warehouse.startswith("file:"):
        return True  # a remote warehouse: not checked
    return os.path.exists(_local_path(warehouse))


def _sql_tables_over(spark: Any, path: str) -> Iterator[tuple[str, Any, Any, dict[str, Any]]]:
    """``(qualified name, table identifier, stored schema, stored path and options)`` of each SQL table of the
    session's catalog that reads the table at ``path``."""
    from pyspark.sql.types import StructType

    if not _catalog_may_hold_tables(spark):
        return
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    target = _local_path(path)
    for db in spark.catalog.listDatabases():
        for t in spark.catalog.listTables(db.name):
            if t.isTemporary or (t.tableType or "").upper() == "VIEW":
                continue
            ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(t.name, jvm.scala.Some(db.name))
            meta = catalog.getTableMetadata(ident)
            if not (meta.provider().isDefined() and meta.provider().get() == SOURCE_NAME):
                continue
            schema = StructType.fromJson(json.loads(meta.schema().json()))
            stored = _table_metadata(schema)
            if stored is not None and _local_path(str(stored.get("path", ""))) == target:
                yield f"{db.name}.{t.name}", ident, schema, stored


def _sync_sql_tables(spark: Any, path: str) -> list[str]:
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    table = HudiTable(path)
    synced: list[str] = []
    for name, ident, old, stored in list(_sql_tables_over(spark, path)):
        current = spark_schema(table, include_meta=_wants_meta_columns(stored.get("options") or {}))
        if current is None:
            continue
        new = _with_table_metadata(current, stored)
        if new.json() == old.json():
            continue
        catalog.alterTableDataSchema(ident, jvm.org.apache.spark.sql.types.DataType.fromJson(new.json()))
        synced.append(name)
    if synced:
        log.info("SQL tables over %s now have its evolved schema: %s", path, ", ".join(synced))
    return synced


def refresh_cached_sql_tables(spark: Any, path: str) -> list[str]:
    """Refresh the SQL tables over ``path`` that the session caches (``CACHE TABLE``), after a
    ``hudi_layout.write`` commit. Spark refreshes a cached table when its own writer changes the table's files;
    our writes go around Spark's writer, and a cached table kept answering from the rows it held before
    (session 28's probe). Returns the names refreshed; never raises: the write has committed."""
    try:
        if spark._jsparkSession.sharedState().cacheManager().isEmpty():
            return []  # nothing cached: no catalog walk on every write
        refreshed = []
        for name, _ident, _schema, _stored in list(_sql_tables_over(spark, path)):
            if spark.catalog.isCached(name):
                spark.catalog.refreshTable(name)
                refreshed.append(name)
        return refreshed
    except Exception as e:  # noqa: BLE001 - the write has committed; the cache is a convenience on top
        log.warning("cached SQL tables over %s were not refreshed (%s): REFRESH TABLE them", path,
                    str(e).splitlines()[0][:300] if str(e) else type(e))
        return []


def _with_table_metadata(schema: Any, value: dict[str, Any]) -> Any:
    from pyspark.sql.types import StructField, StructType

    fields = list(schema.fields)
    first = fields[0]
    fields[0] = StructField(first.name, first.dataType, first.nullable,
                            {**(first.metadata or {}), TABLE_METADATA_KEY: json.dumps(value)})
    return StructType(fields)


def _table_metadata(schema: Any) -> dict[str, Any] | None:
    for f in getattr(schema, "fields", []):
        raw = (f.metadata or {}).get(TABLE_METADATA_KEY)
        if raw:
            return dict(json.loads(raw))
    return None


def refuse_table_services(options: dict[str, str]) -> None:
    """The data source writer runs in Spark's Python workers, where no clustering or compaction can run after
    the commit: inline / async clustering and inline compaction are refused instead of being accepted and
    ignored."""
    opts = cfg.resolve_options(options)
    for option in (cfg.CLUSTERING_INLINE, cfg.CLUSTERING_ASYNC_ENABLED):
        if option.get(opts):
            raise InvalidArgumentError(
                f"{option.key}=true is not run by the hudi_layout data source writer",
                hint="write with hudi_layout.write(df, path, options) (it runs inline and async clustering), or "
                     "run `hudi-layout clustering-service PATH` beside your writer")
    if cfg.COMPACT_INLINE.get(opts):
        raise InvalidArgumentError(
            f"{cfg.COMPACT_INLINE.key}=true is not run by the hudi_layout data source writer",
            hint="write with hudi_layout.write(df, path, options) (it runs inline compaction), or run "
                 "`hudi-layout compact PATH` after your writes")


@dataclass
class _FilesMessage(WriterCommitMessage):
    rows: list[dict[str, Any]]
    #: the task's refusal of its rows (our error as :func:`~hudi_layout.errors.spark_error_text`), raised by
    #: ``commit``: a task that raises makes Spark log stack traces at ERROR (and retry it on a cluster)
    refusal: str | None = None


#: the Arrow path's keys and partition values (shared with in-process writers and tests)
_key_and_partition = key_and_partition_values


#: Heartbeats started in this process, by (base path, instant time) — see :class:`_HeartbeatRef`.
_live_heartbeats: dict[tuple[str, str], Any] = {}


class _HeartbeatRef:
    """What a pickled writer carries instead of the :class:`~hudi_layout.table.locks.Heartbeat` itself.

    Spark creates the writer in one Python worker and unpickles it in others (tasks, then ``commit`` /
    ``abort``). A heartbeat is an open, ``flock``-ed file descriptor of the creating process; its number
    means nothing (or another file) elsewhere. The creating process keeps the real heartbeat (the lock
    lives as long as that worker); ``stop`` there releases it, elsewhere it deletes the heartbeat file.
    """

    def __init__(self, base_path: str, instant_time: str, owner_pid: int) -> None:
        self.key = (str(base_path), instant_time)
        self.owner_pid = owner_pid

    def stop(self, *, delete: bool = True) -> None:
        real = _live_heartbeats.pop(self.key, None) if os.getpid() == self.owner_pid else None
        if real is not None:
            real.stop(delete=delete)
        elif delete:
            heartbeat_path(*self.key).unlink(missing_ok=True)


class HudiLayoutWriter(DataSourceArrowWriter):
    """Created in a Python worker of the driver (starts the instant); ``write`` runs in tasks; ``commit`` /
    ``abort`` run in a (possibly different) worker: the writer is pickled between them (see
    :class:`_HeartbeatRef`)."""

    def __init__(self, path: str, options: dict[str, str], schema: Any, overwrite: bool) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(schema, pa.Schema):
            refuse_unwritable_spark_types(schema)
        arrow_schema = schema if isinstance(schema, pa.Schema) else to_arrow_schema(schema, timezone="UTC")
        CleanConfig.from_options(options)  # the clean after the commit: refused before anything is written
        refuse_table_services(options)
        self.session = WriteSession.start(path, options, arrow_schema, overwrite, datasource=True)
        pending = self.session.pending
        _live_heartbeats[(str(pending.base_path), pending.instant_time)] = pending.heartbeat
        pending.heartbeat = _HeartbeatRef(str(pending.base_path), pending.instant_time, os.getpid())
        self.spec = self.session.spec
        self.record_keys = self.session.record_keys
        self.partition_rule = self.spec.partition_rule or PartitionPathRule(())

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.session.operation is WriteOperation.DELETE_PARTITION:  # replaces file groups, writes nothing
            return _FilesMessage([])

        def prepared() -> Iterator[pa.RecordBatch]:
            for b in iterator:
                if b.num_rows:
                    yield key_and_partition_values(b, self.record_keys, self.partition_rule)

        rows: list[dict[str, Any]] = []
        # the session's calendar setting reaches the task as a local property (the writer has no session)
        spec = dataclasses.replace(self.spec, datetime_rebase_mode=datetime_rebase_write_mode())
        try:
            for out in write_task(spec, prepared()):
                rows.extend(out.to_pylist())
        except WriterInputError as e:  # the files written so far are rolled back by ``abort``
            return _FilesMessage([], refusal=str(e))
        return _FilesMessage(rows)

    @one_line_errors
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        for m in messages:
            if isinstance(m, _FilesMessage) and m.refusal is not None:
                raise refusal_error(m.refusal)
        rows = [r for m in messages if isinstance(m, _FilesMessage) for r in m.rows]
        self.session.commit(rows)
        clean_if_due(self.session.base, self.session.opts)  # hoodie.clean.automatic (pure, no Spark job)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.session.abort()


_registered: set[int] = set()


def register(spark: Any) -> None:
    """Register the data source with ``spark`` (idempotent), and the interpreter's error hook that shows
    our errors coming back through Spark as one line (:func:`install_error_hook`)."""
    install_error_hook()
    if id(spark) in _registered:
        return
    spark.dataSource.register(HudiLayoutDataSource)
    _registered.add(id(spark))


_previous_hook: Any = None


def install_error_hook() -> None:
    """When an uncaught exception carries one of our errors wrapped by Spark (e.g. ``df.write.format(
    "hudi_layout").save()`` refusing an option), print our ``error:`` / ``hint:`` lines instead of Spark's
    traceback (``HUDI_LAYOUT_TRACEBACK=1`` prints the traceback after them). Other exceptions go to the hook
    that was installed before."""
    global _previous_hook
    if _previous_hook is not None:
        return
    _previous_hook = sys.excepthook

    def hook(tp: type[BaseException], value: BaseException, tb: Any) -> None:
        ours = value is not None and not isinstance(value, HudiLayoutError)
        found = from_spark_error_text(str(value)) if ours else None
        if found is None:
            _previous_hook(tp, value, tb)
            return
        print(f"error: {found}", file=sys.stderr)
        if found.hint:
            print(f"hint: {found.hint}", file=sys.stderr)
        if os.environ.get("HUDI_LAYOUT_TRACEBACK"):
            _previous_hook(tp, value, tb)
        else:
            print(f"({type(value).__name__} from Spark; HUDI_LAYOUT_TRACEBACK=1 shows its traceback)", file=sys.stderr)

    sys.excepthook = hook


__all__ = ["HudiLayoutDataSource", "register", "SOURCE_NAME", "META_COLUMNS"]
