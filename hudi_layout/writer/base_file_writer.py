"""Executor-side writer of Hudi base files.

Runs inside Spark's Python workers (through ``mapInArrow``): it receives the Arrow batches of one Spark
task, adds the five Hudi meta columns, writes parquet base files named as Hudi names them
(``<fileId>_<writeToken>_<instant>.parquet``), rolls over to a new file group when a file reaches
``hoodie.parquet.max.file.size``, computes exact per-column statistics for the metadata table while the
data is in memory, and yields ONE small metadata row per file written. The driver collects only those
rows; table data never reaches it.

Before a data file is created, its DIRECT marker (``.hoodie/.temp/<instant>/<partition>/<file>.marker.CREATE``)
is written, so a rollback can find and delete files of a failed write even if no metadata row came back.
Every creation goes through :mod:`hudi_layout.table.file_guard`: the targets are resolved and kept under the
base path (never in ``.hoodie/`` except the marker), and the instant's file gate is checked first, so a
worker that outlives its driver, or flushes after its JVM died, cannot add files to a rolled-back or
completed instant. Partition paths are encoded here, by the table's
:class:`~hudi_layout.format.partition_path.PartitionPathRule`, from the partition value columns
(``_hoodie_partition_value_<i>``) every write path hands in: one encoder for all of them.

The module does not import pyspark: the Spark layer passes the task identity in (:class:`TaskIdentity`), so
the writer tests without Spark.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import io
import os
import pickle
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout import options as cfg
from hudi_layout.errors import SPARK_ERROR_MARKER, HudiLayoutError, InvalidArgumentError, spark_error_text
from hudi_layout.format import meta_fields
from hudi_layout.format.file_naming import is_log_file_name
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.format.spark_calendar import SPARK_VERSION_FOOTER_KEY, refuse_unwritable_datetimes
from hudi_layout.table.faults import crash_point
from hudi_layout.table.file_guard import FileGate, create_new_file, data_file_path, marker_path
from hudi_layout.table.partition_metadata import has_partition_metadata, write_partition_metadata
from hudi_layout.writer.key_text import arrow_key_text

#: Column carrying each row's partition path into the writer (computed by Spark before the write).
PARTITION_PATH_COLUMN = meta_fields.PARTITION_PATH
RECORD_KEY_COLUMN = meta_fields.RECORD_KEY
#: Input columns with each partition field's value as a string, encoded here into the partition path.
PARTITION_VALUE_PREFIX = "_hoodie_partition_value_"
#: Optional input columns already holding preserved meta values (clustering keeps commit time / seqno).
COMMIT_TIME_COLUMN = meta_fields.COMMIT_TIME
COMMIT_SEQNO_COLUMN = meta_fields.COMMIT_SEQNO
#: Hudi's soft-delete field of the user's schema (docs/hudi-format-live-tables.md §2.3)
IS_DELETED_FIELD = "_hoodie_is_deleted"

ERROR_MARKER = SPARK_ERROR_MARKER

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
        # a merged file group (upsert / delete): what changed, and the slice it replaces (null for new files)
        ("num_updates", pa.int64()),
        ("num_deletes", pa.int64()),
        ("prev_commit", pa.string()),
        ("prev_base_file", pa.string()),
        # new keys a merged file group took (small-file packing; ``hoodie.parquet.small.file.limit``)
        ("num_inserts", pa.int64()),
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
    compression: str = cfg.PARQUET_CODEC.default
    #: a column the codec shrinks by less than this share is written uncompressed (:func:`choose_encoding`)
    compression_min_saving: float = cfg.PARQUET_MIN_SAVING.default
    #: a merge copies the column chunks its updates left unchanged (:mod:`hudi_layout.format.parquet_splice`)
    copy_unchanged_columns: bool = cfg.MERGE_COPY_UNCHANGED.default
    stats_columns: tuple[str, ...] = ()
    preserve_commit_metadata: bool = False
    parquet_row_group_rows: int = _ROW_GROUP_ROWS
    #: roll over to a new file after this many rows (0: only ``max_file_size`` decides). A task's last file
    #: takes up to half as many more rows instead of leaving a small tail file.
    max_rows_per_file: int = 0
    #: an input column (``int64``, not written) whose per-file min / max the writer reports: the layout's sort
    #: key, so a clustering can record each file's curve-key range (``key_min`` / ``key_max`` result fields)
    layout_key_column: str | None = None
    #: checked before every file is created (None only in unit tests of the writer itself)
    gate: FileGate | None = None
    #: encodes the ``_hoodie_partition_value_<i>`` input columns into ``_hoodie_partition_path``
    partition_rule: PartitionPathRule | None = None
    #: the table's types of the data columns: a column arriving with another type (narrower data, e.g. int
    #: into a long column) is cast to it (None: written as it arrives)
    data_schema: pa.Schema | None = None
    #: the session's ``spark.sql.parquet.datetimeRebaseModeInWrite``: other than ``CORRECTED``, a file holding
    #: a date before 1582-10-15 or a timestamp before 1900 is refused
    #: (:func:`~hudi_layout.format.spark_calendar.refuse_unwritable_datetimes`); upper case
    datetime_rebase_mode: str = "CORRECTED"
    #: leave out rows whose ``_hoodie_is_deleted`` is true (inserts: ``WriteOperation.drops_delete_markers``);
    #: they are counted as deletes of the partition's file, as Hudi's create handle counts them
    drop_delete_markers: bool = False
    #: a partition whose rows in a task were all delete markers gets an empty base file there (only when the
    #: task wrote nothing else into it): an ``insert_overwrite`` replaces the partitions it wrote, and Hudi's
    #: create handle writes such a file, so Hudi empties that partition (``WriteOperation.replaces_written_partitions``)
    empty_file_for_marked_partitions: bool = False
    #: Merge-on-Read upserts / deletes: the Avro schema (meta fields, then the table's) of the log blocks they
    #: append (None: every touched file group is rewritten, as on Copy-on-Write tables)
    log_block_schema: str | None = None
    #: a slice holding this many log files or more is rewritten merged instead of taking another one
    #: (``hudi_layout.mor.max.log.files.per.slice``; :mod:`hudi_layout.writer.log_file_writer`)
    max_log_files_per_slice: int = 0


def partition_value_column(i: int) -> str:
    return f"{PARTITION_VALUE_PREFIX}{i}"


class WriterInputError(ValueError):
    """An error found on an executor, carried as :func:`hudi_layout.errors.spark_error_text` so the driver
    turns Spark's wrapped Python exception back into our error (class, one-line message, hint)."""

    def __init__(self, message: str, *, kind: str = "InvalidArgumentError", hint: str | None = None) -> None:
        from hudi_layout import errors

        cls = getattr(errors, kind, None)
        exc = cls(message, hint=hint) if isinstance(cls, type) and issubclass(cls, HudiLayoutError) \
            else errors.InvalidArgumentError(message, hint=hint)
        super().__init__(spark_error_text(exc))

    @classmethod
    def of(cls, exc: HudiLayoutError) -> WriterInputError:
        out = cls.__new__(cls)
        ValueError.__init__(out, spark_error_text(exc))
        return out


