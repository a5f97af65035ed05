"""Typed ``hoodie.*`` options: Hudi's key names and defaults, parsed in one place.

Options come from (lowest to highest precedence) the built-in defaults below, a defaults file in the
format of Hudi's ``hudi-defaults.conf`` (``conf/hudi-layout-defaults.conf`` in the project, or the file
named by ``$HUDI_LAYOUT_CONF``), and the options the caller passes. Parse errors name the key and value.
Unknown ``hoodie.*`` keys are kept (passed through to ``hoodie.properties`` where Hudi keeps table
configs) and reported once with a warning.
"""

from __future__ import annotations

import enum
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from hudi_layout.errors import InvalidArgumentError

T = TypeVar("T")


def _parse_bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false")


@dataclass(frozen=True)
class Option(Generic[T]):
    key: str
    default: T
    parse: Callable[[str], T]
    doc: str = ""
    aliases: tuple[str, ...] = ()

    def get(self, options: Mapping[str, Any]) -> T:
        for k in (self.key, *self.aliases):
            if k in options and options[k] is not None:
                raw = options[k]
                if not isinstance(raw, str):
                    raw = str(raw).lower() if isinstance(raw, bool) else str(raw)
                try:
                    return self.parse(raw)
                except (ValueError, TypeError) as e:
                    raise InvalidArgumentError(f"option {k}={options[k]!r} is invalid: {e}") from e
        return self.default


def _str(v: str) -> str:
    return v


