"""Upserts and deletes, executor side: merge incoming records into one file group at a time (Merge-on-Read
groups may take a log file instead: :mod:`hudi_layout.writer.log_file_writer`).

An upsert or delete rewrites only the file groups holding a key it touches (docs/live-writes.md). The Spark
layer tags every incoming record with the base file its key lives in (:data:`MERGE_TARGET_COLUMN`, null for
a new key) and hands each task the records of a few file groups; :func:`merge_partition` then, per file group:

1. reads the tagged base file with pyarrow (all columns);
2. decides per stored row whether its incoming record applies (:func:`merge_rows`): commit-time ordering lets
   the incoming record win; event-time ordering keeps the stored row when its ordering value is larger
   (fields compared in order, nulls lowest; ties go to the incoming record, the later write); a record of
   the ``delete`` operation always wins (Java's "natural order" delete); a record whose
   ``_hoodie_is_deleted`` is true is a delete that takes part in the ordering like any record;
3. writes ONE new base file with the same file id, new write token and the new instant, **rows in their
   stored order** (so a clustered file group stays clustered), deleted rows left out. Rows the commit did not
   change keep ``_hoodie_commit_time`` / ``_hoodie_commit_seqno``; changed rows get the instant and a fresh
   sequence number. Exact column statistics come from the same writer as every base file.

A file group whose records all lose (event time) or name absent keys is not rewritten. A file group whose rows
are all deleted gets an empty base file (its latest slice must hold no rows). New keys go through the
ordinary insert writer into new file groups (no small-file packing), in the same task.

Pure: no pyspark import; the Spark layer passes the task identity in.
"""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.errors import HudiLayoutError
from hudi_layout.format import meta_fields, parquet_splice
from hudi_layout.format.merge_config import MergeMode
from hudi_layout.format.spark_calendar import require_stored_calendar
from hudi_layout.writer.base_file_writer import (
    COMMIT_SEQNO_COLUMN,
    COMMIT_TIME_COLUMN,
    ENCODING_SAMPLE_ROWS,
    META_COLUMNS,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
    RESULT_SCHEMA,
    ColumnEncoding,
    OpenFile,
    TaskIdentity,
    WriterInputError,
    WriteSpec,
    base_file_name,
    check_datetimes_writable,
    choose_encoding,
    constant_strings,
    file_statistics,
    footer_options,
    hudi_footer_metadata,
    null_key_error,
    with_meta_columns,
    write_encoded_file,
    write_partition,
)
from hudi_layout.writer.log_file_writer import append_log_file, appends_logs, base_file_fits, keys_stored_once

#: base file name a record was tagged to (null: a new key, inserted)
MERGE_TARGET_COLUMN = "_hl_merge_target"
#: true when the incoming record deletes its key (the delete operation, or ``_hoodie_is_deleted``)
DELETE_FLAG_COLUMN = "_hl_delete"
FILE_NAME_COLUMN = meta_fields.FILE_NAME
#: position of a record in the incoming DataFrame (``monotonically_increasing_id``): a tie goes to the later one
SEQUENCE_COLUMN = "_hl_seq"
#: columns the tagging adds to the incoming rows; never written
WORK_COLUMNS = (MERGE_TARGET_COLUMN, DELETE_FLAG_COLUMN, SEQUENCE_COLUMN)


@dataclass(frozen=True)
class MergeRules:
    """How an incoming record meets the stored one (the table's merge mode and ordering fields)."""

    mode: MergeMode
    ordering_fields: tuple[str, ...] = ()
    #: the ``delete`` operation: its deletes win whatever the ordering values
    hard_deletes: bool = False

    @property
    def event_time(self) -> bool:
        return self.mode is MergeMode.EVENT_TIME_ORDERING and bool(self.ordering_fields)


@dataclass(frozen=True)
class MergeTarget:
    """A file group an upsert rewrites, as tagged: its latest slice (base file, and on a Merge-on-Read table the
    log files merged with it)."""

    partition_path: str
    file_id: str
    base_file_name: str
    base_file_path: str  # absolute
    base_instant: str
    #: absolute paths of the slice's log files in Hudi's order (Merge-on-Read); their rows are read merged with
    #: the base file's by the caller's :data:`SliceReader`
    log_file_paths: tuple[str, ...] = ()
    #: the requested time of a pending compaction that will rewrite this file group, or ``""``. Such a group
    #: only takes log files (they join the compaction's future slice, as Hudi's writers append to it, whatever
    #: the per-slice limit); a write that would have to rewrite it is refused (:func:`refuse_rewrite`)
    pending_compaction: str = ""

    @property
    def where(self) -> str:
        return f"{self.partition_path + '/' if self.partition_path else ''}{self.file_id}"


class SliceReader(Protocol):
    """Reads a Merge-on-Read target's slice merged (base file + log files) into the rows a snapshot reader sees,
    meta columns included, or only ``columns`` of them (the merge still reads what it needs to decide, such as
    the ordering fields); the Spark layer builds it from the table's merge rules (the writer does not merge
    logs)."""

    def __call__(self, target: MergeTarget, columns: Sequence[str] | None = None) -> pa.Table: ...


def may_append(spec: WriteSpec, target: MergeTarget) -> bool:
    """Whether this write may append a log file to ``target`` (a group under a pending compaction whatever
    its number of log files: a rewrite is no choice there)."""
    return appends_logs(spec, 0 if target.pending_compaction else len(target.log_file_paths))


def refuse_rewrite(target: MergeTarget, why: str) -> NoReturn:
    """A write would have to rewrite a file group of a pending compaction: its new base file would be named
    after an instant older than the compaction's, which would then take its place. Refused (the write is
    rolled back); ``why`` says what keeps it from taking a log file."""
    raise WriterInputError(
        f"file group {target.where} is in pending compaction {target.pending_compaction}, which only log files "
        f"may join, and this write would rewrite it ({why})", kind="UnsupportedTableError",
        hint="run hudi-layout compact on the table (it executes pending compactions first, Hudi's too), "
             "then write again")


def _why_no_log(spec: WriteSpec, target: MergeTarget, keys_once: bool) -> str:
    """Why a file group cannot take this write as a log file (the first reason, in the order they are tested)."""
    if not may_append(spec, target):
        return "the write appends no log files: it changes the table's schema, or the per-slice limit is 0"
    if not keys_once:
        return "a key of the batch is stored twice in it"
    if not base_file_fits(spec, target.base_file_path):
        return "its base file holds a column in an older type"
    return "a null ordering value, which readers rank differently"


def merged_rows(target: MergeTarget, read_slice: SliceReader | None,
                columns: Sequence[str] | None = None) -> pa.Table:
    """A Merge-on-Read target's slice read merged by ``read_slice`` (which the caller must give)."""
    if read_slice is None:
        raise WriterInputError(f"file group {target.file_id} has log files and no reader of merged slices was given")
    return read_slice(target, columns)