def null_key_refusal() -> InvalidArgumentError:
    """A row without a record key (Hudi's key generators refuse it too): the one message every writer gives,
    on the driver as it is; executors raise it as :func:`null_key_error`."""
    return InvalidArgumentError("a record key is null; every row needs a non-null value in the record key "
                                "field(s)", hint="filter those rows out (df.dropna(subset=[...])) or fill them")


def null_key_error() -> WriterInputError:
    """:func:`null_key_refusal`, carried out of an executor."""
    return WriterInputError.of(null_key_refusal())


@dataclass
class StatsAccumulator:
    """Running min / max / null count for one column of one file (exact, NaN-aware)."""

    min: Any = None
    max: Any = None
    null_count: int = 0
    has_nan: bool = False

    def update(self, array: pa.ChunkedArray | pa.Array) -> None:
        if pa.types.is_dictionary(array.type):
            array = array.cast(array.type.value_type)
        self.null_count += array.null_count
        if len(array) == array.null_count:
            return
        if pa.types.is_floating(array.type):
            nan = pc.is_nan(array)
            if pc.any(nan).as_py():
                self.has_nan = True
                array = pc.filter(array, pc.invert(nan))  # min / max over the numbers only
                if len(array) == array.null_count:
                    return
        mm = pc.min_max(array)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is not None and (self.min is None or lo < self.min):
            self.min = lo
        if hi is not None and (self.max is None or hi > self.max):
            self.max = hi

    def result(self, value_count: int) -> dict[str, Any]:
        """NaN-exact bounds for floats: ``max`` is NaN exactly when the file holds a NaN (NaN is the greatest
        value in Spark); ``min`` is the least number, NaN only when every non-null value is NaN."""
        lo, hi = self.min, self.max
        if self.has_nan:
            hi = float("nan")
            if lo is None:
                lo = float("nan")
        return {"min": lo, "max": hi, "null_count": self.null_count, "value_count": value_count}


