"""What hudi_layout can do with a table, and if not, why: the one place for that rule.

Every entry point asks here before it touches anything: reading (any supported version, COW or MOR),
creating and writing (per write operation), clustering (scheduling and executing alike; MOR slices are read
merged), building the column_stats index, cleaning, and keeping a metadata table in sync. A refusal carries the message
and hint the user sees (:class:`~hudi_layout.errors.UnsupportedTableError`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hudi_layout.errors import UnsupportedTableError
from hudi_layout.format.file_naming import try_parse_base_file_name
from hudi_layout.options import IndexType, QueryType, WriteOperation, key_generator_type

if TYPE_CHECKING:
    from hudi_layout.format.properties import TableProperties

#: table versions whose layout we read (properties, timeline, file names, commit metadata)
READ_VERSIONS = (6, 8, 9)
#: table versions we create, write, cluster, index and clean (timeline layout 2, Avro commit metadata)
WRITE_VERSIONS = (8, 9)
#: the table types a new table may have (``options.TABLE_TYPE`` reads the short forms COW / MOR as these)
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
#: the operations we write. Inserts create new file groups; upserts and deletes find stored keys with a Spark
#: join (Hudi's SIMPLE index, no index partition to maintain) and rewrite the touched file groups (docs/live-writes.md)
WRITE_OPERATIONS = (WriteOperation.BULK_INSERT, WriteOperation.INSERT, WriteOperation.UPSERT, WriteOperation.DELETE,
                    WriteOperation.INSERT_OVERWRITE, WriteOperation.INSERT_OVERWRITE_TABLE,
                    WriteOperation.DELETE_PARTITION)
#: operations the Python data source (``df.write.format("hudi_layout")``) can do: its tasks cannot start the
#: Spark jobs that find stored keys and de-duplicate a batch, so upsert and delete go through hudi_layout.write
DATASOURCE_WRITE_OPERATIONS = (WriteOperation.BULK_INSERT, WriteOperation.INSERT, WriteOperation.INSERT_OVERWRITE,
                               WriteOperation.INSERT_OVERWRITE_TABLE, WriteOperation.DELETE_PARTITION)
#: ``hoodie.index.type`` values whose semantics our tagging has: a key is unique within its partition
TAGGING_INDEX_TYPES = (IndexType.SIMPLE, IndexType.BLOOM)
#: the table property of Hudi tables whose base files leave the partition columns out (refused: we read files)
DROP_PARTITION_COLUMNS_KEY = "hoodie.datasource.write.drop.partition.columns"
#: metadata-table partitions we keep in sync; a table listing any other one is refused for writes
MAINTAINABLE_MDT_PARTITIONS = ("files", "column_stats")


class Action(enum.Enum):
    """Something hudi_layout may be asked to do with an existing table."""

    READ = "read"
    WRITE = "write"
    CLUSTER = "cluster"
    INDEX = "index"
    CLEAN = "clean"
    COMPACT = "compact"
    SAVEPOINT = "savepoint"


@dataclass(frozen=True)
class Refusal:
    """Why an action is refused: the one line the user sees, and what to do about it."""

    message: str
    hint: str | None = None

    def error(self) -> UnsupportedTableError:
        return UnsupportedTableError(self.message, hint=self.hint)


def refusal(props: TableProperties, action: Action, *, operation: WriteOperation | str | None = None,
            query_type: QueryType = QueryType.SNAPSHOT) -> Refusal | None:
    """``None`` when ``action`` is supported on the table described by ``props``, else why not.

    ``operation`` (for :attr:`Action.WRITE`) is checked before the table itself; ``query_type`` says what a
    :attr:`Action.READ` returns. Metadata-table partitions are a separate question
    (:func:`metadata_table_refusal`): only tables that have (or get) a metadata table ask it.
    """
    if action is Action.WRITE and operation is not None:
        why = operation_refusal(operation)
        if why is not None:
            return why
    if action is Action.READ:
        return read_refusal(props, query_type)
    return _TABLE_RULES[action](props)


def require(props: TableProperties, action: Action, *, operation: WriteOperation | str | None = None,
            query_type: QueryType = QueryType.SNAPSHOT) -> None:
    """Raise :class:`UnsupportedTableError` unless ``action`` is supported (see :func:`refusal`)."""
    why = refusal(props, action, operation=operation, query_type=query_type)
    if why is not None:
        raise why.error()


def operation_refusal(operation: WriteOperation | str) -> Refusal | None:
    """Known operations outside :data:`WRITE_OPERATIONS` are refused; unknown names are not ours to judge here
    (the options layer reports them as bad input)."""
    if operation in WRITE_OPERATIONS or not isinstance(operation, WriteOperation):
        return None
    names = ", ".join(o.value for o in WRITE_OPERATIONS)
    return Refusal(f"operation {operation.value!r} is not supported by hudi_layout (supported: {names})",
                   "prepped operations are Hudi-internal; use upsert")


def datasource_operation_refusal(operation: WriteOperation | str) -> Refusal | None:
    """What ``df.write.format("hudi_layout")`` cannot do (see :data:`DATASOURCE_WRITE_OPERATIONS`)."""
    if operation in DATASOURCE_WRITE_OPERATIONS or not isinstance(operation, WriteOperation):
        return operation_refusal(operation)
    return Refusal(f"operation {operation.value!r} is not supported by df.write.format('hudi_layout'): its tasks "
                   "cannot run the Spark jobs that find stored keys and de-duplicate the batch",
                   f"use hudi_layout.write(df, path, {{'hoodie.datasource.write.operation': '{operation.value}', "
                   "...}) (or hudi-layout ingest --operation)")


def index_type_refusal(index_type: IndexType | None) -> Refusal | None:
    """Upserts and deletes tag records per partition (a key is unique within its partition path), the semantics
    of Hudi's non-global ``SIMPLE`` / ``BLOOM`` indexes; other index types promise something else."""
    if index_type is None or index_type in TAGGING_INDEX_TYPES:
        return None
    return Refusal(f"hoodie.index.type={index_type.value.upper()} is not supported by hudi_layout: upserts find "
                   "records with a per-partition key join (the semantics of SIMPLE / BLOOM)",
                   "drop the option or set hoodie.index.type=SIMPLE; global and record-level indexes are not "
                   "maintained")


