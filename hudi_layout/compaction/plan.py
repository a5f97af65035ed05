"""Which file slices a compaction merges, and what a compaction did.

A plan takes latest file slices with log files, leaving out file groups a pending clustering or compaction
will rewrite (a group under another plan must not get a second new slice from this one); a slice without
log files gains nothing from a rewrite. Which of those slices it takes is Hudi's plan strategy
(``hoodie.compaction.strategy``, :class:`PlanStrategy`), mirrored from Hudi's ``CompactionStrategy`` classes:

* ``LogFileSizeBasedCompactionStrategy`` (Hudi's default): slices whose log files add up to at least
  ``hoodie.compaction.logfile.size.threshold`` bytes, largest logs first, then the IO bound;
* ``LogFileNumBasedCompactionStrategy``: the same by the number of log files;
* ``BoundedIOCompactionStrategy``: the IO bound alone, in listing order;
* ``UnBoundedCompactionStrategy``: every slice.

The IO bound (``hoodie.compaction.target.io``, MB) takes slices while budget remains, each costing its
``TOTAL_IO_MB`` (base + log MB read plus base MB written, each rounded down to whole MB as Hudi does), so the
slice that crosses the budget is still taken. A chain (``A,B``) runs each strategy on what the previous kept.
With Hudi's defaults (no thresholds, 500 GB) every slice with logs is planned, largest logs first. The
partitions of slices left out are recorded as ``missingSchedulePartitions``, which Hudi's incremental
planning scans again next time (ours always lists every partition).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hudi_layout import options as cfg
from hudi_layout.format.compaction_plan import CompactionOperation
from hudi_layout.options import CompactionPlanStrategy
from hudi_layout.table.fs_view import FileSlice

_MB = 1024 * 1024


@dataclass(frozen=True)
class PlanStrategy:
    """Hudi's compaction plan strategy and its settings (the ``hoodie.compaction.*`` plan options)."""

    chain: tuple[CompactionPlanStrategy, ...] = (CompactionPlanStrategy.LOG_FILE_SIZE,)
    target_io_mb: int = cfg.COMPACTION_TARGET_IO_MB.default
    log_size_threshold: int = cfg.COMPACTION_LOG_SIZE_THRESHOLD.default
    log_num_threshold: int = cfg.COMPACTION_LOG_NUM_THRESHOLD.default
    #: Hudi's write estimate of a slice without a base file (``hoodie.parquet.max.file.size``)
    max_file_size: int = cfg.MAX_FILE_SIZE.default

    @classmethod
    def from_options(cls, opts: Mapping[str, Any]) -> PlanStrategy:
        return cls(chain=cfg.COMPACTION_STRATEGY.get(opts), target_io_mb=cfg.COMPACTION_TARGET_IO_MB.get(opts),
                   log_size_threshold=cfg.COMPACTION_LOG_SIZE_THRESHOLD.get(opts),
                   log_num_threshold=cfg.COMPACTION_LOG_NUM_THRESHOLD.get(opts),
                   max_file_size=cfg.MAX_FILE_SIZE.get(opts))


@dataclass(frozen=True)
class PlanSelection:
    """The operations a plan takes, and the partitions of candidate slices it left out."""

    operations: tuple[CompactionOperation, ...]
    missing_partitions: tuple[str, ...] = ()


def _operation(s: FileSlice, max_file_size: int) -> CompactionOperation:
    """One slice as a plan operation, with Hudi's metrics (``FileSliceMetricUtils``: whole MB, floored)."""
    read_mb = (s.size_bytes + s.log_size_bytes) // _MB
    write_mb = (s.size_bytes if s.size_bytes > 0 else max_file_size) // _MB
    return CompactionOperation(
        partition_path=s.partition_path, file_id=s.file_id, base_instant=s.commit_time,
        base_file=s.base_file_name or None, log_files=tuple(s.log_file_names),
        metrics={"TOTAL_LOG_FILES": float(len(s.log_file_names)), "TOTAL_LOG_FILES_SIZE": float(s.log_size_bytes),
                 "TOTAL_IO_READ_MB": float(read_mb), "TOTAL_IO_WRITE_MB": float(write_mb),
                 "TOTAL_IO_MB": float(read_mb + write_mb)})


