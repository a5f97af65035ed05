"""Benchmark: upserting 1% of the conn table (random keys, and keys clustered in a few file groups) vs delta-rs.

Issue: "upsert 1% of the rows (random keys, and keys clustered in a few file groups) of the 10M-row conn table;
time, file groups rewritten, and bytes written, against rewriting the whole table, and against delta-rs
``merge`` (``DeltaTable.merge(...).when_matched_update_all().when_not_matched_insert_all()``) on the same rows
in the same run. Target: <= 1.0x delta-rs time, and the clustered layout's skipping (files read for the conn
query shapes) unchanged after the upsert."

Tables (cached in ``<work>/layouts_<rows>_f<files>/``, shared with ``bench_clustering`` / ``bench_skipping``):
the Hudi table clustered along a curve (``--layout``, default ``hilbert_sample``: what a user upserts into after
clustering) and the same rows as a Delta table as written by ``write_deltalake`` (``delta_random``).

Batches (each written once to parquet, so both libraries read the same rows): ``--fraction`` (1%) of the rows,
every one an existing key with a new ``payload`` (the clustered columns keep their values, so the layout's
file ranges must not move):

* ``random_keys`` — ids drawn uniformly without replacement (seeded);
* ``clustered_keys`` — all ids of a few (seeded random) file groups of the clustered Hudi table.

Per batch, ALTERNATING ``--pairs`` (3) pairs: copy the Hudi table (untimed, flushed to disk) and time
``hudi_layout.write(batch, {operation: upsert})``; copy the Delta table (the same way) and time
``DeltaTable.merge(batch, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()``
(reading the batch included on both sides). Reported: every pair, the median of the pair ratios (ours / delta-rs),
file groups rewritten and bytes written (ours: the commit's new files; delta-rs: ``num_target_files_added`` and the
bytes of the added files). Once per batch: the naive full rewrite (read the table, replace the matching rows,
``mode="overwrite"``) and the tagging cost (``hudi_layout.spark.upsert_job`` metrics). After the first upsert of
each batch: every row exactly once (row count and the number of updated payloads), and files read by the
``bench_skipping`` query shapes before and after (must be equal).

Run: ``python -m bench.bench_upsert [--quick] [--rows N] [--files F] [--pairs P] [--fraction X]``.
Writes ``bench/results/upsert.md|json|png`` (``upsert_quick`` with --quick).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .bench_clustering import build_delta_random, delta_counts, is_built, mark_built, sample_points
from .bench_skipping import ensure_layouts, queries
from .common import bench_arg_parser, log, median, read_parquet, remove, rows_of, spark_session, timed
from .conn_data import conn_input
from .report import md_table, verdict, write_report

TIME_TARGET = 1.0
UPSERT = {"hoodie.datasource.write.operation": "upsert"}


def ensure_delta(input_path: str, root: Path, files: int, rows: int) -> Path:
    path = root / "delta_random"
    info = is_built(root, "delta_random")
    if info is None or info.get("records") != rows:
        log("writing the Delta table (not cached)")
        info = build_delta_random(input_path, path, files)
        mark_built(root, "delta_random", info)
    return path


def pick_keys(table_path: str, rows: int, fraction: float, kind: str, seed: int = 11) -> np.ndarray:
    """Ids of the batch: uniform, or every id of a few random file groups of ``table_path``."""
    import pyarrow.parquet as pq

    from hudi_layout import HudiTable

    rng = np.random.default_rng(seed)
    k = max(1, int(rows * fraction))
    if kind == "random_keys":
        return np.sort(rng.choice(rows, size=k, replace=False))
    slices = HudiTable(table_path).file_slices()
    out: list[np.ndarray] = []
    got = 0
    for i in rng.permutation(len(slices)):
        ids = pq.read_table(slices[i].base_file_path, columns=["id"]).column(0).to_numpy()
        out.append(ids)
        got += len(ids)
        if got >= k:
            break
    return np.sort(np.concatenate(out))


def write_batch(spark: Any, input_path: str, ids: np.ndarray, path: Path) -> int:
    """The batch rows (input rows of ``ids`` with a new payload) as one parquet folder; returns its rows."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    remove(path)
    keys = spark.createDataFrame(pa.table({"id": pa.array(ids, pa.int64())}).to_pandas())
    batch = read_parquet(spark, input_path).join(F.broadcast(keys), "id").withColumn(
        "payload", F.concat(F.lit("u"), F.substring("payload", 2, 49)))
    batch.coalesce(4).write.parquet(str(path))
    return int(spark.read.parquet(str(path)).count())


