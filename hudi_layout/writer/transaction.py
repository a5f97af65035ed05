"""One write transaction on the driver: validate, create the table, begin the instant, commit or abort.

:class:`WriteSession` is shared by :func:`hudi_layout.services.write.write` (Spark-native key expressions,
then ``mapInArrow``) and the Python data source writer: both hand it the metadata rows of the files their
executors wrote (:mod:`hudi_layout.writer.base_file_writer`). It turns them into the commit metadata and the
metadata-table update, inside the commit protocol of :mod:`hudi_layout.table.commit_protocol`.

Every insert creates new file groups (no small-file merging), so an ingest never rewrites a file group and
can never conflict with a clustering that is replacing existing ones.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.errors import (
    CommitConflictError,
    InvalidArgumentError,
    NotAHudiTableError,
    SchemaMismatchError,
)
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import Action, operation_refusal, require, require_creatable
from hudi_layout.format.commit_metadata import (
    NAN_EXACT_STATS_KEY,
    WriteStat,
    commit_metadata_bytes,
    replace_commit_metadata_bytes,
    requested_replace_bytes,
)
from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.format.properties import TableProperties, load_properties
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json, avro_to_arrow_schema
from hudi_layout.format.schema_evolution import evolve_schema
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
from hudi_layout.options import WriteOperation
from hudi_layout.table.commit_protocol import PendingWrite, abort_write, begin_write, complete_write, list_instants
from hudi_layout.table.create import create_table_layout, table_properties_for
from hudi_layout.table.faults import crash_point
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock
from hudi_layout.writer.base_file_writer import WriteSpec, WrittenFile, decode_results
from hudi_layout.writer.metadata_sync import (
    compact_metadata_if_due,
    metadata_update_hook,
    prepare_metadata_table,
    stats_columns_for,
)

log = logging.getLogger(__name__)



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


def _check_columns(schema: pa.Schema, fields: list[str], what: str) -> None:
    names = set(schema.names)
    for f in fields:
        if f not in names:
            raise InvalidArgumentError(
                f"{what} field {f!r} is not a column of the DataFrame (columns: {', '.join(schema.names)})")


def table_arrow_schema(base: Path, props: TableProperties) -> pa.Schema | None:
    """The table's current schema; ``None`` for a table that has neither a commit schema nor a create schema."""
    schema_json = HudiTable(str(base)).schema()
    return avro_to_arrow_schema(schema_json) if schema_json is not None else None


def _is_table(base: Path) -> bool:
    return (base / ".hoodie" / "hoodie.properties").exists()


