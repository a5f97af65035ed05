"""Writers racing on one table: threads of one Spark session append, upsert and delete their own keys while
another thread clusters the table. Whatever each write's outcome (committed, or refused with
``CommitConflictError``), the table must end up holding exactly what the committed writes did, read back
identically by ``hudi_layout.read`` and hudi-rs.

Found by a probe of this shape in session 13: an upsert that started before another write on the same file
group, but read that file group only after the other write completed, committed a slice named after its
older instant; readers take the slice with the latest instant, so its update (and, the other way round, a
delete) vanished. Each writer's keys are its own, but the clustering thread mixes them into shared file
groups, so writers of different threads do meet on one file group; upserts also insert new keys, packed into
small files half of the time (``hoodie.parquet.small.file.limit``), so they meet on the groups others write too.
The race is timing-dependent: the deterministic reproduction is ``tests/unit/writer/test_live_writes.py::
test_a_write_that_read_a_newer_slice_than_its_own_instant_fails``; this test keeps the whole sequence honest.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_layout as hl
from hudi_layout.errors import CommitConflictError
from tests.helpers.integration import hudi_rs_read

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "race", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.max.file.size": "40000"}
WRITERS, STEPS, CLUSTERINGS = 3, 8, 3


def _rows(rows: list[tuple[int, str, int]]) -> pa.Table:
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "p": [r[1] for r in rows],
                     "v": pa.array([r[2] for r in rows], pa.int64())})


def _writer(spark: Any, path: str, t: int, seed: int, model: dict[int, tuple[str, int]],
            outcomes: list[str]) -> None:
    rng = random.Random(seed)
    pack_rng = random.Random(seed ^ 0xBA6)  # its own draws: the operations of each seed stay as they were
    next_id = t * 100_000
    for _ in range(STEPS):
        op = rng.choice(["append", "upsert", "upsert", "delete"]) if model else "append"
        try:
            if op == "append":
                batch = [(next_id + i, rng.choice("abc"), rng.randint(0, 99)) for i in range(rng.randint(1, 40))]
                next_id += len(batch)
                hl.write(spark.createDataFrame(_rows(batch)), path, OPTS)
                model.update({k: (p, v) for k, p, v in batch})
            elif op == "upsert":
                keys = rng.sample(sorted(model), min(len(model), rng.randint(1, 15)))
                batch = [(k, model[k][0], rng.randint(100, 999)) for k in keys]
                fresh = [(next_id + i, rng.choice("abc"), rng.randint(0, 99)) for i in range(pack_rng.randint(0, 20))]
                next_id += len(fresh)
                limit = pack_rng.choice(["0", "60000"])  # new keys packed into the small files others write
                hl.write(spark.createDataFrame(_rows(batch + fresh)), path,
                         {**OPTS, "hoodie.datasource.write.operation": "upsert",
                          "hoodie.parquet.small.file.limit": limit})
                batch += fresh
                model.update({k: (p, v) for k, p, v in batch})
            else:
                keys = rng.sample(sorted(model), min(len(model), rng.randint(1, 8)))
                keys_df = spark.createDataFrame(_rows([(k, model[k][0], 0) for k in keys])).select("id", "p")
                hl.write(keys_df, path, {**OPTS, "hoodie.datasource.write.operation": "delete"})
                for k in keys:
                    model.pop(k)
            outcomes.append(f"{op} committed")
        except CommitConflictError:
            outcomes.append(f"{op} refused")


def _clusterer(spark: Any, path: str, seed: int, outcomes: list[str]) -> None:
    rng = random.Random(seed)
    for _ in range(CLUSTERINGS):
        try:
            hl.cluster(path, ["v", "id"], spark=spark, strategy=rng.choice(["z-order", "hilbert", "linear"]),
                       options={"hoodie.clustering.plan.strategy.target.file.max.bytes": "60000"})
            outcomes.append("cluster committed")
        except CommitConflictError:
            outcomes.append("cluster refused")


@pytest.mark.parametrize("seed", [1, 2])
def test_racing_writers_leave_exactly_what_their_commits_did(spark, tmp_path: Path, seed: int) -> None:
    path = str(tmp_path / "t")
    hl.write(spark.createDataFrame(_rows([(10**9, "a", 0)])), path, OPTS)
    models: list[dict[int, tuple[str, int]]] = [{} for _ in range(WRITERS)]
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def guarded(fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - anything but a conflict fails the test below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(_writer, spark, path, t, seed * 10 + t, models[t], outcomes))
               for t in range(WRITERS)]
    threads.append(threading.Thread(target=guarded, args=(_clusterer, spark, path, seed, outcomes)))
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not errors, errors
    want = {10**9: ("a", 0)}
    for m in models:
        want.update(m)
    ours = hl.read(path, spark=spark).select("id", "p", "v").toArrow()
    theirs = hudi_rs_read(path).select(["id", "p", "v"])
    for label, got in (("hl.read", ours), ("hudi-rs", theirs)):
        rows = {r["id"]: (r["p"], r["v"]) for r in got.to_pylist()}
        assert got.num_rows == len(rows), f"{label}: duplicate keys"
        assert rows == want, (label, sorted(set(want) ^ set(rows))[:10],
                              [(k, want[k], rows[k]) for k in want if k in rows and rows[k] != want[k]][:5], outcomes)
