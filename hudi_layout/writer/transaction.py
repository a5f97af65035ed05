"""One write transaction on the driver: validate, create the table, begin the instant, commit or abort.

:class:`WriteSession` is shared by :func:`hudi_layout.services.write.write` (Spark-native key expressions,
then ``mapInArrow``) and the Python data source writer: both hand it the metadata rows of the files their
executors wrote (:mod:`hudi_layout.writer.base_file_writer`, :mod:`hudi_layout.writer.merge`). It turns them into
the commit metadata and the metadata-table update, inside the commit protocol of
:mod:`hudi_layout.table.commit_protocol`.

Every check that can fail (options, schema, table config, partition fields, merge rules, partitions to delete)
runs before the first byte is written; a failure after that removes what this call created (only that) and
releases the instant.

Operations (docs/live-writes.md): ``bulk_insert`` / ``insert`` create new file groups only (their rows may evolve
the table schema: docs/schema-evolution.md); ``upsert`` / ``delete`` rewrite the file groups holding the keys
they touch (a ``commit``); ``insert_overwrite``, ``insert_overwrite_table`` and ``delete_partition`` are
``replacecommit`` s whose replaced file groups are computed under the table lock at commit time, so the result is
exactly the incoming rows whatever committed in between.

Concurrency (checked under the table lock right before the metadata table is updated): a write never changes
a file group that a pending clustering plan will rewrite (Hudi's default reject-update strategy, checked
before any file is written too); an upsert / delete fails when a file group it merged got a new slice or was
replaced since it read it; an upsert that inserted new keys fails when another (non-clustering) write
committed into the same partitions since it started (that write may have inserted the same keys).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.errors import (
    CommitConflictError,
    CorruptFileError,
    InvalidArgumentError,
    NotAHudiTableError,
    SchemaMismatchError,
    UnsupportedTableError,
)
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import (
    Action,
    datasource_operation_refusal,
    index_type_refusal,
    operation_refusal,
    require,
    require_creatable,
)
from hudi_layout.format.commit_metadata import (
    NAN_EXACT_STATS_KEY,
    WriteStat,
    commit_metadata_bytes,
    replace_commit_metadata_bytes,
    replaced_file_ids,
    requested_replace_bytes,
)
from hudi_layout.format.compaction_plan import COMPACT_OPERATION
from hudi_layout.format.file_naming import (
    try_parse_base_file_name,
    try_parse_data_log_file_name,
    try_parse_log_file_name,
)
from hudi_layout.format.merge_config import MergeMode, merge_config, payload_merge_mode
from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.format.properties import TableProperties, load_properties, metadata_table_exists, table_config_exists
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json, avro_to_arrow_schema, comparable_type
from hudi_layout.format.schema_evolution import evolve_schema
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
from hudi_layout.options import WriteOperation
from hudi_layout.table.commit_protocol import PendingWrite, abort_write, begin_write, complete_write, list_instants
from hudi_layout.table.create import create_table_layout, table_properties_for
from hudi_layout.table.faults import crash_point
from hudi_layout.table.fs_view import FileSlice, list_partitions
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock
from hudi_layout.table.paths import table_dir
from hudi_layout.writer.base_file_writer import (
    IS_DELETED_FIELD,
    META_COLUMNS,
    RECORD_KEY_COLUMN,
    WriteSpec,
    WrittenFile,
    decode_results,
    key_and_partition_values,
    partition_value_column,
)
from hudi_layout.writer.key_text import refuse_unformattable, stored_key_text_problem
from hudi_layout.writer.log_file_writer import LOG_VERSION
from hudi_layout.writer.merge import MergeRules
from hudi_layout.writer.metadata_sync import (
    compact_metadata_if_due,
    drop_metadata_table_created_by,
    drop_metadata_table_locked,
    metadata_timeline_state,
    metadata_update_hook,
    prepare_metadata_table,
    refuse_unhonoured_index_options,
    stats_columns_for,
)

log = logging.getLogger(__name__)

UNBLOCK_CLUSTERING_HINT = ("run the pending clustering first ('hudi-layout cluster PATH' resumes it, or "
                           "hudi_layout.execute_pending(path)), or roll it back ('hudi-layout cluster PATH "
                           "--abandon-pending'), then retry the write")


@dataclass(frozen=True)
class WriteResult:
    """What one write did."""

    instant_time: str
    operation: str
    files_written: int
    records_written: int
    bytes_written: int
    partitions: tuple[str, ...]
    seconds: float
    replaced_file_groups: int = 0
    #: upsert / delete: records that replaced a stored one (Merge-on-Read log files: records written to them),
    #: stored records deleted (log files: delete records written), new keys inserted, the file groups that got
    #: a new slice, and the log files appended (Merge-on-Read)
    records_updated: int = 0
    records_deleted: int = 0
    records_inserted: int = 0
    file_groups_rewritten: int = 0
    log_files_appended: int = 0
    #: upsert / delete: base files whose key column was read, and seconds spent finding the stored keys
    candidate_files: int = 0
    seconds_tagging: float = 0.0


@dataclass(frozen=True)
class TagSnapshot:
    """What an upsert / delete read before writing: the base file of every file group it merges, by
    ``(partition, fileId)``, and on a Merge-on-Read table the log files merged with it. The commit checks that
    each is still the group's latest slice."""

    merged: Mapping[tuple[str, str], str] = field(default_factory=dict)
    merged_logs: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)


def _check_columns(schema: pa.Schema, fields: list[str], what: str) -> None:
    names = set(schema.names)
    for f in fields:
        if f not in names:
            raise InvalidArgumentError(
                f"{what} field {f!r} is not a column of the DataFrame (columns: {', '.join(schema.names)})",
                hint=f"name a column of the input as the {what} field, or select / rename one before writing")


def _check_key_columns(props: TableProperties, table_schema: pa.Schema | None, df_schema: pa.Schema,
                       fields: list[str]) -> None:
    """A delete needs only the key and partition fields; their types must be the table's."""
    if table_schema is None:
        return
    for name in fields:
        if name in table_schema.names:
            want, got = comparable_type(table_schema.field(name).type), comparable_type(df_schema.field(name).type)
            if want != got:
                raise SchemaMismatchError(
                    f"column {name!r} is {got} in the data but {want} in table {props.table_name!r}",
                    hint="cast the key and partition columns to the table's types")


def table_arrow_schema(base: Path, props: TableProperties) -> pa.Schema | None:
    """The table's current schema; ``None`` for a table that has neither a commit schema nor a create schema."""
    schema_json = HudiTable(str(base)).schema()
    return avro_to_arrow_schema(schema_json) if schema_json is not None else None


def _is_table(base: Path) -> bool:
    return table_config_exists(base / ".hoodie")


