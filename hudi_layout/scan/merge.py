"""Merge one Merge-on-Read file slice (base file + log files) into the rows a snapshot reader sees, in Arrow.

Pure and picklable: the Spark read path and the clustering executor call :func:`merge_file_slice` inside
executors with a :class:`MergeSpec` built once on the driver (:func:`merge_spec_for_table`). The rules are
written down in ``docs/mor-read.md``; in short:

* **Blocks used** (:func:`select_blocks`): corrupt regions are skipped; data and delete blocks count only
  when their ``INSTANT_TIME`` is a committed instant (completed, or older than the active timeline and not
  pending / rolled back), is not after the query's upper bound (time travel) and, for incremental reads,
  belongs to one of the selected instants; a rollback command block voids every block of its target instant
  in any log file of the slice; log-compacted blocks (``COMPACTED_BLOCK_TIMES``) stand in for the blocks they
  replace. Blocks are applied instant by instant in order of first appearance, each instant's blocks in file
  order (Hudi's ``BaseHoodieLogRecordReader``).
* **Merge** (:func:`merge_blocks`): the log records of a key are folded in that order, then merged with the
  base record. ``COMMIT_TIME_ORDERING``: the last write wins. ``EVENT_TIME_ORDERING``: the greatest ordering
  value wins (fields compared in order, nulls lowest, ties to the later write); a delete without an ordering
  value ("natural order", Java's ``Integer 0``) always wins and absorbs later deletes, and the next record
  starts the fold again; a record whose ``_hoodie_is_deleted`` is true is a delete that takes part in the
  ordering like any record, unless its ordering value is null: then it is a natural-order delete too
  (:func:`natural_deletes`).

Vectorised: records and deletes become one Arrow "events" table (key, sequence, ordering values, flags);
winners come from a sort by (key, ordering desc, sequence desc) and one ``take``. Base rows whose key no log
record touches are passed through without sorting.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.errors import (
    CorruptFileError,
    InvalidArgumentError,
    UnsupportedTableError,
    VanishedFileError,
)
from hudi_layout.format import meta_fields
from hudi_layout.format.decimals import quantized
from hudi_layout.format.file_naming import log_sort_key, parse_log_file_name
from hudi_layout.format.instant import ROLLBACK
from hudi_layout.format.log_blocks import (
    DeleteBatch,
    OrderingValue,
    arrow_schema_for_avro,
    decode_avro_data_block,
    decode_delete_block,
    decode_parquet_data_block,
    rollback_target,
)
from hudi_layout.format.log_format import BlockType, HeaderKey, LogBlock, read_log_file
from hudi_layout.format.merge_config import (  # noqa: F401 - re-exported: the reader's merge rules
    DEFAULT_PAYLOAD,
    OVERWRITE_WITH_LATEST_PAYLOAD,
    PAYLOAD_BASED_STRATEGY_ID,
    MergeMode,
    merge_config,
)
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.format.spark_calendar import require_stored_calendar
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.timeline import visible_at

RECORD_KEY = meta_fields.RECORD_KEY
COMMIT_TIME = meta_fields.COMMIT_TIME
IS_DELETED = "_hoodie_is_deleted"
OPERATION = "_hoodie_operation"

_DATA_BLOCKS = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)


@dataclass(frozen=True)
class InstantRange:
    """Incremental read range ``start < t <= end`` (an open side is ``None``).

    :func:`merge_spec_for_table` compares it with completion times on v8/v9 tables (Hudi 1.x's incremental
    queries, hudi-rs likewise) and with requested times on v6 tables, and turns it into the set of instants
    whose records the read returns (:attr:`MergeSpec.incremental_instants`).
    """

    start: str | None = None
    end: str | None = None

    def contains(self, instant_time: str) -> bool:
        if self.start is not None and instant_time <= self.start:
            return False
        return self.end is None or instant_time <= self.end


@dataclass(frozen=True)
class MergeSpec:
    """Everything the merge of one file slice needs; small, frozen and picklable (sent to executors).

    ``schema`` is the output schema (meta columns + data columns); ``committed_instants`` are the requested
    times of the completed write instants the query may see; instants older than ``timeline_start`` count as
    committed (archived) unless listed in ``uncommitted_instants`` (pending or rolled back).
    ``incremental_instants`` (incremental reads): only blocks of these instants are applied and only rows
    whose ``_hoodie_commit_time`` is one of them are returned.
    """

    schema: pa.Schema
    merge_mode: MergeMode
    ordering_fields: tuple[str, ...] = ()
    committed_instants: frozenset[str] = frozenset()
    timeline_start: str | None = None
    uncommitted_instants: frozenset[str] = frozenset()
    upper_bound: str | None = None
    incremental_instants: frozenset[str] | None = None
    columns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        names = set(self.schema.names)
        if RECORD_KEY not in names:
            raise InvalidArgumentError(f"merge schema has no {RECORD_KEY} column")
        if self.merge_mode is MergeMode.EVENT_TIME_ORDERING:
            if not self.ordering_fields:
                raise InvalidArgumentError("EVENT_TIME_ORDERING needs at least one ordering field")
            missing = [f for f in self.ordering_fields if f not in names]
            if missing:
                raise InvalidArgumentError(f"ordering field(s) {missing} are not columns of the table schema")
        if self.columns is not None:
            unknown = [c for c in self.columns if c not in names]
            if unknown:
                raise InvalidArgumentError(f"unknown column(s) {unknown}",
                                           hint=f"columns of this table: {', '.join(self.schema.names)}")

    def is_committed(self, instant_time: str) -> bool:
        if instant_time in self.committed_instants:
            return True
        if instant_time in self.uncommitted_instants:
            return False
        return self.timeline_start is not None and instant_time < self.timeline_start

    @property
    def work_schema(self) -> pa.Schema:
        """Columns read from the files: the requested ones plus what the merge itself needs."""
        if self.columns is None:
            return self.schema
        needed = set(self.columns) | {RECORD_KEY}
        if self.merge_mode is MergeMode.EVENT_TIME_ORDERING:
            needed |= set(self.ordering_fields)
        if IS_DELETED in self.schema.names:
            needed.add(IS_DELETED)
        if self.incremental_instants is not None:
            needed.add(COMMIT_TIME)
        return pa.schema([f for f in self.schema if f.name in needed])

    @property
    def output_schema(self) -> pa.Schema:
        if self.columns is None:
            return self.schema
        return pa.schema([self.schema.field(c) for c in self.columns])


# ---------------------------------------------------------------------------------------------- table config


def _unsupported(message: str, hint: str | None = None) -> UnsupportedTableError:
    return UnsupportedTableError(message, hint=hint or "read this table with Apache Hudi (Spark/Flink)")


def with_meta_columns(schema: pa.Schema) -> pa.Schema:
    """``schema`` with Hudi's five meta columns (strings) in front, as every base file of a table that populates
    them holds them (a data column of the same name wins)."""
    meta = [pa.field(c, pa.string()) for c in META_COLUMNS if c not in schema.names]
    return pa.schema([*meta, *schema])


def table_output_schema(avro_schema: str | Mapping[str, Any]) -> pa.Schema:
    """The five meta columns (strings) followed by the table's data columns."""
    return with_meta_columns(arrow_schema_for_avro(avro_schema, where="table schema"))