def _bounded_io(ops: Sequence[CompactionOperation], target_io_mb: int
                ) -> tuple[list[CompactionOperation], list[CompactionOperation]]:
    """Hudi's ``BoundedIOCompactionStrategy``: (taken, left out), in the given order."""
    remaining, taken, left = target_io_mb, [], []
    for op in ops:
        if remaining > 0:
            remaining -= int(op.metrics["TOTAL_IO_MB"])
            taken.append(op)
        else:
            left.append(op)
    return taken, left


def _apply(strategy: CompactionPlanStrategy, ops: list[CompactionOperation], plan: PlanStrategy
           ) -> tuple[list[CompactionOperation], list[CompactionOperation]]:
    if strategy is CompactionPlanStrategy.UNBOUNDED:
        return ops, []
    if strategy is CompactionPlanStrategy.BOUNDED_IO:
        return _bounded_io(ops, plan.target_io_mb)
    if strategy is CompactionPlanStrategy.LOG_FILE_SIZE:
        def measure(op: CompactionOperation) -> int:
            return int(op.metrics["TOTAL_LOG_FILES_SIZE"])
        threshold = plan.log_size_threshold
    else:
        def measure(op: CompactionOperation) -> int:
            return len(op.log_files)
        threshold = plan.log_num_threshold
    kept = [op for op in ops if measure(op) >= threshold]
    dropped = [op for op in ops if measure(op) < threshold]
    kept.sort(key=lambda op: -measure(op))  # stable, as Java's sorted stream
    taken, left = _bounded_io(kept, plan.target_io_mb)
    return taken, dropped + left


def select_operations(slices: Iterable[FileSlice], excluded: set[tuple[str, str]],
                      strategy: PlanStrategy | None = None) -> PlanSelection:
    """The operations of a plan over ``slices`` (latest slices): those with log files whose file group is
    not in ``excluded``, listed by partition and file id, then filtered and ordered by ``strategy``."""
    candidates = sorted((s for s in slices if s.has_log_files and s.file_group not in excluded),
                        key=lambda s: (s.partition_path, s.file_id))
    strategy = strategy or PlanStrategy()
    ops = [_operation(s, strategy.max_file_size) for s in candidates]
    missing: list[str] = []
    for step in strategy.chain:
        ops, left = _apply(step, ops, strategy)
        missing.extend(op.partition_path for op in left)
    return PlanSelection(tuple(ops), tuple(dict.fromkeys(missing)))


@dataclass(frozen=True)
class CompactionMetrics:
    """What one compaction did (returned by ``hudi_layout.compact`` and printed by ``hudi-layout compact``)."""

    instant_time: str
    #: file slices merged, and the log files among their inputs
    slices: int
    log_files: int
    bytes_in: int
    bytes_out: int
    records: int
    seconds: float
    #: this run executed a plan scheduled before it (by hudi_layout or by Hudi)
    resumed: bool = False
    #: False: the plan was only scheduled (``schedule_only``); a later run executes it
    executed: bool = True
    #: phase -> seconds (plan, merge, commit, ...)
    phases: Sequence[tuple[str, float]] = ()

    def describe(self) -> str:
        if not self.executed:
            return (f"scheduled compaction {self.instant_time}: {self.slices} file slice(s) with {self.log_files} "
                    f"log file(s), {self.bytes_in / 1e6:.1f} MB to merge")
        how = "resumed compaction" if self.resumed else "compaction"
        return (f"{how} {self.instant_time}: {self.slices} file slice(s) with {self.log_files} log file(s) merged "
                f"into {self.slices} base file(s), {self.records:,} records, "
                f"{self.bytes_in / 1e6:.1f} MB -> {self.bytes_out / 1e6:.1f} MB in {self.seconds:.1f} s")