@dataclass
class WriteSession:
    """One write from validation to completion; shared by :func:`write` and the Python data source."""

    base: Path
    props: TableProperties
    opts: dict[str, str]
    operation: WriteOperation
    record_keys: list[str]
    partition_fields: list[str]
    hive_style: bool
    df_schema: pa.Schema
    pending: PendingWrite
    spec: WriteSpec
    #: None when the table existed; else the folders this write created (deepest first; none when the
    #: table went into an existing empty folder)
    created_here: list[Path] | None
    started: float
    #: the table schema this write leaves (the table's, evolved by the data: new columns, widened types)
    table_schema: pa.Schema | None = None
    #: upsert / delete: how incoming records meet stored ones
    merge_rules: MergeRules | None = None
    #: delete_partition: the partition paths whose file groups the commit replaces
    partitions_to_delete: tuple[str, ...] = ()
    #: completed write instants when the instant began (concurrent commits are the others)
    completed_at_begin: frozenset[str] = frozenset()
    #: this write changes the schema of an existing table (SQL tables over it then need the new one)
    evolves_schema: bool = False
    #: the write created the metadata table: its state right after (an abort drops it again if unchanged)
    metadata_created: frozenset[tuple[str, int]] | None = None

    @classmethod
    def start(cls, path: str, options: Mapping[str, Any] | None, df_schema: pa.Schema,
              overwrite: bool, *, datasource: bool = False,
              partitions_in_data: Iterable[str] | None = None,
              datetime_rebase_mode: str = "CORRECTED") -> WriteSession:
        """Validate everything, create the table if needed, and begin the instant (driver side).

        ``df_schema`` is the Arrow schema of the rows to write (the Spark layer converts Spark schemas);
        ``overwrite`` is ``mode="overwrite"``; ``datasource`` applies the data source's limits;
        ``partitions_in_data`` are the partition paths of the rows (``delete_partition`` without
        ``hoodie.datasource.write.partitions.to.delete`` deletes those, as Hudi does);
        ``datetime_rebase_mode`` is the session's ``spark.sql.parquet.datetimeRebaseModeInWrite``
        (:attr:`WriteSpec.datetime_rebase_mode`).
        """
        started = time.time()
        given = cfg.canonical_options({k: v for k, v in (options or {}).items() if k != "path"})
        opts = cfg.resolve_options(given)
        cfg.validate_all(opts)
        operation = _write_operation(opts, overwrite, datasource=datasource)
        if datasource and cfg.RECONCILE_SCHEMA.get(opts):
            raise InvalidArgumentError(
                f"{cfg.RECONCILE_SCHEMA.key}=true is not supported by the data source writer (its tasks write "
                "the rows as they come)", hint="write with hudi_layout.write(df, path, options), which casts the "
                "batch to the table's schema first, or cast the DataFrame yourself")
        _check_write_options(opts, operation)
        _refuse_options_the_operation_ignores(given, operation)
        if datasource and cfg.WRITE_SMALL_FILE_LIMIT.get(opts) and operation is WriteOperation.INSERT:
            raise InvalidArgumentError(
                f"{cfg.WRITE_SMALL_FILE_LIMIT.key}={cfg.WRITE_SMALL_FILE_LIMIT.get(opts)} is not supported by the data "
                "source writer (its tasks write the rows as they come; packing plans the whole batch first)",
                hint="write with hudi_layout.write(df, path, options), which packs small files, or drop the option")
        base = table_dir(path)
        if base.exists() and not base.is_dir():
            raise NotAHudiTableError(f"{base} exists and is not a directory",
                                     hint="give the path of a table folder (new or existing)")
        for f in df_schema:
            arrow_to_avro_schema_json(pa.schema([f]), "check")  # unsupported types -> clear error
        if _is_table(base):
            layout, new_props = _existing_table_layout(base, df_schema, given, operation), None
            _check_merge_mode(layout.props, opts)
        else:
            if operation in (WriteOperation.DELETE, WriteOperation.DELETE_PARTITION):
                raise NotAHudiTableError(f"{base}: no Hudi table to {operation.value} from",
                                         hint="point at an existing table")
            layout, new_props = _new_table_layout(base, opts, df_schema)
        layout.rule.check_fields()
        _refuse_options_the_write_ignores(given, opts, is_mor=layout.props.is_mor)
        if datasource:  # its tasks format keys with Arrow, which cannot give every type's text (key_text)
            refuse_unformattable(df_schema, layout.record_keys, "record key")
            refuse_unformattable(df_schema, layout.partition_fields, "partition path")
        rules = _merge_rules(layout.props, opts, operation, df_schema) if operation.merges_by_key else None
        refuse_unhonoured_index_options(layout.props, given, layout.schema)  # the caller's: a defaults file
        # is shared by tables with other columns
        to_delete = _partitions_to_delete(base, opts, partitions_in_data) \
            if operation is WriteOperation.DELETE_PARTITION else ()
        keys_only = operation in (WriteOperation.DELETE, WriteOperation.DELETE_PARTITION)
        target = df_schema if keys_only else layout.schema
        # a delete's rows carry only keys; the files it rewrites hold every column of the table, in the table's
        # current schema (merge._with_table_columns: a file written before an evolution gets the new columns
        # and types, as an upsert's rewrite does), so statistics and file types follow layout.schema
        spec = WriteSpec(
            base_path=str(base), instant_time="", data_columns=tuple(target.names),
            max_file_size=cfg.MAX_FILE_SIZE.get(opts), compression=cfg.PARQUET_CODEC.get(opts),
            compression_min_saving=cfg.PARQUET_MIN_SAVING.get(opts),
            copy_unchanged_columns=cfg.MERGE_COPY_UNCHANGED.get(opts),
            stats_columns=stats_columns_for(layout.props, opts, layout.schema), partition_rule=layout.rule,
            data_schema=layout.schema, datetime_rebase_mode=datetime_rebase_mode.strip().upper(),
            drop_delete_markers=operation.drops_delete_markers and IS_DELETED_FIELD in target.names,
            empty_file_for_marked_partitions=operation.replaces_written_partitions,
            **_log_append_fields(layout.props, opts, operation, layout.schema, layout.evolves))
        # ---- nothing is written before this line; from here on, a failure undoes what this call created
        created = _missing_dirs(base) if new_props is not None else None
        props = layout.props
        try:
            if new_props is not None:
                base.mkdir(parents=True, exist_ok=True)
                create_table_layout(base, new_props)
                props = load_properties(base / ".hoodie")
            had_metadata = metadata_table_exists(base)
            props = prepare_metadata_table(base, props, opts)
            metadata_created = None if had_metadata or not metadata_table_exists(base) \
                else metadata_timeline_state(base)
            pending = _begin_instant(base, operation, merge_on_read=props.is_mor)
        except BaseException:
            if created is not None:
                _remove_created(base, created)
            raise
        completed = frozenset(i.requested_time for i in list_instants(base, props) if i.is_completed)
        spec = replace(spec, instant_time=pending.instant_time, gate=pending.file_gate)
        session = cls(base, props, opts, operation, layout.record_keys, layout.partition_fields,
                      layout.rule.hive_style, df_schema, pending, spec, created, started,
                      None if keys_only else layout.schema, rules, to_delete, completed,
                      evolves_schema=layout.evolves and not keys_only, metadata_created=metadata_created)
        if operation in (WriteOperation.INSERT_OVERWRITE_TABLE, WriteOperation.DELETE_PARTITION):
            try:  # what these replace is known now: fail before any file is written
                groups = _file_groups(base, None if operation is WriteOperation.INSERT_OVERWRITE_TABLE
                                      else list(to_delete))
                session.check_no_pending_rewrite((p, f) for p, ids in groups.items() for f in ids)
            except BaseException:
                session.abort()
                raise
        return session

    # -- checks before any file is written ------------------------------------------------------------------

    def check_no_pending_rewrite(self, file_groups: Iterable[tuple[str, str]],
                                 appended: Iterable[tuple[str, str]] = ()) -> None:
        """Reject a write that would change a file group of a pending clustering plan (Hudi's default
        reject-update strategy), or rewrite one of a pending compaction (Merge-on-Read: run it first with
        compact); called before the files are written and again at commit. ``appended``: file groups that take
        (or, before writing, may take) only a log file, which a pending compaction allows: the log joins the
        compaction's future slice, as with Hudi's writers (docs/compaction.md)."""
        groups = list(file_groups)
        _reject_pending_clustering(self.base, self.operation, [*groups, *appended])
        if self.props.is_mor:
            _reject_pending_compaction(self.base, self.operation, groups)

    # -- commit ---------------------------------------------------------------------------------------------

    def commit(self, written: list[WrittenFile] | list[dict[str, Any]], *,
               tagged: TagSnapshot | None = None) -> WriteResult:
        """Complete the instant with the files the executors wrote (``tagged``: what an upsert / delete read)."""
        crash_point("write.after_files")
        files = [w for w in written if isinstance(w, WrittenFile)] or decode_results(
            [w for w in written if isinstance(w, dict)])
        merged = dict(tagged.merged) if tagged is not None else {}
        merged_logs = dict(tagged.merged_logs) if tagged is not None else {}
        replaces = self.operation.replaces_file_groups
        with self.pending.lock:  # re-entrant: complete_write takes the same lock object
            replaced = self._replaced_file_groups(files) if replaces else {}
            touched = [(w.partition_path, w.file_id) for w in files if w.is_merge and not w.is_log_file]
            touched += [(p, f) for p, ids in replaced.items() for f in ids]
            self.check_no_pending_rewrite(touched, [(w.partition_path, w.file_id) for w in files if w.is_log_file])
            if self.operation.merges_by_key or any(w.is_merge for w in files):  # an insert may pack small files
                _check_merged_still_latest(self.base, merged, files, self.pending.instant_time, merged_logs)
            if self.operation.merges_by_key:
                inserted_into = sorted({w.partition_path for w in files if w.num_inserts or not w.is_merge})
                if inserted_into:
                    self._check_no_concurrent_writes(inserted_into)
            op = self.operation.commit_operation_type

            def payload() -> bytes:
                """Under the table lock: the schema this commit records (see :meth:`committed_schema_json`)."""
                meta = commit_metadata_for(files, self.committed_schema_json(), op, replaced if replaces else None)
                return (replace_commit_metadata_bytes if replaces else commit_metadata_bytes)(meta, self.props.version)

            if not cfg.METADATA_ENABLE.get(self.opts):  # as Hudi's writer; at the commit, so a refused write keeps it
                drop_metadata_table_locked(self.base)
            mdt_hook = metadata_update_hook(self.props, self.opts, files, replaced)
            complete_write(self.pending, payload, committed_files=[w.relative_path for w in files],
                           before_complete=mdt_hook)
        compact_metadata_if_due(self.base, self.opts)
        return WriteResult(
            instant_time=self.pending.instant_time, operation=self.operation.value, files_written=len(files),
            records_written=sum(w.num_records for w in files), bytes_written=sum(w.file_size for w in files),
            partitions=tuple(sorted({w.partition_path for w in files})), seconds=time.time() - self.started,
            replaced_file_groups=sum(len(v) for v in replaced.values()),
            records_updated=sum(w.num_updates for w in files), records_deleted=sum(w.num_deletes for w in files),
            records_inserted=sum(w.num_inserts for w in files),
            file_groups_rewritten=sum(1 for w in files if w.is_merge and not w.is_log_file),
            log_files_appended=sum(1 for w in files if w.is_log_file))

    def committed_schema_json(self) -> str:
        """The table schema this commit records: the table's latest schema evolved by this write's rows (another
        writer may have evolved it since this write started; a conflicting change fails the commit). Deletes
        (whose rows carry only keys) keep the table's schema."""
        if self.table_schema is None:  # delete / delete_partition
            current_json = HudiTable(str(self.base)).schema()
            if current_json is not None:
                return current_json
            return arrow_to_avro_schema_json(self.df_schema, self.props.table_name)
        mine = self.table_schema
        current = table_arrow_schema(self.base, self.props)
        if current is not None and current != mine:
            try:
                mine = evolve_schema(current, mine, table_name=self.props.table_name, merging=True).schema
            except SchemaMismatchError as e:
                raise CommitConflictError(f"another writer changed the table schema meanwhile: {e}",
                                          hint="retry the write against the new schema") from e
        return arrow_to_avro_schema_json(mine, self.props.table_name)

    def abort(self) -> None:
        """Roll the instant back and release it (heartbeat, file gate, markers); a table this write created
        and that never got a commit is removed again - only what this write created."""
        try:
            abort_write(self.pending)
        except Exception:  # pragma: no cover - best effort; the next writer rolls back anyway
            log.exception("could not roll back %s", self.pending.instant_time)
        if self.created_here is not None and not _has_completed_instant(self.base, self.props):
            _remove_created(self.base, self.created_here)
        elif self.metadata_created is not None and self.base.exists():
            try:
                drop_metadata_table_created_by(self.base, self.metadata_created)
            except Exception:  # pragma: no cover - best effort: the MDT it created is consistent
                log.exception("could not remove the metadata table %s created", self.pending.instant_time)

    def _replaced_file_groups(self, files: list[WrittenFile]) -> dict[str, list[str]]:
        """Under the table lock: the live file groups an overwrite / partition delete replaces."""
        if self.operation is WriteOperation.INSERT_OVERWRITE_TABLE:
            return _file_groups(self.base, None)
        if self.operation.replaces_written_partitions:
            return _file_groups(self.base, sorted({w.partition_path for w in files}))
        return _file_groups(self.base, list(self.partitions_to_delete))

    def _check_no_concurrent_writes(self, partitions: list[str]) -> None:
        """New keys were inserted into ``partitions``: fail if a write that completed after this one began wrote
        there too (it may have inserted the same keys). Clustering and compaction keep keys where they are: not a
        conflict (a compaction completing during an upsert made it fail before session 22's fix; the group-level
        check of :func:`_check_merged_still_latest` still catches a compacted group the write read)."""
        table = HudiTable(str(self.base))
        wanted = set(partitions)
        for i in table.timeline.completed().commits_and_replaces():
            if i.requested_time in self.completed_at_begin or i.requested_time == self.pending.instant_time:
                continue
            if i.action not in inst.WRITE_ACTIONS or table.timeline.is_clustering(i):
                continue
            meta = table.timeline.read_commit_metadata(i)
            if meta.get("operationType") == COMPACT_OPERATION:
                continue
            written = set((meta.get("partitionToWriteStats") or {}).keys())
            written |= {p for p, _f in replaced_file_ids(meta)}
            clash = sorted(wanted & written)
            if clash:
                raise CommitConflictError(
                    f"{self.operation.value} {self.pending.instant_time}: instant {i.requested_time} committed "
                    f"into partition {clash[0] or '(root)'!r} while this write was running; it may hold the same "
                    "new keys", hint="retry the write (it reads the new state)")