def _rolled_back_instants(table: HudiTable) -> set[str]:
    out: set[str] = set()
    for inst in table.timeline.completed().actions(ROLLBACK):
        out.update(table.timeline.read_rollback_metadata(inst).get("commitsRollback") or [])
    return out


def merge_spec_for_table(table: HudiTable, *, as_of: str | None = None, completed_by: str | None = None,
                         instant_range: InstantRange | None = None,
                         columns: Sequence[str] | None = None) -> MergeSpec:
    """A :class:`MergeSpec` for ``table`` (driver side: reads properties and the timeline once).

    ``as_of`` (time travel) keeps the completed instants *requested* at or before it, like the file-system
    view and hudi-rs, and ignores log blocks written after it. ``completed_by`` (a DataFrame pinned to the
    instants completed when it was loaded) keeps those completed by then, as the file-system view does.
    Both matter for the blocks of one log file: a version-6 writer appends each deltacommit's blocks to the
    slice's existing log file, so the file list alone cannot tell an old view from the latest (session 19:
    time travel to before such an append applied its updates and deletes). ``instant_range`` (incremental
    read) selects the completed instants whose completion time (v8/v9; requested time on v6) lies in the range.
    """
    mode, ordering = merge_config(table.properties)
    schema_text = table.schema()
    if not schema_text:
        raise CorruptFileError(f"{table.base_path}: the table has no schema (no commit, no create schema)")
    commits = table.timeline.commits_and_replaces()
    completed = commits.completed()
    first = completed.first()
    committed = frozenset(i.requested_time for i in completed
                          if (as_of is None or i.requested_time <= as_of) and visible_at(i, completed_by))
    uncommitted = frozenset({i.requested_time for i in commits.pending()} | _rolled_back_instants(table))
    incremental = None
    if instant_range is not None:
        by_completion = table.table_version >= 8
        incremental = frozenset(
            i.requested_time for i in completed if i.requested_time in committed
            and instant_range.contains((i.completion_time or i.requested_time) if by_completion
                                       else i.requested_time))
    return MergeSpec(
        schema=table_output_schema(schema_text), merge_mode=mode, ordering_fields=ordering,
        committed_instants=committed, timeline_start=first.requested_time if first else None,
        uncommitted_instants=uncommitted - committed, upper_bound=as_of, incremental_instants=incremental,
        columns=None if columns is None else tuple(columns))