def version_refusal(version: int, where: str) -> Refusal | None:
    """Versions whose on-disk layout we cannot read at all (checked when ``hoodie.properties`` is loaded)."""
    if version in READ_VERSIONS:
        return None
    return Refusal(f"{where}: table version {version} is not supported (supported: {READ_VERSIONS})")


def creation_refusal(*, table_version: int | None = None, table_type: str | None = None) -> Refusal | None:
    """A new table: Copy-on-Write (``COPY_ON_WRITE``) or Merge-on-Read (``MERGE_ON_READ``, whose writes are
    deltacommits of base files, docs/mor-write.md) of a version we write."""
    if table_type is not None and table_type not in TABLE_TYPES:
        return Refusal(f"table type {table_type!r} is not a Hudi table type",
                       "set hoodie.datasource.write.table.type=COPY_ON_WRITE or MERGE_ON_READ")
    if table_version is not None and table_version not in WRITE_VERSIONS:
        return Refusal(f"hudi_layout creates tables of version 8 or 9, not {table_version}",
                       "set hoodie.table.version=9 (default) or 8")
    return None


def require_creatable(*, table_version: int | None = None, table_type: str | None = None) -> None:
    why = creation_refusal(table_version=table_version, table_type=table_type)
    if why is not None:
        raise why.error()


def unmaintainable_mdt_partitions(props: TableProperties) -> list[str]:
    """The metadata-table partitions the table lists (completed or inflight) that we do not maintain."""
    listed: Iterable[str] = [*props.metadata_partitions, *props.metadata_partitions_inflight]
    return sorted({p for p in listed if p and p not in MAINTAINABLE_MDT_PARTITIONS})


