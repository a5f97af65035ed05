"""What a clustering did: per group and in total (the delta-rs ``optimize`` metrics shape)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GroupMetrics:
    partition_path: str
    files_in: int
    files_out: int
    bytes_in: int
    bytes_out: int
    records: int
    seconds: float


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

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "group_metrics"}