# ---------------------------------------------------------------------------------------------- block selection


@dataclass(frozen=True)
class SelectedBlock:
    """A data or delete block to apply, with the log file it came from (for error messages)."""

    block: LogBlock
    source: str

    @property
    def instant_time(self) -> str:
        return self.block.header[HeaderKey.INSTANT_TIME]


@dataclass(frozen=True)
class BlockSelection:
    blocks: tuple[SelectedBlock, ...]
    rollback_targets: frozenset[str] = frozenset()
    corrupt_blocks: int = 0
    skipped_blocks: int = 0


def _check_block(block: LogBlock, source: str) -> None:
    if block.type in (BlockType.HFILE_DATA, BlockType.CDC_DATA):
        raise _unsupported(f"{source}: {block.type.name} block at offset {block.offset} in a data-table log "
                           "file is not supported")
    if (block.header.get(HeaderKey.IS_PARTIAL) or "").strip().lower() == "true":
        raise _unsupported(f"{source}: block at offset {block.offset} holds partial updates (IS_PARTIAL), "
                           "which are not supported")
    if HeaderKey.INSTANT_TIME not in block.header:
        raise CorruptFileError(f"{source}: {block.type.name} block at offset {block.offset} has no INSTANT_TIME")


def select_blocks(log_files: Sequence[tuple[str, Sequence[LogBlock]]], spec: MergeSpec) -> BlockSelection:
    """The data/delete blocks of one file slice to apply, in application order (see the module docstring).

    ``log_files`` are ``(path, blocks)`` in Hudi's log-file order.
    """
    by_instant: dict[str, list[SelectedBlock]] = {}
    order: list[str] = []
    targets: set[str] = set()
    corrupt = skipped = 0
    for source, blocks in log_files:
        for block in blocks:
            if block.type is BlockType.CORRUPTED:
                corrupt += 1
                continue
            if block.type is BlockType.COMMAND:
                targets.add(rollback_target(block, where=source))
                continue
            _check_block(block, source)
            t = block.header[HeaderKey.INSTANT_TIME]
            if (spec.upper_bound is not None and t > spec.upper_bound) or not spec.is_committed(t) \
                    or (spec.incremental_instants is not None and t not in spec.incremental_instants):
                skipped += 1
                continue
            if t not in by_instant:
                by_instant[t] = []
                order.append(t)
            by_instant[t].append(SelectedBlock(block, source))
    order = [t for t in order if t not in targets]
    # Log compaction: walk the instants from the newest; a compacted block is applied once, at the place of
    # the newest instant it replaces (the blocks it replaces are not applied), nested compactions resolve to
    # the outermost one.
    final_of: dict[str, str] = {}
    included: set[str] = set()
    chosen: list[list[SelectedBlock]] = []
    for t in reversed(order):
        group = by_instant[t]
        compacted = group[0].block.header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if compacted:
            for original in compacted.split(","):
                final_of[original.strip()] = final_of.get(t, t)
            continue
        final = final_of.get(t)
        if final is None:
            chosen.append(group)
            included.add(t)
        elif final not in included and final in by_instant:
            chosen.append(by_instant[final])
            included.add(final)
    ordered = tuple(b for group in reversed(chosen) for b in group)
    return BlockSelection(ordered, frozenset(targets), corrupt, skipped)


def ordered_log_files(log_files: Iterable[str]) -> list[str]:
    """Data log files in Hudi's order (:func:`~hudi_layout.format.file_naming.log_sort_key`); ``.cdc`` logs
    dropped."""
    paths = [p for p in log_files if not parse_log_file_name(os.path.basename(p)).is_cdc]
    return sorted(paths, key=lambda p: log_sort_key(parse_log_file_name(os.path.basename(p))))


# ---------------------------------------------------------------------------------------------- schema conform