DataSourceWriteSession = WriteSession


@dataclass(frozen=True)
class _KeyLayout:
    """The table properties a write starts from, and how it keys and partitions rows."""

    props: TableProperties
    record_keys: list[str]
    partition_fields: list[str]
    rule: PartitionPathRule
    #: the table schema after this write (see :func:`hudi_layout.format.schema_evolution.evolve_schema`)
    schema: pa.Schema
    #: this write changes the schema of an existing table (a new column, a widened type)
    evolves: bool = False


def _write_operation(opts: Mapping[str, str], overwrite: bool, *, datasource: bool = False) -> WriteOperation:
    """The operation of this write: the option, or ``mode="overwrite"`` (``insert_overwrite_table``, or
    ``insert_overwrite`` when the option asks for partition overwrite)."""
    operation = cfg.OPERATION.get(opts)
    refused = (datasource_operation_refusal if datasource else operation_refusal)(operation)
    if refused is not None:
        raise refused.error()
    if not isinstance(operation, WriteOperation):
        raise InvalidArgumentError(f"unknown hoodie.datasource.write.operation {operation!r}")
    if not overwrite:
        return operation
    if operation is WriteOperation.INSERT_OVERWRITE:
        return operation
    if operation in (WriteOperation.BULK_INSERT, WriteOperation.INSERT, WriteOperation.INSERT_OVERWRITE_TABLE):
        return WriteOperation.INSERT_OVERWRITE_TABLE
    raise InvalidArgumentError(f"mode='overwrite' cannot be combined with operation {operation.value!r}",
                               hint="use mode='append' for upserts, deletes and partition deletes")


