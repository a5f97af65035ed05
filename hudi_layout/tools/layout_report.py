"""Judge a layout at a glance: per-column overlap statistics and min/max box pictures.

For each column, every live base file contributes its ``[min, max]`` (from the column_stats index, or from
parquet footers when the table has no index). Values are mapped to order-preserving codes with
:func:`hudi_layout.curves.encode_column`, so strings and numbers are handled alike.

* **overlap depth** at a value = how many files' ranges contain it; we report its average over the
  column's covered code range (the segments between sorted range endpoints, weighted by their width in
  code space) and its maximum;
* **point read fraction** = average depth / number of files = the fraction of files a point predicate
  ``col = v`` must open when ``v`` is drawn uniformly over that range.

The pictures (:mod:`hudi_layout.tools.layout_pictures`) draw each file's box on every pair of the columns, in
the columns' own values; two tables (or two snapshots, e.g. after/before clustering) side by side on the
same axes; one partition at a time plus a per-partition grid; and, with a query, the files it reads.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout.clustering.workload import Workload
from hudi_layout.curves import encode_column
from hudi_layout.errors import CorruptFileError, InvalidArgumentError, NotAHudiTableError
from hudi_layout.format.parquet_columns import leaf_index
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.scan.plan import REPLAY_SOURCE, plan_scan, table_schema, to_predicate
from hudi_layout.skipping.bind import bind
from hudi_layout.table.fs_view import FileSlice
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.tools.layout_pictures import (
    MAX_PAIRS,
    MAX_PARTITION_PANELS,
    FileBox,
    Panel,
    as_python,
    draw_pair_grid,
    draw_partition_grid,
)


@dataclass(frozen=True)
class ColumnOverlap:
    column: str
    files: int
    files_with_stats: int
    avg_depth: float
    max_depth: int
    point_read_fraction: float


def file_value_ranges(table: HudiTable, column: str) -> tuple[pa.Array, pa.Array, list[FileSlice]]:
    """Typed ``(min values, max values, slices)`` of the column over the live base files with known stats
    (from the column_stats index, else from the parquet footers)."""
    slices = table.file_slices()
    lo_vals: list[Any] = []
    hi_vals: list[Any] = []
    kept: list[FileSlice] = []
    stats_tbl = None
    typ: pa.DataType | None = None
    if "column_stats" in table.properties.metadata_partitions:
        try:
            stats_tbl = ColumnStatsIndex(str(table.base_path)).load_column(column)
        except (NotAHudiTableError, CorruptFileError):  # a damaged metadata table: the footers, as explain does
            stats_tbl = None  # (session 19: "not a Hudi table" about the base path the user gave)
    if stats_tbl is not None and stats_tbl.num_rows:
        by_name = {n: i for i, n in enumerate(stats_tbl.column("file_name").to_pylist())}
        mins, maxs = stats_tbl.column("min"), stats_tbl.column("max")
        typ = mins.type
        for s in slices:
            i = by_name.get(s.base_file_name)
            if i is None or not mins[i].is_valid or not maxs[i].is_valid:
                continue
            lo_vals.append(mins[i].as_py())
            hi_vals.append(maxs[i].as_py())
            kept.append(s)
    else:
        for s in slices:
            md = pq.ParquetFile(s.base_file_path).metadata
            schema = md.schema.to_arrow_schema()
            if column not in schema.names:
                raise InvalidArgumentError(f"unknown column {column!r} (columns: {', '.join(schema.names)})")
            leaves = leaf_index(schema)
            if column not in leaves:
                raise InvalidArgumentError(f"column {column!r} is nested ({schema.field(column).type}): files have "
                                           "no min / max for it", hint="name a flat column")
            ci = leaves[column]
            typ = schema.field(column).type
            lo = hi = None
            for rg in range(md.num_row_groups):
                st = md.row_group(rg).column(ci).statistics
                if st is None or not st.has_min_max:
                    lo = None
                    break
                lo = st.min if lo is None or st.min < lo else lo
                hi = st.max if hi is None or st.max > hi else hi
            if lo is not None:
                lo_vals.append(lo)
                hi_vals.append(hi)
                kept.append(s)
    if not kept or typ is None:
        return pa.array([], pa.null()), pa.array([], pa.null()), []
    return pa.array(lo_vals, typ), pa.array(hi_vals, typ), kept


def file_ranges(table: HudiTable, column: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(min codes, max codes, file names) of the column over live base files with known stats."""
    lo, hi, kept = file_value_ranges(table, column)
    if not kept:
        return np.empty(0, np.uint64), np.empty(0, np.uint64), []
    return (encode_column(lo, name=column), encode_column(hi, name=column), [s.base_file_name for s in kept])