def _conform_array(arr: pa.Array, target: pa.DataType, where: str) -> pa.Array:
    if arr.type == target:
        return arr
    if pa.types.is_struct(target) and pa.types.is_struct(arr.type):
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        children = []
        for f in target:
            idx = arr.type.get_field_index(f.name)
            child = arr.field(idx) if idx >= 0 else pa.nulls(len(arr), f.type)
            children.append(_conform_array(child, f.type, f"{where}.{f.name}"))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null())
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise UnsupportedTableError(f"{where}: type {arr.type} cannot be read as the table's {target}: {exc}",
                                    hint="only Hudi's type promotions (int->long->float->double, ...) "
                                         "are supported") from exc


def conform(table: pa.Table, schema: pa.Schema, *, where: str) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: missing ones null, others cast (type promotion)."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name).combine_chunks()
            cols.append(_conform_array(col, f.type, f"{where}: column {f.name!r}"))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


# ---------------------------------------------------------------------------------------------- delete ordering

_INCOMPARABLE = object()


def _ordering_part_value(part: OrderingValue | None, t: pa.DataType) -> Any:
    """The delete's ordering value as a value of column type ``t`` (or ``_INCOMPARABLE``).

    Values that do not fit the column exactly are floored, which keeps every ``<`` / ``=`` / ``>`` answer
    against the column's values (ties go to the delete, which is written later).
    """
    if part is None:
        return None
    kind, v = part.kind, part.value
    if pa.types.is_boolean(t):
        return v if kind == "BooleanWrapper" else _INCOMPARABLE
    if pa.types.is_integer(t):
        return v if kind in ("IntWrapper", "LongWrapper") else _INCOMPARABLE
    if pa.types.is_floating(t):
        return float(v) if kind in ("FloatWrapper", "DoubleWrapper") else _INCOMPARABLE
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return v if kind == "StringWrapper" else _INCOMPARABLE
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return v if kind == "BytesWrapper" else _INCOMPARABLE
    if pa.types.is_decimal(t):
        if kind != "DecimalWrapper":
            return _INCOMPARABLE
        return quantized(Decimal(v), t.scale, ROUND_FLOOR)
    if pa.types.is_date32(t):
        return v if kind in ("DateWrapper", "LocalDateWrapper", "IntWrapper") else _INCOMPARABLE
    if pa.types.is_timestamp(t):
        if kind not in ("TimestampMicrosWrapper", "LongWrapper"):
            return _INCOMPARABLE
        return {"s": v // 1_000_000, "ms": v // 1000, "us": v, "ns": v * 1000}[t.unit]
    if pa.types.is_time(t):
        if kind != "TimeMicrosWrapper":
            return _INCOMPARABLE
        return {"s": v // 1_000_000, "ms": v // 1000, "us": v, "ns": v * 1000}[t.unit]
    return _INCOMPARABLE


def _physical(t: pa.DataType) -> pa.DataType:
    """Integer storage type used to build temporal arrays from raw numbers."""
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return pa.int64()
    return t


def _delete_orderings(batch: DeleteBatch, types: Sequence[pa.DataType]) -> tuple[list[pa.Array], np.ndarray]:
    """Per ordering field, the deletes' values as Arrow arrays of the column's type; and the "natural" flags
    (no ordering value, Java's default ``0``, or a value that cannot be compared with the column)."""
    n = len(batch)
    natural = np.zeros(n, dtype=bool)
    values: list[list[Any]] = [[None] * n for _ in types]
    for i, ov in enumerate(batch.ordering_values):
        if ov is None or ov.is_natural:
            natural[i] = True
            continue
        parts = ov.parts
        converted = [_ordering_part_value(p, t) for p, t in zip(parts, types)] \
            if len(parts) == len(types) else [_INCOMPARABLE]
        if any(c is _INCOMPARABLE for c in converted):
            natural[i] = True
            continue
        for j, c in enumerate(converted):
            values[j][i] = c
    arrays = [pa.array(vals, type=_physical(t)).cast(t) for vals, t in zip(values, types)]
    return arrays, natural


# ---------------------------------------------------------------------------------------------- merge


@dataclass
class _Events:
    """Column chunks of the events table, appended in application order (sequence = position)."""

    keys: list[pa.Array] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    is_delete: list[np.ndarray] = field(default_factory=list)
    natural: list[np.ndarray] = field(default_factory=list)
    from_log: list[np.ndarray] = field(default_factory=list)
    deleted_flag: list[np.ndarray] = field(default_factory=list)
    ordering: list[list[pa.Array]] = field(default_factory=list)

    def add(self, keys: pa.Array, rows: np.ndarray, *, is_delete: bool, natural: np.ndarray | None,
            from_log: bool, deleted_flag: np.ndarray | None, ordering: list[pa.Array]) -> None:
        n = len(keys)
        self.keys.append(keys)
        self.rows.append(rows)
        self.is_delete.append(np.full(n, is_delete))
        self.natural.append(np.zeros(n, dtype=bool) if natural is None else natural)
        self.from_log.append(np.full(n, from_log))
        self.deleted_flag.append(np.zeros(n, dtype=bool) if deleted_flag is None else deleted_flag)
        self.ordering.append(ordering)

    def extend(self, other: _Events) -> None:
        for name in ("keys", "rows", "is_delete", "natural", "from_log", "deleted_flag", "ordering"):
            getattr(self, name).extend(getattr(other, name))

    def table(self, ordering_types: Sequence[pa.DataType]) -> pa.Table:
        n = sum(len(k) for k in self.keys)
        cols: dict[str, Any] = {
            "key": pa.concat_arrays([k.cast(pa.string()) for k in self.keys]) if self.keys
            else pa.array([], pa.string()),
            "seq": pa.array(np.arange(n, dtype=np.int64)),
            "row": pa.array(np.concatenate(self.rows) if self.rows else np.zeros(0, np.int64)),
            "is_delete": pa.array(np.concatenate(self.is_delete) if self.is_delete else np.zeros(0, bool)),
            "natural": pa.array(np.concatenate(self.natural) if self.natural else np.zeros(0, bool)),
            "from_log": pa.array(np.concatenate(self.from_log) if self.from_log else np.zeros(0, bool)),
            "deleted_flag": pa.array(np.concatenate(self.deleted_flag) if self.deleted_flag
                                     else np.zeros(0, bool)),
        }
        for j, t in enumerate(ordering_types):
            chunks = [o[j] for o in self.ordering]
            cols[f"o{j}"] = pa.concat_arrays(chunks) if chunks else pa.array([], t)
        return pa.table(cols)


def _deleted_flags(table: pa.Table) -> np.ndarray | None:
    if IS_DELETED not in table.column_names:
        return None
    col = table.column(IS_DELETED)
    if not pa.types.is_boolean(col.type):
        return None
    return np.asarray(pc.fill_null(col, False).to_numpy(zero_copy_only=False), dtype=bool)


def natural_deletes(deleted: np.ndarray | None, ordering: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray | None:
    """Records whose ``_hoodie_is_deleted`` is true and whose ordering value is null: Hudi gives them the default
    ordering value and lets such a delete win whatever the ordering values (``BufferedRecord``'s
    commit-time-ordering delete), like a delete block's entry without an ordering value. Before session 20 they
    took part in the ordering with "nulls lowest", so a stored record with any ordering value survived its
    delete (hudi-rs deletes it; an upsert of another key of the file group then stored it for every reader)."""
    if deleted is None or not deleted.any() or not ordering:
        return None
    nulls = np.ones(len(deleted), dtype=bool)
    for values in ordering:
        nulls &= np.asarray(pc.is_null(values).to_numpy(zero_copy_only=False), dtype=bool)
    return deleted & nulls


def _group_starts(sorted_keys: pa.Array) -> np.ndarray:
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1))
    return np.flatnonzero(np.concatenate([[True], np.asarray(change.to_numpy(zero_copy_only=False), bool)]))


def _winners(events: pa.Table, spec: MergeSpec) -> np.ndarray:
    """Event indices of the surviving winner of every key (deletes and deleted records removed)."""
    n = events.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    seq = events.column("seq").to_numpy()
    from_log = events.column("from_log").to_numpy(zero_copy_only=False)
    candidates = np.arange(n, dtype=np.int64)
    event_time = spec.merge_mode is MergeMode.EVENT_TIME_ORDERING
    natural = events.column("natural").to_numpy(zero_copy_only=False)
    if event_time and natural.any():
        # A natural-order delete replaces whatever came before it and absorbs the deletes that follow it; the
        # first log record after it starts the fold again. The base record only takes part when such a record
        # exists (Hudi folds the log first, then merges the base record with the result).
        idx = pc.sort_indices(events, sort_keys=[("key", "ascending"), ("seq", "ascending")]).to_numpy()
        starts = _group_starts(events.column("key").take(idx).combine_chunks())
        sizes = np.diff(np.append(starts, n))
        s_seq, s_nat, s_log = seq[idx], natural[idx], from_log[idx]
        s_record = s_log & ~events.column("is_delete").to_numpy(zero_copy_only=False)[idx]
        last_nat = np.repeat(np.maximum.reduceat(np.where(s_nat, s_seq, -1), starts), sizes)
        never = np.int64(n)
        restart = np.repeat(np.minimum.reduceat(np.where(s_record & (s_seq > last_nat), s_seq, never), starts),
                            sizes)
        keep = (last_nat < 0) | (s_seq >= restart) | (~s_log & (restart < never))
        candidates = np.sort(idx[keep])
    sub = events.take(candidates)
    sort_keys = [("key", "ascending")]
    if event_time:
        sort_keys += [(f"o{j}", "descending") for j in range(len(spec.ordering_fields))]
    sort_keys.append(("seq", "descending"))
    order = pc.sort_indices(sub, sort_keys=sort_keys).to_numpy()  # nulls sort last: lowest when descending
    starts = _group_starts(sub.column("key").take(order).combine_chunks())
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64)
    has_log = np.maximum.reduceat(from_log[candidates][order].astype(np.int8), starts).astype(bool)
    winners = candidates[order[starts]]
    is_delete = events.column("is_delete").to_numpy(zero_copy_only=False)[winners]
    flagged = events.column("deleted_flag").to_numpy(zero_copy_only=False)[winners] & has_log
    return winners[~is_delete & ~flagged]


