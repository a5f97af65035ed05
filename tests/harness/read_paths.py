"""One table, changed step by step, and the same question asked through every read entry point.

:class:`ReadPathsHarness` owns a table under a temporary folder and its :class:`~.model.TableModel`. Steps
change the table through the public API (append, upsert, delete, overwrite, cluster with each strategy /
method, clean with a small retention, a writer killed after writing its files) and ask questions: a random
predicate through

* ``hudi_layout.read`` with SQL text, a ``Column``, hudi-rs style tuples and (every other query) the predicate
  tree ``from_sql`` gives for the text;
* the data source: DataFrames loaded earlier and asked again and again (with and without ``where``; a loaded
  DataFrame is a snapshot of the table when it was loaded), and a temp view over one of them;
* SQL tables created with ``OPTIONS (path ...)`` and with ``LOCATION`` (each query sees the latest commit);
* the ``hudi-layout query`` command, in-process;
* ``explain``: every file holding a matching row must be a candidate;
* time travel to each retained instant and incremental reads between instants (read, data source, CLI and
  hudi-rs);

and compares each answer with the model through :class:`Checker`, which counts checks and either raises at
the first mismatch (tests) or records it (the soak run).

After a clean, a version of the table whose files it deleted may be refused (never read short): time travel
to an instant before what the cleans retained, an incremental read ending there, and a DataFrame loaded
before the clean accept either the model's rows or the one-line "no longer readable" refusal; everything the
cleans retained must still be exact, and hudi-rs is not asked about cleaned versions.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from hudi_layout.skipping.spark_column import REBASE_MODE_SETTINGS
from hudi_layout.table.hudi_table import HudiTable

from .generate import (
    ADDED_KINDS,
    KIND,
    PARTITIONS,
    WIDENINGS,
    PredicateGenerator,
    all_columns,
    random_rows,
    rows_to_arrow,
)
from .model import Instant, TableModel, completed_instants, partition_folder
from .spark_semantics import Pred, columns_of, evaluate, micros, set_session_zone, to_column, to_sql, to_tuples

CLUSTER_COLUMNS = ["i", "l", "d", "f", "s", "dt", "ts", "dec", "b"]
#: ``qdtree`` clusters with a workload drawn from the harness's own predicate generator (its queries then ask
#: about the very columns and constants the tree cut on, and about others)
STRATEGIES = ("linear", "z-order", "hilbert", "qdtree")
METHODS = ("direct", "sample")

OPERATION = "hoodie.datasource.write.operation"
#: session time zones the harness switches to (``spark.sql.session.timeZone``): west and east of UTC, a half-hour
#: offset, a zone with DST, the furthest ahead (+14, and a day skipped in 1994), a fixed negative offset
SESSION_ZONES = ("UTC", "America/Los_Angeles", "Asia/Kolkata", "Europe/Berlin", "Pacific/Kiritimati", "-03:30")
#: what a refusal of a version a clean deleted says (scan/plan and the data source)
CLEANED_REFUSAL = "no longer readable"
QUERY_TYPE = "hoodie.datasource.query.type"
AS_OF = "as.of.instant"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"


class HarnessMismatch(AssertionError):
    pass


@dataclass
class Mismatch:
    entry_point: str
    question: str
    detail: str


@dataclass
class Checker:
    """Counts query checks per entry point; raises on the first mismatch unless ``record_only``."""

    record_only: bool = False
    checks: int = 0
    per_entry_point: Counter[str] = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)

    def _fail(self, entry: str, question: str, detail: str) -> None:
        m = Mismatch(entry, question, detail)
        self.mismatches.append(m)
        if not self.record_only:
            raise HarnessMismatch(f"{entry}: {question}\n{detail}")

    def same_ids(self, entry: str, question: str, got: Iterable[int], want: Iterable[int]) -> None:
        self.checks += 1
        self.per_entry_point[entry] += 1
        g, w = sorted(got), sorted(want)
        if g != w:
            missing, extra = sorted(set(w) - set(g)), sorted(set(g) - set(w))
            dup = len(g) - len(set(g))
            self._fail(entry, question, f"got {len(g)} rows, want {len(w)}; missing ids {missing[:10]}"
                                        f"{'...' if len(missing) > 10 else ''}; extra ids {extra[:10]}"
                                        f"; duplicates {dup}")

    def same(self, entry: str, question: str, got: Any, want: Any) -> None:
        self.checks += 1
        self.per_entry_point[entry] += 1
        if got != want:
            self._fail(entry, question, f"got {_short(got)}\nwant {_short(want)}")

    def error(self, entry: str, question: str, exc: BaseException) -> None:
        self.checks += 1
        self.per_entry_point[entry] += 1
        self._fail(entry, question, f"raised {type(exc).__name__}: {str(exc)[:2000]}")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 1500 else text[:1500] + "..."


# ---------------------------------------------------------------------------------------------- values

def normalised(row: Mapping[str, Any], columns: Sequence[str]) -> tuple[Any, ...]:
    """A comparable form of a row: floats by ``repr`` (NaN, -0.0 kept apart), timestamps in micros."""
    out: list[Any] = []
    for c in columns:
        v = row.get(c)  # a column added after the row was written: NULL
        if isinstance(v, float):
            v = ("f", repr(v))
        elif hasattr(v, "tzinfo") and hasattr(v, "hour"):
            v = ("ts", micros(v))
        elif isinstance(v, Decimal):
            v = ("dec", str(v.quantize(Decimal("0.01"))))
        out.append(v)
    return tuple(out)


def ids_of(rows: Iterable[Mapping[str, Any]]) -> list[int]:
    return [r["id"] for r in rows]


def _matching(pred: Pred | None, rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if pred is None or evaluate(pred, r) is True]


def _arrow_ids(table: Any) -> list[int]:
    return table.column("id").to_pylist() if table.num_rows else []


# ---------------------------------------------------------------------------------------------- the CLI

def _cli_main() -> Callable[[list[str]], int]:
    try:
        from hudi_layout.tools.cli import main  # the package layout after the restructure
    except ImportError:
        from hudi_layout.cli import main
    return main


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """``hudi-layout <args>`` in this process (same SparkSession); (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = _cli_main()(args)
        except SystemExit as e:  # argparse exits on a usage error
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def parse_show(text: str) -> list[list[str]]:
    """The cells of the data rows of ``DataFrame.show()`` output."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in rows[1:]]


# ---------------------------------------------------------------------------------------------- harness

@dataclass
class LoadedFrame:
    """A data-source DataFrame and the rows of the table when it was loaded."""

    frame: Any
    rows: tuple[Mapping[str, Any], ...]
    label: str
    #: a clean deleted files since it was loaded: its snapshot may be refused
    cleaned_since: bool = False
    #: the table's columns and their kinds when it was loaded (a column added or widened later is not so in
    #: its schema)
    kinds: Mapping[str, str] = field(default_factory=lambda: dict(KIND))


class ReadPathsHarness:
    """See the module docstring. ``cli_every`` asks the CLI on every n-th query (in-process, cheap)."""

    def __init__(self, spark: Any, root: str | os.PathLike[str], seed: int, checker: Checker, *,
                 partitioned: bool | None = None, cli_every: int = 1, hudi_rs: bool = True) -> None:
        self.spark = spark
        self.rng = random.Random(seed)
        self.seed = seed
        self.checker = checker
        self.uid = uuid.uuid4().hex[:8]
        self.path = str(Path(root) / f"t_{self.uid}")
        self.partitioned = self.rng.random() < 0.7 if partitioned is None else partitioned
        self.opts = {
            "hoodie.table.name": f"h_{self.uid}",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.parquet.max.file.size": str(self.rng.choice([12_000, 40_000, 1_000_000])),
        }
        if self.partitioned:
            self.opts["hoodie.datasource.write.partitionpath.field"] = "part"
            self.opts["hoodie.datasource.write.hive_style_partitioning"] = str(self.rng.random() < 0.5).lower()
        #: a Merge-on-Read table (its writes are deltacommits of base files), drawn from its own generator so
        #: the sequences of earlier seeds stay as they were
        self.merge_on_read = random.Random(seed ^ 0x5EED).random() < 0.35
        if self.merge_on_read:
            self.opts["hoodie.datasource.write.table.type"] = "MERGE_ON_READ"
        #: upserts pack new keys into small files half of the time (``hoodie.parquet.small.file.limit``), drawn
        #: from their own generator too
        self.packing = random.Random(seed ^ 0xBA6)
        self.model = TableModel()
        self.next_id = 0
        self.frames: list[LoadedFrame] = []
        self.view = f"hv_{self.uid}"
        self.sql_tables: list[str] = []
        self.queries = 0
        self.cli_queries = 0
        self.cli_every = max(1, cli_every)
        self.use_hudi_rs = hudi_rs
        self.log: list[str] = []
        #: versions before this instant may be refused (a clean deleted files they need)
        self.readable_from = ""
        #: commit times savepointed: a time travel to exactly one of them is never refused, cleans or not
        self.savepointed: set[str] = set()
        self.refusals = 0
        #: (name, kind) of the columns schema evolution added, in order; fixed columns it widened (their new
        #: kinds). The SQL tables follow both: ``hudi_layout.write`` updates their catalog schema.
        self.added: list[tuple[str, str]] = []
        self.widened: dict[str, str] = {}
        #: (requested time of the write that evolved the schema, the column kinds from then on): a time travel
        #: reads the schema as of its instant, as Hudi's reads do (session 18)
        self.evolutions: list[tuple[str, dict[str, str]]] = []
        #: the completed instants before the latest write (to find the one it completed)
        self._before: set[str] = set()
        self.set_zone("UTC", "CORRECTED", zone_reset=True)

    # ------------------------------------------------------------------ changing the table

    def _new_instant(self, before: set[str]) -> Instant | None:
        new = [i for i in completed_instants(self.path) if i.requested not in before]
        if len(new) > 1:
            raise HarnessMismatch(f"one step completed {len(new)} instants: {new}")
        return new[0] if new else None

    def _known(self) -> set[str]:
        return {i.requested for i in completed_instants(self.path)} if os.path.isdir(self.path) else set()

    def write(self, mode: str = "append", n: int | None = None, *, evolves: bool = False) -> None:
        """An append or a whole-table overwrite, through ``hudi_layout.write`` or, for one that does not
        evolve the schema, half the time through the data source writer (``df.write.format(...)``, whose
        commit runs in a Python worker: the catalog of SQL tables is not reached from there, so evolutions
        stay on ``hudi_layout.write``)."""
        n = self.rng.choice([0, 1, 7, 40, 120, 250]) if n is None else n
        rows = random_rows(self.rng, self.next_id, n, self.added, self.widened)
        self.next_id += n
        df = self._data_frame(rows)
        via = self._write_df(df, mode, self.opts, datasource=not evolves and self.rng.random() < 0.5)
        inst = self._new_instant(self._before)
        if inst is None:
            raise HarnessMismatch(f"{mode} of {n} rows completed no instant")
        (self.model.overwrite if mode == "overwrite" else self.model.commit)(inst, rows)
        self.log.append(f"{mode} {n} rows{via} -> {inst.requested}")
        self._after_change()

    def _write_df(self, df: Any, mode: str, options: Mapping[str, str], *, datasource: bool) -> str:
        """Write ``df`` with ``hudi_layout.write`` or the data source writer; remembers the completed instants
        before it in ``_before``; returns a note for the step log."""
        import hudi_layout as hl

        self._before = self._known()
        if datasource:
            df.write.format("hudi_layout").mode(mode).options(**options).save(self.path)
            return " (data source)"
        hl.write(df, self.path, dict(options), mode=mode)
        return ""

    def write_lagging(self) -> None:
        """A writer that lags the table's schema changes: rows in the table's *first* schema (none of the added
        columns, the fixed columns' original kinds), appended or upserted with
        ``hoodie.datasource.write.reconcile.schema=true``: the table holds them with the added columns null and
        the widened ones in their new kinds (a stored row an upsert replaces loses its added columns' values).
        Without schema changes this is an ordinary append or upsert."""
        import hudi_layout as hl

        upsert = bool(self.model.current) and self.rng.random() < 0.5
        if upsert:
            chosen = self.rng.sample(list(self.model.current), self.rng.randint(1, min(10, len(self.model.current))))
            rows = [{**fresh, "id": old["id"], "part": old["part"]}
                    for fresh, old in zip(random_rows(self.rng, 0, len(chosen)), chosen)]
        else:
            n = self.rng.choice([1, 7, 40])
            rows = random_rows(self.rng, self.next_id, n)
            self.next_id += n
        df = self.spark.createDataFrame(rows_to_arrow(rows)).repartition(self.rng.randint(1, 2))
        before = self._known()
        options = {**self.opts, "hoodie.datasource.write.reconcile.schema": "true",
                   **({OPERATION: "upsert"} if upsert else {})}
        hl.write(df, self.path, options)
        inst = self._new_instant(before)
        if inst is None:
            raise HarnessMismatch("a lagging write completed no instant")
        stored = [self._in_table_schema(r) for r in rows]
        (self.model.upsert if upsert else self.model.commit)(inst, stored)
        self.log.append(f"lagging {'upsert' if upsert else 'append'} of {len(rows)} rows (reconcile.schema) -> "
                        f"{inst.requested}")
        self._after_change()

    def _in_table_schema(self, row: dict[str, Any]) -> dict[str, Any]:
        """A row of the table's first schema as the table now holds it (added columns null, widened values in
        their new kind)."""
        out = dict(row)
        for col, kind in self.widened.items():
            v = out.get(col)
            if v is not None:
                out[col] = float(v) if kind == "double" else v.encode() if kind == "binary" else v
        for name, _kind in self.added:
            out[name] = None
        return out

    def overwrite_partitions(self) -> None:
        """``insert_overwrite``: new rows replace every row of the partitions they fall into (an unpartitioned
        table is one partition)."""
        n = self.rng.choice([1, 7, 40])
        rows = random_rows(self.rng, self.next_id, n, self.added, self.widened)
        self.next_id += n
        partitions: set[Any] | None = None
        if self.partitioned:
            chosen = self.rng.sample(PARTITIONS, self.rng.randint(1, 2))
            rows = [{**r, "part": self.rng.choice(chosen)} for r in rows]
            partitions = {r["part"] for r in rows}
        options = {**self.opts, OPERATION: "insert_overwrite"}
        datasource = self.rng.random() < 0.5  # the data source takes insert_overwrite with mode("overwrite")
        via = self._write_df(self._data_frame(rows), "overwrite" if datasource else "append", options,
                             datasource=datasource)
        inst = self._new_instant(self._before)
        if inst is None:
            raise HarnessMismatch(f"insert_overwrite of {n} rows completed no instant")
        self.model.overwrite_partitions(inst, rows, partitions)
        self.log.append(f"insert_overwrite {n} rows into {sorted(partitions or ['<table>'])}{via} -> {inst.requested}")
        self._after_change()

    def delete_partition(self) -> None:
        """``delete_partition`` of one partition holding rows, named by its path
        (``hoodie.datasource.write.partitions.to.delete``)."""
        present = sorted({partition_folder(r.get("part")) for r in self.model.current})
        if not self.partitioned or not present:
            return
        value = self.rng.choice(present)  # a folder: the default one holds NULL and '' values
        hive = self.opts.get("hoodie.datasource.write.hive_style_partitioning") == "true"
        options = {**self.opts, OPERATION: "delete_partition",
                   "hoodie.datasource.write.partitions.to.delete": f"part={value}" if hive else value}
        via = self._write_df(self._data_frame([]), "append", options, datasource=self.rng.random() < 0.5)
        inst = self._new_instant(self._before)
        if inst is None:
            raise HarnessMismatch(f"delete_partition {value} completed no instant")
        self.model.drop_partitions(inst, {value})
        self.log.append(f"delete_partition {value}{via} -> {inst.requested}")
        self._after_change()

    def _commit(self, df: Any, operation: str, extra: Mapping[str, str] | None = None) -> Instant:
        import hudi_layout as hl

        before = self._known()
        hl.write(df, self.path, {**self.opts, **(extra or {}), OPERATION: operation})
        inst = self._new_instant(before)
        if inst is None:
            raise HarnessMismatch(f"{operation} completed no instant")
        return inst

    def upsert(self) -> None:
        """Upsert new values for a few stored ids (same partition value: another one would be another record)
        and maybe a few new ids."""
        current = [r for r in self.model.current]
        if not current:
            return
        chosen = self.rng.sample(current, self.rng.randint(1, min(30, len(current))))
        rows = [{**fresh, "id": old["id"], "part": old["part"]}
                for fresh, old in zip(random_rows(self.rng, 0, len(chosen), self.added, self.widened), chosen)]
        n_new = self.rng.choice([0, 0, 3, 20])
        rows += random_rows(self.rng, self.next_id, n_new, self.added, self.widened)
        self.next_id += n_new
        df = self._data_frame(rows)
        limit = self.packing.choice(["0", "0", "30000", "2000000"])
        inst = self._commit(df, "upsert", {"hoodie.parquet.small.file.limit": limit})
        self.model.upsert(inst, rows)
        packed = "" if limit == "0" else f", packing below {limit} bytes"
        self.log.append(f"upsert {len(chosen)} stored + {n_new} new ids{packed} -> {inst.requested}")
        self._after_change()

    def delete(self) -> None:
        current = [r for r in self.model.current]
        if not current:
            return
        chosen = self.rng.sample(current, self.rng.randint(1, max(1, min(40, len(current) // 3))))
        keys = rows_to_arrow([{k: v for k, v in r.items() if k in KIND} for r in chosen], widened=self.widened)
        inst = self._commit(self.spark.createDataFrame(keys), "delete")
        self.model.delete(inst, [r["id"] for r in chosen])
        self.log.append(f"delete {len(chosen)} ids -> {inst.requested}")
        self._after_change()

    def clean(self) -> None:
        """Hudi's clean with a random policy and a small retention, no grace period: it may delete the files
        of older versions now."""
        import hudi_layout as hl

        policy = self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        results = hl.clean(self.path, options={"hoodie.cleaner.policy": policy,
                                               "hoodie.cleaner.commits.retained": str(self.rng.randint(1, 3)),
                                               "hoodie.cleaner.fileversions.retained": str(self.rng.randint(1, 2)),
                                               "hudi_layout.clean.grace.period.seconds": "0"})
        deleted = sum(r.files_deleted for r in results)
        latest = self.model.snapshots[-1][0].requested if self.model.snapshots else ""
        for r in results:
            floor = (r.earliest_commit_to_retain or "") if policy == "KEEP_LATEST_COMMITS" else latest
            self.readable_from = max(self.readable_from, floor)
        if deleted:
            for lf in self.frames:
                lf.cleaned_since = True
        self.log.append(f"clean {policy}: {deleted} files deleted, versions before {self.readable_from or '-'} "
                        "may be refused")
        self._after_change(reload_frames=False)

    def savepoint(self) -> None:
        """Savepoint a completed commit the cleans kept readable (or delete a savepoint): from then on a
        time travel to that commit must read it, whatever a clean does (docs/savepoints.md)."""
        import hudi_layout as hl
        from hudi_layout.errors import InvalidArgumentError, UnsupportedTableError

        if self.savepointed and self.rng.random() < 0.5:
            t = self.rng.choice(sorted(self.savepointed))
            # a restore across a schema change would take the columns back too; the harness keeps one schema line
            if self.rng.random() < 0.5 or any(e > t for e, _kinds in self.evolutions):
                hl.delete_savepoint(self.path, t)
                self.savepointed.discard(t)
                self.log.append(f"delete savepoint {t}")
                return
            # Hudi's restore: every instant requested after t is rolled back; DataFrames loaded before it must
            # refuse (the version they were loaded at is gone), never answer with the restored rows
            result = hl.restore_to_savepoint(self.path, t, spark=self.spark)
            self.model.restore(t)
            self.savepointed = {s for s in self.savepointed if s <= t}
            for lf in self.frames:
                lf.cleaned_since = True
            self.log.append(f"restore to savepoint {t}: {len(result.rolled_back)} instant(s) rolled back")
            self._after_change(reload_frames=False)
            return
        table = HudiTable(self.path)
        done = [i.requested_time for i in table.timeline.commits_and_replaces().completed()
                if i.action in ("commit", "deltacommit", "replacecommit") and i.requested_time >= self.readable_from
                and i.requested_time not in self.savepointed]
        if not done:
            return
        t = self.rng.choice(done)
        try:
            hl.savepoint(self.path, t)
        except (InvalidArgumentError, UnsupportedTableError) as e:  # Hudi's window, a pending clean
            self.log.append(f"savepoint {t} refused: {e}")
            return
        self.savepointed.add(t)
        self.log.append(f"savepoint {t}")

    def rebuild_index(self) -> None:
        """``hudi-layout index --rebuild``, half the time with ``--read-floats``: the metadata table is built
        again from footers (float columns from their data, or not at all); no row changes."""
        from hudi_layout.services.index import build_column_stats_index

        if not self.model.current:
            return
        read_floats = self.rng.random() < 0.5
        done = build_column_stats_index(self.path, rebuild=True, read_floats=read_floats, spark=self.spark)
        self.log.append(f"index --rebuild{' --read-floats' if read_floats else ''}: {done['files']} files, "
                        f"unindexed {sorted(done['unindexed_columns'])}")
        self._after_change(reload_frames=False)

    def cluster(self, strategy: str, method: str, columns: Sequence[str] | None = None) -> None:
        import hudi_layout as hl

        if not self.model.current:
            return
        columns = list(columns or self.rng.sample(CLUSTER_COLUMNS, self.rng.randint(1, 3)))
        method = "direct" if strategy == "linear" else method  # a linear sort has no curve to sample (refused)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.path)
                   if "/." not in d for f in fs if f.endswith(".parquet"))
        opts = {"hoodie.clustering.plan.strategy.target.file.max.bytes": str(max(4096, size // 5)),
                "hoodie.layout.optimize.build.curve.sample.size": "50"}
        workload = None
        if strategy == "qdtree":  # the tree's cuts come from predicates like the ones the harness asks
            gen = self._generator()
            on = [c for c in all_columns(self.added, self.widened) if c.name in columns]
            workload = [to_sql(gen.predicate(on, depth=self.rng.randint(1, 2))) for _ in range(self.rng.randint(2, 6))]
            # one-file cells (the default): shapes in the cut search, cells keyed by one column; else a curve per leaf
            opts["hudi_layout.layout.qdtree.leaf.cells"] = "true" if self.rng.random() < 0.5 else "false"
        before = self._known()
        metrics = hl.cluster(spark=self.spark, path=self.path, columns=columns, strategy=strategy, method=method,
                             options=opts, workload=workload)
        inst = self._new_instant(before)
        if metrics is None:
            if inst is not None:
                raise HarnessMismatch(f"cluster returned None but completed {inst}")
            return
        if inst is None:
            raise HarnessMismatch("cluster returned metrics but completed no instant")
        self.model.cluster(inst)
        cells = " (cells)" if opts.get("hudi_layout.layout.qdtree.leaf.cells") == "true" else ""
        self.log.append(f"cluster {strategy}/{method}{cells} {columns}{f' workload {workload}' if workload else ''} -> "
                        f"{inst.requested}")
        self._after_change()

    def compact(self) -> None:
        """Merge-on-Read: Hudi's compaction of every slice with log files (same rows and commit times, a new
        instant); nothing on a Copy-on-Write table."""
        import hudi_layout as hl

        if not self.merge_on_read or not self.model.current:
            return
        if self.rng.random() < 0.5:
            self._compact_around_writes()
            return
        before = self._known()
        results = hl.compact(self.path, spark=self.spark)
        inst = self._new_instant(before)
        if (inst is None) != (not results):
            raise HarnessMismatch(f"compact returned {len(results)} results and completed {inst}")
        if inst is None:
            return
        self.model.cluster(inst)
        self.log.append(f"compact {results[-1].slices} slices, {results[-1].log_files} log files -> {inst.requested}")
        self._after_change()

    def _compact_around_writes(self) -> None:
        """Asynchronous compaction: a plan is scheduled and left pending, upserts and deletes go on (they
        append log files to its groups: checked after each, as every write is), then the plan runs. A write that
        would have to rewrite a planned group is refused and changes nothing (the next checks prove it)."""
        import hudi_layout as hl
        from hudi_layout.errors import UnsupportedTableError

        scheduled = hl.compact(self.path, spark=self.spark, schedule_only=True)
        if not scheduled:
            return
        planned = scheduled[-1].instant_time
        self.checker.per_entry_point["(steps) compaction left pending around writes"] += 1
        self.log.append(f"compaction {planned} scheduled ({scheduled[-1].slices} slices), left pending")
        for _ in range(self.rng.randint(1, 3)):
            try:
                (self.upsert if self.rng.random() < 0.7 else self.delete)()
            except UnsupportedTableError as e:
                if "pending compaction" not in str(e):
                    raise
                self.checker.per_entry_point["write (refused: rewrite under a pending compaction)"] += 1
                self.log.append(f"write refused: {str(e).splitlines()[0][:120]}")
        before = self._known()
        hl.compact(self.path, spark=self.spark, instant=planned)
        inst = self._new_instant(before)
        if inst is None or inst.requested != planned:
            raise HarnessMismatch(f"compaction {planned} completed {inst}")
        # not a snapshot of the model: it was requested before the writes it completed after, and changes no
        # row (time travel to it reads the rows before those writes, which the model gives by requested time)
        self.log.append(f"compaction {planned} executed after the writes")
        self._after_change()

    def crash_writer(self) -> None:
        """A writer that wrote its files (and its metadata-table entries) but died before completing: the
        completed instant file is removed, and a half-written base file of that instant is left beside its
        files. Readers must not see any of it; the next writer rolls it back."""
        import hudi_layout as hl

        n = self.rng.choice([5, 60])
        rows = random_rows(self.rng, self.next_id, n, self.added, self.widened)
        self.next_id += n
        before = self._known()
        hl.write(self.spark.createDataFrame(self._arrow(rows)), self.path, self.opts)
        inst = self._new_instant(before)
        assert inst is not None and inst.completed is not None
        tdir = Path(self.path) / ".hoodie" / "timeline"
        (tdir / f"{inst.requested}_{inst.completed}.{inst.action}").unlink()
        written = [p for p in Path(self.path).rglob(f"*_{inst.requested}.parquet") if ".hoodie" not in p.parts]
        if written:
            victim = written[0]
            half = victim.parent / f"{uuid.uuid4()}-0_9-9-9_{inst.requested}.parquet"
            half.write_bytes(victim.read_bytes()[: max(8, victim.stat().st_size // 3)])
        self.log.append(f"crashed writer {inst.requested} ({n} rows, not visible)")
        self._after_change(reload_frames=False)

    def evolve(self) -> None:
        """Schema evolution brought by an append or an upsert: a new nullable column of a random kind (rows
        written before read it as NULL; at most three per table) or a widening of a fixed column (int -> long or
        double, float -> double, string -> binary: stored values read as they were, in the new type)."""
        if not self.model.current:
            return
        left = [c for c in WIDENINGS if c not in self.widened]
        if left and self._holds_log_files():  # a widening over log files is refused (test_mor_writes.py)
            left = []
        if left and (len(self.added) >= 3 or self.rng.random() < 0.35):
            col = self.rng.choice(left)
            kind = self.rng.choice(WIDENINGS[col])
            self.widened[col] = kind
            if kind == "double":  # every version now reads the stored values as doubles
                self.model.snapshots = [(inst, tuple({**r, col: float(r[col])} if isinstance(r.get(col), int) else r
                                                     for r in rows)) for inst, rows in self.model.snapshots]
            if kind == "binary":  # every version now reads the stored strings as their UTF-8 bytes
                self.model.snapshots = [(inst, tuple({**r, col: r[col].encode()} if isinstance(r.get(col), str) else r
                                                     for r in rows)) for inst, rows in self.model.snapshots]
            self.log.append(f"evolve: widen {col} {KIND[col]} -> {kind}")
        elif len(self.added) < 3:
            name, kind = f"e{len(self.added) + 1}", self.rng.choice(ADDED_KINDS)
            self.added.append((name, kind))
            self.log.append(f"evolve: add column {name} {kind}")
        else:
            return
        if self.rng.random() < 0.5:
            self.upsert()
        else:
            self.write("append", n=self.rng.choice([1, 7, 40]), evolves=True)
        latest = max(completed_instants(self.path), key=lambda i: i.requested, default=None)
        if latest is not None:
            self.evolutions.append((latest.requested, self._kinds()))

    def _holds_log_files(self) -> bool:
        """A Merge-on-Read table whose upserts appended log files (hudi_layout refuses widenings over them)."""
        if not self.merge_on_read:
            return False
        from hudi_layout.format.file_naming import try_parse_data_log_file_name

        return any(try_parse_data_log_file_name(f) is not None for _d, _s, files in os.walk(self.path)
                   if ".hoodie" not in _d for f in files)

    def _kinds_as_of(self, t: str) -> dict[str, str]:
        """The column kinds of the table's schema as of instant ``t`` (the last evolution requested by then)."""
        kinds = {c.name: c.kind for c in all_columns([], {})}
        for requested, later in self.evolutions:
            if requested <= t:
                kinds = later
        return kinds

    def _arrow(self, rows: list[dict[str, Any]]) -> Any:
        """The rows in the table's current schema (added columns, widened kinds), as Arrow."""
        return rows_to_arrow(rows, self.added, self.widened)

    def _data_frame(self, rows: list[dict[str, Any]]) -> Any:
        """The rows in the table's current schema, as a Spark DataFrame of 1-3 partitions."""
        return self.spark.createDataFrame(self._arrow(rows)).repartition(self.rng.randint(1, 3))

    def _data_columns(self) -> list[str]:
        return list(self._kinds())

    def _kinds(self) -> dict[str, str]:
        return {c.name: c.kind for c in all_columns(self.added, self.widened)}

    def _knows(self, kinds: Mapping[str, str], pred: Pred | None) -> bool:
        """Does a schema with ``kinds`` have every column ``pred`` asks about, with its current kind?"""
        now = self._kinds()
        return pred is None or all(kinds.get(c) == now[c] for c in columns_of(pred))

    def _after_change(self, reload_frames: bool = True) -> None:
        if not self.sql_tables and self.model.snapshots:
            self._create_sql_tables()
        if reload_frames and (not self.frames or self.rng.random() < 0.5):
            self.load_frame()
        if self.use_hudi_rs:
            self.check_hudi_rs()

    def load_frame(self) -> None:
        """Load the data source now; keep at most two loaded DataFrames (and a temp view on the newest)."""
        frame = self.spark.read.format("hudi_layout").load(self.path)
        self.frames.append(LoadedFrame(frame, self.model.current, f"loaded after step {len(self.log)}",
                                       kinds=self._kinds()))
        self.frames = self.frames[-2:]
        frame.createOrReplaceTempView(self.view)

    def _create_sql_tables(self) -> None:
        a, b = f"hs_{self.uid}_opts", f"hs_{self.uid}_loc"
        self.spark.sql(f"CREATE TABLE {a} USING hudi_layout OPTIONS (path '{self.path}')")
        self.sql_tables.append(a)
        self.spark.sql(f"CREATE TABLE {b} USING hudi_layout LOCATION '{self.path}'")
        self.sql_tables.append(b)

    def set_zone(self, name: str | None = None, rebase: str | None = None, zone_reset: bool = False) -> None:
        """Switch the session's time zone (every question after it is read in that zone, by Spark and by the
        model): timestamp text and date -> timestamp casts mean other instants. Also Spark's parquet datetime
        rebase mode (``LEGACY`` one time in three): our files say they hold proleptic dates, so the answers
        must not move (a file without the footer entry would read its dates before 1582 shifted by days). And
        Hudi read settings of the session (:meth:`_set_session_hudi_settings`); ``zone_reset``: none."""
        name = name or self.rng.choice(SESSION_ZONES)
        rebase = rebase or ("LEGACY" if self.rng.random() < 1 / 3 else "CORRECTED")
        self.spark.conf.set("spark.sql.session.timeZone", name)
        for key in REBASE_MODE_SETTINGS:
            self.spark.conf.set(key, rebase)
        set_session_zone(name)
        self.zone = name
        hudi = self._set_session_hudi_settings(reset=name == "UTC" and rebase == "CORRECTED" and zone_reset)
        if hasattr(self, "log"):
            self.log.append(f"session time zone {name}, parquet datetime rebase {rebase}, Hudi settings {hudi}")

    def _set_session_hudi_settings(self, reset: bool = False) -> dict[str, str]:
        """Hudi settings in the session, which Hudi's reads (and ours) take beneath a read's options: none may
        change an answer (``read_optimized`` is the snapshot of a Copy-on-Write table, a begin instant is for
        incremental reads only, skipping never changes rows, write settings are not for reads). On a
        Merge-on-Read table ``read_optimized`` reads base files without their logs, which the model does not
        follow: only ``snapshot`` is set there (the soak of seed 89 met it once upserts appended logs)."""
        mor = getattr(self, "merge_on_read", False)
        choices = {QUERY_TYPE: ["snapshot"] if mor else ["read_optimized", "snapshot"],
                   "hoodie.enable.data.skipping": ["false", "true"],
                   BEGIN: ["20000101000000000"], "hoodie.cleaner.commits.retained": ["2"],
                   "hoodie.datasource.merge.type": ["payload_combine"]}
        chosen: dict[str, str] = {}
        for key, values in choices.items():
            if not reset and self.rng.random() < 0.3:
                chosen[key] = self.rng.choice(values)
                self.spark.conf.set(key, chosen[key])
            else:
                self.spark.conf.unset(key)
        return chosen

    def close(self) -> None:
        self.set_zone("UTC", "CORRECTED", zone_reset=True)
        for t in self.sql_tables:
            with contextlib.suppress(Exception):
                self.spark.sql(f"DROP TABLE IF EXISTS {t}")
        with contextlib.suppress(Exception):
            self.spark.catalog.dropTempView(self.view)
        shutil.rmtree(self.path, ignore_errors=True)

    # ------------------------------------------------------------------ asking

    def _ask(self, entry: str, question: str, want: Sequence[int], fn: Callable[[], Iterable[int]],
             refusal_ok: bool = False) -> None:
        try:
            got = list(fn())
        except HarnessMismatch:
            raise
        except Exception as e:  # noqa: BLE001 - any failure of an entry point is a finding
            if refusal_ok and self._is_cleaned_refusal(entry, e):
                return
            self.checker.error(entry, question, e)
            return
        self.checker.same_ids(entry, question, got, want)

    def _is_cleaned_refusal(self, entry: str, e: BaseException) -> bool:
        """A version a clean deleted files of was refused in the one-line form: an allowed answer (counted)."""
        if CLEANED_REFUSAL not in str(e):
            return False
        self.refusals += 1
        self.checker.checks += 1
        self.checker.per_entry_point[f"{entry} (refused: cleaned)"] += 1
        return True

    def _generator(self) -> PredicateGenerator:
        sample = list(self.model.current) or list(self.model.snapshots[-1][1] if self.model.snapshots else [])
        return PredicateGenerator(self.rng, sample)

    def random_predicate(self) -> Pred | None:
        r = self.rng.random()
        if r < 0.08:
            return None
        gen = self._generator()
        cols = all_columns(self.added, self.widened)
        return gen.conjunction(cols) if r < 0.3 else gen.predicate(cols)

    def query(self, pred: Pred | None = None, *, random_pred: bool = True) -> None:
        """Ask one predicate through every snapshot entry point."""
        if random_pred and pred is None:
            pred = self.random_predicate()
        self.queries += 1
        sql = to_sql(pred) if pred is not None else None
        q = f"WHERE {sql}" if sql else "no filter"
        want = ids_of(_matching(pred, self.model.current))
        self._ask_read(q, pred, want)
        self._ask_frames(q, pred)
        self._ask_sql(q, sql, want, pred)
        if self.queries % self.cli_every == 0:
            self._ask_cli(q, sql, want)
        if pred is not None:
            self._check_explain(q, sql, want)

    def query_commit_time(self) -> None:
        """A filter on ``_hoodie_commit_time`` (a commit of the table, ``=`` / ``<`` / ``>=``), alone or ANDed with a
        random predicate, through ``read`` (SQL text and ``Column``) and ``explain``: the meta-column statistics
        that writes, upserts, deletes and clusterings leave must never skip a file holding such a row. Which
        rows carry which commit time comes from hudi-rs's read (the model does not track it); the data part
        from the model."""
        from pyspark.sql import functions as F

        import hudi_layout as hl

        if not self.use_hudi_rs:
            return
        rows = self._hudi_rs_read()
        if rows.num_rows == 0 or "_hoodie_commit_time" not in rows.column_names:
            return
        times = list(zip(rows.column("id").to_pylist(), rows.column("_hoodie_commit_time").to_pylist()))
        commit = self.rng.choice(sorted({t for _, t in times}))
        op = self.rng.choice(["=", "<", ">=", ">"])
        by_time = {i for i, t in times if {"=": t == commit, "<": t < commit, ">=": t >= commit, ">": t > commit}[op]}
        pred = self.random_predicate() if self.rng.random() < 0.6 else None
        if pred is not None and not self._knows(self._kinds(), pred):
            pred = None
        want = sorted(by_time & set(ids_of(_matching(pred, self.model.current))))
        sql = f"_hoodie_commit_time {op} '{commit}'" + (f" AND ({to_sql(pred)})" if pred is not None else "")
        q = f"WHERE {sql}"
        self.queries += 1
        spark, path = self.spark, self.path
        self._ask("read(sql) on _hoodie_commit_time", q, want,
                  lambda: _arrow_ids(hl.read(path, sql, spark=spark).select("id").toArrow()))
        self._ask("read(Column) on _hoodie_commit_time", q, want,
                  lambda: _arrow_ids(hl.read(path, F.expr(sql), spark=spark).select("id").toArrow()))
        self._check_explain(q, sql, want)

    def _ask_read(self, q: str, pred: Pred | None, want: list[int]) -> None:
        import hudi_layout as hl
        from hudi_layout.skipping import from_sql

        spark, path = self.spark, self.path
        if pred is None:
            self._ask("read", q, want, lambda: _arrow_ids(hl.read(spark=spark, path=path).toArrow()))
            self._full_rows_check("read (all rows)", lambda: hl.read(spark=spark, path=path).toArrow().to_pylist(),
                                  self.model.current)
            return
        sql = to_sql(pred)
        self._ask("read(sql)", q, want, lambda: _arrow_ids(hl.read(spark=spark, path=path, where=sql)
                                                           .select("id").toArrow()))
        self._ask("read(Column)", q, want, lambda: _arrow_ids(hl.read(spark=spark, path=path,
                                                                      where=to_column(pred)).select("id").toArrow()))
        if self.queries % 2 == 0:  # a predicate tree (the IR from_sql gives): its SQL form is the row filter
            self._ask("read(predicate tree)", q, want,
                      lambda: _arrow_ids(hl.read(spark=spark, path=path, where=from_sql(sql)).select("id").toArrow()))
        tuples = to_tuples(pred)
        if tuples is not None:
            self._ask("read(tuples)", f"{q} as {tuples!r}", want,
                      lambda: _arrow_ids(hl.read(spark=spark, path=path, where=tuples).select("id").toArrow()))

    def _full_rows_check(self, entry: str, fn: Callable[[], list[dict[str, Any]]],
                         rows: Iterable[Mapping[str, Any]]) -> None:
        try:
            got = sorted(normalised(r, self._data_columns()) for r in fn())
        except Exception as e:  # noqa: BLE001
            self.checker.error(entry, "all rows, all columns", e)
            return
        want = sorted(normalised(r, self._data_columns()) for r in rows)
        self.checker.same(entry, "all rows, all columns", got, want)

    def _ask_frames(self, q: str, pred: Pred | None) -> None:
        """Each loaded DataFrame: the filtered question, then the same DataFrame without a filter (a plan made
        for one scan must not leak into the next); a temp view over the newest one."""
        for lf in self.frames:
            frame, at, ok = lf.frame, f"{q} [DataFrame {lf.label}]", lf.cleaned_since
            if not self._knows(lf.kinds, pred):
                pass  # a column added (or widened) after the frame was loaded is not so in its schema (and its
                # rows hold the old kind's values, which the predicate's literals may not even compare with)
            elif pred is None:
                want = ids_of(_matching(pred, lf.rows))
                self._ask("data source", at, want, lambda frame=frame: [r[0] for r in frame.select("id").collect()],
                          refusal_ok=ok)
            else:
                want = ids_of(_matching(pred, lf.rows))
                sql = to_sql(pred)
                self._ask("data source", at, want,
                          lambda frame=frame, sql=sql: [r[0] for r in frame.where(sql).select("id").collect()],
                          refusal_ok=ok)
            self._ask("data source count() after a query", f"no filter [DataFrame {lf.label}]",
                      [0] * len(lf.rows), lambda frame=frame: [0] * frame.count(), refusal_ok=ok)
        if self.frames and self._knows(self.frames[-1].kinds, pred):
            lf = self.frames[-1]
            want = ids_of(_matching(pred, lf.rows))
            where = f" WHERE {to_sql(pred)}" if pred is not None else ""
            self._ask("temp view", f"{q} [DataFrame {lf.label}]", want,
                      lambda: [r[0] for r in self.spark.sql(f"SELECT id FROM {self.view}{where}").collect()],
                      refusal_ok=lf.cleaned_since)

    def _ask_sql(self, q: str, sql: str | None, want: list[int], pred: Pred | None = None) -> None:
        """One of the two SQL tables (alternating), and every other time both references in one statement."""
        if not self.sql_tables:
            return
        where = f" WHERE {sql}" if sql else ""
        t = self.sql_tables[self.queries % len(self.sql_tables)]
        kind = "OPTIONS (path)" if t.endswith("_opts") else "LOCATION"
        self._ask(f"SQL table {kind}", q, want,
                  lambda: [r[0] for r in self.spark.sql(f"SELECT id FROM {t}{where}").collect()])
        if sql and self.queries % 2 == 0:
            n_all = len(self.model.current)
            self._ask("SQL table: filtered and unfiltered subqueries", q, [len(want), n_all],
                      lambda: list(self.spark.sql(f"SELECT (SELECT count(*) FROM {t} WHERE {sql}) AS a, "
                                                  f"(SELECT count(*) FROM {t}) AS b").collect()[0]))

    def _cli_aggregate(self, sql: str | None, extra: Sequence[str] = ()) -> list[int]:
        where = f" WHERE {sql}" if sql else ""
        self.cli_queries += 1
        relation = "t AS rel_q" if self.cli_queries % 2 == 0 else "t"  # an alias takes the same pruning path
        code, out, err = run_cli(["query", self.path, "SELECT count(*) AS n, coalesce(sum(id), 0) AS s, "
                                  f"coalesce(bit_xor(id), 0) AS x FROM {relation}{where}", *extra])
        if code != 0:
            raise RuntimeError(f"hudi-layout query exited {code}: {err.strip()[:500]}")
        return [int(v) for v in parse_show(out)[0]]

    @staticmethod
    def _aggregate(ids: Sequence[int]) -> list[int]:
        x = 0
        for i in ids:
            x ^= i
        return [len(ids), sum(ids), x]

    def _ask_cli(self, q: str, sql: str | None, want: list[int], extra: Sequence[str] = (),
                 entry: str = "CLI query", refusal_ok: bool = False) -> None:
        try:
            got = self._cli_aggregate(sql, extra)
        except Exception as e:  # noqa: BLE001
            if refusal_ok and self._is_cleaned_refusal(entry, e):
                return
            self.checker.error(entry, q, e)
            return
        self.checker.same(entry, f"{q} (count, sum, xor of ids)", got, self._aggregate(want))
        if sql and not extra and self.queries % (2 * self.cli_every) == 0:
            try:
                code, out, err = run_cli(["query", self.path, f"SELECT (SELECT count(*) FROM t WHERE {sql}) AS a, "
                                          "(SELECT count(*) FROM t) AS b"])
                if code != 0:
                    raise RuntimeError(f"exit {code}: {err.strip()[:500]}")
                got2 = [int(v) for v in parse_show(out)[0]]
            except Exception as e:  # noqa: BLE001
                self.checker.error("CLI query subqueries", q, e)
                return
            self.checker.same("CLI query subqueries", q, got2, [len(want), len(self.model.current)])

    def _check_explain(self, q: str, sql: str | None, want: Sequence[int]) -> None:
        """Every file holding a row that matches must be a candidate of ``explain``."""
        import hudi_layout as hl

        if not self.use_hudi_rs or not want:
            return
        try:
            files = self._files_by_id()
            plan = hl.explain(path=self.path, where=sql)
        except Exception as e:  # noqa: BLE001
            self.checker.error("explain", q, e)
            return
        # compared by file group: a row a log record wrote names its file id in _hoodie_file_name (as Hudi's
        # append handle writes it), a row of a base file the file's name
        candidates = {_file_group_of(os.path.basename(p)) for p in plan.candidate_files}
        needed = {_file_group_of(files[i]) for i in want}
        self.checker.same("explain", f"{q}: file groups with matching rows that are not candidates",
                          sorted(needed - candidates), [])

    def _files_by_id(self) -> dict[int, str]:
        t = self._hudi_rs_read()
        return dict(zip(t.column("id").to_pylist(), t.column("_hoodie_file_name").to_pylist()))

    # ------------------------------------------------------------------ time travel, incremental, hudi-rs

    def _hudi_rs_read(self, options: Any = None) -> Any:
        import hudi
        import pyarrow as pa

        table = hudi.HudiTableBuilder.from_base_uri(self.path).build()
        batches = table.read(options) if options is not None else table.read()
        return pa.Table.from_batches(batches) if batches else pa.table({"id": pa.array([], pa.int64())})

    def check_hudi_rs(self) -> None:
        self._ask("hudi-rs snapshot", "no filter", ids_of(self.model.current), lambda: _arrow_ids(self._hudi_rs_read()))

    def _instant_choices(self) -> list[str]:
        """Requested and completion times of the retained instants, and times just before / after them."""
        times = [t for i in self.model.instants for t in (i.requested, i.completed) if t]
        out = list(times)
        for t in times:
            out.append(str(int(t) - 1).zfill(17))
            out.append(str(int(t) + 1).zfill(17))
        return out

    def time_travel(self) -> None:
        import hudi

        import hudi_layout as hl

        if not self.model.snapshots:
            return
        t = self.rng.choice(self._instant_choices())
        kinds = self._kinds_as_of(t)  # the schema of then: a column added later is not in it
        pred = next((p for p in (self.random_predicate() for _ in range(6)) if self._knows(kinds, p)), None)
        sql = to_sql(pred) if pred is not None else None
        rows = self.model.as_of(t)
        want = ids_of(_matching(pred, rows))
        q = f"as of {t}" + (f" WHERE {sql}" if sql else "")
        opts = {AS_OF: t}
        # a clean may have deleted files of this version: refusal allowed, unless a savepoint pins it
        cleaned = t < self.readable_from and t not in self.savepointed
        self._ask("read as.of.instant", q, want,
                  lambda: _arrow_ids(hl.read(spark=self.spark, path=self.path, where=sql, options=opts)
                                     .select("id").toArrow()), refusal_ok=cleaned)

        def via_source() -> list[int]:
            df = self.spark.read.format("hudi_layout").option(AS_OF, t).load(self.path)
            return [r[0] for r in (df.where(sql) if sql else df).select("id").collect()]

        self._ask("data source as.of.instant", q, want, via_source, refusal_ok=cleaned)
        self._ask_cli(q, sql, want, extra=["--as-of", t], entry="CLI query --as-of", refusal_ok=cleaned)
        if self.use_hudi_rs and not cleaned:
            self._ask("hudi-rs as of", f"as of {t}", ids_of(rows),
                      lambda: _arrow_ids(self._hudi_rs_read(hudi.HudiReadOptions().with_as_of_timestamp(t))))

    def _cleaned_version_completed_by(self, end: str) -> bool:
        """Whether the table as of the instants *completed* by ``end`` (an incremental read's end view) may be
        one a clean deleted files of: its last instant was requested before what the cleans retained."""
        last = self.model.completed_by(end)
        return last is None or last[0].requested < self.readable_from

    def incremental(self) -> None:
        import hudi

        import hudi_layout as hl

        if not self.model.snapshots:
            return
        choices = self._instant_choices()
        begin = self.rng.choice(["000", *choices])
        end = self.rng.choice([None, *choices])
        if end is not None and end < begin:
            begin, end = end, begin
        pred = self.random_predicate()
        sql = to_sql(pred) if pred is not None else None
        rows = self.model.incremental(begin, end)
        want = ids_of(_matching(pred, rows))
        q = f"incremental ({begin}, {end or 'latest'}]" + (f" WHERE {sql}" if sql else "")
        opts = {QUERY_TYPE: "incremental", BEGIN: begin}
        if end is not None:
            opts[END] = end
        cleaned = end is not None and self._cleaned_version_completed_by(end)
        self._ask("read incremental", q, want,
                  lambda: _arrow_ids(hl.read(spark=self.spark, path=self.path, where=sql, options=opts)
                                     .select("id").toArrow()), refusal_ok=cleaned)

        def via_source() -> list[int]:
            reader = self.spark.read.format("hudi_layout")
            for k, v in opts.items():
                reader = reader.option(k, v)
            df = reader.load(self.path)
            return [r[0] for r in (df.where(sql) if sql else df).select("id").collect()]

        self._ask("data source incremental", q, want, via_source, refusal_ok=cleaned)
        extra = ["--query-type", "incremental", "--begin", begin] + (["--end", end] if end else [])
        self._ask_cli(q, sql, want, extra=extra, entry="CLI query incremental", refusal_ok=cleaned)
        if self.use_hudi_rs and end is not None and begin >= self.readable_from:
            # hudi-rs compares (begin, end] with completion times, as Hudi 1.x does
            ro = (hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
                  .with_start_timestamp(begin).with_end_timestamp(end))
            self._ask("hudi-rs incremental", f"incremental ({begin}, {end}]", ids_of(rows),
                      lambda: _arrow_ids(self._hudi_rs_read(ro)))


def _file_group_of(name: str) -> str:
    """The file id of a base file name, or ``name`` itself (a log record's ``_hoodie_file_name`` is the id)."""
    from hudi_layout.format.file_naming import try_parse_base_file_name

    parsed = try_parse_base_file_name(name)
    return parsed.file_id if parsed is not None else name
