"""Every shared Hudi-written fixture through every read entry point, equal to hudi-rs.

Rows are compared by their record keys (the fixture's ``record_key_fields``), because readers print some
values differently. Copy-on-Write tables: ``read`` (no filter, SQL text, Column, tuples that keep every row),
the data source (twice, with and without a filter in between), a temp view, a SQL table, the CLI; then time
travel to each completed instant and incremental reads between them through ``read``, against hudi-rs.
Merge-on-Read tables: the snapshot (log files merged) through every entry point and time travel to each
instant, as hudi-rs reads them; ``read_optimized`` returns the base files' rows, as hudi-rs' read-optimized
mode does; an incremental read is refused with one clear error.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_layout as hl

pytestmark = [pytest.mark.integration, pytest.mark.shared]

_EXPECTED = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "hudi-tables" / "EXPECTED.json"
FIXTURES = [e["zip"] for e in json.loads(_EXPECTED.read_text())] if _EXPECTED.is_file() else []
RO = {"hoodie.datasource.query.type": "read_optimized"}


def _keys(table: Any, fields: list[str]) -> list[str]:
    """Sorted record keys of an Arrow table or a list of dicts."""
    rows = table.to_pylist() if hasattr(table, "to_pylist") else table
    return sorted(json.dumps([str(r[f]) for f in fields]) for r in rows)


def _hudi_rs(path: str, **kw: Any) -> pa.Table:
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    opts = hudi.HudiReadOptions()
    if kw.get("read_optimized"):
        opts = opts.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    if "as_of" in kw:
        opts = opts.with_as_of_timestamp(kw["as_of"])
    if "begin" in kw:
        opts = (opts.with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(kw["begin"])
                .with_end_timestamp(kw["end"]))
    batches = table.read(opts)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _cli(args: list[str]) -> tuple[int, str, str]:
    from hudi_layout.tools.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _completed(path: str) -> list[tuple[str, str]]:
    """(requested, completion) of the completed write instants (completion = requested on layout 1)."""
    hoodie = Path(path) / ".hoodie"
    tdir = hoodie / "timeline" if (hoodie / "timeline").is_dir() else hoodie
    out = []
    for f in tdir.iterdir():
        stem, _, action = f.name.partition(".")
        if action in ("commit", "deltacommit", "replacecommit"):
            requested, _, completed = stem.partition("_")
            out.append((requested, completed or requested))
    return sorted(out)


@pytest.mark.parametrize("zip_name", FIXTURES)
def test_fixture_through_every_entry_point(spark, fixture_table, expected_tables, zip_name):
    entry = expected_tables[zip_name]
    path = str(fixture_table(zip_name))
    fields = [f.strip() for f in entry["record_key_fields"].split(",") if f.strip()]
    want = _keys(_hudi_rs(path), fields) if entry["snapshot_rows"] else []
    assert len(want) == entry["snapshot_rows"]
    _check_snapshot(spark, path, fields, want, entry)
    if entry["table_type"] == "MERGE_ON_READ":
        _check_mor(spark, path, fields)
        return
    _check_history(spark, path, fields, int(entry["table_version"]))


def _check_snapshot(spark, path: str, fields: list[str], want: list[str], entry: dict[str, Any]) -> None:
    from pyspark.sql import functions as F

    key = fields[0]
    every_row = f"`{key}` IS NOT NULL OR `{key}` IS NULL"
    got = {"read": hl.read(path, spark=spark),
           "read(sql)": hl.read(path, every_row, spark=spark),
           "read(Column)": hl.read(path, F.col(f"`{key}`").isNull() | F.col(f"`{key}`").isNotNull(), spark=spark)}
    if not want:
        for name, df in got.items():
            assert df.count() == 0, name
        return
    got["read(tuples)"] = hl.read(path, [(key, "IS NOT NULL")], spark=spark)
    ds = spark.read.format("hudi_layout").load(path)
    got["data source, filtered"] = ds.where(every_row)
    got["data source"] = ds
    view = f"fx_{entry['table_dir']}"
    ds.createOrReplaceTempView(view)
    got["temp view"] = spark.sql(f"SELECT * FROM {view}")
    spark.sql(f"CREATE TABLE {view}_sql USING hudi_layout OPTIONS (path '{path}')")
    try:
        got["SQL table"] = spark.sql(f"SELECT * FROM {view}_sql WHERE {every_row}")
        for name, df in got.items():
            assert _keys(df.select(*[f"`{f}`" for f in fields]).toArrow(), fields) == want, name
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {view}_sql")
        spark.catalog.dropTempView(view)
    code, out, err = _cli(["query", path, "SELECT count(*) FROM t"])
    assert code == 0, err
    assert f"|{len(want)}" in out.replace(" ", ""), out
    _check_commit_time_filters(spark, path, fields)


def _check_commit_time_filters(spark, path: str, fields: list[str]) -> None:
    """Filters on ``_hoodie_commit_time`` prune with the writer's own column_stats of the meta columns (Hudi's
    Java writer indexes them too): every row hudi-rs gives for the commit must come back."""
    rows = _hudi_rs(path)
    if "_hoodie_commit_time" not in rows.column_names or rows.num_rows == 0:
        return
    times = rows.column("_hoodie_commit_time").to_pylist()
    distinct = sorted(set(times))
    for t in sorted(set(distinct[:2] + distinct[-1:])):
        for op in ("=", ">="):
            mask = pa.array([v == t if op == "=" else v >= t for v in times])
            want = _keys(rows.filter(mask), fields)
            got = hl.read(path, f"_hoodie_commit_time {op} '{t}'", spark=spark)
            assert _keys(got.select(*[f"`{f}`" for f in fields]).toArrow(), fields) == want, (op, t)


def _check_history(spark, path: str, fields: list[str], version: int) -> None:
    """Time travel to each completed instant, and incremental reads between consecutive instants."""
    instants = _completed(path)
    for requested, _completed_at in instants:
        want = _keys(_hudi_rs(path, as_of=requested), fields) if _hudi_rs(path, as_of=requested).num_rows else []
        got = hl.read(path, spark=spark, options={"as.of.instant": requested})
        assert _keys(got.select(*[f"`{f}`" for f in fields]).toArrow(), fields) == want, f"as of {requested}"
    if version < 8 or len(instants) < 2 or not _has_meta(path):
        return
    ends = [c for _r, c in instants]
    for begin, end in zip(ends, ends[1:]):
        rs = _hudi_rs(path, begin=begin, end=end)
        want = _keys(rs, fields) if rs.num_rows else []
        opts = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
                "hoodie.datasource.read.end.instanttime": end}
        got = hl.read(path, spark=spark, options=opts)
        assert _keys(got.select(*[f"`{f}`" for f in fields]).toArrow(), fields) == want, f"({begin}, {end}]"


def _has_meta(path: str) -> bool:
    return hl.HudiTable(path).properties.populate_meta_fields


def _check_mor(spark, path: str, fields: list[str]) -> None:
    for requested, _completed_at in _completed(path):  # time travel: merged slices as of each instant
        rs = _hudi_rs(path, as_of=requested)
        want = _keys(rs, fields) if rs.num_rows else []
        got = hl.read(path, spark=spark, options={"as.of.instant": requested})
        assert _keys(got.select(*[f"`{f}`" for f in fields]).toArrow(), fields) == want, f"as of {requested}"
    # incremental reads (refused until session 16): the merge of the blocks in range, as hudi-rs reads them
    ends = ["0"] + [c for _r, c in _completed(path)]
    for begin, end in sorted({(b, e) for b, e in zip(ends, ends[1:])} | {(ends[0], ends[-1]), (ends[1], ends[-1])}):
        rs = _hudi_rs(path, begin=begin, end=end)
        want = _keys(rs, fields) if rs.num_rows else []
        opts = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
                "hoodie.datasource.read.end.instanttime": end}
        for name, df in (("read", hl.read(path, spark=spark, options=opts)),
                         ("data source", spark.read.format("hudi_layout").options(**opts).load(path))):
            assert _keys(df.select(*[f"`{f}`" for f in fields]).toArrow(), fields) == want, (name, begin, end)
    code, out, err = _cli(["query", path, "SELECT count(*) FROM t", "--query-type", "incremental",
                           "--begin", ends[0], "--end", ends[-1]])
    assert code == 0, err
    assert f"|{_hudi_rs(path, begin=ends[0], end=ends[-1]).num_rows}" in out.replace(" ", ""), out
    want = _keys(_hudi_rs(path, read_optimized=True), fields)
    got = hl.read(path, spark=spark, options=RO).select(*[f"`{f}`" for f in fields]).toArrow()
    assert _keys(got, fields) == want
    ds = spark.read.format("hudi_layout").option("hoodie.datasource.query.type", "read_optimized").load(path)
    assert _keys(ds.select(*[f"`{f}`" for f in fields]).toArrow(), fields) == want