def _check_write_options(opts: Mapping[str, str], operation: WriteOperation) -> None:
    """Options hudi_layout would otherwise ignore are refused (never accepted and ignored)."""
    refused = index_type_refusal(cfg.INDEX_TYPE.get(opts))
    if refused is not None:
        raise refused.error()
    if operation in (WriteOperation.INSERT, WriteOperation.BULK_INSERT, WriteOperation.INSERT_OVERWRITE,
                     WriteOperation.INSERT_OVERWRITE_TABLE):
        for option in (cfg.COMBINE_BEFORE_INSERT, cfg.INSERT_DROP_DUPLICATES):
            if option.get(opts):
                raise InvalidArgumentError(f"{option.key}=true is not supported: inserts write every row",
                                           hint="use operation upsert to replace records with the same key")
    if operation is WriteOperation.UPSERT and not cfg.COMBINE_BEFORE_UPSERT.get(opts):
        raise InvalidArgumentError(f"{cfg.COMBINE_BEFORE_UPSERT.key}=false is not supported: an upsert combines "
                                   "incoming records with the same key first",
                                   hint="drop the option (or de-duplicate and use insert)")
    requested_merge_mode(opts)  # a bad merge mode or payload class is refused by any operation


def _refuse_options_the_operation_ignores(given: Mapping[str, Any], operation: WriteOperation) -> None:
    """Options the caller gave that this operation would take without effect (session 29's probe; a defaults
    file, shared by every write, may hold them)."""
    if cfg.PARTITIONS_TO_DELETE.get(given) and operation is not WriteOperation.DELETE_PARTITION:
        raise InvalidArgumentError(f"{cfg.PARTITIONS_TO_DELETE.key} applies to operation delete_partition only "
                                   f"(this write is {operation.value})",
                                   hint="set hoodie.datasource.write.operation=delete_partition, or drop the option")
    if cfg.WRITE_SMALL_FILE_LIMIT.get(given) and operation not in (WriteOperation.UPSERT, WriteOperation.INSERT):
        raise InvalidArgumentError(f"{cfg.WRITE_SMALL_FILE_LIMIT.key} applies to upsert and insert, which pack new "
                                   f"records into small files; {operation.value} never packs (as in Hudi)",
                                   hint="set hoodie.datasource.write.operation=insert (or upsert), or drop the "
                                        "option")


#: what makes a write use an option of the commands it can run (the refusal of such an option says it)
_WHEN_A_WRITE_USES: dict[str, str] = {
    key: (f"a write uses it only with {cfg.CLUSTERING_INLINE.key}=true or {cfg.CLUSTERING_ASYNC_ENABLED.key}=true"
          if cfg.CLUSTER in option.used_by or cfg.SERVICE in option.used_by
          else f"a write uses it only with {cfg.COMPACT_INLINE.key}=true on a Merge-on-Read table")
    for option in cfg.ALL_OPTIONS if {cfg.CLUSTER, cfg.SERVICE, cfg.COMPACT} & set(option.used_by)
    for key in (option.key, *option.aliases)}


def _refuse_options_the_write_ignores(given: Mapping[str, Any], opts: Mapping[str, str], *, is_mor: bool) -> None:
    """The caller's options this write would take without effect (session 29's options probe, F7 / F8): options
    of another command, unless the write runs it (inline or async clustering, inline compaction of a
    Merge-on-Read table), and Merge-on-Read settings on a Copy-on-Write table."""
    inline_clustering, async_clustering = cfg.CLUSTERING_INLINE.get(opts), cfg.CLUSTERING_ASYNC_ENABLED.get(opts)
    inline_compaction = is_mor and cfg.COMPACT_INLINE.get(opts)
    if not is_mor:
        for option in (cfg.MOR_MAX_LOG_FILES, cfg.COMPACT_INLINE, cfg.COMPACT_INLINE_MAX_DELTA_COMMITS):
            if option.is_given(given) and (option is not cfg.COMPACT_INLINE or option.get(given)):
                raise InvalidArgumentError(f"option {option.key} applies to Merge-on-Read tables; this table is "
                                           "Copy-on-Write (no log files)", hint="drop the option")
    for option, switch, runs in ((cfg.CLUSTERING_INLINE_MAX_COMMITS, cfg.CLUSTERING_INLINE, inline_clustering),
                                 (cfg.COMPACT_INLINE_MAX_DELTA_COMMITS, cfg.COMPACT_INLINE, inline_compaction)):
        if option.is_given(given) and not runs:
            raise InvalidArgumentError(f"option {option.key} is used only with {switch.key}=true",
                                       hint=f"set {switch.key}=true, or drop the option")
    also = ((cfg.CLUSTER,) if inline_clustering else ()) + ((cfg.SERVICE,) if async_clustering else ()) \
        + ((cfg.COMPACT,) if inline_compaction else ())
    cfg.refuse_options_unused_by(given, cfg.INGEST, also=also, note=_WHEN_A_WRITE_USES)


