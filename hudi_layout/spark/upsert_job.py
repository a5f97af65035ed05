"""The Spark half of an upsert / delete: tag the batch against the table, then merge file groups.

Three Spark jobs with few tasks each; only metadata rows reach the driver (docs/live-writes.md):

1. **summary**: every incoming row gets its record key and partition path (the expressions inserts use), a
   delete flag and its position in the DataFrame (``monotonically_increasing_id``, the tie-breaker of the
   combine step); the rows are cached and summarised per partition path (rows, smallest and largest key, null
   keys).
2. **tag** (Hudi's SIMPLE index): the candidate base files are the latest slices of the partitions the batch
   touches whose ``_hoodie_record_key`` range in the column_stats index meets the batch's key range there (a
   file without statistics stays a candidate). A few Spark tasks read only their key column (pyarrow, bins of
   files) and keep the keys of the batch (its distinct keys broadcast when the batch is small, a Spark join
   otherwise): which base file holds each key.
3. **write**: each row, tagged with the base file of its key (null: a new key), is hash-partitioned by that
   file (new keys by a hash of the key into a few buckets), so all records of a key meet in one task, which
   runs :func:`hudi_layout.writer.merge.merge_partition`: combine the records of each key (largest ordering
   value, then the later row), rewrite its file groups, insert its new keys.

Every shuffle here reads into a handful of tasks (``coalesce`` after small aggregations): with the session's
200 shuffle partitions and partition coalescing off, a 2,000-row upsert spent most of its time scheduling
empty tasks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.errors import UnsupportedTableError
from hudi_layout.format.capabilities import require_no_bootstrap_skeletons
from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.options import WriteOperation
from hudi_layout.scan.merge import MergeSpec, merge_file_slice, merge_spec_for_table
from hudi_layout.spark.curve_sort import balanced_bins
from hudi_layout.spark.write_job import (
    collect_results,
    collect_written,
    partition_value_exprs,
    record_key_expr,
    task_identity,
    with_partition_path,
)
from hudi_layout.table.faults import crash_point
from hudi_layout.table.fs_view import FileSlice
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.writer.base_file_writer import (
    IS_DELETED_FIELD,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
    RESULT_SCHEMA,
    TaskIdentity,
    WriteSpec,
    WrittenFile,
    decode_results,
    null_key_refusal,
    partition_value_column,
    write_partition,
)
from hudi_layout.writer.merge import (
    DELETE_FLAG_COLUMN,
    MERGE_TARGET_COLUMN,
    PACK_PREFIX,
    SEQUENCE_COLUMN,
    MergeRules,
    MergeTarget,
    SliceReader,
    combine_records,
    insert_partition,
    key_lookup,
    merge_broadcast,
    merge_partition,
    merged_keys,
    pack_file_group,
    read_key_column,
    rows_by_partition,
)
from hudi_layout.writer.small_files import PackTarget, average_record_size, plan_packing, small_file_groups
from hudi_layout.writer.transaction import TagSnapshot, WriteSession

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_ORDER = "_hl_order"
_KEY = "_hl_key"
_PART = "_hl_part"
#: a batch at most this many rows is broadcast to the tagging join
BROADCAST_ROWS = 2_000_000
#: new keys go to ceil(rows / this) hash buckets (at most a few per core)
INSERT_ROWS_PER_BUCKET = 1_000_000
#: a batch of at most this many rows and Arrow bytes is broadcast whole and merged in one pass
#: (:func:`broadcast_merge`), as Spark broadcasts the small side of a join; larger batches are tagged and shuffled
BROADCAST_MERGE_ROWS = 500_000
BROADCAST_MERGE_BYTES = 128 << 20
#: the broadcast merge's output: a written file's metadata row, or (``found`` set) a task's found positions
_FOUND = "found"


@dataclass(frozen=True)
class PartitionSummary:
    """The combined batch in one partition path."""

    partition_path: str
    rows: int
    min_key: str | None
    max_key: str | None


@dataclass(frozen=True)
class UpsertMetrics:
    """What the tagging found (for logs and the benchmark)."""

    incoming_rows: int
    candidate_files: int
    files_tagged: int
    rows_tagged: int
    seconds_summary: float
    seconds_tag: float
    seconds_write: float


def incoming_rows(df: DataFrame, session: WriteSession) -> DataFrame:
    """Data columns + record key + partition path + delete flag + position in the DataFrame."""
    from pyspark.sql import functions as F

    data = [F.col(f"`{c}`") for c in session.spec.data_columns]
    key = record_key_expr(session.record_keys, df.schema).alias(RECORD_KEY_COLUMN)
    values = partition_value_exprs(session.partition_fields, df.schema)
    value_names = [partition_value_column(i) for i in range(len(values))]
    if session.operation is WriteOperation.DELETE:
        delete = F.lit(True)
    elif IS_DELETED_FIELD in session.spec.data_columns:
        delete = F.coalesce(F.col(IS_DELETED_FIELD), F.lit(False))
    else:
        delete = F.lit(False)
    rows = df.select(*data, key, *values, delete.alias(DELETE_FLAG_COLUMN),
                     F.monotonically_increasing_id().alias(SEQUENCE_COLUMN))
    rule = session.spec.partition_rule or PartitionPathRule(tuple(session.partition_fields), session.hive_style)
    with_path = with_partition_path(rows, rule, value_names)
    return with_path.select(*[F.col(f"`{c}`") for c in session.spec.data_columns], RECORD_KEY_COLUMN,
                            PARTITION_PATH_COLUMN, DELETE_FLAG_COLUMN, SEQUENCE_COLUMN)


def summarise(batch: DataFrame) -> tuple[list[PartitionSummary], pa.Table | None]:
    """The batch per partition path, and its distinct ``(key, partition)`` pairs when there are at most
    :data:`BROADCAST_ROWS` of them (what the tagging broadcasts; ``None`` above that).

    One Spark job in the common case: the distinct pairs with their row counts come back as Arrow and the
    summary is computed from them here; only a larger batch pays a second, aggregating job."""
    from pyspark.sql import functions as F

    tasks = max(1, batch.sparkSession.sparkContext.defaultParallelism)
    pairs = batch.groupBy(PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN).count().coalesce(tasks).limit(
        BROADCAST_ROWS + 1).toArrow()
    if pairs.num_rows <= BROADCAST_ROWS:
        return _summary_of_pairs(pairs), pairs.select([RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN]).rename_columns(
            [_KEY, _PART])
    rows = batch.groupBy(PARTITION_PATH_COLUMN).agg(
        F.count(F.lit(1)).alias("n"), F.min(RECORD_KEY_COLUMN).alias("lo"), F.max(RECORD_KEY_COLUMN).alias("hi"),
        F.sum(F.when(F.col(RECORD_KEY_COLUMN).isNull(), 1).otherwise(0)).alias("nulls")).coalesce(1).collect()
    if any(r["nulls"] for r in rows):
        raise null_key_refusal()
    return [PartitionSummary(r[PARTITION_PATH_COLUMN], int(r["n"]), r["lo"], r["hi"]) for r in rows], None


def _summary_of_pairs(pairs: pa.Table) -> list[PartitionSummary]:
    """:class:`PartitionSummary` rows from ``(partition, key, count)`` rows."""
    if pairs.column(RECORD_KEY_COLUMN).null_count:
        raise null_key_refusal()
    grouped = pairs.group_by(PARTITION_PATH_COLUMN).aggregate(
        [("count", "sum"), (RECORD_KEY_COLUMN, "min"), (RECORD_KEY_COLUMN, "max")])
    return [PartitionSummary(part, int(n), lo, hi) for part, n, lo, hi in zip(
        grouped.column(PARTITION_PATH_COLUMN).to_pylist(), grouped.column("count_sum").to_pylist(),
        grouped.column(f"{RECORD_KEY_COLUMN}_min").to_pylist(), grouped.column(f"{RECORD_KEY_COLUMN}_max").to_pylist())]


def candidate_slices(table: HudiTable, summary: list[PartitionSummary]) -> list[FileSlice]:
    """Latest slices of the batch's partitions whose key range (column_stats) meets the batch's keys there (a
    Merge-on-Read slice with log files is always a candidate: its logs may hold keys its base file lacks)."""
    by_part = {s.partition_path: s for s in summary if s.rows}
    existing = set(table.partitions())
    parts = sorted(p for p in by_part if p in existing)
    if not parts:
        return []
    slices = table.file_slices(partitions=parts)
    # a rewrite would store NULL in every data column of their rows
    require_no_bootstrap_skeletons((s.base_file_name for s in slices), "merge records into")
    if table.is_mor:
        require_mor_mergeable(table, slices)
    ranges: dict[str, tuple[Any, Any]] = {}
    try:
        index = ColumnStatsIndex(table.base_path)
        if index.available:
            t = index.load_column(RECORD_KEY_COLUMN, parts, live_only=False)  # looked up by the slices' names
            if t.num_rows and pa.types.is_string(t.schema.field("min").type):
                for name, lo, hi in zip(t.column("file_name").to_pylist(), t.column("min").to_pylist(),
                                        t.column("max").to_pylist()):
                    if lo is not None and hi is not None:
                        ranges[name] = (lo, hi)
    except Exception:  # an index we cannot read prunes nothing  # noqa: BLE001
        ranges = {}
    out = []
    for s in slices:
        batch = by_part[s.partition_path]
        known = None if s.has_log_files else ranges.get(s.base_file_name)
        if known is not None and batch.min_key is not None and batch.max_key is not None and (
                known[1] < batch.min_key or known[0] > batch.max_key):
            continue
        out.append(s)
    return out


def require_mor_mergeable(table: HudiTable, slices: Sequence[FileSlice]) -> None:
    """A Merge-on-Read upsert / delete rewrites each touched slice merged with its logs into a new base file:
    refuse log-only groups among ``slices`` (the slices of the partitions a batch touches; no base file:
    written by a writer that indexes log files, which hudi_layout does not), naming the first. File groups of
    a pending compaction take log files only (:attr:`MergeTarget.pending_compaction`; a write that appends
    none is refused by ``WriteSession.check_no_pending_rewrite``, before writing and at commit). The merge
    rules are checked by building them (:func:`slice_reader`)."""
    for s in slices:
        where = f"{s.partition_path + '/' if s.partition_path else ''}{s.file_id}"
        if not s.base_file_name:
            raise UnsupportedTableError(
                f"file group {where} of table {table.properties.table_name!r} has log files but no base file (a "
                "writer that indexes log files wrote it); hudi_layout updates file groups that have a base file",
                hint="compact the table with Hudi first")


def pending_compaction_of(table: HudiTable) -> Callable[[tuple[str, str]], str]:
    """For a file group, the pending compaction that will rewrite it (``""``: none, and on Copy-on-Write tables):
    an upsert or delete may append a log file to such a group, never rewrite it."""
    if not table.is_mor:
        return lambda _group: ""
    return table.fs_view.pending_compaction_of()


def merge_target(s: FileSlice, base_path: Any, pending_compaction: str = "") -> MergeTarget:
    """The file group a merge rewrites: the slice's latest base file (and its log files, Merge-on-Read)."""
    return MergeTarget(s.partition_path, s.file_id, s.base_file_name, s.base_file_path, s.commit_time,
                       tuple(s.log_file_paths(base_path)), pending_compaction)


