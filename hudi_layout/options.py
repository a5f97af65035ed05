"""Typed ``hoodie.*`` options: Hudi's key names and defaults, parsed in one place.

Options come from (lowest to highest precedence) the built-in defaults below, one defaults file in the
format of Hudi's ``hudi-defaults.conf`` (the first found of :func:`defaults_file_candidates`), and the
options the caller passes. Parse errors name the key and value.

One policy for every entry point (writes, clustering, indexing, cleaning, reads): a ``hoodie.*`` (or
``hudi_layout.*``) key is either honoured, or refused with an error that names it and the nearest honoured
key. hudi_layout never accepts an option and then ignores it. The only exceptions are listed, with their
reason, in :data:`ACCEPTED_WITHOUT_EFFECT`; ``hoodie.table.*`` keys given to a write are table configs, accepted
when they equal what the table has (for a new table: what hudi_layout creates it with), refused otherwise
(:func:`table_config_conflicts`). Read options are their own list
(:data:`READ_KEYS`): a write option on a read, or a read option on a write, is refused as well.

Every option carries its documentation and the commands that honour it; the README's options table is
generated from them (:func:`options_reference_markdown`) and a test keeps the two equal.
"""

from __future__ import annotations

import datetime as _dt
import enum
import os
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from hudi_layout.errors import InvalidArgumentError

T = TypeVar("T")


def parse_bool(value: str) -> bool:
    """``true`` / ``false`` in any case. Hudi reads a flag with Java's ``Boolean.parseBoolean`` (anything but
    ``true`` is false), so ``1`` / ``yes``, which read as true here before session 22, are refused rather than
    taken the other way; ``0`` / ``no`` mean false for both."""
    v = value.strip().lower()
    if v == "true":
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false (Hudi reads anything but 'true' as false)")


#: what honours an option, as the options reference names it (see :data:`HONOURED_BY_LEGEND`)
INGEST = "ingest"
CLUSTER = "cluster"
SERVICE = "clustering-service"
INDEX = "index"
READ = "read"
CLEAN = "clean"
COMPACT = "compact"
STREAM_READ = "stream-read"
#: the commands whose commits end with the automatic clean, and those with ``clean`` itself (cleaner options)
AUTOMATIC_CLEAN = (INGEST, CLUSTER, SERVICE, COMPACT)
CLEANING = (CLEAN, *AUTOMATIC_CLEAN)
HONOURED_BY_LEGEND = {
    INGEST: "`hudi-layout ingest`, `hl.write()`, `df.write.format(\"hudi_layout\")`",
    CLUSTER: "`hudi-layout cluster`, `hl.cluster()`, `hl.execute_pending()`, inline clustering after a write",
    SERVICE: "`hudi-layout clustering-service`, `hl.ClusteringService`, async clustering of a write",
    INDEX: "`hudi-layout index`, `hl.build_column_stats_index()`",
    READ: "`hl.read()`, `spark.read.format(\"hudi_layout\")`, `hudi-layout explain` / `query`",
    CLEAN: "`hudi-layout clean`, `hl.clean()`, the automatic clean after a write, clustering or compaction",
    COMPACT: "`hudi-layout compact`, `hl.compact()`, inline compaction after a write (Merge-on-Read)",
    STREAM_READ: "`spark.readStream.format(\"hudi_layout\")`",
}


@dataclass(frozen=True)
class Option(Generic[T]):
    key: str
    default: T
    parse: Callable[[str], T]
    doc: str = ""
    aliases: tuple[str, ...] = ()
    #: the commands (and their API functions) that read this option: :data:`HONOURED_BY_LEGEND`
    used_by: tuple[str, ...] = ()

    def get(self, options: Mapping[str, Any]) -> T:
        spelled = [k for k in (self.key, *self.aliases) if options.get(k) is not None]
        if len(spelled) > 1 and len({self._parsed_or_text(options[k]) for k in spelled}) > 1:  # one would be ignored
            raise InvalidArgumentError(f"options {' and '.join(f'{k}={options[k]!r}' for k in spelled)} name the "
                                       "same setting with different values", hint=f"give {self.key} once")
        for k in (self.key, *self.aliases):
            if k in options and options[k] is not None:
                raw = options[k]
                if not isinstance(raw, str):
                    raw = option_text(raw)
                try:
                    return self.parse(raw)
                except (ValueError, TypeError) as e:
                    raise InvalidArgumentError(f"option {k}={options[k]!r} is invalid: {e}",
                                               hint=self.value_hint()) from e
        return self.default

    def _parsed_or_text(self, raw: Any) -> Any:
        text = option_text(raw)
        try:
            value = self.parse(text)
            return value if isinstance(value, Hashable) else text.strip()
        except (ValueError, TypeError, InvalidArgumentError):
            return text.strip()

    def is_given(self, options: Mapping[str, Any]) -> bool:
        """Whether ``options`` set this option (under its key or an alias)."""
        return any(options.get(k) is not None for k in (self.key, *self.aliases))

    def value_hint(self) -> str:
        """What the option takes: the first sentence of its description and its default."""
        first = self.doc.split(". ")[0].rstrip(".") if self.doc else "see the options table of the README"
        return f"{self.key}: {first} (default {_default_text(self)})"


def _str(v: str) -> str:
    return v


def option_text(raw: Any) -> str:
    """An option value as the text Hudi's configs hold (Python booleans as ``true`` / ``false``)."""
    return str(raw).lower() if isinstance(raw, bool) else str(raw)


def _positive_int(v: str) -> int:
    n = int(v.strip())
    if n <= 0:
        raise ValueError("expected a positive integer")
    return n


def _non_negative_int(v: str) -> int:
    n = int(v.strip())
    if n < 0:
        raise ValueError("expected an integer >= 0")
    return n


def _positive_float(v: str) -> float:
    x = float(v.strip())
    if not x > 0 or x == float("inf"):
        raise ValueError("expected a positive number")
    return x


def _non_negative_float(v: str) -> float:
    x = float(v.strip())
    if not 0 <= x < float("inf"):
        raise ValueError("expected a number >= 0")
    return x


def _fraction(v: str) -> float:
    f = float(v)
    if not 0.0 <= f < 1.0:
        raise ValueError("expected a number from 0 (inclusive) to 1 (exclusive)")
    return f


def _codec(v: str) -> str:
    norm = v.strip().lower()
    norm = "none" if norm == "uncompressed" else norm
    if norm not in PARQUET_CODECS:
        raise ValueError(f"expected one of {', '.join(PARQUET_CODECS)}")
    return norm


#: parquet codecs the executors' writer (pyarrow) can write, by Hudi's names
PARQUET_CODECS = ("snappy", "gzip", "zstd", "lz4", "brotli", "none")


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


class CompactionPlanStrategy(_NamedChoice):
    """``hoodie.compaction.strategy``: which latest file slices with log files a compaction plan takes (Hudi's
    class names in ``org.apache.hudi.table.action.compact.strategy``; the package may be left out). A
    comma-separated list chains them, each taking what the previous one kept (Hudi's composite strategy).
    Hudi's date- and partition-based strategies are refused: hudi_layout does not implement them."""

    LOG_FILE_SIZE = "LogFileSizeBasedCompactionStrategy"
    LOG_FILE_NUM = "LogFileNumBasedCompactionStrategy"
    BOUNDED_IO = "BoundedIOCompactionStrategy"
    UNBOUNDED = "UnBoundedCompactionStrategy"


#: Hudi's package of compaction plan strategies (the option may name a class with or without it)
COMPACTION_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy."