def merged_keys(target: MergeTarget, read_slice: SliceReader | None) -> pa.Array:
    """The record keys of a Merge-on-Read target's merged slice (the merge reads keys, ordering fields and
    ``_hoodie_is_deleted`` only, not every column)."""
    return merged_rows(target, read_slice, (RECORD_KEY_COLUMN,)).column(RECORD_KEY_COLUMN).combine_chunks()


@dataclass(frozen=True)
class MergedRows:
    """The rows of a file group's new slice (``None``: nothing changed, no new slice) and what changed."""

    table: pa.Table | None
    updated: int
    deleted: int
    #: columns whose values no row changed (every row kept, in place): their parquet chunks can be copied
    unchanged: frozenset[str] = frozenset()


def _as_numpy_bool(a: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def _conform(values: pa.Array | pa.ChunkedArray, target: pa.DataType, column: str) -> pa.Array | pa.ChunkedArray:
    if values.type == target:
        return values
    try:
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise WriterInputError(f"column {column!r}: incoming type {values.type} does not fit the stored "
                               f"{target}: {e}") from None


def java_order(values: pa.Array) -> pa.Array:
    """Ordering values as Hudi compares them (Java's ``compareTo``): floats and doubles by
    ``Double.compareTo``, where -0.0 is below 0.0 and NaN above +Infinity (all NaNs equal), as int64 keys that
    sort the same way; other types as they are. Arrow's comparisons call -0.0 and 0.0 equal and NaN neither
    greater nor equal (session 19: a stored NaN ordering value lost to an incoming 5.0; Hudi keeps it)."""
    if not pa.types.is_floating(values.type):
        return values
    doubles = np.asarray(pc.fill_null(values.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False),
                         dtype=np.float64).copy()
    doubles[np.isnan(doubles)] = np.nan  # one NaN: Java's compareTo makes every NaN equal
    bits = doubles.view(np.int64)
    keys = np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)
    return pa.array(keys, pa.int64(), mask=np.asarray(values.is_null().to_numpy(zero_copy_only=False)))


def stored_wins(stored: pa.Table, incoming: pa.Table, fields: tuple[str, ...]) -> np.ndarray:
    """Row by row: is the stored ordering value strictly greater than the incoming one? Fields compare in order
    (the next one breaks a tie), a null is lower than any value, two nulls are equal; values compare as Java
    compares them (:func:`java_order`)."""
    n = stored.num_rows
    greater = np.zeros(n, dtype=bool)
    equal_so_far = np.ones(n, dtype=bool)
    for f in fields:
        s = stored.column(f).combine_chunks()
        u = java_order(_conform(incoming.column(f).combine_chunks(), s.type, f))
        s = java_order(s)
        s_valid = _as_numpy_bool(pc.is_valid(s))
        u_valid = _as_numpy_bool(pc.is_valid(u))
        gt = _as_numpy_bool(pc.greater(s, u)) | (s_valid & ~u_valid)
        eq = _as_numpy_bool(pc.equal(s, u)) | (~s_valid & ~u_valid)
        greater |= equal_so_far & gt
        equal_so_far &= eq
    return greater


def combine_records(records: pa.Table, rules: MergeRules) -> pa.Table:
    """One record per ``(partition path, key)``: the largest ordering value (fields in order, nulls lowest), a tie
    to the larger :data:`SEQUENCE_COLUMN` (the later record). Hudi's ``hoodie.combine.before.upsert``."""
    if records.num_rows <= 1:
        return records
    records = _after_natural_deletes(records, rules)
    sort_keys = [(PARTITION_PATH_COLUMN, "ascending"), (RECORD_KEY_COLUMN, "ascending")]
    keyed = records
    for i, f in enumerate(rules.ordering_fields):  # compared as Java compares them (java_order)
        name = f"__ordering_{i}"
        keyed = keyed.append_column(name, java_order(records.column(f).combine_chunks()))
        sort_keys.append((name, "descending"))
    if SEQUENCE_COLUMN in records.column_names:
        sort_keys.append((SEQUENCE_COLUMN, "descending"))
    order = pc.sort_indices(keyed, sort_keys=sort_keys)  # nulls last: the lowest when descending
    ordered = records.take(order)
    keys = ordered.column(RECORD_KEY_COLUMN).combine_chunks()
    parts = ordered.column(PARTITION_PATH_COLUMN).combine_chunks()
    n = ordered.num_rows
    if keys.null_count or parts.null_count:  # a null never equals its neighbour: refuse rather than guess
        raise ValueError("combine_records: a record key or partition path is null")
    changed = pc.or_(pc.not_equal(keys.slice(1), keys.slice(0, n - 1)),
                     pc.not_equal(parts.slice(1), parts.slice(0, n - 1)))
    first = np.concatenate([[True], _as_numpy_bool(changed)])
    return ordered.filter(pa.array(first)) if not first.all() else ordered


def natural_delete_mask(records: pa.Table, rules: MergeRules) -> np.ndarray | None:
    """Event-time merges: the records that are deletes (:data:`DELETE_FLAG_COLUMN`) with a null ordering value.
    Hudi gives them the default ordering value and such a delete wins whatever the other record's ordering
    value (the read path's rule, ``scan.merge.natural_deletes``); ``None`` when there is none."""
    if not rules.event_time or DELETE_FLAG_COLUMN not in records.column_names or \
            any(f not in records.column_names for f in rules.ordering_fields):
        return None
    mask = _as_numpy_bool(records.column(DELETE_FLAG_COLUMN))
    if not mask.any():
        return None
    for f in rules.ordering_fields:
        mask &= _as_numpy_bool(pc.is_null(records.column(f)))
    return mask if mask.any() else None


def _after_natural_deletes(records: pa.Table, rules: MergeRules) -> pa.Table:
    """The records of a batch that still count once its natural deletes (:func:`natural_delete_mask`) are
    applied in batch order, as the read path folds a key's log records: a natural delete discards every record
    of its key before it and the deletes after it, up to the next record, which starts the comparison again;
    with no record after it, the natural delete is the key's only record left."""
    natural = natural_delete_mask(records, rules)
    if natural is None or SEQUENCE_COLUMN not in records.column_names:
        return records
    composite = pc.binary_join_element_wise(records.column(PARTITION_PATH_COLUMN).cast(pa.string()),
                                            records.column(RECORD_KEY_COLUMN).cast(pa.string()), "\x00")
    encoded = pc.dictionary_encode(composite.combine_chunks() if isinstance(composite, pa.ChunkedArray)
                                   else composite)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    groups = len(encoded.dictionary)
    seq = np.asarray(records.column(SEQUENCE_COLUMN).to_numpy(), dtype=np.int64)
    last = np.full(groups, -1, dtype=np.int64)
    np.maximum.at(last, codes[natural], seq[natural])
    never = np.iinfo(np.int64).max
    restart = np.full(groups, never, dtype=np.int64)
    record = ~_as_numpy_bool(records.column(DELETE_FLAG_COLUMN))
    after = record & (seq > last[codes])
    np.minimum.at(restart, codes[after], seq[after])
    keep = (last[codes] < 0) | (seq >= restart[codes]) | ((restart[codes] == never) & (seq == last[codes]))
    return records if keep.all() else records.filter(pa.array(keep))


