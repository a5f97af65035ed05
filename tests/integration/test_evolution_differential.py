"""Differential test of schema evolution in a live table: random sequences of inserts or upserts that add a column
or widen ``v`` (int -> long), upserts and deletes of keys stored in files of every age, and clusterings, against a
plain-Python model. After every step hudi-rs (its batches conformed to the table schema) and
``hudi_layout.read`` return exactly the model's rows, and a predicate on the newest column returns the model's
matches (files written before a column existed have no statistics for it and must never be skipped). At the
end, time travel to every write (hl.read, the data source, hudi-rs) gives the model's rows of that instant in
the schema of that instant, as Hudi's time travel reads it (session 18; the latest schema before).

Found in session 11: an upsert into a file written before a column was added dropped the new column's values
(test_schema_evolution has the fixed case; this walks the sequences around it).
"""

from __future__ import annotations

import os
import random
from typing import Any

import pyarrow as pa
import pytest

import hudi_layout as hl
from hudi_layout.format.schema_evolution import conform_batch
from tests.helpers.integration import hudi_rs_table

pytestmark = pytest.mark.integration

PARTITIONS = ("a", "b")
#: CI: one seeded sequence; HUDI_LAYOUT_LONG_TESTS=1: more
SEEDS = [5, 6, 7, 8, 9] if os.environ.get("HUDI_LAYOUT_LONG_TESTS") == "1" else [5]


