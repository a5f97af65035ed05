"""A Copy-on-Write update copies the column chunks its updates left unchanged (merge_file_group with
``copy_unchanged_columns``): differential against the same merge re-encoding every column - same rows,
same statistics, same footer key range - and the cases that must re-encode (deletes, changed values, floats,
another codec, files of another shape)."""

from __future__ import annotations

import decimal
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hudi_layout.writer.merge as merge_module
from hudi_layout.format import parquet_splice
from hudi_layout.format.merge_config import MergeMode
from hudi_layout.writer.base_file_writer import TaskIdentity, WriteSpec, write_partition
from hudi_layout.writer.merge import DELETE_FLAG_COLUMN, MergeRules, MergeTarget, merge_file_group

T0 = "20260101000000000"
T1 = "20260102000000000"
COMMIT = MergeRules(MergeMode.COMMIT_TIME_ORDERING)
DATA = ("id", "n", "s", "d", "ts", "dec", "day", "flag", "raw", "tiny")


def _spec(base, instant: str, **kw) -> WriteSpec:
    return WriteSpec(base_path=str(base), instant_time=instant, data_columns=DATA,
                     stats_columns=("_hoodie_record_key", "_hoodie_commit_time", *DATA), **kw)


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "n": pa.array(rng.integers(-50, 50, n).astype(np.int32), mask=rng.random(n) < 0.2),
        "s": pa.array([None if i % 5 == 0 else f"v{int(x)}é" + "\U0001d11e" * (i % 3) + "\uffff" * (i % 2)
                       for i, x in enumerate(rng.integers(0, 9, n))], pa.string()),
        "d": pa.array(rng.normal(size=n)),
        "ts": pa.array(rng.integers(0, 10**12, n), pa.timestamp("us", "UTC")),
        "dec": pa.array([None if i % 7 == 3 else decimal.Decimal(int(x)) / 100 for i, x in
                         enumerate(rng.integers(-10**6, 10**6, n))], pa.decimal128(12, 2)),
        "day": pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32()),
        "flag": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
        "raw": pa.array([bytes([int(x) % 256, 0, 255]) for x in rng.integers(0, 999, n)], pa.binary()),
        "tiny": pa.array(rng.integers(-128, 127, n).astype(np.int8)),
        "_hoodie_record_key": pa.array([f"k{i:05d}" for i in ids], pa.string()),
        "_hoodie_partition_path": pa.array(["p"] * n, pa.string()),
    })