def parse_compaction_strategies(value: str) -> tuple[CompactionPlanStrategy, ...]:
    """``hoodie.compaction.strategy``: one class name or a comma-separated chain of them (case-insensitive)."""
    chain = []
    for part in value.split(","):
        name = part.strip()
        if name.startswith(COMPACTION_STRATEGY_PACKAGE):
            name = name[len(COMPACTION_STRATEGY_PACKAGE):]
        found = next((m for m in CompactionPlanStrategy if m.value.lower() == name.lower()), None)
        if found is None:
            known = ", ".join(m.value for m in CompactionPlanStrategy)
            raise ValueError(f"compaction strategy {part.strip()!r} is not one hudi_layout implements ({known})")
        chain.append(found)
    if not chain:
        raise ValueError("expected a compaction strategy class name")
    return tuple(chain)


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
    INSERT_OVERWRITE_TABLE = "insert_overwrite_table"
    UPSERT_PREPPED = "upsert_prepped"

    @property
    def commit_operation_type(self) -> str:
        """``operationType`` of the commit metadata (Hudi's ``WriteOperationType`` name)."""
        return self.value.upper()

    @property
    def merges_by_key(self) -> bool:
        """Finds stored records by key and rewrites their file groups (``upsert``, ``delete``)."""
        return self in (WriteOperation.UPSERT, WriteOperation.DELETE)

    @property
    def drops_delete_markers(self) -> bool:
        """Leaves out incoming rows whose ``_hoodie_is_deleted`` is true: Hudi's inserts go through its create
        and merge handles, which count such a record as a delete and write nothing (``HoodieCreateHandle``);
        ``bulk_insert``'s row writer writes every row as it comes (``HoodieRowCreateHandle``), and upserts merge
        them as deletes."""
        return self in (WriteOperation.INSERT, WriteOperation.INSERT_OVERWRITE, WriteOperation.INSERT_OVERWRITE_TABLE)

    @property
    def replaces_written_partitions(self) -> bool:
        """Replaces the file groups of every partition it writes into (``insert_overwrite``; a partition whose
        incoming rows are all delete markers counts: Hudi's create handle still writes its, empty, file)."""
        return self is WriteOperation.INSERT_OVERWRITE

    @property
    def replaces_file_groups(self) -> bool:
        """Completes as a ``replacecommit`` listing replaced file groups."""
        return self in (WriteOperation.INSERT_OVERWRITE, WriteOperation.INSERT_OVERWRITE_TABLE,
                        WriteOperation.DELETE_PARTITION)


class IndexType(_NamedChoice):
    """``hoodie.index.type``: how an upsert finds the stored records. hudi_layout always tags with a Spark
    join of the incoming keys against the key column of the candidate base files, per partition (Hudi's
    ``SIMPLE`` index); ``BLOOM`` has the same (non-global) semantics, so it is accepted and tagged the same
    way. Global and record-level indexes are refused (format.capabilities)."""

    SIMPLE = "simple"
    BLOOM = "bloom"
    GLOBAL_SIMPLE = "global_simple"
    GLOBAL_BLOOM = "global_bloom"
    RECORD_INDEX = "record_index"
    GLOBAL_RECORD_LEVEL_INDEX = "global_record_level_index"
    RECORD_LEVEL_INDEX = "record_level_index"
    BUCKET = "bucket"
    HBASE = "hbase"
    INMEMORY = "inmemory"
    FLINK_STATE = "flink_state"


