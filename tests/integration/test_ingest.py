"""Ingestion end to end: every table we write is read by hudi-rs (an independent reader) with exactly the
rows written and the same file slices as our own file-system view; meta columns, partition metadata and
the MDT column statistics are checked file by file against the parquet files themselves."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hudi_layout
from tests.helpers.integration import (
    base_files_on_disk,
    hudi_rs_read,
    hudi_rs_slices,
    our_slices,
    rows_digest,
    timeline_files,
)

pytestmark = pytest.mark.integration

UTC = dt.timezone.utc
PREFIX = "customer/region/eu-west/account/" * 4  # long shared prefix


def all_types_table(n: int, start: int = 0) -> pa.Table:
    """``n`` rows of every supported column type, with nulls and float edge cases."""
    ids = list(range(start, start + n))
    specials = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]

    def nullable(values, every=7):
        return [None if (i % every == 3) else v for i, v in zip(ids, values)]

    return pa.table({
        "id": pa.array(ids, pa.int32()),
        "name": pa.array([f"n{i % 5}" for i in ids], pa.string()),
        "big": pa.array(nullable([(i - n // 2) * 10**12 for i in ids]), pa.int64()),
        "dbl": pa.array(nullable([specials[i % 5] if i % 3 == 0 else (i - n / 2) / 7 for i in ids], every=11),
                        pa.float64()),
        "dec": pa.array(nullable([decimal.Decimal(i * 37 - 500).scaleb(-2) for i in ids]), pa.decimal128(10, 2)),
        "dec38": pa.array(nullable([decimal.Decimal(f"{i * 1234567 - 10**8}.0123456789") for i in ids]),
                          pa.decimal128(38, 10)),
        "s": pa.array(nullable([f"{PREFIX}{i:05d}" for i in ids], every=13), pa.string()),
        "b": pa.array(nullable([bytes([i % 256, (i * 7) % 256]) * 3 for i in ids]), pa.binary()),
        "flag": pa.array(nullable([i % 2 == 0 for i in ids], every=5), pa.bool_()),
        "day": pa.array(nullable([dt.date(1969, 12, 1) + dt.timedelta(days=i) for i in ids]), pa.date32()),
        "ts": pa.array(nullable([dt.datetime(1969, 12, 31, 23, 0, tzinfo=UTC) + dt.timedelta(minutes=17 * i,
                                                                                          microseconds=i)
                                 for i in ids]), pa.timestamp("us", tz="UTC")),
        "p": pa.array([["a", "b", "c"][i % 3] for i in ids], pa.string()),
        "q": pa.array([i % 2 for i in ids], pa.int32()),
    })


def normalise(t: pa.Table) -> pa.Table:
    """Same logical values, same Arrow types (Spark / hudi-rs may pick large or zoned variants)."""
    cols, names = [], []
    for f in t.schema:
        col = t.column(f.name)
        if pa.types.is_timestamp(f.type):
            col = col.cast(pa.timestamp("us", tz="UTC"))
        elif pa.types.is_large_string(f.type):
            col = col.cast(pa.string())
        elif pa.types.is_large_binary(f.type):
            col = col.cast(pa.binary())
        cols.append(col)
        names.append(f.name)
    return pa.Table.from_arrays(cols, names=names)


def expected_key(row: dict, fields: list[str]) -> str:
    def s(v):
        return "true" if v is True else "false" if v is False else str(v)

    if len(fields) == 1:
        return s(row[fields[0]])
    return ",".join(f"{f}:{s(row[f])}" for f in fields)


def expected_partition(row: dict, fields: list[str], hive: bool) -> str:
    return "/".join(f"{f}={row[f]}" if hive else str(row[f]) for f in fields)


def check_table(path: Path, written: pa.Table, *, keys: list[str], parts: list[str], hive: bool,
                mdt: bool, commits: list[str]) -> None:
    """Everything the acceptance checks ask of one written table."""
    # hudi-rs: exactly the rows written, and the same file slices as ours
    got = normalise(hudi_rs_read(path))
    assert got.num_rows == written.num_rows
    assert rows_digest(got.select(written.column_names)) == rows_digest(normalise(written))
    ours = our_slices(path)
    assert hudi_rs_slices(path) == ours
    assert ours == base_files_on_disk(path)  # nothing else lying around

    # partition metadata per partition folder
    partitions = {os.path.dirname(f) for f in ours}
    for part in partitions:
        assert (path / part / ".hoodie_partition_metadata").is_file(), part

    # meta columns, file by file
    by_name = {}
    for rel in ours:
        f = pq.read_table(path / rel)
        name = os.path.basename(rel)
        part = os.path.dirname(rel)
        commit = name.rsplit("_", 1)[1].removesuffix(".parquet")
        assert commit in commits
        assert set(f.column("_hoodie_file_name").to_pylist()) == {name}
        assert set(f.column("_hoodie_commit_time").to_pylist()) == {commit}
        assert set(f.column("_hoodie_partition_path").to_pylist()) == {part}
        for row in f.select(["_hoodie_record_key", "_hoodie_partition_path", *keys, *parts]).to_pylist():
            assert row["_hoodie_record_key"] == expected_key(row, keys)
            assert row["_hoodie_partition_path"] == expected_partition(row, parts, hive)
        seqnos = f.column("_hoodie_commit_seqno").to_pylist()
        assert all(s.startswith(commit + "_") for s in seqnos) and len(set(seqnos)) == len(seqnos)
        by_name[name] = (part, f)

    # MDT column stats equal the statistics of each file computed with pyarrow
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    if not mdt:
        assert not (path / ".hoodie" / "metadata").exists()
        return
    assert "column_stats" in props and "files" in props
    index = hudi_layout.ColumnStatsIndex(path)
    columns = ["_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path", *written.column_names]
    from hudi_layout.format.properties import load_properties
    from hudi_layout.metadata.stats_values import v1_holds_exactly

    version = load_properties(path / ".hoodie").version
    for col in columns:
        stats = index.load_column(col)
        rows = {r["file_name"]: r for r in stats.to_pylist()}
        if version < 9 and col in written.column_names and not v1_holds_exactly(written.schema.field(col).type):
            assert rows == {}, col  # decimal(30, 15) cannot hold it: no V1 record (session 30)
            continue
        assert set(rows) == set(by_name), col
        for name, (part, f) in by_name.items():
            r = rows[name]
            arr = f.column(col)
            assert r["partition"] == part, (col, name)
            assert r["value_count"] == f.num_rows, (col, name)
            assert r["null_count"] == arr.null_count, (col, name)
            mm = pc.min_max(arr)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if pa.types.is_floating(arr.type) and pc.any(pc.is_nan(arr)).as_py():
                assert r["max"] is not None and math.isnan(r["max"]), (col, name, r)  # NaN sorts last (Java)
            else:
                assert r["max"] == hi, (col, name, r["max"], hi)
            assert r["min"] == lo, (col, name, r["min"], lo)


def write(spark, table: pa.Table, path: Path, opts: dict, mode: str = "append"):
    return hudi_layout.write(spark.createDataFrame(table), str(path), opts, mode=mode)


CONFIGS = {
    # name: (record keys, partition fields, hive style, table version, mdt, commits)
    "v9_part1_hive_simple_mdt_2commits": (["id"], ["p"], True, 9, True, 2),
    "v9_part2_nonhive_complex_mdt": (["id", "name"], ["p", "q"], False, 9, True, 1),
    "v9_nonpart_simple_nomdt_2commits": (["id"], [], False, 9, False, 2),
    "v8_part1_nonhive_complex_mdt_2commits": (["name", "id"], ["p"], False, 8, True, 2),
    "v8_nonpart_simple_nomdt": (["id"], [], True, 8, False, 1),
}


@pytest.mark.parametrize("config", list(CONFIGS))
def test_hudi_rs_reads_what_we_write(spark, tmp_path, config):
    keys, parts, hive, version, mdt, n_commits = CONFIGS[config]
    path = tmp_path / config
    opts = {
        "hoodie.table.name": config,
        "hoodie.datasource.write.recordkey.field": ",".join(keys),
        "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
        "hoodie.table.version": str(version),
        "hoodie.metadata.enable": str(mdt).lower(),
    }
    if parts:
        opts["hoodie.datasource.write.partitionpath.field"] = ",".join(parts)
    written, commits = [], []
    for c in range(n_commits):
        data = all_types_table(150, start=c * 1000)
        result = write(spark, data, path, opts)
        assert result.records_written == data.num_rows
        written.append(data)
        commits.append(result.instant_time)
    assert sum(1 for f in timeline_files(path) if f.endswith(".commit")) == n_commits
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert f"hoodie.table.version={version}" in props
    check_table(path, pa.concat_tables(written), keys=keys, parts=parts, hive=hive, mdt=mdt, commits=commits)


def test_all_types_roundtrip(spark, tmp_path):
    """Every supported type, float edge cases, pre-1970 timestamps and nulls survive exactly (hudi-rs and
    pyarrow see the values we wrote, typed as we wrote them)."""
    path = tmp_path / "types"
    data = all_types_table(200)
    write(spark, data, path, {"hoodie.table.name": "types", "hoodie.datasource.write.recordkey.field": "id"})
    got = normalise(hudi_rs_read(path)).select(data.column_names).sort_by("id")
    assert got.schema.equals(data.schema), (got.schema, data.schema)
    want = data.sort_by("id")
    for name in data.column_names:
        a, b = got.column(name).to_pylist(), want.column(name).to_pylist()
        if name == "dbl":  # NaN != NaN; -0.0 keeps its sign
            assert [repr(x) for x in a] == [repr(x) for x in b]
        else:
            assert a == b, name
    # -0.0 really is stored negative
    neg = [x for x in got.column("dbl").to_pylist() if x == 0.0]
    assert any(math.copysign(1, x) < 0 for x in neg)


def test_max_file_size_is_honoured(spark, tmp_path):
    path = tmp_path / "small_files"
    data = all_types_table(3000)
    max_size = 64 * 1024
    df = spark.createDataFrame(data).repartition(1)
    result = hudi_layout.write(df, str(path), {
        "hoodie.table.name": "small_files", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.parquet.max.file.size": str(max_size), "hoodie.metadata.enable": "false"})
    files = sorted(base_files_on_disk(path))
    sizes = [os.path.getsize(path / f) for f in files]
    assert result.files_written == len(files)
    total = sum(sizes)
    assert total > 3 * max_size, "test data too small to need several files"
    assert len(files) >= total // max_size, (len(files), sizes)  # several files from ONE task
    assert max(sizes) <= 1.5 * max_size, sizes  # roughly bounded
    assert rows_digest(normalise(hudi_rs_read(path))) == rows_digest(normalise(data))


def test_overwrite_replaces_everything(spark, tmp_path):
    path = tmp_path / "ow"
    opts = {"hoodie.table.name": "ow", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p"}
    first = all_types_table(120)
    write(spark, first, path, opts)
    old_files = our_slices(path)
    second = all_types_table(40, start=5000).filter(pc.equal(pc.field("p"), "a"))  # fewer partitions
    result = write(spark, second, path, opts, mode="overwrite")
    assert result.replaced_file_groups == len(old_files)
    got = normalise(hudi_rs_read(path))
    assert got.num_rows == second.num_rows
    assert rows_digest(got.select(second.column_names)) == rows_digest(normalise(second))
    assert hudi_rs_slices(path) == our_slices(path)
    assert not (our_slices(path) & old_files)
    assert any(f.endswith(".replacecommit") for f in timeline_files(path))
    # our own reader agrees
    assert hudi_layout.read(str(path), spark=spark).count() == second.num_rows


def test_incompressible_columns_are_stored_plain_and_other_readers_read_them(spark, tmp_path):
    """A hex-digest column (snappy saves ~8%) is written uncompressed by inserts and by the upsert's rewrite;
    hudi-rs reads both slices; with the saving threshold at 0 every column keeps the codec."""
    import hashlib
    n = 5000
    data = pa.table({"id": pa.array(range(n), pa.int64()),
                     "digest": [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)],
                     "region": [f"r{i % 3}" for i in range(n)]})
    opts = {"hoodie.table.name": "digests", "hoodie.datasource.write.recordkey.field": "id"}

    def codecs(path: Path) -> set[tuple[str, str]]:
        out = set()
        for f in base_files_on_disk(path):
            meta = pq.ParquetFile(path / f).metadata.row_group(0)
            out |= {(meta.column(i).path_in_schema, meta.column(i).compression) for i in range(meta.num_columns)}
        return out

    path = tmp_path / "plain"
    write(spark, data, path, opts)
    assert ("digest", "UNCOMPRESSED") in codecs(path) and ("region", "SNAPPY") in codecs(path)
    changed = data.slice(0, 50).set_column(1, "digest", pa.array(["f" * 64] * 50))
    write(spark, changed, path, {**opts, "hoodie.datasource.write.operation": "upsert"})
    assert ("digest", "SNAPPY") not in codecs(path)  # the rewritten slices too
    expected = pa.concat_tables([changed, data.slice(50)])
    assert rows_digest(normalise(hudi_rs_read(path)).select(data.column_names)) == rows_digest(normalise(expected))
    path0 = tmp_path / "all_compressed"
    write(spark, data, path0, {**opts, "hudi_layout.parquet.compression.min.saving": "0"})
    assert all(codec == "SNAPPY" for _col, codec in codecs(path0))

