"""Partition pruning with the same evaluator: each partition is a "file" whose min = max = its value.

A partition path such as ``region=us/day=2024-01-01`` (hive style) or ``us/2024-01-01`` is turned into one
stats entry per partition field: ``min = max = value`` (typed by the schema), ``null_count = 0``,
``value_count = 1``. The default partition (``__HIVE_DEFAULT_PARTITION__``, or ``default`` from Hudi before
0.12) holds the NULL values of a column, and of a string column also its empty strings (Hudi's key generators
file both there) and the values that spell the folder's own name: its entry is then "NULL, or a string from
``''`` to ``'default'``" (null count unknown), never "NULL only" (session 15: ``ps = ''`` skipped them all). A
path that does not split into the fields, or a value that does not convert to the field's type, gives an
unknown entry (the partition is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_layout.format.partition_path import DEFAULT_PARTITION, DEPRECATED_DEFAULT_PARTITION, PartitionPathRule
from hudi_layout.skipping.evaluate import evaluate
from hudi_layout.skipping.ir import Predicate
from hudi_layout.skipping.pruning import PruneResult
from hudi_layout.skipping.stats import ColumnStats, StatsTable, is_textual

_UNKNOWN = object()
#: the values a textual column's default partition may hold besides NULL: ``''`` up to the folder names
_DEFAULT_TEXT_RANGE = ("", max(DEFAULT_PARTITION, DEPRECATED_DEFAULT_PARTITION))


def parse_partition_path(path: str, fields: Sequence[str], *, hive_style: bool,
                         url_decode: bool = False) -> dict[str, str | None] | None:
    """Field → raw string value (``None`` for the default partition); ``None`` if the path does not fit.
    The table's own rule decodes it (:meth:`PartitionPathRule.values`, Hudi's unescaping when url-encoded)."""
    return PartitionPathRule(tuple(fields), hive_style, url_decode).values(path)


def _convert(value: str, type_: pa.DataType) -> object:
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return value
    try:
        return pc.cast(pa.array([value], pa.string()), type_)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _UNKNOWN


def partition_stats(partition_paths: Sequence[str], partition_fields: Sequence[str], *, hive_style: bool,
                    schema: pa.Schema | None = None, url_decode: bool = False) -> StatsTable:
    """A :class:`StatsTable` with one "file" per partition path (see the module docstring).

    ``schema`` types the partition columns (a field missing from it is read as a string); ``url_decode``
    undoes ``%XX`` escaping (``hoodie.datasource.write.partitionpath.urlencode=true``).
    """
    parsed = [parse_partition_path(p, partition_fields, hive_style=hive_style, url_decode=url_decode)
              for p in partition_paths]
    columns: dict[str, ColumnStats] = {}
    for name in partition_fields:
        type_ = schema.field(name).type if schema is not None and name in schema.names else pa.string()
        # a textual column's default partition: NULL or a string in this range (module docstring)
        low, high = _DEFAULT_TEXT_RANGE
        default_range: tuple[Any, Any] | None = (_convert(low, type_), _convert(high, type_)) \
            if is_textual(type_) else None
        lows: list[Any] = []
        values: list[Any] = []
        nulls: list[int | None] = []
        counts: list[int | None] = []
        for entry in parsed:
            raw: object = _UNKNOWN if entry is None else entry[name]
            value = raw if raw is None or raw is _UNKNOWN else _convert(str(raw), type_)
            # per partition: (min, max, null count, value count); unknown -> all null (the file is kept)
            if value is _UNKNOWN:
                row: tuple[Any, Any, int | None, int | None] = (None, None, None, None)
            elif value is None and default_range is not None:
                row = (default_range[0], default_range[1], None, None)
            elif value is None:
                row = (None, None, 1, 1)
            else:
                row = (value, value, 0, 1)
            lows.append(row[0])
            values.append(row[1])
            nulls.append(row[2])
            counts.append(row[3])
        columns[name] = ColumnStats(pa.array(lows, type_), pa.array(values, type_), pa.array(nulls, pa.int64()),
                                    pa.array(counts, pa.int64()))
    return StatsTable(len(partition_paths), columns)


def prune_partitions(predicate: Predicate, partition_paths: Sequence[str], partition_fields: Sequence[str], *,
                     hive_style: bool, schema: pa.Schema | None = None,
                     url_decode: bool = False) -> PruneResult:
    """Which partitions might hold matching rows. Predicates on non-partition columns are unknown here."""
    stats = partition_stats(partition_paths, partition_fields, hive_style=hive_style, schema=schema,
                            url_decode=url_decode)
    result = evaluate(predicate, stats)
    kept = [i for i, keep in enumerate(result.might_match) if keep]
    return PruneResult(kept=kept, dropped=result.reasons)
