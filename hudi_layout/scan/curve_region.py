"""The curve-region step of scan planning: drop files whose curve-key range misses the query box.

Runs after column_stats pruning on the files it kept. A file qualifies only when the completed clustering
commit that wrote it recorded the curve (:data:`~hudi_layout.curves.region.CURVE_REGIONS_KEY` in its
``extraMetadata``) and the file's key range, and when every curve column still has the code space it had
then (a column whose type changed is never judged with old codes). Everything else is kept: the step only
adds proofs of "cannot match" (see :mod:`hudi_layout.curves.region` for why each step is safe).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from hudi_layout.curves.region import (
    CURVE_REGIONS_KEY,
    CurveRegions,
    code_box,
    decode_regions,
    encoding_family,
    ranges_meet_box,
)
from hudi_layout.errors import HudiLayoutError
from hudi_layout.skipping.boxes import predicate_boxes
from hudi_layout.skipping.ir import Predicate
from hudi_layout.table.fs_view import FileSlice
from hudi_layout.table.hudi_table import HudiTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RegionPruneResult:
    kept: list[FileSlice]
    #: relative path -> why the file cannot match
    dropped: dict[str, str]
    #: files that had a recorded key range (the step could judge them)
    judged: int


@functools.lru_cache(maxsize=64)
def _decoded(text: str) -> tuple[CurveRegions, ...]:
    return tuple(decode_regions(text))


def recorded_regions(table: HudiTable, slices: Sequence[FileSlice]) -> dict[str, CurveRegions]:
    """Base file name -> the curve regions (of its clustering group) that record its key range."""
    wanted = {s.commit_time for s in slices if s.base_file_name}
    out: dict[str, CurveRegions] = {}
    for instant in table.timeline.completed():
        if instant.action != "replacecommit" or instant.requested_time not in wanted:
            continue
        try:
            meta = table.timeline.read_commit_metadata_shared(instant)
            text = (meta.get("extraMetadata") or {}).get(CURVE_REGIONS_KEY)
            if not text:
                continue
            for regions in _decoded(text):
                for name in regions.files:
                    out[name] = regions
        except HudiLayoutError as e:  # unreadable metadata: nothing proven for those files
            log.debug("curve regions of %s not used: %s", instant.requested_time, e)
    return out


def prune_by_curve_region(table: HudiTable, pred: Predicate, slices: list[FileSlice], schema: pa.Schema
                          ) -> RegionPruneResult:
    """Keep the files of ``slices`` that might hold a row matching ``pred`` (bound to ``schema``)."""
    regions_of = recorded_regions(table, slices)
    if not regions_of:
        return RegionPruneResult(slices, {}, 0)
    cannot = np.zeros(len(slices), dtype=bool)
    reasons: dict[int, str] = {}
    by_group: dict[int, tuple[CurveRegions, list[int]]] = {}
    for i, s in enumerate(slices):
        # a Merge-on-Read slice with log files may hold rows its base file's key range does not cover
        r = regions_of.get(s.base_file_name) if s.base_file_name and not s.has_log_files else None
        if r is not None:
            by_group.setdefault(id(r), (r, []))[1].append(i)
    judged = 0
    for regions, members in by_group.values():
        names = [slices[i].base_file_name for i in members]
        got = files_outside_region(pred, regions, names, schema)
        if got is None:
            continue
        judged += len(members)
        for k, why in got.items():
            cannot[members[k]] = True
            reasons[members[k]] = why
    kept = [s for i, s in enumerate(slices) if not cannot[i]]
    dropped = {slices[i].relative_path: why for i, why in reasons.items()}
    return RegionPruneResult(kept, dropped, judged)


def files_outside_region(pred: Predicate, regions: CurveRegions, file_names: Sequence[str], schema: pa.Schema
                         ) -> dict[int, str] | None:
    """Which of ``file_names`` (each recorded in ``regions``) hold no key of the query box of ``pred``
    (bound to ``schema``): index -> reason. ``None`` when the regions cannot be used with ``schema`` (a
    curve column changed its code space)."""
    if not _same_code_spaces(regions, schema):
        return None
    types = {c: schema.field(c).type for c in regions.columns}
    boxes = [code_box(b, types) for b in predicate_boxes(pred, regions.columns, schema)]
    live = [b for b in boxes if b is not None]
    if any(not b for b in live):
        return {}  # some disjunct constrains no curve column: every file might match
    kmin = np.array([regions.files[n][0] for n in file_names], np.uint64)
    kmax = np.array([regions.files[n][1] for n in file_names], np.uint64)
    might = np.zeros(len(file_names), dtype=bool)
    for b in live:
        lo, hi = regions.coordinate_box(b)
        might |= ranges_meet_box(kmin, kmax, lo, hi, regions.shape)
    cols = ", ".join(sorted({c for b in live for c in b})) or "no column (the predicate matches nothing)"
    return {k: (f"curve region: the file's {regions.shape.kind} keys [{int(kmin[k]):#x}, {int(kmax[k]):#x}] "
                f"hold no point of the query box on {cols}") for k in np.flatnonzero(~might).tolist()}


def _same_code_spaces(regions: CurveRegions, schema: pa.Schema) -> bool:
    for name, space in zip(regions.columns, regions.types):
        if name not in schema.names or encoding_family(schema.field(name).type) != space:
            return False
    return True
