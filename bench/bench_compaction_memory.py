"""Benchmark: the memory a compaction task needs for one large Merge-on-Read slice, merged whole vs a chunk at a
time.

One Merge-on-Read table of ``--rows`` conn rows in one file group (``hoodie.parquet.max.file.size`` 4 GiB, one
bulk-insert task), then an upsert of ``--fraction`` of its keys, which appends a log file to the slice. The
executor-side compaction of that slice (``writer.merge.compact_file_group``, what each Spark task of
``hudi_layout.compact`` runs) is then run in fresh Python processes, alternating (whole, chunked, whole, ...
``--repeat`` pairs):

* ``whole``: the slice merged in one piece (``scan.merge.merge_file_slice``, what compactions did before
  session 23): the base file's rows and the merged copy are held at once;
* ``chunked``: ``scan.merge.iter_merge_file_slice`` (``MERGE_CHUNK_ROWS`` base rows at a time): the log
  records and one chunk are held.

Each process reports its peak resident memory (``VmHWM``) and the same figure after its imports, and the
time of the merge + write. Both must write files with the same rows (the digest of the meta and data columns,
order aside), else the run fails.

Run: ``python -m bench.bench_compaction_memory [--quick] [--rows N] [--fraction F]``.
Writes ``bench/results/compaction_memory.md|json|png`` (``compaction_memory_quick`` with --quick).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .common import ROOT, bench_arg_parser, fresh_dir, log, median, rows_of, spark_session, timed
from .conn_data import conn_input
from .report import md_table, write_report

MODES = ("whole", "chunked")

#: the child: one compaction of the slice, in ``mode``; prints a JSON line
CHILD = r"""
import json, sys, time
def hwm_kib():  # this process's peak RSS (VmHWM: per address space, unlike ru_maxrss, which exec inherits)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
mode, base_file, logs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
table_path, out = sys.argv[4], sys.argv[5]
import pyarrow as pa, pyarrow.parquet as pq
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.format.schema_conversion import avro_to_arrow_schema
from hudi_layout.scan.merge import iter_merge_file_slice, merge_file_slice, merge_spec_for_table
from hudi_layout.writer.base_file_writer import TaskIdentity, WriteSpec
from hudi_layout.writer.merge import MergeTarget, compact_file_group
table = HudiTable(table_path)
schema = avro_to_arrow_schema(table.schema())
spec = WriteSpec(base_path=out, instant_time="29991231235959999", data_columns=tuple(table.data_columns()),
                 data_schema=schema)
merge = merge_spec_for_table(table)
target = MergeTarget("", base_file.rsplit("/", 1)[-1].split("_")[0], base_file.rsplit("/", 1)[-1], base_file,
                     "0", tuple(logs))
after_imports = hwm_kib()
t0 = time.time()
if mode == "whole":
    merged = [merge_file_slice(base_file, logs, spec=merge)]
else:
    merged = iter_merge_file_slice(base_file, logs, spec=merge)
row = compact_file_group(spec, target, merged, TaskIdentity())
seconds = time.time() - t0
peak = hwm_kib()
print(json.dumps({"mode": mode, "seconds": seconds, "peak_kib": peak, "after_imports_kib": after_imports,
                  "file": row["file_name"], "records": row["num_records"], "bytes": row["file_size"]}))
"""


def build(spark: Any, input_path: str, path: Path, fraction: float, rows: int) -> tuple[str, list[str]]:
    """The table (one file group), then an upsert appending a log file; returns the slice's files."""
    import hudi_layout
    from hudi_layout import HudiTable

    opts = {"hoodie.table.name": "conn_mor", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.parquet.max.file.size": str(4 << 30)}
    df = spark.read.parquet(input_path).selectExpr("*", "CAST(0 AS LONG) AS ts").coalesce(1)
    hudi_layout.write(df, str(path), {**opts, "hoodie.datasource.write.operation": "bulk_insert"})
    rng = np.random.default_rng(7)
    ids = np.sort(rng.choice(rows, int(rows * fraction), replace=False)).tolist()
    keys = spark.createDataFrame([(int(i),) for i in ids], "id long")
    update = spark.read.parquet(input_path).join(keys, "id").selectExpr(
        "id", "src_ip", "dst_ip", "src_port", "CAST((dst_port + 1) % 65536 AS INT) AS dst_port", "payload",
        "CAST(1 AS LONG) AS ts")
    r = hudi_layout.write(update, str(path), {**opts, "hoodie.datasource.write.operation": "upsert"})
    if r.log_files_appended != 1:
        raise SystemExit(f"the upsert appended {r.log_files_appended} log files, not 1")
    table = HudiTable(str(path))
    [sl] = table.file_slices()
    return sl.base_file_path, list(sl.log_file_paths(table.base_path))


def run_child(mode: str, base_file: str, logs: list[str], table: Path, out: Path) -> dict[str, Any]:
    out = fresh_dir(out)
    done = subprocess.run([sys.executable, "-c", CHILD, mode, base_file, json.dumps(logs), str(table), str(out)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} compaction failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    got["digest"] = digest(out / got["file"])
    return got


def digest(path: Path) -> str:
    """The data rows of a written base file, order aside."""
    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT))
    from tests.helpers.integration import rows_digest

    t = pq.read_table(path)
    return str(rows_digest(t))


