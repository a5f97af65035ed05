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

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "group_metrics"}
        out["phases"] = {k: round(v, 3) for k, v in self.phases.items()}
        return out