def stats_supported(t: pa.DataType) -> bool:
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
        if pa.types.is_nested(col.type):  # no distinct count for structs and lists: parquet's default
            out.append(name)
        elif pc.count_distinct(col, mode="all").as_py() <= max_distinct_fraction * rows:
            out.append(name)
    return out


@functools.lru_cache(maxsize=64)
def parquet_leaves(schema: pa.Schema) -> tuple[tuple[str, str, bool], ...]:
    """``(leaf path, top-level column, floating point?)`` of every parquet column a table of ``schema`` writes."""
    sink = io.BytesIO()
    pq.write_table(schema.empty_table(), sink)
    sink.seek(0)
    md = pq.ParquetFile(sink).schema
    out = []
    for j in range(len(md)):
        col = md.column(j)
        floating = col.physical_type in ("FLOAT", "DOUBLE") or "Float16" in str(col.logical_type)
        out.append((col.path, col.path.split(".")[0], floating))
    return tuple(out)


@dataclass(frozen=True)
class ColumnEncoding:
    """How one task's base files encode their columns: which are dictionary encoded (``True``: all) and which
    are written without the codec. Decided once per task on its first rows (:func:`choose_encoding`)."""

    dictionary: tuple[str, ...] | bool = True
    #: parquet leaf paths written uncompressed
    uncompressed: frozenset[str] = frozenset()


#: rows a task's encoding choice looks at
ENCODING_SAMPLE_ROWS = 8192
#: smaller column chunks of the sample keep the codec (a constant column is a few bytes either way)
_MIN_TRIAL_BYTES = 1024


def choose_encoding(sample: pa.Table, codec: str, min_saving: float) -> ColumnEncoding:
    """The :class:`ColumnEncoding` for files of ``sample``'s rows (with their meta columns): dictionary columns
    by :func:`dictionary_columns`; then the sample is written once with ``codec`` and every column whose chunk
    the codec shrank by less than ``min_saving`` of its size is left uncompressed.

    Why: hex digests, UUIDs and random ids barely compress with snappy or lz4 (8% for the sample data's
    50-hex-character payload) but pay for it twice, on write and on every read: measured on 1 MiB conn base
    files, leaving that one column uncompressed took writing from 3.7 to 2.5 ms and reading from 2.2-2.8 to
    1.2-1.5 ms per file, for 4% more bytes. Parquet records the codec per column chunk, so every reader
    (parquet-java, arrow-rs / hudi-rs, pyarrow) reads such files as any other."""
    sample = sample.slice(0, ENCODING_SAMPLE_ROWS).replace_schema_metadata(None)
    dictionary: tuple[str, ...] | bool = tuple(dictionary_columns(sample))
    if codec == "none" or min_saving <= 0 or sample.num_rows == 0:
        return ColumnEncoding(dictionary)
    sink = io.BytesIO()
    pq.write_table(sample, sink, compression=codec, **footer_options(sample.schema, ColumnEncoding(dictionary)))
    meta = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata
    uncompressed = set()
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for ci in range(group.num_columns):
            col = group.column(ci)
            if col.total_uncompressed_size >= _MIN_TRIAL_BYTES and \
                    col.total_compressed_size > (1.0 - min_saving) * col.total_uncompressed_size:
                uncompressed.add(col.path_in_schema)
    return ColumnEncoding(dictionary, frozenset(uncompressed))