def merge_rows(stored: pa.Table, incoming: pa.Table, rules: MergeRules, *, instant_time: str, file_name: str,
               seqno_prefix: str, first_seqno: int = 0, match: np.ndarray | None = None,
               file_names_as_dictionary: bool = False) -> MergedRows:
    """Apply ``incoming`` (data columns, ``_hoodie_record_key``, :data:`DELETE_FLAG_COLUMN`; keys unique) to the
    rows of one base file ``stored`` (meta + data columns). Returns the new slice's rows in the stored order.

    Every incoming key must be in ``stored`` (the tagging put it there). A key stored twice (tables fed by
    plain inserts may hold duplicates) has every copy updated or deleted. ``match``: each stored row's incoming
    row (-1: none) when the caller has looked the keys up already (the broadcast merge), else found here.
    ``file_names_as_dictionary``: ``_hoodie_file_name`` (one value in every row) as a one-value dictionary array,
    which costs nothing to build, for a caller that writes it as such (:func:`_spliced_row`).
    """
    if incoming.num_rows == 0:
        return MergedRows(None, 0, 0)
    keys_u = incoming.column(RECORD_KEY_COLUMN).combine_chunks()
    if match is None:
        found = pc.index_in(stored.column(RECORD_KEY_COLUMN).combine_chunks(), value_set=keys_u)
        matched = _as_numpy_bool(pc.is_valid(found))
        j = np.asarray(pc.fill_null(found, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    else:
        matched = match >= 0
        j = np.where(matched, match, 0)
    absent = np.bincount(j[matched], minlength=incoming.num_rows) == 0
    if absent.any():
        missing = keys_u.filter(pa.array(absent)).slice(0, 3).to_pylist()
        raise WriterInputError(f"tagged records not found in their base file (e.g. keys {missing}); "
                               "the table changed under the write")
    deletes = _as_numpy_bool(incoming.column(DELETE_FLAG_COLUMN))
    rows = np.flatnonzero(matched)
    apply = matched.copy()
    if rules.event_time and len(rows):
        sub_s = stored.select(list(rules.ordering_fields)).take(pa.array(rows))
        sub_u = incoming.select(list(rules.ordering_fields)).take(pa.array(j[rows]))
        wins = stored_wins(sub_s, sub_u, rules.ordering_fields)
        if rules.hard_deletes:
            wins &= ~deletes[j[rows]]
        natural = natural_delete_mask(incoming, rules)
        if natural is not None:  # a delete without an ordering value wins whatever the stored one
            wins &= ~natural[j[rows]]
        apply[rows[wins]] = False
    drop = apply & deletes[j]
    replace = apply & ~deletes[j]
    n_replace, n_drop = int(replace.sum()), int(drop.sum())
    if n_replace == 0 and n_drop == 0:
        return MergedRows(None, 0, 0)
    n = stored.num_rows
    keep = ~drop
    # positions into concat(stored, replacements): a replaced row points at its incoming record
    rank = np.cumsum(replace) - 1
    idx = np.where(replace, n + rank, np.arange(n))[keep]
    take = pa.array(idx, pa.int64())
    repl_rows = pa.array(j[replace], pa.int64())
    new_seq = pc.binary_join_element_wise(
        pa.scalar(seqno_prefix, pa.string()),
        pc.cast(pa.array(np.arange(first_seqno, first_seqno + n_replace, dtype=np.int64)), pa.string()), "")
    out_rows = int(keep.sum())
    replaced_at = pa.array(np.flatnonzero(replace), pa.int64()) if n_drop == 0 else None
    unchanged: set[str] = set()
    columns: list[pa.Array | pa.ChunkedArray] = []
    for field in stored.schema:
        name = field.name
        col = stored.column(name)
        if name == COMMIT_TIME_COLUMN:
            extra: Any = constant_strings(instant_time, n_replace).cast(field.type)
        elif name == COMMIT_SEQNO_COLUMN:
            extra = new_seq.cast(field.type)
        elif name == FILE_NAME_COLUMN:
            columns.append(_constant_dictionary(file_name, out_rows, field.type) if file_names_as_dictionary
                           else constant_strings(file_name, out_rows).cast(field.type))
            continue
        elif name in (RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN) or n_replace == 0:
            columns.append(col.filter(pa.array(keep)) if n_drop else col)
            if not n_drop:
                unchanged.add(name)
            continue
        elif name in incoming.column_names:
            extra = _conform(incoming.column(name).take(repl_rows), field.type, name)
            if replaced_at is not None and _same_values(col.take(replaced_at), extra):
                columns.append(col)  # the updates left this column as it was
                unchanged.add(name)
                continue
        else:
            raise WriterInputError(f"incoming records lack column {name!r} of the stored file")
        chunks = [c for c in col.chunks] + ([extra] if isinstance(extra, pa.Array) else list(extra.chunks))
        columns.append(pa.chunked_array(chunks, field.type).take(take))
    schema = pa.schema([f.with_type(c.type) if c.type != f.type else f for f, c in zip(stored.schema, columns)])
    table = pa.Table.from_arrays(columns, schema=schema)
    return MergedRows(table, n_replace, n_drop, frozenset(unchanged))


def _constant_dictionary(value: str, n: int, value_type: pa.DataType) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)),
                                          pa.array([value], value_type))


def _same_values(stored: pa.Array | pa.ChunkedArray, incoming: pa.Array | pa.ChunkedArray) -> bool:
    """Whether the replaced rows' stored values are exactly the incoming ones (nulls at the same rows). Never
    for floating point (``-0.0 == 0.0`` while their bits differ; NaN never equals itself) or nested types."""
    t = stored.type
    if pa.types.is_floating(t) or pa.types.is_nested(t) or t != incoming.type:
        return False
    a = stored.combine_chunks() if isinstance(stored, pa.ChunkedArray) else stored
    b = incoming.combine_chunks() if isinstance(incoming, pa.ChunkedArray) else incoming
    return bool(a.equals(b))


