"""The Spark job of a compaction: each task merges a few planned file slices into new base files.

Slices are binned by size (base file + log files) into about four bins per core; a task reads each slice of
its bin merged (:func:`~hudi_layout.scan.merge.iter_merge_file_slice`: a chunk of base rows at a time, blocks
of instants completed before the compaction was scheduled: a log completed after that belongs to the
compaction's new slice, as Hudi's readers place it) and writes it with
:func:`~hudi_layout.writer.merge.compact_file_group`. Only metadata rows come back to the
driver.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.compaction_plan import CompactionOperation
from hudi_layout.scan.merge import MergeSpec, iter_merge_file_slice, merge_spec_for_table, ordered_log_files
from hudi_layout.spark.curve_sort import balanced_bins
from hudi_layout.spark.write_job import collect_written, task_identity
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.writer.base_file_writer import RESULT_SCHEMA, ColumnEncoding, WriteSpec, WrittenFile
from hudi_layout.writer.merge import MergeTarget, compact_file_group

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def compaction_targets(base: Path, ops: Sequence[CompactionOperation]) -> list[tuple[MergeTarget, int]]:
    """Each operation's slice as a merge target (absolute paths, log files in Hudi's order) with its size on
    storage. A file the plan names that is gone makes the plan impossible to execute: refused before any
    file is written."""
    out = []
    for op in ops:
        folder = base / op.partition_path if op.partition_path else base
        base_file = folder / op.base_file if op.base_file else None
        logs = [folder / name for name in ordered_log_files(op.log_files)]
        size = 0
        for path in ([base_file] if base_file is not None else []) + logs:
            try:
                size += path.stat().st_size
            except FileNotFoundError:
                raise CorruptFileError(f"compaction plan names {path}, which does not exist",
                                       hint="roll back the compaction (hudi-layout compact --abandon) "
                                            "and schedule a new one") from None
        out.append((MergeTarget(op.partition_path, op.file_id, op.base_file or "",
                                str(base_file) if base_file is not None else "", op.base_instant,
                                tuple(str(p) for p in logs)), size))
    return out


def compaction_merge_spec(table: HudiTable, instant_time: str) -> MergeSpec:
    """How the executors merge a planned slice: the table's merge rules, blocks of instants completed before
    ``instant_time`` (the compaction's requested time) only."""
    return merge_spec_for_table(table, completed_by=instant_time)


def run_compaction(spark: SparkSession, spec: WriteSpec, targets: Sequence[tuple[MergeTarget, int]],
                   merge: MergeSpec, parallelism: int) -> list[WrittenFile]:
    """One Spark job: every target merged into a new base file; the files' metadata rows."""
    if not targets:
        return []
    # bins of positions (as text: the binning sorts its inputs by name)
    bins = balanced_bins([(str(i), size) for i, (_t, size) in enumerate(targets)], max(1, 4 * parallelism))
    plain = [t for t, _size in targets]

    def mapper(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task = task_identity()
        encodings: dict[pa.Schema, ColumnEncoding] = {}
        for ids in batches:
            for b in ids.column(0).to_pylist():
                for i in bins[b]:
                    target = plain[int(i)]
                    merged = iter_merge_file_slice(target.base_file_path or None, list(target.log_file_paths),
                                                   spec=merge)
                    row = compact_file_group(spec, target, merged, task, encodings)
                    yield pa.RecordBatch.from_pylist([row], schema=RESULT_SCHEMA)

    return collect_written(spark.range(0, len(bins), 1, len(bins)), mapper)
