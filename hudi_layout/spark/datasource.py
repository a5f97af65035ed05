"""``spark.read.format("hudi_layout")`` / ``df.write.format("hudi_layout")``: Spark 4 Python data source.

Reading: Spark hands us the filters it can push (``spark.sql.python.filterPushdown.enabled=true``, set by
:func:`hudi_layout.spark.session.get_spark`). We prune files with them but **yield every filter back**:
Spark treats a filter we do not return as fully applied and drops its own row filter, and file pruning
is inexact. Each remaining base file becomes one input partition read with pyarrow.

Writing: the writer is created on the driver, where it starts the Hudi instant; each task writes base
files with :mod:`.base_file_writer` and returns its file metadata as the commit message; ``commit`` on
the driver completes the instant (and updates the metadata table), ``abort`` rolls it back.

``hudi_layout.read()`` / ``hudi_layout.write()`` are the faster default paths (Spark's native parquet
reader; Spark-native key expressions); this data source exists for users who want the format API.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.scan.plan import plan_scan
from hudi_layout.skipping.datasource import from_datasource_filters
from hudi_layout.spark.read import spark_schema
from hudi_layout.spark.write_job import write_task
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import heartbeat_path
from hudi_layout.writer.base_file_writer import META_COLUMNS, PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
from hudi_layout.writer.transaction import WriteSession

SOURCE_NAME = "hudi_layout"


class _FilePartition(InputPartition):
    def __init__(self, paths: list[str]) -> None:
        super().__init__(json.dumps(paths))
        self.paths = paths


class HudiLayoutReader(DataSourceReader):
    def __init__(self, path: str, schema: Any, include_meta: bool, use_stats: bool) -> None:
        self.path = path
        self.schema = schema
        self.include_meta = include_meta
        self.use_stats = use_stats
        self.filters: list[Any] = []

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 - Spark's name
        self.filters = list(filters)
        # Yield every filter back: pruning is by file, so Spark must still filter rows.
        yield from filters

    def partitions(self) -> list[InputPartition]:
        predicate = from_datasource_filters(self.filters) if self.filters else None
        plan = plan_scan(self.path, predicate, use_column_stats=self.use_stats, with_row_counts=False,
                         source="datasource")
        files = plan.candidate_files
        if not files:
            return [_FilePartition([])]
        return [_FilePartition([f]) for f in files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        names = [f.name for f in self.schema.fields]
        # Spark checks batches against exactly this schema (nullability included; files say nullable)
        target = to_arrow_schema(self.schema, timezone="UTC")
        paths = partition.paths if hasattr(partition, "paths") else json.loads(partition.value)
        for p in paths:
            pf = pq.ParquetFile(p)
            for batch in pf.iter_batches(columns=names, batch_size=65_536):
                columns = [batch.column(n) if batch.schema.field(n).type == f.type
                           else batch.column(n).cast(f.type) for n, f in zip(names, target)]
                yield pa.RecordBatch.from_arrays(columns, schema=target)


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

    def schema(self) -> Any:
        include_meta = str(self.options.get("includeMetaColumns", "false")).lower() == "true"
        return spark_schema(HudiTable(self._path()), include_meta=include_meta)

    def reader(self, schema: Any) -> DataSourceReader:
        use_stats = str(self.options.get("hoodie.enable.data.skipping", "true")).lower() == "true"
        include_meta = str(self.options.get("includeMetaColumns", "false")).lower() == "true"
        return HudiLayoutReader(self._path(), schema, include_meta, use_stats)

    def writer(self, schema: Any, overwrite: bool) -> HudiLayoutWriter:
        return HudiLayoutWriter(self._path(), dict(self.options), schema, overwrite)


@dataclass
class _FilesMessage(WriterCommitMessage):
    rows: list[dict[str, Any]]


def _key_and_partition(batch: pa.RecordBatch, record_keys: list[str], partition_fields: list[str],
                       hive_style: bool) -> pa.RecordBatch:
    table = pa.Table.from_batches([batch])

    def as_str(name: str) -> pa.ChunkedArray:
        return pc.cast(table.column(name), pa.string())

    if len(record_keys) == 1:
        key = as_str(record_keys[0])
        key = pc.if_else(pc.equal(key, ""), pa.scalar(None, pa.string()), key)
    else:
        parts = []
        for f in record_keys:
            s = as_str(f)
            s = pc.if_else(pc.equal(s, ""), "__empty__", s)
            parts.append(pc.binary_join_element_wise(f"{f}:", pc.fill_null(s, "__null__"), ""))
        key = pc.binary_join_element_wise(*parts, ",")
        all_null = None
        for f in record_keys:
            cond = pc.is_null(table.column(f))
            all_null = cond if all_null is None else pc.and_(all_null, cond)
        key = pc.if_else(all_null, pa.scalar(None, pa.string()), key)
    if partition_fields:
        segs = []
        for f in partition_fields:
            s = as_str(f)
            s = pc.fill_null(pc.if_else(pc.equal(s, ""), pa.scalar(None, pa.string()), s),
                             "__HIVE_DEFAULT_PARTITION__")
            segs.append(pc.binary_join_element_wise(f"{f}=", s, "") if hive_style else s)
        part = pc.binary_join_element_wise(*segs, "/") if len(segs) > 1 else segs[0]
    else:
        part = pa.array([""] * table.num_rows, pa.string())
    table = table.append_column(RECORD_KEY_COLUMN, key).append_column(PARTITION_PATH_COLUMN, part)
    return table.combine_chunks().to_batches()[0] if table.num_rows else batch


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
        self.session = WriteSession.start(path, options, arrow_schema, overwrite)
        pending = self.session.pending
        _live_heartbeats[(str(pending.base_path), pending.instant_time)] = pending.heartbeat
        pending.heartbeat = _HeartbeatRef(str(pending.base_path), pending.instant_time, os.getpid())
        self.spec = self.session.spec
        self.record_keys = self.session.record_keys
        self.partition_fields = self.session.partition_fields
        self.hive_style = self.session.hive_style

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        def prepared() -> Iterator[pa.RecordBatch]:
            for b in iterator:
                if b.num_rows:
                    yield _key_and_partition(b, self.record_keys, self.partition_fields, self.hive_style)

        rows: list[dict[str, Any]] = []
        for out in write_task(self.spec, prepared()):
            rows.extend(out.to_pylist())
        return _FilesMessage(rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        rows = [r for m in messages if isinstance(m, _FilesMessage) for r in m.rows]
        self.session.commit(rows)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.session.abort()


_registered: set[int] = set()


def register(spark: Any) -> None:
    """Register the data source with ``spark`` (idempotent)."""
    if id(spark) in _registered:
        return
    spark.dataSource.register(HudiLayoutDataSource)
    _registered.add(id(spark))


__all__ = ["HudiLayoutDataSource", "register", "SOURCE_NAME", "META_COLUMNS"]
