"""Schedule a clustering: plan it and write the requested instant to the timeline as Hudi does (§2.4, §4.6).

* v8/v9 (timeline layout 2): ``.hoodie/timeline/T.clustering.requested``;
* v6 (layout 1): ``.hoodie/T.replacecommit.requested``;

both holding an Avro HoodieRequestedReplaceMetadata ``{operationType: "CLUSTER", clusteringPlan: ...}``.
No inflight file is written: scheduling only *requests* the clustering; the executor moves it to inflight
(``commit_protocol.resume_clustering``) when it runs, and Hudi can run our plan too.

Everything that can be checked without writing is checked first (options, sort columns against the
schema, selected partitions). The plan itself is computed under the table lock, after re-reading the
timeline, so two schedulers never put the same file group into two plans.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout import options as cfg
from hudi_layout.clustering.plan import (
    ClusteringOptions,
    ClusteringPlanSpec,
    from_avro_plan,
    plan_clustering,
    validate_sort_columns,
)
from hudi_layout.errors import CorruptFileError, InvalidArgumentError
from hudi_layout.format import instant as inst
from hudi_layout.format.capabilities import Action, require, require_no_bootstrap_skeletons
from hudi_layout.format.commit_metadata import clustering_plan_metadata, requested_replace_bytes
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import State, instant_file_name, new_instant_time
from hudi_layout.format.properties import TableProperties, constant_partition_columns
from hudi_layout.format.schema_conversion import avro_to_arrow_schema
from hudi_layout.format.spark_calendar import (
    old_datetime_columns,
    require_stored_calendar,
    unwritable_datetimes_error,
)
from hudi_layout.options import LayoutStrategy
from hudi_layout.table.commit_protocol import latest_time_with_metadata, timeline_dir
from hudi_layout.table.faults import crash_point
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock


def clustering_action(props: TableProperties) -> str:
    """Timeline action of a pending clustering: ``clustering`` on layout 2, ``replacecommit`` on v6."""
    return inst.CLUSTERING if props.timeline_layout_version >= 2 else inst.REPLACE_COMMIT


def _field_arrow_type(f: Mapping[str, Any]) -> pa.DataType | None:
    """Arrow type of one Avro field; nested types map to empty Arrow nested types so validation names them."""
    try:
        return avro_to_arrow_schema({"type": "record", "name": "r", "fields": [dict(f)]}).field(0).type
    except (InvalidArgumentError, KeyError, TypeError, ValueError):
        pass
    t = f.get("type")
    branches = [b for b in (t if isinstance(t, list) else [t]) if b != "null"]
    if len(branches) > 1:
        return pa.dense_union([])
    b = branches[0] if branches else None
    kind = b.get("type") if isinstance(b, dict) else b
    if kind == "array":
        return pa.list_(pa.null())
    if kind == "map":
        return pa.map_(pa.string(), pa.null())
    if kind == "record":
        return pa.struct([])
    return None


def table_arrow_schema(table: HudiTable) -> pa.Schema | None:
    """Arrow view of the table schema for column checks (``None`` when the table has no schema yet)."""
    sd = table.schema_dict()
    if not sd:
        return None
    fields = []
    for f in sd.get("fields", []):
        t = _field_arrow_type(f)
        if t is not None:
            fields.append(pa.field(f["name"], t))
    return pa.schema(fields)




def prepare_clustering_options(table: HudiTable, options: Mapping[str, Any] | None = None, *,
                               columns: str | Sequence[str] | None = None, strategy: str | None = None,
                               method: str | None = None, include_all_files: bool = False,
                               resolve: bool = True) -> ClusteringOptions:
    """Parse and validate options against ``table`` (reads only; raises before anything is written)."""
    merged = cfg.resolve_options(options) if resolve else dict(options or {})
    opts = ClusteringOptions.from_options(merged, columns=columns, strategy=strategy, method=method,
                                          include_all_files=include_all_files)
    require(table.properties, Action.CLUSTER)  # the executor's rule: never schedule what it refuses
    if opts.sort_columns:
        validate_sort_columns(opts, table.data_columns(), partition_columns=constant_partition_columns(
            table.properties), schema=table_arrow_schema(table))
    if opts.partition_selected:
        existing = set(table.partitions())
        unknown = [p for p in opts.partition_selected if p not in existing]
        if unknown:
            shown = ", ".join(sorted(existing)[:10]) or "none"
            raise InvalidArgumentError(
                f"option {cfg.PARTITION_SELECTED.key} names partition(s) the table does not have: "
                f"{', '.join(unknown)} (partitions: {shown})")
    return opts


def schedule_clustering(base_path: str | os.PathLike[str], options: Mapping[str, Any] | None = None, *,
                        columns: str | Sequence[str] | None = None, strategy: str | None = None,
                        method: str | None = None, include_all_files: bool = False,
                        lock: TableLock | None = None, resolve: bool = True,
                        datetime_rebase_mode: str | Callable[[], str] = "CORRECTED"
                        ) -> tuple[str, ClusteringPlanSpec] | None:
    """Plan a clustering of the table at ``base_path`` and write its requested instant.

    Returns ``(instant_time, plan)``, or ``None`` when no file group qualifies (nothing is written).
    ``options`` are ``hoodie.*`` settings (merged with the defaults file unless ``resolve=False``);
    ``columns``/``strategy``/``method`` override the sort-column and layout keys; ``datetime_rebase_mode`` is
    the session's ``spark.sql.parquet.datetimeRebaseModeInWrite`` (:func:`_require_writable_calendars`).
    """
    table = HudiTable(base_path)
    opts = prepare_clustering_options(table, options, columns=columns, strategy=strategy, method=method,
                                      include_all_files=include_all_files, resolve=resolve)
    lock = lock or TableLock(table.base_path)
    with lock:
        table.reload()  # under the lock: see every plan scheduled before us
        pending = table.pending_clustering_file_groups()
        if table.is_mor:  # Hudi never clusters a file group a pending compaction will rewrite
            compacting = table.fs_view.pending_compaction_file_groups()
            if compacting is None:
                raise CorruptFileError(f"{table.base_path}: a pending compaction's plan cannot be read",
                                       hint="finish or roll back the pending compaction with Hudi first")
            pending |= compacting
        partitions = [p for p in table.partitions() if opts.selects_partition(p)]
        plan = plan_clustering(table.file_slices(partitions=partitions), opts, pending)
        if plan is None:
            return None
        require_no_bootstrap_skeletons((s.base_file_name for g in plan.groups for s in g.slices), "cluster")
        _require_writable_calendars(table, plan, datetime_rebase_mode)
        props = table.properties
        t = new_instant_time(latest_time_with_metadata(table.base_path, props),
                             use_utc=props.timeline_timezone == "UTC")
        tdir = timeline_dir(table.base_path, props)
        tdir.mkdir(parents=True, exist_ok=True)
        name = instant_file_name(t, clustering_action(props), State.REQUESTED,
                                 layout_version=props.timeline_layout_version)
        data = requested_replace_bytes(clustering_plan_metadata(plan.to_avro_plan(table.base_path)))
        atomic_write(tdir / name, data, table.hoodie_dir / ".temp")
    crash_point("cluster.after_plan")
    return t, plan


def _require_writable_calendars(table: HudiTable, plan: ClusteringPlanSpec,
                                datetime_rebase_mode: str | Callable[[], str]) -> None:
    """Refusals decided from the planned files' footers, before the plan is written (so a refusal leaves no
    pending plan behind, and the linear clustering it may suggest is not held up by one): a curve or qdtree
    layout reads rows with Arrow, as stored, so a file whose dates Spark converts from the old hybrid calendar
    on every read would be rewritten with other dates as Spark sees them
    (:func:`~hudi_layout.format.spark_calendar.require_stored_calendar`); and a session whose
    ``spark.sql.parquet.datetimeRebaseModeInWrite`` is not ``CORRECTED`` refuses old dates in the files the
    clustering would write (the executors check the rows too). ``datetime_rebase_mode`` may be a function: it
    is asked only when an input holds such dates (the caller's may start Spark, which the execution would)."""
    arrow_reads = plan.options.layout_strategy is not LayoutStrategy.LINEAR
    mode = datetime_rebase_mode.strip().upper() if isinstance(datetime_rebase_mode, str) else None
    schema = table.schema() or ""
    if not (arrow_reads or mode != "CORRECTED") or ('"date"' not in schema and "timestamp" not in schema):
        return  # nothing to check, or no date / timestamp column (their Avro logical types)
    for group in plan.groups:
        for s in group.slices:
            if not s.base_file_name:
                continue
            try:
                meta = pq.read_metadata(s.base_file_path)
            except (OSError, pa.ArrowException):
                continue  # the execution names a file it cannot read
            if arrow_reads:
                require_stored_calendar(meta, s.base_file_path, "rewrite")
            old = old_datetime_columns(meta) if mode != "CORRECTED" else []
            if not old:
                continue
            if mode is None:
                assert callable(datetime_rebase_mode)
                mode = datetime_rebase_mode().strip().upper()
            if mode != "CORRECTED":
                raise unwritable_datetimes_error(
                    f"clustering input {s.base_file_path} holds dates before 1582-10-15 or timestamps before 1900 "
                    f"in {old}", mode)


def load_pending_plans(base_path: str | os.PathLike[str], options: Mapping[str, Any] | None = None
                       ) -> list[tuple[str, ClusteringPlanSpec]]:
    """Every pending clustering plan (requested or inflight), oldest first; slices resolved under
    ``base_path``."""
    table = HudiTable(base_path)
    return [(i.requested_time, from_avro_plan(plan, table.base_path, options))
            for i, plan in table.timeline.pending_clustering()]


def load_plan(base_path: str | os.PathLike[str], instant_time: str,
              options: Mapping[str, Any] | None = None) -> ClusteringPlanSpec:
    """The clustering plan of instant ``instant_time`` (pending or completed)."""
    table = HudiTable(base_path)
    plan = table.timeline.read_clustering_plan(instant_time)
    if plan is None:
        raise InvalidArgumentError(f"{table.base_path}: instant {instant_time} has no clustering plan")
    return from_avro_plan(plan, table.base_path, options)


def describe_plan(plan: ClusteringPlanSpec) -> str:
    """One-line JSON summary (for logs and the CLI)."""
    return json.dumps({"groups": len(plan.groups), "slices": plan.num_slices, "bytes": plan.total_bytes,
                       "partitions": list(plan.partitions), "output_file_groups": plan.num_output_file_groups,
                       "sort_columns": list(plan.sort_columns), "layout": plan.options.layout_strategy})


__all__ = ["clustering_action", "constant_partition_columns", "table_arrow_schema",
           "prepare_clustering_options", "schedule_clustering", "load_pending_plans", "load_plan",
           "describe_plan"]
