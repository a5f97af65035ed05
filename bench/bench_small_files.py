"""Benchmark: file groups and upsert time over many small upserts, small-file packing off vs on.

Two copies of one partitioned Copy-on-Write table (``--rows`` rows over 4 partitions, bulk-inserted) take the
same ``--rounds`` upserts, each ``--updates`` random stored keys and ``--inserts`` new keys spread over the
partitions (a stream of small upserts, the case that leaves many small files):

* ``off``: ``hoodie.parquet.small.file.limit=0``, hudi_layout's default: new keys open new file groups;
* ``on``: the limit at Hudi's default, 104857600 bytes: new keys are packed into the partitions' small files.

Rounds alternate the two (A B, then B A, ...), so each pair ran under the same load; the time ratio is taken
pair by pair (median reported). After every round the number of file groups is recorded. At the end both
tables must read the same rows as a model of the upserts, through ``hudi_layout.read`` and through hudi-rs,
each key once, else the run fails.

Run: ``python -m bench.bench_small_files [--quick] [--rows N] [--rounds R]``. Writes
``bench/results/small_files.md|json|png`` (``small_files_quick`` with --quick).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .common import UpsertStream, bench_arg_parser, fresh_dir, log, median, rows_of, spark_session, timed
from .report import md_table, write_report

VARIANTS = {"off": "0", "on": "104857600"}
SCHEMA = "id long, name string, v int, ts long, part string"
PARTS = ("p0", "p1", "p2", "p3")


def table_options() -> dict[str, str]:
    return {"hoodie.table.name": "small_files", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.parquet.max.file.size": str(8 << 20)}


def row(i: int, ts: int, v: int) -> tuple[Any, ...]:
    return (i, f"name-{i}-{ts}", v, ts, PARTS[i % len(PARTS)])


def main(argv: list[str] | None = None) -> int:
    import hudi_layout
    from hudi_layout import HudiTable

    p = bench_arg_parser(__doc__ or "", default_rows=20_000, quick_rows=4_000)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--updates", type=int, default=10)
    p.add_argument("--inserts", type=int, default=10)
    args = p.parse_args(argv)
    rows = rows_of(args)
    rounds = 20 if args.quick else args.rounds
    name = args.name or ("small_files_quick" if args.quick else "small_files")
    spark = spark_session("bench_small_files")
    work = fresh_dir(Path(args.work_dir) / "small_files")
    stream = UpsertStream(rows, row, seed=11, value_range=1000, first_values=lambda i: i % 97)
    base = stream.initial_rows()
    paths = {k: work / k for k in VARIANTS}
    for path in paths.values():
        hudi_layout.write(spark.createDataFrame(base, SCHEMA), str(path),
                          {**table_options(), "hoodie.datasource.write.operation": "bulk_insert"})
    groups: dict[str, list[int]] = {k: [len(HudiTable(str(path)).file_slices())] for k, path in paths.items()}
    seconds: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for r in range(rounds):
        df = spark.createDataFrame(stream.batch(r + 1, args.updates, args.inserts), SCHEMA).cache()
        df.count()
        order = list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]
        for k in order:
            opts = {**table_options(), "hoodie.datasource.write.operation": "upsert",
                    "hoodie.parquet.small.file.limit": VARIANTS[k]}
            t, _ = timed(hudi_layout.write, df, str(paths[k]), opts)
            seconds[k].append(t)
            groups[k].append(len(HudiTable(str(paths[k])).file_slices()))
        df.unpersist()
        if (r + 1) % 10 == 0:
            log(f"round {r + 1}: file groups {groups['off'][-1]} (off) / {groups['on'][-1]} (on)")
    for k, path in paths.items():
        if not stream.read_as_model(spark, path, ("id", "name", "v", "ts", "part")):
            log(f"{k}: the table does not read as the model of its upserts")
            return 1
    ratios = [on / off for on, off in zip(seconds["on"], seconds["off"])]
    data = {"rows": rows, "rounds": rounds, "updates": args.updates, "inserts": args.inserts,
            "file_groups": groups, "seconds": seconds, "pair_ratios_on_over_off": ratios,
            "median_ratio": median(ratios)}
    table = md_table(["packing", "file groups at start", "file groups at end", "median upsert s", "last 10 median s"],
                     [[k, groups[k][0], groups[k][-1], median(seconds[k]), median(seconds[k][-10:])]
                      for k in VARIANTS])
    sections = [
        ("Setup", f"{rows:,} rows over {len(PARTS)} partitions (bulk insert, 8 MiB max file size), then {rounds} "
                  f"upserts of {args.updates} stored + {args.inserts} new keys, the same batches into both tables, "
                  "alternating which goes first. Both tables read as the model of the upserts through "
                  "hudi_layout.read and hudi-rs (checked)."),
        ("Result", table + f"\n\nUpsert time, packing on / off, median of {rounds} pairs: "
                           f"**{median(ratios):.2f}x** (pairs from {min(ratios):.2f}x to {max(ratios):.2f}x)."),
    ]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for k in VARIANTS:
        a.plot(range(len(groups[k])), groups[k], label=f"packing {k}")
        b.plot(range(1, rounds + 1), seconds[k], label=f"packing {k}", marker=".", linestyle="")
    a.set_xlabel("upserts")
    a.set_ylabel("file groups")
    a.set_title("File groups after each upsert")
    a.legend()
    b.set_xlabel("upsert")
    b.set_ylabel("seconds")
    b.set_title("Upsert time")
    b.legend()
    write_report(name, "Small-file packing of upserts", sections, data, plots=[(f"{name}.png", fig)])
    log(f"wrote bench/results/{name}.md")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
