"""``write()``: a Spark DataFrame into a Copy-on-Write Hudi table, by any supported write operation.

One transaction (:class:`hudi_layout.writer.transaction.WriteSession`) around the Spark jobs: the insert writer
(:mod:`hudi_layout.spark.write_job`) for ``bulk_insert`` / ``insert`` / the overwrites, the combine-tag-merge jobs
(:mod:`hudi_layout.spark.upsert_job`) for ``upsert`` / ``delete``, none for ``delete_partition``; then inline
clustering when ``hoodie.clustering.inline`` is on, the clustering service in a background thread when
``hoodie.clustering.async.enabled`` is on, and the automatic clean (``hoodie.clean.automatic``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanConfig, clean_if_due
from hudi_layout.errors import InvalidArgumentError, check_argument_types
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.format.properties import load_properties, table_config_exists
from hudi_layout.format.schema_conversion import require_keepable_column_names
from hudi_layout.options import WriteOperation
from hudi_layout.services.clustering_service import check_async_options, ensure_async_clustering, maybe_cluster_inline
from hudi_layout.services.compaction import maybe_compact_inline
from hudi_layout.spark.datasource import refresh_cached_sql_tables, sync_sql_tables
from hudi_layout.spark.progress import watch
from hudi_layout.spark.upsert_job import run_packed_insert, run_upsert
from hudi_layout.spark.write_job import (
    datetime_rebase_write_mode,
    partition_value_exprs,
    record_key_expr,
    refuse_old_datetimes,
    run_file_writer,
    spark_to_arrow_schema,
)
from hudi_layout.table.paths import local_table_path, table_dir
from hudi_layout.writer.base_file_writer import RECORD_KEY_COLUMN, WrittenFile
from hudi_layout.writer.transaction import TagSnapshot, WriteResult, WriteSession

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


def write(
    df: DataFrame,
    path: str,
    options: Mapping[str, Any] | None = None,
    mode: str = "append",
) -> WriteResult:
    """Write ``df`` to the Hudi table at ``path`` (created if missing).

    Args:
        df: rows to write (for ``delete``: at least the record key and partition fields).
        path: table base path (local file system).
        options: Hudi options by their Hudi names (``hoodie.table.name``,
            ``hoodie.datasource.write.recordkey.field``, ``hoodie.datasource.write.partitionpath.field``,
            ``hoodie.datasource.write.hive_style_partitioning``, ``hoodie.datasource.write.operation``
            (``bulk_insert`` default, ``insert``, ``upsert``, ``delete``, ``insert_overwrite``,
            ``insert_overwrite_table``, ``delete_partition``), ``hoodie.datasource.write.precombine.field``,
            ``hoodie.datasource.write.partitions.to.delete``, ``hoodie.parquet.max.file.size``,
            ``hoodie.table.version`` (9 default, 8), ``hoodie.metadata.enable``...).
        mode: ``append`` (default) or ``overwrite`` (an ``insert_overwrite_table`` replacecommit that
            atomically replaces every file group, or ``insert_overwrite`` of the partitions present in ``df``
            when the operation option says so; creates the table if missing).
    """
    from pyspark.sql import functions as F

    if not hasattr(df, "sparkSession") or not hasattr(df, "columns"):
        raise InvalidArgumentError(f"write takes a Spark DataFrame, not {type(df).__name__}",
                                   hint="spark.createDataFrame(pandas_df) or spark.createDataFrame(arrow_table)")
    check_argument_types(path=path, options=options)
    path = local_table_path(path)  # a file: URI wrote a stray table under ./file:/... (session 31's probe)
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    require_keepable_column_names(df.columns)  # before Spark's own AMBIGUOUS_REFERENCE on our working columns
    meta_cols = [c for c in df.columns if c in META_COLUMNS]
    if meta_cols:
        df = df.drop(*meta_cols)
    # the services after the commit (automatic clean, async clustering): their options are refused now,
    # before anything is written
    checked = cfg.resolve_options({k: v for k, v in (options or {}).items() if k != "path"})
    if cfg.RECONCILE_SCHEMA.get(checked) and cfg.OPERATION.get(checked) not in (WriteOperation.DELETE,
                                                                              WriteOperation.DELETE_PARTITION):
        df = _reconciled(df, path)
    df_schema = spark_to_arrow_schema(df)
    CleanConfig.from_options(checked)
    full_rows = cfg.OPERATION.get(checked) not in (WriteOperation.DELETE, WriteOperation.DELETE_PARTITION)
    check_async_options(checked, [c for c in df.columns if c not in META_COLUMNS] if full_rows else None)
    in_data = _partitions_in_data(df, path, options)
    calendar = datetime_rebase_write_mode(df.sparkSession)
    if calendar != "CORRECTED" and cfg.OPERATION.get(checked) not in (WriteOperation.DELETE,
                                                                     WriteOperation.DELETE_PARTITION):
        refuse_old_datetimes(df, df_schema, calendar)  # before anything is written (the executors check every file too)
    session = WriteSession.start(path, options, df_schema, mode == "overwrite", partitions_in_data=in_data,
                                 datetime_rebase_mode=calendar)
    try:
        tagged: TagSnapshot | None = None
        written: list[WrittenFile] = []
        metrics = None
        with watch(df.sparkSession, f"{session.operation.value} into {session.base.name}"):
            if session.operation.merges_by_key:
                written, tagged, metrics = run_upsert(df, session)
                log.info("%s %s: %s", session.operation.value, session.pending.instant_time, metrics)
            elif session.operation is WriteOperation.INSERT and cfg.WRITE_SMALL_FILE_LIMIT.get(session.opts):
                written = run_packed_insert(df, session)
            elif session.operation is not WriteOperation.DELETE_PARTITION:
                prepared = df.select(*[F.col(f"`{c}`") for c in session.spec.data_columns],
                                     record_key_expr(session.record_keys, df.schema).alias(RECORD_KEY_COLUMN),
                                     *partition_value_exprs(session.partition_fields, df.schema))
                written = run_file_writer(prepared, session.spec)
        result = session.commit(written, tagged=tagged)
        if metrics is not None:
            result = replace(result, candidate_files=metrics.candidate_files,
                             seconds_tagging=metrics.seconds_summary + metrics.seconds_tag)
    except BaseException:
        session.abort()
        raise
    if session.evolves_schema:  # the SQL tables of this session follow the new schema
        sync_sql_tables(df.sparkSession, str(session.base))
    refresh_cached_sql_tables(df.sparkSession, str(session.base))  # CACHE TABLE answers the new rows
    if session.props.is_mor and cfg.COMPACT_INLINE.get(session.opts):
        maybe_compact_inline(df.sparkSession, str(session.base), session.opts)
    _maybe_inline_cluster(df, session.base, session.opts)
    clean_if_due(session.base, session.opts)  # hoodie.clean.automatic
    if cfg.CLUSTERING_ASYNC_ENABLED.get(session.opts):
        ensure_async_clustering(df.sparkSession, str(session.base), session.opts)
    return result


def _reconciled(df: DataFrame, path: str) -> DataFrame:
    """``hoodie.datasource.write.reconcile.schema=true``, as Hudi does it: a batch written in an older schema
    of the table gets the table's columns first - a table column it lacks as typed nulls, a column of a type
    the table widened since (int for a long column, string for a binary one) cast to the table's type. Its
    own new columns stay (they evolve the table as usual); anything else is checked as for every write. An
    upsert of such a batch therefore writes null into the columns it lacks, as Hudi's does."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    from hudi_layout.format.schema_evolution import is_widening, same_type
    from hudi_layout.writer.transaction import table_arrow_schema

    base = table_dir(path)
    if not table_config_exists(base / ".hoodie"):
        return df  # a new table: the batch's schema is the table's
    table = table_arrow_schema(base, load_properties(base / ".hoodie"))
    if table is None:
        return df
    data = spark_to_arrow_schema(df)
    columns = []
    for f in table:
        if f.name not in data.names:
            columns.append(F.lit(None).cast(from_arrow_type(f.type)).alias(f.name))
            continue
        got = data.field(f.name).type
        narrower = not same_type(f.type, got) and is_widening(got, f.type)
        column = F.col(f"`{f.name}`")
        columns.append(column.cast(from_arrow_type(f.type)).alias(f.name) if narrower else column)
    columns += [F.col(f"`{n}`") for n in data.names if n not in table.names]
    return df.select(*columns)


