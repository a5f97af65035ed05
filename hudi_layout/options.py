"""Typed ``hoodie.*`` options: Hudi's key names and defaults, parsed in one place.

Options come from (lowest to highest precedence) the built-in defaults below, a defaults file in the
format of Hudi's ``hudi-defaults.conf`` (``conf/hudi-layout-defaults.conf`` in the project, or the file
named by ``$HUDI_LAYOUT_CONF``), and the options the caller passes. Parse errors name the key and value.

One policy for every entry point (writes, clustering, indexing, reads): a ``hoodie.*`` (or ``hudi_layout.*``)
key is either honoured, or refused with an error that names it and the nearest honoured key. hudi_layout
never accepts an option and then ignores it. The only exceptions are listed, with their reason, in
:data:`ACCEPTED_WITHOUT_EFFECT`; ``hoodie.table.*`` keys given to a write are table configs, stored in
``hoodie.properties`` when the write creates the table. Read options are their own list
(:data:`READ_KEYS`): a write option on a read, or a read option on a write, is refused as well.
"""

from __future__ import annotations

import datetime as _dt
import enum
import os
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
    """``hoodie.layout.optimize.strategy``: how clustering orders rows (``zorder`` / ``z_order`` accepted)."""

    LINEAR = "linear"
    Z_ORDER = "z-order"
    HILBERT = "hilbert"

    @classmethod
    def _aliases(cls) -> dict[str, str]:
        return {"zorder": "z-order"}

    @property
    def is_curve(self) -> bool:
        return self is not LayoutStrategy.LINEAR


def parse_layout_strategy(value: str | LayoutStrategy, *, what: str = "layout strategy") -> LayoutStrategy:
    """:meth:`LayoutStrategy.parse` for an argument (not an option key): the error names the argument."""
    try:
        return LayoutStrategy.parse(value)
    except InvalidArgumentError:
        raise InvalidArgumentError(f"unknown {what} {value!r}: expected linear, z-order or hilbert") from None


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


class QueryType(_NamedChoice):
    """``hoodie.datasource.query.type``: what a read returns."""

    SNAPSHOT = "snapshot"  # the rows of the table (now, or as of an instant)
    READ_OPTIMIZED = "read_optimized"  # base files only (Merge-on-Read logs left out; the same as snapshot on COW)
    INCREMENTAL = "incremental"  # the rows written by the commits completed in (begin, end]


#: ``begin`` of an incremental read that starts before every instant
EARLIEST = "0"


def parse_instant_time(value: str) -> str:
    """An instant time in Hudi's accepted forms, as the 17-digit ``yyyyMMddHHmmssSSS`` the timeline uses.

    Accepted (as Hudi's ``as.of.instant``): ``yyyyMMddHHmmssSSS``, ``yyyyMMddHHmmss`` (milliseconds 000),
    ``yyyy-MM-dd HH:mm:ss[.SSS]`` (``T`` between date and time also accepted) and ``yyyy-MM-dd`` (midnight).
    The text is taken in the timeline's own time zone, as instant times are; ``earliest`` is before every
    instant. Raises ``ValueError`` (reported by :class:`Option` with the key) for anything else.
    """
    text = value.strip()
    if text.lower() == "earliest":
        return EARLIEST
    if text.isdigit():
        if len(text) == 17:
            digits = text
        elif len(text) == 14:
            digits = text + "000"
        else:
            raise ValueError("expected 17 digits yyyyMMddHHmmssSSS (or 14 without milliseconds)")
        stamp = digits
    else:
        for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S",
                    "%Y-%m-%d"):
            try:
                parsed = _dt.datetime.strptime(text, fmt)
            except ValueError:
                continue
            if "%f" in fmt and len(text.rsplit(".", 1)[1]) > 3:
                raise ValueError("at most milliseconds (yyyy-MM-dd HH:mm:ss.SSS)")
            return parsed.strftime("%Y%m%d%H%M%S") + f"{parsed.microsecond // 1000:03d}"
        raise ValueError("expected yyyyMMddHHmmssSSS, yyyy-MM-dd HH:mm:ss[.SSS] or yyyy-MM-dd")
    try:
        _dt.datetime.strptime(stamp[:14], "%Y%m%d%H%M%S")
    except ValueError:
        raise ValueError(f"{value!r} is not a valid date and time") from None
    return stamp


# --- reading ---------------------------------------------------------------------------------------
QUERY_TYPE = Option("hoodie.datasource.query.type", QueryType.SNAPSHOT, QueryType.parse,
                    aliases=("hoodie.read.query.type",))
AS_OF_INSTANT: Option[str | None] = Option("as.of.instant", None, parse_instant_time,
                                           aliases=("hoodie.read.as.of.timestamp",))
BEGIN_INSTANT: Option[str | None] = Option("hoodie.datasource.read.begin.instanttime", None, parse_instant_time,
                                           aliases=("hoodie.read.start.timestamp",))