def _base_events(base: pa.Table, touched: np.ndarray, spec: MergeSpec, events: _Events) -> None:
    rows = np.flatnonzero(touched).astype(np.int64)
    event_time = spec.merge_mode is MergeMode.EVENT_TIME_ORDERING
    needed = [RECORD_KEY, *(spec.ordering_fields if event_time else ()), IS_DELETED]
    sub = base.select([c for c in dict.fromkeys(needed) if c in base.column_names]).take(rows)  # not every column
    ordering = [sub.column(f).combine_chunks() for f in spec.ordering_fields] if event_time else []
    events.add(sub.column(RECORD_KEY).combine_chunks(), rows, is_delete=False, natural=None, from_log=False,
               deleted_flag=_deleted_flags(sub), ordering=ordering)


def _decode_data(sb: SelectedBlock, work: pa.Schema) -> pa.Table:
    block = sb.block
    if block.type is BlockType.AVRO_DATA:
        table = decode_avro_data_block(block, where=sb.source)
    else:
        table = decode_parquet_data_block(block, columns=[*work.names, OPERATION], where=sb.source)
    if OPERATION in table.column_names:
        raise _unsupported(f"{sb.source}: block at offset {block.offset} carries {OPERATION} "
                           "(changelog mode), which is not supported")
    return conform(table, work, where=f"{sb.source} (block at offset {block.offset})")