def slice_reader(table: HudiTable) -> SliceReader | None:
    """How the executors read a Merge-on-Read target's slice merged (base + logs, the table's merge rules at
    this moment: blocks of completed instants only); ``None`` for a Copy-on-Write table. Refuses merge rules
    the reader does not support, before anything is written."""
    if not table.is_mor:
        return None
    return functools.partial(_read_merged_slice, merge_spec_for_table(table))  # picklable: runs in executors


def _read_merged_slice(spec: MergeSpec, target: MergeTarget, columns: Sequence[str] | None = None) -> pa.Table:
    if columns is not None:
        spec = dataclasses.replace(spec, columns=tuple(columns))
    return merge_file_slice(target.base_file_path or None, list(target.log_file_paths), spec=spec)


def tag(batch: DataFrame, candidates: list[FileSlice], tasks: int, keys: Any = None,
        read_slice: SliceReader | None = None, base_path: Any = None) -> DataFrame:
    """``(key, base file name, partition)`` of every batch key found in a candidate file (a key stored in two
    file groups, as plain inserts allow, is found in both).

    With ``keys`` (:func:`broadcast_keys` of the batch's distinct ``(key, partition)`` pairs, see
    :func:`summarise`) each task keeps only the stored keys in that set (one Arrow hash lookup per chunk of
    files), so only the hits leave the Python workers: the 10M stored keys of a 1% upsert no longer cross into
    the JVM for a join. Without, the stored keys are joined with the batch's distinct keys in Spark."""
    from pyspark.sql import functions as F

    spark = batch.sparkSession
    if keys is not None:
        return stored_keys(spark, candidates, tasks, keys, read_slice, base_path)
    distinct = batch.select(F.col(RECORD_KEY_COLUMN).alias(_KEY), F.col(PARTITION_PATH_COLUMN).alias(_PART)
                            ).distinct().coalesce(tasks)
    return stored_keys(spark, candidates, tasks, None, read_slice, base_path).join(distinct, [_KEY, _PART])