def footer_options(schema: pa.Schema, encoding: ColumnEncoding, codec: str | None = None) -> dict[str, Any]:
    """pyarrow writer options for a base file of ``schema``: ``write_statistics`` / ``use_dictionary``, and, when
    ``codec`` is given, ``compression`` (per column when ``encoding`` leaves some uncompressed). Float and
    double columns get neither footer statistics nor a dictionary.

    Parquet readers (Spark's through parquet-java) prune row groups with footer min/max and dictionaries but do
    not know Spark's float order: pyarrow leaves NaN out of min/max, so ``d > 5`` drops a row group holding
    NaN (NaN is greater than every number in Spark), and a dictionary holding only -0.0 fails ``d = 0``. Without
    them no reader can skip a float row group wrongly; our column_stats index keeps NaN-exact bounds instead.
    """
    leaves = parquet_leaves(schema)
    stats = [path for path, _top, floating in leaves if not floating]
    out: dict[str, Any] = {"write_statistics": stats}
    if encoding.dictionary is False:
        out["use_dictionary"] = False
    else:
        wanted = set(schema.names) if encoding.dictionary is True else set(encoding.dictionary)
        out["use_dictionary"] = [path for path, top, floating in leaves if not floating and top in wanted]
    if codec is not None:
        plain = encoding.uncompressed & {path for path, _top, _f in leaves}
        out["compression"] = {path: ("none" if path in plain else codec) for path, _t, _f in leaves} \
            if plain else codec
    return out


def base_file_name(file_id: str, token: str, instant_time: str) -> str:
    return f"{file_id}_{token}_{instant_time}.parquet"


class EncodedFile(Protocol):
    """A base file's bytes built in memory: ``pieces`` written in order, ``size`` bytes in all, and each
    column's (compressed, uncompressed) chunk bytes."""

    @property
    def pieces(self) -> Sequence[bytes | memoryview]: ...

    @property
    def size(self) -> int: ...

    @property
    def chunk_sizes(self) -> dict[str, tuple[int, int]]: ...


def create_data_file(spec: WriteSpec, partition_path: str, file_name: str, io_type: str) -> tuple[str, Any]:
    """Create data file ``file_name`` (a base file, or a Merge-on-Read log file) of ``partition_path`` for
    writing, after its DIRECT marker (and the partition's metadata file when it is new); returns its path and
    binary sink."""
    try:
        marker = marker_path(spec.base_path, spec.instant_time, partition_path, file_name, io_type)
        path = data_file_path(spec.base_path, partition_path, file_name)
        with spec.gate.creating() if spec.gate is not None else contextlib.nullcontext():
            os.makedirs(os.path.dirname(marker), exist_ok=True)
            os.close(create_new_file(marker))
            crash_point("executor.after_marker")
            part_dir = os.path.dirname(path)
            os.makedirs(part_dir, exist_ok=True)
            if not has_partition_metadata(part_dir):
                depth = len(partition_path.strip("/").split("/")) if partition_path else 0
                write_partition_metadata(part_dir, spec.instant_time, depth)
            return path, os.fdopen(create_new_file(path), "wb")
    except HudiLayoutError as e:
        raise WriterInputError.of(e) from None


