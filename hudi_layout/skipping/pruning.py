"""Pruning entry point: align per-column stats tables to a file list and evaluate a predicate on them.

Each stats table has one row per (file, column) with columns ``file_name``, ``min``, ``max`` (typed as
the column), ``null_count`` and ``value_count``. Rows may be missing for some files and come in any
order. A file with no row, or with more than one row (ambiguous), has unknown stats and is kept.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.bind import bind, resolve_column
from hudi_layout.skipping.evaluate import evaluate
from hudi_layout.skipping.ir import Predicate
from hudi_layout.skipping.stats import ColumnStats, StatsTable
from hudi_layout.skipping.visitors import referenced_columns

STATS_COLUMNS = ("file_name", "min", "max", "null_count", "value_count")


@dataclass(frozen=True, slots=True)
class PruneResult:
    """Indices (into the input ``files``) kept, and for each dropped one the leaf that excluded it."""

    kept: list[int]
    dropped: dict[int, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def align_stats(files: Sequence[str], stats: pa.Table, *, target_type: pa.DataType | None = None,
                column: str = "?", nan_exact_files: Collection[str] | None = None) -> ColumnStats:
    """Reorder one column's stats table to ``files`` (missing or duplicated file → null entry).

    ``nan_exact_files``: the files whose float bounds count NaN (see :mod:`.stats`)."""
    missing = [c for c in STATS_COLUMNS if c not in stats.column_names]
    if missing:
        raise InvalidArgumentError(f"stats table of column {column!r} lacks columns {missing}")
    names = pc.cast(stats["file_name"], pa.string())
    file_index = pc.index_in(names, value_set=pa.array(list(files), pa.string()))
    idx = pc.fill_null(file_index, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    row_of_file = np.full(len(files), -1, dtype=np.int64)
    valid = idx >= 0
    row_of_file[idx[valid]] = np.flatnonzero(valid)
    counts = np.bincount(idx[valid], minlength=len(files))
    row_of_file[counts > 1] = -1
    take = pa.array(row_of_file, mask=row_of_file < 0)
    lo, hi = (pc.take(stats[name], take).combine_chunks() for name in ("min", "max"))
    if target_type is not None and lo.type != target_type:
        try:
            lo, hi = pc.cast(lo, target_type), pc.cast(hi, target_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidArgumentError(
                f"stats of column {column!r} are {lo.type}, cannot be read as {target_type}") from e
    nulls = pc.take(stats["null_count"], take).combine_chunks()
    values = pc.take(stats["value_count"], take).combine_chunks()
    nan_exact = None
    if nan_exact_files and pa.types.is_floating(lo.type):
        # the flag vouches for bounds that exist: a file without a stats row (or with unknown bounds while it
        # holds non-null values) is never "NaN-exact", whatever its commit says
        known = pc.fill_null(pc.or_(pc.and_(pc.is_valid(lo), pc.is_valid(hi)),
                                    pc.equal(nulls, values)), False).to_numpy(zero_copy_only=False)
        nan_exact = pa.array([bool(k) and row_of_file[i] >= 0 and f in nan_exact_files
                              for i, (f, k) in enumerate(zip(files, known))], pa.bool_())
    return ColumnStats(lo, hi, nulls, values, nan_exact=nan_exact)


def prune(predicate: Predicate, files: Sequence[str], stats_by_column: Mapping[str, pa.Table],
          schema: pa.Schema | None = None, *, nan_exact_files: Collection[str] | None = None) -> PruneResult:
    """Which of ``files`` might hold rows matching ``predicate``, given per-column stats tables.

    Args:
        predicate: the filter (any front end's output; NOT is handled).
        files: file names (or ids) as they appear in the stats tables' ``file_name``.
        stats_by_column: column name → stats table (see the module docstring). Columns without a table
            are unknown for every file.
        schema: the table schema; when given, unknown columns raise :class:`InvalidArgumentError` and the
            stats min/max are read as the schema's type.
        nan_exact_files: the files whose float statistics count NaN (max is NaN iff the file holds one), so
            a non-NaN max bounds every value; other float bounds may leave NaN out.

    Returns:
        A :class:`PruneResult` with the kept indices (in order), a reason per dropped index, and notes on
        the leaves that could not be used.
    """
    if schema is not None:
        predicate = bind(predicate, schema)
    wanted = referenced_columns(predicate)
    columns: dict[str, ColumnStats] = {}
    for name, table in stats_by_column.items():
        target = None
        if schema is not None:
            try:
                target = schema.field(resolve_column(name, schema)).type
            except (InvalidArgumentError, KeyError):
                target = None
        if name in wanted or any(name.lower() == w.lower() for w in wanted):
            columns[name] = align_stats(files, table, target_type=target, column=name,
                                        nan_exact_files=nan_exact_files)
    result = evaluate(predicate, StatsTable(len(files), columns))
    kept = [int(i) for i in np.flatnonzero(result.might_match)]
    return PruneResult(kept=kept, dropped=result.reasons, notes=result.notes)
