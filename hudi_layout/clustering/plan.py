"""Clustering plans: options, pure planning from file slices, and the HoodieClusteringPlan Avro dict.

Planning follows Hudi's default plan strategy ``SparkSizeBasedClusteringPlanStrategy`` (docs/hudi-format.md
§4.3) so that a plan we schedule is the plan Hudi would have scheduled, and the Avro dict we produce has
exactly the shape Hudi writes (§4.2): a Hudi writer can execute our plans and we can execute Hudi's.

Shape of the API (delta-rs style *plan → execute → metrics*): :meth:`ClusteringOptions.from_options`
parses and validates options (no I/O), :func:`validate_sort_columns` checks them against the table's
schema (no I/O either; the caller passes the columns), :func:`plan_clustering` turns a list of file
slices into a :class:`ClusteringPlanSpec` (or ``None``), which :mod:`hudi_layout.clustering.schedule`
writes to the timeline and the executor runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.clustering.bin_packing import num_output_file_groups, pack_greedy, sort_largest_first
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.file_naming import log_sort_key, parse_log_file_name, try_parse_base_file_name
from hudi_layout.options import CurveBuildMethod, LayoutStrategy
from hudi_layout.table.fs_view import FileSlice

#: ``hoodie.clustering.execution.strategy.class`` default: sorts by the sort columns when they are set
SORT_AND_SIZE_EXECUTION_STRATEGY = (
    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy")
CLUSTER_OPERATION = "CLUSTER"
#: space-filling curves interleave bits of every column; beyond this the curve is a slow linear sort
MAX_CURVE_COLUMNS = 8
LAYOUT_STRATEGIES = tuple(s.value for s in LayoutStrategy)
CURVE_BUILD_METHODS = tuple(m.value for m in CurveBuildMethod)

METRIC_IO_READ_MB = "TOTAL_IO_READ_MB"
METRIC_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
METRIC_IO_MB = "TOTAL_IO_MB"
METRIC_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
METRIC_LOG_FILES = "TOTAL_LOG_FILES"

_MB = 1024 * 1024
T = TypeVar("T")


class SliceLike(Protocol):
    """What planning needs from a file slice (:class:`hudi_layout.table.fs_view.FileSlice` fits)."""

    @property
    def partition_path(self) -> str: ...
    @property
    def file_id(self) -> str: ...
    @property
    def base_file_name(self) -> str: ...
    @property
    def base_file_path(self) -> str: ...
    @property
    def size_bytes(self) -> int: ...


# ------------------------------------------------------------------------------------------- options

def _positive(opt: cfg.Option[int], value: int, *, allow_zero: bool = False) -> int:
    if value < 0 or (value == 0 and not allow_zero):
        raise InvalidArgumentError(f"option {opt.key}={value} must be {'>= 0' if allow_zero else '> 0'}")
    return value


def _columns_arg(columns: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(columns, str):
        return tuple(cfg.split_fields(columns))
    out = []
    for c in columns:
        if not isinstance(c, str):
            raise InvalidArgumentError(f"sort column {c!r} is not a column name (str)",
                                       hint="columns=['a', 'b'] or columns='a,b'")
        if c.strip():
            out.append(c.strip())
    return tuple(out)


def _choice_arg(opt: cfg.Option[T], value: str | None, options: Mapping[str, Any]) -> T:
    if value is None:
        return opt.get(options)
    return opt.get({opt.key: value})


@dataclass(frozen=True)
class ClusteringOptions:
    """Clustering plan settings, with Hudi's keys and defaults (docs/hudi-format.md §4.5).

    ``include_all_files`` has no Hudi key: it plans every slice whatever its size (Hudi only plans base
    files below ``small.file.limit``), which is what re-clustering an already big table along new columns
    needs. It defaults to False, like Hudi.
    """

    small_file_limit: int = cfg.SMALL_FILE_LIMIT.default
    max_bytes_per_group: int = cfg.MAX_BYTES_PER_GROUP.default
    max_num_groups: int = cfg.MAX_NUM_GROUPS.default
    target_file_max_bytes: int = cfg.TARGET_FILE_MAX_BYTES.default
    sort_columns: tuple[str, ...] = ()
    layout_strategy: LayoutStrategy = cfg.LAYOUT_STRATEGY.default
    curve_build_method: CurveBuildMethod = cfg.CURVE_BUILD_METHOD.default
    curve_sample_size: int = cfg.CURVE_SAMPLE_SIZE.default
    partition_selected: tuple[str, ...] = ()
    partition_regex: str = ""
    include_all_files: bool = False
    single_group_clustering: bool = cfg.SINGLE_GROUP_CLUSTERING.default
    #: size assumed for a slice without base file (Hudi uses ``hoodie.parquet.max.file.size``)
    parquet_max_file_size: int = cfg.MAX_FILE_SIZE.default
    #: curve column weights (``hudi_layout.layout.curve.column.weights``), sort columns not named weigh 1
    column_weights: tuple[tuple[str, float], ...] = ()
    #: the weights are still to be derived from the workload (resolved before a plan is written)
    weights_from_workload: bool = False
    #: the qdtree strategy's cuts (JSON of :class:`hudi_layout.clustering.qdtree.QdTree`), recorded in the plan
    qdtree_cuts: str = ""

    def __post_init__(self) -> None:
        # the enums, also when built from plain strings; names that do not parse are reported by validate()
        for name, kind in (("layout_strategy", LayoutStrategy), ("curve_build_method", CurveBuildMethod)):
            try:
                object.__setattr__(self, name, kind.parse(getattr(self, name)))
            except InvalidArgumentError:
                pass

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None, *,
                     columns: str | Sequence[str] | None = None, strategy: str | None = None,
                     method: str | None = None,
                     include_all_files: bool | None = None) -> ClusteringOptions:
        """Parse a ``hoodie.*`` mapping; explicit arguments win over the mapping. Validates (no I/O).

        ``columns`` may be ``"a,b"`` or ``["a", "b"]``; ``strategy`` is ``linear``, ``z-order``/``zorder``,
        ``hilbert`` or ``qdtree``; ``method`` is ``direct`` or ``sample``.
        """
        opts: Mapping[str, Any] = options or {}
        if columns is not None:
            sort_columns = _columns_arg(columns)
            if not sort_columns:
                raise InvalidArgumentError(
                    f"columns={columns!r} names no column; give at least one sort column",
                    hint=f"or leave columns unset to use {cfg.SORT_COLUMNS.key}")
        else:
            sort_columns = tuple(cfg.split_fields(cfg.SORT_COLUMNS.get(opts)))
        selected = tuple(cfg.split_fields(cfg.PARTITION_SELECTED.get(opts)))
        weights = cfg.CURVE_COLUMN_WEIGHTS.get(opts)
        regex = cfg.PARTITION_REGEX.get(opts).strip()
        if selected and regex:  # Hudi takes the list and drops the regex; intersecting them was ours (session 29)
            raise InvalidArgumentError(
                f"{cfg.PARTITION_SELECTED.key} and {cfg.PARTITION_REGEX.key} are both given; Hudi's planner takes "
                "the list and ignores the pattern", hint="give one of them")
        out = cls(
            small_file_limit=_positive(cfg.SMALL_FILE_LIMIT, cfg.SMALL_FILE_LIMIT.get(opts), allow_zero=True),
            max_bytes_per_group=_positive(cfg.MAX_BYTES_PER_GROUP, cfg.MAX_BYTES_PER_GROUP.get(opts)),
            max_num_groups=_positive(cfg.MAX_NUM_GROUPS, cfg.MAX_NUM_GROUPS.get(opts)),
            target_file_max_bytes=_positive(cfg.TARGET_FILE_MAX_BYTES, cfg.TARGET_FILE_MAX_BYTES.get(opts)),
            sort_columns=sort_columns,
            layout_strategy=_choice_arg(cfg.LAYOUT_STRATEGY, strategy, opts),
            curve_build_method=_choice_arg(cfg.CURVE_BUILD_METHOD, method, opts),
            curve_sample_size=_positive(cfg.CURVE_SAMPLE_SIZE, cfg.CURVE_SAMPLE_SIZE.get(opts)),
            partition_selected=selected,
            partition_regex=regex,
            include_all_files=bool(include_all_files),
            single_group_clustering=cfg.SINGLE_GROUP_CLUSTERING.get(opts),
            parquet_max_file_size=_positive(cfg.MAX_FILE_SIZE, cfg.MAX_FILE_SIZE.get(opts)),
            column_weights=tuple(weights.items()) if isinstance(weights, dict) else (),
            weights_from_workload=weights == cfg.WEIGHTS_FROM_WORKLOAD,
            qdtree_cuts=cfg.QDTREE_CUTS.get(opts).strip(),
        )
        out.validate()
        return out

    def validate(self) -> None:
        """Checks that need no table: column list shape, strategy/method names, regex syntax."""
        if self.layout_strategy not in LAYOUT_STRATEGIES:
            raise InvalidArgumentError(f"option {cfg.LAYOUT_STRATEGY.key}={self.layout_strategy!r} is "
                                       f"invalid: expected one of {', '.join(LAYOUT_STRATEGIES)}")
        if self.curve_build_method not in CURVE_BUILD_METHODS:
            raise InvalidArgumentError(f"option {cfg.CURVE_BUILD_METHOD.key}={self.curve_build_method!r} is "
                                       f"invalid: expected one of {', '.join(CURVE_BUILD_METHODS)}")
        seen: set[str] = set()
        for c in self.sort_columns:
            if c in seen:
                raise InvalidArgumentError(f"sort column {c!r} is given twice ({cfg.SORT_COLUMNS.key})",
                                           hint="name each column once")
            seen.add(c)
        ordered = self.is_curve or self.is_qdtree
        if ordered and not self.sort_columns:
            raise InvalidArgumentError(
                f"{cfg.LAYOUT_STRATEGY.key}={self.layout_strategy} needs sort columns "
                f"({cfg.SORT_COLUMNS.key} or columns=...)")
        unknown = [c for c, _ in self.column_weights if c not in self.sort_columns]
        if unknown:
            raise InvalidArgumentError(
                f"option {cfg.CURVE_COLUMN_WEIGHTS.key} weighs {', '.join(map(repr, unknown))}, which "
                f"{'is' if len(unknown) == 1 else 'are'} not among the sort columns ({', '.join(self.sort_columns)})",
                hint="weights apply to the curve's columns; name each as column:weight")
        if ordered and len(self.sort_columns) > MAX_CURVE_COLUMNS:
            raise InvalidArgumentError(
                f"{self.layout_strategy} clustering takes at most {MAX_CURVE_COLUMNS} columns, got "
                f"{len(self.sort_columns)} ({', '.join(self.sort_columns)})",
                hint="each extra column halves the resolution the curve gives the others; pick the columns "
                     "queries filter on most, or use strategy=linear")
        if self.partition_regex:
            try:
                re.compile(self.partition_regex)
            except re.error as e:
                raise InvalidArgumentError(
                    f"option {cfg.PARTITION_REGEX.key}={self.partition_regex!r} is not a valid regex: {e}"
                ) from e

    @property
    def is_curve(self) -> bool:
        return self.layout_strategy in (LayoutStrategy.Z_ORDER, LayoutStrategy.HILBERT)

    @property
    def is_qdtree(self) -> bool:
        return self.layout_strategy is LayoutStrategy.QDTREE

    def weights_for(self, columns: Sequence[str]) -> tuple[float, ...] | None:
        """The weight of each of ``columns`` (1 when not named), or ``None`` without column weights."""
        if not self.column_weights:
            return None
        given = dict(self.column_weights)
        return tuple(float(given.get(c, 1.0)) for c in columns)

    @property
    def keep_single_slice_group(self) -> bool:
        """Hudi's ``shouldClusteringSingleGroup``: sort columns set, or single-group clustering enabled."""
        return bool(self.sort_columns) or self.single_group_clustering

    def strategy_params(self) -> dict[str, str]:
        """``strategyParams`` of the plan: Hudi writes only the sort columns (empty map without them).

        We add our layout choice under Hudi's own keys; Hudi's executor ignores plan params it does not
        read (it takes the layout from its write config), ours reads them back from the plan.
        """
        if not self.sort_columns:
            return {}
        params = {cfg.SORT_COLUMNS.key: ",".join(self.sort_columns),
                  cfg.LAYOUT_STRATEGY.key: str(self.layout_strategy),
                  cfg.CURVE_BUILD_METHOD.key: str(self.curve_build_method)}
        if self.is_curve and self.curve_build_method is CurveBuildMethod.SAMPLE:
            params[cfg.CURVE_SAMPLE_SIZE.key] = str(self.curve_sample_size)
        if self.column_weights:
            params[cfg.CURVE_COLUMN_WEIGHTS.key] = ",".join(f"{c}:{w:g}" for c, w in self.column_weights)
        elif self.weights_from_workload:
            params[cfg.CURVE_COLUMN_WEIGHTS.key] = cfg.WEIGHTS_FROM_WORKLOAD
        if self.qdtree_cuts:
            params[cfg.QDTREE_CUTS.key] = self.qdtree_cuts
        return params

    def selects_partition(self, partition_path: str) -> bool:
        """Hudi's partition filters: the ``partition.selected`` list, then a full-match ``regex.pattern``."""
        if self.partition_selected and partition_path not in self.partition_selected:
            return False
        if self.partition_regex and re.fullmatch(self.partition_regex, partition_path) is None:
            return False
        return True


