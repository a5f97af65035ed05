"""Pictures of a layout that a person can read: each file's [min, max] box on two clustering columns.

* **Axes in the column's own values.** Statistics come as typed values (column_stats index, else parquet
  footers) and are drawn as such: numbers as numbers, dates and timestamps on a date axis, strings on an
  ordinal axis whose ticks are the strings themselves (the sorted distinct file bounds, thinned), so
  ``'UA'`` or ``'SFO'`` can be found on the axis.
* **Small multiples.** One panel per pair of clustering columns (rows) and per table (columns: the table and
  the ``--compare`` table side by side, e.g. after / before clustering), all panels of a column sharing its
  axis. Partitioned tables are drawn one partition at a time (``--partition``, default the partition with
  the most files), plus ``layout_partitions.png``: one panel per partition on the first pair.
* **A query over the layout** (``query_files.png``): every file's box, the files the scan plan reads
  filled, and the query's range on the two columns (where the predicate bounds them) drawn dashed.

Only matplotlib's Agg backend is used (no display needed).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping import ir

#: at most this many column pairs in one picture (the first columns given win; the report says so)
MAX_PAIRS = 6
#: at most this many partitions in ``layout_partitions.png`` (the largest ones)
MAX_PARTITION_PANELS = 24
_PANEL_W, _PANEL_H = 4.6, 3.9
_READ = "#e6550d"
_SKIPPED = "#9e9e9e"
_QUERY = "#2ca02c"


# ----------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class FileBox:
    """One base file's value ranges on the drawn columns (``None`` where the file has no usable stats)."""

    name: str
    partition: str
    ranges: dict[str, tuple[Any, Any] | None]


@dataclass(frozen=True)
class Panel:
    """The files one panel draws and which of them a query reads (``read`` is ``None`` without a query)."""

    label: str
    partition: str | None
    files: tuple[FileBox, ...]
    read: frozenset[str] | None = None
    files_in_table: int = 0
    read_in_table: int | None = None


# ----------------------------------------------------------------------------------------------- axes


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and not math.isfinite(v))


@dataclass(frozen=True)
class Axis:
    """Maps one column's values to plot positions and labels the ticks with values.

    ``kind`` is ``number`` (ints, floats, decimals, booleans), ``time`` (dates and timestamps, as matplotlib
    date numbers) or ``text`` (strings / binaries: the position of a value among the sorted distinct bounds).
    """

    column: str
    kind: str
    text_values: tuple[Any, ...] = ()

    @staticmethod
    def for_values(column: str, values: Sequence[Any]) -> Axis:
        present = [v for v in values if not _is_missing(v)]
        if not present:
            return Axis(column, "number")
        sample = present[0]
        if isinstance(sample, (str, bytes)):
            return Axis(column, "text", tuple(sorted(set(present))))
        if isinstance(sample, (_dt.date, _dt.datetime)):
            return Axis(column, "time")
        if isinstance(sample, (bool, int, float, Decimal, np.integer, np.floating)):
            return Axis(column, "number")
        raise InvalidArgumentError(f"cannot draw column {column!r} of values like {sample!r}")

    def position(self, value: Any) -> float | None:
        """The plot position of ``value`` (fractional between known text values); ``None`` if undrawable."""
        if _is_missing(value):
            return None
        if self.kind == "text":
            if isinstance(value, str) != isinstance(self.text_values[0], str):
                return None
            i = int(np.searchsorted(np.array(self.text_values, dtype=object), value, side="left"))
            if i < len(self.text_values) and self.text_values[i] == value:
                return float(i)
            return i - 0.5
        if self.kind == "time":
            from matplotlib import dates as mdates

            if isinstance(value, _dt.datetime):
                return float(mdates.date2num(value))
            if isinstance(value, _dt.date):
                return float(mdates.date2num(_dt.datetime(value.year, value.month, value.day)))
            return None
        try:
            f = float(value)
        except (TypeError, ValueError):
            return None
        return f if math.isfinite(f) else None

    def span(self, lo: Any, hi: Any) -> tuple[float, float] | None:
        a, b = self.position(lo), self.position(hi)
        if a is None or b is None:
            return None
        if self.kind == "text":  # a value is a cell [i - 0.4, i + 0.4]
            return a - 0.4, b + 0.4
        return a, b

    def label(self) -> str:
        return {"text": f"{self.column} (text, sorted)", "time": self.column}.get(self.kind, self.column)

    def style(self, ax: Any, which: str, marks: Sequence[Any] = ()) -> None:
        """Value ticks on the ``x`` or ``y`` axis of ``ax``; on a text axis the ``marks`` (a query's
        constants) are always labelled, in the query's colour."""
        from matplotlib import dates as mdates
        from matplotlib import ticker

        axis = ax.xaxis if which == "x" else ax.yaxis
        if self.kind == "text":
            n = len(self.text_values)
            k = 12 if which == "y" else 8
            step = max(1, math.ceil(n / k))
            marked: dict[float, Any] = {}
            for m in marks:
                pos = self.position(m)
                if pos is not None and -0.5 <= pos <= n - 0.5:
                    marked[pos] = m
            names = {float(i): self.text_values[i] for i in range(0, n, step)
                     if all(abs(i - m) * 2 >= step for m in marked)}
            names.update(marked)
            ticks = sorted(names)
            axis.set_major_locator(ticker.FixedLocator(ticks))
            axis.set_major_formatter(ticker.FixedFormatter([_short(names[t]) for t in ticks]))
            labels = ax.get_xticklabels() if which == "x" else ax.get_yticklabels()
            for i, t in zip(ticks, labels):
                if i in marked:
                    t.set_color("#116611")
                    t.set_fontweight("bold")
                if which == "x":
                    t.set_rotation(45)
                    t.set_horizontalalignment("right")
        elif self.kind == "time":
            locator = mdates.AutoDateLocator()
            axis.set_major_locator(locator)
            axis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        else:
            axis.set_major_locator(ticker.MaxNLocator(6))
            fmt = ticker.ScalarFormatter(useOffset=False)
            fmt.set_scientific(False)
            axis.set_major_formatter(fmt)