def requested_merge_mode(opts: Mapping[str, str]) -> MergeMode | None:
    """The merge mode the options ask for: ``hoodie.record.merge.mode``, or the mode Hudi 1.x reads
    ``hoodie.datasource.write.payload.class`` as (``format.merge_config.payload_merge_mode``); the two must
    agree. Until session 29 the payload class was checked by name only, and ``OverwriteWithLatestAvroPayload``
    (the latest write wins) created a table that merged by event time."""
    modes = []
    if cfg.MERGE_MODE.get(opts):
        try:
            modes.append(MergeMode.parse(cfg.MERGE_MODE.get(opts)))
        except ValueError as e:
            raise InvalidArgumentError(f"option {cfg.MERGE_MODE.key}={cfg.MERGE_MODE.get(opts)} is not supported: "
                                       f"{e}", hint="CUSTOM merging is not supported by hudi_layout") from None
    if cfg.PAYLOAD_CLASS.get(opts).strip():
        try:
            modes.append(payload_merge_mode(cfg.PAYLOAD_CLASS.get(opts)))
        except ValueError as e:
            raise InvalidArgumentError(f"option {cfg.PAYLOAD_CLASS.key}: {e}",
                                       hint="hudi_layout merges by the table's merge mode (COMMIT_TIME_ORDERING "
                                            "or EVENT_TIME_ORDERING)") from None
    if len(set(modes)) > 1:
        raise InvalidArgumentError(f"{cfg.MERGE_MODE.key}={modes[0].value} and {cfg.PAYLOAD_CLASS.key}="
                                   f"{cfg.PAYLOAD_CLASS.get(opts).strip()} ({modes[1].value}) disagree",
                                   hint="give one of them")
    return modes[0] if modes else None


def _check_merge_mode(props: TableProperties, opts: Mapping[str, str]) -> None:
    """A merge mode the options ask for must be the table's, whatever the operation (a later upsert merges by
    the table's)."""
    requested = requested_merge_mode(opts)
    if requested is None:
        return
    mode, _ordering = merge_config(props, hint="hudi_layout upserts tables whose merge mode is "
                                               "COMMIT_TIME_ORDERING or EVENT_TIME_ORDERING")
    if requested is not mode:
        given = cfg.MERGE_MODE.key if cfg.MERGE_MODE.get(opts) else cfg.PAYLOAD_CLASS.key
        raise InvalidArgumentError(f"{given}={cfg.MERGE_MODE.get(opts) or cfg.PAYLOAD_CLASS.get(opts).strip()} "
                                   f"({requested.value}) conflicts with the table's {mode.value}",
                                   hint="drop the option; the table decides how records merge")


