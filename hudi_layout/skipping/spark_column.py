"""Front end for PySpark ``Column`` objects (classic mode), walking Spark 4's ColumnNode tree over py4j.

In Spark 4 a classic ``Column`` wraps an unresolved ``org.apache.spark.sql.internal.ColumnNode``
(``col._jc.node()``); there is no Catalyst ``expr()`` any more. The nodes we understand:

* ``UnresolvedAttribute`` (name parts → dotted column name), ``Literal``, ``Alias`` (unwrapped);
* ``UnresolvedFunction`` named ``= == <=> != < <= > >= and or ! not isNull isNotNull in startswith like``
  (``between`` arrives as ``and(>=, <=)``, ``!=`` as ``!(=)``);
* ``Cast`` of a literal (folded like SQL ``CAST``);
* ``SqlExpression`` (``F.expr("...")``), parsed with :func:`~.sql.from_sql`.

Anything else (functions of columns, ``endswith``, ``contains``, UDFs, ``ExpressionColumnNode``) becomes
:class:`~.ir.Unsupported` ("might match"). Literal values: py4j hands back ``int``/``float``/``str``/
``bool``/``bytes``/``Decimal`` directly; ``java.sql.Date`` → ``date``; ``java.sql.Timestamp`` (what a Python
``datetime`` becomes) → the exact instant as a naive UTC ``datetime``.

pyspark is never imported here; the ``Column`` is only touched through its py4j handle.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import sys
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_layout import options as cfg
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.bind import TextVsDatetime, bind, session_zone
from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    ComparisonPredicate,
    Eq,
    Gt,
    GtEq,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Lt,
    LtEq,
    Not,
    NotEq,
    NullSafeEq,
    Or,
    Predicate,
    Ref,
    StartsWith,
    Unsupported,
    mirrored,
)
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.sql_lexer import SqlDialect
from hudi_layout.skipping.sql_literals import NO_CAST, cast_literal, like_predicate

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

_CMP: dict[str, type[ComparisonPredicate]] = {
    "=": Eq, "==": Eq, "<=>": NullSafeEq, "!=": NotEq, "<>": NotEq, "<": Lt, "<=": LtEq, ">": Gt, ">=": GtEq,
}
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class _NotLiteral(Exception):
    """Raised inside the walker when a node is not a foldable literal."""


def from_spark_column(col: Column, spark: SparkSession | None = None,
                      schema: pa.Schema | None = None, *, settings: Mapping[str, str] | None = None) -> Predicate:
    """Translate a boolean PySpark ``Column`` into the IR.

    Args:
        col: a classic-mode ``pyspark.sql.Column`` (Spark Connect columns are not supported).
        spark: the session; with ``schema``, date and timestamp literals are resolved in its time zone
            (``spark.sql.session.timeZone``, :func:`~.bind.bind`), as Spark reads them.
        schema: when given, unknown columns raise :class:`InvalidArgumentError`.
        settings: the session's :func:`session_settings`, when the caller has them (SQL text inside the column,
            ``F.expr``, is read as the session's parser reads it; asked of the session otherwise).

    Datetime text without an offset (``F.expr("ts < '2024-01-01'")``) stays a wall-clock time and a Spark
    timestamp literal (``F.lit(datetime)``) becomes the instant it holds; :func:`~.bind.bind` with the session
    time zone gives the wall-clock times their meaning.
    """
    jc = getattr(col, "_jc", None)
    if jc is None:
        raise InvalidArgumentError("from_spark_column needs a classic-mode pyspark Column (it has no _jc)")
    if schema is not None and settings is None:  # binding needs them: one round trip for the walker and bind
        settings = session_settings(spark)
    pred = _Walker(spark, settings).predicate(jc.node())
    if schema is None:
        return pred
    zone_name = session_time_zone(spark, settings)
    return bind(pred, schema, zone_name, zone_rules=jvm_zone(spark, zone_name),
                text_vs_datetime=TextVsDatetime.of_session(settings or {}))


def _session(spark: Any) -> Any:
    """``spark``, else the active session when pyspark is already loaded, else ``None``."""
    if spark is not None:
        return spark
    module = sys.modules.get("pyspark.sql")
    return None if module is None else module.SparkSession.getActiveSession()


_EPOCH = _dt.datetime(1970, 1, 1)


class JvmZone(_dt.tzinfo):
    """A time zone with the rules of the session's JVM (``java.time``'s tz database, which Spark reads datetime
    text with), through py4j. Python's ``zoneinfo`` reads the OS's tz database, which can be another release:
    here tzdata 2025b against the JDK's 2025a, and ``ts >= TIMESTAMP '1978-12-15 12:00:00'`` in Asia/Tehran was
    08:00Z for Spark and 08:30Z for the planner, which skipped every file (session 29's probe).

    ``utcoffset`` of a wall-clock time is ``ZoneRules.getOffset(LocalDateTime)``: a time a gap skips and a
    repeated one both take the offset before the change, as Spark reads them (and as ``fold=0`` does)."""

    def __init__(self, name: str, rules: Any, jvm: Any) -> None:
        self.name, self._rules, self._jvm = name, rules, jvm
        self._offsets: dict[_dt.datetime, _dt.timedelta] = {}

    def utcoffset(self, dt: _dt.datetime | None) -> _dt.timedelta | None:
        if dt is None:
            return None
        wall = dt.replace(tzinfo=None, fold=0)
        got = self._offsets.get(wall)
        if got is None:
            local = self._jvm.java.time.LocalDateTime.of(wall.year, wall.month, wall.day, wall.hour, wall.minute,
                                                         wall.second, wall.microsecond * 1000)
            got = _dt.timedelta(seconds=int(self._rules.getOffset(local).getTotalSeconds()))
            if len(self._offsets) > 4096:
                self._offsets.clear()
            self._offsets[wall] = got
        return got

    def dst(self, dt: _dt.datetime | None) -> _dt.timedelta | None:
        return None

    def tzname(self, dt: _dt.datetime | None) -> str:
        return self.name

    def _instant_offset(self, utc: _dt.datetime) -> _dt.timedelta:
        seconds = (utc - _EPOCH) // _dt.timedelta(seconds=1)
        instant = self._jvm.java.time.Instant.ofEpochSecond(seconds)
        return _dt.timedelta(seconds=int(self._rules.getOffset(instant).getTotalSeconds()))

    def fromutc(self, dt: _dt.datetime) -> _dt.datetime:
        utc = dt.replace(tzinfo=None)
        return (utc + self._instant_offset(utc)).replace(tzinfo=self)

    def offset_fixed_between(self, lo: _dt.datetime, hi: _dt.datetime) -> bool:
        """Whether the zone keeps one offset for the wall-clock times from ``lo`` to ``hi`` (no transition of the
        JVM's rules between them, a day of margin either side)."""
        try:
            start = lo - _dt.timedelta(days=1) - _EPOCH
            end = hi + _dt.timedelta(days=1) - _EPOCH
            instant = self._jvm.java.time.Instant.ofEpochSecond(start // _dt.timedelta(seconds=1))
            nxt = self._rules.nextTransition(instant)
            return nxt is None or int(nxt.toEpochSecond()) > end // _dt.timedelta(seconds=1)
        except Exception:  # noqa: BLE001 - py4j errors: not known to be fixed
            return False


_JVM_ZONES: dict[tuple[int, str], JvmZone | None] = {}


def jvm_zone(spark: Any, name: str | None) -> JvmZone | None:
    """The session's JVM rules for zone ``name`` (cached per JVM); ``None`` without a session or for a name the
    JVM does not know (the planner then reads the zone itself, or leaves its leaves unskipped)."""
    if not name or isinstance(session_zone(name), _dt.timezone):  # UTC or a fixed offset: no rules to differ
        return None
    spark = _session(spark)
    if spark is None:
        return None
    try:
        gateway = spark.sparkContext._gateway
        key = (id(gateway), name)
        if key not in _JVM_ZONES:
            jvm = spark.sparkContext._jvm
            zone_id = jvm.java.time.ZoneId
            _JVM_ZONES[key] = JvmZone(name, zone_id.of(name, zone_id.SHORT_IDS).getRules(), jvm)
        return _JVM_ZONES[key]
    except Exception:  # noqa: BLE001 - a zone the JVM refuses, or no JVM: not ours to fail a plan for
        return None


def session_time_zone(spark: Any, settings: Mapping[str, str] | None = None) -> str | None:
    """``spark.sql.session.timeZone`` of ``spark``, else of the active session when pyspark is already loaded;
    ``None`` without a session (literals are then read as UTC, as our sessions do). ``settings``: the session's
    :func:`session_settings`, when the caller has them (the zone is asked only when they do not set it)."""
    if settings and "spark.sql.session.timeZone" in settings:
        return settings["spark.sql.session.timeZone"]
    spark = _session(spark)
    return None if spark is None else str(spark.conf.get("spark.sql.session.timeZone"))


_JSON_WRITERS: dict[int, Any] = {}


def session_settings(spark: Any) -> dict[str, str]:
    """Every setting made in ``spark`` (else the active session; ``{}`` without one), in one round trip to
    the JVM: the settings as JSON text. PySpark's ``conf.getAll`` asks for each entry separately (12 ms for 32
    settings here, against 0.4 ms), and a read plans in a few milliseconds. Spark's own Jackson writes the
    JSON; where that is not reachable (another Spark build), the public call is used."""
    spark = _session(spark)
    if spark is None:
        return {}
    try:
        jconf = spark.conf._jconf
        gateway = spark.sparkContext._gateway
        writer = _JSON_WRITERS.get(id(gateway))
        if writer is None:
            writer = _JSON_WRITERS.setdefault(id(gateway), gateway.jvm.com.fasterxml.jackson.databind.ObjectMapper())
        found = json.loads(writer.writeValueAsString(jconf.getAllAsJava()))
    except Exception:  # noqa: BLE001 - any failure of the fast path: the public one
        found = spark.conf.getAll
    return {str(k): str(v) for k, v in found.items()}


def session_read_options(settings: Mapping[str, str]) -> dict[str, str]:
    """The Hudi read options among a session's ``settings`` (:func:`session_settings`), to go beneath the
    read's own: Hudi's Spark reads take every ``hoodie.*`` setting of the session (``SET
    hoodie.datasource.query.type = read_optimized`` or ``SET hoodie.enable.data.skipping = false`` in Spark
    SQL). The ones Hudi's reads take (:data:`~hudi_layout.options.SESSION_READ_KEYS`) are returned (begin / end instants
    count only for incremental reads, :func:`~hudi_layout.options.read_options_beneath_session`); one that
    changes what Hudi reads and that we do not implement is refused
    (:func:`~hudi_layout.options.refuse_unhonoured_session_read_settings`); the rest (write settings) is not
    for reads, as in Hudi."""
    found = {k: v for k, v in settings.items() if k.startswith("hoodie.")}
    if not found:
        return {}
    cfg.refuse_unhonoured_session_read_settings(found)
    return {k: v for k, v in found.items() if k in cfg.SESSION_READ_KEYS}


#: Spark settings that, set to ``LEGACY``, make its parquet reader shift old dates / timestamps of files
#: without the proleptic-calendar marker (:func:`~hudi_layout.skipping.bind.legacy_calendar_unknown`)
REBASE_MODE_SETTINGS = ("spark.sql.parquet.datetimeRebaseModeInRead", "spark.sql.parquet.int96RebaseModeInRead")


def session_rebases_legacy(settings: Mapping[str, str]) -> bool:
    """Do a session's ``settings`` (:func:`session_settings`) make Spark read parquet dates / timestamps with a
    ``LEGACY`` rebase mode (:data:`REBASE_MODE_SETTINGS`; unset is ``CORRECTED``, Spark 4's default)?"""
    return any(str(settings.get(key, "CORRECTED")).strip().upper() == "LEGACY" for key in REBASE_MODE_SETTINGS)


def _kind(node: Any) -> str:
    return str(node.getClass().getSimpleName())


def _seq(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


class _Walker:
    def __init__(self, spark: Any = None, settings: Mapping[str, str] | None = None) -> None:
        self.spark = spark
        self._dialect = None if settings is None else SqlDialect.of_session(settings)

    def dialect(self) -> SqlDialect:
        """How the session reads SQL text (``F.expr``): from the caller's settings, else asked of the session
        once per walk, only when such text is met."""
        if self._dialect is None:
            self._dialect = SqlDialect.of_session(session_settings(self.spark))
        return self._dialect

    def predicate(self, node: Any) -> Predicate:
        kind = _kind(node)
        if kind == "Alias":
            return self.predicate(node.child())
        if kind == "SqlExpression":
            return self.sql(str(node.expression()))
        if kind == "UnresolvedAttribute":
            return Eq(self.ref(node), Literal(True))
        if kind == "Literal":
            try:
                return _constant(self.literal(node))
            except _NotLiteral:
                return Unsupported(kind)
        if kind != "UnresolvedFunction":
            return Unsupported(self.describe(node))
        name = str(node.functionName())
        args = _seq(node.arguments())
        lowered = name.lower()
        if lowered in ("and", "or") and len(args) == 2:
            left, right = self.predicate(args[0]), self.predicate(args[1])
            return And(left, right) if lowered == "and" else Or(left, right)
        if lowered in ("!", "not") and len(args) == 1:
            return Not(self.predicate(args[0]))
        if lowered in ("isnull", "isnotnull") and len(args) == 1 and _kind(args[0]) == "UnresolvedAttribute":
            ref = self.ref(args[0])
            return IsNull(ref) if lowered == "isnull" else IsNotNull(ref)
        if name in _CMP and len(args) == 2:
            return self.compare(node, _CMP[name], args[0], args[1])
        if lowered == "in" and args and _kind(args[0]) == "UnresolvedAttribute":
            try:
                values = tuple(Literal(self.literal(a)) for a in args[1:])
            except (_NotLiteral, InvalidArgumentError):
                return Unsupported(self.describe(node))
            return In(self.ref(args[0]), values)
        on_column = bool(args) and _kind(args[0]) == "UnresolvedAttribute"
        if lowered in ("startswith", "like") and len(args) in (2, 3) and on_column:
            return self.text_match(node, lowered, args)
        return Unsupported(self.describe(node))

    def compare(self, node: Any, kind: type[ComparisonPredicate], left: Any, right: Any) -> Predicate:
        try:
            if _kind(left) == "UnresolvedAttribute":
                return kind(self.ref(left), Literal(self.literal(right)))
            if _kind(right) == "UnresolvedAttribute":
                return mirrored(kind)(self.ref(right), Literal(self.literal(left)))
        except (_NotLiteral, InvalidArgumentError):
            pass
        return Unsupported(self.describe(node))

    def text_match(self, node: Any, name: str, args: list[Any]) -> Predicate:
        try:
            pattern = self.literal(args[1])
            escape = self.literal(args[2]) if len(args) == 3 else "\\"
        except (_NotLiteral, InvalidArgumentError):
            return Unsupported(self.describe(node))
        if not isinstance(pattern, str):
            return Unsupported(self.describe(node))
        ref = self.ref(args[0])
        if name == "startswith":
            return StartsWith(ref, Literal(pattern))
        if not isinstance(escape, str) or len(escape) != 1:
            return Unsupported(self.describe(node))
        return like_predicate(ref, pattern, escape) or Unsupported(self.describe(node))

    def ref(self, node: Any) -> Ref:
        return Ref(".".join(str(p) for p in _seq(node.nameParts())))

    def literal(self, node: Any) -> Any:
        """The Python value of a literal node (or a CAST of one); raises :class:`_NotLiteral` otherwise."""
        kind = _kind(node)
        if kind == "Literal":
            return _java_value(node.value())
        if kind == "Cast":
            inner = self.literal(node.child())
            type_sql = str(node.dataType().sql()).upper()
            m = re.fullmatch(r"([A-Z_]+)(?:\((\d+)(?:,\s*(\d+))?\))?", type_sql)
            if m is not None:
                args = [int(a) for a in m.groups()[1:] if a is not None]
                value = cast_literal(inner, m.group(1), args)
                if value is not NO_CAST:
                    return value
        raise _NotLiteral(kind)

    def sql(self, text: str) -> Predicate:
        try:
            pred = from_sql(text, dialect=self.dialect())
        except InvalidArgumentError:
            return Unsupported(text, text)
        return pred

    def describe(self, node: Any) -> str:
        """A short SQL-ish text of a node (``toString`` carries origins and stack traces)."""
        kind = _kind(node)
        try:
            if kind == "UnresolvedAttribute":
                return str(self.ref(node))
            if kind == "Literal":
                return str(Literal(_java_value(node.value())))
            if kind == "UnresolvedFunction":
                return f"{node.functionName()}({', '.join(self.describe(a) for a in _seq(node.arguments()))})"
            if kind == "SqlExpression":
                return str(node.expression())
        except (InvalidArgumentError, _NotLiteral):
            pass
        return kind


def _constant(value: Any) -> Predicate:
    if value is True:
        return AlwaysTrue()
    if value is False or value is None:
        return AlwaysFalse()
    return Unsupported(repr(value))


_EPOCH_DATE = _dt.date(1970, 1, 1)


def _spark_datetime_utils(v: Any) -> Any:
    """Spark's ``DateTimeUtils`` through the py4j gateway ``v`` came from (its ``fromJavaDate`` /
    ``fromJavaTimestamp`` are how Spark turns a ``java.sql`` literal into its own value)."""
    from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]

    return JavaClass("org.apache.spark.sql.catalyst.util.DateTimeUtils", v._gateway_client)


def _java_value(v: Any) -> Any:
    """A py4j literal value as a Python literal value."""
    if v is None or isinstance(v, (bool, int, float, str, bytes, Decimal)):
        return v
    if isinstance(v, bytearray):
        return bytes(v)
    cls = str(v.getClass().getName())
    if cls in ("java.sql.Date", "java.sql.Timestamp"):
        # what Spark makes of it: for times before 1582 (py4j's java.sql value of an old Python datetime) Spark
        # keeps the hybrid calendar's local fields, days away from the instant getTime() holds; a literal whose
        # conversion cannot be asked never skips
        try:
            utils = _spark_datetime_utils(v)
            if cls == "java.sql.Date":
                return _EPOCH_DATE + _dt.timedelta(days=int(utils.fromJavaDate(v)))
            return _EPOCH_UTC + _dt.timedelta(microseconds=int(utils.fromJavaTimestamp(v)))
        except Exception as e:  # noqa: BLE001 - py4j errors and missing gateways alike
            raise _NotLiteral(cls) from e
    if cls == "java.time.LocalDate":
        return _dt.date.fromisoformat(str(v.toString()))
    if cls == "java.time.Instant":
        return _EPOCH_UTC + _dt.timedelta(seconds=int(v.getEpochSecond()), microseconds=int(v.getNano()) // 1000)
    if cls == "java.time.LocalDateTime":
        return _dt.datetime.fromisoformat(str(v.toString()))
    if cls == "java.math.BigDecimal":
        return Decimal(str(v.toPlainString()))
    if cls == "org.apache.spark.unsafe.types.UTF8String":
        return str(v.toString())
    raise _NotLiteral(cls)