def merge_file_group(spec: WriteSpec, target: MergeTarget, incoming: pa.Table, rules: MergeRules,
                     task: TaskIdentity, first_seqno: int = 0,
                     encodings: dict[pa.Schema, ColumnEncoding] | None = None,
                     stored: pa.Table | None = None, match: np.ndarray | None = None,
                     stored_bytes: bytes | None = None,
                     read_slice: SliceReader | None = None) -> tuple[dict[str, Any] | None, int]:
    """Rewrite one file group with ``incoming`` applied; returns its metadata row (``None``: unchanged) and the
    number of sequence numbers used. ``stored``: the base file's rows when the caller has read them (then
    ``stored_bytes``, when given, are the file's bytes they were read from); ``match``: their incoming rows
    when it has looked them up (:func:`merge_rows`).

    ``encodings`` carries the column encoding between the file groups of one task (decided on the first file of
    each schema, as the insert writer decides once per task): counting distinct values alone was a quarter of
    the time of rewriting a 1 MiB file group. When every row stays in place, the column chunks no update
    changed are copied from the old file (:func:`_spliced_row`). A Merge-on-Read target with log files is read
    merged (``read_slice``) and written whole: the new base file starts a new slice that holds the log records
    too, as Hudi's merge handle writes it inside a deltacommit.

    A Merge-on-Read write that may append (:func:`~hudi_layout.writer.log_file_writer.appends_logs`) writes a
    log file instead when the group takes one (every incoming key stored once, the base file in the table's
    types): the metadata row is the log file's."""
    if stored is None and may_append(spec, target):
        keyed = stored_key_rows(target, rules, read_slice)
        once = keys_stored_once(keyed.column(RECORD_KEY_COLUMN).combine_chunks(),
                                incoming.column(RECORD_KEY_COLUMN).combine_chunks())
        if once and base_file_fits(spec, target.base_file_path):
            records = loggable_records(target, incoming, rules, read_slice, keyed)
            if records is not None:
                return _append_log(spec, target, records, rules, task, first_seqno)
        if target.pending_compaction:
            refuse_rewrite(target, _why_no_log(spec, target, once))
    if target.pending_compaction:
        refuse_rewrite(target, _why_no_log(spec, target, True))
    if stored is None and target.log_file_paths:
        stored, stored_bytes = merged_rows(target, read_slice), None
    elif stored is None:
        stored_bytes = read_file_bytes(target.base_file_path)
        stored = pq.ParquetFile(pa.BufferReader(stored_bytes)).read()
    stored = _stored_rows(stored, f"base file {target.base_file_name}")
    evolved = _with_table_columns(stored, spec.data_schema)
    token = task.write_token
    file_name = base_file_name(target.file_id, token, spec.instant_time)
    # a file written before the schema evolved gets the table's columns: nothing of it can be copied as it is
    splice_source = stored_bytes if spec.copy_unchanged_columns and evolved is stored else None
    stored = evolved
    merged = merge_rows(stored, incoming, rules, instant_time=spec.instant_time, file_name=file_name,
                        seqno_prefix=f"{spec.instant_time}_{task.partition_id}_", first_seqno=first_seqno,
                        match=match, file_names_as_dictionary=splice_source is not None)
    if merged.table is None:
        return None, 0
    table = merged.table
    check_datetimes_writable(table, spec.datetime_rebase_mode)  # spliced columns are written too
    encoding = _group_encoding(spec, table, encodings)
    row = _spliced_row(spec, target, token, table, merged.unchanged, splice_source, encoding) \
        if splice_source is not None and merged.unchanged else None
    if row is None:
        row = _write_group_file(spec, target, token, table, encoding, "MERGE")
    row.update(num_updates=merged.updated, num_deletes=merged.deleted, prev_commit=target.base_instant,
               prev_base_file=target.base_file_name)
    return row, merged.updated


#: the merge target name of new records assigned to a small file group (``PACK_PREFIX`` + its base file name)
PACK_PREFIX = "~pack~"


def pack_file_group(spec: WriteSpec, target: MergeTarget, records: pa.Table, task: TaskIdentity,
                    first_seqno: int = 0, encodings: dict[pa.Schema, ColumnEncoding] | None = None
                    ) -> tuple[dict[str, Any], int]:
    """Small-file packing (:mod:`hudi_layout.writer.small_files`): a new base file of ``target``'s file group
    holding its stored rows, as they are, then ``records`` (new keys: data columns, ``_hoodie_record_key``,
    ``_hoodie_partition_path``; no deletes), as Hudi's merge handle writes the inserts its upsert partitioner
    assigned to a small file. Returns the metadata row (counting the records as inserts) and the sequence
    numbers used. ``target`` has no log files (a slice with logs is never small)."""
    if target.log_file_paths or target.pending_compaction:
        raise WriterInputError(f"file group {target.where} cannot take new records: it has log files or a "
                               "pending compaction")
    if records.column(RECORD_KEY_COLUMN).null_count:
        raise null_key_error()
    handle = _stored_file(target, "add records to")[0]
    stored = _with_table_columns(_stored_rows(handle.read(), f"base file {target.base_file_name}"),
                                 spec.data_schema)
    token = task.write_token
    file_name = base_file_name(target.file_id, token, spec.instant_time)
    fresh = with_meta_columns(spec, records, file_name, task.partition_id, first_seqno)
    columns = []
    for field in stored.schema:
        if field.name == FILE_NAME_COLUMN:
            columns.append(constant_strings(file_name, stored.num_rows + fresh.num_rows).cast(field.type))
            continue
        if field.name not in fresh.column_names:
            raise WriterInputError(f"incoming records lack column {field.name!r} of the stored file")
        added = _conform(fresh.column(field.name), field.type, field.name)
        chunks = list(stored.column(field.name).chunks) + (
            [added] if isinstance(added, pa.Array) else list(added.chunks))
        columns.append(pa.chunked_array(chunks, field.type))
    table = pa.Table.from_arrays(columns, schema=stored.schema)
    check_datetimes_writable(table, spec.datetime_rebase_mode)
    row = _write_group_file(spec, target, token, table, _group_encoding(spec, table, encodings), "MERGE")
    row.update(num_updates=0, num_deletes=0, num_inserts=fresh.num_rows, prev_commit=target.base_instant,
               prev_base_file=target.base_file_name)
    return row, fresh.num_rows


def _group_encoding(spec: WriteSpec, table: pa.Table, encodings: dict[pa.Schema, ColumnEncoding] | None
                    ) -> ColumnEncoding:
    """The column encoding of a file group's new base file: decided on the first file of each schema in a task
    and kept in ``encodings`` for the task's other groups (see :func:`merge_file_group`)."""
    if not table.num_rows:
        return ColumnEncoding()
    choices = {} if encodings is None else encodings
    if table.schema not in choices:
        choices[table.schema] = choose_encoding(_plain_file_names(table.slice(0, ENCODING_SAMPLE_ROWS)),
                                                spec.compression, spec.compression_min_saving)
    return choices[table.schema]


