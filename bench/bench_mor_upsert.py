"""Benchmark: Merge-on-Read upserts that append log files vs upserts that rewrite the touched file groups.

Two copies of one Merge-on-Read table (``--rows`` conn rows, ``hoodie.parquet.max.file.size`` ``--file-mb``)
take the same ``--rounds`` upsert batches (``--fraction`` of the keys each, random, every round other keys):

* ``append``: the default (``hudi_layout.mor.max.log.files.per.slice`` 5): one log file per touched file group;
* ``rewrite``: the same option at 0: each touched group's slice merged into a new base file (what every MOR
  upsert did before log appends).

After one small untimed upsert into both (warm-up), rounds alternate the two (A B, then B A, ...), so each
pair ran under the same load; the ratio is taken pair by pair (median reported, every pair listed). After the
rounds, snapshot reads (``count(*)`` and ``sum(dst_port)`` of every row through ``hudi_layout.read``; a count
alone Spark answers from parquet footers) of both tables alternate ``--repeat`` times: the reader's price of
the appends (slices merged with their logs). Then ``hudi_layout.compact`` merges the appended table's slices
(timed) and the scans alternate again. hudi-rs must read the same rows (digest) from both tables, and from the
appended one after its compaction, else the run fails.

Run: ``python -m bench.bench_mor_upsert [--quick] [--rows N] [--rounds R] [--fraction F] [--file-mb M]``.
Writes ``bench/results/mor_upsert.md|json|png`` (``mor_upsert_quick`` with --quick).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .common import ROOT, bench_arg_parser, fresh_dir, log, median, rows_of, spark_session, timed
from .conn_data import conn_input
from .report import md_table, write_report

VARIANTS = {"append": {}, "rewrite": {"hudi_layout.mor.max.log.files.per.slice": "0"}}


def table_options(file_mb: int) -> dict[str, str]:
    return {"hoodie.table.name": "conn_mor", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.parquet.max.file.size": str(file_mb << 20)}


def build(spark: Any, input_path: str, path: Path, file_mb: int) -> int:
    """The MOR table: the conn rows with an ordering field ``ts`` (0), bulk-inserted; returns its file groups."""
    import hudi_layout
    from hudi_layout import HudiTable

    df = spark.read.parquet(input_path).selectExpr("*", "CAST(0 AS LONG) AS ts")
    hudi_layout.write(df, str(path), {**table_options(file_mb), "hoodie.datasource.write.operation": "bulk_insert"})
    return len(HudiTable(str(path)).file_slices())


def batch(spark: Any, input_path: str, rows: int, fraction: float, round_no: int, seed: int = 5) -> Any:
    """``fraction`` of the keys, random, with a new ``ts`` and ``dst_port`` (cached: both variants get it)."""
    rng = np.random.default_rng(seed + round_no)
    ids = np.sort(rng.choice(rows, int(rows * fraction), replace=False)).tolist()
    keys = spark.createDataFrame([(int(i),) for i in ids], "id long")
    df = spark.read.parquet(input_path).join(keys, "id").selectExpr(
        "id", "src_ip", "dst_ip", "src_port", f"CAST((dst_port + {round_no + 1}) % 65536 AS INT) AS dst_port",
        "payload", f"CAST({round_no + 1} AS LONG) AS ts")
    df = df.cache()
    df.count()
    return df


def upsert(df: Any, path: Path, file_mb: int, variant: str) -> dict[str, Any]:
    import hudi_layout

    secs, r = timed(hudi_layout.write, df, str(path), {**table_options(file_mb), **VARIANTS[variant],
                                                       "hoodie.datasource.write.operation": "upsert"})
    return {"seconds": secs, "bytes_written": r.bytes_written, "files_written": r.files_written,
            "log_files_appended": r.log_files_appended, "file_groups_rewritten": r.file_groups_rewritten,
            "records_updated": r.records_updated}


def digest(path: Path) -> tuple[int, str]:
    sys.path.insert(0, str(ROOT))
    from tests.helpers.integration import hudi_rs_read, rows_digest

    t = hudi_rs_read(path)
    return t.num_rows, rows_digest(t)


def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.splitlines()[0], default_rows=4_000_000, quick_rows=200_000)
    p.add_argument("--rounds", type=int, default=None, help="upsert rounds (pairs); default 4 (3 with --quick)")
    p.add_argument("--fraction", type=float, default=0.01, help="share of the keys each upsert updates")
    p.add_argument("--file-mb", type=int, default=None, help="max base file size in MiB (default 32; 4 --quick)")
    args = p.parse_args(argv)
    rows = rows_of(args)
    rounds = args.rounds or (3 if args.quick else 4)
    repeat = args.repeat or 3
    file_mb = args.file_mb or (4 if args.quick else 32)
    name = args.name or ("mor_upsert_quick" if args.quick else "mor_upsert")
    spark = spark_session("bench_mor_upsert", master=args.master,
                          extra_conf={"spark.sql.shuffle.partitions": "8"})
    input_path = conn_input(spark, rows, args.work_dir)
    work = fresh_dir(Path(args.work_dir) / f"mor_upsert_{rows}")
    first = work / "append"
    secs, groups = timed(build, spark, input_path, first, file_mb)
    log(f"built the MOR table in {secs:.1f} s: {groups} file groups")
    shutil.copytree(first, work / "rewrite")
    paths = {v: work / v for v in VARIANTS}

    warm = batch(spark, input_path, rows, min(args.fraction, 0.0005), 1000)  # untimed: JVM and worker warm-up
    for v in VARIANTS:
        upsert(warm, paths[v], file_mb, v)
    warm.unpersist()
    pairs: list[dict[str, Any]] = []
    for r in range(rounds):
        df = batch(spark, input_path, rows, args.fraction, r)
        order = list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))
        got = {v: upsert(df, paths[v], file_mb, v) for v in order}
        df.unpersist()
        pair = {"round": r + 1, "order": order, **got,
                "ratio": got["append"]["seconds"] / got["rewrite"]["seconds"]}
        pairs.append(pair)
        log(f"round {r + 1}: append {got['append']['seconds']:.2f} s ({got['append']['log_files_appended']} logs, "
            f"{got['append']['bytes_written']:,} B), rewrite {got['rewrite']['seconds']:.2f} s "
            f"({got['rewrite']['file_groups_rewritten']} groups, {got['rewrite']['bytes_written']:,} B), "
            f"ratio {pair['ratio']:.2f}")
    digests = {v: digest(paths[v]) for v in VARIANTS}
    if digests["append"] != digests["rewrite"]:
        raise SystemExit(f"hudi-rs reads different rows from the two tables: {digests}")

    import hudi_layout

    def scan(pth: Path) -> tuple[int, int]:
        """Every row read (a sum over an updated column: a count alone is answered from parquet footers)."""
        got = hudi_layout.read(str(pth), spark=spark).selectExpr("count(*)", "sum(dst_port)").collect()[0]
        return int(got[0]), int(got[1])

    sums = {v: scan(paths[v]) for v in VARIANTS}  # also the warm-up
    if sums["append"] != sums["rewrite"] or sums["append"][0] != digests["append"][0]:
        raise SystemExit(f"the tables read differently: {sums}, hudi-rs {digests}")

    def alternating_scans(when: str) -> dict[str, list[float]]:
        """``repeat`` scans of each table, alternating (A B, B A, ...); each must read the first sums."""
        out: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for r in range(repeat):
            for v in (list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))):
                secs, got = timed(scan, paths[v])
                if got != sums[v]:
                    raise SystemExit(f"{v} {when}: read {got}, before {sums[v]}")
                out[v].append(secs)
        return out

    reads = alternating_scans("after the rounds")
    ratio = median(pr["ratio"] for pr in pairs)
    read_ratio = median(a / b for a, b in zip(reads["append"], reads["rewrite"]))
    log(f"median upsert ratio append / rewrite {ratio:.2f}; snapshot read {read_ratio:.2f}")
    # a compaction of the appended table: its cost, and the scan afterwards (alternating with the rewritten one)
    compact_secs, compactions = timed(hudi_layout.compact, str(paths["append"]), spark=spark)
    compacted = compactions[-1] if compactions else None
    if digest(paths["append"]) != digests["append"]:
        raise SystemExit("hudi-rs reads other rows after the compaction")
    log(f"compaction: {compact_secs:.2f} s, {compacted.describe() if compacted else 'nothing to compact'}")
    after = alternating_scans("after the compaction")
    after_ratio = median(a / b for a, b in zip(after["append"], after["rewrite"]))
    writes = {"append": sum(pr["append"]["seconds"] for pr in pairs) + compact_secs,
              "rewrite": sum(pr["rewrite"]["seconds"] for pr in pairs)}
    log(f"scan after compaction: ratio {after_ratio:.2f}; rounds + compaction {writes['append']:.1f} s vs "
        f"rewrites {writes['rewrite']:.1f} s")

    sections = [
        ("Setup", f"{rows:,} conn rows in a Merge-on-Read table of {groups} file groups (base files up to "
                  f"{file_mb} MiB); {rounds} upsert rounds of {args.fraction:.1%} random keys each "
                  f"({int(rows * args.fraction):,} records), the two variants alternating (A B, B A, ...). "
                  f"hudi-rs read the same {digests['append'][0]:,} rows from both tables after the rounds "
                  f"(digest `{digests['append'][1]}`)."),
        ("Upserts: append / rewrite", f"**Median of the pair ratios: {ratio:.2f}** (below 1: appending is "
                                      "faster).\n\n" + md_table(
            ["round", "order", "append (s)", "log files", "append bytes", "rewrite (s)", "groups rewritten",
             "rewrite bytes", "append / rewrite"],
            [[pr["round"], " then ".join(pr["order"]), pr["append"]["seconds"], pr["append"]["log_files_appended"],
              pr["append"]["bytes_written"], pr["rewrite"]["seconds"], pr["rewrite"]["file_groups_rewritten"],
              pr["rewrite"]["bytes_written"], pr["ratio"]] for pr in pairs])),
        ("Snapshot read after the rounds", f"`count(*), sum(dst_port)` over `hudi_layout.read(path)` (every row "
                                           f"read; both tables gave the same), {repeat} alternating repetitions: "
                                           f"append {median(reads['append']):.2f} s, rewrite "
                                           f"{median(reads['rewrite']):.2f} s (median ratio {read_ratio:.2f}: the "
                                           "appended slices are merged with their log files on read)."),
        ("Compaction of the appended table", (
            f"`hudi_layout.compact` merged {compacted.slices if compacted else 0} slices with "
            f"{compacted.log_files if compacted else 0} log files into new base files in **{compact_secs:.2f} s** "
            f"({(compacted.bytes_out if compacted else 0):,} bytes written); hudi-rs read the same rows after it. "
            f"The scan then took {median(after['append']):.2f} s against {median(after['rewrite']):.2f} s for the "
            f"rewritten table (median ratio {after_ratio:.2f}, {repeat} alternating repetitions). Write time of "
            f"the {rounds} rounds plus the compaction: {writes['append']:.1f} s, against {writes['rewrite']:.1f} s "
            f"for the {rounds} rewriting rounds.")),
    ]
    plots = []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        x = np.arange(len(pairs))
        ax1.bar(x - 0.2, [pr["append"]["seconds"] for pr in pairs], 0.4, label="append (log files)")
        ax1.bar(x + 0.2, [pr["rewrite"]["seconds"] for pr in pairs], 0.4, label="rewrite (new base files)")
        ax1.set_xticks(x, [f"round {pr['round']}" for pr in pairs])
        ax1.set_ylabel("upsert seconds")
        ax1.set_title(f"{args.fraction:.1%} of {rows:,} rows per upsert, {groups} file groups")
        ax1.legend()
        ax2.bar([0, 1, 2, 3], [median(reads["append"]), median(reads["rewrite"]), median(after["append"]),
                               median(after["rewrite"])], color=["C0", "C1", "C2", "C1"])
        ax2.set_xticks([0, 1, 2, 3], ["append", "rewrite", "append,\ncompacted", "rewrite\n(again)"])
        ax2.set_ylabel("snapshot scan seconds (median)")
        ax2.set_title(f"read after {rounds} rounds, then after a compaction")
        fig.tight_layout()
        plots.append((f"{name}.png", fig))
    except ImportError:
        log("matplotlib missing: no plot")
    path = write_report(name, f"Merge-on-Read upserts: log appends vs rewrites ({rows:,} rows)", sections,
                        {"rows": rows, "groups": groups, "file_mb": file_mb, "fraction": args.fraction,
                         "rounds": pairs, "median_ratio": ratio, "reads": reads, "read_ratio": read_ratio,
                         "digests": digests, "compaction_seconds": compact_secs,
                         "compaction": compacted.__dict__ if compacted else None, "reads_after_compaction": after,
                         "read_ratio_after_compaction": after_ratio, "write_seconds_total": writes},
                        plots=plots)
    log(f"report: {path}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
