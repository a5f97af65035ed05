"""Executor-side writer of Hudi base files.

Runs inside Spark's Python workers (through ``mapInArrow``): it receives the Arrow batches of one Spark
task, adds the five Hudi meta columns, writes parquet base files named as Hudi names them
(``<fileId>_<writeToken>_<instant>.parquet``), rolls over to a new file group when a file reaches
``hoodie.parquet.max.file.size``, computes exact per-column statistics for the metadata table while the
data is in memory, and yields ONE small metadata row per file written. The driver collects only those
rows; table data never reaches it.

Before a data file is created, its DIRECT marker (``.hoodie/.temp/<instant>/<partition>/<file>.marker.CREATE``)
is written, so a rollback can find and delete files of a failed write even if no metadata row came back.

The module does not import pyspark: the Spark layer passes the task identity in (:class:`TaskIdentity`), so
the writer tests without Spark.
"""

from __future__ import annotations

import os
import pickle
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.table.partition_metadata import has_partition_metadata, write_partition_metadata

META_COLUMNS: tuple[str, ...] = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

#: Column carrying each row's partition path into the writer (computed by Spark before the write).
PARTITION_PATH_COLUMN = "_hoodie_partition_path"
RECORD_KEY_COLUMN = "_hoodie_record_key"
#: Optional input columns already holding preserved meta values (clustering keeps commit time / seqno).
COMMIT_TIME_COLUMN = "_hoodie_commit_time"
COMMIT_SEQNO_COLUMN = "_hoodie_commit_seqno"

ERROR_MARKER = "HUDI_LAYOUT_ERROR:"

RESULT_SCHEMA = pa.schema(
    [
        ("partition_path", pa.string()),
        ("file_id", pa.string()),
        ("file_name", pa.string()),
        ("num_records", pa.int64()),
        ("file_size", pa.int64()),
        ("stats", pa.binary()),
        ("key_min", pa.int64()),
        ("key_max", pa.int64()),
    ]
)

_ROW_GROUP_ROWS = 131_072
#: a file this close to ``max_file_size`` is closed (the next rows would likely overshoot it)
_FULL_FRACTION = 0.9


@dataclass(frozen=True)
class WriteSpec:
    """Everything an executor needs to write base files for one instant (pickled to the workers)."""

    base_path: str
    instant_time: str
    data_columns: tuple[str, ...]
    max_file_size: int = 125_829_120
    compression: str = "snappy"
    stats_columns: tuple[str, ...] = ()
    preserve_commit_metadata: bool = False
    parquet_row_group_rows: int = _ROW_GROUP_ROWS
    #: roll over to a new file after this many rows (0: only ``max_file_size`` decides). A task's last file
    #: takes up to half as many more rows instead of leaving a small tail file.
    max_rows_per_file: int = 0
    #: an input column (``int64``, not written) whose per-file min / max the writer reports: the layout's sort
    #: key, so a clustering can record each file's curve-key range (``key_min`` / ``key_max`` result fields)
    layout_key_column: str | None = None