def _write_group_file(spec: WriteSpec, target: MergeTarget, token: str, table: pa.Table, encoding: ColumnEncoding,
                      io_type: str) -> dict[str, Any]:
    """``table`` written whole as the group's new base file (row groups of ``spec.parquet_row_group_rows``);
    its metadata row."""
    table = _plain_file_names(table)
    handle = OpenFile(spec, table.schema, target.partition_path, target.file_id, token, encoding, io_type=io_type)
    step = max(1, spec.parquet_row_group_rows)
    for offset in range(0, table.num_rows, step):
        handle.write(table.slice(offset, step))
    return handle.close()


def _stored_rows(stored: pa.Table, what: str) -> pa.Table:
    """A file group's stored rows without the old footer's key-value metadata (its key range, a Java writer's
    bloom filter: they describe the old file); every Hudi meta column must be there."""
    missing = [c for c in META_COLUMNS if c not in stored.column_names]
    if missing:
        raise WriterInputError(f"{what} lacks Hudi meta columns {missing}")
    return stored.replace_schema_metadata(None)


def compact_file_group(spec: WriteSpec, target: MergeTarget, merged: Iterable[pa.Table], task: TaskIdentity,
                       encodings: dict[pa.Schema, ColumnEncoding] | None = None) -> dict[str, Any]:
    """A compaction of one Merge-on-Read file slice: its rows read merged (``merged``: base file + log files,
    as a snapshot reader sees them, a chunk at a time) written as one new base file of the same file group,
    named after the compaction's instant; returns its metadata row. Only one chunk is held at a time, so a
    large slice needs memory for its logs and a chunk, not for the whole file. Every record keeps its
    ``_hoodie_commit_time`` and ``_hoodie_commit_seqno`` (a compaction moves records, it does not change
    them: incremental readers must not see them again); ``_hoodie_file_name`` names the new file. A slice whose
    every record was deleted gets an empty base file, which ends the slice as Hudi's compactor does."""
    token = task.write_token
    file_name = base_file_name(target.file_id, token, spec.instant_time)
    io_type = "MERGE" if target.base_file_path else "CREATE"
    handle: OpenFile | None = None
    empty: pa.Table | None = None
    step = max(1, spec.parquet_row_group_rows)
    held: list[pa.Table] = []  # rows not written yet: row groups of ``step`` rows, whatever the chunks' sizes
    for chunk in merged:
        table = _with_table_columns(_stored_rows(chunk, f"file slice of {target.file_id}"), spec.data_schema)
        at = table.schema.get_field_index(FILE_NAME_COLUMN)
        field = table.schema.field(at)
        table = table.set_column(at, field, constant_strings(file_name, table.num_rows).cast(field.type))
        if not table.num_rows:
            empty = table if empty is None else empty
            continue
        table = _plain_file_names(table)
        if handle is None:
            handle = OpenFile(spec, table.schema, target.partition_path, target.file_id, token,
                              _group_encoding(spec, table, encodings), io_type=io_type)
        held.append(table)
        if sum(t.num_rows for t in held) >= step:
            rows = pa.concat_tables(held)
            full = rows.num_rows - rows.num_rows % step
            for offset in range(0, full, step):
                handle.write(rows.slice(offset, step))
            held = [rows.slice(full)] if full < rows.num_rows else []
    if handle is not None:
        if held:
            handle.write(pa.concat_tables(held))
        row = handle.close()
    else:
        if empty is None:
            raise WriterInputError(f"file slice of {target.file_id}: the merge gave no rows and no schema")
        row = _write_group_file(spec, target, token, empty, ColumnEncoding(), io_type)
    row.update(num_updates=0, num_deletes=0, prev_commit=target.base_instant,
               prev_base_file=target.base_file_name or None)
    return row


def _append_log(spec: WriteSpec, target: MergeTarget, records: pa.Table, rules: MergeRules, task: TaskIdentity,
                first_seqno: int) -> tuple[dict[str, Any] | None, int]:
    """Write ``records`` (:func:`loggable_records`) as a log file of ``target``'s slice
    (:mod:`hudi_layout.writer.log_file_writer`); ``(None, 0)`` when there is none (every record lost)."""
    if records.num_rows == 0:
        return None, 0
    return append_log_file(spec, target.partition_path, target.file_id, target.base_instant,
                           target.base_file_name, records, rules.hard_deletes, task, first_seqno)


def stored_key_rows(target: MergeTarget, rules: MergeRules, read_slice: SliceReader | None) -> pa.Table:
    """The stored keys of a target, with their ordering values on event-time tables: the base file's columns,
    or the merged slice's (the merge reads only what it needs to decide)."""
    columns = (RECORD_KEY_COLUMN, *rules.ordering_fields) if rules.event_time else (RECORD_KEY_COLUMN,)
    if target.log_file_paths:
        return merged_rows(target, read_slice, columns)
    return pq.read_table(target.base_file_path, columns=list(columns))


def loggable_records(target: MergeTarget, incoming: pa.Table, rules: MergeRules,
                     read_slice: SliceReader | None, stored: pa.Table | None = None) -> pa.Table | None:
    """The records of ``incoming`` (each key stored once in ``target``) a log file of the group should hold, or
    ``None`` when the group must be rewritten instead, so that the writer, not each reader, decides the merge.

    Event-time tables only (commit-time ordering: every record wins; the ``delete`` operation: natural-order
    deletes win whatever is stored). A record that loses to the stored row by :func:`merge_rows`'s rules is left
    out: it changes no snapshot, but an incremental read over the append would return it (hudi-rs merges only
    the records of the instant range, so a stale update comes back as a change of that range). A null ordering
    value on either side (other than a delete without any, which every reader treats as a natural-order
    delete) means a rewrite: readers rank a null differently (hudi-rs as Java's default 0, ours lowest), so an
    appended record would read differently in each. ``stored``: :func:`stored_key_rows` when the caller has
    read them."""
    if not rules.event_time or rules.hard_deletes:
        return incoming
    fields = rules.ordering_fields
    if stored is None or any(f not in stored.column_names for f in fields):
        stored = stored_key_rows(target, rules, read_slice)
    at = pc.index_in(incoming.column(RECORD_KEY_COLUMN).combine_chunks().cast(pa.string()),
                     value_set=stored.column(RECORD_KEY_COLUMN).combine_chunks().cast(pa.string()))
    if at.null_count:
        raise WriterInputError("tagged records not found in their file group; the table changed under the write")
    counterpart = stored.take(at)
    natural = natural_delete_mask(incoming, rules)
    plain = ~natural if natural is not None else np.ones(incoming.num_rows, dtype=bool)
    for f in fields:
        if (_as_numpy_bool(pc.is_null(incoming.column(f))) & plain).any() or counterpart.column(f).null_count:
            return None
    wins = stored_wins(counterpart, incoming, fields) & plain
    return incoming.filter(pa.array(~wins)) if wins.any() else incoming