def _base_file(tmp_path, n: int, seed: int, **kw) -> MergeTarget:
    spec = _spec(tmp_path, T0, parquet_row_group_rows=max(1, n // 3), **kw)
    rows = [r for b in write_partition(spec, iter(_rows(n, seed).to_batches(max_chunksize=max(1, n // 2))),
                                       TaskIdentity()) for r in b.to_pylist()]
    assert len(rows) == 1
    r = rows[0]
    return MergeTarget("p", r["file_id"], r["file_name"], str(tmp_path / "p" / r["file_name"]), T0)


def _incoming(stored: pa.Table, rows: list[int], change: dict[str, object], deletes: bool = False) -> pa.Table:
    inc = stored.take(pa.array(rows, pa.int64())).select(["_hoodie_record_key", *DATA])
    for name, value in change.items():
        col = inc.column(name)
        inc = inc.set_column(inc.schema.get_field_index(name), name, pa.array([value] * len(rows), col.type))
    return inc.append_column(DELETE_FLAG_COLUMN, pa.array([deletes] * len(rows), pa.bool_()))


def _merge(tmp_path, target: MergeTarget, incoming: pa.Table, copy: bool, **kw):
    spec = _spec(tmp_path, T1, copy_unchanged_columns=copy, **kw)
    row, _ = merge_file_group(spec, target, incoming, COMMIT, TaskIdentity(1, 2, int(copy)))
    path = tmp_path / "p" / row["file_name"]
    handle = pq.ParquetFile(path)
    table = handle.read().drop_columns(["_hoodie_file_name"])  # the file names differ by the attempt only
    return row, table, handle.metadata.metadata, pickle.loads(row["stats"])


def _same_result(tmp_path, target, incoming, **kw):
    a_row, a, a_kv, a_stats = _merge(tmp_path, target, incoming, copy=False, **kw)
    b_row, b, b_kv, b_stats = _merge(tmp_path, target, incoming, copy=True, **kw)
    assert a.equals(b) and a.schema.metadata == b.schema.metadata
    for key in (b"hoodie_min_record_key", b"hoodie_max_record_key", b"ARROW:schema"):
        assert a_kv[key] == b_kv[key]
    strip = {"total_size", "total_uncompressed_size"}  # chunk sizes differ with the copied chunks' encoding
    assert {c: {k: v for k, v in s.items() if k not in strip} for c, s in a_stats.items()} == \
        {c: {k: v for k, v in s.items() if k not in strip} for c, s in b_stats.items()}
    assert b_row["file_size"] == (tmp_path / "p" / b_row["file_name"]).stat().st_size
    assert all(s["total_size"] > 0 for s in b_stats.values())
    return b_row


@pytest.fixture()
def spy(monkeypatch):
    """Counts the merges that were spliced."""
    calls = {"spliced": 0}
    real = merge_module._splice

    def counting(*args, **kwargs):
        out = real(*args, **kwargs)
        calls["spliced"] += out is not None
        return out
    monkeypatch.setattr(merge_module, "_splice", counting)
    return calls


def test_an_update_of_one_column_copies_the_others(tmp_path, spy) -> None:
    target = _base_file(tmp_path, 300, 1)
    stored = pq.read_table(target.base_file_path)
    _same_result(tmp_path, target, _incoming(stored, [3, 150, 299], {"s": "changed"}))
    assert spy["spliced"] == 1


def test_values_equal_to_the_stored_ones_leave_the_column_unchanged(tmp_path) -> None:
    target = _base_file(tmp_path, 50, 2)
    stored = pq.read_table(target.base_file_path)
    merged = merge_module.merge_rows(stored, _incoming(stored, [1, 2], {"s": "new"}), COMMIT, instant_time=T1,
                                     file_name="f", seqno_prefix="x_")
    assert {"id", "n", "ts", "_hoodie_record_key", "_hoodie_partition_path"} <= merged.unchanged
    assert "s" not in merged.unchanged and "d" not in merged.unchanged  # doubles are never taken as unchanged
    assert "_hoodie_commit_time" not in merged.unchanged and "_hoodie_file_name" not in merged.unchanged


def test_a_null_replacing_a_value_changes_the_column(tmp_path, spy) -> None:
    target = _base_file(tmp_path, 40, 3)
    stored = pq.read_table(target.base_file_path)
    row = stored.column("n").to_pylist().index(next(v for v in stored.column("n").to_pylist() if v is not None))
    b_row = _same_result(tmp_path, target, _incoming(stored, [row], {"n": None}))
    got = pq.read_table(tmp_path / "p" / b_row["file_name"]).column("n").to_pylist()
    assert got[row] is None


def test_deletes_rewrite_every_column(tmp_path, spy) -> None:
    target = _base_file(tmp_path, 30, 4)
    stored = pq.read_table(target.base_file_path)
    _same_result(tmp_path, target, _incoming(stored, [0, 7], {}, deletes=True))
    assert spy["spliced"] == 0


def test_a_file_stored_with_another_codec_is_re_encoded(tmp_path, spy) -> None:
    target = _base_file(tmp_path, 60, 5, compression="zstd")
    stored = pq.read_table(target.base_file_path)
    _same_result(tmp_path, target, _incoming(stored, [5], {"s": "z"}))
    assert spy["spliced"] == 0


def test_an_old_file_with_a_page_index_is_spliced_without_it(tmp_path, spy) -> None:
    target = _base_file(tmp_path, 60, 6)
    stored = pq.read_table(target.base_file_path)
    pq.write_table(stored, target.base_file_path, write_page_index=True)
    _same_result(tmp_path, target, _incoming(stored, [5], {"s": "z"}))
    assert spy["spliced"] == 1


def test_a_java_written_base_file_gives_the_same_file_either_way(tmp_path, fixture_table, spy) -> None:
    """parquet-java's files (Hudi 1.x, v9 table: page indexes, no exact-statistics flags, decimals and
    timestamps) are spliced or re-encoded; either way the same rows and statistics."""
    table_path = fixture_table("cow_v9_txns_simple_nometa.zip")
    files = sorted(table_path.rglob("*.parquet"))
    data_columns = [n for n in pq.read_schema(files[0]).names if not n.startswith("_hoodie_")]
    for i, f in enumerate(files[:3]):
        stored = pq.read_table(f)
        part = str(f.parent.relative_to(table_path))
        target = MergeTarget(part, f.name.split("_")[0], f.name, str(f), f.name.split("_")[-1][:-8])
        inc = stored.take(pa.array([0], pa.int64())).select(["_hoodie_record_key", *data_columns])
        name = next(c for c in data_columns if pa.types.is_string(stored.schema.field(c).type)
                    and c not in ("txn_id", "region"))
        inc = inc.set_column(inc.schema.get_field_index(name), name, pa.array(["changed"], pa.string()))
        inc = inc.append_column(DELETE_FLAG_COLUMN, pa.array([False], pa.bool_()))
        spec_kw = dict(data_columns=tuple(data_columns), compression="gzip",  # the fixture's files are gzip
                       stats_columns=("_hoodie_record_key", "_hoodie_commit_time", *data_columns))
        rows = []
        for copy in (False, True):
            spec = WriteSpec(base_path=str(table_path), instant_time=f"2026110100000000{i}",
                             copy_unchanged_columns=copy, **spec_kw)
            row, _ = merge_file_group(spec, target, inc, COMMIT, TaskIdentity(1, 2, int(copy)))
            got = pq.read_table(table_path / part / row["file_name"]).drop_columns(["_hoodie_file_name"])
            stats = {c: {k: v for k, v in e.items() if k not in ("total_size", "total_uncompressed_size")}
                     for c, e in pickle.loads(row["stats"]).items()}
            rows.append((got, stats))
        assert rows[0][0].equals(rows[1][0]) and rows[0][1] == rows[1][1]
    assert spy["spliced"] >= 1


def test_the_option_off_never_splices(tmp_path, spy) -> None:
    target = _base_file(tmp_path, 20, 7)
    stored = pq.read_table(target.base_file_path)
    _merge(tmp_path, target, _incoming(stored, [1], {"s": "q"}), copy=False)
    assert spy["spliced"] == 0
    with open(target.base_file_path, "rb") as f:
        assert parquet_splice.splice_layout(f.read()) is not None  # it could have been


@pytest.mark.parametrize("codec", ["zstd", "lz4", "gzip", "none"])
def test_tables_of_other_codecs_splice_too(tmp_path, spy, codec: str) -> None:
    target = _base_file(tmp_path, 200, 8, compression=codec)
    stored = pq.read_table(target.base_file_path)
    _same_result(tmp_path, target, _incoming(stored, [4, 90], {"s": "c"}), compression=codec)
    assert spy["spliced"] == 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 400), st.integers(0, 10**6), st.data(), st.sampled_from(["snappy", "zstd"]))
def test_random_updates_give_the_same_file_either_way(tmp_path_factory, n: int, seed: int, data,
                                                      codec: str) -> None:
    tmp_path = tmp_path_factory.mktemp("copy")
    target = _base_file(tmp_path, n, seed, compression=codec)
    stored = pq.read_table(target.base_file_path)
    rows = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=min(n, 30))))
    fresh = _rows(n, seed + 1).take(pa.array(rows, pa.int64()))
    inc = stored.take(pa.array(rows, pa.int64())).select(["_hoodie_record_key", *DATA])
    for name in data.draw(st.sets(st.sampled_from(DATA[1:]))):
        inc = inc.set_column(inc.schema.get_field_index(name), name, fresh.column(name))
    inc = inc.append_column(DELETE_FLAG_COLUMN, pa.array([False] * len(rows), pa.bool_()))
    _same_result(tmp_path, target, inc, compression=codec)