def broadcast_keys(spark: Any, keys: pa.Table) -> Any:
    """The batch's distinct ``(key, partition)`` pairs as a Spark broadcast of Arrow key arrays per partition
    path (what Spark's broadcast join would ship anyway). The caller destroys it when the write is done."""
    return spark.sparkContext.broadcast(_keys_by_partition(keys))


def _keys_by_partition(keys: pa.Table) -> dict[str, pa.Array]:
    """The batch's distinct keys per partition path, as Arrow string arrays (the broadcast of :func:`tag`);
    one grouping pass, whatever the number of partitions."""
    grouped = keys.group_by(_PART).aggregate([(_KEY, "list")])
    lists = grouped.column(f"{_KEY}_list").combine_chunks()
    return {part: lists[i].values.cast(pa.string())
            for i, part in enumerate(grouped.column(_PART).to_pylist())}


def stored_keys(spark: Any, candidates: Sequence[FileSlice], tasks: int, wanted: Any = None,
                read_slice: SliceReader | None = None, base_path: Any = None) -> DataFrame:
    """``(key, file name, partition)`` of the rows of the candidate base files, read with pyarrow in a few
    Spark tasks (bins of files by size): every row, or with ``wanted`` (:func:`broadcast_keys`) only the rows
    whose key is wanted. Spark's own parquet scan of the key column paid tens of milliseconds
    per small file (listing, split planning, a reader per file): 1,000 files of 10,000 rows took ~30 s of a
    10M-row upsert here. Only file names and paths travel in the task closure. A Merge-on-Read slice with log
    files gives the keys of its merged rows (``read_slice``)."""
    where = {s.base_file_path: (s.base_file_name, s.partition_path) for s in candidates}
    merged = {s.base_file_path: merge_target(s, base_path) for s in candidates if s.has_log_files}
    bins = balanced_bins([(s.base_file_path, s.total_size_bytes)
                          for s in candidates], 4 * max(1, tasks))
    schema = pa.schema([(_KEY, pa.string()), (MERGE_TARGET_COLUMN, pa.string()), (_PART, pa.string())])

    def read_keys(path: str) -> pa.Array:
        target = merged.get(path)
        if target is None:
            return read_key_column(path)
        return merged_keys(target, read_slice)

    def key_column(path: str) -> pa.Array:
        return read_keys(path).cast(pa.string())

    def every_key(paths: list[str]) -> Iterator[pa.RecordBatch]:
        for path in paths:
            name, part = where[path]
            column = key_column(path)
            n = len(column)
            yield pa.RecordBatch.from_arrays(
                [column, pa.array([name] * n, pa.string()), pa.array([part] * n, pa.string())], schema=schema)

    def wanted_keys(paths: list[str], keys_by_part: Mapping[str, pa.Array]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        by_part: dict[str, list[str]] = {}
        for path in paths:
            by_part.setdefault(where[path][1], []).append(path)
        for part, part_paths in by_part.items():
            if part not in keys_by_part:
                continue
            lookup = pc.SetLookupOptions(keys_by_part[part])
            for path, stored, hits, _at in key_lookup(part_paths, read_keys, lookup):
                n = len(hits)
                yield pa.RecordBatch.from_arrays(
                    [stored.take(pa.array(hits)).cast(pa.string()), pa.array([where[path][0]] * n, pa.string()),
                     pa.array([part] * n, pa.string())], schema=schema)

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in batches:
            for task in ids.column(0).to_pylist():
                if wanted is None:
                    yield from every_key(bins[task])
                else:
                    yield from wanted_keys(bins[task], wanted.value)

    return spark.range(0, len(bins), 1, max(1, len(bins))).mapInArrow(
        mapper, f"{_KEY} string, {MERGE_TARGET_COLUMN} string, {_PART} string")


def _mapper(spec: WriteSpec, targets: Mapping[str, MergeTarget], rules: MergeRules,
            read_slice: SliceReader | None) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return merge_partition(spec, batches, targets, rules, task_identity(), read_slice)

    return mapper


def small_batch(batch: DataFrame) -> pa.Table | None:
    """The incoming rows as Arrow when there are at most :data:`BROADCAST_MERGE_ROWS` of them in at most
    :data:`BROADCAST_MERGE_BYTES`; else ``None``. A first job measures each task's share where it is (no row
    moves; a task stops reading once its share alone is over a limit) and only a batch within both limits is
    collected. Collecting first (up to 500,001 rows of any width) ran the driver's JVM out of memory on a wide
    batch that was never going to be broadcast (session 31's scale probe)."""
    max_rows, max_bytes = BROADCAST_MERGE_ROWS, BROADCAST_MERGE_BYTES

    def measure(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = size = 0
        for b in batches:
            rows, size = rows + b.num_rows, size + b.nbytes
            if rows > max_rows or size > max_bytes:
                break
        yield pa.RecordBatch.from_pydict({"rows": [rows], "bytes": [size]})

    shares = batch.mapInArrow(measure, "rows long, bytes long").collect()
    if sum(s["rows"] for s in shares) > max_rows or sum(s["bytes"] for s in shares) > max_bytes:
        return None
    rows = batch.limit(max_rows + 1).toArrow()
    if rows.num_rows > max_rows or rows.nbytes > max_bytes:  # a source that answers differently the second time
        return None
    return rows


def broadcast_merge(spark: Any, records: pa.Table, session: WriteSession, rules: MergeRules
                    ) -> tuple[list[WrittenFile], TagSnapshot, UpsertMetrics] | None:
    """Upsert / delete a small batch without tagging or shuffle: combine its records here, broadcast them, and
    let each task merge its share of the candidate file groups (:func:`merge_broadcast`: look up, rewrite the
    files holding a key); then insert the new keys. ``None`` (the caller tags and shuffles instead) when a
    candidate file group is under a pending clustering, so that path's clear rejection stays the only one.

    For a 1% upsert of random keys every file group is rewritten anyway: the separate tagging pass over every
    key column and the shuffle of the batch to the file groups' tasks were a third of the write's time."""
    import time

    t0 = time.time()
    if records.column(RECORD_KEY_COLUMN).null_count:  # before combining (session 19: a null key there dropped
        raise null_key_refusal()                       # itself and the next partition's first record, silently)
    combined = combine_records(records, rules)
    ones = pa.array(np.ones(combined.num_rows, dtype=np.int64))
    summary = _summary_of_pairs(combined.select([PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN]).append_column(
        "count", ones))
    table = HudiTable(str(session.base))
    candidates = candidate_slices(table, summary)
    groups = {s.file_group for s in candidates}
    compacting = pending_compaction_of(table)
    if groups & set(table.pending_clustering_file_groups()) or (
            session.spec.log_block_schema is None and any(compacting(g) for g in groups)):
        return None
    read_slice = slice_reader(table)
    t1 = time.time()
    crash_point("upsert.after_tagging")
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    shared = spark.sparkContext.broadcast(combined.combine_chunks())  # one chunk: tasks take from it cheaply
    try:
        written, found = _merge_candidates(spark, session.spec, candidates, shared, rules, parallelism,
                                           read_slice, table.base_path, compacting)
        is_new = np.ones(combined.num_rows, dtype=bool)
        is_new[found] = False
        deletes = combined.column(DELETE_FLAG_COLUMN).to_numpy(zero_copy_only=False).astype(bool)
        new_rows = np.flatnonzero(is_new & ~deletes)
        if len(new_rows):
            packs, new_rows = _assign_packs(table, session, combined, new_rows,
                                            {(w.partition_path, w.file_id) for w in written})
            written += _insert_rows(spark, session.spec, shared, new_rows, parallelism,
                                    first_partition=4 * parallelism, packs=packs)
    finally:
        shared.destroy()
    t3 = time.time()
    merged = [w for w in written if w.is_merge]
    snapshot = TagSnapshot({(w.partition_path, w.file_id): w.prev_base_file for w in merged
                            if w.prev_base_file is not None},
                           _logs_read(candidates, {(w.partition_path, w.file_id) for w in merged}))
    metrics = UpsertMetrics(records.num_rows, len(candidates), len(merged), int(len(np.unique(found))),
                            t1 - t0, 0.0, t3 - t1)
    return written, snapshot, metrics


#: commits read (newest first) for the average record size of small-file packing
RECORD_SIZE_COMMITS = 10
#: hash slots the new keys of a partition are spread over when a shuffled upsert packs small files
PACK_SLOTS = 1 << 16


def packing_plan(table: HudiTable, session: WriteSession, inserts: Mapping[str, int],
                 rewritten: Collection[tuple[str, str]]) -> dict[str, list[PackTarget]]:
    """The small file groups that take this upsert's new keys (``inserts``: how many per partition path), as
    Hudi's upsert partitioner assigns them (:mod:`hudi_layout.writer.small_files`); empty when
    ``hoodie.parquet.small.file.limit`` is 0. ``rewritten``: file groups this write rewrites (or appends a
    log to) for its updates, which are not packed."""
    limit = cfg.WRITE_SMALL_FILE_LIMIT.get(session.opts)
    existing = set(table.partitions())
    parts = sorted(p for p, n in inserts.items() if n > 0 and p in existing)
    if limit <= 0 or not parts:
        return {}
    slices = table.file_slices(partitions=parts)
    compacting = pending_compaction_of(table)
    excluded = set(rewritten) | set(table.pending_clustering_file_groups())
    excluded |= {s.file_group for s in slices if compacting(s.file_group)}
    small = small_file_groups(slices, limit, excluded)
    if not small:
        return {}
    require_no_bootstrap_skeletons((s.base_file_name for group in small.values() for s in group), "add records to")
    recent = list(table.timeline.completed().commits_and_replaces())[-RECORD_SIZE_COMMITS:]
    size = average_record_size(table.timeline.read_commit_metadata(i) for i in reversed(recent))
    return plan_packing({p: inserts[p] for p in parts}, small, session.spec.max_file_size, size)


def pack_name(target: PackTarget) -> str:
    """The merge target name of the new records packed into ``target`` (:data:`PACK_PREFIX`)."""
    return PACK_PREFIX + target.slice.base_file_name


def _logs_read(candidates: Sequence[FileSlice], rewritten: set[tuple[str, str]]
               ) -> dict[tuple[str, str], tuple[str, ...]]:
    """The log files of each rewritten file group's slice as it was read (the commit checks they are still all)."""
    return {(s.partition_path, s.file_id): s.log_file_names for s in candidates
            if (s.partition_path, s.file_id) in rewritten and s.has_log_files}


def _merge_candidates(spark: Any, spec: WriteSpec, candidates: Sequence[FileSlice], shared: Any,
                      rules: MergeRules, parallelism: int, read_slice: SliceReader | None = None,
                      base_path: Any = None, compacting: Callable[[tuple[str, str]], str] = lambda _g: ""
                      ) -> tuple[list[WrittenFile], np.ndarray]:
    """One Spark job: bins of candidate file groups, each task :func:`merge_broadcast` on its bin."""
    if not candidates:
        return [], np.zeros(0, dtype=np.int64)
    targets = {s.base_file_path: merge_target(s, base_path, compacting(s.file_group)) for s in candidates}
    bins = balanced_bins([(s.base_file_path, s.total_size_bytes)
                          for s in candidates], 4 * parallelism)
    schema = pa.schema([*RESULT_SCHEMA, pa.field(_FOUND, pa.binary())])

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task = task_identity()
        for ids in batches:
            for b in ids.column(0).to_pylist():
                result = merge_broadcast(spec, [targets[p] for p in bins[b]], shared.value, rules, task,
                                         read_slice=read_slice)
                rows = [{**r, _FOUND: None} for r in result.written]
                rows.append({_FOUND: result.found.astype(np.int64).tobytes()})
                yield pa.RecordBatch.from_pylist(rows, schema=schema)

    rows = collect_results(spark.range(0, len(bins), 1, len(bins)), mapper, schema)
    found = [np.frombuffer(r[_FOUND], dtype=np.int64) for r in rows if r[_FOUND] is not None]
    written = decode_results([r for r in rows if r[_FOUND] is None])
    return written, (np.concatenate(found) if found else np.zeros(0, dtype=np.int64))


def _assign_packs(table: HudiTable, session: WriteSession, combined: pa.Table, new_rows: np.ndarray,
                  rewritten: Collection[tuple[str, str]]
                  ) -> tuple[list[tuple[MergeTarget, np.ndarray]], np.ndarray]:
    """The broadcast batch's new records (positions ``new_rows``) split between the small file groups of
    :func:`packing_plan` (each takes the next of its partition's records, in batch order) and new file groups
    (the positions returned, ascending)."""
    parts = combined.column(PARTITION_PATH_COLUMN).take(pa.array(new_rows))
    by_part = rows_by_partition(parts)
    plan = packing_plan(table, session, {p: len(at) for p, at in by_part.items()}, rewritten)
    if not plan:
        return [], new_rows
    packs: list[tuple[MergeTarget, np.ndarray]] = []
    packed: list[np.ndarray] = []
    for part, targets in plan.items():
        at = new_rows[by_part[part]]
        offset = 0
        for t in targets:
            packs.append((merge_target(t.slice, table.base_path), at[offset:offset + t.records]))
            offset += t.records
        packed.append(at[:offset])
    left = np.setdiff1d(new_rows, np.concatenate(packed), assume_unique=True)
    return packs, left


def _insert_rows(spark: Any, spec: WriteSpec, shared: Any, positions: np.ndarray, parallelism: int,
                 first_partition: int, packs: Sequence[tuple[MergeTarget, np.ndarray]] = ()) -> list[WrittenFile]:
    """Write the broadcast batch's records at ``positions`` (new keys) as new file groups, and those of
    ``packs`` into their small file groups (:func:`~hudi_layout.writer.merge.pack_file_group`): a few tasks
    each; task partition ids start at ``first_partition`` so commit sequence numbers never repeat those of the
    merge tasks."""
    inserting = max(1, min(3 * parallelism, math.ceil(len(positions) / INSERT_ROWS_PER_BUCKET))) \
        if len(positions) else 0
    slices = [positions[i::inserting] for i in range(inserting)]
    packing = min(len(packs), 3 * parallelism)
    pack_bins = [list(packs[i::packing]) for i in range(packing)]
    tasks = packing + inserting
    if not tasks:
        return []

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task = task_identity()
        for ids in batches:
            for b in ids.column(0).to_pylist():
                identity = TaskIdentity(first_partition + b, task.stage_id, task.attempt_id)
                if b < packing:
                    rows: list[dict[str, Any]] = []
                    seqno = 0
                    encodings: dict[pa.Schema, Any] = {}
                    for target, at in pack_bins[b]:
                        row, used = pack_file_group(spec, target, shared.value.take(pa.array(at)), identity,
                                                    seqno, encodings)
                        seqno += used
                        rows.append(row)
                    yield pa.RecordBatch.from_pylist(rows, schema=RESULT_SCHEMA)
                    continue
                rows_new = shared.value.take(pa.array(slices[b - packing]))  # ascending: batch order kept
                yield from write_partition(spec, iter(rows_new.to_batches()), identity)

    return collect_written(spark.range(0, tasks, 1, tasks), mapper)


def _routed_to_small_files(rows: DataFrame, plan: Mapping[str, Sequence[PackTarget]],
                           inserts: Mapping[str, int]) -> DataFrame:
    """``rows`` with the new keys of each planned partition routed to its small file groups: a key's hash slot
    (of :data:`PACK_SLOTS`) falls in a file group's share of them, in proportion to the records it takes of
    the partition's (estimated) new ones; the other new keys keep a null target (new file groups). All
    records of a key meet in one file group, so they are combined there as usual."""
    from pyspark.sql import functions as F

    spark = rows.sparkSession
    ranges = []
    for part, targets in plan.items():
        total = max(1, inserts.get(part, 0))
        taken = 0
        for t in targets:
            lo = PACK_SLOTS * taken // total
            taken += t.records
            ranges.append((part, lo, PACK_SLOTS * taken // total, pack_name(t)))
    shares = spark.createDataFrame(ranges, "_hl_pp string, _hl_lo long, _hl_hi long, _hl_pack string")
    slot = F.pmod(F.xxhash64(F.col(RECORD_KEY_COLUMN)), F.lit(PACK_SLOTS))
    joined = rows.withColumn("_hl_slot", slot).join(
        F.broadcast(shares), (F.col(PARTITION_PATH_COLUMN) == F.col("_hl_pp")) & (F.col("_hl_slot") >= F.col("_hl_lo"))
        & (F.col("_hl_slot") < F.col("_hl_hi")), "left")
    return joined.withColumn(MERGE_TARGET_COLUMN, F.coalesce(F.col(MERGE_TARGET_COLUMN), F.col("_hl_pack"))).drop(
        "_hl_slot", "_hl_pp", "_hl_lo", "_hl_hi", "_hl_pack")


def _shuffled_by_target(rows: DataFrame, session: WriteSession, targets: int, inserts: int, parallelism: int,
                        extra: Sequence[str] = ()) -> DataFrame:
    """``rows`` (with :data:`MERGE_TARGET_COLUMN`) hash-partitioned by their target, so every record of a
    tagged or packed file group meets in one task; rows without a target (new file groups) by a hash of their
    key into ``ceil(inserts / INSERT_ROWS_PER_BUCKET)`` buckets, at most three tasks per core in all. Keeps the
    data columns, key, partition path, delete flag, ``extra`` and the target."""
    from pyspark.sql import functions as F

    buckets = min(3 * parallelism, max(1, math.ceil(inserts / INSERT_ROWS_PER_BUCKET)))
    n = max(1, min(targets + buckets, 3 * parallelism))
    route = F.coalesce(F.col(MERGE_TARGET_COLUMN),
                       F.concat(F.lit("+"), F.pmod(F.hash(RECORD_KEY_COLUMN), F.lit(buckets)).cast("string")))
    columns = [*session.spec.data_columns, RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN, DELETE_FLAG_COLUMN, *extra,
               MERGE_TARGET_COLUMN]
    return rows.select(*[F.col(f"`{c}`") for c in columns]).repartition(n, route)


def run_packed_insert(df: DataFrame, session: WriteSession) -> list[WrittenFile]:
    """An ``insert`` with ``hoodie.parquet.small.file.limit`` above 0, as Hudi's insert packs: the batch's rows
    per partition path are counted (one small job), the small file groups planned (:func:`packing_plan`), rows
    routed to them by a hash slot of their key (:func:`_routed_to_small_files`, so the share each group takes
    follows the plan), the rest written into new file groups by hash buckets; one write job
    (:func:`~hudi_layout.writer.merge.insert_partition`). Keys are not looked up: a key already stored is stored
    again, as any insert does."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    spark = df.sparkSession
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    batch = incoming_rows(df, session).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = batch.where(~F.col(DELETE_FLAG_COLUMN)).groupBy(PARTITION_PATH_COLUMN).count().coalesce(1).collect()
        inserts = {r[PARTITION_PATH_COLUMN]: int(r["count"]) for r in counts}
        table = HudiTable(str(session.base))
        plan = packing_plan(table, session, inserts, ())
        packs = {pack_name(t): t for group in plan.values() for t in group}
        targets = {name: merge_target(t.slice, table.base_path) for name, t in packs.items()}
        session.check_no_pending_rewrite([t.slice.file_group for t in packs.values()])
        rows = batch.withColumn(MERGE_TARGET_COLUMN, F.lit(None).cast("string"))
        if plan:
            rows = _routed_to_small_files(rows, plan, inserts)
        frame = _shuffled_by_target(rows, session, len(targets), sum(inserts.values()), parallelism)
        spec = session.spec

        def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return insert_partition(spec, batches, targets, task_identity())

        return collect_written(frame, mapper)
    finally:
        batch.unpersist()


def run_upsert(df: DataFrame, session: WriteSession) -> tuple[list[WrittenFile], TagSnapshot, UpsertMetrics]:
    """Summarise, tag and write (or, for a small batch, :func:`broadcast_merge`); returns the files written
    and what the commit must check."""
    import time

    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    rules = session.merge_rules
    assert rules is not None  # set by WriteSession.start for upsert / delete
    spark = df.sparkSession
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    records = small_batch(incoming_rows(df, session))
    if records is not None:
        done = broadcast_merge(spark, records, session, rules)
        if done is not None:
            return done
    t0 = time.time()
    batch = incoming_rows(df, session).persist(StorageLevel.MEMORY_AND_DISK)
    hits = None
    shared_keys = None
    try:
        summary, keys = summarise(batch)
        incoming = sum(s.rows for s in summary)
        t1 = time.time()
        table = HudiTable(str(session.base))
        candidates = candidate_slices(table, summary)
        read_slice = slice_reader(table)
        compacting = pending_compaction_of(table)
        targets: dict[str, MergeTarget] = {}
        tagged_rows = 0
        tagged_in: dict[str, int] = {}
        if candidates:
            shared_keys = None if keys is None else broadcast_keys(spark, keys)
            hits = tag(batch, candidates, parallelism, shared_keys, read_slice, table.base_path
                       ).persist(StorageLevel.MEMORY_AND_DISK)
            counts = hits.groupBy(MERGE_TARGET_COLUMN, _PART).count().coalesce(1).collect()
            by_name = {s.base_file_name: s for s in candidates}
            for r in counts:
                s = by_name[r[MERGE_TARGET_COLUMN]]
                targets[s.base_file_name] = merge_target(s, table.base_path, compacting(s.file_group))
                tagged_rows += int(r["count"])
                tagged_in[s.partition_path] = tagged_in.get(s.partition_path, 0) + int(r["count"])
        t2 = time.time()
        crash_point("upsert.after_tagging")
        touched = [(t.partition_path, t.file_id) for t in targets.values()]
        # new keys per partition, at most: rows less the ones tagged (duplicates and deletes of new keys count)
        new_keys = {s.partition_path: s.rows - tagged_in.get(s.partition_path, 0) for s in summary}
        plan = packing_plan(table, session, new_keys, touched)
        packs = {pack_name(t): t for group in plan.values() for t in group}
        targets.update({name: merge_target(t.slice, table.base_path) for name, t in packs.items()})
        packed = [t.slice.file_group for t in packs.values()]
        if session.spec.log_block_schema is None:
            session.check_no_pending_rewrite([*touched, *packed])
        else:  # each group may take a log file; one a pending compaction holds is refused in its task otherwise
            session.check_no_pending_rewrite(packed, appended=touched)
        if hits is not None and tagged_rows:
            found = hits.select(F.col(_KEY).alias(RECORD_KEY_COLUMN), F.col(_PART).alias(PARTITION_PATH_COLUMN),
                                MERGE_TARGET_COLUMN)
            rows = batch.join(F.broadcast(found) if tagged_rows <= BROADCAST_ROWS else found,
                              [RECORD_KEY_COLUMN, PARTITION_PATH_COLUMN], "left")
        else:
            rows = batch.withColumn(MERGE_TARGET_COLUMN, F.lit(None).cast("string"))
        if plan:
            rows = _routed_to_small_files(rows, plan, new_keys)
        frame = _shuffled_by_target(rows, session, len(targets), max(0, incoming - tagged_rows), parallelism,
                                    (SEQUENCE_COLUMN,))
        spark.sparkContext.setJobDescription(
            f"hudi_layout {session.operation.value} {session.pending.instant_time}: {len(targets)} file groups")
        written = collect_written(frame, _mapper(session.spec, targets, rules, read_slice))
        t3 = time.time()
    finally:
        batch.unpersist()
        if hits is not None:
            hits.unpersist()
        if shared_keys is not None:
            shared_keys.destroy()
    snapshot = TagSnapshot({(t.partition_path, t.file_id): t.base_file_name for t in targets.values()},
                           _logs_read(candidates, {(t.partition_path, t.file_id) for t in targets.values()}))
    metrics = UpsertMetrics(incoming, len(candidates), len(targets), tagged_rows, t1 - t0, t2 - t1, t3 - t2)
    return written, snapshot, metrics