def _with_table_columns(stored: pa.Table, data_schema: pa.Schema | None) -> pa.Table:
    """``stored`` (a base file's rows) with the table's current data columns (docs/schema-evolution.md): a
    column added to the table after the file was written is appended, all null, and a widened column is cast
    to its new type, so the incoming records' values for them are merged, not dropped (and a delete's rewrite
    is in the table's schema too). Other columns stay as stored. ``stored`` itself when nothing differs or
    ``data_schema`` is None."""
    if data_schema is None:
        return stored
    table = stored
    for i, f in enumerate(stored.schema):
        if f.name in data_schema.names and data_schema.field(f.name).type != f.type:
            wider = data_schema.field(f.name).type
            table = table.set_column(i, f.with_type(wider), _conform(stored.column(i), wider, f.name))
    for f in data_schema:
        if f.name not in stored.schema.names:
            table = table.append_column(f.with_nullable(True), pa.nulls(stored.num_rows, f.type))
    return table


def read_file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@functools.lru_cache(maxsize=16)
def _written_codec_id(codec: str) -> int:
    """The parquet codec id pyarrow writes for ``codec`` (its ``lz4`` is LZ4_RAW, id 7, not the Hadoop LZ4)."""
    sink = io.BytesIO()
    pq.write_table(pa.table({"x": [1]}), sink, compression=codec)
    layout = parquet_splice.splice_layout(sink.getvalue())
    assert layout is not None
    return min(layout.codecs(0))


@functools.lru_cache(maxsize=16)
def _arrow_schema_value(schema: pa.Schema) -> str:
    """The footer's ``ARROW:schema`` entry as pyarrow writes it (base64 of the IPC schema message)."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def _plain_file_names(table: pa.Table) -> pa.Table:
    """``table`` with its ``_hoodie_file_name`` column (a one-value dictionary, :func:`merge_rows`) as plain
    strings: what the parquet writer is given, so the footer's Arrow schema says string."""
    at = table.schema.get_field_index(FILE_NAME_COLUMN)
    col = table.column(at)
    if not pa.types.is_dictionary(col.type):
        return table
    return table.set_column(at, table.schema.field(at).with_type(col.type.value_type), col.cast(col.type.value_type))


def _footer_statistics(layout: parquet_splice.SpliceLayout, unchanged: frozenset[str]
                       ) -> Callable[[str, pa.DataType], tuple[Any, Any, int] | None]:
    """Statistics of the columns a splice copies, from the old file's footer where they are exact (signed
    integers, strings; :func:`parquet_splice.chunk_statistics`): the copied chunks hold the same values."""
    def known(name: str, t: pa.DataType) -> tuple[Any, Any, int] | None:
        if name not in unchanged or name not in layout.names:
            return None
        if pa.types.is_signed_integer(t):
            kind = "int"
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            kind = "string"
        else:
            return None
        found = parquet_splice.chunk_statistics(layout, layout.names.index(name), kind)
        return None if found is None else (found.min, found.max, found.null_count)
    return known


def _spliced_row(spec: WriteSpec, target: MergeTarget, token: str, table: pa.Table, unchanged: frozenset[str],
                 old: bytes, encoding: ColumnEncoding) -> dict[str, Any] | None:
    """Write ``table`` (a merge's rows, all in their old places) as the file group's new slice built from the
    old file's chunks of the ``unchanged`` columns and a fresh encoding of the others (docs/parquet-splice.md);
    its metadata row, or None (nothing written) when the old file ``old`` cannot be spliced."""
    layout = parquet_splice.splice_layout(old)
    if layout is None or not _splicable(spec, table, unchanged, layout):
        return None
    stats, min_key, max_key = file_statistics(spec, table, _footer_statistics(layout, unchanged))
    spliced = _splice(spec, table, unchanged, old, layout, encoding, hudi_footer_metadata(min_key, max_key))
    if spliced is None:
        return None
    return write_encoded_file(spec, table.num_rows, target.partition_path, target.file_id, token, spliced, stats)


def _splicable(spec: WriteSpec, table: pa.Table, unchanged: frozenset[str],
               layout: parquet_splice.SpliceLayout) -> bool:
    """Whether the old file of ``layout`` can give ``table`` its ``unchanged`` columns: the same column names in
    the same order and as many rows, no nested column, at least one column to copy, and every copied chunk
    stored with this write's codec or none (the new slice is written with the table's current codec, as a
    rewrite would; a chunk the per-column choice left uncompressed may stay so)."""
    if layout.names != tuple(table.schema.names) or sum(layout.row_group_rows) != table.num_rows:
        return False
    if any(pa.types.is_nested(f.type) for f in table.schema):
        return False
    allowed = {_written_codec_id(spec.compression), _written_codec_id("none")}
    copied = [name for name in table.schema.names if name in unchanged]
    return bool(copied) and all(layout.codecs(layout.names.index(name)) <= allowed for name in copied)


def _splice(spec: WriteSpec, table: pa.Table, unchanged: frozenset[str], old: bytes,
            layout: parquet_splice.SpliceLayout, encoding: ColumnEncoding,
            footer_kv: dict[str, str]) -> parquet_splice.SplicedFile | None:
    """The parquet bytes of a splice :func:`_splicable` allowed: the fresh encoding of the changed columns with
    the old file's row groups, then :func:`parquet_splice.splice`. None when the fresh file does not line up
    with the old one (another parquet type for a changed column)."""
    # the one-value dictionary of file names is written as a dictionary page as it is (no strings built)
    fresh_table = table.select([name for name in table.schema.names if name not in unchanged])
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, fresh_table.schema,
                          **footer_options(fresh_table.schema, encoding, spec.compression)) as writer:
        offset = 0
        for rows in layout.row_group_rows:  # the old file's row groups, so chunks line up
            writer.write_table(fresh_table.slice(offset, rows), row_group_size=max(1, rows))
            offset += rows
    fresh = sink.getbuffer()
    fresh_layout = parquet_splice.splice_layout(fresh)
    if fresh_layout is None or not parquet_splice.same_columns(layout, fresh_layout):
        return None
    plain = _plain_file_names(table.slice(0, 0)).schema
    kv = [("ARROW:schema", _arrow_schema_value(plain)), *footer_kv.items()]
    return parquet_splice.splice(old, layout, fresh, fresh_layout, kv)


