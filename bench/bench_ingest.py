"""Benchmark: ingesting conn rows as one Hudi commit vs a plain ``df.write.parquet``.

Issue: "Ingest 10 million conn rows as one commit: wall time divided by a plain ``df.write.parquet`` of the
same rows in the same run. Target <= 1.5."

Variants (same cached conn parquet input, ``spark.read.parquet``, interleaved, median of ``--repeat``):

* ``parquet`` — ``df.write.mode("overwrite").parquet(out)`` (the baseline);
* ``hudi_mdt`` — ``hudi_layout.write`` (bulk_insert, record key ``id``, non-partitioned) with
  the metadata table on (default: ``files`` + ``column_stats`` for the meta fields and all data columns);
* ``hudi_no_mdt`` — the same with ``hoodie.metadata.enable=false``.

Each Hudi table is checked with hudi-rs (``HudiTableBuilder.from_base_uri(path).build()``: number of file
slices, and the row count from reading the snapshot unless ``--no-verify-read``).

Run: ``python -m bench.bench_ingest [--quick] [--rows N] [--repeat R]``.
Writes ``bench/results/ingest.md|json|png`` (``ingest_quick`` with --quick).
"""

from __future__ import annotations

import sys
from typing import Any

from .common import (
    bench_arg_parser,
    dir_size,
    fresh_dir,
    log,
    median,
    parquet_files,
    read_parquet,
    remove,
    rows_of,
    spark_session,
    timed,
    warmup_input,
)
from .conn_data import conn_input
from .report import md_table, verdict, write_report

VARIANTS = {
    "parquet": "plain df.write.parquet",
    "hudi_mdt": "hudi_layout ingest.write, metadata table (files + column_stats) on",
    "hudi_no_mdt": "hudi_layout ingest.write, hoodie.metadata.enable=false",
}
TARGET = 1.5


def hudi_options(mdt: bool) -> dict[str, str]:
    return {"hoodie.table.name": "conn", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.operation": "bulk_insert",
            "hoodie.metadata.enable": "true" if mdt else "false"}


def run_variant(spark: Any, input_path: str, variant: str, out: str) -> tuple[float, dict[str, Any]]:
    from hudi_layout.api import write

    remove(out)
    df = read_parquet(spark, input_path)
    if variant == "parquet":
        s, _ = timed(lambda: df.write.mode("overwrite").parquet(out))
        return s, {"files": len(parquet_files(out)), "bytes": dir_size(out)}
    s, res = timed(write, df, out, hudi_options(variant == "hudi_mdt"))
    mdt = f"{out}/.hoodie/metadata"
    return s, {"files": res.files_written, "records": res.records_written, "bytes": res.bytes_written,
               "instant": res.instant_time, "write_result_seconds": res.seconds,
               "mdt_bytes": dir_size(mdt), "column_stats_bytes": dir_size(f"{mdt}/column_stats")}


def verify_hudi_rs(path: str, rows: int, read: bool) -> dict[str, Any]:
    import os

    import hudi

    path = os.path.abspath(path)  # hudi-rs needs an absolute base URI
    s, table = timed(lambda: hudi.HudiTableBuilder.from_base_uri(path).build())
    slices = table.get_file_slices()
    out: dict[str, Any] = {"file_slices": len(slices), "build_seconds": s}
    if read:
        s, n = timed(lambda: sum(b.num_rows for b in table.read()))
        out.update(rows_read=n, read_seconds=s, rows_ok=n == rows)
    return out


