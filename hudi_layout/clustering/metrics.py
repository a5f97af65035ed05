"""What a clustering did: per group and in total (the delta-rs ``optimize`` metrics shape)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


class PhaseTimer:
    """Wall-clock seconds per named phase (a phase entered twice adds up): where a clustering spends time."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started


@dataclass(frozen=True)
class GroupMetrics:
    partition_path: str
    files_in: int
    files_out: int
    bytes_in: int
    bytes_out: int
    records: int
    seconds: float
    #: seconds per phase of the group (footers, sketch, layout + write job, ...)
    phases: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusteringMetrics:
    """What one clustering did."""

    instant_time: str
    strategy: str
    method: str
    columns: tuple[str, ...]
    groups: int
    files_in: int
    files_out: int
    bytes_in: int
    bytes_out: int
    records: int
    seconds: float
    group_metrics: tuple[GroupMetrics, ...] = field(default_factory=tuple)
    #: seconds per phase: the clustering's own (``start``, ``groups``, ``commit``, ...) and, summed over groups,
    #: the groups' (``group.sketch``, ``group.write``, ...)
    phases: Mapping[str, float] = field(default_factory=dict)
    #: things the user should know about the result (e.g. too few files per partition to skip anything)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("group_metrics", "notes")}
        out["partitions"] = len({g.partition_path for g in self.group_metrics})
        out["notes"] = list(self.notes)
        out["phases"] = {k: round(v, 3) for k, v in self.phases.items()}
        return out


#: fewer output files than this per partition on average and a layout cannot help skipping much
FEW_FILES_PER_PARTITION = 4
#: the file count per partition the note suggests
SUGGESTED_FILES_PER_PARTITION = 8


def _size(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}".replace(".0 ", " ")
    return f"{n:.0f} bytes"


def few_files_note(groups: tuple[GroupMetrics, ...], target_file_bytes: int | None, option_key: str) -> str | None:
    """A note when the clustering wrote fewer than :data:`FEW_FILES_PER_PARTITION` files per partition: the
    files are then too few for statistics to skip anything inside a partition. Names the option and a value
    giving about :data:`SUGGESTED_FILES_PER_PARTITION` files per partition; ``target_file_bytes`` is None for a
    plan scheduled by an earlier run (the plan does not record it, so the note names no value for it)."""
    partitions = {g.partition_path for g in groups}
    if not partitions:
        return None
    files = sum(g.files_out for g in groups)
    per = files / len(partitions)
    if per >= FEW_FILES_PER_PARTITION:
        return None
    data = sum(g.bytes_out for g in groups) / len(partitions)
    # whole KiB: rounding down to 64 KiB gave twice the files promised (118 KiB -> 64 KiB; a probe)
    suggested = max(64 << 10, int(data / SUGGESTED_FILES_PER_PARTITION) >> 10 << 10)
    partitioned = len(partitions) > 1 or bool(next(iter(partitions)))
    where = "per partition" if partitioned else "for the table"
    inside = "inside a partition" if partitioned else "between files"
    count = (f"{files} file(s) for {len(partitions)} partition(s) ({per:.1f} per partition)" if partitioned
             else f"{files} file(s) for the table")
    if target_file_bytes is None:  # a plan scheduled earlier: its target is not known here
        cause = "the plan's target file size leaves few files of the"
    else:
        relation = "is larger than" if target_file_bytes >= data else "leaves few files of"
        cause = f"{option_key}={target_file_bytes} ({_size(target_file_bytes)}) {relation} the"
    return (f"only {count}: {cause} data ({_size(data)} {where}), so data skipping has little to tell apart "
            f"{inside}; for about {SUGGESTED_FILES_PER_PARTITION} files {where}, cluster with -o "
            f"{option_key}={suggested}")