class CleaningPolicy(_NamedChoice):
    """``hoodie.cleaner.policy``: which file slices a clean keeps (Hudi's enum names)."""

    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
    KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"

    @classmethod
    def parse(cls, value: str | _NamedChoice) -> Any:
        if isinstance(value, cls):
            return value
        norm = str(value).strip().upper().replace("-", "_")
        for member in cls:
            if member.value == norm:
                return member
        raise InvalidArgumentError(f"expected one of {', '.join(m.value for m in cls)}")


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
    The text is taken in the timeline's own time zone, as instant times are; ``earliest`` (or ``000``, all
    zeros, as Hudi's docs write it) is before every instant.
    Raises ``ValueError`` (reported by :class:`Option` with the key) for anything else.
    """
    text = value.strip()
    if text.lower() == "earliest" or (text.isdigit() and set(text) == {"0"}):
        return EARLIEST  # Hudi's docs start incremental reads at "000": before every instant
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
                    "`snapshot` (Merge-on-Read slices merged with their logs), `read_optimized` (base files "
                    "only) or `incremental` (rows of the commits completed in (begin, end]).",
                    aliases=("hoodie.read.query.type",), used_by=(READ,))
AS_OF_INSTANT: Option[str | None] = Option("as.of.instant", None, parse_instant_time,
                                           "Time travel: the table as of this instant (requested time, as Hudi).",
                                           aliases=("hoodie.read.as.of.timestamp",), used_by=(READ,))
BEGIN_INSTANT: Option[str | None] = Option("hoodie.datasource.read.begin.instanttime", None, parse_instant_time,
                                           "Incremental read: commits completed after this instant.",
                                           aliases=("hoodie.read.start.timestamp",), used_by=(READ,))
END_INSTANT: Option[str | None] = Option("hoodie.datasource.read.end.instanttime", None, parse_instant_time,
                                         "Incremental read: commits completed up to this instant (default: all).",
                                         aliases=("hoodie.read.end.timestamp",), used_by=(READ,))
DATA_SKIPPING = Option("hoodie.enable.data.skipping", True, parse_bool,
                       "Skip files by the column_stats index; `false` reads every file of the snapshot.",
                       used_by=(READ,))
INCREMENTAL_FALLBACK = Option("hoodie.datasource.read.incr.fallback.fulltablescan.enable", False, parse_bool,
                              "Incremental read of a Copy-on-Write table whose range a clean reached: read the "
                              "latest snapshot's rows of the commits in range instead of refusing (Hudi's full "
                              "table scan; rows rewritten after the range are missed, as in Hudi).",
                              used_by=(READ,))

#: where a new streaming read starts (:func:`parse_stream_start`)
LATEST = "latest"


def parse_stream_start(value: str) -> str:
    """``earliest`` (:data:`EARLIEST`), ``latest`` (:data:`LATEST`) or an instant time (:func:`parse_instant_time`)."""
    if value.strip().lower() == LATEST:
        return LATEST
    return parse_instant_time(value)


STREAM_START_OFFSET = Option("hoodie.datasource.streaming.startoffset", "earliest", parse_stream_start,
                             "Where a new `readStream` query starts: `earliest` (every commit), `latest` (commits "
                             "completed after it starts) or an instant (commits completed after it); a restarted "
                             "query resumes from its checkpoint. Each micro-batch is the incremental read of the "
                             "commits completed since the last one, as Hudi's streaming source.",
                             used_by=(STREAM_READ,))
#: the keys only a streaming read honours (beside the read options a stream takes: see spark.datasource)
STREAM_READ_OPTIONS: tuple[Option[Any], ...] = (STREAM_START_OFFSET,)
#: the keys a read honours; any other key given to a read is refused (never accepted and ignored)
READ_OPTIONS: tuple[Option[Any], ...] = (QUERY_TYPE, AS_OF_INSTANT, BEGIN_INSTANT, END_INSTANT, DATA_SKIPPING,
                                         INCREMENTAL_FALLBACK)
# --- table / write ---------------------------------------------------------------------------------
TABLE_NAME = Option("hoodie.table.name", "", _str, "Table name written to hoodie.properties (default: the "
                    "folder name).", used_by=(INGEST,))
RECORD_KEY_FIELD = Option("hoodie.datasource.write.recordkey.field", "", _str,
                          "Record key column(s), comma-separated; required to create a table.",
                          aliases=("hoodie.table.recordkey.fields",), used_by=(INGEST,))
PARTITION_PATH_FIELD = Option("hoodie.datasource.write.partitionpath.field", "", _str,
                              "Partition column(s), comma-separated; empty for an unpartitioned table.",
                              aliases=("hoodie.table.partition.fields",), used_by=(INGEST,))
KEY_GENERATOR = Option("hoodie.datasource.write.keygenerator.type", "", lambda v: key_generator_type(v),
                       "Hudi's key generator, by type (`SIMPLE`) or class (`org.apache.hudi.keygen.SimpleKeyGenerator`)"
                       ": accepted when it names the one hudi_layout uses for the table's fields (`SIMPLE`: one key "
                       "and one partition field, `COMPLEX`: more, `NON_PARTITION`: no partition field; the Avro "
                       "variants alike), refused otherwise.",
                       aliases=("hoodie.datasource.write.keygenerator.class",), used_by=(INGEST,))
HIVE_STYLE = Option("hoodie.datasource.write.hive_style_partitioning", False, parse_bool,
                    "Partition folders named `column=value` instead of `value`.", used_by=(INGEST,))
URL_ENCODE_PARTITION = Option("hoodie.datasource.write.partitionpath.urlencode", False, parse_bool,
                              "URL-encode partition values in folder names (characters a file system cannot "
                              "hold are always escaped).", used_by=(INGEST,))
OPERATION: Option[WriteOperation | str] = Option(
    "hoodie.datasource.write.operation", WriteOperation.BULK_INSERT, _operation,
    "Write operation: `bulk_insert` (default here: the layout jobs' fast path), `insert`, `upsert`, `delete`, "
    "`insert_overwrite`, `insert_overwrite_table`, `delete_partition` (`df.write.format(\"hudi_layout\")` "
    "refuses `upsert` and `delete`: its tasks cannot start the jobs that find the stored keys).",
    used_by=(INGEST,))
MAX_FILE_SIZE = Option("hoodie.parquet.max.file.size", 125_829_120, _positive_int,
                       "Largest base file a write produces, in bytes (a file is closed when it reaches this).",
                       used_by=(INGEST, CLUSTER, SERVICE, COMPACT))


WRITE_SMALL_FILE_LIMIT = Option(
    "hoodie.parquet.small.file.limit", 0, _non_negative_int,
    "An upsert or insert packs its new records into the partition's base files smaller than this many bytes "
    "(each up to `hoodie.parquet.max.file.size`), as Hudi's upsert partitioner does, before it opens new file "
    "groups. Hudi's default is 104857600; hudi_layout's is 0 (packing off), because packing rewrites small "
    "clustered files and widens their column ranges (docs/live-writes.md).",
    used_by=(INGEST,))
PARQUET_CODEC = Option("hoodie.parquet.compression.codec", "snappy", _codec,
                       "Parquet compression of base files and of Merge-on-Read log blocks (snappy, zstd, gzip, "
                       "none...).",
                       used_by=(INGEST, CLUSTER, SERVICE, COMPACT))
PARQUET_MIN_SAVING = Option(
    "hudi_layout.parquet.compression.min.saving", 0.1, _fraction,
    "hudi_layout's own: a column whose parquet codec saves less than this share of its size (hashes, UUIDs, "
    "random ids) is written uncompressed; decided per task on its first rows (0: compress every column).",
    used_by=(INGEST, CLUSTER, SERVICE, COMPACT))
MERGE_COPY_UNCHANGED = Option(
    "hudi_layout.merge.copy.unchanged.columns", True, parse_bool,
    "hudi_layout's own: a Copy-on-Write update copies the parquet column chunks no updated row changed byte for "
    "byte from the old base file and encodes only the changed columns (docs/parquet-splice.md); false: "
    "re-encode every column.",
    used_by=(INGEST,))
MOR_MAX_LOG_FILES = Option(
    "hudi_layout.mor.max.log.files.per.slice", 5, _non_negative_int,
    "hudi_layout's own: a Merge-on-Read upsert or delete appends one log file to each file slice it touches "
    "while the slice holds fewer log files than this, and rewrites the slice merged with its logs into a new "
    "base file otherwise (a compaction of that group inside the deltacommit); 0: always rewrite "
    "(docs/mor-write.md).",
    used_by=(INGEST,))
RECONCILE_SCHEMA = Option(
    "hoodie.datasource.write.reconcile.schema", False, parse_bool,
    "true: a batch written in an older schema of the table is cast to the table's schema first, as Hudi does "
    "(a column it lacks is written null, a narrower type widened); false (Hudi's default): such a batch is "
    "refused naming the column. hudi_layout.write and the CLI; not the data source writer.",
    used_by=(INGEST,))
TABLE_VERSION = Option("hoodie.table.version", 9, int, "Table version of a new table: 9 or 8.",
                       used_by=(INGEST,))
TABLE_TYPE = Option("hoodie.datasource.write.table.type", "COPY_ON_WRITE", lambda v: _table_type(v),
                    "Table type of a new table: COPY_ON_WRITE or MERGE_ON_READ (whose writes are deltacommits of "
                    "base files: an update rewrites the file group merged with its log files).",
                    aliases=("hoodie.table.type",), used_by=(INGEST,))
PRECOMBINE_FIELD = Option("hoodie.datasource.write.precombine.field", "", _str,
                          "Ordering field of upserts: of two records with one key, the larger value wins "
                          "(ties: the later one).",
                          aliases=("hoodie.table.ordering.fields", "hoodie.table.precombine.field"),
                          used_by=(INGEST,))
#: ``hoodie.record.merge.mode`` for a new table (an existing table's is in hoodie.properties); "" = Hudi's
#: inference (event time with an ordering field, else commit time)
MERGE_MODE = Option("hoodie.record.merge.mode", "", lambda v: v.strip().upper(),
                    "Merge mode of a new table: EVENT_TIME_ORDERING or COMMIT_TIME_ORDERING (default: Hudi's "
                    "inference; CUSTOM is refused).", used_by=(INGEST,))
PARTITIONS_TO_DELETE = Option("hoodie.datasource.write.partitions.to.delete", "", _str,
                              "delete_partition: the partition paths to delete, comma-separated.",
                              used_by=(INGEST,))
#: upserts combine incoming records with equal keys first (Hudi's default); false is refused (it would let one
#: batch write a key twice)
COMBINE_BEFORE_UPSERT = Option("hoodie.combine.before.upsert", True, parse_bool,
                               "Combine records of one batch with equal keys before an upsert (`false` is "
                               "refused).", used_by=(INGEST,))
#: Hudi's insert-side de-duplication; hudi_layout's inserts write every row (true is refused: use upsert)
COMBINE_BEFORE_INSERT = Option("hoodie.combine.before.insert", False, parse_bool,
                               "De-duplicate inserts (`true` is refused: use upsert).", used_by=(INGEST,))
INSERT_DROP_DUPLICATES = Option("hoodie.datasource.write.insert.drop.duplicates", False, parse_bool,
                                "Drop inserts whose key exists (`true` is refused: use upsert).", used_by=(INGEST,))
INDEX_TYPE: Option[IndexType | None] = Option("hoodie.index.type", None, IndexType.parse,
                                              "How upserts find stored keys: SIMPLE / BLOOM semantics (a "
                                              "per-partition key join); other index types are refused.",
                                              used_by=(INGEST,))
PAYLOAD_CLASS = Option("hoodie.datasource.write.payload.class", "", _str,
                       "Record payload: only Hudi's default / overwrite payloads are honoured; others refused.",
                       used_by=(INGEST,))
# --- metadata table --------------------------------------------------------------------------------
METADATA_ENABLE = Option("hoodie.metadata.enable", True, parse_bool,
                         "Keep the metadata table (files + column_stats). `false` on a table that has one "
                         "deletes it, as Hudi's writer does.", used_by=(INGEST, CLUSTER, SERVICE, COMPACT, CLEAN,
                                                                        INDEX))
COLUMN_STATS_ENABLE = Option("hoodie.metadata.index.column.stats.enable", True, parse_bool,
                             "Build the column_stats index when the metadata table is created.",
                             used_by=(INGEST, INDEX, CLUSTER, SERVICE, COMPACT))
COLUMN_STATS_COLUMNS = Option("hoodie.metadata.index.column.stats.column.list", "", _str,
                              "Columns to index, comma-separated (default: every supported column, up to "
                              "the max.columns.to.index limit).", used_by=(INGEST, INDEX, CLUSTER, SERVICE, COMPACT,
                                                                           CLEAN))
COLUMN_STATS_FILE_GROUPS = Option("hoodie.metadata.index.column.stats.file.group.count", 2, _positive_int,
                                  "File groups of the column_stats partition of a new metadata table.",
                                  used_by=(INGEST, INDEX))
COLUMN_STATS_MAX_COLUMNS = Option("hoodie.metadata.index.column.stats.max.columns.to.index", 32, _positive_int,
                                  "At most this many columns are indexed when no column list is given.",
                                  used_by=(INGEST, INDEX, CLUSTER, SERVICE, COMPACT))
MDT_COMPACT_MAX_DELTA_COMMITS = Option("hoodie.metadata.compact.max.delta.commits", 10, _positive_int,
                                       "Compact the metadata table after this many deltacommits.",
                                       used_by=(INGEST, CLUSTER, SERVICE, COMPACT, CLEAN))
# --- compaction (Merge-on-Read) ------------------------------------------------------------------
COMPACT_INLINE = Option("hoodie.compact.inline", False, parse_bool,
                        "Merge-on-Read: compact in the writing process after a write, once "
                        "inline.max.delta.commits deltacommits completed since the last compaction "
                        "(docs/compaction.md); `true` is refused on Copy-on-Write tables, which have no logs.",
                        used_by=(INGEST,))
COMPACT_INLINE_MAX_DELTA_COMMITS = Option("hoodie.compact.inline.max.delta.commits", 5, _positive_int,
                                          "Completed deltacommits since the last completed compaction before an "
                                          "inline compaction runs (Hudi's NUM_COMMITS trigger).",
                                          used_by=(INGEST,))
COMPACTION_STRATEGY: Option[tuple[CompactionPlanStrategy, ...]] = Option(
                             "hoodie.compaction.strategy", (CompactionPlanStrategy.LOG_FILE_SIZE,),
                             parse_compaction_strategies,
                             "Which slices with log files a compaction plan takes (Hudi's classes, package "
                             "optional; a comma list chains them): LogFileSizeBasedCompactionStrategy (log size >= "
                             "logfile.size.threshold, largest logs first, then target.io), "
                             "LogFileNumBasedCompactionStrategy (the same by number of log files), "
                             "BoundedIOCompactionStrategy (target.io only) or UnBoundedCompactionStrategy (every "
                             "slice). Hudi's date- and partition-based strategies are refused (docs/compaction.md).",
                             used_by=(COMPACT,))
COMPACTION_TARGET_IO_MB = Option("hoodie.compaction.target.io", 512_000, int,
                                 "IO budget of one compaction plan in MB (each slice's base + log bytes read and "
                                 "base bytes written, Hudi's TOTAL_IO_MB): slices are taken in the strategy's order "
                                 "while budget remains, so the one that crosses it is still taken; a budget <= 0 "
                                 "takes none (Hudi 1.x's BoundedIOCompactionStrategy).",
                                 used_by=(COMPACT,))
COMPACTION_LOG_SIZE_THRESHOLD = Option("hoodie.compaction.logfile.size.threshold", 0, _non_negative_int,
                                       "LogFileSizeBasedCompactionStrategy: only slices whose log files add up to "
                                       "at least this many bytes.", used_by=(COMPACT,))
COMPACTION_LOG_NUM_THRESHOLD = Option("hoodie.compaction.logfile.num.threshold", 0, _non_negative_int,
                                      "LogFileNumBasedCompactionStrategy: only slices with at least this many log "
                                      "files.", used_by=(COMPACT,))
# --- clustering ------------------------------------------------------------------------------------
CLUSTERING_INLINE = Option("hoodie.clustering.inline", False, parse_bool,
                           "Cluster in the writing process after a write, every inline.max.commits commits "
                           "(needs plan.strategy.sort.columns).",
                           aliases=("hoodie.datasource.clustering.inline.enable",), used_by=(INGEST,))
CLUSTERING_INLINE_MAX_COMMITS = Option("hoodie.clustering.inline.max.commits", 4, _positive_int,
                                       "Commits between two inline clusterings.", used_by=(INGEST,))
CLUSTERING_ASYNC_ENABLED = Option("hoodie.clustering.async.enabled", False, parse_bool,
                                  "Run the clustering service in a background thread of the writing process "
                                  "for the life of its Spark session (needs plan.strategy.sort.columns).",
                                  aliases=("hoodie.datasource.clustering.async.enable",), used_by=(INGEST,))
CLUSTERING_ASYNC_MAX_COMMITS = Option("hoodie.clustering.async.max.commits", 4, _positive_int,
                                      "Commits between two clusterings of the clustering service.",
                                      used_by=(SERVICE,))
SMALL_FILE_LIMIT = Option("hoodie.clustering.plan.strategy.small.file.limit", 314_572_800, _non_negative_int,
                          "With --small-files-only (Hudi's behaviour), only files below this size are "
                          "clustered.", used_by=(CLUSTER, SERVICE))
MAX_BYTES_PER_GROUP = Option("hoodie.clustering.plan.strategy.max.bytes.per.group", 2_147_483_648, _positive_int,
                             "Largest clustering group (one sort) in bytes; a partition above it is split "
                             "into several groups.", used_by=(CLUSTER, SERVICE))
MAX_NUM_GROUPS = Option("hoodie.clustering.plan.strategy.max.num.groups", 30, _positive_int,
                        "At most this many groups in one clustering plan.", used_by=(CLUSTER, SERVICE))
TARGET_FILE_MAX_BYTES = Option("hoodie.clustering.plan.strategy.target.file.max.bytes", 1_073_741_824, _positive_int,
                               "Target size of the files a clustering writes: a group of N bytes becomes "
                               "ceil(N / this) files. Hudi's 1 GiB default gives one file per partition on "
                               "small tables (the result then says so).", used_by=(CLUSTER, SERVICE))
SORT_COLUMNS = Option("hoodie.clustering.plan.strategy.sort.columns", "", _str,
                      "Columns to cluster by, comma-separated (`--columns`).", used_by=(CLUSTER, SERVICE))
SINGLE_GROUP_CLUSTERING = Option("hoodie.clustering.plan.strategy.single.group.clustering.enabled", True,
                                 parse_bool, "Also cluster a partition that forms a single group of one file. "
                                 "As in Hudi, a plan with sort columns (every `cluster` command's) always does.",
                                 used_by=(CLUSTER, SERVICE))
PARTITION_SELECTED = Option("hoodie.clustering.plan.strategy.partition.selected", "", _str,
                            "Cluster only these partitions, comma-separated.", used_by=(CLUSTER, SERVICE))
PARTITION_REGEX = Option("hoodie.clustering.plan.strategy.partition.regex.pattern", "", _str,
                         "Cluster only partitions matching this regular expression.", used_by=(CLUSTER, SERVICE))
CLUSTERING_MAX_PARALLELISM = Option("hoodie.clustering.max.parallelism", 15, _positive_int,
                                    "Clustering groups executed at the same time.", used_by=(CLUSTER, SERVICE))
LAYOUT_STRATEGY = Option("hoodie.layout.optimize.strategy", LayoutStrategy.LINEAR, LayoutStrategy.parse,
                         "Row order of a clustering: `linear`, `z-order`, `hilbert` or hudi_layout's own "
                         "`qdtree` (alias `workload`: cuts along a workload's predicates, docs/layouts.md) "
                         "(`--strategy`). The `cluster` command without either defaults to `z-order`.",
                         used_by=(CLUSTER, SERVICE))
CURVE_BUILD_METHOD = Option("hoodie.layout.optimize.curve.build.method", CurveBuildMethod.DIRECT,
                            CurveBuildMethod.parse,
                            "How a curve scales each column: `direct` (min/max) or `sample` (sampled "
                            "quantiles) (`--method`).", used_by=(CLUSTER, SERVICE))
CURVE_SAMPLE_SIZE = Option("hoodie.layout.optimize.build.curve.sample.size", 200_000, _positive_int,
                           "Rows sampled per group by the `sample` method.", used_by=(CLUSTER, SERVICE))
# hudi_layout's own: the in-memory size (Arrow) one curve-sort task may hold; more data -> more tasks
SORT_TASK_MAX_BYTES = Option("hudi_layout.clustering.sort.task.max.bytes", 536_870_912, _positive_int,
                             "hudi_layout's own: memory (Arrow, estimated) one curve-sort task may hold; more "
                             "data means more tasks.", used_by=(CLUSTER, SERVICE))
# --- cleaning (docs/cleaning.md) --------------------------------------------------------------------
CLEAN_AUTOMATIC = Option("hoodie.clean.automatic", True, parse_bool,
                         "Clean (delete file slices no longer needed) after every write, clustering and "
                         "compaction.", used_by=AUTOMATIC_CLEAN)
CLEAN_ASYNC = Option("hoodie.clean.async", False, parse_bool,
                     "Background cleaning: not supported (cleans run inline); `true` is refused.", used_by=CLEANING)
CLEAN_MAX_COMMITS = Option("hoodie.clean.max.commits", 1, _positive_int,
                           "Completed commits since the last clean before an automatic clean is attempted.",
                           used_by=AUTOMATIC_CLEAN)
CLEAN_TRIGGER_STRATEGY = Option("hoodie.clean.trigger.strategy", "NUM_COMMITS", lambda v: v.strip().upper(),
                                "When an automatic clean is attempted (Hudi's `NUM_COMMITS`).",
                                used_by=AUTOMATIC_CLEAN)
CLEANER_POLICY = Option("hoodie.cleaner.policy", CleaningPolicy.KEEP_LATEST_COMMITS, CleaningPolicy.parse,
                        "Which file slices a clean keeps: `KEEP_LATEST_COMMITS`, `KEEP_LATEST_FILE_VERSIONS` or "
                        "`KEEP_LATEST_BY_HOURS`.", used_by=CLEANING)
CLEANER_COMMITS_RETAINED = Option("hoodie.cleaner.commits.retained", 10, _positive_int,
                                  "KEEP_LATEST_COMMITS: the slices the last this many commits read stay.",
                                  used_by=CLEANING)
CLEANER_FILE_VERSIONS_RETAINED = Option("hoodie.cleaner.fileversions.retained", 3, _positive_int,
                                        "KEEP_LATEST_FILE_VERSIONS: file slices kept per file group.",
                                        used_by=CLEANING)
CLEANER_HOURS_RETAINED = Option("hoodie.cleaner.hours.retained", 24, _non_negative_int,
                                "KEEP_LATEST_BY_HOURS: slices needed by commits of the last this many hours stay.",
                                used_by=CLEANING)
CLEANER_DELETE_BOOTSTRAP_BASE_FILE = Option("hoodie.cleaner.delete.bootstrap.base.file", False, parse_bool,
                                            "Bootstrap tables are not supported; `true` is refused.",
                                            used_by=CLEANING)
# hudi_layout's own: a file that stopped being part of the latest snapshot less than this long ago is kept,
# so a reader (any engine) that planned its scan before the change has this long to finish (docs/cleaning.md)
CLEAN_GRACE_SECONDS = Option("hudi_layout.clean.grace.period.seconds", 600, _non_negative_int,
                             "hudi_layout's own: a file replaced less than this long ago is kept, so readers that "
                             "planned before the change can finish.", used_by=CLEANING)
# hudi_layout's own (Hudi has no such keys): column weights for the curves, the workload of the qdtree
# strategy, the tree a plan records, the opt-in query log, and curve-region pruning (docs/layouts.md)
CURVE_COLUMN_WEIGHTS: Option[dict[str, float] | str] = Option(
    "hudi_layout.layout.curve.column.weights", {}, parse_column_weights,
    "hudi_layout's own: bits per curve column, `col:weight,...` (a column twice as heavy gets one more of the "
    "top bits; columns not named weigh 1), or `workload` (derived from the workload's predicates) (`--weights`).",
    used_by=(CLUSTER, SERVICE))
WORKLOAD = Option("hudi_layout.layout.workload", "", _str,
                  "hudi_layout's own: the workload of the `qdtree` strategy (or of workload weights): a file of "
                  "WHERE predicates (one per line, optional `weight<TAB>predicate`), or `log` (the table's query "
                  "log) (`--workload`).", used_by=(CLUSTER, SERVICE))
QDTREE_CUTS = Option("hudi_layout.layout.qdtree", "", _str,
                     "hudi_layout's own: the cuts of a `qdtree` layout (JSON), recorded in the clustering plan's "
                     "strategyParams so a resumed plan uses the same tree; set by the planner.",
                     used_by=(CLUSTER, SERVICE))
QDTREE_SAMPLE_SIZE = Option("hudi_layout.layout.qdtree.sample.size", 50_000, _positive_int,
                            "hudi_layout's own: rows sampled uniformly to choose the `qdtree` cuts (each workload "
                            "box also keeps up to 2,000 of its own rows).", used_by=(CLUSTER, SERVICE))
QDTREE_LOOKAHEAD = Option("hudi_layout.layout.qdtree.lookahead", 4, _positive_int,
                          "hudi_layout's own: moves the `qdtree` search tries at each of its upper nodes, each "
                          "completed greedily (1: plain greedy).", used_by=(CLUSTER, SERVICE))
QDTREE_MIN_LEAF_FILES = Option("hudi_layout.layout.qdtree.min.leaf.files", 0.01, _positive_float,
                               "hudi_layout's own: smallest `qdtree` leaf, in target files (a thin slab of the "
                               "workload may become one smaller file).", used_by=(CLUSTER, SERVICE))
QDTREE_LEAF_CELLS = Option("hudi_layout.layout.qdtree.leaf.cells", True, parse_bool,
                           "hudi_layout's own: cut each `qdtree` leaf into cells of about one file along the "
                           "workload's query shapes, so queries of those shapes with other constants skip "
                           "better (false: one Hilbert curve per leaf, the search without shapes; "
                           "docs/layouts.md).", used_by=(CLUSTER, SERVICE))
QDTREE_SHAPE_WEIGHT = Option("hudi_layout.layout.qdtree.shape.weight", 0.1, _non_negative_float,
                             "hudi_layout's own: with `leaf.cells`, how much the `qdtree` cut search also counts "
                             "the workload's query shapes with other constants (0: its own constants only; "
                             "docs/layouts.md).", used_by=(CLUSTER, SERVICE))
# read-side settings of hudi_layout: taken from the defaults file (every read), or given as read options
WORKLOAD_LOG_ENABLE = Option("hudi_layout.workload.log.enable", False, parse_bool,
                             "hudi_layout's own: record the predicates `hl.read` and `explain` see, per table, in "
                             "`.hoodie/.aux/hudi_layout/workload.log` (a failed write never fails the read; the data "
                             "source takes no filters on Spark 4, so records none).", used_by=(READ,))
WORKLOAD_LOG_MAX_BYTES = Option("hudi_layout.workload.log.max.bytes", 16 * 1024 * 1024, _positive_int,
                                "hudi_layout's own: the query log stops growing at this size (one warning).",
                                used_by=(READ,))
CURVE_REGION_ENABLE = Option("hudi_layout.skipping.curve.region.enable", True, parse_bool,
                             "hudi_layout's own: after column_stats, drop files whose recorded curve-key range "
                             "misses the query box (only adds proofs of \"cannot match\").", used_by=(READ,))
#: hudi_layout's read-side settings: honoured from the defaults file by every read and as read options
READ_SETTINGS: tuple[Option[Any], ...] = (WORKLOAD_LOG_ENABLE, WORKLOAD_LOG_MAX_BYTES, CURVE_REGION_ENABLE)

#: every spelling of the read settings and of the streaming read's own keys
READ_SETTING_KEYS: frozenset[str] = frozenset(k for o in READ_SETTINGS for k in (o.key, *o.aliases))
STREAM_READ_KEYS: frozenset[str] = frozenset(k for o in STREAM_READ_OPTIONS for k in (o.key, *o.aliases))

ALL_OPTIONS: tuple[Option[Any], ...] = tuple(v for v in globals().values() if isinstance(v, Option))
KNOWN_KEYS: frozenset[str] = frozenset(k for o in ALL_OPTIONS for k in (o.key, *o.aliases))
#: keys a read honours (plus ``hoodie.metadata.enable``: false reads without the column_stats index)
READ_KEYS: frozenset[str] = frozenset(
    k for o in (*READ_OPTIONS, *READ_SETTINGS, METADATA_ENABLE) for k in (o.key, *o.aliases))
#: Hudi read options that change what a read returns and that hudi_layout does not implement, each with the
#: value under which Hudi reads as hudi_layout does. Hudi's Spark reads take every ``hoodie.*`` setting of the
#: session beneath the read's options; a read in a session that sets one of these to anything else is refused
#: (:func:`refuse_unhonoured_session_read_settings`). Given as read options they are refused like any unknown key.
UNHONOURED_HUDI_READ_SETTINGS: dict[str, str] = {
    "hoodie.datasource.merge.type": "payload_combine",  # skip_merge: base and log records unmerged
    "hoodie.datasource.query.incremental.format": "latest_state",  # cdc: change records
    "hoodie.datasource.read.extract.partition.values.from.path": "false",
    "hoodie.datasource.read.incr.filters": "",
    "hoodie.datasource.read.incr.path.glob": "",
    "hoodie.datasource.read.schema.use.end.instanttime": "false",
    "hoodie.datasource.read.paths": "",
    "hoodie.datasource.view.type": "",  # Hudi's old name of the query type, which Hudi still honours
}


def refuse_unhonoured_session_read_settings(session: Mapping[str, str]) -> None:
    """Refuse a read when the Spark session sets a Hudi read option of :data:`UNHONOURED_HUDI_READ_SETTINGS`
    to a value that changes what Hudi reads (compared as trimmed, case-insensitive text)."""
    for key, harmless in UNHONOURED_HUDI_READ_SETTINGS.items():
        value = session.get(key)
        if value is not None and value.strip().lower() != harmless:
            raise InvalidArgumentError(
                f"the Spark session sets {key}={value}, which changes what a Hudi read returns; hudi_layout does "
                "not implement it", hint=f"unset it for this read (spark.conf.unset({key!r}))"
                + (f" or set it to {harmless!r}" if harmless else ""))


#: the read options Hudi's Spark reads take from the session, by their ``hoodie.*`` names as Hudi's Java reader
#: knows them (``as.of.instant`` is not one; the aliases are hudi-rs's names, which Hudi's reads ignore)
_SESSION_READ_OPTIONS: tuple[Option[Any], ...] = tuple(o for o in (*READ_OPTIONS, METADATA_ENABLE)
                                                       if o.key.startswith("hoodie."))
SESSION_READ_KEYS: frozenset[str] = frozenset(o.key for o in _SESSION_READ_OPTIONS)


def read_options_beneath_session(session: Mapping[str, str], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """A read's options over the session's read settings (:func:`session_read_options` of the Spark layer):
    an option the read names (by its key or an alias) hides the session's value; the session's begin / end
    instants and incremental fallback count only when the resulting query type is incremental (Hudi's snapshot
    reads ignore them)."""
    given = canonical_options(options or {})
    out: dict[str, Any] = {}
    for option in _SESSION_READ_OPTIONS:
        names = (option.key, *option.aliases)
        if any(n in given for n in names):
            continue
        out.update({n: session[n] for n in names if n in session})
    out.update(given)
    if QUERY_TYPE.get(out) is not QueryType.INCREMENTAL:
        for option in (BEGIN_INSTANT, END_INSTANT, INCREMENTAL_FALLBACK):
            for n in (option.key, *option.aliases):
                if n not in given:
                    out.pop(n, None)
    return out


#: keys a write, clustering or indexing run honours
WRITE_KEYS: frozenset[str] = KNOWN_KEYS - STREAM_READ_KEYS - frozenset(k for o in READ_OPTIONS
                                                                      for k in (o.key, *o.aliases))
#: Hudi keys accepted although they change nothing here, each for a reason that cannot change the result.
ACCEPTED_WITHOUT_EFFECT: dict[str, str] = {
    "hoodie.bulkinsert.shuffle.parallelism": "Spark's own partitioning decides how many tasks write",
    "hoodie.insert.shuffle.parallelism": "Spark's own partitioning decides how many tasks write",
    "hoodie.upsert.shuffle.parallelism": "Spark's own partitioning decides how many tasks write",
}
#: table configs: a write may name them with the table's own values (:func:`table_config_conflicts`)
TABLE_CONFIG_PREFIX = "hoodie.table."


#: the defaults file shipped with the package (used when no other is found)
PACKAGED_DEFAULTS_FILE = Path(__file__).resolve().parent / "conf" / "hudi-layout-defaults.conf"


def defaults_file_candidates() -> list[Path]:
    """Where a defaults file is looked for, first found wins: ``$HUDI_LAYOUT_CONF``;
    ``./conf/hudi-layout-defaults.conf``; Hudi's own ``hudi-defaults.conf`` in ``$HUDI_CONF_DIR`` (Hudi's
    default ``/etc/hudi/conf`` when unset); the file beside the package."""
    out = []
    env = os.environ.get("HUDI_LAYOUT_CONF")
    if env:
        out.append(Path(env))
    out.append(Path.cwd() / "conf" / "hudi-layout-defaults.conf")
    out.append(Path(os.environ.get("HUDI_CONF_DIR") or "/etc/hudi/conf") / "hudi-defaults.conf")
    out.append(PACKAGED_DEFAULTS_FILE)
    return out


def default_conf_path() -> Path | None:
    """The defaults file in use (see :func:`defaults_file_candidates`), ``None`` when there is none."""
    env = os.environ.get("HUDI_LAYOUT_CONF")
    if env and not Path(env).is_file():
        raise InvalidArgumentError(f"HUDI_LAYOUT_CONF names {env}, which is not a file",
                                   hint="point it at a hudi-defaults.conf style file, or unset it")
    return next((p for p in defaults_file_candidates() if p.is_file()), None)


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


_defaults_cache: dict[str, tuple[tuple[str, int, int], dict[str, str]]] = {}


def defaults_file_values() -> dict[str, str]:
    """The defaults file in use, parsed (re-read only when its size or modification time changes); ``{}`` when
    there is none or it cannot be read (a read then keeps its defaults; a write refuses such a file)."""
    try:
        path = default_conf_path()
        if path is None:
            return {}
        st = path.stat()
    except (OSError, InvalidArgumentError):
        return {}
    key = (str(path), st.st_size, st.st_mtime_ns)
    got = _defaults_cache.get("conf")
    if got is not None and got[0] == key:
        return got[1]
    try:
        values = read_defaults_file(path)
    except (OSError, InvalidArgumentError):
        values = {}
    _defaults_cache["conf"] = (key, values)
    return values


def defaults_file_read_options() -> dict[str, str]:
    """The Hudi read options a defaults file sets (:data:`SESSION_READ_KEYS`): a read takes them beneath the
    session's settings and its own options, as Hudi's reads take ``hudi-defaults.conf``; writes leave them
    (until session 29 reads ignored them and every write refused the file for them)."""
    return {k: v for k, v in canonical_options(defaults_file_values()).items() if k in SESSION_READ_KEYS}


def canonical_key(key: Any) -> str:
    """A key as the registry spells it: one of our namespaces' keys trimmed and lower-cased (every registry key
    is lower-case), as Spark's case-insensitive options already hand them to the data source; others as given.
    Until session 29 ``{"Hoodie.Datasource.Write.Operation": "upsert"}`` passed ``hl.write`` as a key of no
    namespace and the write was a bulk insert: the key stored twice (a probe)."""
    text = str(key).strip()
    low = text.lower()
    return low if low.startswith(("hoodie.", "hudi_layout.")) or low == "as.of.instant" else str(key)


def canonical_options(options: Mapping[Any, Any]) -> dict[str, Any]:
    """``options`` with :func:`canonical_key` keys; two spellings of one key with different values are
    refused (one of them would be ignored)."""
    out: dict[str, Any] = {}
    spelled: dict[str, Any] = {}
    for key, value in options.items():
        canon = canonical_key(key)
        if canon in out and option_text(out[canon]).strip() != option_text(value).strip():
            raise InvalidArgumentError(f"options {spelled[canon]!r} and {key!r} name the same key {canon!r} with "
                                       "different values", hint=f"give {canon} once")
        out[canon], spelled[canon] = value, key
    return out


def is_governed(key: str) -> bool:
    """Keys under the policy of the module docstring (Spark's and other libraries' options are not)."""
    canon = canonical_key(key)
    return canon.startswith(("hoodie.", "hudi_layout.")) or canon == "as.of.instant"


def _nearest(key: str, honoured: frozenset[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(key, sorted(honoured), n=1, cutoff=0.75)
    return close[0] if close else None


def check_write_keys(options: Mapping[str, Any], *, where: str = "") -> None:
    """Refuse the ``hoodie.*`` keys a write / clustering / indexing run does not honour (module docstring), and
    the write options of Spark's file sources and other table formats (:func:`refuse_peer_write_keys`)."""
    refuse_peer_write_keys(options)
    for key in options:
        if key in ACCEPTED_WITHOUT_EFFECT:  # Hudi reads them as integers: a value it would refuse is refused
            try:
                _positive_int(option_text(options[key]))
            except ValueError:
                raise InvalidArgumentError(f"option {key}={options[key]!r} is invalid: expected a positive integer",
                                           hint=f"{key}: {ACCEPTED_WITHOUT_EFFECT[key]}") from None
            continue
        if not is_governed(key) or key in WRITE_KEYS or key.startswith(TABLE_CONFIG_PREFIX):
            continue
        raise _unsupported(key, WRITE_KEYS, "a read option; writes do not use it" if key in READ_KEYS else None,
                           where)