def file_statistics(spec: WriteSpec, table: pa.Table,
                    known: Callable[[str, pa.DataType], tuple[Any, Any, int] | None] | None = None,
                    ) -> tuple[dict[str, StatsAccumulator], str | None, str | None]:
    """Exact statistics of ``table``'s stats columns, and its record-key range (the footer's). ``known``: the
    (min, max, null count) of a column when the caller knows them exactly (the old file's footer, for the
    chunks a merge copies), else None and they are computed from the values."""
    stats = {c: StatsAccumulator() for c in spec.stats_columns
             if c in table.schema.names and stats_supported(_value_type(table.schema.field(c).type))}
    for name, acc in stats.items():
        given = known(name, table.schema.field(name).type) if known is not None else None
        if given is None:
            acc.update(table.column(name))
        else:
            acc.min, acc.max, acc.null_count = given
    key_stats = stats.get(RECORD_KEY_COLUMN)
    if key_stats is not None:
        return stats, key_stats.min, key_stats.max
    mm = pc.min_max(table.column(RECORD_KEY_COLUMN))
    return stats, mm["min"].as_py(), mm["max"].as_py()


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


@functools.lru_cache(maxsize=1)
def spark_version_footer_value() -> str:
    """The Spark version our base files name in :data:`SPARK_VERSION_FOOTER_KEY` (the installed pyspark's, as
    Hudi's Spark row writer names the Spark that wrote the file; ``3.0.0`` without pyspark). Arrow writes
    dates and timestamps in the proleptic Gregorian calendar, which is what a version of 3.0.0 or later tells
    Spark: without the entry, Spark decides by ``spark.sql.parquet.datetimeRebaseModeInRead``, and ``LEGACY``
    shifted dates before 1582 by days, away from the statistics our skipping uses (docs/read-semantics.md)."""
    try:
        found = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return "3.0.0"
    return found if found >= "3.0.0" else "3.0.0"


def check_datetimes_writable(table: pa.Table, mode: str) -> None:
    """:func:`~hudi_layout.format.spark_calendar.refuse_unwritable_datetimes` on an executor: the refusal
    travels back to the driver as our error (one line)."""
    try:
        refuse_unwritable_datetimes(table, mode)
    except HudiLayoutError as e:
        raise WriterInputError.of(e) from None


def hudi_footer_metadata(min_key: str | None, max_key: str | None) -> dict[str, str]:
    """The footer key-value entries of a base file: the record-key range Hudi readers look for, and the
    calendar marker Spark's parquet reader looks for (:func:`spark_version_footer_value`)."""
    out = {SPARK_VERSION_FOOTER_KEY: spark_version_footer_value()}
    if min_key is not None:
        out.update({"hoodie_min_record_key": min_key, "hoodie_max_record_key": max_key or ""})
    return out


def write_encoded_file(spec: WriteSpec, num_rows: int, partition_path: str, file_id: str, token: str,
                       encoded: EncodedFile, stats: dict[str, StatsAccumulator],
                       io_type: str = "MERGE") -> dict[str, Any]:
    """Write a base file whose parquet bytes were built in memory (``encoded``) with its statistics ``stats``
    (:func:`file_statistics`): the same marker, file creation and metadata row as :class:`OpenFile`."""
    file_name = base_file_name(file_id, token, spec.instant_time)
    _path, sink = create_data_file(spec, partition_path, file_name, io_type)
    with sink:
        half = len(encoded.pieces) // 2
        for i, piece in enumerate(encoded.pieces):
            if i == half:
                crash_point("executor.mid_file")
            sink.write(piece)
    result = {name: acc.result(num_rows) for name, acc in stats.items()}
    for name, entry in result.items():
        entry["total_size"], entry["total_uncompressed_size"] = encoded.chunk_sizes.get(name, (0, 0))
    return _file_row(partition_path, file_id, file_name, num_rows, encoded.size, result, None, None)


def _file_row(partition_path: str, file_id: str, file_name: str, num_records: int, file_size: int,
              stats: dict[str, dict[str, Any]], key_min: int | None, key_max: int | None) -> dict[str, Any]:
    """The metadata row (:data:`RESULT_SCHEMA`) of a base file the executor wrote."""
    return {
        "partition_path": partition_path,
        "file_id": file_id,
        "file_name": file_name,
        "num_records": num_records,
        "file_size": file_size,
        "stats": pickle.dumps(stats, protocol=pickle.HIGHEST_PROTOCOL),
        "key_min": key_min,
        "key_max": key_max,
    }