# ----------------------------------------------------------------------------------- column checks

def _nested_type_name(t: pa.DataType) -> str | None:
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "list"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_union(t):
        return "union"
    if pa.types.is_null(t):
        return "null"
    return None


def validate_sort_columns(options: ClusteringOptions, data_columns: Sequence[str], *,
                          partition_columns: Sequence[str] = (), schema: pa.Schema | None = None) -> None:
    """Check the sort columns against the table (columns passed in: no I/O here).

    Raises :class:`InvalidArgumentError` naming the column when it is unknown, a Hudi meta column, a
    partition column (constant within a partition, so sorting by it clusters nothing), or of a type
    the curves cannot order (map / list / struct).
    """
    known = list(data_columns)
    known_set = set(known)
    for col in options.sort_columns:
        if col in partition_columns:
            raise InvalidArgumentError(
                f"sort column {col!r} is a partition column: it has one value per partition, so clustering "
                f"within a partition by it changes nothing",
                hint="pick data columns that vary inside a partition")
        if col not in known_set:
            if col.startswith("_hoodie_"):
                raise InvalidArgumentError(f"sort column {col!r} is a Hudi meta column; sort by data columns",
                                           hint=f"data columns: {', '.join(known[:20])}")
            ci = [k for k in known if k.lower() == col.lower()]
            hint = f"did you mean {ci[0]!r}?" if ci else "--columns names columns of the table (comma-separated)"
            shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise InvalidArgumentError(f"sort column {col!r} is not a column of the table (columns: {shown})",
                                       hint=hint)
        if schema is not None and col in schema.names:
            kind = _nested_type_name(schema.field(col).type)
            if kind is not None:
                raise InvalidArgumentError(
                    f"sort column {col!r} has type {schema.field(col).type} ({kind}), which cannot be "
                    f"ordered for clustering",
                    hint="sort by primitive columns (numbers, strings, dates, timestamps, booleans, binary)")