def files_read(path: str, qs: dict[str, dict[str, Any]]) -> dict[str, int]:
    from hudi_layout import plan_scan

    return {name: plan_scan(path, q["where"], with_row_counts=False).files_after_column_stats
            for name, q in qs.items()}


def _copy(src: Path, dest: Path) -> None:
    """A fresh copy of a table, untimed; its dirty pages are flushed first, so the kernel's write-back of the
    copy does not land in the timed run that follows (it did: both sides ran ~10% faster with the flush)."""
    remove(dest)
    shutil.copytree(src, dest)
    os.sync()


def run_ours(spark: Any, src: Path, dest: Path, batch_path: Path) -> dict[str, Any]:
    import hudi_layout as hl

    _copy(src, dest)
    s, r = timed(lambda: hl.write(spark.read.parquet(str(batch_path)), str(dest), UPSERT))
    return {"seconds": s, "file_groups_rewritten": r.file_groups_rewritten, "files_written": r.files_written,
            "bytes_written": r.bytes_written, "updated": r.records_updated, "inserted": r.records_inserted,
            "instant": r.instant_time, "candidate_files": r.candidate_files,
            "seconds_tagging": r.seconds_tagging}


def run_delta(src: Path, dest: Path, batch_path: Path) -> dict[str, Any]:
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    _copy(src, dest)

    def merge() -> dict[str, Any]:
        source = ds.dataset(str(batch_path), format="parquet").to_table()
        return (DeltaTable(str(dest)).merge(source=source, predicate="t.id = s.id", source_alias="s",
                                            target_alias="t")
                .when_matched_update_all().when_not_matched_insert_all().execute())

    files_before = set(_delta_files(dest))
    s, metrics = timed(merge)
    added = [f for f in _delta_files(dest) if f not in files_before]
    return {"seconds": s, "files_added": int(metrics.get("num_target_files_added", len(added))),
            "files_removed": int(metrics.get("num_target_files_removed", 0)),
            "bytes_written": sum((dest / f).stat().st_size for f in added),
            "updated": int(metrics.get("num_target_rows_updated", 0)),
            "inserted": int(metrics.get("num_target_rows_inserted", 0))}


def _delta_files(path: Path) -> list[str]:
    return [str(p.relative_to(path)) for p in path.rglob("*.parquet")]


def run_full_rewrite(spark: Any, src: Path, dest: Path, batch_path: Path) -> dict[str, Any]:
    """The naive alternative: read everything, replace the batch's rows, overwrite the whole table."""
    import hudi_layout as hl

    _copy(src, dest)

    def rewrite() -> Any:
        batch = spark.read.parquet(str(batch_path))
        current = hl.read(str(dest), spark=spark)
        merged = current.join(batch.select("id"), "id", "left_anti").unionByName(batch)
        return hl.write(merged, str(dest), {"hoodie.datasource.write.operation": "bulk_insert"}, mode="overwrite")

    s, r = timed(rewrite)
    return {"seconds": s, "files_written": r.files_written, "bytes_written": r.bytes_written}


