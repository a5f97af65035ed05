"""Greedy size-based bin packing, exactly as Hudi's ``PartitionAwareClusteringPlanStrategy`` does it.

``buildClusteringGroupsForPartition`` (docs/hudi-format.md §4.3), per partition:

1. sort the slices by size, largest first;
2. walk them, adding each to the current group; when adding the next one would push the group over
   ``max.bytes.per.group`` (and the group is not empty) close the group first. A closed group may hold a
   single slice: that is Hudi's behaviour and we keep it;
3. stop as soon as ``max.num.groups`` groups are closed (the partition is then "partially scheduled");
4. the last, still open group is kept if it has more than one slice or single-group clustering is allowed.

Unlike pyiceberg's ``ListPacker`` this is first-fit into one open bin only (no lookback): the point is to
produce the same plan Hudi would, not the tightest one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class PackedBin(Generic[T]):
    items: tuple[T, ...]
    total_bytes: int


@dataclass(frozen=True)
class PackResult(Generic[T]):
    bins: tuple[PackedBin[T], ...]
    #: True when packing stopped at ``max_bins`` with items left over (Hudi's ``missingSchedulePartitions``)
    partial: bool


def sort_largest_first(items: Sequence[T], size_of: Callable[[T], int],
                       tie_key: Callable[[T], str] | None = None) -> list[T]:
    """Stable sort by size descending (ties broken by ``tie_key`` so plans are deterministic)."""
    out = list(items)
    if tie_key is not None:
        out.sort(key=tie_key)
    out.sort(key=size_of, reverse=True)
    return out


def pack_greedy(items: Sequence[T], size_of: Callable[[T], int], *, max_bin_bytes: int, max_bins: int,
                keep_single_item_last_bin: bool) -> PackResult[T]:
    """Pack ``items`` in the given order (callers sort first; see :func:`sort_largest_first`)."""
    bins: list[PackedBin[T]] = []
    current: list[T] = []
    current_bytes = 0
    partial = False
    for item in items:
        size = size_of(item)
        if current and current_bytes + size > max_bin_bytes:
            bins.append(PackedBin(tuple(current), current_bytes))
            current, current_bytes = [], 0
            if len(bins) >= max_bins:
                partial = True
                break
        current.append(item)
        current_bytes += size
    if current and not partial and (len(current) > 1 or keep_single_item_last_bin):
        bins.append(PackedBin(tuple(current), current_bytes))
    return PackResult(tuple(bins), partial)


def num_output_file_groups(group_bytes: int, target_file_max_bytes: int) -> int:
    """``ceil(group_bytes / target.file.max.bytes)``, at least 1 (Hudi's ``getNumberOfOutputFileGroups``)."""
    if target_file_max_bytes <= 0:
        return 1
    return max(1, math.ceil(group_bytes / target_file_max_bytes))