class WriterInputError(ValueError):
    """Bad input found on an executor; its message starts with :data:`ERROR_MARKER` so the driver can
    turn Spark's wrapped Python exception back into one clear line."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{ERROR_MARKER} {message}")


@dataclass
class _StatsAcc:
    """Running min / max / null count for one column of one file (exact, NaN-aware)."""

    min: Any = None
    max: Any = None
    null_count: int = 0
    has_nan: bool = False

    def update(self, array: pa.ChunkedArray | pa.Array) -> None:
        self.null_count += array.null_count
        if len(array) == array.null_count:
            return
        t = array.type
        if pa.types.is_floating(t):
            if pc.any(pc.is_nan(array)).as_py():
                self.has_nan = True
        mm = pc.min_max(array)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is not None and (self.min is None or lo < self.min):
            self.min = lo
        if hi is not None and (self.max is None or hi > self.max):
            self.max = hi

    def result(self, value_count: int) -> dict[str, Any]:
        hi = float("nan") if self.has_nan else self.max
        return {"min": self.min, "max": hi, "null_count": self.null_count, "value_count": value_count}


def _stats_supported(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date32(t)
        or pa.types.is_timestamp(t)
    )


def dictionary_columns(table: pa.Table, max_distinct_fraction: float = 0.5) -> list[str]:
    """Columns worth dictionary encoding: few distinct values in ``table`` (a sample of what is written).

    Parquet writers try a dictionary for every column and fall back only when it outgrows a page; small
    files of unique values (ids, record keys, payloads) never fall back, so they pay for the dictionary
    and get larger files. Measured on conn rows: writing took 2x longer and files were ~10% larger.
    """
    rows = table.num_rows
    if rows == 0:
        return list(table.column_names)
    out = []
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_boolean(col.type):
            continue
        if pc.count_distinct(col, mode="all").as_py() <= max_distinct_fraction * rows:
            out.append(name)
    return out


class _OpenFile:
    def __init__(self, spec: WriteSpec, schema: pa.Schema, partition_path: str, file_id: str, token: str,
                 dictionary: list[str] | bool = True) -> None:
        self.partition_path = partition_path
        self.file_id = file_id
        self.file_name = f"{file_id}_{token}_{spec.instant_time}.parquet"
        part_dir = os.path.join(spec.base_path, partition_path) if partition_path else spec.base_path
        marker_dir = os.path.join(spec.base_path, ".hoodie", ".temp", spec.instant_time, partition_path)
        os.makedirs(marker_dir, exist_ok=True)
        with open(os.path.join(marker_dir, self.file_name + ".marker.CREATE"), "wb"):
            pass
        os.makedirs(part_dir, exist_ok=True)
        if not has_partition_metadata(part_dir):
            depth = len(partition_path.strip("/").split("/")) if partition_path else 0
            write_partition_metadata(part_dir, spec.instant_time, depth)
        self.path = os.path.join(part_dir, self.file_name)
        self.sink = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self.writer = pq.ParquetWriter(self.sink, schema, compression=spec.compression, write_statistics=True,
                                       use_dictionary=dictionary)
        self.num_records = 0
        self.min_key: str | None = None
        self.max_key: str | None = None
        self.stats = {c: _StatsAcc() for c in spec.stats_columns if _stats_supported(schema.field(c).type)}
        self.key_min: int | None = None
        self.key_max: int | None = None

    def track_layout_keys(self, keys: pa.ChunkedArray | pa.Array) -> None:
        mm = pc.min_max(keys)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is not None:
            self.key_min = lo if self.key_min is None else min(self.key_min, lo)
            self.key_max = hi if self.key_max is None else max(self.key_max, hi)

    def write(self, table: pa.Table) -> None:
        self.writer.write_table(table)
        self.num_records += table.num_rows
        keys = table.column(RECORD_KEY_COLUMN)
        mm = pc.min_max(keys)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if self.min_key is None or (lo is not None and lo < self.min_key):
            self.min_key = lo
        if self.max_key is None or (hi is not None and hi > self.max_key):
            self.max_key = hi
        for name, acc in self.stats.items():
            acc.update(table.column(name))

    def size(self) -> int:
        return self.sink.tell()

    def close(self) -> dict[str, Any]:
        if self.min_key is not None:
            self.writer.add_key_value_metadata(
                {"hoodie_min_record_key": self.min_key, "hoodie_max_record_key": self.max_key or ""}
            )
        self.writer.close()
        self.sink.close()
        size = os.path.getsize(self.path)
        stats = {name: acc.result(self.num_records) for name, acc in self.stats.items()}
        _add_chunk_sizes(self.writer.writer.metadata, stats)
        return {
            "partition_path": self.partition_path,
            "file_id": self.file_id,
            "file_name": self.file_name,
            "num_records": self.num_records,
            "file_size": size,
            "stats": pickle.dumps(stats, protocol=pickle.HIGHEST_PROTOCOL),
            "key_min": self.key_min,
            "key_max": self.key_max,
        }


def _add_chunk_sizes(meta: pq.FileMetaData, stats: dict[str, dict[str, Any]]) -> None:
    """Add parquet column-chunk sizes (``totalSize`` / ``totalUncompressedSize`` in Hudi's index), from the
    footer the writer just wrote."""
    if not stats:
        return
    totals: dict[str, list[int]] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for ci in range(group.num_columns):
            col = group.column(ci)
            acc = totals.setdefault(col.path_in_schema, [0, 0])
            acc[0] += col.total_compressed_size
            acc[1] += col.total_uncompressed_size
    for name, entry in stats.items():
        compressed, uncompressed = totals.get(name, [0, 0])
        entry["total_size"] = compressed
        entry["total_uncompressed_size"] = uncompressed


@dataclass(frozen=True)
class TaskIdentity:
    """Which Spark task attempt writes (the Spark layer looks it up; zeros outside Spark). It makes the
    write token ``<partition>-<stage>-<attempt>`` of Hudi file names and the commit sequence numbers."""

    partition_id: int = 0
    stage_id: int = 0
    attempt_id: int = 0

    @property
    def write_token(self) -> str:
        return f"{self.partition_id}-{self.stage_id}-{self.attempt_id}"


def constant_strings(value: str, n: int) -> pa.Array:
    """A string array of ``n`` copies of ``value``, built from buffers (no per-row Python work)."""
    raw = value.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw * n)).cast(pa.string())


def _with_meta_columns(
    spec: WriteSpec, batch: pa.Table, file_name: str, task_partition: int, first_row: int
) -> pa.Table:
    n = batch.num_rows
    columns: list[pa.Array | pa.ChunkedArray] = []
    if spec.preserve_commit_metadata and COMMIT_TIME_COLUMN in batch.column_names:
        columns.append(batch.column(COMMIT_TIME_COLUMN))
        columns.append(batch.column(COMMIT_SEQNO_COLUMN))
    else:
        columns.append(constant_strings(spec.instant_time, n))
        prefix = pa.scalar(f"{spec.instant_time}_{task_partition}_", pa.string())
        numbers = pc.cast(pa.array(np.arange(first_row, first_row + n, dtype=np.int64)), pa.string())
        columns.append(pc.binary_join_element_wise(prefix, numbers, ""))
    columns.append(batch.column(RECORD_KEY_COLUMN))
    columns.append(batch.column(PARTITION_PATH_COLUMN))
    columns.append(constant_strings(file_name, n))
    names = list(META_COLUMNS)
    for name in spec.data_columns:
        columns.append(batch.column(name))
        names.append(name)
    return pa.Table.from_arrays(columns, names=names)


class _TaskFiles:
    """What every output partition of one task shares: the spec, the task identity, the running row
    number (commit sequence numbers), the dictionary-column choice and the metadata rows of closed files."""

    def __init__(self, spec: WriteSpec, task: TaskIdentity) -> None:
        self.spec = spec
        self.task = task
        self.rows_seen = 0
        self.dictionary: list[str] | None = None
        self.results: list[dict[str, Any]] = []
        self.rows_cap = max(0, int(spec.max_rows_per_file))
        #: rows kept pending until the end, so the last file can absorb a short tail
        self.holdback = self.rows_cap // 2
        # partitions with buffered rows / with an open file, in the order they got them (the final flush and
        # close go in these orders, which fixes the commit sequence numbers and the order of the result rows)
        self.pending_order: dict[str, _PartitionOutput] = {}
        self.open_order: dict[str, _PartitionOutput] = {}

    def meta_table(self, data: pa.Table, file_name: str, first_row: int) -> pa.Table:
        return _with_meta_columns(self.spec, data, file_name, self.task.partition_id, first_row)

    def open_file(self, partition_path: str, data: pa.Table) -> _OpenFile:
        if self.dictionary is None:  # decided once per task, on its first rows
            self.dictionary = dictionary_columns(self.meta_table(data.slice(0, 8192), "f", 0))
        schema = self.meta_table(data.slice(0, 0), "", 0).schema
        return _OpenFile(self.spec, schema, partition_path, f"{uuid.uuid4()}-0", self.task.write_token,
                         self.dictionary)


class _PartitionOutput:
    """Rows of one output partition (Hudi partition path) of one task: buffered until a row group's worth
    arrives, then written to the open file, which rolls over by size or by ``max_rows_per_file``."""

    def __init__(self, task: _TaskFiles, partition_path: str) -> None:
        self.task = task
        self.partition_path = partition_path
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.open: _OpenFile | None = None

    def add(self, piece: pa.Table) -> None:
        if not self.pending:
            self.task.pending_order[self.partition_path] = self
        self.pending.append(piece)
        self.pending_rows += piece.num_rows
        self.pending_bytes += piece.nbytes
        spec = self.task.spec
        if self.pending_rows >= spec.parquet_row_group_rows or self.pending_bytes >= spec.max_file_size:
            self.flush()

    def _take_pending(self, final: bool) -> pa.Table | None:
        tables, self.pending, self.pending_rows, self.pending_bytes = self.pending, [], 0, 0
        self.task.pending_order.pop(self.partition_path, None)
        if not tables:
            return None
        data = pa.concat_tables(tables)
        holdback = self.task.holdback
        if self.task.rows_cap and not final and data.num_rows > holdback:
            kept = data.slice(data.num_rows - holdback)
            data = data.slice(0, data.num_rows - holdback)
            self.pending, self.pending_rows, self.pending_bytes = [kept], kept.num_rows, kept.nbytes
            self.task.pending_order[self.partition_path] = self
        return data

    def _rows_for(self, handle: _OpenFile, data: pa.Table, final: bool) -> int:
        """How many of ``data``'s rows go into ``handle`` now: as many as (by estimate) still fit the file, so
        files stay near max size (bytes per row from what the file already holds, else the larger in-memory
        size), capped by ``max_rows_per_file`` unless this is the final short tail."""
        spec = self.task.spec
        if handle.num_records and handle.size() > 4:
            per_row = handle.size() / handle.num_records
        else:
            per_row = max(data.nbytes / data.num_rows, 1.0)
        room = spec.max_file_size - handle.size()
        take = min(data.num_rows, max(1, int(room / per_row)))
        rows_cap = self.task.rows_cap
        if rows_cap:
            room_rows = max(1, rows_cap - handle.num_records)
            tail = data.num_rows - room_rows
            if not (final and 0 < tail <= self.task.holdback):  # else: the whole short tail goes into this file
                take = min(take, room_rows)
        return take

    def flush(self, final: bool = False) -> None:
        data = self._take_pending(final)
        if data is None:
            return
        task = self.task
        while data.num_rows:
            handle = self.open
            if handle is None:
                handle = self.open = task.open_file(self.partition_path, data)
                task.open_order[self.partition_path] = self
            take = self._rows_for(handle, data, final)
            if task.spec.layout_key_column is not None:
                handle.track_layout_keys(data.column(task.spec.layout_key_column).slice(0, take))
            table = task.meta_table(data.slice(0, take), handle.file_name, task.rows_seen)
            data = data.slice(take)
            task.rows_seen += take
            handle.write(table)
            if handle.size() >= task.spec.max_file_size * _FULL_FRACTION or (
                    task.rows_cap and handle.num_records >= task.rows_cap):
                self.close()

    def close(self) -> None:
        if self.open is not None:
            self.task.results.append(self.open.close())
            self.open = None
            self.task.open_order.pop(self.partition_path, None)


def write_partition(spec: WriteSpec, batches: Iterator[pa.RecordBatch],
                    task: TaskIdentity | None = None) -> Iterator[pa.RecordBatch]:
    """Write one Spark task's rows as Hudi base files; yield one metadata row per file written.

    Input batches carry the data columns plus ``_hoodie_record_key`` and ``_hoodie_partition_path``
    (and, when ``preserve_commit_metadata``, the original ``_hoodie_commit_time`` / ``_hoodie_commit_seqno``).
    Rows are written in arrival order, so a sort done by Spark before this step is kept inside each file.
    ``task`` names the Spark task attempt (the Spark layer passes it; zeros when run outside Spark).
    """
    files = _TaskFiles(spec, task or TaskIdentity())
    outputs: dict[str, _PartitionOutput] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        keys = table.column(RECORD_KEY_COLUMN)
        if keys.null_count:
            raise WriterInputError(
                "a record key is null; every row needs a non-null value in the record key field(s)"
            )
        parts = table.column(PARTITION_PATH_COLUMN)
        distinct = pc.unique(parts).to_pylist()
        for partition_path in distinct:
            piece = table if len(distinct) == 1 else table.filter(pc.equal(parts, partition_path))
            output = outputs.get(partition_path)
            if output is None:
                output = outputs[partition_path] = _PartitionOutput(files, partition_path)
            output.add(piece)
    for output in list(files.pending_order.values()):
        output.flush(final=True)
    for output in list(files.open_order.values()):
        output.close()
    if files.results:
        yield pa.RecordBatch.from_pylist(files.results, schema=RESULT_SCHEMA)


@dataclass(frozen=True)
class WrittenFile:
    """Driver-side view of one file an executor wrote."""

    partition_path: str
    file_id: str
    file_name: str
    num_records: int
    file_size: int
    stats: dict[str, dict[str, Any]]
    #: min / max of the layout key column over the file's rows (the sortable ``int64`` form), when tracked
    key_range: tuple[int, int] | None = None

    @property
    def relative_path(self) -> str:
        return f"{self.partition_path}/{self.file_name}" if self.partition_path else self.file_name


def decode_results(rows: Sequence[Any]) -> list[WrittenFile]:
    """Turn collected metadata rows (Spark ``Row`` objects or dicts) into :class:`WrittenFile` values."""
    out = []
    for row in rows:
        d = row.asDict() if hasattr(row, "asDict") else dict(row)
        out.append(
            WrittenFile(
                partition_path=d["partition_path"],
                file_id=d["file_id"],
                file_name=d["file_name"],
                num_records=int(d["num_records"]),
                file_size=int(d["file_size"]),
                stats=pickle.loads(d["stats"]),
                key_range=(int(d["key_min"]), int(d["key_max"])) if d.get("key_min") is not None else None,
            )
        )
    return out