#: time-travel and change-feed read options of Spark's other table formats (Delta's, Iceberg's), by lower-cased
#: key, with the Hudi option that does it: outside our namespaces, a read would otherwise answer them from the
#: latest snapshot without a word (found in session 28: ``timestampAsOf`` read every row)
PEER_READ_KEYS = {
    "timestampasof": AS_OF_INSTANT.key, "versionasof": AS_OF_INSTANT.key, "as-of-timestamp": AS_OF_INSTANT.key,
    "snapshot-id": AS_OF_INSTANT.key, "startingversion": BEGIN_INSTANT.key, "startingtimestamp": BEGIN_INSTANT.key,
    "start-snapshot-id": BEGIN_INSTANT.key, "end-snapshot-id": END_INSTANT.key,
    "readchangefeed": f"{QUERY_TYPE.key}=incremental", "readchangedata": f"{QUERY_TYPE.key}=incremental",
}


#: read options of Spark's file sources that change which files or values a read gives; a Hudi table's files
#: come from its timeline, so the read would go on without them (session 29)
PEER_FILE_READ_KEYS = {
    "pathglobfilter": "a predicate (where=...) on the table's columns",
    "recursivefilelookup": "the table's base path (its timeline lists the files)",
    "modifiedbefore": f"{AS_OF_INSTANT.key} (time travel by commit time)",
    "modifiedafter": f"{QUERY_TYPE.key}=incremental with {BEGIN_INSTANT.key}",
    "datetimerebasemode": "the session setting spark.sql.parquet.datetimeRebaseModeInRead",
    "int96rebasemode": "the session setting spark.sql.parquet.int96RebaseModeInRead",
    "mergeschema": "nothing: a read already gives the table's latest schema, see docs/schema-evolution.md",
    # streaming options of other sources (Kafka, Delta, the file source), taken and ignored until session 31
    "startingoffsets": f"{STREAM_START_OFFSET.key} (earliest, latest or an instant)",
    "maxfilespertrigger": "nothing: each micro-batch reads every commit completed since the last (no read limits)",
    "maxbytespertrigger": "nothing: each micro-batch reads every commit completed since the last (no read limits)",
    "maxoffsetspertrigger": "nothing: each micro-batch reads every commit completed since the last (no read limits)",
    "skipchangecommits": "nothing: a micro-batch holds the rows its commits wrote; deletes emit no rows",
    "ignoredeletes": "nothing: deletes emit no rows in a stream of Hudi's incremental reads",
    "ignorechanges": "nothing: a micro-batch holds the rows its commits wrote (updates included)",
}

