"""``write()``: a Spark DataFrame into a Copy-on-Write Hudi table (``bulk_insert`` / ``insert`` / overwrite).

One transaction (:class:`hudi_layout.writer.transaction.WriteSession`) around one Spark job
(:mod:`hudi_layout.spark.write_job`), then inline clustering when ``hoodie.clustering.inline`` is on, and
the clustering service in a background thread when ``hoodie.clustering.async.enabled`` is on.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanConfig, clean_if_due
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.services.clustering_service import check_async_options, ensure_async_clustering, maybe_cluster_inline
from hudi_layout.spark.progress import watch
from hudi_layout.spark.write_job import (
    partition_value_exprs,
    record_key_expr,
    run_file_writer,
    spark_to_arrow_schema,
)
from hudi_layout.writer.base_file_writer import RECORD_KEY_COLUMN
from hudi_layout.writer.transaction import WriteResult, WriteSession

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


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
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    # the services after the commit (automatic clean, async clustering): their options are refused now,
    # before anything is written
    checked = cfg.resolve_options({k: v for k, v in (options or {}).items() if k != "path"})
    CleanConfig.from_options(checked)
    check_async_options(checked)
    session = WriteSession.start(path, options, df_schema, mode == "overwrite")
    try:
        prepared = df.select(*[F.col(f"`{c}`") for c in session.spec.data_columns],
                             record_key_expr(session.record_keys).alias(RECORD_KEY_COLUMN),
                             *partition_value_exprs(session.partition_fields))
        with watch(df.sparkSession, f"ingest into {session.base.name}"):
            written = run_file_writer(prepared, session.spec)
        result = session.commit(written)
    except BaseException:
        session.abort()
        raise
    _maybe_inline_cluster(df, session.base, session.opts)
    clean_if_due(session.base, session.opts)  # hoodie.clean.automatic
    if cfg.CLUSTERING_ASYNC_ENABLED.get(session.opts):
        ensure_async_clustering(df.sparkSession, str(session.base), session.opts)
    return result


def _maybe_inline_cluster(df: DataFrame, base: Path, opts: Mapping[str, str]) -> None:
    if not cfg.CLUSTERING_INLINE.get(opts):
        return
    maybe_cluster_inline(df.sparkSession, str(base), opts)