class _NamedChoice(str, enum.Enum):
    """A str-valued enum whose values are Hudi's spellings; :meth:`parse` is the one place a name is read."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def _aliases(cls) -> dict[str, str]:
        return {}

    @classmethod
    def parse(cls, value: str | _NamedChoice) -> Any:
        """The member named ``value`` (case-insensitive, ``_`` for ``-``, and the aliases); raises
        :class:`InvalidArgumentError` (a ``ValueError``) naming the allowed values otherwise."""
        if isinstance(value, cls):
            return value
        norm = str(value).strip().lower().replace("_", "-")
        norm = cls._aliases().get(norm, norm)
        for member in cls:
            if member.value.replace("_", "-") == norm:
                return member
        raise InvalidArgumentError(f"expected one of {', '.join(m.value for m in cls)}")


class LayoutStrategy(_NamedChoice):
    """``hoodie.layout.optimize.strategy``: how clustering orders rows (``zorder`` / ``z_order`` accepted).

    ``qdtree`` (alias ``workload``) is hudi_layout's own: a query-data routing tree cut along a workload's
    predicates, with a Hilbert curve inside each leaf (docs/layouts.md). Hudi's executor does not know it.
    """

    LINEAR = "linear"
    Z_ORDER = "z-order"
    HILBERT = "hilbert"
    QDTREE = "qdtree"

    @classmethod
    def _aliases(cls) -> dict[str, str]:
        return {"zorder": "z-order", "workload": "qdtree", "qd-tree": "qdtree"}

    @property
    def is_curve(self) -> bool:
        """A space-filling curve over the sort columns (z-order or Hilbert)."""
        return self in (LayoutStrategy.Z_ORDER, LayoutStrategy.HILBERT)

    @property
    def needs_workload(self) -> bool:
        return self is LayoutStrategy.QDTREE


def parse_layout_strategy(value: str | LayoutStrategy, *, what: str = "layout strategy") -> LayoutStrategy:
    """:meth:`LayoutStrategy.parse` for an argument (not an option key): the error names the argument."""
    try:
        return LayoutStrategy.parse(value)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"unknown {what} {value!r}: expected linear, z-order, hilbert or qdtree") from None


def parse_column_weights(value: str) -> dict[str, float] | str:
    """``hudi_layout.layout.curve.column.weights``: ``"col:weight,col:weight"`` (weights > 0; columns not named
    weigh 1), or ``"workload"`` (derive them from the workload's predicates). ``""``: equal weights."""
    text = value.strip()
    if not text:
        return {}
    if text.lower() == WEIGHTS_FROM_WORKLOAD:
        return WEIGHTS_FROM_WORKLOAD
    out: dict[str, float] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, weight = item.rpartition(":")
        if not sep or not name.strip():
            raise ValueError(f"expected column:weight, got {item.strip()!r}")
        w = float(weight)
        if not w > 0 or w == float("inf"):
            raise ValueError(f"weight of {name.strip()!r} must be a positive number, got {weight.strip()!r}")
        out[name.strip()] = w
    return out


#: the column-weights value asking for weights derived from the workload
WEIGHTS_FROM_WORKLOAD = "workload"
#: the workload value naming the table's own query log
WORKLOAD_FROM_LOG = "log"


class CurveBuildMethod(_NamedChoice):
    """``hoodie.layout.optimize.curve.build.method``: per-column reduction from min/max or from a sample."""

    DIRECT = "direct"
    SAMPLE = "sample"


class WriteOperation(_NamedChoice):
    """``hoodie.datasource.write.operation`` (Hudi's names; which ones are written: format.capabilities)."""

    BULK_INSERT = "bulk_insert"
    INSERT = "insert"
    UPSERT = "upsert"
    DELETE = "delete"
    DELETE_PARTITION = "delete_partition"
    INSERT_OVERWRITE = "insert_overwrite"
    UPSERT_PREPPED = "upsert_prepped"


def _operation(value: str) -> WriteOperation | str:
    """A known operation, else the lower-cased text (refused with its own message by the capability check)."""
    try:
        return WriteOperation.parse(value)
    except InvalidArgumentError:
        return value.strip().lower()


# --- table / write -------------------------------------------------------------------------------
TABLE_NAME = Option("hoodie.table.name", "", _str)
RECORD_KEY_FIELD = Option("hoodie.datasource.write.recordkey.field", "", _str,
                          aliases=("hoodie.table.recordkey.fields",))
PARTITION_PATH_FIELD = Option("hoodie.datasource.write.partitionpath.field", "", _str,
                              aliases=("hoodie.table.partition.fields",))
HIVE_STYLE = Option("hoodie.datasource.write.hive_style_partitioning", False, _parse_bool)
OPERATION: Option[WriteOperation | str] = Option("hoodie.datasource.write.operation", WriteOperation.BULK_INSERT,
                                                 _operation)
MAX_FILE_SIZE = Option("hoodie.parquet.max.file.size", 125_829_120, int)
PARQUET_CODEC = Option("hoodie.parquet.compression.codec", "snappy", lambda v: v.strip().lower())
TABLE_VERSION = Option("hoodie.table.version", 9, int)
TABLE_TYPE = Option("hoodie.datasource.write.table.type", "COPY_ON_WRITE", lambda v: v.strip().upper(),
                    aliases=("hoodie.table.type",))
PRECOMBINE_FIELD = Option("hoodie.datasource.write.precombine.field", "", _str)
# --- metadata table --------------------------------------------------------------------------------
METADATA_ENABLE = Option("hoodie.metadata.enable", True, _parse_bool)
COLUMN_STATS_ENABLE = Option("hoodie.metadata.index.column.stats.enable", True, _parse_bool)
COLUMN_STATS_COLUMNS = Option("hoodie.metadata.index.column.stats.column.list", "", _str)
COLUMN_STATS_FILE_GROUPS = Option("hoodie.metadata.index.column.stats.file.group.count", 2, int)
COLUMN_STATS_MAX_COLUMNS = Option("hoodie.metadata.index.column.stats.max.columns.to.index", 32, int)
MDT_COMPACT_MAX_DELTA_COMMITS = Option("hoodie.metadata.compact.max.delta.commits", 10, int)
# --- clustering ------------------------------------------------------------------------------------
CLUSTERING_INLINE = Option("hoodie.clustering.inline", False, _parse_bool,
                           aliases=("hoodie.datasource.clustering.inline.enable",))
CLUSTERING_INLINE_MAX_COMMITS = Option("hoodie.clustering.inline.max.commits", 4, int)
CLUSTERING_ASYNC_MAX_COMMITS = Option("hoodie.clustering.async.max.commits", 4, int)
SMALL_FILE_LIMIT = Option("hoodie.clustering.plan.strategy.small.file.limit", 314_572_800, int)
MAX_BYTES_PER_GROUP = Option("hoodie.clustering.plan.strategy.max.bytes.per.group", 2_147_483_648, int)
MAX_NUM_GROUPS = Option("hoodie.clustering.plan.strategy.max.num.groups", 30, int)
TARGET_FILE_MAX_BYTES = Option("hoodie.clustering.plan.strategy.target.file.max.bytes", 1_073_741_824, int)
SORT_COLUMNS = Option("hoodie.clustering.plan.strategy.sort.columns", "", _str)
SINGLE_GROUP_CLUSTERING = Option("hoodie.clustering.plan.strategy.single.group.clustering.enabled", True,
                                 _parse_bool)
PARTITION_SELECTED = Option("hoodie.clustering.plan.strategy.partition.selected", "", _str)
PARTITION_REGEX = Option("hoodie.clustering.plan.strategy.partition.regex.pattern", "", _str)
LAYOUT_STRATEGY = Option("hoodie.layout.optimize.strategy", LayoutStrategy.LINEAR, LayoutStrategy.parse)
CURVE_BUILD_METHOD = Option("hoodie.layout.optimize.curve.build.method", CurveBuildMethod.DIRECT,
                            CurveBuildMethod.parse)
CURVE_SAMPLE_SIZE = Option("hoodie.layout.optimize.build.curve.sample.size", 200_000, int)
# hudi_layout's own: the in-memory size (Arrow) one curve-sort task may hold; more data -> more tasks
SORT_TASK_MAX_BYTES = Option("hudi_layout.clustering.sort.task.max.bytes", 536_870_912, int)
# hudi_layout's own (Hudi has no such keys): column weights for the curves, the workload of the qdtree
# strategy, the tree a plan records, the opt-in query log, and curve-region pruning (docs/layouts.md)
CURVE_COLUMN_WEIGHTS: Option[dict[str, float] | str] = Option(
    "hudi_layout.layout.curve.column.weights", {}, parse_column_weights,
    doc="col:weight,... (bits per column: a column twice as heavy gets one more of the top bits), or 'workload'")
WORKLOAD = Option("hudi_layout.layout.workload", "", _str,
                  doc="file of WHERE predicates (one per line, optional 'weight<TAB>predicate'), or 'log'")
QDTREE_CUTS = Option("hudi_layout.layout.qdtree", "", _str,
                     doc="the cuts of a qdtree layout (JSON), recorded in the clustering plan's strategyParams")
QDTREE_SAMPLE_SIZE = Option("hudi_layout.layout.qdtree.sample.size", 200_000, int,
                            doc="rows sampled to choose the qdtree cuts")
QDTREE_MIN_LEAF_FILES = Option("hudi_layout.layout.qdtree.min.leaf.files", 0.5, float,
                               doc="smallest leaf, in target files (a thin slab of the workload may become one "
                                   "smaller file)")
WORKLOAD_LOG_ENABLE = Option("hudi_layout.workload.log.enable", False, _parse_bool,
                             doc="record the predicates read / explain / the data source see, per table")
WORKLOAD_LOG_MAX_BYTES = Option("hudi_layout.workload.log.max.bytes", 16 * 1024 * 1024, int)
CURVE_REGION_ENABLE = Option("hudi_layout.skipping.curve.region.enable", True, _parse_bool,
                             doc="drop files whose curve-key range misses the query box (never wrong)")

ALL_OPTIONS: tuple[Option[Any], ...] = tuple(v for v in globals().values() if isinstance(v, Option))
KNOWN_KEYS: frozenset[str] = frozenset(k for o in ALL_OPTIONS for k in (o.key, *o.aliases))
# Keys Hudi accepts that we pass through untouched (not warned about).
_PASSTHROUGH_PREFIXES = ("hoodie.datasource.", "hoodie.table.", "hoodie.metadata.", "hoodie.write.",
                         "hoodie.clustering.", "hoodie.layout.", "hoodie.parquet.", "hoodie.bulkinsert.",
                         "hoodie.insert.", "hoodie.upsert.", "hoodie.cleaner.", "hoodie.clean.",
                         "hoodie.keep.", "hoodie.index.", "hoodie.database.", "hoodie.embed.")

_warned: set[str] = set()


def default_conf_path() -> Path | None:
    env = os.environ.get("HUDI_LAYOUT_CONF")
    if env:
        return Path(env)
    candidate = Path.cwd() / "conf" / "hudi-layout-defaults.conf"
    return candidate if candidate.is_file() else None


def read_defaults_file(path: str | os.PathLike[str] | None) -> dict[str, str]:
    """Parse a ``hudi-defaults.conf``-style file: ``key value`` or ``key=value`` lines, ``#`` comments."""
    if path is None:
        return {}
    out: dict[str, str] = {}
    for lineno, raw in enumerate(Path(path).read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" in line.split()[0]:
            key, _, value = line.partition("=")
        else:
            parts = line.split(None, 1)
            if len(parts) != 2:
                raise InvalidArgumentError(f"{path}:{lineno}: expected 'key value', got {raw!r}")
            key, value = parts
        out[key.strip()] = value.strip()
    return out


def resolve_options(options: Mapping[str, Any] | None, *, conf_file: str | os.PathLike[str] | None = None,
                    use_defaults_file: bool = True) -> dict[str, str]:
    """Merge defaults file + caller options into one ``{key: str}`` dict, warning about unknown keys."""
    merged: dict[str, str] = {}
    if use_defaults_file:
        merged.update(read_defaults_file(conf_file or default_conf_path()))
    for k, v in (options or {}).items():
        merged[k] = str(v).lower() if isinstance(v, bool) else str(v)
    for k in merged:
        if k.startswith("hoodie.") and k not in KNOWN_KEYS and not k.startswith(_PASSTHROUGH_PREFIXES):
            if k not in _warned:
                _warned.add(k)
                warnings.warn(f"unknown Hudi option {k!r} is ignored by hudi_layout", stacklevel=3)
    return merged


def split_fields(value: str) -> list[str]:
    return [f.strip() for f in value.split(",") if f.strip()]
