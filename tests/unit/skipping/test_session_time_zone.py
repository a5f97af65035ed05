"""Date and timestamp literals read in the session time zone, as Spark reads them (``bind(..., time_zone)``).

Spark reads timestamp text without an offset, and a date compared with a timestamp, in
``spark.sql.session.timeZone``; a read resolves such literals once against the column types. Before this, SQL
text was read as UTC whatever the session's zone: in ``America/Los_Angeles``, ``ts < TIMESTAMP '2020-01-01
00:00:00'`` skipped files holding rows between midnight UTC and 08:00 UTC that Spark returns (session 14).
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from hudi_layout.skipping import from_sql
from hudi_layout.skipping.bind import bind, legacy_calendar_unknown, session_time_unknown, session_zone
from hudi_layout.skipping.ir import Eq, GtEq, In, Literal, Lt, Ref, Unsupported
from hudi_layout.skipping.pruning import prune
from hudi_layout.skipping.to_sql import literal_sql

SCHEMA = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("d", pa.date32()),
                    ("s", pa.string())])
LA = ZoneInfo("America/Los_Angeles")
UTC = dt.timezone.utc


def leaf(text: str, zone: str | None) -> object:
    return bind(from_sql(text, SCHEMA), SCHEMA, zone)


def test_timestamp_text_without_an_offset_is_a_wall_clock_time_in_the_session_zone() -> None:
    got = leaf("ts < TIMESTAMP '2020-01-01 00:00:00'", "America/Los_Angeles")
    assert got == Lt(Ref("ts"), Literal(dt.datetime(2020, 1, 1, 8, tzinfo=UTC)))
    # text compared with a timestamp column, CAST, TIMESTAMP_NTZ and TIMESTAMP_LTZ literals: the same reading
    for text in ("ts < '2020-01-01 00:00:00'", "ts < '2020-01-01'", "ts < CAST('2020-01-01' AS TIMESTAMP)",
                 "ts < TIMESTAMP_NTZ '2020-01-01 00:00:00'", "ts < TIMESTAMP_LTZ '2020-01-01 00:00:00'"):
        assert leaf(text, "America/Los_Angeles") == got, text


def test_an_explicit_offset_is_kept_and_utc_sessions_read_as_before() -> None:
    with_offset = leaf("ts >= TIMESTAMP '2020-01-01 05:00:00+05:00'", "Asia/Kolkata")
    assert with_offset == GtEq(Ref("ts"), Literal(dt.datetime(2020, 1, 1, tzinfo=UTC)))
    assert leaf("ts >= TIMESTAMP '2020-01-01 00:00:00'", "UTC") == with_offset
    assert leaf("ts >= TIMESTAMP '2020-01-01 00:00:00'", "+00:00") == with_offset


def test_a_date_against_a_timestamp_is_midnight_in_the_session_zone() -> None:
    assert leaf("ts >= DATE '2020-01-02'", "Asia/Kolkata") == GtEq(
        Ref("ts"), Literal(dt.datetime(2020, 1, 2, tzinfo=ZoneInfo("Asia/Kolkata"))))
    # a timestamp against a date column: the date's midnight compared with the instant's wall-clock time there
    assert leaf("d < TIMESTAMP '2020-01-01 05:00:00+00:00'", "Asia/Kolkata") == Lt(
        Ref("d"), Literal(dt.datetime(2020, 1, 1, 10, 30)))


def test_timestamp_ntz_columns_compare_wall_clock_times() -> None:
    assert leaf("ntz < TIMESTAMP '2020-01-01 00:00:00'", "America/Los_Angeles") == Lt(
        Ref("ntz"), Literal(dt.datetime(2020, 1, 1)))
    assert leaf("ntz < TIMESTAMP '2020-01-01 12:00:00+00:00'", "America/Los_Angeles") == Lt(
        Ref("ntz"), Literal(dt.datetime(2020, 1, 1, 4)))
    # text with an offset for a timestamp_ntz column: not read here (never skips)
    assert isinstance(leaf("ntz < '2020-01-01 00:00:00+05:00'", "UTC"), Unsupported)


def test_in_lists_offsets_as_zones_and_unknown_zones() -> None:
    got = leaf("ts IN (TIMESTAMP '2020-01-01 03:00:00', '2020-01-02 03:00:00')", "-08:00")
    assert got == In(Ref("ts"), (Literal(dt.datetime(2020, 1, 1, 11, tzinfo=UTC)),
                                 Literal(dt.datetime(2020, 1, 2, 11, tzinfo=UTC))))
    assert session_zone("GMT+05:30") == dt.timezone(dt.timedelta(hours=5, minutes=30))
    assert session_zone("Mars/Olympus") is None
    assert isinstance(leaf("ts < TIMESTAMP '2020-01-01 00:00:00'", "Mars/Olympus"), Unsupported)
    # nothing session-dependent in the leaf: unchanged, whatever the zone
    assert leaf("s = 'x'", "Mars/Olympus") == Eq(Ref("s"), Literal("x"))


def test_dst_gaps_and_overlaps_resolve_as_java_time_does() -> None:
    # 2020-03-08 02:30 does not exist in Los Angeles: java.time moves it forward by the gap (03:30 PDT)
    assert leaf("ts = TIMESTAMP '2020-03-08 02:30:00'", "America/Los_Angeles").literal.value.astimezone(UTC) \
        == dt.datetime(2020, 3, 8, 10, 30, tzinfo=UTC)
    # 2020-11-01 01:30 happens twice: the earlier offset (PDT)
    assert leaf("ts = TIMESTAMP '2020-11-01 01:30:00'", "America/Los_Angeles").literal.value.astimezone(UTC) \
        == dt.datetime(2020, 11, 1, 8, 30, tzinfo=UTC)


def test_resolution_is_idempotent_and_renders_the_same_instant() -> None:
    once = leaf("ts < TIMESTAMP '2020-01-01 00:00:00' AND d = DATE '2020-01-01'", "America/Los_Angeles")
    assert bind(once, SCHEMA, "America/Los_Angeles") == once
    assert bind(once, SCHEMA) == once
    assert literal_sql(dt.datetime(2020, 1, 1, 8, tzinfo=UTC)) == "TIMESTAMP '2020-01-01 08:00:00+00:00'"
    assert literal_sql(dt.datetime(2020, 1, 1)) == "TIMESTAMP '2020-01-01 00:00:00'"  # read in the session zone


def test_without_column_types_session_dependent_leaves_never_skip() -> None:
    pred = from_sql("ts < TIMESTAMP '2020-01-01 00:00:00' AND k = 3")
    got = session_time_unknown(pred)
    assert isinstance(got.left, Unsupported) and got.right == pred.right


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Kiritimati", "-03:30"])
def test_pruning_keeps_every_file_holding_a_row_spark_matches(zone: str) -> None:
    """One file per 2.5 hours over three days; each question's matching rows computed here with the zone
    applied by hand (Spark's rules), every file holding one must be kept."""
    tz = session_zone(zone)
    assert tz is not None
    start = dt.datetime(2019, 12, 30, tzinfo=UTC)
    rows = [start + dt.timedelta(minutes=15 * i) for i in range(480)]
    files = [rows[i:i + 10] for i in range(0, 480, 10)]
    names = [f"f{i}" for i in range(len(files))]
    stats = {"ts": pa.table({"file_name": names,
                             "min": pa.array([f[0] for f in files], pa.timestamp("us", tz="UTC")),
                             "max": pa.array([f[-1] for f in files], pa.timestamp("us", tz="UTC")),
                             "null_count": [0] * len(files), "value_count": [len(f) for f in files]})}
    local = dt.datetime(2020, 1, 1, tzinfo=tz)  # midnight in the zone
    questions = {
        "ts < TIMESTAMP '2020-01-01 00:00:00'": lambda t: t < local,
        "ts >= TIMESTAMP '2020-01-01 00:00:00'": lambda t: t >= local,
        "ts = TIMESTAMP '2020-01-01 03:00:00'": lambda t: t == local + dt.timedelta(hours=3),
        "ts BETWEEN '2020-01-01 00:00:00' AND '2020-01-01 06:00:00'":
            lambda t: local <= t <= local + dt.timedelta(hours=6),
        "ts < DATE '2020-01-02'": lambda t: t < local + dt.timedelta(days=1),
        "ts >= DATE '2020-01-02'": lambda t: t >= local + dt.timedelta(days=1),
    }
    for text, matches in questions.items():
        pred = bind(from_sql(text, SCHEMA), SCHEMA, zone)
        kept = set(prune(pred, names, stats, schema=SCHEMA).kept)
        needed = {i for i, f in enumerate(files) if any(matches(t) for t in f)}
        assert needed <= kept, (zone, text, sorted(needed - kept))
        assert len(kept) < len(files), (zone, text)  # and still skips


@pytest.mark.parametrize(("zone", "day"), [("America/Los_Angeles", dt.datetime(2020, 11, 1)),
                                         ("America/Los_Angeles", dt.datetime(2020, 3, 8)),
                                         ("America/Sao_Paulo", dt.datetime(2018, 11, 4)),
                                         ("Pacific/Apia", dt.datetime(2011, 12, 30))])
def test_wall_clock_columns_against_instants_keep_every_file_across_offset_changes(zone: str, day: dt.datetime) -> None:
    """``timestamp_ntz`` and date columns compared with an instant: Spark reads each value as a wall-clock time
    in the session zone (a skipped time moves forward, a repeated one takes the earlier offset: Python's
    ``fold=0``), and that reading reorders values around an offset change. Session 29's probe: in Los Angeles,
    ``ntz < TIMESTAMP '2020-11-01 01:15:00-08:00'`` read 60 of 100 rows; in Sao Paulo, whose 2018-11-04 began
    at 01:00, ``d = TIMESTAMP '2018-11-04 01:00:00'`` read none of 40. Every file holding a matching row is
    kept (Samoa skipped 2011-12-30 whole); far from an offset change the leaves still skip."""
    tz = ZoneInfo(zone)
    walls = [day - dt.timedelta(hours=30) + dt.timedelta(minutes=10 * i) for i in range(360)]
    files = [walls[i:i + 6] for i in range(0, len(walls), 6)]
    names = [f"f{i}" for i in range(len(files))]
    dates = [sorted({w.date() for w in f}) for f in files]
    stats = {"ntz": pa.table({"file_name": names, "min": pa.array([f[0] for f in files], pa.timestamp("us")),
                              "max": pa.array([f[-1] for f in files], pa.timestamp("us")),
                              "null_count": [0] * len(files), "value_count": [len(f) for f in files]}),
             "d": pa.table({"file_name": names, "min": pa.array([d[0] for d in dates], pa.date32()),
                            "max": pa.array([d[-1] for d in dates], pa.date32()),
                            "null_count": [0] * len(files), "value_count": [len(d) for d in dates]})}

    def instant(wall: dt.datetime) -> dt.datetime:
        return wall.replace(tzinfo=tz).astimezone(UTC)

    ops = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
           "=": lambda a, b: a == b, "<>": lambda a, b: a != b}
    for literal_wall in walls[162:199:2] + walls[::60]:  # dense around the change, sparse elsewhere
        at = instant(literal_wall)
        texts = {f"TIMESTAMP '{at.isoformat(sep=' ')}'": at,  # an instant with its offset
                 f"TIMESTAMP '{literal_wall.isoformat(sep=' ')}'": at}  # text read in the session zone
        for text, lit in texts.items():
            for op, holds in ops.items():
                for column, values in (("ntz", files), ("d", [[dt.datetime.combine(x, dt.time()) for x in d]
                                                               for d in dates])):
                    pred = bind(from_sql(f"{column} {op} {text}", SCHEMA), SCHEMA, zone)
                    kept = set(prune(pred, names, stats, schema=SCHEMA).kept)
                    needed = {i for i, f in enumerate(values) if any(holds(instant(w), lit) for w in f)}
                    assert needed <= kept, (zone, column, op, text, sorted(needed - kept))
    far = bind(from_sql("ntz < TIMESTAMP '2020-07-01 00:00:00'", SCHEMA), SCHEMA, "America/Los_Angeles")
    assert far == Lt(Ref("ntz"), Literal(dt.datetime(2020, 7, 1)))
    near = bind(from_sql("ntz < TIMESTAMP '2020-11-01 01:15:00-08:00'", SCHEMA), SCHEMA, "America/Los_Angeles")
    assert isinstance(near, Unsupported)


