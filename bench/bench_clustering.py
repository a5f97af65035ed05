"""Benchmark: Hudi clustering (linear / z-order / Hilbert) vs delta-rs z-order, time and file overlap.

Issue: "10 million conn rows in about 1000 files: clustering wall time for linear, z-order direct, z-order
sample and Hilbert sample, and per layout the average number of files whose [min, max] overlaps a random
point of each clustered column (lower is better). Compare with delta-rs (``DeltaTable.optimize.z_order``)
on the same rows and columns in the same run: time ratio and the same overlap measure. Target: files whose
port ranges shrink as the curve promises, and clustering wall time no worse than 1.0x delta-rs."

Steps (all in one process, one run):

1. the "as ingested" (random) Hudi table: ``hudi_layout.write`` of the cached conn parquet input with
   ``hoodie.parquet.max.file.size`` = estimated table bytes / ``--files`` (about 1000 files for 10M rows);
   built once into ``<work>/layouts_<rows>_f<files>/random`` and reused (also by ``bench_skipping``);
2. the same rows as a Delta table (``deltalake.write_deltalake`` from a pyarrow dataset reader, with
   ``target_file_size`` = input bytes / files), also cached;
3. an untimed warm-up clustering of a small table (JIT, Python workers);
4. for every layout: copy the random table, ``hudi_layout.cluster(copy, CURVE_COLUMNS, spark=spark, strategy=...,
   method=..., options=...)`` timed (wall clock around the call) with
   ``hoodie.clustering.plan.strategy.target.file.max.bytes`` = table bytes / files,
   ``...max.bytes.per.group`` = 100 GB (one group) and ``hoodie.parquet.max.file.size`` = 2 x target (so
   one range partition = one file); delta-rs: copy the Delta table and time
   ``DeltaTable(copy).optimize.z_order(CURVE_COLUMNS, target_size=delta bytes / files)``. Hilbert sample and
   delta-rs alternate (``--pairs``, default 3: ours, delta-rs, ours, delta-rs, ...); the reported ratio is the
   median of the pair ratios, every pair is listed, with the seconds per phase of each of our runs;
5. per-file ranges: the Hudi column_stats index (``ColumnStatsIndex.load_column``, live file slices only),
   the Delta add actions' stats (``get_add_actions(flatten=True)``); points: ``--points`` rows sampled from
   the input; for each column the mean number of files whose [min, max] contains a point (strings compared
   as strings), and the same for the (src_port, dst_port) pair.

The clustered tables stay in ``<work>/layouts_<rows>_f<files>/<layout>`` (``bench_skipping`` reuses them;
``--rebuild`` rebuilds everything).

Run: ``python -m bench.bench_clustering [--quick] [--rows N] [--files F] [--layouts a,b] [--rebuild]``.
Writes ``bench/results/clustering.md|json|png`` (``clustering_quick`` with --quick).
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .common import (
    bench_arg_parser,
    box_overlap,
    dir_size,
    log,
    median,
    overlap_counts,
    parquet_files,
    read_parquet,
    remove,
    rows_of,
    spark_session,
    timed,
    warmup_input,
)
from .conn_data import CURVE_COLUMNS, conn_input
from .report import md_table, verdict, write_report

#: layout -> (strategy, method); "random" is the as-ingested table
LAYOUTS: dict[str, tuple[str, str] | None] = {
    "random": None,
    "linear": ("linear", "direct"),
    "zorder_direct": ("z-order", "direct"),
    "zorder_sample": ("z-order", "sample"),
    "hilbert_sample": ("hilbert", "sample"),
}
LABELS = {
    "random": "as ingested (no clustering)",
    "linear": "linear (sort by the 4 columns)",
    "zorder_direct": "z-order direct (min/max scaled)",
    "zorder_sample": "z-order sample",
    "hilbert_sample": "Hilbert sample",
    "delta_zorder": "delta-rs optimize.z_order",
    "delta_random": "delta-rs as written (no optimize)",
}
CURVE_LAYOUTS = ("zorder_direct", "zorder_sample", "hilbert_sample")
TIME_TARGET = 1.0  # clustering wall time / delta-rs z-order wall time
#: the layout timed in alternating pairs with delta-rs, and its target (issue #15)
PAIRED_LAYOUT = "hilbert_sample"
PAIRED_TARGET = 0.8
#: the port-range target: files overlapping a port point <= this factor x the balanced 4-d curve ideal
#: files^(3/4) (a 4-d curve over F files gives each column ~F^(1/4) distinct slabs)
PORT_OVERLAP_FACTOR = 2.0
HUDI_BYTES_PER_INPUT_BYTE = 1.17  # Hudi base files (5 meta columns) vs the plain parquet input


def hudi_options(extra: dict[str, Any] | None = None) -> dict[str, str]:
    opts = {"hoodie.table.name": "conn", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.operation": "bulk_insert"}
    opts.update({k: str(v) for k, v in (extra or {}).items()})
    return opts


def layouts_dir(work_dir: str, rows: int, files: int) -> Path:
    return Path(work_dir) / f"layouts_{rows}_f{files}"


def _marker(root: Path, name: str) -> Path:
    return root / f"_done_{name}.json"


def is_built(root: Path, name: str) -> dict[str, Any] | None:
    m = _marker(root, name)
    if m.is_file() and (root / name).is_dir():
        try:
            return json.loads(m.read_text())
        except ValueError:
            return None
    return None


def mark_built(root: Path, name: str, info: dict[str, Any]) -> None:
    _marker(root, name).write_text(json.dumps(info, default=str))


def unmark(root: Path, name: str) -> None:
    _marker(root, name).unlink(missing_ok=True)
    remove(root / name)


# -- building tables --------------------------------------------------------------------------------------

def build_random(spark: Any, input_path: str, path: Path, files: int) -> dict[str, Any]:
    import hudi_layout as hl

    remove(path)
    est = dir_size(input_path) * HUDI_BYTES_PER_INPUT_BYTE
    max_size = max(64 * 1024, int(est / files))
    s, res = timed(hl.write, read_parquet(spark, input_path), str(path),
                   hudi_options({"hoodie.parquet.max.file.size": max_size}))
    return {"seconds": s, "files": res.files_written, "records": res.records_written,
            "bytes": res.bytes_written, "max_file_size": max_size}


def table_bytes(path: str | Path) -> int:
    from hudi_layout import HudiTable

    return sum(s.size_bytes for s in HudiTable(str(path)).file_slices())


def cluster_options(total_bytes: int, files: int) -> dict[str, str]:
    target = max(64 * 1024, int(total_bytes / files))
    return {"hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(100 * 1024**3),
            "hoodie.clustering.plan.strategy.max.num.groups": "1000",
            "hoodie.parquet.max.file.size": str(2 * target)}


def run_cluster(spark: Any, random_path: Path, path: Path, layout: str, files: int) -> dict[str, Any]:
    import hudi_layout as hl

    strategy, method = LAYOUTS[layout]  # type: ignore[misc]
    remove(path)
    shutil.copytree(random_path, path)
    opts = cluster_options(table_bytes(path), files)
    s, m = timed(hl.cluster, spark, str(path), list(CURVE_COLUMNS), strategy=strategy, method=method,
                 options=opts)
    if m is None:
        raise RuntimeError(f"{layout}: nothing was clustered")
    return {"seconds": s, "files_in": m.files_in, "files_out": m.files_out, "records": m.records,
            "groups": m.groups, "bytes_out": m.bytes_out, "library_seconds": m.seconds, "options": opts,
            "phases": dict(m.phases)}


def build_delta_random(input_path: str, path: Path, files: int) -> dict[str, Any]:
    import pyarrow.dataset as ds
    from deltalake import write_deltalake

    remove(path)
    dataset = ds.dataset(parquet_files(input_path), format="parquet")
    target = max(64 * 1024, int(dir_size(input_path) / files))
    reader = dataset.scanner(batch_size=64 * 1024).to_reader()
    s, _ = timed(write_deltalake, str(path), reader, mode="overwrite", target_file_size=target)
    return {"seconds": s, "target_file_size": target, **delta_counts(path)}


def delta_counts(path: Path) -> dict[str, Any]:
    from deltalake import DeltaTable

    acts = DeltaTable(str(path)).get_add_actions(flatten=True)
    acts = _to_arrow(acts)
    return {"files": acts.num_rows, "bytes": int(sum(acts.column("size_bytes").to_pylist())),
            "records": int(sum(acts.column("num_records").to_pylist()))}


def _to_arrow(t: Any) -> Any:
    import pyarrow as pa

    if isinstance(t, pa.Table):
        return t
    return pa.table(t)  # arro3 / any Arrow PyCapsule table


def run_delta_zorder(src: Path, path: Path, files: int) -> dict[str, Any]:
    from deltalake import DeltaTable

    remove(path)
    shutil.copytree(src, path)
    target = max(64 * 1024, int(delta_counts(path)["bytes"] / files))
    s, metrics = timed(lambda: DeltaTable(str(path)).optimize.z_order(list(CURVE_COLUMNS), target_size=target))
    return {"seconds": s, "target_size": target, "metrics": {k: v for k, v in metrics.items()
                                                               if isinstance(v, (int, float, str))},
            **delta_counts(path)}


# -- per-file ranges and overlap --------------------------------------------------------------------------

def hudi_file_ranges(path: str | Path, columns=CURVE_COLUMNS) -> dict[str, tuple[list[Any], list[Any]]]:
    """``{column: (mins, maxs)}`` over the live base files, from the column_stats index (missing files or
    columns fall back to the parquet footers)."""
    from hudi_layout import ColumnStatsIndex, HudiTable

    from .common import footer_minmax

    live = {s.base_file_name: s.base_file_path for s in HudiTable(str(path)).file_slices()}
    idx = ColumnStatsIndex(str(path))
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    for c in columns:
        t = idx.load_column(c) if idx.available else None
        by_file: dict[str, tuple[Any, Any]] = {}
        if t is not None and t.num_rows:
            for f, lo, hi in zip(t.column("file_name").to_pylist(), t.column("min").to_pylist(),
                                 t.column("max").to_pylist()):
                if f in live:
                    by_file[f] = (lo, hi)
        missing = [n for n in live if n not in by_file]
        if missing:
            log(f"   {c}: {len(missing)} live files without index stats; reading their footers")
            fm = footer_minmax([live[n] for n in missing], [c])[c]
            for n, lo, hi in zip(missing, *fm):
                by_file[n] = (lo, hi)
        names = sorted(live)
        out[c] = ([by_file[n][0] for n in names], [by_file[n][1] for n in names])
    return out


def delta_file_ranges(path: str | Path, columns=CURVE_COLUMNS) -> dict[str, tuple[list[Any], list[Any]]]:
    from deltalake import DeltaTable

    acts = _to_arrow(DeltaTable(str(path)).get_add_actions(flatten=True))
    return {c: (acts.column(f"min.{c}").to_pylist(), acts.column(f"max.{c}").to_pylist()) for c in columns}


def sample_points(input_path: str, n: int, seed: int = 7, columns=CURVE_COLUMNS) -> list[dict[str, Any]]:
    """``n`` actual rows of the input (random files, random rows in them), deterministic for a seed."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    files = parquet_files(input_path)
    picked = rng.choice(len(files), size=min(len(files), 20), replace=False)
    per = math.ceil(n / len(picked))
    out: list[dict[str, Any]] = []
    for i in picked:
        t = pq.read_table(files[int(i)], columns=list(columns))
        rows = rng.choice(t.num_rows, size=min(per, t.num_rows), replace=False)
        out.extend(t.take(np.sort(rows)).to_pylist())
    return out[:n]