#: write options of Spark's file sources and of Delta / Iceberg, by lower-cased key, with what does it here.
#: Outside our namespaces, a write would otherwise go on without them (session 29: ``compression``,
#: ``maxRecordsPerFile`` and ``partitionOverwriteMode`` were taken and did nothing; with ``mode("overwrite")``
#: the last replaced the whole table where the user asked for the written partitions only)
PEER_WRITE_KEYS = {
    "compression": "hoodie.parquet.compression.codec", "parquet.compression": "hoodie.parquet.compression.codec",
    "compression-codec": "hoodie.parquet.compression.codec",
    "maxrecordsperfile": "hoodie.parquet.max.file.size", "target-file-size-bytes": "hoodie.parquet.max.file.size",
    "partitionoverwritemode": "hoodie.datasource.write.operation=insert_overwrite (replaces the partitions the "
                              "rows fall in) or insert_overwrite_table",
    "replacewhere": "hoodie.datasource.write.operation=insert_overwrite, or delete then insert",
    "mergeschema": "nothing: a write evolves the table's schema by itself, see docs/schema-evolution.md",
    "overwriteschema": "nothing: a table's columns are only added or widened, see "
                       "docs/schema-evolution.md; write a new table to change them",
    "txnappid": "hoodie.datasource.write.operation=upsert (a replayed batch leaves the same table)",
    "txnversion": "hoodie.datasource.write.operation=upsert (a replayed batch leaves the same table)",
    "usermetadata": "nothing: commit metadata extras are not written",
    "datachange": "nothing: every hudi_layout commit is a data change or a clustering",
    "write-format": "nothing: base files are parquet", "distribution-mode": "hudi_layout.cluster after the write",
    "fanout-enabled": "nothing: writers are chosen per task",
}
#: the one value of a peer key that says what hudi_layout does anyway: accepted (``mergeSchema=true``)
PEER_KEYS_SAME_AS_OURS = {"mergeschema": "true"}
_NOTHING = "nothing: "