def merge_partition(spec: WriteSpec, batches: Iterator[pa.RecordBatch], targets: Mapping[str, MergeTarget],
                    rules: MergeRules, task: TaskIdentity | None = None,
                    read_slice: SliceReader | None = None) -> Iterator[pa.RecordBatch]:
    """One Spark task of an upsert / delete: merge the file groups whose records it received, then insert its
    new keys. Yields the metadata rows (:data:`RESULT_SCHEMA`) of every file written. Records routed to
    :data:`PACK_PREFIX` + a base file name are new keys the small-file packing assigned to that file group
    (:func:`pack_file_group`; ``targets`` holds it under that name)."""
    task = task or TaskIdentity()
    received = [b for b in batches if b.num_rows]
    inserts: list[pa.Table] = []
    by_target: dict[str, list[pa.Table]] = {}
    if received:
        # every record of a (partition, key, file group) is routed to the same task: combine them here (no extra
        # shuffle). Per file group: a key stored in two groups (plain inserts allow it) comes once per group, each
        # copy with all of the key's records, and both groups take the winner; combining across the groups kept
        # one of them and left the other group's copy unchanged.
        t = pa.Table.from_batches(received)
        new = _as_numpy_bool(pc.is_null(t.column(MERGE_TARGET_COLUMN)))
        if new.any():
            fresh = combine_records(t.filter(pa.array(new)), rules)
            fresh = fresh.filter(pa.array(~_as_numpy_bool(fresh.column(DELETE_FLAG_COLUMN))))
            if fresh.num_rows:
                inserts.append(fresh)
        if not new.all():
            tagged = t.filter(pa.array(~new))
            names = tagged.column(MERGE_TARGET_COLUMN)
            for name in pc.unique(names).to_pylist():
                by_target.setdefault(name, []).append(combine_records(tagged.filter(pc.equal(names, name)), rules))
    results: list[dict[str, Any]] = []
    seqno = 0
    encodings: dict[pa.Schema, ColumnEncoding] = {}
    for name in sorted(by_target):
        target = targets.get(name)
        if target is None:
            raise WriterInputError(f"records were tagged to {name}, which is not a file group of this write")
        records = pa.concat_tables(by_target.pop(name))
        if name.startswith(PACK_PREFIX):  # new keys assigned to a small file group
            row, used = _pack_new_records(spec, target, records, task, seqno, encodings)
        else:
            row, used = merge_file_group(spec, target, records, rules, task, seqno,
                                         encodings, read_slice=read_slice)
        seqno += used
        if row is not None:
            results.append(row)
    if inserts:
        for out in write_partition(spec, iter(b for t in inserts for b in t.to_batches()), task,
                                   first_seqno=seqno):
            results.extend(out.to_pylist())
    if results:
        yield pa.RecordBatch.from_pylist(results, schema=RESULT_SCHEMA)


def _pack_new_records(spec: WriteSpec, target: MergeTarget, records: pa.Table, task: TaskIdentity, first_seqno: int,
                      encodings: dict[pa.Schema, ColumnEncoding]) -> tuple[dict[str, Any] | None, int]:
    """:func:`pack_file_group` of the records routed to a small file group, less the deletes among them (a delete
    of a key the table does not hold writes nothing); ``(None, 0)`` when none is left."""
    kept = records.filter(pa.array(~_as_numpy_bool(records.column(DELETE_FLAG_COLUMN))))
    if not kept.num_rows:
        return None, 0
    return pack_file_group(spec, target, kept, task, first_seqno, encodings)


def insert_partition(spec: WriteSpec, batches: Iterator[pa.RecordBatch], targets: Mapping[str, MergeTarget],
                     task: TaskIdentity | None = None) -> Iterator[pa.RecordBatch]:
    """One Spark task of an ``insert`` that packs small files: the rows routed to :data:`PACK_PREFIX` + a base
    file name go into that file group (:func:`pack_file_group`), every other row into new file groups (the
    insert writer). Nothing is combined (an insert keeps every row); rows marked ``_hoodie_is_deleted`` are
    left out, as the insert writer leaves them out. Yields the metadata rows of every file written."""
    task = task or TaskIdentity()
    received = [b for b in batches if b.num_rows]
    if not received:
        return
    t = pa.Table.from_batches(received)
    names = t.column(MERGE_TARGET_COLUMN)
    new = _as_numpy_bool(pc.is_null(names))
    results: list[dict[str, Any]] = []
    seqno = 0
    encodings: dict[pa.Schema, ColumnEncoding] = {}
    if not new.all():
        packed_rows = t.filter(pa.array(~new))
        packed_names = packed_rows.column(MERGE_TARGET_COLUMN)
        for name in sorted(pc.unique(packed_names).to_pylist()):
            target = targets.get(name)
            if target is None:
                raise WriterInputError(f"records were routed to {name}, which is not a file group of this write")
            row, used = _pack_new_records(spec, target, packed_rows.filter(pc.equal(packed_names, name)), task,
                                          seqno, encodings)
            seqno += used
            if row is not None:
                results.append(row)
    if new.any():
        fresh = t.filter(pa.array(new)).drop_columns([MERGE_TARGET_COLUMN])
        for out in write_partition(spec, iter(fresh.to_batches()), task, first_seqno=seqno):
            results.extend(out.to_pylist())
    if results:
        yield pa.RecordBatch.from_pylist(results, schema=RESULT_SCHEMA)


#: stored keys looked up in one Arrow hash call (key columns of about this many rows): building the set of a
#: batch's 100,000 keys costs milliseconds, so it is paid per chunk of files, not per file
LOOKUP_CHUNK_ROWS = 2_000_000

_Item = TypeVar("_Item")


def read_key_column(path: str) -> pa.Array:
    """The ``_hoodie_record_key`` column of a base file, as stored (the file is closed on return)."""
    with pq.ParquetFile(path) as handle:
        return handle.read(columns=[RECORD_KEY_COLUMN]).column(0).combine_chunks()


