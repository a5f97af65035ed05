"""Merge-on-Read updates as log files: an upsert / delete appends one log file to a touched file group.

Hudi's append handle writes a file group's updates and deletes as log blocks beside its base file, so an update
costs the size of the changed records, not of the file group (docs/mor-write.md). Here, per touched file group
of a version 8 / 9 table, one new log file named after the deltacommit (``.<fileId>_<instant>.log.1_<token>``;
v8 / v9 writers start a new log file per deltacommit) holds:

* a PARQUET_DATA block of the batch's combined records (meta columns first: the instant, a fresh sequence
  number, the key, the partition path and, as Hudi's append handle writes it, the file id as
  ``_hoodie_file_name``; then the table's data columns). A record whose ``_hoodie_is_deleted`` is true is
  written as it is: readers treat it as a delete that takes part in the ordering, as they treat Hudi's;
* a DELETE block of the ``delete`` operation's keys, each with Java's default ordering value (a "natural order"
  delete: it wins whatever the stored ordering value, which is what the ``delete`` operation does).

Readers merge the block over the slice by the table's merge mode and ordering fields, the same rules an
in-place rewrite applies (:mod:`hudi_layout.writer.merge`), so both give the rows. Whether a file group may
take a log file instead of a rewrite is decided per group (:func:`appends_logs`, :func:`base_file_fits`,
:func:`keys_stored_once`, and the merge rules of :func:`hudi_layout.writer.merge.loggable_records`): the slice
holds fewer log files than the write's limit, its base file has the table's column types, and no key of the
batch is stored twice in it (Hudi's file-group reader updates only the first of two stored copies from a log
record; a rewrite updates both, as the Copy-on-Write path does).

Pure: no pyspark import.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.format.file_naming import make_log_file_name
from hudi_layout.format.log_blocks import NATURAL_ORDER, encode_delete_block, encode_parquet_data_block
from hudi_layout.table.faults import crash_point
from hudi_layout.writer.base_file_writer import (
    COMMIT_SEQNO_COLUMN,
    COMMIT_TIME_COLUMN,
    META_COLUMNS,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
    TaskIdentity,
    WriterInputError,
    WriteSpec,
    _file_row,
    check_datetimes_writable,
    constant_strings,
    create_data_file,
    file_statistics,
)

#: the first version of a log file (v8 / v9 writers start a new file per deltacommit, so every one is 1)
LOG_VERSION = 1


def appends_logs(spec: WriteSpec, log_files_in_slice: int) -> bool:
    """Whether this write may append a log file to a slice holding ``log_files_in_slice`` log files (the
    option's limit; a Copy-on-Write write has no log schema and never appends)."""
    return spec.log_block_schema is not None and log_files_in_slice < spec.max_log_files_per_slice


def base_file_fits(spec: WriteSpec, base_file_path: str) -> bool:
    """Whether a base file holds every data column of the table with the table's type: a log written in the
    table's schema over a file of an older one (a column widened since) is a merge some readers refuse (hudi-rs:
    "column has type Int32 but the table schema expects Int64"); such a group is rewritten instead."""
    if spec.data_schema is None:
        return False
    stored = pq.read_schema(base_file_path)
    for f in spec.data_schema:
        at = stored.get_field_index(f.name)
        if at < 0 or stored.field(at).type != f.type:
            return False
    return True


def keys_stored_once(stored_keys: pa.Array, incoming_keys: pa.Array) -> bool:
    """Whether every incoming key is stored, each exactly once, among ``stored_keys``. A key the tagging put
    here but absent now means the table changed under the write (an error, as for a rewrite)."""
    found = pc.index_in(stored_keys.cast(pa.string()), value_set=incoming_keys.cast(pa.string()))
    valid = np.asarray(pc.is_valid(found).to_numpy(zero_copy_only=False), dtype=bool)
    at = np.asarray(pc.fill_null(found, 0).to_numpy(zero_copy_only=False), dtype=np.int64)[valid]
    counts = np.bincount(at, minlength=len(incoming_keys))
    if (counts == 0).any():
        missing = incoming_keys.filter(pa.array(counts == 0)).slice(0, 3).to_pylist()
        raise WriterInputError(f"tagged records not found in their file group (e.g. keys {missing}); "
                               "the table changed under the write")
    return bool((counts == 1).all())


def _data_block_rows(spec: WriteSpec, incoming: pa.Table, file_id: str, task: TaskIdentity,
                     first_seqno: int) -> pa.Table:
    """The records of the data block: meta columns, then the table's data columns in its types."""
    assert spec.data_schema is not None
    n = incoming.num_rows
    seq = pc.binary_join_element_wise(
        pa.scalar(f"{spec.instant_time}_{task.partition_id}_", pa.string()),
        pc.cast(pa.array(np.arange(first_seqno, first_seqno + n, dtype=np.int64)), pa.string()), "")
    meta = {COMMIT_TIME_COLUMN: constant_strings(spec.instant_time, n), COMMIT_SEQNO_COLUMN: seq,
            RECORD_KEY_COLUMN: incoming.column(RECORD_KEY_COLUMN).cast(pa.string()),
            PARTITION_PATH_COLUMN: incoming.column(PARTITION_PATH_COLUMN).cast(pa.string()),
            "_hoodie_file_name": constant_strings(file_id, n)}
    columns: list[Any] = [meta[c] for c in META_COLUMNS]
    schema = _block_schema(spec)
    for f in schema:
        if f.name in meta:
            continue
        if f.name not in incoming.column_names:
            raise WriterInputError(f"incoming records lack column {f.name!r} of the table")
        values = incoming.column(f.name)
        if values.type != f.type:
            try:
                values = values.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise WriterInputError(f"column {f.name!r}: incoming type {values.type} does not fit the "
                                       f"table's {f.type}: {e}") from None
        columns.append(values)
    return pa.Table.from_arrays(columns, schema=schema)


def _block_schema(spec: WriteSpec) -> pa.Schema:
    """The Arrow schema of a data block's records: the meta columns (strings), then the table's data columns."""
    assert spec.data_schema is not None
    return pa.schema([pa.field(c, pa.string()) for c in META_COLUMNS]
                     + [f.with_nullable(True) for f in spec.data_schema if f.name not in META_COLUMNS])


def append_log_file(spec: WriteSpec, partition_path: str, file_id: str, base_instant: str, base_file_name: str,
                    incoming: pa.Table, deletes_only: bool, task: TaskIdentity,
                    first_seqno: int = 0) -> tuple[dict[str, Any], int]:
    """Write one log file of file group ``file_id`` holding ``incoming`` (one combined record per key, every
    key stored in the group): a data block of its records, or (``deletes_only``: the ``delete`` operation) a
    delete block of its keys. Returns the file's metadata row (:data:`~hudi_layout.writer.base_file_writer.
    RESULT_SCHEMA`: the records written, the updates and deletes, the slice's base instant and base file) and
    the sequence numbers used. The log's column statistics are those of its data records (none for a delete
    block: a file with no values, which a skipping test proves cannot match, while its deletes only remove
    rows)."""
    assert spec.log_block_schema is not None
    name = make_log_file_name(file_id, spec.instant_time, LOG_VERSION, task.write_token)
    if deletes_only:
        keys = incoming.column(RECORD_KEY_COLUMN).cast(pa.string()).to_pylist()
        payload = encode_delete_block(spec.instant_time, [(k, partition_path, NATURAL_ORDER) for k in keys],
                                      schema_text=spec.log_block_schema)
        rows = _block_schema(spec).empty_table()  # no values: statistics that prove "no row matches"
        written, updates, deleted, used = 0, 0, len(keys), 0
    else:
        rows = _data_block_rows(spec, incoming, file_id, task, first_seqno)
        check_datetimes_writable(rows, spec.datetime_rebase_mode)
        payload = encode_parquet_data_block(spec.instant_time, spec.log_block_schema, rows,
                                            compression=spec.compression)
        written = updates = used = rows.num_rows
        deleted = 0
    accs, _lo, _hi = file_statistics(spec, rows)
    stats = {c: acc.result(rows.num_rows) for c, acc in accs.items()}
    path, sink = create_data_file(spec, partition_path, name, "APPEND")
    with sink:
        half = len(payload) // 2
        sink.write(payload[:half])
        crash_point("executor.mid_file")
        sink.write(payload[half:])
    row = _file_row(partition_path, file_id, name, written, os.path.getsize(path), stats, None, None)
    row.update(num_updates=updates, num_deletes=deleted, prev_commit=base_instant, prev_base_file=base_file_name)
    return row, used