def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.split("\n")[0], default_rows=10_000_000)
    p.add_argument("--no-verify-read", action="store_true", help="skip reading the tables back with hudi-rs")
    args = p.parse_args(argv)
    rows = rows_of(args)
    repeat = args.repeat or (2 if args.quick else 1)
    variants = list(VARIANTS)
    spark = spark_session("bench_ingest", master=args.master)
    input_path = conn_input(spark, rows, args.work_dir)
    work = fresh_dir(f"{args.work_dir}/ingest_out")
    log(f"input: {rows:,} rows at {input_path}; warm-up")
    run_variant(spark, warmup_input(input_path), "parquet", f"{work}/warmup")
    remove(f"{work}/warmup")
    from hudi_layout.api import write  # warm the Python workers (imports) with a tiny Hudi write

    write(read_parquet(spark, warmup_input(input_path, 1)).limit(1000), f"{work}/warmup", hudi_options(True))
    remove(f"{work}/warmup")
    times: dict[str, list[float]] = {v: [] for v in variants}
    info: dict[str, Any] = {}
    for r in range(repeat):
        order = variants if r % 2 == 0 else list(reversed(variants))
        for v in order:
            out = f"{work}/{v}"
            s, meta = run_variant(spark, input_path, v, out)
            times[v].append(s)
            log(f"rep {r}: {v}: {s:.1f} s {meta}")
            if v != "parquet" and v not in info:
                meta["hudi_rs"] = verify_hudi_rs(out, rows, not args.no_verify_read)
                log(f"   hudi-rs: {meta['hudi_rs']}")
            info.setdefault(v, meta)
            if not args.keep:
                remove(out)
    base = median(times["parquet"])
    results = {v: {"label": VARIANTS[v], "seconds": times[v], "median_seconds": median(times[v]),
                   "ratio_vs_parquet": median(times[v]) / base,
                   "ratio_per_rep": [t / b for t, b in zip(times[v], times["parquet"])], "output": info[v]}
               for v in variants}
    data = {"rows": rows, "repeat": repeat, "input": input_path, "target": TARGET, "results": results}
    table_rows = []
    for v in variants:
        r = results[v]
        o = r["output"]
        table_rows.append([v, r["label"], round(r["median_seconds"], 1), round(r["ratio_vs_parquet"], 2),
                           "" if v == "parquet" else f"<= {TARGET}",
                           "" if v == "parquet" else verdict(r["ratio_vs_parquet"], TARGET),
                           o["files"], round(o["bytes"] / 2**20, 1)])
    checks = []
    for v in variants:
        h = results[v]["output"].get("hudi_rs")
        if h:
            checks.append([v, h["file_slices"], h.get("rows_read", "not read"), h.get("rows_ok", ""),
                           round(h.get("read_seconds", float("nan")), 2),
                           round(results[v]["output"].get("column_stats_bytes", 0) / 2**20, 2)])
    sections = [
        ("Setup", f"{rows:,} conn rows from the cached parquet input, written as one commit (bulk_insert, "
                  f"record key `id`, non-partitioned, default max file size) vs a plain `df.write.parquet` of "
                  f"the same DataFrame. One untimed warm-up write first; {repeat} repetition(s), "
                  f"interleaved; median reported."),
        ("Wall time vs plain parquet (same run)",
         md_table(["variant", "what", "median s", "ratio", "target", "verdict", "files", "MiB"], table_rows,
                  "llrrllrr")),
        ("hudi-rs check", md_table(["variant", "file slices", "rows read", "rows ok", "read s",
                                    "column_stats MiB"], checks)),
    ]
    plots = []
    name = args.name or ("ingest_quick" if args.quick else "ingest")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.2))
        ax.bar(variants, [results[v]["ratio_vs_parquet"] for v in variants], color=["grey", "tab:blue",
                                                                                     "tab:cyan"])
        ax.axhline(TARGET, color="red", linestyle="--", label=f"target {TARGET}")
        ax.set_ylabel("time / plain parquet write")
        ax.set_title(f"Ingest {rows:,} conn rows as one commit")
        ax.legend()
        plots = [(f"{name}.png", fig)]
    except ImportError:
        pass
    md = write_report(name, "Ingest: one Hudi commit vs plain parquet write", sections, data, plots)
    log(f"report: {md}")
    if not args.keep:
        remove(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