def _partitions_in_data(df: DataFrame, path: str, options: Mapping[str, Any] | None) -> list[str] | None:
    """``delete_partition`` without ``hoodie.datasource.write.partitions.to.delete``: the partition paths of
    the rows (one small Spark job), computed with the existing table's partitioning."""
    opts = cfg.resolve_options({k: v for k, v in (options or {}).items() if k != "path"})
    if cfg.OPERATION.get(opts) is not WriteOperation.DELETE_PARTITION or cfg.PARTITIONS_TO_DELETE.get(opts):
        return None
    hoodie = table_dir(path) / ".hoodie"
    if not table_config_exists(hoodie):
        return None  # WriteSession.start reports the missing table
    props = load_properties(hoodie)
    for f in props.partition_fields:
        if f not in df.columns:
            raise InvalidArgumentError(f"delete_partition: partition field {f!r} is not a column of the DataFrame",
                                       hint=f"or name the partitions in {cfg.PARTITIONS_TO_DELETE.key}")
    rule = PartitionPathRule(tuple(props.partition_fields), props.hive_style_partitioning,
                             props.url_encode_partitioning)
    # distinct partition values only (metadata-sized), encoded on the driver with the table's one rule
    rows = df.select(*partition_value_exprs(props.partition_fields, df.schema)).distinct().collect()
    return sorted({rule.path([r[i] for i in range(len(props.partition_fields))]) for r in rows})


def _maybe_inline_cluster(df: DataFrame, base: Path, opts: Mapping[str, str]) -> None:
    if not cfg.CLUSTERING_INLINE.get(opts):
        return
    maybe_cluster_inline(df.sparkSession, str(base), opts)
