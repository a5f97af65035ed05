"""The harness's predicate evaluator agrees with Spark, row by row and in all three truth values.

Spark is asked without any shortcut that could itself lose rows: the rows are a parquet file written by
pyarrow and read *uncached* with ``spark.sql.parquet.filterPushdown=false``, and each predicate is projected
as a column (so its NULLs are compared too, not only the rows a filter keeps).
"""

from __future__ import annotations

import random

import pyarrow.parquet as pq
import pytest

from .generate import PredicateGenerator, all_columns, random_rows, rows_to_arrow
from .spark_semantics import Cmp, Col, InList, Lit, columns_of, evaluate, to_column, to_sql

pytestmark = pytest.mark.integration

N_ROWS = 400
N_PREDICATES = 240


@pytest.fixture()
def no_pushdown(spark):
    key = "spark.sql.parquet.filterPushdown"
    old = spark.conf.get(key)
    spark.conf.set(key, "false")
    yield spark
    spark.conf.set(key, old)


def _spark_truths(df, exprs):
    """{id: [truth of each expression]} for every row."""
    out = {}
    step = 60
    for start in range(0, len(exprs), step):
        chunk = exprs[start:start + step]
        got = df.select("id", *[e.alias(f"p{k}") for k, e in enumerate(chunk)]).collect()
        for row in got:
            out.setdefault(row["id"], []).extend(row[1:])
    return out


#: columns schema evolution may add, so their kinds (binary among them) are checked against Spark too
ADDED = (("e1", "binary"), ("e2", "binary"))


def _predicates(rows, seed):
    rng = random.Random(seed)
    gen = PredicateGenerator(rng, rows)
    columns = all_columns(ADDED)
    preds = [gen.predicate(columns) for _ in range(N_PREDICATES // 2)]
    preds += [gen.leaf(columns) for _ in range(N_PREDICATES // 2)]
    nan, neg_zero = float("nan"), -0.0
    d, f = Col("d", "double"), Col("f", "float")
    preds += [Cmp(">", d, Lit(1e300, "double")), Cmp("=", d, Lit(nan, "double")), Cmp("=", d, Lit(0.0, "double")),
              Cmp("<", d, Lit(nan, "double")), Cmp(">=", f, Lit(nan, "float")), Cmp("=", f, Lit(neg_zero, "float")),
              InList(d, (Lit(nan, "double"), Lit(None, "double"))), InList(d, (Lit(nan, "double"),), negated=True),
              Cmp("<=>", f, Lit(0.0, "double")), Cmp(">=", f, Lit(0.1, "double")), Cmp("=", f, Lit(3, "int"))]
    return preds


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_evaluator_agrees_with_uncached_spark(no_pushdown, tmp_path, seed):
    spark = no_pushdown
    rows = random_rows(random.Random(seed), 0, N_ROWS, ADDED)
    path = tmp_path / "rows.parquet"
    pq.write_table(rows_to_arrow(rows, ADDED), path)
    df = spark.read.parquet(str(path))
    preds = _predicates(rows, seed)
    from pyspark.sql import functions as F

    by_sql = _spark_truths(df, [F.expr(to_sql(p)) for p in preds])
    by_column = _spark_truths(df, [to_column(p) for p in preds])
    wrong = []
    for row in rows:
        want = [evaluate(p, row) for p in preds]
        for k, p in enumerate(preds):
            for label, got in (("sql", by_sql[row["id"]][k]), ("column", by_column[row["id"]][k])):
                if got != want[k]:
                    values = {c: row[c] for c in sorted(columns_of(p))}
                    wrong.append(f"{label} {to_sql(p)} on {values}: spark {got}, evaluator {want[k]}")
    assert not wrong, f"{len(wrong)} disagreements, e.g.\n" + "\n".join(wrong[:15])
