"""``spark.read.format("hudi_layout")`` / ``df.write.format("hudi_layout")``: Spark 4 Python data source.

Reading: Spark hands us the filters it can push (``spark.sql.python.filterPushdown.enabled=true``, set by
:func:`hudi_layout.spark.session.get_spark`). We prune files with them but **yield every filter back**:
Spark treats a filter we do not return as fully applied and drops its own row filter, and file pruning
is inexact. Each remaining base file becomes one input partition read with pyarrow; on a snapshot of a
Merge-on-Read table (``hoodie.datasource.query.type``: ``snapshot``, the default, or ``read_optimized`` for
base files only) each slice with log files is one input partition merged in its task.

Writing: the writer is created on the driver, where it starts the Hudi instant; each task writes base
files with :mod:`.base_file_writer` and returns its file metadata as the commit message; ``commit`` on
the driver completes the instant (and updates the metadata table), ``abort`` rolls it back.

``hudi_layout.read()`` / ``hudi_layout.write()`` are the faster default paths (Spark's native parquet
reader; Spark-native key expressions); this data source exists for users who want the format API.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanConfig, clean_if_due
from hudi_layout.errors import (
    SPARK_ERROR_MARKER,
    HudiLayoutError,
    InvalidArgumentError,
    from_spark_error_text,
    spark_error_text,
)
from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.format.schema_evolution import conform_batch
from hudi_layout.options import QueryType
from hudi_layout.scan.merge import MergeSpec, merge_spec_for_table
from hudi_layout.scan.plan import plan_scan
from hudi_layout.skipping.datasource import from_datasource_filters
from hudi_layout.spark.read import SliceInput, spark_schema
from hudi_layout.spark.write_job import write_task
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import heartbeat_path
from hudi_layout.writer.base_file_writer import META_COLUMNS, key_and_partition_values
from hudi_layout.writer.transaction import WriteSession

SOURCE_NAME = "hudi_layout"
F = TypeVar("F", bound=Callable[..., Any])


def _one_line_errors(fn: F) -> F:
    """Spark shows an error raised in the data source as its own message followed by the Python traceback.
    Our errors are re-raised with their message and hint as one tagged line (no chained traceback), which
    the CLI, :func:`install_error_hook` and ``str(exception)`` searches can find."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HudiLayoutError as e:
            if str(e).startswith(SPARK_ERROR_MARKER):
                raise
            raise type(e)(spark_error_text(e), hint=e.hint) from None

    return wrapper  # type: ignore[return-value]


class _FilePartition(InputPartition):
    def __init__(self, paths: list[str]) -> None:
        super().__init__(json.dumps(paths))
        self.paths = paths


class _SlicePartition(InputPartition):
    """A Merge-on-Read slice with log files (or none but logs): merged in the task that reads it."""

    def __init__(self, sl: SliceInput, spec: MergeSpec) -> None:
        super().__init__(json.dumps([sl.base_file, *sl.log_files]))
        self.slice = sl
        self.spec = spec