def _short(v: Any, width: int = 14) -> str:
    s = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return s if len(s) <= width else s[: width - 1] + "…"


def _axis_limits(axis: Axis, spans: list[tuple[float, float]]) -> tuple[float, float]:
    if axis.kind == "text":
        return -0.6, max(len(axis.text_values) - 0.4, 0.6)
    if not spans:
        return 0.0, 1.0
    lo = min(s[0] for s in spans)
    hi = max(s[1] for s in spans)
    pad = (hi - lo) * 0.03 or (abs(lo) * 0.05 or 0.5)
    return lo - pad, hi + pad


def _widen(a: float, b: float, limits: tuple[float, float], least: float = 0.006) -> tuple[float, float]:
    """A box at least ``least`` of the axis wide, so single-value files show as thin boxes, not nothing."""
    least = (limits[1] - limits[0]) * least
    if b - a >= least:
        return a, b
    mid = (a + b) / 2
    return mid - least / 2, mid + least / 2


# ------------------------------------------------------------------------------------------- query box


def column_bounds(pred: ir.Predicate, column: str) -> tuple[Any, Any] | None:
    """The smallest ``[lo, hi]`` (``None`` ends are open) holding every value of ``column`` that can satisfy
    ``pred``; ``None`` when ``pred`` does not bound the column. For drawing only (never for skipping)."""
    bounds = _bounds(pred, column)
    if bounds is None or (bounds[0] is None and bounds[1] is None):
        return None
    return bounds


_Bounds = tuple[Any, Any]


def _bounds(p: ir.Predicate, column: str) -> _Bounds | None:
    if isinstance(p, ir.And):
        left, right = _bounds(p.left, column), _bounds(p.right, column)
        if left is None or right is None:
            return left or right
        return _tighter(left[0], right[0], max), _tighter(left[1], right[1], min)
    if isinstance(p, ir.Or):
        left, right = _bounds(p.left, column), _bounds(p.right, column)
        if left is None or right is None:
            return None
        lo = None if left[0] is None or right[0] is None else _safe(min, left[0], right[0])
        hi = None if left[1] is None or right[1] is None else _safe(max, left[1], right[1])
        return lo, hi
    if not isinstance(p, ir.LeafPredicate) or p.term.name != column:
        return None
    if isinstance(p, ir.In) and p.literals:
        values = [lit.value for lit in p.literals if not lit.is_null]
        return (_safe(min, *values), _safe(max, *values)) if values else None
    if not isinstance(p, ir.ComparisonPredicate) or p.literal.is_null or p.literal.is_nan:
        return None
    v = p.literal.value
    if isinstance(p, (ir.Eq, ir.NullSafeEq)):
        return v, v
    if isinstance(p, (ir.Lt, ir.LtEq)):
        return None, v
    if isinstance(p, (ir.Gt, ir.GtEq)):
        return v, None
    if isinstance(p, ir.StartsWith) and isinstance(v, str):
        return v, v + "\U0010ffff"
    return None