class OpenFile:
    """One base file being written: DIRECT marker first (``io_type`` CREATE for a new file group, MERGE for a
    new slice of an existing one), then parquet with exact running statistics; :meth:`close` gives its
    metadata row."""

    def __init__(self, spec: WriteSpec, schema: pa.Schema, partition_path: str, file_id: str, token: str,
                 encoding: ColumnEncoding | None = None, io_type: str = "CREATE") -> None:
        self.partition_path = partition_path
        self.file_id = file_id
        self.file_name = base_file_name(file_id, token, spec.instant_time)
        self.path, self.sink = create_data_file(spec, partition_path, self.file_name, io_type)
        self.writer = pq.ParquetWriter(self.sink, schema,
                                       **footer_options(schema, encoding or ColumnEncoding(), spec.compression))
        self.num_records = 0
        self.min_key: str | None = None
        self.max_key: str | None = None
        self.stats = {c: StatsAccumulator() for c in spec.stats_columns
                      if c in schema.names and stats_supported(schema.field(c).type)}
        self.key_min: int | None = None
        self.key_max: int | None = None
        self.datetime_rebase_mode = spec.datetime_rebase_mode

    def track_layout_keys(self, keys: pa.ChunkedArray | pa.Array) -> None:
        mm = pc.min_max(keys)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is not None:
            self.key_min = lo if self.key_min is None else min(self.key_min, lo)
            self.key_max = hi if self.key_max is None else max(self.key_max, hi)

    def write(self, table: pa.Table) -> None:
        check_datetimes_writable(table, self.datetime_rebase_mode)
        self.writer.write_table(table)
        crash_point("executor.mid_file")
        self.num_records += table.num_rows
        for name, acc in self.stats.items():
            acc.update(table.column(name))
        key_stats = self.stats.get(RECORD_KEY_COLUMN)
        if key_stats is not None:  # the key range for the footer is the key column's statistics
            self.min_key, self.max_key = key_stats.min, key_stats.max
            return
        mm = pc.min_max(table.column(RECORD_KEY_COLUMN))
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if self.min_key is None or (lo is not None and lo < self.min_key):
            self.min_key = lo
        if self.max_key is None or (hi is not None and hi > self.max_key):
            self.max_key = hi

    def size(self) -> int:
        return self.sink.tell()

    def close(self) -> dict[str, Any]:
        footer_kv = hudi_footer_metadata(self.min_key, self.max_key)
        if footer_kv:
            self.writer.add_key_value_metadata(footer_kv)
        self.writer.close()
        self.sink.close()
        size = os.path.getsize(self.path)
        stats = {name: acc.result(self.num_records) for name, acc in self.stats.items()}
        _add_chunk_sizes(self.writer.writer.metadata, stats)
        return _file_row(self.partition_path, self.file_id, self.file_name, self.num_records, size, stats,
                         self.key_min, self.key_max)


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


def with_meta_columns(
    spec: WriteSpec, batch: pa.Table, file_name: str, task_partition: int, first_row: int
) -> pa.Table:
    """New records (data columns, ``_hoodie_record_key``, ``_hoodie_partition_path``) as the rows of a base file:
    Hudi's meta columns first (commit sequence numbers from ``first_row``), then the data columns in the
    table's types."""
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
    target = spec.data_schema
    for name in spec.data_columns:
        col = batch.column(name)
        if target is not None and name in target.names and col.type != target.field(name).type:
            col = pc.cast(col, target.field(name).type)
        columns.append(col)
        names.append(name)
    return pa.Table.from_arrays(columns, names=names)


def task_encoding(spec: WriteSpec, data: pa.Table, task: TaskIdentity) -> ColumnEncoding:
    """The column encoding of a task's files (:func:`choose_encoding` of its first rows with their meta
    columns): decided once per task, as counting distinct values and the codec trial cost milliseconds."""
    return choose_encoding(with_meta_columns(spec, data.slice(0, ENCODING_SAMPLE_ROWS), "f", task.partition_id, 0),
                           spec.compression, spec.compression_min_saving)