def _refuse_peer_keys(options: Mapping[str, Any], table: Mapping[str, str], kind: str, consequence: str) -> None:
    for key, value in options.items():
        instead = table.get(str(key).lower())
        if instead is None or PEER_KEYS_SAME_AS_OURS.get(str(key).lower()) == str(value).strip().lower():
            continue
        nothing = instead.startswith(_NOTHING)
        raise InvalidArgumentError(f"option {key!r} is {kind}; hudi_layout does not take it ({consequence})",
                                   hint=f"drop it: {instead[len(_NOTHING):]}" if nothing else f"use {instead}")


def refuse_peer_read_keys(options: Mapping[str, Any]) -> None:
    """Refuse another table format's time-travel or change-feed option (:data:`PEER_READ_KEYS`) and the file
    sources' read options (:data:`PEER_FILE_READ_KEYS`) by name."""
    for key in options:
        instead = PEER_READ_KEYS.get(str(key).lower())
        if instead is not None:
            raise InvalidArgumentError(
                f"option {key!r} is another table format's read option; hudi_layout does not take it (the read "
                "would answer from the latest snapshot)", hint=f"use {instead!r} (docs/read-semantics.md)")
    _refuse_peer_keys(options, PEER_FILE_READ_KEYS, "a read option of Spark's file sources",
                      "the read would go on without it")


