"""Curve-sort a clustering group: executors read, key, shuffle and sort Arrow data; Spark moves the bytes.

The obvious pipeline — ``spark.read.parquet`` → ``mapInArrow`` (curve key) → shuffle → sort → ``mapInArrow``
(writer) — converts every row between JVM rows and Arrow four times (parquet → rows, rows → Arrow for the
key, Arrow → rows after it, rows → Arrow for the writer), and runs one Spark task per output file. On
2M conn rows (2 cores) each full-row JVM⇄Arrow conversion cost about as much CPU as reading the files, and
200 shuffle partitions cost twice the wall time of 20 from per-task overhead alone.

So for a curve layout the data never becomes JVM rows:

1. :func:`sketch` (one Spark job over the curve columns only, read by pyarrow in the tasks): per-column
   min/max (the ``direct`` method's ranges — exact, like Hudi's min/max aggregation) and a uniform
   Bernoulli sample of codes (the ``sample`` method's quantile bounds, and the bounds of the range
   partitions). Like Spark's own range-partitioner sketch, only samples, min/max and counts reach the
   driver; row counts come from the parquet footers.
2. :func:`write_curve_sorted` (one Spark job): each map task reads its bin of base files with pyarrow,
   computes curve keys, splits its rows by range partition, sorts each piece by key and emits it as one
   Arrow IPC blob in a ``(partition, blob)`` row. Spark shuffles those few large rows to the partition's
   task (``repartition`` on a hash-preimage column, see :func:`~hudi_layout.spark.range_layout.hash_preimages`).
   Each reduce task decodes its blobs, merges them by key (a stable sort of already-sorted runs) and hands
   the rows to the base-file writer, which cuts them into files of ``rows_per_file`` rows.

A reduce task holds its whole partition in memory, so the number of partitions is chosen to keep each under
``hudi_layout.clustering.sort.task.max.bytes`` (estimated), and at least a few per core for balance.
The layout only decides *where* rows go: any key function gives a correct table with every row once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.clustering.qdtree import (
    BOX_SAMPLE_ROWS,
    QdTreeLayout,
    WorkloadBoxes,
    box_candidates,
    box_sample_rows,
    leaf_file_rows,
    leaf_runs,
    workload_sample,
)
from hudi_layout.curves import encode_column, from_sortable_int64, sample_bounds, to_sortable_int64
from hudi_layout.errors import CorruptFileError, HudiLayoutError
from hudi_layout.format.schema_evolution import conform_batch
from hudi_layout.format.spark_calendar import require_stored_calendar
from hudi_layout.scan.merge import MergeSpec
from hudi_layout.spark.curve_key import KEY_COLUMN, CurveParams
from hudi_layout.spark.range_layout import PARTITION_COLUMN, hash_preimages
from hudi_layout.spark.read import SliceInput
from hudi_layout.spark.write_job import collect_written, spark_to_arrow_schema_of, task_identity, write_task
from hudi_layout.writer.base_file_writer import (
    ENCODING_SAMPLE_ROWS,
    WriterInputError,
    WriteSpec,
    WrittenFile,
    task_encoding,
    write_partition,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

_BATCH_ROWS = 65_536
#: input a map task buffers before splitting it into per-partition blobs: small enough that the key-order
#: gather stays in cache (64 MiB: 1.4 s, 4 MiB: 0.84 s per 500k conn rows), times the partitions so that
#: blobs stay ~512 KiB on average
_MAP_FLUSH_BYTES = 4 * 1024 * 1024
_MIN_BLOB_BYTES = 512 * 1024
#: in-memory (Arrow) bytes per byte of snappy parquet, to size reduce tasks (conn data measures ~2)
ARROW_BYTES_PER_PARQUET_BYTE = 3.0
_SAMPLE_ROW, _MIN_ROW, _MAX_ROW, _COUNT_ROW = 0, 1, 2, 3
_BLOB = "blob"
#: uncompressed: Spark's shuffle compresses the blobs anyway (IPC LZ4 on top measured slower)
_IPC_OPTIONS = pa.ipc.IpcWriteOptions()


# ----------------------------------------------------------------------------------------------- inputs

@dataclass(frozen=True)
class MergedInput:
    """A Merge-on-Read file slice as a clustering input: its rows are the merge of base file and log files,
    done in the task that reads it (the curve path's other inputs are base-file paths)."""

    slice: SliceInput
    spec: MergeSpec
    #: the base file's row count from its footer plus the log records' upper bound (a weight for balancing)
    weight: int = 1

    @property
    def name(self) -> str:
        return self.slice.base_file or (self.slice.log_files[0] if self.slice.log_files else "")

    def batches(self, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        yield from self.slice.batches(replace(self.spec, columns=tuple(columns)), _BATCH_ROWS)


#: what a clustering task reads: a base file path, or a slice merged on the spot
Input = str | MergedInput
InputT = TypeVar("InputT", bound=Input)


def _input_name(item: Input) -> str:
    return item if isinstance(item, str) else item.name


@dataclass(frozen=True)
class FooterSummary:
    """Per-file row counts and, per curve column, the ``(min, max)`` code over every file's footer statistics
    (``None`` where some row group has no usable statistics)."""

    rows: tuple[int, ...]
    ranges: tuple[tuple[int, int] | None, ...]


def _footer(path: Input, columns: Sequence[str], types: Sequence[pa.DataType] | None = None
            ) -> tuple[int, list[tuple[int, int] | None | bool]]:
    if isinstance(path, MergedInput):  # merged rows: neither count nor ranges are in any footer
        return path.weight, [False] * len(columns)
    try:
        md = pq.read_metadata(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"cannot read the parquet footer of {path}: {e}") from e
    out: list[tuple[int, int] | None | bool] = []
    try:
        arrow = md.schema.to_arrow_schema()
        index = {md.schema.column(j).path: j for j in range(md.num_columns)}
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return md.num_rows, [False] * len(columns)
    for k, c in enumerate(columns):
        j = index.get(c)
        lo = hi = None
        if j is None and c not in arrow.names and types is not None:
            out.append(None)  # written before the column was added: all null
            continue
        known = j is not None and c in arrow.names
        for rg in range(md.num_row_groups if known else 0):
            group = md.row_group(rg)
            st = group.column(j).statistics
            if st is not None and st.has_min_max:
                try:
                    bounds = pa.array([st.min, st.max], arrow.field(c).type)
                    if types is not None and bounds.type != types[k]:
                        bounds = bounds.cast(types[k])  # a widened column: the table's code space
                    mn, mx = encode_column(bounds)
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                    known = False
                    break
                lo = int(mn) if lo is None else min(lo, int(mn))
                hi = int(mx) if hi is None else max(hi, int(mx))
            elif st is None or st.null_count != group.num_rows:  # values present but no min/max recorded
                known = False
                break
        out.append((lo, hi) if known and lo is not None and hi is not None else (None if known else False))
    return md.num_rows, out


def footer_summary(paths: Sequence[Input], columns: Sequence[str] = (),
                   types: Sequence[pa.DataType] | None = None) -> FooterSummary:
    """Rows of each base file and the curve columns' code ranges from the parquet footers (metadata only).
    A merged slice has unknown ranges and its weight as row count.

    Encoding is monotone, so the code of a footer's min/max is the min/max code; a writer that truncated a
    string statistic only widens the range (footer max rounds up). Ranges decide layout quality, never
    correctness.
    """
    with ThreadPoolExecutor(max_workers=8) as pool:
        per_file = list(pool.map(lambda p: _footer(p, columns, types), paths))
    ranges: list[tuple[int, int] | None] = []
    for j in range(len(columns)):
        values = [f[1][j] for f in per_file]
        if any(v is False for v in values):
            ranges.append(None)
            continue
        present = [v for v in values if isinstance(v, tuple)]
        ranges.append((min(v[0] for v in present), max(v[1] for v in present)) if present else None)
    return FooterSummary(rows=tuple(f[0] for f in per_file), ranges=tuple(ranges))


def sample_files(paths: Sequence[Input], rows: Sequence[int], want_rows: int, seed: int = 17
                 ) -> tuple[list[Input], list[int]]:
    """A seeded random subset of the files holding at least ``want_rows`` rows (all files if fewer)."""
    order = np.random.default_rng(seed).permutation(len(paths))
    chosen, total = [], 0
    for i in order:
        if total >= want_rows:
            break
        chosen.append(int(i))
        total += rows[i]
    chosen.sort()
    return [paths[i] for i in chosen], [rows[i] for i in chosen]


def balanced_bins(files: Sequence[tuple[InputT, int]], n_bins: int) -> list[list[InputT]]:
    """Split ``(path, weight)`` pairs into at most ``n_bins`` bins of similar total weight (largest first,
    each to the lightest bin); paths keep their sorted order inside a bin."""
    n_bins = max(1, min(int(n_bins), len(files)))
    loads = [0] * n_bins
    bins: list[list[InputT]] = [[] for _ in range(n_bins)]
    for path, weight in sorted(files, key=lambda f: (-f[1], _input_name(f[0]))):
        i = loads.index(min(loads))
        bins[i].append(path)
        loads[i] += max(1, weight)
    return [sorted(b, key=_input_name) for b in bins if b]


def task_count(spark: SparkSession, per_core: int = 4) -> int:
    """Tasks for a stage: a few per core (Spark's default parallelism) to balance uneven tasks."""
    return max(1, int(spark.sparkContext.defaultParallelism) * per_core)


def _file_batches(paths: Sequence[Input], columns: Sequence[str],
                  types: Sequence[pa.DataType] | None = None) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of ``paths``, batch by batch. With the table's ``types`` the batches take those types:
    a file written before a column was added yields nulls for it, a widened column is cast (schema evolution,
    :mod:`hudi_layout.format.schema_evolution`), so every file encodes into one code space. Merged
    Merge-on-Read slices come out of the merge (already in the table schema) and are conformed the same way."""
    target = pa.schema([pa.field(c, t) for c, t in zip(columns, types)]) if types is not None else None
    for path in paths:
        if isinstance(path, MergedInput):
            for batch in path.batches(columns):
                yield conform_batch(batch, target) if target is not None else batch
            continue
        try:
            pf = pq.ParquetFile(path)
        except (OSError, pa.ArrowException) as e:
            raise WriterInputError(f"cannot read base file {path}: {e}", kind="CorruptFileError") from e
        try:
            require_stored_calendar(pf.metadata, path, "rewrite")
        except HudiLayoutError as e:
            raise WriterInputError.of(e) from None
        present = set(pf.schema_arrow.names)
        missing = [c for c in columns if c not in present]
        if missing and target is None:
            raise WriterInputError(f"base file {path} lacks columns {missing}")
        if len(missing) == len(columns):  # none of the columns: every row is null in all of them
            assert target is not None
            for rows in _row_counts(pf):
                yield pa.RecordBatch.from_arrays([pa.nulls(rows, t) for t in target.types], schema=target)
            continue
        wanted = [c for c in columns if c in present]
        batches = pf.iter_batches(batch_size=_BATCH_ROWS, columns=wanted)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except (OSError, pa.ArrowException) as e:  # a damaged page, not only a damaged footer
                raise WriterInputError(f"cannot read base file {path}: {e}", kind="CorruptFileError") from e
            yield conform_batch(batch, target) if target is not None else batch.select(list(columns))


def _row_counts(pf: pq.ParquetFile) -> Iterator[int]:
    md = pf.metadata
    for rg in range(md.num_row_groups):
        rows = md.row_group(rg).num_rows
        for start in range(0, rows, _BATCH_ROWS):
            yield min(_BATCH_ROWS, rows - start)


# ----------------------------------------------------------------------------------------------- sketch

@dataclass(frozen=True)
class Sketch:
    """What the sketch job learned about the curve columns of a group."""

    rows: int
    #: per column ``(min, max)`` code over non-null values (``None``: all null)
    ranges: tuple[tuple[int, int] | None, ...]
    #: per column ``uint64`` codes of the same uniformly sampled rows
    sample: tuple[np.ndarray, ...]
    #: with workload boxes: per column codes of a sample holding at least ``box_sample_rows(boxes)`` rows of
    #: each box, and the rows each sampled row stands for (:func:`~hudi_layout.clustering.qdtree.workload_sample`)
    workload: tuple[tuple[np.ndarray, ...], np.ndarray] | None = None


def _sortable(code: int | None) -> int | None:
    """One code as the ``long`` Spark carries it (:func:`to_sortable_int64`)."""
    return None if code is None else int(to_sortable_int64(np.array([code], np.uint64))[0])


def _sketch_task(paths: list[Input], columns: tuple[str, ...], rate: float, seed: int,
                 types: Sequence[pa.DataType] | None = None, boxes: WorkloadBoxes | None = None,
                 per_box: int = BOX_SAMPLE_ROWS) -> pa.RecordBatch:
    """One task of :func:`sketch`: extremes, row count and sampled rows (codes and priority) of ``paths``.
    With ``boxes``, the sampled rows also hold each box's ``per_box`` lowest-priority rows (every row's codes
    are computed then; otherwise only the uniformly sampled rows')."""
    k = len(columns)
    rng = np.random.default_rng(seed)
    rows = 0
    lo: list[int | None] = [None] * k
    hi: list[int | None] = [None] * k
    picked: list[list[np.ndarray]] = [[] for _ in range(k)]
    priorities: list[np.ndarray] = []
    held: tuple[list[np.ndarray], np.ndarray] | None = None  # box candidates so far: codes, priority
    for batch in _file_batches(paths, columns, types):
        for j in range(k):
            mm = pc.min_max(batch.column(j))
            if mm["min"].is_valid:  # encoding is monotone, so it commutes with min / max
                mn, mx = encode_column(pa.array([mm["min"].as_py(), mm["max"].as_py()], batch.column(j).type))
                low, high = lo[j], hi[j]
                lo[j] = int(mn) if low is None else min(low, int(mn))
                hi[j] = int(mx) if high is None else max(high, int(mx))
        u = rng.random(batch.num_rows) if rate < 1.0 else np.zeros(batch.num_rows)
        if boxes is not None and rate < 1.0:
            codes = [encode_column(batch.column(j), name=columns[j]) for j in range(k)]
            uniform = np.flatnonzero(u < rate)
            extra = box_candidates(codes, u, boxes, per_box)
            extra = extra[u[extra] >= rate]  # the uniform rows are kept anyway
            if held is not None:
                merged = [np.concatenate([a, c[extra]]) for a, c in zip(held[0], codes)]
                mu = np.concatenate([held[1], u[extra]])
                keep = box_candidates(merged, mu, boxes, per_box)
                held = ([c[keep] for c in merged], mu[keep])
            else:
                held = ([c[extra] for c in codes], u[extra])
            for j in range(k):
                picked[j].append(codes[j][uniform])
            priorities.append(u[uniform])
        else:
            chosen = batch.filter(pa.array(u < rate)) if rate < 1.0 else batch
            if chosen.num_rows:
                for j in range(k):
                    picked[j].append(encode_column(chosen.column(j), name=columns[j]))
                priorities.append(u[u < rate] if rate < 1.0 else u)
        rows += batch.num_rows
    if held is not None:
        for j in range(k):
            picked[j].append(held[0][j])
        priorities.append(held[1])
    sample = [np.concatenate(p) if p else np.empty(0, np.uint64) for p in picked]
    prio = np.concatenate(priorities) if priorities else np.empty(0)
    m = sample[0].size if k else 0
    kinds = np.concatenate([np.full(m, _SAMPLE_ROW, np.int32), np.array([_MIN_ROW, _MAX_ROW, _COUNT_ROW], np.int32)])
    arrays: list[pa.Array] = [pa.array(kinds), pa.array(np.concatenate([np.zeros(m, np.int64), [0, 0, rows]])),
                              pa.array(np.concatenate([prio, [0.0, 0.0, 0.0]]))]
    for j in range(k):
        extremes = pa.array([_sortable(lo[j]), _sortable(hi[j]), None], pa.int64())
        arrays.append(pa.concat_arrays([pa.array(to_sortable_int64(sample[j])), extremes]))
    return pa.RecordBatch.from_arrays(arrays, names=["kind", "n", "u", *[f"c{j}" for j in range(k)]])


def sketch(spark: SparkSession, bins: list[list[Input]], columns: Sequence[str], rows: int, sample_rows: int,
           seed: int = 17, types: Sequence[pa.DataType] | None = None,
           boxes: WorkloadBoxes | None = None, workload_rows: int | None = None) -> Sketch:
    """One Spark job over the curve columns of ``bins`` (``rows`` rows in all): min/max codes and a uniform
    sample of about ``sample_rows`` rows' codes; with workload ``boxes`` also :attr:`Sketch.workload`, whose
    uniform part is about ``workload_rows`` of those rows (default: all of them; the rows of both samples drew
    one priority each, so the smaller is a subset of the larger)."""
    cols = tuple(columns)
    k = len(cols)
    rate = 1.0 if rows <= sample_rows else 1.1 * sample_rows / rows
    workload_rate = rate if workload_rows is None or rows <= workload_rows else min(rate, 1.1 * workload_rows / rows)
    per_box = box_sample_rows(boxes) if boxes is not None else BOX_SAMPLE_ROWS

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in batches:
            for task in ids.column(0).to_pylist():
                yield _sketch_task(bins[task], cols, rate, seed + task, types, boxes, per_box)

    schema = ", ".join(["kind int", "n long", "u double", *[f"c{j} long" for j in range(k)]])
    out = spark.range(0, len(bins), 1, len(bins)).mapInArrow(mapper, schema).toArrow()  # samples + extremes
    kind = out.column("kind").to_numpy()
    ranges: list[tuple[int, int] | None] = []
    for j in range(k):
        col = out.column(f"c{j}")
        mn = pc.drop_null(col.filter(pa.array(kind == _MIN_ROW))).to_numpy()
        mx = pc.drop_null(col.filter(pa.array(kind == _MAX_ROW))).to_numpy()
        ranges.append((int(from_sortable_int64(mn).min()), int(from_sortable_int64(mx).max())) if mn.size else None)
    is_sample = kind == _SAMPLE_ROW
    # fill the nulls of the extreme rows first: a nullable int64 column would convert through float64
    sampled = tuple(from_sortable_int64(pc.fill_null(out.column(f"c{j}"), 0).to_numpy()[is_sample])
                    for j in range(k))
    counted = int(out.column("n").to_numpy()[kind == _COUNT_ROW].sum())
    if boxes is None or rate >= 1.0:
        return Sketch(rows=counted, ranges=tuple(ranges), sample=sampled)
    u = out.column("u").to_numpy()[is_sample]
    uniform = u < rate
    keep, weights = workload_sample(sampled, u, boxes, workload_rate, per_box)
    return Sketch(rows=counted, ranges=tuple(ranges), sample=tuple(c[uniform] for c in sampled),
                  workload=(tuple(c[keep] for c in sampled), weights))


def params_from_sketch(sk: Sketch, columns: Sequence[str], curve: str, method: str,
                       bits: int | tuple[int, ...]) -> CurveParams:
    """The global reduction of the ``direct`` (min/max ranges) or ``sample`` (quantile bounds) method."""
    if method == "direct":
        return CurveParams(curve, tuple(columns), bits, ranges=sk.ranges)
    widths = bits if isinstance(bits, tuple) else (bits,) * len(columns)
    return CurveParams(curve, tuple(columns), bits,
                       bounds=tuple(sample_bounds(s, b) for s, b in zip(sk.sample, widths)))


def partition_bounds(params: CurveParams, sk: Sketch, n: int) -> np.ndarray:
    """``n - 1`` ascending curve-key bounds splitting the sampled rows into ``n`` equal-count ranges."""
    if n <= 1 or not sk.sample or sk.sample[0].size == 0:
        return np.empty(0, dtype=np.uint64)
    keys = np.sort(params.keys_from_codes(list(sk.sample)))
    idx = (np.arange(1, n) * keys.size) // n
    return keys[np.minimum(idx, keys.size - 1)]


# ------------------------------------------------------------------------------------------ map / reduce

class SortKey(Protocol):
    """A layout's sort key: :class:`~hudi_layout.spark.curve_key.CurveParams` (a curve) or
    :class:`~hudi_layout.clustering.qdtree.QdTreeLayout` (leaf id, then a curve inside the leaf)."""

    def keys(self, table: pa.Table | pa.RecordBatch) -> np.ndarray: ...

    def keys_from_codes(self, codes: Sequence[np.ndarray]) -> np.ndarray: ...


def _split_sorted(buffered: list[pa.RecordBatch], params: SortKey, bounds: np.ndarray,
                  preimages: np.ndarray) -> pa.RecordBatch:
    """One ``(partition preimage, blob)`` row per range partition present, each blob sorted by key."""
    # one chunk per column: ``take`` over many small chunks is several times slower than one copy + take
    table = pa.Table.from_batches(buffered).combine_chunks()
    key = params.keys(table)
    part = np.searchsorted(bounds, key, side="right") if bounds.size else np.zeros(key.size, np.int64)
    order = np.argsort(key, kind="stable")  # partitions are key ranges: key order groups them too
    table = table.append_column(KEY_COLUMN, pa.array(to_sortable_int64(key))).take(order)
    counts = np.bincount(part, minlength=len(preimages))
    starts = np.concatenate([[0], np.cumsum(counts)])
    present = np.flatnonzero(counts)
    # all blobs are written back to back into one buffer that becomes the binary column (no copies)
    sink = pa.BufferOutputStream()
    offsets = [0]
    for p in present:
        with pa.ipc.new_stream(sink, table.schema, options=_IPC_OPTIONS) as writer:
            writer.write_table(table.slice(int(starts[p]), int(counts[p])))
        offsets.append(sink.tell())
    blobs = pa.BinaryArray.from_buffers(pa.binary(), len(present),
                                        [None, pa.py_buffer(np.array(offsets, np.int32)), sink.getvalue()])
    return pa.RecordBatch.from_arrays([pa.array(preimages[present], pa.int32()), blobs],
                                      names=[PARTITION_COLUMN, _BLOB])


def _map_mapper(bins: list[list[Input]], names: tuple[str, ...], arrow_schema: pa.Schema, params: SortKey,
                bounds: np.ndarray, preimages: np.ndarray):
    targets = [arrow_schema.field(n).type for n in names]
    flush_bytes = max(_MAP_FLUSH_BYTES, min(len(preimages) * _MIN_BLOB_BYTES, 256 * 1024 * 1024))

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in batches:
            for task in ids.column(0).to_pylist():
                buffered: list[pa.RecordBatch] = []
                size = 0
                for batch in _file_batches(bins[task], names, targets):
                    arrays = [a if a.type == t else a.cast(t) for a, t in zip(batch.columns, targets)]
                    buffered.append(pa.RecordBatch.from_arrays(arrays, names=list(names)))
                    size += batch.nbytes
                    if size >= flush_bytes:
                        yield _split_sorted(buffered, params, bounds, preimages)
                        buffered, size = [], 0
                if buffered:
                    yield _split_sorted(buffered, params, bounds, preimages)

    return mapper


def _decoded_blobs(batches: Iterator[pa.RecordBatch]) -> tuple[pa.Table, np.ndarray] | None:
    """A reduce task's blobs as one table (key column included) and the stable order that sorts it by key
    (the blobs are pre-sorted runs, so this is a merge)."""
    tables = []
    for b in batches:
        blobs = b.column(1)
        for i in range(len(blobs)):
            with pa.ipc.open_stream(blobs[i].as_buffer()) as reader:  # zero-copy views of the blob
                tables.append(reader.read_all())
    if not tables:
        return None
    table = pa.concat_tables(tables).combine_chunks()
    return table, np.argsort(table.column(KEY_COLUMN).to_numpy(), kind="stable")


def _gathered(table: pa.Table, order: np.ndarray) -> Iterator[pa.RecordBatch]:
    for start in range(0, len(order), _BATCH_ROWS):  # gathered slice by slice: no full sorted copy
        yield from table.take(order[start:start + _BATCH_ROWS]).to_batches()


def _merged_rows(batches: Iterator[pa.RecordBatch], keep_key: bool = False) -> Iterator[pa.RecordBatch]:
    """Decode a reduce task's blobs and yield its rows in key order (the key column only with ``keep_key``:
    the writer then records each file's key range)."""
    got = _decoded_blobs(batches)
    if got is None:
        return
    table, order = got
    if not keep_key:
        table = table.drop_columns([KEY_COLUMN])
    yield from _gathered(table, order)


def write_curve_sorted(spark: SparkSession, bins: list[list[Input]], schema: StructType, params: CurveParams,
                       sk: Sketch, n_partitions: int, spec: WriteSpec) -> list[WrittenFile]:
    """Lay the rows of ``bins`` (the columns of ``schema``) out along the curve in ``n_partitions`` range
    partitions and write them as base files of ``spec`` (``spec.max_rows_per_file`` rows each)."""
    n = max(1, int(n_partitions))
    blobs = _range_partitioned(spark, bins, schema, params, partition_bounds(params, sk, n), n)
    keep_key = spec.layout_key_column == KEY_COLUMN

    def reducer(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return write_task(spec, _merged_rows(batches, keep_key))

    return collect_written(blobs, reducer)


def _range_partitioned(spark: SparkSession, bins: list[list[Input]], schema: StructType,
                       keys: SortKey, bounds: np.ndarray, n: int) -> DataFrame:
    """The rows of ``bins`` as Arrow blobs, range-partitioned by their layout key into ``n`` partitions (the map
    side of both curve and qdtree clusterings)."""
    names = tuple(f.name for f in schema.fields)
    blobs = spark.range(0, len(bins), 1, len(bins)).mapInArrow(
        _map_mapper(bins, names, spark_to_arrow_schema_of(schema), keys, bounds, hash_preimages(spark, n)),
        f"{PARTITION_COLUMN} int, {_BLOB} binary")
    return blobs.repartition(n, PARTITION_COLUMN)


def leaf_partition_bounds(layout: QdTreeLayout, sk: Sketch, n: int) -> np.ndarray:
    """Range-partition bounds for a qdtree layout: equal-count key quantiles of the sample, each moved to the
    nearest leaf boundary unless its leaf alone holds more than half a partition (a big leaf may be split
    across tasks; a small one never is, so it is not cut into extra small files)."""
    if n <= 1 or not sk.sample or sk.sample[0].size == 0:
        return np.empty(0, dtype=np.uint64)
    keys = np.sort(layout.keys_from_codes(list(sk.sample)))
    leaves = layout.leaf_of_keys(keys)
    counts = np.bincount(leaves, minlength=layout.tree.num_leaves)
    starts = np.concatenate([[0], np.cumsum(counts)])
    per_part = keys.size / n
    out = []
    for p in range(1, n):
        i = min(keys.size - 1, (p * keys.size) // n)
        leaf = int(leaves[i])
        if counts[leaf] <= per_part / 2:
            first, last = int(starts[leaf]), int(starts[leaf + 1])
            boundary = leaf if i - first <= last - i else leaf + 1
            out.append(np.uint64(layout.leaf_start_key(boundary)) if boundary < layout.tree.num_leaves
                       else np.uint64(np.iinfo(np.uint64).max))
        else:
            out.append(keys[i])
    return np.unique(np.array(out, dtype=np.uint64))


def _write_leaves(spec: WriteSpec, layout: QdTreeLayout, rows_per_file: int,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Reduce side of a qdtree clustering: the task's rows in key order, written leaf by leaf so that no file
    spans two leaves; a leaf of ``r`` rows becomes ``max(1, round(r / rows_per_file))`` files of equal size."""
    got = _decoded_blobs(batches)
    if got is None:
        return
    table, order = got
    keys = from_sortable_int64(table.column(KEY_COLUMN).to_numpy()[order])
    leaves = layout.leaf_of_keys(keys)
    del keys
    task = task_identity()
    seqno = 0  # one run of commit sequence numbers over the task's leaves
    # one encoding choice for all the task's leaves: with one-file cells a task writes ~150 leaves, and
    # deciding per leaf cost ~4 ms each
    encoding = task_encoding(spec, table.take(order[:ENCODING_SAMPLE_ROWS]), task)
    for first, last in leaf_runs(leaves):
        rows = last - first
        leaf_spec = replace(spec, max_rows_per_file=leaf_file_rows(rows, rows_per_file))
        yield from write_partition(leaf_spec, _gathered(table, order[first:last]), task, first_seqno=seqno,
                                   encoding=encoding)
        seqno += rows


def write_qdtree_sorted(spark: SparkSession, bins: list[list[Input]], schema: StructType, layout: QdTreeLayout,
                        sk: Sketch, n_partitions: int, spec: WriteSpec, rows_per_file: int) -> list[WrittenFile]:
    """Lay the rows of ``bins`` out along ``layout`` (leaf, then the leaf's curve) and write them, each leaf's
    rows as files of about ``rows_per_file`` rows that never span two leaves."""
    n = max(1, int(n_partitions))
    blobs = _range_partitioned(spark, bins, schema, layout, leaf_partition_bounds(layout, sk, n), n)
    spec = replace(spec, layout_key_column=KEY_COLUMN)

    def reducer(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _write_leaves(spec, layout, rows_per_file, batches)

    return collect_written(blobs, reducer)


def count_rows(spark: SparkSession, bins: list[list[Input]], key_column: str) -> int:
    """Rows of ``bins`` counted in one Spark job (merged slices are merged to be counted: deletes and updates
    change their row count); only the counts reach the driver."""

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in batches:
            for task in ids.column(0).to_pylist():
                n = sum(b.num_rows for b in _file_batches(bins[task], (key_column,)))
                yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])

    out = spark.range(0, len(bins), 1, max(1, len(bins))).mapInArrow(mapper, "n long").toArrow()
    return int(pc.sum(out.column("n")).as_py() or 0)


def reduce_partitions(n_files: int, group_bytes: int, spark: SparkSession, max_task_bytes: int) -> int:
    """Range partitions for a group: a few per core, more when a partition would exceed the memory budget,
    never more than the files to write."""
    by_memory = -(-int(group_bytes * ARROW_BYTES_PER_PARQUET_BYTE) // max(1, int(max_task_bytes)))
    return max(1, min(int(n_files), max(task_count(spark), by_memory)))