class _TaskFiles:
    """What every output partition of one task shares: the spec, the task identity, the running row
    number (commit sequence numbers), the column encoding and the metadata rows of closed files."""

    def __init__(self, spec: WriteSpec, task: TaskIdentity) -> None:
        self.spec = spec
        self.task = task
        self.rows_seen = 0
        self.encoding: ColumnEncoding | None = None
        self.results: list[dict[str, Any]] = []
        self.rows_cap = max(0, int(spec.max_rows_per_file))
        #: rows kept pending until the end, so the last file can absorb a short tail
        self.holdback = self.rows_cap // 2
        # partitions with buffered rows / with an open file, in the order they got them (the final flush and
        # close go in these orders, which fixes the commit sequence numbers and the order of the result rows)
        self.pending_order: dict[str, _PartitionOutput] = {}
        self.open_order: dict[str, _PartitionOutput] = {}

    def meta_table(self, data: pa.Table, file_name: str, first_row: int) -> pa.Table:
        return with_meta_columns(self.spec, data, file_name, self.task.partition_id, first_row)

    def open_file(self, partition_path: str, data: pa.Table) -> OpenFile:
        if self.encoding is None:  # decided once per task, on its first rows
            self.encoding = task_encoding(self.spec, data, self.task)
        schema = self.meta_table(data.slice(0, 0), "", 0).schema
        return OpenFile(self.spec, schema, partition_path, f"{uuid.uuid4()}-0", self.task.write_token,
                        self.encoding)


class _PartitionOutput:
    """Rows of one output partition (Hudi partition path) of one task: buffered until a row group's worth
    arrives, then written to the open file, which rolls over by size or by ``max_rows_per_file``."""

    def __init__(self, task: _TaskFiles, partition_path: str) -> None:
        self.task = task
        self.partition_path = partition_path
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.open: OpenFile | None = None

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

    def _rows_for(self, handle: OpenFile, data: pa.Table, final: bool) -> int:
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
                    task: TaskIdentity | None = None, *, first_seqno: int = 0,
                    encoding: ColumnEncoding | None = None) -> Iterator[pa.RecordBatch]:
    """Write one Spark task's rows as Hudi base files; yield one metadata row per file written.

    Input batches carry the data columns plus ``_hoodie_record_key`` and ``_hoodie_partition_path``
    (and, when ``preserve_commit_metadata``, the original ``_hoodie_commit_time`` / ``_hoodie_commit_seqno``).
    Rows are written in arrival order, so a sort done by Spark before this step is kept inside each file.
    ``task`` names the Spark task attempt (the Spark layer passes it; zeros when run outside Spark);
    ``first_seqno`` is the first commit sequence number to use (a task that also merged file groups has used
    the ones before it); ``encoding``: the task's column encoding when the caller decided it
    (:func:`task_encoding`, for a task that calls this many times), else decided on the first rows.
    """
    files = _TaskFiles(spec, task or TaskIdentity())
    files.rows_seen = first_seqno
    files.encoding = encoding
    outputs: dict[str, _PartitionOutput] = {}
    markers = _DroppedMarkers()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        if spec.drop_delete_markers and IS_DELETED_FIELD in batch.schema.names:
            marked = pc.fill_null(table.column(IS_DELETED_FIELD), False)
            if pc.any(marked).as_py():
                markers.add(_with_partition_paths(spec, table.filter(marked)))
                table = table.filter(pc.invert(marked))
                if table.num_rows == 0:
                    continue
        if table.column(RECORD_KEY_COLUMN).null_count:
            raise null_key_error()
        table = _with_partition_paths(spec, table)
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
    if spec.empty_file_for_marked_partitions:
        written = {r["partition_path"] for r in files.results}
        for partition_path, empty in markers.empty_pieces.items():
            if partition_path not in written:
                files.results.append(files.open_file(partition_path, empty).close())
    markers.count_into(files.results)
    if files.results:
        yield pa.RecordBatch.from_pylist(files.results, schema=RESULT_SCHEMA)