def metadata_table_refusal(props: TableProperties) -> Refusal | None:
    """Keeping the table's metadata table in sync: every listed partition (completed or inflight) must be one we
    maintain, and the version one whose MDT layout we write."""
    foreign = unmaintainable_mdt_partitions(props)
    if foreign:
        names = ", ".join(repr(p) for p in foreign)
        return Refusal(
            f"{props.source}: metadata table partition(s) {names} cannot be maintained by hudi_layout "
            f"(only {', '.join(MAINTAINABLE_MDT_PARTITIONS)})",
            "set hoodie.metadata.enable=false to drop the metadata table (as Hudi does), or disable "
            "those indexes with Hudi, before writing with hudi_layout")
    if props.version not in WRITE_VERSIONS:
        return Refusal(f"metadata table maintenance needs table version 8 or 9, table has {props.version}")
    return None


def require_metadata_maintainable(props: TableProperties) -> None:
    why = metadata_table_refusal(props)
    if why is not None:
        raise why.error()


def clean_timeline_refusal(pending_savepoint_times: Iterable[str]) -> Refusal | None:
    """Cleaning also depends on the timeline: a completed savepoint pins the files it lists (the cleaner keeps
    them), but a savepoint left inflight by a process that stopped lists nothing yet, so which files it was
    meant to pin is unknown: refused until it is completed again or deleted."""
    pending = sorted(pending_savepoint_times)
    if pending:
        return Refusal(f"savepoint {pending[0]} was begun and never completed, so the files it pins are unknown",
                       f"run 'hudi-layout savepoint create PATH --at {pending[0]}' to complete it, or "
                       f"'hudi-layout savepoint delete PATH {pending[0]}' to drop it; then clean")
    return None


# ------------------------------------------------------------------------------------------ per action

def dropped_partition_columns_refusal(props: TableProperties, action: str) -> Refusal | None:
    """A partitioned table written with ``hoodie.datasource.write.drop.partition.columns=true`` keeps its partition
    values only in folder names; hudi_layout reads every column from the base files, so its reads would answer
    NULL for them (session 15: ``part = '1'`` returned no rows) and its writes would break the table's rule."""
    dropped = (props.get(DROP_PARTITION_COLUMNS_KEY) or "").strip().lower() == "true"
    if not dropped or not props.partition_fields:
        return None
    return Refusal(f"table {props.table_name!r} was written with {DROP_PARTITION_COLUMNS_KEY}=true: its base files do "
                   f"not hold the partition columns {props.partition_fields}, which hudi_layout {action} from the "
                   "files", "read it with Hudi or hudi-rs, which take partition values from the folder names")


def column_name_changes_refusal(props: TableProperties, action: str) -> Refusal | None:
    """A table whose Hudi internal schema history renamed a column, or dropped a name and added it again
    (:mod:`hudi_layout.format.internal_schema`): Hudi matches a file's columns by id, hudi_layout by name, so
    its reads would answer NULL under a new name (or another column's old values) and its writes would add
    files the history does not describe."""
    if not props.column_name_changes:
        return None
    shown = "; ".join(props.column_name_changes[:3]) + ("; ..." if len(props.column_name_changes) > 3 else "")
    return Refusal(f"table {props.table_name!r} keeps Hudi's internal schema (schema on read, .hoodie/.schema) and "
                   f"its history changed column names ({shown}); hudi_layout {action} columns by name",
                   "read it with Hudi (hoodie.schema.on.read.enable=true), or rewrite it once under the current "
                   "names with Hudi")


#: the instant of Hudi's metadata bootstrap (``HoodieTimeline.METADATA_BOOTSTRAP_INSTANT_TS``): base files of
#: this instant are "skeletons" holding the meta columns only; the data columns stay in the files of the source
#: dataset (``hoodie.bootstrap.base.path``), which Hudi's readers join to them through the bootstrap index
METADATA_BOOTSTRAP_INSTANT = "00000000000001"