@dataclass
class WriteSession:
    """One write from validation to completion; shared by :func:`write` and the Python data source."""

    base: Path
    props: TableProperties
    opts: dict[str, str]
    operation: str
    overwrite: bool
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

    @classmethod
    def start(cls, path: str, options: Mapping[str, Any] | None, df_schema: pa.Schema,
              overwrite: bool) -> WriteSession:
        """Validate everything, create the table if needed, and begin the instant (driver side).

        ``df_schema`` is the Arrow schema of the rows to write (the Spark layer converts Spark schemas).
        Every check that can fail (options, schema, table config, partition fields) runs before the first
        byte is written; a failure after that removes what this call created (only that: a folder that
        existed before stays) and releases the instant.
        """
        started = time.time()
        given = {k: v for k, v in (options or {}).items() if k != "path"}
        opts = cfg.resolve_options(given)
        cfg.validate_all(opts)
        operation = _write_operation(opts)
        base = Path(path).absolute()
        if base.exists() and not base.is_dir():
            raise NotAHudiTableError(f"{base} exists and is not a directory",
                                     hint="give the path of a table folder (new or existing)")
        for f in df_schema:
            arrow_to_avro_schema_json(pa.schema([f]), "check")  # unsupported types -> clear error
        if _is_table(base):
            layout, new_props = _existing_table_layout(base, df_schema, given), None
        else:
            layout, new_props = _new_table_layout(base, opts, df_schema)
        layout.rule.check_fields()
        target = layout.schema
        spec = WriteSpec(
            base_path=str(base), instant_time="", data_columns=tuple(target.names),
            max_file_size=cfg.MAX_FILE_SIZE.get(opts), compression=cfg.PARQUET_CODEC.get(opts),
            stats_columns=stats_columns_for(layout.props, opts, target), partition_rule=layout.rule,
            data_schema=target)
        # ---- nothing is written before this line; from here on, a failure undoes what this call created
        created = _missing_dirs(base) if new_props is not None else None
        props = layout.props
        try:
            if new_props is not None:
                base.mkdir(parents=True, exist_ok=True)
                create_table_layout(base, new_props)
                props = load_properties(base / ".hoodie")
            props = prepare_metadata_table(base, props, opts)
            pending = _begin_instant(base, overwrite)
        except BaseException:
            if created is not None:
                _remove_created(base, created)
            raise
        spec = replace(spec, instant_time=pending.instant_time, gate=pending.file_gate)
        return cls(base, props, opts, operation, overwrite, layout.record_keys, layout.partition_fields,
                   layout.rule.hive_style, df_schema, pending, spec, created, started, layout.schema)

    def commit(self, written: list[WrittenFile] | list[dict[str, Any]]) -> WriteResult:
        crash_point("write.after_files")
        files = [w for w in written if isinstance(w, WrittenFile)] or decode_results(
            [w for w in written if isinstance(w, dict)])
        replaced = _all_file_groups(self.base) if self.overwrite else None
        op = "INSERT_OVERWRITE_TABLE" if self.overwrite else self.operation.upper()

        def payload() -> bytes:
            """Under the table lock: this write's schema merged into the table's schema as it is now (another
            writer may have evolved it since this write started; a conflicting change fails the commit)."""
            schema_json = arrow_to_avro_schema_json(self.committed_schema(), self.props.table_name)
            metadata = commit_metadata_for(files, schema_json, op, replaced)
            return (replace_commit_metadata_bytes if self.overwrite else commit_metadata_bytes)(
                metadata, self.props.version)

        mdt_hook = metadata_update_hook(self.props, self.opts, files, replaced or {})

        def before_complete(pending: PendingWrite) -> None:
            if replaced:
                _check_no_pending_clustering(self.base, replaced)
            mdt_hook(pending)

        complete_write(self.pending, payload, committed_files=[w.relative_path for w in files],
                       before_complete=before_complete)
        compact_metadata_if_due(self.base, self.opts)
        return WriteResult(
            instant_time=self.pending.instant_time, operation=self.operation, files_written=len(files),
            records_written=sum(w.num_records for w in files), bytes_written=sum(w.file_size for w in files),
            partitions=tuple(sorted({w.partition_path for w in files})), seconds=time.time() - self.started,
            replaced_file_groups=sum(len(v) for v in (replaced or {}).values()))

    def committed_schema(self) -> pa.Schema:
        """The schema this commit records: the table's latest schema evolved by this write's schema."""
        mine = self.table_schema or self.df_schema
        current = table_arrow_schema(self.base, self.props)
        if current is None or current == mine:
            return mine
        try:
            return evolve_schema(current, mine, table_name=self.props.table_name, merging=True).schema
        except SchemaMismatchError as e:
            raise CommitConflictError(f"another writer changed the table schema meanwhile: {e}",
                                      hint="retry the write against the new schema") from e

    def abort(self) -> None:
        """Roll the instant back and release it (heartbeat, file gate, markers); a table this write created
        and that never got a commit is removed again - only what this write created."""
        try:
            abort_write(self.pending)
        except Exception:  # pragma: no cover - best effort; the next writer rolls back anyway
            log.exception("could not roll back %s", self.pending.instant_time)
        if self.created_here is not None and not _has_completed_instant(self.base, self.props):
            _remove_created(self.base, self.created_here)


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


def _write_operation(opts: Mapping[str, str]) -> WriteOperation:
    operation = cfg.OPERATION.get(opts)
    refused = operation_refusal(operation)
    if refused is not None:
        raise refused.error()
    if not isinstance(operation, WriteOperation):
        raise InvalidArgumentError(f"unknown hoodie.datasource.write.operation {operation!r}",
                                   hint="use bulk_insert (default) or insert")
    return operation