def test_a_time_zone_the_caller_names_must_be_one(tmp_path) -> None:
    """``explain(time_zone=...)`` with a zone we cannot read is an error, not a plan that skips nothing; the
    table is not even opened (a session's own zone we cannot read only stops its time leaves from skipping)."""
    import hudi_layout as hl
    from hudi_layout.errors import InvalidArgumentError
    from hudi_layout.skipping.bind import require_time_zone

    assert require_time_zone("+05:30") == dt.timezone(dt.timedelta(hours=5, minutes=30))
    with pytest.raises(InvalidArgumentError, match="time_zone 'Mars/Olympus' is not a time zone"):
        hl.explain(str(tmp_path / "no-table-here"), "ts < '2020-01-01'", time_zone="Mars/Olympus")


def test_a_legacy_calendar_session_never_skips_by_date_or_timestamp_comparisons() -> None:
    pred = bind(from_sql("ts < TIMESTAMP '2020-01-01 00:00:00' AND s = 'x' AND d IS NULL AND d IN (DATE "
                         "'1500-01-01')"), SCHEMA)
    got = legacy_calendar_unknown(pred, SCHEMA)
    leaves = [got.left.left.left, got.left.left.right, got.left.right, got.right]
    assert isinstance(leaves[0], Unsupported) and "LEGACY" in str(leaves[0])
    assert leaves[1] == pred.left.left.right and leaves[2] == pred.left.right  # s = 'x', d IS NULL stay
    assert isinstance(leaves[3], Unsupported)
    untyped = legacy_calendar_unknown(from_sql("x < '1500-01-01' AND k = 3"), None)
    assert isinstance(untyped.left, Unsupported) and not isinstance(untyped.right, Unsupported)


