"""Judge a layout at a glance: per-column overlap statistics and min/max box pictures.

For each column, every live base file contributes its ``[min, max]`` (from the column_stats index, or from
parquet footers when the table has no index). Values are mapped to order-preserving codes with
:func:`hudi_layout.curves.encode_column`, so strings and numbers are handled alike.

* **overlap depth** at a value = how many files' ranges contain it; we report its average over the
  column's covered code range (the segments between sorted range endpoints, weighted by their width in
  code space) and its maximum;
* **point read fraction** = average depth / number of files = the fraction of files a point predicate
  ``col = v`` must open when ``v`` is drawn uniformly over that range.

The PNG draws each file's box on two columns (the pictures of the z-order articles); two tables (or two
snapshots, e.g. before/after clustering) are drawn side by side on the same axes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout.clustering.workload import Workload
from hudi_layout.curves import encode_column
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.scan.plan import plan_scan
from hudi_layout.table.hudi_table import HudiTable


@dataclass(frozen=True)
class ColumnOverlap:
    column: str
    files: int
    files_with_stats: int
    avg_depth: float
    max_depth: int
    point_read_fraction: float


def file_ranges(table: HudiTable, column: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(min codes, max codes, file names) of the column over live base files with known stats."""
    slices = table.file_slices()
    names = [s.base_file_name for s in slices]
    lo_vals: list[Any] = []
    hi_vals: list[Any] = []
    kept: list[str] = []
    stats_tbl = None
    if "column_stats" in table.properties.metadata_partitions:
        stats_tbl = ColumnStatsIndex(str(table.base_path)).load_column(column)
    if stats_tbl is not None and stats_tbl.num_rows:
        by_name = {n: i for i, n in enumerate(stats_tbl.column("file_name").to_pylist())}
        mins, maxs = stats_tbl.column("min"), stats_tbl.column("max")
        typ = mins.type
        for n in names:
            i = by_name.get(n)
            if i is None or not mins[i].is_valid or not maxs[i].is_valid:
                continue
            lo_vals.append(mins[i].as_py())
            hi_vals.append(maxs[i].as_py())
            kept.append(n)
    else:
        typ = None
        for s in slices:
            md = pq.ParquetFile(s.base_file_path).metadata
            schema = md.schema.to_arrow_schema()
            if column not in schema.names:
                raise InvalidArgumentError(f"unknown column {column!r} (columns: {', '.join(schema.names)})")
            ci = schema.get_field_index(column)
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
                kept.append(s.base_file_name)
    if not kept:
        return np.empty(0, np.uint64), np.empty(0, np.uint64), []
    lo_codes = encode_column(pa.array(lo_vals, typ), name=column)
    hi_codes = encode_column(pa.array(hi_vals, typ), name=column)
    return lo_codes, hi_codes, kept


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


def draw_boxes(tables: Sequence[tuple[str, HudiTable]], x: str, y: str, path: Path) -> Path:
    """PNG with each file's [min,max] box on columns ``x``/``y``, one panel per table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    fig, axes = plt.subplots(1, len(tables), figsize=(6 * len(tables), 5.5), squeeze=False)
    ranges = [(label, table, file_ranges(table, x), file_ranges(table, y)) for label, table in tables]
    # Codes minus the smallest code seen: order-preserving, and for integer columns exactly value - min.
    gx = min((int(r[2][0].min()) for r in ranges if r[2][0].size), default=0)
    gy = min((int(r[3][0].min()) for r in ranges if r[3][0].size), default=0)
    for ax, (label, _table, (xlo, xhi, xn), (ylo, yhi, yn)) in zip(axes[0], ranges):
        common = sorted(set(xn) & set(yn))
        xi = {n: i for i, n in enumerate(xn)}
        yi = {n: i for i, n in enumerate(yn)}
        rects = []
        for n in common:
            a, b = float(int(xlo[xi[n]]) - gx), float(int(xhi[xi[n]]) - gx)
            c, d = float(int(ylo[yi[n]]) - gy), float(int(yhi[yi[n]]) - gy)
            rects.append(Rectangle((a, c), max(b - a, 1e-9), max(d - c, 1e-9)))
        ax.add_collection(PatchCollection(rects, facecolor=(0.12, 0.47, 0.71, 0.04), edgecolor="tab:blue",
                                          linewidth=0.5))
        if rects:
            ax.set_xlim(0, max(float(int(xhi.max()) - gx), 1.0))
            ax.set_ylim(0, max(float(int(yhi.max()) - gy), 1.0))
        ax.set_title(f"{label}: {len(common)} files")
        ax.set_xlabel(f"{x} (offset from minimum, order-preserving code)")
        ax.set_ylabel(f"{y} (offset from minimum, order-preserving code)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def workload_files_read(tables: Sequence[tuple[str, HudiTable]], workload: Workload) -> dict[str, Any]:
    """Per workload predicate, the files each table's read would open (scan planning only, no data read):
    ``{"queries": [{"where", "weight", "files_read": {label: n}, "files_total": {label: n}}], "total": {...}}``."""
    queries = []
    totals: dict[str, float] = {label: 0.0 for label, _ in tables}
    for q in workload.queries:
        read: dict[str, int] = {}
        total: dict[str, int] = {}
        for label, table in tables:
            plan = plan_scan(str(table.base_path), q.where, with_row_counts=False, source="report")
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
                 labels: tuple[str, str] = ("table", "compare"), workload: Workload | None = None) -> dict[str, Any]:
    """Write ``layout_report.md`` / ``.json`` (+ ``layout_boxes.png`` for 2+ columns) into ``out_dir``."""
    if not columns:
        raise InvalidArgumentError("--columns needs at least one column")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = [(labels[0], HudiTable(path))]
    if compare:
        tables.append((labels[1], HudiTable(compare)))
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
    if len(columns) >= 2:
        png = draw_boxes(tables, columns[0], columns[1], out / "layout_boxes.png")
        data["png"] = str(png)
        lines += [f"![file boxes on {columns[0]} x {columns[1]}](layout_boxes.png)", ""]
    if workload is not None:
        data["workload"] = workload_files_read(tables, workload)
        lines += workload_markdown(data["workload"], [label for label, _ in tables])
    lines += ["Depth = number of files whose [min, max] contains a value (average over the segments between "
              "file range endpoints). Point read fraction = average depth / files: the share of files a "
              "`col = value` query opens.", ""]
    (out / "layout_report.md").write_text("\n".join(lines))
    (out / "layout_report.json").write_text(json.dumps(data, indent=2))
    return data