def refuse_peer_write_keys(options: Mapping[str, Any]) -> None:
    """Refuse the write options of Spark's file sources and of Delta / Iceberg (:data:`PEER_WRITE_KEYS`)."""
    _refuse_peer_keys(options, PEER_WRITE_KEYS, "a write option of Spark's file sources or another table format",
                      "the write would go on without it")


def check_read_keys(options: Mapping[str, Any], *, where: str = "") -> None:
    """Refuse the ``hoodie.*`` keys a read does not honour (module docstring), other table formats'
    time-travel options and Spark's file-source read options (:func:`refuse_peer_read_keys`)."""
    refuse_peer_read_keys(options)
    for key in options:
        if not is_governed(key) or key in READ_KEYS:
            continue
        why = ("only a streaming read (spark.readStream) uses it" if key in STREAM_READ_KEYS
               else "a write option; reads do not use it" if key in KNOWN_KEYS else None)
        raise _unsupported(key, READ_KEYS, why, where)


#: Hudi keys that switch on something hudi_layout does not build: a "did you mean" by spelling named a key of
#: another meaning (``hoodie.metadata.record.index.enable`` -> ``hoodie.metadata.enable``, session 29's probe)
UNBUILT_HUDI_FEATURES: Mapping[str, str] = {
    "hoodie.metadata.record.index.enable": "the metadata table's record_index partition is not maintained: "
                                           "upserts find stored keys with Hudi's SIMPLE index",
    "hoodie.metadata.global.record.level.index.enable": "the metadata table's record_index partition is not "
                                                        "maintained: upserts find stored keys with Hudi's SIMPLE index",
    "hoodie.metadata.index.bloom.filter.enable": "the metadata table's bloom_filters partition is not "
                                                 "maintained; only files and column_stats are",
    "hoodie.metadata.index.partition.stats.enable": "the metadata table's partition_stats partition is not "
                                                    "maintained; only files and column_stats are",
    "hoodie.metadata.index.secondary.enable": "secondary indexes are not maintained; only files and column_stats are",
    "hoodie.metadata.index.expression.enable": "expression indexes are not maintained; only files and column_stats "
                                               "are",
}


def _unsupported(key: str, honoured: frozenset[str], why: str | None, where: str) -> InvalidArgumentError:
    unbuilt = UNBUILT_HUDI_FEATURES.get(key)
    if unbuilt is not None and why is None:
        return InvalidArgumentError(f"option {key!r} is not supported by hudi_layout ({unbuilt})"
                                    + (f" in {where}" if where else ""),
                                    hint="leave it out (hudi_layout always runs without it); no option is ignored "
                                         "silently")
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
        # the file's read options are the reads' (defaults_file_read_options), not refused here
        defaults = {k: v for k, v in canonical_options(read_defaults_file(defaults_path)).items()
                    if k not in SESSION_READ_KEYS}
        check_write_keys(defaults, where=str(defaults_path))
        merged.update(defaults)
    caller = {k: option_text(v) for k, v in canonical_options(options or {}).items()}
    check_write_keys(caller)
    merged.update(caller)
    return merged


def resolve_read_options(options: Mapping[str, Any] | None) -> dict[str, str]:
    """The caller's read options as ``{key: str}``: keys a read does not honour are refused by name, and
    the values of the known ones are parsed now (errors name the key) so nothing runs with a bad value."""
    out = {k: option_text(v) for k, v in canonical_options(options or {}).items()
           if v is not None}
    check_read_keys(out)
    for option in (*READ_OPTIONS, *READ_SETTINGS):
        option.get(out)
    return out


def split_fields(value: str) -> list[str]:
    return [f.strip() for f in value.split(",") if f.strip()]


def validate_all(options: Mapping[str, Any]) -> None:
    """Parse every known option present in ``options`` (raises the first :class:`InvalidArgumentError`,
    naming key and value). Writers call it before anything is written, so a bad value never leaves a
    half-started instant behind."""
    for option in ALL_OPTIONS:
        option.get(options)


def _fields(value: str) -> str:
    """A field list as Hudi compares it: names without ``:type`` suffixes, comma-joined, no blanks."""
    return ",".join(f.split(":", 1)[0] for f in split_fields(value))


def _bool_text(value: str) -> str:
    return str(parse_bool(value)).lower()


def _table_type(value: str) -> str:
    v = value.strip().upper()
    return {"COW": "COPY_ON_WRITE", "MOR": "MERGE_ON_READ"}.get(v, v)


def key_generator_type(value: str) -> str:
    """A key generator named by type or class, as its type without the ``_AVRO`` variant (Hudi's
    ``KeyGeneratorType``: ``SimpleAvroKeyGenerator`` and ``SIMPLE`` write the same keys)."""
    short = value.strip().rsplit(".", 1)[-1]
    return _KEYGEN_CLASSES.get(short, short.upper()).removesuffix("_AVRO")


_KEYGEN_CLASSES = {"SimpleKeyGenerator": "SIMPLE", "SimpleAvroKeyGenerator": "SIMPLE",
                   "ComplexKeyGenerator": "COMPLEX", "ComplexAvroKeyGenerator": "COMPLEX",
                   "NonpartitionedKeyGenerator": "NON_PARTITION", "NonpartitionedAvroKeyGenerator": "NON_PARTITION",
                   "TimestampBasedKeyGenerator": "TIMESTAMP", "TimestampBasedAvroKeyGenerator": "TIMESTAMP",
                   "CustomKeyGenerator": "CUSTOM", "CustomAvroKeyGenerator": "CUSTOM",
                   "GlobalDeleteKeyGenerator": "GLOBAL_DELETE"}


