"""Benchmark: data skipping with the column_stats index on four layouts of the conn table.

Issue: "The conn data (10 million rows, ~1000 files) in four layouts: as ingested (random), linear, z-order,
Hilbert. Query shapes: ``src_ip LIKE '157.%'``, ``dst_ip LIKE '216.%'``, both together,
``src_port BETWEEN 1000 AND 1999``, ``dst_port = 443``, ``src_ip LIKE '157.%' AND dst_port < 1024``, and a
box bounding two clustered columns to about 1% of their range each. For each: files read, the ideal minimum
``ceil(matching rows / rows per file)``, and Spark wall time with and without skipping (median of 3, same
run). Targets on the z-order or Hilbert layout: at least 90% of files skipped for the two-column 1% boxes
and at least 10x faster than the random layout for them."

Tables: the ones ``bench_clustering`` leaves in ``<work>/layouts_<rows>_f<files>/`` (built here with the
same code when missing). Two 1% boxes: ports (``src_port BETWEEN a AND a+655 AND dst_port BETWEEN b AND
b+655``: 1% of 0..65535 each, ~0.01% of rows) and IPs (string bounds from quantiles of 20,000 sampled rows
so that each of src_ip / dst_ip covers ~1% of rows).

Per query and layout: ``hudi_layout.explain`` (files total / after column stats / rows in candidate files),
the scan planning time of the read path (``plan_scan(..., with_row_counts=False)``; cold = the first plan of a
table in the process with an empty metadata cache, warm = the same query planned again), and the wall time
of ``hudi_layout.read(path, where, spark=spark, skipping=...).count()`` (planning included), skipping on and off,
median of ``--repeat`` (3) repetitions, interleaved over layouts and modes. Counts with
and without skipping must be equal (the run fails otherwise). "x vs random" = the random layout's time with
skipping divided by this layout's time with skipping (the as-ingested table with its index is what a user
has before clustering).

Run: ``python -m bench.bench_skipping [--quick] [--rows N] [--files F] [--layouts a,b] [--repeat R]``.
Writes ``bench/results/skipping.md|json|png`` (``skipping_quick`` with --quick).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from .bench_clustering import (
    LABELS,
    LAYOUTS,
    ensure_random,
    is_built,
    layouts_dir,
    mark_built,
    run_cluster,
    sample_points,
    unmark,
)
from .common import bench_arg_parser, log, median, rows_of, spark_session, timed
from .conn_data import conn_input
from .report import md_table, verdict, write_report

DEFAULT_LAYOUTS = ["random", "linear", "zorder_direct", "hilbert_sample"]
SKIP_TARGET = 0.90   # fraction of files skipped, 1% boxes, z-order / Hilbert
SPEED_TARGET = 10.0  # random-layout time / curve-layout time, 1% boxes
CURVE_LAYOUTS = ("zorder_direct", "zorder_sample", "hilbert_sample")


def quantile_box(points: list[dict[str, Any]], col: str, q: float, width: float = 0.01) -> tuple[str, str]:
    vals = sorted(p[col] for p in points)
    n = len(vals)
    lo = vals[int(q * n)]
    hi = vals[min(n - 1, int((q + width) * n))]
    return lo, hi


def queries(points: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    a, b = 20000, 40000
    s_lo, s_hi = quantile_box(points, "src_ip", 0.40)
    d_lo, d_hi = quantile_box(points, "dst_ip", 0.70)
    return {
        "src_ip_like": {"where": "src_ip LIKE '157.%'"},
        "dst_ip_like": {"where": "dst_ip LIKE '216.%'"},
        "both_ip_like": {"where": "src_ip LIKE '157.%' AND dst_ip LIKE '216.%'"},
        "src_port_range": {"where": "src_port BETWEEN 1000 AND 1999"},
        "dst_port_eq": {"where": "dst_port = 443"},
        "src_ip_like_dst_port": {"where": "src_ip LIKE '157.%' AND dst_port < 1024"},
        "port_box_1pct": {"where": f"src_port BETWEEN {a} AND {a + 655} AND dst_port BETWEEN {b} AND {b + 655}",
                          "box": True},
        "ip_box_1pct": {"where": f"src_ip >= '{s_lo}' AND src_ip < '{s_hi}' AND dst_ip >= '{d_lo}' "
                                 f"AND dst_ip < '{d_hi}'", "box": True},
    }


def planning_times(paths: dict[str, str], layouts: list[str], qs: dict[str, dict[str, Any]]
                   ) -> dict[str, dict[str, Any]]:
    """Scan planning seconds of the read path per layout: cold (first plan of the table in this process, empty
    metadata cache) and warm (each query planned a second time; median and max over queries)."""
    from hudi_layout.scan.plan import plan_scan
    from hudi_layout.table import cache

    plan_scan(paths[layouts[0]], next(iter(qs.values()))["where"])  # one-time imports are not "cold planning"
    out: dict[str, dict[str, Any]] = {}
    for layout in layouts:
        cache.clear()
        first = True
        cold = 0.0
        warm: list[float] = []
        for q in qs.values():
            s1 = plan_scan(paths[layout], q["where"], with_row_counts=False).seconds
            if first:
                cold, first = s1, False
            warm.append(plan_scan(paths[layout], q["where"], with_row_counts=False).seconds)
        out[layout] = {"cold_seconds": cold, "warm_seconds_median": median(warm), "warm_seconds_max": max(warm)}
    return out


def ensure_layouts(spark: Any, input_path: str, work_dir: str, rows: int, files: int, layouts: list[str],
                   rebuild: bool) -> dict[str, str]:
    root = layouts_dir(work_dir, rows, files)
    root.mkdir(parents=True, exist_ok=True)
    ensure_random(spark, input_path, root, files, rows, rebuild)
    out = {"random": str(root / "random")}
    for layout in layouts:
        if layout == "random":
            continue
        info = None if rebuild else is_built(root, layout)
        if info is None or info.get("records") != rows:
            unmark(root, layout)
            log(f"clustering {layout} (not cached)")
            r = run_cluster(spark, root / "random", root / layout, layout, files)
            mark_built(root, layout, {k: v for k, v in r.items() if k != "options"} | {"records": rows})
        else:
            log(f"reusing {layout} ({info.get('files_out')} files)")
        out[layout] = str(root / layout)
    return out


def main(argv: list[str] | None = None) -> int:
    import hudi_layout as hl

    p = bench_arg_parser(__doc__.split("\n")[0], default_rows=10_000_000, quick_rows=500_000)
    p.add_argument("--files", type=int, default=None, help="files per table (default rows / 10,000)")
    p.add_argument("--layouts", default=",".join(DEFAULT_LAYOUTS), help=f"comma list of {', '.join(LAYOUTS)}")
    p.add_argument("--queries", default=None, help="comma list of query names (default all)")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached tables")
    args = p.parse_args(argv)
    rows = rows_of(args)
    files = args.files or max(1, rows // 10_000)
    repeat = args.repeat or 3
    layouts = [name.strip() for name in args.layouts.split(",") if name.strip()]
    if "random" not in layouts:
        layouts.insert(0, "random")
    for layout_name in layouts:
        if layout_name not in LAYOUTS:
            p.error(f"unknown layout {layout_name!r}")
    name = getattr(args, "name", None) or ("skipping_quick" if args.quick else "skipping")

    spark = spark_session("bench_skipping", master=args.master)
    input_path = conn_input(spark, rows, args.work_dir)
    paths = ensure_layouts(spark, input_path, args.work_dir, rows, files, layouts, args.rebuild)
    points = sample_points(input_path, 20_000, seed=11)
    qs = queries(points)
    if args.queries:
        keep = [q.strip() for q in args.queries.split(",")]
        qs = {k: v for k, v in qs.items() if k in keep}

    planning = planning_times(paths, layouts, qs)
    # plans (no data read) and matching rows
    plans: dict[str, dict[str, Any]] = {}
    for qn, q in qs.items():
        for layout in layouts:
            pl = hl.explain(paths[layout], q["where"])
            plans[f"{qn}/{layout}"] = {"files_total": pl.files_total, "files_read": pl.files_read,
                                       "rows_in_candidate_files": pl.rows_in_candidate_files,
                                       "rows_total": pl.rows_total, "plan_seconds": pl.seconds}
    # warm-up (untimed): one read per layout per mode
    q0 = next(iter(qs.values()))["where"]
    for layout in layouts:
        for skip in (True, False):
            hl.read(paths[layout], q0, spark=spark, skipping=skip).count()

    times: dict[str, list[float]] = {}
    counts: dict[str, set[int]] = {}
    for qn, q in qs.items():
        for r in range(repeat):
            order = layouts if r % 2 == 0 else list(reversed(layouts))
            for layout in order:
                for skip in ((True, False) if r % 2 == 0 else (False, True)):
                    key = f"{qn}/{layout}/{'skip' if skip else 'full'}"
                    s, n = timed(lambda layout=layout, where=q["where"], skip=skip:
                                 hl.read(paths[layout], where, spark=spark, skipping=skip).count())
                    times.setdefault(key, []).append(s)
                    counts.setdefault(qn, set()).add(int(n))
        if len(counts[qn]) != 1:
            raise AssertionError(f"WRONG RESULT: query {qn!r} ({q['where']}) counted {sorted(counts[qn])} rows "
                                 f"across layouts / skipping on and off")
        log(f"{qn}: {next(iter(counts[qn])):,} rows; " + ", ".join(
            f"{name} {plans[f'{qn}/{name}']['files_read']}f {median(times[f'{qn}/{name}/skip']):.2f}s"
            f"/{median(times[f'{qn}/{name}/full']):.2f}s" for name in layouts))

    results: dict[str, Any] = {}
    table_rows = []
    targets: list[dict[str, Any]] = []
    for qn, q in qs.items():
        matching = next(iter(counts[qn]))
        rand_skip = median(times[f"{qn}/random/skip"])
        results[qn] = {"where": q["where"], "matching_rows": matching, "layouts": {}}
        for layout in layouts:
            pl = plans[f"{qn}/{layout}"]
            rows_per_file = (pl["rows_total"] or rows) / max(pl["files_total"], 1)
            ideal = math.ceil(matching / rows_per_file) if matching else 0
            skipped = 1 - pl["files_read"] / max(pl["files_total"], 1)
            s_skip = median(times[f"{qn}/{layout}/skip"])
            s_full = median(times[f"{qn}/{layout}/full"])
            res = {**pl, "ideal_files": ideal, "skipped_fraction": skipped, "seconds_skipping": s_skip,
                   "seconds_no_skipping": s_full, "times_skipping": times[f"{qn}/{layout}/skip"],
                   "times_no_skipping": times[f"{qn}/{layout}/full"], "speedup_vs_no_skipping": s_full / s_skip,
                   "speedup_vs_random": rand_skip / s_skip}
            results[qn]["layouts"][layout] = res
            table_rows.append([qn, layout, matching, pl["files_read"], pl["files_total"], ideal,
                               f"{skipped:.1%}", round(s_skip, 2), round(s_full, 2),
                               round(s_full / s_skip, 1), round(rand_skip / s_skip, 1)])
            if q.get("box") and layout in CURVE_LAYOUTS:
                targets.append({"name": f"{qn} on {layout}: files skipped", "value": f"{skipped:.1%}",
                                "target": f">= {SKIP_TARGET:.0%}",
                                "verdict": verdict(skipped, SKIP_TARGET, lower_is_better=False)})
                targets.append({"name": f"{qn} on {layout}: x faster than random",
                                "value": round(rand_skip / s_skip, 1),
                                "target": f">= {SPEED_TARGET:g}",
                                "verdict": verdict(rand_skip / s_skip, SPEED_TARGET, lower_is_better=False)})

    data = {"rows": rows, "files_target": files, "repeat": repeat, "layouts": layouts, "paths": paths,
            "queries": {k: v["where"] for k, v in qs.items()}, "results": results, "targets": targets,
            "planning": planning}
    files_tbl = []
    for qn in qs:
        r = results[qn]
        files_tbl.append([qn, r["matching_rows"], r["layouts"]["random"]["ideal_files"],
                          *[r["layouts"][name]["files_read"] for name in layouts]])
    sections = [
        ("Setup",
         f"{rows:,} conn rows, ~{files} files per layout (tables from `bench_clustering`: "
         + ", ".join(f"{name} = {LABELS[name]}" for name in layouts)
         + f"). Time = wall clock of `hudi_layout.read(path, where, spark=spark, skipping=...).count()` (scan "
           f"planning with the column_stats index included), median of {repeat}, layouts and skipping on/off "
           f"interleaved in one run, after an untimed warm-up read per layout. Files read = "
           f"`explain(path, where).files_read`; ideal = ceil(matching rows / rows per file). "
           f"Counts with and without skipping were checked equal on every layout. 'x vs random' = random "
           f"layout's time (with its index) / this layout's time. Scan planning uses hudi_layout's in-process "
           f"metadata cache (decoded commit metadata, latest file slices, schema, loaded column_stats arrays; "
           f"`hudi_layout/table/cache.py`), validated on every query by cheap listings: the data and MDT "
           f"timeline instant file names, both `hoodie.properties`, name + size + mtime of every file in the "
           f"MDT `column_stats` and `files` partitions, and the mtime of every partition directory; a new commit "
           f"or MDT deltacommit invalidates it. The timed reads run warm (the warm-up read fills the cache); "
           f"cold planning (first query on a table in the process) is shown separately."),
        ("Queries", md_table(["query", "where"], [[k, f"`{v['where']}`"] for k, v in qs.items()], "ll")),
        ("Targets (1% boxes, z-order / Hilbert layouts)",
         md_table(["measure", "value", "target", "verdict"],
                  [[t["name"], t["value"], t["target"], t["verdict"]] for t in targets], "lrll")),
        ("Files read per layout", md_table(["query", "matching rows", "ideal files", *layouts], files_tbl)),
        ("Scan planning time per layout (read path, no row counts)",
         md_table(["layout", "cold ms (first query)", "warm ms (median over queries)", "warm ms (max)"],
                  [[lay, round(planning[lay]["cold_seconds"] * 1000, 1),
                    round(planning[lay]["warm_seconds_median"] * 1000, 1),
                    round(planning[lay]["warm_seconds_max"] * 1000, 1)] for lay in layouts], "lrrr")),
        ("All results",
         md_table(["query", "layout", "rows", "files read", "of", "ideal", "skipped", "s skipping",
                   "s no skipping", "x vs no skipping", "x vs random"], table_rows, "llrrrrrrrrr")),
    ]
    plots = []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(13, 4))
        x = np.arange(len(qs))
        w = 0.8 / len(layouts)
        for i, layout_name in enumerate(layouts):
            axes[0].bar(x + i * w, [results[q]["layouts"][layout_name]["files_read"] for q in qs], w,
                        label=layout_name)
            axes[1].bar(x + i * w, [results[q]["layouts"][layout_name]["seconds_skipping"] for q in qs], w,
                        label=layout_name)
        axes[0].plot(x + w * (len(layouts) - 1) / 2, [results[q]["layouts"]["random"]["ideal_files"] for q in qs],
                     "k_", markersize=18, label="ideal")
        for ax, yl in zip(axes, ["files read (log)", "seconds, skipping on (median)"]):
            ax.set_xticks(x + w * (len(layouts) - 1) / 2, list(qs), rotation=30, ha="right", fontsize=7)
            ax.set_ylabel(yl)
            ax.legend(fontsize=7)
        axes[0].set_yscale("log")
        fig.suptitle(f"Data skipping, {rows:,} rows")
        fig.tight_layout()
        plots = [(f"{name}.png", fig)]
    except ImportError:
        pass
    md = write_report(name, "Data skipping on four layouts", sections, data, plots)
    log(f"report: {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
