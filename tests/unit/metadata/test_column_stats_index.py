from __future__ import annotations

import datetime as dt
import decimal
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_layout.format.instant import State, instant_file_name, new_instant_time
from hudi_layout.metadata import keys as K
from hudi_layout.metadata import records as R
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex, _normalise
from hudi_layout.metadata.mdt_writer import FileColumnStats, MetadataWriter
from hudi_layout.metadata.stats_values import TypeInfo
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.mdt_tables import create_table

ZIPS = ["cow_v9_txns_simple_meta.zip", "cow_v9_txns_nonpart_meta.zip", "mor_avro_v9_txns_simple_meta.zip"]


def _slow(idx: ColumnStatsIndex, column: str) -> pa.Table:
    cells = [c for _p, got in idx.reader.column_stats_items([K.column_prefix(column)]) for c in got]
    keys, values, form = _normalise(cells)
    return idx._slow(keys, values, form)


def _rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["file_name"])


@pytest.mark.parametrize("zip_name", ZIPS)
def test_fast_path_equals_reference(fixture_table, zip_name: str) -> None:
    idx = ColumnStatsIndex(fixture_table(zip_name))
    for column in idx.indexed_columns():
        fast = idx._fast([K.column_prefix(column)])
        assert fast is not None, column  # the fast path applies to real Hudi MDTs
        ref = _slow(idx, column)
        assert fast.schema == ref.schema
        assert _rows(fast) == _rows(ref)
        assert _rows(idx.load_column(column, live_only=False)) == _rows(ref)


@pytest.mark.parametrize("zip_name", [*ZIPS, "cow_v9_timebasedkeygen_nonhivestyle.zip"])
def test_live_rows_are_the_latest_file_slices(fixture_table, zip_name: str) -> None:
    """Java tables keep the stats of replaced file groups (insert_overwrite, clustering) in the index: load_column
    returns only the files of the latest file slices, ``live_only=False`` everything the index holds. In the
    timestamp-keygen table a commit emptied a file group: Hudi wrote no record for its 0-row base file, and until
    session 30 the older file the index still lists was returned as live (an interop probe)."""
    base = fixture_table(zip_name)
    idx = ColumnStatsIndex(base)
    live = {n for s in HudiTable(base).file_slices() for n in (s.base_file_name, *s.log_file_names)}
    for column in idx.indexed_columns():
        everything = set(idx.load_column(column, live_only=False).column("file_name").to_pylist())
        got = idx.load_column(column).column("file_name").to_pylist()
        assert len(got) == len(set(got))
        assert set(got) == everything & live, column


def test_load_long_form_and_partition_filter(fixture_table) -> None:
    idx = ColumnStatsIndex(fixture_table("cow_v9_txns_simple_meta.zip"))
    long = idx.load(["txn_id", "amount", "txn_date"])
    assert pa.types.is_union(long.schema.field("min").type)
    by_col = {c: idx.load_column(c) for c in ("txn_id", "amount", "txn_date")}
    assert long.num_rows == sum(t.num_rows for t in by_col.values())
    amount_rows = [r for r in long.to_pylist() if r["column"] == "amount"]
    assert sorted(r["min"] for r in amount_rows) == sorted(by_col["amount"].column("min").to_pylist())
    eu = idx.load_column("amount", partitions=["region=eu"])
    assert eu.num_rows > 0 and set(eu.column("partition").to_pylist()) == {"region=eu"}
    assert idx.load_column("amount", partitions=["nope"]).num_rows == 0
    assert idx.load_column("no_such_column").num_rows == 0


def test_duplicate_keys_merge_and_tombstones(tmp_path: Path) -> None:
    """A key written again in a later log block (tombstone / MOR merge) goes through the merge rule."""
    base = create_table(tmp_path / "t", columns=None)
    w = MetadataWriter(base)
    tl = base / ".hoodie" / "timeline"

    def commit(files, stats) -> None:
        t = new_instant_time()
        (tl / instant_file_name(t, "commit", State.REQUESTED)).write_bytes(b"")
        w.write_deltacommit(t, files, stats, partitions_added=list(files))
        (tl / instant_file_name(t, "commit", State.COMPLETED, new_instant_time(t))).write_bytes(b"")

    s1 = [FileColumnStats("p", f"f{i}.parquet", "v", i, i + 10, 0, 5, pa.int64()) for i in range(4)]
    commit({"p": {f"f{i}.parquet": 1 for i in range(4)}}, s1)
    commit({"p": {"f0.parquet": 1}}, [R.column_stats_tombstone("p", "f1.parquet", "v"),
                                       FileColumnStats("p", "f0.parquet", "v", -5, 3, 1, 2, pa.int64())])
    t = ColumnStatsIndex(base).load_column("v")
    rows = {r["file_name"]: r for r in t.to_pylist()}
    assert set(rows) == {"f0.parquet", "f2.parquet", "f3.parquet"}
    assert (rows["f0.parquet"]["min"], rows["f0.parquet"]["max"], rows["f0.parquet"]["value_count"]) == (-5, 10, 7)