def _first_copies(base_keys: pa.ChunkedArray | pa.Array, touched: np.ndarray) -> np.ndarray:
    """``touched`` (base rows whose key a log record names) narrowed to the first stored copy of each key: a
    base file may hold a key twice (plain inserts allow duplicates), and Hudi's file-group reader hands a log
    record to the first base record of its key only (it takes the record out of its map of log records), so
    a later copy is read as stored. hudi-rs reads it the same way; before session 22 our merge folded every
    copy into one row (the probe's ``edge2.py``: hudi-rs read ``a6, a7`` where we read ``a7``)."""
    rows = np.flatnonzero(touched)
    if len(rows) < 2:
        return touched
    keys = base_keys.take(pa.array(rows))
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    if len(first) == len(rows):
        return touched
    out = np.zeros_like(touched)
    out[rows[first]] = True
    return out


@dataclass(frozen=True)
class _LogSide:
    """The selected log blocks of a slice, decoded once: their data records (``rows``, work schema, in log
    order) and their events (``row``: the record's position in ``rows``, -1 for a delete block's entry)."""

    rows: pa.Table
    events: pa.Table
    keys: pa.Array  # the distinct record keys the logs name


def _log_side(blocks: Sequence[SelectedBlock], spec: MergeSpec) -> _LogSide | None:
    """``None`` when the blocks hold no record and no delete."""
    work = spec.work_schema
    event_time = spec.merge_mode is MergeMode.EVENT_TIME_ORDERING
    ordering_types = [work.field(f).type for f in spec.ordering_fields] if event_time else []
    pieces: list[pa.Table] = []
    events = _Events()
    offset = 0
    for sb in blocks:
        if sb.block.type in _DATA_BLOCKS:
            table = _decode_data(sb, work)
            n = table.num_rows
            keys = table.column(RECORD_KEY).combine_chunks()
            ordering = [table.column(f).combine_chunks() for f in spec.ordering_fields] if event_time else []
            flags = _deleted_flags(table)
            events.add(keys, np.arange(offset, offset + n, dtype=np.int64), is_delete=False,
                       natural=natural_deletes(flags, ordering) if event_time else None,
                       from_log=True, deleted_flag=flags, ordering=ordering)
            pieces.append(table)
            offset += n
        elif sb.block.type is BlockType.DELETE:
            batch = decode_delete_block(sb.block, where=sb.source)
            if not len(batch):
                continue
            keys = pa.array(batch.record_keys, pa.string())
            if event_time:
                ordering, natural = _delete_orderings(batch, ordering_types)
            else:
                ordering, natural = [], np.zeros(len(batch), dtype=bool)
            events.add(keys, np.full(len(batch), -1, dtype=np.int64), is_delete=True, natural=natural,
                       from_log=True, deleted_flag=None, ordering=ordering)
    if not events.keys:
        return None
    table = events.table(ordering_types)
    if table.column("key").null_count:
        raise CorruptFileError(f"{blocks[0].source}: log record without {RECORD_KEY}")
    rows = pa.concat_tables(pieces) if pieces else work.empty_table()
    return _LogSide(rows, table, pc.unique(table.column("key").combine_chunks()))


