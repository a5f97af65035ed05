"""The ``hudi-layout`` command.

Every subcommand takes Hudi options as ``--option hoodie.x=y`` (repeatable) on top of the defaults file
(``conf/hudi-layout-defaults.conf`` or ``$HUDI_LAYOUT_CONF``). Errors print one clear line plus a hint and
exit with status 2; unexpected failures exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from hudi_layout import options as cfg
from hudi_layout.api import ClusteringService, HudiTable, build_column_stats_index, cluster, get_spark, plan_scan, write
from hudi_layout.clustering.workload import Workload
from hudi_layout.errors import HudiLayoutError, InvalidArgumentError
from hudi_layout.tools.inspect import inspect_table, render
from hudi_layout.tools.layout_report import write_report

EXIT_USAGE = 2
STRATEGY_CHOICES = ["linear", "z-order", "zorder", "hilbert", "qdtree", "workload"]


def _options(pairs: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise InvalidArgumentError(f"--option expects key=value, got {pair!r}")
        k, v = pair.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _spark(args: argparse.Namespace) -> Any:
    return get_spark("hudi-layout", master=getattr(args, "master", None))


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


# ----------------------------------------------------------------------------------------- commands

def cmd_ingest(args: argparse.Namespace) -> int:
    spark = _spark(args)
    opts = _options(args.option)
    if args.record_key:
        opts["hoodie.datasource.write.recordkey.field"] = args.record_key
    if args.partition_by:
        opts["hoodie.datasource.write.partitionpath.field"] = args.partition_by
    if args.table_name:
        opts["hoodie.table.name"] = args.table_name
    reader = spark.read
    if args.format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    df = reader.format(args.format).load(args.source)
    result = write(df, args.path, opts, mode=args.mode)
    _print_json(result.__dict__)
    return 0


def _layout_options(args: argparse.Namespace) -> dict[str, str]:
    """``--option`` pairs plus the layout flags (``--weights``, ``--workload``) under their option keys."""
    opts = _options(args.option)
    if getattr(args, "weights", None):
        opts[cfg.CURVE_COLUMN_WEIGHTS.key] = args.weights
    if getattr(args, "workload", None):
        opts[cfg.WORKLOAD.key] = args.workload
    return opts


def cmd_cluster(args: argparse.Namespace) -> int:
    spark = _spark(args)
    metrics = cluster(args.path, _columns(args.columns), spark=spark, strategy=args.strategy, method=args.method,
                      options=_layout_options(args), include_all_files=not args.small_files_only)
    if metrics is None:
        print("nothing to cluster (no file group qualified)")
        return 0
    _print_json(metrics.to_dict())
    return 0


def cmd_clustering_service(args: argparse.Namespace) -> int:
    opts = _layout_options(args)
    if args.columns:
        opts["hoodie.clustering.plan.strategy.sort.columns"] = ",".join(_columns(args.columns))
    if args.strategy:
        opts["hoodie.layout.optimize.strategy"] = args.strategy
    if args.method:
        opts["hoodie.layout.optimize.curve.build.method"] = args.method
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    service = ClusteringService(args.path, opts, spark=_spark(args), poll_seconds=args.poll_seconds,
                                max_iterations=args.max_iterations)
    service.install_signal_handlers()
    stats = service.run()
    _print_json({"executed": stats.executed, "scheduled": stats.scheduled, "failures": stats.failures})
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    result = build_column_stats_index(args.path, _options(args.option), columns=_columns(args.columns) or None,
                                      rebuild=args.rebuild)
    _print_json(result)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    spark = _spark(args)
    table = HudiTable(args.path)
    df = spark.read.format("hudi_layout").load(str(table.base_path))
    for name in {"t", table.properties.table_name}:
        df.createOrReplaceTempView(f"`{name}`")
    result = spark.sql(args.sql)
    result.show(args.limit, truncate=False)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    where = args.where.strip()
    if where.lower().startswith("where "):
        where = where[6:]
    plan = plan_scan(args.path, where or None, use_column_stats=not args.no_stats)
    if args.json:
        _print_json(plan.to_dict())
    else:
        print(plan.render(max_dropped=args.max_dropped))
        if args.files:
            for f in plan.candidate_files:
                print(f"  {f}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    info = inspect_table(args.path)
    if args.json:
        _print_json(info)
    else:
            print(render(info))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    workload = None
    if args.workload:
        workload = (Workload.from_log(args.path) if args.workload.strip().lower() == cfg.WORKLOAD_FROM_LOG
                    else Workload.from_file(args.workload))
    data = write_report(args.path, _columns(args.columns), args.out, compare=args.compare,
                        labels=(args.label, args.compare_label), workload=workload)
    print(f"wrote {args.out}/layout_report.md" + (" and layout_boxes.png" if "png" in data else ""))
    for label, t in data["tables"].items():
        for c in t["columns"]:
            print(f"  {label:>8} {c['column']:<12} files={c['files']:<6} avg_depth={c['avg_depth']:<8} "
                  f"point_read={c['point_read_fraction']:.2%}")
    for row in data.get("workload", {}).get("queries", []):
        reads = "  ".join(f"{label}={n}" for label, n in row["files_read"].items())
        print(f"  workload {row['where'][:50]:<50} {reads}")
    return 0


# ------------------------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hudi-layout",
        description="Cluster Apache Hudi tables along z-order / Hilbert curves, keep a column_stats index, "
                    "and read only the files a query can match.")
    p.add_argument("--log-level", default="WARNING", help="Python log level (default WARNING)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def layout_flags(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workload", metavar="FILE|log",
                        help="predicates the layout is for: a file (one WHERE predicate per line, optionally "
                             "weight<TAB>predicate) or 'log' (the table's query log)")
        sp.add_argument("--weights", metavar="COL:W,...|workload",
                        help="curve column weights (a column twice as heavy gets one more top bit), or "
                             "'workload' to derive them from --workload")

    def common(sp: argparse.ArgumentParser, spark: bool = True) -> None:
        sp.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                        help="a Hudi option (repeatable), e.g. hoodie.parquet.max.file.size=134217728")
        if spark:
            sp.add_argument("--master", help="Spark master (default $SPARK_MASTER or local[*])")

    sp = sub.add_parser("ingest", help="write parquet / CSV / JSON data as (or into) a Hudi table")
    sp.add_argument("source", help="input path (file or folder)")
    sp.add_argument("path", help="Hudi table base path")
    sp.add_argument("--format", default="parquet", choices=["parquet", "csv", "json"])
    sp.add_argument("--record-key", help="record key field(s), comma-separated")
    sp.add_argument("--partition-by", help="partition field(s), comma-separated")
    sp.add_argument("--table-name")
    sp.add_argument("--mode", default="append", choices=["append", "overwrite"])
    common(sp)
    sp.set_defaults(func=cmd_ingest)

    sp = sub.add_parser("cluster", help="lay the table out along a curve (schedule + execute a clustering)")
    sp.add_argument("path")
    sp.add_argument("--columns", required=True, help="columns to cluster by, comma-separated")
    sp.add_argument("--strategy", default="z-order", choices=STRATEGY_CHOICES,
                    help="qdtree (alias workload): cut along the workload's predicates, Hilbert inside each leaf")
    sp.add_argument("--method", default="direct", choices=["direct", "sample"])
    sp.add_argument("--small-files-only", action="store_true",
                    help="plan only files below hoodie.clustering.plan.strategy.small.file.limit (Hudi's default)")
    layout_flags(sp)
    common(sp)
    sp.set_defaults(func=cmd_cluster)

    sp = sub.add_parser("clustering-service", help="run clustering continuously until stopped (SIGTERM)")
    sp.add_argument("path")
    sp.add_argument("--columns", help="sort columns (hoodie.clustering.plan.strategy.sort.columns)")
    sp.add_argument("--strategy", choices=STRATEGY_CHOICES)
    sp.add_argument("--method", choices=["direct", "sample"])
    layout_flags(sp)
    sp.add_argument("--poll-seconds", type=float, default=10.0)
    sp.add_argument("--max-iterations", type=int, default=None)
    common(sp)
    sp.set_defaults(func=cmd_clustering_service)

    sp = sub.add_parser("index", help="build or rebuild the column_stats index of an existing table")
    sp.add_argument("path")
    sp.add_argument("--columns", help="columns to index (default: all supported)")
    sp.add_argument("--rebuild", action="store_true", help="drop an existing metadata table first")
    common(sp, spark=False)
    sp.set_defaults(func=cmd_index)

    sp = sub.add_parser("query", help="run SQL on the table (as view `t`), with data skipping")
    sp.add_argument("path")
    sp.add_argument("sql", help='e.g. "SELECT count(*) FROM t WHERE dst_port = 443"')
    sp.add_argument("--limit", type=int, default=20)
    common(sp)
    sp.set_defaults(func=cmd_query)

    sp = sub.add_parser("explain", help="show which files a filter reads and why the others are skipped")
    sp.add_argument("path")
    sp.add_argument("where", help='e.g. "WHERE src_port BETWEEN 1000 AND 1999"')
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--files", action="store_true", help="list the candidate files")
    sp.add_argument("--no-stats", action="store_true", help="partition pruning only")
    sp.add_argument("--max-dropped", type=int, default=10)
    sp.set_defaults(func=cmd_explain)

    sp = sub.add_parser("inspect", help="timeline, file groups, pending clustering, metadata table")
    sp.add_argument("path")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_inspect)

    sp = sub.add_parser("report", help="layout report: overlap per column + file-box picture (Markdown+PNG)")
    sp.add_argument("path")
    sp.add_argument("--columns", required=True)
    sp.add_argument("--out", required=True, help="output folder")
    sp.add_argument("--compare", help="a second table (or snapshot copy) to draw side by side")
    sp.add_argument("--label", default="table")
    sp.add_argument("--compare-label", default="compare")
    sp.add_argument("--workload", metavar="FILE|log",
                    help="also report the files each workload predicate reads, per table (a file or 'log')")
    sp.set_defaults(func=cmd_report)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.WARNING))
    try:
        return int(args.func(args) or 0)
    except HudiLayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        if getattr(e, "hint", None):
            print(f"hint: {e.hint}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # Spark analysis errors etc.: one line, not a JVM stack
        name = type(e).__name__
        if name in ("AnalysisException", "ParseException", "IllegalArgumentException", "PySparkException",
                    "SparkRuntimeException") or "pyspark" in type(e).__module__:
            first = str(e).strip().splitlines()[0] if str(e).strip() else name
            print(f"error: {first}", file=sys.stderr)
            return EXIT_USAGE
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
