"""Data skipping: a predicate IR, its front ends, stats evaluation and pruning.

Pipeline: a front end (:func:`from_sql`, :func:`from_tuples`, :func:`from_datasource_filters`,
:func:`from_spark_column`) produces a :class:`~.ir.Predicate`; :func:`prune` (per-file column stats) or
:func:`prune_partitions` (partition paths) evaluates it with :func:`evaluate`, which never drops a file
unless its statistics prove that no row can match. :func:`evaluate_rows` is the row-level oracle.
No module here imports pyspark at import time.
"""

from hudi_layout.skipping.datasource import from_datasource_filters
from hudi_layout.skipping.evaluate import (
    IN_PREDICATE_LIMIT,
    ROWS_CANNOT_MATCH,
    ROWS_MIGHT_MATCH,
    Evaluation,
    evaluate,
    stats_evaluator,
)
from hudi_layout.skipping.ir import Literal, Predicate, Ref, and_, between, or_
from hudi_layout.skipping.oracle import evaluate_rows
from hudi_layout.skipping.partitions import partition_stats, prune_partitions
from hudi_layout.skipping.pruning import PruneResult, prune
from hudi_layout.skipping.spark_column import from_spark_column
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.stats import ColumnStats, StatsTable
from hudi_layout.skipping.tuples import from_tuples
from hudi_layout.skipping.visitors import referenced_columns, rewrite_not

__all__ = [
    "IN_PREDICATE_LIMIT", "ROWS_CANNOT_MATCH", "ROWS_MIGHT_MATCH", "ColumnStats", "Evaluation", "Literal",
    "Predicate", "PruneResult", "Ref", "StatsTable", "and_", "between", "evaluate", "evaluate_rows",
    "from_datasource_filters", "from_spark_column", "from_sql", "from_tuples", "or_", "partition_stats",
    "prune", "prune_partitions", "referenced_columns", "rewrite_not", "stats_evaluator",
]