class HudiLayoutReader(DataSourceReader):
    def __init__(self, path: str, schema: Any, include_meta: bool, use_stats: bool,
                 query_type: QueryType = QueryType.SNAPSHOT) -> None:
        self.path = path
        self.schema = schema
        self.include_meta = include_meta
        self.use_stats = use_stats
        self.query_type = query_type
        self.filters: list[Any] = []

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 - Spark's name
        self.filters = list(filters)
        # Yield every filter back: pruning is by file, so Spark must still filter rows (after the merge of
        # Merge-on-Read slices: the filters are never applied below it).
        yield from filters

    @_one_line_errors
    def partitions(self) -> list[InputPartition]:
        predicate = from_datasource_filters(self.filters) if self.filters else None
        table = HudiTable(self.path)
        plan = plan_scan(self.path, predicate, use_column_stats=self.use_stats, with_row_counts=False, table=table)
        merge = table.is_mor and self.query_type is QueryType.SNAPSHOT
        parts: list[InputPartition] = []
        if merge:
            parts += [_FilePartition([f]) for f in plan.plain_files]
            if plan.merged_slices:
                spec = merge_spec_for_table(table, columns=[f.name for f in self.schema.fields])
                parts += [_SlicePartition(SliceInput.of(s, table.base_path), spec) for s in plan.merged_slices]
        else:
            parts += [_FilePartition([s.base_file_path]) for s in plan.candidate_slices if s.has_base_file]
        return parts or [_FilePartition([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        names = [f.name for f in self.schema.fields]
        # Spark checks batches against exactly this schema (nullability included; files say nullable)
        target = to_arrow_schema(self.schema, timezone="UTC")
        if isinstance(partition, _SlicePartition):
            for batch in partition.slice.rows(partition.spec).to_batches(max_chunksize=65_536):
                columns = [batch.column(n) if batch.schema.field(n).type == f.type
                           else batch.column(n).cast(f.type) for n, f in zip(names, target)]
                yield pa.RecordBatch.from_arrays(columns, schema=target)
            return
        paths = partition.paths if hasattr(partition, "paths") else json.loads(partition.value)
        for p in paths:
            pf = pq.ParquetFile(p)
            present = [n for n in names if n in pf.schema_arrow.names]
            if not present:  # only columns added after this file was written: all null
                for rg in range(pf.metadata.num_row_groups):
                    rows = pf.metadata.row_group(rg).num_rows
                    yield pa.RecordBatch.from_arrays([pa.nulls(rows, f.type) for f in target], schema=target)
                continue
            for batch in pf.iter_batches(columns=present, batch_size=65_536):
                # files written before a schema change: missing columns are null, widened ones are cast
                yield conform_batch(batch, target)


class HudiLayoutDataSource(DataSource):
    """Options: ``path`` (or ``load(path)``), ``hoodie.*`` write options, ``includeMetaColumns``,
    ``hoodie.enable.data.skipping`` (default true)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise InvalidArgumentError("the hudi_layout data source needs a path: .load(path) / .save(path)")
        return path

    @_one_line_errors
    def schema(self) -> Any:
        include_meta = str(self.options.get("includeMetaColumns", "false")).lower() == "true"
        return spark_schema(HudiTable(self._path()), include_meta=include_meta)

    @_one_line_errors
    def reader(self, schema: Any) -> DataSourceReader:
        use_stats = str(self.options.get("hoodie.enable.data.skipping", "true")).lower() == "true"
        include_meta = str(self.options.get("includeMetaColumns", "false")).lower() == "true"
        return HudiLayoutReader(self._path(), schema, include_meta, use_stats, cfg.QUERY_TYPE.get(self.options))

    @_one_line_errors
    def writer(self, schema: Any, overwrite: bool) -> HudiLayoutWriter:
        return HudiLayoutWriter(self._path(), dict(self.options), schema, overwrite)


def refuse_table_services(options: dict[str, str]) -> None:
    """The data source writer runs in Spark's Python workers, where no clustering can run after the commit:
    inline / async clustering options are refused instead of being accepted and ignored."""
    opts = cfg.resolve_options(options)
    for option in (cfg.CLUSTERING_INLINE, cfg.CLUSTERING_ASYNC_ENABLED):
        if option.get(opts):
            raise InvalidArgumentError(
                f"{option.key}=true is not run by the hudi_layout data source writer",
                hint="write with hudi_layout.write(df, path, options) (it runs inline and async clustering), or "
                     "run `hudi-layout clustering-service PATH` beside your writer")


@dataclass
class _FilesMessage(WriterCommitMessage):
    rows: list[dict[str, Any]]


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

        arrow_schema = schema if isinstance(schema, pa.Schema) else to_arrow_schema(schema, timezone="UTC")
        CleanConfig.from_options(options)  # the clean after the commit: refused before anything is written
        refuse_table_services(options)
        self.session = WriteSession.start(path, options, arrow_schema, overwrite)
        pending = self.session.pending
        _live_heartbeats[(str(pending.base_path), pending.instant_time)] = pending.heartbeat
        pending.heartbeat = _HeartbeatRef(str(pending.base_path), pending.instant_time, os.getpid())
        self.spec = self.session.spec
        self.record_keys = self.session.record_keys
        self.partition_rule = self.spec.partition_rule or PartitionPathRule(())

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        def prepared() -> Iterator[pa.RecordBatch]:
            for b in iterator:
                if b.num_rows:
                    yield key_and_partition_values(b, self.record_keys, self.partition_rule)

        rows: list[dict[str, Any]] = []
        for out in write_task(self.spec, prepared()):
            rows.extend(out.to_pylist())
        return _FilesMessage(rows)

    @_one_line_errors
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
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
