"""The ``hudi-layout`` command.

Every subcommand takes Hudi options as ``--option hoodie.x=y`` (repeatable) on top of one defaults file
(see :func:`hudi_layout.options.defaults_file_candidates`; ``inspect`` says which one is used). Output is
for people; ``--json`` gives the same for machines. Errors print one line plus a hint and exit with
status 2; unexpected failures exit with status 1.

Only the commands that move data start Spark: ``ingest``, ``query``, ``clustering-service`` and the execution
half of ``cluster`` (checking, planning and ``--dry-run`` / ``--schedule-only`` do not). ``inspect``,
``explain``, ``report`` and ``index`` never do. Imports are made inside the commands so that a command only
pays for what it uses.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from hudi_layout.errors import HudiLayoutError, InvalidArgumentError, from_spark_error_text

EXIT_USAGE = 2
STRATEGY_CHOICES = ["linear", "z-order", "zorder", "hilbert", "qdtree", "workload"]


def _count(minimum: int) -> Any:
    """An argparse type: an integer of at least ``minimum`` (``--max-dropped -1`` printed wrong counts)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value
    return parse


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return value


def _key_values(pairs: Sequence[str] | None, flag: str, form: str, hint: str, prefix: str = "") -> dict[str, str]:
    """``KEY=VALUE`` flags (repeatable) as a dict; one that is not of ``form`` (no ``=``, or a key without
    ``prefix``) is refused naming the flag."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().startswith(prefix):
            raise InvalidArgumentError(f"{flag} expects {form}, got {pair!r}", hint=hint)
        out[key.strip()] = value.strip()
    return out


def _options(pairs: Sequence[str] | None) -> dict[str, str]:
    return _key_values(pairs, "--option", "key=value", "e.g. -o hoodie.parquet.max.file.size=134217728")


def _spark_conf(pairs: Sequence[str] | None) -> dict[str, str]:
    """``--conf spark.KEY=VALUE`` settings for the session (as spark-submit's ``--conf``)."""
    return _key_values(pairs, "--conf", "spark.KEY=VALUE", "e.g. --conf spark.sql.session.timeZone=America/New_York",
                       prefix="spark.")


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _spark(args: argparse.Namespace) -> Any:
    """Start (or reuse) the SparkSession; the JVM stays quiet unless ``--log-level`` is INFO or DEBUG."""
    from hudi_layout.spark.session import get_spark, quiet_conf

    extra = {} if _verbose(args) else quiet_conf()
    extra.update(_spark_conf(getattr(args, "conf", None)))
    if not _verbose(args):
        _silence_query_context_loggers()
    started = time.perf_counter()
    spark = get_spark("hudi-layout", master=getattr(args, "master", None), extra_conf=extra)
    args.timings["spark start"] = time.perf_counter() - started
    return spark


def _silence_query_context_loggers() -> None:
    """PySpark logs every failed SQL statement (a typo, a bad literal) with the JVM's whole stack trace as a
    JSON record before raising; the CLI reports the same error as one line (``error: ...``, exit 2), so those
    records are switched off unless ``--log-level`` is INFO or DEBUG."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # an older PySpark logs nothing of the kind
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def _verbose(args: argparse.Namespace) -> bool:
    return str(getattr(args, "log_level", "WARNING")).upper() in ("INFO", "DEBUG")


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def _progress() -> Any:
    from hudi_layout.tools.progress_view import terminal_progress

    return terminal_progress()


# ----------------------------------------------------------------------------------------- commands


def _ends_with_par1(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            f.seek(-4, 2)
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _check_source(source: str, fmt: str) -> None:
    """Checks on the input that need no Spark: it exists, and parquet timestamps Spark can read."""
    path = Path(source)
    if not path.exists():
        raise InvalidArgumentError(f"input {source} does not exist")
    # the files Spark reads: those it does not take for hidden (no part of the path starts with . or _)
    data_files = [] if path.is_file() else [
        p for p in sorted(path.rglob("*"))
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)]
    if path.is_dir() and not data_files:
        # Spark would say UNABLE_TO_INFER_SCHEMA (or read nothing), naming neither the folder nor the way out
        raise InvalidArgumentError(f"input folder {source} holds no data files",
                                   hint=f"point at a {fmt} file or a folder of them (--format parquet|csv|json)")
    if fmt != "parquet":
        return
    # one that is not parquet fails the job deep inside Spark (FAILED_READ_FILE); the parquet magic at each
    # file's end is cheap to check first
    for p in data_files:
        if p.stat().st_size and not _ends_with_par1(p):
            raise InvalidArgumentError(f"input folder {source} holds {p.relative_to(path)}, which is not a "
                                       "parquet file", hint="move it out of the folder, or give the parquet "
                                                            "files one by one; names starting with . or _ are "
                                                            "skipped")
    first = path if path.is_file() else next((p for p in data_files if p.suffix == ".parquet"), None)
    if first is None:
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(first)
    except (OSError, pa.ArrowInvalid) as e:
        raise InvalidArgumentError(f"{first} is not a readable parquet file: {e}") from None
    nanos = [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"]
    if nanos:
        raise InvalidArgumentError(
            f"{first} stores {', '.join(nanos)} as nanosecond timestamps, which Spark cannot read",
            hint="write the file with microseconds: pandas df.to_parquet(path, coerce_timestamps='us', "
                 "allow_truncated_timestamps=True), or pyarrow.parquet.write_table(t, path, coerce_timestamps='us')")


def cmd_ingest(args: argparse.Namespace) -> int:
    from hudi_layout import options as cfg
    from hudi_layout.format.properties import table_config_exists

    opts = _options(args.option)
    if args.record_key:
        opts[cfg.RECORD_KEY_FIELD.key] = args.record_key
    if args.partition_by:
        opts[cfg.PARTITION_PATH_FIELD.key] = args.partition_by
    if args.table_name:
        opts[cfg.TABLE_NAME.key] = args.table_name
    if args.operation:
        opts[cfg.OPERATION.key] = args.operation
    if args.precombine_field:
        opts[cfg.PRECOMBINE_FIELD.key] = args.precombine_field
    if args.partitions_to_delete:
        opts[cfg.PARTITIONS_TO_DELETE.key] = args.partitions_to_delete
    operation = cfg.OPERATION.get(cfg.resolve_options(opts))  # --operation, -o or the defaults file
    if args.partitions_to_delete and operation is not cfg.WriteOperation.DELETE_PARTITION:
        raise InvalidArgumentError("--partitions-to-delete applies to --operation delete_partition only",
                                   hint="add --operation delete_partition, or drop --partitions-to-delete")
    if args.partitions_to_delete and args.source is not None:
        raise InvalidArgumentError("--operation delete_partition takes its partitions from --partitions-to-delete "
                                   "or from the rows of SOURCE, not both", hint="drop SOURCE or the flag")
    from hudi_layout.services.write import write

    if args.source is None:
        if opts.get(cfg.OPERATION.key, "").strip().lower() != "delete_partition":
            raise InvalidArgumentError("ingest needs a source path (only --operation delete_partition has none)",
                                       hint="hudi-layout ingest SOURCE TABLE ...")
        if not opts.get(cfg.PARTITIONS_TO_DELETE.key):
            raise InvalidArgumentError("--operation delete_partition without a source needs --partitions-to-delete",
                                       hint="--partitions-to-delete p1,p2")
        from hudi_layout.spark.read import spark_schema
        from hudi_layout.table.hudi_table import HudiTable

        spark = _spark(args)
        df = spark.createDataFrame([], spark_schema(HudiTable(args.path), include_meta=False))
        _print_write_result(args, write(df, args.path, opts, mode=args.mode))
        return 0
    _check_source(args.source, args.format)
    from hudi_layout.format.properties import load_properties
    from hudi_layout.table.paths import table_dir

    hoodie = table_dir(args.path) / ".hoodie"
    if table_config_exists(hoodie):  # before Spark starts (a minute on a busy cluster, cluster probe F2)
        props = load_properties(hoodie)
        cfg.refuse_table_config_conflicts(props, opts, props.table_name)
    elif not cfg.RECORD_KEY_FIELD.get(cfg.resolve_options(opts)):
        raise InvalidArgumentError(f"{args.path} is a new table and needs a record key",
                                   hint="--record-key COLUMN (a column, or columns a,b, unique per row)")
    spark = _spark(args)
    reader = spark.read
    if args.format == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    if args.format in ("csv", "json"):
        reader = reader.option("mode", "FAILFAST")  # a malformed row fails the read instead of becoming nulls
    df = reader.format(args.format).load(args.source)
    t0 = time.perf_counter()
    with _progress():
        result = write(df, args.path, opts, mode=args.mode)
    args.timings["write (Spark job + commit)"] = time.perf_counter() - t0
    _print_write_result(args, result)
    return 0


def _print_write_result(args: argparse.Namespace, result: Any) -> None:
    """One line for people; ``--json``: the whole result (a source-less ``delete_partition`` printed JSON
    always, a probe)."""
    if args.json:
        _print_json(result.__dict__)
    else:
        changed = (f"{result.records_updated:,} updated, {result.records_inserted:,} inserted, "
                   f"{result.records_deleted:,} deleted; " if result.operation in ("upsert", "delete") else "")
        # an upsert's rows written include the unchanged rows of every file group it rewrote (a probe read
        # "30,000 rows" for a 1,000-row upsert): the record counts come first
        print(f"{result.operation} {result.instant_time}: {changed}{result.records_written:,} rows written in "
              f"{result.files_written} files ({_mb(result.bytes_written)}, {len(result.partitions)} partitions) "
              f"in {result.seconds:.1f}s")


def _layout_options(args: argparse.Namespace) -> dict[str, str]:
    """``--option`` pairs plus the layout flags (``--weights``, ``--workload``) under their option keys."""
    from hudi_layout import options as cfg

    opts = _options(args.option)
    if getattr(args, "weights", None):
        opts[cfg.CURVE_COLUMN_WEIGHTS.key] = args.weights
    if getattr(args, "workload", None):
        opts[cfg.WORKLOAD.key] = args.workload
    return opts


def _print_metrics(m: Any, what: str) -> None:
    d = m.to_dict()
    print(f"{what} {m.instant_time} ({m.strategy}, {m.method}, by {', '.join(m.columns)}): {m.files_in} files -> "
          f"{m.files_out} files in {d['partitions']} partition(s), {m.records:,} rows, {_mb(m.bytes_out)} "
          f"in {m.seconds:.1f}s")
    for note in m.notes:
        print(f"note: {note}")


def cmd_cluster(args: argparse.Namespace) -> int:
    from hudi_layout.services import clustering as svc

    opts = _layout_options(args)
    columns = _columns(args.columns) if args.columns is not None else None
    if args.dry_run and (args.schedule_only or args.abandon_pending):
        raise InvalidArgumentError("--dry-run writes nothing, so it excludes --schedule-only and --abandon-pending",
                                   hint="drop --dry-run to act, or the other flag to preview")
    if args.dry_run:
        plan = svc.preview_clustering(args.path, columns, args.strategy, args.method, opts,
                                      include_all_files=not args.small_files_only)
        pending = svc.pending_clusterings(args.path)
        if args.json:
            from hudi_layout.clustering.schedule import describe_plan

            _print_json({"plan": json.loads(describe_plan(plan)) if plan else None,
                         "pending": [p.__dict__ for p in pending]})
            return 0
        for p in pending:
            print(f"pending: {p.describe()}")
        if plan is None:
            print("nothing new to cluster (no file group qualified"
                  + ("; the pending plan(s) above run first without --no-resume)" if pending else ")"))
        else:
            print(f"would cluster {plan.num_slices} files ({_mb(plan.total_bytes)}) in {len(plan.partitions)} "
                  f"partition(s), {len(plan.groups)} group(s) -> {plan.num_output_file_groups} files, "
                  f"by {', '.join(plan.sort_columns)} ({plan.options.layout_strategy})")
        return 0
    t0 = time.perf_counter()
    with _progress():
        run = svc.run_clustering(lambda: _spark(args), args.path, columns, args.strategy, args.method, opts,
                                 include_all_files=not args.small_files_only, resume=args.resume,
                                 abandon_pending=args.abandon_pending, schedule_only=args.schedule_only)
    args.timings["clustering (plan, Spark jobs, commit)"] = (time.perf_counter() - t0
                                                             - args.timings.get("spark start", 0.0))
    if args.json:
        _print_json({"resumed": [m.to_dict() for m in run.resumed], "clustered": run.new.to_dict() if run.new
                     else None, "scheduled": run.scheduled, "pending": [p.__dict__ for p in run.waiting],
                     "abandoned": list(run.abandoned)})
        return 0
    for t in run.abandoned:
        print(f"rolled back pending clustering {t} (a rollback instant)")
    if run.abandoned and not args.columns:
        return 0
    for m in run.resumed:
        _print_metrics(m, "resumed pending clustering")
    if run.resumed:
        print("(the pending plan ran instead of a new one; run the command again to plan a new clustering)")
    if run.new is not None:
        _print_metrics(run.new, "clustered")
    if run.scheduled is not None:
        again = f"hudi-layout cluster {args.path}" + (f" --columns {args.columns}" if args.columns else "")
        print(f"scheduled clustering {run.scheduled} (not executed: run `{again}` to execute it)")
    for p in run.waiting:
        if p.instant_time == run.scheduled:
            continue
        hint = "" if p.running else " (run `hudi-layout cluster` without --no-resume to execute it)"
        print(f"pending: {p.describe()}{hint}")
    if run.new is None and run.scheduled is None and not run.resumed:
        print("nothing new to cluster (no file group qualified"
              + (": every file group is in a pending plan)" if run.waiting else ")"))
    return 0


def cmd_execute_pending(args: argparse.Namespace) -> int:
    from hudi_layout.api import execute_pending

    done = execute_pending(args.path, spark=_spark(args), options=_options(args.option), only=args.instant)
    if args.json:
        _print_json([m.to_dict() for m in done])
        return 0
    for m in done:
        _print_metrics(m, "executed pending clustering")
    if not done:
        print("no pending clustering plan to execute")
    return 0


def cmd_clustering_service(args: argparse.Namespace) -> int:
    from hudi_layout import options as cfg
    from hudi_layout.services.clustering_service import ClusteringService, ServiceEvent

    opts = _layout_options(args)
    if args.columns:
        opts[cfg.SORT_COLUMNS.key] = ",".join(_columns(args.columns))
    if args.strategy:
        opts[cfg.LAYOUT_STRATEGY.key] = args.strategy
    if args.method:
        opts[cfg.CURVE_BUILD_METHOD.key] = args.method

    def show(event: ServiceEvent) -> None:
        print(json.dumps(event.to_dict(), default=str) if args.json else event.line(), flush=True)

    service = ClusteringService(args.path, opts, spark=_spark(args), poll_seconds=args.poll_seconds,
                                max_iterations=args.max_iterations, on_event=show)
    service.install_signal_handlers()
    service.run()
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from hudi_layout.services.index import build_column_stats_index

    with _progress():
        result = build_column_stats_index(args.path, _options(args.option), columns=_columns(args.columns) or None,
                                          rebuild=args.rebuild, read_floats=args.read_floats,
                                          spark=lambda: _spark(args))  # started only to read floats or logs
    if args.json:
        _print_json(result)
    elif result["status"] == "exists":
        print(f"the table already has a metadata table ({', '.join(result['metadata_partitions'])}); "
              f"{result['hint']}")
    else:
        print(f"built column_stats for {result['files']} files in {result['partitions']} partition(s): "
              f"{result['stats_records']} stats records in {result['seconds']:.1f}s"
              + (f" ({result['log_files_read']} log file(s) read in a Spark job)" if result["log_files_read"] else ""))
        for column, why in result.get("unindexed_columns", {}).items():
            print(f"note: column {column} ({why})")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """No Spark: a clean deletes files and writes timeline / metadata-table entries on this machine."""
    from hudi_layout.api import clean

    results = clean(args.path, options=_options(args.option))
    if args.json:
        _print_json([r.to_dict() for r in results])
    elif not results:
        print("nothing to clean")
    else:
        for r in results:
            how = "finished pending clean" if r.resumed else "clean"
            print(f"{how} {r.instant_time}: deleted {r.files_deleted} file(s), {r.bytes_deleted} bytes "
                  f"({r.policy}, earliest retained commit {r.earliest_commit_to_retain or '-'})")
    return 0


def cmd_savepoint(args: argparse.Namespace) -> int:
    """A savepoint is one timeline file naming the files of a commit's snapshot (no Spark); a restore starts
    Spark only to index Merge-on-Read log files again."""
    from hudi_layout.api import delete_savepoint, savepoint, savepoints

    if args.action == "restore":
        return _restore(args)
    if args.master or args.conf:
        raise InvalidArgumentError(f"--master / --conf apply to savepoint restore only: savepoint {args.action} "
                                   "starts no Spark", hint="drop them")
    if args.instant and args.action != "delete":
        raise InvalidArgumentError(f"savepoint {args.action} takes no instant argument",
                                   hint="create: --at INSTANT picks the commit; delete: savepoint delete PATH INSTANT")
    if (args.at or args.comment) and args.action != "create":
        raise InvalidArgumentError(f"--at / --comment only apply to savepoint create, not {args.action}",
                                   hint=f"hudi-layout savepoint {args.action} PATH"
                                        + (" INSTANT" if args.action == "delete" else ""))
    if args.action == "create":
        info = savepoint(args.path, args.at, comment=args.comment or "")
        if args.json:
            _print_json(info.to_dict())
        else:
            print(f"savepoint {info.instant_time}: {info.files} file(s) in {info.partitions} partition(s) kept "
                  "from every clean until the savepoint is deleted")
        return 0
    if args.action == "delete":
        if not args.instant:
            raise InvalidArgumentError("savepoint delete needs the savepoint's instant time",
                                       hint="hudi-layout savepoint delete PATH INSTANT ('savepoint list PATH')")
        delete_savepoint(args.path, args.instant)
        if args.json:
            _print_json({"deleted": args.instant})
        else:
            print(f"deleted savepoint {args.instant}")
        return 0
    found = savepoints(args.path)
    if args.json:
        _print_json([i.to_dict() for i in found])
    elif not found:
        print("no savepoints")
    else:
        for i in found:
            if i.state != "completed":
                print(f"{i.instant_time}  inflight (pins nothing: create it again or delete it)")
                continue
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(i.savepointed_at_ms / 1000))
            print(f"{i.instant_time}  {i.files} file(s), {i.partitions} partition(s), by {i.savepointed_by or '-'}"
                  f" at {when} UTC{f': {i.comments}' if i.comments else ''}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from hudi_layout.services.index import build_column_stats_index
    from hudi_layout.services.savepoint import restore_to_savepoint

    if not args.instant or args.at or args.comment:
        raise InvalidArgumentError("savepoint restore takes the savepoint's instant time (and no --at / --comment)",
                                   hint="hudi-layout savepoint restore PATH INSTANT ('savepoint list PATH')")
    result = restore_to_savepoint(
        args.path, args.instant,
        rebuild_index=lambda p: build_column_stats_index(p, spark=lambda: _spark(args)))
    if args.json:
        _print_json(result.to_dict())
        return 0
    how = "finished the restore" if result.resumed else "restored"
    print(f"{how} {result.restore_time}: the table is back at savepoint {result.savepoint_time}; "
          f"{len(result.rolled_back)} instant(s) rolled back, {result.files_deleted} file(s) deleted")
    if result.savepoints_deleted:
        print(f"note: savepoint(s) of rolled-back commits deleted: {', '.join(result.savepoints_deleted)}")
    if result.index:
        print(f"metadata table built again: column_stats for {result.index.get('files', 0)} file(s)")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from hudi_layout.services import compaction as svc

    if args.abandon and (args.schedule_only or args.instant):
        raise InvalidArgumentError("--abandon excludes --schedule-only and --instant: it rolls a plan back",
                                   hint="run them as separate commands")
    if args.abandon:
        if not svc.abandon_pending_compaction(args.path, args.abandon):
            raise InvalidArgumentError(f"no pending compaction {args.abandon} in {args.path}",
                                       hint="hudi-layout inspect PATH lists the pending compactions")
        if args.json:
            _print_json({"abandoned": args.abandon})
        else:
            print(f"abandoned pending compaction {args.abandon}")
        return 0
    opts = _options(args.option)
    with _progress():
        results = svc.compact(_spark(args), args.path, opts, schedule_only=args.schedule_only,
                              instant=args.instant)
    if args.json:
        _print_json([dataclasses.asdict(r) for r in results])
    elif not results:
        print("nothing to compact (no file slice outside a pending compaction or clustering has log files)")
    else:
        for r in results:
            print(r.describe())
    return 0


def _read_options(args: argparse.Namespace) -> dict[str, str]:
    """Hudi read options from ``-o key=value`` and the shorthand flags (the flags win)."""
    opts = _options(args.option)
    for flag, key in (("query_type", "hoodie.datasource.query.type"), ("as_of", "as.of.instant"),
                      ("begin", "hoodie.datasource.read.begin.instanttime"),
                      ("end", "hoodie.datasource.read.end.instanttime")):
        value = getattr(args, flag, None)
        if value is not None:
            opts[key] = value
    return opts


def cmd_query(args: argparse.Namespace) -> int:
    """The view ``t`` is the snapshot (or time-travel / incremental read) through Spark's parquet reader, as
    ``hudi_layout.read`` builds it. A statement that reads the view once and filters it with a WHERE
    (:func:`~hudi_layout.skipping.sql.where_of_single_scan`) gets a view of only the files that WHERE may
    match (the statement still applies its WHERE to their rows); any other statement, and a WHERE we do not
    parse, reads every file: one DataFrame serves every reference to ``t``, whatever each filters (the data
    source's pruning is per scan only on newer Spark; see spark.datasource)."""
    from hudi_layout.scan.plan import ScanPlan, plan_scan
    from hudi_layout.skipping.sql import is_writing_word, where_of_single_scan, writing_word

    word = writing_word(args.sql)
    if word is not None and not is_writing_word(word):  # a misspelt SELECT is not a change (a probe)
        raise InvalidArgumentError(f"query runs statements that read the table; this one starts with {word}, "
                                   "which no query starts with",
                                   hint="start it with SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW or EXPLAIN")
    if word is not None:
        raise InvalidArgumentError(f"query runs statements that read the table; this one is a change ({word})",
                                   hint="write with 'hudi-layout ingest' or hudi_layout.write; a column named "
                                        f"{word.lower()} is written `{word.lower()}`")
    from hudi_layout.spark.read import dataframe_for_plan, spark_schema
    from hudi_layout.table.hudi_table import HudiTable

    table = HudiTable(args.path)
    spark = _spark(args)
    t0 = time.perf_counter()
    names = {"t", table.properties.table_name}
    options = _read_options(args)

    def plan_for(where: str | None) -> ScanPlan:
        return plan_scan(str(table.base_path), where, spark=spark, table=table, with_row_counts=False,
                         options=options, source="query")

    # the column names (meta columns too) tell a qualified name (t.x, alias.x) from a struct field
    where = where_of_single_scan(args.sql, names, set(spark_schema(table, include_meta=True).fieldNames()))
    try:
        plan = plan_for(where)
    except InvalidArgumentError:
        if where is None:
            raise
        where, plan = None, plan_for(None)  # a condition our parser does not take: Spark judges every file
    # only files that may hold a matching row; the rows are filtered by the statement itself
    df = dataframe_for_plan(spark, table, plan, None)
    planned = ("plan (Spark analysis; every file read: no single WHERE over t to skip by)" if where is None else
               f"plan (Spark analysis + our file pruning: {plan.files_read} of {plan.files_total} file slices read)")
    for name in names:
        df.createOrReplaceTempView(f"`{name}`")
    result = spark.sql(args.sql)
    args.timings[planned] = time.perf_counter() - t0
    t0 = time.perf_counter()
    result.show(args.limit, truncate=False)
    args.timings["Spark job (read + compute + show)"] = time.perf_counter() - t0
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from hudi_layout.scan.plan import plan_scan
    from hudi_layout.skipping.bind import require_time_zone

    where = args.where.strip()
    if where.lower().startswith("where "):
        where = where[6:]
    zone = args.time_zone
    if zone is not None:
        require_time_zone(zone, "--time-zone")
    plan = plan_scan(args.path, where or None, use_column_stats=not args.no_stats, options=_read_options(args),
                     time_zone=zone)
    if args.json:
        _print_json(plan.to_dict())
    else:
        print(plan.render(max_dropped=args.max_dropped))
        if args.files:
            for f in plan.candidate_files:
                print(f"  {f}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from hudi_layout.tools.inspect import inspect_table, render

    info = inspect_table(args.path)
    if args.json:
        _print_json(info)
    else:
        print(render(info))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from hudi_layout.tools.layout_report import write_report

    workload = None
    if args.workload:
        from hudi_layout import options as cfg
        from hudi_layout.clustering.workload import Workload

        workload = (Workload.from_log(args.path) if args.workload.strip().lower() == cfg.WORKLOAD_FROM_LOG
                    else Workload.from_file(args.workload))
    data = write_report(args.path, _columns(args.columns), args.out, compare=args.compare,
                        labels=(args.label, args.compare_label), partition=args.partition, where=args.where,
                        workload=workload)
    if args.json:
        _print_json(data)
        return 0
    pics = [v for k, v in (data.get("pictures") or {}).items() if k in ("boxes", "partitions", "query") and v]
    print(f"wrote {Path(args.out) / 'layout_report.md'}" + (f" and {', '.join(pics)}" if pics else ""))
    for label, t in data["tables"].items():
        for c in t["columns"]:
            print(f"  {label:>12} {c['column']:<14} files={c['files']:<6} avg_depth={c['avg_depth']:<8} "
                  f"point_read={c['point_read_fraction']:.2%}")
    for row in data.get("workload", {}).get("queries", []):
        reads = "  ".join(f"{label}={n}" for label, n in row["files_read"].items())
        print(f"  workload {row['where'][:50]:<50} {reads}")
    return 0


# ------------------------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's error form: one ``error:`` line and a ``hint:`` line, exit 2 (argparse printed its
    usage block and no hint; a probe of session 31 counted it among the errors without one)."""

    def error(self, message: str) -> NoReturn:
        _print_error(f"{self.prog}: {message}", f"{self.prog} --help lists the arguments")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="hudi-layout",
        description="Cluster Apache Hudi tables along z-order / Hilbert curves, keep a column_stats index, "
                    "and read only the files a query can match.")
    p.add_argument("--log-level", default="WARNING",
                   help="Python log level (default WARNING); INFO or DEBUG also show Spark's own log")
    p.add_argument("--timing", action="store_true", help="print where the wall time went (stderr)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def layout_flags(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workload", metavar="FILE|log",
                        help="predicates the layout is for: a file (one WHERE predicate per line, optionally "
                             "weight<TAB>predicate) or 'log' (the table's query log)")
        sp.add_argument("--weights", metavar="COL:W,...|workload",
                        help="curve column weights (a column twice as heavy gets one more top bit), or "
                             "'workload' to derive them from --workload")

    def common(sp: argparse.ArgumentParser, spark: bool = True, options: bool = True, as_json: bool = True) -> None:
        if options:
            sp.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                            help="a Hudi option (repeatable), e.g. hoodie.parquet.max.file.size=134217728")
        if spark:
            sp.add_argument("--master", help="Spark master (default $SPARK_MASTER or local[*])")
            sp.add_argument("--conf", action="append", metavar="spark.KEY=VALUE",
                            help="a Spark setting (repeatable), e.g. spark.sql.session.timeZone=America/New_York "
                                 "(the zone timestamp text is read in; default UTC)")
        if as_json:
            sp.add_argument("--json", action="store_true", help="machine-readable output")

    sp = sub.add_parser("ingest", aliases=["write"],
                        help="write parquet / CSV / JSON data as (or into) a Hudi table: insert, upsert, delete, ...")
    sp.add_argument("source", nargs="?", help="input path (file or folder); none for delete_partition")
    sp.add_argument("path", help="Hudi table base path")
    sp.add_argument("--operation", choices=["bulk_insert", "insert", "upsert", "delete", "insert_overwrite",
                                            "insert_overwrite_table", "delete_partition"],
                    help="hoodie.datasource.write.operation (default bulk_insert)")
    sp.add_argument("--precombine-field", help="ordering field for upserts (hoodie.datasource.write.precombine.field)")
    sp.add_argument("--partitions-to-delete",
                    help="delete_partition: partition paths, comma-separated (* matches any characters)")
    sp.add_argument("--format", default="parquet", choices=["parquet", "csv", "json"])
    sp.add_argument("--record-key", help="record key field(s), comma-separated (required for a new table)")
    sp.add_argument("--partition-by", help="partition field(s), comma-separated")
    sp.add_argument("--table-name")
    sp.add_argument("--mode", default="append", choices=["append", "overwrite"])
    common(sp)
    sp.set_defaults(func=cmd_ingest)

    sp = sub.add_parser("cluster", help="lay the table out along a curve (runs a pending plan first, if any)")
    sp.add_argument("path")
    sp.add_argument("--columns", help="columns to cluster by, comma-separated")
    sp.add_argument("--abandon-pending", action="store_true",
                    help="roll back plans an interrupted run left pending (a rollback instant each), then "
                         "cluster --columns, if given")
    sp.add_argument("--strategy", choices=STRATEGY_CHOICES,
                    help="default: the option hoodie.layout.optimize.strategy, else z-order; qdtree (alias "
                         "workload): cut along the workload's predicates, Hilbert inside each leaf")
    sp.add_argument("--method", choices=["direct", "sample"],
                    help="default: the option hoodie.layout.optimize.curve.build.method, else direct")
    sp.add_argument("--small-files-only", action="store_true",
                    help="plan only files below hoodie.clustering.plan.strategy.small.file.limit (Hudi's default)")
    layout_flags(sp)
    sp.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                    help="execute pending clustering plans (left by an interrupted run, or Hudi's) instead of "
                         "a new one (default); --no-resume leaves them and says so")
    sp.add_argument("--dry-run", action="store_true", help="show the plan; write nothing, start no Spark")
    sp.add_argument("--schedule-only", action="store_true",
                    help="write the plan to the timeline without executing it (no Spark unless a qdtree "
                         "must be built)")
    common(sp)
    sp.set_defaults(func=cmd_cluster)

    sp = sub.add_parser("execute-pending", help="execute the pending clustering plans (e.g. to unblock upserts)")
    sp.add_argument("path")
    sp.add_argument("--instant", help="only this plan's instant time")
    common(sp)
    sp.set_defaults(func=cmd_execute_pending)

    sp = sub.add_parser("clustering-service", help="run clustering continuously until stopped (SIGTERM); "
                                                   "one line per action")
    sp.add_argument("path")
    sp.add_argument("--columns", help="sort columns (hoodie.clustering.plan.strategy.sort.columns)")
    sp.add_argument("--strategy", choices=STRATEGY_CHOICES)
    sp.add_argument("--method", choices=["direct", "sample"])
    layout_flags(sp)
    sp.add_argument("--poll-seconds", type=_positive_seconds, default=10.0)
    sp.add_argument("--max-iterations", type=_count(1), default=None)
    common(sp)
    sp.set_defaults(func=cmd_clustering_service)

    sp = sub.add_parser("index", help="build or rebuild the column_stats index of an existing table (from parquet "
                                      "footers; a Spark job only for Merge-on-Read log files and --read-floats)")
    sp.add_argument("path")
    sp.add_argument("--columns", help="columns to index (default: all supported)")
    sp.add_argument("--rebuild", action="store_true", help="drop an existing metadata table first")
    sp.add_argument("--read-floats", action="store_true",
                    help="also index float / double columns of existing files (footers hold no NaN-safe bounds, "
                         "so a Spark job reads those columns)")
    common(sp)
    sp.set_defaults(func=cmd_index)

    sp = sub.add_parser("compact", help="merge Merge-on-Read log files into new base files (Hudi's compaction; "
                                        "pending plans first)")
    sp.add_argument("path")
    sp.add_argument("--schedule-only", action="store_true", help="write the compaction plan only")
    sp.add_argument("--instant", help="execute this pending compaction plan only")
    sp.add_argument("--abandon", metavar="INSTANT",
                    help="roll back this pending compaction, plan included (Hudi CLI's compaction unschedule)")
    common(sp)
    sp.set_defaults(func=cmd_compact)

    sp = sub.add_parser("clean", help="delete file slices no retained instant needs (Hudi's clean; no Spark)")
    sp.add_argument("path")
    common(sp, spark=False)
    sp.set_defaults(func=cmd_clean)

    sp = sub.add_parser("savepoint", help="create, list, delete savepoints (a commit's files kept from every "
                                          "clean) or restore the table to one (Hudi's savepoint and restore)")
    sp.add_argument("action", choices=["create", "list", "delete", "restore"])
    sp.add_argument("path")
    sp.add_argument("instant", nargs="?", help="delete / restore: the savepoint's instant time")
    sp.add_argument("--at", metavar="INSTANT", help="create: the completed commit to savepoint (default: the latest)")
    sp.add_argument("--comment", help="create: a note kept in the savepoint")
    common(sp, options=False)  # Spark only for restore (Merge-on-Read log files when the index is built again)
    sp.set_defaults(func=cmd_savepoint)

    def read_flags(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--query-type", choices=["snapshot", "read_optimized", "incremental"],
                        help="hoodie.datasource.query.type (default snapshot; Merge-on-Read log files merged)")
        sp.add_argument("--as-of", help="time travel: as.of.instant (yyyyMMddHHmmssSSS, 'yyyy-MM-dd HH:mm:ss', "
                                        "yyyy-MM-dd): instants requested by then")
        sp.add_argument("--begin", help="incremental: commits completed after this instant (or 'earliest')")
        sp.add_argument("--end", help="incremental: ... and at or before this one (default: the latest)")

    sp = sub.add_parser("query", help="run read-only SQL on the table (as view `t`); a statement reading t "
                                      "once skips files by its WHERE")
    sp.add_argument("path")
    sp.add_argument("sql", help='e.g. "SELECT count(*) FROM t WHERE dst_port = 443"')
    sp.add_argument("--limit", type=_count(0), default=20)
    read_flags(sp)
    common(sp, as_json=False)
    sp.set_defaults(func=cmd_query)

    sp = sub.add_parser("explain", help="show which files a filter reads and why the others are skipped (no Spark)")
    sp.add_argument("path")
    sp.add_argument("where", help='e.g. "WHERE src_port BETWEEN 1000 AND 1999"')
    sp.add_argument("--files", action="store_true", help="list the candidate files")
    sp.add_argument("--no-stats", action="store_true", help="partition pruning only")
    sp.add_argument("--max-dropped", type=_count(0), default=10)
    sp.add_argument("--time-zone", metavar="ZONE",
                    help="read timestamp text in this zone, as query --conf spark.sql.session.timeZone=ZONE "
                         "does (default UTC)")
    read_flags(sp)
    common(sp, spark=False)
    sp.set_defaults(func=cmd_explain)

    sp = sub.add_parser("inspect", help="timeline, file groups, pending clustering, metadata table, defaults file "
                                        "(no Spark)")
    sp.add_argument("path")
    common(sp, spark=False, options=False)
    sp.set_defaults(func=cmd_inspect)

    sp = sub.add_parser("report", help="layout report: overlap per column + pictures of the file boxes (no Spark)")
    sp.add_argument("path")
    sp.add_argument("--columns", required=True, help="clustering columns, comma-separated (pictures: every pair)")
    sp.add_argument("--out", required=True, help="output folder")
    sp.add_argument("--compare", help="a second table (or snapshot copy) to draw side by side")
    sp.add_argument("--label", default="table", help="title of the table's panels (e.g. after)")
    sp.add_argument("--compare-label", default="compare", help="title of the --compare panels (e.g. before)")
    sp.add_argument("--partition", help="draw this partition (default: the one with the most files)")
    sp.add_argument("--where", help="also draw the files this filter reads (query_files.png)")
    sp.add_argument("--workload", metavar="FILE|log",
                    help="also report the files each workload predicate reads, per table (a file or 'log')")
    common(sp, spark=False, options=False)
    sp.set_defaults(func=cmd_report)
    return p


def _print_timings(timings: dict[str, float], total: float) -> None:
    rest = total - sum(timings.values())
    for what, seconds in [*timings.items(), ("the rest (imports, Python, exit)", rest)]:
        print(f"time: {seconds:7.2f}s  {what}", file=sys.stderr)
    print(f"time: {total:7.2f}s  total", file=sys.stderr)


def _spark_cause(e: BaseException) -> str:
    """The line of a Spark error that says what went wrong: the innermost ``Caused by:`` of a JVM stack (a
    malformed CSV record, a file that is not parquet), else the error's first line."""
    text = str(e).strip()
    causes = [line.split(": ", 1)[1] for line in text.splitlines()
              if line.startswith("Caused by: ") and ": " in line[len("Caused by: "):]]
    if causes:
        return " ".join(causes[-1].split())
    first = text.splitlines()[0] if text else ""
    if first.startswith("An error occurred while calling"):
        body = [line for line in text.splitlines()[1:] if line.startswith(": ")]
        return body[0][2:].strip() if body else first
    return first


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2, already printed as one line): a status, as below
        return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USAGE
    args.timings = {}
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.WARNING))
    try:
        return int(args.func(args) or 0)
    except HudiLayoutError as e:
        _print_error(str(e), getattr(e, "hint", None) or _general_hint(args))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `hudi-layout inspect T | head`
        sys.stderr.close()
        return 0
    except Exception as e:  # Spark analysis errors etc.: one line, not a JVM stack
        ours = from_spark_error_text(str(e))  # our error raised inside Spark (data source, executors)
        if ours is not None:
            _print_error(str(ours), ours.hint or _general_hint(args))
            return EXIT_USAGE
        name = type(e).__name__
        if name in ("AnalysisException", "ParseException", "IllegalArgumentException", "PySparkException",
                    "SparkRuntimeException", "PythonException", "Py4JJavaError") \
                or "pyspark" in type(e).__module__ or "py4j" in type(e).__module__:
            _print_error(_spark_cause(e) or name, "Spark refused it (HUDI_LAYOUT_TRACEBACK=1 shows Spark's stack)")
            if os.environ.get("HUDI_LAYOUT_TRACEBACK"):
                raise
            return EXIT_USAGE
        raise
    finally:
        if getattr(args, "timing", False):
            _print_timings(args.timings, time.perf_counter() - started)


def _general_hint(args: argparse.Namespace) -> str:
    """The hint of an error that brings none of its own (the README promises one with every error)."""
    return f"hudi-layout {args.command} --help lists its arguments"


def _print_error(message: str, hint: str | None) -> None:
    print(f"error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
