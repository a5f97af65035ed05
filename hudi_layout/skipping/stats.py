"""Per-file column statistics, aligned to a file index, as the evaluator consumes them.

Assumptions about how the statistics were computed (they match Hudi's ``column_stats`` records and
``pyarrow.compute.min_max``, which the writer side of this project uses):

* ``min``/``max`` are over the non-null values and are null when the file has none (or the stats are
  missing). They are *bounds*: every non-null value lies in ``[min, max]``.
* For floating-point columns NaN may be ignored by ``min``/``max`` (pyarrow and parquet writers skip it;
  an all-NaN file gets NaN bounds). NaN is the *greatest* value in Spark, so ``min`` stays a valid lower
  bound but ``max`` is not an upper bound: the evaluator never trusts a float ``max`` for predicates a NaN
  could satisfy (``>``, ``>=``, ``!=``, ``NOT IN``), and keeps every file whose bounds are NaN — unless
  the file's bounds are **NaN-exact** (``nan_exact[i]``): then ``max`` is NaN exactly when the file holds a
  NaN, so a non-NaN ``max`` is a true upper bound (hudi_layout's writer records its bounds so and marks
  the commits that wrote them; the scan planner sets the flag per file). Bounds of other writers that read
  ``min = max = 0.0`` for a file with values are not trusted either: a parquet reader turns NaN-poisoned
  footer statistics into 0.0 / 0.0.
* ``null_count`` counts null rows, ``value_count`` all rows (nulls included), like Hudi's ``nullCount`` /
  ``valueCount``. ``null_count == value_count`` means "no non-null value".
* ``truncated=True`` (string/binary only) means ``min`` and ``max`` may be *prefixes* of the true values
  (naive truncation, no increment of the last byte). ``min`` is still a lower bound; a value may exceed
  ``max`` only if ``max`` is a prefix of it, and the evaluator accounts for that.

A null entry in any array means "unknown for that file"; a column absent from the table is unknown for
every file. Unknown never skips.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError


def is_textual(t: pa.DataType) -> bool:
    """String or binary (the types whose bounds may be truncated prefixes and whose order is by bytes)."""
    return any(f(t) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                              pa.types.is_large_binary, pa.types.is_string_view))


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Statistics of one column for N files; entry ``i`` belongs to file ``i``."""

    min: pa.Array
    max: pa.Array
    null_count: pa.Array
    value_count: pa.Array
    truncated: bool = False
    #: per file: float bounds that count NaN (max is NaN iff the file holds one); None = none of them
    nan_exact: pa.Array | None = None

    def __post_init__(self) -> None:
        n = len(self.min)
        if not len(self.max) == len(self.null_count) == len(self.value_count) == n:
            raise InvalidArgumentError(
                f"column stats arrays differ in length: min {n}, max {len(self.max)}, "
                f"null_count {len(self.null_count)}, value_count {len(self.value_count)}")
        if self.min.type != self.max.type:
            raise InvalidArgumentError(f"min is {self.min.type} but max is {self.max.type}")
        if self.nan_exact is not None and (len(self.nan_exact) != n or not pa.types.is_boolean(self.nan_exact.type)):
            raise InvalidArgumentError(f"nan_exact must be a boolean array of {n} entries")
        for name in ("null_count", "value_count"):
            arr = getattr(self, name)
            if not (pa.types.is_integer(arr.type) or pa.types.is_null(arr.type)):
                raise InvalidArgumentError(f"{name} must be an integer array, got {arr.type}")

    def __len__(self) -> int:
        return len(self.min)

    @classmethod
    def from_pylists(cls, type: pa.DataType, min: list, max: list, null_count: list, value_count: list,
                     *, truncated: bool = False, nan_exact: list | None = None) -> ColumnStats:
        """Build from Python lists (``None`` = unknown); handy in tests."""
        return cls(pa.array(min, type), pa.array(max, type), pa.array(null_count, pa.int64()),
                   pa.array(value_count, pa.int64()), truncated,
                   None if nan_exact is None else pa.array(nan_exact, pa.bool_()))


@dataclass(frozen=True, slots=True)
class StatsTable:
    """``num_files`` files and, per column name, their :class:`ColumnStats`."""

    num_files: int
    columns: Mapping[str, ColumnStats] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, stats in self.columns.items():
            if len(stats) != self.num_files:
                raise InvalidArgumentError(
                    f"stats of column {name!r} cover {len(stats)} files, expected {self.num_files}")

    def column(self, name: str) -> ColumnStats | None:
        """Stats of ``name``: exact match first, then a unique case-insensitive one (Spark's default)."""
        if name in self.columns:
            return self.columns[name]
        folded = [k for k in self.columns if k.lower() == name.lower()]
        return self.columns[folded[0]] if len(folded) == 1 else None
