"""Benchmark: what a long-lived table's growing timeline costs, commit after commit.

hudi_layout does not archive the timeline (Hudi's archiver moves old instants out of the active timeline;
docs/live-writes.md, "Not done here"). This run measures what that costs a living table: one partitioned
Copy-on-Write table takes ``--rounds`` small upserts (``--updates`` stored keys + ``--inserts`` new keys each),
with Hudi's defaults for the services our writer runs inline (automatic clean, metadata-table compaction).
After every round it records

* the upsert's wall time (Spark job included),
* the driver-only planning of a filtered read (``hudi_layout.explain``: timeline, file-system view and
  column_stats lookups, no Spark),
* the file-system view alone (``HudiTable(path).file_slices()``),
* the instants on the data table's active timeline and the files under ``.hoodie/``.

The slope of each time against the round number (least squares over the second half) says how much each
further commit adds. At the end the table must read as a model of the upserts through ``hudi_layout.read``
and hudi-rs, each key once, else the run fails.

Run: ``python -m bench.bench_timeline_growth [--quick] [--rounds R]``. Writes
``bench/results/timeline_growth.md|json|png`` (``timeline_growth_quick`` with --quick).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .common import UpsertStream, bench_arg_parser, fresh_dir, log, median, rows_of, spark_session, timed
from .report import md_table, write_report

SCHEMA = "id long, name string, v int, ts long, part string"
PARTS = ("p0", "p1", "p2", "p3")
QUERY = "v BETWEEN 100 AND 120"


def table_options() -> dict[str, str]:
    return {"hoodie.table.name": "timeline_growth", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts"}


def row(i: int, ts: int, v: int) -> tuple[Any, ...]:
    return (i, f"name-{i}-{ts}", v, ts, PARTS[i % len(PARTS)])


def files_under(path: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(path))


def slope(xs: list[int], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs`` (seconds per round)."""
    a = np.polyfit(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), 1)
    return float(a[0])


def main(argv: list[str] | None = None) -> int:
    import hudi_layout
    from hudi_layout import HudiTable

    p = bench_arg_parser(__doc__ or "", default_rows=20_000, quick_rows=2_000)
    p.add_argument("--rounds", type=int, default=400)
    p.add_argument("--updates", type=int, default=10)
    p.add_argument("--inserts", type=int, default=5)
    args = p.parse_args(argv)
    rows = rows_of(args)
    rounds = 40 if args.quick else args.rounds
    name = args.name or ("timeline_growth_quick" if args.quick else "timeline_growth")
    spark = spark_session("bench_timeline_growth")
    path = fresh_dir(Path(args.work_dir) / "timeline_growth") / "t"
    stream = UpsertStream(rows, row, seed=29, value_range=997, first_values=lambda i: i % 997)
    hudi_layout.write(spark.createDataFrame(stream.initial_rows(), SCHEMA), str(path),
                      {**table_options(), "hoodie.datasource.write.operation": "bulk_insert"})
    series: dict[str, list[float]] = {"upsert_s": [], "explain_s": [], "file_slices_s": [],
                                      "active_instants": [], "hoodie_files": [], "files_read": []}
    started = time.monotonic()
    for r in range(rounds):
        df = spark.createDataFrame(stream.batch(r + 1, args.updates, args.inserts), SCHEMA)
        t_write, _ = timed(hudi_layout.write, df, str(path),
                           {**table_options(), "hoodie.datasource.write.operation": "upsert"})
        t_plan, plan = timed(hudi_layout.explain, str(path), QUERY)
        t_view, _ = timed(lambda: HudiTable(str(path)).file_slices())
        series["upsert_s"].append(t_write)
        series["explain_s"].append(t_plan)
        series["file_slices_s"].append(t_view)
        series["active_instants"].append(len(HudiTable(str(path)).timeline.instants))
        series["hoodie_files"].append(files_under(path / ".hoodie"))
        series["files_read"].append(len(plan.candidate_files))
        if (r + 1) % 25 == 0:
            log(f"round {r + 1}: upsert {t_write:.2f} s, explain {t_plan * 1000:.0f} ms, view {t_view * 1000:.0f} ms, "
                f"{series['active_instants'][-1]} instants, {series['hoodie_files'][-1]} files under .hoodie")
    total = time.monotonic() - started
    if not stream.read_as_model(spark, path, ("id", "name", "v", "ts", "part")):
        log("the table does not read as the model of its upserts")
        return 1
    half = rounds // 2
    xs = list(range(half + 1, rounds + 1))
    slopes = {k: slope(xs, series[k][half:]) for k in ("upsert_s", "explain_s", "file_slices_s")}
    first, last = slice(0, 10), slice(rounds - 10, rounds)
    data = {"rows": rows, "rounds": rounds, "updates": args.updates, "inserts": args.inserts, "query": QUERY,
            "series": series, "slopes_s_per_round_second_half": slopes, "total_s": total}
    table = md_table(["measure", "first 10 rounds (median)", "last 10 rounds (median)",
                      "added per further round (slope, 2nd half)"],
                     [["upsert, s", median(series["upsert_s"][first]), median(series["upsert_s"][last]),
                       f"{slopes['upsert_s'] * 1000:.2f} ms"],
                      ["explain (driver planning), ms", 1000 * median(series["explain_s"][first]),
                       1000 * median(series["explain_s"][last]), f"{slopes['explain_s'] * 1e6:.1f} us"],
                      ["file-system view, ms", 1000 * median(series["file_slices_s"][first]),
                       1000 * median(series["file_slices_s"][last]), f"{slopes['file_slices_s'] * 1e6:.1f} us"],
                      ["active instants", series["active_instants"][0], series["active_instants"][-1], ""],
                      ["files under .hoodie/", series["hoodie_files"][0], series["hoodie_files"][-1], ""]])
    sections = [
        ("Setup", f"{rows:,} rows over {len(PARTS)} partitions (bulk insert), then {rounds} upserts of "
                  f"{args.updates} stored + {args.inserts} new keys, with the writer's inline services at "
                  f"their defaults (clean, metadata-table compaction and clean). Query planned: `{QUERY}`. "
                  "The table reads as the model of the upserts through hudi_layout.read and hudi-rs (checked). "
                  f"Whole run {total:.0f} s."),
        ("Result", table),
    ]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4))
    x = range(1, rounds + 1)
    a.plot(x, series["upsert_s"], marker=".", linestyle="", label="upsert")
    a.set_xlabel("commit")
    a.set_ylabel("seconds")
    a.set_title("Upsert wall time")
    b.plot(x, [1000 * v for v in series["explain_s"]], marker=".", linestyle="", label="explain (planning)")
    b.plot(x, [1000 * v for v in series["file_slices_s"]], marker=".", linestyle="", label="file-system view")
    b.set_xlabel("commit")
    b.set_ylabel("milliseconds")
    b.set_title("Driver-only work per read")
    b.legend()
    c.plot(x, series["active_instants"], label="active instants (data table)")
    c.plot(x, series["hoodie_files"], label="files under .hoodie/")
    c.set_xlabel("commit")
    c.set_title("Timeline size")
    c.legend()
    write_report(name, "A living table's growing timeline", sections, data, plots=[(f"{name}.png", fig)])
    log(f"wrote bench/results/{name}.md")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