#: writer options whose value is fixed by a table's ``hoodie.properties``: writer key (and aliases), the
#: table properties that hold it (first present wins), the value a table without them has, a normaliser
TABLE_CONFIG_OPTIONS: tuple[tuple[tuple[str, ...], tuple[str, ...], str | None, Callable[[str], str]], ...] = (
    (("hoodie.table.name",), ("hoodie.table.name",), None, str.strip),
    (("hoodie.datasource.write.recordkey.field", "hoodie.table.recordkey.fields"),
     ("hoodie.table.recordkey.fields",), None, _fields),
    (("hoodie.datasource.write.partitionpath.field", "hoodie.table.partition.fields"),
     ("hoodie.table.partition.fields",), "", _fields),
    (("hoodie.table.version",), ("hoodie.table.version",), None, str.strip),
    (("hoodie.datasource.write.table.type", "hoodie.table.type"), ("hoodie.table.type",), "COPY_ON_WRITE",
     _table_type),
    (("hoodie.datasource.write.hive_style_partitioning",), ("hoodie.datasource.write.hive_style_partitioning",),
     "false", _bool_text),
    (("hoodie.datasource.write.partitionpath.urlencode",), ("hoodie.datasource.write.partitionpath.urlencode",),
     "false", _bool_text),
    (("hoodie.datasource.write.precombine.field", "hoodie.table.precombine.field", "hoodie.table.ordering.fields"),
     ("hoodie.table.ordering.fields", "hoodie.table.precombine.field"), None, _fields),
    (("hoodie.datasource.write.keygenerator.type", "hoodie.datasource.write.keygenerator.class",
      "hoodie.table.keygenerator.type", "hoodie.table.keygenerator.class"),
     ("hoodie.table.keygenerator.class", "hoodie.table.keygenerator.type"), None, key_generator_type),
)
#: the options that describe a table (its ``hoodie.properties``): every command takes them and refuses a value the
#: table contradicts (:func:`refuse_table_config_conflicts`), so one option map can serve every call on a table
TABLE_DESCRIBING_KEYS: frozenset[str] = frozenset(k for keys, *_rest in TABLE_CONFIG_OPTIONS for k in keys)
_OPTION_BY_KEY: dict[str, Option[Any]] = {k: o for o in ALL_OPTIONS for k in (o.key, *o.aliases)}
#: how an error names a command of :data:`HONOURED_BY_LEGEND`
COMMAND_NAMES = {INGEST: "a write", CLUSTER: "cluster", SERVICE: "the clustering service", INDEX: "index",
                 READ: "a read", CLEAN: "clean", COMPACT: "compact", STREAM_READ: "a streaming read"}


def _taken_by_every_command(key: str) -> bool:
    return (key in TABLE_DESCRIBING_KEYS or key.startswith(TABLE_CONFIG_PREFIX) or key in ACCEPTED_WITHOUT_EFFECT
            or key not in _OPTION_BY_KEY)  # unknown keys: refused by check_write_keys / check_read_keys


def options_used_by(options: Mapping[str, Any], *commands: str) -> dict[str, Any]:
    """The options of ``options`` that one of ``commands`` honours (:attr:`Option.used_by`), with the keys every
    command takes (:data:`TABLE_DESCRIBING_KEYS`): what a command run on behalf of another gets (a write's
    inline compaction gets the compaction's options of the write's, not its write operation)."""
    return {k: v for k, v in options.items()
            if _taken_by_every_command(k) or any(c in _OPTION_BY_KEY[k].used_by for c in commands)}


def refuse_options_unused_by(options: Mapping[str, Any] | None, command: str, *, also: tuple[str, ...] = (),
                             note: Mapping[str, str] | None = None) -> None:
    """Refuse the caller's options that ``command`` (or one of ``also``, what it runs on the way: a write's inline
    clustering) does not honour. Until session 30 ``used_by`` was documentation and ``hl.clean(options=
    {"hoodie.parquet.compression.codec": "gzip"})`` or ``cluster -o hoodie.datasource.write.operation=delete``
    went through without effect (session 29's options probe). A defaults file is not checked: it serves every
    command. ``note`` adds, per key, what would make the command use it."""
    given = canonical_options(options or {})
    used = options_used_by(given, command, *also)
    unused = [k for k in given if given[k] is not None and k not in used]
    if not unused:
        return
    key = unused[0]
    users = ", ".join(COMMAND_NAMES.get(c, c) for c in _OPTION_BY_KEY[key].used_by) or "no command"
    extra = (note or {}).get(key)
    raise InvalidArgumentError(
        f"option {key} is not used by {COMMAND_NAMES.get(command, command)} (it is honoured by {users})"
        + (f"; {extra}" if extra else ""),
        hint="drop it from this call's options: hudi_layout never accepts an option it would ignore (the README's "
             "options table says which commands honour each key)"
             + (f"; also not used here: {', '.join(unused[1:])}" if len(unused) > 1 else ""))


#: table configs a write may name although the table does not record them: the value their absence means
TABLE_CONFIG_ABSENT_MEANS: dict[str, str] = {"hoodie.table.cdc.enabled": "false"}
#: the table value :func:`table_config_conflicts` reports for a ``hoodie.table.*`` key the table does not record
TABLE_CONFIG_NOT_SET = "(not set)"


def table_config_conflicts(table_props: Mapping[str, str], given: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(option key, table value, given value)`` for every option in ``given`` that contradicts the table's
    ``hoodie.properties`` (as Hudi's ``HoodieWriterUtils.validateTableConfig`` refuses them); the table value
    is :data:`TABLE_CONFIG_NOT_SET` for a ``hoodie.table.*`` key the table does not record. Options the table does not
    record (and has no default for) are not compared, except ``hoodie.table.*`` keys: a table config the
    table lacks would otherwise be accepted and mean nothing (``TABLE_CONFIG_ABSENT_MEANS`` lists the values
    that are what its absence means)."""
    out = []
    covered: set[str] = set()
    for keys, table_keys, default, norm in TABLE_CONFIG_OPTIONS:
        covered.update(keys)
        table_value = next((table_props[k] for k in table_keys if table_props.get(k)), default)
        for key in keys:
            if given.get(key) is None or str(given[key]).strip() == "" or table_value is None:
                continue
            value = option_text(given[key])
            try:
                same = norm(value) == norm(table_value)
            except ValueError:
                same = False
            if not same:
                out.append((key, table_value, value))
    for key, raw in given.items():
        if not key.startswith(TABLE_CONFIG_PREFIX) or key in covered or raw is None:
            continue
        value = option_text(raw)
        table_value = table_props.get(key)
        if table_value is None:
            if value.strip().lower() != TABLE_CONFIG_ABSENT_MEANS.get(key):
                out.append((key, TABLE_CONFIG_NOT_SET, value))
        elif value.strip().lower() != table_value.strip().lower():
            out.append((key, table_value, value))
    return out


def refuse_table_config_conflicts(table_props: Mapping[str, str], given: Mapping[str, Any] | None,
                                  table_name: str) -> None:
    """Raise for options that contradict an existing table's ``hoodie.properties``
    (:func:`table_config_conflicts`): every command that takes options on a table (write, cluster, index,
    clean) refuses them instead of ignoring them."""
    conflicts = table_config_conflicts(table_props, canonical_options(given or {}))
    if conflicts:
        text = "; ".join(f"{k}={v!r} but the table has {t!r}" for k, t, v in conflicts)
        raise InvalidArgumentError(
            f"options conflict with table {table_name!r} (hoodie.properties): {text}",
            hint="drop these options (the table's values apply) or write to a new table")


def _default_text(option: Option[Any]) -> str:
    d = option.default
    if isinstance(d, bool):
        return str(d).lower()
    if isinstance(d, enum.Enum):
        return str(d.value)
    if isinstance(d, tuple):
        return ",".join(str(v.value) if isinstance(v, enum.Enum) else str(v) for v in d)
    if isinstance(d, int) and d >= 1 << 20:
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
            if d % size == 0:
                return f"{d} ({d // size} {unit})"
    return str(d) if d != "" else "(empty)"


def options_reference_markdown() -> str:
    """The options table of the README: key, default, what it does, which commands honour it."""
    lines = ["| key | default | what it does | honoured by |", "|---|---|---|---|"]
    for o in ALL_OPTIONS:
        key = f"`{o.key}`" + "".join(f"<br>(alias `{a}`)" for a in o.aliases)
        used = ", ".join(o.used_by) or "—"
        lines.append(f"| {key} | `{_default_text(o)}` | {o.doc} | {used} |")
    lines += ["", "Honoured by: " + "; ".join(f"**{k}** = {v}" for k, v in HONOURED_BY_LEGEND.items()) + "."]
    return "\n".join(lines) + "\n"