def tagging_vs_table_size(spark: Any, table_path: str, batch_path: Path, repeat: int = 3) -> list[dict[str, Any]]:
    """The key-location step alone (Hudi's SIMPLE index as ``hudi_layout.spark.upsert_job.tag`` runs it: read the
    key column of the candidate files, keep the batch's broadcast keys), against the first quarter, half and
    all of the table's latest base files as candidates: its cost per stored row scanned. Median of ``repeat``."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from hudi_layout import HudiTable
    from hudi_layout.spark.upsert_job import broadcast_keys, summarise, tag
    from hudi_layout.spark.write_job import record_key_expr
    from hudi_layout.writer.base_file_writer import PARTITION_PATH_COLUMN, RECORD_KEY_COLUMN
    from hudi_layout.writer.merge import MERGE_TARGET_COLUMN

    slices = sorted(HudiTable(table_path).file_slices(), key=lambda s: s.base_file_name)
    batch = spark.read.parquet(str(batch_path)).select(
        record_key_expr(["id"]).alias(RECORD_KEY_COLUMN), F.lit("").alias(PARTITION_PATH_COLUMN)).cache()
    incoming = batch.count()
    _summary, pairs = summarise(batch)
    keys = broadcast_keys(spark, pairs) if pairs is not None else None
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    out = []
    try:
        tag(batch, slices[:1], parallelism, keys).count()  # untimed: the first join plans and warms up
        for share in (0.25, 0.5, 1.0):
            chosen = slices[:max(1, round(len(slices) * share))]
            stored = sum(pq.ParquetFile(s.base_file_path).metadata.num_rows for s in chosen)
            times, found = [], 0
            for _ in range(repeat):
                s, counts = timed(lambda c: tag(batch, c, parallelism, keys)
                                  .groupBy(MERGE_TARGET_COLUMN).count().collect(), chosen)
                times.append(s)
                found = sum(int(r["count"]) for r in counts)
            sec = median(times)
            out.append({"files": len(chosen), "stored_rows": stored, "seconds": sec, "keys_found": found,
                        "us_per_stored_row": sec / stored * 1e6})
            log(f"   tagging {incoming:,} keys against {len(chosen)} files ({stored:,} rows): {sec:.2f} s")
    finally:
        batch.unpersist()
        if keys is not None:
            keys.destroy()
    return out


def check_rows(spark: Any, path: Path, rows: int, batch_rows: int) -> dict[str, int]:
    from pyspark.sql import functions as F

    import hudi_layout as hl

    df = hl.read(str(path), spark=spark)
    got = df.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("id").alias("ids"),
                 F.sum(F.when(F.col("payload").startswith("u"), 1).otherwise(0)).alias("updated")).collect()[0]
    out = {"rows": int(got["n"]), "distinct_ids": int(got["ids"]), "updated_payloads": int(got["updated"])}
    if out["rows"] != rows or out["distinct_ids"] != rows or out["updated_payloads"] < batch_rows:
        raise RuntimeError(f"{path}: rows {out} after the upsert, expected {rows} rows / {batch_rows} updates")
    return out


def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.split("\n")[0], default_rows=10_000_000, quick_rows=200_000)
    p.add_argument("--files", type=int, default=None, help="files per table (default rows / 10,000)")
    p.add_argument("--layout", default="hilbert_sample", help="clustered Hudi layout to upsert into")
    p.add_argument("--fraction", type=float, default=0.01, help="batch size as a fraction of the rows")
    p.add_argument("--pairs", type=int, default=3, help="alternating (ours, delta-rs) pairs per batch")
    p.add_argument("--batches", default="random_keys,clustered_keys")
    p.add_argument("--no-full-rewrite", action="store_true")
    args = p.parse_args(argv)
    rows = rows_of(args)
    files = args.files or max(1, rows // 10_000)
    name = args.name or ("upsert_quick" if args.quick else "upsert")
    logging.getLogger("hudi_layout.services.write").setLevel(logging.INFO)
    spark = spark_session("bench_upsert", master=args.master)
    input_path = conn_input(spark, rows, args.work_dir)
    paths = ensure_layouts(spark, input_path, args.work_dir, rows, files, [args.layout], False)
    hudi_src = Path(paths[args.layout])
    root = hudi_src.parent
    delta_src = ensure_delta(input_path, root, files, rows)
    run_dir = Path(args.work_dir) / "upsert_runs"
    run_dir.mkdir(parents=True, exist_ok=True)
    qs = queries(sample_points(input_path, 2000))
    qs = {k: v for k, v in qs.items()}
    before_files = files_read(str(hudi_src), qs)
    from hudi_layout import HudiTable

    latest = HudiTable(str(hudi_src)).file_slices()  # replaced (clustered-away) files are not the table
    hudi_files = len(latest)
    hudi_bytes = sum(Path(s.base_file_path).stat().st_size for s in latest)
    results: dict[str, Any] = {}
    tagging: list[dict[str, Any]] = []
    # untimed warm-up: Python workers, JIT, a first upsert through every code path
    warm = run_dir / "warm"
    remove(warm)
    import hudi_layout as hl

    hl.write(spark.read.parquet(input_path).limit(2000), str(warm), {
        "hoodie.table.name": "warm", "hoodie.datasource.write.recordkey.field": "id"})
    hl.write(spark.read.parquet(input_path).limit(200), str(warm), UPSERT)
    remove(warm)
    for kind in [b.strip() for b in args.batches.split(",") if b.strip()]:
        ids = pick_keys(str(hudi_src), rows, args.fraction, kind)
        batch_path = run_dir / f"batch_{kind}"
        batch_rows = write_batch(spark, input_path, ids, batch_path)
        log(f"{kind}: {batch_rows:,} rows")
        pairs = []
        check: dict[str, Any] = {}
        for i in range(args.pairs):
            ours = run_ours(spark, hudi_src, run_dir / "hudi", batch_path)
            if i == 0:
                check = {"rows": check_rows(spark, run_dir / "hudi", rows, batch_rows),
                         "files_read_after": files_read(str(run_dir / "hudi"), qs)}
            delta = run_delta(delta_src, run_dir / "delta", batch_path)
            ratio = ours["seconds"] / delta["seconds"]
            log(f"   pair {i + 1}: ours {ours['seconds']:.2f} s ({ours['file_groups_rewritten']} groups), "
                f"delta-rs {delta['seconds']:.2f} s ({delta['files_added']} files) -> {ratio:.2f}x")
            pairs.append({"ours": ours, "delta": delta, "ratio": ratio})
        full = None if args.no_full_rewrite else run_full_rewrite(spark, hudi_src, run_dir / "full", batch_path)
        if kind == "random_keys":
            tagging = tagging_vs_table_size(spark, str(hudi_src), batch_path)
        results[kind] = {"batch_rows": batch_rows, "pairs": pairs, "median_ratio": median(p_["ratio"] for p_ in pairs),
                         "full_rewrite": full, **check}
    remove(run_dir)
    data = {"rows": rows, "files": files, "layout": args.layout, "fraction": args.fraction,
            "hudi_files": hudi_files, "hudi_bytes": hudi_bytes, "delta": delta_counts(delta_src),
            "files_read_before": before_files, "batches": results, "tagging_vs_table_size": tagging}
    sections = report_sections(data, qs)
    plots = [(f"{name}.png", plot(data))]
    md = write_report(name, "Upsert 1% of the conn table vs delta-rs merge", sections, data, plots)
    log(f"report: {md}")
    return 0


def report_sections(data: dict[str, Any], qs: dict[str, dict[str, Any]]) -> list[Any]:
    out: list[Any] = [(
        "Setup",
        f"{data['rows']:,} conn rows; Hudi table clustered with `{data['layout']}` ({data['hudi_files']} latest base "
        f"files, {data['hudi_bytes'] / 2**20:.0f} MiB); Delta table as written ({data['delta']['files']} files). "
        f"Each batch = {data['fraction']:.0%} of the rows, every row an existing key with a new `payload`.")]
    summary = []
    for kind, r in data["batches"].items():
        ours = [p["ours"] for p in r["pairs"]]
        delta = [p["delta"] for p in r["pairs"]]
        full = r.get("full_rewrite") or {}
        summary.append([kind, r["batch_rows"], median(o["seconds"] for o in ours), median(d["seconds"] for d in delta),
                        r["median_ratio"], verdict(r["median_ratio"], TIME_TARGET),
                        median(o["seconds_tagging"] for o in ours), ours[0]["candidate_files"],
                        ours[0]["file_groups_rewritten"],
                        ours[0]["bytes_written"] / 2**20, delta[0]["files_added"], delta[0]["bytes_written"] / 2**20,
                        full.get("seconds", math.nan), full.get("bytes_written", 0) / 2**20])
    out.append(("Summary (median of the alternating pairs)", md_table(
        ["batch", "rows", "ours s", "delta-rs s", "median ratio", "target <= 1.0", "ours: tagging s",
         "key columns read (files)", "file groups rewritten",
         "MiB written", "delta files added", "delta MiB written", "full rewrite s", "full rewrite MiB"], summary)))
    pair_rows = []
    for kind, r in data["batches"].items():
        for i, p_ in enumerate(r["pairs"]):
            pair_rows.append([kind, i + 1, p_["ours"]["seconds"], p_["delta"]["seconds"], p_["ratio"],
                              p_["ours"]["file_groups_rewritten"], p_["delta"]["files_added"]])
    out.append(("Every pair (run in this order: ours, delta-rs, ours, delta-rs, ...)", md_table(
        ["batch", "pair", "ours s", "delta-rs s", "ratio", "our file groups rewritten", "delta files added"],
        pair_rows)))
    skip_rows = []
    for q in qs:
        after = [data["batches"][k].get("files_read_after", {}).get(q) for k in data["batches"]]
        skip_rows.append([q, data["files_read_before"][q], *after,
                          "yes" if all(a == data["files_read_before"][q] for a in after) else "NO"])
    out.append(("Skipping after the upsert (files read by the conn query shapes, clustered table)", md_table(
        ["query", "before", *[f"after {k}" for k in data["batches"]], "unchanged"], skip_rows)))
    tagging = data.get("tagging_vs_table_size") or []
    if tagging:
        out.append(("Key location (SIMPLE index: the key column of the candidates against the batch keys) vs table "
                    "size",
                    "The tagging step of batches above 500,000 rows (`hudi_layout.spark.upsert_job.tag`, then a "
                    "shuffle to the file groups; smaller batches, as above, are broadcast and looked up inside the "
                    "merge job, so their \"ours: tagging s\" is only the driver's combine and candidate choice), "
                    "alone, median of 3, for the `random_keys` batch against the first quarter, half and all of "
                    "the latest base files as candidates. It is one scan of the stored key column (below 2M batch "
                    "keys: each task looks its stored keys up in the broadcast batch keys, only hits leave it; "
                    "above: a Spark join), so it grows with the rows scanned, not with the batch; column_stats "
                    "pruning on `_hoodie_record_key` removes candidates only when files are key-ordered, which a "
                    "curve-clustered table is not (every file stays a candidate above). At small sizes Spark's "
                    "per-job overhead (seconds on a loaded 2-core box) dominates these times; read the per-row "
                    "cost only from runs of 2M rows or more.\n\n" + md_table(
                        ["candidate files", "stored rows scanned", "seconds", "keys found", "µs per stored row"],
                        [[t["files"], t["stored_rows"], t["seconds"], t["keys_found"], t["us_per_stored_row"]]
                         for t in tagging])))
    checks = [[k, r.get("rows", {}).get("rows"), r.get("rows", {}).get("distinct_ids"),
               r.get("rows", {}).get("updated_payloads")] for k, r in data["batches"].items()]
    out.append(("Rows after the first upsert of each batch", md_table(
        ["batch", "rows", "distinct ids", "rows with the new payload"], checks)))
    return out


def plot(data: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(data["batches"])
    tagging = data.get("tagging_vs_table_size") or []
    panels = len(kinds) + (1 if tagging else 0)
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 3.8), squeeze=False)
    if tagging:
        ax = axes[0][-1]
        ax.plot([t["stored_rows"] for t in tagging], [t["seconds"] for t in tagging], "o-")
        ax.set_xlabel("stored rows scanned (candidate files), thousands")
        ax.xaxis.set_major_formatter(lambda v, _: f"{v / 1000:,.0f}")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.set_title("key location (key column scan) vs table size", fontsize=10)
    for ax, kind in zip(axes[0], kinds):
        pairs = data["batches"][kind]["pairs"]
        x = np.arange(len(pairs))
        ax.bar(x - 0.2, [p["ours"]["seconds"] for p in pairs], 0.4, label="hudi_layout upsert")
        ax.bar(x + 0.2, [p["delta"]["seconds"] for p in pairs], 0.4, label="delta-rs merge")
        full = data["batches"][kind].get("full_rewrite")
        if full:
            ax.axhline(full["seconds"], color="grey", linestyle="--", label="full rewrite")
        ax.set_xticks(x, [f"pair {i + 1}" for i in x])
        ax.set_ylabel("seconds")
        ax.set_title(f"upsert, {kind}", fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    sys.exit(main())