#: text every skeleton's name holds (``<fileId>_<token>_00000000000001.parquet``): a substring test first keeps
#: the check at ~0.4 ms per 10,000 files on every read (20 ms when every name was parsed); names that pass are parsed
_SKELETON_MARK = f"_{METADATA_BOOTSTRAP_INSTANT}."


def bootstrap_skeleton_refusal(base_file_names: Iterable[str], action: str) -> Refusal | None:
    """Refuse to ``action`` file slices of which a base file is a metadata-bootstrap skeleton (named with
    :data:`METADATA_BOOTSTRAP_INSTANT`): hudi_layout reads columns from the base files, so every data column
    would read as NULL, and a rewrite would store those NULLs. Hudi's full-record bootstrap (instant ``...02``)
    writes ordinary files."""
    skeletons = [n for n in base_file_names if _SKELETON_MARK in n and _instant_of(n) == METADATA_BOOTSTRAP_INSTANT]
    if not skeletons:
        return None
    return Refusal(f"cannot {action} {len(skeletons)} base file(s) of Hudi's metadata bootstrap (e.g. {skeletons[0]}): "
                   "they hold the meta columns only, the data stays in the bootstrap source files, which "
                   "hudi_layout does not join", "read the table with Hudi, or rewrite its bootstrapped file groups "
                   "with Hudi first (a clustering or a full-record bootstrap)")


def require_no_bootstrap_skeletons(base_file_names: Iterable[str], action: str) -> None:
    """Raise :func:`bootstrap_skeleton_refusal`'s error, if any."""
    why = bootstrap_skeleton_refusal(base_file_names, action)
    if why is not None:
        raise why.error()


def _instant_of(base_file_name: str) -> str | None:
    parsed = try_parse_base_file_name(base_file_name)
    return parsed.instant_time if parsed is not None else None


def read_refusal(props: TableProperties, query_type: QueryType = QueryType.SNAPSHOT) -> Refusal | None:
    """Reads: any version we read. Merge-on-Read tables: ``snapshot`` merges the log files of each slice
    (:mod:`hudi_layout.scan.merge`), ``read_optimized`` reads base files only, ``incremental`` merges only the
    blocks of the commits in range (``scan.plan.merge_spec_for_plan``)."""
    why = version_refusal(props.version, props.source or props.table_name) or \
        dropped_partition_columns_refusal(props, "reads") or column_name_changes_refusal(props, "reads")
    if why is not None:
        return why
    if query_type is QueryType.INCREMENTAL and not props.populate_meta_fields:
        return Refusal(f"incremental reads of table {props.table_name!r} need the _hoodie_commit_time column, "
                       "which a table with hoodie.populate.meta.fields=false does not store")
    return None


def _read(props: TableProperties) -> Refusal | None:
    return read_refusal(props)


#: the key generators whose record keys and partition paths our writers produce (by type, Avro variants alike):
#: the partition path is the fields' values as text, and the key one field's value or ``f1:v1,f2:v2``
WRITABLE_KEY_GENERATORS = ("SIMPLE", "COMPLEX", "NON_PARTITION")


def key_generator_refusal(props: TableProperties) -> Refusal | None:
    """A table whose key generator derives its partition paths (``TIMESTAMP``: a date formatted from a field;
    ``CUSTOM`` with ``field:TIMESTAMP``) or keys in a way our writers do not: an upsert would write a key to a
    partition folder of the field's raw text, and a delete would look for it there (session 30's interop probe:
    the key then read twice, the delete without effect)."""
    keygen = props.keygenerator
    kind = key_generator_type(keygen) if keygen else ""
    timestamp_fields = [f for f in (props.get("hoodie.table.partition.fields") or "").split(",")
                        if f.partition(":")[2].strip().upper() == "TIMESTAMP"]
    if (kind and kind not in WRITABLE_KEY_GENERATORS) or timestamp_fields:
        what = f"key generator {keygen}" if kind and kind not in WRITABLE_KEY_GENERATORS else \
            f"timestamp partition field(s) {', '.join(timestamp_fields)}"
        return Refusal(f"table {props.table_name!r} uses the {what}; hudi_layout writes only tables whose partition "
                       "path is the partition fields' values (SIMPLE, COMPLEX and NON_PARTITION key generators)",
                       "write this table with Hudi; reading, indexing, clustering and cleaning it work")
    return None