def file_boxes(table: HudiTable, columns: Sequence[str]) -> list[FileBox]:
    """Every live base file with its value range on each of ``columns`` (``None`` where unknown)."""
    ranges: dict[str, dict[str, tuple[Any, Any]]] = {}
    for c in columns:
        lo, hi, kept = file_value_ranges(table, c)
        los, his = as_python(lo), as_python(hi)
        ranges[c] = {s.base_file_name: (a, b) for s, a, b in zip(kept, los, his)}
    return [FileBox(s.base_file_name, s.partition_path, {c: ranges[c].get(s.base_file_name) for c in columns})
            for s in table.file_slices()]


def overlap(lo: np.ndarray, hi: np.ndarray) -> tuple[float, int]:
    """(average depth over elementary segments, maximum depth) of closed intervals [lo_i, hi_i]."""
    if lo.size == 0:
        return 0.0, 0
    points = np.unique(np.concatenate([lo, hi]))
    # depth on each point and on each open segment between consecutive points
    starts = np.searchsorted(points, lo, side="left")
    ends = np.searchsorted(points, hi, side="left")
    # positions: point k -> 2k, segment (k, k+1) -> 2k+1
    delta = np.zeros(2 * points.size + 1, dtype=np.int64)
    np.add.at(delta, 2 * starts, 1)
    np.add.at(delta, 2 * ends + 1, -1)
    depth = np.cumsum(delta)[:-1]
    if points.size == 1:
        return float(depth[0]), int(depth.max())
    seg = depth[1:2 * points.size - 1:2]
    width = np.diff(points.astype(np.float64))
    if width.sum() <= 0:
        return float(seg.mean()), int(depth.max())
    return float((seg * width).sum() / width.sum()), int(depth.max())


def column_overlap(table: HudiTable, column: str) -> ColumnOverlap:
    lo, hi, kept = file_ranges(table, column)
    files = len(table.file_slices())
    avg, mx = overlap(lo, hi)
    frac = avg / len(kept) if kept else 1.0
    return ColumnOverlap(column, files, len(kept), round(avg, 3), mx, round(frac, 5))


