"""``hudi-layout index``: build (or rebuild) the ``files`` + ``column_stats`` metadata table of an existing
table, e.g. one written by Hudi without the index.

Statistics of base files come from their parquet footers (the driver reads no data). A column chunk without
footer statistics, and float/double columns (footers drop NaN from min/max, so no safe upper bound exists),
get no stats record: data skipping then keeps those files. The result names the float columns left so
(``unindexed_columns``): a rebuild over files our writers indexed exactly would lose their skipping on those
columns until the files are rewritten. ``read_floats=True`` (CLI ``--read-floats``) closes that gap: a Spark
job reads those columns of every base file and computes the writers' NaN-exact statistics
(``spark/index_job.py``). Log files of Merge-on-Read slices carry no statistics at all: the same Spark job
reads their records, as Hudi's indexer does in its executors. Without floats to read or log files, no Spark
starts. The new MDT is created under the table lock with
init instants, exactly as on a first write, and ``hoodie.table.metadata.partitions`` is set last, so readers
never see a half-built index.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.capabilities import (
    MAINTAINABLE_MDT_PARTITIONS,
    Action,
    require,
    unmaintainable_mdt_partitions,
)
from hudi_layout.format.commit_metadata import NAN_EXACT_THROUGH_KEY
from hudi_layout.format.file_naming import is_log_file_name
from hudi_layout.format.instant import SAVEPOINT
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.format.properties import TableProperties, load_properties, metadata_table_exists
from hudi_layout.format.schema_conversion import readable_arrow_schema
from hudi_layout.metadata.mdt_writer import MetadataWriter, update_data_table_properties
from hudi_layout.table.commit_protocol import refuse_pending_restore
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock
from hudi_layout.table.paths import table_dir
from hudi_layout.writer.base_file_writer import stats_supported
from hudi_layout.writer.metadata_sync import (
    drop_metadata_table_locked,
    existing_file_stats,
    float_columns_to_read,
    indexed_columns,
    table_types,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _check_indexable(props: TableProperties, schema: pa.Schema | None, columns: Sequence[str]) -> None:
    """Every named column is a top-level column of the table (``schema``) with statistics we keep (before
    anything is dropped: a misspelt name rebuilt the index with no records)."""
    if schema is None:
        return  # a table without any schema yet has no files to index
    by_name = {f.name: f for f in schema}
    for name in columns:
        if name in META_COLUMNS:
            continue  # indexed as Hudi indexes them (strings)
        field = by_name.get(name)
        if field is None:
            raise InvalidArgumentError(f"--columns: {name!r} is not a column of {props.table_name!r}",
                                       hint=f"columns: {', '.join(n for n in by_name if not n.startswith('_hoodie'))}")
        if not stats_supported(field.type):
            raise InvalidArgumentError(f"--columns: column {name!r} ({field.type}) has no min / max statistics to "
                                       "index",
                                       hint="name columns of numeric, string, binary, boolean, date or timestamp type")


def build_column_stats_index(path: str, options: Mapping[str, Any] | None = None, *,
                             columns: Sequence[str] | None = None, rebuild: bool = False,
                             read_floats: bool = False,
                             spark: SparkSession | Callable[[], SparkSession] | None = None) -> dict[str, Any]:
    """Build (``rebuild``: drop and build again) the table's ``files`` + ``column_stats`` metadata table.
    ``read_floats``: also index float / double columns of the existing base files, from their data, in a Spark
    job (which also describes the log files of Merge-on-Read slices). ``spark``: the session, or a function
    starting one (called only when that job has files to read); default the active session, else a new one."""
    started = time.time()
    opts = dict(cfg.resolve_options(options))
    cfg.validate_all(opts)
    cfg.refuse_options_unused_by(options, cfg.INDEX)
    if cfg.COLUMN_STATS_ENABLE.is_given(opts) and not cfg.COLUMN_STATS_ENABLE.get(opts):
        raise InvalidArgumentError(f"index builds the column_stats index, which {cfg.COLUMN_STATS_ENABLE.key}=false "
                                   "turns off", hint="drop the option")
    if not cfg.METADATA_ENABLE.get(opts):
        raise InvalidArgumentError("index builds the metadata table, which hoodie.metadata.enable=false turns off",
                                   hint="drop the option (a write with it set to false drops the metadata table)")
    if columns:
        opts[cfg.COLUMN_STATS_COLUMNS.key] = ",".join(columns)
    base = table_dir(path)
    props = load_properties(base / ".hoodie")
    cfg.refuse_table_config_conflicts(props, options, props.table_name)
    require(props, Action.INDEX)
    listed = list(columns or ()) or cfg.split_fields(cfg.COLUMN_STATS_COLUMNS.get(opts))
    schema_json = HudiTable(str(base)).schema()  # the commits' schema: a rebuild of the index does not change it
    schema = readable_arrow_schema(schema_json) if schema_json is not None else None  # nested columns too
    if listed:
        _check_indexable(props, schema, listed)
    exists = {"status": "exists", "metadata_partitions": props.metadata_partitions,
              "hint": "use --rebuild to drop and rebuild it"}
    if metadata_table_exists(base) and not rebuild:
        return exists  # before the lock: a no-op leaves no file behind (a probe, session 31)
    if rebuild:
        _refuse_dropping_indexes_we_cannot_build(props)
    with TableLock(base):
        refuse_pending_restore(base, props)
        if metadata_table_exists(base) and not rebuild:
            return exists
        # every footer (and the Spark job of floats / log files) is read while the old metadata table still
        # stands: a damaged file, a failed job or Ctrl-C used to leave the table with none (path probe F10)
        existing = existing_file_stats(base, props, opts)
        files, stats = existing.files, existing.stats
        reads_floats = read_floats and schema is not None and bool(float_columns_to_read(schema, opts))
        float_files = existing.base_files if reads_floats else []
        exact: dict[str, str] = {}
        if existing.table is not None and (float_files or existing.log_files):
            from hudi_layout.spark.index_job import read_data_stats
            from hudi_layout.spark.session import session_or_default

            session = spark() if callable(spark) else session_or_default(spark)
            stats.extend(read_data_stats(session, float_files=float_files, log_files=existing.log_files,
                                         types=table_types(existing.table), opts=opts))
            through = nan_exact_through(existing.table) if float_files else None
            if through is not None:
                exact[NAN_EXACT_THROUGH_KEY] = through
        if drop_metadata_table_locked(base, why=None):  # a rebuild: everything is read, so the old one goes now
            props = load_properties(base / ".hoodie")
        listed = cfg.split_fields(cfg.COLUMN_STATS_COLUMNS.get(opts))
        writer = MetadataWriter(base, props, columns_to_index=listed or None,
                                file_group_count=cfg.COLUMN_STATS_FILE_GROUPS.get(opts))
        updates = writer.initialize(files, stats, column_stats_extra=exact)
        update_data_table_properties(base, updates)
    return {"status": "built", "files": sum(len(v) for v in files.values()), "stats_records": len(stats),
            "partitions": len(files), "log_files_read": len(existing.log_files),
            "seconds": round(time.time() - started, 3),
            "unindexed_columns": _float_columns_left_unindexed(schema, opts, stats)}


def _refuse_dropping_indexes_we_cannot_build(props: TableProperties) -> None:
    """``--rebuild`` drops the metadata table and builds ``files`` + ``column_stats`` again: a table whose
    metadata table also holds Hudi's other indexes (record index, secondary indexes, partition stats, bloom
    filters) would lose them without a word, their definitions left in ``.index_defs`` (a probe, session 31)."""
    foreign = unmaintainable_mdt_partitions(props)
    if foreign:
        raise InvalidArgumentError(
            f"index --rebuild would drop the metadata table's partition(s) {', '.join(foreign)}, which hudi_layout "
            f"cannot build again (only {', '.join(MAINTAINABLE_MDT_PARTITIONS)})",
            hint="keep them (reads still skip with the column_stats Hudi maintains), or drop the whole metadata "
                 "table first as Hudi does (a write with hoodie.metadata.enable=false), then run index")


def nan_exact_through(table: HudiTable) -> str | None:
    """The newest completed instant older than every pending one (of any action): every base file with a
    commit time up to it is in the snapshot just read, and no writer can add one later (a pending instant is
    newer, a new one newer still)."""
    pending = [i.requested_time for i in table.timeline.pending() if i.action != SAVEPOINT]
    floor = min(pending) if pending else None
    done = [i.requested_time for i in table.timeline.completed() if floor is None or i.requested_time < floor]
    return max(done) if done else None


def _float_columns_left_unindexed(schema: pa.Schema | None, opts: Mapping[str, str],
                                  stats: Sequence[Any]) -> dict[str, str]:
    """The float / double columns the index would hold but whose existing base files got no record.

    Footers carry no bound that covers NaN, so the index cannot describe those files without reading their
    data (the driver reads metadata only); a rebuild therefore loses skipping on such columns that the
    writers' exact statistics gave. Said in the result rather than silently: files written later are indexed
    again, and a clustering or compaction rewrites the old ones with statistics."""
    if schema is None or not stats:
        return {}  # no schema, or no file described at all (an empty table)
    described = {s.column for s in stats if not is_log_file_name(s.file_name)}
    return {name: f"{schema.field(name).type}: parquet footers hold no NaN-safe bounds, so the files that "
                  "exist now get no statistics on it (files written from now on do; --read-floats reads "
                  "them now, in a Spark job)"
            for name in indexed_columns(opts, schema)
            if name in schema.names and pa.types.is_floating(schema.field(name).type) and name not in described}