def _write(props: TableProperties) -> Refusal | None:
    return _writer_rules(props) or key_generator_refusal(props)


def _writer_rules(props: TableProperties) -> Refusal | None:
    """What every command that commits to the table needs (writes, cleaning, compaction)."""
    name = props.table_name
    if props.version not in WRITE_VERSIONS:
        return Refusal(f"table {name!r} is version {props.version}; hudi_layout writes only versions 8 and 9",
                       "upgrade the table with Hudi (hoodie.write.auto.upgrade) first; reading version 6 works")
    # Merge-on-Read (versions 8 / 9): every write is a deltacommit of base files; an update rewrites the file
    # group's slice merged with its log files (docs/mor-write.md); what the merge cannot read is refused by it
    if not props.populate_meta_fields:
        return Refusal(f"table {name!r} has hoodie.populate.meta.fields=false, which hudi_layout does not write")
    return dropped_partition_columns_refusal(props, "writes") or column_name_changes_refusal(props, "writes")


def _cluster(props: TableProperties) -> Refusal | None:
    """Scheduling and executing alike: a plan we could not execute is never written."""
    if props.version not in WRITE_VERSIONS:
        return Refusal(f"table version {props.version}: hudi_layout executes clustering on versions 8 and 9 only",
                       "upgrade the table with Hudi first")
    why = dropped_partition_columns_refusal(props, "clusters") or column_name_changes_refusal(props, "clusters")
    if why is not None:
        return why
    # Merge-on-Read: file slices are read merged (base + logs) as Hudi's clustering does; what cannot be merged
    # (merge mode, payload class, ...) is refused by the merge (hudi_layout.scan.merge.merge_config)
    return None


def _index(props: TableProperties) -> Refusal | None:
    """Merge-on-Read tables too: their latest slices' log files are listed in ``files`` without statistics, so
    skipping (ours, and Hudi's, which keeps files the index does not know) never drops their slices."""
    if props.version not in WRITE_VERSIONS:
        return Refusal(f"table version {props.version}: hudi_layout indexes versions 8 and 9 only",
                       "upgrade the table with Hudi first")
    return column_name_changes_refusal(props, "indexes")


def _clean(props: TableProperties) -> Refusal | None:
    """Cleaning deletes replaced file slices (a Merge-on-Read slice: its base file and its log files) and records a
    clean instant: the writer's rules apply (not its key generator: a clean writes no record)."""
    return _writer_rules(props)


def _compact(props: TableProperties) -> Refusal | None:
    """Compaction merges each planned Merge-on-Read slice into a new base file of its file group (a ``commit``):
    the writer's rules apply, and a Copy-on-Write table has nothing to compact."""
    if not props.is_mor:
        return Refusal(f"table {props.table_name!r} is Copy-on-Write: it has no log files to compact",
                       "compaction is for MERGE_ON_READ tables; use hudi-layout cluster to rewrite files")
    return _writer_rules(props)  # each slice stays in its file group's partition: no key generator runs


def _savepoint(props: TableProperties) -> Refusal | None:
    """A savepoint writes a timeline instant naming the files of one commit's snapshot: the writer's rules apply
    (the timeline layout and the file-system view are those we write)."""
    return _writer_rules(props)


_TABLE_RULES = {Action.READ: _read, Action.WRITE: _write, Action.CLUSTER: _cluster, Action.INDEX: _index,
                Action.CLEAN: _clean, Action.COMPACT: _compact, Action.SAVEPOINT: _savepoint}