def test_an_offset_in_timestamp_ntz_text_is_dropped_as_spark_drops_it() -> None:
    """``TIMESTAMP_NTZ '2020-03-08 05:00:00+01:00'`` is the wall-clock time 05:00 in Spark; the planner read it as
    the instant 04:00Z and skipped every file in Los Angeles (session 29's probe). With
    ``spark.sql.timestampType=TIMESTAMP_NTZ``, ``TIMESTAMP '...'`` and ``CAST(... AS TIMESTAMP)`` are such
    literals too. (Kolkata: no offset change near the literal, so the wall-clock leaf skips; see
    ``offset_fixed_around``.)"""
    from hudi_layout.skipping.sql_lexer import SqlDialect

    wall = Lt(Ref("ntz"), Literal(dt.datetime(2020, 3, 8, 5)))
    for text in ("ntz < TIMESTAMP_NTZ '2020-03-08 05:00:00+01:00'",
                 "ntz < CAST('2020-03-08 05:00:00+01:00' AS TIMESTAMP_NTZ)"):
        assert bind(from_sql(text, SCHEMA), SCHEMA, "Asia/Kolkata") == wall, text
    ntz_session = SqlDialect.of_session({"spark.sql.timestampType": "TIMESTAMP_NTZ"})
    for text in ("ntz < TIMESTAMP '2020-03-08 05:00:00+01:00'", "ntz < CAST('2020-03-08 05:00:00+01:00' AS TIMESTAMP)"):
        assert bind(from_sql(text, SCHEMA, dialect=ntz_session), SCHEMA, "Asia/Kolkata") == wall, text
    # an instant cast to TIMESTAMP_NTZ is the session's wall-clock time: not folded
    assert isinstance(from_sql("ntz < CAST(TIMESTAMP '2020-03-08 05:00:00+01:00' AS TIMESTAMP_NTZ)", SCHEMA),
                      Unsupported)


