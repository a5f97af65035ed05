"""The executor-side writer, run without Spark (it only needs Arrow batches)."""

from __future__ import annotations

import math
import pickle
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_layout.format.file_naming import parse_base_file_name
from hudi_layout.writer.base_file_writer import (
    ERROR_MARKER,
    META_COLUMNS,
    ColumnEncoding,
    WriterInputError,
    WriteSpec,
    choose_encoding,
    constant_strings,
    decode_results,
    footer_options,
    write_partition,
)

T = "20260101000000000"


def _batch(n: int, part: str | list[str] = "region=a", start: int = 0) -> pa.RecordBatch:
    parts = part if isinstance(part, list) else [part] * n
    return pa.RecordBatch.from_pydict({
        "id": pa.array(range(start, start + n), pa.int64()),
        "x": pa.array([float(i) for i in range(n)], pa.float64()),
        "s": pa.array([f"v{i:05d}" for i in range(n)]),
        "_hoodie_record_key": pa.array([str(i) for i in range(start, start + n)]),
        "_hoodie_partition_path": pa.array(parts),
    })


def _spec(tmp_path: Path, **kw) -> WriteSpec:
    return WriteSpec(base_path=str(tmp_path), instant_time=T, data_columns=("id", "x", "s"),
                     stats_columns=("id", "x", "s", "_hoodie_record_key"), **kw)


def test_writes_hudi_named_files_with_meta_columns_markers_and_partition_metadata(tmp_path: Path) -> None:
    out = list(write_partition(_spec(tmp_path), iter([_batch(10, ["region=a"] * 6 + ["region=b"] * 4)])))
    files = decode_results(out[0].to_pylist())
    assert sorted(f.partition_path for f in files) == ["region=a", "region=b"]
    for f in files:
        parsed = parse_base_file_name(f.file_name)
        assert parsed.instant_time == T and parsed.file_id == f.file_id
        table = pq.read_table(tmp_path / f.partition_path / f.file_name)
        assert table.column_names[:5] == list(META_COLUMNS)
        assert set(table.column("_hoodie_file_name").to_pylist()) == {f.file_name}
        assert set(table.column("_hoodie_commit_time").to_pylist()) == {T}
        assert table.num_rows == f.num_records
        assert (tmp_path / f.partition_path / ".hoodie_partition_metadata").is_file()
        assert (tmp_path / ".hoodie" / ".temp" / T / f.partition_path / (f.file_name + ".marker.CREATE")).is_file()
        assert f.stats["id"]["value_count"] == f.num_records


def test_exact_stats_and_nan_makes_max_unknown(tmp_path: Path) -> None:
    b = pa.RecordBatch.from_pydict({
        "id": pa.array([3, None, 1], pa.int64()), "x": pa.array([1.0, float("nan"), None]),
        "s": pa.array(["b", "a", None]), "_hoodie_record_key": pa.array(["k1", "k2", "k3"]),
        "_hoodie_partition_path": pa.array(["", "", ""])})
    (f,) = decode_results(next(write_partition(_spec(tmp_path), iter([b]))).to_pylist())
    assert f.partition_path == "" and (tmp_path / f.file_name).is_file()
    assert f.stats["id"] == {**f.stats["id"], "min": 1, "max": 3, "null_count": 1, "value_count": 3}
    assert f.stats["s"]["min"] == "a" and f.stats["s"]["max"] == "b"
    assert f.stats["x"]["min"] == 1.0 and math.isnan(f.stats["x"]["max"])


def test_rolls_over_at_max_file_size(tmp_path: Path) -> None:
    spec = _spec(tmp_path, max_file_size=20_000, parquet_row_group_rows=500)
    batches = [_batch(500, start=i * 500) for i in range(20)]
    files = decode_results([r for b in write_partition(spec, iter(batches)) for r in b.to_pylist()])
    assert len(files) > 2
    assert sum(f.num_records for f in files) == 10_000
    assert len({f.file_id for f in files}) == len(files)


def test_null_record_key_is_a_clear_error(tmp_path: Path) -> None:
    b = _batch(3)
    b = b.set_column(3, "_hoodie_record_key", pa.array(["1", None, "3"]))
    with pytest.raises(WriterInputError) as e:
        list(write_partition(_spec(tmp_path), iter([b])))
    assert str(e.value).startswith(ERROR_MARKER) and "record key is null" in str(e.value)