# ------------------------------------------------------------------------------------------ plan objects

def _file_uri(path: str) -> str:
    """Absolute ``file:`` URI the way Hadoop's ``Path.toString`` prints a local path (``file:/tmp/x``)."""
    if path.startswith("file:"):
        return path
    return "file:" + os.path.abspath(path)


@dataclass(frozen=True)
class ClusteringGroup:
    """One HoodieClusteringGroup: slices of one partition rewritten together into new file groups."""

    partition_path: str
    slices: tuple[Any, ...]  # SliceLike
    num_output_file_groups: int
    total_bytes: int
    #: metrics as read from an existing plan; ``None`` → computed from the slices
    metrics: Mapping[str, float] | None = None
    extra_metadata: Mapping[str, str] | None = None
    version: int = 1

    @property
    def file_groups(self) -> frozenset[tuple[str, str]]:
        return frozenset((s.partition_path, s.file_id) for s in self.slices)

    def computed_metrics(self) -> dict[str, float]:
        """Hudi's ``buildMetrics`` keys: IO in whole MB (``FSUtils.getSizeInMB``), log size in bytes.

        Values are summed over the group (Hudi keeps only the last slice's IO values, an upstream quirk);
        they are informational, nothing reads them back.
        """
        read_mb = write_mb = log_files = log_bytes = 0
        for s in self.slices:
            base = int(s.size_bytes) if s.base_file_name else 0
            logs = int(getattr(s, "log_size_bytes", 0) or 0)
            log_files += len(tuple(getattr(s, "log_file_names", ()) or ()))
            log_bytes += logs
            read_mb += (base + logs) // _MB
            write_mb += base // _MB
        return {METRIC_IO_READ_MB: float(read_mb), METRIC_IO_WRITE_MB: float(write_mb),
                METRIC_IO_MB: float(read_mb + write_mb), METRIC_LOG_FILES_SIZE: float(log_bytes),
                METRIC_LOG_FILES: float(log_files)}

    def to_avro(self, base_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        return {
            "slices": [_slice_to_avro(s, base_path) for s in self.slices],
            "metrics": dict(self.metrics) if self.metrics is not None else self.computed_metrics(),
            "numOutputFileGroups": self.num_output_file_groups,
            "extraMetadata": dict(self.extra_metadata) if self.extra_metadata is not None else None,
            "version": self.version,
        }


def _slice_to_avro(s: Any, base_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """One HoodieSliceInfo: absolute URIs of the base file and of every log file (Hudi's form)."""
    logs = tuple(getattr(s, "log_file_names", ()) or ())
    if s.base_file_path:
        base_dir = os.path.dirname(s.base_file_path)
    elif base_path is not None:
        base_dir = os.path.join(str(base_path), s.partition_path) if s.partition_path else str(base_path)
    elif logs:
        raise InvalidArgumentError(f"log-only slice {s.file_id}: the table's base path is needed to name its logs")
    else:
        base_dir = ""
    return {
        "dataFilePath": _file_uri(s.base_file_path) if s.base_file_name else "",
        "deltaFilePaths": [_file_uri(os.path.join(base_dir, n)) for n in logs],
        "fileId": s.file_id,
        "partitionPath": s.partition_path,
        "bootstrapFilePath": "",
        "version": 1,
    }


@dataclass(frozen=True)
class ClusteringPlanSpec:
    """A whole HoodieClusteringPlan plus the options it was planned (or is executed) with."""

    groups: tuple[ClusteringGroup, ...]
    options: ClusteringOptions
    strategy_class: str = SORT_AND_SIZE_EXECUTION_STRATEGY
    strategy_params: Mapping[str, str] = field(default_factory=dict)
    missing_schedule_partitions: tuple[str, ...] | None = ()
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    preserve_hoodie_metadata: bool = True
    version: int = 1

    @property
    def sort_columns(self) -> tuple[str, ...]:
        return self.options.sort_columns

    @property
    def file_groups(self) -> frozenset[tuple[str, str]]:
        """Every input ``(partition, fileId)`` (these become ``partitionToReplaceFileIds``)."""
        return frozenset(fg for g in self.groups for fg in g.file_groups)

    @property
    def partitions(self) -> tuple[str, ...]:
        return tuple(sorted({g.partition_path for g in self.groups}))

    @property
    def total_bytes(self) -> int:
        return sum(g.total_bytes for g in self.groups)

    @property
    def num_slices(self) -> int:
        return sum(len(g.slices) for g in self.groups)

    @property
    def num_output_file_groups(self) -> int:
        return sum(g.num_output_file_groups for g in self.groups)

    def to_avro_plan(self, base_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The HoodieClusteringPlan record as Hudi writes it (docs/hudi-format.md §4.2); ``base_path`` locates
        the logs of log-only slices."""
        missing = self.missing_schedule_partitions
        return {
            "inputGroups": [g.to_avro(base_path) for g in self.groups],
            "strategy": {"strategyClassName": self.strategy_class,
                         "strategyParams": dict(self.strategy_params), "version": 1},
            "extraMetadata": dict(self.extra_metadata),
            "version": self.version,
            "preserveHoodieMetadata": self.preserve_hoodie_metadata,
            "missingSchedulePartitions": list(missing) if missing is not None else None,
        }


# ------------------------------------------------------------------------------------------ parsing

def _basename(uri_or_path: str) -> str:
    return uri_or_path.rstrip("/").rsplit("/", 1)[-1]


def _resolve_slice(sl: Mapping[str, Any], base: Path) -> FileSlice:
    """Slice of a stored plan, located under ``base`` by partitionPath + file name.

    Real plans carry absolute URIs of the machine that scheduled them (``file:/tmp/v9-gen/...``), so the
    stored directory is ignored.
    """
    partition = sl.get("partitionPath") or ""
    pdir = base / partition if partition else base
    data = sl.get("dataFilePath") or ""
    name = _basename(data) if data else ""
    path = pdir / name if name else pdir
    size = 0
    if name:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # cleaned or never synced: executors report the missing file, planning does not care
    parsed = try_parse_base_file_name(name) if name else None
    logs = tuple(sorted((_basename(p) for p in (sl.get("deltaFilePaths") or [])),
                        key=lambda n: log_sort_key(parse_log_file_name(n))))
    log_bytes = 0
    for n in logs:
        try:
            log_bytes += (pdir / n).stat().st_size
        except OSError:
            pass  # reported by the executor
    first_log = parse_log_file_name(logs[0]) if logs else None
    return FileSlice(partition_path=partition, file_id=sl["fileId"], base_file_name=name,
                     base_file_path=str(path) if name else "",
                     commit_time=parsed.instant_time if parsed else (first_log.instant_time if first_log else ""),
                     size_bytes=size, log_file_names=logs, log_size_bytes=log_bytes)


def from_avro_plan(plan: Mapping[str, Any], base_path: str | os.PathLike[str],
                   options: Mapping[str, Any] | None = None) -> ClusteringPlanSpec:
    """Parse a HoodieClusteringPlan dict (or the requested-replace record wrapping it) of the table at
    ``base_path``. Sort columns and layout come from ``strategyParams``, other settings from ``options``.
    """
    if "clusteringPlan" in plan:
        if plan.get("operationType") != CLUSTER_OPERATION or plan.get("clusteringPlan") is None:
            raise InvalidArgumentError(
                "requested replace metadata is not a clustering plan "
                f"(operationType={plan.get('operationType')!r})")
        plan = plan["clusteringPlan"]
    base_str = str(base_path)
    for prefix in ("file://", "file:"):
        if base_str.startswith(prefix):
            base_str = base_str[len(prefix):]
            break
    base = Path(base_str).absolute()
    strategy = plan.get("strategy") or {}
    params: dict[str, str] = dict(strategy.get("strategyParams") or {})
    merged: dict[str, Any] = dict(options or {})
    merged.update({k: v for k, v in params.items() if k.startswith(("hoodie.", "hudi_layout."))})
    if not params.get(cfg.SORT_COLUMNS.key):
        # a plan without sort columns is executed unsorted whatever layout the caller's options name
        merged[cfg.SORT_COLUMNS.key] = ""
        merged[cfg.LAYOUT_STRATEGY.key] = LayoutStrategy.LINEAR.value
    opts = ClusteringOptions.from_options(merged)
    groups = []
    for g in plan.get("inputGroups") or []:
        slices = tuple(_resolve_slice(sl, base) for sl in g.get("slices") or [])
        parts = {s.partition_path for s in slices}
        if len(parts) > 1:
            raise InvalidArgumentError(f"clustering group spans several partitions: {sorted(parts)}")
        size = sum(s.size_bytes if s.base_file_name else opts.parquet_max_file_size for s in slices)
        groups.append(ClusteringGroup(
            partition_path=next(iter(parts)) if parts else "",
            slices=slices,
            num_output_file_groups=int(g.get("numOutputFileGroups") or 1),
            total_bytes=size,
            metrics=dict(g["metrics"]) if g.get("metrics") is not None else None,
            extra_metadata=dict(g["extraMetadata"]) if g.get("extraMetadata") is not None else None,
            version=int(g.get("version") or 1),
        ))
    missing = plan.get("missingSchedulePartitions")
    pres = plan.get("preserveHoodieMetadata")
    return ClusteringPlanSpec(
        groups=tuple(groups),
        options=opts,
        strategy_class=strategy.get("strategyClassName") or SORT_AND_SIZE_EXECUTION_STRATEGY,
        strategy_params=params,
        missing_schedule_partitions=tuple(missing) if missing is not None else None,
        extra_metadata=dict(plan.get("extraMetadata") or {}),
        preserve_hoodie_metadata=True if pres is None else bool(pres),
        version=int(plan.get("version") or 1),
    )


# ------------------------------------------------------------------------------------------ planning

def _slice_size(s: SliceLike, options: ClusteringOptions) -> int:
    return int(s.size_bytes) if s.base_file_name else options.parquet_max_file_size


def eligible_slices(slices: Iterable[SliceLike], options: ClusteringOptions,
                    pending_file_groups: Iterable[tuple[str, str]] = ()) -> dict[str, list[SliceLike]]:
    """Per selected partition, the slices Hudi would consider (§4.3 steps 1-2)."""
    pending = set(pending_file_groups)
    out: dict[str, list[SliceLike]] = {}
    for s in slices:
        if not options.selects_partition(s.partition_path):
            continue
        if (s.partition_path, s.file_id) in pending:
            continue
        base_size = int(s.size_bytes) if s.base_file_name else 0
        if not options.include_all_files and base_size >= options.small_file_limit:
            continue
        out.setdefault(s.partition_path, []).append(s)
    return out


def plan_clustering(slices: Iterable[SliceLike], options: ClusteringOptions,
                    pending_file_groups: Iterable[tuple[str, str]] = ()) -> ClusteringPlanSpec | None:
    """Hudi's size-based plan over ``slices`` (the latest slices of the table); ``None`` if nothing to do.

    ``pending_file_groups`` are ``(partition, fileId)`` already in a pending clustering (or compaction)
    plan: they are never planned twice.
    """
    by_partition = eligible_slices(slices, options, pending_file_groups)
    groups: list[ClusteringGroup] = []
    missing: list[str] = []
    for partition in sorted(by_partition):
        ordered = sort_largest_first(by_partition[partition], lambda s: _slice_size(s, options),
                                     tie_key=lambda s: s.file_id)
        packed = pack_greedy(ordered, lambda s: _slice_size(s, options),
                             max_bin_bytes=options.max_bytes_per_group, max_bins=options.max_num_groups,
                             keep_single_item_last_bin=options.keep_single_slice_group)
        if packed.partial:
            missing.append(partition)
        for b in packed.bins:
            n_out = num_output_file_groups(b.total_bytes, options.target_file_max_bytes)
            groups.append(ClusteringGroup(partition, b.items, n_out, b.total_bytes))
    groups = groups[: options.max_num_groups]
    if not groups:
        return None
    return ClusteringPlanSpec(groups=tuple(groups), options=options,
                              strategy_params=options.strategy_params(),
                              missing_schedule_partitions=tuple(missing))


__all__ = [
    "SORT_AND_SIZE_EXECUTION_STRATEGY", "MAX_CURVE_COLUMNS", "SliceLike", "ClusteringOptions",
    "ClusteringGroup", "ClusteringPlanSpec", "validate_sort_columns", "from_avro_plan", "eligible_slices",
    "plan_clustering",
]