def _merge_with_logs(base_rows: pa.Table, touched: np.ndarray, log: _LogSide, keys: pa.Array | None,
                     spec: MergeSpec) -> pa.Table:
    """The merged rows of ``base_rows`` (a chunk of the base file; ``touched``: its rows that meet log records)
    and of the log events of ``keys`` (``None``: every log key): the base rows that stay, in file order, then
    the winning log records, in log order (a filter of the base rows and a take of the few log rows, not a
    take of every row)."""
    event_time = spec.merge_mode is MergeMode.EVENT_TIME_ORDERING
    ordering_types = [spec.work_schema.field(f).type for f in spec.ordering_fields] if event_time else []
    base_events = _Events()
    _base_events(base_rows, touched, spec, base_events)
    logged = log.events if keys is None else log.events.filter(pc.is_in(log.events.column("key"), value_set=keys))
    table = pa.concat_tables([base_events.table(ordering_types), logged], promote_options="none")
    table = table.set_column(table.schema.get_field_index("seq"), "seq",
                             pa.array(np.arange(table.num_rows, dtype=np.int64)))
    winners = _winners(table, spec)
    from_log = table.column("from_log").to_numpy(zero_copy_only=False)[winners]
    rows = table.column("row").to_numpy()[winners]
    keep_base = ~touched
    keep_base[rows[~from_log]] = True
    out = base_rows.filter(pa.array(keep_base)) if base_rows.num_rows else base_rows
    won_log = np.sort(rows[from_log])
    if len(won_log):
        out = pa.concat_tables([out, log.rows.take(pa.array(won_log))])
    return out


def iter_merge_blocks(base_chunks: Iterable[pa.Table], blocks: Sequence[SelectedBlock], spec: MergeSpec
                      ) -> Iterator[pa.Table]:
    """Merge a base file, read as consecutive chunks of rows (any column subset), with the selected log
    blocks: one merged table per chunk (the chunk's base rows that stay, then the winning log records of the
    keys it holds), then one of the log records whose key no base row holds. At least one table is yielded.

    Only the log blocks and one chunk are held at a time, so a compaction or a read of a large slice needs
    memory for its logs and one chunk, not the whole base file. A key's events are all in one place: the
    first stored copy of the key claims its log records (Hudi's file-group reader takes them out of its map
    there, :func:`_first_copies`), later copies, in this chunk or a later one, are read as stored. Row order
    aside, every chunking gives the same rows (``tests/unit/scan/test_merge.py``)."""
    work = spec.work_schema
    log = _log_side(blocks, spec)
    claimed: list[pa.Array] = []
    yielded = False
    for chunk in base_chunks:
        base_rows = conform(chunk, work, where="base file")
        if log is None or not base_rows.num_rows:
            yielded = True
            yield _finish(base_rows, spec)
            continue
        base_keys = base_rows.column(RECORD_KEY)
        touched = np.asarray(pc.is_in(base_keys, value_set=log.keys).to_numpy(zero_copy_only=False), dtype=bool)
        if claimed and touched.any():
            taken = pa.concat_arrays(claimed)
            touched &= ~np.asarray(pc.is_in(base_keys, value_set=taken).to_numpy(zero_copy_only=False), dtype=bool)
        touched = _first_copies(base_keys, touched)
        if not touched.any():
            yielded = True
            yield _finish(base_rows, spec)
            continue
        mine = base_keys.filter(pa.array(touched))
        mine = (mine.combine_chunks() if isinstance(mine, pa.ChunkedArray) else mine).cast(pa.string())
        claimed.append(mine)
        yielded = True
        yield _finish(_merge_with_logs(base_rows, touched, log, mine, spec), spec)
    if log is not None:
        rest = log.keys if not claimed else log.keys.filter(
            pc.invert(pc.is_in(log.keys, value_set=pa.concat_arrays(claimed))))
        if len(rest) or not yielded:
            yielded = True
            yield _finish(_merge_with_logs(work.empty_table(), np.zeros(0, dtype=bool), log,
                                           rest if claimed else None, spec), spec)
    if not yielded:
        yield _finish(work.empty_table(), spec)