def _ordering_option(opts: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(cfg.split_fields(cfg.PRECOMBINE_FIELD.get(opts)))


def _merge_rules(props: TableProperties, opts: Mapping[str, str], operation: WriteOperation,
                 df_schema: pa.Schema) -> MergeRules:
    """The table's merge mode and ordering fields; the write's options must agree with them."""
    mode, ordering = merge_config(props, hint="hudi_layout upserts tables whose merge mode is COMMIT_TIME_ORDERING "
                                              "or EVENT_TIME_ORDERING")
    given = _ordering_option(opts)
    if given and given != ordering:
        raise InvalidArgumentError(
            f"{cfg.PRECOMBINE_FIELD.key}={','.join(given)} conflicts with the table's ordering field(s) "
            f"{','.join(ordering) or '(none)'}", hint="drop the option; the table decides how records merge")
    if operation is WriteOperation.UPSERT and mode is MergeMode.EVENT_TIME_ORDERING:
        _check_columns(df_schema, list(ordering), "ordering")
    if IS_DELETED_FIELD in df_schema.names and not pa.types.is_boolean(df_schema.field(IS_DELETED_FIELD).type):
        raise InvalidArgumentError(f"column {IS_DELETED_FIELD} must be boolean (Hudi's delete marker)")
    if operation is WriteOperation.DELETE:  # its deletes win whatever the ordering values (natural order)
        return MergeRules(mode, (), hard_deletes=True)
    return MergeRules(mode, ordering if mode is MergeMode.EVENT_TIME_ORDERING else ())


def _existing_table_layout(base: Path, df_schema: pa.Schema, given: Mapping[str, Any],
                           operation: WriteOperation) -> _KeyLayout:
    """A write into an existing table: the table decides keys and partitioning; the data (and every option the
    caller gave) must match it. Inserts and upserts may evolve the schema (new nullable columns, safe
    widenings; an upsert's merge gives the stored rows it rewrites the new columns and types,
    ``merge._with_table_columns``); a delete needs only the key and partition fields."""
    props = load_properties(base / ".hoodie")
    require(props, Action.WRITE)
    cfg.refuse_table_config_conflicts(props, given, props.table_name)
    rule = PartitionPathRule(tuple(props.partition_fields), props.hive_style_partitioning,
                             props.url_encode_partitioning)
    table_schema = table_arrow_schema(base, props)
    current = table_schema if table_schema is not None else df_schema
    if operation is WriteOperation.DELETE_PARTITION:
        return _KeyLayout(props, props.record_key_fields, props.partition_fields, rule, current)
    _check_columns(df_schema, props.record_key_fields, "record key")
    _check_columns(df_schema, props.partition_fields, "partition path")
    _check_stored_key_text(base, props, rule, table_schema)
    if operation is WriteOperation.DELETE:
        _check_key_columns(props, table_schema, df_schema, [*props.record_key_fields, *props.partition_fields])
        return _KeyLayout(props, props.record_key_fields, props.partition_fields, rule, current)
    # a table without any schema yet takes the data's; otherwise the data may evolve it (new nullable
    # columns, safe widenings) and every other change is refused naming the column
    schema = df_schema if table_schema is None else evolve_schema(table_schema, df_schema,
                                                                  table_name=props.table_name).schema
    evolves = table_schema is not None and schema != table_schema
    if evolves and props.internal_schema:
        change = _schema_change(table_schema, schema)
        raise UnsupportedTableError(
            f"table {props.table_name!r} keeps Hudi's internal schema (schema on read, .hoodie/.schema), whose "
            f"history hudi_layout does not extend: this write would change the schema ({change})",
            hint="write rows of the table's current schema, or change the schema with Hudi (ALTER TABLE) first")
    if evolves and props.is_mor and table_schema is not None:
        _refuse_widening_over_log_files(base, props, table_schema, schema)
    return _KeyLayout(props, props.record_key_fields, props.partition_fields, rule, schema, evolves=evolves)


def _refuse_widening_over_log_files(base: Path, props: TableProperties, before: pa.Schema, after: pa.Schema) -> None:
    """A Merge-on-Read table whose partitions hold log files keeps their blocks in the type they were written in;
    after a widening (int -> long, ...) hudi-rs refuses to read such a block against the table's schema, the
    latest snapshot and time travel alike (the session 20 probe: "column 'qty' has type Int32 but the table
    schema expects Int64"; Hudi's Java reader promotes it). Refused while log files exist, naming the column;
    new columns are fine."""
    widened = [f"{f.name} {f.type} -> {after.field(f.name).type}" for f in before
               if f.name in after.names and after.field(f.name).type != f.type]
    if not widened:
        return
    for part in list_partitions(base):
        with os.scandir(base / part if part else base) as entries:
            for e in entries:
                if try_parse_data_log_file_name(e.name) is not None:
                    raise UnsupportedTableError(
                        f"Merge-on-Read table {props.table_name!r} holds log files written in the column types "
                        f"before this write's widening ({', '.join(widened[:3])}; e.g. "
                        f"{part + '/' if part else ''}{e.name}): hudi-rs cannot read those blocks after it",
                        hint="write the column in its current type (cast it); or first compact the table "
                             f"(hudi-layout compact {base}) and clean the old slices "
                             "(hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS, 1 version retained, after "
                             "hudi_layout.clean.grace.period.seconds)")


def _schema_change(before: pa.Schema | None, after: pa.Schema) -> str:
    """The first columns a schema change adds or retypes, as a short text for an error."""
    old = {f.name: f.type for f in before} if before is not None else {}
    changed = [f"{f.name}: {old[f.name]} -> {f.type}" if f.name in old else f"adds {f.name}"
               for f in after if old.get(f.name) != f.type]
    return ", ".join(changed[:3]) or "field properties"


def _check_stored_key_text(base: Path, props: TableProperties, rule: PartitionPathRule,
                           table_schema: pa.Schema | None) -> None:
    """A table keyed or partitioned by a timestamp must have been written with this key text
    (:mod:`hudi_layout.writer.key_text`): before session 15 ``hudi_layout.write`` used its session's zone for
    zoned timestamps and the data source wrote Arrow's text (``...000000Z``), and rows written now would be
    filed a second time beside those. One row of one base file tells (driver side, metadata-sized)."""
    fields = [*props.record_key_fields, *props.partition_fields]
    if table_schema is None or not any(f in table_schema.names and pa.types.is_timestamp(table_schema.field(f).type)
                                       for f in fields):
        return
    slices = [s for s in HudiTable(str(base)).latest_file_slices() if s.has_base_file]
    if not slices:
        return

    def key_of(row: pa.RecordBatch) -> tuple[str | None, str]:
        out = key_and_partition_values(row, props.record_key_fields, rule)
        names = [partition_value_column(i) for i in range(len(rule.fields))]
        path = rule.arrow_paths([out.column(n) for n in names])[0].as_py() if rule.fields else ""
        return out.column(RECORD_KEY_COLUMN)[0].as_py(), path

    problem = stored_key_text_problem(slices[0].base_file_path, props.record_key_fields, props.partition_fields,
                                      slices[0].partition_path, key_of)
    if problem is not None:
        raise InvalidArgumentError(
            f"table {props.table_name!r} keys or partitions rows by a timestamp and holds {problem}: it was "
            "written with timestamps in a session's local time, and rows written now would be filed a second "
            "time beside the stored ones",
            hint="rewrite the table (insert_overwrite_table of its rows into a new table) to use the UTC key text")


def _new_table_layout(base: Path, opts: Mapping[str, str], df_schema: pa.Schema
                      ) -> tuple[_KeyLayout, dict[str, str]]:
    """A first write: keys, partitioning and merge config from the options, and the ``hoodie.properties`` to
    create (validated here; nothing is written)."""
    if base.exists() and any(base.iterdir()):
        raise NotAHudiTableError(
            f"{base} exists and is not empty but has no .hoodie/hoodie.properties: not a Hudi table",
            hint="point at an existing Hudi table or at a new/empty folder")
    record_keys = cfg.split_fields(cfg.RECORD_KEY_FIELD.get(opts))
    partition_fields = cfg.split_fields(cfg.PARTITION_PATH_FIELD.get(opts))
    rule = PartitionPathRule(tuple(partition_fields), cfg.HIVE_STYLE.get(opts), cfg.URL_ENCODE_PARTITION.get(opts))
    if not record_keys:
        raise InvalidArgumentError(
            "hoodie.datasource.write.recordkey.field is required to create a table",
            hint="name the record key column(s): --record-key / hoodie.datasource.write.recordkey.field")
    _check_columns(df_schema, record_keys, "record key")
    _check_columns(df_schema, partition_fields, "partition path")
    ordering = _ordering_option(opts)
    _check_columns(df_schema, list(ordering), "ordering (precombine)")
    merge_mode = requested_merge_mode(opts)
    table_type = cfg.TABLE_TYPE.get(opts)
    require_creatable(table_type=table_type)
    table_name = cfg.TABLE_NAME.get(opts) or base.name
    props_map = table_properties_for(
        table_name=table_name, schema=df_schema, record_key_fields=record_keys,
        partition_fields=partition_fields, hive_style=rule.hive_style, url_encode=rule.url_encode,
        table_version=cfg.TABLE_VERSION.get(opts), ordering_fields=ordering, merge_mode=merge_mode,
        merge_on_read=table_type == "MERGE_ON_READ")
    props = TableProperties(props_map)
    _refuse_new_table_configs(props, opts)
    return _KeyLayout(props, record_keys, partition_fields, rule, df_schema), props_map


def _missing_dirs(base: Path) -> list[Path]:
    """``base`` and its ancestors that do not exist yet, deepest first."""
    out = []
    p = base
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def _remove_created(base: Path, created: list[Path]) -> None:
    """Undo a table creation: the topmost folder this write created, or - when ``base`` existed (it was
    empty: :func:`_new_table_layout` checks) - only what is inside it. Never what was there before."""
    if created:
        shutil.rmtree(created[-1], ignore_errors=True)
        return
    for child in base.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _refuse_new_table_configs(props: TableProperties, opts: Mapping[str, Any]) -> None:
    """Table configs (``hoodie.table.*``, the key generator) a new table would not get are refused, never stored
    beside data that does not follow them nor dropped."""
    conflicts = cfg.table_config_conflicts(props, opts)
    if conflicts:
        text = "; ".join(f"{k}={v!r}, but hudi_layout creates the table with "
                         + ("no such setting" if t == cfg.TABLE_CONFIG_NOT_SET else repr(t)) for k, t, v in conflicts)
        raise InvalidArgumentError(
            f"options hudi_layout cannot honour when creating table {props.table_name!r}: {text}",
            hint="drop these options: hudi_layout writes and maintains only tables configured as it creates them")


def _partitions_to_delete(base: Path, opts: Mapping[str, str], in_data: Iterable[str] | None
                          ) -> tuple[str, ...]:
    """``hoodie.datasource.write.partitions.to.delete`` (comma-separated partition paths, trimmed; ``*`` matches
    any characters, as in Hudi), else the partitions of the incoming rows, taken literally: until session 30 they
    went through the option's trimming and wildcards, so the rows of partition ``a*`` deleted ``ab`` and ``abc``
    too, and the rows of `` a`` deleted ``a`` (a probe). A name that matches no partition of the table is refused
    (a typo would otherwise delete nothing, silently), and so is a typed name whose untrimmed text is another
    partition than its trimmed text."""
    existing = HudiTable(str(base)).partitions()
    raw = cfg.PARTITIONS_TO_DELETE.get(opts)
    listed = cfg.split_fields(raw)
    if not listed:
        if in_data is None:
            raise InvalidArgumentError(f"delete_partition needs {cfg.PARTITIONS_TO_DELETE.key}",
                                       hint="list the partition paths to delete, comma-separated")
        from_rows = sorted(set(in_data))
        missing = [p for p in from_rows if p not in existing]
        if missing:  # rows of a partition the table does not have: nothing of theirs to delete
            shown = ", ".join(existing[:10]) or "none"
            raise InvalidArgumentError(f"partition {missing[0]!r} of the rows to delete is not a partition of the "
                                       f"table (partitions: {shown})", hint="delete_partition deletes the "
                                       "partitions the rows fall in; give rows of existing partitions")
        return tuple(from_rows)
    for typed in raw.split(","):
        name = typed.strip().strip("/")
        if typed != name and typed in existing and name in existing:
            raise InvalidArgumentError(f"partition {typed!r} to delete names two partitions, {typed!r} and "
                                       f"{name!r} (names in {cfg.PARTITIONS_TO_DELETE.key} are trimmed)",
                                       hint="give the rows of the partition to delete without the option (their "
                                            "partition is taken literally)")
    out: set[str] = set()
    for name in listed:
        pattern = name.strip().strip("/")
        if "*" in pattern:
            rx = re.compile(".*".join(re.escape(part) for part in pattern.split("*")))
            hits = [p for p in existing if rx.fullmatch(p)]
        else:
            hits = [p for p in existing if p == pattern]
        if not hits:
            shown = ", ".join(existing[:10]) or "none"
            raise InvalidArgumentError(f"partition {name!r} to delete matches no partition of the table "
                                       f"(partitions: {shown})",
                                       hint="name partitions as their folders are named under the table")
        out.update(hits)
    return tuple(sorted(out))


def _begin_instant(base: Path, operation: WriteOperation, *, merge_on_read: bool) -> PendingWrite:
    """Requested + inflight instant: a ``commit`` (a ``deltacommit`` on a Merge-on-Read table, as Hudi's writes
    there are), or a ``replacecommit`` for overwrites and partition deletes (both table types)."""
    replace = operation.replaces_file_groups
    action = inst.REPLACE_COMMIT if replace else inst.DELTA_COMMIT if merge_on_read else inst.COMMIT
    requested = b""
    if replace:
        requested = requested_replace_bytes({"operationType": operation.commit_operation_type,
                                             "extraMetadata": {}, "version": 1})
    return begin_write(base, action, requested_bytes=requested, lock=TableLock(base), hooks=COMMIT_HOOKS)


def _has_completed_instant(base: Path, props: TableProperties) -> bool:
    return any(i.is_completed for i in list_instants(base, props))


def _reject_pending_clustering(base: Path, operation: WriteOperation,
                               file_groups: Iterable[tuple[str, str]]) -> None:
    groups = set(file_groups)
    if not groups:
        return
    table = HudiTable(str(base))
    for instant, plan in table.timeline.pending_clustering():
        planned = {(sl.get("partitionPath") or "", sl["fileId"])
                   for group in plan.get("inputGroups") or [] for sl in group.get("slices") or []}
        clash = sorted(f"{p}/{f}" if p else f for p, f in groups & planned)
        if clash:
            raise CommitConflictError(
                f"{operation.value} would change {len(clash)} file group(s) that the pending clustering "
                f"{instant.requested_time} is rewriting (e.g. {clash[0]}); updates to file groups under a "
                "pending clustering are rejected", hint=UNBLOCK_CLUSTERING_HINT)


def _reject_pending_compaction(base: Path, operation: WriteOperation,
                               file_groups: Iterable[tuple[str, str]]) -> None:
    """A Merge-on-Read write never rewrites a file group a pending compaction will rewrite (its new base file
    would be named after an instant older than ours, and take our changes' place); appending a log file there
    is no change of this kind (see :meth:`WriteSession.check_no_pending_rewrite`)."""
    groups = set(file_groups)
    if not groups:
        return
    pending = HudiTable(str(base)).fs_view.pending_compaction_file_groups()
    clash = sorted(groups) if pending is None else sorted(groups & pending)
    if clash:
        p, f = clash[0]
        raise UnsupportedTableError(
            f"{operation.value} would rewrite file group {p + '/' if p else ''}{f}, which a pending compaction "
            "is rewriting (only log files may join it; this write appends none)",
            hint=f"run hudi-layout compact {base} (it executes pending compactions first, Hudi's too), "
                 "then write again")


def _log_append_fields(props: TableProperties, opts: Mapping[str, str], operation: WriteOperation,
                       schema: pa.Schema, evolves: bool) -> dict[str, Any]:
    """The :class:`WriteSpec` fields of Merge-on-Read upserts and deletes that append log files
    (docs/mor-write.md): the log blocks' Avro schema and the per-slice limit. None for other writes, and for a
    write that changes the table's schema (its touched file groups are rewritten in the new schema)."""
    limit = cfg.MOR_MAX_LOG_FILES.get(opts)
    if not props.is_mor or not operation.merges_by_key or evolves or limit == 0:
        return {}
    meta = pa.schema([pa.field(c, pa.string()) for c in META_COLUMNS])
    data = [f for f in schema if f.name not in META_COLUMNS]
    return {"log_block_schema": arrow_to_avro_schema_json(pa.schema([*meta, *data]), props.table_name),
            "max_log_files_per_slice": limit}


def _check_merged_still_latest(base: Path, merged: Mapping[tuple[str, str], str],
                               files: list[WrittenFile], instant_time: str,
                               merged_logs: Mapping[tuple[str, str], tuple[str, ...]] | None = None) -> None:
    """Every file group this upsert / delete rewrote must still have the slice it read as its latest, and
    that slice must be older than this write's instant: readers take a file group's slice with the latest
    instant time, so a new slice named after an instant older than the slice it replaces (another write
    started after this one and completed before this one read the file group) would stay hidden behind it
    and this write's changes would vanish. Hudi's optimistic concurrency fails the same case (a commit that
    completed after this write started touched the file group).

    On a Merge-on-Read table the slice's log files must be the ones the write merged, each written by a
    deltacommit that completed before this write's instant was requested: a version 8 / 9 reader puts a log
    completed after that into this write's new slice (by completion time), where its records, merged into the
    new base file already, would be applied a second time, over this write's changes.

    One change is no conflict: a compaction that merged exactly the slice the write read (its base file and
    no log the write did not read) completed meanwhile, and the write only appended a log file to the group.
    The log completes after the compaction was requested, so every reader places it in the compaction's new
    slice, over the same rows it was merged against (Hudi's writers append to such groups the same way)."""
    expected = dict(merged)
    for w in files:
        if w.is_merge and (w.partition_path, w.file_id) not in expected and w.prev_base_file:
            expected[(w.partition_path, w.file_id)] = w.prev_base_file
    if not expected:
        return
    appended = {(w.partition_path, w.file_id) for w in files if w.is_log_file}
    partitions = sorted({p for p, _f in expected})
    table = HudiTable(str(base))
    slices = {s.file_group: s for s in table.file_slices(partitions=partitions)}
    live = {fg: s.base_file_name for fg, s in slices.items()}
    completion = table.timeline.completion_times() if table.is_mor else {}
    for (p, f), name in sorted(expected.items()):
        now = live.get((p, f))
        where = f"{p + '/' if p else ''}{f}"
        read_logs = tuple((merged_logs or {}).get((p, f), ()))
        if now != name:
            compacted = _compacted_from(table, slices[(p, f)], name, read_logs) \
                if (p, f) in appended and now is not None else None
            if compacted is None:
                what = "was replaced" if now is None else f"got a new slice {now}"
                raise CommitConflictError(f"file group {where} {what} while this write was running (it read {name})",
                                          hint="retry the write (it reads the new state)")
            read_logs = tuple(n for n in read_logs if n not in compacted)
        if table.is_mor:
            live_logs = slices[(p, f)].log_file_names
            late = [n for n in live_logs if _log_completion(n, completion) >= instant_time]
            if live_logs != read_logs or late:
                raise CommitConflictError(
                    f"file group {where}: a log file was written into it while this write was running "
                    f"({(late or sorted(set(live_logs) ^ set(read_logs)))[0]})",
                    hint="retry the write (it reads the new state)")
        read = try_parse_base_file_name(name)
        if read is not None and read.instant_time >= instant_time:
            raise CommitConflictError(
                f"file group {where} was rewritten by instant {read.instant_time}, which completed after this write "
                f"started ({instant_time}): this write's slice would sort before it and stay hidden",
                hint="retry the write (it reads the new state)")


def _compacted_from(table: HudiTable, live: FileSlice, read_base_file: str,
                    read_logs: tuple[str, ...]) -> frozenset[str] | None:
    """The log files a completed compaction merged into ``live``'s base file, when that compaction's plan
    merged the base file ``read_base_file`` and only logs among ``read_logs``; else ``None``."""
    try:
        ops = table.timeline.compaction_plan(live.commit_time)
    except CorruptFileError:  # not a compaction (or its plan is gone): a conflict
        return None
    op = next((o for o in ops if o.file_group == live.file_group), None)
    if op is None or (op.base_file or "") != read_base_file or not set(op.log_files) <= set(read_logs):
        return None
    return frozenset(op.log_files)


def _log_completion(log_file_name: str, completion: Mapping[str, str]) -> str:
    """When the deltacommit that wrote a log file completed (its own instant time if unknown)."""
    parsed = try_parse_log_file_name(log_file_name)
    if parsed is None:
        return ""
    return completion.get(parsed.instant_time, parsed.instant_time)


def _file_groups(base: Path, partitions: list[str] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in HudiTable(str(base)).file_slices(partitions=partitions):
        out.setdefault(s.partition_path, []).append(s.file_id)
    return out


def commit_metadata_for(written: list[WrittenFile], schema_json: str, operation: str,
                        replaced: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """Hudi commit metadata (dict form) for the files of one write (docs/hudi-format-live-tables.md §2.4):
    a new file group has ``prevCommit = "null"`` and counts its rows as inserts; a merged one names the slice it
    replaced and counts updates, deletes and the new keys packed into it."""
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for w in written:
        if w.is_log_file:
            # Hudi 1.x's HoodieDeltaWriteStat of a table version 8 / 9 append names the deltacommit itself as
            # prevCommit and no base file (its writer never looks the slice up: readers place the log by
            # completion time; so read in Hudi-written tables)
            log = try_parse_log_file_name(w.file_name)
            stat = WriteStat(file_id=w.file_id, path=w.relative_path, partition_path=w.partition_path,
                             num_writes=w.num_records, file_size_in_bytes=w.file_size, num_inserts=0,
                             num_update_writes=w.num_updates, num_deletes=w.num_deletes,
                             prev_commit=log.instant_time if log is not None else w.prev_commit or "null",
                             extra={"baseFile": "", "logFiles": [w.file_name],
                                    "logVersion": LOG_VERSION, "logOffset": 0})
        elif w.is_merge:
            stat = WriteStat(file_id=w.file_id, path=w.relative_path, partition_path=w.partition_path,
                             num_writes=w.num_records, file_size_in_bytes=w.file_size, num_inserts=w.num_inserts,
                             num_update_writes=w.num_updates, num_deletes=w.num_deletes,
                             prev_commit=w.prev_commit or "null", prev_base_file=w.prev_base_file)
        else:
            stat = WriteStat(file_id=w.file_id, path=w.relative_path, partition_path=w.partition_path,
                             num_writes=w.num_records, num_inserts=w.num_records, file_size_in_bytes=w.file_size,
                             num_deletes=w.num_deletes)
        by_partition.setdefault(w.partition_path, []).append(stat.to_dict())
    meta: dict[str, Any] = {
        "partitionToWriteStats": by_partition,
        "compacted": False,
        "extraMetadata": {"schema": schema_json, NAN_EXACT_STATS_KEY: "true"},
        "operationType": operation,
    }
    if replaced is not None:
        meta["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in replaced.items()}
    return meta
