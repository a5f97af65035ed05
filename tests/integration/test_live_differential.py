"""Differential test of live tables: random sequences of insert / upsert / delete / insert_overwrite /
delete_partition / cluster / clean against a plain-Python model of the table. After every step hudi-rs reads
exactly the model's rows, and so does ``hudi_layout.read`` with random predicates (data skipping on); at the end,
time travel to every completed instant the cleans retained (hudi-rs ``as.of``, our file-system view and
``hudi_layout.read(as_of=...)``) gives the model's rows at that instant.

Half of the inserts and upserts pack their new records into small files (``hoodie.parquet.small.file.limit``),
so packed groups meet every other operation of the sequence.

A clean step runs Hudi's clean action with a random policy and a small retention (no grace period), so the cleans
really delete file slices between the other steps. Which instants stay readable: under ``KEEP_LATEST_COMMITS``
every instant at or after the clean's earliest commit to retain; under ``KEEP_LATEST_FILE_VERSIONS`` only the
latest snapshot at the time of the clean (and everything after it).

CI profile: one seeded sequence per merge mode, a dozen steps. ``HUDI_LAYOUT_LONG_TESTS=1`` runs more seeds and
longer sequences.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_layout as hl
from hudi_layout.errors import HudiLayoutError, UnsupportedTableError
from hudi_layout.scan.merge import merge_file_slice, merge_spec_for_table
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.hudi_logs import append_hudi_logs
from tests.helpers.integration import hudi_rs_table

pytestmark = pytest.mark.integration

LONG = os.environ.get("HUDI_LAYOUT_LONG_TESTS") == "1"
SEEDS = [11, 12, 13, 14] if LONG else [11]
STEPS = 30 if LONG else 12
PARTITIONS = ("a", "b", "c")
SCHEMA = "id long, p string, ts long, v int, name string, _hoodie_is_deleted boolean"
COLUMNS = ("id", "p", "ts", "v", "name")
OPERATIONS = ("insert", "upsert", "upsert", "upsert", "delete", "insert_overwrite", "delete_partition", "cluster",
              "clean")

Row = tuple  # (id, p, ts, v, name)


@dataclass
class Model:
    """The table as a multiset: (partition, key) -> stored copies (plain inserts may store a key twice)."""

    event_time: bool
    rows: dict[tuple[str, int], list[Row]] = field(default_factory=dict)

    def all(self) -> list[Row]:
        return sorted(r for copies in self.rows.values() for r in copies)

    def insert(self, batch: list[Row]) -> None:
        for r in batch:
            self.rows.setdefault((r[1], r[0]), []).append(r)

    def upsert(self, batch: list[tuple[Row, bool]]) -> None:
        winners: dict[tuple[str, int], tuple[Row, bool]] = {}
        for r, deleted in batch:  # combine: larger ts, then the later row
            k = (r[1], r[0])
            if k not in winners or not self.event_time or r[2] >= winners[k][0][2]:
                winners[k] = (r, deleted)
        for k, (r, deleted) in winners.items():
            copies = self.rows.get(k)
            if not copies:
                if not deleted:
                    self.rows[k] = [r]
                continue
            kept = []
            for c in copies:
                if self.event_time and c[2] > r[2]:
                    kept.append(c)
                elif not deleted:
                    kept.append(r)
            if kept:
                self.rows[k] = kept
            else:
                del self.rows[k]

    def delete(self, keys: list[tuple[int, str]]) -> None:
        for i, p in keys:
            self.rows.pop((p, i), None)

    def overwrite(self, batch: list[Row], marked: list[bool]) -> None:
        """Hudi replaces every partition the batch has rows in, delete-marked ones included (its create handle
        writes an empty file for a partition whose rows are all marked); marked rows are not written."""
        for p in {r[1] for r in batch}:
            self.drop_partition(p)
        self.insert([r for r, m in zip(batch, marked) if not m])

    def drop_partition(self, p: str) -> None:
        for k in [k for k in self.rows if k[0] == p]:
            del self.rows[k]


def as_rows(table: pa.Table) -> list[Row]:
    cols = [table.column(c).to_pylist() for c in COLUMNS]
    return sorted(zip(*cols))


def spark_rows(rows: list[Row], deleted: list[bool] | None = None) -> list[tuple]:
    deleted = deleted or [False] * len(rows)
    return [(*r, d) for r, d in zip(rows, deleted)]


# -- predicates: SQL text and a three-valued evaluator -------------------------------------------------------

def random_leaf(rng: random.Random) -> tuple[str, Any]:
    kind = rng.choice(["v_between", "p_eq", "id_lt", "id_in", "name_like", "ts_ge", "v_null"])
    if kind == "v_between":
        a = rng.randint(0, 90)
        b = a + rng.randint(0, 20)
        return f"v BETWEEN {a} AND {b}", lambda r: None if r[3] is None else a <= r[3] <= b
    if kind == "p_eq":
        p = rng.choice(PARTITIONS)
        return f"p = '{p}'", lambda r: r[1] == p
    if kind == "id_lt":
        k = rng.randint(0, 400)
        return f"id < {k}", lambda r: r[0] < k
    if kind == "id_in":
        ks = sorted(rng.sample(range(400), 4))
        return f"id IN ({', '.join(map(str, ks))})", lambda r: r[0] in ks
    if kind == "name_like":
        d = rng.randint(1, 9)
        return f"name LIKE 'n{d}%'", lambda r: r[4].startswith(f"n{d}")
    if kind == "ts_ge":
        t = rng.randint(0, 6)
        return f"ts >= {t}", lambda r: r[2] >= t
    return "v IS NULL", lambda r: r[3] is None


def random_predicate(rng: random.Random) -> tuple[str, Any]:
    sql1, f1 = random_leaf(rng)
    if rng.random() < 0.5:
        return sql1, f1
    sql2, f2 = random_leaf(rng)
    if rng.random() < 0.5:
        def both(r, f1=f1, f2=f2):
            a, b = f1(r), f2(r)
            return False if a is False or b is False else (None if a is None or b is None else True)
        return f"({sql1}) AND ({sql2})", both

    def either(r, f1=f1, f2=f2):
        a, b = f1(r), f2(r)
        return True if a is True or b is True else (None if a is None or b is None else False)
    return f"({sql1}) OR ({sql2})", either


# -- the sequence -------------------------------------------------------------------------------------------

class Sequence:
    def __init__(self, spark, path, seed: int, event_time: bool, merge_on_read: bool = False) -> None:
        self.spark, self.path, self.rng = spark, str(path), random.Random(seed)
        self.model = Model(event_time)
        self.merge_on_read = merge_on_read
        #: file groups whose slice had log files and that a write of ours rewrote, or appended a log file to
        #: (Merge-on-Read)
        self.slices_with_logs_rewritten = 0
        self.slices_with_logs_appended = 0
        self.compactions = 0
        #: plans left pending by ``schedule_compaction``, and writes refused because of one
        self.compactions_scheduled = 0
        self.refused_under_plan = 0
        self.appended_under_plan = 0
        #: (partition, id) the last ``hudi_log`` step updated
        self.logged: list[tuple[str, int]] = []
        self.next_id = 0
        self.history: list[tuple[str, list[Row]]] = []  # (instant, model rows after it)
        #: time travel is checked for instants at or after this one (what the cleans so far retained)
        self.readable_from = ""
        self.files_deleted = 0
        self.packing = random.Random(f"packing-{seed}")
        self.options = {"hoodie.table.name": "diff", "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.max.file.size": "5000"}
        if event_time:
            self.options["hoodie.datasource.write.precombine.field"] = "ts"
        if merge_on_read:
            self.options["hoodie.datasource.write.table.type"] = "MERGE_ON_READ"
            # upserts append log files until a slice holds this many, then rewrite it: a small limit makes the
            # sequence meet both (a generator of its own, so the seed's sequence of steps stays the same)
            limit = random.Random(f"log-limit-{seed}").choice([1, 2, 5])
            self.options["hudi_layout.mor.max.log.files.per.slice"] = str(limit)

    def new_rows(self, n: int) -> list[Row]:
        out = []
        for _ in range(n):
            i = self.next_id
            self.next_id += 1
            out.append(self.row(i, self.rng.choice(PARTITIONS)))
        return out

    def row(self, i: int, p: str) -> Row:
        v = None if self.rng.random() < 0.1 else self.rng.randint(0, 99)
        return (i, p, self.rng.randint(0, 6), v, f"n{self.rng.randint(1, 9)}-{i}-{self.rng.randint(0, 999)}")

    def existing(self, n: int) -> list[tuple[str, int]]:
        keys = sorted(self.model.rows)
        return self.rng.sample(keys, min(n, len(keys)))

    def write(self, rows: list[tuple], operation: str, mode: str = "append", **extra: str) -> str:
        df = self.spark.createDataFrame(rows, SCHEMA) if rows else self.spark.createDataFrame([], SCHEMA)
        opts = {**self.options, "hoodie.datasource.write.operation": operation, **extra}
        with_logs = {s.file_group for s in HudiTable(self.path).file_slices() if s.has_log_files} \
            if self.merge_on_read and os.path.isdir(os.path.join(self.path, ".hoodie")) else set()
        planned = (HudiTable(self.path).fs_view.pending_compaction_file_groups() or set()) if with_logs else set()
        result = hl.write(df, self.path, opts, mode=mode)
        if with_logs:
            after = {s.file_group: s for s in HudiTable(self.path).file_slices()}
            self.appended_under_plan += sum(1 for g in planned if g in after and
                                            any(result.instant_time in n for n in after[g].log_file_names))
            self.slices_with_logs_rewritten += sum(1 for g in with_logs if g in after and
                                                   after[g].commit_time == result.instant_time)
            self.slices_with_logs_appended += sum(
                1 for g in with_logs if g in after and
                any(result.instant_time in n for n in after[g].log_file_names))
        return result.instant_time

    def step(self, op: str) -> str:
        """Run one operation; a write refused because it would rewrite a file group of a pending compaction
        (Merge-on-Read) changes nothing: the model stays, and the next check proves the table did too."""
        try:
            return self._step(op)
        except UnsupportedTableError as e:
            if not self.merge_on_read or "pending compaction" not in str(e):
                raise
            self.refused_under_plan += 1
            return ""

    def _step(self, op: str) -> str:
        rng = self.rng
        if op == "insert" or not self.model.rows:
            batch = self.new_rows(rng.randint(5, 40))
            if self.model.rows and rng.random() < 0.3:  # a plain insert may store a key twice
                p, i = self.existing(1)[0]
                batch.append(self.row(i, p))
            # Hudi's inserts leave out rows marked _hoodie_is_deleted (its create handle counts them as deletes)
            marked = [rng.random() < 0.1 for _ in batch]
            packing = {"hoodie.parquet.small.file.limit": "100000", "hoodie.parquet.max.file.size": "20000"} \
                if self.packing.random() < 0.5 else {}
            t = self.write(spark_rows(batch, marked), "insert", **packing)
            self.model.insert([r for r, m in zip(batch, marked) if not m])
            return t
        if op == "upsert":
            batch = [(self.row(i, p), rng.random() < 0.15) for p, i in self.existing(rng.randint(1, 25))]
            batch += [(r, False) for r in self.new_rows(rng.randint(0, 10))]
            batch += [(self.row(r[0], r[1]), rng.random() < 0.3) for r, _d in rng.sample(batch, min(3, len(batch)))]
            if self.model.rows:  # a key in another partition than stored is another record (non-global index)
                p, i = self.existing(1)[0]
                batch.append((self.row(i, rng.choice([q for q in PARTITIONS if q != p])), False))
            # half of the upserts pack their new keys into small files, with room made by a larger max file size
            # (a generator of its own: the seed's sequence of steps stays the same)
            packing = {"hoodie.parquet.small.file.limit": "100000", "hoodie.parquet.max.file.size": "20000"} \
                if self.packing.random() < 0.5 else {}
            t = self.write(spark_rows([r for r, _ in batch], [d for _, d in batch]), "upsert", **packing)
            self.model.upsert(batch)
            return t
        if op == "delete":
            keys = [(i, p) for p, i in self.existing(rng.randint(1, 15))] + [(10_000 + rng.randint(0, 9), "a")]
            rows = [(i, p, 0, None, "", None) for i, p in keys]
            t = self.write(rows, "delete")
            self.model.delete(keys)
            return t
        if op == "insert_overwrite":
            p = rng.choice(PARTITIONS)
            batch = [self.row(r[0], p) for r in self.new_rows(rng.randint(1, 20))]
            every = rng.random() < 0.4  # sometimes every row is marked: the partition ends empty
            marked = [every or rng.random() < 0.1 for _ in batch]
            t = self.write(spark_rows(batch, marked), "insert_overwrite")
            self.model.overwrite(batch, marked)
            return t
        if op == "delete_partition":
            p = rng.choice(sorted({k[0] for k in self.model.rows}))
            t = self.write([], "delete_partition", **{"hoodie.datasource.write.partitions.to.delete": p})
            self.model.drop_partition(p)
            return t
        if op == "clean":
            return self.clean()
        if op == "hudi_log":
            return self.hudi_log()
        if op == "schedule_compaction":  # a plan left pending: upserts append to its groups until it runs
            self.compactions_scheduled += len(hl.compact(self.path, spark=self.spark, schedule_only=True))
            return ""
        if op == "compact":  # Merge-on-Read: every slice with log files merged into a new base file
            results = hl.compact(self.path, spark=self.spark)
            self.compactions += len(results)
            return results[-1].instant_time if results else ""
        assert op == "cluster"
        strategy = rng.choice(["linear", "z-order", "hilbert"])
        columns = ["v"] if strategy == "linear" else ["v", "ts"]
        m = hl.cluster(self.path, columns, spark=self.spark, strategy=strategy,
                       options={"hoodie.clustering.plan.strategy.target.file.max.bytes": "6000",
                                "hoodie.parquet.max.file.size": "12000"})
        return m.instant_time if m is not None else ""

    def hudi_log(self) -> str:
        """Merge-on-Read: a deltacommit as Hudi's writers make it, appending log files (Avro updates and a delete
        block) to the file groups holding some stored keys (keys stored once: a log update of a key stored twice
        in one base file is not modelled)."""
        rng = self.rng
        once = [k for k, copies in self.model.rows.items() if len(copies) == 1]
        chosen = rng.sample(sorted(once), min(len(once), rng.randint(1, 12)))
        if not chosen:
            return ""
        where = _file_groups_of(self.path, {str(i) for _p, i in chosen})
        updates: dict[str, list[dict[str, Any]]] = {}
        deletes: dict[str, list[str]] = {}
        batch: list[tuple[Row, bool]] = []
        dropped: list[tuple[int, str]] = []
        for p, i in chosen:
            fid = where[(p, str(i))]
            if rng.random() < 0.25:
                deletes.setdefault(fid, []).append(str(i))
                dropped.append((i, p))
                continue
            r = self.row(i, p)
            updates.setdefault(fid, []).append(dict(zip(COLUMNS, r)) | {"_hoodie_is_deleted": False})
            batch.append((r, False))
        t = append_hudi_logs(self.path, updates, deletes).instant
        self.model.upsert(batch)
        self.model.delete(dropped)
        self.logged = [(r[1], r[0]) for r, _d in batch]
        return t

    def upsert_logged(self) -> str:
        """Merge-on-Read: upsert the keys the last ``hudi_log`` step updated, so the sequence surely rewrites
        slices that have log files (the random steps may not reach them)."""
        if not self.logged:
            return ""
        batch = [(self.row(i, p), False) for p, i in self.logged if (p, i) in self.model.rows]
        t = self.write(spark_rows([r for r, _ in batch], [False] * len(batch)), "upsert")
        self.model.upsert(batch)
        return t

    def clean(self) -> str:
        """Run a clean that may delete file slices now; move ``readable_from`` to what it retained."""
        rng = self.rng
        policy = rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        results = hl.clean(self.path, options={"hoodie.cleaner.policy": policy,
                                               "hoodie.cleaner.commits.retained": str(rng.randint(1, 3)),
                                               "hoodie.cleaner.fileversions.retained": str(rng.randint(1, 2)),
                                               "hudi_layout.clean.grace.period.seconds": "0"})
        for r in results:
            self.files_deleted += r.files_deleted
            floor = r.earliest_commit_to_retain if policy == "KEEP_LATEST_COMMITS" else self.history[-1][0]
            self.readable_from = max(self.readable_from, floor)
        return ""  # a clean changes no rows: the model's history gains no instant

    def check(self, label: str) -> None:
        want = self.model.all()
        got = hudi_rs_table(self.path).read()
        got_rows = as_rows(pa.Table.from_batches(got)) if got else []
        assert got_rows == want, f"{label}: hudi-rs differs from the model"
        for _ in range(3):
            sql, pred = random_predicate(self.rng)
            ours = sorted(tuple(r[c] for c in COLUMNS) for r in hl.read(self.path, sql, spark=self.spark).collect())
            assert ours == sorted(r for r in want if pred(r) is True), f"{label}: hudi_layout.read({sql!r})"


def _file_groups_of(path: str, keys: set[str]) -> dict[tuple[str, str], str]:
    """``(partition, record key) -> file id`` of the latest slices holding ``keys`` (read merged)."""
    table = HudiTable(path)
    spec = merge_spec_for_table(table, columns=["_hoodie_record_key"])
    out = {}
    for s in table.file_slices():
        rows = merge_file_slice(s.base_file_path or None, s.log_file_paths(path), spec=spec)
        for k in rows.column("_hoodie_record_key").to_pylist():
            if k in keys:
                out[(s.partition_path, k)] = s.file_id
    return out


def read_as_of_with_our_view(path: str, instant: str) -> list[Row]:
    """Our file-system view's slices as of ``instant``: base files read with pyarrow (log files merged by the
    MOR reader)."""
    table = HudiTable(path)
    slices = table.file_slices(as_of=instant)
    if table.is_mor:
        spec = merge_spec_for_table(table, as_of=instant, columns=list(COLUMNS))
        tables = [merge_file_slice(s.base_file_path or None, s.log_file_paths(path), spec=spec).select(
            list(COLUMNS)) for s in slices]
    else:
        tables = [pq.read_table(s.base_file_path, columns=list(COLUMNS)) for s in slices]
    return as_rows(pa.concat_tables(tables)) if tables else []


def read_as_of_with_hudi_rs(path: str, instant: str) -> list[Row]:
    import hudi

    batches = hudi_rs_table(path).read(hudi.HudiReadOptions().with_as_of_timestamp(instant))
    return as_rows(pa.Table.from_batches(batches)) if batches else []


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("event_time", "merge_path", "table_type"), [
    (True, "broadcast", "cow"), (False, "broadcast", "cow"), (True, "shuffle", "cow"),
    (True, "broadcast", "mor"), (False, "shuffle", "mor")],
    ids=["event_time", "commit_time", "event_time-shuffle", "mor-event_time", "mor-commit_time-shuffle"])
def test_random_operation_sequences_match_the_model(spark, tmp_path, monkeypatch, seed, event_time,
                                                    merge_path, table_type) -> None:
    """``merge_path``: small batches take the broadcast merge; ``shuffle`` forces the tag-then-shuffle path of
    large batches (``hudi_layout.spark.upsert_job``). ``mor``: a Merge-on-Read table, whose sequences also
    append log files as Hudi's writers do (:func:`tests.helpers.hudi_logs.append_hudi_logs`), so upserts,
    deletes, clusterings, cleans and time travel meet slices with log files."""
    if merge_path == "shuffle":
        import hudi_layout.spark.upsert_job as upsert_job

        monkeypatch.setattr(upsert_job, "BROADCAST_MERGE_ROWS", 0)
    seq = Sequence(spark, tmp_path / "t", seed, event_time, merge_on_read=table_type == "mor")
    operations = OPERATIONS + (("hudi_log",) * 3 + ("compact",) * 2 + ("schedule_compaction",) * 2
                               if seq.merge_on_read else ())
    t = seq.step("insert")
    seq.history.append((t, seq.model.all()))
    seq.check("first insert")
    ran = []
    for n in range(STEPS):
        op = seq.rng.choice(operations)
        ran.append(op)
        t = seq.step(op)
        if t:
            seq.history.append((t, seq.model.all()))
        seq.check(f"step {n} ({op})")
    if seq.merge_on_read:  # the sequence surely meets log files, and writes over slices that have them
        for op in ("hudi_log", "upsert_logged"):
            t = seq.hudi_log() if op == "hudi_log" else seq.upsert_logged()
            if t:
                seq.history.append((t, seq.model.all()))
            seq.check(op)
        assert seq.slices_with_logs_rewritten + seq.slices_with_logs_appended > 0, ran
        for op in ("hudi_log", "compact"):  # the sequence surely compacts slices that hold log files
            t = seq.step(op)
            if t:
                seq.history.append((t, seq.model.all()))
            seq.check(op)
        assert seq.compactions > 0, ran
        print(f"MOR sequence {seed}: {seq.compactions_scheduled} plans left pending, {seq.appended_under_plan} "
              f"logs appended to planned groups, {seq.refused_under_plan} writes refused under a plan")
    seq.clean()  # a last clean, so that every sequence ends with history really deleted
    seq.check("final clean")
    assert seq.files_deleted > 0, "the cleans of this sequence deleted nothing: the sequence tests too little"
    retained = [(instant, rows) for instant, rows in seq.history if instant >= seq.readable_from]
    assert retained and len(retained) < len(seq.history)
    for instant, rows in retained:
        assert read_as_of_with_hudi_rs(seq.path, instant) == rows, f"hudi-rs as of {instant}"
        assert read_as_of_with_our_view(seq.path, instant) == rows, f"our file-system view as of {instant}"
        got = hl.read(seq.path, spark=spark, options={"as.of.instant": instant}).collect()
        assert sorted(tuple(r[c] for c in COLUMNS) for r in got) == rows, f"hudi_layout.read as of {instant}"
    for instant, rows in seq.history:  # cleaned instants: the right rows while their files exist, or a refusal
        if instant >= seq.readable_from:
            continue
        try:
            got = hl.read(seq.path, spark=spark, options={"as.of.instant": instant}).collect()
        except HudiLayoutError as e:
            assert "clean" in str(e).lower(), f"as of cleaned {instant}: unclear refusal {e}"
            continue
        assert sorted(tuple(r[c] for c in COLUMNS) for r in got) == rows, f"hudi_layout.read as of cleaned {instant}"
