"""Benchmark: cost and quality of curve layouts (z-order / Hilbert keys) vs a plain range sort.

Issue: "On 10 million rows of the conn data set: time of 'curve key + range partition into 1000 parts +
sort within + write parquet' for z-order direct, z-order sample and Hilbert sample, divided by the time of a
plain ``repartitionByRange(1000, cols) + sortWithinPartitions(cols) + write`` of the same rows, in the same
run. Targets: z-order direct <= 1.3, Hilbert sample <= 1.6."

Curve columns: src_ip, dst_ip, src_port, dst_port. Every variant reads the same cached conn parquet input
(``bench.conn_data.conn_input``). For each output we also read the parquet footers (metadata only) and
report, per column, the average number of files whose [min, max] contains a random point (points = a
sample of the input rows; lower is better; the ideal is ~1), and the same for a 4-column point (the number
of files a point lookup on all four columns must read). ``zorder_direct_hudi`` is Hudi's plain DIRECT
reduction (``hudi_direct=True``: no min/max scaling) to show what scaling changes.

Run: ``python -m bench.bench_curves [--quick] [--rows N] [--parts 1000] [--repeat R] [--variants a,b]``.
Writes ``bench/results/curves.md|json|png`` (``curves_quick`` with --quick).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .common import (
    bench_arg_parser,
    footer_minmax,
    fresh_dir,
    log,
    median,
    overlap_counts,
    read_parquet,
    remove,
    rows_of,
    spark_session,
    timed,
    warmup_input,
)
from .conn_data import CURVE_COLUMNS, conn_input
from .report import md_table, verdict, write_report

VARIANTS: dict[str, dict[str, Any]] = {
    "baseline": {"label": "plain repartitionByRange + sortWithinPartitions (4 cols)"},
    "zorder_direct": {"curve": "zorder", "method": "direct", "label": "z-order direct (min/max scaled)"},
    "zorder_direct_hudi": {"curve": "zorder", "method": "direct", "hudi_direct": True,
                           "label": "z-order direct, Hudi plain (unscaled)"},
    "zorder_sample": {"curve": "zorder", "method": "sample", "label": "z-order sample"},
    "hilbert_sample": {"curve": "hilbert", "method": "sample", "label": "Hilbert sample"},
    "hilbert_direct": {"curve": "hilbert", "method": "direct", "label": "Hilbert direct (min/max scaled)"},
}
DEFAULT_VARIANTS = ["baseline", "zorder_direct", "zorder_direct_hudi", "zorder_sample", "hilbert_sample"]
TARGETS = {"zorder_direct": 1.3, "hilbert_sample": 1.6}


def layout_df(df: Any, variant: str, parts: int, columns=CURVE_COLUMNS) -> Any:
    """The DataFrame a variant writes (lazy): range partition into ``parts`` + sort within partitions."""
    from hudi_layout.spark.curve_key import KEY_COLUMN, with_curve_key

    v = VARIANTS[variant]
    if "curve" not in v:
        return df.repartitionByRange(parts, *columns).sortWithinPartitions(*columns)
    keyed = with_curve_key(df, list(columns), curve=v["curve"], method=v["method"],
                           hudi_direct=v.get("hudi_direct", False))
    return keyed.repartitionByRange(parts, KEY_COLUMN).sortWithinPartitions(KEY_COLUMN).drop(KEY_COLUMN)


def run_variant(spark: Any, input_path: str, variant: str, parts: int, out: str) -> float:
    remove(out)

    def go() -> None:
        df = read_parquet(spark, input_path)
        layout_df(df, variant, parts).write.mode("overwrite").parquet(out)

    seconds, _ = timed(go)
    return seconds


def sample_points(spark: Any, input_path: str, n: int, seed: int = 7) -> list[dict[str, Any]]:
    df = read_parquet(spark, input_path)
    total = df.count()
    frac = min(1.0, 3.0 * n / max(total, 1))
    rows = df.select(*CURVE_COLUMNS).sample(False, frac, seed).limit(n).collect()
    return [r.asDict() for r in rows]


def overlap_quality(out: str, points: list[dict[str, Any]]) -> dict[str, Any]:
    stats = footer_minmax(out, CURVE_COLUMNS)
    n_files = len(stats[CURVE_COLUMNS[0]][0])
    res: dict[str, Any] = {"files": n_files, "per_column": {}}
    box = np.ones((n_files, len(points)), bool)
    for c in CURVE_COLUMNS:
        mins, maxs = stats[c]
        pts = [p[c] for p in points]
        res["per_column"][c] = float(overlap_counts(mins, maxs, pts).mean())
        mn = np.array(mins, dtype=object)[:, None]
        mx = np.array(maxs, dtype=object)[:, None]
        pv = np.array(pts, dtype=object)[None, :]
        box &= (mn <= pv) & (pv <= mx)
    res["all_4_columns"] = float(box.sum(axis=0).mean())
    return res


def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.split("\n")[0], default_rows=10_000_000)
    p.add_argument("--parts", type=int, default=None, help="range partitions / output files (default 1000; "
                   "100 with --quick)")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                   help=f"comma list of {', '.join(VARIANTS)}")
    p.add_argument("--points", type=int, default=1000, help="random points for the overlap metric")
    args = p.parse_args(argv)
    rows = rows_of(args)
    parts = args.parts or (100 if args.quick else 1000)
    repeat = args.repeat or (2 if args.quick else 1)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if "baseline" not in variants:
        variants.insert(0, "baseline")
    spark = spark_session("bench_curves", master=args.master)
    log(f"input: {rows:,} conn rows")
    input_path = conn_input(spark, rows, args.work_dir)
    work = fresh_dir(f"{args.work_dir}/curves_out")
    times: dict[str, list[float]] = {v: [] for v in variants}
    quality: dict[str, Any] = {}
    points = sample_points(spark, input_path, args.points)
    # warm-up (JVM JIT, Python workers), untimed
    warm_input = warmup_input(input_path)
    run_variant(spark, warm_input, "baseline", min(parts, 10), f"{work}/warmup")
    run_variant(spark, warm_input, "zorder_direct", min(parts, 10), f"{work}/warmup")
    remove(f"{work}/warmup")
    # interleave variants so that machine noise hits all of them alike
    for r in range(repeat):
        order = variants if r % 2 == 0 else list(reversed(variants))
        for v in order:
            out = f"{work}/{v}"
            s = run_variant(spark, input_path, v, parts, out)
            times[v].append(s)
            log(f"rep {r}: {v}: {s:.1f} s")
            if r == repeat - 1 or v not in quality:
                quality[v] = overlap_quality(out, points)
                log(f"   files={quality[v]['files']} overlap={quality[v]['per_column']} "
                    f"4-col={quality[v]['all_4_columns']:.1f}")
            if not args.keep:
                remove(out)
    base = median(times["baseline"])
    results = {v: {"label": VARIANTS[v]["label"], "seconds": times[v], "median_seconds": median(times[v]),
                   "ratio_vs_baseline": median(times[v]) / base,
                   "ratio_per_rep": [t / b for t, b in zip(times[v], times["baseline"])],
                   "quality": quality[v]} for v in variants}
    data = {"rows": rows, "parts": parts, "repeat": repeat, "columns": list(CURVE_COLUMNS),
            "points": len(points), "input": input_path, "targets": TARGETS, "results": results}

    time_rows = []
    for v in variants:
        r = results[v]
        tgt = TARGETS.get(v)
        time_rows.append([v, r["label"], round(r["median_seconds"], 1), round(r["ratio_vs_baseline"], 2),
                          f"<= {tgt}" if tgt else "", verdict(r["ratio_vs_baseline"], tgt) if tgt else ""])
    qual_rows = []
    for v in variants:
        q = results[v]["quality"]
        qual_rows.append([v, q["files"], *[round(q["per_column"][c], 1) for c in CURVE_COLUMNS],
                          round(q["all_4_columns"], 2)])
    sections = [
        ("Setup", f"{rows:,} conn rows (cached parquet input, read with `spark.read.parquet`), range "
                  f"partitioned into {parts} parts on the curve key (or on the 4 columns for the baseline), "
                  f"sorted within partitions, written as parquet. Timing = whole job incl. the curve-parameter "
                  f"job (min/max aggregate or sample). {repeat} repetition(s), interleaved; median reported. "
                  f"Curve columns: {', '.join(CURVE_COLUMNS)}."),
        ("Time vs plain range sort (same run)",
         md_table(["variant", "what", "median s", "ratio", "target", "verdict"], time_rows, "llrrll")),
        ("Layout quality: files overlapping a random point",
         f"Average over {len(points)} points sampled from the input of the number of output files whose "
         f"footer [min, max] of the column contains the point (lower is better; ~1 is ideal for a column "
         f"the data is sorted by, ~#files means no skipping). Last column: files whose box contains the "
         f"4-column point (a weak metric here: src_ip alone nearly identifies a row, so a sort by src_ip "
         f"first already gives ~1).\n\n"
         + md_table(["variant", "files", *CURVE_COLUMNS, "all 4 columns"], qual_rows)),
    ]
    plots = []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.5))
        ratios = [results[v]["ratio_vs_baseline"] for v in variants]
        ax.bar(variants, ratios, color=["grey"] + ["tab:blue"] * (len(variants) - 1))
        for v, t in TARGETS.items():
            if v in variants:
                i = variants.index(v)
                ax.hlines(t, i - 0.4, i + 0.4, colors="red", linestyles="--")
        ax.set_ylabel("time / plain range sort")
        ax.set_title(f"Curve layout cost, {rows:,} rows, {parts} parts (red: target)")
        ax.tick_params(axis="x", rotation=20)
        fig2, ax2 = plt.subplots(figsize=(8, 3.5))
        w = 0.8 / len(variants)
        x = np.arange(len(CURVE_COLUMNS) + 1)
        for i, v in enumerate(variants):
            q = results[v]["quality"]
            ax2.bar(x + i * w, [q["per_column"][c] for c in CURVE_COLUMNS] + [q["all_4_columns"]], w, label=v)
        ax2.set_xticks(x + w * (len(variants) - 1) / 2, [*CURVE_COLUMNS, "all 4"])
        ax2.set_yscale("log")
        ax2.set_ylabel("avg files overlapping a point")
        ax2.legend(fontsize=7)
        name = args.name or ("curves_quick" if args.quick else "curves")
        plots = [(f"{name}_time.png", fig), (f"{name}_overlap.png", fig2)]
    except ImportError:
        name = args.name or ("curves_quick" if args.quick else "curves")
    md = write_report(name, "Curve layouts: cost vs plain range sort, and file overlap", sections, data, plots)
    log(f"report: {md}")
    if not args.keep:
        remove(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