def test_preserves_commit_metadata_when_clustering(tmp_path: Path) -> None:
    b = _batch(4).to_pydict()
    b["_hoodie_commit_time"] = ["20250101000000000"] * 4
    b["_hoodie_commit_seqno"] = [f"20250101000000000_0_{i}" for i in range(4)]
    spec = _spec(tmp_path, preserve_commit_metadata=True)
    (f,) = decode_results(next(write_partition(spec, iter([pa.RecordBatch.from_pydict(b)]))).to_pylist())
    t = pq.read_table(tmp_path / f.partition_path / f.file_name)
    assert t.column("_hoodie_commit_time").to_pylist() == ["20250101000000000"] * 4
    assert t.column("_hoodie_commit_seqno").to_pylist() == b["_hoodie_commit_seqno"]


def test_constant_strings() -> None:
    assert constant_strings("ab", 3).to_pylist() == ["ab"] * 3
    assert constant_strings("", 2).to_pylist() == ["", ""]
    assert constant_strings("x", 0).to_pylist() == []


def test_results_pickle_round_trip(tmp_path: Path) -> None:
    out = next(write_partition(_spec(tmp_path), iter([_batch(5)])))
    row = out.to_pylist()[0]
    assert isinstance(pickle.loads(row["stats"]), dict)


def test_layout_key_range_is_reported_per_file_and_not_written(tmp_path: Path) -> None:
    batch = _batch(25)
    keyed = pa.RecordBatch.from_arrays([*batch.columns, pa.array([7 * i - 50 for i in range(25)], pa.int64())],
                                       names=[*batch.schema.names, "_layout_key"])
    spec = _spec(tmp_path, max_rows_per_file=10, layout_key_column="_layout_key")
    files = decode_results(next(write_partition(spec, iter([keyed]))).to_pylist())
    got = sorted((f.num_records, f.key_range) for f in files)
    assert [n for n, _ in got] == [10, 15]  # the short tail joins the last file
    assert sorted(r for _, r in got) == [(-50, 13), (20, 118)]
    for f in files:
        assert "_layout_key" not in pq.read_schema(tmp_path / f.partition_path / f.file_name).names
    plain = decode_results(next(write_partition(_spec(tmp_path / "p"), iter([batch]))).to_pylist())
    assert plain[0].key_range is None


def _dictionary_encoded(path: Path) -> set[str]:
    meta = pq.ParquetFile(path).metadata.row_group(0)
    return {meta.column(i).path_in_schema for i in range(meta.num_columns)
            if meta.column(i).dictionary_page_offset is not None}


def test_a_dictionary_choice_given_by_the_caller_is_used_for_every_file(tmp_path: Path) -> None:
    """A task that calls the writer once per qdtree leaf decides its dictionary columns once and passes them."""
    chosen = ["_hoodie_commit_time", "s"]
    out = list(write_partition(_spec(tmp_path), iter([_batch(10)]), encoding=ColumnEncoding(tuple(chosen))))
    (f,) = decode_results(out[0].to_pylist())
    assert _dictionary_encoded(tmp_path / f.partition_path / f.file_name) == set(chosen)
    out = list(write_partition(_spec(tmp_path), iter([_batch(10, start=100)])))  # decided on the rows
    (f,) = decode_results(out[0].to_pylist())
    assert "s" not in _dictionary_encoded(tmp_path / f.partition_path / f.file_name)  # unique values


def _codecs(path: Path) -> dict[str, str]:
    meta = pq.ParquetFile(path).metadata.row_group(0)
    return {meta.column(i).path_in_schema: meta.column(i).compression for i in range(meta.num_columns)}