def overlap_quality(ranges: dict[str, tuple[list[Any], list[Any]]], points: list[dict[str, Any]]
                    ) -> dict[str, Any]:
    n_files = len(next(iter(ranges.values()))[0])
    per_col = {c: float(overlap_counts(mins, maxs, [p[c] for p in points]).mean())
               for c, (mins, maxs) in ranges.items()}
    ports = {c: ranges[c] for c in ("src_port", "dst_port") if c in ranges}
    pair = float(box_overlap(ports, points).mean()) if len(ports) == 2 else float("nan")
    width = {c: float(np.mean([hi - lo for lo, hi in zip(*ranges[c])])) for c in ports}
    return {"files": n_files, "per_column": per_col, "port_pair": pair, "mean_port_width": width}


# -- plot -------------------------------------------------------------------------------------------------

def boxes_figure(panels: list[tuple[str, dict[str, tuple[list[Any], list[Any]]]]], title: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.4), squeeze=False)
    for ax, (label, ranges) in zip(axes[0], panels):
        (xlo, xhi), (ylo, yhi) = ranges["src_port"], ranges["dst_port"]
        n = len(xlo)
        alpha = max(0.08, min(0.8, 30.0 / max(n, 1)))
        for a, b, c, d in zip(xlo, xhi, ylo, yhi):
            if None in (a, b, c, d):
                continue
            ax.add_patch(Rectangle((a, c), max(b - a, 1), max(d - c, 1), fill=False, alpha=alpha,
                                   edgecolor="tab:blue", linewidth=0.6))
        ax.set_xlim(0, 65536)
        ax.set_ylim(0, 65536)
        ax.set_xticks([0, 16384, 32768, 49152, 65535])
        ax.set_yticks([0, 16384, 32768, 49152, 65535])
        ax.tick_params(labelsize=7)
        ax.set_xlabel("src_port")
        ax.set_ylabel("dst_port")
        ax.set_title(f"{label} ({n} files)", fontsize=9)
        ax.set_aspect("equal")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# -- main -------------------------------------------------------------------------------------------------