def _safe(fn: Callable[..., Any], *values: Any) -> Any:
    try:
        return fn(values)
    except TypeError:
        return None


def _tighter(a: Any, b: Any, pick: Callable[..., Any]) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return _safe(pick, a, b)


# ---------------------------------------------------------------------------------------------- drawing


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - matplotlib is a runtime dependency
        raise InvalidArgumentError("the layout pictures need matplotlib, which is not installed",
                                   hint="pip install matplotlib (it is a dependency of hudi_layout)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _axes_for(panels_by_table: Sequence[Sequence[Panel]], columns: Sequence[str]) -> dict[str, Axis]:
    values: dict[str, list[Any]] = {c: [] for c in columns}
    for panels in panels_by_table:
        for panel in panels:
            for f in panel.files:
                for c in columns:
                    r = f.ranges.get(c)
                    if r is not None:
                        values[c] += [r[0], r[1]]
    return {c: Axis.for_values(c, vals) for c, vals in values.items()}


def _draw_panel(ax: Any, panel: Panel, x: Axis, y: Axis, limits: tuple[tuple[float, float], tuple[float, float]],
                query: tuple[_Bounds | None, _Bounds | None] | None = None, small: bool = False) -> int:
    """Draw the boxes of ``panel`` on ``ax``; returns how many files were drawn."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    boxes: list[tuple[str, tuple[float, float, float, float]]] = []
    for f in panel.files:
        rx, ry = f.ranges.get(x.column), f.ranges.get(y.column)
        if rx is None or ry is None:
            continue
        sx, sy = x.span(*rx), y.span(*ry)
        if sx is None or sy is None:
            continue
        a, b = _widen(*sx, limits[0])
        c, d = _widen(*sy, limits[1])
        boxes.append((f.name, (a, c, b - a, d - c)))
    n = len(boxes)
    alpha = 0.18 if n <= 40 else max(0.03, 6.0 / n)
    if panel.read is None:
        cmap = _pyplot().get_cmap("tab20" if n <= 20 else "viridis")
        colors = [cmap(i / max(1, n - 1)) if n > 20 else cmap(i % 20) for i in range(n)]
        rects = [Rectangle((a, c), w, h) for _, (a, c, w, h) in boxes]
        ax.add_collection(PatchCollection(rects, facecolor=[(*col[:3], alpha) for col in colors],
                                          edgecolor=colors, linewidth=0.8 if n <= 60 else 0.4))
    else:
        skipped = [Rectangle((a, c), w, h) for name, (a, c, w, h) in boxes if name not in panel.read]
        read = [Rectangle((a, c), w, h) for name, (a, c, w, h) in boxes if name in panel.read]
        ax.add_collection(PatchCollection(skipped, facecolor="none", edgecolor=_SKIPPED, linewidth=0.6))
        ax.add_collection(PatchCollection(read, facecolor=(0.9, 0.33, 0.05, 0.12), edgecolor=_READ,
                                          linewidth=1.2))
        if query is not None:
            _draw_query(ax, x, y, query, limits)
    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
    marks = [[v for v in (b or ()) if v is not None] for b in (query or (None, None))]
    x.style(ax, "x", marks[0])
    y.style(ax, "y", marks[1])
    ax.tick_params(labelsize=7 if small else 8)
    ax.grid(True, linewidth=0.3, alpha=0.5)
    return n


def _draw_query(ax: Any, x: Axis, y: Axis, query: tuple[_Bounds | None, _Bounds | None],
                limits: tuple[tuple[float, float], tuple[float, float]]) -> None:
    from matplotlib.patches import Rectangle

    def side(axis: Axis, b: _Bounds | None, lim: tuple[float, float]) -> tuple[float, float]:
        if b is None:
            return lim
        lo = axis.position(b[0]) if b[0] is not None else None
        hi = axis.position(b[1]) if b[1] is not None else None
        if axis.kind == "text":
            lo = lim[0] if lo is None else lo - 0.45
            hi = lim[1] if hi is None else (hi + 0.45 if b[1] in axis.text_values else hi)
        lo = lim[0] if lo is None else max(lo, lim[0])
        hi = lim[1] if hi is None else min(hi, lim[1])
        return _widen(lo, hi, lim, least=0.025) if hi >= lo else (lo, lo)

    if query[0] is None and query[1] is None:
        return
    a, b = side(x, query[0], limits[0])
    c, d = side(y, query[1], limits[1])
    ax.add_patch(Rectangle((a, c), b - a, d - c, facecolor=(0.17, 0.63, 0.17, 0.30), edgecolor="#116611",
                           linewidth=2.0, linestyle="--", zorder=5))
    # the label sits outside the box's top-right corner, or inside it when that corner is at the panel's edge
    (x0, x1), (y0, y1) = limits
    inside_x = x1 > x0 and (b - x0) / (x1 - x0) > 0.85
    inside_y = y1 > y0 and (d - y0) / (y1 - y0) > 0.9
    ax.annotate("query", (b, d), xytext=(-4 if inside_x else 4, -4 if inside_y else 4), textcoords="offset points",
                ha="right" if inside_x else "left", va="top" if inside_y else "bottom", color="#116611",
                fontsize=8, fontweight="bold", zorder=6, annotation_clip=True)


def _title(panel: Panel, drawn: int) -> str:
    where = f" · partition {panel.partition}" if panel.partition is not None else ""
    if panel.read is None:
        return f"{panel.label}{where}: {drawn} files"
    here = sum(1 for f in panel.files if f.name in panel.read)
    text = f"{panel.label}{where}: reads {here} of {len(panel.files)} files"
    if panel.read_in_table is not None and panel.partition is not None:
        text += f"\n(all partitions: {panel.read_in_table} of {panel.files_in_table})"
    return text


def pairs_of(columns: Sequence[str]) -> list[tuple[str, str]]:
    return list(itertools.combinations(columns, 2))[:MAX_PAIRS]


def query_pairs(query: ir.Predicate, columns: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs worth drawing for a query: those with both columns bounded by it, then those with one
    (the first pair when it bounds none of the columns)."""
    bounded = {c for c in columns if column_bounds(query, c) is not None}
    pairs = list(itertools.combinations(columns, 2))
    ranked = sorted((p for p in pairs if bounded & set(p)), key=lambda p: -len(bounded & set(p)))
    return (ranked or pairs[:1])[:MAX_PAIRS]


#: room around each panel, in inches: tick labels + axis label on the left and below, the title on top
_LEFT, _BOTTOM, _TOP, _RIGHT = 1.25, 0.95, 0.55, 0.15


def _title_lines(title: str, fig_width: float) -> list[str]:
    return textwrap.wrap(title, max(40, int(fig_width * 11)))  # ~11 characters of an 11-point title per inch


def _grid(plt: Any, rows: int, cols: int, panel_w: float, panel_h: float, title: str) -> tuple[Any, Any]:
    """A figure of ``rows`` x ``cols`` panels with fixed margins (no layout engine: measuring every tick
    label took most of the drawing time) and room for the wrapped ``title``."""
    cell_w, cell_h = panel_w + _LEFT + _RIGHT, panel_h + _BOTTOM + _TOP
    head = 0.25 + 0.22 * len(_title_lines(title, cols * cell_w))
    width, height = cols * cell_w, rows * cell_h + head
    fig, grid = plt.subplots(rows, cols, squeeze=False, figsize=(width, height), gridspec_kw={
        "left": _LEFT / width, "right": 1 - _RIGHT / width, "bottom": _BOTTOM / height,
        "top": 1 - (head + _TOP) / height, "wspace": (_LEFT + _RIGHT) / panel_w,
        "hspace": (_BOTTOM + _TOP) / panel_h})
    return fig, grid


def _suptitle(fig: Any, title: str) -> None:
    lines = _title_lines(title, fig.get_figwidth())
    fig.suptitle("\n".join(lines), fontsize=11, y=1 - 0.12 / fig.get_figheight(), va="top")


def draw_pair_grid(panels: Sequence[Panel], columns: Sequence[str], path: Path, *, title: str,
                   query: ir.Predicate | None = None) -> Path:
    """Rows: every pair of ``columns`` (at most :data:`MAX_PAIRS`); columns: ``panels`` side by side."""
    plt = _pyplot()
    pairs = query_pairs(query, columns) if query is not None else pairs_of(columns)
    if not pairs:
        raise InvalidArgumentError("a layout picture needs at least two columns")
    axes_of = _axes_for([panels], columns)
    limits = {c: _axis_limits(axes_of[c], _all_spans(panels, axes_of[c])) for c in columns}
    fig, grid = _grid(plt, len(pairs), len(panels), _PANEL_W, _PANEL_H, title)
    for r, (cx, cy) in enumerate(pairs):
        bounds = (column_bounds(query, cx), column_bounds(query, cy)) if query is not None else None
        for k, panel in enumerate(panels):
            ax = grid[r][k]
            drawn = _draw_panel(ax, panel, axes_of[cx], axes_of[cy], (limits[cx], limits[cy]), bounds)
            ax.set_title(_title(panel, drawn), fontsize=9)
            ax.set_xlabel(axes_of[cx].label(), fontsize=8)
            ax.set_ylabel(axes_of[cy].label(), fontsize=8)
    _suptitle(fig, title)
    return _save(fig, path)


def draw_partition_grid(panels_by_partition: Sequence[Sequence[Panel]], x: str, y: str, path: Path, *,
                        title: str) -> Path:
    """One small panel per partition (tables of one partition side by side), on the columns ``x``/``y``."""
    plt = _pyplot()
    flat = [p for group in panels_by_partition for p in group]
    axes_of = _axes_for([flat], [x, y])
    limits = (_axis_limits(axes_of[x], _all_spans(flat, axes_of[x])),
              _axis_limits(axes_of[y], _all_spans(flat, axes_of[y])))
    per = max(1, len(panels_by_partition[0]))
    # at most 6 panels a row, and no more columns than there are partitions (no empty width to the right)
    groups_per_row = max(1, min(6 // per, len(panels_by_partition)))
    rows = math.ceil(len(panels_by_partition) / groups_per_row)
    cols = groups_per_row * per
    fig, grid = _grid(plt, rows, cols, 3.4, 3.0, title)
    for i, group in enumerate(panels_by_partition):
        for k, panel in enumerate(group):
            ax = grid[i // groups_per_row][(i % groups_per_row) * per + k]
            drawn = _draw_panel(ax, panel, axes_of[x], axes_of[y], limits, small=True)
            ax.set_title(_title(panel, drawn), fontsize=8)
            ax.set_xlabel(axes_of[x].label(), fontsize=7)
            ax.set_ylabel(axes_of[y].label(), fontsize=7)
    for j in range(len(panels_by_partition) * per, rows * cols):
        grid[j // cols][j % cols].set_visible(False)
    _suptitle(fig, title)
    return _save(fig, path)


def _all_spans(panels: Sequence[Panel], axis: Axis) -> list[tuple[float, float]]:
    out = []
    for p in panels:
        for f in p.files:
            r = f.ranges.get(axis.column)
            if r is not None:
                s = axis.span(*r)
                if s is not None:
                    out.append(s)
    return out


def _save(fig: Any, path: Path) -> Path:
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def as_python(array: pa.Array) -> list[Any]:
    """Arrow values as Python objects (timestamps as ``datetime``; nanosecond ones floored to micros)."""
    if pa.types.is_timestamp(array.type) and array.type.unit == "ns":
        array = array.cast(pa.timestamp("us", array.type.tz), safe=False)
    return array.to_pylist()


__all__ = ["MAX_PAIRS", "MAX_PARTITION_PANELS", "Axis", "FileBox", "Panel", "as_python", "column_bounds",
           "draw_pair_grid", "draw_partition_grid", "pairs_of"]
