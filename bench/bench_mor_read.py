"""Benchmark: snapshot reads of a Merge-on-Read table whose log files hold 10% updates.

Issue #14: "Reading a 1M-row MOR table whose log files hold 10% updates: time against hudi-rs reading the same
table and against our COW read of the same rows, in the same run."

Tables (built once per run under ``<work>/mor_read_<rows>/``):

* ``mor_<fmt>``: a version-9 MERGE_ON_READ table written with the test builder (``tests/helpers/mor_builder.py``,
  no JVM): ``--groups`` file groups of ``rows / groups`` rows each (one base parquet file each), then two
  deltacommits that each update a different 5% of every file group's keys (new ``ts``, ports and bytes), as
  log blocks of format ``fmt`` (``parquet``: PARQUET_DATA blocks; ``avro``: AVRO_DATA blocks, the format Hudi's
  Spark writer uses by default). Its metadata table indexes base and log files (``column_stats``).
* ``cow``: a Copy-on-Write table of the same merged rows, written by ``hudi_layout.write`` (as many files as
  file groups).

Per repetition, in alternating order (the order rotates every repetition), each reader is timed on two queries:
``count`` (every row) and ``filtered`` (``src_port < 1024``, ~1.6% of rows; counted after the filter):

* ``ours``: ``hudi_layout.read(path, where).count()`` — slices with logs merged in Spark tasks, the filter
  applied after the merge;
* ``hudi-rs``: ``HudiTable.read()`` into Arrow (all rows merged by hudi-rs), then ``pyarrow.compute`` for the
  filter; hudi-rs runs in this process with its own threads;
* ``cow``: ``hudi_layout.read`` of the COW table (Spark's native parquet reader).

Every reader must return the same counts (the run fails otherwise). Medians of ``--repeat`` (default 5).

Then (unless ``--no-cluster``) the first MOR table is clustered along a z-order curve of the ports, its slices
read merged: hudi-rs must read the same rows (digest) before and after, and the per-file port ranges narrow.

Run: ``python -m bench.bench_mor_read [--quick] [--rows N] [--groups G] [--formats parquet,avro] [--repeat R]``.
Writes ``bench/results/mor_read.md|json|png`` (``mor_read_quick`` with --quick).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .common import (
    ROOT,
    bench_arg_parser,
    fresh_dir,
    log,
    median,
    rows_of,
    spark_session,
    timed,
)
from .report import md_table, write_report

FILTER = "src_port < 1024"
FIELDS = (("id", "string"), ("ts", "long"), ("src_port", "long"), ("dst_port", "long"), ("bytes", "long"),
          ("proto", "string"))
UPDATE_SHARE = 0.10


def _base_rows(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array([f"k{i:08d}" for i in range(start, start + n)]),
        "ts": pa.array(np.full(n, 1, np.int64)),
        "src_port": pa.array(rng.integers(0, 65536, n, dtype=np.int64)),
        "dst_port": pa.array(rng.integers(0, 65536, n, dtype=np.int64)),
        "bytes": pa.array(rng.integers(0, 1 << 30, n, dtype=np.int64)),
        "proto": pa.array(rng.choice(np.array(["tcp", "udp", "icmp"]), n)),
    })


def build_mor(path: Path, rows: int, groups: int, fmt: str, seed: int = 11) -> dict[str, Any]:
    """The MOR table of the module docstring; returns what it holds."""
    sys.path.insert(0, str(ROOT))
    from tests.helpers.mor_builder import Upserts, make_mor_table

    rng = np.random.default_rng(seed)
    t = make_mor_table(path, fields=FIELDS, column_stats=True)
    per = rows // groups
    fids, starts = [], []
    for g in range(groups):
        starts.append(g * per)
        fids += t.deltacommit(inserts={"": _base_rows(rng, g * per, per)}).file_ids
    updated = 0
    # two deltacommits, each updating a different 5% of every file group's keys
    picks = [rng.permutation(per)[: int(per * UPDATE_SHARE)] for _ in range(groups)]
    for half in range(2):
        logs = {}
        for g, fid in enumerate(fids):
            chosen = picks[g][half::2]
            upd = _base_rows(rng, 0, len(chosen))
            upd = upd.set_column(0, "id", pa.array([f"k{starts[g] + int(i):08d}" for i in chosen]))
            upd = upd.set_column(1, "ts", pa.array(np.full(len(chosen), 2 + half, np.int64)))
            logs[fid] = [Upserts(upd, fmt=fmt)]
            updated += len(chosen)
        t.deltacommit(logs=logs)
    return {"rows": per * groups, "file_groups": groups, "updated_records": updated, "log_format": fmt}


def build_cow(spark: Any, mor: Path, cow: Path, files: int) -> None:
    import hudi_layout

    df = hudi_layout.read(str(mor), spark=spark).repartition(files)
    hudi_layout.write(df, str(cow), {"hoodie.table.name": "cow", "hoodie.datasource.write.recordkey.field": "id"})


def read_ours(spark: Any, path: Path, where: str | None) -> int:
    import hudi_layout

    return int(hudi_layout.read(str(path), where, spark=spark).count())


def read_hudi_rs(path: Path, where: str | None) -> int:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read()
    table = pa.Table.from_batches(batches)
    if where is None:
        return table.num_rows
    return int(pc.sum(pc.less(table.column("src_port"), 1024)).as_py() or 0)


def _spans(path: Path, columns: list[str]) -> dict[str, list[int]]:
    """Per latest slice, max - min of each column over its merged rows (pure Python merge, no Spark)."""
    from hudi_layout import HudiTable
    from hudi_layout.scan.merge import merge_file_slice, merge_spec_for_table

    table = HudiTable(path)
    spec = merge_spec_for_table(table, columns=columns)
    out: dict[str, list[int]] = {c: [] for c in columns}
    for s in table.file_slices():
        rows = merge_file_slice(s.base_file_path, s.log_file_paths(path), spec=spec)
        for c in columns:
            mm = pc.min_max(rows.column(c))
            out[c].append(int(mm["max"].as_py() - mm["min"].as_py()))
    return out


def cluster_mor(spark: Any, path: Path, files: int) -> dict[str, Any]:
    """Cluster the MOR table along a z-order curve of the two ports (slices read merged); hudi-rs must read
    the same rows before and after, and the per-file port ranges must narrow."""
    sys.path.insert(0, str(ROOT))
    import hudi

    import hudi_layout
    from hudi_layout import HudiTable
    from tests.helpers.integration import rows_digest

    cols = ["src_port", "dst_port"]
    before_rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    before = (before_rows.num_rows, rows_digest(before_rows))
    spans_before = _spans(path, cols)
    size = sum(s.total_size_bytes for s in HudiTable(path).file_slices())
    opts = {"hoodie.clustering.plan.strategy.target.file.max.bytes": str(max(1, size // files)),
            "hoodie.clustering.plan.strategy.max.bytes.per.group": str(size * 2)}
    secs, m = timed(hudi_layout.cluster, str(path), cols, spark=spark, strategy="z-order", options=opts)
    after_rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    after = (after_rows.num_rows, rows_digest(after_rows))
    if after != before:
        raise SystemExit(f"clustering changed the rows: {before} -> {after}")
    spans_after = _spans(path, cols)
    return {"seconds": round(secs, 2), "files_in": m.files_in, "files_out": m.files_out, "records": m.records,
            "rows_digest": before[1],
            "mean_span_before": {c: float(np.mean(v)) for c, v in spans_before.items()},
            "mean_span_after": {c: float(np.mean(v)) for c, v in spans_after.items()}}


def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.splitlines()[0], default_rows=1_000_000, quick_rows=100_000)
    p.add_argument("--groups", type=int, default=None, help="file groups (default rows / 100,000, at least 2)")
    p.add_argument("--formats", default="parquet,avro", help="log block formats to build (parquet, avro)")
    p.add_argument("--no-cluster", action="store_true", help="skip the clustering of the MOR table at the end")
    args = p.parse_args(argv)
    rows = rows_of(args)
    repeat = args.repeat or (3 if args.quick else 5)
    groups = args.groups or max(2, rows // 100_000)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    name = args.name or ("mor_read_quick" if args.quick else "mor_read")
    work = fresh_dir(Path(args.work_dir) / f"mor_read_{rows}")
    spark = spark_session("bench_mor_read", master=args.master)

    tables: dict[str, Path] = {}
    built: dict[str, Any] = {}
    for fmt in formats:
        path = work / f"mor_{fmt}"
        secs, info = timed(build_mor, path, rows, groups, fmt)
        log(f"built MOR table ({fmt} log blocks) in {secs:.1f} s: {info}")
        built[f"mor_{fmt}"] = {**info, "build_seconds": round(secs, 2)}
        tables[f"mor_{fmt}"] = path
    secs, _ = timed(build_cow, spark, tables[f"mor_{formats[0]}"], work / "cow", groups)
    log(f"built COW table in {secs:.1f} s")
    built["cow"] = {"build_seconds": round(secs, 2)}

    readers: list[tuple[str, Any]] = []
    for fmt in formats:
        readers.append((f"ours mor_{fmt}", lambda w, pth=tables[f"mor_{fmt}"]: read_ours(spark, pth, w)))
        readers.append((f"hudi-rs mor_{fmt}", lambda w, pth=tables[f"mor_{fmt}"]: read_hudi_rs(pth, w)))
    readers.append(("ours cow", lambda w: read_ours(spark, work / "cow", w)))
    queries = {"count": None, "filtered": FILTER}

    for _label, fn in readers:  # warm-up (JVM, Python workers, page cache), untimed
        for where in queries.values():
            fn(where)
    times: dict[str, dict[str, list[float]]] = {label: {q: [] for q in queries} for label, _ in readers}
    counts: dict[str, dict[str, int]] = {label: {} for label, _ in readers}
    for r in range(repeat):
        order = readers[r % len(readers):] + readers[: r % len(readers)]
        for label, fn in order:
            for q, where in queries.items():
                secs, n = timed(fn, where)
                times[label][q].append(secs)
                counts[label][q] = n
        log(f"repetition {r + 1}/{repeat} done")
    for q in queries:
        seen = {counts[label][q] for label, _ in readers}
        if len(seen) != 1:
            raise SystemExit(f"readers disagree on {q}: {counts}")

    med = {label: {q: median(v) for q, v in by_q.items()} for label, by_q in times.items()}
    header = ["reader", "count (s)", "filtered (s)", "count vs ours cow", "filtered vs ours cow"]
    table_rows = []
    for label, _ in readers:
        table_rows.append([label, med[label]["count"], med[label]["filtered"],
                           med[label]["count"] / med["ours cow"]["count"],
                           med[label]["filtered"] / med["ours cow"]["filtered"]])
    ratio_rows = []
    for fmt in formats:
        ratio_rows.append([fmt, med[f"ours mor_{fmt}"]["count"] / med[f"hudi-rs mor_{fmt}"]["count"],
                           med[f"ours mor_{fmt}"]["filtered"] / med[f"hudi-rs mor_{fmt}"]["filtered"]])
    sections = [
        ("Setup", f"{rows:,} rows in {groups} file groups; two deltacommits update {UPDATE_SHARE:.0%} of the "
                  f"keys of every file group (log formats: {', '.join(formats)}). Filter: `{FILTER}`. "
                  f"Median of {repeat} repetitions, readers alternating. Rows returned: count "
                  f"{counts['ours cow']['count']:,}, filtered {counts['ours cow']['filtered']:,} (every reader "
                  "agreed)."),
        ("Wall time", md_table(header, table_rows)),
        ("Ours / hudi-rs (same MOR table)", md_table(["log blocks", "count", "filtered"], ratio_rows)),
        ("Tables", "\n".join(f"* `{k}`: {v}" for k, v in built.items())),
    ]
    clustering = None
    if not args.no_cluster:
        clustering = cluster_mor(spark, tables[f"mor_{formats[0]}"], groups)
        log(f"clustered the MOR table: {clustering}")
        cb, ca = clustering["mean_span_before"], clustering["mean_span_after"]
        sections.append(("Clustering the MOR table", md_table(
            ["table", "seconds", "files in", "files out", "rows", "rows digest (hudi-rs, before = after)",
             "mean src_port span before / after", "mean dst_port span before / after"],
            [[f"mor_{formats[0]}", clustering["seconds"], clustering["files_in"], clustering["files_out"],
              clustering["records"], clustering["rows_digest"],
              f"{cb['src_port']:,.0f} / {ca['src_port']:,.0f}", f"{cb['dst_port']:,.0f} / {ca['dst_port']:,.0f}"]])
            + "\n\nz-order (direct) on `src_port, dst_port`, after the timings; every slice with log files is "
              "read merged. hudi-rs reads the same rows (digest) before and after."))
    plots = []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 4))
        labels = [label for label, _ in readers]
        x = np.arange(len(labels))
        ax.bar(x - 0.2, [med[lb]["count"] for lb in labels], 0.4, label="count")
        ax.bar(x + 0.2, [med[lb]["filtered"] for lb in labels], 0.4, label=f"filtered ({FILTER})")
        ax.set_xticks(x, labels, rotation=20, ha="right")
        ax.set_ylabel("seconds (median)")
        ax.set_title(f"MOR snapshot read, {rows:,} rows, {UPDATE_SHARE:.0%} updates in logs")
        ax.legend()
        fig.tight_layout()
        plots.append((f"{name}.png", fig))
    except ImportError:
        log("matplotlib missing: no plot")
    path = write_report(name, f"Merge-on-Read snapshot read ({rows:,} rows)", sections,
                        {"rows": rows, "groups": groups, "formats": formats, "repeat": repeat, "tables": built,
                         "times": times, "medians": med, "counts": counts, "clustering": clustering},
                        plots=plots)
    log(f"report: {path}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
