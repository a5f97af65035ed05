"""Record-key / partition-value text in Arrow (the data source writer's), as Spark's cast gives it in UTC."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.writer.key_text import arrow_key_text, refuse_unformattable

UTC = dt.timezone.utc


def test_timestamps_are_utc_wall_clock_text_without_trailing_zeros() -> None:
    values = [dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2020, 1, 1, 0, 0, 0, 500000, tzinfo=UTC),
              dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), dt.datetime(1, 1, 1, tzinfo=UTC),
              dt.datetime(2020, 1, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=9, minutes=30))), None]
    got = arrow_key_text(pa.array([v and v.astimezone(UTC) for v in values], pa.timestamp("us", tz="UTC"))).to_pylist()
    assert got == ["2020-01-01 00:00:00", "2020-01-01 00:00:00.5", "1969-12-31 23:59:59.999999",
                   "0001-01-01 00:00:00", "2020-01-01 00:00:00", None]
    # the array's own zone does not matter: the instant does
    la = pa.array(values[:2], pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz="America/Los_Angeles"))
    assert arrow_key_text(la).to_pylist() == got[:2]
    ntz = pa.array([dt.datetime(2020, 1, 1, 3, 0, 0, 10)], pa.timestamp("us"))
    assert arrow_key_text(ntz).to_pylist() == ["2020-01-01 03:00:00.00001"]


def test_other_types_are_spark_casts_and_floats_are_refused_by_name() -> None:
    assert arrow_key_text(pa.array([1, None, -5])).to_pylist() == ["1", None, "-5"]
    assert arrow_key_text(pa.array([dt.date(2020, 1, 2)])).to_pylist() == ["2020-01-02"]
    assert arrow_key_text(pa.array([True])).to_pylist() == ["true"]
    schema = pa.schema([("id", pa.int64()), ("d", pa.float64())])
    refuse_unformattable(schema, ["id"], "record key")
    with pytest.raises(InvalidArgumentError, match="record key field 'd' is double"):
        refuse_unformattable(schema, ["id", "d"], "record key")


def test_a_table_keyed_by_session_local_timestamps_is_refused_not_duplicated(tmp_path, monkeypatch) -> None:
    """A table written before session 15 from a session outside UTC holds local-time key text: a write now
    would file its rows again beside them, so it is refused (one row of one base file tells). A table with
    the UTC text takes writes."""
    from hudi_layout.writer import base_file_writer

    from .test_write_safety import tree, write

    def table(n: int) -> pa.Table:
        ts = pa.array([dt.datetime(2020, 1, 1, i, tzinfo=UTC) for i in range(n)], pa.timestamp("us", tz="UTC"))
        return pa.table({"id": ts, "p": pa.array(["a"] * n), "v": pa.array([1.0] * n)})

    good, old = tmp_path / "utc", tmp_path / "local"
    write(good, table(3))
    write(good, table(4))  # an upsert-free append of the same keys' text: accepted
    local = lambda values: pa.array(  # noqa: E731 - the text a Los Angeles session's cast gave
        [(v - dt.timedelta(hours=8)).strftime("%Y-%m-%d %H:%M:%S") for v in values.to_pylist()])
    monkeypatch.setattr(base_file_writer, "arrow_key_text", lambda values: local(values)
                        if pa.types.is_timestamp(values.type) else arrow_key_text(values))
    write(old, table(3))
    monkeypatch.undo()
    before = tree(old)
    with pytest.raises(InvalidArgumentError, match="record key '2019-12-31 16:00:00' where this write gives "
                                                   "'2020-01-01 00:00:00'"):
        write(old, table(3))
    assert tree(old) == before
