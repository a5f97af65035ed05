"""Splicing parquet files from column chunks (hudi_layout.format.parquet_splice): the result reads back as the
expected table in pyarrow, row groups and all; files of another shape are not spliced; mismatches refused."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.format import parquet_splice as ps
from hudi_layout.format import thrift_compact as tc


def _write(table: pa.Table, row_groups: list[int] | None = None, **options) -> bytes:
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, table.schema, **options) as writer:
        offset = 0
        for rows in row_groups or [table.num_rows]:
            writer.write_table(table.slice(offset, rows), row_group_size=max(1, rows))
            offset += rows
    return sink.getvalue()


def _table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-1000, 1000, n)
    return pa.table({
        "k": pa.array([f"key{i:05d}" for i in range(n)]),
        "i": pa.array(ints, mask=rng.random(n) < 0.1),
        "s": pa.array([None if x % 7 == 0 else f"é{x}" for x in ints], pa.string()),
        "c": pa.array(["same"] * n),
        "f": pa.array(rng.random(n)),
        "t": pa.array(ints * 1000, pa.timestamp("us")),
    })


def _spliced(old: pa.Table, new: pa.Table, changed: list[str], row_groups: list[int], **options) -> pa.Table:
    old_bytes = _write(old, row_groups, **options)
    fresh = _write(new.select(changed), row_groups, **options)
    old_layout, fresh_layout = ps.splice_layout(old_bytes), ps.splice_layout(fresh)
    assert old_layout is not None and fresh_layout is not None
    out = ps.splice(old_bytes, old_layout, fresh, fresh_layout, [("hello", "world")])
    data = out.to_bytes()
    assert len(data) == out.size
    handle = pq.ParquetFile(pa.BufferReader(data))
    assert handle.metadata.metadata == {b"hello": b"world"}
    assert [handle.metadata.row_group(g).num_rows for g in range(handle.metadata.num_row_groups)] == row_groups
    sizes = {}
    for g in range(handle.metadata.num_row_groups):
        for c in range(handle.metadata.num_columns):
            col = handle.metadata.row_group(g).column(c)
            before = sizes.get(col.path_in_schema, (0, 0))
            sizes[col.path_in_schema] = (before[0] + col.total_compressed_size,
                                         before[1] + col.total_uncompressed_size)
    assert sizes == out.chunk_sizes
    return handle.read()


@pytest.mark.parametrize("options", [{}, {"compression": "zstd"}, {"use_dictionary": False},
                                     {"compression": "none", "write_statistics": False}])
@pytest.mark.parametrize("row_groups", [[500], [200, 300], [1, 498, 1]])
def test_changed_columns_come_from_the_fresh_file_and_the_rest_from_the_old(options, row_groups) -> None:
    old = _table(500)
    new = old.set_column(1, "i", pc.multiply(old.column("i"), 3)).set_column(2, "s", pa.array(["x"] * 500))
    got = _spliced(old, new, ["i", "s"], row_groups, **options)
    assert got.equals(new)


def test_the_statistics_of_each_chunk_go_with_it() -> None:
    old = _table(300)
    new = old.set_column(1, "i", pa.array(np.arange(300) + 10_000))
    got_bytes = ps.splice(*_pair(old, new, ["i"]), []).to_bytes()
    meta = pq.ParquetFile(pa.BufferReader(got_bytes)).metadata.row_group(0)
    assert meta.column(1).statistics.min == 10_000 and meta.column(1).statistics.max == 10_299
    assert meta.column(0).statistics.min == "key00000"


def _pair(old: pa.Table, new: pa.Table, changed: list[str]):
    old_bytes, fresh = _write(old), _write(new.select(changed))
    return old_bytes, ps.splice_layout(old_bytes), fresh, ps.splice_layout(fresh)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 400), st.integers(0, 10**6), st.sets(st.sampled_from(["k", "i", "s", "c", "f", "t"]), min_size=1),
       st.integers(1, 4))
def test_any_choice_of_changed_columns_reads_back_exactly(n: int, seed: int, changed: set[str], groups: int) -> None:
    old = _table(n, seed)
    new = _table(n, seed + 1)
    new = pa.table({c: (new if c in changed else old).column(c) for c in old.column_names})
    cuts = sorted({0, n, *np.random.default_rng(seed).integers(0, n, groups - 1).tolist()})
    row_groups = [b - a for a, b in zip(cuts, cuts[1:]) if b > a]
    got = _spliced(old, new, [c for c in old.column_names if c in changed], row_groups)
    assert got.equals(new)


def test_files_of_other_shapes_are_not_spliced() -> None:
    flat = _table(10)
    assert ps.splice_layout(_write(flat)) is not None
    assert ps.splice_layout(_write(pa.table({"st": pa.array([{"x": 1}])}))) is None
    assert ps.splice_layout(_write(pa.table({"l": pa.array([[1]])}))) is None
    assert ps.splice_layout(b"PAR1garbagePAR1") is None
    empty = _write(flat.slice(0, 0))
    assert ps.splice_layout(empty) is None  # no row group: nothing to splice


def test_mismatched_row_groups_or_types_are_refused() -> None:
    old = _table(100)
    old_bytes, old_layout = _write(old, [50, 50]), None
    old_layout = ps.splice_layout(old_bytes)
    other_groups = _write(old.select(["i"]), [100])
    assert not ps.same_columns(old_layout, ps.splice_layout(other_groups))
    with pytest.raises(ValueError):
        ps.splice(old_bytes, old_layout, other_groups, ps.splice_layout(other_groups), [])
    retyped = _write(pa.table({"i": pc.cast(old.column("i"), pa.int32())}), [50, 50])
    assert not ps.same_columns(old_layout, ps.splice_layout(retyped))
    renamed = _write(pa.table({"zz": old.column("i")}), [50, 50])
    assert not ps.same_columns(old_layout, ps.splice_layout(renamed))


@pytest.mark.parametrize("row_groups", [[100], [30, 70], [1, 1, 98]])
def test_footer_statistics_are_the_values_min_max_and_nulls(row_groups) -> None:
    t = _table(100).append_column("allnull", pa.array([None] * 100, pa.string())).append_column(
        "astral", pa.array(["\U0001d11e", "\uffff", "z", None] * 25))
    t = t.append_column("i8", pc.cast(t.column("i"), pa.int8(), safe=False))
    layout = ps.splice_layout(_write(t, row_groups))
    for name, kind in (("i", "int"), ("i8", "int"), ("k", "string"), ("s", "string"), ("astral", "string"),
                       ("allnull", "string")):
        got = ps.chunk_statistics(layout, layout.names.index(name), kind)
        col = t.column(name)
        mm = pc.min_max(col)
        assert got == ps.ChunkStatistics(mm["min"].as_py(), mm["max"].as_py(), col.null_count), name
    # types it does not decode, and a kind that does not match the physical type
    assert ps.chunk_statistics(layout, layout.names.index("f"), "int") is None
    assert ps.chunk_statistics(layout, layout.names.index("t"), "string") is None
    assert ps.chunk_statistics(layout, layout.names.index("k"), "int") is None


def test_footer_statistics_not_marked_exact_are_not_used() -> None:
    layout = ps.splice_layout(_write(_table(50)))
    column = layout.names.index("k")
    meta = layout.groups[0].chunks[column].get(3)
    stats = tc.decode_raw(tc.STRUCT, meta.get(12))
    stats.remove(7)  # is_max_value_exact: a writer that does not say (or truncated the value)
    meta.set(12, stats)
    assert ps.chunk_statistics(layout, column, "string") is None
    no_stats = ps.splice_layout(_write(_table(50), write_statistics=False))
    assert ps.chunk_statistics(no_stats, no_stats.names.index("i"), "int") is None


def test_a_page_index_of_the_old_file_is_not_carried_over() -> None:
    """parquet-java writes page indexes (outside the chunks): the spliced file reads back right and has none."""
    old = _table(300)
    new = old.set_column(2, "s", pa.array(["z"] * 300))
    got = _spliced(old, new, ["s"], [100, 200], write_page_index=True)
    assert got.equals(new)
    old_bytes = _write(old, [100, 200], write_page_index=True)
    fresh = _write(new.select(["s"]), [100, 200], write_page_index=True)
    data = ps.splice(old_bytes, ps.splice_layout(old_bytes), fresh, ps.splice_layout(fresh), []).to_bytes()
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert not any(meta.row_group(g).column(c).has_offset_index or meta.row_group(g).column(c).has_column_index
                   for g in range(meta.num_row_groups) for c in range(meta.num_columns))