def merge_blocks(base: pa.Table | None, blocks: Sequence[SelectedBlock], spec: MergeSpec) -> pa.Table:
    """Merge a base file's rows (already read, any column subset) with the selected log blocks: the base rows
    that stay, then the winning log records (:func:`iter_merge_blocks` with the whole file as one chunk)."""
    chunks = [base] if base is not None else []
    parts = list(iter_merge_blocks(chunks, blocks, spec))
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _finish(rows: pa.Table, spec: MergeSpec) -> pa.Table:
    if spec.incremental_instants is not None and rows.num_rows:
        wanted = pa.array(sorted(spec.incremental_instants), pa.string())
        rows = rows.filter(pc.is_in(rows.column(COMMIT_TIME), value_set=wanted))
    return rows.select(spec.output_schema.names)


#: rows of a base file merged at a time by :func:`iter_merge_file_slice` (reads and compactions): the memory
#: a slice's merge needs is its logs' records plus about this many base rows, whatever the file's size (about
#: a row group of our writer's; pyarrow buffers the row groups a batch spans: at 1M rows of the conn data a
#: merge peaked at 1.3 GB of Arrow memory, at this size 0.33 GB, and ran faster)
MERGE_CHUNK_ROWS = 131_072


def _open_base_file(path: str, spec: MergeSpec) -> tuple[pq.ParquetFile, list[str]]:
    """The base file opened, and the columns the merge needs that it holds (any missing ones are added as
    nulls later)."""
    try:
        pf = pq.ParquetFile(path)
        require_stored_calendar(pf.metadata, path, "merge log records into")
        return pf, [c for c in spec.work_schema.names if c in pf.schema_arrow.names]
    except FileNotFoundError as exc:
        raise VanishedFileError(f"{path}: base file vanished (cleaned or replaced while reading?)") from exc
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptFileError(f"{path}: cannot read base file: {exc}") from exc


def read_base_file(path: str, spec: MergeSpec) -> pa.Table:
    """The base file's columns that the merge needs (any missing ones are added as nulls later)."""
    pf, wanted = _open_base_file(path, spec)
    try:
        return pf.read(columns=wanted)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptFileError(f"{path}: cannot read base file: {exc}") from exc


def _base_file_chunks(path: str, spec: MergeSpec, chunk_rows: int) -> Iterator[pa.Table]:
    pf, wanted = _open_base_file(path, spec)
    with pf:
        try:
            for batch in pf.iter_batches(batch_size=chunk_rows, columns=wanted):
                yield pa.Table.from_batches([batch])
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptFileError(f"{path}: cannot read base file: {exc}") from exc


def _selected_blocks(log_files: Sequence[str], spec: MergeSpec) -> Sequence[SelectedBlock]:
    logs: list[tuple[str, Sequence[LogBlock]]] = []
    for path in ordered_log_files(log_files):
        try:
            logs.append((path, read_log_file(path)))
        except FileNotFoundError as exc:
            raise VanishedFileError(f"{path}: log file vanished (cleaned while reading?)") from exc
    return select_blocks(logs, spec).blocks


def merge_file_slice(base_file: str | None, log_files: Sequence[str], *, spec: MergeSpec) -> pa.Table:
    """The merged rows of one file slice as an Arrow table with ``spec.output_schema``.

    ``base_file`` is the slice's base file (``None`` or ``""`` for a log-only slice); ``log_files`` its log files
    (any order; ``.cdc`` files are ignored).
    """
    blocks = _selected_blocks(log_files, spec)
    base = read_base_file(base_file, spec) if base_file else None
    return merge_blocks(base, blocks, spec)


def iter_merge_file_slice(base_file: str | None, log_files: Sequence[str], *, spec: MergeSpec,
                          chunk_rows: int = MERGE_CHUNK_ROWS) -> Iterator[pa.Table]:
    """The merged rows of one file slice as a stream of Arrow tables (``spec.output_schema``), the base file
    read ``chunk_rows`` rows at a time (:func:`iter_merge_blocks`); the same rows as :func:`merge_file_slice`."""
    blocks = _selected_blocks(log_files, spec)
    chunks = _base_file_chunks(base_file, spec, chunk_rows) if base_file else iter(())
    yield from iter_merge_blocks(chunks, blocks, spec)