def plot(summary: dict[str, dict[str, float]], rows: int, repeat: int) -> Any:
    """Peak memory above the imports and time, whole vs chunked (medians)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, key, label in ((ax1, "above_imports_mib", "peak memory above imports (MiB)"),
                           (ax2, "seconds", "merge + write (s)")):
        vals = [summary[m][key] for m in MODES]
        ax.bar(["whole (before)", "chunked (now)"], vals, color=["#bb5555", "#4477aa"])
        for i, v in enumerate(vals):
            ax.text(i, v, f"{v:.0f}" if key != "seconds" else f"{v:.2f}", ha="center", va="bottom")
        ax.set_title(label)
        ax.set_ylim(0, max(vals) * 1.15)
    fig.suptitle(f"Compaction of one {rows:,}-row slice in a task (median of {repeat} alternating pairs)", y=1.02)
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> int:
    p = bench_arg_parser(__doc__.splitlines()[0], default_rows=4_000_000, quick_rows=400_000)
    p.add_argument("--fraction", type=float, default=0.02, help="share of the keys the upsert updates")
    args = p.parse_args(argv)
    rows = rows_of(args)
    repeat = args.repeat or 3
    name = args.name or ("compaction_memory_quick" if args.quick else "compaction_memory")
    spark = spark_session("bench_compaction_memory", master=args.master)
    input_path = conn_input(spark, rows, args.work_dir)
    work = fresh_dir(Path(args.work_dir) / f"compaction_memory_{rows}")
    secs, (base_file, logs) = timed(build, spark, input_path, work / "table", args.fraction, rows)
    spark.stop()
    base_mb = Path(base_file).stat().st_size / 2**20
    log_mb = sum(Path(p).stat().st_size for p in logs) / 2**20
    log(f"built in {secs:.1f} s: base file {base_mb:.1f} MiB, {len(logs)} log file(s) {log_mb:.2f} MiB")
    runs: list[dict[str, Any]] = []
    for r in range(repeat):
        order = MODES if r % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            got = run_child(mode, base_file, logs, work / "table", work / f"out_{mode}")
            got["pair"] = r + 1
            runs.append(got)
            log(f"pair {r + 1} {mode}: peak {got['peak_kib'] / 1024:.0f} MiB (imports "
                f"{got['after_imports_kib'] / 1024:.0f} MiB), {got['seconds']:.2f} s, {got['records']:,} rows")
    digests = {g["digest"] for g in runs}
    if len(digests) != 1:
        raise SystemExit(f"the compactions wrote different rows: {digests}")
    summary = {m: {"peak_mib": median([g["peak_kib"] / 1024 for g in runs if g["mode"] == m]),
                   "above_imports_mib": median([(g["peak_kib"] - g["after_imports_kib"]) / 1024
                                                for g in runs if g["mode"] == m]),
                   "seconds": median([g["seconds"] for g in runs if g["mode"] == m])} for m in MODES}
    ratio_mem = summary["chunked"]["above_imports_mib"] / summary["whole"]["above_imports_mib"]
    time_ratios = [next(g["seconds"] for g in runs if g["pair"] == r + 1 and g["mode"] == "chunked")
                   / next(g["seconds"] for g in runs if g["pair"] == r + 1 and g["mode"] == "whole")
                   for r in range(repeat)]
    table_rows = [[g["pair"], g["mode"], f"{g['peak_kib'] / 1024:.0f}",
                   f"{(g['peak_kib'] - g['after_imports_kib']) / 1024:.0f}", f"{g['seconds']:.2f}", f"{g['records']:,}"]
                  for g in runs]
    sections = [
        f"One slice: a base file of {rows:,} rows ({base_mb:.1f} MiB) and {len(logs)} log file ({log_mb:.2f} MiB, "
        f"{args.fraction:.0%} of the keys updated). Each run is a fresh Python process compacting it as a "
        "compaction task does; whole and chunked alternate. Both wrote the same rows (digest).",
        ("Result", md_table(["", "whole (before)", "chunked (now)"], [
            ["peak memory, MiB (median)", f"{summary['whole']['peak_mib']:.0f}",
             f"{summary['chunked']['peak_mib']:.0f}"],
            ["above the imports, MiB", f"{summary['whole']['above_imports_mib']:.0f}",
             f"{summary['chunked']['above_imports_mib']:.0f}"],
            ["merge + write, s (median)", f"{summary['whole']['seconds']:.2f}",
             f"{summary['chunked']['seconds']:.2f}"],
        ]) + f"\n\nMemory above the imports: chunked / whole = {ratio_mem:.2f}. Time, pair by pair (chunked / "
            f"whole): {', '.join(f'{x:.2f}' for x in time_ratios)} (median {median(time_ratios):.2f})."),
        ("Every run", md_table(["pair", "mode", "peak MiB", "above imports MiB", "seconds", "rows"], table_rows)),
    ]
    data = {"rows": rows, "fraction": args.fraction, "base_file_mib": base_mb, "log_mib": log_mb,
            "runs": runs, "summary": summary, "memory_ratio": ratio_mem, "time_ratios": time_ratios}
    fig = plot(summary, rows, repeat)
    write_report(name, "Compaction memory: a slice merged whole vs a chunk at a time", sections, data,
                 plots=[(f"{name}.png", fig)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