def test_mixed_value_types_are_unified(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t", columns=None)
    w = MetadataWriter(base)
    t0 = new_instant_time()
    tl = base / ".hoodie" / "timeline"
    (tl / instant_file_name(t0, "commit", State.REQUESTED)).write_bytes(b"")
    w.write_deltacommit(t0, {"p": {"a.parquet": 1, "b.parquet": 1}}, [
        FileColumnStats("p", "a.parquet", "c", 1, 2, 0, 2, pa.int32()),       # schema evolution int -> long
        FileColumnStats("p", "b.parquet", "c", 2**40, 2**41, 0, 2, pa.int64())], partitions_added=["p"])
    (tl / instant_file_name(t0, "commit", State.COMPLETED, new_instant_time(t0))).write_bytes(b"")
    t = ColumnStatsIndex(base).load_column("c")
    assert t.schema.field("min").type == pa.int64()
    assert sorted(t.column("max").to_pylist()) == [2, 2**41]


def test_encode_fast_path_matches_encode_record() -> None:
    rec = R.column_stats_record("p", "f.parquet", "c", decimal.Decimal("1.25"), decimal.Decimal("9.99"), 1, 7, 100,
                                200, pa.decimal128(10, 2))
    cs = rec.column_stats
    assert R.encode_column_stats_value("f.parquet", "c", cs.min, cs.max, 7, 1, 100, 200, TypeInfo(10, "10,2")) == \
        R.encode_record(rec, 9)


def _many_files_table(tmp_path: Path, n_files: int) -> Path:
    """A compacted column_stats partition of ``n_files`` files x 4 columns (string, long, date, decimal)
    spread over 7 partitions."""
    base = create_table(tmp_path / "t", columns=None)
    w = MetadataWriter(base)
    t0 = new_instant_time()
    tl = base / ".hoodie" / "timeline"
    (tl / instant_file_name(t0, "commit", State.REQUESTED)).write_bytes(b"")
    files, stats = {}, []
    for j in range(n_files):
        p, name = f"r={j % 7}", f"{j:06d}-x-0_0-1-0_{t0}.parquet"
        files.setdefault(p, {})[name] = 100
        stats += [FileColumnStats(p, name, "s", f"a{j}", f"b{j}", 0, 9, pa.string()),
                  FileColumnStats(p, name, "l", j, j + 9, 1, 9, pa.int64()),
                  FileColumnStats(p, name, "d", dt.date(2024, 1, 1), dt.date(2024, 2, 1), 0, 9, pa.date32()),
                  FileColumnStats(p, name, "x", decimal.Decimal(j), decimal.Decimal(j + 1), 0, 9, pa.decimal128(9, 0))]
    w.write_deltacommit(t0, files, stats, partitions_added=list(files))
    (tl / instant_file_name(t0, "commit", State.COMPLETED, new_instant_time(t0))).write_bytes(b"")
    w.compact()
    return base


def test_fast_path_equals_reference_over_many_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan inflates the blocks of a prefix on a thread pool once there are 4 or more (small blocks
    here so a few thousand records span many): the same rows as the record-by-record path."""
    from hudi_layout.metadata import mdt_writer
    from hudi_layout.metadata.hfile.writer import write_hfile

    def small_blocks(path: object, items: object, **options: object) -> bytes:
        return write_hfile(path, items, **{**options, "block_size": 8192})  # type: ignore[arg-type]

    monkeypatch.setattr(mdt_writer, "write_hfile", small_blocks)
    idx = ColumnStatsIndex(_many_files_table(tmp_path, 3000))
    for column in ("s", "l", "d", "x"):
        fast = idx._fast([K.column_prefix(column)])
        assert fast is not None
        ref = _slow(idx, column)
        assert fast.num_rows == 3000 and fast.schema == ref.schema
        assert _rows(fast) == _rows(ref)
        assert len(set(fast.column("partition").to_pylist())) == 7
    blocks = [len(s.reader.data_block_index) for g in idx.reader._group_sources(K.COLUMN_STATS) for s in g]
    assert max(blocks) >= 4 * 4, blocks  # several blocks per column prefix: the pooled inflation ran


def test_throughput_smoke(tmp_path: Path) -> None:
    """20k records in 5,000 files x 4 columns; the benchmark target is 400k records < 1 s."""
    base = _many_files_table(tmp_path, 5000)
    idx = ColumnStatsIndex(base)
    idx.load_column("l")  # warm-up (pyarrow kernels)
    c0 = time.process_time()
    out = idx.stats_by_column(["s", "l", "d", "x"])
    cpu = time.process_time() - c0
    assert all(t.num_rows == 5000 for t in out.values())
    assert out["x"].schema.field("min").type == pa.decimal128(9, 0)
    assert cpu < 2.0, f"loading 20k column_stats records took {cpu:.2f} s CPU"


def test_delete_block_removes_keys(tmp_path: Path) -> None:
    from hudi_layout.format import log_format as L
    from hudi_layout.format.log_blocks import encode_delete_block
    from hudi_layout.metadata.mdt_timeline import commit_bytes, write_instant

    base = create_table(tmp_path / "t", columns=None)
    w = MetadataWriter(base)
    tl = base / ".hoodie" / "timeline"
    t1 = new_instant_time()
    (tl / instant_file_name(t1, "commit", State.REQUESTED)).write_bytes(b"")
    w.write_deltacommit(t1, {"p": {"a.parquet": 1, "b.parquet": 1}},
                        [FileColumnStats("p", n, "v", 1, 2, 0, 2, pa.int64()) for n in ("a.parquet", "b.parquet")],
                        partitions_added=["p"])
    (tl / instant_file_name(t1, "commit", State.COMPLETED, new_instant_time(t1))).write_bytes(b"")
    # a DELETE block (as Hudi writes for key deletes) removing b's record, in its own MDT deltacommit
    t2 = new_instant_time()
    key = K.column_stats_key("v", "p", "b.parquet")
    fid = w.file_group_ids("column_stats")[K.file_group_index(key, 2)]
    (base / ".hoodie/metadata/column_stats" / L.log_file_name(fid, t2)).write_bytes(
        encode_delete_block(t2, [(key, "column_stats", None)]))
    (tl / instant_file_name(t2, "commit", State.REQUESTED)).write_bytes(b"")
    write_instant(w.timeline_dir, t2, "deltacommit", State.COMPLETED, commit_bytes({}, "UPSERT_PREPPED", 9),
                  new_instant_time(t2))
    (tl / instant_file_name(t2, "commit", State.COMPLETED, new_instant_time(t2))).write_bytes(b"")
    assert ColumnStatsIndex(base).load_column("v").column("file_name").to_pylist() == ["a.parquet"]
    w.compact()
    assert ColumnStatsIndex(base).load_column("v").column("file_name").to_pylist() == ["a.parquet"]


def test_load_empty(fixture_table) -> None:
    idx = ColumnStatsIndex(fixture_table("cow_v9_txns_simple_meta.zip"))
    assert idx.load([]).num_rows == 0
    assert idx.load(["nope"]).column_names == ["partition", "file_name", "column", "min", "max", "null_count",
                                               "value_count"]


@pytest.mark.parametrize("version", [8, 9])
def test_arrow_table_encoding_matches_record_path(version: int) -> None:
    from hudi_layout.metadata.colstats_encode import encode_column_table

    iv = 2 if version >= 9 else 1
    cases = {
        "s": (pa.string(), ["a", None, "zz"], ["b", None, "zzz"]),
        "l": (pa.int64(), [-5, None, 2**40], [7, None, 2**41]),
        "i": (pa.int32(), [1, None, -3], [2, None, 3]),
        "f": (pa.float64(), [0.5, None, -1e300], [1.5, None, 2.0]),
        "g": (pa.float32(), [0.5, None, -1.0], [1.5, None, 2.0]),
        "b": (pa.bool_(), [False, None, True], [True, None, True]),
        "d": (pa.date32(), [dt.date(2020, 1, 1), None, dt.date(1969, 12, 31)], [dt.date(2021, 1, 1), None,
                                                                                dt.date(1970, 1, 1)]),
        "t": (pa.timestamp("us", tz="UTC"), [0, None, -10], [10, None, 2**50]),
        "n": (pa.timestamp("us"), [0, None, -10], [10, None, 2**50]),
        "x": (pa.decimal128(12, 2), [Dec("1.25"), None, Dec("-99999.99")], [Dec("9.99"), None, Dec("0.01")]),
        "y": (pa.binary(), [b"\x00", None, b""], [b"\xff", None, b"a"]),
    }
    for col, (typ, mins, maxs) in cases.items():
        tbl = pa.table({"partition": ["p", "", "p"], "file_name": ["a.parquet", "b.parquet", "c.parquet"],
                        "min": pa.array(mins, typ), "max": pa.array(maxs, typ), "null_count": [0, 3, 1],
                        "value_count": [3, 3, 4], "total_size": [10, 20, 30]})
        fast = encode_column_table(col, tbl, index_version=iv, table_version=version)
        ref = {}
        for row, lo, hi in zip(tbl.to_pylist(), pa.array(mins, typ).to_pylist(), pa.array(maxs, typ).to_pylist()):
            rec = R.column_stats_record(row["partition"], row["file_name"], col, lo, hi, row["null_count"],
                                        row["value_count"], row["total_size"], 0, typ, iv)
            ref[rec.key] = R.encode_record(rec, version)
        assert fast == ref, col


Dec = decimal.Decimal


def _pool_works_in_child(queue: Any) -> None:
    from hudi_layout.metadata import colstats_scan as S

    queue.put(S._block_pool().submit(lambda: 41 + 1).result(timeout=10))


def test_the_inflation_pool_works_after_a_fork() -> None:
    """A pool inherited through fork has no threads (work submitted to it would wait forever): a forked
    process that loads the index makes its own."""
    import multiprocessing

    from hudi_layout.metadata import colstats_scan as S

    assert S._block_pool().submit(lambda: 1).result(timeout=10) == 1  # the parent's pool exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_pool_works_in_child, args=(queue,))
    child.start()
    child.join(timeout=30)
    assert child.exitcode == 0 and queue.get(timeout=5) == 42


def test_normalise_keeps_keys_met_once_and_merges_the_rest_as_decoding_everything_does() -> None:
    """Cells of base + log files: keys met once keep their bytes (session 29: a plan after each write decoded
    every log record), keys updated or deleted by a log are merged with the MDT rule; the result equals
    decoding and merging every cell."""
    import random

    from hudi_layout.metadata import stats_values as SV
    from hudi_layout.metadata.merge import merge_column_stats
    from hudi_layout.metadata.schema import metadata_record_schema_str

    rng = random.Random(29)
    info = SV.value_type_for_arrow(pa.int64())
    schema = metadata_record_schema_str(9)

    def cell(key: str, lo: int, hi: int) -> tuple[bytes, bytes, str]:
        stat = R.ColumnStat(key, "c", SV.encode(lo, info, 2), SV.encode(hi, info, 2), 10, 0, value_type=info)
        return key.encode(), R.encode_record(R.MetadataRecord(key, R.TYPE_COLUMN_STATS, column_stats=stat), 9), \
            schema

    for _ in range(20):
        cells = []
        for _ in range(60):
            key = f"k{rng.randrange(40):03d}"
            lo = rng.randrange(-100, 100)
            cells.append((key.encode(), b"", schema) if rng.random() < 0.1 else cell(key, lo, lo + rng.randrange(50)))
        merged: dict[bytes, R.ColumnStat] = {}
        for k, v, _s in cells:
            if not v:
                merged.pop(k, None)
                continue
            stat = R.decode_record(k.decode(), v, schema).column_stats
            assert stat is not None
            merged[k] = stat if k not in merged else merge_column_stats(merged[k], stat)
        keys, values, form = _normalise(cells)
        assert form == 9 and keys == sorted(merged)
        assert [R.decode_record(k.decode(), v, schema).column_stats for k, v in zip(keys, values)] == \
            [merged[k] for k in keys]