def test_sessions_comparing_text_with_datetime_columns_as_strings_never_skip_by_it() -> None:
    """Without ANSI mode Spark's ``IN`` compares a date / timestamp column with text as strings (the common type
    of the column and the list), and with ``spark.sql.legacy.typeCoercion.datetimeToString.enabled`` every
    comparison does; the planner read the text as a datetime: ``ts NOT IN ('2020-01-01')`` read 10 of Spark's 20
    rows (session 29's probe). Such leaves now never skip; other leaves are as before."""
    from hudi_layout.skipping.bind import TextVsDatetime
    from hudi_layout.skipping.visitors import has_unsupported

    non_ansi = TextVsDatetime.of_session({"spark.sql.ansi.enabled": "false"})
    legacy = TextVsDatetime.of_session({"spark.sql.legacy.typeCoercion.datetimeToString.enabled": "true"})
    assert TextVsDatetime.of_session({}) == TextVsDatetime()  # Spark 4: ANSI on

    def bound(text: str, rule: TextVsDatetime) -> object:
        return bind(from_sql(text, SCHEMA), SCHEMA, "UTC", text_vs_datetime=rule)

    for text in ("ts NOT IN ('2020-01-01')", "d IN ('2020-01-01', '2020-01-02')"):
        assert has_unsupported(bound(text, non_ansi)), text
        assert not has_unsupported(bound(text, TextVsDatetime())), text
    assert bound("s IN ('a', 'b')", non_ansi) == bound("s IN ('a', 'b')", TextVsDatetime())
    assert bound("d IN (DATE '2020-01-01')", non_ansi) == bound("d IN (DATE '2020-01-01')", TextVsDatetime())
    assert not has_unsupported(bound("d < '2020-01-01'", non_ansi))
    assert has_unsupported(bound("d < '2020-01-01'", legacy))