class _DroppedMarkers:
    """The delete-marked rows one task left out, by partition path: how many (they count as the deletes of the
    partition's first file, as Hudi's create handle counts them) and a row-less piece of their columns (for the
    empty file an overwrite writes, :attr:`WriteSpec.empty_file_for_marked_partitions`)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.empty_pieces: dict[str, pa.Table] = {}

    def add(self, marked: pa.Table) -> None:
        for entry in pc.value_counts(marked.column(PARTITION_PATH_COLUMN).combine_chunks()).to_pylist():
            path = str(entry["values"])
            self.counts[path] = self.counts.get(path, 0) + int(entry["counts"])
            self.empty_pieces.setdefault(path, marked.slice(0, 0))

    def count_into(self, results: list[dict[str, Any]]) -> None:
        for partition_path, count in self.counts.items():
            row = next((r for r in results if r["partition_path"] == partition_path), None)
            if row is not None:
                row["num_deletes"] = (row.get("num_deletes") or 0) + count


def key_and_partition_values(batch: pa.RecordBatch, record_keys: Sequence[str],
                             rule: PartitionPathRule) -> pa.RecordBatch:
    """Add ``_hoodie_record_key`` and the partition value columns to a batch with Arrow (the data source's
    path; :func:`hudi_layout.spark.write_job.record_key_expr` is the Spark-expression twin of the key)."""
    table = pa.Table.from_batches([batch])

    def as_str(name: str) -> pa.ChunkedArray:
        return arrow_key_text(table.column(name))

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
        all_null = None  # all null or empty: Hudi's key generator refuses it (as record_key_expr)
        for f in record_keys:
            cond = pc.fill_null(pc.equal(as_str(f), ""), True)
            all_null = cond if all_null is None else pc.and_(all_null, cond)
        key = pc.if_else(all_null, pa.scalar(None, pa.string()), key)
    table = table.append_column(RECORD_KEY_COLUMN, key)
    for i, f in enumerate(rule.fields):
        table = table.append_column(partition_value_column(i), as_str(f))
    return table.combine_chunks().to_batches()[0] if table.num_rows else batch


def _with_partition_paths(spec: WriteSpec, table: pa.Table) -> pa.Table:
    """Add ``_hoodie_partition_path`` from the partition value columns, or keep the one the input carries
    (clustering rewrites rows of existing partitions; :func:`data_file_path` checks every path anyway)."""
    if PARTITION_PATH_COLUMN in table.column_names:
        return table
    rule = spec.partition_rule
    if rule is None or not rule.fields:
        return table.append_column(PARTITION_PATH_COLUMN, constant_strings("", table.num_rows))
    names = [partition_value_column(i) for i in range(len(rule.fields))]
    try:
        paths = rule.arrow_paths([table.column(n) for n in names])
    except HudiLayoutError as e:
        raise WriterInputError.of(e) from None
    return table.drop_columns(names).append_column(PARTITION_PATH_COLUMN, paths)


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
    num_updates: int = 0
    num_deletes: int = 0
    #: base instant of the slice a merge replaced (``None``: a new file group)
    prev_commit: str | None = None
    prev_base_file: str | None = None
    #: new keys a merged file group took (small-file packing)
    packed_inserts: int = 0

    @property
    def is_merge(self) -> bool:
        return self.prev_commit is not None

    @property
    def is_log_file(self) -> bool:
        """A Merge-on-Read log file appended to the slice of ``prev_base_file`` (else a base file)."""
        return is_log_file_name(self.file_name)

    @property
    def num_inserts(self) -> int:
        return self.packed_inserts if self.is_merge else self.num_records

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
                num_updates=int(d.get("num_updates") or 0),
                num_deletes=int(d.get("num_deletes") or 0),
                prev_commit=d.get("prev_commit"),
                prev_base_file=d.get("prev_base_file"),
                packed_inserts=int(d.get("num_inserts") or 0),
            )
        )
    return out