class EvolvingTable:
    def __init__(self, spark: Any, path: str, seed: int) -> None:
        self.spark, self.path, self.rng = spark, path, random.Random(seed)
        self.types: dict[str, pa.DataType] = {"id": pa.int64(), "p": pa.string(), "v": pa.int32(),
                                              "s": pa.string()}
        self.rows: dict[int, dict[str, Any]] = {}
        self.next_id = 0
        self.instant = ""
        #: (instant, the model's rows after it) of every write
        #: (instant, rows, column types) after each write: time travel reads the schema of then (session 18)
        self.history: list[tuple[str, dict[int, dict[str, Any]], dict[str, pa.DataType]]] = []
        self.options = {"hoodie.table.name": "evo", "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.max.file.size": "6000"}

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(list(self.types.items()))

    def value(self, column: str, key: int) -> Any:
        if self.rng.random() < 0.15:
            return None
        t = self.types[column]
        if t == pa.int64():
            return self.rng.choice([self.rng.randint(-99, 99), 2**33 + self.rng.randint(0, 9)])
        if t == pa.int32():
            return self.rng.randint(-99, 99)
        return f"{column}-{key}-{self.rng.randint(0, 9)}"

    def record(self, key: int, p: str) -> dict[str, Any]:
        return {"id": key, "p": p, **{c: self.value(c, key) for c in self.types if c not in ("id", "p")}}

    def write(self, records: list[dict[str, Any]], operation: str) -> None:
        df = self.spark.createDataFrame(pa.Table.from_pylist(records, schema=self.schema))
        self.instant = hl.write(df, self.path, {**self.options, "hoodie.datasource.write.operation": operation}
                                ).instant_time

    def fresh(self, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            out.append(self.record(self.next_id, self.rng.choice(PARTITIONS)))
            self.next_id += 1
        return out

    def evolving_batch(self, n: int) -> tuple[list[dict[str, Any]], str]:
        """Rows in the new schema and the operation that brings it: an insert of ``n`` new rows, or (half the
        time, session 12) an upsert of a few stored keys and up to four new ones."""
        if self.rows and self.rng.random() < 0.5:
            keys = self.rng.sample(sorted(self.rows), min(len(self.rows), self.rng.randint(1, 6)))
            return [self.record(k, self.rows[k]["p"]) for k in keys] + self.fresh(self.rng.randint(0, 4)), "upsert"
        return self.fresh(n), "insert"

    def step(self, op: str) -> None:
        rng = self.rng
        if op == "add_column" or not self.rows:
            if self.rows:
                self.types[f"c{len(self.types)}"] = pa.string()
            batch, how = self.evolving_batch(rng.randint(3, 15))
            self.write(batch, how)
        elif op == "widen":
            self.types["v"] = pa.int64()
            batch, how = self.evolving_batch(rng.randint(1, 6))
            self.write(batch, how)
        elif op == "upsert":
            keys = rng.sample(sorted(self.rows), min(len(self.rows), rng.randint(1, 8)))
            batch = [self.record(k, self.rows[k]["p"]) for k in keys] + self.fresh(rng.randint(0, 3))
            self.write(batch, "upsert")
        elif op == "delete":
            keys = rng.sample(sorted(self.rows), min(len(self.rows), rng.randint(1, 4)))
            batch = [{**{c: None for c in self.types}, "id": k, "p": self.rows[k]["p"]} for k in keys]
            self.write(batch, "delete")
            for k in keys:
                del self.rows[k]
            self.history.append((self.instant, dict(self.rows), dict(self.types)))
            return
        else:
            assert op == "cluster"
            hl.cluster(self.path, ["v"], spark=self.spark, strategy=rng.choice(["linear", "z-order"]),
                       options={"hoodie.clustering.plan.strategy.target.file.max.bytes": "8000",
                                "hoodie.parquet.max.file.size": "12000"})
            return
        for r in batch:
            self.rows[r["id"]] = r
        self.history.append((self.instant, dict(self.rows), dict(self.types)))

    def expected(self, rows: dict[int, dict[str, Any]] | None = None, names: list[str] | None = None) -> list[tuple]:
        names = list(self.types) if names is None else names
        return sorted(tuple(r.get(c) for c in names) for r in (self.rows if rows is None else rows).values())

    def check_time_travel(self) -> None:
        """Each write's version in the schema of then (Hudi's time travel: columns added later are not there,
        ``v`` has its type of then), through hl.read and the data source; hudi-rs's rows on those columns."""
        import hudi

        for instant, rows, types in self.history:
            names = list(types)
            want = self.expected(rows, names)
            df = hl.read(self.path, spark=self.spark, options={"as.of.instant": instant})
            assert df.columns == names, f"hl.read as of {instant}: {df.columns}"
            assert df.schema["v"].dataType.simpleString() == {pa.int32(): "int", pa.int64(): "bigint"}[types["v"]]
            ours = df.toArrow()
            assert sorted(zip(*[ours.column(c).to_pylist() for c in names])) == want, f"hl.read as of {instant}"
            ds = self.spark.read.format("hudi_layout").option("as.of.instant", instant).load(self.path)
            assert ds.columns == names, f"data source as of {instant}: {ds.columns}"
            assert sorted(tuple(r) for r in ds.select(*names).collect()) == want, f"data source as of {instant}"
            batches = hudi_rs_table(self.path).read(hudi.HudiReadOptions().with_as_of_timestamp(instant))
            theirs = pa.Table.from_batches([conform_batch(b, self.schema) for b in batches], schema=self.schema) \
                if batches else self.schema.empty_table()
            assert sorted(zip(*[theirs.column(c).to_pylist() for c in names])) == want, f"hudi-rs as of {instant}"

    def check(self, label: str) -> None:
        want = self.expected()
        names = list(self.types)
        ours = hl.read(self.path, spark=self.spark).select(*names).toArrow()
        assert sorted(zip(*[ours.column(c).to_pylist() for c in names])) == want, f"{label}: hudi_layout.read"
        batches = [conform_batch(b, self.schema) for b in hudi_rs_table(self.path).read()]
        theirs = pa.Table.from_batches(batches, schema=self.schema) if batches else self.schema.empty_table()
        assert sorted(zip(*[theirs.column(c).to_pylist() for c in names])) == want, f"{label}: hudi-rs"
        newest = names[-1]
        for where, keep in ((f"{newest} IS NULL", lambda r: r.get(newest) is None),
                            ("v > 1000", lambda r: r.get("v") is not None and r["v"] > 1000)):
            got = sorted(r.id for r in hl.read(self.path, where, spark=self.spark).select("id").collect())
            assert got == sorted(k for k, r in self.rows.items() if keep(r)), f"{label}: {where}"
        if newest.startswith("c"):
            some = next((r[newest] for r in self.rows.values() if r.get(newest) is not None), None)
            if some is not None:
                got = sorted(r.id for r in hl.read(self.path, f"{newest} = '{some}'", spark=self.spark)
                             .select("id").collect())
                assert got == sorted(k for k, r in self.rows.items() if r.get(newest) == some), label


@pytest.mark.parametrize("seed", SEEDS)
def test_evolving_tables_match_the_model(spark, tmp_path, seed: int) -> None:
    table = EvolvingTable(spark, str(tmp_path / "t"), seed)
    ops = ["add_column", "upsert", "add_column", "upsert", "delete", "widen", "upsert", "cluster", "add_column",
           "upsert", "upsert", "delete", "cluster", "upsert"]
    rest = ops[1:]  # the first step creates the table
    random.Random(seed).shuffle(rest)
    for i, op in enumerate([ops[0], *rest]):
        table.step(op)
        table.check(f"step {i} ({op})")
    assert len(table.types) >= 6 and table.types["v"] == pa.int64()
    table.check_time_travel()
