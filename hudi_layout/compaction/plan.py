"""Which file slices a compaction merges, and what a compaction did.

Hudi's default plan strategy (``LogFileSizeBasedCompactionStrategy`` with no size threshold and a 500 GB IO
budget) takes every latest file slice that has log files, largest logs first, leaving out file groups a
pending clustering or compaction will rewrite. hudi_layout plans the same: a slice without log files gains
nothing from a rewrite, and a group under another plan must not get a second new slice from this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hudi_layout.format.compaction_plan import CompactionOperation
from hudi_layout.table.fs_view import FileSlice

_MB = 1024.0 * 1024.0


def select_operations(slices: Iterable[FileSlice], excluded: set[tuple[str, str]]) -> tuple[CompactionOperation, ...]:
    """One operation per latest slice with log files whose file group is not in ``excluded``; largest log
    files first (Hudi's order), with Hudi's plan metrics."""
    chosen = [s for s in slices if s.has_log_files and s.file_group not in excluded]
    chosen.sort(key=lambda s: (-s.log_size_bytes, s.partition_path, s.file_id))
    ops = []
    for s in chosen:
        read_mb = (s.size_bytes + s.log_size_bytes) / _MB
        write_mb = s.size_bytes / _MB
        ops.append(CompactionOperation(
            partition_path=s.partition_path, file_id=s.file_id, base_instant=s.commit_time,
            base_file=s.base_file_name or None, log_files=tuple(s.log_file_names),
            metrics={"TOTAL_LOG_FILES": float(len(s.log_file_names)),
                     "TOTAL_LOG_FILES_SIZE": float(s.log_size_bytes), "TOTAL_IO_READ_MB": read_mb,
                     "TOTAL_IO_WRITE_MB": write_mb, "TOTAL_IO_MB": read_mb + write_mb}))
    return tuple(ops)


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
