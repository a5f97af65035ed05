"""Ingestion: append a Spark DataFrame to a Copy-on-Write Hudi table (``bulk_insert`` / ``insert``).

Data path: Spark computes ``_hoodie_record_key`` and ``_hoodie_partition_path`` with native
expressions; ``mapInArrow`` hands each task's Arrow batches to :mod:`.base_file_writer`, which writes the
base files and returns one metadata row per file. Only those rows reach the driver. The driver turns them
into the commit metadata and the metadata-table update, inside the commit protocol of
:mod:`hudi_layout.table.commit_protocol`.

Every insert creates new file groups (no small-file merging), so an ingest never rewrites a file group and
can never conflict with a clustering that is replacing existing ones.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .. import config as cfg
from ..errors import (
    InvalidArgumentError,
    NotAHudiTableError,
    SchemaMismatchError,
    UnsupportedTableError,
)
from ..table import instant as inst
from ..table.commit_metadata import WriteStat, commit_metadata_bytes, replace_commit_metadata_bytes
from ..table.commit_protocol import PendingWrite, abort_write, begin_write, complete_write
from ..table.create import create_table_layout, table_properties_for
from ..table.locks import TableLock
from ..table.properties import TableProperties, load_properties
from ..table.schema_conversion import arrow_to_avro_schema_json, avro_to_arrow_schema, comparable_type
from .base_file_writer import (
    ERROR_MARKER,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
    RESULT_SCHEMA,
    WriteSpec,
    WrittenFile,
    decode_results,
    make_mapper,
)
from .metadata_sync import (
    compact_metadata_if_due,
    metadata_update_hook,
    prepare_metadata_table,
    stats_columns_for,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
SUPPORTED_OPERATIONS = ("bulk_insert", "insert")


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


def spark_to_arrow_schema(df: DataFrame) -> pa.Schema:
    return spark_to_arrow_schema_of(df.schema)


def spark_to_arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema of Spark ``schema`` as ``mapInArrow`` exchanges it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        # Spark's TimestampType is an instant: any zone name works for the schema (we store UTC micros)
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError as e:
        raise InvalidArgumentError(f"unsupported column type: {e}") from e


def _record_key_expr(fields: list[str]) -> Column:
    from pyspark.sql import functions as F

    def as_str(name: str) -> Column:
        return F.col(f"`{name}`").cast("string")

    if len(fields) == 1:
        return F.nullif(as_str(fields[0]), F.lit(""))
    parts = [
        F.concat(F.lit(f"{f}:"), F.coalesce(F.when(as_str(f) == "", F.lit("__empty__")).otherwise(as_str(f)),
                                          F.lit("__null__")))
        for f in fields
    ]
    all_null = None
    for f in fields:
        cond = F.col(f"`{f}`").isNull()
        all_null = cond if all_null is None else (all_null & cond)
    return F.when(all_null, F.lit(None).cast("string")).otherwise(F.concat_ws(",", *parts))


def _partition_path_expr(fields: list[str], hive_style: bool) -> Column:
    from pyspark.sql import functions as F

    if not fields:
        return F.lit("")
    parts = []
    for f in fields:
        value = F.coalesce(F.nullif(F.col(f"`{f}`").cast("string"), F.lit("")), F.lit(DEFAULT_PARTITION))
        parts.append(F.concat(F.lit(f"{f}="), value) if hive_style else value)
    return F.concat_ws("/", *parts)


def _check_columns(schema: pa.Schema, fields: list[str], what: str) -> None:
    names = set(schema.names)
    for f in fields:
        if f not in names:
            raise InvalidArgumentError(
                f"{what} field {f!r} is not a column of the DataFrame (columns: {', '.join(schema.names)})")


def _check_append_schema(props: TableProperties, table_schema: pa.Schema, df_schema: pa.Schema) -> None:
    want = {f.name: comparable_type(f.type) for f in table_schema}
    got = {f.name: comparable_type(f.type) for f in df_schema}
    missing = [n for n in want if n not in got]
    extra = [n for n in got if n not in want]
    changed = [f"{n} ({want[n]} in the table, {got[n]} in the data)" for n in want if n in got and want[n] != got[n]]
    if missing or extra or changed:
        parts = []
        if missing:
            parts.append(f"missing columns: {', '.join(missing)}")
        if extra:
            parts.append(f"new columns: {', '.join(extra)}")
        if changed:
            parts.append(f"changed types: {', '.join(changed)}")
        raise SchemaMismatchError(
            f"the data does not match the schema of table {props.table_name!r}: " + "; ".join(parts),
            hint="schema evolution is not supported; select/cast the columns to the table schema")


def table_arrow_schema(base: Path, props: TableProperties) -> pa.Schema:
    from ..table.hudi_table import HudiTable

    schema_json = HudiTable(str(base)).schema()
    return avro_to_arrow_schema(schema_json)


def _is_table(base: Path) -> bool:
    return (base / ".hoodie" / "hoodie.properties").exists()


def _translate_spark_error(e: Exception) -> Exception:
    text = str(e)
    idx = text.find(ERROR_MARKER)
    if idx >= 0:
        line = text[idx + len(ERROR_MARKER):].strip().splitlines()[0]
        return InvalidArgumentError(line.strip())
    return e


def run_file_writer(df: DataFrame, spec: WriteSpec) -> list[WrittenFile]:
    """Run the executor-side writer over ``df`` and collect the per-file metadata rows."""
    return collect_written(df, make_mapper(spec))


def collect_written(df: DataFrame, mapper: Any) -> list[WrittenFile]:
    """Run ``mapper`` (a writer yielding :data:`RESULT_SCHEMA` rows) over ``df``; collect the metadata rows."""
    from pyspark.sql.types import StructType

    out_schema = StructType.fromJson({"type": "struct", "fields": [
        {"name": f.name, "type": {"string": "string", "int64": "long", "binary": "binary"}[str(f.type)],
         "nullable": True, "metadata": {}} for f in RESULT_SCHEMA]})
    try:
        rows = df.mapInArrow(mapper, out_schema).collect()  # metadata rows only
    except Exception as e:  # Spark wraps executor errors; surface ours as one clear line
        translated = _translate_spark_error(e)
        if translated is e:
            raise
        raise translated from None
    return decode_results(rows)


def write(
    df: DataFrame,
    path: str,
    options: Mapping[str, Any] | None = None,
    mode: str = "append",
) -> WriteResult:
    """Write ``df`` to the Hudi table at ``path`` (created if missing).

    Args:
        df: rows to write.
        path: table base path (local file system).
        options: Hudi options by their Hudi names (``hoodie.table.name``,
            ``hoodie.datasource.write.recordkey.field``, ``hoodie.datasource.write.partitionpath.field``,
            ``hoodie.datasource.write.hive_style_partitioning``, ``hoodie.datasource.write.operation``
            (``bulk_insert`` default, or ``insert``), ``hoodie.parquet.max.file.size``,
            ``hoodie.table.version`` (9 default, 8), ``hoodie.metadata.enable``...).
        mode: ``append`` (default) or ``overwrite`` (an ``insert_overwrite_table`` replacecommit that
            atomically replaces every file group; creates the table if missing).
    """
    from pyspark.sql import functions as F

    df_schema = spark_to_arrow_schema(df)
    meta_cols = [f.name for f in df_schema if f.name.startswith("_hoodie_")]
    if meta_cols:
        df = df.drop(*meta_cols)
        df_schema = spark_to_arrow_schema(df)
    session = WriteSession.start(path, options, df_schema, mode == "overwrite" if mode in (
        "append", "overwrite") else _bad_mode(mode))
    try:
        prepared = df.select(*[F.col(f"`{c}`") for c in session.spec.data_columns],
                             _record_key_expr(session.record_keys).alias(RECORD_KEY_COLUMN),
                             _partition_path_expr(session.partition_fields, session.hive_style
                                                  ).alias(PARTITION_PATH_COLUMN))
        written = run_file_writer(prepared, session.spec)
        result = session.commit(written)
    except BaseException:
        session.abort()
        raise
    _maybe_inline_cluster(df, session.base, session.opts)
    return result


def _bad_mode(mode: str) -> bool:
    raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")


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
    created_here: bool
    started: float

    @classmethod
    def start(cls, path: str, options: Mapping[str, Any] | None, df_schema: Any, overwrite: bool) -> WriteSession:
        """Validate everything, create the table if needed, and begin the instant (driver side)."""
        started = time.time()
        if not isinstance(df_schema, pa.Schema):  # a Spark StructType (data source path)
            from pyspark.sql.pandas.types import to_arrow_schema

            df_schema = to_arrow_schema(df_schema, timezone="UTC")
        opts = cfg.resolve_options({k: v for k, v in (options or {}).items() if k != "path"})
        operation = cfg.OPERATION.get(opts)
        if operation in ("upsert", "delete", "delete_partition", "insert_overwrite", "upsert_prepped"):
            raise UnsupportedTableError(
                f"operation {operation!r} is not supported by hudi_layout (only bulk_insert and insert)",
                hint="use Hudi's own Spark writer for upserts and deletes")
        if operation not in SUPPORTED_OPERATIONS:
            raise InvalidArgumentError(f"unknown hoodie.datasource.write.operation {operation!r}")
        base = Path(path).absolute()
        if base.exists() and not base.is_dir():
            raise NotAHudiTableError(f"{base} exists and is not a directory")
        for f in df_schema:
            arrow_to_avro_schema_json(pa.schema([f]), "check")  # unsupported types -> clear error
        created_here = False
        if _is_table(base):
            props = load_properties(base / ".hoodie")
            _check_writable(props)
            record_keys, partition_fields = props.record_key_fields, props.partition_fields
            hive_style = props.hive_style_partitioning
            _check_columns(df_schema, record_keys, "record key")
            _check_columns(df_schema, partition_fields, "partition path")
            _check_append_schema(props, table_arrow_schema(base, props), df_schema)
        else:
            if base.exists() and any(base.iterdir()):
                raise NotAHudiTableError(
                    f"{base} exists and is not empty but has no .hoodie/hoodie.properties: not a Hudi table",
                    hint="point at an existing Hudi table or at a new/empty folder")
            record_keys = cfg.split_fields(cfg.RECORD_KEY_FIELD.get(opts))
            partition_fields = cfg.split_fields(cfg.PARTITION_PATH_FIELD.get(opts))
            hive_style = cfg.HIVE_STYLE.get(opts)
            if not record_keys:
                raise InvalidArgumentError(
                    "hoodie.datasource.write.recordkey.field is required to create a table")
            _check_columns(df_schema, record_keys, "record key")
            _check_columns(df_schema, partition_fields, "partition path")
            if cfg.TABLE_TYPE.get(opts) not in ("COPY_ON_WRITE", "COW"):
                raise UnsupportedTableError("hudi_layout writes Copy-on-Write tables only",
                                            hint="set hoodie.datasource.write.table.type=COPY_ON_WRITE")
            table_name = cfg.TABLE_NAME.get(opts) or base.name
            passthrough = {k: v for k, v in opts.items() if k.startswith("hoodie.table.") and k not in (
                "hoodie.table.name", "hoodie.table.version", "hoodie.table.type")}
            props_map = table_properties_for(
                table_name=table_name, schema=df_schema, record_key_fields=record_keys,
                partition_fields=partition_fields, hive_style=hive_style,
                table_version=cfg.TABLE_VERSION.get(opts), extra=passthrough)
            base.mkdir(parents=True, exist_ok=True)
            create_table_layout(base, props_map)
            created_here = True
            props = load_properties(base / ".hoodie")
        try:
            prepare_metadata_table(base, props, opts)
            props = load_properties(base / ".hoodie")
            action = inst.REPLACE_COMMIT if overwrite else inst.COMMIT
            requested = b""
            if overwrite:
                from ..table.commit_metadata import requested_replace_bytes

                requested = requested_replace_bytes({"operationType": "INSERT_OVERWRITE_TABLE",
                                                     "extraMetadata": {}, "version": 1})
            pending = begin_write(base, action, requested_bytes=requested, lock=TableLock(base))
        except BaseException:
            if created_here:
                shutil.rmtree(base, ignore_errors=True)
            raise
        spec = WriteSpec(
            base_path=str(base), instant_time=pending.instant_time, data_columns=tuple(df_schema.names),
            max_file_size=cfg.MAX_FILE_SIZE.get(opts), compression=cfg.PARQUET_CODEC.get(opts),
            stats_columns=stats_columns_for(props, opts, df_schema))
        return cls(base, props, opts, operation, overwrite, record_keys, partition_fields, hive_style, df_schema,
                   pending, spec, created_here, started)

    def commit(self, written: list[WrittenFile] | list[dict[str, Any]]) -> WriteResult:
        files = [w for w in written if isinstance(w, WrittenFile)] or decode_results(
            [w for w in written if isinstance(w, dict)])
        replaced = _all_file_groups(self.base) if self.overwrite else None
        schema_json = arrow_to_avro_schema_json(self.df_schema, self.props.table_name)
        op = "INSERT_OVERWRITE_TABLE" if self.overwrite else self.operation.upper()
        metadata = commit_metadata_for(files, schema_json, op, replaced)
        payload = (replace_commit_metadata_bytes if self.overwrite else commit_metadata_bytes)(
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

    def abort(self) -> None:
        try:
            abort_write(self.pending)
        except Exception:  # pragma: no cover - best effort; the next writer rolls back anyway
            log.exception("could not roll back %s", self.pending.instant_time)
        if self.created_here and not _has_completed_instant(self.base, self.props):
            shutil.rmtree(self.base, ignore_errors=True)


DataSourceWriteSession = WriteSession


def _has_completed_instant(base: Path, props: TableProperties) -> bool:
    from ..table.commit_protocol import list_instants

    return any(i.is_completed for i in list_instants(base, props))


def _check_writable(props: TableProperties) -> None:
    if props.version not in (8, 9):
        raise UnsupportedTableError(
            f"table {props.table_name!r} is version {props.version}; hudi_layout writes only versions 8 and 9",
            hint="upgrade the table with Hudi (hoodie.write.auto.upgrade) first; reading version 6 works")
    if props.is_mor:
        raise UnsupportedTableError(
            f"table {props.table_name!r} is MERGE_ON_READ; hudi_layout writes Copy-on-Write tables only")
    if not props.populate_meta_fields:
        raise UnsupportedTableError(
            f"table {props.table_name!r} has hoodie.populate.meta.fields=false, which hudi_layout does not write")


def _check_no_pending_clustering(base: Path, replaced: Mapping[str, list[str]]) -> None:
    """An overwrite must not replace file groups that a pending clustering is rewriting (Hudi rejects
    updates to file groups under pending clustering the same way)."""
    from ..errors import CommitConflictError
    from ..table.hudi_table import HudiTable

    busy = HudiTable(str(base)).pending_clustering_file_groups()
    clash = sorted(f"{p}/{f}" if p else f for p, ids in replaced.items() for f in ids if (p, f) in busy)
    if clash:
        raise CommitConflictError(
            f"overwrite would replace {len(clash)} file group(s) under a pending clustering (e.g. {clash[0]})",
            hint="let the clustering finish (hudi-layout clustering-service / execute_pending) and retry")


def _all_file_groups(base: Path) -> dict[str, list[str]]:
    from ..table.hudi_table import HudiTable

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
        "extraMetadata": {"schema": schema_json},
        "operationType": operation,
    }
    if replaced is not None:
        meta["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in replaced.items()}
    return meta


def _maybe_inline_cluster(df: DataFrame, base: Path, opts: Mapping[str, str]) -> None:
    if not cfg.CLUSTERING_INLINE.get(opts):
        return
    from ..clustering.triggers import maybe_cluster_inline

    maybe_cluster_inline(df.sparkSession, str(base), opts)