def warm_up(spark: Any, input_path: str, root: Path) -> None:
    import hudi_layout as hl

    w = root / "_warmup"
    remove(w)
    hl.write(read_parquet(spark, warmup_input(input_path, 4)), str(w),
             hudi_options({"hoodie.parquet.max.file.size": 1024 * 1024}))
    hl.cluster(str(w), list(CURVE_COLUMNS), spark=spark, strategy="hilbert", method="sample",
               options=cluster_options(table_bytes(w), 4))
    remove(w)


def ensure_random(spark: Any, input_path: str, root: Path, files: int, rows: int, rebuild: bool
                  ) -> dict[str, Any]:
    info = None if rebuild else is_built(root, "random")
    if info is None or info.get("records") != rows:
        unmark(root, "random")
        log(f"ingesting the random Hudi table ({rows:,} rows, ~{files} files)")
        info = build_random(spark, input_path, root / "random", files)
        mark_built(root, "random", info)
        log(f"   {info['files']} files, {info['bytes'] / 2**20:.0f} MiB in {info['seconds']:.1f} s")
    else:
        log(f"reusing the random Hudi table ({info['files']} files)")
    return info


def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.split("\n")[0], default_rows=10_000_000, quick_rows=500_000)
    p.add_argument("--files", type=int, default=None, help="files per table (default rows / 10,000)")
    p.add_argument("--layouts", default=",".join(k for k in LAYOUTS if k != "random"),
                   help=f"comma list of {', '.join(k for k in LAYOUTS if k != 'random')}")
    p.add_argument("--points", type=int, default=1000, help="random points for the overlap metric")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached random Hudi / Delta tables")
    p.add_argument("--no-delta", action="store_true", help="skip the delta-rs comparison")
    p.add_argument("--pairs", type=int, default=3,
                   help=f"alternating ({PAIRED_LAYOUT}, delta-rs) runs; the median of the pair ratios is reported")
    p.add_argument("--plot-only", action="store_true",
                   help="only redraw <name>_boxes.png from the cached tables of an earlier run (no Spark)")
    args = p.parse_args(argv)
    rows = rows_of(args)
    files = args.files or max(1, rows // 10_000)
    layouts = [k.strip() for k in args.layouts.split(",") if k.strip()]
    for k in layouts:
        if k not in LAYOUTS or k == "random":
            p.error(f"unknown layout {k!r}")
    name = args.name or ("clustering_quick" if args.quick else "clustering")

    if args.plot_only:
        root = layouts_dir(args.work_dir, rows, files)
        ranges = {}
        for k in ["random", "zorder_direct", "zorder_sample", "hilbert_sample", "delta_zorder"]:
            if is_built(root, k):
                ranges[k] = (delta_file_ranges if k.startswith("delta") else hudi_file_ranges)(root / k)
        fig = boxes_figure([(LABELS[k], v) for k, v in ranges.items()],
                           f"File boxes on (src_port, dst_port), {rows:,} rows")
        from .common import RESULTS_DIR

        fig.savefig(RESULTS_DIR / f"{name}_boxes.png", dpi=110, bbox_inches="tight")
        log(f"plot: {RESULTS_DIR / f'{name}_boxes.png'}")
        return 0

    spark = spark_session("bench_clustering", master=args.master)
    log(f"input: {rows:,} conn rows, target {files} files per table")
    input_path = conn_input(spark, rows, args.work_dir)
    root = layouts_dir(args.work_dir, rows, files)
    root.mkdir(parents=True, exist_ok=True)
    random_info = ensure_random(spark, input_path, root, files, rows, args.rebuild)
    points = sample_points(input_path, args.points)

    delta: dict[str, Any] = {}
    if not args.no_delta:
        dinfo = None if args.rebuild else is_built(root, "delta_random")
        if dinfo is None or dinfo.get("records") != rows:
            unmark(root, "delta_random")
            log("writing the Delta table (delta-rs write_deltalake)")
            dinfo = build_delta_random(input_path, root / "delta_random", files)
            mark_built(root, "delta_random", dinfo)
        delta["random"] = dinfo
        log(f"   delta random: {dinfo['files']} files, {dinfo['records']:,} rows")

    log("warm-up (untimed)")
    warm_up(spark, input_path, root)

    results: dict[str, Any] = {}
    delta_runs: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []

    def delta_run(tag: str) -> dict[str, Any]:
        unmark(root, "delta_zorder")
        r = run_delta_zorder(root / "delta_random", root / "delta_zorder", files)
        delta_runs.append(r)
        mark_built(root, "delta_zorder", r)
        log(f"delta-rs z-order ({tag}): {r['seconds']:.1f} s, {r['files']} files")
        return r

    def ours(layout: str) -> dict[str, Any]:
        unmark(root, layout)
        log(f"clustering {layout}")
        r = run_cluster(spark, root / "random", root / layout, layout, files)
        if r["records"] != rows:
            raise RuntimeError(f"{layout}: clustered {r['records']} records, expected {rows}")
        mark_built(root, layout, {k: v for k, v in r.items() if k != "options"} | {"records": rows})
        log(f"   {layout}: {r['seconds']:.1f} s, {r['files_in']} -> {r['files_out']} files, phases "
            + ", ".join(f"{k} {v:.1f}" for k, v in r["phases"].items()))
        return r

    # the compared layout alternates with delta-rs on copies of the same rows (ours, delta-rs, ours, ...): load
    # on a shared machine moves both sides of a pair alike, and the median of the pair ratios is reported
    paired = PAIRED_LAYOUT if PAIRED_LAYOUT in layouts else layouts[-1]
    for layout in layouts:
        if layout != paired:
            results[layout] = ours(layout)
    runs = []
    for i in range(max(1, args.pairs)):
        r = ours(paired)
        runs.append(r)
        if not args.no_delta:
            d = delta_run(f"pair {i + 1}")
            pairs.append({"ours_seconds": r["seconds"], "delta_seconds": d["seconds"],
                          "ratio": r["seconds"] / d["seconds"], "phases": r["phases"]})
            log(f"pair {i + 1}: {paired} {r['seconds']:.1f} s, delta-rs {d['seconds']:.1f} s, "
                f"ratio {r['seconds'] / d['seconds']:.2f}")
    results[paired] = dict(runs[-1], seconds=median(r["seconds"] for r in runs),
                           runs=[r["seconds"] for r in runs])

    # quality
    log("per-file ranges and overlap")
    ranges: dict[str, Any] = {"random": hudi_file_ranges(root / "random")}
    for layout in layouts:
        ranges[layout] = hudi_file_ranges(root / layout)
    if not args.no_delta:
        ranges["delta_random"] = delta_file_ranges(root / "delta_random")
        ranges["delta_zorder"] = delta_file_ranges(root / "delta_zorder")
    quality = {k: overlap_quality(v, points) for k, v in ranges.items()}
    for k, q in quality.items():
        log(f"   {k}: files={q['files']} " + " ".join(f"{c}={v:.1f}" for c, v in q["per_column"].items())
            + f" ports={q['port_pair']:.1f}")

    delta_s = median(r["seconds"] for r in delta_runs) if delta_runs else float("nan")
    pair_ratio = median(pr["ratio"] for pr in pairs) if pairs else float("nan")
    ideal_port = lambda n: n ** 0.75  # noqa: E731
    rows_tbl = []
    order = ["random", *layouts] + (["delta_random", "delta_zorder"] if delta_runs else [])
    for k in order:
        q = quality[k]
        if k in results:
            secs = results[k]["seconds"]
        elif k == "delta_zorder":
            secs = delta_s
        else:
            secs = float("nan")
        ratio = secs / delta_s if not math.isnan(secs) and delta_runs else float("nan")
        rows_tbl.append([k, LABELS[k], round(secs, 1) if not math.isnan(secs) else "",
                         round(ratio, 2) if not math.isnan(ratio) else "", q["files"],
                         *[round(q["per_column"][c], 1) for c in CURVE_COLUMNS], round(q["port_pair"], 1)])

    targets: list[dict[str, Any]] = []
    if pairs:
        targets.append({"name": f"{paired} clustering time / delta-rs z-order (median of {len(pairs)} alternating "
                                f"pair ratios)", "value": round(pair_ratio, 2), "target": f"<= {PAIRED_TARGET}",
                        "verdict": verdict(pair_ratio, PAIRED_TARGET)})
    for k in CURVE_LAYOUTS:
        if k not in results:
            continue
        if delta_runs and k != paired:
            ratio = results[k]["seconds"] / delta_s
            targets.append({"name": f"{k} clustering time / delta-rs z-order (median delta-rs run)",
                            "value": round(ratio, 2), "target": f"<= {TIME_TARGET}",
                            "verdict": verdict(ratio, TIME_TARGET)})
        q = quality[k]
        bound = PORT_OVERLAP_FACTOR * ideal_port(q["files"])
        worst = max(q["per_column"]["src_port"], q["per_column"]["dst_port"])
        targets.append({"name": f"{k} files overlapping a port point (worse of src/dst)", "value": round(worst, 1),
                        "target": f"<= {bound:.0f} (2 x files^(3/4))", "verdict": verdict(worst, bound)})
    target_rows = [[t["name"], t["value"], t["target"], t["verdict"]] for t in targets]

    timing_rows = []
    for k in layouts:
        r = results[k]
        timing_rows.append([k, round(r["seconds"], 1), round(r["library_seconds"], 1), r["groups"], r["files_in"],
                            r["files_out"], round(r["bytes_out"] / 2**20, 1)])
    for i, r in enumerate(delta_runs):
        timing_rows.append([f"delta_zorder (run {i + 1})", round(r["seconds"], 1), "", "", delta["random"]["files"],
                            r["files"], round(r["bytes"] / 2**20, 1)])

    data = {"rows": rows, "files_target": files, "columns": list(CURVE_COLUMNS), "points": len(points),
            "input": input_path, "tables": str(root), "random_table": random_info, "delta": delta,
            "delta_runs": delta_runs, "delta_seconds": delta_s, "results": results, "quality": quality,
            "pairs": pairs, "pair_ratio": pair_ratio, "paired_layout": paired, "targets": targets}
    phase_names = sorted({k for r in runs for k in r["phases"]})
    sections = [
        ("Setup",
         f"{rows:,} conn rows. The as-ingested Hudi table: one `hudi_layout.write` commit with "
         f"`hoodie.parquet.max.file.size` = {random_info['max_file_size']:,} B -> {random_info['files']} files "
         f"({random_info['bytes'] / 2**20:.0f} MiB, {random_info['seconds']:.0f} s). Each layout clusters a copy "
         f"of it with `hudi_layout.cluster(path, {list(CURVE_COLUMNS)}, spark=spark, strategy=..., method=..., "
         f"options=...)` "
         f"(one clustering group: target file size = table bytes / {files}, max bytes per group 100 GB, "
         f"`hoodie.parquet.max.file.size` = 2 x target); time = wall clock around the call (plan + Spark job + "
         f"commit + metadata table). delta-rs {_deltalake_version()}: the same rows written with "
         f"`write_deltalake(target_file_size=input bytes / {files})`"
         + (f" -> {delta['random']['files']} files" if delta else "")
         + f", then `DeltaTable.optimize.z_order({list(CURVE_COLUMNS)}, target_size=table bytes / {files})` on a "
           f"copy. Timing: {paired} and delta-rs alternate on copies of the same rows ({paired}, delta-rs, "
           f"{paired}, ...; {len(pairs)} pairs); the ratio is the median of the pair ratios, the other layouts are "
           f"compared with the median delta-rs run. Overlap: {len(points)} rows "
           f"sampled from the input; per column, the mean number of files whose [min, max] (Hudi: column_stats "
           f"index; Delta: add-action stats) contains the point's value; strings compared as strings. "
           f"'ports' = files whose (src_port, dst_port) box contains the point's pair. An untimed warm-up "
           f"clustering runs first. Spark local[*] on {_nproc()} cores, shared machine."),
        ("Targets", md_table(["measure", "value", "target", "verdict"], target_rows, "lrll")),
        ("Layouts: time and files overlapping a random point (lower is better)",
         md_table(["layout", "what", "seconds", "/ delta-rs", "files", *CURVE_COLUMNS, "ports (pair)"],
                  rows_tbl, "llrrrrrrrr")
         + f"\n\nFor reference, a balanced 4-column curve over F files leaves each column about F^(1/4) "
           f"slabs, i.e. ~F^(3/4) files overlapping a point of one column ({ideal_port(files):.0f} for "
           f"F = {files}); a table sorted by one column gives ~1 for it and F for the others."),
        ("Alternating pairs", md_table(["pair", f"{paired} s", "delta-rs s", "ratio"],
                                       [[i + 1, round(pr["ours_seconds"], 1), round(pr["delta_seconds"], 1),
                                         round(pr["ratio"], 2)] for i, pr in enumerate(pairs)])
         + f"\n\nMedian ratio: {pair_ratio:.2f}."),
        (f"Where the seconds go ({paired}, per run)",
         md_table(["run", "total s", *phase_names],
                  [[i + 1, round(r["seconds"], 1), *[round(r["phases"].get(k, 0.0), 2) for k in phase_names]]
                   for i, r in enumerate(runs)])
         + "\n\nPhases: `prepare` (options), `schedule` (plan + requested instant), `start` (inflight instant, "
           "heartbeat), `groups` (the Spark work: `group.footers` parquet footers, `group.sketch` the sample job, "
           "`group.write` map + shuffle + reduce + write), `commit` (commit metadata, metadata-table deltacommit, "
           "completion), `metadata_compaction`."),
        ("Clustering runs", md_table(["run", "wall s", "library s", "groups", "files in", "files out", "MiB out"],
                                     timing_rows)),
        ("Mean port range width per file",
         md_table(["layout", "src_port width", "dst_port width"],
                  [[k, round(quality[k]["mean_port_width"].get("src_port", float("nan"))),
                    round(quality[k]["mean_port_width"].get("dst_port", float("nan")))] for k in order])),
    ]
    panels = [(LABELS.get(k, k), ranges[k]) for k in ["random", "zorder_direct", "zorder_sample", "hilbert_sample",
                                                     "delta_zorder"] if k in ranges]
    fig = boxes_figure(panels, f"File boxes on (src_port, dst_port), {rows:,} rows")
    md = write_report(name, "Clustering: Hudi layouts vs delta-rs z-order", sections, data,
                      plots=[(f"{name}_boxes.png", fig)])
    log(f"report: {md}")
    return 0


def _deltalake_version() -> str:
    try:
        import deltalake

        return deltalake.__version__
    except ImportError:
        return "?"


def _nproc() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    sys.exit(main())