def _existing_table_layout(base: Path, df_schema: pa.Schema, given: Mapping[str, Any]) -> _KeyLayout:
    """An append to an existing table: the table decides keys and partitioning; the data (and every option
    the caller gave) must match it."""
    props = load_properties(base / ".hoodie")
    require(props, Action.WRITE)
    _check_table_config(props, given)
    rule = PartitionPathRule(tuple(props.partition_fields), props.hive_style_partitioning,
                             props.url_encode_partitioning)
    _check_columns(df_schema, props.record_key_fields, "record key")
    _check_columns(df_schema, props.partition_fields, "partition path")
    table_schema = table_arrow_schema(base, props)
    # a table without any schema yet takes the data's; otherwise the data may evolve it (new nullable
    # columns, safe widenings) and every other change is refused naming the column
    schema = df_schema if table_schema is None else evolve_schema(table_schema, df_schema,
                                                                  table_name=props.table_name).schema
    return _KeyLayout(props, props.record_key_fields, props.partition_fields, rule, schema)


def _new_table_layout(base: Path, opts: Mapping[str, str], df_schema: pa.Schema
                      ) -> tuple[_KeyLayout, dict[str, str]]:
    """A first write: keys and partitioning from the options, and the ``hoodie.properties`` to create
    (validated here; nothing is written)."""
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
    require_creatable(table_type=cfg.TABLE_TYPE.get(opts))
    table_name = cfg.TABLE_NAME.get(opts) or base.name
    passthrough = {k: v for k, v in opts.items() if k.startswith("hoodie.table.") and k not in (
        "hoodie.table.name", "hoodie.table.version", "hoodie.table.type")}
    props_map = table_properties_for(
        table_name=table_name, schema=df_schema, record_key_fields=record_keys,
        partition_fields=partition_fields, hive_style=rule.hive_style, url_encode=rule.url_encode,
        table_version=cfg.TABLE_VERSION.get(opts), extra=passthrough)
    return _KeyLayout(TableProperties(props_map), record_keys, partition_fields, rule, df_schema), props_map


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


def _check_table_config(props: TableProperties, given: Mapping[str, Any]) -> None:
    """Options that contradict the table's ``hoodie.properties`` are refused, never ignored."""
    conflicts = cfg.table_config_conflicts(props, given)
    if conflicts:
        text = "; ".join(f"{k}={v!r} but the table has {t!r}" for k, t, v in conflicts)
        raise InvalidArgumentError(
            f"options conflict with table {props.table_name!r} (hoodie.properties): {text}",
            hint="drop these options (the table's values apply) or write to a new table")


def _begin_instant(base: Path, overwrite: bool) -> PendingWrite:
    """Requested + inflight instant: a ``commit``, or an ``insert_overwrite_table`` ``replacecommit``."""
    action = inst.REPLACE_COMMIT if overwrite else inst.COMMIT
    requested = b""
    if overwrite:
        requested = requested_replace_bytes({"operationType": "INSERT_OVERWRITE_TABLE",
                                             "extraMetadata": {}, "version": 1})
    return begin_write(base, action, requested_bytes=requested, lock=TableLock(base), hooks=COMMIT_HOOKS)


def _has_completed_instant(base: Path, props: TableProperties) -> bool:
    return any(i.is_completed for i in list_instants(base, props))


def _check_no_pending_clustering(base: Path, replaced: Mapping[str, list[str]]) -> None:
    """An overwrite must not replace file groups that a pending clustering is rewriting (Hudi rejects
    updates to file groups under pending clustering the same way)."""
    busy = HudiTable(str(base)).pending_clustering_file_groups()
    clash = sorted(f"{p}/{f}" if p else f for p, ids in replaced.items() for f in ids if (p, f) in busy)
    if clash:
        raise CommitConflictError(
            f"overwrite would replace {len(clash)} file group(s) under a pending clustering (e.g. {clash[0]})",
            hint=f"finish it with 'hudi-layout cluster {base} --resume', or roll it back with "
                 f"'hudi-layout cluster {base} --abandon-pending', then retry")


def _all_file_groups(base: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in HudiTable(str(base)).file_slices():
        out.setdefault(s.partition_path, []).append(s.file_id)
    return out


def commit_metadata_for(written: list[WrittenFile], schema_json: str, operation: str,
                        replaced: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """Hudi commit metadata (dict form) for the files of one write."""
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for w in written:
        stat = WriteStat(file_id=w.file_id, path=w.relative_path, partition_path=w.partition_path,
                         num_writes=w.num_records, num_inserts=w.num_records, file_size_in_bytes=w.file_size)
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