def _natural(partition: str) -> tuple[Any, ...]:
    """Sort key: ``2`` before ``10``, ``month=2`` before ``month=10``."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", partition))


@dataclass(frozen=True)
class Pictures:
    """What the report draws: the pairs grid for one partition (or the whole table), the per-partition
    grid, the query picture. Paths relative to the report folder."""

    boxes: str | None = None
    partitions: str | None = None
    query: str | None = None
    partition: str | None = None
    query_partition: str | None = None


def _validate_columns(tables: Sequence[tuple[str, HudiTable]], columns: Sequence[str]) -> None:
    for _, table in tables:
        known = table.data_columns()
        if not known:
            continue
        unknown = [c for c in columns if c not in known]
        if unknown:
            raise InvalidArgumentError(f"{table.base_path} has no column {', '.join(map(repr, unknown))}",
                                       hint=f"columns: {', '.join(known)}")


def _require_partition(tables: Sequence[tuple[str, HudiTable]], partition: str | None) -> None:
    """``--partition`` names a partition holding files of one of the tables (when any is partitioned)."""
    if partition is None or not any(t.is_partitioned for _, t in tables):
        return
    known = {s.partition_path for _, t in tables for s in t.file_slices()}
    if partition not in known:
        listed = ", ".join(sorted(known, key=_natural)[:12])
        raise InvalidArgumentError(f"no partition {partition!r} in the table", hint=f"partitions: {listed}")


def draw_pictures(tables: Sequence[tuple[str, HudiTable]], columns: Sequence[str], out: Path, *,
                  partition: str | None = None, where: str | None = None) -> Pictures:
    """Draw ``layout_boxes.png`` (+ ``layout_partitions.png`` for partitioned tables, ``query_files.png``
    with ``where``) into ``out``."""
    boxes = {label: file_boxes(table, columns) for label, table in tables}
    first = boxes[tables[0][0]]
    partitioned = any(t.is_partitioned for _, t in tables)
    counts = Counter(f.partition for f in first)
    _require_partition(tables, partition)
    chosen = (partition or (counts.most_common(1)[0][0] if counts else None)) if partitioned else None

    def panel(label: str, part: str | None, read: frozenset[str] | None = None, files_total: int = 0,
              read_total: int | None = None) -> Panel:
        files = tuple(f for f in boxes[label] if part is None or f.partition == part)
        return Panel(label, part, files, read, files_total, read_total)

    what = "partition " + chosen if chosen is not None else "whole table"
    why = " (the one with the most files; --partition picks another)" if partitioned and partition is None else ""
    pics = Pictures(partition=chosen)
    png = draw_pair_grid([panel(label, chosen) for label, _ in tables], columns, out / "layout_boxes.png",
                         title=f"each file's [min, max] box on every pair of {', '.join(columns)} · {what}{why}")
    pics = replace(pics, boxes=png.name)
    if partitioned and partition is None and len(counts) > 1:
        parts = sorted(p for p, _ in counts.most_common(MAX_PARTITION_PANELS))
        parts.sort(key=_natural)
        more = f" (the {len(parts)} largest of {len(counts)})" if len(counts) > len(parts) else ""
        png = draw_partition_grid([[panel(label, p) for label, _ in tables] for p in parts],
                                  columns[0], columns[1], out / "layout_partitions.png",
                                  title=f"each file's box on {columns[0]} × {columns[1]}, one panel per "
                                        f"partition{more}")
        pics = replace(pics, partitions=png.name)
    if where:
        plans = {label: plan_scan(str(table.base_path), where) for label, table in tables}
        read = {label: frozenset(s.base_file_name for s in plan.candidate_slices) for label, plan in plans.items()}
        qpart = chosen
        if partitioned and partition is None:
            hits = Counter(f.partition for f in first if f.name in read[tables[0][0]])
            qpart = hits.most_common(1)[0][0] if hits else chosen
        table0 = tables[0][1]
        schema = table_schema(table0)
        pred = to_predicate(where, schema)
        if schema is not None:
            pred = bind(pred, schema)
        panels = [panel(label, qpart, read[label], plans[label].files_total, plans[label].files_after_column_stats)
                  for label, _ in tables]
        where_part = f" · partition {qpart}" if qpart is not None else ""
        png = draw_pair_grid(panels, columns, out / "query_files.png", query=pred,
                             title=f"WHERE {where}{where_part}: files read (orange) and skipped (grey); "
                                   "the query's range in green")
        pics = replace(pics, query=png.name, query_partition=qpart)
    return pics


def workload_files_read(tables: Sequence[tuple[str, HudiTable]], workload: Workload) -> dict[str, Any]:
    """Per workload predicate, the files each table's read would open (scan planning only, no data read):
    ``{"queries": [{"where", "weight", "files_read": {label: n}, "files_total": {label: n}}], "total": {...}}``."""
    queries = []
    totals: dict[str, float] = {label: 0.0 for label, _ in tables}
    for q in workload.queries:
        read: dict[str, int] = {}
        total: dict[str, int] = {}
        for label, table in tables:
            plan = plan_scan(str(table.base_path), q.where, with_row_counts=False, source=REPLAY_SOURCE)
            read[label] = plan.files_read
            total[label] = plan.files_total
            totals[label] += q.weight * plan.files_read
        queries.append({"where": q.where, "weight": q.weight, "files_read": read, "files_total": total})
    return {"queries": queries, "weighted_total": totals}


def workload_markdown(result: dict[str, Any], labels: Sequence[str]) -> list[str]:
    """The Markdown table of :func:`workload_files_read` (one column of files read per table)."""
    lines = ["## Workload: files read per query", "",
             "| query | weight | " + " | ".join(f"files read ({label})" for label in labels) + " |",
             "|---|---:|" + "---:|" * len(labels)]
    for row in result["queries"]:
        cells = [f"{row['files_read'][label]} of {row['files_total'][label]}" for label in labels]
        lines.append(f"| `{row['where']}` | {row['weight']:g} | " + " | ".join(cells) + " |")
    lines.append("| **weighted total** | | " + " | ".join(
        f"**{result['weighted_total'][label]:g}**" for label in labels) + " |")
    lines.append("")
    return lines


def write_report(path: str, columns: Sequence[str], out_dir: str, *, compare: str | None = None,
                 labels: tuple[str, str] = ("table", "compare"), partition: str | None = None,
                 where: str | None = None, workload: Workload | None = None) -> dict[str, Any]:
    """Write ``layout_report.md`` / ``.json`` and, for two columns or more, the pictures (see
    :func:`draw_pictures`) into ``out_dir``; with a ``workload``, the files each of its queries reads."""
    if not columns:
        raise InvalidArgumentError("--columns needs at least one column", hint="e.g. --columns carrier,dest")
    tables = [(labels[0], HudiTable(path))]
    if compare:
        tables.append((labels[1], HudiTable(compare)))
    _validate_columns(tables, columns)
    out = Path(out_dir).absolute()
    # every argument is checked before the folder is made or a picture drawn: a refusal leaves nothing behind
    if out.exists() and not out.is_dir():
        raise InvalidArgumentError(f"--out {out_dir} is a file", hint="name a folder (it is created if missing)")
    for _label, table in tables:
        if out == table.base_path or table.base_path in out.parents:
            raise InvalidArgumentError(f"--out {out_dir} is inside the table {table.base_path}",
                                       hint="write the report beside the table, e.g. --out report/")
    if where:
        for _label, table in tables:
            plan_scan(str(table.base_path), where)
    if len(columns) >= 2:  # the pictures are drawn for a partition
        _require_partition(tables, partition)
    workload_data = workload_files_read(tables, workload) if workload is not None else None
    out.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"tables": {}}
    lines = ["# Layout report", ""]
    for label, table in tables:
        rows = [column_overlap(table, c) for c in columns]
        data["tables"][label] = {"path": str(table.base_path), "columns": [asdict(r) for r in rows]}
        lines += [f"## {label}: `{table.base_path}`", "",
                  "| column | files | with stats | avg overlap depth | max depth | point read fraction |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r.column} | {r.files} | {r.files_with_stats} | {r.avg_depth} | {r.max_depth} | "
                  f"{r.point_read_fraction:.2%} |" for r in rows]
        lines.append("")
    lines += ["Depth = number of files whose [min, max] contains a value (average over the segments between "
              "file range endpoints). Point read fraction = average depth / files: the share of files a "
              "`col = value` query opens.", ""]
    if len(columns) >= 2:
        pics = draw_pictures(tables, columns, out, partition=partition, where=where)
        data["pictures"] = asdict(pics)
        data["png"] = str(out / pics.boxes) if pics.boxes else None
        shown = columns[:next(n for n in range(len(columns), 1, -1) if n * (n - 1) // 2 <= MAX_PAIRS)]
        more = (f" (the first {len(shown)} columns: at most {MAX_PAIRS} pairs per picture)"
                if len(shown) < len(columns) else "")
        lines += ["## Pictures", "",
                  f"Each file is a box spanning its [min, max] on two columns{more}; axes are in the columns' "
                  "own values (strings on a sorted axis of the values that bound files).", ""]
        if pics.boxes:
            lines += [f"![file boxes, {pics.partition or 'whole table'}]({pics.boxes})", ""]
        if pics.partitions:
            lines += [f"![file boxes per partition]({pics.partitions})", ""]
        if pics.query:
            lines += [f"Files read by `WHERE {where}` (orange), skipped (grey), the query's range in green:", "",
                      f"![files read by the query]({pics.query})", ""]
    else:
        lines += ["(Pictures need two columns or more.)", ""]
    if workload_data is not None:
        data["workload"] = workload_data
        lines += workload_markdown(data["workload"], [label for label, _ in tables])
    (out / "layout_report.md").write_text("\n".join(lines))
    (out / "layout_report.json").write_text(json.dumps(data, indent=2, default=str))
    return data
