"""Partition pruning with the same evaluator: each partition is a "file" whose min = max = its value.

A partition path such as ``region=us/day=2024-01-01`` (hive style) or ``us/2024-01-01`` is turned into one
stats entry per partition field: ``min = max = value`` (typed by the schema), ``null_count = 0``,
``value_count = 1``. The Hive default partition ``__HIVE_DEFAULT_PARTITION__`` stands for NULL
(``null_count = value_count = 1``). A path that does not split into the fields, or a value that does not
convert to the field's type, gives an unknown entry (the partition is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_layout.format.partition_path import PartitionPathRule
from hudi_layout.skipping.evaluate import evaluate
from hudi_layout.skipping.ir import Predicate
from hudi_layout.skipping.pruning import PruneResult
from hudi_layout.skipping.stats import ColumnStats, StatsTable

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_UNKNOWN = object()


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
        values: list[Any] = []
        nulls: list[int | None] = []
        counts: list[int | None] = []
        for entry in parsed:
            raw: object = _UNKNOWN if entry is None else entry[name]
            value = raw if raw is None or raw is _UNKNOWN else _convert(str(raw), type_)
            # per partition: (value, null count, value count); unknown -> all null (the file is kept)
            if value is _UNKNOWN:
                row: tuple[Any, int | None, int | None] = (None, None, None)
            elif value is None:
                row = (None, 1, 1)
            else:
                row = (value, 0, 1)
            values.append(row[0])
            nulls.append(row[1])
            counts.append(row[2])
        arr = pa.array(values, type_)
        columns[name] = ColumnStats(arr, arr, pa.array(nulls, pa.int64()), pa.array(counts, pa.int64()))
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