def key_lookup(items: Sequence[_Item], read_keys: Callable[[_Item], pa.Array], lookup: pc.SetLookupOptions,
               chunk_rows: int = LOOKUP_CHUNK_ROWS) -> Iterator[tuple[_Item, pa.Array, np.ndarray, np.ndarray]]:
    """Look the stored keys of ``items`` (``read_keys`` of each) up in ``lookup``'s value set, one hash call per
    chunk of about ``chunk_rows`` keys (only key arrays are held, never open files). Yields, per item holding
    any of the keys: its keys as stored, the rows whose key is in the set, and each one's position in the set."""
    chunk: list[tuple[_Item, pa.Array]] = []
    held = 0
    for i, item in enumerate(items):
        stored = read_keys(item)
        chunk.append((item, stored))
        held += len(stored)
        if held < chunk_rows and i + 1 < len(items):
            continue
        where = pc.index_in(pa.concat_arrays([c[1].cast(pa.string()) for c in chunk]), options=lookup)
        hit = _as_numpy_bool(pc.is_valid(where))
        at = np.asarray(pc.fill_null(where, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
        offset = 0
        for owner, keys in chunk:
            n = len(keys)
            rows = np.flatnonzero(hit[offset:offset + n])
            if len(rows):
                yield owner, keys, rows, at[offset:offset + n][rows]
            offset += n
        chunk, held = [], 0


@dataclass(frozen=True)
class BroadcastMergeResult:
    """What one task of :func:`merge_broadcast` wrote, and which batch records it found stored."""

    written: list[dict[str, Any]]
    found: np.ndarray  # positions in the batch (int64)
    sequence_numbers_used: int


def merge_broadcast(spec: WriteSpec, targets: Sequence[MergeTarget], batch: pa.Table, rules: MergeRules,
                    task: TaskIdentity | None = None, chunk_rows: int = LOOKUP_CHUNK_ROWS,
                    read_slice: SliceReader | None = None) -> BroadcastMergeResult:
    """One task of the broadcast merge (docs/live-writes.md): every task has the whole combined ``batch`` (one
    record per partition path and key, :func:`combine_records`) and a share of the candidate file groups.

    The key columns of a chunk of candidates of one partition path are looked up in the batch's keys of that
    partition in one hash call (building the set of 100,000 keys costs milliseconds, so it is paid per chunk,
    not per file); a file holding any batch key is then read whole and rewritten with :func:`merge_file_group`
    (rows in stored order). Nothing is shuffled: the tagging and the rewrite are one pass. Returns the metadata
    rows and the batch positions found, so the caller inserts the records found nowhere. A Merge-on-Read target
    with log files is looked up and rewritten by its merged rows (``read_slice``), read once."""
    task = task or TaskIdentity()
    batch = batch.combine_chunks()  # one take per file group below: over many chunks it cost a millisecond
    keys = batch.column(RECORD_KEY_COLUMN).combine_chunks()
    rows_of = rows_by_partition(batch.column(PARTITION_PATH_COLUMN))
    by_part: dict[str, list[MergeTarget]] = {}
    for t in targets:
        by_part.setdefault(t.partition_path, []).append(t)
    written: list[dict[str, Any]] = []
    found: list[np.ndarray] = []
    seqno = 0
    encodings: dict[pa.Schema, ColumnEncoding] = {}
    merged_slices: dict[str, pa.Table] = {}  # Merge-on-Read targets of the current partition, read once
    merged_keyed: dict[str, pa.Table] = {}  # their keys (and ordering values) when they may take a log file

    def target_keys(t: MergeTarget) -> pa.Array:
        if not t.log_file_paths:
            return read_key_column(t.base_file_path)
        if may_append(spec, t):  # the keys decide; the rows are read only for a rewrite
            merged_keyed[t.file_id] = stored_key_rows(t, rules, read_slice)
            return merged_keyed[t.file_id].column(RECORD_KEY_COLUMN).combine_chunks()
        merged_slices[t.file_id] = merged_rows(t, read_slice)
        return merged_slices[t.file_id].column(RECORD_KEY_COLUMN).combine_chunks()

    for part, part_targets in by_part.items():
        rows = rows_of.get(part)
        if rows is None:
            continue
        lookup = pc.SetLookupOptions(keys.take(pa.array(rows)))
        merged_slices.clear()
        merged_keyed.clear()
        for target, stored_keys, hits, own in key_lookup(part_targets, target_keys, lookup, chunk_rows):
            wanted = np.unique(own)
            positions = rows[wanted]
            found.append(positions)
            records = None
            if may_append(spec, target) and len(hits) == len(wanted) and \
                    base_file_fits(spec, target.base_file_path):  # every found key is stored once
                records = loggable_records(target, batch.take(pa.array(positions)), rules, read_slice,
                                           merged_keyed.pop(target.file_id, None))
            if records is None and target.pending_compaction:
                refuse_rewrite(target, _why_no_log(spec, target, len(hits) == len(wanted)))
            if records is not None:
                merged_slices.pop(target.file_id, None)
                appended, used = _append_log(spec, target, records, rules, task, seqno)
                seqno += used
                if appended is not None:
                    written.append(appended)
                continue
            match = np.full(len(stored_keys), -1, dtype=np.int64)
            match[hits] = np.searchsorted(wanted, own)  # stored row -> its record in batch.take(positions)
            if target.log_file_paths:
                read = merged_slices.pop(target.file_id, None)
                stored, data = (read if read is not None else merged_rows(target, read_slice)), None
            else:
                stored, data = _base_file_rows(target, stored_keys)
            row, used = merge_file_group(spec, target, batch.take(pa.array(positions)), rules, task, seqno,
                                         encodings, stored, match, data)
            seqno += used
            if row is not None:
                written.append(row)
    positions = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return BroadcastMergeResult(written, positions, seqno)


def _stored_file(target: MergeTarget, what: str) -> tuple[pq.ParquetFile, bytes]:
    """A target's base file opened over its bytes (read whole: its rows are rewritten), refused in one line when
    Spark would read its dates in the old hybrid calendar (``what`` says what the write would do to it)."""
    data = read_file_bytes(target.base_file_path)
    handle = pq.ParquetFile(pa.BufferReader(data))
    try:
        require_stored_calendar(handle.metadata, target.base_file_path, what)
    except HudiLayoutError as e:
        raise WriterInputError.of(e) from None
    return handle, data


def _base_file_rows(target: MergeTarget, stored_keys: pa.Array) -> tuple[pa.Table, bytes]:
    """A target's base file read whole (its key column, read already, put back in place), and its bytes."""
    handle, data = _stored_file(target, "merge records into")
    rest = handle.read(columns=[c for c in handle.schema_arrow.names if c != RECORD_KEY_COLUMN])
    return rest.add_column(handle.schema_arrow.names.index(RECORD_KEY_COLUMN),
                           handle.schema_arrow.field(RECORD_KEY_COLUMN), stored_keys), data


def rows_by_partition(parts: pa.ChunkedArray | pa.Array) -> dict[str, np.ndarray]:
    """Row positions of each partition path (ascending), in one pass whatever the number of partitions."""
    encoded = pc.dictionary_encode(parts.combine_chunks())
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=len(encoded.dictionary)))
    return {part: order[end - count:end] for part, end, count in zip(
        encoded.dictionary.to_pylist(), ends, np.diff(np.concatenate([[0], ends])))}