def test_columns_the_codec_barely_shrinks_are_written_uncompressed(tmp_path: Path) -> None:
    """Hex digests gain ~8% from snappy: below the 10% saving they are stored plain; repetitive text keeps the
    codec; every reader reads the per-column codecs (pyarrow here, hudi-rs in the differential tests)."""
    import hashlib
    n = 4000
    digests = [hashlib.sha256(str(i).encode()).hexdigest()[:50] for i in range(n)]
    words = [f"region-{i % 7}-" + "abc" * (i % 5) for i in range(n)]
    batch = pa.RecordBatch.from_pydict({
        "_hoodie_record_key": [str(i) for i in range(n)], "_hoodie_partition_path": [""] * n,
        "digest": digests, "text": words, "nested": [{"h": d, "t": w} for d, w in zip(digests, words)]})
    spec = replace(_spec(tmp_path), data_columns=("digest", "text", "nested"))
    (f,) = decode_results(next(write_partition(spec, iter([batch]))).to_pylist())
    path = tmp_path / f.partition_path / f.file_name
    codecs = _codecs(path)
    assert codecs["digest"] == "UNCOMPRESSED" and codecs["nested.h"] == "UNCOMPRESSED"
    assert codecs["text"] == "SNAPPY" and codecs["nested.t"] == "SNAPPY"
    assert pq.read_table(path).column("digest").to_pylist() == digests
    for off in ({"compression_min_saving": 0.0}, {"compression": "zstd", "compression_min_saving": 0.0}):
        spec_off = replace(spec, base_path=str(tmp_path / str(len(off))), **off)
        (g,) = decode_results(next(write_partition(spec_off, iter([batch]))).to_pylist())
        assert "UNCOMPRESSED" not in _codecs(tmp_path / str(len(off)) / g.partition_path / g.file_name).values()


def test_choose_encoding_trials_the_codec_on_the_sample() -> None:
    import hashlib
    digests = pa.array([hashlib.sha256(str(i).encode()).hexdigest() for i in range(3000)])
    table = pa.table({"d": digests, "z": pa.array([0] * 3000, pa.int64())})
    enc = choose_encoding(table, "snappy", 0.1)
    assert enc.uncompressed == frozenset({"d"}) and enc.dictionary == ("z",)
    assert choose_encoding(table, "none", 0.1).uncompressed == frozenset()
    assert choose_encoding(table, "snappy", 0.0).uncompressed == frozenset()
    assert footer_options(table.schema, enc, "snappy")["compression"] == {"d": "none", "z": "snappy"}
    assert footer_options(table.schema, ColumnEncoding(), "snappy")["compression"] == "snappy"


@pytest.mark.parametrize("key_stats", [True, False])
def test_footer_key_range_with_and_without_key_statistics(tmp_path: Path, key_stats: bool) -> None:
    """The footer's hoodie_min/max_record_key come from the key column's statistics when it has them (one
    min / max pass), else from their own pass: the same range either way, over every row group."""
    stats = ("id", "_hoodie_record_key") if key_stats else ("id",)
    spec = replace(_spec(tmp_path), stats_columns=stats, parquet_row_group_rows=3)
    (f,) = decode_results(next(write_partition(spec, iter([_batch(10, start=5)]))).to_pylist())
    meta = pq.ParquetFile(tmp_path / f.partition_path / f.file_name).metadata.metadata
    assert (meta[b"hoodie_min_record_key"], meta[b"hoodie_max_record_key"]) == (b"10", b"9")


def test_a_compaction_writes_row_groups_of_the_set_size_whatever_the_merged_chunks(tmp_path: Path) -> None:
    """The merge yields uneven chunks (a chunk's base rows, its log winners, the keys only logs hold): the new
    base file still gets row groups of ``parquet_row_group_rows`` rows, the last one shorter, rows in order."""
    from hudi_layout.writer.base_file_writer import TaskIdentity
    from hudi_layout.writer.merge import MergeTarget, compact_file_group

    data = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
    spec = replace(_spec(tmp_path, parquet_row_group_rows=4), data_schema=data)

    def chunk(start: int, n: int) -> pa.Table:
        b = _batch(n, "", start)
        meta = {"_hoodie_commit_time": constant_strings("20251231000000000", n),
                "_hoodie_commit_seqno": pa.array([f"s{i}" for i in range(start, start + n)]),
                "_hoodie_record_key": b.column("_hoodie_record_key"), "_hoodie_partition_path": b.column(
                    "_hoodie_partition_path"), "_hoodie_file_name": constant_strings("old", n)}
        return pa.table({**meta, "id": b.column("id"), "x": b.column("x"), "s": b.column("s")})

    sizes = [5, 7, 0, 3, 9, 1]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    target = MergeTarget("", "fg-1", "", "", "20251231000000000")
    row = compact_file_group(spec, target, [chunk(s, n) for s, n in zip(starts, sizes)], TaskIdentity())
    meta = pq.read_metadata(tmp_path / row["file_name"])
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4, 4, 4, 4, 4, 4, 1]
    table = pq.read_table(tmp_path / row["file_name"])
    assert table.column("id").to_pylist() == list(range(25)) and row["num_records"] == 25
    assert set(table.column("_hoodie_file_name").to_pylist()) == {row["file_name"]}