END_INSTANT: Option[str | None] = Option("hoodie.datasource.read.end.instanttime", None, parse_instant_time,
                                         aliases=("hoodie.read.end.timestamp",))
DATA_SKIPPING = Option("hoodie.enable.data.skipping", True, _parse_bool)
READ_OPTIONS: tuple[Option[Any], ...] = (QUERY_TYPE, AS_OF_INSTANT, BEGIN_INSTANT, END_INSTANT, DATA_SKIPPING)

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

ALL_OPTIONS: tuple[Option[Any], ...] = tuple(v for v in globals().values() if isinstance(v, Option))
KNOWN_KEYS: frozenset[str] = frozenset(k for o in ALL_OPTIONS for k in (o.key, *o.aliases))
#: keys a read honours (plus ``hoodie.metadata.enable``: false reads without the column_stats index)
READ_KEYS: frozenset[str] = frozenset(
    k for o in (*READ_OPTIONS, METADATA_ENABLE) for k in (o.key, *o.aliases))
#: keys a write, clustering or indexing run honours
WRITE_KEYS: frozenset[str] = KNOWN_KEYS - frozenset(k for o in READ_OPTIONS for k in (o.key, *o.aliases))
#: Hudi keys accepted although they change nothing here, each for a reason that cannot change the result.
ACCEPTED_WITHOUT_EFFECT: dict[str, str] = {
    "hoodie.bulkinsert.shuffle.parallelism": "Spark's own partitioning decides how many tasks write",
    "hoodie.insert.shuffle.parallelism": "Spark's own partitioning decides how many tasks write",
    "hoodie.upsert.shuffle.parallelism": "Spark's own partitioning decides how many tasks write",
    "hoodie.datasource.write.reconcile.schema": "the written schema is always the DataFrame's, checked against "
                                                "the table's",
}
#: table configs: stored in ``hoodie.properties`` when a write creates the table
TABLE_CONFIG_PREFIX = "hoodie.table."


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


def is_governed(key: str) -> bool:
    """Keys under the policy of the module docstring (Spark's and other libraries' options are not)."""
    return key.startswith(("hoodie.", "hudi_layout.")) or key == "as.of.instant"


def _nearest(key: str, honoured: frozenset[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(key, sorted(honoured), n=1, cutoff=0.75)
    return close[0] if close else None


def check_write_keys(options: Mapping[str, Any], *, where: str = "") -> None:
    """Refuse the ``hoodie.*`` keys a write / clustering / indexing run does not honour (module docstring)."""
    for key in options:
        if not is_governed(key) or key in WRITE_KEYS or key in ACCEPTED_WITHOUT_EFFECT \
                or key.startswith(TABLE_CONFIG_PREFIX):
            continue
        raise _unsupported(key, WRITE_KEYS, "a read option; writes do not use it" if key in READ_KEYS else None,
                           where)


def check_read_keys(options: Mapping[str, Any], *, where: str = "") -> None:
    """Refuse the ``hoodie.*`` keys a read does not honour (module docstring)."""
    for key in options:
        if not is_governed(key) or key in READ_KEYS:
            continue
        raise _unsupported(key, READ_KEYS, "a write option; reads do not use it" if key in KNOWN_KEYS else None,
                           where)


def _unsupported(key: str, honoured: frozenset[str], why: str | None, where: str) -> InvalidArgumentError:
    near = _nearest(key, honoured)
    message = f"option {key!r} is not supported by hudi_layout" + (f" ({why})" if why else "") + \
        (f" in {where}" if where else "")
    hint = f"did you mean {near!r}?" if near else \
        "see docs/read-semantics.md (one policy for options); hudi_layout never ignores an option silently"
    return InvalidArgumentError(message, hint=hint)


def resolve_options(options: Mapping[str, Any] | None, *, conf_file: str | os.PathLike[str] | None = None,
                    use_defaults_file: bool = True) -> dict[str, str]:
    """Merge defaults file + caller options into one ``{key: str}`` dict; refuses keys a write does not
    honour (:func:`check_write_keys`)."""
    merged: dict[str, str] = {}
    defaults_path = (conf_file or default_conf_path()) if use_defaults_file else None
    if defaults_path is not None:
        defaults = read_defaults_file(defaults_path)
        check_write_keys(defaults, where=str(defaults_path))
        merged.update(defaults)
    caller = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (options or {}).items()}
    check_write_keys(caller)
    merged.update(caller)
    return merged


def resolve_read_options(options: Mapping[str, Any] | None) -> dict[str, str]:
    """The caller's read options as ``{key: str}``; refuses keys a read does not honour."""
    out = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (options or {}).items()
           if v is not None}
    check_read_keys(out)
    return out


def split_fields(value: str) -> list[str]:
    return [f.strip() for f in value.split(",") if f.strip()]
