"""Clustering as a transaction: schedule a plan, execute it (or plans left pending before), commit, metrics.

:func:`execute_plan` takes ownership of a pending plan (scheduled by us or by Hudi), runs the Spark job of
:mod:`hudi_layout.spark.clustering_job`, and completes one replacecommit listing the new files and every
replaced file id, after the metadata table's deltacommit for the same instant. A failure (or a kill) leaves
the clustering inflight; the next run rolls its files back and executes the same plan again.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanConfig, clean_if_due
from hudi_layout.clustering.metrics import ClusteringMetrics, GroupMetrics, PhaseTimer, few_files_note
from hudi_layout.clustering.plan import ClusteringPlanSpec, plan_clustering
from hudi_layout.clustering.schedule import (
    load_pending_plans,
    prepare_clustering_options,
    schedule_clustering,
    table_arrow_schema,
)
from hudi_layout.clustering.workload import Workload, as_workload
from hudi_layout.curves.region import CURVE_REGIONS_KEY, encode_regions
from hudi_layout.errors import (
    CommitConflictError,
    CorruptFileError,
    HudiLayoutError,
    InvalidArgumentError,
    from_spark_error_text,
)
from hudi_layout.format.capabilities import (
    Action,
    require,
    require_metadata_maintainable,
    require_no_bootstrap_skeletons,
)
from hudi_layout.format.commit_metadata import replace_commit_metadata_bytes
from hudi_layout.format.file_naming import try_parse_log_file_name
from hudi_layout.format.instant import SAVEPOINT
from hudi_layout.format.properties import load_properties, metadata_table_exists
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json, avro_to_arrow_schema
from hudi_layout.metadata.mdt_timeline import require_mdt_writable_if_present
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
from hudi_layout.options import CurveBuildMethod, LayoutStrategy, parse_layout_strategy
from hudi_layout.scan.merge import merge_config
from hudi_layout.spark.clustering_job import MergeInputs, build_workload_tree, data_schema, run_groups
from hudi_layout.spark.progress import watch
from hudi_layout.spark.write_job import datetime_rebase_write_mode
from hudi_layout.table.commit_protocol import (
    PendingWrite,
    complete_write,
    resume_clustering,
    rollback_failed_writes,
    rollback_pending_instant,
)
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock, writer_is_alive
from hudi_layout.table.paths import table_dir
from hudi_layout.writer.metadata_sync import (
    compact_metadata_if_due,
    drop_metadata_table_if_disabled,
    metadata_update_hook,
)
from hudi_layout.writer.transaction import commit_metadata_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

def execute_pending(spark: SparkSession, path: str, options: Mapping[str, Any] | None = None,
                    *, only: str | None = None) -> list[ClusteringMetrics]:
    """Execute every pending clustering plan whose executor is not alive (oldest first)."""
    base = table_dir(path)
    table = HudiTable(str(base))  # not a table: refused before anything is touched
    require(table.properties, Action.CLUSTER)
    opts = cfg.resolve_options(options)
    CleanConfig.from_options(opts)  # bad cleaner options: refused before anything
    cfg.refuse_options_unused_by(options, cfg.CLUSTER)
    if only is not None and not any(i.requested_time == only for i, _plan in table.timeline.pending_clustering()):
        raise InvalidArgumentError(f"no pending clustering plan {only} in {base}",
                                   hint="hudi-layout inspect PATH lists the pending clustering plans")
    _refuse_options_plans_override(table, cfg.canonical_options(options or {}), only)
    drop_metadata_table_if_disabled(str(base), opts)
    require_mdt_writable_if_present(base)  # before a rollback takes the table lock: a refusal changes nothing
    rollback_failed_writes(base, hooks=COMMIT_HOOKS)  # inflight clusterings of dead executors go back to requested
    done = []
    for instant_time, plan in load_pending_plans(base, options):
        if only is not None and instant_time != only:
            continue
        if writer_is_alive(base, instant_time):
            continue
        log.info("executing clustering %s (%d groups)", instant_time, len(plan.groups))
        done.append(execute_plan(spark, str(base), instant_time, plan, options))
    return done


def _refuse_options_plans_override(table: HudiTable, given: Mapping[str, Any], only: str | None) -> None:
    """A pending plan runs as it was scheduled: the settings its strategy parameters record (sort columns,
    layout, curve method, qdtree cuts, ...) win over the options. An option the caller gives that contradicts
    one of them is refused before anything runs (until session 29 it was taken without effect; a probe)."""
    for instant, plan in table.timeline.pending_clustering():
        if only is not None and instant.requested_time != only:
            continue
        recorded = ((plan.get("clusteringPlan") or plan).get("strategy") or {}).get("strategyParams") or {}
        for key, value in recorded.items():
            option = next((o for o in cfg.ALL_OPTIONS if key in (o.key, *o.aliases)), None)
            if option is None or not option.is_given(given):
                continue
            try:
                same = option.get(given) == option.get({key: value})
            except InvalidArgumentError:  # a recorded value we cannot parse: compare the text
                same = cfg.option_text(given.get(option.key, "")).strip() == str(value).strip()
            if not same:
                raise InvalidArgumentError(
                    f"option {option.key}={cfg.option_text(option.get(given))} contradicts pending clustering "
                    f"{instant.requested_time}, which records {key}={value} (a plan runs as it was scheduled)",
                    hint="drop the option, or roll the plan back (hudi-layout cluster --abandon-pending) and "
                         "cluster anew")


def resolve_workload(path: str, workload: Any, opts: Mapping[str, str]) -> Workload | None:
    """The workload of a clustering: the argument (predicates, a :class:`Workload`, a file path, or ``"log"``
    for the table's query log), else the ``hudi_layout.layout.workload`` option; ``None`` when neither."""
    value = workload if workload is not None else (cfg.WORKLOAD.get(opts).strip() or None)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == cfg.WORKLOAD_FROM_LOG:
        return Workload.from_log(path)
    return as_workload(value)


def prepare_layout_options(spark: SparkSession | Callable[[], SparkSession], path: str, opts: Mapping[str, str], *,
                           columns: Sequence[str] | str, strategy: LayoutStrategy,
                           method: str | CurveBuildMethod, workload: Any, include_all_files: bool) -> dict[str, str]:
    """Options with what a plan must record resolved from the workload: the qdtree's cuts (a Spark job over
    a sample of the table: a ``spark`` factory is called only then) and column weights asked to come from the
    workload. Validates first."""
    out = dict(opts)
    table = HudiTable(path)
    checked = prepare_clustering_options(table, out, columns=columns, strategy=strategy, method=method,
                                         include_all_files=include_all_files, resolve=False)
    wants_weights = checked.weights_from_workload or (checked.is_qdtree and not checked.column_weights)
    if not (checked.is_qdtree or checked.weights_from_workload):
        return out
    found = resolve_workload(path, workload, out)
    if found is None:
        if checked.is_qdtree:
            raise InvalidArgumentError(
                "strategy qdtree lays the table out for a workload, and none was given",
                hint=f"pass workload=[...] / --workload FILE, or set {cfg.WORKLOAD.key} (a file, or 'log')")
        raise InvalidArgumentError(
            f"{cfg.CURVE_COLUMN_WEIGHTS.key}={cfg.WEIGHTS_FROM_WORKLOAD} needs a workload",
            hint=f"pass workload=[...] / --workload FILE, or set {cfg.WORKLOAD.key}")
    schema = table_arrow_schema(table)
    if schema is None:
        raise InvalidArgumentError(f"{path} has no schema yet; write data before clustering it")
    cols = list(checked.sort_columns)
    predicates = found.predicates(schema)
    if wants_weights:
        weights = found.column_weights(cols, schema)
        out[cfg.CURVE_COLUMN_WEIGHTS.key] = ",".join(f"{c}:{w:.6g}" for c, w in weights.items())
    if checked.is_qdtree:
        partitions = [p for p in table.partitions() if checked.selects_partition(p)]
        slices = [s for s in table.file_slices(partitions=partitions) if s.base_file_name]
        if not slices:
            return out
        total = sum(s.size_bytes for s in slices)
        output_files = max(1, -(-total // checked.target_file_max_bytes))
        session = spark() if callable(spark) else spark
        tree, stats = build_workload_tree(session, [s.base_file_path for s in slices], cols, predicates, schema,
                                          output_files=output_files,
                                          sample_rows=cfg.QDTREE_SAMPLE_SIZE.get(out),
                                          min_leaf_files=cfg.QDTREE_MIN_LEAF_FILES.get(out),
                                          lookahead=cfg.QDTREE_LOOKAHEAD.get(out),
                                          leaf_cells=cfg.QDTREE_LEAF_CELLS.get(out),
                                          shape_weight=cfg.QDTREE_SHAPE_WEIGHT.get(out))
        log.info("qdtree for %s: %d leaves, estimated workload cost %.0f -> %.0f files", path, stats.leaves,
                 stats.cost_before, stats.cost_after)
        out[cfg.QDTREE_CUTS.key] = tree.to_json()
    return out


def cluster(spark: SparkSession, path: str, columns: Sequence[str] | str | None,
            strategy: str | LayoutStrategy | None = None, method: str | CurveBuildMethod | None = None,
            options: Mapping[str, Any] | None = None, *,
            include_all_files: bool = True, resume: bool = True, abandon_pending: bool = False,
            workload: Any = None) -> ClusteringMetrics | None:
    """Schedule a clustering of ``path`` on ``columns`` and execute it. Returns what it did: the new
    clustering, or the last pending plan it resumed instead, or ``None`` (no file group qualified).

    ``include_all_files`` (default True here, unlike Hudi's scheduler) plans every file group regardless
    of ``hoodie.clustering.plan.strategy.small.file.limit``: asking to lay a table out along a curve means
    the whole table. Set it to False for Hudi's small-files-only behaviour. ``workload`` (predicates, a
    :class:`~hudi_layout.clustering.workload.Workload`, a file path or ``"log"``) drives ``strategy="qdtree"``
    and column weights ``"workload"``.

    Plans an interrupted run left pending (their executor is gone) are never skipped silently:
    ``resume`` (default, like the retry of Hudi's clustering job) executes them instead of a new plan (then
    ``columns`` may be ``None``; a plan that fails again raises an error naming the damaged input, with the
    commands that unblock it); ``abandon_pending=True`` rolls them back (a Hudi ``rollback`` instant each)
    before scheduling the new clustering; ``resume=False`` leaves them (logged as a warning naming them) and
    plans the other file groups.
    """
    run = run_clustering(lambda: spark, path, columns, strategy, method, options,
                         include_all_files=include_all_files, resume=resume, abandon_pending=abandon_pending,
                         workload=workload)
    for waiting in run.waiting:
        log.warning("%s", waiting.describe())
    return run.new or (run.resumed[-1] if run.resumed else None)


def stale_pending_plans(base: Path) -> list[tuple[str, int]]:
    """``(instant, file groups)`` of pending clustering plans whose executor is not alive (inflight ones
    of dead executors go back to requested first)."""
    rollback_failed_writes(base, hooks=COMMIT_HOOKS)
    table = HudiTable(str(base))
    out = []
    for inst, plan in table.timeline.pending_clustering():
        if not writer_is_alive(base, inst.requested_time):
            groups = sum(len(g.get("slices") or []) for g in plan.get("inputGroups") or [])
            out.append((inst.requested_time, groups))
    return out


def abandon_pending_clustering(path: str, *, only: str | None = None) -> list[str]:
    """Roll back pending clustering plans whose executor is gone (plan included: Hudi's rollback of a pending
    replacecommit). Returns the abandoned instant times."""
    base = table_dir(path)
    done = []
    for t, _groups in stale_pending_plans(base):
        if only is not None and t != only:
            continue
        if rollback_pending_instant(base, t, hooks=COMMIT_HOOKS):
            log.info("abandoned pending clustering %s of %s", t, base)
            done.append(t)
    return done


def schedule_and_execute(spark: SparkSession, path: str, opts: Mapping[str, str]) -> ClusteringMetrics | None:
    """Schedule a clustering from the options alone (sort columns and layout keys) and execute it."""
    columns = cfg.split_fields(cfg.SORT_COLUMNS.get(opts))
    CleanConfig.from_options(opts)
    if not columns:
        raise InvalidArgumentError(
            f"{cfg.SORT_COLUMNS.key} must name the columns to cluster by for inline/async clustering")
    opts = prepare_layout_options(lambda: spark, path, opts, columns=columns,
                                  strategy=cfg.LAYOUT_STRATEGY.get(opts), method=cfg.CURVE_BUILD_METHOD.get(opts),
                                  workload=None, include_all_files=False)
    scheduled = schedule_clustering(path, opts, resolve=False)
    if scheduled is None:
        return None
    instant_time, plan = scheduled
    return execute_plan(spark, str(table_dir(path)), instant_time, plan, opts, scheduled_here=True)


def _failure(exc: Exception, base: Path, instant_time: str, plan: ClusteringPlanSpec) -> Exception:
    """One clear error for a failed clustering (the plan stays pending): a damaged input file is named;
    an error our executors reported comes back as itself; anything else is returned unchanged."""
    how = (f"plan {instant_time} stays pending: repair or restore the file, then "
           f"'hudi-layout cluster {base} --resume'; or roll it back: 'hudi-layout cluster {base} --abandon-pending'")
    for group in plan.groups:
        for s in group.slices:
            if not s.base_file_name:
                continue
            try:
                pq.read_metadata(s.base_file_path)
            except (OSError, pa.ArrowException) as e:
                return CorruptFileError(f"clustering input {s.base_file_path} cannot be read: {e}", hint=how)
    ours = exc if isinstance(exc, HudiLayoutError) else from_spark_error_text(str(exc))
    if isinstance(ours, CorruptFileError):
        ours.hint = how
    if ours is not None:
        return ours
    text = str(exc)
    for group in plan.groups:
        for s in group.slices:
            if s.base_file_path and (s.base_file_path in text or s.base_file_name in text):
                first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
                return CorruptFileError(f"clustering input {s.base_file_path} cannot be read: {first}", hint=how)
    return exc


def _arrow_schema_or_none(schema_json: str | None) -> pa.Schema | None:
    """The table's Arrow schema, or ``None`` (no schema, or types we cannot convert: files are read as they are)."""
    if not schema_json:
        return None
    try:
        return avro_to_arrow_schema(schema_json)
    except InvalidArgumentError:
        return None


def input_log_sizes(base: Path, plan: ClusteringPlanSpec) -> dict[str, int]:
    """Sizes of the plan's log files when the executor starts reading them (compared again at commit)."""
    sizes: dict[str, int] = {}
    for group in plan.groups:
        for s in group.slices:
            for path in s.log_file_paths(base):
                try:
                    sizes[path] = Path(path).stat().st_size
                except FileNotFoundError:
                    sizes[path] = -1  # reported by the executor (stale plan)
    return sizes


#: what a clustering whose commit check failed leaves: its files are rolled back, its plan stays requested
_RETRY_HINT = ("this attempt's files are rolled back and its plan stays pending, so updates to its file groups are "
               "refused until it runs: run the clustering again (it resumes the plan)")


def _check_inputs_current(base: Path, plan: ClusteringPlanSpec, log_sizes: Mapping[str, int] | None = None
                          ) -> None:
    """Conflict check (under the table lock): every input file group must still be live and unchanged.

    Merge-on-Read: Hudi's writers reject updates to file groups under a pending clustering; if a log lands on
    an input file group anyway (a writer that started before the plan, another tool), the rows the clustering
    read are stale and the replacecommit would hide the new log for ever. So the commit fails when the file
    group has a log file the plan did not list (committed, or written by a deltacommit still pending), when a
    listed log file changed size since the executor read it, or when a compaction of it was scheduled.
    """
    table = HudiTable(str(base))
    live = {s.file_group: s for s in table.file_slices()}
    pending_times = {i.requested_time for i in table.timeline.pending() if i.action != SAVEPOINT}
    compacting = table.fs_view.pending_compaction_file_groups() if table.is_mor else set()
    for group in plan.groups:
        for s in group.slices:
            fg = (s.partition_path, s.file_id)
            current = live.get(fg)
            where = f"{s.partition_path}/{s.file_id}" if s.partition_path else s.file_id
            if current is None:
                raise CommitConflictError(f"file group {where} was replaced by another commit while clustering")
            if current.base_file_name != s.base_file_name:
                raise CommitConflictError(
                    f"file group {where} got a new base file {current.base_file_name} while clustering")
            if not table.is_mor:
                continue
            logs = set(current.log_file_names) | _pending_log_files(base, s, pending_times)
            extra = sorted(logs - set(s.log_file_names))
            if extra:
                raise CommitConflictError(
                    f"file group {where} got log file(s) {', '.join(extra)} while clustering (another writer "
                    "appended updates to a file group under clustering)",
                    hint=_RETRY_HINT + " (it reads the new updates)")
            for path in s.log_file_paths(base):
                before = (log_sizes or {}).get(path)
                now = Path(path).stat().st_size if Path(path).exists() else -1
                if before is not None and now != before:
                    raise CommitConflictError(f"log file {path} of file group {where} changed while clustering",
                                              hint=_RETRY_HINT)
            if compacting is None or fg in compacting:
                raise CommitConflictError(f"file group {where} is in a pending compaction")


def _pending_log_files(base: Path, s: Any, pending_times: set[str]) -> set[str]:
    """Log files of file group ``s`` written by instants that are still pending (they may yet complete)."""
    pdir = base / s.partition_path if s.partition_path else base
    out = set()
    for name in os.listdir(pdir):
        lf = try_parse_log_file_name(name) if name.startswith(".") else None
        if lf is not None and lf.file_id == s.file_id and not lf.is_cdc and lf.instant_time in pending_times:
            out.add(name)
    return out


def execute_plan(spark: SparkSession, base_path: str, instant_time: str, plan: ClusteringPlanSpec,
                 options: Mapping[str, Any] | None = None, *, lock: TableLock | None = None,
                 scheduled_here: bool = False) -> ClusteringMetrics:
    """Execute the pending clustering ``instant_time`` (scheduled by us or by Hudi; ``scheduled_here``: just now,
    with ``options``, so their target file size is the plan's)."""
    started = time.time()
    opts = cfg.resolve_options(options)
    cfg.validate_all(opts)
    base = table_dir(base_path)
    props = load_properties(base / ".hoodie")
    cfg.refuse_table_config_conflicts(props, options, props.table_name)
    require(props, Action.CLUSTER)
    # a plan Hudi scheduled may hold them
    require_no_bootstrap_skeletons((s.base_file_name for g in plan.groups for s in g.slices), "cluster")
    if metadata_table_exists(base):
        require_metadata_maintainable(props)  # refuse MDT partitions we cannot keep in sync before writing anything
    table = HudiTable(str(base))
    data_columns = table.data_columns()
    table_schema = _arrow_schema_or_none(table.schema())
    merge = MergeInputs.for_table(table, data_columns) if table.is_mor else None
    timer = PhaseTimer()
    with timer.phase("start"):
        pending = resume_clustering(base, instant_time, lock=lock, hooks=COMMIT_HOOKS)
    try:
        log_sizes = input_log_sizes(base, plan)
        what = f"clustering {instant_time} ({plan.num_slices} files, {plan.total_bytes / 1e6:.1f} MB)"
        with timer.phase("groups"), watch(spark, what):
            metrics, written, regions = run_groups(spark, base, props, opts, pending, plan, data_columns, merge,
                                                   table_schema)
        with timer.phase("commit"):
            replaced: dict[str, list[str]] = {}
            for g in plan.groups:
                for s in g.slices:
                    replaced.setdefault(s.partition_path, []).append(s.file_id)
            fallback = table_schema or data_schema(spark, plan, data_columns, merge)

            def payload() -> bytes:
                """Under the table lock: the table's schema as it is now (a write may have evolved it while this
                clustering ran; the rewritten rows read back with it like any older file)."""
                schema_json = HudiTable(str(base)).schema() or arrow_to_avro_schema_json(fallback, props.table_name)
                meta = commit_metadata_for(written, schema_json, "CLUSTER", replaced)
                if regions:  # each file's curve-key range, for curve-region pruning (docs/layouts.md)
                    meta["extraMetadata"][CURVE_REGIONS_KEY] = encode_regions(regions)
                return replace_commit_metadata_bytes(meta, props.version)

            mdt_hook = metadata_update_hook(props, opts, written, replaced)

            def before_complete(p: PendingWrite) -> None:
                _check_inputs_current(base, plan, log_sizes)
                mdt_hook(p)

            complete_write(pending, payload, committed_files=[w.relative_path for w in written],
                           before_complete=before_complete)
        with timer.phase("metadata_compaction"):
            compact_metadata_if_due(base, opts)
    except BaseException as exc:
        pending.heartbeat.stop(delete=True)
        # Back to "requested": delete this attempt's files, keep the plan for the next run.
        try:
            rollback_failed_writes(base, lock=pending.lock, hooks=COMMIT_HOOKS)
        except HudiLayoutError:  # pragma: no cover - the next run retries
            log.exception("could not roll back clustering %s", instant_time)
        if isinstance(exc, Exception):
            translated = _failure(exc, base, instant_time, plan)
            if translated is not exc:
                raise translated from None
        raise
    clean_if_due(base, opts)  # hoodie.clean.automatic
    target = cfg.TARGET_FILE_MAX_BYTES.get(opts) if cfg.TARGET_FILE_MAX_BYTES.is_given(opts) or scheduled_here \
        else None  # a resumed plan was sized with the target of the run that scheduled it (cluster probe F3)
    note = few_files_note(tuple(metrics), target, cfg.TARGET_FILE_MAX_BYTES.key)
    return ClusteringMetrics(
        instant_time=instant_time, strategy=plan.options.layout_strategy,
        method=plan.options.curve_build_method, columns=tuple(plan.sort_columns), groups=len(plan.groups),
        files_in=sum(m.files_in for m in metrics), files_out=sum(m.files_out for m in metrics),
        bytes_in=sum(m.bytes_in for m in metrics), bytes_out=sum(m.bytes_out for m in metrics),
        records=sum(m.records for m in metrics), seconds=time.time() - started, group_metrics=tuple(metrics),
        phases={**timer.seconds, **group_phases(metrics)}, notes=(note,) if note else ())


def group_phases(metrics: Sequence[GroupMetrics]) -> dict[str, float]:
    """The groups' phases summed (``group.<phase>``); groups run concurrently, so sums may exceed wall time."""
    out: dict[str, float] = {}
    for m in metrics:
        for k, v in m.phases.items():
            out[f"group.{k}"] = out.get(f"group.{k}", 0.0) + v
    return out


@dataclass(frozen=True)
class PendingClustering:
    """A clustering plan on the timeline that has not completed."""

    instant_time: str
    state: str
    file_groups: int
    #: a live process holds its heartbeat (it is being executed right now)
    running: bool

    def describe(self) -> str:
        who = "running in another process" if self.running else "waiting to be executed"
        return f"clustering {self.instant_time} ({self.state}, {self.file_groups} file groups) is {who}"


def pending_clusterings(path: str) -> list[PendingClustering]:
    """Every pending clustering of the table, oldest first (no Spark)."""
    table = HudiTable(path)
    return [PendingClustering(i.requested_time, i.state.value,
                              sum(len(g.get("slices") or []) for g in (plan.get("inputGroups") or [])),
                              writer_is_alive(table.base_path, i.requested_time))
            for i, plan in table.timeline.pending_clustering()]


@dataclass(frozen=True)
class ClusteringRun:
    """What :func:`run_clustering` did."""

    #: pending plans executed first (left by an earlier, interrupted run, or scheduled by Hudi)
    resumed: tuple[ClusteringMetrics, ...] = ()
    #: the clustering scheduled and executed by this run
    new: ClusteringMetrics | None = None
    #: a plan scheduled and left for later (``schedule_only``)
    scheduled: str | None = None
    #: pending plans left after the run (executing elsewhere, or not resumed)
    waiting: tuple[PendingClustering, ...] = ()
    #: pending plans rolled back (``abandon_pending``)
    abandoned: tuple[str, ...] = ()


#: what the ``cluster`` command lays a table out with when neither the call nor the options name it; the
#: options' own defaults (linear, direct) are Hudi's and serve the inline and background services
COMMAND_STRATEGY = LayoutStrategy.Z_ORDER
COMMAND_METHOD = CurveBuildMethod.DIRECT


def command_layout(opts: Mapping[str, Any], strategy: str | LayoutStrategy | None,
                   method: str | CurveBuildMethod | None, *, caller: Mapping[str, Any] | None = None
                   ) -> tuple[LayoutStrategy, CurveBuildMethod]:
    """The strategy and method of a ``cluster`` command: the argument, else the option
    (``hoodie.layout.optimize.strategy`` / ``...curve.build.method``; ``opts`` holds the defaults file's beneath
    the caller's), else :data:`COMMAND_STRATEGY` / :data:`COMMAND_METHOD`. An argument that the caller's own
    options (``caller``) contradict is refused, since one of the two would be ignored (until session 29 the
    argument's default won over the option without a word); the defaults file only fills in."""
    layout = parse_layout_strategy(strategy, what="strategy") if strategy is not None else None
    build = CurveBuildMethod.parse(method) if method is not None else None
    mine = opts if caller is None else caller
    for option, given in ((cfg.LAYOUT_STRATEGY, layout), (cfg.CURVE_BUILD_METHOD, build)):
        if given is not None and option.is_given(mine) and option.get(mine) != given:
            raise InvalidArgumentError(
                f"{given} and option {option.key}={option.get(mine)} disagree",
                hint=f"name the {'strategy' if option is cfg.LAYOUT_STRATEGY else 'method'} once")
    layout = layout or (cfg.LAYOUT_STRATEGY.get(opts) if cfg.LAYOUT_STRATEGY.is_given(opts) else COMMAND_STRATEGY)
    build = build or (cfg.CURVE_BUILD_METHOD.get(opts) if cfg.CURVE_BUILD_METHOD.is_given(opts) else COMMAND_METHOD)
    return layout, build


_QDTREE_TUNING = (cfg.QDTREE_SAMPLE_SIZE, cfg.QDTREE_LOOKAHEAD, cfg.QDTREE_MIN_LEAF_FILES, cfg.QDTREE_LEAF_CELLS,
                  cfg.QDTREE_SHAPE_WEIGHT)


def refuse_layout_settings_the_strategy_ignores(layout: LayoutStrategy, method: CurveBuildMethod,
                                                caller: Mapping[str, Any], workload: Any) -> None:
    """Settings of a ``cluster`` command that its strategy would take without effect (session 29's probe): the
    ``sample`` method or column weights with ``linear`` (no curve), a workload with neither ``qdtree`` nor
    weights from the workload, the qdtree's tuning keys with another strategy, and the planner's own record of
    the tree (``hudi_layout.layout.qdtree``) given by the caller."""
    def refuse(what: str, hint: str) -> None:
        raise InvalidArgumentError(f"{what} has no effect with strategy {layout}", hint=hint)

    if cfg.QDTREE_CUTS.is_given(caller):
        raise InvalidArgumentError(f"option {cfg.QDTREE_CUTS.key} is written by the planner, not given",
                                   hint="drop it; strategy qdtree builds the tree from the workload")
    if layout is LayoutStrategy.LINEAR and method is CurveBuildMethod.SAMPLE:
        refuse("method sample", "drop it, or choose strategy z-order / hilbert")
    weights = cfg.CURVE_COLUMN_WEIGHTS.get(caller) if cfg.CURVE_COLUMN_WEIGHTS.is_given(caller) else None
    if layout is LayoutStrategy.LINEAR and weights:
        refuse("column weights", "drop them, or choose strategy z-order / hilbert")
    has_workload = workload is not None or bool(cfg.WORKLOAD.get(caller).strip())
    if has_workload and layout is not LayoutStrategy.QDTREE and weights != cfg.WEIGHTS_FROM_WORKLOAD:
        refuse("a workload", f"choose strategy qdtree, or column weights '{cfg.WEIGHTS_FROM_WORKLOAD}'")
    tuned = [o.key for o in _QDTREE_TUNING if o.is_given(caller)]
    if tuned and layout is not LayoutStrategy.QDTREE:
        refuse(", ".join(tuned), "drop them, or choose strategy qdtree")


def command_columns(opts: Mapping[str, Any], columns: Sequence[str] | str | None) -> Sequence[str] | str | None:
    """The sort columns of a ``cluster`` command: the argument, else ``hoodie.clustering.plan.strategy.sort.columns``
    (until session 29 a command without columns only resumed pending plans, whatever the option said)."""
    if columns is not None:
        return columns
    return cfg.split_fields(cfg.SORT_COLUMNS.get(opts)) or None


def _cluster_command(options: Mapping[str, Any] | None, strategy: str | LayoutStrategy | None,
                     method: str | CurveBuildMethod | None, columns: Sequence[str] | str | None, workload: Any
                     ) -> tuple[dict[str, str], LayoutStrategy, CurveBuildMethod, Sequence[str] | str | None]:
    """What a ``cluster`` command (run or preview) asks, checked before anything is read or written: the
    resolved options (every one parsed, the clean after it included), the strategy and method
    (:func:`command_layout`, with no setting it would ignore) and the sort columns (:func:`command_columns`)."""
    opts = cfg.resolve_options(options)
    cfg.validate_all(opts)
    CleanConfig.from_options(opts)  # the clean after the clustering: bad options refused before anything
    cfg.refuse_options_unused_by(options, cfg.CLUSTER)
    caller = cfg.canonical_options(options or {})
    layout, build = command_layout(opts, strategy, method, caller=caller)
    refuse_layout_settings_the_strategy_ignores(layout, build, caller, workload)
    return opts, layout, build, command_columns(opts, columns)


def preview_clustering(path: str, columns: Sequence[str] | str | None, strategy: str | LayoutStrategy | None = None,
                       method: str | CurveBuildMethod | None = None,
                       options: Mapping[str, Any] | None = None, *,
                       include_all_files: bool = True) -> ClusteringPlanSpec | None:
    """The plan :func:`cluster` would schedule now, without writing anything (no Spark)."""
    table = HudiTable(path)
    resolved, layout, build, columns = _cluster_command(options, strategy, method, columns, None)
    require(table.properties, Action.CLUSTER)  # a preview says what the run would: its refusals too
    if cfg.METADATA_ENABLE.get(resolved):  # false: the run drops the metadata table first
        require_mdt_writable_if_present(table.base_path)
    if columns is None:
        raise InvalidArgumentError("name the columns to cluster by",
                                   hint=f"--columns a,b (or the option {cfg.SORT_COLUMNS.key})")
    opts = prepare_clustering_options(table, resolved, columns=columns, strategy=layout, method=build,
                                      include_all_files=include_all_files, resolve=False)
    partitions = [p for p in table.partitions() if opts.selects_partition(p)]
    return plan_clustering(table.file_slices(partitions=partitions), opts, table.pending_clustering_file_groups())


def run_clustering(spark: Callable[[], SparkSession], path: str, columns: Sequence[str] | str | None,
                   strategy: str | LayoutStrategy | None = None, method: str | CurveBuildMethod | None = None,
                   options: Mapping[str, Any] | None = None, *, include_all_files: bool = True,
                   resume: bool = True, abandon_pending: bool = False,
                   schedule_only: bool = False, workload: Any = None) -> ClusteringRun:
    """Cluster the table: pending plans whose executor is gone run first (``resume``, like the retry of
    Hudi's clustering job), and when none did, a new plan is scheduled and executed.

    ``spark`` is called only when a plan is executed, so checking, planning and scheduling never start
    Spark. ``abandon_pending`` rolls the pending plans of dead executors back (a ``rollback`` instant each)
    instead of running them. With ``resume=False`` pending plans are left alone (and reported in
    ``waiting``); with ``schedule_only`` the new plan is written to the timeline and not executed. Every
    option (cleaning included) is checked before anything is written. ``workload`` drives ``strategy="qdtree"``
    and column weights ``"workload"`` (:func:`prepare_layout_options`; building a qdtree starts Spark).
    """
    opts, layout, method, columns = _cluster_command(options, strategy, method, columns, workload)
    base = table_dir(path)
    props = load_properties(base / ".hoodie")
    cfg.refuse_table_config_conflicts(props, options, props.table_name)
    require(props, Action.CLUSTER)  # before a lock file or a rollback: a refused run changes nothing
    if props.is_mor:
        merge_config(props)  # slices we could not merge are refused before scheduling
    drop_metadata_table_if_disabled(path, opts)
    require_mdt_writable_if_present(base)  # before a plan is written: one we would refuse to run is never scheduled
    resumed: list[ClusteringMetrics] = []
    abandoned: tuple[str, ...] = ()
    if abandon_pending:
        abandoned = tuple(abandon_pending_clustering(str(base)))
    elif resume and not schedule_only:
        stale = [t for t, _groups in stale_pending_plans(base)]  # inflight plans of dead executors -> requested
        for instant_time, plan in load_pending_plans(base, opts):
            if instant_time not in stale:
                continue
            log.info("resuming pending clustering %s (%d groups)", instant_time, len(plan.groups))
            resumed.append(execute_plan(spark(), str(base), instant_time, plan, opts))
    if resumed:  # as HoodieClusteringJob's retry of the last failed clustering: that run replaces a new one
        return ClusteringRun(tuple(resumed), None, None, tuple(pending_clusterings(str(base))))
    if not columns:
        if resume or abandon_pending:  # "resume only" (nothing was pending), or "abandon only": done
            return ClusteringRun((), None, None, tuple(pending_clusterings(str(base))), abandoned)
        raise InvalidArgumentError("name the columns to cluster by",
                                   hint=f"--columns a,b (or the option {cfg.SORT_COLUMNS.key})")
    timer = PhaseTimer()
    with timer.phase("prepare"):
        opts = prepare_layout_options(spark, path, opts, columns=columns, strategy=layout, method=method,
                                      workload=workload, include_all_files=include_all_files)
    with timer.phase("schedule"):
        scheduled = schedule_clustering(path, opts, columns=columns, strategy=layout, method=method,
                                        include_all_files=include_all_files, resolve=False,
                                        datetime_rebase_mode=datetime_rebase_write_mode if schedule_only
                                        else lambda: datetime_rebase_write_mode(spark()))
    new = None
    if scheduled is not None and not schedule_only:
        instant_time, plan = scheduled
        done = execute_plan(spark(), str(base), instant_time, plan, opts, scheduled_here=True)
        new = replace(done, phases={**timer.seconds, **done.phases})
    return ClusteringRun(tuple(resumed), new, scheduled[0] if scheduled and schedule_only else None,
                         tuple(pending_clusterings(str(base))), abandoned)
